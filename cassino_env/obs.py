"""Observation encoding: what one seat may know, as a flat float32 vector, for every game of a core state at once.

The encoding is a view of the batched core's state (:mod:`cassino_env.core`) through one seat's eyes: its own hand,
the table, every build with its value and owner, every side's captured cards (they were face up when taken), the
cards it has not seen, the stock size, round and deal progress, scores, sweeps, in-play points (Cicera, docs/rules.md
5.3), its seat relative to the dealer and the last trailed card. One layout serves every preset of docs/rules.md 6:
values
run to 14 (numeric courts 11-13, an ace captured high 14), hands are normalised by the preset's ``hand_size`` (12 in
Cicera), and blocks a preset never fills (builds in Cicera, in-play points outside it) stay 0. Other hands and the
stock order never enter it. Seats and sides are *relative to the viewer*: relative seat ``r`` is seat
``(viewer + r) % P``; relative side ``s`` is side ``(side(viewer) + s) % S``.

Layout of ``observation`` (float32[D]; P seats, S sides, 52 cards in card-id order, docs/rules.md 1): the blocks of
:data:`BLOCKS`, in order. :func:`obs_layout`, :func:`obs_size`, the encoder kernel's offsets
(:func:`encoder_params`), the bounds of the observation space (:func:`obs_high`) and this table all follow from
that one list (the table below is generated from it at import; the same table is in :mod:`cassino_env.aec`):

{obs_table}

**Selecting blocks** (as OpenSpiel's observers take their pieces): every environment (``CassinoVectorEnv``, the AEC
env, the Gymnasium env) and every agent that reads the vector (a trained network: the checkpoint records its
``obs_blocks``) takes a list of block names, ``blocks=``; None is :data:`DEFAULT_BLOCKS`, today's list, which a
checkpoint without the field was trained on. The list may leave blocks out or reorder them; the layout, the size,
the bounds and the encoder's offsets follow from it (:func:`layout_of`). The default list runs the encoder kernel
exactly as before; another list writes the kernel's blocks it leaves out past the end of the vector (a buffer
:attr:`Layout.width` wide, of which the observation is the first :attr:`Layout.size` columns).

**Adding a block** is opt-in, so shipped checkpoints keep loading: write a :class:`Block` whose ``fill`` computes
it from the seat's public view (:func:`public_view`: what that seat may know, nothing else) and register it, then
ask for it::

    def fill_capture_count(view, rules):  # float32[B, 1]: cards this seat's side captured, / 52
        ...
    register_block(Block("my_count", 1, 0, 0, "cards captured by my side / 52", fill=fill_capture_count))
    env = CassinoVectorEnv(8, blocks=(*DEFAULT_BLOCKS, "my_count"))

(tests/test_obs_blocks.py does this.) A block that every run should have would be written in :func:`encode_kernel` and
added to :data:`BLOCKS` and to :data:`DEFAULT_BLOCKS` only with retrained checkpoints.
"""

from __future__ import annotations

import functools
from collections import namedtuple
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba import njit

from .cards import SPADE_MASK
from .core import lowbit as _lowbit
from .core import popcount as _popcount
from .errors import CassinoError, excerpt
from .rules import RuleSet

NUM_VALUES = 14  # build values 1..14 (14: ace high, docs/rules.md 3)


@dataclass(frozen=True)
class Block:
    """One block of the observation vector: ``base + per_seat * P + per_side * S`` entries.

    Attributes:
        name: the block's name (the key of :func:`obs_layout`).
        base, per_seat, per_side: its length for P seats and S sides is ``base + per_seat * P + per_side * S``.
        meaning: what an entry holds (1.0 = yes unless stated).
        high: the upper bound of its entries in the observation space (the lower bound is 0).
        fill: for a block outside the encoder kernel (:func:`register_block`): ``fill(view, rules)`` returns its
            entries for every game, float32[B, length], from :func:`public_view` of the seat observed (rows of
            games with nobody to observe are zeroed afterwards). None for the kernel's blocks (:data:`BLOCKS`).
        by_card: what a relabelling of the suits does to the block (:mod:`cassino_env.symmetry`): True, it is laid
            out card by card (every length part a multiple of 52, entry ``52 k + c`` about card id ``c``); False, it
            holds no card identities (counts, values, ranks, seats: unchanged); None, not known. Every kernel block
            says which (the one source of ``cassino_env.symmetry.CARD_BLOCKS`` and ``SUIT_FREE_BLOCKS``); a
            registered block's is not read (the suit symmetries refuse a layout holding one).
    """

    name: str
    base: int
    per_seat: int
    per_side: int
    meaning: str
    high: float = 1.0
    fill: Callable[[dict[str, np.ndarray], RuleSet], Any] | None = field(default=None, compare=False)
    by_card: bool | None = None

    def length(self, num_players: int, num_sides: int) -> int:
        """The block's length for P seats and S sides."""
        return self.base + self.per_seat * num_players + self.per_side * num_sides


