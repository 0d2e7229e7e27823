"""Reliability of training runs and their files: atomic checkpoints, checkpoints checked field by field before use, a
resumed run's folder, corrupt weights, the run-folder lock, a failed resume that writes nothing, ``--resume`` with
``--config``, options checked in one place (the ``Args`` dataclass) with one ``error: <field> ...`` line at the
command line, agents' moves that are not integers; and fuzz tests of malformed configs and checkpoint fields."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import os
import random
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

torch = pytest.importorskip("torch")

from agents import files  # noqa: E402
from agents.policy import CRITICS, CassinoPolicy  # noqa: E402
from agents.ppo_agent import (  # noqa: E402
    CheckpointError,
    atomic_copy,
    load_checkpoint_agent,
    policy_from_checkpoint,
    read_checkpoint,
    save_checkpoint,
)
from cassino_env.obs import obs_size  # noqa: E402
from cassino_env.rules import make_rules  # noqa: E402
from train import cli  # noqa: E402
from train.config import CONFIGS_DIR, ConfigError, RunLock  # noqa: E402
from train.ppo_selfplay import (  # noqa: E402
    ARG_RULES,
    CRITIC_CHOICES,
    Args,
    TrainOptions,
    make_args,
    resolve_args,
    train,
)

RULES = make_rules("classic", 2)
TINY = CONFIGS_DIR / "ppo_tiny.yaml"


def tiny_args(run_dir: Path | None, **overrides: Any) -> Args:
    """Two iterations of 16 games x 48 moves, a checkpoint after the first, no final evaluation."""
    values = dict(exp_name="rel", threads=1, run_dir=None if run_dir is None else str(run_dir), progress_every_s=1e9,
                  max_train_seconds=0.0, total_timesteps=2 * 768, num_envs=16, hidden=16, embed=8, num_minibatches=2,
                  update_epochs=1, pool_rate=0.25, snapshot_every=768, bot_rates={"greedy": 0.25}, eval_every=0,
                  eval_deals=2, eval_opponents=("random",), checkpoint_every=768, final_eval_deals=0)
    values.update(overrides)
    return Args(**values)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny run; returns its run folder (checkpoints/step_00000000768.pt, final.pt, latest.pt)."""
    run_dir = tmp_path_factory.mktemp("rel") / "run"
    train(tiny_args(run_dir))
    return run_dir


def _mid(run: Path) -> Path:
    return run / "checkpoints" / "step_00000000768.pt"


def _listing(folder: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under ``folder``: size, mtime and content hash (to tell that nothing was written)."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes())
                                         .hexdigest()) for p in sorted(folder.rglob("*")) if p.is_file()}


def _resume_copy(run: Path, dest_run: Path, mutate: Any = None) -> Path:
    """The mid-run checkpoint copied into ``dest_run/checkpoints/mid.pt``, ``mutate(data)`` applied first."""
    data = torch.load(_mid(run), weights_only=True)
    if mutate is not None:
        mutate(data)
    path = dest_run / "checkpoints" / "mid.pt"
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(data, path)
    return path


def _policy(hidden: int = 16, embed: int = 8) -> CassinoPolicy:
    torch.manual_seed(0)
    return CassinoPolicy(obs_dim=obs_size(2, 2), hidden=hidden, embed=embed)


# --- 1. atomic checkpoint files ---------------------------------------------------------------------------------------


