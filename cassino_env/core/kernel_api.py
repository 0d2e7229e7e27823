"""The core's interface for numba kernels in other modules: the packed arrays' layout and the batch step drivers.

Kernels outside the core that work on a State's packed arrays (:func:`cassino_env.core.kernel_args`) — the vector
env's fused step (:mod:`cassino_env._vector_kernels`) and the last-round search (:mod:`cassino_env.endgame`) — read
them by the names below and change them only through the drivers, so the layout has one source
(:mod:`cassino_env.core._layout`) and nothing outside the core imports its private modules (tests/test_layering.py
checks).

Drivers: ``step_range_classic(mode, lo, hi, actions, nsteps, rng, u64, i8, i16, i64, m8, mvc, res, cfg, rl)`` and
``step_range_general(...)`` run ``mode`` (``MODE_STEP``: play ``actions[b]``, a listed index, then list the next
moves) on games ``[lo, hi)``, with the classic or the general move generator (``cfg[CFG_GENERAL]`` says which the
rules need; one driver each, so a kernel compiles only the generator it calls); ``res`` gets each game's result
row (columns ``R_*``; the per-side blocks at ``res_layout(P, S)``). ``borrow`` passes an array down without numba's
reference counting (arrays that outlive the call only), ``U0`` is ``uint64(0)``, ``CHUNK`` the games per parallel
task of the core's own drivers.
"""

from ._bits import U0, borrow
from ._kernels import CHUNK, MODE_STEP
from ._kernels import _range_classic as step_range_classic
from ._kernels import _range_general as step_range_general
from ._layout import (
    BVAL,
    CFG_GENERAL,
    CFG_K,
    CFG_P,
    CFG_RESET,
    CFG_S,
    CUR,
    DEALER,
    LAST_CAP,
    LAST_TRAIL,
    NITEMS,
    OWNER,
    R_ACTOR,
    R_DEAL_DONE,
    R_MATCH_DONE,
    R_POINTS,
    R_WINNER,
    STOCK_POS,
    res_layout,
)

__all__ = [
    "BVAL", "CFG_GENERAL", "CFG_K", "CFG_P", "CFG_RESET", "CFG_S", "CHUNK", "CUR", "DEALER", "LAST_CAP", "LAST_TRAIL",
    "MODE_STEP", "NITEMS", "OWNER", "R_ACTOR", "R_DEAL_DONE", "R_MATCH_DONE", "R_POINTS", "R_WINNER", "STOCK_POS", "U0",
    "borrow", "res_layout", "step_range_classic", "step_range_general",
]
