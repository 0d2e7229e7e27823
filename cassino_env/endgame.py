"""Exact play of a deal's last round with two seats: the rest of the deal as a game of perfect information.

With two seats, once the stock is empty (docs/rules.md 2.3: no round is left to deal) every card the seat to move has
not seen is in the other seat's hand: the table, the builds and both captured piles are face up (docs/rules.md 2.2),
and the seat saw its own hand. The rest of the deal is then a two-player zero-sum game of perfect information of at
most ``2 * hand_size`` plies, and :func:`solve` finds its exact minimax value by depth-first alpha-beta search over
the batched core's own kernels (the moves are the core's, the deal's end gives the residue and scores it as
docs/rules.md 2.4 and 5 say), so no rule is restated here.

The value of a position, for the seat to move at the root, is its deal points minus the other seat's (docs/rules.md
5), plus ``match_bonus`` when the deal ends the match in its favour and minus ``match_bonus`` when it ends it against
it (docs/rules.md 2.6). The default bonus (:data:`MATCH_BONUS`) exceeds any deal margin, so the search first wins (or
saves) the match, then maximises the margin.

Nothing hidden is read: the exact state is rebuilt from the seat's public view
(:func:`cassino_env.determinize.determinize` has exactly one deal of the hidden cards to choose from).

>>> import numpy as np
>>> from cassino_env.rules import make_rules
>>> from cassino_env.vector import CassinoVectorEnv
>>> env = CassinoVectorEnv(4, make_rules("classic"), seed=3)
>>> obs, _ = env.reset()
>>> while not solvable(env.rules, obs["view"]).all():  # trail until every game reaches its last round
...     obs, *_ = env.step(np.zeros(4, dtype=np.int64))
>>> best, value, nodes = solve(env.rules, obs)
>>> bool((obs["action_mask"][np.arange(4), best] == 1).all()), value.dtype.name
(True, 'float64')
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, prange

from . import core
from .cards import NUM_CARDS
from .core.kernel_api import (
    CFG_GENERAL,
    CFG_P,
    CFG_RESET,
    CFG_S,
    CUR,
    MODE_STEP,
    NITEMS,
    R_DEAL_DONE,
    R_MATCH_DONE,
    R_WINNER,
    res_layout,
    step_range_classic,
    step_range_general,
)
from .determinize import determinize, moves_of
from .rules import RuleSet

#: Added to (taken from) a leaf whose deal ends the match won (lost) for the root seat: more than any deal margin,
#: so winning the match comes first.
MATCH_BONUS = 1000.0
#: The most cards the two hands may hold together for a last round to be searched (:func:`solvable`): the search
#: grows about tenfold per card pair, from 1,221 positions (1.2 ms) at 8 cards (every two-seat preset's last round)
#: to about 100,000 (0.1 s) at 12 and millions (over 10 s) at 16, which only a rule set with larger hands reaches.
MAX_SEARCH_CARDS = 12
#: The default search budget of one game, positions (:func:`solve`'s ``max_nodes``): about 0.3 s here. A last round
#: of the presets' 8 cards needs about 1,200 at its first move, but a crowded table (dozens of loose cards, as when
#: the players only trail) gives thousands of ways to capture and millions of positions; past the budget the search
#: gives up and the move tried first stands (value NaN).
MAX_NODES = 200_000

_NITEMS = NITEMS
_INF = np.inf


def solvable(rules: RuleSet, view: dict[str, np.ndarray]) -> np.ndarray:
    """bool[B]: games whose seat to move knows every card still in play (two seats, stock empty), with at most
    :data:`MAX_SEARCH_CARDS` cards in the two hands (a larger last round is not searched).

    Args:
        rules: the rules of the games (only two-seat rule sets are ever solvable).
        view: :func:`cassino_env.obs.public_view` of the seat to move (``obs["view"]`` of the vector env).
    """
    B = len(view["viewer"])
    if rules.num_players != 2:
        return np.zeros(B, dtype=bool)
    v = np.asarray(view["viewer"]).astype(np.int64)
    other = np.asarray(view["hand_sizes"])[np.arange(B), np.clip(1 - v, 0, 1)].astype(np.int64)
    unseen = np.bitwise_count(np.asarray(view["unseen"], dtype=np.uint64)).astype(np.int64)
    own = np.asarray(view["hand_sizes"])[np.arange(B), np.clip(v, 0, 1)].astype(np.int64)
    return (v >= 0) & (np.asarray(view["stock_size"]) == 0) & (unseen == other) & (own + other <= MAX_SEARCH_CARDS)


def _check_bonus(match_bonus: Any) -> float:
    """``match_bonus`` as a float: a real number, finite and >= 0 (0: the deal margin alone), else a ValueError."""
    if isinstance(match_bonus, (bool, np.bool_)) or not isinstance(match_bonus, (int, float, np.integer, np.floating)):
        raise ValueError(f"match_bonus: expected a number >= 0 (points), got {type(match_bonus).__name__} "
                         f"{match_bonus!r}")
    if not (np.isfinite(match_bonus) and match_bonus >= 0):
        raise ValueError(f"match_bonus: expected a finite number >= 0 (points; 0: the deal margin alone), got "
                         f"{match_bonus!r}")
    return float(match_bonus)


def _check_budget(max_nodes: Any) -> int:
    """``max_nodes`` as the kernel's int (0: no limit): an integer >= 1 or None, else a ValueError."""
    if max_nodes is None:
        return 0
    if isinstance(max_nodes, (bool, np.bool_)) or not isinstance(max_nodes, (int, np.integer)) or max_nodes < 1:
        raise ValueError(f"max_nodes: expected an integer >= 1 (positions searched per game) or None (no limit), got "
                         f"{type(max_nodes).__name__} {max_nodes!r}")
    return int(max_nodes)


