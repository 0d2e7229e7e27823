"""Column layout of the packed per-game arrays of :class:`cassino_env.core.State` (see its docstring).

The kernels read and write a handful of packed 2-D arrays so that each numba call passes few arrays (every array
argument costs reference counting); the public fields of ``State`` are numpy views into these columns.

``_u64``: uint64[B, 2P + K + 1]
    ``[0, P)`` hands, ``P`` loose cards, ``[P + 1, P + 1 + K)`` build slots (cards), ``[P + 1 + K, 2P + 1 + K)``
    captured piles per seat. K = :func:`build_slots` of the rule set.
``_i8``: int8[B, W8]
    ``[OWNER, OWNER + K)`` build owner per slot (-1: empty slot), ``[BVAL, BVAL + K)`` build value per slot,
    ``[DECK, DECK + 52)`` the deal's shuffled deck, then the scalars below.
``_i16``: int16[B, 2P + S + 1]
    ``[0, P)`` sweeps per seat, ``[P, P + S)`` match totals per side, ``P + S`` number of listed moves,
    ``[P + S + 1, 2P + S + 1)`` Cicera's in-play points per seat (docs/rules.md 5.3).
``_i64``: int64[B, 3]
    seed, match counter, deal counter.
``_cfg``: int64[NCFG]: the rule switches the kernels need, indexed by the ``CFG_*`` constants.

Build slots. Where builds of equal value merge (``builds`` standard or reservation, docs/rules.md 4.1 rule 6) a table
has
at most one build per value and slot ``v - 1`` holds the build of value ``v`` (K = the largest build value: 10, 13
or 14). With ``attach`` (docs/rules.md 4.3) builds of equal value stand side by side, so builds take the first free
slot;
every build holds at least two cards, so K = 26 slots always suffice.
"""

from __future__ import annotations

from ..reference import PRUNE_MAX_LOOSE  # noqa: F401 - the generators read it from here

MAX_SLOTS = 26  # at most 26 builds: each holds two or more of the 52 cards

# _i8 columns
OWNER = 0
BVAL = OWNER + MAX_SLOTS
DECK = BVAL + MAX_SLOTS
STOCK_POS = DECK + 52
CUR = STOCK_POS + 1
DEALER = STOCK_POS + 2
LAST_CAP = STOCK_POS + 3
LAST_TRAIL = STOCK_POS + 4
OVERFLOW = STOCK_POS + 5
MATCH_OVER = STOCK_POS + 6
W8 = STOCK_POS + 8

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
CFG_SLOW = 9  # test hook: list moves by the output-sensitive path only (classic generator)
CFG_K = 10  # build slots
CFG_GENERAL = 11  # 1: list moves with the general generator (any switches); 0: the classic generator
CFG_MAXV = 12  # largest build value (docs/rules.md 4.1 rule 3)
CFG_NUMERIC = 13  # court_values = numeric
CFG_ACEHIGH = 14
CFG_PAIRALL = 15  # court_pair_take = all
CFG_ONEGROUP = 16  # capture_mode = one_group
CFG_BUILDS = 17  # 0 none, 1 standard, 2 reservation, 3 attach
CFG_RAISEOWN = 18
CFG_RAISETABLE = 19
CFG_RESOLVE = 20  # owner_rule = resolve_next_turn
CFG_SWEEPLAST = 21  # sweep_on_last_play
CFG_RESLAST = 22  # residue_to = last_player
CFG_SCORING = 23  # 0 standard, 1 bga, 2 cicera
CFG_INPLAY = 24  # in_play_bonuses
NCFG = 25

BUILDS_CODE = {"none": 0, "standard": 1, "reservation": 2, "attach": 3}
SCORING_CODE = {"standard": 0, "bga": 1, "cicera": 2}

# StepResult columns of the packed int16 result row (``res``), after the per-seat/per-side blocks are placed by
# res_layout(P, S).
R_ACTOR = 0
R_DEAL_DONE = 1
R_MATCH_DONE = 2
R_WINNER = 3
R_POINTS = 4

#: Scoring items of docs/rules.md 5 (every scoring), in the order of ``StepResult.deal_items``'s last axis
# (docs/interchange.md
#: names). Items a scoring does not have are 0: standard and bga have the first six, cicera all but ``aces``.
ITEMS = ("cards", "spades", "big_casino", "little_casino", "aces", "sweeps", "napula", "jack_of_hearts", "in_play")
NITEMS = len(ITEMS)
#: The items of each ``scoring`` (docs/rules.md 5.1-5.3), as the reference engine's tally names them.
SCORING_ITEMS = {
    "standard": ITEMS[:6],
    "bga": ITEMS[:6],
    "cicera": ("cards", "spades", "napula", "little_casino", "big_casino", "jack_of_hearts", "sweeps", "in_play"),
}


def build_slots(rules) -> int:
    """K, the build slots of a rule set (module docstring): 26 with ``attach`` builds, else the largest value."""
    return MAX_SLOTS if rules.builds == "attach" else rules.max_value


def u64_width(p: int, k: int) -> int:
    """Columns of ``_u64`` for ``p`` seats and ``k`` build slots."""
    return 2 * p + 1 + k


def i16_width(p: int, s: int) -> int:
    """Columns of ``_i16`` for ``p`` seats and ``s`` sides."""
    return 2 * p + s + 1


def res_layout(p: int, s: int) -> tuple[int, int, int, int, int]:
    """(totals, items, card counts, spade counts, width) columns of the packed result row."""
    totals = R_POINTS + p
    items = totals + s
    ncards = items + NITEMS * s
    nspades = ncards + s
    return totals, items, ncards, nspades, nspades + s
