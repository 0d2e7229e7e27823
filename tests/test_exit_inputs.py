"""``cassino exit``'s hostile and unlucky inputs (issue 50): label files checked beyond their headers, Ctrl-C and a
full disk as one line with nothing half-written and no empty run folder, a run resumed into another folder that
resumes by itself, and options that would be ignored or make odd folders refused."""

from __future__ import annotations

import errno
import io
import shutil
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from train import config
from train.config import ConfigError
from train.exit import ExitArgs, Labels, train
from train.expert import labels as labels_mod
from train.expert import loop as loop_mod
from train.run import RunInterrupted, RunStopped

TINY = Path(__file__).resolve().parents[1] / "configs" / "exit_tiny.yaml"


def tiny_args(**over: object) -> ExitArgs:
    return config.make_args(ExitArgs, {**config.load_config(ExitArgs, TINY), **over})


def resume(path: Path, iterations: int, **over: object) -> Path:
    given = {"resume": str(path), "iterations": iterations, **over}
    return train(config.make_args(ExitArgs, {**config.args_to_dict(ExitArgs()), **given}), explicit=set(given))


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny run of two iterations."""
    out = tmp_path_factory.mktemp("exit_inputs") / "run"
    train(tiny_args(run_dir=str(out)))
    return out


# --- label files ------------------------------------------------------------------------------------------------------

def rows(n: int = 3, w: int = 4) -> dict[str, np.ndarray]:
    """A small, valid set of label arrays (no move features, no critic input)."""
    mask = np.zeros((n, w), bool)
    mask[:, :2] = True
    q = np.where(mask, 1.0, np.nan).astype(np.float32)
    return {"obs": np.zeros((n, 5), np.float32), "kind": np.where(mask, 1, -1).astype(np.int8),
            "card": np.where(mask, 7, -1).astype(np.int8), "value": np.zeros((n, w), np.int8),
            "cards": np.zeros((n, w), np.int64), "mask": mask, "q": q,
            "prior": np.where(mask, 0.5, 0.0).astype(np.float32), "ret": np.zeros(n, np.float32)}


def write(path: Path, arrays: dict[str, np.ndarray], compressed: bool = False) -> Path:
    (np.savez_compressed if compressed else np.savez)(path, **arrays)
    return path


def test_a_valid_label_file_loads(tmp_path: Path) -> None:
    assert len(Labels.load(write(tmp_path / "ok.npz", rows()))) == 3


@pytest.mark.parametrize(("change", "words"), [
    (lambda r: r["card"].__setitem__((1, 0), 99), "card id"),
    (lambda r: r["card"].__setitem__((2, 1), -5), "card id"),
    (lambda r: r["kind"].__setitem__((0, 1), 7), "move kind"),
    (lambda r: r["cards"].__setitem__((0, 0), 1 << 60), "card set"),
    (lambda r: r["q"].__setitem__((1, 1), np.nan), "not a finite number"),
    (lambda r: r["q"].__setitem__((0, 0), np.inf), "not a finite number"),
    (lambda r: r["q"].__setitem__((0, 0), -1e30), "not a finite number"),
    (lambda r: r["prior"].__setitem__((2, 0), 3.0), "probability"),
    (lambda r: r["ret"].__setitem__(1, np.nan), "'ret'"),
    (lambda r: r["obs"].__setitem__((0, 2), np.inf), "'obs'"),
    (lambda r: r["mask"].__setitem__(1, False), "no legal move"),
    (lambda r: r["mask"].__setitem__((2, 3), True), "first columns"),  # a legal move after an illegal one
    (lambda r: r.__setitem__("q", r["q"][:2]), "disagree"),
    (lambda r: r.pop("prior"), "'prior' is missing"),
])
def test_label_values_are_checked(tmp_path: Path, change: Any, words: str) -> None:
    """Out-of-range ids (an IndexError before), NaN/inf values (trained on silently before), a row with no legal move
    (blamed on the learning rate before): one error naming the field, the file and the array."""
    r = rows()
    change(r)
    path = write(tmp_path / "bad.npz", r)
    with pytest.raises(ConfigError) as info:
        Labels.load(path, field="extra_labels")
    assert info.value.field == "extra_labels" and str(path) in str(info.value) and words in str(info.value)


def test_a_header_claiming_absurd_rows_is_refused_unread(tmp_path: Path) -> None:
    """A ``ret`` header that claims 10**12 rows (a MemoryError before) is refused from the archive's sizes."""
    path = write(tmp_path / "forged.npz", rows())
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f4", "fortran_order": False, "shape": (10**12,)})
    forged = tmp_path / "forged2.npz"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(forged, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "ret.npy":
                assert len(buf.getvalue()) == 128
                data = buf.getvalue() + data[128:]
            dst.writestr(info.filename, data)
    with pytest.raises(ConfigError, match="declares") as info:
        Labels.load(forged)
    assert "not a label file" not in str(info.value)  # said once, not wrapped in a second message


def test_a_decompression_bomb_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Arrays that unpack to far more than the file (2.6 GB from 1.1 MB before) are refused before reading; the floor
    is lowered here so the test stays small."""
    monkeypatch.setattr(labels_mod, "UNPACK_FLOOR", 1 << 20)
    r = rows(n=20_000, w=4)
    r["obs"] = np.zeros((20_000, 200), np.float32)  # 16 MB of zeros: about 16 kB deflated
    path = write(tmp_path / "bomb.npz", r, compressed=True)
    with pytest.raises(ConfigError, match="decompression bomb"):
        Labels.load(path)
    with pytest.raises(ConfigError, match="decompression bomb"):
        labels_mod.load_joined_labels([str(path)])


# --- options --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["a\nb", "tab\there", "esc\x1b[31m", "bell\x07"])
def test_exp_name_with_control_characters_is_refused(name: str) -> None:
    with pytest.raises(ConfigError) as info:
        tiny_args(exp_name=name)
    assert info.value.field == "exp_name" and "control character" in str(info.value)


def test_widths_with_a_warm_start_are_refused(run: Path, tmp_path: Path) -> None:
    """``hidden`` (and ``embed``) make a fresh network: with ``init`` they were ignored; now refused unless they are
    the network's own, and nothing is written."""
    start = f"checkpoint:{run / 'checkpoints' / 'final.pt'}"
    target = tmp_path / "w"
    with pytest.raises(ConfigError) as info:
        train(tiny_args(run_dir=str(target), init=start, hidden=64), explicit={"init", "hidden", "run_dir"})
    assert info.value.field == "hidden" and "leave hidden out" in str(info.value) and not target.exists()
    with pytest.raises(ConfigError) as info:
        train(tiny_args(run_dir=str(target), init=start, embed=32))  # the API: fields away from the defaults
    assert info.value.field == "embed" and not target.exists()


def test_resuming_a_ppo_checkpoint_names_resume(tmp_path: Path) -> None:
    import torch

    from agents.policy import CassinoPolicy
    from cassino_env.obs import obs_size
    from cassino_env.rules import make_rules
    from train.checkpoints import save_training_checkpoint

    rules = make_rules("classic", 2)
    net = CassinoPolicy(obs_dim=obs_size(2, 2), hidden=16, embed=8)
    path = tmp_path / "ppo" / "checkpoints" / "latest.pt"
    path.parent.mkdir(parents=True)
    save_training_checkpoint(path, net, rules, torch.optim.Adam(net.parameters()),
                             {"config": {"num_envs": 8}, "iteration": 1, "global_step": 10, "pool": {}})
    with pytest.raises(ConfigError) as info:
        resume(path, 3)
    assert info.value.field == "resume" and "--init checkpoint:" in str(info.value)


# --- resume ---------------------------------------------------------------------------------------------------------

def test_extra_labels_in_the_replay_window_are_refused(run: Path) -> None:
    """A resume naming its own labels/ as extra labels would train on its replay files twice."""
    before = sorted(p.name for p in (run / "checkpoints").iterdir())
    with pytest.raises(ConfigError) as info:
        resume(run / "checkpoints" / "final.pt", 3, extra_labels=(str(run / "labels"),))
    assert info.value.field == "extra_labels" and "count twice" in str(info.value)
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == before


def test_the_lock_refusal_comes_before_resumed(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from train.run_folder import RunLock

    lock = RunLock(run).acquire()
    try:
        capsys.readouterr()
        with pytest.raises(ConfigError, match="in use"):
            resume(run / "checkpoints" / "final.pt", 3)
        assert "resumed" not in capsys.readouterr().out
    finally:
        lock.release()


def test_a_run_resumed_elsewhere_resumes_by_itself(run: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Resumed into another folder, the run copies its replay window there, so that folder resumes on its own (its
    labels were split over two folders before); a resumed folder's temporary files of a killed run are removed."""
    here = tmp_path / "here"
    shutil.copytree(run, here)
    stale = here / "checkpoints" / ".latest.pt.abc123.tmp"
    stale.write_bytes(b"half a checkpoint")
    capsys.readouterr()
    resume(here / "checkpoints" / "final.pt", 3)
    out = capsys.readouterr().out
    assert not stale.exists() and "removed 1 temporary file" in out
    assert out.index("resumed") < out.index("cassino exit: 1 iteration (iterations 3-3)")
    other = tmp_path / "other"
    resume(here / "checkpoints" / "final.pt", 4, run_dir=str(other))
    assert {p.name for p in (other / "labels").iterdir()} == {"iter_00003.npz", "iter_00004.npz"}  # replay_iterations 2
    shutil.rmtree(here)  # the first folder gone: the second needs nothing of it
    final = resume(other / "checkpoints" / "final.pt", 5)
    assert final == other / "checkpoints" / "final.pt"


# --- Ctrl-C and a full disk -------------------------------------------------------------------------------------------

def test_ctrl_c_before_the_first_checkpoint_leaves_no_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Ctrl-C in the first iteration: one line saying nothing was saved, and the folder the run made is gone."""
    def interrupted(*a: Any, **k: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(loop_mod, "update", interrupted)
    target = tmp_path / "runs" / "x"
    with pytest.raises(RunInterrupted) as info:
        train(tiny_args(run_dir=str(target)))
    assert "nothing was saved" in str(info.value) and "is removed" in str(info.value)
    assert not target.exists() and (tmp_path / "runs").exists()
    out = capsys.readouterr().out
    assert f"cassino exit: 2 iterations into {target}" in out and "labels up to 336 decisions" in out


def test_ctrl_c_at_the_command_line_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    import signal

    from train.cli import main

    def interrupted(*a: Any, **k: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(loop_mod, "update", interrupted)
    previous = signal.getsignal(signal.SIGINT)
    try:
        code = main(["exit", "--config", str(TINY), "--runs-root", str(tmp_path / "runs"), "--iterations", "1"])
    finally:
        signal.signal(signal.SIGINT, previous)
    err = capsys.readouterr().err
    assert code == 130 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert err.startswith("interrupted") and list((tmp_path / "runs").iterdir()) == []


def test_a_truncated_latest_pt_is_one_line_naming_the_checkpoint_beside_it(run: Path, tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Hostile: a corrupt or truncated latest.pt (a disk's fault: the writers never leave one) is one line that names
    the newest checkpoint beside it; nothing in the folder changes, and that checkpoint copied over resumes."""
    from train.cli import main

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    latest, final = copy / "checkpoints" / "latest.pt", copy / "checkpoints" / "final.pt"
    latest.write_bytes(final.read_bytes()[:1000])
    before = sorted((p.relative_to(copy), p.stat().st_mtime_ns) for p in copy.rglob("*"))
    assert main(["exit", "--resume", str(latest)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: resume: {latest}: not a readable checkpoint"), err
    assert err[0].endswith("; the newest other checkpoint beside it, final.pt, may be whole: copy it over latest.pt "
                           "to resume from it")
    assert sorted((p.relative_to(copy), p.stat().st_mtime_ns) for p in copy.rglob("*")) == before
    shutil.copyfile(final, latest)
    assert resume(latest, 2) == final  # the run had ended: it writes its final checkpoint again


def test_ctrl_c_while_final_pt_is_written_is_not_called_nothing_written(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Hostile: Ctrl-C while final.pt was written (outside the loop's guard) printed 'interrupted before the run
    began: nothing was written' over a folder of checkpoints; now final.pt is written whole and the line says so."""
    import signal

    import train.run as run_mod
    from train.cli import main

    save = run_mod.save_training_checkpoint

    def pressed_at_the_end(path: Path, *a: Any, **k: Any) -> Path:
        if path.name == "final.pt":
            signal.raise_signal(signal.SIGINT)
        return save(path, *a, **k)

    monkeypatch.setattr(run_mod, "save_training_checkpoint", pressed_at_the_end)
    target = tmp_path / "run"
    previous = signal.getsignal(signal.SIGINT)
    try:
        code = main(["exit", "--config", str(TINY), "--run-dir", str(target), "--iterations", "1"])
    finally:
        signal.signal(signal.SIGINT, previous)
    err = capsys.readouterr().err.strip().splitlines()
    final = target / "checkpoints" / "final.pt"
    assert code == 130 and err == [f"interrupted at iteration 1: nothing is lost, the run is complete: {final} holds "
                                   "the trained network"]
    assert sorted(p.name for p in final.parent.iterdir()) == ["final.pt", "iter_00001.pt", "latest.pt"]


def test_ctrl_c_once_stops_after_the_iteration_saved_and_the_resume_ends_where_the_run_would(
        run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first Ctrl-C (train.run.guard) lets the iteration end, saves it and names the resume command; resumed,
    the run ends bit for bit where the uninterrupted one did."""
    import signal

    import torch

    from agents.ppo_agent import read_checkpoint

    real = loop_mod.update
    calls = {"n": 0}

    def pressed_once(*a: Any, **k: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            signal.raise_signal(signal.SIGINT)  # during the first iteration's update
        return real(*a, **k)

    monkeypatch.setattr(loop_mod, "update", pressed_once)
    target = tmp_path / "run"
    with pytest.raises(RunInterrupted) as info:
        train(tiny_args(run_dir=str(target)))
    first, latest = target / "checkpoints" / "iter_00001.pt", target / "checkpoints" / "latest.pt"
    assert str(info.value) == (f"interrupted at iteration 1: nothing is lost, {first} holds the run: resume with: "
                               f"cassino exit --resume {latest}")
    assert sorted(p.name for p in (target / "checkpoints").iterdir()) == ["iter_00001.pt", "latest.pt"]
    final = resume(latest, 2)
    a, b = read_checkpoint(run / "checkpoints" / "final.pt"), read_checkpoint(final)
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])


def test_a_full_disk_is_one_line_and_never_leaves_iter_without_latest(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``latest.pt`` cannot be written at iteration 2: iter_00002.pt is taken back, latest.pt stays iteration 1's,
    and the message names it as the resume."""
    import agents.ppo_agent as ppo_agent

    real = ppo_agent.atomic_copy
    calls = {"n": 0}

    def full(src: Any, dst: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(dst))
        return real(src, dst)

    monkeypatch.setattr(ppo_agent, "atomic_copy", full)
    target = tmp_path / "run"
    with pytest.raises(RunStopped) as info:
        train(tiny_args(run_dir=str(target)))
    msg = str(info.value)
    assert "No space left on device" in msg and "iter_00001.pt (iteration 1), is intact" in msg
    assert f"--resume {target / 'checkpoints' / 'latest.pt'}" in msg
    names = sorted(p.name for p in (target / "checkpoints").iterdir())
    assert names == ["iter_00001.pt", "latest.pt"]
    monkeypatch.setattr(ppo_agent, "atomic_copy", real)
    assert resume(target / "checkpoints" / "latest.pt", 2) == target / "checkpoints" / "final.pt"


def test_a_label_file_that_cannot_be_written_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk while the first iteration's labels are written: RunStopped naming the file, nothing saved, and
    the folder the run made is gone (a raw OSError traceback before)."""
    def full(self: Labels, path: Path, rules: Any = None) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(Labels, "save", full)
    target = tmp_path / "run"
    with pytest.raises(RunStopped) as info:
        train(tiny_args(run_dir=str(target), iterations=1))
    msg = str(info.value)
    assert "iter_00001.npz" in msg and "No space left on device" in msg and "nothing was saved" in msg
    assert not target.exists()
