"""Cards: ids, text and values (docs/rules.md section 1).

A card id is ``13 * suit + (rank - 1)`` with suits clubs 0, diamonds 1, hearts 2, spades 3 and ranks A=1 … K=13,
so ``AS`` is 39, ``2S`` is 40 and ``10D`` is 22. Card text is rank + suit (``10D``, ``AS``, ``KC``); parsing also
accepts ``T`` for 10, lower case and the suit symbols ♣♦♥♠.

>>> card_id("10D"), card_id("as"), card_id("T♠")
(22, 39, 48)
>>> card_text(40)
'2S'
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .errors import CardError

NUM_CARDS = 52
SUITS = "CDHS"
RANKS = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
_SUIT_ALIASES = {"C": 0, "D": 1, "H": 2, "S": 3, "♣": 0, "♦": 1, "♥": 2, "♠": 3}
_RANK_ALIASES = {r: i + 1 for i, r in enumerate(RANKS)} | {"T": 10, "1": 1}

CLUBS, DIAMONDS, HEARTS, SPADES = 0, 1, 2, 3
BIG_CASINO = 22  # 10D, docs/rules.md 5.1
LITTLE_CASINO = 40  # 2S, docs/rules.md 5.1
JACK_OF_HEARTS = 36  # JH, docs/rules.md 5.3
ACE_OF_SPADES = 39

#: int8[52]: rank 1..13 of each card id.
RANK = np.array([c % 13 + 1 for c in range(NUM_CARDS)], dtype=np.int8)
#: int8[52]: suit 0..3 of each card id.
SUIT = np.array([c // 13 for c in range(NUM_CARDS)], dtype=np.int8)
#: uint64[4]: the 13 cards of each suit as a card-set bitmask (bit c set for card id c; suit s: ids 13 s .. 13 s + 12).
SUIT_MASK = np.array([((1 << 13) - 1) << (13 * s) for s in range(4)], dtype=np.uint64)
#: uint64: the 13 spades (``SUIT_MASK[SPADES]``).
SPADE_MASK = SUIT_MASK[SPADES]

#: The kinds of move, what a turn does with the card it plays (docs/rules.md 1, 2.2): a move's ``kind`` in the core's
#: move table, the vector env's ``move_kind`` (-1 pads it), the action ids and the reference engine, all from here.
TRAIL, CAPTURE, BUILD = 0, 1, 2
#: The name of each kind, by kind (``trail``, ``capture``, ``build``), as move texts and docs/interchange.md write it.
KIND_NAMES = ("trail", "capture", "build")


def rank(card: int) -> int:
    """Rank 1..13 (A=1, J=11, Q=12, K=13) of card id ``card``."""
    return card % 13 + 1


def suit(card: int) -> int:
    """Suit 0..3 (clubs, diamonds, hearts, spades) of card id ``card``."""
    return card // 13


def is_court(card: int) -> bool:
    """True for J, Q and K."""
    return card % 13 >= 10


def card_id(card: str | int) -> int:
    """Parse card text (or pass through a valid id) to a card id 0..51.

    Raises:
        CardError: for text that is not a card or an id outside 0..51.
    """
    if isinstance(card, (int, np.integer)) and not isinstance(card, bool):
        if 0 <= int(card) < NUM_CARDS:
            return int(card)
        raise CardError(f"card id {card!r} is outside 0..51 (docs/rules.md 1)")
    if not isinstance(card, str):
        raise CardError(f"a card must be text such as '10D' or an id 0..51, got {type(card).__name__} {card!r}")
    text = card.strip().upper()
    if len(text) < 2 or text[-1] not in _SUIT_ALIASES or text[:-1] not in _RANK_ALIASES:
        raise CardError(f"{card!r} is not a card: expected rank A 2-10 J Q K (or T) and suit C D H S (docs/rules.md 1)")
    return 13 * _SUIT_ALIASES[text[-1]] + _RANK_ALIASES[text[:-1]] - 1


def card_text(card: int) -> str:
    """Canonical text of card id ``card``, e.g. ``card_text(22) == '10D'``.

    Raises:
        CardError: for an id outside 0..51.
    """
    c = card_id(card)
    return RANKS[c % 13] + SUITS[c // 13]


def parse_cards(cards: Iterable[str | int], field: str = "cards", seen: dict[int, str] | None = None) -> list[int]:
    """Parse a list of cards (texts such as ``"10D"``, or ids) to card ids, rejecting duplicates.

    The one card-list parser: positions of the JSON interchange (:mod:`cassino_env.interchange`) use it too.

    Args:
        cards: the list (any iterable but a string).
        field: the list's name, for messages.
        seen: for the lists of one position: card id -> name of the list that holds it, shared across the calls.
            A card already in ``seen`` is a duplicate too, and this list's cards are added to it; messages then
            name the item (``hands[0][2]: ...``) and where the card was seen first.

    Raises:
        CardError: naming ``field`` for a bad card or a card listed twice.
    """
    if isinstance(cards, (str, bytes)) or not isinstance(cards, Iterable):
        raise CardError(f"{field}: expected a list of cards, got {cards!r}")
    out: list[int] = []
    known: dict[int, str] = {} if seen is None else seen
    for i, c in enumerate(cards):
        where = field if seen is None else f"{field}[{i}]"
        try:
            cid = card_id(c)
        except CardError as e:
            raise CardError(f"{where}: {e}") from None
        if cid in known:
            also = "" if seen is None else f" (also in {known[cid]})"
            raise CardError(f"{where}: card {card_text(cid)} appears twice{also}")
        known[cid] = field
        out.append(cid)
    return out


def cards_text(cards: Iterable[int]) -> list[str]:
    """Card texts of ``cards`` sorted by card id."""
    return [card_text(c) for c in sorted(cards)]


def full_deck() -> list[int]:
    """The 52 card ids in id order."""
    return list(range(NUM_CARDS))
