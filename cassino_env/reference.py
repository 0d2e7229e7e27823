"""Reference rules engine: one game at a time, written to be read and to be obviously right.

This module is the executable statement of RULES.md for the implemented switches (see
:data:`cassino_env.rules.IMPLEMENTED`). It is slow on purpose: move generation enumerates sets with plain Python
sets and recursion. The batched core (:mod:`cassino_env.core`) is tested against it move by move.

Moves
-----
A :class:`Move` is ``(kind, card, value, cards)``:

* ``kind`` — :data:`TRAIL` 0, :data:`CAPTURE` 1, :data:`BUILD` 2;
* ``card`` — id of the hand card played;
* ``value`` — the capture value (the played card's value; 14 for an ace captured high) or the declared build
  value; 0 for a trail;
* ``cards`` — sorted ids of every table card taken (capture) or used (build), loose cards and all cards of whole
  builds. Two groupings of the same cards are the same move (INTERCHANGE.md "Move").

The canonical order is trails, captures, builds; then played card id; then the sorted card list (a prefix first);
then value — exactly ``sorted(moves, key=Move.sort_key)``.

Decisions where RULES.md is silent (also in the README):

* Dealing a deal: ``deck[:table_cards]`` face up, then ``hand_size``-card blocks to each seat starting after the
  dealer; the rest is the stock, front first.
* In a position with uneven hands (tests only), the turn passes to the next seat that holds cards.
* A round dealt from a stock too short for full hands gives out what is there, block by block.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .cards import BIG_CASINO, LITTLE_CASINO, SPADES, card_text, is_court, rank, suit
from .errors import IllegalMoveError, PositionError
from .rules import RuleSet

TRAIL, CAPTURE, BUILD = 0, 1, 2
KIND_NAMES = ("trail", "capture", "build")


@dataclass(frozen=True, order=False)
class Move:
    """One move. See the module docstring for the fields and the canonical order."""

    kind: int
    card: int
    value: int = 0
    cards: tuple[int, ...] = ()

    def sort_key(self) -> tuple[int, int, tuple[int, ...], int]:
        """Key of the canonical order (INTERCHANGE.md: trails, captures, builds; card; sorted card list; value)."""
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
    """A build on the table (RULES.md 1): its cards, declared ``value`` and ``owner`` seat."""

    cards: frozenset[int]
    value: int
    owner: int

    @property
    def is_multiple(self) -> bool:
        """A multiple build's cards sum to two or more times its value; its value can never change (4.1 rule 4)."""
        return sum(rank(c) for c in self.cards) > self.value


def prune_dominated(moves: Sequence[Move]) -> list[Move]:
    """Drop every capture whose cards are a strict subset of another listed capture by the same card and value.

    This is the learning-time pruning of the batched core (on by default there; the JSON oracle never prunes).
    Trails and builds are kept; order is kept.
    """
    by_key: dict[tuple[int, int], list[frozenset[int]]] = {}
    for m in moves:
        if m.kind == CAPTURE:
            by_key.setdefault((m.card, m.value), []).append(frozenset(m.cards))
    out = []
    for m in moves:
        if m.kind == CAPTURE:
            s = frozenset(m.cards)
            if any(s < other for other in by_key[(m.card, m.value)]):
                continue
        out.append(m)
    return out


def match_winner(scores: Sequence[int], target: int) -> int | None:
    """Winning side of a match after a deal, or None (RULES.md 2.6).

    The match ends after a deal in which a side reaches ``target``; the highest total wins; if the highest totals
    tie, another deal is played (None).
    """
    top = max(scores)
    if top < target or list(scores).count(top) > 1:
        return None
    return list(scores).index(top)


