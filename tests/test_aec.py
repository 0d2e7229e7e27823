"""The PettingZoo AEC env (cassino_env.aec): PettingZoo's own tests, then what they miss (they play one episode).

The parametrized tests run on every preset of docs/rules.md 6 at every player count it allows (classic 2/3/4, matsuda 2,
cicera 4, bga 2/3/4/6, stadium 2, royal 2/3/4).
"""

from __future__ import annotations

import pickle
import random
import re
from collections import defaultdict

import numpy as np
import pytest
from conftest import PRESET_IDS, PRESET_PLAYERS, SWEEP, permute_hidden, random_action, sweep_count
from pettingzoo.test import api_test, render_test, seed_test

import cassino_env
from cassino_env import core
from cassino_env.actions import (
    CV_BUILD_ID,
    MAX_MOVES,
    NUM_CARD_VALUE_ACTIONS,
    ActionTextError,
    IllegalActionError,
    card_value_id,
    card_value_to_string,
    string_to_card_value,
)
from cassino_env.aec import raw_env
from cassino_env.cards import card_id
from cassino_env.errors import RulesError
from cassino_env.obs import encode, move_features, obs_layout, obs_size
from cassino_env.rules import make_rules
from cassino_env.vector import CassinoVectorEnv, EnvConfigError
from cassino_env.version import ENV_NAME

ENCODINGS = ("moves", "card_value")


def _play_episode(e, rnd: random.Random, on_step=None) -> dict[str, float]:
    """Random masked play to the end of the episode; returns each agent's summed ``last()`` rewards."""
    total: dict[str, float] = defaultdict(float)
    for agent in e.agent_iter():
        obs, reward, terminated, truncated, info = e.last()
        total[agent] += reward
        if terminated or truncated:
            e.step(None)
            continue
        a = random_action(obs, rnd)
        e.step(a)
        if on_step is not None:
            on_step(agent, a)
    return dict(total)


def _moves_trace(e, rnd: random.Random, max_steps: int = 10_000) -> list:
    """Random play recording (agent, observation vector bytes, mask bytes, action, rewards) per decision."""
    trace = []
    for agent in e.agent_iter(max_steps):
        obs, reward, terminated, truncated, _ = e.last()
        if terminated or truncated:
            trace.append((agent, reward, "end"))
            e.step(None)
            continue
        a = random_action(obs, rnd)
        trace.append((agent, reward, obs["observation"].tobytes(), obs["action_mask"].tobytes(), a))
        e.step(a)
    return trace


# --- PettingZoo's tests -----------------------------------------------------------------------------------------------


