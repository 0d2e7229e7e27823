"""Tests of the batched core (cassino_env.core): invariants over random games, hand-built positions, API contract.

Move lists are also checked against a brute-force oracle written here straight from the move specification (every
subset of table items, every declared value), on random positions with builds of every kind.
"""

from __future__ import annotations

import itertools
from functools import cache

import numpy as np
import pytest

from cassino_env import core
from cassino_env.cards import card_id, rank
from cassino_env.rules import make_rules

FULL = (1 << 52) - 1
SPADES = sum(1 << c for c in range(39, 52))
CLASSIC = make_rules("classic")


def ids(*texts: str) -> list[int]:
    return [card_id(t) for t in texts]


def popcount(a: np.ndarray) -> np.ndarray:
    return np.bitwise_count(a).astype(np.int64)


def moves_of(st, b: int = 0) -> list[tuple[int, int, int, tuple[int, ...]]]:
    return core.move_list(st, b)


def stock_masks(st) -> np.ndarray:
    pos = np.arange(52)[None, :] >= st.stock_pos[:, None].astype(np.int64)
    bits = np.left_shift(np.uint64(1), np.where(pos, st.deck, 0).astype(np.uint64))
    return np.bitwise_or.reduce(np.where(pos, bits, np.uint64(0)), axis=1)


def check_conservation(st) -> None:
    """docs/rules.md 2: each of the 52 cards is in exactly one place (stock, a hand, loose, a build, a pile)."""
    parts = [st.hand, st.loose[:, None], st.build_cards, st.captured, stock_masks(st)[:, None]]
    allm = np.concatenate(parts, axis=1)
    assert (popcount(allm).sum(axis=1) == 52).all()
    assert (np.bitwise_or.reduce(allm, axis=1) == np.uint64(FULL)).all()


def check_table(st) -> None:
    """The move table: mask equals num_moves, padding is -1, listed kinds are in canonical order."""
    mask = core.legal_mask(st)
    assert (mask.sum(axis=1) == st.num_moves).all()
    assert ((st.move_kind >= 0) == mask).all()
    kinds = np.where(mask, st.move_kind, 3)
    assert (np.diff(kinds.astype(np.int64), axis=1) >= 0).all()
    live = st.current_player >= 0
    assert (st.num_moves[live] > 0).all()
    # every listed card is in the mover's hand, every used card on the table
    P = st.num_players
    b_idx = np.arange(st.batch_size)
    hand = st.hand[b_idx, np.clip(st.current_player, 0, P - 1).astype(np.int64)]
    table = st.loose | np.bitwise_or.reduce(st.build_cards, axis=1)
    card_bits = np.left_shift(np.uint64(1), np.where(mask, st.move_card, 0).astype(np.uint64))
    assert ((card_bits & hand[:, None]) != 0)[mask].all()
    assert ((st.move_cards & ~table[:, None]) == 0)[mask].all()


# -- contract --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("preset", "players"), [("matsuda", 2), ("cicera", 4), ("bga", 2), ("bga", 6),
                                                 ("stadium", 2), ("royal", 3)])
def test_every_preset_runs(preset, players):
    """Every docs/rules.md 6 preset deals, lists moves that pass the invariants and plays whole matches."""
    rules = make_rules(preset, num_players=players)
    st = core.init(rules, np.arange(16))
    assert st.build_cards.shape[1] == (26 if rules.builds == "attach" else rules.max_value)
    rng = np.random.default_rng(3)
    for _ in range(300):
        check_table(st)
        check_conservation(st)
        assert (st.num_moves > 0).all()
        core.step(st, rng.integers(st.num_moves.astype(np.int64)))
    assert (st.match_index + st.deal_index).sum() > 0


def test_init_shapes_and_first_deal():
    st = core.init(make_rules("classic", num_players=3), np.array([5, 6, 7, 8]), max_moves=64)
    assert st.hand.shape == (4, 3) and st.hand.dtype == np.uint64
    assert st.move_kind.shape == (4, 64) and st.move_cards.dtype == np.uint64
    assert st.num_moves.dtype == np.int16 and st.overflow.dtype == np.bool_
    assert st.current_player.tolist() == [0] * 4 and st.dealer.tolist() == [2] * 4
    assert (popcount(st.hand) == 4).all() and (popcount(st.loose) == 4).all()
    for b, seed in enumerate([5, 6, 7, 8]):
        deck = core.deck_for(seed, 0, 0)
        assert sorted(deck.tolist()) == list(range(52))
        assert (st.deck[b] == deck).all()
        pos = core.position(st, b)
        # docs/rules.md 2.1: 4 to the table, then 4-card blocks from the dealer's left (seat 0 when dealer 2)
        assert pos["loose"] == sorted(deck[:4].tolist())
        assert [pos["hands"][q] for q in (0, 1, 2)] == [sorted(deck[4 + 4 * k:8 + 4 * k].tolist()) for k in range(3)]
        assert pos["stock"] == deck[16:].tolist()
    check_conservation(st)
    check_table(st)


