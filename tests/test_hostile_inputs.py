"""Hostile inputs outside the web app (issue 27): checkpoint tensors and archives, writers that met special files,
output names that clash, command-line values out of range, record files (U+2028, ``version``), agents' non-integer
moves, huge values quoted in errors; with table-driven fuzz tests of each surface: checkpoint tensors (strides,
storage sharing, dtypes, sizes), writers' targets, record files and the bench/eval/play/replay options. The web
app's hostile requests are in tests/test_serve_hostile_requests.py."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import resource
import stat
import threading
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from agents.files import OutputPathError, write_target  # noqa: E402
from agents.policy import CassinoPolicy, NetworkShape  # noqa: E402
from agents.ppo_agent import (  # noqa: E402  (the writer as the trainer imports it)
    CheckpointError,
    atomic_copy,
    atomic_write,
    expected_tensors,
    load_checkpoint_agent,
    policy_from_checkpoint,
    read_checkpoint,
    save_checkpoint,
)
from cassino_env.obs import obs_size  # noqa: E402
from cassino_env.rules import make_rules  # noqa: E402
from train import cli  # noqa: E402
from train.records import RecordError, RecordWriter, parse_lines, random_record, read_records  # noqa: E402

RULES = make_rules("classic")


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


def _one_error_line(code: int, err: str) -> str:
    assert code == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --- 1. checkpoint tensors: strides, storage sharing, dtypes, sizes ---------------------------------------------------


@pytest.fixture(scope="module")
def base_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("ckpt") / "base.pt"
    policy = CassinoPolicy(obs_dim=obs_size(2, 2), hidden=16, embed=8)
    opt = torch.optim.Adam(policy.parameters())
    sum(p.sum() for p in policy.parameters()).backward()
    opt.step()
    save_checkpoint(path, policy, RULES, optimizer=opt, train={"rng": torch.get_rng_state()})
    return torch.load(path, weights_only=True)


def _save(path: Path, data: dict[str, Any]) -> Path:
    torch.save(data, path)
    return path


def _expanded_network(data: dict[str, Any], hidden: int) -> dict[str, Any]:
    """The base checkpoint declaring ``hidden`` units, every tensor a stride-0 view of one element."""
    net = {**data["network"], "hidden": hidden}
    want = expected_tensors(NetworkShape(**net))
    model = {k: torch.zeros(1, dtype=dt).expand(size) if size else torch.zeros((), dtype=dt)
             for k, (size, dt) in want.items()}
    return {**data, "network": net, "model": model, "optimizer": None, "train": None}


def test_an_expanded_huge_network_is_refused_before_anything_is_allocated(base_checkpoint: dict[str, Any],
                                                                           tmp_path: Path) -> None:
    """A 9 KB file of stride-0 views declaring hidden=20000 (826M parameters) passed every check and made cassino eval
    allocate 5 GB; with hidden=4000 it loaded all-zero weights and played."""
    for hidden in (4000, 20000):
        path = _save(tmp_path / f"h{hidden}.pt", _expanded_network(base_checkpoint, hidden))
        assert path.stat().st_size < 64_000
        before = _peak_rss_mb()
        with pytest.raises(CheckpointError, match=r"is a view of a storage of 4 bytes .*whole and contiguous"):
            load_checkpoint_agent(str(path), RULES)
        assert _peak_rss_mb() - before < 100
    code, _, err = _run(["eval", "--agents", f"checkpoint:{tmp_path / 'h20000.pt'},random", "--deals", "2",
                         "--no-progress", "--out-dir", str(tmp_path / "ev")])
    assert "model." in _one_error_line(code, err) and not (tmp_path / "ev").exists()


def _variant(data: dict[str, Any], kind: str) -> dict[str, Any]:
    """The base checkpoint with one hostile tensor (or pair of tensors)."""
    model = dict(data["model"])
    names = list(model)
    name = next(k for k in names if model[k].dim() == 2)
    w = model[name]
    rows, cols = w.shape
    if kind == "expanded":
        model[name] = torch.zeros(1).expand(rows, cols)
    elif kind == "expanded_row":
        model[name] = torch.zeros(cols).expand(rows, cols)
    elif kind == "transposed":
        model[name] = torch.zeros(cols, rows).t()
    elif kind == "overlapping":
        model[name] = torch.zeros(rows + cols).as_strided((rows, cols), (1, 1))
    elif kind == "offset_slice":
        model[name] = torch.zeros(rows * cols + 7)[7:].view(rows, cols)
    elif kind == "larger_storage":
        model[name] = torch.zeros(rows * cols * 3)[: rows * cols].view(rows, cols)
    elif kind == "shared_storage":  # two halves of one storage
        big = torch.zeros(2 * w.numel())
        model[name], model["torso.0.bias"] = big[: w.numel()].view(rows, cols), big[w.numel():][:16]
    elif kind == "same_tensor_twice":
        model["torso.0.bias"] = model["torso.2.bias"] = torch.zeros(16)
    elif kind == "view_shared":  # one whole storage under two shapes
        model["card_emb.weight"] = torch.zeros(52, 8)
        model["table_emb.weight"] = model["card_emb.weight"].view(8, 52)
    elif kind.startswith("dtype_"):
        model[name] = torch.zeros(rows, cols).to(getattr(torch, kind[6:]))
    elif kind == "sparse":
        model[name] = torch.zeros(rows, cols).to_sparse()
    elif kind == "wrong_shape":
        model[name] = torch.zeros(rows, cols + 1)
    elif kind == "empty":
        model[name] = torch.zeros(0, cols)
    elif kind == "scalar":
        model[name] = torch.tensor(0.0)
    elif kind == "nan":
        model[name] = torch.full((rows, cols), float("nan"))
    elif kind == "inf":
        model[name] = torch.full((rows, cols), float("-inf"))
    elif kind == "missing":
        del model[name]
    elif kind == "extra":
        model["extra.weight"] = torch.zeros(3)
    elif kind == "not_a_tensor":
        model[name] = [0.0] * cols
    elif kind == "optimizer_expanded":
        opt = json.loads(json.dumps({"param_groups": data["optimizer"]["param_groups"]}))
        state = {k: dict(v) for k, v in data["optimizer"]["state"].items()}
        first = next(iter(state))
        state[first]["exp_avg"] = torch.zeros(1).expand(10**4, 10**4)
        return {**data, "optimizer": {**opt, "state": state}}
    elif kind == "train_expanded":
        return {**data, "train": {"rng": torch.zeros(1, dtype=torch.uint8).expand(10**9)}}
    elif kind == "nested_deep":
        deep: Any = torch.zeros(1).expand(10**6)
        for _ in range(200):
            deep = [deep]
        return {**data, "train": {"deep": deep}}
    else:
        raise AssertionError(kind)
    return {**data, "model": model}


TENSOR_CASES = {
    "expanded": "whole and contiguous", "expanded_row": "whole and contiguous", "transposed": "whole and contiguous",
    "overlapping": "whole and contiguous", "offset_slice": "whole and contiguous",
    "larger_storage": "whole and contiguous", "shared_storage": "whole and contiguous",
    "same_tensor_twice": "shares its storage", "view_shared": "model.table_emb.weight: shares its storage with "
    "model.card_emb.weight", "dtype_float64": "the shape needs torch.float32",
    "dtype_float16": "the shape needs torch.float32", "dtype_bfloat16": "the shape needs torch.float32",
    "dtype_int64": "the shape needs torch.float32", "dtype_bool": "the shape needs torch.float32",
    "dtype_uint8": "the shape needs torch.float32", "dtype_complex64": "the shape needs torch.float32",
    "dtype_float8_e4m3fn": "torch.float8_e4m3fn tensor; weights are", "sparse": "dense tensors only",
    "wrong_shape": "the shape needs", "empty": "the shape needs", "scalar": "the shape needs",
    "nan": "NaN or infinite", "inf": "NaN or infinite", "missing": "is missing", "extra": "not part of that network",
    "not_a_tensor": "mapping of tensor names to tensors", "optimizer_expanded": r"optimizer\.state\..*exp_avg",
    "train_expanded": r"train\.rng", "nested_deep": r"train\.deep\.0\.0",
}


@pytest.mark.parametrize("kind", sorted(TENSOR_CASES))
def test_fuzz_checkpoint_tensors(base_checkpoint: dict[str, Any], tmp_path: Path, kind: str) -> None:
    """Each hostile tensor is a CheckpointError naming the tensor, before any network is built; the fuzz cases from
    'expanded' to 'train_expanded' loaded (or allocated far more than the file) before."""
    data = _variant(base_checkpoint, kind)
    if kind == "dtype_float8_e4m3fn" and not hasattr(torch, "float8_e4m3fn"):
        pytest.skip("no float8 in this torch")
    path = _save(tmp_path / "x.pt", data)
    before = _peak_rss_mb()
    with pytest.raises(CheckpointError, match=TENSOR_CASES[kind]):
        policy_from_checkpoint(read_checkpoint(path, RULES), path)
    assert _peak_rss_mb() - before < 200


def test_a_real_checkpoint_still_loads(base_checkpoint: dict[str, Any], tmp_path: Path) -> None:
    path = _save(tmp_path / "ok.pt", base_checkpoint)
    agent = load_checkpoint_agent(str(path), RULES)
    assert agent.policy.shape.hidden == 16
    for name in ("classic", "matsuda"):
        read_checkpoint(Path(__file__).resolve().parents[1] / "agents" / "pretrained" / f"{name}.pt")


# --- 13. a checkpoint archive whose members declare more than the file holds ------------------------------------------


def test_a_deflated_bomb_member_is_refused_by_its_declared_size(base_checkpoint: dict[str, Any], tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A 3 MB checkpoint holding a 2 GB deflated member took 13 s to refuse (testzip unpacked it all); here a 64 MB
    member of zeros (64 KB deflated) is refused from the sizes in the archive's directory, nothing unpacked."""
    bomb = _save(tmp_path / "bomb.pt", base_checkpoint)
    with zipfile.ZipFile(bomb, "a", compression=zipfile.ZIP_DEFLATED) as dst:
        prefix = dst.infolist()[0].filename.split("/")[0]
        with dst.open(f"{prefix}/data/zeros", "w") as f:
            for _ in range(64):
                f.write(bytes(1 << 20))
    assert bomb.stat().st_size < 1_000_000

    def unpacked(self: zipfile.ZipFile) -> None:
        raise AssertionError("the archive was unpacked before its sizes were checked")

    monkeypatch.setattr(zipfile.ZipFile, "testzip", unpacked)
    with pytest.raises(CheckpointError, match=r"is compressed \(67,108,864 bytes declared.*refused before it is "
                                              r"unpacked"):
        read_checkpoint(bomb)