# api_test warns for every dict observation (PettingZoo's own classic envs are on its allow-list): expected here.
@pytest.mark.filterwarnings("ignore:Observation:UserWarning")
@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize(("preset", "n"), PRESET_PLAYERS, ids=PRESET_IDS)
@pytest.mark.parametrize("episode", ["deal", "match"])
def test_pettingzoo_api_test(preset, n, encoding, episode):
    api_test(cassino_env.env(rules=preset, num_players=n, action_encoding=encoding, episode=episode),
             num_cycles=1000)


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize(("preset", "n"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_pettingzoo_seed_test(preset, n, encoding):
    seed_test(lambda: cassino_env.env(rules=preset, num_players=n, action_encoding=encoding), num_cycles=500)


@pytest.mark.parametrize(("preset", "n"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_pettingzoo_render_test(preset, n, capsys):
    render_test(lambda render_mode=None: cassino_env.env(rules=preset, num_players=n, render_mode=render_mode))
    assert "to move: player_" in capsys.readouterr().out  # human mode printed the table


def test_env_shape_and_metadata():
    e = cassino_env.env(num_players=3)
    raw = e.unwrapped
    assert isinstance(raw, raw_env)
    assert raw.metadata["name"] == ENV_NAME
    assert re.fullmatch(r"cassino_v\d+", ENV_NAME)
    assert raw.possible_agents == ["player_0", "player_1", "player_2"]
    assert raw.action_space("player_1").n == MAX_MOVES
    assert raw_env(action_encoding="card_value").action_space("player_0").n == NUM_CARD_VALUE_ACTIONS == 524
    space = raw.observation_space("player_0")
    assert space["observation"].shape == (obs_size(3, 3),)
    assert space["action_mask"].dtype == np.int8
    assert set(space.spaces) == {"observation", "action_mask"}  # PettingZoo's classic two keys by default
    assert raw_env(with_moves=True).observation_space("player_0")["moves"].shape == (MAX_MOVES, 56)
    with pytest.raises(AttributeError):
        _ = e.agents  # before reset, as PettingZoo's OrderEnforcingWrapper
    e.reset(seed=1)
    assert e.agents == raw.possible_agents
    assert e.agent_selection == "player_0"
    pickle.loads(pickle.dumps(raw)).reset(seed=1)  # EzPickle


@pytest.mark.parametrize(("P", "S"), [(2, 2), (3, 3), (4, 2), (6, 3)])
def test_docstring_observation_table_matches_the_layout(P, S):
    """The index table of the module docstring (start and length per block) is the encoding's layout."""
    layout = obs_layout(P, S)
    rows = [line.split("|")[1:4] for line in cassino_env.aec.__doc__.splitlines()
            if line.startswith("| `") and line.split("|")[1].strip().strip("`") in layout]
    assert [r[0].strip().strip("`") for r in rows] == list(layout)

    def value(expr: str) -> int:
        expr = re.sub(r"(\d+)\s*\(", r"\1*(", expr.strip())
        return eval(re.sub(r"(\d+) ([PS])", r"\1*\2", expr), {"P": P, "S": S})  # noqa: S307 - test-only arithmetic

    for name, start, length in rows:
        assert (value(start), value(length)) == layout[name.strip().strip("`")], name
    assert sum(value(length) for _, _, length in rows) == obs_size(P, S)  # D itself is pinned in test_obs.py


@pytest.mark.parametrize("kwargs", [
    {"action_encoding": "ids"}, {"reward": "score"}, {"episode": "game"}, {"reward": "win", "episode": "deal"},
    {"illegal_action": "ignore"}, {"render_mode": "rgb"}, {"max_moves": 0},  # rgb_array is a mode now
])
def test_bad_arguments_name_the_argument(kwargs):
    with pytest.raises(EnvConfigError, match=next(iter(kwargs))):
        raw_env(**kwargs)


def test_every_preset_constructs_and_unlisted_counts_are_refused():
    assert len(PRESET_PLAYERS) == 13
    for preset, n in PRESET_PLAYERS:
        e = raw_env(rules=preset, num_players=n)
        assert e.rules == make_rules(preset, num_players=n)
        assert e.possible_agents == [f"player_{p}" for p in range(n)]
        assert e.observation_space("player_0")["observation"].shape == (obs_size(n, e.rules.num_sides),)
    assert raw_env(rules="cicera").rules.num_players == 4  # the preset's first allowed count
    assert raw_env(rules={"preset": "bga", "num_players": 6}).rules.sides == ((0, 3), (1, 4), (2, 5))
    for preset, n in (("classic", 6), ("matsuda", 3), ("cicera", 2), ("stadium", 4)):
        with pytest.raises(RulesError, match="allows num_players"):
            raw_env(rules=preset, num_players=n)


# --- episodes, seeds and randomness -------------------------------------------------------------------------------


@pytest.mark.parametrize(("preset", "n"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_reseeding_many_episodes(preset, n):
    """Same seed: the same game on a fresh and on a reused instance; different seeds: different deals."""
    reused = cassino_env.env(rules=preset, num_players=n)
    first_tables = set()
    for seed in range(60):
        fresh = cassino_env.env(rules=preset, num_players=n)
        fresh.reset(seed=seed)
        reused.reset(seed=seed)
        assert fresh.unwrapped.position() == reused.unwrapped.position()
        first_tables.add(tuple(fresh.unwrapped.position()["loose"]) + tuple(fresh.unwrapped.position()["hands"][0]))
        if seed % 6 == 0:  # a few whole episodes, step by step, on both
            assert _moves_trace(fresh, random.Random(seed)) == _moves_trace(reused, random.Random(seed))
    assert len(first_tables) == 60
    # an unseeded reset after a seeded one continues deterministically (the vector env's stream)
    a, b = cassino_env.env(rules=preset, num_players=n), cassino_env.env(rules=preset, num_players=n)
    a.reset(seed=5)
    b.reset(seed=5)
    for _ in range(4):
        assert _moves_trace(a, random.Random(1)) == _moves_trace(b, random.Random(1))
        a.reset()
        b.reset()


def test_unseeded_resets_differ_and_never_touch_global_rng():
    np_state, py_state = np.random.get_state(), random.getstate()  # noqa: NPY002 - read to prove it is unused
    e = cassino_env.env(num_players=2)
    seen = set()
    for _ in range(20):
        e.reset()
        e.step(0)  # cut the episode short: the next reset() starts a new game from the env's generator
        seen.add(str(e.unwrapped.position()))
    assert len(seen) == 20
    e.reset(seed=3)
    _play_episode(e, random.Random(0))
    e.reset()
    np_after = np.random.get_state()  # noqa: NPY002 - read to prove it is unused
    assert random.getstate() == py_state
    assert np.array_equal(np_after[1], np_state[1])
    assert np_after[2:] == np_state[2:]


@pytest.mark.parametrize(("preset", "n"), PRESET_PLAYERS, ids=PRESET_IDS)
@pytest.mark.parametrize("share", SWEEP)
def test_hundreds_of_episodes_keep_the_contract(preset, n, share):
    """Episodes end by termination only, in one deal; masks, infos and move rows agree; rewards are zero-sum."""
    # the infos' masks and the move table are checked too
    e = cassino_env.env(rules=preset, num_players=n, mask_in_info=True, with_moves=True)
    raw = e.unwrapped
    rnd = random.Random(n)
    S = raw.rules.num_sides
    for ep in range(sweep_count(120 if n == 2 else 80, share)):
        if ep % 3 == 0:
            e.reset(seed=ep)
        else:
            e.reset()  # continues the seeded stream: the next deal
        steps = 0
        for agent in e.agent_iter():
            obs, reward, terminated, truncated, info = e.last()
            assert not truncated
            if terminated:
                assert not obs["action_mask"].any()
                assert not info["action_mask"].any()
                e.step(None)
                continue
            mask = obs["action_mask"]
            assert np.array_equal(mask, info["action_mask"])
            assert mask.dtype == np.int8
            st = raw.core_state
            nm = int(st.num_moves[0])
            assert mask.sum() == nm  # moves encoding: the first num_moves ids
            assert mask[:nm].all()
            assert np.array_equal(obs["moves"], move_features(st.move_kind[0], st.move_card[0], st.move_value[0],
                                                              st.move_cards[0]))
            for other in raw.possible_agents:
                if other != agent:
                    o = raw.observe(other)
                    assert not o["action_mask"].any()
                    assert (o["moves"][:, 0] == -1).all()
            e.step(random_action(obs, rnd))
            steps += 1
        assert steps == 52 - raw.rules.table_cards
        res = raw.last_result
        assert res.deal_done[0]
        assert res.deal_totals.shape == (1, S)


# --- rewards --------------------------------------------------------------------------------------------------------


def _expected_points(result, S: int, P: int) -> np.ndarray:
    totals = result.deal_totals[0].astype(np.float64)
    per_side = totals - (totals.sum() - totals) / max(S - 1, 1)
    return per_side[np.arange(P) % S]


@pytest.mark.parametrize(("preset", "n"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_rewards_between_turns_are_credited(preset, n):
    """Every seat's summed last() rewards equal its deal points, whoever played a deal's last card (PettingZoo's
    own SB3 tutorial credited only the mover); partners share; the sum over seats is zero."""
    e = cassino_env.env(rules=preset, num_players=n, episode="match")
    raw = e.unwrapped
    P, S = n, raw.rules.num_sides
    for seed in range(3):
        e.reset(seed=seed)
        expected = np.zeros(P)
        pending: dict[str, float] = {}
        credited_between_turns = 0
        got: dict[str, float] = defaultdict(float)
        rnd = random.Random(seed)
        for agent in e.agent_iter():
            obs, reward, terminated, truncated, _ = e.last()
            got[agent] += reward
            if agent in pending:  # the reward of a deal that ended on another seat's move reaches this seat now
                assert reward == pytest.approx(pending.pop(agent))
                credited_between_turns += 1
            if terminated:
                e.step(None)
                continue
            deals_before = raw.core_state.deal_index[0] + raw.core_state.match_index[0]
            e.step(random_action(obs, rnd))
            st = raw.core_state
            if st.current_player[0] < 0 or st.deal_index[0] + st.match_index[0] != deals_before:
                pts = _expected_points(raw.last_result, S, P)
                expected += pts
                assert pts.sum() == pytest.approx(0.0)
                for q in range(P):
                    assert raw.rewards[f"player_{q}"] == pytest.approx(pts[q])
                    assert pts[q] == pts[q % S]  # partners share their side's reward
                    if f"player_{q}" != agent and pts[q] != 0:
                        pending[f"player_{q}"] = float(pts[q])
        assert [got[f"player_{q}"] for q in range(P)] == pytest.approx(expected.tolist())
        assert credited_between_turns > 0
        if S < P:  # partnerships: partners share a side's reward
            for q in range(S, P):
                assert got[f"player_{q}"] == pytest.approx(got[f"player_{q - S}"])


@pytest.mark.parametrize(("preset", "n"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_win_reward_pays_at_the_end_of_a_match(preset, n):
    e = cassino_env.env(rules=preset, num_players=n, reward="win", episode="match")
    raw = e.unwrapped
    for seed in range(4):
        e.reset(seed=seed)
        total = _play_episode(e, random.Random(seed))
        res = raw.last_result
        assert res.match_done[0]
        winner = int(res.match_winner[0])
        S = raw.rules.num_sides
        assert total == {f"player_{q}": (1.0 if q % S == winner else -1.0) for q in range(n)}
        assert int(res.match_totals[0].max()) >= raw.rules.target


# --- illegal actions --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_illegal_action_raises_naming_action_and_reason(encoding):
    e = cassino_env.env(num_players=2, action_encoding=encoding, illegal_action="raise")
    e.reset(seed=0)
    raw = e.unwrapped
    before = raw.position()
    obs, *_ = e.last()
    bad = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    with pytest.raises(IllegalActionError, match=rf"player_0: action {bad}\b.*is illegal") as info:
        e.step(bad)
    assert isinstance(info.value, ValueError)
    assert len(str(info.value).split("is illegal: ")[1]) > 10  # and says why
    with pytest.raises(IllegalActionError, match="outside the action space"):
        e.step(raw.num_actions)
    with pytest.raises(IllegalActionError, match="integer"):
        e.step(None)
    assert raw.position() == before  # nothing changed
    assert e.agent_selection == "player_0"
    assert not any(e.terminations.values())


def test_card_value_illegal_reason_names_the_card():
    e = raw_env(num_players=2, action_encoding="card_value", illegal_action="raise")
    e.reset(seed=0)
    hand = e.position()["hands"][0]
    missing = next(c for c in range(52) if c not in hand)
    with pytest.raises(IllegalActionError, match="does not hold"):
        e.step(missing)  # trail a card player_0 does not hold


@pytest.mark.parametrize("reward", ["points", "win"])
def test_illegal_action_terminate_mode(reward):
    e = cassino_env.env(num_players=4, illegal_action="terminate", illegal_reward=-2.5, reward=reward,
                        episode="match")
    e.reset(seed=0)
    e.step(random_action(e.last()[0], random.Random(0)))  # player_0 moves
    assert e.agent_selection == "player_1"
    e.step(MAX_MOVES - 1)  # player_1: not a listed move
    assert all(e.terminations.values())
    assert not any(e.truncations.values())
    # the offender's side pays, the other side gets the opposite: zero-sum (the other side got 0.0)
    assert e.rewards == {"player_0": 2.5, "player_1": -2.5, "player_2": 2.5, "player_3": -2.5}
    assert e.infos["player_1"]["illegal_action"] is True and e.infos["player_1"]["illegal_action_id"] == MAX_MOVES - 1
    assert e.infos["player_0"]["illegal_action"] is False and e.infos["player_0"]["illegal_action_id"] == -1
    assert "player_1: action 511" in e.unwrapped.illegal_reason and "is illegal" in e.unwrapped.illegal_reason
    total = _play_episode(e, random.Random(0))
    assert total == {"player_0": 2.5, "player_1": -2.5, "player_2": 2.5, "player_3": -2.5}
    assert not e.agents
    e.reset()  # a cut-short game is not continued: a new one starts
    assert e.agent_selection == "player_0"


# --- action encodings and strings ---------------------------------------------------------------------------------


def _position_env(encoding: str, hands, loose=(), builds=(), to_move=0, **kw) -> raw_env:
    e = raw_env(num_players=len(hands), action_encoding=encoding, with_moves=True, **kw)
    e.reset(options={"position": {"hands": [[card_id(c) for c in h] for h in hands],
                                  "loose": [card_id(c) for c in loose],
                                  "builds": [([card_id(c) for c in cs], v, o) for cs, v, o in builds],
                                  "to_move": to_move}})
    return e


def test_card_value_picks_most_cards_then_canonical_first():
    # docs/rules.md 7 case 1: table A 2 3 5 6 8, hand 8: {8, 6+2, 5+3} (5 cards) or {8, 5+2+A} (4 cards)
    e = _position_env("card_value", [["8S"], ["KD"]], ["AH", "2D", "3C", "5D", "6H", "8C"])
    cap = card_value_id(1, card_id("8S"), 8)
    i = int(e._to_move[cap])
    st = e.core_state
    assert sorted(core.move_list(st, 0)[i][3]) == sorted(card_id(c) for c in ["2D", "3C", "5D", "6H", "8C"])
    assert e.observe("player_0")["moves"][cap, 3] == 5
    # docs/rules.md 7 case 3: K takes exactly one K; equal sizes: the canonical first (lower card id, KC)
    e = _position_env("card_value", [["KS"], ["2D"]], ["KH", "KC", "10D", "3C"])
    cap = card_value_id(1, card_id("KS"), 13)
    assert e.observe("player_0")["moves"][cap, 4 + card_id("KC")] == 1
    assert e.string_to_action("capture with KS") == cap
    e.step(cap)
    assert card_id("KC") in e.position()["captured"][0]


@pytest.mark.parametrize(("preset", "n"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_card_value_mask_matches_listed_moves(preset, n):
    """Every listed move of every preset has a card_value id (aces as 14, numeric courts, builds to 14)."""
    rnd = random.Random(0)
    e = raw_env(rules=preset, num_players=n, action_encoding="card_value", with_moves=True)
    for seed in range(40 if preset == "classic" else 15):
        e.reset(seed=seed)
        for _ in range(rnd.randrange(30)):
            if e.terminations[e.agent_selection]:
                break
            obs = e.observe(e.agent_selection)
            st = e.core_state
            ids = {card_value_id(k, c, v) for k, c, v, _ in core.move_list(st, 0)}
            assert set(np.flatnonzero(obs["action_mask"]).tolist()) == ids
            for a in ids:  # the features row of id a describes a listed move with that kind, card and value
                row = obs["moves"][a]
                assert card_value_id(row[0], row[1], row[2]) == a
            e.step(random_action(obs, rnd))


def test_card_value_table_is_fixed_and_round_trips():
    assert NUM_CARD_VALUE_ACTIONS == 524
    texts = [card_value_to_string(a) for a in (0, 51, 52, 107, 108, 523)]
    assert texts == ["trail AC", "trail KS", "capture with AC", "capture with AS as 14", "build 1 with AC",
                     "build 14 with KS"]
    assert CV_BUILD_ID[card_id("2C"), 9] == string_to_card_value("build 9 with 2C on 7D")
    e = raw_env(action_encoding="card_value")
    e.reset(seed=0)
    for a in range(NUM_CARD_VALUE_ACTIONS):
        text = e.action_to_string(a)
        assert e.string_to_action(text) == a == string_to_card_value(text.replace("C", "♣").replace("S", "♠"))


@pytest.mark.parametrize(("preset", "n"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_moves_action_strings_round_trip(preset, n):
    rnd = random.Random(1)
    e = raw_env(rules=preset, num_players=n)
    for seed in range(30 if preset == "classic" else 10):
        e.reset(seed=seed)
        for _ in range(rnd.randrange(40)):
            if e.terminations[e.agent_selection]:
                break
            nm = int(e.core_state.num_moves[0])
            for a in [*range(nm), nm, MAX_MOVES - 1]:
                text = e.action_to_string(a)
                assert e.string_to_action(text) == a, text
                assert (text == f"#{a}") == (a >= nm)
            e.step(rnd.randrange(nm))
    e.reset(seed=0)
    with pytest.raises(ActionTextError):
        e.string_to_action("capture 2C with 3H")  # not a listed move here
    with pytest.raises(ActionTextError):
        e.string_to_action("fish for a card")


def test_overflow_is_flagged_and_keeps_the_first_moves():
    # a crowded table: many builds with the 2; only the first M moves (canonical order: trails first) are listed
    hands = [["2C", "9D", "10H", "7S"], ["KD"]]
    loose = ["AH", "3C", "4D", "5H", "6C", "7D", "AS", "3S", "4H"]
    wide = _position_env("moves", hands, loose)
    n = int(wide.core_state.num_moves[0])
    narrow = _position_env("moves", hands, loose, max_moves=6)
    assert n > 6
    assert narrow.infos["player_0"]["overflow"]
    assert not wide.infos["player_0"]["overflow"]
    obs = narrow.observe("player_0")
    assert obs["action_mask"].tolist() == [1] * 6
    assert [narrow.action_to_string(i) for i in range(6)] == [wide.action_to_string(i) for i in range(6)]


# --- what an observation holds ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize(("preset", "n"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_observation_is_unchanged_when_hidden_cards_are_permuted(preset, n, encoding):
    rnd = random.Random(n)
    e = raw_env(rules=preset, num_players=n, action_encoding=encoding, with_moves=True)
    other = raw_env(rules=preset, num_players=n, action_encoding=encoding, with_moves=True)
    changed_state = 0
    for seed in range(12):
        e.reset(seed=seed)
        for _ in range(rnd.randrange(44)):
            if e.terminations[e.agent_selection]:
                break
            e.step(random_action(e.observe(e.agent_selection), rnd))
        if e.terminations[e.agent_selection]:
            continue
        pos = e.position()
        for viewer in range(n):
            agent = f"player_{viewer}"
            want = e.observe(agent)
            for _ in range(2):
                other.reset(options={"position": permute_hidden(pos, viewer, rnd, e.rules)})
                got = other.observe(agent)
                for key in ("observation", "action_mask", "moves"):
                    assert np.array_equal(got[key], want[key]), (seed, viewer, key)
                changed_state += not np.array_equal(other.state(), e.state())
    assert changed_state > 0  # the permutations did change hidden cards (the privileged state sees them)


def test_state_is_privileged_and_in_its_space():
    e = raw_env(num_players=3)
    e.reset(seed=4)
    s = e.state()
    assert e.state_space.contains(s)
    D, P = obs_size(3, 3), 3
    pos = e.position()
    for q in range(P):
        assert set(np.flatnonzero(s[D + 52 * q:D + 52 * q + 52]).tolist()) == set(pos["hands"][q])
    stock = s[D + 52 * P:D + 52 * P + 52]
    assert sorted(np.flatnonzero(stock).tolist(), key=lambda c: stock[c]) == pos["stock"]  # dealt first = smallest
    assert s[-P:].tolist() == [1.0, 0.0, 0.0]
    assert np.array_equal(s[:D], encode(e.core_state, np.zeros(1, dtype=np.int64))[0])


# --- rendering --------------------------------------------------------------------------------------------------------


def test_render_ansi_and_human(capsys):
    e = _position_env("moves", [["10D", "7S"], ["2C"]], ["3C", "5H"], builds=[(["4D", "3S"], 7, 1)],
                      render_mode="ansi")
    text = e.render()
    for part in ("hand:   player_0: 10♦ 7♠", "table:  3♣ 5♥", "builds: 7 = 4♦ 3♠ (player_1)"):
        assert part in text
    assert "2♣" not in text  # another seat's hand is never drawn
    assert "target 21" in text
    e.step(0)
    assert "last:   player_0: trail 10D" in e.render()
    h = cassino_env.env(render_mode="human")
    h.reset(seed=0)
    assert h.render() is None
    h.step(0)
    assert "to move: player_1" in capsys.readouterr().out
    with pytest.warns(UserWarning, match="render mode"):
        assert raw_env().render() is None  # no render_mode: a warning, nothing drawn


# --- the AEC env and the vector env play the same games -------------------------------------------------------------


@pytest.mark.parametrize(("episode", "reward"), [("deal", "points"), ("match", "points"), ("match", "win")])
@pytest.mark.parametrize(("preset", "n"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_aec_and_vector_envs_play_identical_games(preset, n, episode, reward):
    for seed in (0, 11):
        e = cassino_env.env(rules=preset, num_players=n, episode=episode, reward=reward, with_moves=True)
        raw = e.unwrapped
        v = CassinoVectorEnv(1, rules=preset, num_players=n, seed=seed, episode=episode, reward=reward)
        vobs, _ = v.reset()
        e.reset(seed=seed)
        rnd = random.Random(seed)
        episodes = 0
        while episodes < (4 if episode == "deal" else 1):
            for agent in e.agent_iter():
                obs, _, terminated, _, _ = e.last()
                if terminated:
                    e.step(None)
                    continue
                assert agent == f"player_{int(vobs['current_player'][0])}"
                assert np.array_equal(obs["observation"], vobs["observation"][0])
                assert np.array_equal(obs["action_mask"], vobs["action_mask"][0])
                assert np.array_equal(obs["moves"], move_features(vobs["move_kind"], vobs["move_card"],
                                                                  vobs["move_value"], vobs["move_cards"])[0])
                a = random_action(obs, rnd)
                e.step(a)
                vobs, vrew, vterm, vtrunc, _ = v.step(np.array([a]))
                assert [raw.rewards.get(f"player_{q}", 0.0) for q in range(n)] == vrew[0].tolist()
                assert bool(vterm[0]) == all(raw.terminations.values())
                assert not vtrunc[0]
            episodes += 1
            e.reset()


def test_numba_cache_guard_covers_the_package_and_given_files(tmp_path):
    """One guard (core.check_numba_cache): it hashes every source of the package (the AEC env's kernels compile in
    the core's, obs' and actions') and drops a given file's cached kernels when that file or the package changed."""
    from cassino_env.core import _cacheguard

    names = {p.relative_to(_cacheguard.PACKAGE).as_posix() for p in _cacheguard.package_sources()}
    assert {"aec.py", "obs.py", "actions.py", "cards.py", "core/_kernels.py", "core/_classic_gen.py"} <= names
    src = tmp_path / "mod.py"
    src.write_text("x = 1\n")
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    stale = cache / "mod._kernel-1.py311.nbi"
    other = cache / "other._kernel-1.py311.nbi"
    stale.write_text("x")
    other.write_text("x")
    (cache / f"mod.{_cacheguard.STAMP}").write_text("not the hash\n")
    core.check_numba_cache(src)
    assert not stale.exists()  # built from other sources: dropped
    assert other.exists()  # not mod's
    stale.write_text("x")
    core.check_numba_cache(src)
    assert stale.exists()  # the stamp now matches: kept
    src.write_text("x = 2\n")
    core.check_numba_cache(src)
    assert not stale.exists()  # the file changed: dropped