def test_deck_for_is_a_pure_function_of_its_counters():
    a = core.deck_for(123, 0, 0)
    assert (a == core.deck_for(123, 0, 0)).all()
    decks = {tuple(core.deck_for(s, m, k)) for s in (1, 2) for m in (0, 1) for k in (0, 1, 2)}
    assert len(decks) == 12


def test_different_seeds_deal_different_games():
    st = core.init(CLASSIC, np.arange(500))
    assert len({tuple(d) for d in st.deck.tolist()}) == 500


def test_bad_action_raises_naming_the_game_and_changes_nothing():
    st = core.init(CLASSIC, np.arange(6))
    before = st.copy()
    acts = np.zeros(6, dtype=np.int64)
    acts[4] = st.num_moves[4]
    with pytest.raises(core.ActionIndexError, match="game 4"):
        core.step(st, acts)
    acts[4] = -1
    with pytest.raises(ValueError, match="game 4"):
        core.step(st, acts)
    with pytest.raises(ValueError, match="shape"):
        core.step(st, np.zeros(5, dtype=np.int64))
    with pytest.raises(ValueError, match="integer array"):
        core.step(st, np.zeros(6, dtype=np.float64))
    for name in ("_u64", "_i8", "_i16", "_i64", "_m8", "_mvc"):
        assert (getattr(st, name) == getattr(before, name)).all(), name


def test_step_result_fields():
    st = core.init(make_rules("classic", num_players=4), np.arange(3))
    r = core.step(st, np.zeros(3, dtype=np.int64))
    assert r.actor.dtype == np.int8 and r.actor.tolist() == [0, 0, 0]
    assert r.deal_points.shape == (3, 4) and r.deal_points.dtype == np.int16
    assert r.deal_items.shape == (3, 2, len(core.ITEMS))
    assert r.match_winner.tolist() == [-1, -1, -1]
    assert not r.deal_done.any() and not r.match_done.any()
    assert st.current_player.tolist() == [1, 1, 1]


# -- random play invariants ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("players", "partnerships", "games", "steps"), [
    (2, False, 1500, 160),
    (3, False, 600, 130),
    (4, True, 600, 130),
    (4, False, 300, 110),
])
def test_random_play_invariants(players, partnerships, games, steps):
    rules = make_rules("classic", num_players=players, partnerships=partnerships)
    P, S = players, rules.num_sides
    seeds = np.arange(games, dtype=np.int64) * 7 + players
    st = core.init(rules, seeds)
    rng = np.random.default_rng(players)
    totals = np.zeros((games, S), dtype=np.int64)
    prev_deal = st.deal_index.copy()
    prev_dealer = st.dealer.copy()
    deals = matches = 0
    check_conservation(st)
    check_table(st)
    for _ in range(steps):
        mover = st.current_player.copy()
        acts = (rng.random(games) * st.num_moves).astype(np.int64)
        r = core.step(st, acts)
        assert (r.actor == mover).all()
        check_conservation(st)
        check_table(st)
        d = r.deal_done
        if d.any():
            deals += int(d.sum())
            items = r.deal_items[d].astype(np.int64)
            cards, spades = r.deal_cards[d].astype(np.int64), r.deal_spades[d].astype(np.int64)
            full = cards.sum(axis=1) == 52  # someone captured in the deal, so the residue was taken
            assert full.mean() > 0.99
            cards_top = (cards == cards.max(axis=1, keepdims=True)).sum(axis=1) == 1
            spades_top = (spades == spades.max(axis=1, keepdims=True)).sum(axis=1) == 1
            assert (items[:, :, 0].sum(axis=1) == 3 * cards_top).all()
            assert (items[:, :, 1].sum(axis=1) == spades_top).all()
            assert (items[:, :, 0] == 3 * ((cards == cards.max(axis=1, keepdims=True)) & cards_top[:, None])).all()
            assert (spades[full].sum(axis=1) == 13).all()
            # docs/rules.md 2: 11 points without sweeps, less 3 for a tie for cards and 1 for a tie for spades
            fixed = items[:, :, :5].sum(axis=(1, 2))
            assert (fixed[full] == (11 - 3 * ~cards_top - 1 * ~spades_top)[full]).all()
            assert (r.deal_totals[d] == items.sum(axis=2)).all()
            side = np.arange(P) % S
            assert (r.deal_points[d] == r.deal_totals[d][:, side]).all()
            totals[d] += r.deal_totals[d]
            assert (r.match_totals[d] == totals[d]).all()
            top = totals[d].max(axis=1)
            ends = (top >= 21) & ((totals[d] == top[:, None]).sum(axis=1) == 1)
            assert (r.match_done[d] == ends).all()
            assert (r.match_winner[d][ends] == totals[d][ends].argmax(axis=1)).all()
            assert (r.match_winner[d][~ends] == -1).all()
            # auto-reset: the next deal (dealer + 1) or a new match (dealer P-1, totals 0) is already dealt
            nb = np.flatnonzero(d)
            mb, db = nb[ends], nb[~ends]
            matches += len(mb)
            assert (st.deal_index[db] == prev_deal[db] + 1).all()
            assert (st.dealer[db] == (prev_dealer[db] + 1) % P).all()
            assert (st.deal_index[mb] == 0).all() and (st.dealer[mb] == P - 1).all()
            assert (st.match_scores[mb] == 0).all()
            totals[mb] = 0
            assert (st.match_scores == totals).all()
            for b in nb[:20]:
                assert (st.deck[b] == core.deck_for(int(seeds[b]), int(st.match_index[b]),
                                                    int(st.deal_index[b]))).all()
        assert not r.deal_done[~d].any() and (r.deal_points[~d] == 0).all()
        prev_deal = st.deal_index.copy()
        prev_dealer = st.dealer.copy()
    assert deals >= games
    assert r.match_done.dtype == np.bool_


