"""The phases every trainer shares (train/run.py): what a run says is saved, the folder it removes, the Ctrl-C guard
and the stop between iterations, the time left, the stale temporary files, the resume check. The trainers' own
tests (tests/test_train*.py, tests/test_exit*.py) run them inside whole runs."""

from __future__ import annotations

import signal
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import train.run as run_module
from agents.policy import CassinoPolicy
from cassino_env.obs import obs_size
from cassino_env.rules import make_rules
from train.checkpoints import read_training_checkpoint
from train.config import Args
from train.run import (
    Run,
    RunInterrupted,
    RunStopped,
    finish,
    guard,
    remove_stale_temporaries,
    resume_options,
    stop_if_interrupted,
    time_left,
    write_run_folder,
)


def small_run(run_dir: Path, **over: object) -> Run:
    """A :class:`Run` of a small fresh network, as a trainer makes one (its folder not made yet)."""
    net = CassinoPolicy(obs_dim=obs_size(2, 2), hidden=16, embed=8)
    values = {"args": Args(run_dir=str(run_dir)), "rules": make_rules("classic"), "run_dir": run_dir, "policy": net,
              "optimizer": torch.optim.Adam(net.parameters()), "rng": np.random.default_rng(0),
              "num_iterations": 3, **over}
    return Run(**values)


def test_what_is_saved_and_the_folder_removed_before_the_first_checkpoint(tmp_path: Path) -> None:
    run = small_run(tmp_path / "run", remove_if_unsaved=True)
    run.ckpt_dir.mkdir(parents=True)
    assert run.saved_so_far().startswith("nothing was saved")
    assert run.abandon() == f"; the run folder {run.run_dir}, made by this run, is removed"
    assert not run.run_dir.exists() and tmp_path.exists()


def test_a_checkpoint_is_named_with_where_the_run_was_and_keeps_the_folder(tmp_path: Path) -> None:
    run = small_run(tmp_path / "run", remove_if_unsaved=True, iteration=2, global_step=768)
    run.ckpt_dir.mkdir(parents=True)
    path = run.checkpoint("step_00000000768.pt")
    saved = read_training_checkpoint(path)["train"]
    assert (saved["iteration"], saved["global_step"], saved["run_dir"]) == (2, 768, str(run.run_dir))
    assert (run.ckpt_dir / "latest.pt").is_file() and run.written == 1
    assert run.saved_so_far() == (f"the last checkpoint, {path} (step 768), is intact: resume with: cassino train "
                                  f"--resume {run.ckpt_dir / 'latest.pt'}")
    assert run.abandon() == "" and path.is_file()


def test_a_resumed_run_that_saved_nothing_names_the_file_it_resumed(tmp_path: Path) -> None:
    src = tmp_path / "old" / "checkpoints" / "latest.pt"
    run = small_run(tmp_path / "new", args=Args(resume=str(src), run_dir=str(tmp_path / "new")),
                    last_checkpoint=src, last_checkpoint_at="step 1,536")
    assert run.saved_so_far() == (f"this session saved nothing, the run is as {src} left it (step 1,536): resume "
                                  f"with: cassino train --resume {src} --run-dir {tmp_path / 'new'}")


def test_a_checkpoint_that_cannot_be_written_is_a_run_stopped_naming_it(tmp_path: Path) -> None:
    run = small_run(tmp_path / "run")
    run.run_dir.mkdir()
    run.ckpt_dir.write_bytes(b"a file where the checkpoints folder goes")
    with pytest.raises(RunStopped, match=r"cannot write the checkpoint .*checkpoints.* at step 0: .*nothing was saved"):
        run.checkpoint("x.pt")
    assert run.written == 0 and run.last_checkpoint is None


def test_stop_if_interrupted_saves_once_and_gives_the_resume_command(tmp_path: Path) -> None:
    run = small_run(tmp_path / "run", iteration=1, global_step=384)
    run.ckpt_dir.mkdir(parents=True)
    stop_if_interrupted(run, "a.pt")  # Ctrl-C not pressed: nothing
    assert run.written == 0
    run.interrupt_requested = True
    with pytest.raises(RunInterrupted) as info:
        stop_if_interrupted(run, "a.pt")
    assert str(info.value) == (f"interrupted at step 384: nothing is lost, {run.ckpt_dir / 'a.pt'} holds the run: "
                               f"resume with: cassino train --resume {run.ckpt_dir / 'latest.pt'}")
    with pytest.raises(RunInterrupted, match="a.pt holds the run"):  # this step's checkpoint is there: not again
        stop_if_interrupted(run, "b.pt")
    assert run.written == 1 and not (run.ckpt_dir / "b.pt").exists()


