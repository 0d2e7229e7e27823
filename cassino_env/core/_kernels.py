"""numba kernels of the batched core: dealing, applying a move, scoring, auto-reset, and the batch loops.

Every batch loop exists per move generator (classic, general) and twice more: a serial one (``range``) and a
``parallel=True`` one that splits the batch into chunks over ``prange``; all call the same per-game functions.
The per-game functions take the packed arrays of :mod:`._layout` (few array arguments keep numba's reference
counting cheap; the drivers pass them down borrowed, without any).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..cards import ACE_OF_SPADES, JACK_OF_HEARTS
from ._bits import (
    ACE_MASK,
    BIG_CASINO_BIT,
    BIT,
    GOLDEN,
    LITTLE_CASINO_BIT,
    RANK,
    SPADE_MASK,
    SUIT_MASK,
    U0,
    below,
    borrow,
    mix64,
    popcount,
    shuffle_into,
)
from ._classic_gen import SC_INIT, SI_SIZE, finish_slow, list_moves
from ._crowded_gen import new_memo_arrays
from ._general_gen import GI_SIZE, gen_general, general_slow
from ._groups import CROWDED_FLAG, write_trails
from ._layout import (
    BVAL,
    CFG_BUILDS,
    CFG_GENERAL,
    CFG_H,
    CFG_INPLAY,
    CFG_K,
    CFG_M,
    CFG_P,
    CFG_RESET,
    CFG_RESLAST,
    CFG_S,
    CFG_SCORING,
    CFG_SWEEP,
    CFG_SWEEPLAST,
    CFG_T,
    CFG_TARGET,
    CUR,
    DEAL_INDEX,
    DEALER,
    DECK,
    LAST_CAP,
    LAST_TRAIL,
    MATCH_INDEX,
    MATCH_OVER,
    NITEMS,
    OWNER,
    R_ACTOR,
    R_DEAL_DONE,
    R_MATCH_DONE,
    R_POINTS,
    R_WINNER,
    SEED,
    STOCK_POS,
)

JH_BIT = BIT[JACK_OF_HEARTS]
SI_ALLOC = max(SI_SIZE, GI_SIZE)

CHUNK = 64  # most games per prange task (step and rollout with parallel=True)


@njit(cache=True, nogil=True)
def _deal_round(b, u64, i8, cfg):
    """docs/rules.md 2.3: ``hand_size`` cards to each seat from the stock's front, starting after the dealer, who moves.

    A stock too short for full hands gives out what it has, block by block (positions built for tests only).
    """
    P = cfg[CFG_P]
    H = cfg[CFG_H]
    dealer = i8[b, DEALER]
    pos = np.int64(i8[b, STOCK_POS])
    for k in range(1, P + 1):
        seat = (dealer + k) % P
        h = u64[b, seat]
        for _ in range(H):
            if pos < 52:
                h |= BIT[i8[b, DECK + pos]]
                pos += 1
        u64[b, seat] = h
    i8[b, STOCK_POS] = pos
    i8[b, CUR] = (dealer + 1) % P
    if u64[b, (dealer + 1) % P] == 0:
        for k in range(2, P + 1):
            if u64[b, (dealer + k) % P] != 0:
                i8[b, CUR] = (dealer + k) % P
                break


@njit(cache=True, nogil=True)
def _start_deal(b, u64, i8, i16, i64, cfg):
    """Deal a fresh deal of game ``b`` for its current dealer, match and deal counters (docs/rules.md 2.1).

    The deck is ``deck_for(seed, match, deal)``: ``deck[:table_cards]`` face up, then ``hand_size``-card blocks to
    each seat from the dealer's left; the rest is the stock, front first.
    """
    P = cfg[CFG_P]
    T = cfg[CFG_T]
    shuffle_into(i8[b, DECK:DECK + 52], i64[b, SEED], i64[b, MATCH_INDEX], i64[b, DEAL_INDEX])
    loose = U0
    for i in range(T):
        loose |= BIT[i8[b, DECK + i]]
    K = cfg[CFG_K]
    S = cfg[CFG_S]
    for q in range(P):
        u64[b, q] = 0
        u64[b, P + 1 + K + q] = 0
        i16[b, q] = 0
        i16[b, P + S + 1 + q] = 0
    u64[b, P] = loose
    for k in range(K):
        u64[b, P + 1 + k] = 0
        i8[b, OWNER + k] = -1
        i8[b, BVAL + k] = 0
    i8[b, STOCK_POS] = T
    i8[b, LAST_CAP] = -1
    i8[b, LAST_TRAIL] = -1
    i8[b, MATCH_OVER] = 0
    _deal_round(b, u64, i8, cfg)


@njit(cache=True, nogil=True)
def _new_match(b, u64, i8, i16, i64, cfg):
    """Start match ``i64[b, MATCH_INDEX]`` from its first deal: dealer P-1 so seat 0 plays first, totals 0."""
    P = cfg[CFG_P]
    S = cfg[CFG_S]
    for s in range(S):
        i16[b, P + s] = 0
    i64[b, DEAL_INDEX] = 0
    i8[b, DEALER] = P - 1
    _start_deal(b, u64, i8, i16, i64, cfg)


@njit(cache=True, nogil=True)
def _score(b, u64, i16, res, cfg, rl):
    """Score game b's captured piles, sweeps and in-play points per side into ``res[b]`` (docs/rules.md 5, by
    ``scoring``).

    Writes the items (``rl[1]``: the :data:`ITEMS` per side), the cards and spades captured (``rl[2]``, ``rl[3]``)
    and each seat's side points (``R_POINTS``). Side of seat p: p % S.
    """
    P = cfg[CFG_P]
    S = cfg[CFG_S]
    ccol = P + 1 + cfg[CFG_K]
    scoring = cfg[CFG_SCORING]
    it_col = rl[1]
    nc_col = rl[2]
    ns_col = rl[3]
    best_c = -1
    n_best_c = 0
    best_s = -1
    n_best_s = 0
    for s in range(S):
        pile = U0
        sw = 0
        bonus = 0
        for q in range(s, P, S):
            pile |= u64[b, ccol + q]
            sw += i16[b, q]
            bonus += i16[b, P + S + 1 + q]
        nc = popcount(pile)
        ns = popcount(pile & SPADE_MASK)
        res[b, nc_col + s] = nc
        res[b, ns_col + s] = ns
        base = it_col + NITEMS * s
        for k in range(NITEMS):
            res[b, base + k] = 0
        res[b, base + 5] = sw * cfg[CFG_SWEEP]
        if scoring == 2:
            # docs/rules.md 5.3 cicera: 10D 1, 2S 1, JH 1, napula, in-play points
            res[b, base + 2] = 1 if pile & BIG_CASINO_BIT else 0
            res[b, base + 3] = 1 if pile & LITTLE_CASINO_BIT else 0
            run = 0
            while run < 13 and (pile >> np.uint64(ACE_OF_SPADES + run)) & np.uint64(1):
                run += 1
            res[b, base + 6] = run if run >= 3 else 0
            res[b, base + 7] = 1 if pile & JH_BIT else 0
            res[b, base + 8] = bonus
        else:
            res[b, base + 2] = 2 if pile & BIG_CASINO_BIT else 0
            res[b, base + 3] = 1 if pile & LITTLE_CASINO_BIT else 0
            res[b, base + 4] = popcount(pile & ACE_MASK)
        if nc > best_c:
            best_c = nc
            n_best_c = 1
        elif nc == best_c:
            n_best_c += 1
        if ns > best_s:
            best_s = ns
            n_best_s = 1
        elif ns == best_s:
            n_best_s += 1
    # most cards and most spades: standard 3 and 1, cicera 2 and 1, a tie scoring nothing; bga gives tied sides 2
    # and 1 each (docs/rules.md 5.1-5.3). Nobody has most of what every side has none of (docs/rules.md 2).
    card_pts = 2 if scoring == 2 else 3
    for s in range(S):
        base = it_col + NITEMS * s
        if best_c > 0 and res[b, nc_col + s] == best_c:
            if n_best_c == 1:
                res[b, base + 0] = card_pts
            elif scoring == 1:
                res[b, base + 0] = 2
        if best_s > 0 and res[b, ns_col + s] == best_s:
            if n_best_s == 1 or scoring == 1:
                res[b, base + 1] = 1
    for q in range(P):
        # each seat gets its side's points
        base = it_col + NITEMS * (q % S)
        pts = 0
        for k in range(NITEMS):
            pts += res[b, base + k]
        res[b, R_POINTS + q] = pts


@njit(cache=True, nogil=True)
def score_all(u64, i16, res, cfg, rl):
    """Score every game's current captured piles and sweeps into ``res`` (no residue is given, nothing changes)."""
    for b in range(u64.shape[0]):
        for k in range(res.shape[1]):
            res[b, k] = 0
        res[b, R_WINNER] = -1
        _score(b, u64, i16, res, cfg, rl)