def test_matches_end_and_restart_under_random_play():
    st = core.init(CLASSIC, np.arange(64))
    rng = np.uint64(7) + np.arange(64, dtype=np.uint64)
    core.rollout(st, 48 * 12, rng)  # about 12 deals per game: most matches to 21 are over by then
    assert (st.match_index >= 1).mean() > 0.5
    check_conservation(st)
    check_table(st)


def test_seeded_determinism():
    def trajectory(seeds, seed):
        st = core.init(make_rules("classic", num_players=3), seeds)
        rng = np.random.default_rng(seed)
        out = []
        for _ in range(120):
            r = core.step(st, (rng.random(len(seeds)) * st.num_moves).astype(np.int64))
            out.append((st._u64.copy(), st._i8.copy(), st._i16.copy(), st._m8.copy(), st._mvc.copy(),
                        r.deal_points.copy()))
        return out

    seeds = np.arange(100, dtype=np.int64)
    a, b = trajectory(seeds, 1), trajectory(seeds, 1)
    assert all((x == y).all() for sa, sb in zip(a, b, strict=True) for x, y in zip(sa, sb, strict=True))
    c = trajectory(seeds + 1000, 1)
    assert not (a[0][0] == c[0][0]).all()


def test_rollout_equals_step_with_random_actions():
    seeds = np.arange(40)
    a, b = core.init(CLASSIC, seeds), core.init(CLASSIC, seeds)
    ra, rb = seeds.astype(np.uint64), seeds.astype(np.uint64)
    assert core.rollout(a, 100, ra) == 4000
    for _ in range(100):
        core.step(b, core.random_actions(b, rb))
    for name in ("_u64", "_i8", "_i16", "_i64", "_m8", "_mvc"):
        assert (getattr(a, name) == getattr(b, name)).all(), name
    assert (ra == rb).all()


def test_parallel_step_equals_serial():
    seeds = np.arange(200)
    a, b = core.init(CLASSIC, seeds), core.init(CLASSIC, seeds)
    rng = np.random.default_rng(3)
    for _ in range(60):
        acts = (rng.random(200) * a.num_moves).astype(np.int64)
        ra = core.step(a, acts)
        rb = core.step(b, acts, parallel=True)
        assert (ra.deal_points == rb.deal_points).all()
    for name in ("_u64", "_i8", "_i16", "_i64", "_m8", "_mvc"):
        assert (getattr(a, name) == getattr(b, name)).all(), name


def test_overflow_keeps_the_first_moves_in_canonical_order():
    seeds = np.arange(300)
    big = core.init(CLASSIC, seeds, max_moves=512)
    small = core.init(CLASSIC, seeds, max_moves=3)
    rng = np.random.default_rng(5)
    seen = 0
    for _ in range(100):
        assert (small.num_moves == np.minimum(big.num_moves, 3)).all()
        assert (small.overflow == (big.num_moves > 3)).all()
        assert (small.move_kind == big.move_kind[:, :3]).all()
        assert (small.move_cards == big.move_cards[:, :3]).all()
        assert (small.move_card == big.move_card[:, :3]).all()
        assert (small.move_value == big.move_value[:, :3]).all()
        seen += int(small.overflow.sum())
        acts = (rng.random(300) * small.num_moves).astype(np.int64)
        core.step(small, acts)
        core.step(big, acts)
    assert seen > 1000


