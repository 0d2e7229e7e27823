"""Preset-specific behaviour of the environments (AEC and vector), rendering and ``cassino play``: what the generic
parametrized tests of test_aec.py / test_vector.py cannot see -- partnership rewards with 4 and 6 players, Cicera's
12-card hands and in-play points, royal/bga aces captured as 14 and numeric courts, side-by-side attach builds,
overflow flags, and the text a person reads."""

from __future__ import annotations

import io
import random

import numpy as np
import pytest
from conftest import PRESET_IDS, PRESET_PLAYERS, random_action

import cassino_env
from cassino_env import core
from cassino_env.actions import CV_ACE_HIGH0, card_value_id
from cassino_env.aec import raw_env
from cassino_env.cards import card_id
from cassino_env.obs import obs_layout
from cassino_env.render import render_text
from cassino_env.rules import make_rules
from cassino_env.vector import CassinoVectorEnv
from train.play import _deal_report, draw, play_session


def ids(*texts: str) -> list[int]:
    return [card_id(t) for t in texts]


# --- partnerships -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("preset", "n"), [("cicera", 4), ("bga", 4), ("bga", 6), ("classic", 4), ("royal", 4)])
def test_partners_get_their_sides_reward_and_sides_are_zero_sum(preset, n):
    e = cassino_env.env(rules=preset, num_players=n, episode="match")
    raw = e.unwrapped
    S = raw.rules.num_sides
    assert S == n // 2
    assert raw.rules.sides == tuple((p, p + S) for p in range(S))
    rnd = random.Random(n)
    for seed in range(2):
        e.reset(seed=seed)
        deals = 0
        for _agent in e.agent_iter():
            obs, _, terminated, _, _ = e.last()
            if terminated:
                e.step(None)
                continue
            st = raw.core_state
            before = (int(st.match_index[0]), int(st.deal_index[0]))
            e.step(random_action(obs, rnd))
            if raw.last_result is not None and (st.current_player[0] < 0 or before != (
                    int(st.match_index[0]), int(st.deal_index[0]))):
                deals += 1
                r = np.array([raw.rewards[f"player_{q}"] for q in range(n)])
                totals = raw.last_result.deal_totals[0].astype(np.float64)
                for q in range(n):
                    side = q % S
                    assert r[q] == pytest.approx(totals[side] - (totals.sum() - totals[side]) / (S - 1))
                    assert r[q] == r[(q + S) % n]  # the partner's reward
                assert r.sum() == pytest.approx(0.0)
        assert deals >= 1


def test_bga_ties_for_most_share_the_points_and_rewards_stay_zero_sum():
    # bga scoring (docs/rules.md 5.2): a tie for most cards gives 2 to each tied side. Find such deals in random play.
    env = CassinoVectorEnv(256, "bga", num_players=2, seed=0, with_view=False)
    env.reset()
    rng = (np.arange(256, dtype=np.uint64) + np.uint64(7)) * np.uint64(0x9E3779B97F4A7C15)
    tied = 0
    for _ in range(200):
        _, rewards, _, _, info = env.step(core.random_actions(env.state, rng))
        res = info["result"]
        for b in np.flatnonzero(res.deal_done):
            cards = res.deal_cards[b]
            if cards[0] == cards[1]:
                tied += 1
                assert res.deal_items[b, :, core.ITEMS.index("cards")].tolist() == [2, 2]
            assert rewards[b].sum() == pytest.approx(0.0)
    assert tied > 0


# --- observations and actions of particular presets ---------------------------------------------------------------


def test_cicera_observation_hand_sizes_and_in_play_points_in_the_aec_env():
    e = raw_env(rules="cicera")
    e.reset(seed=3)
    L = obs_layout(4, 2)
    a, n = L["hand_sizes"]
    assert e.observe("player_0")["observation"][a:a + n].tolist() == [1.0] * 4  # 12 of 12
    rnd = random.Random(0)
    a_ip, _ = L["in_play"]
    seen = 0
    while not e.terminations[e.agent_selection]:
        e.step(random_action(e.observe(e.agent_selection), rnd))
        if e.terminations[e.agent_selection]:
            break
        me = e.agent_name_mapping[e.agent_selection]
        x = e.observe(e.agent_selection)["observation"]
        want = e.core_state.in_play[0, (me + np.arange(4)) % 4] / 4.0
        assert np.allclose(x[a_ip:a_ip + 4], want)
        seen += int(want.any())
    assert seen > 0
    items = dict(zip(core.ITEMS, e.last_result.deal_items[0].T.tolist(), strict=True))
    assert items["aces"] == [0, 0]  # aces score nothing in cicera (docs/rules.md 5.3)


@pytest.mark.parametrize("preset", ["royal", "bga"])
def test_an_ace_captures_as_14_in_both_encodings(preset):
    hands = [ids("AS", "3D"), ids("2C")]
    pos = {"hands": hands, "loose": ids("10H", "4C", "KD"), "to_move": 0}
    e = raw_env(rules=preset, action_encoding="card_value", with_moves=True)
    e.reset(options={"position": pos})
    a = card_value_id(core.CAPTURE, card_id("AS"), 14)
    assert a == CV_ACE_HIGH0 + 3
    obs = e.observe("player_0")
    assert obs["action_mask"][a] == 1
    assert obs["moves"][a, :4].tolist() == [core.CAPTURE, card_id("AS"), 14, 2]
    assert e.action_to_string(a) == "capture with AS as 14"
    m = raw_env(rules=preset)
    m.reset(options={"position": pos})
    i = m.string_to_action("capture 10H 4C with AS as 14")
    assert m.action_to_string(i) == "capture 4C 10H with AS as 14"
    e.step(a)
    assert set(e.position()["captured"][0]) == set(ids("AS", "10H", "4C"))


