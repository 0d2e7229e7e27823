"""cassino train --ray ADDRESS --num-workers N: rollouts on Ray actors, the PPO update on the driver
(train/ray_rollouts.py, train/ppo_selfplay.py): one worker is the local run bit for bit, two workers on a two-node
cluster train, log, checkpoint and resume."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ray = pytest.importorskip("ray")  # the ray extra; CI installs it (the dev extra)

import torch  # noqa: E402
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

from agents.ppo_agent import CheckpointError  # noqa: E402
from train.cli import main as cli_main  # noqa: E402
from train.config import CONFIGS_DIR, ConfigError  # noqa: E402
from train.ppo_selfplay import Args, train  # noqa: E402
from train.rollout import worker_seeds  # noqa: E402


def tiny_args(run_dir: Path, **overrides: Any) -> Args:
    """Four iterations of 16 games x 48 moves (pool, bot and self-play games), a checkpoint after the second."""
    values = dict(exp_name="ray", seed=4, threads=1, run_dir=str(run_dir), progress_every_s=1e9, max_train_seconds=0.0,
                  total_timesteps=4 * 768, num_envs=16, hidden=16, embed=8, num_minibatches=2, update_epochs=1,
                  pool_rate=0.25, snapshot_every=768, bot_rates={"greedy": 0.25}, eval_every=0, eval_deals=2,
                  eval_opponents=("random",), checkpoint_every=1536, final_eval_deals=0)
    values.update(overrides)
    return Args(**values)


def load(path: Path) -> dict[str, Any]:
    return torch.load(path, weights_only=False)


def same(a: Any, b: Any) -> bool:
    """Equal, tensors element for element (bit for bit: floats compared exactly)."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and set(a) == set(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def scalars(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    ea = EventAccumulator(str(run_dir))
    ea.Reload()
    return {t: [(e.step, e.value) for e in ea.Scalars(t)] for t in ea.Tags()["scalars"]}


# --- options --------------------------------------------------------------------------------------------------------


def test_worker_options_are_checked_naming_the_field(tmp_path: Path) -> None:
    tiny_args(tmp_path, num_workers=2)  # without Ray: two collector threads here
    with pytest.raises(ConfigError, match=r"num_workers=3 must divide num_envs=16") as e:
        tiny_args(tmp_path, num_workers=3)
    assert e.value.field == "num_workers"
    with pytest.raises(ConfigError, match=r"num_workers=3 must divide num_envs=16") as e:
        tiny_args(tmp_path, num_workers=3, ray_address="local")
    assert e.value.field == "num_workers"
    with pytest.raises(ConfigError, match="num_workers") as e:
        tiny_args(tmp_path, num_workers=0, ray_address="local")
    assert e.value.field == "num_workers"
    tiny_args(tmp_path, num_workers=4, ray_address="auto")  # 4 workers of 4 games