# --- 2. writers and special files ----------------------------------------------------------------------------------


def _device(path: Path, minor: int) -> Path:
    """A character device node in a test folder (1, 3 is null; 1, 7 is full), or skip where mknod is not allowed."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, minor))
    except (PermissionError, AttributeError, OSError):
        pytest.skip("mknod is not allowed here")
    return path


def _kinds(folder: Path) -> dict[str, str]:
    out = {}
    for p in sorted(folder.iterdir()):
        mode = os.lstat(p).st_mode
        out[p.name] = ("link" if stat.S_ISLNK(mode) else "chr" if stat.S_ISCHR(mode) else "fifo"
                       if stat.S_ISFIFO(mode) else "dir" if stat.S_ISDIR(mode) else "sock" if stat.S_ISSOCK(mode)
                       else "file")
    return out


def _fifo_reader(path: Path) -> tuple[threading.Thread, list[bytes]]:
    got: list[bytes] = []

    def read() -> None:
        with open(path, "rb") as f:
            got.append(f.read())

    t = threading.Thread(target=read, daemon=True)
    t.start()
    return t, got


def test_the_atomic_writer_keeps_links_devices_and_fifos(tmp_path: Path) -> None:
    """atomic_write renamed PATH.tmp over a device node, a FIFO or a symlink, which became a regular file."""
    null = _device(tmp_path / "null", 3)
    (tmp_path / "real.pt").write_bytes(b"old")
    os.chmod(tmp_path / "real.pt", 0o640)
    os.symlink("real.pt", tmp_path / "link.pt")
    os.symlink("link.pt", tmp_path / "link2.pt")  # a chain of links
    os.symlink("absent/x.pt", tmp_path / "dangling.pt")
    os.mkfifo(tmp_path / "pipe")
    atomic_write(null, lambda f: f.write(b"x" * 1000))
    atomic_write(tmp_path / "link2.pt", lambda f: f.write(b"new"))
    reader, got = _fifo_reader(tmp_path / "pipe")
    atomic_copy(tmp_path / "real.pt", tmp_path / "pipe")
    reader.join(5)
    assert got == [b"new"]
    assert _kinds(tmp_path) == {"dangling.pt": "link", "link.pt": "link", "link2.pt": "link", "null": "chr",
                                "pipe": "fifo", "real.pt": "file"}
    assert (tmp_path / "real.pt").read_bytes() == b"new"
    assert stat.S_IMODE(os.stat(tmp_path / "real.pt").st_mode) == 0o640
    with pytest.raises(FileNotFoundError):  # a dangling link's folder is not created
        atomic_write(tmp_path / "dangling.pt", lambda f: f.write(b"x"))
    (tmp_path / "absent").mkdir()
    atomic_write(tmp_path / "dangling.pt", lambda f: f.write(b"made"))
    assert (tmp_path / "absent" / "x.pt").read_bytes() == b"made" and (tmp_path / "dangling.pt").is_symlink()


def test_a_full_device_is_an_os_error_and_stays_a_device(tmp_path: Path) -> None:
    full = _device(tmp_path / "full", 7)
    with pytest.raises(OSError, match="No space left"):
        atomic_write(full, lambda f: f.write(b"x" * 100_000))
    assert _kinds(tmp_path) == {"full": "chr"}


def _socket_file(path: Path) -> Any:
    import socket

    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    return s


@pytest.mark.parametrize("kind", ["folder", "socket", "loop", "link_to_folder"])
def test_fuzz_write_targets_that_cannot_be_written(tmp_path: Path, kind: str) -> None:
    """Each is an OutputPathError (a ValueError and an OSError) naming the path; nothing is created or replaced."""
    target = tmp_path / "t"
    keep = None
    if kind == "folder":
        target.mkdir()
    elif kind == "socket":
        keep = _socket_file(target)
    elif kind == "loop":
        os.symlink("t2", target)
        os.symlink("t", tmp_path / "t2")
    else:
        (tmp_path / "d").mkdir()
        os.symlink("d", target)
    before = _kinds(tmp_path)
    try:
        with pytest.raises(OutputPathError) as info:
            atomic_write(target, lambda f: f.write(b"x"))
        assert isinstance(info.value, ValueError) and str(tmp_path) in str(info.value)
        assert _kinds(tmp_path) == before
    finally:
        if keep is not None:
            keep.close()


def test_write_target_table(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    os.symlink("f", tmp_path / "l")
    os.mkfifo(tmp_path / "p")
    assert write_target(tmp_path / "new") == (tmp_path / "new", True)
    assert write_target(tmp_path / "f") == (tmp_path / "f", True)
    assert write_target(tmp_path / "l") == (Path(os.path.realpath(tmp_path / "f")), True)
    assert write_target(tmp_path / "p") == (tmp_path / "p", False)
    assert write_target("/dev/null") == (Path("/dev/null"), False)
    with pytest.raises(OSError, match="too long"):
        write_target(tmp_path / ("x" * 300))


def test_record_writer_keeps_links_devices_and_fifos(tmp_path: Path) -> None:
    """RecordWriter wrote PATH.tmp and renamed it over /dev/null (as root /dev/null itself was replaced)."""
    null = _device(tmp_path / "null", 3)
    (tmp_path / "real.jsonl").write_text("")
    os.symlink("real.jsonl", tmp_path / "link.jsonl")
    os.mkfifo(tmp_path / "pipe")
    rec = random_record(RULES, seed=1)
    for target in (null, tmp_path / "link.jsonl"):
        with RecordWriter(target) as w:
            w.write(rec)
    reader, got = _fifo_reader(tmp_path / "pipe")
    with RecordWriter(tmp_path / "pipe") as w:
        w.write(rec)
    reader.join(5)
    assert len(got) == 1 and json.loads(got[0]) == rec
    assert _kinds(tmp_path) == {"link.jsonl": "link", "null": "chr", "pipe": "fifo", "real.jsonl": "file"}
    assert read_records(tmp_path / "link.jsonl") == [rec]


def test_eval_writes_records_and_reports_into_links_and_devices(tmp_path: Path) -> None:
    """cassino eval --save-games DEVICE (or a link) turned it into a regular file; the report's files too."""
    null = _device(tmp_path / "null", 3)
    ev = tmp_path / "ev"
    ev.mkdir()
    (tmp_path / "real.json").write_text("")
    os.symlink(tmp_path / "real.json", ev / "eval.json")
    code, out, err = _run(["eval", "--agents", "random,greedy", "--deals", "2", "--no-progress", "--out-dir", str(ev),
                           "--save-games", str(null)])
    assert code == 0, err
    assert _kinds(tmp_path) == {"ev": "dir", "null": "chr", "real.json": "file"}
    assert (ev / "eval.json").is_symlink() and json.loads((tmp_path / "real.json").read_text())["deals"] == 2
    full = _device(tmp_path / "full", 7)
    with pytest.raises(RecordError, match="No space left on device"), RecordWriter(full) as w:
        w.write(random_record(RULES, seed=1))
    assert _kinds(tmp_path)["full"] == "chr"