#: The observation vector, block by block in order (the one source of the layout; see the module docstring).
BLOCKS: tuple[Block, ...] = (
    Block("hand", 52, 0, 0, "the viewer holds card c", by_card=True),
    Block("loose", 52, 0, 0, "card c lies loose on the table", by_card=True),
    Block("build_owned_by", 0, 52, 0, "card c is in a build owned by relative seat r (block r)", by_card=True),
    Block("build_value", 52, 0, 0, "value (1..14) of the build holding card c / 14 (0 when not in a build)",
          by_card=True),
    Block("captured_by", 0, 0, 52, "card c is in the captured pile of relative side s (block s)", by_card=True),
    Block("unseen", 52, 0, 0, "card c is in another hand or the stock (not visible to the viewer)", by_card=True),
    Block("last_trail", 52, 0, 0, "card c was trailed on the immediately preceding turn", by_card=True),
    Block("builds", NUM_VALUES, NUM_VALUES, 0, "per value v = 1..14, P + 1 entries: a build of v exists, then its "
          "owner (relative seat one-hot; with attach builds, every owner of one)", by_card=False),
    Block("hand_sizes", 0, 1, 0, "cards in the hand of relative seat r / hand_size", by_card=False),
    Block("captured_count", 0, 0, 1, "cards captured by relative side s / 52", by_card=False),
    Block("spades_count", 0, 0, 1, "spades captured by relative side s / 13", by_card=False),
    # a seat plays fewer than 52 cards a deal, so fewer than 52 sweeps: / 4 stays below 13
    Block("sweeps", 0, 1, 0, "sweeps this deal by relative seat r / 4", high=13.0, by_card=False),
    # at most 3 in-play points a play (docs/rules.md 5.3), fewer than 52 plays a deal: / 4 stays below 39
    Block("in_play", 0, 1, 0, "Cicera's in-play points this deal of relative seat r / 4 (docs/rules.md 5.3; 0 "
          "in presets without in_play_bonuses)", high=39.0, by_card=False),
    # a tie for the lead at the target plays on: no finite bound
    Block("match_scores", 0, 0, 1, "match total of relative side s / target",
          high=float(np.finfo(np.float32).max), by_card=False),
    Block("seat_from_dealer", 0, 1, 0, "one-hot: the viewer sits r seats after the dealer (r = 1 moves first)",
          by_card=False),
    Block("progress", 3, 0, 0, "stock size / 52; rounds dealt / rounds per deal; cards played / 52", by_card=False),
    Block("last_capturer", 0, 1, 0, "one-hot: relative seat r made the last capture this deal (the residue goes to "
          "the last capturer unless the preset says otherwise, docs/rules.md 5); all 0 before the first capture",
          by_card=False),
    Block("unseen_by_rank", 13, 0, 0, "per rank 1..13 (A..K): unseen cards of that rank / 4", by_card=False),
    Block("most_decided", 0, 0, 2, "per relative side s, 2 entries: s has clinched most cards (more than any other "
          "side can still reach), then most spades (docs/rules.md 5)", by_card=False),
)

#: The block list of every environment and agent unless told otherwise, and the list a checkpoint without an
#: ``obs_blocks`` field was trained on: the kernel's blocks in order (tests/test_obs.py pins it; never change it).
DEFAULT_BLOCKS: tuple[str, ...] = tuple(b.name for b in BLOCKS)


def uses_default_blocks(blocks: Sequence[str] | None) -> bool:
    """Whether ``blocks`` (an ``obs_blocks`` option, a checkpoint's list) is the default observation: None, or the
    names of :data:`DEFAULT_BLOCKS` in their order. The one test of "this network reads the default observation",
    which the expert stage (``cassino exit``) and the recipe (``cassino train``'s expert stages) require.

    >>> uses_default_blocks(None), uses_default_blocks(list(DEFAULT_BLOCKS)), uses_default_blocks(DEFAULT_BLOCKS[:-1])
    (True, True, False)
    """
    return blocks is None or tuple(blocks) == DEFAULT_BLOCKS


class ObsBlocksError(CassinoError):
    """A block list that is not a list of distinct known block names, or a block that cannot be registered."""


