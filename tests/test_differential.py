"""Differential test: the batched core against the reference engine, move by move, on random deals.

Core and reference play the same decks (``core.deck_for``) in lockstep; at every step the core's (pruned) move list
must equal ``prune_dominated(reference.legal_moves())`` in the same order, the positions must agree, and at the end
of each deal the residue and the deal's tally must agree. Moves are chosen at random among the core's list.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from conftest import SWEEP, sweep_count

from cassino_env import core
from cassino_env.rules import make_rules

pytestmark = pytest.mark.skipif(importlib.util.find_spec("cassino_env.reference") is None,
                                reason="cassino_env.reference is not there yet")

ITEM_NAMES = core.ITEMS


def _ref_moves(g, prune: bool):
    from cassino_env.reference import prune_dominated

    moves = g.legal_moves()
    if prune:
        moves = prune_dominated(moves, len(g.loose))
    return [(m.kind, m.card, m.value, tuple(m.cards)) for m in moves]


def _ref_position(g) -> dict:
    return {
        "hands": [sorted(h) for h in g.hands],
        "loose": sorted(g.loose),
        "builds": sorted((sorted(b.cards), b.value, b.owner) for b in g.builds),
        "to_move": g.to_move,
        "dealer": g.dealer,
        "stock": list(g.stock),
        "captured": [sorted(c) for c in g.captured],
        "sweeps": list(g.sweeps),
        "in_play": list(g.bonus_points),
        "last_capturer": g.last_capturer,
        "last_trail": g.last_trail,
        "match_scores": list(g.match_scores),
    }


def _core_position(st, b: int) -> dict:
    pos = core.position(st, b)
    pos["builds"] = sorted((cards, v, o) for cards, v, o in pos["builds"])
    return pos


def _play(rules, seeds: np.ndarray, prune: bool, rng: np.random.Generator, trail_bias: float = 0.0,
          slow: bool = False, general: bool = False) -> int:
    """Play one deal per seed in lockstep; return the number of compared steps.

    Moves are uniform among the core's list, except that with probability ``trail_bias`` a trail is played when
    there is one (crowded tables: many groups, long move lists). ``slow`` makes the core list every move with its
    output-sensitive generator (the one crowded tables use); ``general`` makes it use the general generator even
    for classic switches.
    """
    from cassino_env.reference import Game, Move

    P, S = rules.num_players, rules.num_sides
    st = core.init(rules, seeds, prune=prune, auto_reset=False, max_moves=1024, _slow_path=slow,
                   _general_path=general)
    games = [Game.new_deal(rules, deck=[int(c) for c in core.deck_for(int(s), 0, 0)], dealer=P - 1,
                           match_scores=[0] * S) for s in seeds]
    B = len(seeds)
    compared = 0
    live = np.ones(B, dtype=bool)
    while live.any():
        actions = np.zeros(B, dtype=np.int64)
        chosen = {}
        for b in np.flatnonzero(live):
            g = games[b]
            got = core.move_list(st, b)
            want = _ref_moves(g, prune)
            # overflow policy: the first M moves in canonical order
            assert bool(st.overflow[b]) == (len(want) > st.max_moves)
            assert got == want[:st.max_moves], f"seed {seeds[b]}: move lists differ at {_ref_position(g)}"
            assert _core_position(st, b) == _ref_position(g), f"seed {seeds[b]}: positions differ"
            trails = sum(1 for m in got if m[0] == core.TRAIL)
            if trails and rng.random() < trail_bias:
                actions[b] = rng.integers(trails)
            else:
                actions[b] = rng.integers(len(got))
            chosen[b] = got[actions[b]]
            compared += 1
        res = core.step(st, actions)
        for b, (kind, card, value, cards) in chosen.items():
            g = games[b]
            g.apply(Move(kind, card, value, cards))
            assert bool(res.deal_done[b]) == g.is_deal_over()
            if g.is_deal_over():
                live[b] = False
                tally = g.score_deal()
                end = _core_position(st, b)
                # the core adds a scored deal to its match totals at once; the reference leaves that to its caller
                assert end.pop("match_scores") == [x + y for x, y in zip(g.match_scores, tally["totals"], strict=True)]
                ref = _ref_position(g)
                del ref["match_scores"]
                assert end == ref, f"seed {seeds[b]}: end positions differ"
                for s in range(S):
                    assert res.deal_items[b, s].tolist() == [tally["items"][s].get(k, 0) for k in ITEM_NAMES], \
                        f"seed {seeds[b]}: tallies differ"
                    assert res.deal_totals[b, s] == tally["totals"][s]
    return compared


@pytest.mark.parametrize(("num_players", "partnerships", "prune", "trail_bias", "slow", "games"), [
    (2, False, True, 0.0, False, 900),
    (2, False, False, 0.0, False, 300),
    (2, False, True, 0.3, False, 200),
    (2, False, False, 0.3, False, 100),
    (3, False, True, 0.0, False, 400),
    (3, False, False, 0.3, False, 100),
    (4, True, True, 0.0, False, 300),
    (4, True, False, 0.3, False, 100),
    (4, False, True, 0.2, False, 200),
    (2, False, True, 0.3, True, 150),
    (2, False, False, 0.3, True, 100),
    (4, True, True, 0.2, True, 100),
])
@pytest.mark.parametrize("share", SWEEP)
def test_core_matches_reference(num_players, partnerships, prune, trail_bias, slow, games, share):
    rules = make_rules("classic", num_players=num_players, partnerships=partnerships)
    games = sweep_count(games, share)
    seeds = np.arange(games, dtype=np.int64) + 1000 * num_players + 7 * int(prune) + int(100 * trail_bias) + 50 * slow
    rng = np.random.default_rng(num_players * 10 + int(prune) + int(100 * trail_bias) + 1000 * slow)
    assert _play(rules, seeds, prune, rng, trail_bias, slow) > 0


#: docs/rules.md 6 presets with every player count, and the deals per count: at least 1,000 deals per preset.
PRESET_RUNS = [("matsuda", 2, 1000), ("cicera", 4, 1000), ("bga", 2, 400), ("bga", 3, 200), ("bga", 4, 200),
               ("bga", 6, 200), ("stadium", 2, 1000), ("royal", 2, 500), ("royal", 3, 250), ("royal", 4, 250)]


@pytest.mark.parametrize(("preset", "num_players", "games"), PRESET_RUNS,
                         ids=[f"{p}-{n}p" for p, n, _ in PRESET_RUNS])
@pytest.mark.parametrize("share", SWEEP)
def test_presets_match_reference(preset, num_players, games, share):
    """Every preset: core and reference agree move by move (pruned lists) over whole random deals."""
    rules = make_rules(preset, num_players=num_players)
    games = sweep_count(games, share)
    seeds = np.arange(games, dtype=np.int64) + 50_000 + 1000 * num_players + 17 * len(preset)
    rng = np.random.default_rng(num_players + 31 * len(preset))
    assert _play(rules, seeds, True, rng, trail_bias=0.2) > 0


@pytest.mark.parametrize(("preset", "num_players", "prune"), [
    ("matsuda", 2, True), ("matsuda", 2, False), ("cicera", 4, True), ("cicera", 4, False), ("bga", 3, True),
    ("bga", 2, False), ("stadium", 2, True), ("stadium", 2, False), ("royal", 2, True), ("royal", 3, False),
    ("classic", 2, True)])
@pytest.mark.parametrize("share", SWEEP)
def test_presets_crowded_path_matches_reference(preset, num_players, prune, share):
    """The general generator's crowded-table path (forced on every table here) lists the same moves."""
    rules = make_rules(preset, num_players=num_players)
    offset = 90_000 + 1000 * num_players + 17 * len(preset) + 7 * prune
    seeds = np.arange(sweep_count(120, share), dtype=np.int64) + offset
    rng = np.random.default_rng(11 + num_players + 31 * len(preset) + prune)
    assert _play(rules, seeds, prune, rng, trail_bias=0.4, slow=True, general=True) > 0


