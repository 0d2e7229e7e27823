"""The exact last round in the agents and the trainer: agents/endgame.py, the policy:/endgame: specs, PPOAgent's
``endgame`` and the trainer's ``endgame`` option (the solver itself: tests/test_endgame.py)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from agents.base import slice_obs  # noqa: E402
from agents.endgame import EndgameAgent, play_endgame  # noqa: E402
from agents.ppo_agent import PPOAgent  # noqa: E402
from agents.registry import AgentSpecError, make_agent  # noqa: E402
from cassino_env.endgame import solvable, solve  # noqa: E402
from cassino_env.rules import make_rules  # noqa: E402
from cassino_env.vector import CassinoVectorEnv  # noqa: E402
from train.config import ConfigError  # noqa: E402
from train.ppo_selfplay import Args, SeatCredit, train  # noqa: E402

RULES = make_rules("classic")


def positions(n_games: int = 48, seed: int = 0) -> list[dict]:
    """Observations along random games of classic: every step of a whole deal (some in its last round)."""
    env = CassinoVectorEnv(n_games, RULES, seed=seed)
    obs, _ = env.reset()
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(48):
        out.append(obs)
        mask = obs["action_mask"] != 0
        obs, *_ = env.step(np.array([rng.choice(np.flatnonzero(m)) for m in mask]))
    return out


def test_specs_of_the_trained_agents() -> None:
    assert make_agent("pretrained:classic", RULES).endgame is True
    net = make_agent("policy:pretrained:classic", RULES)
    assert isinstance(net, PPOAgent) and net.endgame is False and net.name == "policy:pretrained:classic"
    wrapped = make_agent("endgame:advanced", RULES)
    assert isinstance(wrapped, EndgameAgent) and wrapped.name == "endgame:advanced"
    for spec, message in (("policy:advanced", "checkpoint:PATH or pretrained:NAME"), ("policy:", "needs an agent"),
                          ("endgame:", "needs an agent"), ("endgame:nosuchbot", "unknown agent 'nosuchbot'")):
        with pytest.raises(AgentSpecError, match=message):
            make_agent(spec, RULES)


def test_an_endgame_agent_needs_its_rules() -> None:
    net = make_agent("policy:pretrained:classic", RULES).policy
    with pytest.raises(ValueError, match="rules"):
        PPOAgent(net, endgame=True)


def test_play_endgame_changes_only_last_round_moves_and_plays_a_best_one() -> None:
    """Outside two-seat last rounds the agent's moves stand; inside, the move played has the solver's best value
    (checked by solving again with it tried first), and the agent's move is kept wherever it is as good."""
    rng = np.random.default_rng(1)
    base = make_agent("advanced", RULES)
    seen_last = kept = changed = 0
    for obs in positions():
        mine = base.act(obs, rng)
        got = play_endgame(RULES, obs, mine)
        ok = solvable(RULES, obs["view"])
        assert (got[~ok] == mine[~ok]).all()
        rows = np.flatnonzero(ok)
        if rows.size == 0:
            continue
        seen_last += rows.size
        sub = slice_obs(obs, rows)
        _, best_value, _ = solve(RULES, sub)
        _, got_value, _ = solve(RULES, sub, first=got[rows])
        mine_first, mine_value, _ = solve(RULES, sub, first=mine[rows])
        np.testing.assert_array_equal(got_value, best_value)
        assert (sub["action_mask"][np.arange(rows.size), got[rows]] == 1).all()
        good = mine_first == mine[rows]  # the agent's own move is a best one: it is kept
        np.testing.assert_array_equal(got[rows][good], mine[rows][good])
        kept += int(good.sum())
        changed += int((got[rows] != mine[rows]).sum())
    assert seen_last > 50 and kept > 0 and changed > 0, (seen_last, kept, changed)


def test_the_trained_agent_is_its_network_outside_the_last_round() -> None:
    rng = np.random.default_rng(2)
    full, net = make_agent("pretrained:classic", RULES), make_agent("policy:pretrained:classic", RULES)
    for obs in positions(32, seed=3)[::4]:
        ok = solvable(RULES, obs["view"])
        np.testing.assert_array_equal(full.act(obs, rng)[~ok], net.act(obs, rng)[~ok])


def test_play_endgame_leaves_other_seat_counts_alone() -> None:
    rules = make_rules("classic", num_players=3)
    env = CassinoVectorEnv(4, rules, seed=0)
    obs, _ = env.reset()
    acts = np.zeros(4, dtype=np.int64)
    assert (play_endgame(rules, obs, acts) == acts).all()
    assert not solvable(rules, obs["view"]).any()