@njit(cache=True, nogil=True)
def _end_deal(b, last, u64, i8, i16, i64, res, cfg, rl):
    """Give the residue, score the deal (docs/rules.md 5), add to the match totals and report it in ``res[b]``.

    ``last`` is the seat that played the deal's last card; ``rl`` = (totals, items, ncards, nspades) column starts
    of ``res``. Then, with auto-reset, start the next deal (dealer moves on) or, when the match is over, a new match;
    without it, leave the game with nobody to move.
    """
    P = cfg[CFG_P]
    S = cfg[CFG_S]
    K = cfg[CFG_K]
    bcol = P + 1
    ccol = P + 1 + K
    # docs/rules.md 2.4: the residue goes to residue_to, never a sweep; with no capture in the whole deal it stays.
    taker = last if cfg[CFG_RESLAST] != 0 else i8[b, LAST_CAP]
    if i8[b, LAST_CAP] >= 0:
        rest = u64[b, P]
        for k in range(K):
            rest |= u64[b, bcol + k]
            u64[b, bcol + k] = 0
            i8[b, OWNER + k] = -1
            i8[b, BVAL + k] = 0
        u64[b, P] = 0
        u64[b, ccol + taker] |= rest
    i8[b, LAST_TRAIL] = -1  # nothing is "just trailed" once the deal is over
    _score(b, u64, i16, res, cfg, rl)
    # add to the match totals
    top = -1
    n_top = 0
    winner = -1
    for s in range(S):
        pts = 0
        for k in range(NITEMS):
            pts += res[b, rl[1] + NITEMS * s + k]
        tot = i16[b, P + s] + pts
        i16[b, P + s] = tot
        res[b, rl[0] + s] = tot
        if tot > top:
            top = tot
            n_top = 1
            winner = s
        elif tot == top:
            n_top += 1
    res[b, R_DEAL_DONE] = 1
    # docs/rules.md 2.6: the match ends after a deal in which a side reaches the target, won by the unique highest
    # total.
    match_over = top >= cfg[CFG_TARGET] and n_top == 1
    if match_over:
        res[b, R_MATCH_DONE] = 1
        res[b, R_WINNER] = winner
    if cfg[CFG_RESET] != 0:
        if match_over:
            i64[b, MATCH_INDEX] += 1
            _new_match(b, u64, i8, i16, i64, cfg)
        else:
            i64[b, DEAL_INDEX] += 1
            i8[b, DEALER] = (i8[b, DEALER] + 1) % P  # docs/rules.md 2.5: the dealer moves to the next seat
            _start_deal(b, u64, i8, i16, i64, cfg)
    else:
        i8[b, CUR] = -1
        i8[b, MATCH_OVER] = 1 if match_over else 0


