"""Reference rules engine: one game at a time, written to be read and to be obviously right.

This module is the executable statement of docs/rules.md, every switch of section 3. It is slow on purpose: move
generation enumerates sets with plain Python sets and recursion. The batched core (:mod:`cassino_env.core`) is
tested against it move by move.

Moves
-----
A :class:`Move` is ``(kind, card, value, cards)``:

* ``kind`` — :data:`TRAIL` 0, :data:`CAPTURE` 1, :data:`BUILD` 2;
* ``card`` — id of the hand card played;
* ``value`` — the capture value (the played card's value; 14 for an ace captured high) or the declared build
  value; 0 for a trail;
* ``cards`` — sorted ids of every table card taken (capture) or used (build), loose cards and all cards of whole
  builds. Two groupings of the same cards are the same move (docs/interchange.md "Move").

The canonical order is trails, captures, builds; then played card id; then the sorted card list (a prefix first);
then value — exactly ``sorted(moves, key=Move.sort_key)``.

Decisions where docs/rules.md is silent (also in the README):

* Dealing a deal: ``deck[:table_cards]`` face up, then ``hand_size``-card blocks to each seat starting after the
  dealer; the rest is the stock, front first.
* In a position with uneven hands (tests only), the turn passes to the next seat that holds cards.
* A round dealt from a stock too short for full hands gives out what is there, block by block.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .cards import BIG_CASINO, JACK_OF_HEARTS, LITTLE_CASINO, SPADES, card_text, is_court, rank, suit
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


def prune_dominated(moves: Sequence[Move]) -> list[Move]:
    """Drop every capture whose cards are a strict subset of another listed capture by the same played card.

    This is the learning-time pruning of the batched core (on by default there; the JSON oracle never prunes).
    Captures by one card with different values (an ace as 1 or as 14) compare too. Trails and builds are kept;
    order is kept.
    """
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
        if self.to_move is None:
            return []
        moves = sorted((m for m in self._candidates() if self._obligation_error(m) is None), key=Move.sort_key)
        if not moves:  # the 4.4 obligations block every move: any trail is allowed (decided here, README)
            moves = [Move(TRAIL, c) for c in sorted(self.hands[self.to_move])]
        return moves

    def _stuck(self) -> bool:
        """True when the docs/rules.md 4.4 obligations leave no legal move (then any trail is legal; decided here).

        It happens only where one card captures two build values: under ``ace_high`` an ace is the only card
        covering its owner's builds of 1 and of 14, so taking either build strands the other, and trailing is barred.
        """
        return not any(self._obligation_error(m) is None for m in self._candidates())

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
            if not ok:
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
        if frozenset(m.cards) not in self._capture_sets(m.value):
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
        if frozenset(m.cards) not in self._build_sets(m.card, v):
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