_KERNEL = {b.name: b for b in BLOCKS}
#: Blocks added with :func:`register_block` (outside the encoder kernel), by name.
ADDED_BLOCKS: dict[str, Block] = {}


def register_block(block: Block, *, replace: bool = False) -> Block:
    """Make ``block`` (one with a ``fill``) available to block lists; returns it.

    Raises:
        ObsBlocksError: no ``fill``, a name already taken (unless ``replace``; a kernel block's name never), or
            lengths that are not non-negative integers with at least one entry.
    """
    if not isinstance(block, Block) or not callable(block.fill):
        raise ObsBlocksError("register_block takes a Block with fill=f(view, rules) (the kernel writes the others)")
    if not isinstance(block.name, str) or not block.name.isidentifier() or block.name in _KERNEL:
        raise ObsBlocksError(f"block name {block.name!r}: an identifier, not one of the kernel's blocks")
    if block.name in ADDED_BLOCKS and not replace:
        raise ObsBlocksError(f"block {block.name!r} is registered already")
    sizes = (block.base, block.per_seat, block.per_side)
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in sizes) or not any(sizes):
        raise ObsBlocksError(f"block {block.name!r}: base, per_seat and per_side are integers >= 0, not all 0")
    ADDED_BLOCKS[block.name] = block
    _clear_caches()
    return block


def unregister_block(name: str) -> None:
    """Remove a block added with :func:`register_block` (a test's, a session's)."""
    ADDED_BLOCKS.pop(name, None)
    _clear_caches()


def known_blocks() -> dict[str, Block]:
    """Every block a list may name: the kernel's (:data:`BLOCKS`), then the registered ones."""
    return {**_KERNEL, **ADDED_BLOCKS}


def check_blocks(blocks: Sequence[str] | None) -> tuple[str, ...]:
    """A block list as a tuple of names: None is :data:`DEFAULT_BLOCKS`.

    Raises:
        ObsBlocksError: not a list of strings (a single string included), empty, a name listed twice, or an
            unknown name (the message lists the known ones).
    """
    if blocks is None:
        return DEFAULT_BLOCKS
    if isinstance(blocks, str | bytes) or not isinstance(blocks, Sequence):
        raise ObsBlocksError(f"blocks: a list of block names such as {list(DEFAULT_BLOCKS[:2])}, got "
                             f"{type(blocks).__name__} {excerpt(blocks)}")
    names = tuple(blocks)
    if not names:
        raise ObsBlocksError("blocks: at least one block")
    known = known_blocks()
    for name in names:
        if not isinstance(name, str) or name not in known:
            raise ObsBlocksError(f"blocks: unknown block {excerpt(name)}; blocks are {', '.join(known)}")
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise ObsBlocksError(f"blocks: {twice!r} is listed twice")
    return names


@dataclass(frozen=True)
class Layout:
    """Where each block of a block list lies for P seats and S sides (:func:`layout_of`).

    Attributes:
        blocks: the block names, in order.
        size: D, the observation's length.
        width: the encoder's buffer width: D, plus the kernel's blocks the list leaves out (written past D).
        starts: ``{block: (start, length)}`` of the listed blocks.
        added: ``(Block, start, length)`` of the listed blocks outside the kernel (filled from the public view).
        kernel_starts: the start of each kernel block (:data:`BLOCKS` order) in the buffer.
        high: float32[D], the upper bounds (read-only).
    """

    blocks: tuple[str, ...]
    size: int
    width: int
    starts: dict[str, tuple[int, int]]
    added: tuple[tuple[Block, int, int], ...]
    kernel_starts: tuple[int, ...]
    high: np.ndarray

    @property
    def default(self) -> bool:
        """True for :data:`DEFAULT_BLOCKS` (the encoder writes the observation as it always did)."""
        return self.blocks == DEFAULT_BLOCKS


def layout_of(num_players: int, num_sides: int, blocks: Sequence[str] | None = None) -> Layout:
    """The :class:`Layout` of ``blocks`` (None: :data:`DEFAULT_BLOCKS`) for P seats and S sides.

    Raises:
        ObsBlocksError: a bad block list (:func:`check_blocks`).
    """
    return _layout(int(num_players), int(num_sides), check_blocks(blocks))


@functools.lru_cache(maxsize=256)
def _layout(P: int, S: int, names: tuple[str, ...]) -> Layout:
    known = known_blocks()
    starts, added, at = {}, [], 0
    for name in names:
        block = known[name]
        n = block.length(P, S)
        starts[name] = (at, n)
        if block.fill is not None:
            added.append((block, at, n))
        at += n
    size = at
    kernel = []
    for block in BLOCKS:
        if block.name in starts:
            kernel.append(starts[block.name][0])
        else:  # left out: written past the observation, never read
            kernel.append(at)
            at += block.length(P, S)
    high = np.empty(size, dtype=np.float32)
    for name, (a, n) in starts.items():
        high[a:a + n] = known[name].high
    high.flags.writeable = False
    return Layout(names, size, at, starts, tuple(added), tuple(kernel), high)


