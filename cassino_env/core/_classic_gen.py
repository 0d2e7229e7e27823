"""Legal move generation of the batched core for the ``classic`` rule switches (docs/rules.md 3, 4.1, 4.4).

This module restates the binding move semantics (the project's move specification) as implemented here.

A move is ``(kind, card, value, cards)``: ``kind`` 0 trail, 1 capture, 2 build; ``card`` the hand card played;
``value`` the capture value (the played card's value; a court captures as its rank 11, 12 or 13), the declared build
value, or 0 for a trail; ``cards`` the *set* of table cards taken or used (loose cards plus every card of each whole
build involved), a ``uint64`` bitmask. Two groupings of one card set are one move.

Canonical order: all trails, then all captures, then all builds; within a kind by played card id, then by the sorted
card-id list of ``cards`` compared lexicographically (a proper prefix first), then by value.

Legal moves of the player to move:

* Trail any hand card, unless the player owns a build at the start of the turn (docs/rules.md 4.4 ``no_trail``).
* Capture with a numeral of value ``v``: take the union of one or more pairwise disjoint groups, a group being one
  loose numeral of value ``v``, two or more loose numerals summing to ``v``, or a whole build (anyone's) of value
  ``v`` (docs/rules.md 1 group, 3 ``capture_mode=groups``). Every distinct union is a move.
  A court (J, Q, K) takes exactly one loose court of its rank, one move per matching court; courts never join sums
  or builds (docs/rules.md 3 ``court_values=none``, ``court_pair_take=one``).
* Build with numeral ``c`` declaring ``v`` from a non-empty set ``U`` of table items (loose numerals, whole builds),
  when ``c`` and the items of ``U`` split into groups each summing to ``v`` (a build is one item of its declared
  value and stays intact) and (docs/rules.md 4.1): the hand still holds a card of value ``v`` after ``c`` is played
  (rule 2); ``v <= 10`` (rule 3); a multiple build in ``U`` is a group alone (rule 4); a single build in ``U`` of
  another value is *raised*: its group is exactly ``{build, c}``, so ``v`` is its value plus ``c``'s, no loose card
  joins that group, and the owner may raise their own (rule 5, ``raise_own_build``, ``raise_with_table_cards``
  false); every build of value ``v`` is in ``U`` (rule 6: equal values merge); at most one raise per move (rule 7).
  So a build is either *no raise*: ``U`` = every build of value ``v`` plus loose cards ``L`` where ``c`` is alone
  (value ``v``) or with loose cards summing to ``v - value(c)``, and the rest of ``L`` splits into groups of ``v``;
  or *one raise* of single build ``B``: ``U`` = ``B`` + every build of value ``v`` + loose ``L`` splitting into
  groups of ``v``. The result is one build of all the cards, value ``v``, owned by the player.
* Owner obligation, every move (docs/rules.md 4.4 first bullet): afterwards, for every build the player owns, the
  remaining hand holds a card of its value.
* Pruning (option ``prune``, on by default): a capture whose card set is a strict subset of another legal capture by
  the same played card is dropped. Legal captures are closed under supersets (taking more builds only eases the
  owner obligation), so the kept captures are {every build of value ``v``} united with each *maximal* loose set
  that splits into groups of ``v``. Trails and builds are never pruned.

Algorithm (per game, per step; the group and union searches are written out here rather than shared with
:mod:`._groups`, as calls cost this hot path about 12% of its speed). Loose numerals are listed by value; one depth-
first search (the running sum is pruned at the largest value held, at most 10, so a group has at most 10 cards)
lists every loose subset whose sum is needed: a value held (capture and build targets) or a difference of two held
values (the loose cards joining ``c`` in a no-raise build). For each held value ``v``, ``P(v)`` = every union of
disjoint groups of sum ``v`` (including the empty set) by a second search over the groups, de-duplicated. Captures
and builds are produced once per held value (cards of equal value have equal move sets), sorted by ``lexrank(cards)
* 16 + value`` and written to the move table in canonical order. The scratch buffer ``sc`` grows on demand: a call
that runs out of room returns False and the caller retries with a buffer twice as large, so the result is always
exact.

Crowded tables. The number of unions grows exponentially with the loose cards (a table filled by trailing holds
billions of legal captures and builds). When one value has more than ``UNION_CAP`` unions, or a no-raise build more
than ``PRODUCT_CAP`` (group, union) pairs, the captures and builds are listed instead by :mod:`._crowded_gen`, which
produces each list directly in canonical order and stops after the first ``M - listed`` moves (plus one, to know
whether the table overflows). Same moves, same order; the work then grows with M, not with the table. The test hook
``cfg[CFG_SLOW]`` sends every position down that path so both generators are checked against the same oracles.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._bits import BIT, NUMERALS, RANK, RANK_MASK, U0, U1, highbit, lexrank, lowbit, popcount
from ._crowded_gen import NIB_ONE as NIB_ONE_MV
from ._crowded_gen import component, loose_vector, maximal_vectors
from ._groups import CROWDED_FLAG, write_trails
from ._groups import dedupe as _dedupe
from ._groups import sort_pairs as _sort_pairs
from ._layout import CFG_M, CFG_P, CFG_PRUNE, CFG_S, CFG_SLOW, CUR, OVERFLOW, PRUNE_MAX_LOOSE

# --- scratch layout ------------------------------------------------------------------------------------------------
# sc (uint64, growable): loose numeral bits sorted by value, a DFS stack of masks, then a bump region.
SC_LB = 0
SC_MSTK = 64
SC_BASE = 128
SC_INIT = 4096
# si (int64, fixed): counts, loose values, region starts/counts per value, DFS stacks.
SI_CNT = 0
SI_LVAL = 16
SI_GST = 80
SI_GCN = 96
SI_PST = 112
SI_PCN = 128
SI_CST = 144
SI_CCN = 160
SI_BST = 176
SI_BCN = 192
SI_JSTK = 208
SI_SSTK = 272
SI_TOT = 336
SI_OWN = 337
SI_SIZE = 352
SI_CROWDED = CROWDED_FLAG  # 1: list_moves handed a crowded table over to finish_slow (beyond SI_SIZE: si is larger)

UNION_CAP = 256  # more unions of groups for one value than this: take the output-sensitive path (_crowded_gen)
PRODUCT_CAP = 4096  # more (group, union) pairs for one no-raise build value than this: the same


@njit(cache=True, nogil=True)
def _is_single(cards, value):
    """True when the build's cards sum to its value (a single build, docs/rules.md 1)."""
    s = 0
    x = cards
    while x:
        s += RANK[lowbit(x)]
        x &= x - U1
    return s == value