def test_seat_credit_moves_played_for_a_seat_leave_its_transition_open() -> None:
    """A seat's move that is not recorded (the exact last round) credits what follows to its last recorded move."""
    credit = SeatCredit(4, 1, 2)
    recorded = [True, True, False, False]
    for t, seat in enumerate([0, 1, 0, 1]):
        credit.act(t, np.array([seat]), np.array([recorded[t]]))
        reward = np.array([[2.0, -2.0]]) if t == 3 else np.zeros((1, 2))
        credit.step(reward, np.array([t == 3]))
    assert credit.next_t[:, 0].tolist() == [-1, -1, -1, -1]
    assert credit.rewards[:, 0].tolist() == [2, -2, 0, 0]
    assert credit.dones[:, 0].tolist() == [True, True, False, False]


def test_the_trainer_refuses_endgame_with_more_seats(tmp_path) -> None:
    with pytest.raises(ConfigError, match="endgame: the exact last round needs two seats") as info:
        train(Args(preset="cicera", endgame=True, run_dir=str(tmp_path / "run")))
    assert info.value.field == "endgame"


def test_training_with_endgame_trains_on_no_last_round_move() -> None:
    """One rollout with endgame on: no stored learner row is a last-round position, every deal's points still
    reach the learner's rows (their rewards add up to the deals' margins)."""
    import torch

    from agents.features import NUM_MOVE_FEATURES, critic_state_size
    from agents.policy import CassinoPolicy
    from cassino_env.obs import obs_layout
    from train.ppo_selfplay import make_bots
    from train.rollout import RolloutCollector, worker_seeds

    args = Args(num_envs=16, num_steps=48, pool_rate=0.0, bot_rates={"greedy": 0.25}, endgame=True, hidden=16,
                embed=8)
    bots = make_bots(list(args.bot_rates), RULES)
    collector = RolloutCollector(args, RULES, args.num_envs, worker_seeds(1, 0)[0], bots)
    torch.manual_seed(0)
    policy = CassinoPolicy(collector.D, hidden=16, embed=8, move_features=NUM_MOVE_FEATURES, critic="separate",
                           critic_dim=critic_state_size(RULES.num_players))
    roll = collector.collect(policy, None, np.random.default_rng(0), 0)
    at = obs_layout(2, 2)["progress"][0]  # stock size / 52 (cassino_env.obs)
    stock = np.rint(roll.obs[roll.flat][:, at] * 52)
    assert len(roll.flat) > 0 and (stock > 0).all()
    rewards = collector.credit.rewards.reshape(-1)
    assert abs(rewards.sum()) < 1e-4 and np.abs(rewards).sum() > 0  # zero-sum deals, all credited
    last_round = np.rint(roll.obs[:, at] * 52) == 0
    assert last_round.any() and (rewards[last_round] == 0).all()  # to moves before the last round


def test_solve_state_on_the_true_state_is_solve_on_the_view() -> None:
    """The trainer's path (solve_state on the env's own state, serial or over threads) gives the view's answer."""
    from cassino_env.endgame import solve_state

    env = CassinoVectorEnv(24, RULES, seed=4)
    obs, _ = env.reset()
    rng = np.random.default_rng(4)
    checked = 0
    for _ in range(48):
        rows = np.flatnonzero(solvable(RULES, obs["view"]))
        if rows.size:
            want = solve(RULES, slice_obs(obs, rows))
            for parallel in (False, True):
                got = solve_state(env.state, rows, parallel=parallel)
                np.testing.assert_array_equal(got[0], want[0])
                np.testing.assert_array_equal(got[1], want[1])
            checked += rows.size
        mask = obs["action_mask"] != 0
        obs, *_ = env.step(np.array([rng.choice(np.flatnonzero(m)) for m in mask]))
    assert checked > 24
    with pytest.raises(ValueError, match="not in a last round"):
        solve_state(env.state, np.array([0]))  # a fresh deal's first move
    env.state.stock_pos[:] = 52
    with pytest.raises(ValueError, match=r"first\[0\] = 60 is not a listed move"):
        solve_state(env.state, np.array([0]), first=np.array([60]))
    with pytest.raises(ValueError, match="first: expected int"):
        solve_state(env.state, np.array([0]), first=np.array([0.5]))
    three = CassinoVectorEnv(2, make_rules("classic", num_players=3), seed=0)
    three.reset()
    with pytest.raises(ValueError, match="two seats"):
        solve_state(three.state)