def _clear_caches() -> None:
    """Forget the cached layouts and encoder parameters (after the registered blocks change)."""
    _layout.cache_clear()
    _params_of.cache_clear()


#: The rule numbers at the front of the encoder's parameter array (:func:`encoder_params`), then each block's start.
RULE_PARAMS = ("P", "S", "hand_size", "target", "table_cards", "rounds_per_deal")
#: Index of each entry of the encoder's parameter array by name: ``params[AT.hand]`` is the start of ``hand``,
#: ``params[AT.P]`` the number of seats. A namedtuple of ints, so numba reads its fields as constants.
AT = namedtuple("EncoderParams", RULE_PARAMS + tuple(b.name for b in BLOCKS))(*range(len(RULE_PARAMS) + len(BLOCKS)))


def obs_layout(num_players: int, num_sides: int, blocks: Sequence[str] | None = None) -> dict[str, tuple[int, int]]:
    """``{block: (start, length)}`` of the observation vector for P seats and S sides (``blocks``, in order; None:
    :data:`DEFAULT_BLOCKS`)."""
    return dict(layout_of(num_players, num_sides, blocks).starts)


def obs_size(num_players: int, num_sides: int, blocks: Sequence[str] | None = None) -> int:
    """D, the length of the observation vector of ``blocks`` (None: :data:`DEFAULT_BLOCKS`)."""
    return layout_of(num_players, num_sides, blocks).size


def obs_high(num_players: int, num_sides: int, blocks: Sequence[str] | None = None) -> np.ndarray:
    """float32[D]: the upper bounds of the observation vector (each block's ``high``; the lower bound is 0), a fresh
    array."""
    return layout_of(num_players, num_sides, blocks).high.copy()


def encoder_params(rules: RuleSet, blocks: Sequence[str] | None = None) -> np.ndarray:
    """int64[len(AT)]: the parameters :func:`encode_kernel` reads (names and order: :data:`AT`) for ``blocks``, a
    fresh array."""
    return _params(rules, blocks).copy()


@functools.lru_cache(maxsize=256)
def _params_of(P: int, S: int, H: int, target: int, T: int, R: int, names: tuple[str, ...]) -> np.ndarray:
    return np.array([P, S, H, target, T, R, *_layout(P, S, names).kernel_starts], dtype=np.int64)


def _params(rules: RuleSet, blocks: Sequence[str] | None = None) -> np.ndarray:
    """The shared (cached: never written) parameter array of ``rules`` and ``blocks``."""
    return _params_of(rules.num_players, rules.num_sides, rules.hand_size, rules.target, rules.table_cards,
                      rules.rounds_per_deal, check_blocks(blocks))


def _formula(const: int, per_seat: int, per_side: int) -> str:
    terms = [str(const)] if const or not (per_seat or per_side) else []
    terms += [f"{k} {x}" if k != 1 else x for k, x in ((per_seat, "P"), (per_side, "S")) if k]
    return " + ".join(terms)


