"""The single-agent Gymnasium env (agents/gym_env.py), its registered ids (agents/gym.py), agents acting inside
the AEC env (state_obs, aec_action, move_action) and the AEC env's adapter options (mask_in_info, with_moves)."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import api_test
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import cassino_env
from agents.bots import make_bot
from agents.gym import IDS, gym_id
from agents.gym_env import CassinoGymEnv, aec_action, move_action, state_obs
from agents.registry import AgentSpecError
from cassino_env.actions import IllegalActionError, card_value_id
from cassino_env.errors import PositionError, SeedError
from cassino_env.rules import PRESETS, make_rules
from cassino_env.vector import CassinoVectorEnv, EnvConfigError


def play_out(env, pick=lambda legal, rng: int(legal[0]), seed=0):
    """Play one episode with legal actions; returns (total reward, steps, last info)."""
    rng = np.random.default_rng(seed)
    total, steps, done, info = 0.0, 0, False, {}
    while not done:
        legal = np.flatnonzero(env.unwrapped.action_masks())
        assert legal.size, "the learner must have a legal action whenever the episode is running"
        _, reward, done, truncated, info = env.step(pick(legal, rng))
        assert not truncated
        total += reward
        steps += 1
    return total, steps, info


def test_every_preset_has_an_id_that_gymnasium_makes():
    assert len(IDS) == 2 * len(PRESETS)
    for preset in PRESETS:
        env = gymnasium.make(gym_id(preset), opponent="random")
        assert env.unwrapped.rules.preset == preset
        obs, info = env.reset(seed=1)
        assert env.observation_space.contains(obs)
        assert info["action_mask"].any()
    assert gym_id("classic") == "cassino/Classic-v1"
    # the module:id form imports the registering module itself
    assert gymnasium.make("agents.gym:cassino/Royal-v1", opponent="random").unwrapped.rules.preset == "royal"
    with pytest.raises(KeyError, match="unknown preset"):
        gym_id("poker")
    for bad in ("poker", ["classic"]):  # was a bare KeyError (not a ValueError); a list was a TypeError
        with pytest.raises(ValueError, match=r"^unknown preset .*; presets are classic, "):
            gym_id(bad)  # type: ignore[arg-type]


def test_the_default_passes_gymnasium_and_sb3_check_env():
    check_env(gymnasium.make("cassino/Classic-v1").unwrapped, skip_render_check=True)
    sb3_check_env(CassinoGymEnv(), warn=True)
    check_env(CassinoGymEnv(rules="cicera", action_encoding="moves"), skip_render_check=True)


def test_rewards_of_the_other_seats_turns_reach_the_learner():
    # seat 0 moves first, so in a two-player deal the other seat (1) plays the deal's last card
    env = CassinoGymEnv(opponent="greedy", learner_seat=0)
    for seed in range(5):
        env.reset(seed=seed)
        total, steps, info = play_out(env)
        assert steps == 24  # the learner's 24 cards, one step each
        points = info["deal_points"]
        assert total == pytest.approx(points[0] - points[1])
    # four players in partnerships: the learner's side is seats 0 and 2; seat 3 plays the last card
    env = CassinoGymEnv(num_players=4, opponent="random", learner_seat=1)
    env.reset(seed=4)
    total, steps, info = play_out(env)
    assert steps == 12
    assert total == pytest.approx(info["deal_points"][1] - info["deal_points"][0])


def test_match_episodes_sum_every_deal():
    env = CassinoGymEnv(opponent="greedy", learner_seat=1, episode="match")
    env.reset(seed=2)
    rng = np.random.default_rng(0)
    total, done, deals = 0.0, False, []
    while not done:
        legal = np.flatnonzero(env.action_masks())
        _, reward, done, _, info = env.step(int(rng.choice(legal)))
        total += reward
        if "deal_points" in info:
            deals.append(info["deal_points"][1] - info["deal_points"][0])
    assert len(deals) >= 2
    assert total == pytest.approx(sum(deals))


def test_learner_seat_random_or_fixed_and_seeded():
    env = CassinoGymEnv(opponent="random", num_players=3)
    seats = {env.reset(seed=s)[1]["learner_seat"] for s in range(30)}
    assert seats == {0, 1, 2}
    a, b = env.reset(seed=11), env.reset(seed=11)
    assert a[1]["learner_seat"] == b[1]["learner_seat"]
    np.testing.assert_array_equal(a[0]["observation"], b[0]["observation"])
    fixed = CassinoGymEnv(opponent="random", num_players=3, learner_seat=2)
    assert {fixed.reset(seed=s)[1]["learner_seat"] for s in range(10)} == {2}
    # a learner who is not first to move sees the table after the others' moves
    obs, info = fixed.reset(seed=0)
    assert fixed.unwrapped._aec.agent_selection == "player_2" and info["action_mask"].any()


def test_both_action_encodings():
    cv = CassinoGymEnv(opponent="advanced", learner_seat=0)
    assert cv.action_space == gymnasium.spaces.Discrete(524) and "moves" not in cv.observation_space.spaces
    mv = CassinoGymEnv(opponent="advanced", learner_seat=0, action_encoding="moves")
    assert mv.action_space == gymnasium.spaces.Discrete(512) and "moves" in mv.observation_space.spaces
    obs, _ = mv.reset(seed=5)
    legal = np.flatnonzero(obs["action_mask"])
    assert (obs["moves"][legal, 0] >= 0).all() and (obs["moves"][obs["action_mask"] == 0, 0] == -1).all()
    # both encodings play the same deal when the learner picks the same moves: the first listed one
    cv.reset(seed=5)
    st = cv._aec.core_state

    def first_cv(legal, rng):  # the card_value id of listed move 0
        return card_value_id(st.move_kind[0, 0], st.move_card[0, 0], st.move_value[0, 0])

    assert play_out(cv, first_cv)[0] == play_out(mv)[0]


def test_opponents_spec_agent_callable_sequence_and_checkpoint():
    rules = make_rules("classic", 3)
    calls = []

    def last_legal(obs, rng):
        calls.append(obs["current_player"][0])
        return [int(np.flatnonzero(obs["action_mask"][0])[-1])]

    env = CassinoGymEnv(rules=rules, opponent=[make_bot("greedy", rules), last_legal], learner_seat=0)
    env.reset(seed=3)
    play_out(env)
    assert set(calls) == {2}  # seat 1 is the bot, seat 2 the callable
    for spec in ("pimc:4", "pretrained:classic"):
        env = CassinoGymEnv(opponent=spec, learner_seat=1)
        env.reset(seed=0)
        assert play_out(env)[1] == 24
    with pytest.raises(AgentSpecError):
        CassinoGymEnv(opponent="nobody")
    with pytest.raises(EnvConfigError, match="opponent"):
        CassinoGymEnv(rules=rules, opponent=["random"])
    for bad in (3, None, b"greedy", [3]):  # were a TypeError (not a ValueError); bytes a "sequence of 6 agents"
        with pytest.raises(AgentSpecError, match=r"^opponent must be an agent spec, an Agent or a callable"):
            CassinoGymEnv(opponent=bad)


def test_an_opponent_that_plays_an_unlisted_move_is_named():
    env = CassinoGymEnv(opponent=lambda obs, rng: [400], learner_seat=1)
    with pytest.raises(IllegalActionError, match="lambda"):
        env.reset(seed=0)


@pytest.mark.parametrize(("kwargs", "field"), [({"learner_seat": 2}, "learner_seat"),
                                               ({"learner_seat": True}, "learner_seat"),
                                               ({"action_encoding": "ids"}, "action_encoding"),
                                               ({"illegal_action": "ignore"}, "illegal_action"),
                                               ({"illegal_reward": "x"}, "illegal_reward"),
                                               ({"illegal_reward": float("nan")}, "illegal_reward"),
                                               ({"illegal_reward": True}, "illegal_reward"),
                                               ({"with_moves": "no"}, "with_moves"), ({"prune": "no"}, "prune"),
                                               ({"with_moves": 0}, "with_moves")])
def test_bad_arguments_name_the_field(kwargs, field):
    """illegal_reward "x" escaped as float()'s own error and nan was taken; with_moves="no" and
    prune="no" were taken as True."""
    with pytest.raises(EnvConfigError, match=f"^{field}"):
        CassinoGymEnv(opponent="random", **kwargs)


def test_a_bool_action_is_illegal_not_action_1():
    """step(True) played action id 1 (operator.index(True) == 1)."""
    env = CassinoGymEnv(opponent="random", illegal_action="raise", action_encoding="moves", learner_seat=0)
    env.reset(seed=1)
    assert env.action_masks()[1]  # action 1 is legal here: True would have played it
    for action in (True, np.array(True), np.bool_(False)):
        with pytest.raises(IllegalActionError, match="expected an integer action id"):
            env.step(action)
    assert env.step(np.int64(1))[2] in (False, True)  # an integer still plays


def test_illegal_actions_terminate_or_raise():
    env = CassinoGymEnv(opponent="random", learner_seat=0)
    obs, _ = env.reset(seed=0)
    illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    obs, reward, done, _, info = env.step(illegal)
    assert (reward, done) == (-35.0, True)  # -deal_points_bound(classic)
    assert info["illegal_action"] is True and info["illegal_action_id"] == illegal  # numbers, as the AEC env's
    assert "seat 0" in env.illegal_reason and "is illegal" in env.illegal_reason
    assert not env.action_masks().any()
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    strict = CassinoGymEnv(opponent="random", learner_seat=0, illegal_action="raise")
    obs, _ = strict.reset(seed=0)
    with pytest.raises(IllegalActionError, match="seat 0"):
        strict.step(illegal)
    with pytest.raises(IllegalActionError, match="outside"):
        strict.step(9999)
    np.testing.assert_array_equal(strict.action_masks(), obs["action_mask"] == 1)  # nothing changed
    strict.step(np.int64(np.flatnonzero(obs["action_mask"])[0]))  # numpy integers are actions too


@pytest.mark.parametrize("seed", [-1, True, 1.5, "3", 2**63])
def test_bad_seeds_are_refused_naming_the_field(seed):
    env = CassinoGymEnv(opponent="random")
    with pytest.raises(SeedError, match="seed"):
        env.reset(seed=seed)


def test_numpy_integer_seeds_are_seeds():
    env = CassinoGymEnv(opponent="random")
    a, b = env.reset(seed=np.int64(5)), env.reset(seed=5)
    np.testing.assert_array_equal(a[0]["observation"], b[0]["observation"])


def test_a_position_where_the_learner_never_moves_is_refused():
    # seat 0 holds nothing; seat 1 plays the deal's only card
    position = {"hands": [[], [1]], "loose": [2], "to_move": 1}
    env = CassinoGymEnv(opponent="random", learner_seat=0)
    with pytest.raises(PositionError, match="learner"):
        env.reset(seed=0, options={"position": position})


def test_state_obs_is_the_vector_env_observation():
    venv = CassinoVectorEnv(num_envs=3, rules="bga", num_players=3, seed=4)
    obs, _ = venv.reset()
    built = state_obs(venv.state)
    assert set(built) == set(obs)
    for key in obs:
        if key == "view":
            for k in obs["view"]:
                np.testing.assert_array_equal(built["view"][k], obs["view"][k], err_msg=k)
        else:
            np.testing.assert_array_equal(built[key], obs[key], err_msg=key)


@pytest.mark.parametrize("encoding", ["moves", "card_value"])
def test_every_kind_of_agent_acts_inside_the_aec_env(encoding):
    env = cassino_env.env(action_encoding=encoding)
    rules = env.unwrapped.rules
    from agents.registry import make_agent

    players = [make_agent("pretrained:classic", rules), make_agent("pimc:4", rules)]
    env.reset(seed=9)
    rng = np.random.default_rng(0)
    moves = 0
    for agent in env.agent_iter():
        obs, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        a = aec_action(players[env.unwrapped.agent_name_mapping[agent]], env, rng)
        assert obs["action_mask"][a] == 1
        env.step(a)
        moves += 1
    assert moves == 48


def test_move_action_maps_a_move_index_to_its_card_value_id():
    env = cassino_env.env(action_encoding="card_value")
    env.reset(seed=2)
    st = env.unwrapped.core_state
    for i in range(int(st.num_moves[0])):
        a = move_action(env, i)
        assert a == card_value_id(st.move_kind[0, i], st.move_card[0, i], st.move_value[0, i])
        assert env.unwrapped.action_to_string(a).split()[0] in env.unwrapped._move_text(i)
    with pytest.raises(IllegalActionError, match="not a listed move"):
        move_action(env, int(st.num_moves[0]))


def test_aec_adapter_options_mask_in_info_and_with_moves():
    plain = cassino_env.env(mask_in_info=True, with_moves=True)
    lean = cassino_env.env()  # mask_in_info=False and with_moves=False are the defaults
    assert "moves" not in lean.observation_space("player_0").spaces
    assert "moves" in plain.observation_space("player_0").spaces
    for e in (plain, lean):
        e.reset(seed=6)
    rng = np.random.default_rng(0)
    for _agent in lean.agent_iter():
        obs, _, terminated, _, info = lean.last()
        pobs, _, _, _, pinfo = plain.last()
        assert "action_mask" not in info and "action_mask" in pinfo and info["overflow"] == pinfo["overflow"]
        assert set(obs) == {"observation", "action_mask"}
        np.testing.assert_array_equal(obs["observation"], pobs["observation"])
        np.testing.assert_array_equal(obs["action_mask"], pobs["action_mask"])
        a = None if terminated else int(rng.choice(np.flatnonzero(obs["action_mask"])))
        lean.step(a)
        plain.step(a)
    for kw in ({"mask_in_info": True}, {"with_moves": True}):  # the defaults: test_aec.py
        api_test(cassino_env.env(**kw), num_cycles=200)


@pytest.mark.parametrize(("kwargs", "field"), [({"prune": "no"}, "prune"), ({"mask_in_info": 0}, "mask_in_info"),
                                               ({"with_moves": None}, "with_moves"), ({"max_moves": True}, "max_moves"),
                                               ({"illegal_reward": float("nan")}, "illegal_reward"),
                                               ({"illegal_reward": "x"}, "illegal_reward")])
def test_aec_env_arguments_of_the_wrong_type_name_the_field(kwargs, field):
    """The PettingZoo env refuses what its own flags would misread ("no" was taken as prune=True)."""
    from cassino_env import env as make_env
    from cassino_env.vector import EnvConfigError

    with pytest.raises(EnvConfigError, match=field):
        make_env(**kwargs)
