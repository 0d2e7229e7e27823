"""Action encodings of the environments and action strings (OpenSpiel-style ``action_to_string`` and back).

Two encodings of one move (a move is ``(kind, card, value, cards)`` as in :mod:`cassino_env.core`):

``moves`` (default)
    Action ``i`` is the ``i``-th move of the core's canonical legal-move list (trails, captures, builds; then played
    card id; then the sorted list of table cards; then value), padded to :data:`MAX_MOVES`. The meaning of an id
    depends on the state; ``observation["moves"][i]`` describes it (the AEC env's ``with_moves=True``;
    :func:`cassino_env.obs.move_features`), so a network scores candidates rather than ids.

``card_value``
    A fixed table of :data:`NUM_CARD_VALUE_ACTIONS` = 524 ids (version :data:`CARD_VALUE_VERSION`) that mean the same
    thing in every state and every preset, for libraries that need fixed ids (SB3 ``MaskablePPO``, RLlib):

    ===============  ===========================================  ==============================================
    ids              meaning                                      id of card ``c`` (rank ``r``, suit ``s``)
    ===============  ===========================================  ==============================================
    0 .. 51          trail card ``c``                             ``c``
    52 .. 103        capture with ``c`` at its face value         ``52 + c``
                     (a court at its rank 11..13, an ace as 1)
    104 .. 107       capture with the ace of suit ``s`` as 14     ``104 + s``
                     (presets with ``ace_high``)
    108 .. 523       build with ``c`` declaring value ``v``,      ``108 + BUILD_BASE[c] + (v - r)``;
                     ``v = r .. 14``, by card id then value       ``BUILD_BASE[c] = sum(15 - rank(d) for d < c)``
    ===============  ===========================================  ==============================================

    An id stands for every legal move with that kind, card and value; when there are several (they differ in the
    table cards taken or used) the id plays **the one with the most table cards, then the first in canonical
    order**. So ``capture with 8S`` on a table ``A 2 3 5 6 8`` takes ``8, 6+2, 5+3`` (5 cards) rather than
    ``8, 5+2+A`` (4), and a king with two kings on the table takes the one with the lower card id. Ids no preset can
    ever play (a classic court building) stay in the table, always masked, so the table is one for all presets.

Overflow: the core lists at most ``max_moves`` moves (default :data:`MAX_MOVES`); a longer list keeps its first
``max_moves`` moves in canonical order and the env reports ``info["overflow"]``. Trails come first, so a list never
loses all its moves; what is lost is late builds (by played card id) of freak tables. Both encodings see only the
listed moves.

Action strings (ASCII card text, docs/rules.md 1; parsing also accepts ``T``, lower case and ``♣♦♥♠``)::

    trail 8S                      capture 3C 5H with 8S        capture 5C 8D with AS as 14
    build 9 with 2C on 7D         capture with 8S              build 9 with 2C            #17

The first four are concrete moves (:func:`move_text`, the same text as ``str(reference.Move)``); ``capture with
8S`` and ``build 9 with 2C`` name a ``card_value`` id (the table cards are chosen by the rule above); ``#17`` is a
raw action id (the ``moves`` encoding's text for an id beyond the listed moves).

>>> card_value_to_string(52 + 20), string_to_card_value("capture with 8D")
('capture with 8D', 72)
>>> card_value_id(2, 1, 3), card_value_to_string(123)
(123, 'build 3 with 2C')
>>> move_text(1, 46, 8, [2, 30])
'capture 3C 5H with 8S'
>>> parse_move_text("capture 3c 5♥ with 8♠")
ParsedMove(kind=1, card=46, value=8, cards=(2, 30), index=None)
"""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np
from numba import njit

from .cards import BUILD, CAPTURE, NUM_CARDS, TRAIL, card_id, card_text, rank, suit
from .core import popcount as _popcount
from .errors import CassinoError

#: Width of the ``moves`` action space (and the core's move table in both environments): the number of legal moves
#: listed per decision. Chosen by ``scripts/measure_moves.py`` over 100,000 random classic matches per player count
#: (2, 3, 4 players: 17.1, 21.9, 17.1 million decisions): median 3, p99 23-25, p99.9 68-79, p99.99 214-237,
#: p99.999 675-687 moves; the longest lists 8,976 (2 players) and over 16,384 (one list each with 3 and 4 players).
#: Random play piles trails on the table and the number of builds grows combinatorially, so no width covers every
#: list. 512 is the first power of two above twice every p99.99; it overflows at 1.8e-5 to 1.9e-5 of decisions
#: (323, 398 and 304 matches in 100,000 see one overflow), against 7.0e-5 to 8.5e-5 for 256.
MAX_MOVES = 512