# --- 3. a save path that clashes with the report ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["eval.json", "eval.csv", "eval.md", "heatmap.png", "./eval.json", "link"])
def test_save_games_onto_a_report_file_is_refused_before_playing(tmp_path: Path, name: str) -> None:
    """--save-games ev/eval.json --out-dir ev: the report overwrote the records just written."""
    ev = tmp_path / "ev"
    ev.mkdir()
    if name == "link":
        os.symlink(ev / "eval.md", tmp_path / "link")
        target = tmp_path / "link"
    else:
        target = ev / name
    code, out, err = _run(["eval", "--agents", "random,greedy", "--deals", "2", "--no-progress", "--out-dir", str(ev),
                           "--save-games", str(target)])
    assert "is the report's" in _one_error_line(code, err) and out == ""
    assert list(ev.iterdir()) == []


# --- 12. command-line values out of range: bench, eval, play, replay --------------------------------------------------

CLI_CASES = [
    (["bench", "--batch", "0"], "batch: expected batch sizes 1..1,048,576"),
    (["bench", "--batch", "-5"], "batch: expected batch sizes"),
    (["bench", "--batch", "100000000000"], "batch: expected batch sizes"),
    (["bench", "--engine", "vector", "--batch", "100000"], "batch: expected batch sizes 1..65,536"),
    (["bench", "--engine", "aec", "--batch", "64"], "batch: the aec engine plays one game at a time"),
    (["bench", "--batch", "4", "0"], "batch: expected"),
    (["bench", "--seconds", "inf"], r"seconds: expected a number of seconds in \(0, 3600\]"),
    (["bench", "--seconds", "nan"], "seconds: expected"),
    (["bench", "--seconds", "-1"], "seconds: expected"),
    (["bench", "--seconds", "0"], "seconds: expected"),
    (["bench", "--seconds", "1e300"], "seconds: expected"),
    (["bench", "--threads", "0"], "threads: expected 1.."),
    (["bench", "--threads", "1000"], "threads: expected 1.."),
    (["bench", "--threads", "-1"], "threads: expected 1.."),
    (["bench", "--preset", "nope"], "unknown preset"),
    (["bench", "--preset", "x" * 100_000], r"unknown preset .*\(100002 characters\)"),
    (["eval", "--agents", "random,greedy", "--batch-games", "0"], "batch_games: expected games stepped together"),
    (["eval", "--agents", "random,greedy", "--batch-games", "-1"], "batch_games: expected"),
    (["eval", "--agents", "random,greedy", "--batch-games", "100000000000"], "batch_games: expected"),
    (["eval", "--agents", "random,greedy", "--save-games", "x" * 300], "save_games: cannot write .*too long"),
    (["eval", "--agents", "random,greedy", "--out-dir", "x" * 300], "out_dir .*too long"),
    (["eval", "--agents", "random,greedy", "--preset", "x" * 100_000], r"\(100002 characters\)"),
    (["eval", "--agents", "random,greedy", "--save-games", "/dev"], "save_games: .*is a folder"),
    (["play", "--deals", "-1"], "deals: expected an integer >= 0"),
    (["play", "--seat", "5"], "seat must be 0..1"),
    (["play", "--seed", "-1"], "seed"),
    (["play", "--preset", "x" * 100_000], r"\(100002 characters\)"),
    (["replay", "/nonexistent/x.jsonl"], "No such file"),
    (["replay", "x" * 300], "too long"),
    (["replay", "/dev"], "Is a directory"),
    (["serve", "--host", ""], "host: expected an address to listen on"),
    (["serve", "--host", "   "], "host: expected an address"),
    (["serve", "--port", "70000"], "port: expected 0..65535"),
    (["serve", "--host", "256.0.0.1"], "cannot listen on"),
]


