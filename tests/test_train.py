"""Self-play PPO training: a tiny run end to end as a subprocess (CleanRL's smoke test), its TensorBoard scalars and
plot, the config files, and the per-seat credit and GAE of a turn-based game."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

pytest.importorskip("torch")

from cassino_env import cli  # noqa: E402
from train.plot import load_scalars, plot_run  # noqa: E402
from train.ppo_selfplay import (  # noqa: E402
    CONFIGS_DIR,
    DEFAULT_CONFIG,
    POOL,
    SELF,
    Args,
    ConfigError,
    SeatCredit,
    TrainOptions,
    args_to_dict,
    compute_gae,
    load_config,
    make_args,
    resolve_args,
    split_games,
    train,
)

TINY = CONFIGS_DIR / "ppo_tiny.yaml"

#: Scalars every run logs (CleanRL's names, the time split and the evaluations).
NAMED_SCALARS = ("charts/SPS", "charts/learning_rate", "charts/episodic_return", "losses/policy_loss",
                 "losses/value_loss", "losses/entropy", "losses/approx_kl", "losses/old_approx_kl", "losses/clipfrac",
                 "losses/explained_variance", "time/env_s", "time/inference_s", "time/update_s", "time/env_fraction",
                 "time/update_fraction", "eval/winrate_vs_random", "eval/winrate_vs_greedy", "eval/points_vs_greedy")


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory, repo_root: Path) -> tuple[Path, subprocess.CompletedProcess]:
    """``cassino train --config configs/ppo_tiny.yaml`` as a user runs it; returns the run folder and the process."""
    run_dir = tmp_path_factory.mktemp("tiny") / "run"
    proc = subprocess.run([sys.executable, "-m", "cassino_env.cli", "train", "--config", str(TINY), "--run-dir",
                           str(run_dir), "--final-eval-deals", "20", "--seed", "3"],
                          cwd=repo_root, capture_output=True, text=True, timeout=300, check=False)
    return run_dir, proc


def test_tiny_training_run_end_to_end(tiny_run: tuple[Path, subprocess.CompletedProcess]) -> None:
    run_dir, proc = tiny_run
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "SPS" in out
    assert "step       6,144/6,144 (100%)" in out  # the progress line
    assert "final checkpoint" in out
    for name in ("ppo:final.pt", "random", "greedy", "match win A"):  # the head-to-head table
        assert name in out
    ckpts = run_dir / "checkpoints"
    assert {p.name for p in ckpts.iterdir()} >= {"final.pt", "latest.pt", "step_00000003072.pt"}
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert config["seed"] == 3
    assert config["total_timesteps"] == 6144


def test_tensorboard_files_hold_the_named_scalars(tiny_run: tuple[Path, subprocess.CompletedProcess]) -> None:
    run_dir, proc = tiny_run
    assert proc.returncode == 0, proc.stderr
    scalars = load_scalars(run_dir)
    for tag in NAMED_SCALARS:
        assert tag in scalars, tag
        assert np.isfinite(scalars[tag][1]).all(), tag
    steps, sps = scalars["charts/SPS"]
    assert steps.tolist() == [1536, 3072, 4608, 6144]
    assert (sps > 0).all()
    win_steps, win = scalars["eval/winrate_vs_random"]
    assert win_steps.tolist() == [0, 3072, 6144]  # at the start, every eval_every steps and at the end
    assert ((win >= 0) & (win <= 1)).all()
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir))
    acc.Reload()
    assert "hyperparameters/text_summary" in acc.Tags()["tensors"]


def test_plot_draws_a_png(tiny_run: tuple[Path, subprocess.CompletedProcess], tmp_path: Path) -> None:
    run_dir, _ = tiny_run
    out = plot_run(run_dir, tmp_path / "curves.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert cli.main(["plot", str(run_dir)]) == 0
    assert (run_dir / "learning_curves.png").is_file()
    assert cli.main(["plot", str(tmp_path / "nothing")]) == 2


def test_default_config_mirrors_args() -> None:
    """configs/ppo_classic.yaml holds every Args field, at the built-in default; every ppo config holds them all."""
    assert load_config(DEFAULT_CONFIG) == args_to_dict(Args())
    fields = set(args_to_dict(Args()))
    for path in sorted(CONFIGS_DIR.glob("ppo_*.yaml")):
        assert set(load_config(path)) == fields, path.name
        make_args(load_config(path))


def test_command_line_options_override_the_config_file(tmp_path: Path) -> None:
    tiny = load_config(TINY)
    assert tiny["num_envs"] != Args().num_envs
    opts = TrainOptions(config=TINY, num_envs=Args().num_envs, seed=7)  # a flag at its built-in default still wins
    args = resolve_args(opts)
    assert args.num_envs == Args().num_envs
    assert args.seed == 7
    assert args.total_timesteps == tiny["total_timesteps"]
    assert resolve_args(TrainOptions()) == Args()  # no --config: configs/ppo_classic.yaml
    bad = tmp_path / "bad.yaml"
    bad.write_text("num_envz: 3\n")
    with pytest.raises(ConfigError, match="unknown field 'num_envz'"):
        resolve_args(TrainOptions(config=bad))
    assert cli.main(["train", "--config", str(bad)]) == 2
    assert cli.main(["train", "--config", str(tmp_path / "missing.yaml")]) == 2
    assert cli.main(["train", "--resume", str(bad)]) == 2  # not a checkpoint


def test_rollouts_must_hold_whole_deals(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="multiple of the deal length 48"):
        train(Args(num_steps=40, run_dir=str(tmp_path)))


def test_split_games_follows_the_rates() -> None:
    ctrl = split_games(100, 0.2, {"greedy": 0.15, "random": 0.05})
    assert (ctrl == SELF).sum() == 60
    assert (ctrl == POOL).sum() == 20
    assert (ctrl == POOL + 1).sum() == 15
    assert (ctrl == POOL + 2).sum() == 5
    with pytest.raises(ConfigError):
        split_games(10, 0.8, {"greedy": 0.3})


def test_seat_credit_gives_each_seat_its_own_rewards_until_its_next_turn() -> None:
    """Two games, two seats. Game 0 alternates 0,1,0,1 and ends after step 3; game 1 has seat 1 act twice in a
    row (a new deal's first player) and pays a non-acting seat mid-episode."""
    T, B, P = 4, 2, 2
    credit = SeatCredit(T, B, P)
    seats = [[0, 1], [1, 0], [0, 1], [1, 1]]
    rewards = [[[0, 0], [0, 0]], [[0, 0], [0, 5]], [[0, 0], [0, 0]], [[3, -3], [1, -1]]]
    terminated = [[False, False], [False, True], [False, False], [True, True]]
    for t in range(T):
        credit.act(t, np.array(seats[t]))
        credit.step(np.array(rewards[t], dtype=np.float32), np.array(terminated[t]))
    assert not credit.open
    # game 0: seat 0 acts at 0, 2; seat 1 at 1, 3; the final rewards go to each seat's last transition
    assert credit.next_t[:, 0].tolist() == [2, 3, -1, -1]
    assert credit.rewards[:, 0].tolist() == [0, 0, 3, -3]
    assert credit.dones[:, 0].tolist() == [False, False, True, True]
    # game 1: seat 1 acts at 0, seat 0 at 1 and the episode ends paying seat 1 (+5, credited to its step-0 move);
    # a new episode: seat 1 acts at 2 and 3 (linked), seat 1's reward -1 at the end goes to step 3
    assert credit.next_t[:, 1].tolist() == [-1, -1, 3, -1]
    assert credit.rewards[:, 1].tolist() == [5, 0, 0, -1]
    assert credit.dones[:, 1].tolist() == [True, True, False, True]


def test_gae_runs_along_each_seat_trajectory() -> None:
    """compute_gae equals GAE computed trajectory by trajectory with plain Python."""
    rng = np.random.default_rng(0)
    T, B, P = 12, 5, 3
    credit = SeatCredit(T, B, P)
    for t in range(T):
        credit.act(t, rng.integers(P, size=B))
        credit.step(rng.normal(size=(B, P)).astype(np.float32), np.full(B, t in (5, T - 1)))
    values = rng.normal(size=(T, B)).astype(np.float32)
    gamma, lam = 0.9, 0.8
    got = compute_gae(credit.rewards, values, credit.dones, credit.next_t, gamma, lam)
    want = np.zeros((T, B))
    for b in range(B):
        for t in reversed(range(T)):
            nt = credit.next_t[t, b]
            if credit.dones[t, b] or nt < 0:
                want[t, b] = credit.rewards[t, b] - values[t, b]
            else:
                delta = credit.rewards[t, b] + gamma * values[nt, b] - values[t, b]
                want[t, b] = delta + gamma * lam * want[nt, b]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