@njit(cache=True, nogil=True)
def gen_moves(b, u64, i8, i16, m8, mvc, cfg, sc, si):
    """Recompute the move table of game ``b`` for its player to move; see the module docstring.

    Writes ``m8[b]`` (kind, card, value rows), ``mvc[b]`` (card sets), the move count (``i16[b, P + S]``) and the
    overflow flag (``i8[b, OVERFLOW]``); a game whose deal is over (no player to move) gets an empty table.

    Returns:
        0 done; 1 the scratch buffer ``sc`` is too small (retry with a larger one); 2 the table is crowded: the
        trails are written and :func:`finish_slow` must list the rest (see :func:`list_moves`, which does all this).
    """
    P = cfg[CFG_P]
    M = cfg[CFG_M]
    prune = cfg[CFG_PRUNE] != 0 and popcount(u64[b, P]) <= PRUNE_MAX_LOOSE
    nmcol = P + cfg[CFG_S]
    cap = sc.shape[0]
    prev = i16[b, nmcol]  # entries of the old table to clear
    p = i8[b, CUR]
    tot = 0
    if p >= 0:
        hm = u64[b, p]
        lm = u64[b, P]
        bcol = P + 1
        # Values held and builds owned at the start of the turn (docs/rules.md 4.1 rule 2, 4.4).
        own = 0
        hvals = 0
        for v in range(1, 11):
            k = popcount(hm & RANK_MASK[v])
            si[SI_CNT + v] = k
            if k > 0:
                hvals |= 1 << v
            if i8[b, v - 1] == p:
                own |= 1 << v
        # Values of owned builds with no card of that value left if a card of value a (0: a court) is played.
        # docs/rules.md 4.4: such a build must be taken or used by the move.
        miss_court = 0
        if own:
            for w in range(1, 11):
                if (own >> w) & 1 and si[SI_CNT + w] == 0:
                    miss_court |= 1 << w

        # --- trails (docs/rules.md 4.4 no_trail: not while owning a build) --------------------------------------------
        if own == 0:
            tot = write_trails(b, m8, mvc, M, tot, hm)

        sp = SC_BASE
        slow = cfg[CFG_SLOW] != 0  # test hook: always take the output-sensitive path
        if hvals != 0 and not slow:
            maxv = highbit(hvals)
            # Sums of loose groups needed: held values, and differences of held values (no-raise builds):
            # hvals >> a has bit v - a for every held v >= a.
            needg = hvals
            x = hvals
            while x:
                a = lowbit(x)
                x &= x - 1
                needg |= hvals >> a
            needg &= ~1
            # Loose numerals of value <= maxv, sorted by value.
            n = 0
            for v in range(1, maxv + 1):
                x = lm & RANK_MASK[v]
                while x:
                    c = lowbit(x)
                    x &= x - U1
                    sc[SC_LB + n] = BIT[c]
                    si[SI_LVAL + n] = v
                    n += 1
            # DFS over loose subsets with running sum <= maxv; record those of a needed sum as (mask, sum).
            flat = sp
            d = 0
            j = 0
            cs = 0
            cm = U0
            while True:
                if j < n and cs + si[SI_LVAL + j] <= maxv:
                    ns = cs + si[SI_LVAL + j]
                    nm = cm | sc[SC_LB + j]
                    if (needg >> ns) & 1:
                        if sp + 2 > cap:
                            return 1
                        sc[sp] = nm
                        sc[sp + 1] = ns
                        sp += 2
                    si[SI_JSTK + d] = j
                    si[SI_SSTK + d] = cs
                    sc[SC_MSTK + d] = cm
                    d += 1
                    cs = ns
                    cm = nm
                    j += 1
                else:
                    if d == 0:
                        break
                    d -= 1
                    j = si[SI_JSTK + d] + 1
                    cs = si[SI_SSTK + d]
                    cm = sc[SC_MSTK + d]
            # Bucket the groups by sum (counting sort): G_s = sc[GST[s] : GST[s] + GCN[s]].
            ng = (sp - flat) // 2
            for s in range(11):
                si[SI_GCN + s] = 0
            for i in range(ng):
                si[SI_GCN + np.int64(sc[flat + 2 * i + 1])] += 1
            if sp + ng > cap:
                return 1
            off = sp
            for s in range(11):
                si[SI_GST + s] = off
                off += si[SI_GCN + s]
                si[SI_GCN + s] = 0
            for i in range(ng):
                s = np.int64(sc[flat + 2 * i + 1])
                sc[si[SI_GST + s] + si[SI_GCN + s]] = sc[flat + 2 * i]
                si[SI_GCN + s] += 1
            sp += ng

            # P(v) for each held value: every union of pairwise disjoint groups of sum v, the empty set first.
            for v in range(1, maxv + 1):
                if not (hvals >> v) & 1:
                    continue
                gs = si[SI_GST + v]
                k = si[SI_GCN + v]
                start = sp
                if sp + 1 > cap:
                    return 1
                sc[sp] = 0
                sp += 1
                if k > 0:
                    d = 0
                    j = 0
                    cm = U0
                    while True:
                        while j < k and (sc[gs + j] & cm) != 0:
                            j += 1
                        if j < k:
                            nm = cm | sc[gs + j]
                            if sp - start > UNION_CAP:
                                slow = True  # too many unions: list the moves in canonical order instead
                                break
                            if sp + 1 > cap:
                                return 1
                            sc[sp] = nm
                            sp += 1
                            si[SI_JSTK + d] = j
                            sc[SC_MSTK + d] = cm
                            d += 1
                            cm = nm
                            j += 1
                        else:
                            if d == 0:
                                break
                            d -= 1
                            j = si[SI_JSTK + d] + 1
                            cm = sc[SC_MSTK + d]
                    if slow:
                        break
                    if k > 1:  # one set may split into groups in several ways
                        sp = _dedupe(sc, start + 1, sp)
                si[SI_PST + v] = start
                si[SI_PCN + v] = sp - start

            # Captures and builds per held value a, as sorted (key, mask) pairs.
            for a in range(1, maxv + 1):
                if slow or not (hvals >> a) & 1:
                    continue
                miss = 0
                if own:
                    for w in range(1, 11):
                        if (own >> w) & 1 and si[SI_CNT + w] - (1 if w == a else 0) == 0:
                            miss |= 1 << w
                ps = si[SI_PST + a]
                pc = si[SI_PCN + a]
                bca = u64[b, bcol + a - 1]
                # -- captures (docs/rules.md 1 group, 3 capture_mode=groups; 4.4 owner obligation) --
                start = sp
                if (miss & ~(1 << a)) == 0:
                    need_build = (miss >> a) & 1
                    if sp + 4 * pc > cap:
                        return 1
                    for i in range(pc):
                        L = sc[ps + i]
                        if prune:
                            maximal = True
                            for q in range(pc):
                                X = sc[ps + q]
                                if X != L and (X & L) == L:
                                    maximal = False
                                    break
                            if maximal:
                                m = L | bca
                                if m:
                                    sc[sp] = lexrank(m)
                                    sc[sp + 1] = m
                                    sp += 2
                        else:
                            if L and not need_build:
                                sc[sp] = lexrank(L)
                                sc[sp + 1] = L
                                sp += 2
                            if bca:
                                m = L | bca
                                sc[sp] = lexrank(m)
                                sc[sp + 1] = m
                                sp += 2
                    sp = _sort_pairs(sc, start, sp)
                si[SI_CST + a] = start
                si[SI_CCN + a] = (sp - start) // 2
                # -- builds (docs/rules.md 4.1 rules 1-7, 4.4) --
                start = sp
                for v in range(a, 11):
                    if not (hvals >> v) & 1:
                        continue
                    if v == a and si[SI_CNT + a] < 2:
                        continue  # rule 2: another card of value v must stay in hand
                    bcv = u64[b, bcol + v - 1]
                    pvs = si[SI_PST + v]
                    pvc = si[SI_PCN + v]
                    if (miss & ~(1 << v)) == 0:
                        # no raise: U = every build of value v (rule 6) + loose cards.
                        if v == a:
                            # c is a group alone; the loose cards split into groups of v.
                            if sp + 2 * pvc > cap:
                                return 1
                            for i in range(pvc):
                                m = sc[pvs + i] | bca
                                if m:
                                    sc[sp] = lexrank(m) * np.uint64(16) + np.uint64(v)
                                    sc[sp + 1] = m
                                    sp += 2
                        else:
                            # c's group is c + loose S summing to v - a; the rest L' splits into groups of v.
                            gs = si[SI_GST + v - a]
                            gk = si[SI_GCN + v - a]
                            if gk * pvc > PRODUCT_CAP:
                                slow = True
                                break
                            if sp + 2 * gk * pvc > cap:
                                return 1
                            for g in range(gk):
                                S = sc[gs + g]
                                for i in range(pvc):
                                    Lp = sc[pvs + i]
                                    if (S & Lp) == 0:
                                        m = S | Lp | bcv
                                        sc[sp] = lexrank(m) * np.uint64(16) + np.uint64(v)
                                        sc[sp + 1] = m
                                        sp += 2
                    # one raise (rule 5): single build B of value v - a becomes {B, c} = v; no loose card joins it.
                    bv = v - a
                    if bv >= 1:
                        bb = u64[b, bcol + bv - 1]
                        if bb and (miss & ~((1 << v) | (1 << bv))) == 0 and _is_single(bb, bv):
                            if sp + 2 * pvc > cap:
                                return 1
                            for i in range(pvc):
                                m = sc[pvs + i] | bb | bcv
                                sc[sp] = lexrank(m) * np.uint64(16) + np.uint64(v)
                                sc[sp + 1] = m
                                sp += 2
                sp = _sort_pairs(sc, start, sp)
                si[SI_BST + a] = start
                si[SI_BCN + a] = (sp - start) // 2

        if slow:
            # hand over to finish_slow (kept out of this hot function): the trails are written
            si[SI_TOT] = tot
            si[SI_OWN] = own
            return 2
        tot = _fast_emit(b, m8, mvc, M, tot, hm, lm, miss_court, sc, si)
    _close_table(b, i8, i16, m8, mvc, tot, M, prev, nmcol)
    return 0