def test_overflow_never_loses_all_moves():
    st = core.init(CLASSIC, np.arange(50), max_moves=1)
    rng = np.uint64(1) + np.arange(50, dtype=np.uint64)
    core.rollout(st, 300, rng)
    assert (st.num_moves == 1).all()


# -- hand-built positions (docs/rules.md 7 worked cases, classic) ------------------------------------------------------


def fp(hands, loose=(), builds=(), to_move=0, prune=False, **kw):
    hands = [ids(*h) for h in hands]
    builds = [(ids(*c), v, o) for c, v, o in builds]
    return core.from_position(CLASSIC, hands, ids(*loose), builds, to_move=to_move, prune=prune, **kw)


def mv(kind, card, value, *cards):
    return (kind, card_id(card), value, tuple(sorted(ids(*cards))))


def test_worked_case_1_groups():
    st = fp([["8S"], ["2C"]], ["AH", "2D", "3C", "5D", "6H", "8C"])
    caps = [m for m in moves_of(st) if m[0] == core.CAPTURE]
    assert mv(1, "8S", 8, "8C", "6H", "2D", "5D", "3C") in caps
    assert mv(1, "8S", 8, "8C", "5D", "2D", "AH") in caps
    assert all(len(m[3]) < 6 for m in caps)
    pruned = fp([["8S"], ["2C"]], ["AH", "2D", "3C", "5D", "6H", "8C"], prune=True)
    caps_p = [m for m in moves_of(pruned) if m[0] == core.CAPTURE]
    # pruning keeps exactly the two maximal captures, in canonical order (AH=26 sorts after 2D=14)
    assert caps_p == [mv(1, "8S", 8, "8C", "6H", "2D", "5D", "3C"), mv(1, "8S", 8, "8C", "5D", "2D", "AH")]
    for m in caps_p:
        assert not any(set(m[3]) < set(o[3]) for o in caps)


def test_worked_case_2_sweep():
    st = fp([["8S"], ["2C"]], ["5H", "3C", "6D", "2H"])
    i = moves_of(st).index(mv(1, "8S", 8, "5H", "3C", "6D", "2H"))
    core.step(st, np.array([i]))
    assert st.sweeps[0].tolist() == [1, 0]
    assert st.loose[0] == 0 and st.last_capturer[0] == 0


def test_worked_case_3_courts_pair_one():
    st = fp([["KS"], ["2C"]], ["KH", "KC", "10D", "3D"])
    caps = [m for m in moves_of(st) if m[0] == core.CAPTURE]
    assert caps == [mv(1, "KS", 13, "KC"), mv(1, "KS", 13, "KH")]


def test_worked_case_4_build_needs_the_value_in_hand():
    st = fp([["2C", "8D"], ["3C"]], ["7H"])
    assert not any(m[0] == core.BUILD and m[2] == 9 for m in moves_of(st))


def test_worked_case_5_raise():
    st = fp([["3C", "8D", "10H"], ["5C"]], ["2S"], [(["AH", "4D"], 5, 1)])
    builds = [m for m in moves_of(st) if m[0] == core.BUILD]
    assert mv(2, "3C", 8, "AH", "4D") in builds
    assert mv(2, "3C", 10, "AH", "4D", "2S") not in builds


def test_worked_case_6_multiple_build_is_not_raised():
    st = fp([["AC", "9D", "10H"], ["5C"]], [], [(["5H", "4D", "9S"], 9, 1)])
    ms = moves_of(st)
    assert [m for m in ms if m[0] == core.BUILD] == []
    assert [m for m in ms if m[0] == core.CAPTURE] == [mv(1, "9D", 9, "5H", "4D", "9S")]


def test_worked_case_7_owner_may_not_trail():
    st = fp([["7C", "KD", "2H"], ["5C"]], ["10S"], [(["3H", "4D"], 7, 0)])
    assert not any(m[0] == core.TRAIL for m in moves_of(st))


def test_worked_case_8_owner_obligation():
    st = fp([["7C", "9D"], ["5C"]], ["5S", "2H"], [(["4H", "3D"], 7, 0)])
    ms = moves_of(st)
    assert mv(1, "7C", 7, "5S", "2H") not in ms
    assert mv(1, "7C", 7, "5S", "2H", "4H", "3D") in ms
    assert not any(m[1] == card_id("7C") and m[0] == core.BUILD for m in ms)


