"""The observation encoding (cassino_env.obs): layout, content on a known position, hidden information, move rows."""

from __future__ import annotations

import random

import numpy as np
import pytest

from cassino_env import core
from cassino_env.aec import _obs_high
from cassino_env.cards import card_id
from cassino_env.obs import (
    MOVE_FEATURES,
    encode,
    fill_move_rows,
    move_features,
    obs_layout,
    obs_size,
    public_view,
)
from cassino_env.rules import PRESETS, make_rules


def _supported() -> list[tuple[str, int]]:
    out = []
    for preset, (counts, _) in PRESETS.items():
        for n in counts:
            try:
                core.init(make_rules(preset, num_players=n), np.zeros(1, dtype=np.int64))
            except NotImplementedError:
                continue
            out.append((preset, n))
    return out


SUPPORTED = _supported()
IDS = [f"{p}-{n}p" for p, n in SUPPORTED]


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


@pytest.mark.parametrize(("P", "S"), [(2, 2), (3, 3), (4, 2), (6, 2), (6, 6)])
def test_layout_is_contiguous(P, S):
    layout = obs_layout(P, S)
    start = 0
    for _name, (a, n) in layout.items():
        assert a == start
        start += n
    assert start == obs_size(P, S)
    assert layout["builds"][1] == 14 * (P + 1)


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
    assert block("match_scores").tolist() == pytest.approx([7 / 21, 0, 3 / 21])
    assert block("seat_from_dealer").tolist() == [0, 1, 0]
    rounds = (52 - 12 - 4) // 12
    assert block("progress").tolist() == pytest.approx([12 / 52, rounds / 4, (52 - 12 - 4 - 4) / 52])


def _permute_hidden(pos: dict, viewer: int, rnd: random.Random) -> dict:
    """Other hands and the stock dealt anew (sizes kept, build owners keep a card of their build's value)."""
    P = len(pos["hands"])
    hidden = [c for q in range(P) if q != viewer for c in pos["hands"][q]] + list(pos["stock"])
    while True:
        rnd.shuffle(hidden)
        hands = [list(h) for h in pos["hands"]]
        k = 0
        for q in range(P):
            if q != viewer:
                hands[q] = hidden[k:k + len(pos["hands"][q])]
                k += len(pos["hands"][q])
        if all(any(c % 13 + 1 == value for c in hands[owner]) for _, value, owner in pos["builds"]):
            return {**pos, "hands": hands, "stock": hidden[k:]}


@pytest.mark.parametrize(("preset", "n"), SUPPORTED, ids=IDS)
def test_encoding_and_public_view_ignore_hidden_cards(preset, n):
    rules = make_rules(preset, num_players=n)
    rnd = random.Random(n)
    changed = 0
    for st in _random_states(rules, 40, seed=n):
        pos = core.position(st, 0)
        for viewer in range(n):
            v = np.array([viewer])
            want, view = encode(st, v), public_view(st, v)
            new = _permute_hidden(pos, viewer, rnd)
            changed += new["hands"] != pos["hands"]
            other = core.from_position(rules, **new, auto_reset=False)
            assert np.array_equal(encode(other, v), want)
            got = public_view(other, v)
            assert got.keys() == view.keys()
            for key in view:
                assert np.array_equal(got[key], view[key]), key
    assert changed > 20 * n  # the other hands really were dealt anew


@pytest.mark.parametrize(("preset", "n"), SUPPORTED, ids=IDS)
def test_encoding_stays_in_the_env_bounds(preset, n):
    rules = make_rules(preset, num_players=n)
    high = _obs_high(n, rules.num_sides)
    st = core.init(rules, np.arange(64), auto_reset=True)
    rng = np.arange(64, dtype=np.uint64)
    for _ in range(300):
        for viewer in range(n):
            x = encode(st, np.full(64, viewer))
            assert (x >= 0).all()
            assert (x <= high).all()
        core.step(st, core.random_actions(st, rng))


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
