"""Reference rules engine: one game at a time, written to be read and to be obviously right.

This module is the executable statement of docs/rules.md, every switch of section 3. It is slow on purpose: move
generation enumerates sets with plain Python sets and recursion. The batched core (:mod:`cassino_env.core`) is
tested against it move by move.

Moves
-----
A :class:`Move` is ``(kind, card, value, cards)``:

* ``kind`` — :data:`TRAIL` 0, :data:`CAPTURE` 1, :data:`BUILD` 2 (:mod:`cassino_env.cards`);
* ``card`` — id of the hand card played;
* ``value`` — the capture value (the played card's value; 14 for an ace captured high) or the declared build
  value; 0 for a trail;
* ``cards`` — sorted ids of every table card taken (capture) or used (build), loose cards and all cards of whole
  builds. Two groupings of the same cards are the same move (docs/interchange.md "Move").

The canonical order is trails, captures, builds; then played card id; then the sorted card list (a prefix first);
then value — exactly ``sorted(moves, key=Move.sort_key)``.

Decisions where docs/rules.md is silent (also in docs/presets.md):

* Dealing a deal: ``deck[:table_cards]`` face up, then ``hand_size``-card blocks to each seat starting after the
  dealer; the rest is the stock, front first.
* In a position with uneven hands (tests only), the turn passes to the next seat that holds cards.
* A round dealt from a stock too short for full hands gives out what is there, block by block.
"""

from __future__ import annotations

import functools
import heapq
import operator
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .cards import (
    BIG_CASINO,
    BUILD,
    CAPTURE,
    JACK_OF_HEARTS,
    KIND_NAMES,
    LITTLE_CASINO,
    SPADES,
    TRAIL,
    card_text,
    is_court,
    rank,
    suit,
)
from .errors import IllegalMoveError, PositionError
from .rules import RuleSet

#: Tables of at most this many items (loose cards and builds) list their moves by enumerating card sets; larger ones
#: by the output-sensitive search (measured: below it enumeration is quicker, above it the search is, by up to 7x at
#: 16 cards, and enumeration alone grows exponentially).
ENUMERATE_UP_TO = 10


@dataclass(frozen=True, order=False)
class Move:
    """One move. See the module docstring for the fields and the canonical order."""

    kind: int
    card: int
    value: int = 0
    cards: tuple[int, ...] = ()

    def sort_key(self) -> tuple[int, int, tuple[int, ...], int]:
        """Key of the canonical order (docs/interchange.md: trails, captures, builds; card; sorted card list; value)."""
        return (self.kind, self.card, self.cards, self.value)

    def __str__(self) -> str:
        name = KIND_NAMES[self.kind]
        if self.kind == TRAIL:
            return f"trail {card_text(self.card)}"
        table = " ".join(card_text(c) for c in self.cards)
        if self.kind == CAPTURE:
            ace = " as 14" if self.value == 14 else ""
            return f"{name} {table} with {card_text(self.card)}{ace}"
        return f"build {self.value} with {card_text(self.card)} on {table}"


@dataclass(frozen=True)
class Build:
    """A build on the table (docs/rules.md 1): its cards, declared ``value`` and ``owner`` seat."""

    cards: frozenset[int]
    value: int
    owner: int

    @property
    def is_multiple(self) -> bool:
        """A multiple build's cards sum to two or more times its value; its value can never change (4.1 rule 4)."""
        return sum(rank(c) for c in self.cards) > self.value


#: The learning-time pruning (:func:`prune_dominated`, the core's ``prune=True``) applies to tables of at most this many
#: loose cards; a more crowded table (reached only by play that keeps trailing) lists every capture: finding the
#: maximal captures grows exponentially with the table (one of 37 loose cards and numeric courts took about a second
#: a game in the core), listing the first captures does not.
PRUNE_MAX_LOOSE = 24


def prune_dominated(moves: Sequence[Move], loose: int = 0) -> list[Move]:
    """Drop every capture whose cards are a strict subset of another listed capture by the same played card.

    This is the learning-time pruning of the batched core (on by default there; the JSON oracle never prunes).
    Captures by one card with different values (an ace as 1 or as 14) compare too. Trails and builds are kept;
    order is kept. ``loose``: the number of loose cards on the table; above :data:`PRUNE_MAX_LOOSE` nothing is
    dropped, as in the core.
    """
    if loose > PRUNE_MAX_LOOSE:
        return list(moves)
    by_card: dict[int, list[frozenset[int]]] = {}
    for m in moves:
        if m.kind == CAPTURE:
            by_card.setdefault(m.card, []).append(frozenset(m.cards))
    out = []
    for m in moves:
        if m.kind == CAPTURE:
            s = frozenset(m.cards)
            if any(s < other for other in by_card[m.card]):
                continue
        out.append(m)
    return out


def match_winner(scores: Sequence[int], target: int) -> int | None:
    """Winning side of a match after a deal, or None (docs/rules.md 2.6).

    The match ends after a deal in which a side reaches ``target``; the highest total wins; if the highest totals
    tie, another deal is played (None).
    """
    top = max(scores)
    if top < target or list(scores).count(top) > 1:
        return None
    return list(scores).index(top)