def test_every_run_file_is_written_to_a_synced_temporary_file_then_renamed(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """step_N.pt, latest.pt (a copy, killed mid-copy it was 262 KB of 65 MB), final.pt and config.yaml: each is put in
    place by os.replace from a file in the same folder that was fsynced first."""
    synced: set[tuple[int, int]] = set()
    placed: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        st = os.fstat(fd)
        synced.add((st.st_dev, st.st_ino))
        real_fsync(fd)

    def replace(src: Any, dst: Any) -> None:
        if run_dir in Path(dst).parents:  # the run's files (numba's cache, say, is not this test's business)
            st = os.stat(src)
            assert Path(src).parent == Path(dst).parent, (src, dst)
            assert (st.st_dev, st.st_ino) in synced, f"{dst} renamed into place before its data was synced"
            placed.append(Path(dst).name)
        real_replace(src, dst)

    run_dir = tmp_path / "run"
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    train(tiny_args(run_dir))
    assert {"config.yaml", "step_00000000768.pt", "latest.pt", "final.pt"} <= set(placed)
    assert placed.count("latest.pt") == 2  # after step_768 and after final
    ckpts = {p.name for p in (run_dir / "checkpoints").iterdir()}
    assert ckpts == {"step_00000000768.pt", "latest.pt", "final.pt"}  # no temporary file left
    assert (run_dir / "checkpoints" / "latest.pt").read_bytes() == (run_dir / "checkpoints" / "final.pt").read_bytes()


def test_a_write_killed_midway_leaves_the_old_file_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Interrupted after writing part of the new file (KeyboardInterrupt stands for the kill), the checkpoint keeps
    its old, loadable content and no temporary file is left behind; the same for latest.pt's copy."""
    path = save_checkpoint(tmp_path / "p.pt", _policy(), RULES)
    old = path.read_bytes()
    real_save = torch.save

    def killed(obj: Any, f: Any, *a: Any, **k: Any) -> None:
        if isinstance(f, (str, Path)):
            Path(f).write_bytes(b"PK\x03\x04 half a checkpoint")
        else:
            f.write(b"PK\x03\x04 half a checkpoint")
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", killed)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(path, _policy(hidden=32), RULES)
    monkeypatch.setattr(torch, "save", real_save)
    assert path.read_bytes() == old
    assert [p.name for p in tmp_path.iterdir()] == ["p.pt"]
    load_checkpoint_agent(str(path), RULES)

    latest = atomic_copy(path, tmp_path / "latest.pt")
    newer = save_checkpoint(tmp_path / "newer.pt", _policy(hidden=32), RULES)

    def copy_killed(src: Any, dst: Any, *a: Any) -> None:
        dst.write(src.read(100))
        raise KeyboardInterrupt

    monkeypatch.setattr(files.shutil, "copyfileobj", copy_killed)
    with pytest.raises(KeyboardInterrupt):
        atomic_copy(newer, latest)
    assert latest.read_bytes() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest.pt", "newer.pt", "p.pt"]


# --- 2. checkpoint fields checked before anything is allocated --------------------------------------------------------


def test_a_checkpoint_declaring_a_huge_network_is_refused_before_allocating(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A small file declaring hidden=20000 took 4 GB and over a minute before an error: now the declared shape is
    compared with the file's tensors first (on the meta device), and the network is never built."""
    good = save_checkpoint(tmp_path / "good.pt", _policy(), RULES)
    data = torch.load(good, weights_only=True)
    data["network"]["hidden"] = 20000
    bad = tmp_path / "huge.pt"
    torch.save(data, bad)
    assert bad.stat().st_size < 1_000_000
    real = CassinoPolicy.from_shape.__func__

    def from_shape(cls: type, shape: Any) -> CassinoPolicy:
        if torch.empty(0).device.type != "meta":  # a real network, not the shape check on the meta device
            assert shape.hidden != 20000, "the declared network was allocated"
        return real(cls, shape)

    monkeypatch.setattr(CassinoPolicy, "from_shape", classmethod(from_shape))
    t0 = time.perf_counter()
    with pytest.raises(CheckpointError, match=r"20000.*declares [\d,]+ parameters, the file holds") as info:
        load_checkpoint_agent(str(bad), RULES)
    assert time.perf_counter() - t0 < 10
    assert str(bad) in str(info.value)


@pytest.mark.parametrize(("field", "value", "expect"), [
    (("network", "hidden"), -5, "network hidden must be a positive int"),
    (("network", "hidden"), "16", "network hidden must be a positive int"),
    (("network", "critic"), "both", "network critic must be one of"),
    (("network", "depth"), 3, "network.depth: unknown field"),
    (("network",), [16, 8], "network must be a mapping"),
    (("preset",), 7, "preset must be a preset name"),
    (("num_players",), "2", "num_players must be an integer"),
    (("num_players",), True, "num_players must be an integer"),
    (("rules",), "classic", "rules must be a mapping"),
    (("rules", "sweep_points"), "one", "rules: not a valid rule set"),
    (("rules", "preset"), "royal", "rules are for preset 'royal'"),
    (("model",), [1, 2], "model must be a mapping of tensor names to tensors"),
    (("model", "torso.0.weight"), "weights", "model must be a mapping of tensor names to tensors"),
    (("optimizer",), 3, "optimizer must be a mapping or null"),
    (("train",), "yes", "train must be a mapping or null"),
], ids=lambda v: ".".join(v) if isinstance(v, tuple) else None)
def test_every_malformed_checkpoint_field_is_a_checkpoint_error_naming_it(tmp_path: Path, field: tuple, value: Any,
                                                                          expect: str) -> None:
    good = save_checkpoint(tmp_path / "good.pt", _policy(), RULES)
    data = torch.load(good, weights_only=True)
    _set(data, field, value)
    bad = tmp_path / "bad.pt"
    torch.save(data, bad)
    with pytest.raises(CheckpointError, match=re.escape(str(bad))):  # for evaluation
        load_checkpoint_agent(str(bad), RULES)
    with pytest.raises(CheckpointError, match=expect):  # whatever the rules (a resume reads it without)
        policy_from_checkpoint(read_checkpoint(bad), bad)


# --- 3. where a resumed run writes ----------------------------------------------------------------------------------


def test_resume_never_writes_where_the_file_says(run: Path, tmp_path: Path) -> None:
    """A checkpoint naming another run's folder inside it: a resume without --run-dir writes beside the checkpoint
    (its own run folder, from its path) and leaves the named folder alone; a checkpoint outside a checkpoints/
    folder needs --run-dir."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "config.yaml").write_text("precious: true\n")
    before = _listing(victim)
    ckpt = _resume_copy(run, tmp_path / "mine", lambda d: d["train"].__setitem__("run_dir", str(victim)))
    final = train(dataclasses.replace(tiny_args(None), resume=str(ckpt)), explicit={"resume"})
    assert final == tmp_path / "mine" / "checkpoints" / "final.pt"
    assert (tmp_path / "mine" / "config.yaml").is_file()
    assert _listing(victim) == before
    loose = tmp_path / "loose.pt"
    loose.write_bytes(ckpt.read_bytes())
    with pytest.raises(ConfigError, match="give --run-dir"):
        train(dataclasses.replace(tiny_args(None), resume=str(loose)), explicit={"resume"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["loose.pt", "mine", "victim"]


# --- 4. corrupt weights -------------------------------------------------------------------------------------------


def test_a_bit_flip_inside_the_zip_fails_its_crc(tmp_path: Path) -> None:
    good = save_checkpoint(tmp_path / "good.pt", _policy(), RULES)
    raw = bytearray(good.read_bytes())
    with zipfile.ZipFile(good) as z:
        info = max(z.infolist(), key=lambda i: i.file_size)  # the largest tensor
    off = info.header_offset  # the local header: 30 bytes, then the name and its own extra field
    start = off + 30 + int.from_bytes(raw[off + 26:off + 28], "little") + int.from_bytes(raw[off + 28:off + 30],
                                                                                         "little")
    raw[start + info.file_size // 2] ^= 0x40
    bad = tmp_path / "flipped.pt"
    bad.write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match="CRC"):
        load_checkpoint_agent(str(bad), RULES)


def test_non_finite_weights_are_refused_for_evaluation_and_for_resume(run: Path, tmp_path: Path) -> None:
    """NaN in the model (written with valid CRCs) fails to load, at the command line too (exit 2); NaN in a pool
    snapshot or in the optimiser's moments fails a resume before anything is written."""
    def nan_model(d: dict) -> None:
        d["model"]["torso.0.weight"][0, 0] = float("nan")

    ckpt = _resume_copy(run, tmp_path / "a", nan_model)
    with pytest.raises(CheckpointError, match="torso.0.weight: corrupt weights"):
        load_checkpoint_agent(str(ckpt), RULES)
    assert cli.main(["eval", "--agents", f"checkpoint:{ckpt},random", "--deals", "2", "--no-progress",
                     "--out-dir", str(tmp_path / "out")]) == 2
    assert not (tmp_path / "out").exists()

    def nan_pool(d: dict) -> None:
        d["train"]["pool"]["snapshots"][0]["torso.0.weight"][0, 0] = float("inf")

    def nan_adam(d: dict) -> None:
        d["optimizer"]["state"][0]["exp_avg"][0, 0] = float("nan")

    for mutate, expect in ((nan_pool, r"train.pool.snapshots\[0\].torso.0.weight: holds NaN"),
                           (nan_adam, r"optimizer.state\[0\].exp_avg: holds NaN")):
        folder = tmp_path / mutate.__name__
        ckpt = _resume_copy(run, folder, mutate)
        before = _listing(folder)
        with pytest.raises(CheckpointError, match=expect):
            train(dataclasses.replace(tiny_args(None), resume=str(ckpt)), explicit={"resume"})
        assert _listing(folder) == before


# --- 5. the run-folder lock -------------------------------------------------------------------------------------------


def test_a_run_folder_another_process_is_writing_to_is_refused(tmp_path: Path, repo_root: Path) -> None:
    run_dir = tmp_path / "shared"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from train.config import RunLock; "
                               f"RunLock({str(run_dir)!r}).acquire(); print('locked', flush=True); time.sleep(120)"],
        cwd=repo_root, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(ConfigError, match=rf"in use by another run \(PID {holder.pid}"):
            train(tiny_args(run_dir))
        assert [p.name for p in run_dir.iterdir()] == [".lock"]  # nothing written
    finally:
        holder.kill()
        holder.wait()
    train(tiny_args(run_dir))  # the holder is gone: the OS dropped its lock
    assert (run_dir / "checkpoints" / "final.pt").is_file()
    lock = RunLock(run_dir).acquire()  # and the run released its own
    lock.release()


def test_a_non_empty_run_folder_is_refused_unless_resumed_or_reused(run: Path, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Two runs given one --run-dir both exited 0 with their checkpoints interleaved: the second is refused, with
    the ways on (resume it, another folder, --reuse-run-dir True); resuming the folder's own checkpoint is allowed."""
    before = _listing(run)
    with pytest.raises(ConfigError, match=r"is not empty .*--resume .*--reuse-run-dir True"):
        train(tiny_args(run))
    assert _listing(run) == before
    code = cli.main(["train", "--config", str(TINY), "--run-dir", str(run), "--final-eval-deals", "0"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith(f"error: run_dir {run} is not empty")
    assert _listing(run) == before
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine\n")
    train(tiny_args(other, reuse_run_dir=True))
    assert (other / "notes.txt").read_text() == "mine\n" and (other / "checkpoints" / "final.pt").is_file()
    resumed = tmp_path / "resumed"
    ckpt = _resume_copy(run, resumed)
    (resumed / "config.yaml").write_text("old: true\n")
    train(dataclasses.replace(tiny_args(None), resume=str(ckpt)), explicit={"resume"})  # its own folder: allowed
    assert (resumed / "checkpoints" / "final.pt").is_file()


def test_the_lock_is_released_when_a_run_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import train.rollout as rollout

    def broken(*a: Any, **k: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(rollout, "compute_gae", broken)
    with pytest.raises(RuntimeError, match="boom"):
        train(tiny_args(tmp_path / "r"))
    RunLock(tmp_path / "r").acquire().release()


# --- 6. a failed resume writes nothing --------------------------------------------------------------------------------


def test_a_failed_resume_leaves_the_run_folder_untouched(run: Path, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    ckpt = _resume_copy(run, folder, lambda d: d["train"].__setitem__("numpy_rng", "{not json"))
    (folder / "config.yaml").write_text("the: original\n")
    before = _listing(folder)
    with pytest.raises(CheckpointError, match="train.numpy_rng: not a numpy generator state"):
        train(dataclasses.replace(tiny_args(None), resume=str(ckpt)), explicit={"resume"})
    assert _listing(folder) == before
    assert cli.main(["train", "--resume", str(ckpt)]) == 2
    assert _listing(folder) == before


# --- 7. --resume with --config ----------------------------------------------------------------------------------------


def test_resume_with_a_config_file_takes_the_files_fields(run: Path, tmp_path: Path) -> None:
    """``cassino train --resume X --config Y`` raised KeyError: 'config'. Now Y's fields count as given: they
    override the checkpoint's config, and the other options still come from the checkpoint."""
    extra = tmp_path / "more.yaml"
    extra.write_text("total_timesteps: 2304\nfinal_eval_deals: 0\n")
    code = cli.main(["train", "--resume", str(_mid(run)), "--config", str(extra), "--run-dir", str(tmp_path / "out")])
    assert code == 0
    final = torch.load(tmp_path / "out" / "checkpoints" / "final.pt", weights_only=True)
    assert final["train"]["global_step"] == 3 * 768
    saved = yaml.safe_load((tmp_path / "out" / "config.yaml").read_text())
    assert saved["total_timesteps"] == 2304 and saved["hidden"] == 16 and saved["num_envs"] == 16
    assert saved["resume"] == str(_mid(run))


# --- 8. every option checked in one place -----------------------------------------------------------------------------


BAD_FLAGS = [
    (["--num-envs", "0"], "num_envs"), (["--num-steps", "0"], "num_steps"),
    (["--num-minibatches", "0"], "num_minibatches"), (["--num-envs", "lots"], "num_envs"),
    (["--num-envs", str(10**6), "--num-steps", str(48_000)], "num_envs"),
    (["--learning-rate", "fast"], "learning_rate"), (["--learning-rate", "-1"], "learning_rate"),
    (["--learning-rate", "nan"], "learning_rate"), (["--seed", "abc"], "seed"), (["--seed", "1.5"], "seed"),
    (["--seed", "-1"], "seed"), (["--seed", str(2**64)], "seed"), (["--seed", str(2**63)], "seed"),
    (["--threads", "0"], "threads"), (["--pool-size", "0"], "pool_size"), (["--max-moves", "100000"], "max_moves"),
    (["--total-timesteps", "0"], "total_timesteps"), (["--total-timesteps", "-5"], "total_timesteps"),
    (["--hidden", "0"], "hidden"), (["--gamma", "-3"], "gamma"), (["--anneal-lr", "no"], "anneal_lr"),
    (["--bot-rates", "greedy"], "bot_rates"), (["--bot-rates", "gready", "0.1"], "bot_rates"),
    (["--eval-opponents", "nobody"], "eval_opponents"), (["--reward", "win"], "reward"),
    (["--num-players", "5"], "num_players"), (["--preset", "poker"], "preset"),
]


@pytest.mark.parametrize(("flags", "field"), BAD_FLAGS, ids=[" ".join(f)[:40] for f, _ in BAD_FLAGS])
def test_bad_flags_are_one_error_line_naming_the_field(flags: list[str], field: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code = cli.main(["train", "--config", str(TINY), "--final-eval-deals", "0", *flags])  # tiny, should one pass
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and err[0].startswith(f"error: {field}"), err
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_a_run_dir_that_is_a_file_and_an_eval_out_dir_that_is_a_file(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "a_file"
    f.write_text("keep\n")
    assert cli.main(["train", "--config", str(TINY), "--run-dir", str(f)]) == 2
    assert capsys.readouterr().err.startswith(f"error: run_dir {f} exists and is not a folder")
    assert cli.main(["eval", "--agents", "random,greedy", "--deals", "2", "--no-progress", "--out-dir", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: out_dir ") and str(f) in err and "exists and is not a folder" in err
    assert cli.main(["eval", "--agents", "random,greedy", "--deals", "2", "--no-progress", "--out-dir",
                     str(f / "sub")]) == 2
    assert f.read_text() == "keep\n"


@pytest.mark.parametrize(("values", "field"), [
    ({"total_timesteps": 0}, "total_timesteps"), ({"total_timesteps": -768}, "total_timesteps"),
    ({"hidden": 0}, "hidden"), ({"gamma": -3}, "gamma"), ({"anneal_lr": "no"}, "anneal_lr"),
    ({"anneal_lr": 1}, "anneal_lr"), ({"bot_rates": ["greedy", "random"]}, "bot_rates"),
    ({"bot_rates": {"gready": 0.1}}, "bot_rates"), ({"bot_rates": {"greedy": 0.9, "random": 0.5}}, "bot_rates"),
    ({"eval_opponents": ["ladder", "nobody"]}, "eval_opponents"), ({"max_moves": 100000}, "max_moves"),
    ({"learning_rate": "1e-3"}, "learning_rate"), ({"seed": 1.5}, "seed"), ({"seed": True}, "seed"),
    ({"num_players": 2.0}, "num_players"), ({"exp_name": "a/b"}, "exp_name"), ({"critic": "both"}, "critic"),
    ({"target_kl": 0}, "target_kl"), ({"eval_every": -1}, "eval_every"), ({"nonesuch": 1}, "nonesuch"),
])
def test_bad_yaml_values_are_config_errors_naming_the_field(values: dict, field: str, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ConfigError) as info:
        make_args(values)
    assert info.value.field == field and field in str(info.value)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(values))
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}: .*{field}"):
        resolve_args(TrainOptions(config=path))
    assert cli.main(["train", "--config", str(path)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {path}: ")
    with pytest.raises(ConfigError):  # and in Python, the same dataclass
        Args(**values) if field != "nonesuch" else make_args(values)


def test_the_largest_seed_trains(tmp_path: Path) -> None:
    """Seeds are 0 <= seed < 2**63 (the project's rule): the top one trains; the env's and the evaluations' seeds
    derived from it stay in range."""
    final = train(tiny_args(tmp_path / "r", seed=2**63 - 1, total_timesteps=768, checkpoint_every=0))
    assert torch.load(final, weights_only=True)["train"]["config"]["seed"] == 2**63 - 1


def test_the_yaml_path_and_the_flag_path_give_the_same_errors() -> None:
    for field, value in [("num_envs", 0), ("seed", -1), ("gamma", -3.0), ("learning_rate", -1.0), ("hidden", 0),
                         ("total_timesteps", -5), ("max_moves", 100000), ("pool_size", 0), ("threads", 0)]:
        with pytest.raises(ConfigError) as from_yaml:
            make_args({field: value})
        with pytest.raises(ConfigError) as from_flag:
            resolve_args(TrainOptions(**{field: str(value)}))
        assert str(from_yaml.value) == str(from_flag.value), field


def test_an_opponent_list_is_a_list_and_ladder_still_works() -> None:
    """In Python a bare string was split into letters (r, a, n, d, o, m); the YAML path reads a bare word as a
    list of one, so ``eval_opponents: ladder`` keeps working."""
    with pytest.raises(ConfigError, match="eval_opponents: must be a list of names, got the string 'random'"):
        Args(eval_opponents="random")
    assert make_args({"eval_opponents": "ladder"}).eval_opponents == ("ladder",)
    assert make_args({"eval_opponents": "random"}).eval_opponents == ("random",)
    assert resolve_args(TrainOptions(eval_opponents=("ladder",))).eval_opponents == ("ladder",)


def test_every_args_field_has_a_rule_and_the_defaults_pass() -> None:
    assert set(ARG_RULES) == {f.name for f in dataclasses.fields(Args)}
    assert CRITIC_CHOICES == CRITICS
    Args()
    for path in sorted(CONFIGS_DIR.glob("ppo_*.yaml")):
        resolve_args(TrainOptions(config=path))


# --- 13. agents' moves must be integers ---------------------------------------------------------------------------


class _Returns:
    def __init__(self, value: Any) -> None:
        self.value, self.name = value, "sloppy"

    def act(self, obs: dict, rng: np.random.Generator) -> Any:
        n = len(obs["action_mask"])
        if isinstance(self.value, str):
            return [self.value] * n
        return np.full(n, self.value)


@pytest.mark.parametrize("value", [0.7, 0.0, "0", True])
def test_an_agent_returning_non_integer_moves_is_refused_naming_it(value: Any) -> None:
    from train.evaluate import evaluate

    with pytest.raises(RuntimeError, match=r"agent 'sloppy' returned a move that is not an integer index"):
        evaluate([_Returns(value), "random"], RULES, deals=1, seed=0)


def test_integer_moves_of_any_integer_dtype_still_play() -> None:
    from train.evaluate import evaluate

    class Int32First:
        name = "first32"

        def act(self, obs: dict, rng: np.random.Generator) -> np.ndarray:
            return np.argmax(obs["action_mask"] != 0, axis=1).astype(np.int32)

    report = evaluate([Int32First(), "random"], RULES, deals=2, seed=0)
    assert report["pairs"][0]["deals"] >= 2


# --- fuzz: malformed configs and checkpoint fields --------------------------------------------------------------------


_JUNK = ["", "abc", "1e-3", "no", "None", -1, -3.5, 0, 1.5, 2**64, float("nan"), float("inf"), True, None, [], ["x"],
         {"a": 1}, {"greedy": "x"}, [1, 2]]


def _type_wrong(field: str) -> list[Any]:
    """Values of the wrong type for a field: each must be refused."""
    kind = Args.__dataclass_fields__[field].type
    if "bool" in kind:
        return ["no", 1, 0, "True", None, 1.0, []]
    if kind.startswith("int"):
        return ["7", 1.5, True, [], {"a": 1}, float("nan")] + ([] if "None" in kind else [None])
    if kind.startswith("float"):
        return ["fast", "1e-3", True, [], float("nan"), float("inf")] + ([] if "None" in kind else [None])
    if kind.startswith("dict"):
        return ["greedy", ["greedy", 0.1], {"greedy": "x"}, {"greedy": -0.5}, {"": 0.1}, 3]
    if kind.startswith("tuple"):
        return [3, [1, 2], [""], {"a": 1}] + ([] if "None" in kind else [None])
    return [3, [], {}, True] + ([] if "None" in kind else [None])


def test_fuzz_malformed_configs_always_give_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Random fields set to random values, through make_args (the YAML path), a YAML file and the flags: the only
    exception ever raised is ConfigError, values of the wrong type always raise it, the input is unchanged and
    nothing is written."""
    monkeypatch.chdir(tmp_path)
    rng = random.Random(20261201)
    fields = [f.name for f in dataclasses.fields(Args)]
    refused = 0
    for i in range(300):
        field = rng.choice(fields)
        wrong = rng.random() < 0.6
        value = rng.choice(_type_wrong(field) if wrong else _JUNK)
        values = {field: value, **({"num_envs": 16} if rng.random() < 0.3 and field != "num_envs" else {})}
        frozen = copy.deepcopy(values)
        try:
            make_args(values)
        except ConfigError as exc:
            refused += 1
            named = exc.field
        else:
            named = None
            assert not wrong, f"accepted {values}"
        assert named is None or named in set(fields) | set(values), (values, named)
        assert repr(values) == repr(frozen)
        if i % 10 == 0:  # the file path and the flag path, now and then
            path = tmp_path / "fuzz.yaml"
            try:
                path.write_text(yaml.safe_dump(values))
            except yaml.YAMLError:
                continue
            text = path.read_text()
            try:
                resolve_args(TrainOptions(config=path))
            except ConfigError:
                pass
            assert path.read_text() == text
            try:
                resolve_args(TrainOptions(**{field: str(value)}))
            except ConfigError:
                pass
            path.unlink()
    assert refused > 150
    assert list(tmp_path.iterdir()) == []


def _set(data: Any, keys: tuple, value: Any) -> None:
    """``data[k0][k1]...[kn] = value``."""
    for k in keys[:-1]:
        data = data[k]
    data[keys[-1]] = value


def _checkpoint_mutations(data: dict) -> list[tuple[tuple, Any, bool]]:
    """(keys of a field, a malformed value, whether evaluation reads the field too) for a training checkpoint."""
    w = next(iter(data["model"]))
    e = next(iter(data["train"]["env_state"]))
    wt = data["model"][w]
    nan = wt.clone()
    nan.view(-1)[0] = float("nan")
    T, OPT, P = "train", "optimizer", "pool"  # noqa: N806
    return [
        (("format_version",), "1", True), (("preset",), None, True), (("num_players",), 2.0, True),
        (("num_players",), 3, True), (("rules",), [], True), (("rules", "bogus_switch"), 1, True),
        (("rules", "target"), "21", True), (("network",), None, True), (("network", "hidden"), -5, True),
        (("network", "hidden"), 0, True), (("network", "hidden"), 20000, True), (("network", "hidden"), 1.5, True),
        (("network", "embed"), "8", True), (("network", "obs_dim"), 3, True), (("network", "critic"), "both", True),
        (("network", "extra"), 1, True), (("network", "move_features"), -1, True), (("model",), [], True),
        (("model",), {"x": 1}, True), (("model", w), nan, True), (("model", w), torch.zeros(3), True),
        (("model", w), wt.double(), True), (("model", "extra.weight"), torch.zeros(2), True), ((OPT,), 5, True),
        ((T,), "x", True),
        ((T, "config"), [], False), ((T, "config", "hidden"), -5, False), ((T, "config", "num_envs"), 0, False),
        ((T, "config", "bogus"), 1, False), ((T, "config", "anneal_lr"), "no", False),
        ((T, "config", "seed"), -1, False), ((T, "config", "num_envs"), 8, False),
        ((T, "config", "eval_opponents"), ["nobody"], False), ((T, "config", "bot_rates"), ["greedy"], False),
        ((T, "iteration"), -1, False), ((T, "iteration"), "3", False), ((T, "global_step"), 1.5, False),
        ((T, "elapsed_s"), float("nan"), False), ((T, "numpy_rng"), "{", False), ((T, "numpy_rng"), "[]", False),
        ((T, "numpy_rng"), 5, False), ((T, "torch_rng"), torch.zeros(3, dtype=torch.uint8), False),
        ((T, "torch_rng"), "x", False), ((T, P), {}, False), ((T, P, "snapshots"), [], False),
        ((T, P, "snapshots", 0, w), nan, False), ((T, P, "snapshots", 0, w), torch.zeros(2), False),
        ((T, P, "steps"), "x", False), ((T, P, "winrate"), [2.0], False), ((T, "env_state"), {}, False),
        ((T, "env_state", e), torch.zeros(1, dtype=torch.float64), False), ((OPT, "param_groups"), [], False),
        ((OPT, "state", 0, "exp_avg"), torch.zeros(2), False), ((OPT, "param_groups", 0, "lr"), "fast", False),
        ((OPT, "param_groups", 0, "betas"), (1.5, 0.9), False), ((OPT, "state", 0, "step"), torch.tensor(float("nan")),
                                                                 False),
    ]


def test_fuzz_malformed_checkpoint_fields_always_give_a_checkpoint_error(run: Path, tmp_path: Path) -> None:
    """Each mutation of a training checkpoint, alone or two at a time: evaluation (for the fields it reads) and
    resume raise CheckpointError and nothing else; the file is unchanged and nothing is written beside it."""
    base = torch.load(_mid(run), weights_only=True)
    muts = _checkpoint_mutations(base)
    rng = random.Random(7)
    cases = [[m] for m in muts] + [rng.sample(muts, 2) for _ in range(10)]
    for i, case in enumerate(cases):
        data = copy.deepcopy(base)
        for field, value, _ in case:
            try:
                _set(data, field, value)
            except (TypeError, KeyError, IndexError):  # the first mutation replaced a parent: keep that one
                pass
        folder = tmp_path / f"c{i}"
        path = folder / "checkpoints" / "c.pt"
        path.parent.mkdir(parents=True)
        torch.save(data, path)
        before = _listing(folder)
        label = ", ".join(f"{'.'.join(map(str, f))}={v!r}"[:80] for f, v, _ in case)
        if any(ev for _, _, ev in case):
            with pytest.raises(CheckpointError):
                load_checkpoint_agent(str(path), RULES)
        with pytest.raises(CheckpointError, match=re.escape(str(path))):
            train(dataclasses.replace(tiny_args(None), resume=str(path)), explicit={"resume"})
        assert _listing(folder) == before, label


def test_the_word_none_on_the_command_line_is_a_value_not_an_absent_flag(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # tyro read "None" as None, which the options take for "not given": --seed None ran with the config's seed
    for flag in ("--seed", "--num-envs", "--reuse-run-dir"):
        assert cli.main(["train", "--config", str(TINY), flag, "None", "--run-dir", str(tmp_path / "r")]) == 2
        err = capsys.readouterr().err
        assert err.count("error: ") == 1 and f"{flag[2:].replace('-', '_')}: must be " in err and "'None'" in err
    assert not (tmp_path / "r").exists()
    # for an optional field it is None, given: it overrides the config file (eval_every: 3072 in the tiny config)
    opts = TrainOptions(config=TINY, eval_every="None")
    assert resolve_args(opts).eval_every is None
