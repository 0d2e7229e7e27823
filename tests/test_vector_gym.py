"""CassinoVectorEnv as a Gymnasium vector env (cassino_env/vector.py): the VectorEnv type, its spaces, the
reset/step contract checked against those spaces game by game, same-step autoreset, seeding (determinism and the
seed range), the reward perspective, and Gymnasium's own vector wrappers running on it."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, iterate
from gymnasium.wrappers.vector import RecordEpisodeStatistics

from cassino_env.errors import CassinoError, SeedError
from cassino_env.vector import CassinoVectorEnv, EnvConfigError

#: (preset, players): a 2-player game, partnerships of 4 and 6, attach builds (26 build slots), ace high.
CASES = [("classic", 2), ("cicera", 4), ("bga", 6), ("stadium", 2), ("royal", 3)]
B, M = 6, 96


def legal_actions(env: CassinoVectorEnv, obs: dict, seed: int) -> np.ndarray:
    """One legal move per game, drawn by Gymnasium's own masked sampling of the single action space."""
    env.single_action_space.seed(seed)
    return np.array([env.single_action_space.sample(mask=m) for m in obs["action_mask"]], dtype=np.int64)


def copied(obs: dict) -> dict:
    """The observation with every array copied (``obs["observation"]`` is a buffer the next step overwrites), and
    numpy scalars (one game's entries of shape ()) made 0-d arrays, as Box.contains wants them."""
    return {k: copied(v) if isinstance(v, dict) else np.array(v) for k, v in obs.items()}


def play(env: CassinoVectorEnv, steps: int, seed: int) -> list:
    """Reset with ``seed`` and play ``steps`` masked-random steps; every result, for comparisons."""
    obs, info = env.reset(seed=seed)
    out = [(copied(obs), info)]
    for t in range(steps):
        obs, rew, term, trunc, info = env.step(legal_actions(env, obs, seed + t))
        out.append((copied(obs), rew, term, trunc))
    return out


def test_it_is_a_gymnasium_vector_env_with_batched_spaces() -> None:
    env = CassinoVectorEnv(B, "classic", seed=0, max_moves=M)
    assert isinstance(env, VectorEnv)
    assert env.num_envs == B
    assert env.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    assert env.single_action_space == spaces.Discrete(M)
    assert env.action_space == spaces.MultiDiscrete([M] * B) == batch_space(env.single_action_space, B)
    assert isinstance(env.single_observation_space, spaces.Dict)
    assert env.observation_space == batch_space(env.single_observation_space, B)
    assert set(env.single_observation_space) == {"observation", "action_mask", "current_player", "move_kind",
                                                 "move_card", "move_value", "move_cards", "view"}
    assert "view" not in CassinoVectorEnv(B, "classic", with_view=False).single_observation_space
    assert env.single_observation_space["observation"].shape == (env.obs_size,)
    assert env.observation_space["move_cards"].shape == (B, M)


@pytest.mark.parametrize(("preset", "players"), CASES)
def test_reset_and_step_keep_to_the_spaces_game_by_game(preset: str, players: int) -> None:
    env = CassinoVectorEnv(B, preset, num_players=players, seed=11, max_moves=M)
    obs, info = env.reset(seed=5)
    assert info == {}
    ends = 0
    for t in range(120):  # more than two deals of 48 moves
        assert obs in env.observation_space, (preset, t)
        for b, one in enumerate(iterate(env.observation_space, obs)):
            assert copied(one) in env.single_observation_space, (preset, t, b)
            assert one["action_mask"].sum() >= 1  # auto-reset: a game always has a seat to move
        obs, rewards, terminations, truncations, infos = env.step(legal_actions(env, obs, t))
        assert rewards.shape == (B, players) and rewards.dtype == np.float32
        assert terminations.shape == truncations.shape == (B,)
        assert terminations.dtype == truncations.dtype == np.bool_
        assert not truncations.any()
        assert isinstance(infos, dict) and "result" in infos
        if terminations.any():
            ends += 1
            # same-step autoreset: the observation of an ended deal is already the next deal's first
            done = np.flatnonzero(terminations)
            assert (obs["view"]["hand_sizes"][done].sum(axis=1) == 52 - obs["view"]["stock_size"][done]
                    - np.bitwise_count(obs["view"]["loose"][done])).all()
            assert not np.any(obs["view"]["captured"][done])
    assert ends >= 2


def test_seeding_is_deterministic_and_reset_without_seed_repeats_the_last() -> None:
    a = play(CassinoVectorEnv(B, "classic", seed=3, max_moves=M), 60, seed=42)
    b = play(CassinoVectorEnv(B, "classic", seed=9, max_moves=M), 60, seed=42)
    assert data_equivalence(a, b, exact=True)
    c = play(CassinoVectorEnv(B, "classic", seed=3, max_moves=M), 60, seed=43)
    assert not data_equivalence(a[0], c[0])
    env = CassinoVectorEnv(B, "classic", seed=42, max_moves=M)  # the constructor's seed is reset()'s
    assert data_equivalence(copied(env.reset()[0]), a[0][0], exact=True)
    env.reset(seed=7)
    again = copied(env.reset()[0])  # no seed: the last one, 7
    assert data_equivalence(again, copied(CassinoVectorEnv(B, "classic", seed=7, max_moves=M).reset()[0]), exact=True)