@dataclass
class Game:
    """The state of one deal, played one move at a time (docs/rules.md 2).

    Attributes:
        rules: the rule set (any preset and switches).
        hands: per seat, the set of card ids held.
        loose: loose table card ids.
        builds: builds on the table.
        captured: per seat, captured card ids (partners are pooled only when scoring).
        sweeps: per seat, sweeps this deal.
        bonus_points: per seat, in-play points other than sweeps (Cicera; always 0 in classic).
        stock: undealt cards, front dealt first.
        to_move: seat to move, or None once the deal is over.
        dealer: the dealer's seat.
        last_capturer: seat of the last capture this deal, or None.
        last_trail: card trailed on the immediately preceding turn, or None.
        match_scores: per side, totals before this deal (points).
    """

    rules: RuleSet
    hands: list[set[int]]
    loose: set[int] = field(default_factory=set)
    builds: list[Build] = field(default_factory=list)
    captured: list[set[int]] = field(default_factory=list)
    sweeps: list[int] = field(default_factory=list)
    bonus_points: list[int] = field(default_factory=list)
    stock: list[int] = field(default_factory=list)
    to_move: int | None = 0
    dealer: int = 0
    last_capturer: int | None = None
    last_trail: int | None = None
    match_scores: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        n = self.rules.num_players
        self.captured = self.captured or [set() for _ in range(n)]
        self.sweeps = self.sweeps or [0] * n
        self.bonus_points = self.bonus_points or [0] * n
        self.match_scores = self.match_scores or [0] * self.rules.num_sides

    # -- construction ------------------------------------------------------------------------------------------------
    @classmethod
    def new_deal(cls, rules: RuleSet, deck: Sequence[int], dealer: int,
                 match_scores: Sequence[int] | None = None) -> Game:
        """Deal a new deal from a shuffled ``deck`` of 52 card ids (docs/rules.md 2.1; dealing order in module doc).

        Raises:
            PositionError: if ``deck`` is not a permutation of the 52 card ids or ``dealer`` is not a seat.
        """
        deck = [int(c) for c in deck]
        if sorted(deck) != list(range(52)):
            raise PositionError("deck: must hold each of the 52 card ids exactly once")
        n = rules.num_players
        if not 0 <= dealer < n:
            raise PositionError(f"dealer: {dealer} is not a seat 0..{n - 1}")
        t = rules.table_cards
        g = cls(rules=rules, hands=[set() for _ in range(n)], loose=set(deck[:t]), stock=deck[t:],
                dealer=dealer, to_move=None, match_scores=list(match_scores or [0] * rules.num_sides))
        g._deal_round()
        return g

    def copy(self) -> Game:
        """An independent copy (sets and lists copied; builds are immutable)."""
        return Game(rules=self.rules, hands=[set(h) for h in self.hands], loose=set(self.loose),
                    builds=list(self.builds), captured=[set(c) for c in self.captured], sweeps=list(self.sweeps),
                    bonus_points=list(self.bonus_points), stock=list(self.stock), to_move=self.to_move,
                    dealer=self.dealer, last_capturer=self.last_capturer, last_trail=self.last_trail,
                    match_scores=list(self.match_scores))

    # -- card values -------------------------------------------------------------------------------------------------
    def value(self, card: int) -> int | None:
        """Numeric value of ``card`` (docs/rules.md 1), or None for a court when ``court_values = none``."""
        if is_court(card) and self.rules.court_values == "none":
            return None
        return rank(card)

    def is_deal_over(self) -> bool:
        """True once the stock and every hand are empty (the residue has then been given away)."""
        return self.to_move is None

    # -- move generation ---------------------------------------------------------------------------------------------
    def _atoms(self) -> tuple[list[Atom], list[Atom]]:
        """Loose numerals and builds as capture atoms ``(value, cards)``; a build is one atom of its declared value."""
        loose = [(self.value(c), frozenset((c,))) for c in sorted(self.loose) if self.value(c) is not None]
        builds = [(b.value, b.cards) for b in self.builds]
        return loose, builds

    def can_capture(self, hand: Iterable[int], v: int) -> bool:
        """True when some card of ``hand`` captures value ``v`` (an ace also captures 14 under ``ace_high``)."""
        return any(self.value(c) == v or (v == 14 and self.rules.ace_high and rank(c) == 1) for c in hand)

    def _capture_sets(self, v: int) -> set[frozenset[int]]:
        """Every card set a numeral of capture value ``v`` may take (docs/rules.md 1 group; 3 ``capture_mode``)."""
        loose, _ = self._atoms()
        # A build is a group only by itself: captured whole, by exactly its value, never inside a sum (docs/rules.md 1).
        builds = [(v, b.cards) for b in self.builds if b.value == v]
        if self.rules.capture_mode == "one_group":
            return set(_groups(loose, v)) | {cards for _, cards in builds}
        return partitions([], loose + builds, v) - {frozenset()}

    def _build_sets(self, card: int, v: int) -> set[frozenset[int]]:
        """Every table card set ``card`` may build into value ``v`` (docs/rules.md 4.1-4.3; rules 1 and 4-7)."""
        p, cv, rules = self.to_move, self.value(card), self.rules
        loose, _ = self._atoms()
        out: set[frozenset[int]] = set()
        if rules.builds == "attach":
            # docs/rules.md 4.3: the card goes on exactly one item x, as value(x) + value(c) or, when equal, as
            # value(c).
            items = loose + [(b.value, b.cards) for b in self.builds
                             if b.owner != p or rules.raise_own_build]
            multiple = {b.cards for b in self.builds if b.is_multiple}
            for xv, xcards in items:
                if xv + cv == v and xcards not in multiple:
                    out.add(xcards)
                if xv == cv == v:
                    out.add(xcards)
            return out
        same = [b for b in self.builds if b.value == v]  # 4.1 rule 6: every build of value v joins
        others = [b for b in self.builds if b.value != v]
        mandatory: list[Atom] = [(cv, frozenset((card,)))]
        if rules.builds == "reservation":
            # docs/rules.md 4.2: reservations have no fixed grouping; all their cards regroup with the new ones.
            if any(b.owner == p for b in same) and not rules.raise_own_build:
                return out  # overwriting your own reservation needs raise_own_build (docs/rules.md 4.2, 4.4)
            cards_of = [(rank(c), frozenset((c,))) for b in same for c in b.cards]
            out |= {u | frozenset(c for _, cs in cards_of for c in cs)
                    for u in partitions(mandatory + cards_of, loose, v)}
            for b in others:  # rule 7 still holds: at most one reservation of another value is taken in
                if b.owner == p and not rules.raise_own_build:
                    continue
                extra = [(rank(c), frozenset((c,))) for c in b.cards]
                base = frozenset(c for _, cs in cards_of + extra for c in cs)
                out |= {u | base for u in partitions(mandatory + cards_of + extra, loose, v)}
        else:
            if any(b.owner == p for b in same) and not rules.raise_own_build:
                return out  # building on your own build (adding) needs raise_own_build (docs/rules.md 4.4)
            same_atoms = [(b.value, b.cards) for b in same]
            base = frozenset().union(*(b.cards for b in same))
            out |= {u | base for u in partitions(mandatory + same_atoms, loose, v)}
            for b in others:
                # 4.1 rule 4: a multiple build never changes value; rule 5: a raise group is exactly {B, c}
                # (plus loose cards when raise_with_table_cards); rule 7: one raise per move.
                if b.is_multiple or (b.owner == p and not rules.raise_own_build):
                    continue
                if rules.raise_with_table_cards:
                    raise_atoms: list[Atom] = [(b.value + cv, b.cards | {card})]
                elif b.value + cv == v:
                    raise_atoms = [(v, b.cards | {card})]
                else:
                    continue
                out |= {u | b.cards | base for u in partitions(raise_atoms + same_atoms, loose, v)}
        out.discard(frozenset())
        return out

    def _candidates(self) -> list[Move]:
        """All moves by the card rules, before the owner obligations of docs/rules.md 4.4."""
        p, rules = self.to_move, self.rules
        hand = sorted(self.hands[p])
        moves: list[Move] = [Move(TRAIL, c) for c in hand]
        for c in hand:
            v = self.value(c)
            if v is None:  # docs/rules.md 3 court_values=none: a court pairs courts of its rank, by court_pair_take
                matches = [k for k in sorted(self.loose) if rank(k) == rank(c)]
                if rules.court_pair_take == "one":
                    moves += [Move(CAPTURE, c, rank(c), (k,)) for k in matches]
                elif matches:
                    moves.append(Move(CAPTURE, c, rank(c), tuple(matches)))
                continue
            moves += [Move(CAPTURE, c, v, tuple(sorted(s))) for s in self._capture_sets(v)]
            if v == 1 and rules.ace_high:  # docs/rules.md 3 ace_high: a played ace may capture as 14
                moves += [Move(CAPTURE, c, 14, tuple(sorted(s))) for s in self._capture_sets(14)]
        if rules.builds != "none":
            for c in hand:
                if self.value(c) is None:  # courts are never built (docs/rules.md 3 court_values=none)
                    continue
                rest = [k for k in hand if k != c]
                for v in range(self.value(c), rules.max_value + 1):
                    if not self.can_capture(rest, v):  # docs/rules.md 4.1 rule 2: keep a card that captures v
                        continue
                    moves += [Move(BUILD, c, v, tuple(sorted(s))) for s in self._build_sets(c, v)]
        return moves

    def legal_moves(self) -> list[Move]:
        """Every distinct legal move of the player to move, exact, in canonical order; [] when the deal is over."""
        return list(self.iter_legal_moves())

    def iter_legal_moves(self) -> Iterator[Move]:
        """:meth:`legal_moves` one at a time, in canonical order, so a caller may stop at any count.

        A table of at most :data:`ENUMERATE_UP_TO` items (loose cards and builds) is answered by enumerating every
        candidate card set (:meth:`legal_moves_by_enumeration`, quickest there and bounded by the table's size); a
        larger one by :meth:`search_moves`, which finds each move in time proportional to the moves before it.
        """
        if self.to_move is None:
            return
        if len(self.loose) + len(self.builds) <= ENUMERATE_UP_TO:
            yield from self.legal_moves_by_enumeration()
        else:
            yield from self.search_moves()

    def search_moves(self) -> Iterator[Move]:
        """The legal moves in canonical order by the output-sensitive search: every branch it enters holds a move
        (see :func:`completable`), so the first k moves cost time in proportion to k on any table."""
        if self.to_move is None:
            return
        trails = [Move(TRAIL, c) for c in sorted(self.hands[self.to_move])]
        allowed = [m for m in trails if self._obligation_error(m) is None]
        yield from allowed
        others = self._nontrail_moves()
        first = next(others, None)
        if first is None and not allowed:
            yield from trails  # 4.4 blocks every move: any trail is allowed (decided here, docs/presets.md)
            return
        if first is not None:
            yield first
            yield from others

    def legal_moves_by_enumeration(self) -> list[Move]:
        """:meth:`legal_moves` as the rules state it: every candidate card set enumerated (:meth:`_candidates`),
        filtered by the 4.4 obligations, sorted. Exponential in the table's size: used for small tables, and to test
        :meth:`search_moves` against."""
        if self.to_move is None:
            return []
        moves = sorted((m for m in self._candidates() if self._obligation_error(m) is None), key=Move.sort_key)
        if not moves:  # the 4.4 obligations block every move: any trail is allowed (decided here, docs/presets.md)
            moves = [Move(TRAIL, c) for c in sorted(self.hands[self.to_move])]
        return moves

    def _nontrail_moves(self) -> Iterator[Move]:
        """Captures, then builds, by played card, each family in canonical order; every one obeys docs/rules.md 4.4."""
        p, rules = self.to_move, self.rules
        hand = sorted(self.hands[p])
        for c in hand:
            v = self.value(c)
            if v is None:  # docs/rules.md 3 court_values=none: a court pairs courts of its rank, by court_pair_take
                yield from (m for m in self._court_captures(c) if self._obligation_error(m) is None)
                continue
            streams = [self._family_moves(CAPTURE, c, v, self._capture_family(c, v))]
            if v == 1 and rules.ace_high:  # docs/rules.md 3 ace_high: a played ace may capture as 14
                streams.append(self._family_moves(CAPTURE, c, 14, self._capture_family(c, 14)))
            yield from heapq.merge(*streams, key=Move.sort_key)
        if rules.builds == "none":
            return
        for c in hand:
            cv = self.value(c)
            if cv is None:  # courts are never built (docs/rules.md 3 court_values=none)
                continue
            rest = [k for k in hand if k != c]
            streams = [self._family_moves(BUILD, c, v, self._build_family(c, v))
                       for v in range(cv, rules.max_value + 1)
                       if self.can_capture(rest, v)]  # docs/rules.md 4.1 rule 2: keep a card that captures v
            yield from heapq.merge(*streams, key=Move.sort_key)

    @staticmethod
    def _family_moves(kind: int, card: int, v: int, family: _Family | None) -> Iterator[Move]:
        if family is not None:
            for cards in family.sets():
                yield Move(kind, card, v, cards)

    def _court_captures(self, c: int) -> list[Move]:
        matches = [k for k in sorted(self.loose) if rank(k) == rank(c)]
        if self.rules.court_pair_take == "one":
            return [Move(CAPTURE, c, rank(c), (k,)) for k in matches]
        return [Move(CAPTURE, c, rank(c), tuple(matches))] if matches else []

    def _duties(self, card: int) -> tuple[frozenset[int], frozenset[int]]:
        """docs/rules.md 4.4 for a move that plays ``card``, as indices into ``builds``: the player's own builds it
        must take (no card left in hand captures them) and, under resolve_next_turn, those it must take one of."""
        p = self.to_move
        left = [c for c in self.hands[p] if c != card]
        mine = [i for i, b in enumerate(self.builds) if b.owner == p]
        required = frozenset(i for i in mine if not self.can_capture(left, self.builds[i].value))
        any_of = frozenset(mine) if self.rules.owner_rule == "resolve_next_turn" else frozenset()
        return required, any_of

    def _loose_atoms(self, top: int) -> list[tuple[tuple[int, ...], int, int]]:
        valued = [(c, self.value(c)) for c in self.loose]
        return [((c,), a, -1) for c, a in valued if a is not None and a <= top]

    def _capture_family(self, card: int, v: int) -> _Family | None:
        """The captures of value ``v`` by ``card`` that obey 4.4 (docs/rules.md 1 group, 3 capture_mode)."""
        required, any_of = self._duties(card)
        if any(self.builds[i].value != v for i in required):
            return None  # a build is captured only by its own value
        atoms = self._loose_atoms(v) + [(tuple(sorted(b.cards)), 0, i) for i, b in enumerate(self.builds)
                                        if b.value == v]
        kind = _CaptureOneGroup if self.rules.capture_mode == "one_group" else _CaptureGroups
        return kind(atoms, required, any_of, v)

    def _build_family(self, card: int, v: int) -> _Family | None:
        """The builds of value ``v`` with ``card`` that obey 4.4 (docs/rules.md 4.1-4.3, as :meth:`_build_sets`)."""
        p, cv, rules = self.to_move, self.value(card), self.rules
        required, any_of = self._duties(card)
        if any_of and not rules.raise_own_build:
            return None  # resolve_next_turn: a build move resolves an own build only with raise_own_build
        own_ok = [b.owner != p or rules.raise_own_build for b in self.builds]
        if rules.builds == "attach":  # 4.3: one item x, as value(x) + value(c) or, when equal, as value(c)
            atoms = [((c,), a, -1) for (c,), a, _ in self._loose_atoms(v) if a + cv == v or a == cv == v]
            atoms += [(tuple(sorted(b.cards)), 0, i) for i, b in enumerate(self.builds)
                      if own_ok[i] and ((b.value + cv == v and not b.is_multiple) or b.value == cv == v)]
            return _Attach(atoms, required, any_of)
        same = frozenset(i for i, b in enumerate(self.builds) if b.value == v)  # 4.1 rule 6: every build of v joins
        if any(not own_ok[i] for i in same):
            return None  # building on your own build (adding) needs raise_own_build (docs/rules.md 4.4)
        base = _counts([cv])
        if rules.builds == "reservation":  # 4.2: the reservations' cards regroup freely with the new ones
            base = _counts([cv] + [rank(c) for i in same for c in self.builds[i].cards])
        mandatory = {-1: base}
        for i, b in enumerate(self.builds):
            if i in same or not own_ok[i]:
                continue
            if rules.builds == "reservation":
                mandatory[i] = tuple(x + y for x, y in zip(base, _counts(rank(c) for c in b.cards), strict=True))
            elif b.is_multiple:
                continue  # 4.1 rule 4: a multiple build never changes value
            elif rules.raise_with_table_cards and b.value + cv <= v:
                mandatory[i] = _plus(_ZERO, b.value + cv)  # rule 5: the raise group is {B, c} plus loose cards
            elif b.value + cv == v:
                mandatory[i] = _plus(_ZERO, v)  # rule 5: the raise group is exactly {B, c}
        if required - same - set(mandatory):
            return None
        atoms = self._loose_atoms(v) + [(tuple(sorted(b.cards)), 0, i) for i, b in enumerate(self.builds)
                                        if i in same or i in mandatory]
        return _BuildGroups(atoms, required, any_of, v, same, mandatory)

    def _is_capture_set(self, v: int, cards: Sequence[int]) -> bool:
        """True when the table cards ``cards`` form groups of ``v`` (docs/rules.md 1 group, 3 capture_mode): whole
        builds of v, loose numerals split into groups summing to v; answered from value counts, not by listing."""
        used = set(cards)
        inside = [b for b in self.builds if b.cards <= used]
        values = [self.value(c) for c in used.difference(*(b.cards for b in inside))]
        if None in values or any(b.value != v for b in inside):
            return False
        if self.rules.capture_mode == "one_group":
            return (len(inside) == 1 and not values) or (not inside and sum(values) == v)
        return completable(_counts(values), _ZERO, v)

    def _is_build_set(self, card: int, v: int, cards: Sequence[int]) -> bool:
        """True when ``card`` and the table cards ``cards`` make a build of ``v`` (docs/rules.md 4.1-4.3, the sets of
        :meth:`_build_sets`), answered from value counts."""
        p, cv, rules = self.to_move, self.value(card), self.rules
        used = set(cards)
        inside = [b for b in self.builds if b.cards <= used]
        values = [self.value(c) for c in used.difference(*(b.cards for b in inside))]
        if None in values or cv is None:
            return False
        if any(b.owner == p and not rules.raise_own_build for b in inside):
            return False
        if rules.builds == "attach":
            if len(inside) == 1 and not values:
                b = inside[0]
                return (b.value + cv == v and not b.is_multiple) or b.value == cv == v
            return not inside and len(values) == 1 and (values[0] + cv == v or values[0] == cv == v)
        if any(b.value == v and b not in inside for b in self.builds):
            return False
        raised = [b for b in inside if b.value != v]
        if len(raised) > 1:
            return False
        if rules.builds == "reservation":
            need = _counts([cv] + values + [rank(c) for b in inside for c in b.cards])
        elif raised:
            b = raised[0]
            if b.is_multiple or b.value + cv > v or (b.value + cv != v and not rules.raise_with_table_cards):
                return False
            need = _counts([b.value + cv] + values)
        else:
            need = _counts([cv] + values)
        return completable(need, _ZERO, v)

    def _stuck(self) -> bool:
        """True when the docs/rules.md 4.4 obligations leave no legal move (then any trail is legal; decided here).

        It happens only where one card captures two build values: under ``ace_high`` an ace is the only card
        covering its owner's builds of 1 and of 14, so taking either build strands the other, and trailing is barred.
        """
        hand = sorted(self.hands[self.to_move])
        if any(self._obligation_error(Move(TRAIL, c)) is None for c in hand):
            return False
        return next(self._nontrail_moves(), None) is None

    def _obligation_error(self, m: Move) -> str | None:
        """The docs/rules.md 4.4 rule that ``m`` breaks, or None."""
        p = self.to_move
        used = set(m.cards)
        mine = [b for b in self.builds if b.owner == p]
        if mine and self.rules.owner_rule == "no_trail" and m.kind == TRAIL:
            return "docs/rules.md 4.4 no_trail: a player who owns a build may not trail"
        if mine and self.rules.owner_rule == "resolve_next_turn":
            touches = any(b.cards <= used for b in mine)
            if not (touches and (m.kind == CAPTURE or (m.kind == BUILD and self.rules.raise_own_build))):
                what = "capture" if not self.rules.raise_own_build else "capture or build on"
                return f"docs/rules.md 4.4 resolve_next_turn: the owner of a build must {what} one of their builds"
        left = [c for c in self.hands[p] if c != m.card]
        owned = [b.value for b in self.builds if b.owner == p and not (b.cards & used)]
        if m.kind == BUILD:
            owned.append(m.value)
        for v in owned:
            if not self.can_capture(left, v):
                return (f"docs/rules.md 4.4: the move would leave you owning a build of {v} without a card in hand "
                        "that captures it")
        return None

    # -- checking and applying ---------------------------------------------------------------------------------------
    def check(self, m: Move) -> None:
        """Raise :class:`IllegalMoveError` naming the rule if ``m`` is not legal now; return None if it is."""
        if self.to_move is None:
            raise IllegalMoveError("the deal is over: nobody is to move (docs/rules.md 2.4)")
        p = self.to_move
        if m.card not in self.hands[p]:
            raise IllegalMoveError(f"{card_text(m.card)} is not in the hand of seat {p} (docs/rules.md 2.2)")
        table = self.loose.union(*(b.cards for b in self.builds))
        missing = [c for c in m.cards if c not in table]
        if missing:
            raise IllegalMoveError(f"{card_text(missing[0])} is not on the table (docs/rules.md 2.2)")
        used = set(m.cards)
        for b in self.builds:
            if b.cards & used and not b.cards <= used:
                raise IllegalMoveError(f"build {'+'.join(card_text(c) for c in sorted(b.cards))} of {b.value} is "
                                       "taken or used only whole (docs/rules.md 1 build)")
        if m.kind == TRAIL:
            if m.cards or m.value:
                raise IllegalMoveError("a trail takes no table cards (docs/rules.md 1 trail)")
        elif not m.cards:
            raise IllegalMoveError(f"a {KIND_NAMES[m.kind]} must take or use table cards (docs/rules.md 1)")
        elif m.kind == CAPTURE:
            self._check_capture(m)
        else:
            self._check_build(m)
        reason = self._obligation_error(m)
        if reason and not (m.kind == TRAIL and self._stuck()):
            raise IllegalMoveError(reason)

    def _check_capture(self, m: Move) -> None:
        v = self.value(m.card)
        if v is None:
            matches = [k for k in self.loose if rank(k) == rank(m.card)]
            if self.rules.court_pair_take == "one":
                ok = len(m.cards) == 1 and m.cards[0] in matches
                rule = "takes exactly one loose court of its rank (docs/rules.md 3 court_pair_take=one)"
            else:
                ok = bool(matches) and set(m.cards) == set(matches)
                rule = "takes every loose court of its rank (docs/rules.md 3 court_pair_take=all)"
            if not ok or m.value != rank(m.card):
                raise IllegalMoveError(f"a court has no value (court_values=none) and {rule}; {card_text(m.card)} "
                                       f"cannot take {' '.join(card_text(c) for c in m.cards)}")
            return
        if m.value not in (v, 14 if v == 1 and self.rules.ace_high else v):
            raise IllegalMoveError(f"{card_text(m.card)} captures as {v}, not {m.value} "
                                   "(docs/rules.md 1 value, 3 ace_high)")
        for b in self.builds:
            if b.cards <= set(m.cards) and b.value != m.value:
                raise IllegalMoveError(f"a build of {b.value} is captured only by a card "
                                       "of that value (docs/rules.md 1)")
        if not self._is_capture_set(m.value, m.cards):
            what = "one group" if self.rules.capture_mode == "one_group" else "groups"
            raise IllegalMoveError(f"the cards taken do not form {what} of value {m.value}, each a loose card, loose "
                                   "numerals summing to it, or a build of it (docs/rules.md 1 group, 3 capture_mode)")

    def _check_build(self, m: Move) -> None:
        v, p, rules = m.value, self.to_move, self.rules
        if rules.builds == "none":
            raise IllegalMoveError(f"preset {rules.preset!r} has no builds (docs/rules.md 3 builds=none)")
        if self.value(m.card) is None:
            raise IllegalMoveError("a court has no value and is never built (docs/rules.md 3 court_values=none)")
        if not 1 <= v <= rules.max_value:
            raise IllegalMoveError(f"build value {v} is outside 1..{rules.max_value} (docs/rules.md 4.1 rule 3)")
        if not self.can_capture([c for c in self.hands[p] if c != m.card], v):
            raise IllegalMoveError(f"building {v} needs another card that captures {v} "
                                   "in hand (docs/rules.md 4.1 rule 2)")
        used = set(m.cards)
        inside = [b for b in self.builds if b.cards <= used]
        if rules.builds != "attach":
            for b in self.builds:
                if b.value == v and b not in inside:
                    raise IllegalMoveError(f"every build of value {v} must join a new build of {v} "
                                           "(docs/rules.md 4.1 rule 6)")
        raised = [b for b in inside if b.value != v]
        if rules.builds == "standard" and any(b.is_multiple for b in raised):
            raise IllegalMoveError("a multiple build cannot be raised (docs/rules.md 4.1 rule 4)")
        if len(raised) > 1:
            raise IllegalMoveError("at most one build is raised per move (docs/rules.md 4.1 rule 7)")
        if any(b.owner == p for b in inside) and not rules.raise_own_build:
            raise IllegalMoveError("you may not build on your own build (docs/rules.md 3 raise_own_build)")
        if (rules.builds == "standard" and raised and not rules.raise_with_table_cards
                and raised[0].value + self.value(m.card) != v):
            raise IllegalMoveError("a raised build takes only the hand card: its new value is its value plus the "
                                   "card's (docs/rules.md 4.1 rule 5, raise_with_table_cards=false)")
        if not self._is_build_set(m.card, v, m.cards):
            rule = "4.3: one item, value(x)+value(c) or a pair of equal values" if rules.builds == "attach" else \
                "4.1 rule 1"
            raise IllegalMoveError(f"the played card and the cards used do not make "
                                   f"a build of {v} (docs/rules.md {rule})")

    def in_play_points(self, m: Move) -> int:
        """Cicera's in-play points of capture ``m`` other than the sweep (docs/rules.md 5.3), 0 without the switch."""
        if not self.rules.in_play_bonuses or m.kind != CAPTURE:
            return 0
        points = 0
        if (self.last_trail in m.cards and rank(self.last_trail) == rank(m.card)
                and m.value == rank(m.card)):  # taking, by pairing, the card the previous player just trailed
            points += 1
        if all(suit(c) == suit(m.card) for c in m.cards):  # played and captured cards share one suit
            points += 1
        if len(m.cards) >= 3:  # three or more table cards (cards of captured builds count)
            points += 1
        return points

    def apply(self, m: Move) -> None:
        """Play ``m`` for the player to move, in place; deal the next round or end the deal as docs/rules.md 2 says.

        Raises:
            IllegalMoveError: naming the rule, with the game unchanged.
        """
        self.check(m)
        p = self.to_move
        bonus = self.in_play_points(m)
        self.hands[p].discard(m.card)
        used = set(m.cards)
        kept = [b for b in self.builds if not (b.cards & used)]
        self.loose -= used
        self.builds = kept
        self.last_trail = None
        if m.kind == TRAIL:
            self.loose.add(m.card)
            self.last_trail = m.card
        elif m.kind == CAPTURE:
            self.captured[p] |= used | {m.card}
            self.last_capturer = p
            self.bonus_points[p] += bonus
            last_play = not self.stock and not any(self.hands)
            if not self.loose and not self.builds and (self.rules.sweep_on_last_play or not last_play):
                self.sweeps[p] += 1  # docs/rules.md 1 sweep; 3 sweep_on_last_play
        else:
            self.builds.append(Build(frozenset(used | {m.card}), m.value, p))
        self._advance(p)

    def _advance(self, p: int) -> None:
        n = self.rules.num_players
        for k in range(1, n + 1):
            q = (p + k) % n
            if self.hands[q]:
                self.to_move = q
                return
        if self.stock:
            self._deal_round()
        else:
            self._end_deal(p)

    def _deal_round(self) -> None:
        """docs/rules.md 2.3: hand_size cards to each seat in turn from the stock's front, starting after the dealer."""
        n, h = self.rules.num_players, self.rules.hand_size
        for k in range(1, n + 1):
            seat = (self.dealer + k) % n
            self.hands[seat] |= set(self.stock[:h])
            del self.stock[:h]
        self.to_move = (self.dealer + 1) % n
        if not self.hands[self.to_move]:
            self._advance(self.to_move)

    def _end_deal(self, last_player: int) -> None:
        """docs/rules.md 2.4: the residue goes to the side of ``residue_to`` (never a sweep).

        With no capture in the whole deal it stays on the table, scored by nobody, whatever ``residue_to`` says.
        """
        taker = last_player if self.rules.residue_to == "last_player" else self.last_capturer
        if taker is not None and self.last_capturer is not None:
            self.captured[taker] |= self.loose.union(*(b.cards for b in self.builds))
            self.loose, self.builds = set(), []
        self.to_move = None
        self.last_trail = None  # nothing is "just trailed" once the deal is over (the card may be in a pile now)

    # -- scoring -----------------------------------------------------------------------------------------------------
    def score_deal(self) -> dict:
        """Score the deal from the captured piles, sweeps and in-play points (docs/rules.md 5, by ``scoring``).

        Returns:
            ``{"sides": [[seats], ...], "items": [{item: points}, ...], "totals": [points, ...]}``, per side, in
            points; items as docs/interchange.md "Deal tally" lists them.
        """
        rules = self.rules
        sides = rules.sides
        piles = [set().union(*(self.captured[s] for s in side)) for side in sides]
        ncards = [len(pile) for pile in piles]
        nspades = [sum(1 for c in pile if suit(c) == SPADES) for pile in piles]
        tie_shares = rules.scoring == "bga"  # docs/rules.md 5.2: tied sides each score

        def most(counts: list[int], points: int, tie_points: int) -> list[int]:
            top = max(counts)
            if top == 0:  # nobody has most of what every side has none of (docs/rules.md 2)
                return [0] * len(counts)
            if counts.count(top) > 1:
                return [tie_points if c == top and tie_shares else 0 for c in counts]
            return [points if c == top else 0 for c in counts]

        items = []
        if rules.scoring == "cicera":
            cards_pts, spade_pts = most(ncards, 2, 0), most(nspades, 1, 0)
            for i, side in enumerate(sides):
                items.append({
                    "cards": cards_pts[i],
                    "spades": spade_pts[i],
                    "napula": napula(piles[i]),
                    "little_casino": int(LITTLE_CASINO in piles[i]),
                    "big_casino": int(BIG_CASINO in piles[i]),
                    "jack_of_hearts": int(JACK_OF_HEARTS in piles[i]),
                    "sweeps": rules.sweep_points * sum(self.sweeps[s] for s in side),
                    "in_play": sum(self.bonus_points[s] for s in side),
                })
        else:
            cards_pts, spade_pts = most(ncards, 3, 2), most(nspades, 1, 1)
            for i, side in enumerate(sides):
                items.append({
                    "cards": cards_pts[i],
                    "spades": spade_pts[i],
                    "big_casino": 2 if BIG_CASINO in piles[i] else 0,
                    "little_casino": 1 if LITTLE_CASINO in piles[i] else 0,
                    "aces": sum(1 for c in piles[i] if rank(c) == 1),
                    "sweeps": rules.sweep_points * sum(self.sweeps[s] for s in side),
                })
        return {"sides": [list(s) for s in sides], "items": items, "totals": [sum(it.values()) for it in items]}