def test_the_guard_turns_ctrl_c_and_a_write_failure_into_one_message(tmp_path: Path) -> None:
    before = signal.getsignal(signal.SIGINT)
    run = small_run(tmp_path / "run", remove_if_unsaved=True, global_step=5)
    run.run_dir.mkdir()
    with pytest.raises(RunInterrupted) as info, guard(run):
        raise KeyboardInterrupt
    assert str(info.value).startswith("interrupted at step 5 (stopped at once")
    assert "nothing was saved" in str(info.value) and str(info.value).endswith("is removed")
    assert not run.run_dir.exists() and signal.getsignal(signal.SIGINT) is before
    run = small_run(tmp_path / "run2")
    with pytest.raises(RunStopped) as info, guard(run):
        raise OSError(28, "No space left on device", str(tmp_path / "labels.npz"))
    assert str(info.value).startswith(f"cannot write {tmp_path / 'labels.npz'} at step 0: No space left on device")
    with pytest.raises(ConnectionError, match="cluster"), guard(small_run(tmp_path / "run3")):
        raise ConnectionError("the cluster went away")  # an OSError, but no file's: it passes as it is


def test_the_first_ctrl_c_asks_the_run_to_stop_after_the_iteration(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    run = small_run(tmp_path / "run")
    before = signal.getsignal(signal.SIGINT)
    with guard(run):
        assert signal.getsignal(signal.SIGINT) is not before  # the guard's handler while the loop runs
        signal.raise_signal(signal.SIGINT)
        assert run.interrupt_requested
    assert signal.getsignal(signal.SIGINT) is before
    assert capsys.readouterr().out.startswith("Ctrl-C: stopping after this iteration")


def test_time_left_is_this_sessions_pace_the_limit_or_the_budget() -> None:
    run = small_run(Path("unused"), num_iterations=10, iteration=4, start_iteration=2, elapsed_before=100.0)
    assert time_left(run, 160.0) == "~3m00s left"  # 30 s an iteration this session, 6 to go
    run.args = SimpleNamespace(max_train_seconds=200.0)
    assert time_left(run, 160.0) == "~0m40s left"  # the time limit comes first
    run.budget_note = lambda: "recipe: 1.0 h used of 2 h"
    assert time_left(run, 160.0) == "recipe: 1.0 h used of 2 h"
    run.budget_note, run.iteration = None, 10
    assert time_left(run, 160.0) == ""  # none left
    run.iteration = run.start_iteration = 4
    assert time_left(run, 160.0) == ""  # none timed yet


def test_remove_stale_temporaries_takes_only_a_killed_runs_files(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    for sub in ("checkpoints", "labels"):
        (tmp_path / sub).mkdir()
    stale = [tmp_path / ".config.yaml.ab12.tmp", tmp_path / "checkpoints" / ".latest.pt.x.tmp",
             tmp_path / "labels" / ".iter_00001.npz.y.tmp"]
    kept = [tmp_path / "config.yaml", tmp_path / "checkpoints" / "latest.pt", tmp_path / ".other.tmp"]
    for f in stale + kept:
        f.write_bytes(b"x")
    assert remove_stale_temporaries(tmp_path) == 3
    assert not any(f.exists() for f in stale) and all(f.exists() for f in kept)
    assert "removed 3 temporary files" in capsys.readouterr().out


def test_resume_options_checks_the_checkpoint_before_its_config(tmp_path: Path) -> None:
    run = small_run(tmp_path / "run")
    run.ckpt_dir.mkdir(parents=True)
    path = run.checkpoint("a.pt")
    seen = []

    def refuse(ckpt: dict, where: str) -> None:
        seen.append((sorted(ckpt["train"]), where))
        raise ValueError("not this trainer's run")

    with pytest.raises(ValueError, match="not this trainer's run"):
        resume_options(Args(resume=str(path)), {"resume"}, check=refuse)
    assert seen and seen[0][1] == str(path) and "global_step" in seen[0][0]
    args, ckpt = resume_options(Args(resume=str(path), seed=5), {"resume", "seed"})
    assert args.seed == 5 and ckpt is not None and ckpt["train"]["iteration"] == 0
    assert resume_options(Args(), None) == (Args(), None)


# --- finish: final.pt under the guard, and a Ctrl-C of the last iteration heeded -------------------------------------


def finished_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, presses: int) -> tuple[Run, list[str]]:
    """A run at its end (folder written, one checkpoint before), whose ``final.pt`` write receives ``presses``
    Ctrl-C (SIGINT) first; the evaluation after training is recorded, not played."""
    run = small_run(tmp_path / "run", iteration=3, global_step=1152)
    write_run_folder(run, fresh=True)
    run.checkpoint("step_00000000768.pt")
    evaluated: list[str] = []
    monkeypatch.setattr(run_module, "final_evaluation", lambda path, *a, **k: evaluated.append(str(path)))
    save = run_module.save_training_checkpoint

    def pressed_while_writing(path: Path, *args: object, **kwargs: object) -> Path:
        for _ in range(presses):
            signal.raise_signal(signal.SIGINT)
        return save(path, *args, **kwargs)

    monkeypatch.setattr(run_module, "save_training_checkpoint", pressed_while_writing)
    return run, evaluated


def test_a_ctrl_c_while_final_pt_is_written_waits_for_it_then_skips_the_evaluation(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Hostile: a Ctrl-C while final.pt was written was a KeyboardInterrupt outside the loop's guard, which cassino
    exit reported as 'interrupted before the run began: nothing was written' (cassino train: 'nothing was
    trained') with the run's checkpoints on disk."""
    run, evaluated = finished_run(tmp_path, monkeypatch, presses=1)
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(RunInterrupted) as info:
        finish(run)
    final = run.ckpt_dir / "final.pt"
    assert str(info.value) == (f"interrupted at step 1,152: nothing is lost, the run is complete: {final} holds the "
                               "trained network; the evaluation after training is skipped: evaluate it with: cassino "
                               f"eval --agents checkpoint:{final},ladder")
    assert read_training_checkpoint(final)["train"]["global_step"] == 1152 and evaluated == []
    assert read_training_checkpoint(run.ckpt_dir / "latest.pt")["train"]["global_step"] == 1152
    assert "Ctrl-C: stopping once the final checkpoint is written" in capsys.readouterr().out
    assert signal.getsignal(signal.SIGINT) is before


def test_a_second_ctrl_c_while_final_pt_is_written_says_what_is_saved(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    run, evaluated = finished_run(tmp_path, monkeypatch, presses=2)
    with pytest.raises(RunInterrupted) as info:
        finish(run)
    step = run.ckpt_dir / "step_00000000768.pt"
    assert str(info.value).startswith("interrupted at step 1,152 (stopped at once")
    assert f"the last checkpoint, {step} (step 1,152), is intact: resume with" in str(info.value)
    assert not (run.ckpt_dir / "final.pt").exists() and evaluated == []
    assert read_training_checkpoint(run.ckpt_dir / "latest.pt")["train"]["global_step"] == 1152


def test_a_ctrl_c_of_the_last_iteration_stops_the_run_before_its_evaluation(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Hostile: Ctrl-C in the last iteration printed 'stopping after this iteration', then the run played its whole
    evaluation after training (minutes against the ladder) and exited 0."""
    run, evaluated = finished_run(tmp_path, monkeypatch, presses=0)
    run.interrupt_requested = True
    with pytest.raises(RunInterrupted, match="the run is complete: .*final.pt holds the trained network; the "
                                             "evaluation after training is skipped"):
        finish(run)
    assert (run.ckpt_dir / "final.pt").is_file() and evaluated == []
    run, evaluated = finished_run(tmp_path / "again", monkeypatch, presses=0)  # no Ctrl-C: evaluated as before
    assert finish(run) == run.ckpt_dir / "final.pt" and evaluated == [str(run.ckpt_dir / "final.pt")]
    run, evaluated = finished_run(tmp_path / "none", monkeypatch, presses=0)
    run.args, run.interrupt_requested = Args(run_dir=str(run.run_dir), final_eval_deals=0), True
    with pytest.raises(RunInterrupted) as info:  # nothing left to skip: the message says only what is saved
        finish(run)
    assert str(info.value).endswith("final.pt holds the trained network")


def test_progress_line_in_a_stage_shows_the_cap_not_a_share_and_the_level_at_three_sides() -> None:
    """A PPO stage of ``cassino train`` is ended by the recipe's budget, so its progress line gives the step count
    as a cap (no percentage that would read as progress); at more than two sides the deal win rates vs the bots come
    with what level play is (one side against the other sides)."""
    from types import SimpleNamespace

    from train.run import progress_line

    def fake(sides: int, note: object) -> SimpleNamespace:
        return SimpleNamespace(global_step=98_304, last_eval={"advanced": 0.31}, last_eval_step=49_152,
                               rules=SimpleNamespace(num_sides=sides), num_iterations=203, batch_steps=49_152,
                               iteration=2, start_iteration=0, elapsed_before=0.0, budget_note=note,
                               args=SimpleNamespace(max_train_seconds=0))

    stage = progress_line(fake(3, lambda: "recipe: 1m00s of 18m00s used, 17m00s left"), 10.0)
    assert stage.startswith("step      98,304 (stage cap 9,977,856) | SPS 9,830 | 0m10s elapsed, recipe: 1m00s")
    assert "vs advanced 0.31 (level play: 0.33, one side against 2 sides of the bot)" in stage
    alone = progress_line(fake(2, None), 10.0)
    assert alone.startswith("step      98,304/9,977,856 (  1%) | SPS 9,830 | 0m10s elapsed, ~")
    assert alone.endswith("vs advanced 0.31")