def test_numeric_courts_capture_sums_and_pairing_courts_do_not():
    # docs/rules.md 7 case 13 (matsuda): table 3H 3C 6D 10D, hand QS: the Q (12) may take 3+3+6.
    pos = {"hands": [ids("QS"), ids("2C")], "loose": ids("3H", "3C", "6D", "10D"), "to_move": 0}
    e = raw_env(rules="matsuda")
    e.reset(options={"position": pos})
    assert e.string_to_action("capture 3C 3H 6D with QS") >= 0
    e = raw_env(rules="classic")
    e.reset(options={"position": pos})
    with pytest.raises(cassino_env.aec.ActionTextError):
        e.string_to_action("capture 3C 3H 6D with QS")


def test_stadium_builds_of_equal_value_side_by_side_in_the_env():
    # Two builds of 6 (attach, docs/rules.md 4.3: rule 6 does not apply), one per seat: both in the position and the
    # observation; the vector env's view reads each build's value from state.build_value.
    pos = {"hands": [ids("6C", "9D"), ids("6H", "9S")], "loose": ids("KS"),
           "builds": [(ids("4C", "2C"), 6, 0), (ids("4D", "2D"), 6, 1)], "to_move": 0}
    e = raw_env(rules="stadium", render_mode="ansi")
    e.reset(options={"position": pos})
    assert sorted(v for _, v, _ in e.position()["builds"]) == [6, 6]
    text = e.render()
    assert text.count("6 = ") == 2
    assert "(player_0)" in text
    assert "(player_1)" in text


@pytest.mark.parametrize(("preset", "n"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_overflow_info_follows_the_core(preset, n):
    """With a narrow move table every preset flags overflow in info, keeps the first M moves, and plays on."""
    e = cassino_env.env(rules=preset, num_players=n, max_moves=2)
    raw = e.unwrapped
    rnd = random.Random(1)
    flagged = 0
    for seed in range(3):
        e.reset(seed=seed)
        for _agent in e.agent_iter():
            obs, _, terminated, _, info = e.last()
            if terminated:
                e.step(None)
                continue
            assert info["overflow"] == bool(raw.core_state.overflow[0])
            assert obs["action_mask"].sum() == int(raw.core_state.num_moves[0]) <= 2
            flagged += info["overflow"]
            e.step(random_action(obs, rnd))
    assert flagged > 0


# --- rendering and play -------------------------------------------------------------------------------------------


def test_render_shows_14_builds_numeric_courts_and_in_play_points():
    st = core.from_position(make_rules("royal"), hands=[ids("5C", "QC"), ids("AH", "QS")], loose=ids("JS"),
                            builds=[(ids("KD", "AC"), 14, 1), (ids("10C", "2D"), 12, 0)], to_move=0)
    text = render_text(st, viewer=0)
    assert "values: J 11 · Q 12 · K 13 · A 1, or 14 when it captures" in text
    assert "14 = A♣ K♦ (player_1)" in text
    assert "12 = 10♣ 2♦ (player_0)" in text
    assert "in-play" not in text
    classic = core.from_position(make_rules("classic"), hands=[ids("5C"), ids("AH")], loose=ids("JS"), to_move=0)
    assert "values:" not in render_text(classic)
    st = core.from_position(make_rules("cicera"), hands=[ids("7H"), ids("2C"), ids("3C"), ids("4C")],
                            loose=ids("7C"), to_move=0, in_play=[1, 0, 5, 2])
    text = render_text(st)
    assert "in-play" in text.splitlines()[5]
    assert text.splitlines()[8].split()[-1] == "5"  # player_2's in-play points
    assert "player_0+player_2" in text
    picture = draw(st, 0, "greedy")
    assert "in-play 5" in picture
    assert "you:    captured 0 (0 spades) · sweeps 0 · in-play 1" in picture
    royal = core.from_position(make_rules("royal"), hands=[ids("5C", "QC"), ids("AH", "QS")], loose=ids("JS"),
                               builds=[(ids("KD", "AC"), 14, 1)], to_move=0)
    picture = draw(royal, 0, "greedy")
    assert "values: J 11 · Q 12 · K 13" in picture
    assert "[build of 14: A♣ K♦ · seat 1's]" in picture


@pytest.mark.parametrize(("preset", "n"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_play_a_deal_of_every_preset(preset, n):
    out = io.StringIO()
    assert play_session("greedy", preset, num_players=n, seat=n - 1, seed=2, deals=1,
                        inp=io.StringIO("1\n" * 60), out=out) == 0
    text = out.getvalue()
    assert "Deal 1 is over" in text
    rules = make_rules(preset, num_players=n)
    report = text.split("Deal 1 is over. Score:")[1]
    for item in core.ITEMS:  # only the items of the preset's scoring are listed
        assert (f"  {item.replace('_', ' ')} " in report) == (item in core.items_of(rules)), item
    assert ("values:" in text) == (rules.court_values == "numeric" or rules.ace_high)
    assert ("in-play" in text) == rules.in_play_bonuses


def test_deal_report_of_cicera_lists_napula_and_in_play():
    env = CassinoVectorEnv(1, "cicera", seed=0, with_view=False)
    env.reset()
    rng = np.array([5], dtype=np.uint64)
    while True:
        _, _, _, _, info = env.step(core.random_actions(env.state, rng))
        if info["result"].deal_done[0]:
            break
    text = _deal_report(info["result"], 0, env.rules, seat=1)
    for item in ("napula", "jack of hearts", "in play", "big casino", "little casino", "sweeps"):
        assert f"  {item} " in text
    assert "aces" not in text
    assert "seat 0+seat 2" in text
    assert "you+seat 3" in text