def napula(pile: set[int]) -> int:
    """Cicera's napula (docs/rules.md 5.3): holding A, 2 and 3 of spades scores the length of the spade run from
    the ace."""
    run = 0
    while run < 13 and SPADES * 13 + run in pile:
        run += 1
    return run if run >= 3 else 0


Atom = tuple[int, frozenset[int]]  # (value, cards): a loose card, a whole build, or a build already formed


def _groups(atoms: Sequence[Atom], v: int) -> list[frozenset[int]]:
    """Every set of ``atoms`` whose values sum to ``v`` (as the union of their cards)."""
    items = sorted(atoms, key=lambda a: (a[0], sorted(a[1])))
    out: list[frozenset[int]] = []

    def extend(start: int, remaining: int, chosen: frozenset[int]) -> None:
        if remaining == 0:
            out.append(chosen)
            return
        for i in range(start, len(items)):
            val, cards = items[i]
            if val > remaining:  # items are sorted by value, so nothing later fits either
                break
            extend(i + 1, remaining - val, chosen | cards)

    extend(0, v, frozenset())
    return out


def partitions(mandatory: Sequence[Atom], optional: Sequence[Atom], v: int) -> set[frozenset[int]]:
    """Every union ``U`` of ``optional`` atoms such that ``mandatory`` + ``U`` split into groups each summing to ``v``.

    The result holds the cards of the chosen optional atoms only (the empty set when the mandatory atoms alone
    split). Every atom is in exactly one group; atoms are never broken up.
    """
    results: set[frozenset[int]] = set()

    def cover(mand: tuple[Atom, ...], opt: tuple[Atom, ...], chosen: frozenset[int]) -> None:
        if not mand:
            unions: set[frozenset[int]] = {frozenset()}
            for g in _groups(opt, v):
                unions |= {u | g for u in unions if not (u & g)}
            results.update(chosen | u for u in unions)
            return
        (fv, _cards), rest = mand[0], mand[1:]
        if fv > v:
            return
        pool = [(a, True) for a in rest] + [(a, False) for a in opt]

        def grow(start: int, remaining: int, used: list[int]) -> None:
            if remaining == 0:
                new_mand = tuple(a for i, (a, _) in enumerate(pool) if pool[i][1] and i not in used)
                new_opt = tuple(a for i, (a, _) in enumerate(pool) if not pool[i][1] and i not in used)
                picked = frozenset().union(*(pool[i][0][1] for i in used if not pool[i][1]))
                cover(new_mand, new_opt, chosen | picked)
                return
            for i in range(start, len(pool)):
                if pool[i][0][0] <= remaining:
                    grow(i + 1, remaining - pool[i][0][0], used + [i])

        grow(0, v - fv, [])

    cover(tuple(mandatory), tuple(optional), frozenset())
    return results