@dataclass
class Game:
    """The state of one deal, played one move at a time (RULES.md 2).

    Attributes:
        rules: the rule set; must pass :meth:`RuleSet.require_implemented`.
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
        self.rules.require_implemented()
        n = self.rules.num_players
        self.captured = self.captured or [set() for _ in range(n)]
        self.sweeps = self.sweeps or [0] * n
        self.bonus_points = self.bonus_points or [0] * n
        self.match_scores = self.match_scores or [0] * self.rules.num_sides

    # -- construction ------------------------------------------------------------------------------------------------
    @classmethod
    def new_deal(cls, rules: RuleSet, deck: Sequence[int], dealer: int,
                 match_scores: Sequence[int] | None = None) -> Game:
        """Deal a new deal from a shuffled ``deck`` of 52 card ids (RULES.md 2.1; dealing order in module doc).

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
        """Numeric value of ``card`` (RULES.md 1), or None for a court when ``court_values = none``."""
        if is_court(card) and self.rules.court_values == "none":
            return None
        return rank(card)

    def _loose_numerals(self) -> list[int]:
        return sorted(c for c in self.loose if self.value(c) is not None)

    def is_deal_over(self) -> bool:
        """True once the stock and every hand are empty (the residue has then been given away)."""
        return self.to_move is None

    # -- move generation ---------------------------------------------------------------------------------------------
    def _groups(self, cards: Sequence[int], v: int) -> list[frozenset[int]]:
        """Every set of ``cards`` (loose numerals) whose values sum to ``v``: one card of value v or several."""
        items = sorted((self.value(c), c) for c in cards)
        out: list[frozenset[int]] = []

        def extend(start: int, remaining: int, chosen: list[int]) -> None:
            if remaining == 0:
                out.append(frozenset(chosen))
                return
            for i in range(start, len(items)):
                val, c = items[i]
                if val > remaining:  # items are sorted by value, so nothing later fits either
                    break
                extend(i + 1, remaining - val, chosen + [c])

        extend(0, v, [])
        return out

    @staticmethod
    def _disjoint_unions(groups: Iterable[frozenset[int]]) -> set[frozenset[int]]:
        """Every union of a set of pairwise disjoint groups (the empty union included)."""
        unions: set[frozenset[int]] = {frozenset()}
        for g in groups:
            unions |= {u | g for u in unions if not (u & g)}
        return unions

    def _capture_sets(self, v: int) -> set[frozenset[int]]:
        """Every card set a numeral of capture value ``v`` may take (RULES.md 1 "group", 3 ``capture_mode=groups``)."""
        loose_unions = self._disjoint_unions(self._groups(self._loose_numerals(), v))
        build_unions = {frozenset()}
        for b in self.builds:
            if b.value == v:  # a build is captured only whole, by exactly its value (RULES.md 1)
                build_unions |= {u | b.cards for u in build_unions}
        return {lu | bu for lu in loose_unions for bu in build_unions} - {frozenset()}

    def _build_sets(self, card: int, v: int) -> set[frozenset[int]]:
        """Every table card set ``card`` may build into value ``v`` (RULES.md 4.1 rules 1 and 4-7)."""
        p = self.to_move
        cv = self.value(card)
        if cv is None or cv > v:
            return set()
        loose = self._loose_numerals()
        groups = self._groups(loose, v)
        # 4.1 rule 6: every build of value v joins (each is a group by itself).
        mandatory = frozenset().union(*(b.cards for b in self.builds if b.value == v))
        out: set[frozenset[int]] = set()
        # No raise: the played card's group is the card alone or the card plus loose cards summing to v - value.
        firsts = [frozenset()] if cv == v else self._groups(loose, v - cv)
        for first in firsts:
            for rest in self._disjoint_unions(g for g in groups if not (g & first)):
                out.add(first | rest | mandatory)
        # Raise: one single build B of another value joins the played card as the group {B, card} (rules 5 and 7).
        for b in self.builds:
            if b.value == v or b.is_multiple:  # rule 4: a multiple build never changes value
                continue
            if b.value + cv != v:  # rule 5: with raise_with_table_cards false the raise group is exactly {B, c}
                continue
            if b.owner == p and not self.rules.raise_own_build:
                continue
            for rest in self._disjoint_unions(groups):
                out.add(b.cards | rest | mandatory)
        out.discard(frozenset())
        return out

    def _candidates(self) -> list[Move]:
        """All moves by the card rules, before the owner obligations of RULES.md 4.4."""
        p = self.to_move
        hand = sorted(self.hands[p])
        moves: list[Move] = [Move(TRAIL, c) for c in hand]
        for c in hand:
            v = self.value(c)
            if v is None:  # RULES.md 3 court_values=none, court_pair_take=one: a court pairs one court of its rank
                moves += [Move(CAPTURE, c, rank(c), (k,)) for k in sorted(self.loose) if rank(k) == rank(c)]
            else:
                moves += [Move(CAPTURE, c, v, tuple(sorted(s))) for s in self._capture_sets(v)]
        if self.rules.builds == "standard":
            for c in hand:
                if self.value(c) is None:
                    continue
                rest = [self.value(k) for k in hand if k != c]
                for v in range(1, self.rules.max_value + 1):
                    if v not in rest:  # RULES.md 4.1 rule 2: keep a card that captures v
                        continue
                    moves += [Move(BUILD, c, v, tuple(sorted(s))) for s in self._build_sets(c, v)]
        return moves

    def legal_moves(self) -> list[Move]:
        """Every distinct legal move of the player to move, exact, in canonical order; [] when the deal is over."""
        if self.to_move is None:
            return []
        return sorted((m for m in self._candidates() if self._obligation_error(m) is None), key=Move.sort_key)

    def _obligation_error(self, m: Move) -> str | None:
        """The RULES.md 4.4 rule that ``m`` breaks, or None."""
        p = self.to_move
        if m.kind == TRAIL and self.rules.owner_rule == "no_trail" and any(b.owner == p for b in self.builds):
            return "RULES.md 4.4 no_trail: a player who owns a build may not trail"
        left = [self.value(c) for c in self.hands[p] if c != m.card]
        used = set(m.cards)
        owned = [b.value for b in self.builds if b.owner == p and not (b.cards & used)]
        if m.kind == BUILD:
            owned.append(m.value)
        for v in owned:
            if v not in left:
                return (f"RULES.md 4.4: the move would leave you owning a build of {v} without a card in hand that "
                        f"captures it")
        return None

    # -- checking and applying ---------------------------------------------------------------------------------------
    def check(self, m: Move) -> None:
        """Raise :class:`IllegalMoveError` naming the rule if ``m`` is not legal now; return None if it is."""
        if self.to_move is None:
            raise IllegalMoveError("the deal is over: nobody is to move (RULES.md 2.4)")
        p = self.to_move
        if m.card not in self.hands[p]:
            raise IllegalMoveError(f"{card_text(m.card)} is not in the hand of seat {p} (RULES.md 2.2)")
        table = self.loose.union(*(b.cards for b in self.builds))
        missing = [c for c in m.cards if c not in table]
        if missing:
            raise IllegalMoveError(f"{card_text(missing[0])} is not on the table (RULES.md 2.2)")
        used = set(m.cards)
        for b in self.builds:
            if b.cards & used and not b.cards <= used:
                raise IllegalMoveError(f"build {'+'.join(card_text(c) for c in sorted(b.cards))} of {b.value} is "
                                       "taken or used only whole (RULES.md 1 build)")
        if m.kind == TRAIL:
            if m.cards or m.value:
                raise IllegalMoveError("a trail takes no table cards (RULES.md 1 trail)")
        elif not m.cards:
            raise IllegalMoveError(f"a {KIND_NAMES[m.kind]} must take or use table cards (RULES.md 1)")
        elif m.kind == CAPTURE:
            self._check_capture(m)
        else:
            self._check_build(m)
        reason = self._obligation_error(m)
        if reason:
            raise IllegalMoveError(reason)

    def _check_capture(self, m: Move) -> None:
        v = self.value(m.card)
        if v is None:
            if len(m.cards) != 1 or rank(m.cards[0]) != rank(m.card) or m.cards[0] not in self.loose:
                raise IllegalMoveError(f"a court captures exactly one loose court of its rank (RULES.md 3 "
                                       f"court_values=none, court_pair_take=one); {card_text(m.card)} cannot take "
                                       f"{' '.join(card_text(c) for c in m.cards)}")
            return
        if m.value != v:
            raise IllegalMoveError(f"{card_text(m.card)} captures as {v}, not {m.value} (RULES.md 1 value, 3 ace_high)")
        for b in self.builds:
            if b.cards <= set(m.cards) and b.value != v:
                raise IllegalMoveError(f"a build of {b.value} is captured only by a card of that value (RULES.md 1)")
        if frozenset(m.cards) not in self._capture_sets(v):
            raise IllegalMoveError(f"the cards taken do not split into groups of value {v}, each a loose card, loose "
                                   "numerals summing to it, or a build of it (RULES.md 1 group, 3 capture_mode)")

    def _check_build(self, m: Move) -> None:
        v, p = m.value, self.to_move
        if self.value(m.card) is None:
            raise IllegalMoveError("a court has no value and is never built (RULES.md 3 court_values=none)")
        if not 1 <= v <= self.rules.max_value:
            raise IllegalMoveError(f"build value {v} is outside 1..{self.rules.max_value} (RULES.md 4.1 rule 3)")
        if v not in [self.value(c) for c in self.hands[p] if c != m.card]:
            raise IllegalMoveError(f"building {v} needs another card of value {v} in hand (RULES.md 4.1 rule 2)")
        used = set(m.cards)
        inside = [b for b in self.builds if b.cards <= used]
        for b in self.builds:
            if b.value == v and b not in inside:
                raise IllegalMoveError(f"every build of value {v} must join a new build of {v} (RULES.md 4.1 rule 6)")
        raised = [b for b in inside if b.value != v]
        if any(b.is_multiple for b in raised):
            raise IllegalMoveError("a multiple build cannot be raised (RULES.md 4.1 rule 4)")
        if len(raised) > 1:
            raise IllegalMoveError("at most one build is raised per move (RULES.md 4.1 rule 7)")
        if raised and raised[0].owner == p and not self.rules.raise_own_build:
            raise IllegalMoveError("you may not raise your own build (RULES.md 3 raise_own_build)")
        if raised and raised[0].value + self.value(m.card) != v:
            raise IllegalMoveError("a raised build takes only the hand card: its new value is its value plus the "
                                   "card's (RULES.md 4.1 rule 5, raise_with_table_cards=false)")
        if frozenset(m.cards) not in self._build_sets(m.card, v):
            raise IllegalMoveError(f"the played card and the cards used do not split into groups of value {v} "
                                   "(RULES.md 4.1 rule 1)")

    def apply(self, m: Move) -> None:
        """Play ``m`` for the player to move, in place; deal the next round or end the deal as RULES.md 2 says.

        Raises:
            IllegalMoveError: naming the rule, with the game unchanged.
        """
        self.check(m)
        p = self.to_move
        self.hands[p].discard(m.card)
        used = set(m.cards)
        kept = [b for b in self.builds if not (b.cards & used)]
        self.loose -= used
        if m.kind == TRAIL:
            self.loose.add(m.card)
            self.builds = kept
            self.last_trail = m.card
        elif m.kind == CAPTURE:
            self.captured[p] |= used | {m.card}
            self.builds = kept
            self.last_capturer = p
            self.last_trail = None
            if not self.loose and not self.builds:  # RULES.md 1 sweep; 3 sweep_on_last_play (true in every preset)
                self.sweeps[p] += 1
        else:
            self.builds = kept + [Build(frozenset(used | {m.card}), m.value, p)]
            self.last_trail = None
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
            self._end_deal()

    def _deal_round(self) -> None:
        """RULES.md 2.3: hand_size cards to each seat in turn from the stock's front, starting after the dealer."""
        n, h = self.rules.num_players, self.rules.hand_size
        for k in range(1, n + 1):
            seat = (self.dealer + k) % n
            self.hands[seat] |= set(self.stock[:h])
            del self.stock[:h]
        self.to_move = (self.dealer + 1) % n
        if not self.hands[self.to_move]:
            self._advance(self.to_move)

    def _end_deal(self) -> None:
        """RULES.md 2.4: the residue goes to the last capturer (never a sweep); with no capture it stays."""
        if self.last_capturer is not None:
            table = self.loose.union(*(b.cards for b in self.builds))
            self.captured[self.last_capturer] |= table
            self.loose, self.builds = set(), []
        self.to_move = None

    # -- scoring -----------------------------------------------------------------------------------------------------
    def score_deal(self) -> dict:
        """Score the deal from the captured piles and sweeps (RULES.md 5.1 ``standard``).

        Returns:
            ``{"sides": [[seats], ...], "items": [{item: points}, ...], "totals": [points, ...]}``, per side.
        """
        sides = self.rules.sides
        piles = [set().union(*(self.captured[s] for s in side)) for side in sides]
        ncards = [len(pile) for pile in piles]
        nspades = [sum(1 for c in pile if suit(c) == SPADES) for pile in piles]

        def most(counts: list[int], points: int) -> list[int]:
            top = max(counts)
            if top == 0 or counts.count(top) > 1:  # a tie for most scores nothing (RULES.md 5.1)
                return [0] * len(counts)
            return [points if c == top else 0 for c in counts]

        cards_pts, spade_pts = most(ncards, 3), most(nspades, 1)
        items = []
        for i, side in enumerate(sides):
            items.append({
                "cards": cards_pts[i],
                "spades": spade_pts[i],
                "big_casino": 2 if BIG_CASINO in piles[i] else 0,
                "little_casino": 1 if LITTLE_CASINO in piles[i] else 0,
                "aces": sum(1 for c in piles[i] if rank(c) == 1),
                "sweeps": self.rules.sweep_points * sum(self.sweeps[s] for s in side),
            })
        return {"sides": [list(s) for s in sides], "items": items, "totals": [sum(it.values()) for it in items]}
