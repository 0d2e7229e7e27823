"""Suit symmetries: relabellings of the cards that map every position of a preset to one of equal value.

The capture and build rules read ranks only (docs/rules.md 1-4), so a permutation of the suits changes a game only
through the scoring (docs/rules.md 5): ``standard`` and ``bga`` scoring name spades (most spades, 2♠) and diamonds
(10♦) and treat clubs and hearts alike, so swapping clubs and hearts maps every position to one with the same moves
(relabelled), the same outcomes and so the same move values. ``cicera`` scoring also names J♥ (5.3), so it has no
such symmetry. A learner can train on each labelled decision twice, as played and with the two suits swapped
(``cassino exit --augment-suits True``, :func:`train.exit.mirror_labels`).

A larger symmetry holds rank by rank: the scoring names only spades and a few single cards (10♦; in ``cicera`` also
J♥), so any two other cards of one rank can swap places alone, whatever the other ranks do. :func:`card_classes`
gives each card its class under it (27 classes for ``standard`` and ``bga`` scoring: a spade per rank, 10♦, and the
other cards rank by rank), and :func:`class_index` maps an observation onto counts per class, which is what the
earlier-rounds head of a network reads with ``early_rounds_input="classes"``: positions that differ only by
such swaps then look the same to it.

>>> from cassino_env.rules import make_rules
>>> [card_text(int(c)) for c in suit_permutations(make_rules("classic"))[0][[0, 22, 26, 40]]]
['AH', '10D', 'AC', '2S']
>>> suit_permutations(make_rules("cicera"))
[]
>>> cls = card_classes(make_rules("classic"))
>>> int(cls.max()) + 1, bool(cls[0] == cls[13] == cls[26]), bool(cls[39] != cls[0]), bool(cls[22] != cls[9])
(27, True, True, True)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .cards import CLUBS, HEARTS, NUM_CARDS, RANK, SUIT, card_id, card_text  # noqa: F401 - card_text: doctest
from .errors import CassinoError
from .obs import BLOCKS, Layout, layout_of
from .rules import RuleSet

#: Blocks of the observation laid out card by card (``length`` a multiple of 52, card id ``c`` at ``52 k + c``):
#: the kernel's blocks whose ``by_card`` is True in the block table (:data:`cassino_env.obs.BLOCKS`).
CARD_BLOCKS = frozenset(b.name for b in BLOCKS if b.by_card)
#: The kernel's blocks that hold no card identities (counts, values, ranks, seats), unchanged by a suit swap: those
#: whose ``by_card`` is False. A registered block is in neither (its ``by_card`` is not read: which of its entries
#: name cards is not known).
SUIT_FREE_BLOCKS = frozenset(b.name for b in BLOCKS if b.by_card is False)


class SymmetryError(CassinoError):
    """A suit relabelling asked of something it cannot be applied to: a block of unknown layout, or an argument of
    the wrong kind, shape or range (the message names it)."""


def _suit(x: object, name: str) -> int:
    if isinstance(x, bool) or not isinstance(x, int | np.integer) or not 0 <= int(x) < 4:
        raise SymmetryError(f"{name}: expected a suit 0..3 (clubs, diamonds, hearts, spades), got {x!r:.40}")
    return int(x)


def check_permutation(perm: object) -> np.ndarray:
    """int64[52]: ``perm`` checked to be a permutation of the 52 card ids (an integer array holding each id once).

    Raises:
        SymmetryError: anything else (another length or dtype, an id twice or out of 0..51).
    """
    arr = np.asarray(perm)
    ok = arr.shape == (NUM_CARDS,) and arr.dtype.kind in "iu"
    if not ok or not np.array_equal(np.sort(arr), np.arange(NUM_CARDS)):
        raise SymmetryError(f"perm: expected a permutation of the card ids 0..51 (an integer array of 52), got "
                            f"{arr.dtype} {arr.shape}" + ("" if arr.shape != (NUM_CARDS,) else " that is not one"))
    return arr.astype(np.int64)


def swap_suits(a: int, b: int) -> np.ndarray:
    """int64[52]: the card permutation ``perm[c]`` that swaps suits ``a`` and ``b`` (0..3), rank for rank.

    Raises:
        SymmetryError: a suit outside 0..3.
    """
    a, b = _suit(a, "a"), _suit(b, "b")
    perm = np.arange(NUM_CARDS, dtype=np.int64)
    perm[13 * a:13 * a + 13], perm[13 * b:13 * b + 13] = np.arange(13 * b, 13 * b + 13), np.arange(13 * a, 13 * a + 13)
    return perm


def suit_permutations(rules: RuleSet) -> list[np.ndarray]:
    """The non-identity suit relabellings under which ``rules`` score every deal alike (module docstring).

    Returns:
        A list of int64[52] card permutations: ``[swap clubs and hearts]`` for ``standard`` and ``bga`` scoring
        (docs/rules.md 5.1, 5.2), ``[]`` for ``cicera`` (5.3 names J♥).
    """
    if rules.scoring in ("standard", "bga"):
        return [swap_suits(CLUBS, HEARTS)]
    return []


def permute_card_sets(cards: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """Card-set bitmasks (bit ``c`` for card id ``c``; int64 or uint64) with each card ``c`` moved to ``perm[c]``;
    same shape and dtype.

    Raises:
        SymmetryError: another dtype, a bit above 51 set, or ``perm`` not a permutation.
    """
    perm = check_permutation(perm)
    arr = np.asarray(cards)
    if arr.dtype not in (np.dtype(np.int64), np.dtype(np.uint64)):
        raise SymmetryError(f"cards: expected int64 or uint64 card-set bitmasks, got {arr.dtype}")
    if (arr.view(np.uint64) >> np.uint64(NUM_CARDS)).any():
        raise SymmetryError("cards: a bit above 51 is set (card ids are 0..51)")
    bits = arr.view(np.uint64)
    out = np.zeros_like(bits)
    one = np.uint64(1)
    for c in range(NUM_CARDS):
        out |= ((bits >> np.uint64(c)) & one) << np.uint64(int(perm[c]))
    return out.view(arr.dtype)


def permute_card_ids(card: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """Card ids with each ``c >= 0`` replaced by ``perm[c]`` (negative entries, "no card", kept); same shape and
    dtype.

    Raises:
        SymmetryError: a non-integer dtype, an id above 51, or ``perm`` not a permutation.
    """
    perm = check_permutation(perm)
    arr = np.asarray(card)
    if arr.dtype.kind not in "iu":
        raise SymmetryError(f"card: expected integer card ids, got {arr.dtype}")
    if (arr >= NUM_CARDS).any():
        raise SymmetryError(f"card: card ids are 0..51 (negative: no card), got {int(arr.max())}")
    ok = arr >= 0
    out = arr.copy()
    out[ok] = perm[arr[ok].astype(np.int64)]
    return out


def permute_card_blocks(x: np.ndarray, perm: np.ndarray, blocks: int) -> np.ndarray:
    """``x``: [..., 52 * blocks] card-by-card rows (as :func:`agents.features.critic_state`'s); each block's entry
    for card ``c`` moved to ``perm[c]``.

    Raises:
        SymmetryError: ``blocks`` < 1, a last axis other than ``52 * blocks``, or ``perm`` not a permutation.
    """
    perm = check_permutation(perm)
    x = np.asarray(x)
    if isinstance(blocks, bool) or not isinstance(blocks, int | np.integer) or blocks < 1:
        raise SymmetryError(f"blocks: expected an integer >= 1, got {blocks!r:.40}")
    if x.ndim < 1 or x.shape[-1] != NUM_CARDS * blocks:
        raise SymmetryError(f"x: expected a last axis of 52 * {blocks} = {NUM_CARDS * blocks}, got shape {x.shape}")
    out = np.array(x, copy=True)
    for k in range(blocks):
        out[..., 52 * k + perm] = x[..., 52 * k:52 * k + 52]
    return out


def permute_observation(obs: np.ndarray, perm: np.ndarray, num_players: int, num_sides: int,
                        blocks: Sequence[str] | None = None) -> np.ndarray:
    """Observations ``obs`` (an array ``[..., D]``, e.g. float32[N, D] of ``obs["observation"]``, in ``blocks``'
    layout, None: the default) of the same positions with every card ``c`` relabelled ``perm[c]``; same shape and
    dtype.

    Raises:
        SymmetryError: a block outside the kernel's (``register_block``): its layout by card is unknown; an
            observation whose last axis is not the layout's length D; bad counts; ``perm`` not a permutation.
        ObsBlocksError: a bad block list.
    """
    perm = check_permutation(perm)
    for name, n in (("num_players", num_players), ("num_sides", num_sides)):
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
            raise SymmetryError(f"{name}: expected an integer >= 1, got {n!r:.40}")
    if num_sides > num_players or num_players % num_sides:
        raise SymmetryError(f"num_sides: {num_sides} sides do not split {num_players} seats evenly")
    lay = layout_of(num_players, num_sides, blocks)
    if isinstance(obs, dict):
        raise SymmetryError("obs: expected the observation array (obs['observation']), got the whole obs dict")
    obs = np.asarray(obs)
    if obs.ndim < 1 or obs.shape[-1] != lay.size:
        raise SymmetryError(f"obs: expected a last axis of {lay.size} (the layout for {num_players} seats, "
                            f"{num_sides} sides), got shape {obs.shape}")
    out = np.array(obs, copy=True)
    for a in _card_block_starts(lay):
        out[..., a + perm] = obs[..., a:a + NUM_CARDS]
    return out


def _card_block_starts(lay: Layout) -> list[int]:
    """Where each 52-entry, card-by-card block of the layout starts.

    Raises:
        SymmetryError: a block outside the kernel's (``register_block``): which of its entries name cards is unknown.
    """
    out = []
    for name, (start, length) in lay.starts.items():
        if name in CARD_BLOCKS:
            out.extend(start + NUM_CARDS * k for k in range(length // NUM_CARDS))
        elif name not in SUIT_FREE_BLOCKS:
            raise SymmetryError(f"blocks: {name!r} is not a kernel block, so which of its entries name cards is "
                                "unknown")
    return out


#: Single cards the scoring names, per ``scoring`` (docs/rules.md 5): each is a class of its own in
#: :func:`card_classes` (spades are classes of their own rank by rank anyway).
NAMED_CARDS = {"standard": ("10D", "2S"), "bga": ("10D", "2S"), "cicera": ("10D", "2S", "JH")}


def card_classes(rules: RuleSet) -> np.ndarray:
    """int64[52]: the class of each card id under the rank-by-rank suit symmetry (module docstring): classes
    ``0..12`` are the spades A..K, ``13..25`` the other cards of ranks A..K that the scoring does not name, then one
    class per named non-spade card (10♦; J♥ in ``cicera``), in id order. Two cards share a class exactly when
    swapping them maps every position to one of equal value.

    Raises:
        SymmetryError: rules with Cicera's in-play bonuses (docs/rules.md 5.3), which read suits during play, or
            ``rules`` that is not a RuleSet.
    """
    if not isinstance(rules, RuleSet):
        raise SymmetryError(f"rules: expected a RuleSet (cassino_env.rules.make_rules), got {type(rules).__name__}")
    if rules.in_play_bonuses:
        raise SymmetryError("card classes: the rules' in-play bonuses (docs/rules.md 5.3) read suits during play, so "
                            "no two cards of a rank are alike")
    named = sorted(card_id(c) for c in NAMED_CARDS[rules.scoring])
    cls = np.where(SUIT == 3, RANK - 1, 13 + RANK - 1).astype(np.int64)
    extra = 26
    for c in named:
        if SUIT[c] != 3:
            cls[c] = extra
            extra += 1
    return cls


def class_index(rules: RuleSet, blocks: Sequence[str] | None = None) -> np.ndarray:
    """int64[D]: where each observation entry goes when an observation is summed class by class (D = the length
    of ``blocks``' layout, None: the default blocks): in each 52-entry block of a card block the entry of card ``c``
    goes to the block's entry ``card_classes(rules)[c]`` (so its first ``C`` entries count the classes and the rest
    stay 0); every other entry stays where it is. ``out.index_add_(1, index, obs)`` (torch) or ``np.add.at``
    applies it.

    Raises:
        SymmetryError: a block outside the kernel's (``register_block``), whose layout by card is unknown; what
            :func:`card_classes` raises.
        ObsBlocksError: a bad block list.
    """
    cls = card_classes(rules)
    lay = layout_of(rules.num_players, rules.num_sides, blocks)
    index = np.arange(lay.size, dtype=np.int64)
    for a in _card_block_starts(lay):
        index[a:a + NUM_CARDS] = a + cls
    return index