#: Version of the card_value id table; bump it (and the env's version) on any change to the table.
CARD_VALUE_VERSION = 1

_ACE_HIGH = 14
_MAX_VALUE = 14

CV_CAPTURE0 = 52
CV_ACE_HIGH0 = 104
CV_BUILD0 = 108
#: int64[52]: BUILD_BASE[c] = offset of card c's build ids after CV_BUILD0.
BUILD_BASE = np.concatenate([[0], np.cumsum([_MAX_VALUE + 1 - rank(c) for c in range(NUM_CARDS)])]).astype(np.int64)
#: Number of card_value ids.
NUM_CARD_VALUE_ACTIONS = int(CV_BUILD0 + BUILD_BASE[-1])
BUILD_BASE = BUILD_BASE[:NUM_CARDS]

#: int8[N]: kind of each card_value id (0 trail, 1 capture, 2 build).
CV_KIND = np.zeros(NUM_CARD_VALUE_ACTIONS, dtype=np.int8)
#: int8[N]: played card of each card_value id.
CV_CARD = np.zeros(NUM_CARD_VALUE_ACTIONS, dtype=np.int8)
#: int8[N]: capture or build value of each card_value id (0 for a trail).
CV_VALUE = np.zeros(NUM_CARD_VALUE_ACTIONS, dtype=np.int8)
#: int16[52, 15]: CV_BUILD_ID[c, v] = id of "build v with card c" (-1 where v < rank(c)); see :func:`card_value_id`.
CV_BUILD_ID = np.full((NUM_CARDS, _MAX_VALUE + 1), -1, dtype=np.int16)

for _c in range(NUM_CARDS):
    CV_KIND[_c], CV_CARD[_c], CV_VALUE[_c] = TRAIL, _c, 0
    CV_KIND[CV_CAPTURE0 + _c], CV_CARD[CV_CAPTURE0 + _c], CV_VALUE[CV_CAPTURE0 + _c] = CAPTURE, _c, rank(_c)
    for _v in range(rank(_c), _MAX_VALUE + 1):
        _i = CV_BUILD0 + BUILD_BASE[_c] + _v - rank(_c)
        CV_KIND[_i], CV_CARD[_i], CV_VALUE[_i] = BUILD, _c, _v
        CV_BUILD_ID[_c, _v] = _i
for _s in range(4):
    CV_KIND[CV_ACE_HIGH0 + _s], CV_CARD[CV_ACE_HIGH0 + _s], CV_VALUE[CV_ACE_HIGH0 + _s] = CAPTURE, 13 * _s, _ACE_HIGH
for _a in (CV_KIND, CV_CARD, CV_VALUE, CV_BUILD_ID, BUILD_BASE):
    _a.flags.writeable = False

ENCODINGS = ("moves", "card_value")


class IllegalActionError(CassinoError):
    """An action id that is not legal for the agent to move; the message names the action and says why."""


class ActionTextError(CassinoError):
    """Action text that does not parse, or names no legal move (the message quotes the text)."""


class ParsedMove(NamedTuple):
    """A parsed action string: ``index`` for ``#i`` text, else a move whose ``cards`` may be None (unspecified:
    a card_value-style text such as ``capture with 8S``)."""

    kind: int
    card: int
    value: int
    cards: tuple[int, ...] | None
    index: int | None = None


def card_value_id(kind: int, card: int, value: int) -> int:
    """The card_value id of a move with this kind, played card and value (value ignored for a trail).

    Raises:
        ValueError: for a kind/card/value no id stands for (a build value below the card's rank, or above 14).
    """
    kind, card, value = int(kind), int(card), int(value)
    if not 0 <= card < NUM_CARDS:
        raise ValueError(f"card id {card} is outside 0..51")
    if kind == TRAIL:
        return card
    if kind == CAPTURE:
        if value == _ACE_HIGH and rank(card) == 1:
            return CV_ACE_HIGH0 + suit(card)
        if value != rank(card):
            raise ValueError(f"a capture with {card_text(card)} has value {rank(card)} (or 14 for an ace), not {value}")
        return CV_CAPTURE0 + card
    if kind == BUILD:
        if not rank(card) <= value <= _MAX_VALUE:
            raise ValueError(f"a build with {card_text(card)} declares {rank(card)}..14, not {value}")
        return int(CV_BUILD_ID[card, value])
    raise ValueError(f"kind must be 0 (trail), 1 (capture) or 2 (build), got {kind}")