def test_worked_case_9_last_play_residue():
    st = fp([["10C"], []], ["4H", "6D", "KS"], last_capturer=1)
    i = moves_of(st).index(mv(1, "10C", 10, "4H", "6D"))
    r = core.step(st, np.array([i]))
    assert r.deal_done[0] and st.current_player[0] == -1
    assert sorted(core.position(st, 0)["captured"][0]) == sorted(ids("10C", "4H", "6D", "KS"))
    assert st.sweeps[0].tolist() == [0, 0] and st.loose[0] == 0


def test_worked_case_10_scoring():
    # 27 cards / 6 spades / 10D / 2 aces vs 25 cards / 7 spades / 2S / 2 aces, no sweeps: 7 and 4 points.
    spades = list(range(39, 52))
    side0 = spades[2:8] + [card_id("10D"), card_id("AC"), card_id("AD")]
    side1 = [39, 40] + spades[8:] + [card_id("AH")]
    rest = [c for c in range(52) if c not in side0 + side1]
    side0 += rest[:27 - len(side0)]
    side1 += rest[27 - 9:]
    assert len(side0) == 27 and len(side1) == 25 and len(set(side0 + side1)) == 52
    st = core.from_position(CLASSIC, [[side0[0]], []], [], [], captured=[side0[1:], side1], last_capturer=0)
    t = core.tally(st)
    assert t["totals"][0].tolist() == [7, 4]  # 26 cards and 5 spades vs 25 and 7: the 27th card is still in hand
    r = core.step(st, np.array([0]))  # trail it: the deal ends, the residue goes to seat 0
    assert r.deal_totals[0].tolist() == [7, 4]
    assert r.deal_items[0, 0].tolist() == [3, 0, 2, 0, 2, 0, 0, 0, 0]
    assert r.deal_items[0, 1].tolist() == [0, 1, 0, 1, 2, 0, 0, 0, 0]
    assert core.tally(st)["totals"][0].tolist() == [7, 4]


def test_worked_cases_file(worked_cases):
    """The classic cases of tests/data/worked_cases.json, against the unpruned core."""
    checked = 0
    for case in worked_cases:
        pos = case["position"]
        if pos["rules"] != "classic" or not ("legal" in case or "illegal" in case):
            continue
        st = core.from_position(
            CLASSIC, [ids(*h) for h in pos["hands"]], ids(*pos["loose"]),
            [(ids(*b["cards"]), b["value"], b["owner"]) for b in pos["builds"]], to_move=pos["to_move"],
            dealer=pos["dealer"], prune=False)
        listed = {(m[0], m[1], m[2] if m[0] == core.BUILD else 0, frozenset(m[3])) for m in moves_of(st)}

        def key(m):
            kind = {"trail": 0, "capture": 1, "build": 2}[m["action"]]
            return (kind, card_id(m["card"]), m.get("value", 0) if kind == 2 else 0,
                    frozenset(ids(*(m.get("take") or m.get("use") or []))))

        for m in case.get("legal", []):
            assert key(m) in listed, (case["id"], m)
        for m in case.get("illegal", []):
            assert key(m) not in listed, (case["id"], m)
        checked += 1
    assert checked >= 7


# -- match end and the tie rule --------------------------------------------------------------------------------------


def last_play(match_scores, auto_reset, seed=0):
    """Seat 0 captures the last card; seat 0 takes 40 cards (cards, 2 spades ... ) vs seat 1's 10."""
    pile0 = [c for c in range(52) if c not in (card_id("5C"), card_id("5D"))][:40]
    pile1 = [c for c in range(52) if c not in pile0 + ids("5C", "5D")]
    return core.from_position(CLASSIC, [ids("5C"), []], ids("5D"), captured=[pile0, pile1], last_capturer=1,
                              match_scores=match_scores, auto_reset=auto_reset, seed=seed)


def test_match_ends_when_a_side_reaches_the_target():
    st = last_play([15, 10], auto_reset=False)
    pts = core.tally(st)["totals"][0]
    r = core.step(st, np.array([st.num_moves[0] - 1]))  # the capture 5C x 5D
    assert r.deal_done[0] and r.match_done[0] and r.match_winner[0] == 0
    assert r.match_totals[0].tolist() == [15 + r.deal_totals[0, 0], 10 + r.deal_totals[0, 1]]
    assert r.deal_totals[0, 0] >= pts[0] and st.match_over[0]