@pytest.mark.parametrize(("argv", "message"), CLI_CASES, ids=[" ".join(a)[:50] for a, _ in CLI_CASES])
def test_fuzz_command_line_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str],
                                  message: str) -> None:
    """Each is one `error: ...` line and exit 2, before anything runs, and nothing is written: bench --batch 0 and
    -5 hung, --seconds inf never ended, --batch 10**11 and --threads 1000 were tracebacks, --seconds nan/-1/0,
    --threads 0, eval --batch-games 0/-1/10**11 and play --deals -1 were taken, a 300-character save name was an
    OSError traceback, serve --host '' listened on every interface."""
    monkeypatch.chdir(tmp_path)
    code, out, err = _run([*argv, *(["--deals", "1", "--no-progress"] if argv[0] == "eval" else [])])
    line = _one_error_line(code, err)
    assert re.search(message, line), line
    assert len(line) < 2000 and list(tmp_path.iterdir()) == []


# --- 13 and 12. record files: a raw U+2028, "version": true or 1.0, huge values in messages ---------------------------


def test_a_raw_line_separator_inside_a_record_is_not_a_line_break(tmp_path: Path) -> None:
    """splitlines() split a record at a raw U+2028 (legal inside a JSON string): 'Unterminated string'."""
    rec = random_record(RULES, seed=3)
    rec["seats"] = ["a\u2028b", "c\u0085d\x0ce"]
    text = json.dumps(rec, ensure_ascii=False) + "\r\n" + json.dumps(rec, ensure_ascii=False) + "\n"
    assert [n for n, _ in parse_lines(text)] == [1, 2]
    path = tmp_path / "g.jsonl"
    path.write_text(text, encoding="utf-8", newline="")
    code, out, err = _run(["replay", str(path)])
    assert code == 0 and "2 games" in out, err


