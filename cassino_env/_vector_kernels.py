"""numba kernels of :class:`cassino_env.vector.CassinoVectorEnv`: one call per env step.

A step checks every action, plays it (the core's batch loop, :mod:`cassino_env.core.kernel_api`), lists the next
moves, and writes the next observation into the env's preallocated buffers: the encoding
(:func:`cassino_env.obs.encode_range`), the action mask, the parts of the public view that are not plain fields
of the state (viewer, its hand, hand sizes, stock size, unseen cards), and the step's report (actor, deal and match
ends, deal totals, per-seat rewards). The move tables and the other public-view fields need no work: the env
returns the state's own arrays (or copies of them).

One driver per move generator (classic, general), so a process compiles only the generator its rules use (as the
core's drivers do), and per threading mode: the serial one, and a ``parallel=True`` one that spreads chunks of
games over numba's threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .core import popcount
from .core.kernel_api import (
    BVAL,
    CFG_K,
    CFG_P,
    CFG_S,
    CUR,
    DEALER,
    LAST_CAP,
    LAST_TRAIL,
    MODE_STEP,
    NITEMS,
    OWNER,
    R_ACTOR,
    R_DEAL_DONE,
    R_MATCH_DONE,
    R_WINNER,
    STOCK_POS,
    U0,
    borrow,
    step_range_classic,
    step_range_general,
)
from .obs import encode_range

ALL_CARDS = np.uint64((1 << 52) - 1)

# Rows of the ``flags`` buffer (int8[4, B]) and of ``vu64`` (uint64[2, B]), ``vi8`` (int8[2, B]).
F_ACTOR, F_DEAL_DONE, F_MATCH_DONE, F_WINNER = 0, 1, 2, 3
V_HAND, V_UNSEEN = 0, 1
V_VIEWER, V_STOCK = 0, 1


@njit(cache=True, nogil=True)
def first_bad_action(actions, i8, i16, cfg):
    """The first game ``b`` with a player to move whose ``actions[b]`` is not in ``0 .. num_moves[b] - 1``, else
    -1 (games with nobody to move take any action, as in ``core.step``)."""
    nmcol = cfg[CFG_P] + cfg[CFG_S]
    for b in range(actions.shape[0]):
        if i8[b, CUR] >= 0:
            a = actions[b]
            if a < 0 or a >= i16[b, nmcol]:
                return b
    return -1


@njit(cache=True, nogil=True)
def _post_range(lo, hi, stepped, u64, i8, i16, res, cfg, rl, ep, obs, mask, mask_n, vu64, vi8, hsz, flags, totals,
                rewards, win):
    """Write the observation buffers of games ``lo <= b < hi`` from the state (and, when ``stepped``, the report of
    the step from the result rows ``res``)."""
    P = cfg[CFG_P]
    S = cfg[CFG_S]
    K = cfg[CFG_K]
    nmcol = P + S
    ccol = P + 1 + K
    cur = i8[:, CUR]
    encode_range(lo, hi, cur, obs, u64[:, 0:P], u64[:, P], u64[:, P + 1:P + 1 + K], i8[:, BVAL:BVAL + K],
                 i8[:, OWNER:OWNER + K], u64[:, ccol:ccol + P], i16[:, 0:P], i16[:, P + S + 1:2 * P + S + 1],
                 i16[:, P:P + S], i8[:, STOCK_POS], i8[:, DEALER], i8[:, LAST_TRAIL], i8[:, LAST_CAP], ep)
    div = np.float32(max(S - 1, 1))
    per_side = np.zeros(S, dtype=np.float32)
    for b in range(lo, hi):
        # the mask: only the entries between the previous and the new move count change
        n = i16[b, nmcol]
        prev = mask_n[b]
        for i in range(n, prev):
            mask[b, i] = 0
        for i in range(prev, n):
            mask[b, i] = 1
        mask_n[b] = n
        # the public view's derived fields (obs.public_view)
        me = i8[b, CUR]
        h = U0
        if me >= 0:
            h = u64[b, me]
        seen = h | u64[b, P]
        for k in range(K):
            seen |= u64[b, P + 1 + k]
        for q in range(P):
            seen |= u64[b, ccol + q]
            hsz[b, q] = popcount(u64[b, q])
        vu64[V_HAND, b] = h
        vu64[V_UNSEEN, b] = ALL_CARDS & ~seen
        vi8[V_VIEWER, b] = me
        vi8[V_STOCK, b] = 52 - i8[b, STOCK_POS]
        if not stepped:
            continue
        # the step's report (core.result_from_rows) and the rewards (vector.step_rewards)
        flags[F_ACTOR, b] = res[b, R_ACTOR]
        flags[F_DEAL_DONE, b] = 1 if res[b, R_DEAL_DONE] != 0 else 0
        match_done = res[b, R_MATCH_DONE] != 0
        flags[F_MATCH_DONE, b] = 1 if match_done else 0
        winner = res[b, R_WINNER]
        flags[F_WINNER, b] = winner
        tsum = np.float32(0.0)
        for s in range(S):
            t = 0
            for k in range(NITEMS):
                t += res[b, rl[1] + NITEMS * s + k]
            totals[b, s] = t
            tsum += np.float32(totals[b, s])
        for s in range(S):
            if win:
                per_side[s] = np.float32(0.0 if not match_done else (1.0 if winner == s else -1.0))
            else:
                ts = np.float32(totals[b, s])
                per_side[s] = ts - (tsum - ts) / div
        for q in range(P):
            rewards[b, q] = per_side[q % S]


@njit(cache=True, nogil=True)
def step_serial_classic(stepped, chunk, actions, res, u64, i8, i16, i64, m8, mvc, cfg, rl, ep, obs, mask, mask_n, vu64,
                        vi8, hsz, flags, totals, rewards, win):
    """One env step (``stepped``; else only the observation) with the classic generator, chunk by chunk of
    ``chunk`` games: return -1, or the first game with a bad action (then nothing was changed)."""
    B = u64.shape[0]
    if stepped:
        bad = first_bad_action(actions, i8, i16, cfg)
        if bad >= 0:
            return bad
    no_rng = np.zeros(0, dtype=np.uint64)  # MODE_STEP draws no random numbers
    for lo in range(0, B, chunk):
        hi = min(B, lo + chunk)
        if stepped:
            step_range_classic(MODE_STEP, lo, hi, borrow(actions), 0, borrow(no_rng), borrow(u64), borrow(i8),
                           borrow(i16), borrow(i64), borrow(m8), borrow(mvc), borrow(res), borrow(cfg), borrow(rl))
        _post_range(lo, hi, stepped, borrow(u64), borrow(i8), borrow(i16), borrow(res), borrow(cfg), borrow(rl),
                    borrow(ep), borrow(obs), borrow(mask), borrow(mask_n), borrow(vu64), borrow(vi8), borrow(hsz),
                    borrow(flags), borrow(totals), borrow(rewards), win)
    return -1 + 0 * no_rng.shape[0]  # no_rng is used (alive) up to here


@njit(cache=True, nogil=True)
def step_serial_general(stepped, chunk, actions, res, u64, i8, i16, i64, m8, mvc, cfg, rl, ep, obs, mask, mask_n, vu64,
                        vi8, hsz, flags, totals, rewards, win):
    """As :func:`step_serial_classic`, with the general generator."""
    B = u64.shape[0]
    if stepped:
        bad = first_bad_action(actions, i8, i16, cfg)
        if bad >= 0:
            return bad
    no_rng = np.zeros(0, dtype=np.uint64)
    for lo in range(0, B, chunk):
        hi = min(B, lo + chunk)
        if stepped:
            step_range_general(MODE_STEP, lo, hi, borrow(actions), 0, borrow(no_rng), borrow(u64), borrow(i8),
                           borrow(i16), borrow(i64), borrow(m8), borrow(mvc), borrow(res), borrow(cfg), borrow(rl))
        _post_range(lo, hi, stepped, borrow(u64), borrow(i8), borrow(i16), borrow(res), borrow(cfg), borrow(rl),
                    borrow(ep), borrow(obs), borrow(mask), borrow(mask_n), borrow(vu64), borrow(vi8), borrow(hsz),
                    borrow(flags), borrow(totals), borrow(rewards), win)
    return -1 + 0 * no_rng.shape[0]


@njit(cache=True, parallel=True)
def step_parallel_classic(stepped, chunk, actions, res, u64, i8, i16, i64, m8, mvc, cfg, rl, ep, obs, mask, mask_n,
                          vu64, vi8, hsz, flags, totals, rewards, win):
    """As :func:`step_serial_classic`, the chunks spread over numba's threads (``prange``)."""
    B = u64.shape[0]
    if stepped:
        bad = first_bad_action(actions, i8, i16, cfg)
        if bad >= 0:
            return bad
    no_rng = np.zeros(0, dtype=np.uint64)
    nch = (B + chunk - 1) // chunk
    for ch in prange(nch):
        lo = ch * chunk
        hi = min(B, lo + chunk)
        if stepped:
            step_range_classic(MODE_STEP, lo, hi, actions, 0, no_rng, u64, i8, i16, i64, m8, mvc, res, cfg, rl)
        _post_range(lo, hi, stepped, u64, i8, i16, res, cfg, rl, ep, obs, mask, mask_n, vu64, vi8, hsz, flags, totals,
                    rewards, win)
    return -1


@njit(cache=True, parallel=True)
def step_parallel_general(stepped, chunk, actions, res, u64, i8, i16, i64, m8, mvc, cfg, rl, ep, obs, mask, mask_n,
                          vu64, vi8, hsz, flags, totals, rewards, win):
    """As :func:`step_parallel_classic`, with the general generator."""
    B = u64.shape[0]
    if stepped:
        bad = first_bad_action(actions, i8, i16, cfg)
        if bad >= 0:
            return bad
    no_rng = np.zeros(0, dtype=np.uint64)
    nch = (B + chunk - 1) // chunk
    for ch in prange(nch):
        lo = ch * chunk
        hi = min(B, lo + chunk)
        if stepped:
            step_range_general(MODE_STEP, lo, hi, actions, 0, no_rng, u64, i8, i16, i64, m8, mvc, res, cfg, rl)
        _post_range(lo, hi, stepped, u64, i8, i16, res, cfg, rl, ep, obs, mask, mask_n, vu64, vi8, hsz, flags, totals,
                    rewards, win)
    return -1