def test_the_command_line_takes_ray_and_num_workers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli_main(["train", "--help"])
    out = capsys.readouterr().out
    assert "--ray STR" in out and "--num-workers INT" in out
    assert cli_main(["train", "--config", str(CONFIGS_DIR / "ppo_tiny.yaml"), "--num-workers", "3",
                     "--run-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.count("error: ") == 1 and "num_workers=3 must divide" in err and "Traceback" not in err
    assert not (tmp_path / "r").exists()


def test_the_workers_together_play_the_runs_mix_of_opponents(tmp_path: Path) -> None:
    # 16 games, a quarter against the pool and a quarter against greedy: 4 pool games and 4 greedy games in all,
    # however many workers share them (a split of each worker's own 2 games would round both shares to 0)
    from agents.policy import NetworkShape
    from train.config import args_to_dict
    from train.ppo_selfplay import POOL, SELF, split_games
    from train.ray_rollouts import RolloutWorker

    args = tiny_args(tmp_path, ray_address="local", num_workers=8)
    shape = NetworkShape(obs_dim=1, hidden=4, embed=4).to_dict()  # the games only: no network is run here
    ctrl = np.concatenate([RolloutWorker(args_to_dict(args), i, 8, shape).collector.ctrl for i in range(8)])
    assert len(ctrl) == 16
    assert np.bincount(ctrl, minlength=3).tolist() == np.bincount(split_games(16, 0.25, {"greedy": 0.25}),
                                                                  minlength=3).tolist() == [8, 4, 4]
    assert {SELF, POOL} <= set(ctrl.tolist())


def test_workers_are_seeded_apart_and_worker_0_as_the_local_trainer() -> None:
    assert worker_seeds(7, 0) == (7 * 1_000_003 % 2**62, None)
    seeds = [worker_seeds(7, i)[0] for i in range(1, 4)]
    assert len(set(seeds + [worker_seeds(7, 0)[0]])) == 4 and seeds == [worker_seeds(7, i)[0] for i in range(1, 4)]
    draws = [worker_seeds(7, i)[1].integers(2**62, size=4).tolist() for i in (1, 2, 1)]
    assert draws[0] == draws[2] != draws[1]
    assert worker_seeds(8, 1)[0] != worker_seeds(7, 1)[0]


@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny run, trained here (no Ray); its run folder."""
    run_dir = tmp_path_factory.mktemp("local") / "run"
    train(tiny_args(run_dir))
    return run_dir


def test_a_local_checkpoint_claiming_more_workers_is_refused(local_run: Path, tmp_path: Path) -> None:
    ckpt = load(local_run / "checkpoints" / "step_00000001536.pt")
    ckpt["train"]["workers"] = [{"env_state": ckpt["train"]["env_state"], "numpy_rng": ckpt["train"]["numpy_rng"]}]
    bad = tmp_path / "bad.pt"
    torch.save(ckpt, bad)
    with pytest.raises(CheckpointError, match=r"train\.workers: the run was made with 2 rollout workers \(num_wo"):
        train(dataclasses.replace(tiny_args(tmp_path / "out"), resume=str(bad)), explicit={"resume"})
    assert not (tmp_path / "out").exists()


def test_ray_none_on_the_command_line_resumes_here_not_on_the_checkpoints_cluster(
        local_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # --ray None (the help's "null") is given, and so overrides the checkpoint's ray_address; it used to be read as
    # "not given", and the resumed run went back to the checkpoint's cluster
    import tyro

    from train.config import explicit_fields
    from train.ppo_selfplay import TrainOptions, resolve_args

    for word in ("None", "null"):
        opts = tyro.cli(TrainOptions, args=["--ray", word], config=(tyro.conf.FlagCreatePairsOff,))
        assert "ray_address" in explicit_fields(Args, opts) and resolve_args(opts).ray_address is None
    ckpt = load(local_run / "checkpoints" / "step_00000001536.pt")
    ckpt["train"]["config"].update(ray_address="local", num_workers=2)  # as a two-worker Ray run's
    made = tmp_path / "ray.pt"
    torch.save(ckpt, made)
    assert cli_main(["train", "--resume", str(made), "--ray", "None", "--run-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err  # here num_workers=2 means two collector threads, and the file has one's games
    assert err.count("error: ") == 1 and "the run was made with one rollout worker (num_workers=1" in err
    assert not (tmp_path / "out").exists()


def test_a_failing_release_of_the_workers_still_drops_the_run_folders_lock(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # the cluster goes away in the middle of a run: the rollout fails, and so does ending the workers (Ray Client
    # raises when its server is gone); the run's own error comes out and the folder is not left locked
    from train import ray_rollouts
    from train.config import RunLock

    class GoneCluster:
        overhead_s = 0.0

        def __init__(self, args: Args, net_shape: Any) -> None:
            pass

        def collect(self, *args: Any) -> Any:
            raise ConnectionError("the cluster went away")

        def release(self) -> None:
            raise ConnectionError("cannot end the workers: no cluster")

    monkeypatch.setattr(ray_rollouts, "RayRollouts", GoneCluster)
    with pytest.raises(ConnectionError, match="the cluster went away"):
        train(tiny_args(tmp_path / "run", ray_address="local", num_workers=2))
    RunLock(tmp_path / "run").acquire().release()  # free: another run may take the folder


# --- on Ray ---------------------------------------------------------------------------------------------------------


@pytest.mark.slow  # starts Ray (one CPU) and a worker
def test_one_ray_worker_trains_exactly_the_local_run(local_run: Path, tmp_path: Path) -> None:
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        with pytest.raises(ConfigError, match=r"num_workers=2: the Ray cluster at 'auto' has 1 CPUs") as e:
            train(tiny_args(tmp_path / "two", ray_address="auto", num_workers=2))
        assert e.value.field == "num_workers" and not (tmp_path / "two").exists()
        final = train(tiny_args(tmp_path / "ray", ray_address="auto", num_workers=1))
    finally:
        ray.shutdown()
    here, there = load(local_run / "checkpoints" / "final.pt"), load(final)
    assert same(there["model"], here["model"]) and same(there["optimizer"], here["optimizer"])
    # the games, the generator, the pool: all the same; only torch's generator (it initialises the networks, one
    # fewer on the driver of a Ray run) differs
    for key in ("iteration", "global_step", "numpy_rng", "pool", "env_state"):
        assert same(there["train"][key], here["train"][key]), key
    assert "workers" not in there["train"]
    a, b = scalars(local_run), scalars(tmp_path / "ray")
    assert set(b) == set(a) | {"time/ray_overhead_s"}
    for tag in a:
        if not tag.startswith("time/") and tag != "charts/SPS":
            assert b[tag] == a[tag], tag


@pytest.mark.slow  # starts two Ray nodes and two workers, twice
def test_two_workers_on_a_two_node_cluster_train_checkpoint_and_resume(tmp_path: Path) -> None:
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
        assert sum(1 for n in ray.nodes() if n["Alive"]) == 2  # one CPU a node: a worker on each
        final = train(tiny_args(tmp_path / "run", ray_address=cluster.address, num_workers=2))
        mid = tmp_path / "run" / "checkpoints" / "step_00000001536.pt"
        resumed = tmp_path / "resumed"
        with pytest.raises(CheckpointError, match=r"train\.workers: .*2 rollout workers.*not num_workers=1"):
            train(dataclasses.replace(tiny_args(resumed), resume=str(mid), num_workers=1),
                  explicit={"resume", "num_workers"})
        assert not resumed.exists()
        again = train(dataclasses.replace(tiny_args(resumed), resume=str(mid)), explicit={"resume"})
    finally:
        ray.shutdown()
        cluster.shutdown()
    ckpt = load(final)
    tr = ckpt["train"]
    assert tr["config"]["num_workers"] == 2 and tr["global_step"] == 4 * 768
    assert len(tr["workers"]) == 1 and set(tr["workers"][0]) == {"env_state", "numpy_rng"}
    assert tr["env_state"]["match_scores"].shape[0] == 8 and tr["workers"][0]["env_state"]["match_scores"].shape[0] == 8
    assert not same(tr["workers"][0]["env_state"], tr["env_state"])  # the workers play different games
    logged = scalars(tmp_path / "run")
    for tag in ("charts/SPS", "charts/episodic_return", "charts/points_vs_pool", "charts/points_vs_greedy",
                "losses/policy_loss", "losses/value_loss", "time/update_s", "time/ray_overhead_s"):
        assert [s for s, _ in logged[tag]] == [768, 1536, 2304, 3072], tag
    assert all(np.isfinite(v) and v >= 0 for _, v in logged["time/ray_overhead_s"])
    # resumed from the middle, the run ends where the uninterrupted one did: the same weights, games and generators
    out = load(again)
    assert same(out["model"], ckpt["model"]) and same(out["optimizer"], ckpt["optimizer"])
    for key in ("numpy_rng", "pool", "env_state", "workers"):
        assert same(out["train"][key], tr[key]), key


@pytest.mark.slow  # starts Ray (one CPU) and an actor that holds it
def test_a_cluster_whose_cpus_other_jobs_hold_is_refused_not_waited_on_forever(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from train import ray_pool

    monkeypatch.setattr(ray_pool, "FREE_CPU_WAIT_S", 1.0)  # the grace for a run that has just ended: short here
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        hog = ray.remote(num_cpus=1)(type("Hog", (), {"ping": lambda self: 1})).remote()
        ray.get(hog.ping.remote())  # another job's actor holds the cluster's one CPU
        with pytest.raises(ConfigError, match=r"num_workers=1: the Ray cluster at 'auto' has 1 CPUs but not 1 free "
                                              r"within 1 s \(other jobs hold them\)"):
            train(tiny_args(tmp_path / "run", ray_address="auto", num_workers=1))
        assert not (tmp_path / "run").exists()
        ray.kill(hog)  # its CPU comes back: the run goes ahead
        deadline = time.time() + 60  # ray.kill is asynchronous: on a loaded machine the CPU takes a moment to return
        while ray.available_resources().get("CPU", 0) < 1 and time.time() < deadline:
            time.sleep(0.1)
        final = train(tiny_args(tmp_path / "run", ray_address="auto", num_workers=1, total_timesteps=768,
                                checkpoint_every=0))
    finally:
        ray.shutdown()
    assert torch.load(final, weights_only=False)["train"]["global_step"] == 768


@pytest.mark.slow  # imports Ray and looks for a running instance
def test_no_cluster_at_the_address_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert not ray.is_initialized()
    assert cli_main(["train", "--config", str(CONFIGS_DIR / "ppo_tiny.yaml"), "--ray", "auto", "--num-workers", "2",
                     "--run-dir", str(tmp_path / "r"), "--final-eval-deals", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("error: ") == 1 and "Traceback" not in err
    assert "error: ray_address: cannot start or reach a Ray cluster at 'auto'" in err
    assert not ray.is_initialized() and not (tmp_path / "r").exists()


def test_an_address_where_no_cluster_answers_is_one_error_line_at_once(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str],
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # ray.init retries an address with no GCS behind it for many minutes (20 tries of about 40 s each), printing
    # warnings: a head node that is down, or a typo in its address, must be an error line at once instead
    import socket
    import time

    from train.ray_cluster import connect_ray

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    with pytest.raises(ConfigError, match=rf"ray_address: no Ray cluster answers at '127\.0\.0\.1:{port}'") as e:
        connect_ray(f"127.0.0.1:{port}")
    assert e.value.field == "ray_address" and not ray.is_initialized()
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")  # auto reads it
    with pytest.raises(ConfigError, match=rf"no Ray cluster answers at '127\.0\.0\.1:{port}' \(RAY_ADDRESS\)"):
        connect_ray("auto")
    monkeypatch.delenv("RAY_ADDRESS")
    assert cli_main(["train", "--config", str(CONFIGS_DIR / "ppo_tiny.yaml"), "--ray", f"localhost:{port}",
                     "--run-dir", str(tmp_path / "r"), "--final-eval-deals", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("error: ") == 1 and "Traceback" not in err and f"'localhost:{port}'" in err
    assert time.monotonic() - t0 < 60 and not ray.is_initialized() and not (tmp_path / "r").exists()


# --- collector threads: num_workers > 1 without Ray -----------------------------------------------------------------


def test_collector_threads_train_checkpoint_and_resume_as_an_unbroken_run(tmp_path: Path) -> None:
    """Two collector threads in this process (no Ray): the games are split as the Ray workers split them, the
    checkpoint holds worker 1's games and generator under ``workers``, and a run stopped at the checkpoint and resumed
    ends where the unbroken run ends, bit for bit; a resume with another worker count is refused."""
    whole = train(tiny_args(tmp_path / "whole", num_workers=2))
    step = tmp_path / "whole" / "checkpoints" / "step_00000001536.pt"
    tr = load(step)["train"]
    assert len(tr["workers"]) == 1 and set(tr["workers"][0]) == {"env_state", "numpy_rng"}
    resumed = train(dataclasses.replace(tiny_args(tmp_path / "resumed", num_workers=2), resume=str(step)),
                    explicit={"resume"})
    a, b = load(whole), load(resumed)
    assert same(a["model"], b["model"]) and same(a["train"]["env_state"], b["train"]["env_state"])
    assert same(a["train"]["workers"], b["train"]["workers"])
    with pytest.raises(CheckpointError, match=r"made with 2 rollout workers \(num_workers=2"):
        train(dataclasses.replace(tiny_args(tmp_path / "one", num_workers=1), resume=str(step)),
              explicit={"resume", "num_workers"})


def test_collector_threads_collect_what_the_collectors_collect_one_after_the_other(tmp_path: Path) -> None:
    """The rules core, the bots and the move features release the GIL (numba's nogil), so the two collectors run
    side by side: their joined rollout equals, bit for bit, the rollouts of the same collectors run in turn."""
    from agents.policy import CassinoPolicy
    from agents.ppo_agent import PPOAgent
    from cassino_env.rules import make_rules
    from train.rollout import ThreadRollouts

    args = tiny_args(tmp_path, num_workers=2, threads=2, num_envs=64)
    rules = make_rules(args.preset, args.num_players)
    from agents.features import NUM_MOVE_FEATURES, critic_state_size
    from agents.policy import NetworkShape
    from cassino_env.vector import CassinoVectorEnv

    obs_dim = CassinoVectorEnv(1, rules).obs_size
    shape = NetworkShape(obs_dim=obs_dim, hidden=16, embed=8, move_features=NUM_MOVE_FEATURES, critic="separate",
                         critic_dim=critic_state_size(rules.num_players))
    torch.manual_seed(0)
    policy = CassinoPolicy.from_shape(shape)
    snapshot = CassinoPolicy.from_shape(shape).state_dict()
    a, b = ThreadRollouts(args, rules, shape), ThreadRollouts(args, rules, shape)
    together = a.collect(policy, snapshot, np.random.default_rng(1), 0)
    blocks = b.collector.env.obs_blocks
    parts = []
    for i, c in enumerate(b.collectors):
        b.opponent_nets[i].load_state_dict(snapshot)
        opp = PPOAgent(b.opponent_nets[i], deterministic=False, rules=rules, blocks=blocks, env_blocks=blocks)
        parts.append(c.collect(policy, opp, np.random.default_rng(1) if i == 0 else b.rngs[i], 0))
    in_turn = b._join(parts, 0.0)
    for key in ("obs", "kind", "card", "value", "cards", "mask", "feat", "crit", "actions", "logprobs", "values",
                "advantages", "returns", "flat", "ep_returns", "ep_ctrl", "pool_results"):
        assert np.array_equal(getattr(together, key), getattr(in_turn, key)), key
    a.release()
    b.release()


def test_collector_threads_solve_the_last_round_serially(tmp_path: Path) -> None:
    """``--endgame True`` with collector threads: each collector solves its last rounds serially, as numba's parallel
    kernels may only run from the main thread (its workqueue layer aborts the process on a concurrent launch; the
    run is made in a subprocess on that layer)."""
    import os
    import subprocess
    import sys

    script = (
        "import agents, numpy as np, torch\n"
        "from cassino_env.rules import make_rules\n"
        "from agents.features import NUM_MOVE_FEATURES, critic_state_size\n"
        "from agents.policy import CassinoPolicy, NetworkShape\n"
        "from cassino_env.vector import CassinoVectorEnv\n"
        "from train.ppo_selfplay import Args\n"
        "from train.rollout import ThreadRollouts\n"
        f"args = Args(run_dir={str(tmp_path / 'r')!r}, threads=2, num_envs=16, endgame=True, hidden=16, embed=8)\n"
        "assert args.num_workers == 2\n"
        "rules = make_rules('classic', 2)\n"
        "shape = NetworkShape(obs_dim=CassinoVectorEnv(1, rules).obs_size, hidden=16, embed=8,\n"
        "                     move_features=NUM_MOVE_FEATURES, critic='separate', critic_dim=critic_state_size(2))\n"
        "tr = ThreadRollouts(args, rules, shape)\n"
        "assert not any(c.solve_parallel for c in tr.collectors)\n"
        "pol = CassinoPolicy.from_shape(shape)\n"
        "for d in range(2):\n"
        "    ro = tr.collect(pol, pol.state_dict(), np.random.default_rng(d), d)\n"
        "tr.release()\n"
        "print('ok', len(ro.flat))\n")
    env = {**os.environ, "NUMBA_THREADING_LAYER": "workqueue"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600,
                         cwd=str(Path(__file__).resolve().parent.parent))
    assert out.returncode == 0 and out.stdout.startswith("ok"), out.stderr[-2000:]
