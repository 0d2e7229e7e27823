"""PettingZoo's and Gymnasium's own conventions, as their users' code relies on them (issue 50, "Interop", items 1-4).

1. ``CassinoVectorEnv(copy=True)`` returns observations that are the caller's: a stored ``(obs, next_obs)`` pair
   holds two observations (the observation vector was a buffer the next step overwrote).
2. The infos of an illegal action are numbers (``illegal_action`` was the reason as text, which TorchRL cannot turn
   into a tensor): TorchRL's wrapper runs with ``illegal_action="terminate"``.
3. The AEC env's default ends the game with a penalty, as PettingZoo's classic games (``TerminateIllegalWrapper``),
   with the Gymnasium env's value; ``illegal_action="raise"`` stays.
4. The default observation is the classic two keys, so PettingZoo's tutorial line
   ``observation, action_mask = obs.values()`` works; ``with_moves=True`` adds the move table.
"""

from __future__ import annotations

import numpy as np
import pytest

import cassino_env
from agents.gym_env import CassinoGymEnv
from cassino_env import core
from cassino_env.actions import MAX_MOVES, IllegalActionError
from cassino_env.aec import deal_points_bound
from cassino_env.obs import move_features, obs_size
from cassino_env.rules import make_rules
from cassino_env.vector import CassinoVectorEnv

CLASSIC_BOUND = deal_points_bound(make_rules("classic"))  # 35


def _rng(B: int) -> np.ndarray:
    """The core's per-game random states for ``core.random_actions``."""
    return (np.arange(B, dtype=np.uint64) + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)


def _flat(obs: dict) -> dict[str, np.ndarray]:
    out = {k: v for k, v in obs.items() if k != "view"}
    out.update({f"view.{k}": v for k, v in obs.get("view", {}).items()})
    return out


# --- 1. the vector env's copy contract --------------------------------------------------------------------------------

def test_a_stored_obs_next_obs_pair_holds_two_observations():
    """A DQN-style replay buffer: (obs, next_obs) stored as returned, read back after many more steps."""
    B = 6
    env = CassinoVectorEnv(B, seed=4)
    obs, _ = env.reset()
    rng = np.random.default_rng(0)
    replay, snapshots = [], []
    for _ in range(30):
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in obs["action_mask"]])
        next_obs, *_ = env.step(actions)
        replay.append((obs, next_obs))
        snapshots.append(({k: v.copy() for k, v in _flat(obs).items()},
                          {k: v.copy() for k, v in _flat(next_obs).items()}))
        obs = next_obs
    env.reset(seed=5)  # a reset must not write into them either
    for (o, n), (o0, n0) in zip(replay, snapshots, strict=True):
        assert not np.array_equal(o["observation"], n["observation"])  # a move changes what the next seat sees
        for k, v in _flat(o).items():
            np.testing.assert_array_equal(v, o0[k], err_msg=k)  # unchanged by every later step and the reset
        for k, v in _flat(n).items():
            np.testing.assert_array_equal(v, n0[k], err_msg=k)


def test_copy_true_arrays_alias_nothing_and_writing_them_changes_nothing():
    env = CassinoVectorEnv(3, seed=1)
    first, _ = env.reset()
    seen = env.observe()
    second, rewards, terminated, truncated, _ = env.step(core.random_actions(env.state, _rng(3)))
    for x in [*_flat(first).values(), *_flat(seen).values()]:
        assert x.flags.writeable
        for y in [*_flat(second).values(), rewards, terminated, truncated]:
            assert not np.shares_memory(x, y)
    assert not any(np.shares_memory(first[k], seen[k]) for k in first if k != "view")
    before = {k: v.copy() for k, v in _flat(env.observe()).items()}
    for x in _flat(second).values():
        x[...] = 0  # the caller's arrays: scribbling on them leaves the env as it was
    after = _flat(env.observe())
    for k, v in before.items():
        np.testing.assert_array_equal(after[k], v, err_msg=k)


def test_copy_false_still_aliases_as_documented():
    env = CassinoVectorEnv(3, seed=1, copy=False)
    obs, _ = env.reset()
    nxt, *_ = env.step(core.random_actions(env.state, _rng(3)))
    assert np.shares_memory(obs["observation"], nxt["observation"])  # the encoder's buffer, overwritten in place
    assert not nxt["action_mask"].flags.writeable


