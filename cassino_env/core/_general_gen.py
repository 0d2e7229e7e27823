"""Legal move generation of the batched core for every rule switch of docs/rules.md section 3.

The ``classic`` switches (courts without value, one court per pair, ace low, ``groups`` captures, ``standard``
builds that the owner may raise, ``no_trail``) have a specialised generator (:mod:`._classic_gen`). Every other rule
set — every other preset of docs/rules.md 6 (:data:`cassino_env.rules.PRESETS`) and any mix of switches — is listed
here. The moves, their encoding and the canonical order are those of :mod:`._classic_gen`; what a switch changes is
restated below with its docs/rules.md section.

Values (docs/rules.md 1, 3). A card's value is its rank, except a court with ``court_values = none``, which has none: it
never joins a sum or a build and captures only by pairing: one loose court of its rank (``court_pair_take = one``,
one move per matching court) or every loose court of its rank (``all``). A played ace may also capture as 14 with
``ace_high`` (the move's value is then 14); on the table and in builds an ace is 1.

Captures with a card of value ``a`` (docs/rules.md 1 group, 3 ``capture_mode``): a group is a set of loose valued cards
summing to ``a`` or one whole build of value ``a``. ``groups``: any non-empty union of pairwise disjoint groups;
``one_group``: exactly one group.

Builds with a valued card ``c`` of value ``a`` declaring ``v`` (``a <= v <= max_value``, and a card that captures ``v``
stays in hand: docs/rules.md 4.1 rules 2 and 3):

* ``standard`` (4.1): the build of value ``v`` (equal values merge, rule 6) joins whole, as a group of its own; ``c``
  is a group alone (``a = v``) or with loose cards summing to ``v - a``; or ``c`` raises one single build ``B`` of
  another value (rules 4, 5 and 7), its group being ``{B, c}`` plus, only with ``raise_with_table_cards``, loose
  cards summing to ``v - value(B) - a``; the other loose cards taken in split into groups of ``v``. The owner may
  build on (add to, raise) their own build only with ``raise_own_build``.
* ``reservation`` (4.2): the cards of the reservation of value ``v`` and, optionally, of one reservation of another
  value join *card by card*: ``c``, those cards and the loose cards taken in split into groups of ``v`` in any way
  (overwriting; rules 4 and 5 do not apply).
* ``attach`` (4.3): ``c`` goes on exactly one item ``x`` — a loose valued card or a build — declaring
  ``value(x) + a`` (not on a multiple build) or, when ``value(x) = a``, ``a``. Builds of equal value stay apart.

Owner obligations (docs/rules.md 4.4), checked on every candidate: a player owning a build at the start of the turn may
not trail (``no_trail``, and ``resolve_next_turn`` too); with ``resolve_next_turn`` the move must take one of the
player's builds whole — by capture, or by building where ``raise_own_build`` holds; afterwards every build the
player still owns (or has just made) must have a card of its value left in hand. When these block every move (an
ace that alone covers its owner's builds of 1 and of 14 under ``ace_high``), every trail is legal: decided here,
and applied to both generators by the batch drivers (``_kernels._no_move_trails``).

Algorithm (per game, per step): the loose valued cards are searched once for every subset whose sum is at most the
largest value the hand can capture (the groups, bucketed by sum); ``P(v)``, every union of disjoint groups of sum
``v``, is listed once per value held. Captures and builds are then assembled per hand card from these lists (for a
reservation, a small search covers the mandatory cards first, :func:`_cover`), checked against 4.4, sorted by
``lexrank(cards) * 16 + value``, de-duplicated and, with ``prune``, captures strictly inside another capture by the
same card are dropped. Only the values held are visited, and the searches of :mod:`._groups` and the build products
are inlined here (``forceinline``): calls cost this hot path about a tenth of its time. The work grows with the
number of groups on the table; past the caps below (groups, unions, products, partial covers) the table is crowded
and :func:`general_slow` lists it instead, output-sensitively.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._bits import BIT, RANK, RANK_MASK, U0, U1, highbit, lexrank, lowbit, popcount
from ._crowded_gen import NIB_ONE, box, component, loose_vector, maximal_vectors, new_memo_arrays, weight
from ._groups import bucket_groups, loose_groups, unions, write_trails
from ._groups import dedupe as _dedupe
from ._groups import sort_pairs as _sort_pairs
from ._layout import (
    BVAL,
    CFG_ACEHIGH,
    CFG_BUILDS,
    CFG_K,
    CFG_M,
    CFG_MAXV,
    CFG_NUMERIC,
    CFG_ONEGROUP,
    CFG_P,
    CFG_PAIRALL,
    CFG_PRUNE,
    CFG_RAISEOWN,
    CFG_RAISETABLE,
    CFG_RESOLVE,
    CFG_S,
    CFG_SLOW,
    CUR,
    OVERFLOW,
    OWNER,
    PRUNE_MAX_LOOSE,
)

# sc (uint64, growable): loose bits by value [0, 64), DFS mask stack [64, 128), then a bump region.
G_LB = 0
G_MSTK = 64
G_BASE = 128
# si (int64, fixed) regions used here
GI_CAPC = 0  # [0, 16): hand cards capturing value w
GI_GST = 16  # group starts per sum
GI_GCN = 32  # group counts per sum
GI_PST = 48  # P(v) starts
GI_PCN = 64  # P(v) counts
GI_MV = 80  # mandatory item values for _cover (up to 48: a build holds at most 48 cards besides c)
GI_LVAL = 128  # loose values by position (up to 52)
GI_JSTK = 192  # DFS index stack (up to 64)
GI_SSTK = 256  # DFS sum stack (up to 64)
GI_OWN = 320  # owned slots (up to 26)
GI_NOWN = 350
GI_NSLOT = 351
GI_SLOT = 352  # non-empty build slots (up to 26)
GI_TOT = 380  # trails written before a hand-over to the crowded-table path
GI_CC = 384  # capture list of the cards of rank r: sc[si[GI_CC + r] : si[GI_CC + 14 + r]] (-1: not listed yet)
GI_BC = 416  # the same for build lists (cards of one rank have the same moves, docs/rules.md 1 value)
GI_SIZE = 448  # holds slot CROWDED_FLAG (446, _groups): 1 when gen_general hands a crowded table over

VISIT_CAP = 16384  # more loose subsets searched than this: the table is crowded, list by general_slow
GROUP_CAP = 4096  # more loose groups than this: the table is crowded, list by general_slow
UNION_CAP = 256  # more unions of groups for one value than this: the same
COVER_ITEMS = 8  # a reservation regrouped with more cards than this (played card included): count-vector search
COVER_CAP = 8192  # more partial covers than this in one regrouping: the table is crowded, list by general_slow
PRODUCT_CAP = 4096  # more (group, union) pairs for one build than this: the same
REGROUP_MEMO = 256  # memo slots of the count-vector search of a large reservation (zeroed per use: kept small)


@njit(cache=True, nogil=True)
def _switches(cfg):
    """The move-generation switches of ``cfg``: prune, numeric, ace_high, pair all, one_group, builds code,
    raise_own_build, raise_with_table_cards, resolve_next_turn, largest build value."""
    return (cfg[CFG_PRUNE] != 0, cfg[CFG_NUMERIC] != 0, cfg[CFG_ACEHIGH] != 0, cfg[CFG_PAIRALL] != 0,
            cfg[CFG_ONEGROUP] != 0, cfg[CFG_BUILDS], cfg[CFG_RAISEOWN] != 0, cfg[CFG_RAISETABLE] != 0,
            cfg[CFG_RESOLVE] != 0, cfg[CFG_MAXV])


@njit(cache=True, forceinline=True)
def _val(c, numeric):
    """Value of card c (docs/rules.md 1): its rank, or 0 for a court without value."""
    r = np.int64(RANK[c])
    if numeric or r <= 10:
        return r
    return 0


@njit(cache=True, forceinline=True)
def _caps(c, w, numeric, acehigh):
    """1 when card c captures value w (an ace also 14 under ace_high), else 0."""
    v = _val(c, numeric)
    if v != 0 and v == w:
        return 1
    if w == 14 and acehigh and RANK[c] == 1:
        return 1
    return 0


@njit(cache=True, forceinline=True)
def _legal(kind, c, v, used, p, b, u64, i8, si, bcol, numeric, acehigh, resolve, raiseown):
    """docs/rules.md 4.4 for a capture (kind 1) or build (kind 2) of card c, value v, table cards ``used``."""
    nown = si[GI_NOWN]
    if nown > 0:
        if resolve:
            touched = False
            for q in range(nown):
                k = si[GI_OWN + q]
                bc = u64[b, bcol + k]
                if (bc & ~used) == 0:
                    touched = True
                    break
            if not touched or (kind == 2 and not raiseown):
                return False
        for q in range(nown):
            k = si[GI_OWN + q]
            if (u64[b, bcol + k] & used) == 0:
                w = np.int64(i8[b, BVAL + k])
                if si[GI_CAPC + w] - _caps(c, w, numeric, acehigh) <= 0:
                    return False
    if kind == 2 and si[GI_CAPC + v] - _caps(c, v, numeric, acehigh) <= 0:
        return False
    return True


@njit(cache=True, nogil=True)
def _regroup_items(si, fixed, a, v):
    """The items a reservation build regroups (docs/rules.md 4.2): the played card's value ``a`` and the value of every
    card of ``fixed``, written to ``si[GI_MV:]``; returns (their count vector, their number), the number -1 when a
    card is above v (it fits in no group of v)."""
    si[GI_MV] = a
    mand = NIB_ONE[a]
    n = 1
    y = fixed
    while y:
        t = lowbit(y)
        y &= y - U1
        tv = _val(t, True)
        if tv > v:
            return mand, -1
        si[GI_MV + n] = tv
        mand += NIB_ONE[tv]
        n += 1
    return mand, n


@njit(cache=True, nogil=True)
def _cover(sc, sp, si, nmand, v):
    """List every loose set C such that the mandatory items and C split into groups of v (docs/rules.md 4.2).

    The mandatory item values are ``si[GI_MV:GI_MV + nmand]``; each group holds at least one mandatory item, plus
    loose cards from one group of the groups lists (``GI_GST``/``GI_GCN``). A work stack of (items left, loose
    cards used) grows up from ``sp``; the sets found grow down from the end of ``sc`` and are then moved to ``sp``
    and de-duplicated. Returns ``(sp, end)`` of the list, ``(-1, -1)`` when ``sc`` is too small, ``(-2, -2)`` past
    ``COVER_CAP`` partial covers (a crowded table).
    """
    cap = sc.shape[0]
    st = sp
    pushed = 0
    if st + 2 > cap:
        return -1, -1
    sc[st] = np.uint64((1 << nmand) - 1)
    sc[st + 1] = U0
    top = st + 2
    res_pos = cap
    while top > st:
        top -= 2
        rem = np.int64(sc[top])
        used = sc[top + 1]
        if rem == 0:
            if res_pos - 1 < top:
                return -1, -1
            res_pos -= 1
            sc[res_pos] = used
            continue
        i = np.int64(lowbit(np.uint64(rem)))
        rest = rem & ~(1 << i)
        J = rest
        while True:  # the other mandatory items J in the group of item i: every subset of the rest
            t = si[GI_MV + i]
            y = J
            while y:
                j = np.int64(lowbit(np.uint64(y)))
                y &= y - 1
                t += si[GI_MV + j]
            if t <= v:
                r = v - t
                nrem = rest & ~J
                pushed += 1 if r == 0 else si[GI_GCN + r]
                if pushed > COVER_CAP:
                    return -2, -2
                if r == 0:
                    if top + 2 > res_pos:
                        return -1, -1
                    sc[top] = np.uint64(nrem)
                    sc[top + 1] = used
                    top += 2
                else:
                    gs = si[GI_GST + r]
                    for g in range(si[GI_GCN + r]):
                        gm = sc[gs + g]
                        if (gm & used) == 0:
                            if top + 2 > res_pos:
                                return -1, -1
                            sc[top] = np.uint64(nrem)
                            sc[top + 1] = used | gm
                            top += 2
            if J == 0:
                break
            J = (J - 1) & rest
    n = cap - res_pos
    for q in range(n):
        sc[sp + q] = sc[res_pos + q]
    return sp, _dedupe(sc, sp, sp + n)


@njit(cache=True, forceinline=True)
def _completable(si, n, v, t, kmax):
    """False when no loose cards can complete items of total value t into k groups of v, ceil(t/v) <= k <= kmax:
    no subset of the n sorted loose values ``si[GI_LVAL:]`` (those up to v) sums to k * v - t. A necessary condition
    of a reservation's regrouping (docs/rules.md 4.2), checked before its search; sums of 64 or more count as
    possible."""
    reach = U1  # bit s: some loose cards of value <= v sum to s (exact below 64: sums only grow)
    for j in range(n):
        w = si[GI_LVAL + j]
        if w > v:
            break
        reach |= reach << np.uint64(w)
    k = (t + v - 1) // v
    while k <= kmax:
        s = k * v - t
        if s >= 64 or (reach >> np.uint64(s)) & U1:
            return True
        k += 1
    return False


@njit(cache=True, forceinline=True)
def _rank_sum(cards):
    """Sum of the ranks of a card set (a build's cards; an ace counts 1)."""
    s = 0
    x = cards
    while x:
        s += RANK[lowbit(x)]
        x &= x - U1
    return s


@njit(cache=True, forceinline=True)
def _put(out, w, key, m):
    """Append the pair (key, m) at out[w]; return the new end, or -1 when ``out`` is full (or w is already -1)."""
    if w < 0 or w + 2 > out.shape[0]:
        return -1
    out[w] = key
    out[w + 1] = m
    return w + 2


@njit(cache=True, nogil=True)
def _court_captures(out, w, c, lm, pairall, p, b, u64, i8, si, bcol, numeric, acehigh, resolve, raiseown):
    """Append the legal captures of a court without value: one loose court of its rank per move, or all of them
    with ``court_pair_take = all`` (docs/rules.md 3). Returns the new end, -1 when ``out`` is full."""
    r = np.int64(RANK[c])
    y = lm & RANK_MASK[r]
    if pairall:
        if y and _legal(1, c, r, y, p, b, u64, i8, si, bcol, numeric, acehigh, resolve, raiseown):
            w = _put(out, w, lexrank(y) * np.uint64(16) + np.uint64(r), y)
        return w
    while y:
        t = lowbit(y)
        y &= y - U1
        if _legal(1, c, r, BIT[t], p, b, u64, i8, si, bcol, numeric, acehigh, resolve, raiseown):
            w = _put(out, w, lexrank(BIT[t]) * np.uint64(16) + np.uint64(r), BIT[t])
    return w


@njit(cache=True, forceinline=True)
def _builds_of_value(b, u64, i8, si, bcol, nslot, a):
    """The union of the cards of every build of value ``a``; their slots go to ``si[GI_MV:]``. Returns (cards, n)."""
    bm_all = U0
    nb = 0
    for qs in range(nslot):
        k = si[GI_SLOT + qs]
        if i8[b, BVAL + k] == a:
            bm_all |= u64[b, bcol + k]
            si[GI_MV + nb] = k
            nb += 1
    return bm_all, nb


@njit(cache=True, nogil=True)
def _attach_builds(out, w, c, a, v, lm, nslot, p, b, u64, i8, si, bcol, numeric, acehigh, resolve, raiseown):
    """Append the legal attachments of card c (value a) declaring v (docs/rules.md 4.3): onto a loose valued card or a
    build, as a sum (not onto a multiple build) or as a pair of equal values. Returns the new end, -1 when full."""
    y = lm
    while y:
        t = lowbit(y)
        y &= y - U1
        xv = _val(t, numeric)
        if xv != 0 and (xv + a == v or (xv == a and a == v)):
            if _legal(2, c, v, BIT[t], p, b, u64, i8, si, bcol, numeric, acehigh, resolve, raiseown):
                w = _put(out, w, lexrank(BIT[t]) * np.uint64(16) + np.uint64(v), BIT[t])
    for qs in range(nslot):
        k = si[GI_SLOT + qs]
        m = u64[b, bcol + k]
        if i8[b, OWNER + k] == p and not raiseown:
            continue  # attaching to your own build needs raise_own_build
        xv = np.int64(i8[b, BVAL + k])
        ok = xv == a and a == v
        if xv + a == v and _rank_sum(m) == xv:
            ok = True
        if ok and _legal(2, c, v, m, p, b, u64, i8, si, bcol, numeric, acehigh, resolve, raiseown):
            w = _put(out, w, lexrank(m) * np.uint64(16) + np.uint64(v), m)
    return w


@njit(cache=True, forceinline=True)
def _push_unions(sc, sp, cs, ce, fixed, v, si, key_v, b, u64, i8, c, p, bcol, numeric, acehigh, resolve, raiseown):
    """Append (key, C | R | fixed) for every C in sc[cs:ce] and R in P(v) disjoint from C, legal builds only.

    Returns the new write position, or -1 when ``sc`` is too small.
    """
    cap = sc.shape[0]
    ps = si[GI_PST + v]
    pc = si[GI_PCN + v]
    for i in range(cs, ce):
        C = sc[i]
        for q in range(pc):
            R = sc[ps + q]
            if (R & C) != 0:
                continue
            m = C | R | fixed
            if m == 0:
                continue
            if not _legal(2, c, v, m, p, b, u64, i8, si, bcol, numeric, acehigh, resolve, raiseown):
                continue
            if sp + 2 > cap:
                return -1
            sc[sp] = lexrank(m) * np.uint64(16) + np.uint64(key_v)
            sc[sp + 1] = m
            sp += 2
    return sp


@njit(cache=True, forceinline=True)
def _seed(sc, sp, si, r):
    """Write the loose sets that may join the played card's group: the empty set when ``r = 0``, else every group of
    sum r. Returns the new end, or -1 when ``sc`` is full."""
    if r == 0:
        if sp + 1 > sc.shape[0]:
            return -1
        sc[sp] = U0
        return sp + 1
    gs = si[GI_GST + r]
    gk = si[GI_GCN + r]
    if sp + gk > sc.shape[0]:
        return -1
    for g in range(gk):
        sc[sp + g] = sc[gs + g]
    return sp + gk


@njit(cache=True, forceinline=True)
def _finish_builds(sc, cs, ce, fixed, v, si, b, u64, i8, c, p, bcol, numeric, acehigh, resolve, raiseown):
    """Turn the sets C of sc[cs:ce] into build moves C | R | fixed (R in P(v), disjoint from C) written from cs on.

    Returns the new end; -1 when ``sc`` is full; -2 when the product is too large (a crowded table).
    """
    if (ce - cs) * si[GI_PCN + v] > PRODUCT_CAP:
        return -2
    sp = _push_unions(sc, ce, cs, ce, fixed, v, si, v, b, u64, i8, c, p, bcol, numeric, acehigh, resolve, raiseown)
    if sp < 0:
        return -1
    nres = sp - ce
    for q in range(nres):
        sc[cs + q] = sc[ce + q]
    return cs + nres


@njit(cache=True, forceinline=True)
def _write(b, m8, mvc, M, tot, kind, c, sc, start, end):
    """Write the sorted (key, mask) pairs of sc[start:end] as moves of ``kind`` with card c; return the count."""
    for i in range(start, end, 2):
        if tot < M:
            m8[b, 0, tot] = kind
            m8[b, 1, tot] = c
            m8[b, 2, tot] = np.int64(sc[i] & np.uint64(15))
            mvc[b, tot] = sc[i + 1]
        tot += 1
    return tot


@njit(cache=True, nogil=True)
def gen_general(b, u64, i8, i16, m8, mvc, cfg, sc, si):
    """Recompute game b's move table for any rule switches (module docstring).

    Returns 0 when done, 1 when the scratch buffer ``sc`` is too small (the caller retries with a larger one), 2
    when the table is crowded: the trails are written and :func:`general_slow` must list the rest.
    """
    P = cfg[CFG_P]
    M = cfg[CFG_M]
    K = cfg[CFG_K]
    prune, numeric, acehigh, pairall, onegroup, bmode, raiseown, raisetable, resolve, maxv = _switches(cfg)
    prune = prune and popcount(u64[b, P]) <= PRUNE_MAX_LOOSE
    nmcol = P + cfg[CFG_S]
    cap = sc.shape[0]
    prev = i16[b, nmcol]
    p = i8[b, CUR]
    tot = 0
    if p >= 0:
        hm = u64[b, p]
        lm = u64[b, P]
        bcol = P + 1
        nown = 0
        nslot = 0
        for k in range(K):
            if u64[b, bcol + k] != 0:
                si[GI_SLOT + nslot] = k
                nslot += 1
                if i8[b, OWNER + k] == p:
                    si[GI_OWN + nown] = k
                    nown += 1
        si[GI_NOWN] = nown
        si[GI_NSLOT] = nslot
        # --- trails (docs/rules.md 4.4: never while owning a build, under either owner rule) ---
        if nown == 0:
            tot = write_trails(b, m8, mvc, M, tot, hm)
        ntrails = tot
        # resolve_next_turn with builds owned: only moves that take one of them whole can be legal (docs/rules.md 4.4),
        # so candidates without one are not generated at all (_legal would refuse them)
        need_own = resolve and nown > 0
        ownvals = 0
        for q in range(nown):
            ownvals |= 1 << np.int64(i8[b, BVAL + si[GI_OWN + q]])
        # --- capture values held ---
        for w in range(16):
            si[GI_CAPC + w] = 0
        hv = 0
        x = hm
        while x:
            c = lowbit(x)
            x &= x - U1
            a = _val(c, numeric)
            if a:
                si[GI_CAPC + a] += 1
                hv |= 1 << a
            if acehigh and RANK[c] == 1:
                si[GI_CAPC + 14] += 1
                hv |= 1 << 14
        if cfg[CFG_SLOW] != 0:  # test hook: every table goes down the crowded-table path
            si[GI_TOT] = tot
            return 2
        maxs = np.int64(highbit(np.uint64(hv))) if hv else 0  # the largest value held
        # --- groups: loose valued subsets with sum <= maxs, bucketed by sum ---
        # sums needed: the values held (captures, P(v)) and their differences (c's group in a build); every sum
        # below maxs where a raise may take loose cards in or a reservation on the table regroups
        if raisetable or (bmode == 2 and nslot > 0):
            needg = (1 << (maxs + 1)) - 2
        else:
            needg = hv
            y = hv
            while y:
                q = np.int64(lowbit(np.uint64(y)))
                y &= y - 1
                needg |= hv >> q
            needg &= ~1
        sp = G_BASE
        n = 0
        # the loose valued cards of value <= maxs by value: only the ranks present on the table are visited
        vtop = min(maxs, 13 if numeric else 10)
        ranks = (lm | (lm >> np.uint64(13)) | (lm >> np.uint64(26)) | (lm >> np.uint64(39))) \
            & ((U1 << np.uint64(vtop)) - U1)  # bit r - 1: a loose card of rank r
        while ranks:
            v = np.int64(lowbit(ranks)) + 1
            ranks &= ranks - U1
            xx = lm & RANK_MASK[v]
            while xx:
                c = lowbit(xx)
                xx &= xx - U1
                sc[G_LB + n] = BIT[c]
                si[GI_LVAL + n] = v
                n += 1
        flat = sp
        sp = loose_groups(sc, si, n, G_LB, GI_LVAL, GI_JSTK, GI_SSTK, G_MSTK, maxs, needg, sp, VISIT_CAP)
        if sp >= 0:
            if (sp - flat) // 2 > GROUP_CAP:
                sp = -2
            else:
                sp = bucket_groups(sc, si, flat, sp, GI_GST, GI_GCN, 16)
        if sp < 0:
            if sp == -2:
                si[GI_TOT] = tot
            return 1 if sp == -1 else 2
        # --- P(v) for each value held: unions of disjoint groups of sum v (the empty set first) ---
        needp = (not onegroup) or bmode == 1 or bmode == 2
        for v in range(1, maxs + 1):
            si[GI_PCN + v] = 0
        yp = (hv & ~1) if needp else 0
        while yp:
            v = np.int64(lowbit(np.uint64(yp)))
            yp &= yp - 1
            start = sp
            sp = unions(sc, si, si[GI_GST + v], si[GI_GCN + v], sp, UNION_CAP, GI_JSTK, G_MSTK)
            if sp < 0:
                if sp == -2:
                    si[GI_TOT] = tot
                return 1 if sp == -1 else 2
            si[GI_PST + v] = start
            si[GI_PCN + v] = sp - start

        # --- captures, by played card id; cards of one rank share their lists (same value, same obligations) ---
        for r in range(14):
            si[GI_CC + r] = -1
            si[GI_BC + r] = -1
        x = hm
        while x:
            c = lowbit(x)
            x &= x - U1
            rk = np.int64(RANK[c])
            if si[GI_CC + rk] >= 0:
                tot = _write(b, m8, mvc, M, tot, 1, c, sc, si[GI_CC + rk], si[GI_CC + 14 + rk])
                continue
            a0 = _val(c, numeric)
            start = sp
            if a0 == 0:
                # a court without value pairs loose courts of its rank (docs/rules.md 3 court_pair_take)
                if not need_own:
                    sp = _court_captures(sc, sp, c, lm, pairall, p, b, u64, i8, si, bcol, numeric, acehigh,
                                         resolve, raiseown)
                    if sp < 0:
                        return 1
            else:
                for a in (a0, 14 if acehigh and RANK[c] == 1 else 0):  # a played ace may also capture as 14
                    if a == 0:
                        continue
                    if need_own and not (ownvals >> a) & 1:
                        continue  # a capture of value a takes no build of the player's
                    bm_all, nb = _builds_of_value(b, u64, i8, si, bcol, nslot, a)  # builds of value a: one group each
                    if onegroup:
                        gs = si[GI_GST + a]
                        for g in range(si[GI_GCN + a]):
                            m = sc[gs + g]
                            if _legal(1, c, a, m, p, b, u64, i8, si, bcol, numeric, acehigh, resolve, raiseown):
                                if sp + 2 > cap:
                                    return 1
                                sc[sp] = lexrank(m) * np.uint64(16) + np.uint64(a)
                                sc[sp + 1] = m
                                sp += 2
                        for q in range(nb):
                            m = u64[b, bcol + si[GI_MV + q]]
                            if _legal(1, c, a, m, p, b, u64, i8, si, bcol, numeric, acehigh, resolve, raiseown):
                                if sp + 2 > cap:
                                    return 1
                                sc[sp] = lexrank(m) * np.uint64(16) + np.uint64(a)
                                sc[sp + 1] = m
                                sp += 2
                        continue
                    ps = si[GI_PST + a]
                    pc = si[GI_PCN + a]
                    if not prune and pc << nb > PRODUCT_CAP:
                        si[GI_TOT] = ntrails
                        return 2
                    for i in range(pc):
                        L = sc[ps + i]
                        if prune:
                            # only the maximal loose unions with every build of value a can be undominated
                            maximal = True
                            for q in range(pc):
                                X = sc[ps + q]
                                if X != L and (X & L) == L:
                                    maximal = False
                                    break
                            if not maximal:
                                continue
                            m = L | bm_all
                            if m and _legal(1, c, a, m, p, b, u64, i8, si, bcol, numeric, acehigh, resolve, raiseown):
                                if sp + 2 > cap:
                                    return 1
                                sc[sp] = lexrank(m) * np.uint64(16) + np.uint64(a)
                                sc[sp + 1] = m
                                sp += 2
                            continue
                        for sub in range(1 << nb):
                            m = L
                            for q in range(nb):
                                if (sub >> q) & 1:
                                    m |= u64[b, bcol + si[GI_MV + q]]
                            if m == 0:
                                continue
                            if _legal(1, c, a, m, p, b, u64, i8, si, bcol, numeric, acehigh, resolve, raiseown):
                                if sp + 2 > cap:
                                    return 1
                                sc[sp] = lexrank(m) * np.uint64(16) + np.uint64(a)
                                sc[sp + 1] = m
                                sp += 2
            end = _sort_pairs(sc, start, sp)
            if prune and end - start > 2 and acehigh and rk == 1:
                # drop captures strictly inside another capture by the same card (an ace's two values compare)
                w = start
                for i in range(start, end, 2):
                    mi = sc[i + 1]
                    dominated = False
                    for q in range(start, end, 2):
                        mq = sc[q + 1]
                        if mq != mi and (mq & mi) == mi:
                            dominated = True
                            break
                    if not dominated:
                        sc[w] = sc[i]
                        sc[w + 1] = mi
                        w += 2
                end = w
            tot = _write(b, m8, mvc, M, tot, 1, c, sc, start, end)
            si[GI_CC + rk] = start
            si[GI_CC + 14 + rk] = end
            sp = end

        # --- builds, by played card id (docs/rules.md 4.1-4.3) ---
        if bmode != 0 and not (need_own and not raiseown):
            x = hm
            while x:
                c = lowbit(x)
                x &= x - U1
                a = _val(c, numeric)
                if a == 0:
                    continue  # a court without value is never built
                rk = np.int64(RANK[c])
                if si[GI_BC + rk] >= 0:
                    tot = _write(b, m8, mvc, M, tot, 2, c, sc, si[GI_BC + rk], si[GI_BC + 14 + rk])
                    continue
                start = sp
                yv = (hv >> a) << a  # rule 3: held values are at most maxv
                while yv:
                    v = np.int64(lowbit(np.uint64(yv)))
                    yv &= yv - 1
                    if si[GI_CAPC + v] - _caps(c, v, numeric, acehigh) <= 0:
                        continue  # rule 2: a card that captures v stays in hand
                    if bmode == 3:
                        # attach (4.3): c on one item x
                        sp = _attach_builds(sc, sp, c, a, v, lm, nslot, p, b, u64, i8, si, bcol, numeric, acehigh,
                                            resolve, raiseown)
                        if sp < 0:
                            return 1
                        continue
                    same = u64[b, bcol + v - 1]
                    same_own = same != 0 and i8[b, OWNER + v - 1] == p
                    if same_own and not raiseown:
                        continue  # building on your own build needs raise_own_build (docs/rules.md 3, 4.4)
                    other_own = need_own and not same_own  # the move must take another own build, or is illegal
                    if bmode == 1:
                        # standard (4.1): no raise; c alone or with loose cards summing to v - a
                        if not other_own:
                            ce0 = _seed(sc, sp, si, v - a)
                            if ce0 < 0:
                                return 1
                            sp = _finish_builds(sc, sp, ce0, same, v, si, b, u64, i8, c, p, bcol, numeric,
                                                acehigh, resolve, raiseown)
                            if sp < 0:
                                if sp == -2:
                                    si[GI_TOT] = ntrails
                                return 1 if sp == -1 else 2
                        # one raise of a single build of another value (rules 4, 5, 7)
                        for qs in range(nslot):
                            k = si[GI_SLOT + qs]
                            bb = u64[b, bcol + k]
                            if k == v - 1 or (other_own and i8[b, OWNER + k] != p):
                                continue
                            if i8[b, OWNER + k] == p and not raiseown:
                                continue
                            bv = np.int64(i8[b, BVAL + k])
                            r = v - bv - a
                            if r < 0 or (r > 0 and not raisetable):
                                continue
                            if _rank_sum(bb) != bv:
                                continue  # a multiple build never changes value (rule 4)
                            ce1 = _seed(sc, sp, si, r)
                            if ce1 < 0:
                                return 1
                            sp = _finish_builds(sc, sp, ce1, same | bb, v, si, b, u64, i8, c, p, bcol, numeric,
                                                acehigh, resolve, raiseown)
                            if sp < 0:
                                if sp == -2:
                                    si[GI_TOT] = ntrails
                                return 1 if sp == -1 else 2
                    else:
                        # reservation (4.2): c and the cards of the same-value reservation regroup freely, with
                        # optionally the cards of one reservation of another value
                        for qe in range(-1, nslot):
                            fixed = same
                            if qe < 0 and other_own:
                                continue
                            if qe >= 0:
                                extra = si[GI_SLOT + qe]
                                if extra == v - 1 or (other_own and i8[b, OWNER + extra] != p):
                                    continue
                                eb = u64[b, bcol + extra]
                                if eb == 0:
                                    continue
                                if i8[b, OWNER + extra] == p and not raiseown:
                                    continue
                                fixed = same | eb
                            if fixed == 0:
                                # nothing to regroup: c is a group alone or with loose cards summing to v - a
                                cs1 = sp
                                ce1 = _seed(sc, sp, si, v - a)
                                if ce1 < 0:
                                    return 1
                            else:
                                mand, nm_ = _regroup_items(si, fixed, a, v)
                                if nm_ < 0:
                                    continue
                                # every group of the covering search holds an item; the count-vector search's
                                # groups may also be loose cards alone (any number of groups)
                                if not _completable(si, n, v, weight(mand), nm_ if nm_ <= COVER_ITEMS else 64):
                                    continue
                                if nm_ > COVER_ITEMS:
                                    # a large reservation: the covering search would be exponential in its cards;
                                    # list the sets by the count-vector search instead (same sets, M + 1 at most)
                                    if not _legal(2, c, v, fixed, p, b, u64, i8, si, bcol, numeric, acehigh,
                                                  resolve, raiseown):
                                        continue
                                    if sp + 2 * (M + 1) + 2 > cap:
                                        return 1
                                    lev = U0
                                    for q in range(1, v + 1):
                                        if q <= 13 and (numeric or q <= 10):
                                            lev |= lm & RANK_MASK[q]
                                    mk, mv = new_memo_arrays(REGROUP_MEMO)
                                    sp = component(lev, fixed, mand, v, 0, M + 1, v, sc[:1], 0, mk, mv, sc, sp)
                                    continue
                                cs1, ce1 = _cover(sc, sp, si, nm_, v)
                                if cs1 < 0:
                                    if cs1 == -2:
                                        si[GI_TOT] = ntrails
                                    return 1 if cs1 == -1 else 2
                                sp = ce1
                            sp = _finish_builds(sc, cs1, ce1, fixed, v, si, b, u64, i8, c, p, bcol, numeric,
                                                acehigh, resolve, raiseown)
                            if sp < 0:
                                if sp == -2:
                                    si[GI_TOT] = ntrails
                                return 1 if sp == -1 else 2
                end = _sort_pairs(sc, start, sp)
                tot = _write(b, m8, mvc, M, tot, 2, c, sc, start, end)
                si[GI_BC + rk] = start
                si[GI_BC + 14 + rk] = end
                sp = end
    n_out = tot if tot < M else M
    for i in range(n_out, prev):
        m8[b, 0, i] = -1
        m8[b, 1, i] = -1
        m8[b, 2, i] = 0
        mvc[b, i] = 0
    i16[b, nmcol] = n_out
    i8[b, OVERFLOW] = 1 if tot > M else 0
    return 0


# --- crowded tables --------------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _compact(buf, w, lim):
    """Sort and de-duplicate the (key, mask) pairs of buf[:w]; keep the first ``lim`` pairs; return the new end."""
    w = _sort_pairs(buf, 0, w)
    return min(w, 2 * lim)


@njit(cache=True, nogil=True)
def _push(buf, w, lim, key, m):
    """Append one pair, compacting first when the buffer is full; return the new end."""
    if w + 2 > buf.shape[0]:
        w = _compact(buf, w, lim)
    buf[w] = key
    buf[w + 1] = m
    return w + 2


@njit(cache=True, nogil=True)
def _one_group_lex(loose, a, numeric, tag, limit, buf, w, lim):
    """Append the first ``limit`` loose sets summing to ``a`` in canonical order (one group, docs/rules.md 3).

    Preorder search over the valued loose cards in increasing id; a child is entered only if the sum still needed
    can be made from the cards after it (suffix subset-sum bitmasks), so the work grows with the output.
    """
    n = 0
    ids = np.empty(52, dtype=np.int64)
    vals = np.empty(52, dtype=np.int64)
    x = loose
    while x:
        c = lowbit(x)
        x &= x - U1
        v = _val(c, numeric)
        if v:
            ids[n] = c
            vals[n] = v
            n += 1
    reach = np.zeros(n + 1, dtype=np.int64)  # reach[k]: bit s set when cards k.. can make sum s
    reach[n] = 1
    for k in range(n - 1, -1, -1):
        reach[k] = (reach[k + 1] | (reach[k + 1] << vals[k])) & 0x7FFF
    st_j = np.empty(n + 1, dtype=np.int64)
    st_s = np.empty(n + 1, dtype=np.int64)
    st_m = np.empty(n + 1, dtype=np.uint64)
    found = 0
    d = 0
    st_j[0] = 0
    st_s[0] = 0
    st_m[0] = U0
    while d >= 0:
        j = st_j[d]
        pushed = False
        while j < n:
            ns = st_s[d] + vals[j]
            if ns <= a and (reach[j + 1] >> (a - ns)) & 1:
                st_j[d] = j + 1
                d += 1
                st_j[d] = j + 1
                st_s[d] = ns
                st_m[d] = st_m[d - 1] | BIT[ids[j]]
                pushed = True
                if ns == a:
                    m = st_m[d]
                    w = _push(buf, w, lim, lexrank(m) * np.uint64(16) + np.uint64(tag), m)
                    found += 1
                    if found >= limit:
                        return w
                break
            j += 1
        if not pushed:
            d -= 1
    return w


@njit(cache=True, nogil=True)
def general_slow(b, u64, i8, i16, m8, mvc, cfg, si, mk, mv):
    """List the captures and builds of a crowded table (after the trails), first ``M`` in canonical order, exactly.

    Same moves and order as :func:`gen_general`, produced per played card by the output-sensitive searches of
    :mod:`._crowded_gen` (unions of groups, with fixed builds and a mandatory count vector for the played card or the
    cards of a reservation being regrouped) and :func:`_one_group_lex`; each card's list is cut after the budget plus
    one, so the work grows with ``M``, not with the table. ``mk, mv``: the memo table of :func:`._crowded_gen.box`
    (:func:`._crowded_gen.new_memo_arrays`); ``box`` is a pure function of its key, so the caller keeps one table
    for all the crowded tables of a batch call instead of clearing 4 MB for each.
    """
    P = cfg[CFG_P]
    M = cfg[CFG_M]
    prune, numeric, acehigh, pairall, onegroup, bmode, raiseown, raisetable, resolve, maxv = _switches(cfg)
    prune = prune and popcount(u64[b, P]) <= PRUNE_MAX_LOOSE
    nmcol = P + cfg[CFG_S]
    p = i8[b, CUR]
    hm = u64[b, p]
    lm = u64[b, P]
    bcol = P + 1
    nslot = si[GI_NSLOT]
    tot = si[GI_TOT]
    mvs = np.empty(256, dtype=np.uint64)
    lim0 = M + 1
    buf = np.empty(4 * lim0 + 256, dtype=np.uint64)  # room for a compacted list plus one component or batch
    le = np.zeros(15, dtype=np.uint64)  # le[v]: loose valued cards of value <= v
    acc = U0
    for v in range(1, 15):
        if v <= 13 and (numeric or v <= 10):
            acc |= lm & RANK_MASK[v]
        le[v] = acc
    # --- captures, by played card id ---
    x = hm
    while x and tot <= M:
        c = lowbit(x)
        x &= x - U1
        lim = M - tot + 1
        w = 0
        a0 = _val(c, numeric)
        if a0 == 0:
            w = _court_captures(buf, w, c, lm, pairall, p, b, u64, i8, si, bcol, numeric, acehigh, resolve, raiseown)
        else:
            for a in (a0, 14 if acehigh and RANK[c] == 1 else 0):  # a played ace may also capture as 14
                if a == 0:
                    continue
                bm_all, nb = _builds_of_value(b, u64, i8, si, bcol, nslot, a)
                if onegroup:
                    w = _compact(buf, w, lim)
                    w = _one_group_lex(le[a], a, numeric, a, lim, buf, w, lim)
                    for q in range(nb):
                        m = u64[b, bcol + si[GI_MV + q]]
                        if _legal(1, c, a, m, p, b, u64, i8, si, bcol, numeric, acehigh, resolve, raiseown):
                            w = _push(buf, w, lim, lexrank(m) * np.uint64(16) + np.uint64(a), m)
                    continue
                if prune:
                    if not _legal(1, c, a, bm_all, p, b, u64, i8, si, bcol, numeric, acehigh, resolve, raiseown):
                        continue
                    if a == 1 and acehigh and bm_all == 0:
                        # the ace's capture as 1 (every loose ace) is dropped when a legal capture as 14 holds
                        # every loose ace (docs/rules.md 3 ace_high; pruning compares an ace's two values)
                        b14 = U0
                        for qs in range(nslot):
                            k = si[GI_SLOT + qs]
                            if i8[b, BVAL + k] == 14:
                                b14 |= u64[b, bcol + k]
                        if _legal(1, c, 14, b14, p, b, u64, i8, si, bcol, numeric, acehigh, resolve, raiseown) \
                                and box(loose_vector(le[1]), loose_vector(le[14]), 14, mk, mv):
                            continue
                    nmv = maximal_vectors(loose_vector(le[a]), a, mk, mv, mvs)
                    while nmv < 0:
                        mvs = np.empty(2 * mvs.shape[0], dtype=np.uint64)
                        nmv = maximal_vectors(loose_vector(le[a]), a, mk, mv, mvs)
                    w = _compact(buf, w, lim)
                    w = component(le[a], bm_all, U0, a, 1, lim, a, mvs, nmv, mk, mv, buf, w)
                else:
                    for sub in range(1 << nb):
                        fixed = U0
                        for q in range(nb):
                            if (sub >> q) & 1:
                                fixed |= u64[b, bcol + si[GI_MV + q]]
                        if not _legal(1, c, a, fixed, p, b, u64, i8, si, bcol, numeric, acehigh, resolve,
                                      raiseown):
                            continue
                        w = _compact(buf, w, lim)
                        w = component(le[a], fixed, U0, a, 0, lim, a, mvs, 0, mk, mv, buf, w)
        tot = _write(b, m8, mvc, M, tot, 1, c, buf, 0, _compact(buf, w, lim))
    # --- builds, by played card id ---
    x = hm if bmode != 0 else U0
    while x and tot <= M:
        c = lowbit(x)
        x &= x - U1
        a = _val(c, numeric)
        if a == 0:
            continue
        lim = M - tot + 1
        w = 0
        for v in range(a, maxv + 1):
            if si[GI_CAPC + v] - _caps(c, v, numeric, acehigh) <= 0:
                continue  # rule 2
            if bmode == 3:
                w = _compact(buf, w, lim)  # leaves room for every attachment (at most 78 pairs)
                w = _attach_builds(buf, w, c, a, v, lm, nslot, p, b, u64, i8, si, bcol, numeric, acehigh, resolve,
                                   raiseown)
                continue
            same = u64[b, bcol + v - 1]
            if same != 0 and i8[b, OWNER + v - 1] == p and not raiseown:
                continue
            if bmode == 1:
                if _legal(2, c, v, same, p, b, u64, i8, si, bcol, numeric, acehigh, resolve, raiseown):
                    mand = U0 if v == a else NIB_ONE[a]
                    w = _compact(buf, w, lim)
                    w = component(le[v], same, mand, v, 0, lim, v, mvs, 0, mk, mv, buf, w)
                for qs in range(nslot):
                    k = si[GI_SLOT + qs]
                    bb = u64[b, bcol + k]
                    if k == v - 1 or (i8[b, OWNER + k] == p and not raiseown):
                        continue
                    bv = np.int64(i8[b, BVAL + k])
                    if _rank_sum(bb) != bv:
                        continue
                    r = v - bv - a
                    if r < 0 or (r > 0 and not raisetable):
                        continue
                    if not _legal(2, c, v, bb | same, p, b, u64, i8, si, bcol, numeric, acehigh, resolve, raiseown):
                        continue
                    mand = U0 if r == 0 else NIB_ONE[bv + a]
                    w = _compact(buf, w, lim)
                    w = component(le[v], bb | same, mand, v, 0, lim, v, mvs, 0, mk, mv, buf, w)
            else:
                for qe in range(-1, nslot):
                    fixed = same
                    if qe >= 0:
                        extra = si[GI_SLOT + qe]
                        if extra == v - 1:
                            continue
                        if i8[b, OWNER + extra] == p and not raiseown:
                            continue
                        fixed = same | u64[b, bcol + extra]
                    mand, nm_ = _regroup_items(si, fixed, a, v)
                    if nm_ < 0 or not _legal(2, c, v, fixed, p, b, u64, i8, si, bcol, numeric, acehigh, resolve,
                                              raiseown):
                        continue
                    w = _compact(buf, w, lim)
                    w = component(le[v], fixed, mand, v, 0, lim, v, mvs, 0, mk, mv, buf, w)
        tot = _write(b, m8, mvc, M, tot, 2, c, buf, 0, _compact(buf, w, lim))
    n_out = tot if tot < M else M
    for i in range(n_out, M):
        m8[b, 0, i] = -1
        m8[b, 1, i] = -1
        m8[b, 2, i] = 0
        mvc[b, i] = 0
    i16[b, nmcol] = n_out
    i8[b, OVERFLOW] = 1 if tot > M else 0