@njit(cache=True, nogil=True)
def _leaf(res, d, me, rl, bonus):
    """The root seat's value of the deal that ended at stack row d."""
    mine = 0
    other = 0
    for k in range(_NITEMS):
        mine += res[d, rl[1] + _NITEMS * me + k]
        other += res[d, rl[1] + _NITEMS * (1 - me) + k]
    v = float(mine - other)
    if res[d, R_MATCH_DONE] != 0:
        v += bonus if res[d, R_WINNER] == me else -bonus
    return v


@njit(cache=True, nogil=True)
def _order(sm8, d, n, first, ords):
    """Search order of the n moves of stack row d: ``first`` (if >= 0), then captures, builds and trails (listing
    order within each kind)."""
    j = 0
    if first >= 0:
        ords[d, 0] = first
        j = 1
    for kind in (1, 2, 0):
        for i in range(n):
            if sm8[d, 0, i] == kind and i != first:
                ords[d, j] = i
                j += 1


@njit(cache=True, nogil=True)
def _solve_one(b, first, u64, i8, i16, i64, m8, mvc, cfg, rl, res_width, bonus, max_nodes):
    """Alpha-beta search of game b of the packed arrays (an exact state; ``cfg`` with auto-reset off) to the deal's
    end, on a stack of its own; returns (best root move, minimax value, nodes). Of equally good root moves the first
    tried wins: ``first`` (if >= 0), then captures, builds and trails. After ``max_nodes`` positions (if > 0) it
    gives up: (the move tried first, NaN, nodes)."""
    P = cfg[CFG_P]
    S = cfg[CFG_S]
    nmcol = P + S
    M = m8.shape[2]
    plies = 0
    for p in range(P):
        plies += core.popcount(u64[b, p])
    R = plies + 2
    su64 = np.zeros((R, u64.shape[1]), dtype=np.uint64)
    si8 = np.zeros((R, i8.shape[1]), dtype=np.int8)
    si16 = np.zeros((R, i16.shape[1]), dtype=np.int16)
    si64 = np.zeros((R, i64.shape[1]), dtype=np.int64)
    sm8 = np.zeros((R, 3, M), dtype=np.int8)
    smvc = np.zeros((R, M), dtype=np.uint64)
    res = np.zeros((R, res_width), dtype=np.int16)
    acts = np.zeros(R, dtype=np.int64)
    rng = np.zeros(R, dtype=np.uint64)
    ords = np.zeros((R, M), dtype=np.int64)
    cnt = np.zeros(R, dtype=np.int64)
    pos = np.zeros(R, dtype=np.int64)
    chosen = np.zeros(R, dtype=np.int64)
    alpha = np.zeros(R, dtype=np.float64)
    beta = np.zeros(R, dtype=np.float64)
    best = np.zeros(R, dtype=np.float64)
    maxing = np.zeros(R, dtype=np.bool_)
    general = cfg[CFG_GENERAL] != 0
    me = i8[b, CUR]
    su64[0, :] = u64[b, :]
    si8[0, :] = i8[b, :]
    si16[0, :] = i16[b, :]
    si64[0, :] = i64[b, :]
    sm8[0, :, :] = m8[b, :, :]
    smvc[0, :] = mvc[b, :]
    cnt[0] = si16[0, nmcol]
    _order(sm8, 0, cnt[0], first, ords)
    pos[0] = 0
    alpha[0] = -_INF
    beta[0] = _INF
    best[0] = -_INF
    maxing[0] = True
    best_move = ords[0, 0]
    nodes = 0
    d = 0
    while True:
        if pos[d] < cnt[d] and alpha[d] < beta[d]:
            a = ords[d, pos[d]]
            pos[d] += 1
            chosen[d] = a
            e = d + 1
            su64[e, :] = su64[d, :]
            si8[e, :] = si8[d, :]
            si16[e, :] = si16[d, :]
            si64[e, :] = si64[d, :]
            for k in range(3):  # the move played is all the child's step reads of the move table
                sm8[e, k, 0] = sm8[d, k, a]
            smvc[e, 0] = smvc[d, a]
            acts[e] = 0
            if general:
                step_range_general(MODE_STEP, e, e + 1, acts, 0, rng, su64, si8, si16, si64, sm8, smvc, res, cfg, rl)
            else:
                step_range_classic(MODE_STEP, e, e + 1, acts, 0, rng, su64, si8, si16, si64, sm8, smvc, res, cfg, rl)
            nodes += 1
            if max_nodes > 0 and nodes >= max_nodes:
                return ords[0, 0], np.nan, nodes
            if res[e, R_DEAL_DONE] == 0:
                d = e
                cnt[d] = si16[d, nmcol]
                pos[d] = 0
                _order(sm8, d, cnt[d], -1, ords)
                alpha[d] = alpha[d - 1]
                beta[d] = beta[d - 1]
                maxing[d] = si8[d, CUR] == me
                best[d] = -_INF if maxing[d] else _INF
                continue
            v = _leaf(res, e, me, rl, bonus)
        else:
            if d == 0:
                break
            v = best[d]
            d -= 1
            a = chosen[d]
        if maxing[d]:
            if v > best[d]:
                best[d] = v
                if d == 0:
                    best_move = a
            if v > alpha[d]:
                alpha[d] = v
        else:
            if v < best[d]:
                best[d] = v
            if v < beta[d]:
                beta[d] = v
    return best_move, best[0], nodes + 0 * S