@pytest.mark.parametrize(("preset", "num_players"), [("matsuda", 2), ("cicera", 4), ("bga", 3), ("stadium", 2),
                                                     ("royal", 2), ("classic", 2), ("classic", 4)])
@pytest.mark.parametrize("share", SWEEP)
def test_presets_unpruned_match_reference(preset, num_players, share):
    """The same without pruning (the JSON oracle's full lists); classic here runs the general generator."""
    rules = make_rules(preset, num_players=num_players)
    seeds = np.arange(sweep_count(150, share), dtype=np.int64) + 70_000 + 1000 * num_players + 17 * len(preset)
    rng = np.random.default_rng(7 + num_players + 31 * len(preset))
    assert _play(rules, seeds, False, rng, trail_bias=0.2, general=True) > 0


@pytest.mark.parametrize(("num_players", "prune", "slow"), [(2, True, False), (2, False, False), (3, True, False),
                                                            (4, False, False), (2, True, True), (2, False, True)])
@pytest.mark.parametrize("share", SWEEP)
def test_random_positions_match_reference(num_players, prune, slow, share):
    """Hand-built positions with builds of every kind: same moves, and the same position after each move."""

    rules = make_rules("classic", num_players=num_players)
    rng = np.random.default_rng(100 * num_players + 10 * prune + slow)
    _check_random_positions(rules, rng, sweep_count(400, share), prune, slow)


