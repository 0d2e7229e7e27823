"""Reliability, round two (issue 27): hostile checkpoint tensors and archives, writers that met special files, output
names that clash, command-line values out of range, record files (U+2028, ``version``), agents' non-integer moves,
huge values quoted in errors; with table-driven fuzz tests of each surface: checkpoint tensors (strides, storage
sharing, dtypes, sizes), writers' targets, record files and the bench/eval/play/replay options. The web app's part is
in tests/test_reliability_round2_serve.py."""

from __future__ import annotations

import contextlib
import io
import json
import resource
import zipfile
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from agents.policy import CassinoPolicy, NetworkShape  # noqa: E402
from agents.ppo_agent import (  # noqa: E402
    CheckpointError,
    expected_tensors,
    load_checkpoint_agent,
    policy_from_checkpoint,
    read_checkpoint,
    save_checkpoint,
)
from cassino_env.obs import obs_size  # noqa: E402
from cassino_env.rules import make_rules  # noqa: E402
from train import cli  # noqa: E402

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
