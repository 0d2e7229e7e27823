"""How a training run fails (issue 27 items 6, 7, 8, 11, 12, 13): options without a natural bound, runs that
diverge, a full disk, mixed-type YAML keys and Ctrl-C each end in one ``error:`` (or ``interrupted:``) line,
never a traceback, and nothing is lost that a checkpoint held."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from agents.ppo_agent import read_checkpoint  # noqa: E402
from train import cli  # noqa: E402
from train.config import CONFIGS_DIR  # noqa: E402

TINY = CONFIGS_DIR / "ppo_tiny.yaml"
#: ppo_tiny without its final evaluation: four iterations of 1,536 env steps, a checkpoint after the second.
FAST = ["--config", str(TINY), "--final-eval-deals", "0", "--eval-every", "0"]


def _one_error_line(capsys: pytest.CaptureFixture[str], *words: str) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("error: ") and "Traceback" not in err[0]
    for w in words:
        assert w in err[0], err[0]
    return err[0]


def _finite(path: Path) -> bool:
    data = read_checkpoint(path)
    return all(bool(torch.isfinite(t).all()) for t in data["model"].values() if t.is_floating_point())


# --- 6, 7, 12: options that overflow, diverge or never end are refused, naming the option --------------------------
@pytest.mark.parametrize(("flag", "value", "field"), [
    ("--learning-rate", "1e30", "learning_rate"),  # trained to NaN weights, reported success
    ("--learning-rate", "1e300", "learning_rate"),  # RuntimeError: float overflow
    ("--feature-prior", "1e300", "feature_prior"),  # RuntimeError: float overflow
    ("--reward-scale", "1e300", "reward_scale"),
    ("--ent-coef", "1e300", "ent_coef"),
    ("--vf-coef", "1e300", "vf_coef"),
    ("--total-timesteps", "1" + "0" * 26, "total_timesteps"),  # accepted: a run of 1e26 steps
])
def test_options_past_their_natural_bound_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str,
                                                      value: str, field: str) -> None:
    run = tmp_path / "run"
    assert cli.main(["train", *FAST, "--run-dir", str(run), flag, value]) == 2
    _one_error_line(capsys, field)
    assert not run.exists()


# --- 6: a run that diverges stops at once, naming the step and the last good checkpoint ----------------------------
def test_a_diverging_run_stops_at_the_first_non_finite_loss(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import train.rollout as rollout

    real, calls = rollout.compute_gae, []

    def nan_from_the_third(*a: Any, **k: Any) -> np.ndarray:
        calls.append(1)
        adv = real(*a, **k)
        return adv * np.float32("nan") if len(calls) >= 3 else adv

    monkeypatch.setattr(rollout, "compute_gae", nan_from_the_third)
    run = tmp_path / "run"
    assert cli.main(["train", *FAST, "--run-dir", str(run)]) == 1
    line = _one_error_line(capsys, "diverged", "step 4,608", "step_00000003072.pt", "--resume")
    assert "not finite" in line
    ckpts = run / "checkpoints"
    assert not (ckpts / "final.pt").exists()  # no NaN checkpoint: the loader would refuse it
    assert sorted(p.name for p in ckpts.glob("*.pt")) == ["latest.pt", "step_00000003072.pt"]
    assert _finite(ckpts / "latest.pt")


# --- 8: a full disk is one error line; the previous checkpoint is intact --------------------------------------------
def test_a_full_disk_while_checkpointing_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import agents.ppo_agent as ppo_agent

    real, calls = ppo_agent.atomic_copy, []

    def full_on_the_second(src: Any, dst: Any) -> Any:
        calls.append(1)
        if len(calls) >= 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))
        return real(src, dst)

    monkeypatch.setattr(ppo_agent, "atomic_copy", full_on_the_second)
    run = tmp_path / "run"
    code = cli.main(["train", *FAST, "--run-dir", str(run)])
    line = _one_error_line(capsys, os.strerror(errno.ENOSPC), "latest.pt")
    assert code == 1, line
    ckpts = run / "checkpoints"
    assert read_checkpoint(ckpts / "latest.pt")["train"]["global_step"] == 3072  # the copy before is intact
    assert not list(ckpts.glob("*.tmp"))


# --- 11: a YAML config with keys of mixed types ----------------------------------------------------------------------
def test_a_config_with_keys_of_mixed_types_is_one_error_line(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "mixed.yaml"
    cfg.write_text("1: 2\nfoo: 3\n")
    assert cli.main(["train", "--config", str(cfg), "--run-dir", str(tmp_path / "run")]) == 2
    _one_error_line(capsys, str(cfg), "unknown field")
    assert not (tmp_path / "run").exists()


# --- 13: Ctrl-C during training: one line, nothing lost, the resume command ------------------------------------------
def test_ctrl_c_during_training_saves_the_run_and_prints_the_resume_command(tmp_path: Path, repo_root: Path) -> None:
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from train.cli import main; sys.exit(main(sys.argv[1:]))", "train",
         *FAST, "--total-timesteps", str(1536 * 400), "--checkpoint-every", "0", "--progress-every-s", "0",
         "--run-dir", str(run)],
        cwd=repo_root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # the first progress line: training has begun
            if line.startswith("step "):
                break
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    latest = run / "checkpoints" / "latest.pt"
    assert lines[0].startswith("interrupted at step ") and f"cassino train --resume {latest}" in lines[0]
    step = int(lines[0].split()[3].replace(",", "").rstrip(":;,"))
    data = read_checkpoint(latest)
    assert data["train"]["global_step"] == step > 0  # nothing trained is lost: the checkpoint holds the last step
    assert _finite(latest)


def test_ctrl_c_twice_stops_at_once_with_one_line(tmp_path: Path, repo_root: Path) -> None:
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from train.cli import main; sys.exit(main(sys.argv[1:]))", "train",
         *FAST, "--total-timesteps", str(1536 * 400), "--num-envs", "1024", "--progress-every-s", "0",
         "--checkpoint-every", "0", "--run-dir", str(run)],
        cwd=repo_root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("step "):
                break
        proc.send_signal(signal.SIGINT)
        for line in proc.stdout:  # the first Ctrl-C is seen: the run will stop after this (1,024-game) iteration
            if line.startswith("Ctrl-C"):
                break
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("interrupted")