def test_game_b_is_seeded_seed_plus_b_and_the_largest_seed_wraps() -> None:
    one = CassinoVectorEnv(1, "classic", seed=5 + 2, max_moves=M).reset()[0]
    three = CassinoVectorEnv(3, "classic", seed=5, max_moves=M).reset()[0]
    assert np.array_equal(one["observation"][0], three["observation"][2])
    top = CassinoVectorEnv(2, "classic", seed=2**63 - 1, max_moves=M).reset()[0]  # game 1: (2**63) mod 2**63 = 0
    zero = CassinoVectorEnv(1, "classic", seed=0, max_moves=M).reset()[0]
    assert np.array_equal(top["observation"][1], zero["observation"][0])


@pytest.mark.parametrize("bad", [-1, 2**63, 1.0, True, np.bool_(True), "3", None])
def test_bad_seeds_are_refused_naming_the_seed(bad: object) -> None:
    with pytest.raises(SeedError, match="seed"):
        CassinoVectorEnv(2, "classic", seed=bad)  # type: ignore[arg-type]
    env = CassinoVectorEnv(2, "classic", seed=np.int64(4))  # a numpy integer is a seed
    if bad is not None:  # reset(seed=None) means "the last seed"
        with pytest.raises(SeedError, match="seed"):
            env.reset(seed=bad)  # type: ignore[arg-type]
    assert issubclass(SeedError, CassinoError) and issubclass(SeedError, ValueError)


def test_reset_options_and_reward_seat_are_checked() -> None:
    env = CassinoVectorEnv(2, "classic")
    with pytest.raises(EnvConfigError, match="options"):
        env.reset(options={"reset_mask": np.ones(2, dtype=bool)})
    for bad in (2, -1, True, "0"):
        with pytest.raises(EnvConfigError, match="reward_seat"):
            CassinoVectorEnv(2, "classic", reward_seat=bad)  # type: ignore[arg-type]


def test_reset_options_of_the_wrong_type_are_refused() -> None:
    """options=5 was a TypeError ('int' object is not iterable); options=0 and "" were taken as none."""
    env = CassinoVectorEnv(2, "classic")
    for bad in (5, 0, "", "x", [1]):
        with pytest.raises(EnvConfigError, match=r"^options: "):
            env.reset(seed=1, options=bad)  # type: ignore[arg-type]
    assert env.reset(seed=1, options={})[1] == {}


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"num_envs": True}, "num_envs"), ({"max_moves": True}, "max_moves"),  # were TypeErrors in the core
    ({"max_moves": 40000}, "max_moves"), ({"max_moves": 10**6}, "max_moves"),  # were taken until reset()
    ({"prune": "no"}, "prune"), ({"parallel": "no"}, "parallel"), ({"with_view": "no"}, "with_view"),  # were taken
])
def test_bad_constructor_arguments_name_the_field(kwargs: dict, field: str) -> None:
    args = {"num_envs": 2, **kwargs}
    with pytest.raises(EnvConfigError, match=f"^{field} must be"):
        CassinoVectorEnv(**args)


def test_numpy_integers_are_sizes() -> None:
    env = CassinoVectorEnv(np.int64(2), max_moves=np.int32(64))
    assert (env.num_envs, env.max_moves) == (2, 64) and type(env.num_envs) is int
    assert env.reset(seed=np.uint32(3))[0]["action_mask"].shape == (2, 64)


@pytest.mark.parametrize(("preset", "players", "seat"), [("classic", 2, 1), ("cicera", 4, 2)])
def test_reward_seat_gives_one_seats_rewards_in_gymnasiums_shape(preset: str, players: int, seat: int) -> None:
    every = CassinoVectorEnv(B, preset, num_players=players, seed=1, max_moves=M)
    one = CassinoVectorEnv(B, preset, num_players=players, seed=1, max_moves=M, reward_seat=seat)
    obs, _ = every.reset()
    one.reset()
    paid = 0
    for t in range(60):
        a = legal_actions(every, obs, t)
        obs, r_all, term, _, _ = every.step(a)
        _, r_one, term_one, _, _ = one.step(a)
        assert r_one.shape == (B,) and r_one.dtype == np.float32
        assert np.array_equal(r_one, r_all[:, seat]) and np.array_equal(term, term_one)
        paid += int(np.count_nonzero(r_one))
    assert paid > 0  # a deal ended and paid the seat


def test_gymnasium_record_episode_statistics_runs_on_it() -> None:
    env = RecordEpisodeStatistics(CassinoVectorEnv(B, "classic", seed=2, max_moves=M, reward_seat=0))
    assert env.single_observation_space == env.unwrapped.single_observation_space
    obs, _ = env.reset(seed=2)
    returns = np.zeros(B)
    for t in range(48):  # one deal: 48 moves in every preset
        obs, rewards, terminations, _, infos = env.step(legal_actions(env.unwrapped, obs, t))
        returns += rewards
    assert terminations.all()  # all games dealt together end their first deal together
    assert infos["_episode"].all()
    assert np.allclose(infos["episode"]["r"], returns)
    assert (infos["episode"]["l"] == 48).all()