def _check_random_positions(rules, rng: np.random.Generator, n: int, prune: bool, slow: bool = False) -> None:
    """n random positions (:func:`_random_preset_position`): same moves in both engines, and the same position (in-play
    points too) after one random listed move."""
    from cassino_env.reference import Build, Game, Move

    P = rules.num_players
    for _ in range(n):
        hands, loose, builds, p, last_trail = _random_preset_position(rng, rules)
        st = core.from_position(rules, hands, loose, builds, to_move=p, prune=prune, max_moves=4096,
                                _slow_path=slow, last_trail=last_trail)
        g = Game(rules=rules, hands=[set(h) for h in hands], loose=set(loose),
                 builds=[Build(frozenset(c), v, o) for c, v, o in builds], to_move=p, dealer=(p - 1) % P,
                 last_trail=last_trail)
        got = core.move_list(st, 0)
        assert got == _ref_moves(g, prune), (hands, loose, builds, p)
        if got:
            a = int(rng.integers(len(got)))
            core.step(st, np.array([a]))
            g.apply(Move(*got[a][:3], got[a][3]))
            ref = _ref_position(g)
            mine = _core_position(st, 0)
            if g.is_deal_over():
                del ref["match_scores"], mine["match_scores"]
            assert mine == ref, (hands, loose, builds, p, got[a])


def _random_preset_position(rng: np.random.Generator, rules):
    """Random hands, loose cards and builds for any rule set: builds of every value up to ``max_value`` (several of
    one value with ``attach``; none with ``builds=none``), single and multiple, any owner, owners usually holding a
    card that captures them; a random last trail (Cicera's pairing point)."""
    P = rules.num_players
    numeric = rules.court_values == "numeric"
    top = 13 if numeric else 10
    avail = [int(c) for c in rng.permutation(52)]

    def take_value(x: int) -> int | None:
        for i, c in enumerate(avail):
            if c % 13 + 1 == x:
                return avail.pop(i)
        return None

    builds = []
    if rules.builds != "none":
        used_values: set[int] = set()
        for _ in range(int(rng.integers(0, 4))):
            v = int(rng.integers(2, rules.max_value + 1))
            if rules.builds != "attach" and v in used_values:
                continue
            x = int(rng.integers(max(1, v - top), min(v - 1, top) + 1))
            cards = [take_value(x), take_value(v - x)]
            if rng.random() < 0.3 and v <= top:
                cards.append(take_value(v))
            if None in cards:
                continue
            owner = int(rng.integers(P))
            if rules.builds == "reservation" and any(o == owner for _, _, o in builds):
                avail.extend(cards)  # a player owns at most one reservation (docs/rules.md 4.4)
                continue
            used_values.add(v)
            builds.append((sorted(cards), v, owner))
    hands = []
    for q in range(P):
        h = [avail.pop() for _ in range(int(rng.integers(1, 5)))]
        for _cards, v, owner in builds:
            if owner == q and rng.random() < 0.85:
                c = take_value(1 if v == 14 else v)
                if c is not None:
                    h.append(c)
        hands.append(h)
    loose = [avail.pop() for _ in range(int(rng.integers(0, 9)))]
    last_trail = loose[int(rng.integers(len(loose)))] if loose and rng.random() < 0.5 else None
    return hands, loose, builds, int(rng.integers(P)), last_trail


