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

from train import cli  # noqa: E402
from train.arena import evaluate_deals  # noqa: E402
from train.config import CONFIGS_DIR, DEFAULT_CONFIG, ConfigError, args_to_dict, preset_config  # noqa: E402
from train.plot import load_scalars, plot_run  # noqa: E402
from train.ppo_selfplay import (  # noqa: E402
    POOL,
    SELF,
    Args,
    SeatCredit,
    TrainOptions,
    compute_gae,
    load_config,
    make_args,
    resolve_args,
    rotate_learner_side,
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
    proc = subprocess.run([sys.executable, "-m", "train.cli", "train", "--config", str(TINY), "--run-dir",
                           str(run_dir), "--final-eval-deals", "20", "--seed", "3"],
                          cwd=repo_root, capture_output=True, text=True, timeout=300, check=False)
    return run_dir, proc


@pytest.mark.slow
def test_tiny_training_run_end_to_end(tiny_run: tuple[Path, subprocess.CompletedProcess]) -> None:
    run_dir, proc = tiny_run
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "SPS" in out
    assert "step       6,144/6,144 (100%)" in out  # the progress line
    assert "final checkpoint" in out
    # named by its path (outside the cwd: as given), a spec that cassino eval accepts
    final = f"checkpoint:{(run_dir / 'checkpoints' / 'final.pt').as_posix()}"
    for name in (final, "random", "greedy", "match win A"):  # the head-to-head table
        assert name in out
    ckpts = run_dir / "checkpoints"
    assert {p.name for p in ckpts.iterdir()} >= {"final.pt", "latest.pt", "step_00000003072.pt"}
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert config["seed"] == 3
    assert config["total_timesteps"] == 6144


@pytest.mark.slow
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


@pytest.mark.slow
def test_plot_draws_a_png(tiny_run: tuple[Path, subprocess.CompletedProcess], tmp_path: Path) -> None:
    run_dir, _ = tiny_run
    out = plot_run(run_dir, tmp_path / "curves.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert cli.main(["plot", str(run_dir)]) == 0
    assert (run_dir / "learning_curves.png").is_file()
    assert cli.main(["plot", str(tmp_path / "nothing")]) == 2


def test_every_preset_has_a_config_the_trainer_loads() -> None:
    from cassino_env.rules import PRESETS, make_rules

    for preset in PRESETS:
        path = CONFIGS_DIR / f"ppo_{preset}.yaml"
        assert path.is_file(), path.name
        assert preset_config(preset) == path
        args = resolve_args(TrainOptions(config=path))
        assert args.preset == preset
        rules = make_rules(args.preset, args.num_players)  # a player count the preset allows
        assert args.num_steps % (52 - rules.table_cards) == 0
        assert resolve_args(TrainOptions(preset=preset)) == args  # --preset alone reads the preset's config
    assert make_args(load_config(CONFIGS_DIR / "ppo_cicera.yaml")).num_players == 4


@pytest.mark.parametrize("path", sorted(CONFIGS_DIR.glob("ppo_*.yaml")), ids=lambda p: p.name)
def test_configs_hold_only_what_differs_from_args(path: Path) -> None:
    """Args is the only source of the defaults: a config sets only fields of Args, each to a value that differs from
    its default (so the files cannot drift from the code), and says why in a comment above or beside it."""
    from agents.registry import expand_specs

    defaults = args_to_dict(Args())
    values = load_config(path)  # unknown fields are an error
    got = args_to_dict(make_args(values))
    for name in values:
        want, have = defaults[name], got[name]
        if name in ("eval_opponents", "final_eval_opponents"):  # "ladder" is the default's bots by another name
            want, have = expand_specs(want), expand_specs(have)
        assert have != want, f"{path.name}: {name} is Args' default {want!r}; leave it out"
    lines = path.read_text(encoding="utf-8").splitlines()
    is_field = [bool(line) and not line.startswith((" ", "#")) for line in lines]
    for i, line in enumerate(lines):
        if is_field[i]:  # commented beside it, or above it or above the run of fields it belongs to (hidden, embed)
            j = i - 1
            while j >= 0 and is_field[j]:
                j -= 1
            assert "#" in line or (j >= 0 and lines[j].startswith("#")), f"{path.name}: {line} has no comment"


def test_the_default_run_is_args_defaults() -> None:
    """``cassino train`` without --config reads configs/ppo_classic.yaml, which sets nothing: the run is Args()."""
    assert load_config(DEFAULT_CONFIG) == {}
    assert resolve_args(TrainOptions()) == Args()
    assert resolve_args(TrainOptions(preset="classic")) == Args()


def test_opponent_lists_may_say_ladder(tmp_path: Path) -> None:
    """``ladder`` in eval_opponents (a YAML list, a bare word or a flag) stands for every bot of the ladder."""
    from agents.registry import LADDER

    assert Args().eval_opponents == Args().final_eval_opponents == LADDER
    assert make_args({"eval_opponents": "ladder"}).eval_opponents == ("ladder",)
    assert make_args({"eval_opponents": ["ladder"]}).eval_opponents == ("ladder",)
    train(Args(threads=1, run_dir=str(tmp_path), total_timesteps=768, num_envs=16, hidden=8, embed=4,
               num_minibatches=1, update_epochs=1, eval_every=0, eval_deals=1, eval_opponents=("ladder",),
               checkpoint_every=0, final_eval_deals=0, progress_every_s=1e9, max_train_seconds=0.0))
    scalars = load_scalars(tmp_path)
    assert {f"eval/winrate_vs_{bot}" for bot in LADDER} <= set(scalars)


@pytest.mark.parametrize(("text", "message"), [
    (b"\xff\xfenum_envs: 4\n", r"not UTF-8 text"),  # was a UnicodeDecodeError traceback
    (b"a: " + b"[" * 10000 + b"]" * 10000 + b"\n", r"not valid YAML: nested too deeply"),  # was a RecursionError
    (b"num_envs: 4\nseed: 1\nnum_envs: 8\n", r"not valid YAML: the key 'num_envs' is given twice"),  # 8 was taken
])
def test_unreadable_config_files_are_config_errors(tmp_path: Path, text: bytes, message: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(text)
    with pytest.raises(ConfigError, match=rf"^{bad}: {message}"):
        resolve_args(TrainOptions(config=bad))
    assert cli.main(["train", "--config", str(bad)]) == 2


def test_a_yaml_merge_key_may_be_overridden(tmp_path: Path) -> None:
    path = tmp_path / "merge.yaml"
    path.write_text("bot_rates:\n  <<: {greedy: 0.5, random: 0.1}\n  greedy: 0.2\n")
    assert load_config(path)["bot_rates"] == {"greedy": 0.2, "random": 0.1}


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


def test_learner_side_rotates_over_sides() -> None:
    games = np.arange(6)
    assert rotate_learner_side(games, 0, 2).tolist() == [0, 1, 0, 1, 0, 1]
    assert rotate_learner_side(games, 1, 2).tolist() == [1, 0, 1, 0, 1, 0]
    assert rotate_learner_side(games, 2, 3).tolist() == [2, 0, 1, 2, 0, 1]  # six players: three partnerships
    side_of_seat = np.arange(4) % 2  # four players: the learner plays both partners
    assert np.flatnonzero(side_of_seat == rotate_learner_side(np.array([0]), 0, 2)[0]).tolist() == [0, 2]


def test_training_evaluation_seats_partners_together() -> None:
    """evaluate_deals plays each deal once per side with the agent in both partners' seats: greedy partners beat
    random partners on almost every deal (split partnerships would win about half)."""
    from agents.registry import make_agent
    from cassino_env.rules import make_rules

    rules = make_rules("cicera", 4)
    res = evaluate_deals(make_agent("greedy", rules), make_agent("random", rules), rules, deals=12, seed=0)
    assert res["games"] == 24  # 12 deals x 2 sides
    assert res["winrate"] >= 0.8 and res["points"] > 5
    res = evaluate_deals(make_agent("random", rules), make_agent("greedy", rules), rules, deals=12, seed=0)
    assert res["winrate"] <= 0.2 and res["points"] < -5


#: Tiny sizes for a preset's config: three iterations of 16 games x 48 moves (2,304 env steps), with the config's
#: opponents (pool and bots) and one evaluation at the end.
TINY_OVERRIDES = dict(threads=1, total_timesteps=3 * 768, num_envs=16, hidden=16, embed=8, num_minibatches=2,
                      update_epochs=1, snapshot_every=768, eval_every=0, eval_deals=2, eval_opponents=["greedy"],
                      checkpoint_every=0, final_eval_deals=0, progress_every_s=1e9, max_train_seconds=0.0)


@pytest.mark.slow
@pytest.mark.parametrize(("preset", "num_players"), [("classic", None), ("matsuda", None), ("cicera", None),
                                                     ("bga", None), ("bga", 6), ("stadium", None), ("royal", None)])
def test_every_preset_config_trains(preset: str, num_players: int | None, tmp_path: Path) -> None:
    """configs/ppo_<preset>.yaml, shrunk to a few thousand env steps, trains end to end (bga also with six players
    in three partnerships) and leaves a checkpoint for its rules."""
    from agents.ppo_agent import read_checkpoint
    from cassino_env.rules import make_rules

    values = load_config(CONFIGS_DIR / f"ppo_{preset}.yaml")
    values.update(TINY_OVERRIDES, run_dir=str(tmp_path))
    if num_players is not None:
        values["num_players"] = num_players
    args = make_args(values)
    assert args.pool_rate > 0 and args.bot_rates  # the learner-side games are exercised too
    final = train(args)
    rules = make_rules(preset, args.num_players)
    ckpt = read_checkpoint(final)
    assert (ckpt["preset"], ckpt["num_players"]) == (preset, rules.num_players)
    assert ckpt["train"]["global_step"] == 3 * 768
    scalars = load_scalars(tmp_path)
    assert np.isfinite(scalars["losses/value_loss"][1]).all()
    assert "charts/points_vs_greedy" in scalars and "eval/winrate_vs_greedy" in scalars
