"""The observation encoding (cassino_env.obs): layout, content on known positions (classic, royal's numeric courts
and 14-builds, stadium's side-by-side builds, cicera's 12-card hands and in-play points), hidden information and
bounds for every preset and player count, move rows."""

from __future__ import annotations

import random

import numpy as np
import pytest
from conftest import PRESET_IDS, PRESET_PLAYERS, permute_hidden

from cassino_env import core
from cassino_env.cards import card_id
from cassino_env.obs import (
    AT,
    BLOCKS,
    MOVE_FEATURES,
    encode,
    encoder_params,
    fill_move_rows,
    layout_table,
    move_features,
    obs_high,
    obs_layout,
    obs_size,
    public_view,
)
from cassino_env.rules import make_rules


def _random_states(rules, games: int, seed: int) -> list[core.State]:
    """One-game states after a random number (0..47) of random moves each, deal not over."""
    st = core.init(rules, seed + np.arange(games, dtype=np.int64), auto_reset=False)
    rng = np.arange(games, dtype=np.uint64) + np.uint64(seed)
    stop = np.random.default_rng(seed).integers(0, 52 - rules.table_cards, games)
    out = []
    for k in range(52 - rules.table_cards):
        for b in np.flatnonzero(stop == k):
            out.append(core.from_position(rules, **core.position(st, int(b)), auto_reset=False))
        core.step(st, core.random_actions(st, rng))
    return out


@pytest.mark.parametrize(("P", "S"), [(2, 2), (3, 3), (4, 2), (6, 3), (6, 6)])
def test_layout_is_contiguous(P, S):
    layout = obs_layout(P, S)
    start = 0
    for _name, (a, n) in layout.items():
        assert a == start
        start += n
    # the one pin of D: a new block changes it on purpose (and should bump cassino_env.version.ENV_NAME)
    assert start == obs_size(P, S) == 290 + 71 * P + 57 * S
    assert layout["builds"][1] == 14 * (P + 1)
    assert layout["in_play"][1] == P


def test_docstring_tables_are_the_block_list():
    """The index table in obs' and aec's docstrings is generated from BLOCKS: one row per block, in order."""
    import cassino_env.aec
    import cassino_env.obs

    table = layout_table()
    rows = [line.split("|")[1].strip().strip("`") for line in table.splitlines()[2:]]
    assert rows == [b.name for b in BLOCKS] == list(obs_layout(2, 2))
    for doc in (cassino_env.obs.__doc__, cassino_env.aec.__doc__):
        assert table in doc
        assert "{obs_" not in doc  # every placeholder filled
    assert f"D = {obs_size(2, 2)};" in cassino_env.aec.__doc__