def card_value_to_string(action: int) -> str:
    """Text of a card_value id: ``trail 8S``, ``capture with 8S``, ``capture with AS as 14``, ``build 9 with 2C``.

    Raises:
        IllegalActionError: for an id outside 0..523.
    """
    a = int(action)
    if not 0 <= a < NUM_CARD_VALUE_ACTIONS:
        raise IllegalActionError(f"card_value action {a} is outside 0..{NUM_CARD_VALUE_ACTIONS - 1}")
    kind, card, value = int(CV_KIND[a]), int(CV_CARD[a]), int(CV_VALUE[a])
    if kind == TRAIL:
        return f"trail {card_text(card)}"
    if kind == CAPTURE:
        return f"capture with {card_text(card)}" + (" as 14" if value == _ACE_HIGH else "")
    return f"build {value} with {card_text(card)}"


def string_to_card_value(text: str) -> int:
    """The card_value id named by action text; concrete moves map to their id (table cards are ignored).

    Raises:
        ActionTextError: text that does not parse, or a ``#i`` id outside the table.
    """
    p = parse_move_text(text)
    if p.index is not None:
        if not 0 <= p.index < NUM_CARD_VALUE_ACTIONS:
            raise ActionTextError(f"{text!r}: card_value id {p.index} is outside 0..{NUM_CARD_VALUE_ACTIONS - 1}")
        return p.index
    try:
        return card_value_id(p.kind, p.card, p.value)
    except ValueError as e:
        raise ActionTextError(f"{text!r}: {e}") from None


def move_text(kind: int, card: int, value: int, cards) -> str:
    """Text of a concrete move (the format of ``str(reference.Move)``); ``cards`` are table card ids (any order)
    or a uint64 bitmask.

    >>> move_text(2, 1, 9, [19])
    'build 9 with 2C on 7D'
    """
    if isinstance(cards, (int, np.integer)):
        m = int(cards)
        cards = [c for c in range(NUM_CARDS) if m >> c & 1]
    table = " ".join(card_text(c) for c in sorted(int(c) for c in cards))
    kind = int(kind)
    if kind == TRAIL:
        return f"trail {card_text(card)}"
    if kind == CAPTURE:
        return f"capture {table} with {card_text(card)}" + (" as 14" if int(value) == _ACE_HIGH else "")
    if kind == BUILD:
        return f"build {int(value)} with {card_text(card)} on {table}"
    raise ValueError(f"kind must be 0, 1 or 2, got {kind}")


_RE_INDEX = re.compile(r"^(?:move\s+)?#\s*(\d+)\b.*$", re.IGNORECASE)
_RE_TRAIL = re.compile(r"^trail\s+(\S+)$", re.IGNORECASE)
_RE_CAPTURE = re.compile(r"^capture\s+(.*?)\s*\bwith\s+(\S+)(\s+as\s+14)?$", re.IGNORECASE)
_RE_BUILD = re.compile(r"^build\s+(\d+)\s+with\s+(\S+)(?:\s+on\s+(.+))?$", re.IGNORECASE)


def _cards(text: str, whole: str) -> tuple[int, ...]:
    try:
        ids = [card_id(t) for t in text.split()]
    except CassinoError as e:
        raise ActionTextError(f"{whole!r}: {e}") from None
    if len(set(ids)) != len(ids):
        raise ActionTextError(f"{whole!r}: a table card is named twice")
    return tuple(sorted(ids))


