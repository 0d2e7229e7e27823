"""Bit tables, bit-twiddling intrinsics and the counter-based RNG of the batched core.

Everything here is computed once at import and read by the numba kernels as compile-time constants.
Card sets are ``uint64`` bitmasks over card ids (bit ``c`` set for card id ``c``, docs/rules.md 1).

numba promotes ``uint64`` mixed with ``int64`` to ``float64``, so every constant that meets a mask is a
``np.uint64`` here (``U1``, ``BIT``, ``S32``...).
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from ..cards import BIG_CASINO, LITTLE_CASINO, NUM_CARDS
from ..cards import RANK as RANK  # int8[52]: rank 1..13 of each card id, for the kernels
from ..cards import SPADE_MASK as SPADE_MASK  # the 13 spades, for the kernels
from ..cards import SUIT_MASK as SUIT_MASK  # uint64[4]: the cards of each suit, for the kernels

U0 = np.uint64(0)
U1 = np.uint64(1)
#: uint64[64]: BIT[i] == 1 << i (also 2**i for the lexicographic rank of card sets).
BIT = np.array([1 << i for i in range(64)], dtype=np.uint64)
#: uint64[14]: RANK_MASK[r] = the four cards of rank r (index 0 unused). For numerals rank == value (classic).
RANK_MASK = np.zeros(14, dtype=np.uint64)
for _c in range(NUM_CARDS):
    RANK_MASK[_c % 13 + 1] |= np.uint64(1 << _c)
#: uint64: the 40 numerals A..10 (docs/rules.md 1, court_values=none).
NUMERALS = np.uint64(sum(1 << c for c in range(NUM_CARDS) if c % 13 < 10))
#: uint64: the four aces.
ACE_MASK = RANK_MASK[1]
BIG_CASINO_BIT = np.uint64(1 << BIG_CASINO)
LITTLE_CASINO_BIT = np.uint64(1 << LITTLE_CASINO)

# splitmix64 constants (Steele, Lea, Flood 2014).
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_SALT_MATCH = np.uint64(0xD1B54A32D192ED03)
_SALT_DEAL = np.uint64(0x8CB92BA72F3D8DD7)
S27 = np.uint64(27)
S30 = np.uint64(30)
S31 = np.uint64(31)
S32 = np.uint64(32)


@intrinsic
def popcount(typingctx, x):
    """Number of set bits of an integer (LLVM ctpop), as int64."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        return context.cast(builder, builder.ctpop(args[0]), sig.args[0], types.int64)

    return types.int64(x), codegen


@intrinsic
def lowbit(typingctx, x):
    """Index of the lowest set bit (LLVM cttz), as int64; 64 for 0."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        from llvmlite import ir

        tz = builder.cttz(args[0], ir.Constant(ir.IntType(1), 0))
        return context.cast(builder, tz, sig.args[0], types.int64)

    return types.int64(x), codegen


@intrinsic
def highbit(typingctx, x):
    """Index of the highest set bit (63 - LLVM ctlz for uint64), as int64; -1 for 0."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        from llvmlite import ir

        lz = builder.ctlz(args[0], ir.Constant(ir.IntType(1), 0))
        width = ir.Constant(args[0].type, x.bitwidth - 1)
        return context.cast(builder, builder.sub(width, lz), sig.args[0], types.int64)

    return types.int64(x), codegen


@intrinsic
def borrow(typingctx, ary):
    """The same array without its owner (a null meminfo): a view numba does no reference counting on.

    Passing borrowed arrays down the call tree spares the atomic increments and decrements numba's reference counting
    does at every call with array arguments (numba's own ``prange`` bodies get their arrays this way). Only for
    arrays that outlive every use of the view, e.g. a kernel's own arguments, which its caller holds.
    """
    if not isinstance(ary, types.Array):
        return None

    def codegen(context, builder, sig, args):
        from numba.core import cgutils

        view = cgutils.create_struct_proxy(sig.args[0])(context, builder, value=args[0])
        view.meminfo = cgutils.get_null_value(view.meminfo.type)
        return view._getvalue()

    return ary(ary), codegen


@njit(cache=True, nogil=True)
def mix64(z):
    """The splitmix64 output function: a bijective 64-bit mixer (z: uint64 -> uint64)."""
    z = (z ^ (z >> S30)) * _MIX1
    z = (z ^ (z >> S27)) * _MIX2
    return z ^ (z >> S31)


@njit(cache=True, nogil=True)
def deal_key(seed, match_index, deal_index):
    """uint64 RNG key of one deal: a pure function of (seed, match counter, deal counter)."""
    h = mix64(np.uint64(seed) + GOLDEN)
    h = mix64(h ^ (np.uint64(match_index) * _SALT_MATCH + GOLDEN))
    return mix64(h ^ (np.uint64(deal_index) * _SALT_DEAL + GOLDEN))


@njit(cache=True, nogil=True)
def below(r, n):
    """Map a uniform uint64 ``r`` to 0..n-1 (multiply-shift on the top 32 bits; n < 2**31)."""
    return np.int64(((r >> S32) * np.uint64(n)) >> S32)


@njit(cache=True, nogil=True)
def shuffle_into(out, seed, match_index, deal_index):
    """Write the shuffled deck of one deal into ``out`` (int8[52]): Fisher-Yates driven by splitmix64."""
    for i in range(NUM_CARDS):
        out[i] = i
    x = deal_key(seed, match_index, deal_index)
    for i in range(NUM_CARDS - 1, 0, -1):
        x += GOLDEN
        j = below(mix64(x), i + 1)
        t = out[i]
        out[i] = out[j]
        out[j] = t


@njit(cache=True, nogil=True)
def lexrank(m):
    """Rank of card set ``m`` in the canonical order of sorted card-id lists (a proper prefix first).

    It is the preorder index of ``m`` in the trie of all subsets of 0..51 whose children are added in increasing
    card id; an integer below 2**53. Comparing ranks compares the sorted lists lexicographically.
    """
    r = np.uint64(popcount(m))
    hi = BIT[52]
    x = m
    while x:
        q = lowbit(x)
        x &= x - U1
        r += hi - BIT[52 - q]
        hi = BIT[51 - q]
    return r