def test_tied_highest_totals_play_another_deal():
    st = last_play([0, 0], auto_reset=False)
    probe = st.copy()
    r = core.step(probe, np.array([probe.num_moves[0] - 1]))
    d0, d1 = (int(x) for x in r.deal_totals[0])
    st = last_play([30 - d0, 30 - d1], auto_reset=False)  # both reach 30: tie
    r = core.step(st, np.array([st.num_moves[0] - 1]))
    assert r.deal_done[0] and not r.match_done[0] and r.match_winner[0] == -1
    assert r.match_totals[0].tolist() == [30, 30] and not st.match_over[0]
    core.advance(st)  # the next deal of the same match: the dealer moves on to seat 0, so seat 1 plays first
    assert st.current_player[0] == 1 and st.deal_index[0] == 1 and st.match_index[0] == 0
    assert st.match_scores[0].tolist() == [30, 30]
    check_conservation(st)


def test_auto_reset_starts_a_new_match():
    st = last_play([20, 3], auto_reset=True, seed=99)
    r = core.step(st, np.array([st.num_moves[0] - 1]))
    assert r.match_done[0] and r.match_winner[0] == 0
    assert st.match_index[0] == 1 and st.deal_index[0] == 0 and st.dealer[0] == 1
    assert st.match_scores[0].tolist() == [0, 0] and st.current_player[0] == 0
    assert (st.deck[0] == core.deck_for(99, 1, 0)).all()
    check_conservation(st)
    check_table(st)


def test_auto_reset_starts_the_next_deal():
    st = last_play([0, 0], auto_reset=True, seed=5)
    r = core.step(st, np.array([st.num_moves[0] - 1]))
    assert r.deal_done[0] and not r.match_done[0]
    assert st.deal_index[0] == 1 and st.dealer[0] == 0 and st.current_player[0] == 1
    assert st.match_scores[0].tolist() == r.match_totals[0].tolist()
    assert (st.deck[0] == core.deck_for(5, 0, 1)).all()


def test_refresh_moves_after_writing_a_position():
    st = core.init(CLASSIC, np.arange(4))
    other = core.from_position(CLASSIC, [ids("8S", "3D"), ids("2C")], ids("5H", "3C", "6D", "2H"), prune=True)
    for name in ("hand", "loose", "build_cards", "build_owner", "current_player"):
        getattr(st, name)[2] = getattr(other, name)[0]
    core.refresh_moves(st)
    assert moves_of(st, 2) == moves_of(other, 0)
    assert moves_of(st, 1) == moves_of(core.init(CLASSIC, np.arange(4)), 1)


def test_from_position_rejects_bad_positions():
    with pytest.raises(ValueError, match="hands"):
        core.from_position(CLASSIC, [[0, 1]])
    with pytest.raises(ValueError, match="loose"):
        core.from_position(CLASSIC, [[0], [1]], [0])
    with pytest.raises(ValueError, match="value 7"):
        core.from_position(CLASSIC, [[0], [1]], [], [(ids("3C", "4C"), 7, 0), (ids("3D", "4D"), 7, 1)])
    with pytest.raises(ValueError, match="owner"):
        core.from_position(CLASSIC, [[0], [1]], [], [(ids("3C", "4C"), 7, 5)])


# -- brute-force oracle on random positions --------------------------------------------------------------------------


def value(c: int) -> int | None:
    return rank(c) if rank(c) <= 10 else None


@cache
def splits(vals: tuple[int, ...], v: int) -> bool:
    """True when the multiset ``vals`` splits into groups each summing to ``v`` (the empty multiset does)."""
    if not vals:
        return True
    first, rest = vals[0], vals[1:]
    for r in range(len(rest) + 1):
        for idx in itertools.combinations(range(len(rest)), r):
            if first + sum(rest[i] for i in idx) == v:
                left = tuple(x for i, x in enumerate(rest) if i not in idx)
                if splits(left, v):
                    return True
    return False