@pytest.mark.parametrize(("preset", "num_players", "prune"), [
    ("matsuda", 2, True), ("matsuda", 2, False), ("cicera", 4, True), ("cicera", 4, False), ("bga", 2, True),
    ("bga", 3, False), ("bga", 6, True), ("stadium", 2, True), ("stadium", 2, False), ("royal", 2, True),
    ("royal", 4, False)])
@pytest.mark.parametrize("share", SWEEP)
def test_random_preset_positions_match_reference(preset, num_players, prune, share):
    """Hand-built positions of every preset: same moves, and the same position (in-play points too) after a move."""

    rules = make_rules(preset, num_players=num_players)
    rng = np.random.default_rng(1000 + 100 * num_players + 10 * prune + len(preset))
    _check_random_positions(rules, rng, sweep_count(300, share), prune)


def test_stuck_owner_may_trail_in_both_engines():
    """Royal: seat 0's one ace covers its builds of 1 and 14, so 4.4 bars every capture and trail; any trail is then
    legal (decision of docs/presets.md)."""
    from cassino_env.cards import card_id as cid
    from cassino_env.reference import Build, Game

    rules = make_rules("royal", num_players=2)
    builds = [([cid("AD"), cid("AS")], 1, 0), ([cid("7C"), cid("4D"), cid("3S")], 14, 0)]
    hands = [[cid("AC")], [cid("8S")]]
    loose = [cid("5C"), cid("JD")]
    st = core.from_position(rules, hands, loose, builds, to_move=0)
    g = Game(rules=rules, hands=[set(h) for h in hands], loose=set(loose),
             builds=[Build(frozenset(c), v, o) for c, v, o in builds], to_move=0, dealer=1)
    assert core.move_list(st, 0) == _ref_moves(g, True) == [(core.TRAIL, cid("AC"), 0, ())]


#: Switch mixes no preset has, so that every value of every docs/rules.md 3 switch meets the differential test.
OVERRIDE_RUNS = [
    ("cicera", {"capture_mode": "groups", "court_pair_take": "all"}),
    ("cicera", {"hand_size": 6}),
    ("classic", {"ace_high": True, "sweep_on_last_play": False, "residue_to": "last_player"}),
    ("classic", {"raise_with_table_cards": True, "raise_own_build": False}),
    ("classic", {"capture_mode": "one_group", "owner_rule": "resolve_next_turn"}),
    ("stadium", {"raise_own_build": True, "owner_rule": "no_trail", "ace_high": True}),
    ("matsuda", {"raise_own_build": False, "scoring": "bga"}),
    ("royal", {"builds": "reservation", "scoring": "cicera", "in_play_bonuses": True}),
]


@pytest.mark.parametrize(("preset", "overrides"), OVERRIDE_RUNS,
                         ids=[f"{p}-" + "-".join(f"{k}={v}" for k, v in o.items()) for p, o in OVERRIDE_RUNS])
@pytest.mark.parametrize("prune", [True, False])
@pytest.mark.parametrize("share", SWEEP)
def test_switch_mixes_match_reference(preset, overrides, prune, share):
    """Rule sets built from overrides: core and reference agree move by move over whole deals."""
    rules = make_rules(preset, **overrides)
    seeds = np.arange(sweep_count(80, share), dtype=np.int64) + 120_000 + 97 * len(str(overrides)) + prune
    rng = np.random.default_rng(len(str(overrides)) + prune)
    assert _play(rules, seeds, prune, rng, trail_bias=0.2) > 0