# -- the exact, output-sensitive search behind legal_moves and check ------------------------------------------------
# The enumerators above (_capture_sets, _build_sets, partitions) state the rules by listing every card set; they are
# kept as that statement and as the oracle the search below is tested against (tests/test_reliability_oracle.py).
# The search answers two questions fast on any table: "is this card set a capture (or build) of v?" (the partition
# question, asked of value counts, never of card sets) and "list the sets in canonical order", where every branch it
# enters holds at least one move, so listing costs time in proportion to the moves listed.

_NV = 15  # count vectors: index a holds how many cards of value a (0..14)
_ZERO = (0,) * _NV


def _counts(values: Iterable[int]) -> tuple[int, ...]:
    out = [0] * _NV
    for a in values:
        out[a] += 1
    return tuple(out)


def _plus(x: tuple[int, ...], a: int, k: int = 1) -> tuple[int, ...]:
    return x[:a] + (x[a] + k,) + x[a + 1:]


def _parts(r: int, top: int) -> Iterator[tuple[int, ...]]:
    if r == 0:
        yield ()
        return
    for b in range(min(r, top), 0, -1):
        for rest in _parts(r - b, b):
            yield (b, *rest)


#: _FILL[r]: every way to make r (0..14) from card values, as ((value, count), ...) pairs.
_FILL = [[tuple((b, p.count(b)) for b in sorted(set(p))) for p in _parts(r, r)] for r in range(_NV)]