@pytest.mark.parametrize(("preset", "n"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_encoder_offsets_follow_the_block_list(preset, n):
    """The kernel reads every block's start from encoder_params, built from BLOCKS: no offset is typed twice."""
    rules = make_rules(preset, num_players=n)
    params = encoder_params(rules)
    for name, (start, _) in obs_layout(n, rules.num_sides).items():
        assert params[getattr(AT, name)] == start, name
    assert params[AT.P] == n and params[AT.S] == rules.num_sides and params[AT.hand_size] == rules.hand_size
    high = obs_high(n, rules.num_sides)
    for block in BLOCKS:
        a, length = obs_layout(n, rules.num_sides)[block.name]
        assert length == block.length(n, rules.num_sides) and (high[a:a + length] == np.float32(block.high)).all()


def test_encoding_of_a_known_position():
    # 3 players; viewer seat 1. Table: loose 3C 5D; build 9 = 4C 5C owned by seat 2; seat 0 captured 2S,
    # seat 2 captured AS 10D; 7H was just trailed; dealer seat 0; 12 cards left in the stock.
    rules = make_rules("classic", num_players=3)
    ids = [card_id(c) for c in ("3C", "5D", "4C", "5C", "2S", "AS", "10D", "7H")]
    c3, c5d, c4, c5c, c2s, cas, c10d, c7h = ids
    hands = [[card_id("KD")], [card_id("9H"), card_id("JC")], [card_id("9S")]]
    stock = [c for c in range(52) if c not in ids and all(c not in h for h in hands)][:12]
    st = core.from_position(rules, hands=hands, loose=[c3, c5d, c7h], builds=[([c4, c5c], 9, 2)],
                            captured=[[c2s], [], [cas, c10d]], to_move=1, dealer=0, stock=stock,
                            last_trail=c7h, sweeps=[0, 0, 1], match_scores=[3, 7, 0])
    row = encode(st, np.array([1]))[0]
    L = obs_layout(3, 3)

    def block(name):
        a, n = L[name]
        return row[a:a + n]

    assert set(np.flatnonzero(block("hand"))) == {card_id("9H"), card_id("JC")}
    assert set(np.flatnonzero(block("loose"))) == {c3, c5d, c7h}
    owned = block("build_owned_by").reshape(3, 52)
    assert set(np.flatnonzero(owned[1])) == {c4, c5c}  # seat 2 is one seat after the viewer (seat 1)
    assert not owned[0].any()
    assert not owned[2].any()
    assert block("build_value")[c4] == pytest.approx(9 / 14)
    cap = block("captured_by").reshape(3, 52)
    assert np.flatnonzero(cap[2]).tolist() == [c2s]  # seat 0 is relative side 2 for viewer 1
    assert set(np.flatnonzero(cap[1])) == {cas, c10d}
    visible = {card_id("9H"), card_id("JC"), c3, c5d, c7h, c4, c5c, c2s, cas, c10d}
    assert set(np.flatnonzero(block("unseen"))) == set(range(52)) - visible
    assert np.flatnonzero(block("last_trail")).tolist() == [c7h]
    builds = block("builds").reshape(14, 4)
    assert builds[8].tolist() == [1, 0, 1, 0]  # a build of 9, owned by relative seat 1
    assert builds.sum() == 2
    assert block("hand_sizes").tolist() == pytest.approx([2 / 4, 1 / 4, 1 / 4])
    assert block("captured_count").tolist() == pytest.approx([0, 2 / 52, 1 / 52])
    assert block("spades_count").tolist() == pytest.approx([0, 1 / 13, 1 / 13])
    assert block("sweeps").tolist() == pytest.approx([0, 0.25, 0])
    assert not block("in_play").any()  # classic has no in-play points
    assert block("match_scores").tolist() == pytest.approx([7 / 21, 0, 3 / 21])
    assert block("seat_from_dealer").tolist() == [0, 1, 0]
    rounds = (52 - 12 - 4) // 12
    assert block("progress").tolist() == pytest.approx([12 / 52, rounds / 4, (52 - 12 - 4 - 4) / 52])


def test_encoding_of_royal_and_stadium_builds():
    # royal: numeric courts, ace high. Seat 1 owns a build of 14 (KD + AC) and seat 0 a build of 12 (QH);
    # a loose JS. Values are the declared ones (not slot indices): 14/14 and 12/14.
    rules = make_rules("royal")
    st = core.from_position(rules, hands=[[card_id("5C"), card_id("QC")], [card_id("AH"), card_id("QS")]],
                            loose=[card_id("JS")], builds=[([card_id("KD"), card_id("AC")], 14, 1),
                                                           ([card_id("10C"), card_id("2D")], 12, 0)], to_move=0)
    row = encode(st, np.array([0]))[0]
    L = obs_layout(2, 2)

    def block(name):
        a, n = L[name]
        return row[a:a + n]

    assert block("build_value")[card_id("KD")] == pytest.approx(1.0)
    assert block("build_value")[card_id("10C")] == pytest.approx(12 / 14)
    builds = block("builds").reshape(14, 3)
    assert builds[13].tolist() == [1, 0, 1]  # a build of 14, owned by relative seat 1
    assert builds[11].tolist() == [1, 1, 0]  # a build of 12, the viewer's
    assert builds.sum() == 4
    # stadium: attach builds of equal value stand side by side (two builds of 6, one per seat)
    rules = make_rules("stadium")
    st = core.from_position(rules, hands=[[card_id("6C"), card_id("9D")], [card_id("6H"), card_id("9S")]],
                            builds=[([card_id("4C"), card_id("2C")], 6, 0), ([card_id("4D"), card_id("2D")], 6, 1)],
                            to_move=0)
    row = encode(st, np.array([0]))[0]
    a, n = L["builds"]
    builds = row[a:a + n].reshape(14, 3)
    assert builds[5].tolist() == [1, 1, 1]  # value 6: two owners marked
    assert builds.sum() == 3
    owned = row[L["build_owned_by"][0]:L["build_owned_by"][0] + 104].reshape(2, 52)
    assert set(np.flatnonzero(owned[0])) == {card_id("4C"), card_id("2C")}
    assert set(np.flatnonzero(owned[1])) == {card_id("4D"), card_id("2D")}


def test_encoding_of_cicera_hands_and_in_play_points():
    rules = make_rules("cicera")
    assert rules.hand_size == 12
    st = core.init(rules, np.arange(4))
    L = obs_layout(4, 2)
    x = encode(st, st.current_player)
    a, n = L["hand_sizes"]
    assert (x[:, a:a + n] == 1.0).all()  # twelve cards each, normalised by the preset's hand size
    a, n = L["progress"]
    assert x[:, a + 1].tolist() == [1.0] * 4  # the one round of the deal is dealt
    assert x[:, a].tolist() == [0.0] * 4  # no stock
    # in-play points per relative seat / 4, as the core counts them
    st = core.from_position(rules, hands=[[card_id("7H")], [card_id("2C")], [card_id("3C")], [card_id("4C")]],
                            loose=[card_id("7C")], to_move=0, in_play=[1, 0, 5, 2])
    row = encode(st, np.array([1]))[0]
    a, n = L["in_play"]
    assert row[a:a + n].tolist() == pytest.approx([0, 5 / 4, 2 / 4, 1 / 4])  # seats 1, 2, 3, 0 from seat 1


@pytest.mark.parametrize(("preset", "n"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_encoding_and_public_view_ignore_hidden_cards(preset, n):
    rules = make_rules(preset, num_players=n)
    rnd = random.Random(n)
    changed = 0
    for st in _random_states(rules, 40, seed=n):
        pos = core.position(st, 0)
        for viewer in range(n):
            v = np.array([viewer])
            want, view = encode(st, v), public_view(st, v)
            new = permute_hidden(pos, viewer, rnd, rules)
            changed += new["hands"] != pos["hands"]
            other = core.from_position(rules, **new, auto_reset=False)
            assert np.array_equal(encode(other, v), want)
            got = public_view(other, v)
            assert got.keys() == view.keys()
            for key in view:
                assert np.array_equal(got[key], view[key]), key
    assert changed > 20 * n  # the other hands really were dealt anew


@pytest.mark.parametrize(("preset", "n"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_encoding_stays_in_the_env_bounds(preset, n):
    rules = make_rules(preset, num_players=n)
    high = obs_high(n, rules.num_sides)
    st = core.init(rules, np.arange(64), auto_reset=True)
    rng = np.arange(64, dtype=np.uint64)
    a_ip, _ = obs_layout(n, rules.num_sides)["in_play"]
    a_bv, _ = obs_layout(n, rules.num_sides)["build_value"]
    seen_in_play = 0
    for _ in range(300):
        for viewer in range(n):
            x = encode(st, np.full(64, viewer))
            assert (x >= 0).all()
            assert (x <= high).all()
            # in-play points of relative seat r = seat (viewer + r) % n, / 4
            rel = (viewer + np.arange(n)) % n
            assert np.array_equal(x[:, a_ip:a_ip + n] * 4, st.in_play[:, rel].astype(np.float32))
            assert (x[:, a_bv:a_bv + 52] * 14 <= rules.max_value + 1e-4).all()
        seen_in_play += int(st.in_play.any())
        core.step(st, core.random_actions(st, rng))
    assert (seen_in_play > 0) == rules.in_play_bonuses


def test_public_view_counts_and_unseen():
    st = core.init(make_rules("classic", num_players=4), np.arange(16))
    view = public_view(st)
    bits = (st.hand[..., None] >> np.arange(52, dtype=np.uint64)) & np.uint64(1)
    assert np.array_equal(view["hand_sizes"], bits.sum(axis=2))
    assert view["hand_sizes"].dtype == np.int8
    me = st.current_player.astype(np.int64)
    assert np.array_equal(view["hand"], st.hand[np.arange(16), me])
    assert not (view["unseen"] & view["hand"]).any()
    assert not (view["unseen"] & view["loose"]).any()


def test_fill_move_rows_equals_move_features():
    rules = make_rules("classic", num_players=2)
    st = core.init(rules, np.arange(32), max_moves=64)
    rng = np.arange(32, dtype=np.uint64)
    for _ in range(60):
        feats = move_features(st.move_kind, st.move_card, st.move_value, st.move_cards)
        assert feats.shape == (32, 64, MOVE_FEATURES)
        for b in range(0, 32, 7):
            n = int(st.num_moves[b])
            out = np.full((64, MOVE_FEATURES), 99, dtype=np.int8)
            to_move = np.where(np.arange(64) < n, np.arange(64), -1).astype(np.int32)
            fill_move_rows(st.move_kind[b], st.move_card[b], st.move_value[b], st.move_cards[b], to_move, out)
            assert np.array_equal(out, feats[b])  # padding rows included: (-1, -1, 0, ...)
            rev = to_move[::-1].copy()  # any action -> move map
            fill_move_rows(st.move_kind[b], st.move_card[b], st.move_value[b], st.move_cards[b], rev, out)
            pad = np.zeros(MOVE_FEATURES, dtype=np.int8)
            pad[:2] = -1
            assert np.array_equal(out, np.where((rev >= 0)[:, None], feats[b][np.maximum(rev, 0)], pad))
        core.step(st, core.random_actions(st, rng))
    assert (feats[:, :, 3] == feats[:, :, 4:].sum(axis=2)).all()


@pytest.mark.parametrize(("preset", "n"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_last_capturer_unseen_by_rank_and_most_decided(preset, n):
    """The v1 blocks against a plain numpy reading of the state, after every move of 64 random deals."""
    rules = make_rules(preset, num_players=n)
    P, S = rules.num_players, rules.num_sides
    lay = obs_layout(P, S)
    st = core.init(rules, np.arange(64, dtype=np.int64) + 5, auto_reset=False)
    rng = np.arange(64, dtype=np.uint64) + np.uint64(99)
    spades = np.uint64(((1 << 13) - 1) << 39)
    seen_capturer = seen_decided = False
    for _ in range(52 - rules.table_cards):
        viewer = st.current_player.astype(np.int64)
        obs = encode(st, viewer)
        unseen = obs[:, slice(lay["unseen"][0], lay["unseen"][0] + 52)]
        a, k = lay["unseen_by_rank"]
        np.testing.assert_allclose(obs[:, a:a + k], unseen.reshape(-1, 4, 13).sum(axis=1) / 4)
        a, k = lay["last_capturer"]
        want = np.zeros((64, P), dtype=np.float32)
        has = st.last_capturer >= 0
        want[np.flatnonzero(has), ((st.last_capturer.astype(np.int64) - viewer) % P)[has]] = 1.0
        np.testing.assert_array_equal(obs[:, a:a + k], want)
        seen_capturer |= bool(has.any())
        side_cards = np.zeros((64, S), dtype=np.int64)
        side_spades = np.zeros((64, S), dtype=np.int64)
        for q in range(P):
            side_cards[:, q % S] += np.bitwise_count(st.captured[:, q])
            side_spades[:, q % S] += np.bitwise_count(st.captured[:, q] & spades)
        a, k = lay["most_decided"]
        for b in range(64):
            for s in range(S):
                rs = (s - viewer[b] % S) % S
                others = [t for t in range(S) if t != s]
                cards = side_cards[b, s] > max(side_cards[b, t] + 52 - side_cards[b].sum() for t in others)
                spd = side_spades[b, s] > max(side_spades[b, t] + 13 - side_spades[b].sum() for t in others)
                assert obs[b, a + 2 * rs] == float(cards) and obs[b, a + 2 * rs + 1] == float(spd)
                seen_decided |= bool(cards)
        core.step(st, core.random_actions(st, rng))
    assert seen_capturer and seen_decided