def brute_moves(hands, loose, builds, p, prune):
    """The move specification, literally: every subset of table items, every value (builds: (cards, value, owner))."""
    hand = sorted(hands[p])
    own = [b for b in builds if b[2] == p]

    def keeps(c, used, new_value=None):  # docs/rules.md 4.4 owner obligation
        left = [x for x in hand if x != c]
        need = [b[1] for b in own if not (b[0] & used)] + ([new_value] if new_value else [])
        return all(any(value(x) == v for x in left) for v in need)

    loose_items = [(value(c), frozenset([c]), None) for c in sorted(loose) if value(c)]
    build_items = [(b[1], b[0], b) for b in builds]
    out = set()
    if not own:
        out |= {(0, c, 0, ()) for c in hand}
    for c in hand:
        v = value(c)
        if v is None:
            out |= {(1, c, rank(c), (k,)) for k in loose if rank(k) == rank(c) and keeps(c, {k})}
            continue
        items = loose_items + [it for it in build_items if it[0] == v]
        for r in range(1, len(items) + 1):
            for X in itertools.combinations(items, r):
                if splits(tuple(it[0] for it in X if it[2] is None), v):
                    cards = frozenset().union(*(it[1] for it in X))
                    if keeps(c, cards):
                        out.add((1, c, v, tuple(sorted(cards))))
    caps = [m for m in out if m[0] == 1]
    if prune:
        out -= {m for m in caps if any(m[1] == o[1] and set(m[3]) < set(o[3]) for o in caps)}
    items = loose_items + build_items
    for r in range(1, len(items) + 1):
        for U in itertools.combinations(items, r):
            cards = frozenset().union(*(it[1] for it in U))
            inside = [it[2] for it in U if it[2] is not None]
            lv = tuple(it[0] for it in U if it[2] is None)
            for c in hand:
                a = value(c)
                if a is None:
                    continue
                for v in range(1, 11):
                    if not any(value(x) == v for x in hand if x != c):
                        continue  # rule 2
                    if any(b[1] == v and b not in inside for b in builds):
                        continue  # rule 6
                    raised = [b for b in inside if b[1] != v]
                    if len(raised) > 1:
                        continue  # rule 7
                    if raised:
                        bld = raised[0]
                        if sum(rank(x) for x in bld[0]) != bld[1] or bld[1] + a != v:
                            continue  # rules 4 and 5
                        ok = splits(lv, v)
                    else:
                        ok = splits((a, *lv), v)
                    if ok and keeps(c, cards, v):
                        out.add((2, c, v, tuple(sorted(cards))))
    if not out:  # docs/rules.md 4.4 blocks every move (an owner without a capturing card): any trail (docs/presets.md)
        out = {(0, c, 0, ()) for c in hand}
    return sorted(out, key=lambda m: (m[0], m[1], m[3], m[2]))


def random_position(rng: np.random.Generator, P: int = 2):
    avail = list(rng.permutation(52))

    def take_value(x):
        for i, c in enumerate(avail):
            if rank(c) == x:
                return avail.pop(i)
        return None

    builds = []
    for v in rng.choice(np.arange(2, 11), size=rng.integers(0, 4), replace=False):
        v = int(v)
        x = int(rng.integers(1, v))
        cards = [take_value(x), take_value(v - x)]
        if rng.random() < 0.35:
            cards.append(take_value(v))
        if None in cards:
            continue
        builds.append((frozenset(int(c) for c in cards), v, int(rng.integers(P))))
    hands = []
    for q in range(P):
        h = [int(avail.pop()) for _ in range(int(rng.integers(1, 5)))]
        for b in builds:
            if b[2] == q and rng.random() < 0.8 and len(h) < 5:
                c = take_value(b[1])
                if c is not None:
                    h.append(int(c))
        hands.append(h)
    loose = [int(avail.pop()) for _ in range(int(rng.integers(0, 8)))]
    return hands, loose, builds, int(rng.integers(P))


@pytest.mark.parametrize(("prune", "slow"), [(False, False), (True, False), (False, True), (True, True)])
def test_move_lists_equal_brute_force_on_random_positions(prune, slow):
    rng = np.random.default_rng(11 + prune + 2 * slow)
    n_builds = 0
    for _ in range(120):
        hands, loose, builds, p = random_position(rng)
        st = core.from_position(CLASSIC, hands, loose, [(sorted(c), v, o) for c, v, o in builds], to_move=p,
                                prune=prune, max_moves=4096, _slow_path=slow)
        got = moves_of(st)
        want = brute_moves(hands, loose, builds, p, prune)
        assert got == want, (hands, loose, builds, p)
        n_builds += sum(1 for m in got if m[0] == core.BUILD)
    assert n_builds > 100


def test_large_table_grows_scratch_and_stays_exact():
    # 20 loose cards valued A-5 and a hand of small cards: thousands of builds, scratch regrowth, numpy sort paths
    loose = [c for c in range(52) if rank(c) <= 5][:20]
    hand = ids("6C", "7D", "9H", "10S")
    st = core.from_position(CLASSIC, [hand, ids("KD")], loose, prune=True, max_moves=32767)
    assert st.overflow[0]
    ms = moves_of(st)
    keys = [(m[0], m[1], m[3], m[2]) for m in ms]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    caps = [m for m in ms if m[0] == core.CAPTURE]
    assert caps  # captures come before the builds that overflow
    for m in caps[:50]:
        assert sum(rank(c) for c in m[3]) % m[2] == 0


