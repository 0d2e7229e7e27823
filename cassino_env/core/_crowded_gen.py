"""Output-sensitive move generation for crowded tables: the first K moves in canonical order, exactly.

On a table of 30 or more loose numerals the number of legal captures and builds is astronomical (every union of
disjoint groups), so listing them all and sorting is out of the question. This path lists card sets directly in
canonical order (sorted card-id lists, a prefix first) by a preorder depth-first search over the candidate cards in
increasing id, and stops after K sets. Every subtree is entered only if it holds at least one wanted set, so the
work is proportional to K times the depth, whatever the table.

Feasibility works on *count vectors*: whether a set of loose numerals splits into groups of value ``v`` depends only
on how many cards of each value it holds. A vector packs the counts of values 1..14 in 4-bit fields (value i at
bits ``4(i-1)``; at most 4 per value, as a rank has four cards; value 14 never occurs on the table but keeps the
arithmetic of ``v = 14`` uniform). Values 11..13 are numeric courts (docs/rules.md 3), used by the general generator.
``box(lo, hi, v)`` answers "is there a multiset of groups of ``v`` whose cards u satisfy ``lo <= u <= hi`` field by
field", i.e. can every card counted in ``lo`` be covered by disjoint groups of ``v`` drawing any extra cards from
``hi - lo``. It branches on which group
(an integer partition of ``v``, precomputed) covers one card of the smallest value in ``lo``, with memoisation.

A component lists the sets ``L | F`` in canonical order where ``F`` is a fixed set of build cards that must be in
every set (the builds of value ``v``, a raised build) and ``L`` ranges over loose numerals with:

* mode 0: ``L`` plus the mandatory vector ``mand`` (the played card, for a build whose card joins loose cards)
  splits into groups of ``v``;
* mode 1: ``L``'s count vector is a maximal one among those that split (a pruned capture; the maximal vectors are
  found first by :func:`maximal_vectors`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._bits import BIT, GOLDEN, RANK, U0, U1, highbit, lexrank, lowbit, mix64, popcount

NFIELDS = 14
NIB_H = np.uint64(int("8" * NFIELDS, 16))  # guard bit of each of the 14 fields
NIB_LOW = np.uint64(int("7" * NFIELDS, 16))
NIB_ONE = np.array([0] + [1 << (4 * (i - 1)) for i in range(1, NFIELDS + 1)], dtype=np.uint64)
S3 = np.uint64(3)
S56 = np.uint64(56)
F15 = np.uint64(15)
MEMO_BITS = 18
MEMO_SIZE = 1 << MEMO_BITS


def _partitions(n: int, largest: int) -> list[list[int]]:
    if n == 0:
        return [[]]
    out = []
    for first in range(min(n, largest), 0, -1):
        for rest in _partitions(n - first, first):
            out.append([first, *rest])
    return out


PW = 15  # row width of the partition index: v * PW + i


def _tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    vecs: list[int] = []
    start = np.zeros(PW * PW, dtype=np.int64)
    count = np.zeros(PW * PW, dtype=np.int64)
    for v in range(1, 15):
        parts = [p for p in _partitions(v, min(v, 13)) if max(p.count(i) for i in set(p)) <= 5]
        for i in range(1, min(v, 13) + 1):
            start[v * PW + i] = len(vecs)
            for p in parts:
                if i in p:
                    vecs.append(sum(p.count(j) << (4 * (j - 1)) for j in set(p)))
            count[v * PW + i] = len(vecs) - start[v * PW + i]
    return np.array(vecs, dtype=np.uint64), start, count


#: Group types: PART_VEC[PART_START[v*PW+i] : + PART_COUNT[v*PW+i]] are the partitions of v (1..14, parts up to 13)
#: that contain part i, as count vectors (parts repeated more than 5 times are left out: no box allows them).
PART_VEC, PART_START, PART_COUNT = _tables()


@njit(cache=True, nogil=True)
def new_memo_arrays(size=MEMO_SIZE):
    """Empty memo table for :func:`box`: keys uint64[2 * size], results int8[size] (0 empty); size a power of two.

    A full table only stops memoising (:func:`box` stays exact), so a small one suits occasional use.
    """
    return np.zeros(2 * size, dtype=np.uint64), np.zeros(size, dtype=np.int8)


@njit(cache=True, nogil=True)
def weight(vec):
    """Sum of the card values counted by ``vec``."""
    w = 0
    x = vec
    i = 1
    while x:
        w += i * np.int64(x & F15)
        x >>= np.uint64(4)
        i += 1
    return w


@njit(cache=True, nogil=True)
def box(lo, hi, v, mk, mv):
    """True when some disjoint groups of value ``v`` use u cards of each value with lo <= u <= hi (see module)."""
    if lo == 0:
        return True
    wl = weight(lo)
    wh = weight(hi)
    if ((wl + v - 1) // v) * v > wh:
        return False
    k2 = hi | (np.uint64(v) << S56)
    msk = np.uint64(mv.shape[0] - 1)
    h = mix64(lo * GOLDEN ^ k2) & msk
    for _ in range(64):
        hh = np.int64(h)
        r = mv[hh]
        if r == 0:
            break
        if mk[2 * hh] == lo and mk[2 * hh + 1] == k2:
            return r == 2
        h = (h + U1) & msk
    i = highbit(lo) // 4 + 1  # the largest value to cover: its groups have the fewest completions
    res = False
    base = v * PW + i
    for k in range(PART_START[base], PART_START[base] + PART_COUNT[base]):
        g = PART_VEC[k]
        if ((hi | NIB_H) - g) & NIB_H == NIB_H:  # g fits under hi
            e = (lo | NIB_H) - g
            nlo = e & (((e & NIB_H) >> S3) * F15) & NIB_LOW  # max(lo - g, 0) field by field
            if box(nlo, hi - g, v, mk, mv):
                res = True
                break
    hh = np.int64(h)
    if mv[hh] == 0:
        mk[2 * hh] = lo
        mk[2 * hh + 1] = k2
        mv[hh] = 2 if res else 1
    return res


@njit(cache=True, nogil=True)
def _le(a, b):
    """a <= b field by field."""
    return ((b | NIB_H) - a) & NIB_H == NIB_H


@njit(cache=True, nogil=True)
def maximal_vectors(nvec, v, mk, mv, out):
    """Write the maximal count vectors m <= nvec that split into groups of v into ``out``; return how many.

    Depth-first over values 1..v with counts tried from high to low: the vectors come in decreasing lexicographic
    order, so one that no earlier maximal vector dominates is maximal; a subtree whose upper bound is dominated is
    skipped. Returns -1 if ``out`` is too small.
    """
    n = 0
    choice = np.zeros(16, dtype=np.int64)
    dec = np.zeros(16, dtype=np.uint64)
    rest = np.zeros(16, dtype=np.uint64)  # rest[k]: nvec restricted to values > k
    for k in range(v + 1):
        rest[k] = (nvec >> np.uint64(4 * k)) << np.uint64(4 * k)
    level = 1
    choice[1] = np.int64((nvec >> np.uint64(0)) & F15) + 1
    while level >= 1:
        if choice[level] == 0:
            level -= 1
            continue
        choice[level] -= 1
        d = dec[level - 1] + np.uint64(choice[level]) * NIB_ONE[level]
        hi = d + rest[level]
        dominated = False
        for q in range(n):
            if _le(hi, out[q]):
                dominated = True
                break
        if dominated or not box(d, hi, v, mk, mv):
            continue
        if level == v:
            if n >= out.shape[0]:
                return -1
            out[n] = d
            n += 1
            continue
        dec[level] = d
        level += 1
        choice[level] = np.int64((nvec >> np.uint64(4 * (level - 1))) & F15) + 1
    return n


@njit(cache=True, nogil=True)
def _feasible(lo, hi, mand, v, mode, mvs, nmv, mk, mv):
    if mode == 0:
        return box(lo + mand, hi + mand, v, mk, mv)
    for q in range(nmv):
        if _le(lo, mvs[q]) and _le(mvs[q], hi):
            return True
    return False


@njit(cache=True, nogil=True)
def _complete(vec, mand, v, mode, mvs, nmv, mk, mv):
    if mode == 0:
        return box(vec + mand, vec + mand, v, mk, mv)
    for q in range(nmv):
        if mvs[q] == vec:
            return True
    return False


@njit(cache=True, nogil=True)
def component(loose, fixed, mand, v, mode, limit, tag, mvs, nmv, mk, mv, out, w):
    """Append to ``out[w:]`` up to ``limit`` pairs (lexrank(L | fixed) * 16 + tag, L | fixed) in canonical order.

    ``loose``: the loose numerals of value <= v (candidates for L); ``fixed``: cards every set holds; ``mand``: the
    count vector added to L's before the split test (mode 0); ``mode``: 0 split, 1 maximal (``mvs[:nmv]``). Empty
    sets are skipped. Returns the new write position (``out`` must hold ``2 * limit`` more words).
    """
    cand = loose | fixed
    nc = popcount(cand)
    cbit = np.empty(nc + 1, dtype=np.uint64)
    cvec = np.zeros(nc + 1, dtype=np.uint64)
    suf = np.zeros(nc + 2, dtype=np.uint64)
    nextf = np.empty(nc + 2, dtype=np.int64)
    x = cand
    k = 0
    lastf = -1
    while x:
        c = lowbit(x)
        x &= x - U1
        cbit[k] = BIT[c]
        if fixed & BIT[c]:
            lastf = k
        else:
            cvec[k] = NIB_ONE[RANK[c]]
        k += 1
    nextf[nc] = nc
    nextf[nc + 1] = nc
    for k in range(nc - 1, -1, -1):
        suf[k] = suf[k + 1] + cvec[k]
        nextf[k] = k if (fixed & cbit[k]) else nextf[k + 1]
    found = 0
    if limit <= 0 or not _feasible(U0, suf[0], mand, v, mode, mvs, nmv, mk, mv):
        return w
    # preorder DFS; frame: next candidate index i, set mask, count vector, next child j, failed values bitmask
    st_i = np.empty(nc + 2, dtype=np.int64)
    st_m = np.empty(nc + 2, dtype=np.uint64)
    st_v = np.empty(nc + 2, dtype=np.uint64)
    st_j = np.empty(nc + 2, dtype=np.int64)
    st_f = np.empty(nc + 2, dtype=np.int64)
    d = 0
    st_i[0] = 0
    st_m[0] = U0
    st_v[0] = U0
    st_j[0] = 0
    st_f[0] = 0
    while d >= 0:
        i = st_i[d]
        j = st_j[d]
        stop = nextf[i]  # a child may not skip a fixed card
        pushed = False
        while j < nc and j <= stop:
            vec = st_v[d] + cvec[j]
            val = np.int64(lowbit(cvec[j]) // 4 + 1) if cvec[j] else 0
            if val and (st_f[d] >> val) & 1:
                j += 1
                continue
            if _feasible(vec, vec + suf[j + 1], mand, v, mode, mvs, nmv, mk, mv):
                st_j[d] = j + 1
                d += 1
                st_i[d] = j + 1
                st_m[d] = st_m[d - 1] | cbit[j]
                st_v[d] = vec
                st_j[d] = j + 1
                st_f[d] = 0
                pushed = True
                # visit the new node
                if j + 1 > lastf and st_m[d] != 0 and _complete(vec, mand, v, mode, mvs, nmv, mk, mv):
                    m = st_m[d]
                    out[w] = lexrank(m) * np.uint64(16) + np.uint64(tag)
                    out[w + 1] = m
                    w += 2
                    found += 1
                    if found >= limit:
                        return w
                break
            if val:
                st_f[d] |= 1 << val  # a later card of this value has fewer cards after it: infeasible too
            j += 1
        if not pushed:
            d -= 1
    return w


@njit(cache=True, nogil=True)
def loose_vector(loose):
    """Count vector of a set of numerals."""
    vec = U0
    x = loose
    while x:
        c = lowbit(x)
        x &= x - U1
        vec += NIB_ONE[RANK[c]]
    return vec
