"""Column layout of the packed per-game arrays of :class:`cassino_env.core.State` (see its docstring).

The kernels read and write a handful of packed 2-D arrays so that each numba call passes few arrays (every array
argument costs reference counting); the public fields of ``State`` are numpy views into these columns.

``_u64``: uint64[B, 2P + 11]
    ``[0, P)`` hands, ``P`` loose cards, ``[P + 1, P + 11)`` build cards by value 1..10, ``[P + 11, 2P + 11)``
    captured piles per seat.
``_i8``: int8[B, W8]
    ``[0, 10)`` build owner by value 1..10 (-1: no build), ``[10, 62)`` the deal's shuffled deck, then the scalars
    below.
``_i16``: int16[B, P + S + 1]
    ``[0, P)`` sweeps per seat, ``[P, P + S)`` match totals per side, ``P + S`` number of listed moves.
``_i64``: int64[B, 3]
    seed, match counter, deal counter.
``_cfg``: int64[NCFG]: the rule switches the kernels need, indexed by the ``CFG_*`` constants.
"""

from __future__ import annotations

MAX_BUILDS = 10  # one build per value 1..10: builds of equal value merge (RULES.md 4.1 rule 6)

# _i8 columns
OWNER = 0
DECK = 10
STOCK_POS = 62
CUR = 63
DEALER = 64
LAST_CAP = 65
LAST_TRAIL = 66
OVERFLOW = 67
MATCH_OVER = 68
W8 = 72

# _i64 columns
SEED = 0
MATCH_INDEX = 1
DEAL_INDEX = 2
W64I = 3

# _cfg entries
CFG_P = 0
CFG_S = 1
CFG_T = 2
CFG_H = 3
CFG_TARGET = 4
CFG_SWEEP = 5
CFG_M = 6
CFG_PRUNE = 7
CFG_RESET = 8
CFG_SLOW = 9  # test hook: list moves by the output-sensitive path only
NCFG = 10

# StepResult columns of the packed int16 result row (``res``), after the per-seat/per-side blocks are placed by
# res_layout(P, S).
R_ACTOR = 0
R_DEAL_DONE = 1
R_MATCH_DONE = 2
R_WINNER = 3
R_POINTS = 4

#: Scoring items of RULES.md 5.1, in the order of ``StepResult.deal_items``'s last axis (INTERCHANGE.md names).
ITEMS = ("cards", "spades", "big_casino", "little_casino", "aces", "sweeps")
NITEMS = len(ITEMS)


def u64_width(p: int) -> int:
    """Columns of ``_u64`` for ``p`` seats."""
    return 2 * p + 11


def i16_width(p: int, s: int) -> int:
    """Columns of ``_i16`` for ``p`` seats and ``s`` sides."""
    return p + s + 1


def res_layout(p: int, s: int) -> tuple[int, int, int, int, int]:
    """(totals, items, card counts, spade counts, width) columns of the packed result row."""
    totals = R_POINTS + p
    items = totals + s
    ncards = items + NITEMS * s
    nspades = ncards + s
    return totals, items, ncards, nspades, nspades + s