# --- 2 and 3. illegal actions: the default ends the game with a penalty, the infos are numbers ----------------------

def _first_illegal(obs: dict) -> int:
    return int(np.flatnonzero(obs["action_mask"] == 0)[0])


@pytest.mark.parametrize("encoding", ["moves", "card_value"])
def test_the_default_ends_the_game_with_the_gym_envs_penalty(encoding):
    env = cassino_env.env(action_encoding=encoding)
    raw = env.unwrapped
    assert raw.illegal_action == "terminate"
    assert raw.illegal_reward == CassinoGymEnv(opponent="random").illegal_reward == -CLASSIC_BOUND
    env.reset(seed=3)
    env.step(int(np.flatnonzero(env.last()[0]["action_mask"])[0]))  # player_0 plays a legal move
    offender = env.agent_selection
    assert offender == "player_1"
    bad = _first_illegal(env.last()[0])
    env.step(bad)
    assert all(env.terminations.values()) and not any(env.truncations.values())
    assert raw.rewards == {"player_0": CLASSIC_BOUND, "player_1": -CLASSIC_BOUND}  # zero-sum
    assert raw.infos["player_1"]["illegal_action"] is True and raw.infos["player_1"]["illegal_action_id"] == bad
    assert raw.infos["player_0"]["illegal_action"] is False and raw.infos["player_0"]["illegal_action_id"] == -1
    assert f"player_1: action {bad}" in raw.illegal_reason
    returns = dict.fromkeys(raw.possible_agents, 0.0)
    for agent in env.agent_iter():  # every agent sees its termination and its reward, then leaves
        obs, reward, terminated, truncated, info = env.last()
        assert terminated and not truncated and not obs["action_mask"].any()
        assert all(isinstance(v, bool | int) for v in info.values())  # numbers only
        returns[agent] += reward
        env.step(None)
    assert returns == {"player_0": CLASSIC_BOUND, "player_1": -CLASSIC_BOUND} and not env.agents
    env.reset()
    assert raw.illegal_reason is None and env.agents


@pytest.mark.parametrize("action", [MAX_MOVES, -3, None, "abc", 2.5])
def test_an_action_outside_the_space_ends_the_game_with_id_minus_one(action):
    env = cassino_env.env()
    env.reset(seed=0)
    env.step(action)
    info = env.unwrapped.infos["player_0"]
    assert all(env.terminations.values()) and info["illegal_action"] is True and info["illegal_action_id"] == -1
    assert env.unwrapped.rewards["player_0"] == -CLASSIC_BOUND


def test_raise_is_still_an_option_and_changes_nothing():
    env = cassino_env.env(illegal_action="raise")
    env.reset(seed=0)
    before = env.unwrapped.position()
    with pytest.raises(IllegalActionError, match="player_0: action .* is illegal"):
        env.step(_first_illegal(env.last()[0]))
    assert env.unwrapped.position() == before and not any(env.terminations.values())
    assert env.unwrapped.illegal_reason is None


def test_the_gym_env_reports_an_illegal_action_with_the_same_numbers():
    env = CassinoGymEnv(opponent="random", learner_seat=0, action_encoding="moves")
    obs, info = env.reset(seed=0)
    bad = _first_illegal(obs)
    _, reward, done, _, info = env.step(bad)
    assert done and reward == -CLASSIC_BOUND
    assert info["illegal_action"] is True and info["illegal_action_id"] == bad and "is illegal" in env.illegal_reason
    env.reset(seed=1)
    assert env.illegal_reason is None