@functools.lru_cache(maxsize=1 << 15)
def completable(need: tuple[int, ...], avail: tuple[int, ...], v: int) -> bool:
    """True when the values ``need``, all of them, with some more taken from ``avail``, split into groups each
    summing to ``v`` (both count vectors: ``need[a]`` cards of value ``a``, ``a`` in 0..14; values 1..14).

    With ``avail`` all zero it is the partition question itself ("do these cards split into groups of v?",
    docs/rules.md 1 group and build). The largest needed value must be in some group: each way of filling the rest of
    that group is tried, needed values before available ones of the same value (swapping two cards of one value
    between groups changes nothing), and the rest is solved the same way. Groups of available values only are never
    needed. Memoised on the count vectors, so it costs microseconds on any table, not a search of card sets.

    >>> completable(_counts([5, 4, 1, 3, 2]), _ZERO, 5)   # 5 | 4+1 | 3+2
    True
    >>> completable(_counts([4, 4]), _counts([1]), 5)     # a single 1 cannot fill both
    False
    """
    a = next((x for x in range(_NV - 1, 0, -1) if need[x]), 0)
    if a == 0:
        return not need[0]
    if a > v:
        return False
    rest = list(need)
    rest[a] -= 1
    for fill in _FILL[v - a]:
        n, m = rest[:], list(avail)
        for b, k in fill:
            mine = min(k, n[b])
            if k - mine > m[b]:
                break
            n[b] -= mine
            m[b] -= k - mine
        else:
            if completable(tuple(n), tuple(m), v):
                return True
    return False