def layout_table() -> str:
    """The index table of the observation (block, start, length, meaning) as a Markdown table, from :data:`BLOCKS`."""
    rows, a, b, c = [], 0, 0, 0
    for block in BLOCKS:
        rows.append((f"`{block.name}`", _formula(a, b, c), _formula(block.base, block.per_seat, block.per_side),
                     block.meaning))
        a, b, c = a + block.base, b + block.per_seat, c + block.per_side
    head = ("block", "start", "length", "meaning (1.0 = yes unless stated)")
    widths = [max(len(r[i]) for r in (head, *rows)) for i in range(4)]

    def line(cells: tuple[str, ...]) -> str:
        return "| " + " | ".join(x.ljust(w) for x, w in zip(cells, widths, strict=True)) + " |"

    return "\n".join([line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


#: Seat and side counts the presets use (docs/rules.md 6), for the sizes quoted in docstrings.
_DOC_SHAPES = ((2, 2, "2 players"), (3, 3, "3"), (4, 2, "4 in partnerships"), (6, 3, "6 in three partnerships"))


def fill_doc(doc: str) -> str:
    """``doc`` with ``{obs_table}`` (:func:`layout_table`), ``{obs_size_formula}`` (D for P seats and S sides) and
    ``{obs_sizes}`` (D of every seat count the presets use) filled in from :data:`BLOCKS`."""
    total = [sum(getattr(b, k) for b in BLOCKS) for k in ("base", "per_seat", "per_side")]
    sizes = "; ".join(f"{label}: {'D = ' if i == 0 else ''}{obs_size(P, S)}"
                      for i, (P, S, label) in enumerate(_DOC_SHAPES))
    return (doc.replace("{obs_table}", layout_table()).replace("{obs_size_formula}", _formula(*total))
            .replace("{obs_sizes}", sizes))


if __doc__:  # None under python -OO
    __doc__ = fill_doc(__doc__)


#: uint64[13]: the four cards of each rank (card ids r, r + 13, r + 26, r + 39; docs/rules.md 1).
_RANK_MASKS = np.array([sum(1 << (r + 13 * s) for s in range(4)) for r in range(13)], dtype=np.uint64)


@njit(cache=True, inline="always")
def _set_bits(row, start, cards, value=1.0):
    """``row[start + c] = value`` for every card c of the bitmask ``cards`` (its set bits only)."""
    one = np.uint64(1)
    m = cards
    while m:
        row[start + _lowbit(m)] = value
        m &= m - one


@njit(cache=True, nogil=True)
def encode_kernel(viewer, out, hand, loose, build_cards, build_value, build_owner, captured, sweeps, in_play,
                  match_scores, stock_pos, dealer, last_trail, last_capturer, params):
    """Write the observation of seat ``viewer[b]`` of every game ``b`` into ``out[b]`` (float32[B, D]; a row of
    zeros where ``viewer[b] < 0``). The arguments after ``out`` are :func:`encoder_inputs` of a core State, whose
    last one is :func:`encoder_params`; numba code may call this directly (the AEC env's one-game path)."""
    encode_range(0, out.shape[0], viewer, out, hand, loose, build_cards, build_value, build_owner, captured, sweeps,
                 in_play, match_scores, stock_pos, dealer, last_trail, last_capturer, params)


@njit(cache=True, nogil=True)
def encode_range(lo, hi, viewer, out, hand, loose, build_cards, build_value, build_owner, captured, sweeps, in_play,
                 match_scores, stock_pos, dealer, last_trail, last_capturer, params):
    """:func:`encode_kernel` for the games ``lo <= b < hi`` only (the vector env's fused step encodes chunk by
    chunk, :mod:`cassino_env._vector_kernels`); the rows of other games are left as they are."""
    P, S, H = params[AT.P], params[AT.S], params[AT.hand_size]
    target, T, R = params[AT.target], params[AT.table_cards], params[AT.rounds_per_deal]
    K = build_cards.shape[1]
    o_hand = params[AT.hand]
    o_loose = params[AT.loose]
    o_bown = params[AT.build_owned_by]
    o_bval = params[AT.build_value]
    o_cap = params[AT.captured_by]
    o_unseen = params[AT.unseen]
    o_trail = params[AT.last_trail]
    o_builds = params[AT.builds]
    o_hs = params[AT.hand_sizes]
    o_cc = params[AT.captured_count]
    o_sc = params[AT.spades_count]
    o_sw = params[AT.sweeps]
    o_ip = params[AT.in_play]
    o_ms = params[AT.match_scores]
    o_sd = params[AT.seat_from_dealer]
    o_pr = params[AT.progress]
    o_lc = params[AT.last_capturer]
    o_ur = params[AT.unseen_by_rank]
    o_md = params[AT.most_decided]
    side_cards = np.zeros(S, dtype=np.int64)
    side_spades = np.zeros(S, dtype=np.int64)
    all_cards = np.uint64((1 << 52) - 1)
    spade_mask = SPADE_MASK
    for b in range(lo, hi):
        row = out[b]
        row[:] = 0.0
        me = np.int64(viewer[b])
        if me < 0:
            continue
        my_side = me % S
        visible = hand[b, me] | loose[b]
        _set_bits(row, o_hand, hand[b, me])
        _set_bits(row, o_loose, loose[b])
        for k in range(K):
            cards = build_cards[b, k]
            if cards == 0:
                continue
            visible |= cards
            v = build_value[b, k]
            rel = (build_owner[b, k] - me) % P
            row[o_builds + (v - 1) * (P + 1)] = 1.0
            row[o_builds + (v - 1) * (P + 1) + 1 + rel] = 1.0
            _set_bits(row, o_bown + 52 * rel, cards)
            _set_bits(row, o_bval, cards, v / 14.0)
        for s in range(S):
            side_cards[s] = 0
            side_spades[s] = 0
        for q in range(P):
            visible |= captured[b, q]
            rs = (q % S - my_side) % S
            pile = captured[b, q]
            nc = _popcount(pile)
            ns = _popcount(pile & spade_mask)
            side_cards[q % S] += nc
            side_spades[q % S] += ns
            row[o_cc + rs] += nc / 52.0
            row[o_sc + rs] += ns / 13.0
            _set_bits(row, o_cap + 52 * rs, pile)
            rq = (q - me) % P
            row[o_hs + rq] = _popcount(hand[b, q]) / H
            row[o_sw + rq] = sweeps[b, q] / 4.0
            row[o_ip + rq] = in_play[b, q] / 4.0
        m = ~visible & all_cards
        _set_bits(row, o_unseen, m)
        for r in range(13):
            # k unseen cards of rank r + 1 give k / 4 (exact in float32, as k additions of 0.25 would be)
            row[o_ur + r] = _popcount(m & _RANK_MASKS[r]) * 0.25
        if last_capturer[b] >= 0:
            row[o_lc + (last_capturer[b] - me) % P] = 1.0
        left_cards = 52
        left_spades = 13
        for s in range(S):
            left_cards -= side_cards[s]
            left_spades -= side_spades[s]
        for s in range(S):
            reach_cards = 0
            reach_spades = 0
            for t in range(S):
                if t != s:
                    reach_cards = max(reach_cards, side_cards[t] + left_cards)
                    reach_spades = max(reach_spades, side_spades[t] + left_spades)
            rs = (s - my_side) % S
            if side_cards[s] > reach_cards:
                row[o_md + 2 * rs] = 1.0
            if side_spades[s] > reach_spades:
                row[o_md + 2 * rs + 1] = 1.0
        if last_trail[b] >= 0:
            row[o_trail + last_trail[b]] = 1.0
        for s in range(S):
            row[o_ms + (s - my_side) % S] = match_scores[b, s] / target
        row[o_sd + (me - dealer[b]) % P] = 1.0
        sp = stock_pos[b]
        row[o_pr] = (52 - sp) / 52.0
        row[o_pr + 1] = ((sp - T) // (H * P)) / R
        played = 0
        for q in range(P):
            played += _popcount(hand[b, q])
        row[o_pr + 2] = (sp - T - played) / 52.0


def encoder_inputs(state, params: np.ndarray | None = None) -> tuple:
    """The arguments of :func:`encode_kernel` after ``(viewer, out)`` for a core State: its position arrays (views,
    valid for the state's life: the core steps in place), then ``params`` (default :func:`encoder_params`)."""
    if params is None:
        params = _params(state.rules)
    return (state.hand, state.loose, state.build_cards, state.build_value, state.build_owner, state.captured,
            state.sweeps, state.in_play, state.match_scores, state.stock_pos, state.dealer, state.last_trail,
            state.last_capturer, params)


def encode(state, viewer: np.ndarray, out: np.ndarray | None = None,
           blocks: Sequence[str] | None = None) -> np.ndarray:
    """Encode the observation of seat ``viewer[b]`` in every game ``b`` of a core state.

    Args:
        state: a :class:`cassino_env.core.State` with B games.
        viewer: int[B] — the seat whose view to encode (a row of zeros where it is negative).
        out: optional float32[B, D] buffer to fill.
        blocks: the block list (None: :data:`DEFAULT_BLOCKS`).

    Returns:
        float32[B, D], D = :func:`obs_size` of ``blocks`` (layout in the module docstring).

    Raises:
        ObsBlocksError: a bad block list.
    """
    rules: RuleSet = state.rules
    viewer = np.asarray(viewer, dtype=np.int64)
    lay = layout_of(rules.num_players, rules.num_sides, blocks)
    if lay.width == lay.size and not lay.added:
        if out is None:
            out = np.empty((state.batch_size, lay.size), dtype=np.float32)
        encode_kernel(viewer, out, *encoder_inputs(state, _params(rules, lay.blocks)))
        return out
    buf = np.empty((state.batch_size, lay.width), dtype=np.float32)
    encode_kernel(viewer, buf, *encoder_inputs(state, _params(rules, lay.blocks)))
    if lay.added:
        fill_added(buf, public_view(state, viewer), rules, lay)
    if out is None:
        return np.ascontiguousarray(buf[:, :lay.size])
    out[...] = buf[:, :lay.size]
    return out


def fill_added(out: np.ndarray, view: dict[str, np.ndarray], rules: RuleSet, layout: Layout) -> None:
    """Write the registered blocks of ``layout`` (:attr:`Layout.added`) into ``out`` (float32[B, >= D]) from the
    public view of the seat observed in each game; rows whose viewer is negative get zeros.

    Raises:
        ObsBlocksError: a block's ``fill`` returned an array of another shape, or values that are not finite.
    """
    if not layout.added:
        return
    nobody = np.asarray(view["viewer"]) < 0
    B = out.shape[0]
    for block, a, n in layout.added:
        values = np.asarray(block.fill(view, rules), dtype=np.float32)
        if values.shape != (B, n):
            raise ObsBlocksError(f"block {block.name!r}: fill returned shape {values.shape}, not ({B}, {n})")
        if not np.isfinite(values).all():
            raise ObsBlocksError(f"block {block.name!r}: fill returned values that are not finite")
        out[:, a:a + n] = values
        out[nobody, a:a + n] = 0.0


def encode_view(view: dict[str, np.ndarray], rules: RuleSet, blocks: Sequence[str] | None = None) -> np.ndarray:
    """float32[B, D]: the observation of ``blocks`` computed from a public view (:func:`public_view`, the vector
    env's ``obs["view"]``) rather than the state: equal to :func:`encode` of the state the view was taken from (what
    the seat may know is all the encoding reads). Agents trained on other blocks than the env's use it.

    Raises:
        ObsBlocksError: a bad block list.
    """
    lay = layout_of(rules.num_players, rules.num_sides, blocks)
    P = rules.num_players
    viewer = np.asarray(view["viewer"]).astype(np.int64)
    B = viewer.shape[0]
    sizes = np.asarray(view["hand_sizes"]).astype(np.uint64)
    hand = np.where(sizes > 0, (np.uint64(1) << sizes) - np.uint64(1), np.uint64(0))  # only their sizes are read
    rows = np.flatnonzero(viewer >= 0)
    hand[rows, viewer[rows]] = np.asarray(view["hand"], dtype=np.uint64)[rows]
    args = (np.ascontiguousarray(hand.reshape(B, P)),
            *(np.array(view[k], dtype=t) for k, t in (
                ("loose", np.uint64), ("build_cards", np.uint64), ("build_value", np.int8),
                ("build_owner", np.int8), ("captured", np.uint64), ("sweeps", np.int16), ("in_play", np.int16),
                ("match_scores", np.int16))),
            (52 - np.asarray(view["stock_size"]).astype(np.int64)).astype(np.int8),
            *(np.array(view[k], dtype=np.int8) for k in ("dealer", "last_trail", "last_capturer")),
            _params(rules, lay.blocks))
    buf = np.empty((B, lay.width), dtype=np.float32)
    encode_kernel(viewer, buf, *args)
    fill_added(buf, view, rules, lay)
    return buf if lay.width == lay.size else np.ascontiguousarray(buf[:, :lay.size])


#: Columns of the per-move feature rows (``moves`` observation): kind, played card, value, number of table cards,
#: then 52 bits of the table cards taken or used.
MOVE_FEATURES = 4 + 52


def move_features(kind: np.ndarray, card: np.ndarray, value: np.ndarray, cards: np.ndarray) -> np.ndarray:
    """Per-move feature rows from a move table: int8[..., M, 56] (``MOVE_FEATURES``).

    Columns: 0 kind (0 trail, 1 capture, 2 build, -1 padding), 1 played card id (-1 padding), 2 capture or build
    value (0 trail), 3 number of table cards taken or used, 4..55 one bit per table card id taken or used.
    Inputs are the core's ``move_kind``, ``move_card``, ``move_value`` (int8[..., M]) and ``move_cards``
    (uint64[..., M]).
    """
    bits = ((cards[..., None] >> np.arange(52, dtype=np.uint64)) & np.uint64(1)).astype(np.int8)
    out = np.empty(kind.shape + (MOVE_FEATURES,), dtype=np.int8)
    out[..., 0] = kind
    out[..., 1] = card
    out[..., 2] = value
    out[..., 3] = bits.sum(axis=-1, dtype=np.int8)
    out[..., 4:] = bits
    return out


@njit(cache=True, nogil=True)
def fill_move_rows(kind, card, value, cards, to_move, out):
    """Write :func:`move_features` rows for one game into ``out`` (int8[A, 56]): row ``a`` describes move
    ``to_move[a]`` of the move table (``kind``, ``card``, ``value``: int8[M]; ``cards``: uint64[M]), or is a padding
    row (kind -1, card -1, zeros) where ``to_move[a] < 0``. The one-game fast path of the environments; equal to
    ``move_features`` row for row."""
    A = out.shape[0]
    one = np.uint64(1)
    out[:, :] = 0
    for a in range(A):
        i = to_move[a]
        if i < 0:
            out[a, 0] = -1
            out[a, 1] = -1
            continue
        out[a, 0] = kind[i]
        out[a, 1] = card[i]
        out[a, 2] = value[i]
        m = cards[i]
        n = 0
        while m:
            out[a, 4 + _lowbit(m)] = 1
            m &= m - one
            n += 1
        out[a, 3] = n


@njit(cache=True, nogil=True)
def _popcounts(x, out):
    flat = x.reshape(-1)
    o = out.reshape(-1)
    for i in range(flat.shape[0]):
        o[i] = _popcount(flat[i])


def public_view(state, viewer: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """What seat ``viewer[b]`` (default: the seat to move) may know in each game, as card-set bitmasks.

    Bots and search agents read this instead of decoding the flat observation. Seats here are absolute (not relative
    to the viewer). Nothing hidden from the viewer is included: other hands appear only as their sizes and the
    stock only as its size. Arrays are fresh copies.

    Returns:
        ``viewer`` int8[B]; ``hand`` uint64[B] (the viewer's cards); ``loose`` uint64[B]; ``build_cards``
        uint64[B, K]; ``build_value`` int8[B, K]; ``build_owner`` int8[B, K] (-1: empty slot); ``captured``
        uint64[B, P]; ``sweeps`` int16[B, P]; ``in_play`` int16[B, P] (Cicera's in-play points, docs/rules.md 5.3);
        ``hand_sizes`` int8[B, P]; ``stock_size`` int8[B]; ``dealer``
        int8[B]; ``last_capturer`` int8[B] (-1 none); ``last_trail`` int8[B] (-1 none); ``match_scores`` int16[B, S];
        ``unseen`` uint64[B] (cards in other hands or the stock).
    """
    B = state.batch_size
    v = (state.current_player if viewer is None else np.asarray(viewer)).astype(np.int64)
    idx = np.arange(B)
    safe = np.maximum(v, 0)
    hand = np.where(v >= 0, state.hand[idx, safe], np.uint64(0))
    builds = np.bitwise_or.reduce(state.build_cards, axis=1)
    seen = hand | state.loose | builds | np.bitwise_or.reduce(state.captured, axis=1)
    hand_sizes = np.empty(state.hand.shape, dtype=np.int8)
    _popcounts(np.ascontiguousarray(state.hand), hand_sizes)
    return {
        "viewer": v.astype(np.int8),
        "hand": hand,
        "loose": state.loose.copy(),
        "build_cards": state.build_cards.copy(),
        "build_value": state.build_value.copy(),
        "build_owner": state.build_owner.copy(),
        "captured": state.captured.copy(),
        "sweeps": state.sweeps.copy(),
        "in_play": state.in_play.copy(),
        "hand_sizes": hand_sizes,
        "stock_size": (52 - state.stock_pos).astype(np.int8),
        "dealer": state.dealer.copy(),
        "last_capturer": state.last_capturer.copy(),
        "last_trail": state.last_trail.copy(),
        "match_scores": state.match_scores.copy(),
        "unseen": np.uint64((1 << 52) - 1) & ~seen,
    }


def state_obs(state, with_view: bool = True, blocks: Sequence[str] | None = None) -> dict[str, Any]:
    """The observation dict an agent reads (the vector env's, :mod:`cassino_env.vector`) for the seat to move in every
    game of a core state.

    Args:
        state: a :class:`cassino_env.core.State` with B games (the AEC env's ``core_state`` has B = 1).
        with_view: add ``view`` (:func:`cassino_env.obs.public_view`), which the bots and the search bot read.
        blocks: the observation's blocks (:mod:`cassino_env.obs`; None: ``DEFAULT_BLOCKS``).

    Returns:
        ``observation`` float32[B, D], ``action_mask`` int8[B, M], ``current_player`` int8[B], ``move_kind``,
        ``move_card``, ``move_value`` int8[B, M], ``move_cards`` uint64[B, M] (fresh copies) and ``view``.
    """
    slots = np.arange(state.max_moves)[None, :]
    out = {
        "observation": encode(state, state.current_player, blocks=blocks),
        "action_mask": (slots < state.num_moves[:, None]).astype(np.int8),
        "current_player": state.current_player.copy(),
        "move_kind": state.move_kind.copy(),
        "move_card": state.move_card.copy(),
        "move_value": state.move_value.copy(),
        "move_cards": state.move_cards.copy(),
    }
    if with_view:
        out["view"] = public_view(state)
    return out