@njit(cache=True, nogil=True)
def _close_table(b, i8, i16, m8, mvc, tot, M, prev, nmcol):
    """Pad the table after its moves, store the count (first M kept, canonical order) and the overflow flag."""
    n_out = tot if tot < M else M
    for i in range(n_out, prev):
        m8[b, 0, i] = -1
        m8[b, 1, i] = -1
        m8[b, 2, i] = 0
        mvc[b, i] = 0
    i16[b, nmcol] = n_out
    i8[b, OVERFLOW] = 1 if tot > M else 0


@njit(cache=True, nogil=True)
def finish_slow(b, u64, i8, i16, m8, mvc, cfg, si, mk, mv):
    """Complete a table that :func:`gen_moves` handed over (return value 2) with the output-sensitive generator
    (``mk, mv``: the memo table of :func:`._crowded_gen.box`, :func:`._crowded_gen.new_memo_arrays`)."""
    P = cfg[CFG_P]
    M = cfg[CFG_M]
    nmcol = P + cfg[CFG_S]
    prev = i16[b, nmcol]
    prune = cfg[CFG_PRUNE] != 0 and popcount(u64[b, P]) <= PRUNE_MAX_LOOSE
    tot = _slow_emit(b, u64, i8, m8, mvc, P, M, prune, si[SI_TOT], i8[b, CUR], si[SI_OWN], si, mk, mv)
    _close_table(b, i8, i16, m8, mvc, tot, M, prev, nmcol)


