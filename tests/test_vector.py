"""The batched vector env (cassino_env.vector): spaces, rewards and episodes for every preset and player count,
seeding, threads, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import PRESET_IDS, PRESET_PLAYERS

from cassino_env import core
from cassino_env.actions import MAX_MOVES
from cassino_env.obs import encode, obs_size, public_view
from cassino_env.rules import make_rules
from cassino_env.vector import CassinoVectorEnv, EnvConfigError, step_rewards


def _rng(B: int, seed: int = 0) -> np.ndarray:
    return (np.arange(B, dtype=np.uint64) + np.uint64(seed)) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(1)


@pytest.mark.parametrize(("preset", "n"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_observations_match_the_core(preset, n):
    B = 16
    env = CassinoVectorEnv(B, rules=preset, num_players=n, seed=3)
    assert env.max_moves == MAX_MOVES
    obs, info = env.reset()
    assert info == {}
    rng = _rng(B)
    for _ in range(120):
        st = env.state
        assert obs["observation"].shape == (B, obs_size(n, env.num_sides))
        assert obs["observation"].dtype == np.float32
        assert np.array_equal(obs["observation"], encode(st, st.current_player))
        assert obs["action_mask"].dtype == np.int8
        assert np.array_equal(obs["action_mask"], core.legal_mask(st).astype(np.int8))
        assert (obs["action_mask"].sum(axis=1) == st.num_moves).all()
        for key in ("move_kind", "move_card", "move_value", "move_cards"):
            assert np.array_equal(obs[key], getattr(st, key))
            assert not np.shares_memory(obs[key], getattr(st, key))  # fresh copies
        assert np.array_equal(obs["current_player"], st.current_player)
        view = public_view(st)
        for key in view:
            assert np.array_equal(obs["view"][key], view[key])
        obs, *_ = env.step(core.random_actions(st, rng))


@pytest.mark.parametrize(("preset", "n"), PRESET_PLAYERS, ids=PRESET_IDS)
@pytest.mark.parametrize(("reward", "episode"), [("points", "deal"), ("points", "match"), ("win", "match")])
def test_rewards_and_episodes(preset, n, reward, episode):
    B = 32
    env = CassinoVectorEnv(B, rules=preset, num_players=n, seed=0, reward=reward, episode=episode, with_view=False)
    env.reset()
    S = env.num_sides
    assert env.rules == make_rules(preset, num_players=n)
    assert S == (n // 2 if n in (4, 6) else n)  # partnerships of two with 4 and 6 players
    others = [k for k, item in enumerate(core.ITEMS) if item not in core.items_of(env.rules)]
    rng = _rng(B, 1)
    ends = 0
    for _ in range(600 if episode == "match" else 150):
        _, rewards, terminated, truncated, info = env.step(core.random_actions(env.state, rng))
        res = info["result"]
        assert rewards.shape == (B, n)
        assert rewards.dtype == np.float32
        assert not truncated.any()
        assert np.allclose(rewards.sum(axis=1), 0.0) or reward == "win"
        for q in range(S, n):  # partners share their side's reward
            assert np.array_equal(rewards[:, q], rewards[:, q - S])
        assert not res.deal_items[:, :, others].any()  # only the items of the preset's scoring (docs/rules.md 5)
        assert np.array_equal(res.deal_totals, res.deal_items.sum(axis=2))
        paid = rewards.any(axis=1)
        if reward == "points":
            assert not (paid & ~res.deal_done).any()
            totals = res.deal_totals.astype(np.float32)
            want = totals - (totals.sum(axis=1, keepdims=True) - totals) / max(S - 1, 1)
            assert np.allclose(rewards, want[:, np.arange(n) % S])
        else:
            assert np.array_equal(paid, res.match_done)
            won = res.match_winner[:, None] == (np.arange(n) % S)[None, :]
            assert np.array_equal(rewards[res.match_done], np.where(won, 1.0, -1.0)[res.match_done])
        assert np.array_equal(terminated, res.match_done if episode == "match" else res.deal_done)
        ends += int(terminated.sum())
    assert ends > 0


def test_step_rewards_helper_is_zero_sum_for_points():
    env = CassinoVectorEnv(8, num_players=3, seed=0, with_view=False)
    env.reset()
    rng = _rng(8)
    for _ in range(100):
        res = core.step(env.state, core.random_actions(env.state, rng))
        r = step_rewards(res, env.rules, "points")
        assert np.allclose(r.sum(axis=1), 0.0)


def test_seeding():
    a = CassinoVectorEnv(6, seed=10, with_view=False)
    b = CassinoVectorEnv(6, seed=10, with_view=False)
    oa, _ = a.reset()
    ob, _ = b.reset()
    rng_a, rng_b = _rng(6), _rng(6)
    for _ in range(200):
        assert np.array_equal(oa["observation"], ob["observation"])
        oa, ra, *_ = a.step(core.random_actions(a.state, rng_a))
        ob, rb, *_ = b.step(core.random_actions(b.state, rng_b))
        assert np.array_equal(ra, rb)
    # game b is the game seeded seed + b
    c = CassinoVectorEnv(1, seed=13, with_view=False)
    oc, _ = c.reset()
    a.reset()
    assert np.array_equal(a.observe()["observation"][3], oc["observation"][0])
    # different seeds: different deals; reset(seed) re-seeds
    d = CassinoVectorEnv(6, seed=11, with_view=False)
    d.reset()
    assert not np.array_equal(d.state.hand, a.state.hand)
    d.reset(seed=10)
    assert np.array_equal(d.state.hand, a.state.hand)


@pytest.mark.parametrize(("preset", "n"), [("classic", 4), ("cicera", 4), ("bga", 6), ("stadium", 2)])
def test_parallel_equals_serial(preset, n):
    serial = CassinoVectorEnv(200, preset, num_players=n, seed=5, with_view=False)
    threaded = CassinoVectorEnv(200, preset, num_players=n, seed=5, with_view=False, parallel=True)
    os_, _ = serial.reset()
    ot, _ = threaded.reset()
    rng = _rng(200)
    for _ in range(100):
        a = core.random_actions(serial.state, rng)
        os_, rs, ts, *_ = serial.step(a)
        ot, rt, tt, *_ = threaded.step(a)
        assert np.array_equal(os_["observation"], ot["observation"])
        assert np.array_equal(rs, rt)
        assert np.array_equal(ts, tt)


def test_bad_input():
    for kwargs, name in [({"num_envs": 0}, "num_envs"), ({"num_envs": 2, "max_moves": 0}, "max_moves"),
                         ({"num_envs": 2, "reward": "score"}, "reward"), ({"num_envs": 2, "episode": "x"}, "episode"),
                         ({"num_envs": 2, "reward": "win", "episode": "deal"}, "reward")]:
        with pytest.raises(EnvConfigError, match=name):
            CassinoVectorEnv(**kwargs)
    env = CassinoVectorEnv(2, seed=0, with_view=False)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(2, dtype=np.int64))
    obs, _ = env.reset()
    assert "view" not in obs
    before = env.state.copy()
    with pytest.raises(core.ActionIndexError, match="game 1"):
        env.step(np.array([0, MAX_MOVES - 1]))
    assert np.array_equal(before.hand, env.state.hand)  # nothing was applied