def parse_move_text(text: str) -> ParsedMove:
    """Parse action text (see the module docstring) into a :class:`ParsedMove`.

    Raises:
        ActionTextError: quoting the text, when it is not one of the forms above.
    """
    if not isinstance(text, str):
        raise ActionTextError(f"action text must be a string, got {type(text).__name__}")
    t = " ".join(text.split())
    m = _RE_INDEX.match(t)
    if m:
        return ParsedMove(-1, -1, 0, None, int(m.group(1)))
    try:
        m = _RE_TRAIL.match(t)
        if m:
            return ParsedMove(TRAIL, card_id(m.group(1)), 0, ())
        m = _RE_CAPTURE.match(t)
        if m:
            c = card_id(m.group(2))
            high = m.group(3) is not None
            if high and rank(c) != 1:
                raise ActionTextError(f"{text!r}: only an ace captures as 14")
            cards = _cards(m.group(1), text) if m.group(1).strip() else None
            return ParsedMove(CAPTURE, c, _ACE_HIGH if high else rank(c), cards)
        m = _RE_BUILD.match(t)
        if m:
            c = card_id(m.group(2))
            cards = _cards(m.group(3), text) if m.group(3) else None
            return ParsedMove(BUILD, c, int(m.group(1)), cards)
    except ActionTextError:
        raise
    except CassinoError as e:
        raise ActionTextError(f"{text!r}: {e}") from None
    raise ActionTextError(f"{text!r} is not an action: expected 'trail 8S', 'capture 3C 5H with 8S', "
                          f"'capture with 8S', 'build 9 with 2C on 7D', 'build 9 with 2C' or '#17'")


def _mask_of(cards: tuple[int, ...]) -> int:
    m = 0
    for c in cards:
        m |= 1 << c
    return m


def find_move(parsed: ParsedMove, kind: np.ndarray, card: np.ndarray, value: np.ndarray, cards: np.ndarray,
              n: int) -> int:
    """Index of the listed move a parsed text names among the first ``n`` rows of a move table, or -1.

    Text with unspecified table cards picks by the card_value rule (most table cards, then canonical first).
    Inputs are one game's ``move_kind``, ``move_card``, ``move_value`` (int8[M]) and ``move_cards`` (uint64[M]).
    """
    best, best_n = -1, -1
    want = None if parsed.cards is None else _mask_of(parsed.cards)
    for i in range(n):
        if int(kind[i]) != parsed.kind or int(card[i]) != parsed.card:
            continue
        if parsed.kind != TRAIL and int(value[i]) != parsed.value:
            continue
        m = int(cards[i])
        if want is not None:
            if m == want:
                return i
            continue
        k = m.bit_count()
        if k > best_n:
            best, best_n = i, k
    return best


@njit(cache=True, nogil=True)
def resolve_actions(encoding, kind, card, value, cards, n, build_id, to_move, mask):
    """Map action ids to listed moves for one game: ``to_move[a]`` = move index of action ``a`` (-1: illegal).

    Args:
        encoding: 0 ``moves`` (action i is move i), 1 ``card_value``.
        kind, card, value: int8[M] — the game's move table rows; cards: uint64[M]; n: listed moves.
        build_id: int16[52, 15] — :data:`CV_BUILD_ID`.
        to_move: int32[A] (output); mask: int8[A] (output) — 1 where ``to_move >= 0``.
    """
    A = to_move.shape[0]
    if encoding == 0:
        for a in range(A):
            if a < n:
                to_move[a] = a
                mask[a] = 1
            else:
                to_move[a] = -1
                mask[a] = 0
        return
    best = np.zeros(A, dtype=np.int64)
    for a in range(A):
        to_move[a] = -1
        mask[a] = 0
    for i in range(n):
        k = kind[i]
        c = card[i]
        if k == 0:
            a = np.int64(c)
        elif k == 1:
            if value[i] == 14:
                a = np.int64(104 + c // 13)
            else:
                a = np.int64(52 + c)
        else:
            a = np.int64(build_id[c, value[i]])
            if a < 0:  # a build value below the card's rank: no rule set makes one (docs/rules.md 4); never map it
                continue
        cnt = _popcount(cards[i])
        # most table cards, then the first in canonical order (a later move replaces only with strictly more)
        if to_move[a] < 0 or cnt > best[a]:
            to_move[a] = i
            best[a] = cnt
            mask[a] = 1


__all__ = [
    "CARD_VALUE_VERSION", "CV_BUILD_ID", "CV_CARD", "CV_KIND", "CV_VALUE", "ENCODINGS", "MAX_MOVES",
    "NUM_CARD_VALUE_ACTIONS", "ActionTextError", "IllegalActionError", "ParsedMove", "card_value_id",
    "card_value_to_string", "find_move", "move_text", "parse_move_text", "resolve_actions", "string_to_card_value",
]