@njit(cache=True, nogil=True)
def list_moves(b, u64, i8, i16, m8, mvc, cfg, sc, si):
    """Recompute game b's move table (:func:`gen_moves`, growing ``sc`` as it asks); return the scratch buffer to use
    from now on. A crowded table is handed over: ``si[SI_CROWDED] = 1``, and the caller completes it with
    :func:`finish_slow` (and its memo table, made once per batch call)."""
    while True:
        r = gen_moves(b, u64, i8, i16, m8, mvc, cfg, sc, si)
        if r == 0:
            return sc
        if r == 2:
            si[SI_CROWDED] = 1
            return sc
        sc = np.empty(2 * sc.shape[0], dtype=np.uint64)


@njit(cache=True, nogil=True)
def _fast_emit(b, m8, mvc, M, tot, hm, lm, miss_court, sc, si):
    """Write the captures then the builds of every hand card from the per-value lists in ``sc``; return the count."""
    x = hm
    while x:
        c = lowbit(x)
        x &= x - U1
        r = RANK[c]
        if r > 10:
            # A court takes exactly one loose court of its rank (docs/rules.md 3 court_pair_take=one).
            if miss_court == 0:
                y = lm & RANK_MASK[r]
                while y:
                    t = lowbit(y)
                    y &= y - U1
                    if tot < M:
                        m8[b, 0, tot] = 1
                        m8[b, 1, tot] = c
                        m8[b, 2, tot] = r
                        mvc[b, tot] = BIT[t]
                    tot += 1
        else:
            cst = si[SI_CST + r]
            for i in range(si[SI_CCN + r]):
                if tot < M:
                    m8[b, 0, tot] = 1
                    m8[b, 1, tot] = c
                    m8[b, 2, tot] = r
                    mvc[b, tot] = sc[cst + 2 * i + 1]
                tot += 1
    # --- builds, by played card id -------------------------------------------------------------------------------
    x = hm & NUMERALS
    while x:
        c = lowbit(x)
        x &= x - U1
        r = RANK[c]
        bst = si[SI_BST + r]
        for i in range(si[SI_BCN + r]):
            if tot < M:
                m8[b, 0, tot] = 2
                m8[b, 1, tot] = c
                m8[b, 2, tot] = sc[bst + 2 * i] & np.uint64(15)
                mvc[b, tot] = sc[bst + 2 * i + 1]
            tot += 1
    return tot


