"""Invariants of the reference engine over thousands of random deals (docs/rules.md 2, 4.4, 5).

Every deal is dealt by ``Game.new_deal`` from a seeded ``numpy.random.Generator`` (never the global RNG) and played
out with uniformly random legal moves. At every step: each of the 52 cards is in exactly one place; builds are well
formed and their owners hold a card that captures them (docs/rules.md 4.4); the legal list is non-empty, canonically
sorted and free of duplicates; every listed move passes ``check`` and some unlisted ones fail it. At the deal's end
the points without sweeps and in-play points add up as docs/rules.md 2 and 5 say.
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from itertools import combinations

import numpy as np
import pytest
from conftest import PRESET_PLAYERS, SWEEP, preset_ids, sweep_count

from cassino_env.cards import BIG_CASINO, JACK_OF_HEARTS, LITTLE_CASINO, SPADES, card_id, is_court, rank, suit
from cassino_env.errors import IllegalMoveError
from cassino_env.reference import BUILD, CAPTURE, TRAIL, Build, Game, Move, prune_dominated
from cassino_env.rules import RuleSet, make_rules

SEED = 72_067_229
CLASSIC_DEALS = {2: 500, 3: 500, 4: 500}  # 1,500 classic deals, about 72,000 moves
OTHER_DEALS = 25  # per preset and player count, for the presets other than classic


def places(g: Game) -> list[int]:
    """Every card of the game, once per place it lies in (hands, loose, builds, piles, stock)."""
    out = [c for h in g.hands for c in h] + list(g.loose) + [c for b in g.builds for c in b.cards]
    return out + [c for pile in g.captured for c in pile] + list(g.stock)


def splits(values: list[int], v: int) -> bool:
    """True when ``values`` partition into groups each summing to ``v``."""
    if not values:
        return True
    first, rest = values[0], values[1:]

    def fill(remaining: int, pool: list[int]) -> bool:
        if remaining == 0:
            return splits(pool, v)
        return any(x <= remaining and fill(remaining - x, pool[:i] + pool[i + 1:]) for i, x in enumerate(pool))

    return first <= v and fill(v - first, rest)


def check_position(g: Game) -> None:
    """Conservation (docs/rules.md 2) and well-formed builds (docs/rules.md 1, 4.1 rule 6, 4.4) in the current
    position."""
    cards = places(g)
    assert len(cards) == 52, Counter(cards).most_common(3)
    assert set(cards) == set(range(52))
    for b in g.builds:
        assert len(b.cards) >= 2
        assert g.rules.court_values == "numeric" or not any(is_court(c) for c in b.cards)
        if g.rules.builds != "reservation":  # reservations regroup freely; their cards need only sum to k * value
            assert splits([rank(c) for c in b.cards], b.value), b
        # docs/rules.md 4.4: no move leaves a player owning a build without a card that captures it.
        assert g.can_capture(g.hands[b.owner], b.value), b
    if g.rules.builds in ("standard", "reservation"):
        values = [b.value for b in g.builds]
        assert len(values) == len(set(values)), "builds of equal value merge (docs/rules.md 4.1 rule 6)"
    if g.rules.builds == "reservation":
        owners = [b.owner for b in g.builds]
        assert len(owners) == len(set(owners)), "under reservation a player owns at most one build (docs/rules.md 4.4)"


def unlisted(g: Game, chosen: Move, listed: set[Move]) -> list[Move]:
    """A few moves near the legal list that are not in it: trails of every hand card, the chosen move less a card."""
    near = [Move(TRAIL, c) for c in g.hands[g.to_move]]
    near += [Move(chosen.kind, chosen.card, chosen.value, tuple(c for c in chosen.cards if c != k))
             for k in chosen.cards]
    return [m for m in near if m not in listed]


def check_pruning(moves: list[Move]) -> None:
    """prune_dominated drops exactly the captures strictly inside another capture by the same card (any value)."""
    pruned = prune_dominated(moves)
    it = iter(moves)
    assert all(any(m is x for x in it) for m in pruned), "pruning must keep the order"
    captures = [m for m in moves if m.kind == CAPTURE]
    for m in moves:
        dominated = m.kind == CAPTURE and any(
            o.card == m.card and set(m.cards) < set(o.cards) for o in captures)
        assert (m not in pruned) == dominated, m
    assert [m for m in moves if m.kind != CAPTURE] == [m for m in pruned if m.kind != CAPTURE]


def play_random_deal(rules: RuleSet, rng: np.random.Generator, stats: Counter) -> Game:
    """Deal and play one deal with uniformly random legal moves, checking every step; returns the finished game."""
    g = Game.new_deal(rules, rng.permutation(52), int(rng.integers(rules.num_players)))
    while not g.is_deal_over():
        check_position(g)
        assert g.hands[g.to_move], "the seat to move holds cards"
        moves = g.legal_moves()
        assert moves, "a player to move always has a legal move"
        keys = [m.sort_key() for m in moves]
        assert all(a < b for a, b in zip(keys, keys[1:], strict=False)), "canonical order, no duplicates"
        for m in moves:
            g.check(m)
        chosen = moves[int(rng.integers(len(moves)))]
        for m in unlisted(g, chosen, set(moves)):
            with pytest.raises(IllegalMoveError, match="docs/rules.md"):
                g.check(m)
        check_pruning(moves)
        stats["positions"] += 1
        stats["moves listed"] += len(moves)
        stats[("trail", "capture", "build")[chosen.kind]] += 1
        sweeps = sum(g.sweeps)
        g.apply(chosen)
        assert sum(g.sweeps) - sweeps in ((0, 1) if chosen.kind == CAPTURE else (0,)), "only a capture sweeps, once"
        stats["sweeps"] += sum(g.sweeps) - sweeps
    check_position(g)
    assert not any(g.hands)
    assert not g.stock
    assert g.legal_moves() == []
    return g


def expected_fixed_points(g: Game) -> int:
    """Points of the deal other than sweeps and in-play points, from the piles (docs/rules.md 2 conservation, 5)."""
    rules = g.rules
    piles = [set().union(*(g.captured[s] for s in side)) for side in rules.sides]
    if not any(piles):
        return 0
    ncards = [len(p) for p in piles]
    nspades = [sum(suit(c) == SPADES for c in p) for p in piles]
    tied_cards, tied_spades = ncards.count(max(ncards)), nspades.count(max(nspades))
    if rules.scoring == "standard":
        return 11 - 3 * (tied_cards > 1) - (tied_spades > 1)
    if rules.scoring == "bga":  # docs/rules.md 5.2: tied sides each score 2 for cards, 1 for spades
        cards = 3 if tied_cards == 1 else 2 * tied_cards
        return cards + tied_spades + 2 + 1 + 4
    napula = 0  # docs/rules.md 5.3: the length of the side's spade run from the ace, when it holds A-2-3 of spades
    for p in piles:
        run = next(k for k in range(14) if k == 13 or SPADES * 13 + k not in p)
        napula += run if run >= 3 else 0
    owned = sum(int(c in p) for p in piles for c in (BIG_CASINO, LITTLE_CASINO, JACK_OF_HEARTS))
    return 2 * (tied_cards == 1) + (tied_spades == 1) + owned + napula


def check_deal_end(g: Game) -> None:
    tally = g.score_deal()
    assert tally["sides"] == [list(s) for s in g.rules.sides]
    assert tally["totals"] == [sum(items.values()) for items in tally["items"]]
    extra = sum(items["sweeps"] + items.get("in_play", 0) for items in tally["items"])
    assert sum(tally["totals"]) - extra == expected_fixed_points(g), tally
    assert extra >= 0
    if g.last_capturer is not None or g.rules.residue_to == "last_player":
        assert not g.loose, "the residue is given away (docs/rules.md 2.4)"
        assert not g.builds


@pytest.mark.parametrize("num_players", sorted(CLASSIC_DEALS))
@pytest.mark.parametrize("share", SWEEP)
def test_classic_random_deals(num_players: int, share: float) -> None:
    rules = make_rules("classic", num_players)
    rng = np.random.default_rng([SEED, num_players])
    stats: Counter = Counter()
    no_tie = 0
    deals = sweep_count(CLASSIC_DEALS[num_players], share)
    for _ in range(deals):
        g = play_random_deal(rules, rng, stats)
        check_deal_end(g)
        no_tie += expected_fixed_points(g) == 11
    assert min(stats["capture"], stats["build"], stats["trail"]) > 0, stats
    assert stats["positions"] == deals * 48  # 48 cards played per deal (docs/rules.md 2)
    assert no_tie > deals // 2


OTHER = [(p, n) for p, n in PRESET_PLAYERS if p != "classic"]


@pytest.mark.parametrize(("preset", "num_players"), OTHER, ids=preset_ids(OTHER))
@pytest.mark.parametrize("share", SWEEP)
def test_other_presets_random_deals(preset: str, num_players: int, share: float) -> None:
    """The same invariants for every other preset of docs/rules.md 6 (the reference engine implements every switch)."""
    rules = make_rules(preset, num_players)
    rng = np.random.default_rng([SEED, num_players, len(preset)])
    stats: Counter = Counter()
    for _ in range(sweep_count(OTHER_DEALS, share)):
        check_deal_end(play_random_deal(rules, rng, stats))
    assert min(stats["capture"], stats["trail"]) > 0, stats
    assert bool(stats["build"]) == (rules.builds != "none"), stats


def test_prune_dominated_on_a_known_list() -> None:
    """Table A 2 3 5 6 8, hand 8 (docs/rules.md 7 case 1): only the two maximal captures and the trail survive."""
    def ids(*texts: str) -> set[int]:
        return {card_id(t) for t in texts}

    g = Game(rules=make_rules("classic"), hands=[ids("8S"), ids("2C")], loose=ids("AH", "2D", "3C", "5D", "6H", "8C"))
    moves = g.legal_moves()
    kept = prune_dominated(moves)
    assert [m.kind for m in kept] == [TRAIL, CAPTURE, CAPTURE]
    assert {frozenset(m.cards) for m in kept if m.kind == CAPTURE} == {
        frozenset(ids("8C", "6H", "2D", "5D", "3C")), frozenset(ids("8C", "5D", "2D", "AH"))}
    assert len(moves) > len(kept)
    assert all(m.kind != BUILD for m in moves)
    check_pruning(moves)


# -- an independent, brute-force reading of docs/rules.md for the classic preset ---------------------------------------
@cache
def into_groups(values: tuple[int, ...], v: int) -> bool:
    """True when the sorted ``values`` split into groups each summing to ``v`` (the empty tuple does)."""
    if not values:
        return True
    first, rest = values[0], values[1:]
    for k in range(len(rest) + 1):
        for idx in combinations(range(len(rest)), k):
            if first + sum(rest[i] for i in idx) == v:
                if into_groups(tuple(x for i, x in enumerate(rest) if i not in idx), v):
                    return True
    return False


def brute_force_moves(g: Game) -> set[Move]:
    """Every legal classic move, by trying each hand card on each set of table items against docs/rules.md literally."""
    p, hand = g.to_move, sorted(g.hands[g.to_move])

    def val(c: int) -> int | None:
        return None if is_court(c) else rank(c)  # docs/rules.md 3 court_values=none

    items: list[int | Build] = [c for c in sorted(g.loose) if val(c) is not None] + list(g.builds)
    moves = {Move(TRAIL, c) for c in hand}
    for c in hand:
        cv = val(c)
        if cv is None:  # court_pair_take=one: a court takes exactly one loose court of its rank
            moves |= {Move(CAPTURE, c, rank(c), (k,)) for k in g.loose if is_court(k) and rank(k) == rank(c)}
            continue
        held = [val(k) for k in hand if k != c]
        for n in range(1, len(items) + 1):
            for chosen in combinations(items, n):
                loose = tuple(sorted(rank(x) for x in chosen if isinstance(x, int)))
                builds = [x for x in chosen if isinstance(x, Build)]
                cards = tuple(sorted([x for x in chosen if isinstance(x, int)] + [k for b in builds for k in b.cards]))
                # Capture (docs/rules.md 1 group): builds whole and of value cv, loose numerals in groups summing to cv.
                if all(b.value == cv for b in builds) and into_groups(loose, cv):
                    moves.add(Move(CAPTURE, c, cv, cards))
                for v in range(cv, 11):  # 4.1 rule 3: v <= 10
                    if v not in held:  # rule 2
                        continue
                    if any(b.value == v and b not in builds for b in g.builds):  # rule 6
                        continue
                    raised = [b for b in builds if b.value != v]
                    if len(raised) > 1 or any(b.is_multiple for b in raised):  # rules 7 and 4
                        continue
                    if raised:  # rule 5: the raise group is exactly {B, c}; the loose cards form their own groups
                        ok = raised[0].value + cv == v and into_groups(loose, v)
                    else:  # rule 1: c alone or with some loose cards is one group; the rest split into groups of v
                        ok = any(cv + sum(loose[i] for i in idx) == v
                                 and into_groups(tuple(x for i, x in enumerate(loose) if i not in idx), v)
                                 for k in range(len(loose) + 1) for idx in combinations(range(len(loose)), k))
                    if ok:
                        moves.add(Move(BUILD, c, v, cards))
    mine = [b for b in g.builds if b.owner == p]
    legal = set()
    for m in moves:
        if m.kind == TRAIL and mine:  # 4.4 no_trail
            continue
        left = [val(k) for k in hand if k != m.card]
        owned = [b.value for b in mine if not b.cards & set(m.cards)] + ([m.value] if m.kind == BUILD else [])
        if all(v in left for v in owned):  # 4.4: never own a build without a card that captures it
            legal.add(m)
    if not legal:  # 4.4 blocks every move (an owner without a capturing card): any trail (decision of docs/presets.md)
        legal = {m for m in moves if m.kind == TRAIL}
    return legal


def random_classic_position(rng: np.random.Generator) -> Game:
    """A random classic position rich in builds: up to three of distinct values, single or multiple, any owner."""
    n = int(rng.integers(2, 5))
    deck = [int(c) for c in rng.permutation(52)]

    def take(r: int) -> int | None:
        card = next((c for c in deck if rank(c) == r), None)
        if card is not None:
            deck.remove(card)
        return card

    builds: list[Build] = []
    for v in rng.choice(np.arange(2, 11), size=int(rng.integers(0, 4)), replace=False):
        v = int(v)
        groups = []
        for _ in range(int(rng.integers(1, 3))):
            a = int(rng.integers(1, v + 1))
            groups.append([a] if a == v else [a, v - a])
        if len(groups) == 1 and len(groups[0]) == 1:
            continue  # one card is no build
        cards = [take(r) for group in groups for r in group]
        if None in cards:
            continue
        builds.append(Build(frozenset(cards), v, int(rng.integers(n))))
    loose = {deck.pop() for _ in range(int(rng.integers(0, 7)))}
    size = int(rng.integers(1, 5))
    hands = [{deck.pop() for _ in range(size)} for _ in range(n)]
    for b in builds:  # owners hold a capturing card, as in play (docs/rules.md 4.4)
        if b.value not in [rank(c) for c in hands[b.owner]] and (card := take(b.value)) is not None:
            hands[b.owner].add(card)
    return Game(rules=make_rules("classic", n), hands=hands, loose=loose, builds=builds,
                to_move=int(rng.integers(n)))


def test_classic_moves_match_a_brute_force_reading() -> None:
    """The engine's legal moves equal a brute-force enumeration of docs/rules.md 1, 3, 4.1 and 4.4 on 3,000
    positions."""
    rng = np.random.default_rng([SEED, 1])
    positions = [random_classic_position(rng) for _ in range(2000)]
    for _ in range(25):  # and positions met in random games
        n = int(rng.integers(2, 5))
        g = Game.new_deal(make_rules("classic", n), rng.permutation(52), int(rng.integers(n)))
        while not g.is_deal_over():
            if len(g.loose) + len(g.builds) <= 10:
                positions.append(g.copy())
            moves = g.legal_moves()
            g.apply(moves[int(rng.integers(len(moves)))])
    builds = 0
    for g in positions:
        builds += len(g.builds)
        assert set(g.legal_moves()) == brute_force_moves(g), g
    assert len(positions) > 3000
    assert builds > 2000