@njit(cache=True, nogil=True)
def apply_move(b, a, u64, i8, i16, i64, m8, mvc, res, cfg, rl):
    """Play move ``a`` of game ``b``'s move table for its player to move, then advance (docs/rules.md 2).

    Clears ``res[b]`` and fills it: the actor, and for a deal that ends, its tally (see :func:`_end_deal`).
    """
    P = cfg[CFG_P]
    K = cfg[CFG_K]
    for k in range(res.shape[1]):
        res[b, k] = 0
    res[b, R_WINNER] = -1
    p = i8[b, CUR]
    res[b, R_ACTOR] = p
    kind = m8[b, 0, a]
    c = m8[b, 1, a]
    val = m8[b, 2, a]
    cards = mvc[b, a]
    cb = BIT[c]
    bcol = P + 1
    u64[b, p] &= ~cb
    if kind == 0:
        # trail: the card goes loose
        u64[b, P] |= cb
        i8[b, LAST_TRAIL] = c
    else:
        # capture or build: the used cards leave the table; builds go whole
        if kind == 1 and cfg[CFG_INPLAY] != 0:
            # docs/rules.md 5.3 in-play points: pairing the card just trailed; one suit; three or more table cards
            bonus = 0
            lt = i8[b, LAST_TRAIL]
            if lt >= 0 and (cards & BIT[lt]) != 0 and RANK[lt] == RANK[c] and val == RANK[c]:
                bonus += 1  # the card just trailed is taken as a group of its own: by pairing
            if (cards & ~SUIT_MASK[c // 13]) == 0:
                bonus += 1
            if popcount(cards) >= 3:
                bonus += 1
            i16[b, P + cfg[CFG_S] + 1 + p] += bonus
        u64[b, P] &= ~cards
        for k in range(K):
            if u64[b, bcol + k] & cards:
                u64[b, bcol + k] = 0
                i8[b, OWNER + k] = -1
                i8[b, BVAL + k] = 0
        i8[b, LAST_TRAIL] = -1
        if kind == 1:
            u64[b, P + 1 + K + p] |= cards | cb
            i8[b, LAST_CAP] = p
            empty = u64[b, P] == 0
            for k in range(K):
                if u64[b, bcol + k] != 0:
                    empty = False
            if empty and cfg[CFG_SWEEPLAST] == 0 and i8[b, STOCK_POS] >= 52:
                last_play = True
                for q in range(P):
                    if u64[b, q] != 0:
                        last_play = False
                if last_play:
                    empty = False  # docs/rules.md 3 sweep_on_last_play=false: the deal's last card sweeps nothing
            if empty:
                i16[b, p] += 1  # docs/rules.md 1 sweep
        else:
            # the new build: value val, owner p (docs/rules.md 4.1 "The result"); with attach, the first free slot
            slot = val - 1
            if cfg[CFG_BUILDS] == 3:
                for k in range(K):
                    if u64[b, bcol + k] == 0:
                        slot = k
                        break
            u64[b, bcol + slot] = cards | cb
            i8[b, OWNER + slot] = p
            i8[b, BVAL + slot] = val
    # Next player: the next seat holding cards; else deal a round; else the deal is over.
    for k in range(1, P + 1):
        q = (p + k) % P
        if u64[b, q] != 0:
            i8[b, CUR] = q
            return
    if i8[b, STOCK_POS] < 52:
        _deal_round(b, u64, i8, cfg)
    else:
        _end_deal(b, p, u64, i8, i16, i64, res, cfg, rl)


@njit(cache=True, nogil=True)
def _no_move_trails(b, u64, i8, i16, m8, mvc, cfg):
    """docs/rules.md 4.4 leaves no legal move (an ace that alone covers its owner's builds of 1 and 14; or a position
    written by hand with an owner lacking a capturing card): every trail is legal (decided here, docs/presets.md)."""
    nmcol = cfg[CFG_P] + cfg[CFG_S]
    p = i8[b, CUR]
    if p >= 0 and i16[b, nmcol] == 0:
        n = write_trails(b, m8, mvc, cfg[CFG_M], 0, u64[b, p])
        i16[b, nmcol] = min(n, cfg[CFG_M])


@njit(cache=True, nogil=True)
def _list_classic(b, u64, i8, i16, m8, mvc, cfg, sc, si):
    """Recompute game b's move table with the classic generator; return the scratch buffer to keep. A crowded table
    is left to the caller (``si[CROWDED_FLAG]`` set, then :func:`_crowded_classic`)."""
    sc = list_moves(b, u64, i8, i16, m8, mvc, cfg, sc, si)
    if si[CROWDED_FLAG] == 0:
        _no_move_trails(b, u64, i8, i16, m8, mvc, cfg)
    return sc


@njit(cache=True, nogil=True)
def _crowded_classic(b, u64, i8, i16, m8, mvc, cfg, si, mk, mv):
    """Finish the listing of a crowded table by :func:`._classic_gen.finish_slow` with the memo table ``mk, mv``."""
    si[CROWDED_FLAG] = 0
    finish_slow(b, u64, i8, i16, m8, mvc, cfg, si, mk, mv)
    _no_move_trails(b, u64, i8, i16, m8, mvc, cfg)


@njit(cache=True, nogil=True)
def _list_general(b, u64, i8, i16, m8, mvc, cfg, sc, si):
    """Recompute game b's move table with the general generator; return the scratch buffer to keep.

    A crowded table is left to the caller, which gets ``si[CROWDED_FLAG] = 1`` and calls :func:`_crowded_general` (so
    that the memo table of the output-sensitive path is made once per batch call, and only when needed).
    """
    while True:
        r = gen_general(b, u64, i8, i16, m8, mvc, cfg, sc, si)
        if r == 0:
            break
        if r == 2:
            si[CROWDED_FLAG] = 1
            return sc
        sc = np.empty(2 * sc.shape[0], dtype=np.uint64)
    _no_move_trails(b, u64, i8, i16, m8, mvc, cfg)
    return sc


@njit(cache=True, nogil=True)
def _crowded_general(b, u64, i8, i16, m8, mvc, cfg, si, mk, mv):
    """Finish the listing of a crowded table by :func:`._general_gen.general_slow` with the memo table ``mk, mv``."""
    si[CROWDED_FLAG] = 0
    general_slow(b, u64, i8, i16, m8, mvc, cfg, si, mk, mv)  # a crowded table: output-sensitive listing
    _no_move_trails(b, u64, i8, i16, m8, mvc, cfg)


# --- batch loops ------------------------------------------------------------------------------------------------------
# One driver per generator and threading mode, switching on ``mode``: the Python side (``_api._run``) picks the
# generator the rules need, so a process compiles only the generator it uses (the classic one alone is about half
# of the cold compile); the parallel drivers compile on first use. ``step_kernel`` (called from other kernels)
# switches on the rules itself and so compiles both.

MODE_INIT = 0  # start a new match in every game (seed and match counter already set)
MODE_REGEN = 1  # recompute the move tables (after a position was written)
MODE_ADVANCE = 2  # start the next deal (or match) where a deal is over (auto-reset off)
MODE_STEP = 3  # apply actions[b] in every game
MODE_ROLLOUT = 4  # play nsteps uniformly random listed moves in every game, counters in rng


@njit(cache=True, nogil=True)
def _prepare(mode, b, u64, i8, i16, i64, cfg):
    """Modes other than rollout and step for game b, before its move table is listed again: return 0 to skip the
    listing, 1 to list."""
    P = cfg[CFG_P]
    if mode == MODE_INIT:
        _new_match(b, u64, i8, i16, i64, cfg)
    elif mode == MODE_ADVANCE:
        if i8[b, CUR] >= 0:
            return 0
        if i8[b, MATCH_OVER] != 0:
            i64[b, MATCH_INDEX] += 1
            _new_match(b, u64, i8, i16, i64, cfg)
        else:
            i64[b, DEAL_INDEX] += 1
            i8[b, DEALER] = (i8[b, DEALER] + 1) % P
            _start_deal(b, u64, i8, i16, i64, cfg)
    return 1


@njit(cache=True, nogil=True)
def _skip_step(b, res):
    """MODE_STEP for a game with nobody to move (deal over, auto-reset off): nothing to play, an empty report."""
    for k in range(res.shape[1]):
        res[b, k] = 0
    res[b, R_ACTOR] = -1
    res[b, R_WINNER] = -1


@njit(cache=True, nogil=True)
def _range_classic(mode, lo, hi, actions, nsteps, rng, u64, i8, i16, i64, m8, mvc, res, cfg, rl):
    """Run ``mode`` on games [lo, hi) with the classic generator; return the number of moves played (step and
    rollout). The scratch buffers go down borrowed (:func:`._bits.borrow`); their owners live to the end. The memo
    table of crowded tables (4 MB) is made at the first one and kept for the rest of the call."""
    nmcol = cfg[CFG_P] + cfg[CFG_S]
    sc_own = np.empty(SC_INIT, dtype=np.uint64)
    si_own = np.empty(SI_ALLOC, dtype=np.int64)
    sc = borrow(sc_own)
    si = borrow(si_own)
    si[CROWDED_FLAG] = 0
    mk = np.empty(0, dtype=np.uint64)  # the memo table of crowded tables (4 MB): made at the first one
    mv = np.empty(0, dtype=np.int8)
    played = 0
    for b in range(lo, hi):
        if mode == MODE_ROLLOUT:
            x = rng[b]
            for _ in range(nsteps):
                n = i16[b, nmcol]
                if n <= 0:
                    break
                x += GOLDEN
                apply_move(b, below(mix64(x), n), u64, i8, i16, i64, m8, mvc, res, cfg, rl)
                sc = _list_classic(b, u64, i8, i16, m8, mvc, cfg, sc, si)
                if si[CROWDED_FLAG] != 0:
                    if mv.shape[0] == 0:
                        mk, mv = new_memo_arrays()
                    _crowded_classic(b, u64, i8, i16, m8, mvc, cfg, si, mk, mv)
                played += 1
            rng[b] = x
            continue
        if mode == MODE_STEP:
            # the step is written out here like the rollout (through _prepare it measured about 10% slower)
            if i8[b, CUR] < 0:
                _skip_step(b, res)
                continue
            apply_move(b, actions[b], u64, i8, i16, i64, m8, mvc, res, cfg, rl)
            played += 1
        elif _prepare(mode, b, u64, i8, i16, i64, cfg) == 0:
            continue
        sc = _list_classic(b, u64, i8, i16, m8, mvc, cfg, sc, si)
        if si[CROWDED_FLAG] != 0:
            if mv.shape[0] == 0:
                mk, mv = new_memo_arrays()
            _crowded_classic(b, u64, i8, i16, m8, mvc, cfg, si, mk, mv)
    return played + 0 * (sc_own.shape[0] + si_own.shape[0])  # the owners are used (alive) up to here


@njit(cache=True, nogil=True)
def _range_general(mode, lo, hi, actions, nsteps, rng, u64, i8, i16, i64, m8, mvc, res, cfg, rl):
    """As :func:`_range_classic`, with the general generator."""
    nmcol = cfg[CFG_P] + cfg[CFG_S]
    sc_own = np.empty(SC_INIT, dtype=np.uint64)
    si_own = np.empty(SI_ALLOC, dtype=np.int64)
    sc = borrow(sc_own)
    si = borrow(si_own)
    si[CROWDED_FLAG] = 0
    mk = np.empty(0, dtype=np.uint64)  # no memo table yet
    mv = np.empty(0, dtype=np.int8)
    played = 0
    for b in range(lo, hi):
        if mode == MODE_ROLLOUT:
            x = rng[b]
            for _ in range(nsteps):
                n = i16[b, nmcol]
                if n <= 0:
                    break
                x += GOLDEN
                apply_move(b, below(mix64(x), n), u64, i8, i16, i64, m8, mvc, res, cfg, rl)
                sc = _list_general(b, u64, i8, i16, m8, mvc, cfg, sc, si)
                if si[CROWDED_FLAG] != 0:
                    if mv.shape[0] == 0:
                        mk, mv = new_memo_arrays()
                    _crowded_general(b, u64, i8, i16, m8, mvc, cfg, si, mk, mv)
                played += 1
            rng[b] = x
            continue
        if mode == MODE_STEP:
            # the step is written out here like the rollout (through _prepare it measured about 10% slower)
            if i8[b, CUR] < 0:
                _skip_step(b, res)
                continue
            apply_move(b, actions[b], u64, i8, i16, i64, m8, mvc, res, cfg, rl)
            played += 1
        elif _prepare(mode, b, u64, i8, i16, i64, cfg) == 0:
            continue
        sc = _list_general(b, u64, i8, i16, m8, mvc, cfg, sc, si)
        if si[CROWDED_FLAG] != 0:
            if mv.shape[0] == 0:
                mk, mv = new_memo_arrays()
            _crowded_general(b, u64, i8, i16, m8, mvc, cfg, si, mk, mv)
    return played + 0 * (sc_own.shape[0] + si_own.shape[0])  # the owners are used (alive) up to here


@njit(cache=True, nogil=True)
def run_serial_classic(mode, actions, nsteps, rng, u64, i8, i16, i64, m8, mvc, res, cfg, rl):
    """Run ``mode`` (``MODE_*``) on every game with the classic generator, one thread; return the moves played.

    The arrays go down borrowed (:func:`._bits.borrow`), as numba's ``prange`` bodies get theirs: without it every
    call below pays atomic reference counting on each array argument, which made this driver about a third slower
    than the parallel one on one thread.
    """
    return _range_classic(mode, 0, u64.shape[0], borrow(actions), nsteps, borrow(rng), borrow(u64), borrow(i8),
                          borrow(i16), borrow(i64), borrow(m8), borrow(mvc), borrow(res), borrow(cfg), borrow(rl))


@njit(cache=True, nogil=True)
def run_serial_general(mode, actions, nsteps, rng, u64, i8, i16, i64, m8, mvc, res, cfg, rl):
    """As :func:`run_serial_classic`, with the general generator."""
    return _range_general(mode, 0, u64.shape[0], borrow(actions), nsteps, borrow(rng), borrow(u64), borrow(i8),
                          borrow(i16), borrow(i64), borrow(m8), borrow(mvc), borrow(res), borrow(cfg), borrow(rl))


@njit(cache=True, nogil=True)
def step_kernel(actions, res, u64, i8, i16, i64, m8, mvc, cfg, rl):
    """``core.step`` without its checks, callable from other kernels: play ``actions[b]`` in every game, serially.

    The packed arrays are :func:`cassino_env.core.kernel_args` of a State; ``res`` is int16[B, W]
    (:func:`cassino_env.core.result_rows`), read back by :func:`cassino_env.core.result_from_rows`. Returns the moves
    played.
    """
    no_rng = np.zeros(u64.shape[0], dtype=np.uint64)  # MODE_STEP draws no random numbers
    if cfg[CFG_GENERAL] == 0:
        played = _range_classic(MODE_STEP, 0, u64.shape[0], borrow(actions), 0, borrow(no_rng), borrow(u64),
                                borrow(i8), borrow(i16), borrow(i64), borrow(m8), borrow(mvc), borrow(res),
                                borrow(cfg), borrow(rl))
    else:
        played = _range_general(MODE_STEP, 0, u64.shape[0], borrow(actions), 0, borrow(no_rng), borrow(u64),
                                borrow(i8), borrow(i16), borrow(i64), borrow(m8), borrow(mvc), borrow(res),
                                borrow(cfg), borrow(rl))
    return played + 0 * no_rng.shape[0]  # no_rng is used (alive) up to here: its borrowed view went down


@njit(cache=True, parallel=True)
def run_parallel_classic(mode, actions, nsteps, rng, u64, i8, i16, i64, m8, mvc, res, cfg, rl, chunk):
    """As :func:`run_serial_classic`, chunks of ``chunk`` games spread over numba's threads (``prange``)."""
    B = u64.shape[0]
    nch = (B + chunk - 1) // chunk
    counts = np.zeros(nch, dtype=np.int64)
    for ch in prange(nch):
        lo = ch * chunk
        hi = min(B, lo + chunk)
        counts[ch] = _range_classic(mode, lo, hi, actions, nsteps, rng, u64, i8, i16, i64, m8, mvc, res, cfg, rl)
    return counts.sum()


@njit(cache=True, parallel=True)
def run_parallel_general(mode, actions, nsteps, rng, u64, i8, i16, i64, m8, mvc, res, cfg, rl, chunk):
    """As :func:`run_serial_general`, chunks of ``chunk`` games spread over numba's threads (``prange``)."""
    B = u64.shape[0]
    nch = (B + chunk - 1) // chunk
    counts = np.zeros(nch, dtype=np.int64)
    for ch in prange(nch):
        lo = ch * chunk
        hi = min(B, lo + chunk)
        counts[ch] = _range_general(mode, lo, hi, actions, nsteps, rng, u64, i8, i16, i64, m8, mvc, res, cfg, rl)
    return counts.sum()


@njit(cache=True, nogil=True)
def random_actions(rng, u64, i16, cfg):
    """Uniformly random valid action index per game (0 where a game has no moves); advances ``rng`` in place."""
    P = cfg[CFG_P]
    nmcol = P + cfg[CFG_S]
    B = u64.shape[0]
    out = np.zeros(B, dtype=np.int64)
    for b in range(B):
        n = i16[b, nmcol]
        if n > 0:
            x = rng[b] + GOLDEN
            rng[b] = x
            out[b] = below(mix64(x), n)
    return out


@njit(cache=True, nogil=True)
def deck_into(out, seed, match_index, deal_index):
    """Shuffled deck of one deal into ``out`` (int8[52]); see :func:`._bits.shuffle_into`."""
    shuffle_into(out, seed, match_index, deal_index)