def splits_into(values: Iterable[int], v: int) -> bool:
    """True when the card ``values`` (1..14) split into groups each summing to ``v``: the cards of a build of ``v``
    (docs/rules.md 1 build), or the loose cards of a capture of ``v``. Microseconds for any number of cards."""
    return completable(_counts(values), _ZERO, v)


@functools.lru_cache(maxsize=1 << 14)
def _sum_reachable(target: int, avail: tuple[int, ...]) -> bool:
    """True when some cards of ``avail`` (a count vector) sum to exactly ``target`` (0 always is)."""
    if target < 0:
        return False
    reach = 1
    full = (1 << (target + 1)) - 1
    for a in range(1, _NV):
        for _ in range(min(avail[a], target // a)):
            reach = (reach | (reach << a)) & full
    return bool(reach >> target & 1)


class _Family:
    """The moves of one (kind, played card, value): the table atoms that may take part (loose cards, whole builds),
    and ``ok(C, inc, t)``: can the set of included loose values ``C`` (a count vector) and included builds ``inc``
    grow, with atoms ``t`` onward (sorted by lowest card id) and no others, into a move of the family?"""

    def __init__(self, atoms: list[tuple[tuple[int, ...], int, int]]) -> None:
        # each atom: (sorted card ids, loose value or 0 for a build, index into game.builds or -1)
        self.atoms = sorted(atoms)
        n = len(self.atoms)
        self.suffix_avail: list[tuple[int, ...]] = [_ZERO] * (n + 1)
        self.suffix_builds: list[frozenset[int]] = [frozenset()] * (n + 1)
        for t in range(n - 1, -1, -1):
            cards, value, b = self.atoms[t]
            self.suffix_avail[t] = _plus(self.suffix_avail[t + 1], value) if b < 0 else self.suffix_avail[t + 1]
            self.suffix_builds[t] = self.suffix_builds[t + 1] | {b} if b >= 0 else self.suffix_builds[t + 1]
        self._memo: dict[tuple[Any, ...], bool] = {}

    def test(self, C: tuple[int, ...], inc: frozenset[int], t: int) -> bool:
        raise NotImplementedError

    def ok(self, C: tuple[int, ...], inc: frozenset[int], t: int) -> bool:
        key = (C, inc, t)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = self.test(C, inc, t)
        return hit

    def sets(self) -> Iterator[tuple[int, ...]]:
        """Every move's card set (sorted ids), in canonical order: lexicographic, a prefix before its extensions."""
        atoms, n = self.atoms, len(self.atoms)
        if not self.ok(_ZERO, frozenset(), 0):
            return  # no move at all in the family

        def dfs(prefix: tuple[int, ...], C: tuple[int, ...], inc: frozenset[int], t: int,
                forced: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
            if prefix and not forced and self.ok(C, inc, n):
                yield prefix
            stop = forced[0] if forced else 99
            dead: set[int] = set()  # loose values already found to lead nowhere from here
            for u in range(t, n):
                cards, value, b = atoms[u]
                if cards[0] > stop:
                    break
                if b < 0:
                    if value in dead:
                        continue  # a later card of that value has fewer cards after it: it leads nowhere either
                    C2, inc2, forced2 = _plus(C, value), inc, forced
                else:
                    C2, inc2, forced2 = C, inc | {b}, tuple(sorted(forced + cards[1:]))
                if self.ok(C2, inc2, u + 1):
                    yield from dfs(prefix + cards[:1], C2, inc2, u + 1, forced2)
                elif b < 0:
                    dead.add(value)
            if forced:
                u = t
                while u < n and atoms[u][0][0] < stop:
                    u += 1
                if self.ok(C, inc, u):
                    yield from dfs(prefix + forced[:1], C, inc, u, forced[1:])

        yield from dfs((), _ZERO, frozenset(), 0, ())


class _Constrained(_Family):
    """A family whose every move must take the builds ``required`` and, if ``any_of`` is not empty, one of those
    (the docs/rules.md 4.4 obligations of the player's own builds)."""

    def __init__(self, atoms: list[tuple[tuple[int, ...], int, int]], required: frozenset[int],
                 any_of: frozenset[int]) -> None:
        super().__init__(atoms)
        self.required, self.any_of = required, any_of

    def builds_ok(self, chosen: frozenset[int]) -> bool:
        return self.required <= chosen and (not self.any_of or bool(self.any_of & chosen))


class _CaptureGroups(_Constrained):
    """Captures of value v under capture_mode=groups: whole builds of v and loose numerals in groups of v."""

    def __init__(self, atoms, required, any_of, v: int) -> None:
        super().__init__(atoms, required, any_of)
        self.v = v

    def test(self, C, inc, t):
        if not self.builds_ok(inc | self.suffix_builds[t]):
            return False
        return completable(C, self.suffix_avail[t], self.v)


class _CaptureOneGroup(_Constrained):
    """Captures of value v under capture_mode=one_group: one build of v, or loose numerals summing to v."""

    def __init__(self, atoms, required, any_of, v: int) -> None:
        super().__init__(atoms, required, any_of)
        self.v = v

    def test(self, C, inc, t):
        if inc:
            return len(inc) == 1 and not any(C) and self.builds_ok(inc)
        if not any(C) and any(self.builds_ok(frozenset((b,))) for b in self.suffix_builds[t]):
            return True
        total = sum(a * k for a, k in enumerate(C))
        return self.builds_ok(frozenset()) and _sum_reachable(self.v - total, self.suffix_avail[t])


class _BuildGroups(_Constrained):
    """New builds of value v (builds=standard or reservation): every build of v (``same``) joins, at most one other
    build is raised, loose numerals fill groups of v. ``mandatory[r]``: the values that must be grouped when build
    ``r`` is raised (-1: none raised), e.g. the played card's value, or a raised build's value plus the card's."""

    def __init__(self, atoms, required, any_of, v: int, same: frozenset[int],
                 mandatory: dict[int, tuple[int, ...]]) -> None:
        super().__init__(atoms, required, any_of)
        self.v, self.same, self.mandatory = v, same, mandatory

    def test(self, C, inc, t):
        free = self.suffix_builds[t]
        if not self.same <= inc | free:
            return False  # docs/rules.md 4.1 rule 6: every build of v joins
        raised = [b for b in inc if b not in self.same]
        if len(raised) > 1:
            return False  # 4.1 rule 7
        options = raised or [-1, *sorted(b for b in free if b not in self.same)]
        for r in options:
            chosen = inc | self.same | ({r} if r >= 0 else frozenset())
            if self.builds_ok(chosen):
                need = tuple(map(operator.add, C, self.mandatory[r]))
                if completable(need, self.suffix_avail[t], self.v):
                    return True
        return False


class _Attach(_Constrained):
    """New builds under builds=attach (docs/rules.md 4.3): the played card goes onto exactly one item; the atoms are
    the items it may go onto for value v."""

    def test(self, C, inc, t):
        k = sum(C) + len(inc)
        if k == 0:
            return any(self.builds_ok(frozenset((b,) if b >= 0 else ())) for _, _, b in self.atoms[t:])
        return k == 1 and self.builds_ok(inc)