@pytest.mark.parametrize("prune", [True, False])
def test_crowded_tables_both_generators_agree(prune):
    """Trail-heavy play crowds the table; the output-sensitive generator must list what the fast one lists."""
    B = 150
    seeds = np.arange(B) + 31
    fast = core.init(CLASSIC, seeds, prune=prune, max_moves=128)
    slow = core.init(CLASSIC, seeds, prune=prune, max_moves=128, _slow_path=True)
    rng = np.random.default_rng(8)
    crowded = 0
    for _ in range(96):
        for name in ("_m8", "_mvc", "_i16", "_i8"):
            assert (getattr(fast, name) == getattr(slow, name)).all(), name
        trails = (fast.move_kind == core.TRAIL).sum(axis=1)
        acts = np.where((rng.random(B) < 0.8) & (trails > 0), (rng.random(B) * np.maximum(trails, 1)).astype(int),
                        (rng.random(B) * fast.num_moves).astype(int))
        crowded += int((popcount(fast.loose) >= 16).sum())
        core.step(fast, acts)
        core.step(slow, acts)
    assert crowded > 500


@pytest.mark.parametrize(("courts", "pruned"), [(11, True), (12, False)])
@pytest.mark.parametrize("slow", [False, True])
def test_pruning_applies_up_to_prune_max_loose_cards(courts: int, pruned: bool, slow: bool):
    """5H on a table with 5C, 5D, eleven numerals above 5 and some courts: on 24 loose cards the single fives
    (inside the capture of both) are pruned; on 25 every capture is listed, as the reference's prune_dominated
    says with the table's size (docs/presets.md: the bound that keeps crowded tables fast)."""
    from cassino_env.reference import PRUNE_MAX_LOOSE, Game, prune_dominated

    numerals = ids("5C", "5D", "10C", "10D", "10H", "10S", "9C", "9D", "9H", "9S", "8C", "8D", "8H")
    loose = numerals + [c for c in range(52) if rank(c) > 10][:courts]
    assert (len(loose) <= PRUNE_MAX_LOOSE) == pruned
    hands = [ids("5H"), ids("2C")]
    st = core.from_position(CLASSIC, hands, loose, prune=True, max_moves=64, _slow_path=slow)
    caps = sorted(tuple(m[3]) for m in moves_of(st) if m[0] == core.CAPTURE)
    both = tuple(sorted(ids("5C", "5D")))
    assert caps == ([both] if pruned else sorted([both, tuple(ids("5C")), tuple(ids("5D"))]))
    g = Game(CLASSIC, hands=[set(h) for h in hands], loose=set(loose), to_move=0)
    ref = sorted(tuple(sorted(m.cards)) for m in prune_dominated(g.legal_moves(), len(g.loose))
                 if m.kind == core.CAPTURE)
    assert ref == caps


@pytest.mark.parametrize("preset", ["bga", "royal"])
def test_trailing_to_a_crowded_table_of_numeric_courts_stays_fast(preset: str):
    """Both seats trail whenever they can (bga and royal: courts have values, aces count 14 in bga): tables of 40 and
    more loose cards. Finding the maximal captures there once took over a minute a step; past PRUNE_MAX_LOOSE the
    captures are listed unpruned, and every step stays well under a second."""
    import time

    st = core.init(make_rules(preset), np.arange(8) + 7, max_moves=512)
    worst, most = 0.0, 0
    for _ in range(44):
        acts = np.array([int(np.flatnonzero(st.move_kind[b, :st.num_moves[b]] == core.TRAIL)[0])
                         if (st.move_kind[b, :st.num_moves[b]] == core.TRAIL).any() else 0 for b in range(8)])
        t = time.perf_counter()
        core.step(st, acts)
        worst = max(worst, time.perf_counter() - t)
        most = max(most, max(bin(int(x)).count("1") for x in st.loose))
    assert most >= 36 and worst < 2.0


def test_always_trailing_fills_the_table_and_stays_fast():
    """Action 0 is a trail whenever trailing is allowed: the whole deal ends on a table of up to 50 cards."""
    import time

    for players in (2, 4):
        st = core.init(make_rules("classic", num_players=players), np.arange(6) + 100)
        t0 = time.perf_counter()
        worst = 0.0
        for _ in range(48):
            t = time.perf_counter()
            core.step(st, np.zeros(6, dtype=np.int64))
            worst = max(worst, time.perf_counter() - t)
            check_conservation(st)
            check_table(st)
        assert worst < 5.0 and time.perf_counter() - t0 < 20.0