@njit(cache=True, nogil=True)
def solve_kernel(u64, i8, i16, i64, m8, mvc, cfg, rl, res_width, rows, first, bonus, max_nodes, best_out, value_out,
                 nodes_out):
    """:func:`_solve_one` for games ``rows[i]`` of the packed arrays, one after the other, into ``*_out[i]``."""
    for i in range(rows.shape[0]):
        best_out[i], value_out[i], nodes_out[i] = _solve_one(rows[i], first[i], u64, i8, i16, i64, m8, mvc, cfg, rl,
                                                              res_width, bonus, max_nodes)
    return rows.shape[0]


@njit(cache=True, parallel=True)
def solve_kernel_parallel(u64, i8, i16, i64, m8, mvc, cfg, rl, res_width, rows, first, bonus, max_nodes, best_out,
                          value_out, nodes_out):
    """:func:`solve_kernel` with the games spread over numba's threads."""
    for i in prange(rows.shape[0]):
        best_out[i], value_out[i], nodes_out[i] = _solve_one(rows[i], first[i], u64, i8, i16, i64, m8, mvc, cfg, rl,
                                                              res_width, bonus, max_nodes)
    return rows.shape[0]


def solve_state(state: core.State, rows: np.ndarray | None = None, first: np.ndarray | None = None,
                match_bonus: float = MATCH_BONUS, parallel: bool = False,
                max_nodes: int | None = MAX_NODES) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The exact best move of games ``rows`` of a core State whose hands are the real ones (nothing is hidden from
    the search: a :func:`cassino_env.determinize.determinize` sample, or the true state where the seat to move knows
    every card, :func:`solvable`). The state is not changed.

    Args:
        state: a two-seat State.
        rows: int[K], the indices of the games to solve (default every game; not a bool mask); each must have a seat
            to move, an empty stock and at most :data:`MAX_SEARCH_CARDS` cards in the two hands.
        first: int64[K], a listed move per game tried first (ties go to it; -1: none); None: captures first.
        match_bonus: see :data:`MATCH_BONUS`; a finite number >= 0 (0: the deal margin alone).
        parallel: spread the games over numba's threads.
        max_nodes: the search budget per game, as :func:`solve`.

    Returns:
        ``(best int64[K], value float64[K], nodes int64[K])``, as :func:`solve`.

    Raises:
        ValueError: more than two seats, ``rows`` that are not game indices, a game with cards in the stock, nobody
            to move or too many cards in the hands, a ``first`` that is not a listed move, or a bad ``match_bonus`` or
            ``max_nodes``.
    """
    if state.num_players != 2:
        raise ValueError(f"endgame: the exact last round needs two seats, the state has {state.num_players}")
    bonus = _check_bonus(match_bonus)
    budget = _check_budget(max_nodes)
    if rows is None:
        rows = np.arange(state.batch_size)
    else:
        rows = np.asarray(rows)
        if rows.size == 0:
            rows = rows.reshape(0).astype(np.int64)
        if rows.ndim != 1 or not np.issubdtype(rows.dtype, np.integer):
            raise ValueError(f"rows: expected int[K], the indices of the games to solve (not a bool mask), got "
                             f"{rows.dtype}{list(rows.shape)}")
        out = np.flatnonzero((rows < 0) | (rows >= state.batch_size))
        if out.size:
            raise ValueError(f"rows[{int(out[0])}] = {int(rows[out[0]])} is not a game of the state (0 .. "
                             f"{state.batch_size - 1})")
        rows = rows.astype(np.int64)
    held = np.bitwise_count(state.hand[rows]).sum(axis=1) if rows.size else np.zeros(0, dtype=np.int64)
    big = np.flatnonzero(held > MAX_SEARCH_CARDS)
    if big.size:
        raise ValueError(f"endgame: game {int(rows[big[0]])} has {int(held[big[0]])} cards in the hands, more than "
                         f"the {MAX_SEARCH_CARDS} searched (MAX_SEARCH_CARDS)")
    bad = np.flatnonzero((state.stock_pos[rows] < NUM_CARDS) | (state.current_player[rows] < 0))
    if bad.size:
        raise ValueError(f"endgame: game {int(rows[bad[0]])} is not in a last round (cards in the stock or nobody "
                         "to move)")
    K = len(rows)
    if first is None:
        first = np.full(K, -1, dtype=np.int64)
    else:  # an index past the list would play the move table's padding
        first = np.asarray(first)
        if first.shape != (K,) or not np.issubdtype(first.dtype, np.integer):
            raise ValueError(f"first: expected int[{K}], a listed move (or -1) per game, got "
                             f"{first.dtype}{list(first.shape)}")
        first = first.astype(np.int64)
        off = np.flatnonzero((first < -1) | (first >= state.num_moves[rows]))
        if off.size:
            raise ValueError(f"first[{int(off[0])}] = {int(first[off[0]])} is not a listed move (game "
                             f"{int(rows[off[0]])} lists {int(state.num_moves[rows[off[0]]])})")
    u64, i8, i16, i64, m8, mvc, cfg, rl = core.kernel_args(state)
    cfg = cfg.copy()
    cfg[CFG_RESET] = 0  # the search stops at the deal's end
    best = np.zeros(K, dtype=np.int64)
    value = np.zeros(K, dtype=np.float64)
    nodes = np.zeros(K, dtype=np.int64)
    kernel = solve_kernel_parallel if parallel else solve_kernel
    width = res_layout(state.num_players, state.num_sides)[4]
    kernel(u64, i8, i16, i64, m8, mvc, cfg, rl, width, rows, first, bonus, budget, best, value, nodes)
    return best, value, nodes


def solve(rules: RuleSet, obs: dict[str, Any], first: np.ndarray | None = None,
          match_bonus: float = MATCH_BONUS, parallel: bool = False,
          max_nodes: int | None = MAX_NODES) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The exact best move of every game of ``obs``, which must all be :func:`solvable`.

    Args:
        rules: the rules of the games (two seats).
        obs: a vector-env observation dict of B games made with ``with_view=True`` (``view`` and the move table).
        first: int64[B], a listed move per game tried first (e.g. a policy's choice): where it is as good as the best,
            it is returned, so ties go to it. None: moves are tried captures first.
        match_bonus: see :data:`MATCH_BONUS`; a finite number >= 0 (0: the deal margin alone).
        parallel: spread the games over numba's threads.
        max_nodes: the most positions searched per game (default :data:`MAX_NODES`; None: no limit); a game whose
            search reaches it is given up: its move is the one tried first (``first``, else the first capture), its
            value NaN.

    Returns:
        ``(best int64[B], value float64[B], nodes int64[B])``: a best listed move, its minimax value for the seat to
        move (points of deal margin, plus or minus ``match_bonus``; NaN: the search was given up) and the positions
        searched.

    Raises:
        ValueError: a game that is not solvable (more than two seats, cards left in the stock, an unseen card
            outside the other hand, or more than :data:`MAX_SEARCH_CARDS` cards in the hands), no ``view`` in ``obs``,
            a ``first`` that is not a listed move of each game, or a bad ``match_bonus`` or ``max_nodes``.
    """
    _check_bonus(match_bonus)
    _check_budget(max_nodes)
    if "view" not in obs:
        raise ValueError("endgame.solve reads obs['view']: create the environment with with_view=True")
    view = obs["view"]
    ok = solvable(rules, view)
    if not ok.all():
        bad = int(np.flatnonzero(~ok)[0])
        raise ValueError(f"game {bad} is not a two-seat last round with every unseen card in the other hand and at "
                         f"most {MAX_SEARCH_CARDS} cards in the hands")
    if first is not None:  # an index past the list would play the move table's padding
        first = np.asarray(first)
        n = np.asarray(obs["action_mask"]).sum(axis=1)
        if first.shape != n.shape or not np.issubdtype(first.dtype, np.integer):
            raise ValueError(f"first: expected int[{len(n)}], a listed move per game, got "
                             f"{first.dtype}{list(first.shape)}")
        off = np.flatnonzero((first < 0) | (first >= n))
        if off.size:
            g = int(off[0])
            raise ValueError(f"first[{g}] = {int(first[g])} is not a listed move (game {g} lists {int(n[g])})")
    st = determinize(rules, view, moves_of(obs), 1, np.random.default_rng(0))
    return solve_state(st, first=first, match_bonus=match_bonus, parallel=parallel, max_nodes=max_nodes)
