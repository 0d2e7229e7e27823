"""Environments (issue 50, reliability 7): copies and pickles of a mid-game AEC or Gym env are true copies of the
game; a callable opponent's move is checked as returned (2.9 is not move 2); a bool is never an action id, in the
AEC env as in the Gym env."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import numpy as np
import pytest

import cassino_env
from agents.gym_env import CassinoGymEnv
from cassino_env.actions import IllegalActionError

COPIES = {"deepcopy": copy.deepcopy, "copy": copy.copy, "pickle": lambda e: pickle.loads(pickle.dumps(e))}


def _same_obs(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def _play_both(e1: Any, e2: Any, pick: int) -> int:
    """Step two AEC envs with the same moves to the end, checking they agree at every step; the steps played."""
    steps = 0
    while e1.agents:
        assert e1.agents == e2.agents and e1.agent_selection == e2.agent_selection
        agent = e1.agent_selection
        o1, r1, t1, _, i1 = e1.last()
        o2, r2, t2, _, i2 = e2.last()
        assert _same_obs(o1, o2) and (r1, t1) == (r2, t2) and i1 == i2
        if t1:
            e1.step(None)
            e2.step(None)
            continue
        legal = np.flatnonzero(o1["action_mask"])
        a = int(legal[pick % legal.size])
        e1.step(a)
        e2.step(a)
        assert e1.rewards == e2.rewards, agent
        steps += 1
    assert not e2.agents
    return steps


@pytest.mark.parametrize("how", sorted(COPIES))
@pytest.mark.parametrize("kwargs", [{}, {"action_encoding": "card_value", "with_moves": True},
                                    {"episode": "match", "reward": "win"}], ids=["classic", "card-value", "match"])
def test_a_mid_game_aec_env_copies_its_game(how: str, kwargs: dict[str, Any]) -> None:
    """Before: deepcopy, copy and pickle gave a fresh, un-reset env (EzPickle), copy.copy one that shared the game."""
    env = cassino_env.env(**kwargs)
    env.reset(seed=11)
    for _ in range(5):
        env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[-1]))
    before = env.unwrapped.core_state.copy()
    twin = COPIES[how](env)
    assert twin.unwrapped is not env.unwrapped and twin.unwrapped.core_state._u64 is not env.unwrapped.core_state._u64
    # the copy plays on exactly as a second copy of the original (same generator, same game) ...
    assert _play_both(copy.deepcopy(env), twin, pick=3) > 0
    # ... and playing it to the end left the original where it was
    st = env.unwrapped.core_state
    assert np.array_equal(st._u64, before._u64) and np.array_equal(st._i8, before._i8)
    assert _play_both(env, copy.deepcopy(env), pick=1) > 0
    # a copied env resets and plays a new episode as the original would
    a, b = copy.deepcopy(env), COPIES[how](env)
    a.reset()
    b.reset()
    assert _play_both(a, b, pick=2) > 0


@pytest.mark.parametrize("how", sorted(COPIES))
def test_an_unreset_aec_env_copies_as_unreset(how: str) -> None:
    env = COPIES[how](cassino_env.env(action_encoding="card_value"))
    with pytest.raises(AttributeError):
        env.agent_selection  # noqa: B018 - un-reset, as the original
    env.reset(seed=1)
    assert env.unwrapped.action_encoding == "card_value" and env.agents


@pytest.mark.parametrize("how", sorted(COPIES))
def test_a_mid_game_gym_env_copies_its_game(how: str) -> None:
    env = CassinoGymEnv(opponent="greedy", learner_seat=0)
    env.reset(seed=4)
    env.step(int(np.flatnonzero(env.action_masks())[0]))
    twin, other = COPIES[how](env), copy.deepcopy(env)
    done = False
    while not done:
        a = int(np.flatnonzero(other.action_masks())[-1])
        o1, r1, done, _, _ = other.step(a)
        o2, r2, done2, _, _ = twin.step(a)
        assert _same_obs(o1, o2) and r1 == r2 and done == done2
    o, _, _, _, _ = env.step(int(np.flatnonzero(env.action_masks())[0]))  # the original is still mid-game
    assert o["action_mask"].any() or env._done


@pytest.mark.parametrize("move", [2.9, np.float64(1.0), None, "abc", "1", 1.0, [0.5], True],
                         ids=["2.9", "np-1.0", "None", "abc", "str-1", "1.0", "list-0.5", "True"])
def test_a_callable_opponents_move_is_checked_before_any_cast(move: Any) -> None:
    """Before: 2.9 played move 2, None and 'abc' raised a raw TypeError / ValueError from a cast."""
    env = CassinoGymEnv(opponent=lambda obs, rng: move, learner_seat=1)
    with pytest.raises(IllegalActionError, match="not an integer index") as info:
        env.reset(seed=1)
    assert "\n" not in str(info.value)


def test_a_callable_opponents_integer_move_is_played() -> None:
    env = CassinoGymEnv(opponent=lambda obs, rng: np.int64(0), learner_seat=1)
    obs, _ = env.reset(seed=1)
    assert obs["action_mask"].any()


@pytest.mark.parametrize("action", [True, False, np.True_, np.array(True)], ids=["True", "False", "np-True", "0d"])
def test_a_bool_is_never_an_action_in_either_env(action: Any) -> None:
    """Before: the AEC env took True as action 1 where the Gym env refused it."""
    aec = cassino_env.env(illegal_action="raise")
    aec.reset(seed=1)
    with pytest.raises(IllegalActionError, match="a bool is not an action id"):
        aec.step(action)
    assert aec.agents and not any(aec.terminations.values())  # nothing changed
    aec = cassino_env.env()
    aec.reset(seed=1)
    who = aec.agent_selection
    aec.step(action)
    assert all(aec.terminations.values()) and aec.infos[who]["illegal_action"]
    assert aec.infos[who]["illegal_action_id"] == -1 and "bool" in aec.unwrapped.illegal_reason
    gym = CassinoGymEnv(opponent="random", illegal_action="raise")
    gym.reset(seed=1)
    with pytest.raises(IllegalActionError, match="a bool is not an action id"):
        gym.step(action)


def test_a_one_element_array_is_no_action_in_either_env() -> None:
    """Before: the Gym env took np.array([a]) as action a (numpy's .item()) where the AEC env and Gymnasium's
    Discrete.contains refuse it; a 0-d array stays a number in both."""
    gym = CassinoGymEnv(opponent="random", illegal_action="raise")
    gym.reset(seed=1)
    a = int(np.flatnonzero(gym.action_masks())[0])
    with pytest.raises(IllegalActionError, match="expected an integer action id"):
        gym.step(np.array([a]))
    gym.step(np.array(a))  # 0-d: played
    aec = cassino_env.env(illegal_action="raise")
    aec.reset(seed=1)
    with pytest.raises(IllegalActionError):
        aec.step(np.array([a]))