@pytest.mark.parametrize("version", [True, 1.0, "1", [1], None, 2, 0])
def test_a_record_version_must_be_the_integer_1(version: Any) -> None:
    """"version": true and 1.0 were read as version 1."""
    rec = {**random_record(RULES, seed=1), "version": version}
    with pytest.raises(RecordError, match=r"^game 4: version: this code reads version 1, got "):
        read_records_from([rec], 4)


def read_records_from(records: list[dict[str, Any]], game: int) -> None:
    from train.records import check_record

    for rec in records:
        check_record(rec, game)


BIG = "x" * 1_000_000


def _record_cases() -> dict[str, Any]:
    base = random_record(RULES, seed=1)
    deal = base["deals"][0]
    return {
        "rules_preset": {**base, "rules": BIG}, "rules_switch": {**base, "rules": {"preset": "classic", BIG: 1}},
        "rules_value": {**base, "rules": {"preset": "classic", "target": BIG}},
        "rules_choice": {**base, "rules": {"preset": "classic", "builds": BIG}},
        "unknown_field": {**base, BIG: 1}, "format": {**base, "format": BIG}, "seed": {**base, "seed": BIG},
        "seed_digits": {**base, "seed": 10**5000}, "play": {**base, "play": BIG},
        "session_wins": {**base, "session_wins": BIG}, "info": {**base, "info": BIG},
        "num_players": {**base, "num_players": BIG}, "winners": {**base, "match_winners": [BIG]},
        "deal_field": {**base, "deals": [{**deal, BIG: 1}]}, "moves": {**base, "deals": [{**deal, "moves": BIG}]},
        "move_action": {**base, "deals": [{**deal, "moves": [{"action": BIG}]}]},
        "move_card": {**base, "deals": [{**deal, "moves": [{"action": "trail", "card": BIG}]}]},
        "move_field": {**base, "deals": [{**deal, "moves": [{"action": "trail", "card": "2C", BIG: 1}]}]},
        "move_take": {**base, "deals": [{**deal, "moves": [{"action": "capture", "card": "2C", "take": [BIG]}]}]},
        "points": {**base, "deals": [{**deal, "points": [BIG, 1]}]},
        "match": {**base, "deals": [{**deal, "match": BIG}]},
        "version": {**base, "version": BIG}, "not_an_object": [BIG],
    }