@njit(cache=True, nogil=True)
def _slow_emit(b, u64, i8, m8, mvc, P, M, prune, tot, p, own, si, mk, mv):
    """Write the captures then the builds of every hand card, first M - tot only, by :mod:`._crowded_gen`.

    Same moves and order as the fast path; each list is produced in canonical order and cut after the budget (plus
    one, to know whether the table overflows). Returns the running count, more than M on overflow. ``mk, mv``: the
    memo table of :func:`._crowded_gen.box`, kept by the caller across crowded tables (``box`` is a pure function
    of its key).
    """
    hm = u64[b, p]
    lm = u64[b, P]
    bcol = P + 1
    mvs = np.empty(256, dtype=np.uint64)
    buf = np.empty(2 * 22 * (M + 1) + 16, dtype=np.uint64)
    le = np.zeros(11, dtype=np.uint64)  # le[v]: loose numerals of value <= v
    acc = U0
    for v in range(1, 11):
        acc |= lm & RANK_MASK[v]
        le[v] = acc
    miss_court = 0
    for w in range(1, 11):
        if (own >> w) & 1 and si[SI_CNT + w] == 0:
            miss_court |= 1 << w
    # --- captures, by played card id ---
    x = hm
    while x and tot <= M:
        c = lowbit(x)
        x &= x - U1
        r = RANK[c]
        if r > 10:
            if miss_court == 0:  # docs/rules.md 3 court_pair_take=one
                y = lm & RANK_MASK[r]
                while y:
                    t = lowbit(y)
                    y &= y - U1
                    if tot < M:
                        m8[b, 0, tot] = 1
                        m8[b, 1, tot] = c
                        m8[b, 2, tot] = r
                        mvc[b, tot] = BIT[t]
                    tot += 1
            continue
        a = np.int64(r)
        miss = 0
        for w in range(1, 11):
            if (own >> w) & 1 and si[SI_CNT + w] - (1 if w == a else 0) == 0:
                miss |= 1 << w
        if miss & ~(1 << a):
            continue  # docs/rules.md 4.4: some other owned build would lose its last capturing card
        bca = u64[b, bcol + a - 1]
        budget = M - tot
        lim = budget + 1
        wpos = 0
        if prune:
            nmv = maximal_vectors(loose_vector(le[a]), a, mk, mv, mvs)
            while nmv < 0:
                mvs = np.empty(2 * mvs.shape[0], dtype=np.uint64)
                nmv = maximal_vectors(loose_vector(le[a]), a, mk, mv, mvs)
            wpos = component(le[a], bca, U0, a, 1, lim, 0, mvs, nmv, mk, mv, buf, wpos)
        else:
            if not (miss >> a) & 1:
                wpos = component(le[a], U0, U0, a, 0, lim, 0, mvs, 0, mk, mv, buf, wpos)
            if bca:
                wpos = component(le[a], bca, U0, a, 0, lim, 0, mvs, 0, mk, mv, buf, wpos)
        wpos = _sort_pairs(buf, 0, wpos)
        n = wpos // 2
        for i in range(min(n, budget)):
            m8[b, 0, tot + i] = 1
            m8[b, 1, tot + i] = c
            m8[b, 2, tot + i] = a
            mvc[b, tot + i] = buf[2 * i + 1]
        tot += n
    # --- builds, by played card id (docs/rules.md 4.1) ---
    x = hm & NUMERALS
    while x and tot <= M:
        c = lowbit(x)
        x &= x - U1
        a = np.int64(RANK[c])
        miss = 0
        for w in range(1, 11):
            if (own >> w) & 1 and si[SI_CNT + w] - (1 if w == a else 0) == 0:
                miss |= 1 << w
        budget = M - tot
        lim = budget + 1
        wpos = 0
        for v in range(a, 11):
            if si[SI_CNT + v] - (1 if v == a else 0) <= 0:
                continue  # rule 2
            bcv = u64[b, bcol + v - 1]
            if (miss & ~(1 << v)) == 0:
                mand = U0 if v == a else NIB_ONE_MV[a]
                wpos = component(le[v], bcv, mand, v, 0, lim, v, mvs, 0, mk, mv, buf, wpos)
            bv = v - a
            if bv >= 1:
                bb = u64[b, bcol + bv - 1]
                if bb and (miss & ~((1 << v) | (1 << bv))) == 0 and _is_single(bb, bv):
                    wpos = component(le[v], bb | bcv, U0, v, 0, lim, v, mvs, 0, mk, mv, buf, wpos)
        wpos = _sort_pairs(buf, 0, wpos)
        n = wpos // 2
        for i in range(min(n, budget)):
            m8[b, 0, tot + i] = 2
            m8[b, 1, tot + i] = c
            m8[b, 2, tot + i] = buf[2 * i] & np.uint64(15)
            mvc[b, tot + i] = buf[2 * i + 1]
        tot += n
    return tot