def test_torchrl_serial_env_rollout_with_no_policy_on_the_default_env():
    """TorchRL's SerialEnv samples unmasked actions with no policy: it crashed (IllegalActionError, and with
    ``illegal_action="terminate"`` a TypeError on the text info); now each illegal action ends its game."""
    pytest.importorskip("torchrl")
    import torch
    from torchrl.envs import PettingZooWrapper, SerialEnv

    env = SerialEnv(2, lambda: PettingZooWrapper(cassino_env.env(), use_mask=True))
    td = env.rollout(24, break_when_any_done=False)
    assert td.batch_size == (2, 24)
    nxt = td["next"]
    done = nxt["done"].reshape(2, 24)
    offended = torch.zeros_like(done)
    for group in ("player_0", "player_1"):
        flagged = nxt[group, "info", "illegal_action"].reshape(2, 24).bool()
        ids = nxt[group, "info", "illegal_action_id"].reshape(2, 24)
        rewards = nxt[group, "reward"].reshape(2, 24)
        assert (rewards[flagged] == -CLASSIC_BOUND).all()  # the offender's penalty
        assert ((ids[flagged] >= -1) & (ids[flagged] < MAX_MOVES)).all() and (ids[~flagged] == -1).all()
        offended |= flagged
    # 24 moves end no deal: every game that ended was ended by an illegal action, which TorchRL 0.14 samples here
    assert torch.equal(done, offended)
    env.close()


@pytest.mark.parametrize("encoding", ["moves", "card_value"])
def test_torchrl_wrapper_with_terminate_reports_the_illegal_action(encoding):
    """A policy that plays an unmasked id: the wrapper turns the infos into tensors (it raised a TypeError)."""
    pytest.importorskip("torchrl")
    from torchrl.envs import PettingZooWrapper
    from torchrl.envs.utils import check_env_specs

    env = PettingZooWrapper(cassino_env.env(action_encoding=encoding, illegal_action="terminate"), use_mask=True)
    check_env_specs(env)
    chosen = {}

    def illegal_policy(td):
        for group in ("player_0", "player_1"):
            mask = td[group, "action_mask"]
            action = (~mask).long().argmax(-1)  # the first id the mask forbids
            td[group, "action"] = action
            if td[group, "mask"].any():
                chosen[group] = int(action.reshape(-1)[0])
        return td

    td = env.rollout(3, policy=illegal_policy)  # stops at the first done
    assert td.batch_size == (1,) and bool(td["next", "done"][0])
    assert list(chosen) == ["player_0"]
    info = td["next", "player_0", "info"][0]
    assert bool(info["illegal_action"].item()) and int(info["illegal_action_id"].item()) == chosen["player_0"]
    assert td["next", "player_0", "reward"].item() == -CLASSIC_BOUND
    assert td["next", "player_1", "reward"].item() == CLASSIC_BOUND
    assert not bool(td["next", "player_1", "info", "illegal_action"].item())


# --- 4. the classic two keys ------------------------------------------------------------------------------------------

def test_pettingzoos_tutorial_line_unpacks_the_default_observation():
    env = cassino_env.env()
    space = env.observation_space("player_0")
    assert set(space.spaces) == {"observation", "action_mask"}
    env.reset(seed=2)
    rng = np.random.default_rng(2)
    steps = 0
    for _agent in env.agent_iter():
        obs, reward, termination, truncation, info = env.last()
        assert list(obs) == ["observation", "action_mask"]
        observation, action_mask = obs.values()  # PettingZoo's SB3 action-mask tutorial
        assert observation.shape == (obs_size(2, 2),) and action_mask.shape == (MAX_MOVES,)
        assert obs in space
        if termination or truncation:
            env.step(None)
            continue
        env.step(int(rng.choice(np.flatnonzero(action_mask))))
        steps += 1
    assert steps == 48  # a whole deal, every move legal


def test_the_move_table_is_opt_in_and_unchanged():
    plain, with_moves = cassino_env.env(), cassino_env.env(with_moves=True)
    assert set(with_moves.observation_space("player_0").spaces) == {"observation", "action_mask", "moves"}
    for e in (plain, with_moves):
        e.reset(seed=9)
    st = with_moves.unwrapped.core_state
    a, b = plain.last()[0], with_moves.last()[0]
    assert set(a) == {"observation", "action_mask"}
    np.testing.assert_array_equal(a["observation"], b["observation"])
    np.testing.assert_array_equal(a["action_mask"], b["action_mask"])
    np.testing.assert_array_equal(b["moves"], move_features(st.move_kind[0], st.move_card[0], st.move_value[0],
                                                            st.move_cards[0]))