@pytest.mark.parametrize("kind", sorted(_record_cases()))
def test_fuzz_record_fields_are_refused_with_a_short_message(tmp_path: Path, kind: str) -> None:
    """A 1 MB value is quoted as an excerpt (the rules, session_wins and the failing move were quoted whole: 5 MB
    on stderr), at the API and at the command line (one line, exit 2)."""
    from train.records import replay

    rec = _record_cases()[kind]
    with pytest.raises(RecordError) as info:
        replay(rec, 1)
    assert len(str(info.value)) < 1000, str(info.value)[:300]
    path = tmp_path / "g.jsonl"
    if kind == "seed_digits":  # json.dumps itself refuses to write it
        text = json.dumps({**rec, "seed": 0}).replace('"seed": 0', '"seed": ' + "1" * 5000)
    else:
        text = json.dumps(rec)
    path.write_text(text + "\n", encoding="utf-8")
    code, _, err = _run(["replay", str(path)])
    assert len(_one_error_line(code, err)) < 1200


RECORD_FILES = {
    "empty": "", "blank_line": "\n", "crlf_blank": "\r\n", "not_json": "{\n", "nested": "[" * 100_000 + "]" * 100_000,
    "long_number": "1" * 5000, "nul": "\x00", "bom": "\ufeff{}", "latin1": b"\xe9t\xe9".decode("latin-1"),
    "array": "[]", "number": "7", "u2028_outside_strings": "{}\u2028{}",
}


