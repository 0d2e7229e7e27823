"""A scripted bot's plies in every line of a search, in one numba call (:func:`play_plies`).

The network-guided search (:mod:`agents.search`) plays, after each candidate move, ``depth`` plies of the
``advanced`` bot in every sampled line before its critic reads the position. Ply by ply that is a Python round trip
each time (the bot's inputs read off the State, its scoring kernel, the core's step, the step's result rows made into
arrays); here every ply of a chunk of lines runs inside one kernel: the bot's inputs as
:func:`agents.bots.state_inputs` gives them, its move by :func:`agents.bots.score_kernel`, then the rules core's
:func:`cassino_env.core.step_kernel` on the chunk's rows. Games are independent, so the moves and the States are
those of ply-by-ply play, on one thread or over numba's threads (``tests/test_bots.py``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numba import njit, prange

from agents.bots import F_KEEP, ScriptedBot, score_kernel, seat_knowledge
from cassino_env import core
from cassino_env.cards import NUM_CARDS
from cassino_env.core import check_numba_cache, step_kernel

check_numba_cache(__file__, depends_on=[Path(__file__).with_name("bots.py")])  # its kernels inline the bots'

#: Most lines per ``prange`` task (as the bots' and the core's parallel drivers).
CHUNK = 64
#: The most plies :func:`play_plies` takes (a deal ends long before; the kernel counts them in int64).
MAX_PLIES = 2**31


@njit(cache=True, nogil=True)
def _plies_range(lo, hi, plies, current_player, hands, loose, build_cards, build_value, build_owner, captured,
                 stock_pos, last_trail, num_moves, mk, mc, mv, mcards, u64, i8, i16, i64, m8, mvc, core_cfg, rl,
                 cfg, cap_bits, same_cap, item_val, pcards, pvals, wbase, w, flags, ended, rows):
    """Games ``lo .. hi - 1`` of :func:`play_plies`: each ply, the inputs :func:`agents.bots.state_inputs` gives,
    the bot's best move by :func:`agents.bots.score_kernel`, then that move stepped by the rules core's
    :func:`cassino_env.core.step_kernel` (the packed arrays' rows ``lo .. hi - 1``); a game whose deal ends is noted
    once, with its result row."""
    n = hi - lo
    K = build_cards.shape[1]
    S = captured.shape[1]
    loose_c = np.empty(n, dtype=np.uint64)
    bc = np.empty((n, K), dtype=np.uint64)
    bv = np.empty((n, K), dtype=np.int64)
    bo = np.empty((n, K), dtype=np.int64)
    cap = np.empty((n, S), dtype=np.uint64)
    stock = np.empty(n, dtype=np.int64)
    nm = np.empty(n, dtype=np.int64)
    lt = np.empty(n, dtype=np.int64)
    res = np.zeros((n, rows.shape[1]), dtype=np.int16)
    scores = np.empty((0, 0), dtype=np.float64)
    feats = np.zeros((0, 0, 0), dtype=np.float64)
    for ply in range(1, plies + 1):
        cur, hand, sizes, unseen = seat_knowledge(current_player[lo:hi], hands[lo:hi], loose[lo:hi],
                                                  build_cards[lo:hi], captured[lo:hi])
        for j in range(n):  # the rest of state_inputs' tuple: the chunk's rows, contiguous and in its dtypes
            b = lo + j
            for k in range(K):
                bc[j, k] = build_cards[b, k]
                bv[j, k] = build_value[b, k]
                bo[j, k] = build_owner[b, k]
            for k in range(S):
                cap[j, k] = captured[b, k]
            loose_c[j] = loose[b]
            stock[j] = NUM_CARDS - np.int64(stock_pos[b])
            nm[j] = num_moves[b]
            lt[j] = last_trail[b]
        best = score_kernel(cur, hand, sizes, unseen, loose_c, bc, bv, bo, cap, stock, mk[lo:hi], mc[lo:hi],
                            mv[lo:hi], mcards[lo:hi], nm, lt, cfg, cap_bits, same_cap, item_val, pcards, pvals,
                            wbase, w, flags, scores, feats)
        step_kernel(best, res, u64[lo:hi], i8[lo:hi], i16[lo:hi], i64[lo:hi], m8[lo:hi], mvc[lo:hi], core_cfg, rl)
        live = 0
        for j in range(n):
            if current_player[lo + j] >= 0:
                live += 1
            elif cur[j] >= 0:  # this ply ended the deal
                ended[lo + j] = ply
                for k in range(rows.shape[1]):
                    rows[lo + j, k] = res[j, k]
        if live == 0:  # every deal of the chunk is over: the plies left would play nothing
            break


@njit(cache=True, parallel=True)
def _plies_chunks(plies, current_player, hands, loose, build_cards, build_value, build_owner, captured, stock_pos,
                  last_trail, num_moves, mk, mc, mv, mcards, u64, i8, i16, i64, m8, mvc, core_cfg, rl, cfg, cap_bits,
                  same_cap, item_val, pcards, pvals, wbase, w, flags, ended, rows, chunk):
    """:func:`_plies_range` over chunks of ``chunk`` games spread over numba's threads (games are independent)."""
    B = u64.shape[0]
    nch = (B + chunk - 1) // chunk
    for ch in prange(nch):
        s = ch * chunk
        _plies_range(s, min(B, s + chunk), plies, current_player, hands, loose, build_cards, build_value,
                     build_owner, captured, stock_pos, last_trail, num_moves, mk, mc, mv, mcards, u64, i8, i16, i64,
                     m8, mvc, core_cfg, rl, cfg, cap_bits, same_cap, item_val, pcards, pvals, wbase, w, flags, ended,
                     rows)


@njit(cache=True, nogil=True)
def _plies_serial(plies, current_player, hands, loose, build_cards, build_value, build_owner, captured, stock_pos,
                  last_trail, num_moves, mk, mc, mv, mcards, u64, i8, i16, i64, m8, mvc, core_cfg, rl, cfg, cap_bits,
                  same_cap, item_val, pcards, pvals, wbase, w, flags, ended, rows):
    """:func:`_plies_range` over every game, one thread."""
    _plies_range(0, u64.shape[0], plies, current_player, hands, loose, build_cards, build_value, build_owner,
                 captured, stock_pos, last_trail, num_moves, mk, mc, mv, mcards, u64, i8, i16, i64, m8, mvc,
                 core_cfg, rl, cfg, cap_bits, same_cap, item_val, pcards, pvals, wbase, w, flags, ended, rows)


def play_plies(bot: ScriptedBot, state: core.State, plies: int,
               parallel: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Play ``plies`` moves of a scripted bot in every game of a core State, in place, each seat from its own
    knowledge: the moves ``bot.act_state`` then :func:`cassino_env.core.step` would play ply after ply, in one
    kernel call (the search's lines, :mod:`agents.search`). A game whose deal ends stops there.

    Args:
        bot: the bot (:class:`agents.bots.ScriptedBot`: its rule tables and style).
        state: B games made with ``auto_reset=False`` (a deal that ends leaves nobody to move).
        plies: moves a game, 0 .. :data:`MAX_PLIES`.
        parallel: split the games over numba's threads (the same result).

    Returns:
        ``(ended int64[B], rows int16[B, W])``: the ply (1 .. ``plies``) at which each game's deal ended, -1
        where it did not; and that step's result row (:func:`cassino_env.core.result_from_rows` reads it),
        zeros where the deal did not end.

    Raises:
        ValueError: ``plies`` not an integer 0 .. :data:`MAX_PLIES`, or a State that starts the next deal by itself
            (``auto_reset``).
    """
    if isinstance(plies, bool) or not isinstance(plies, int | np.integer) or not 0 <= plies <= MAX_PLIES:
        raise ValueError(f"plies: expected an integer 0..{MAX_PLIES}, got {plies!r:.40}")
    if state.auto_reset:
        raise ValueError("play_plies needs a State made with auto_reset=False (a deal that ends must stop)")
    B = state.batch_size
    ended = np.full(B, -1, dtype=np.int64)
    rows = core.result_rows(state)
    if B == 0 or plies == 0:
        return ended, rows
    t, st = bot.tables, bot.style
    flags = np.array([st.prob_mode, int(st.race_aware), int(st.needs_table), int(st.weights[F_KEEP] != 0)],
                     dtype=np.int64)
    args = (int(plies), state.current_player, state.hand, state.loose, state.build_cards, state.build_value,
            state.build_owner, state.captured, state.stock_pos, state.last_trail, state.num_moves,
            state.move_kind, state.move_card, state.move_value, state.move_cards, *core.kernel_args(state), t.cfg,
            t.cap_bits, t.same_cap, t.item_val, t.point_cards, t.point_values,
            np.array([t.w_cards, t.w_spades], dtype=np.float64), np.asarray(st.weights, dtype=np.float64), flags,
            ended, rows)
    if parallel and B > CHUNK:
        import numba

        _plies_chunks(*args, max(1, min(CHUNK, -(-B // (4 * numba.get_num_threads())))))
    else:
        _plies_serial(*args)
    return ended, rows