@pytest.mark.parametrize("kind", sorted(RECORD_FILES))
def test_fuzz_record_files(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "g.jsonl"
    path.write_text(RECORD_FILES[kind], encoding="utf-8", newline="")
    code, _, err = _run(["replay", str(path)])
    assert len(_one_error_line(code, err)) < 600
    with pytest.raises(RecordError):
        read_records(path)


# --- 10. an agent's moves that are not integers ---------------------------------------------------------------------


class _Returns:
    def __init__(self, value: Any) -> None:
        self.value, self.name = value, "sloppy"

    def act(self, obs: dict[str, Any], rng: np.random.Generator) -> Any:
        n = len(obs["action_mask"])
        if callable(self.value):
            return self.value(n)
        return [self.value] * n


MOVE_CASES = {"float": 0.7, "none": None, "text": "0", "bool": True, "huge": 2**70, "negative": -1,
              "unlisted": 400, "nan": float("nan"), "nested": [[0]],
              "array_of_two": lambda n: np.zeros((n, 2), int), "empty": lambda n: [],
              "ragged": lambda n: [[0], [0, 1]] * n, "object": object()}


@pytest.mark.parametrize("kind", sorted(MOVE_CASES))
def test_fuzz_agent_moves_one_check_everywhere(kind: str) -> None:
    """The Gymnasium env truncated 0.7 to move 0, None was a raw TypeError, an array played its first element; the
    web app had the same int(...); cassino eval exited with a RuntimeError traceback."""
    from agents.base import AgentMoveError
    from agents.gym_env import CassinoGymEnv
    from cassino_env.actions import IllegalActionError
    from train.evaluate import evaluate

    value = MOVE_CASES[kind]
    with pytest.raises(AgentMoveError, match="agent 'sloppy'"):
        evaluate([_Returns(value), "random"], RULES, deals=1, seed=0)
    env = CassinoGymEnv(opponent=_Returns(value), learner_seat=1)
    with pytest.raises(IllegalActionError, match="agent 'sloppy'"):
        env.reset(seed=0)


def test_eval_of_an_agent_returning_floats_is_one_error_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import types

    mod = types.ModuleType("sloppy_bot_hostile")

    class Sloppy:
        name = "sloppy"

        def __init__(self, rules: Any) -> None:
            pass

        def act(self, obs: dict[str, Any], rng: np.random.Generator) -> Any:
            return np.full(len(obs["action_mask"]), 0.7)

    mod.Sloppy = Sloppy
    monkeypatch.setitem(sys.modules, "sloppy_bot_hostile", mod)
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(["eval", "--agents", "sloppy_bot_hostile:Sloppy,random", "--deals", "2", "--no-progress",
                         "--out-dir", str(tmp_path / "ev")])
    assert "not an integer index: np.float64(0.7)" in _one_error_line(code, err) or "0.7" in err
    assert list(tmp_path.iterdir()) == []


def test_play_refuses_an_opponent_move_that_is_not_an_integer(monkeypatch: pytest.MonkeyPatch) -> None:
    from agents.base import AgentMoveError
    from train import play

    monkeypatch.setattr("agents.registry.make_agent", lambda spec, rules, **kw: _Returns(0.7))
    with pytest.raises(AgentMoveError, match="sloppy"):
        play.play_session("x", "classic", seat=1, inp=io.StringIO(""), out=io.StringIO())
