"""Searches of the general move generator (loose groups by sum, unions of disjoint groups), and the scratch sorting
and trail writing both generators share.

A *group* is a set of loose valued cards with a given sum (docs/rules.md 1); a capture or a build of value v takes a
union of pairwise disjoint groups of sum v. The classic generator (:mod:`._classic_gen`) writes its own copies of the
two searches inline, which keeps its hot path about 12% faster; the general generator gets them inlined by numba
(``forceinline``), for the same reason. Both generators keep their data in one growable
``uint64`` scratch buffer ``sc`` and one ``int64`` buffer ``si``; the callers pass the offsets of the regions they
use. Every function returns a new write position, or -1 when ``sc`` is full (the caller retries with a larger
buffer) and -2 when a cap is exceeded (the caller hands the table to its output-sensitive path). """

from __future__ import annotations

import numpy as np
from numba import njit

from ._bits import U0, U1, lowbit

#: Index in the drivers' ``si`` buffer (of either generator, beyond both generators' regions) of the flag a move
#: generator sets when it hands a crowded table over to its output-sensitive path, which the driver then runs with
#: the memo table it keeps for the whole batch call.
CROWDED_FLAG = 446

_SMALL = 48  # below this many entries de-duplication and sorting are quadratic; above, heap sort in place


@njit(cache=True, forceinline=True)
def loose_groups(sc, si, n, lb, lval, jstk, sstk, mstk, maxs, needg, sp, visit_cap):
    """Record every subset of the n loose cards (bits ``sc[lb:]``, values ``si[lval:]``, sorted by value) whose sum
    s <= maxs has bit s set in ``needg``, as (mask, s) pairs from ``sc[sp]``; -2 after ``visit_cap`` subsets."""
    cap = sc.shape[0]
    d = 0
    j = 0
    cs = 0
    cm = U0
    visited = 0
    while True:
        if j < n and cs + si[lval + j] <= maxs:
            ns = cs + si[lval + j]
            nm = cm | sc[lb + j]
            visited += 1
            if visited > visit_cap:
                return -2
            if (needg >> ns) & 1:
                if sp + 2 > cap:
                    return -1
                sc[sp] = nm
                sc[sp + 1] = ns
                sp += 2
            si[jstk + d] = j
            si[sstk + d] = cs
            sc[mstk + d] = cm
            d += 1
            cs = ns
            cm = nm
            j += 1
        else:
            if d == 0:
                return sp
            d -= 1
            j = si[jstk + d] + 1
            cs = si[sstk + d]
            cm = sc[mstk + d]


@njit(cache=True, forceinline=True)
def bucket_groups(sc, si, flat, sp, gst, gcn, nsums):
    """Counting-sort the (mask, sum) pairs of sc[flat:sp] by sum: group s is ``sc[si[gst+s] : + si[gcn+s]]``."""
    ng = (sp - flat) // 2
    for s in range(nsums):
        si[gcn + s] = 0
    for i in range(ng):
        si[gcn + np.int64(sc[flat + 2 * i + 1])] += 1
    if sp + ng > sc.shape[0]:
        return -1
    off = sp
    for s in range(nsums):
        si[gst + s] = off
        off += si[gcn + s]
        si[gcn + s] = 0
    for i in range(ng):
        s = np.int64(sc[flat + 2 * i + 1])
        sc[si[gst + s] + si[gcn + s]] = sc[flat + 2 * i]
        si[gcn + s] += 1
    return sp + ng


@njit(cache=True, forceinline=True)
def unions(sc, si, gs, k, sp, union_cap, jstk, mstk):
    """Every union of pairwise disjoint groups among the k groups at ``sc[gs:]``, the empty set first, from
    ``sc[sp]``, de-duplicated (one set may split in several ways); -2 past ``union_cap`` unions."""
    cap = sc.shape[0]
    start = sp
    if sp + 1 > cap:
        return -1
    sc[sp] = U0
    sp += 1
    if k == 0:
        return sp
    d = 0
    j = 0
    cm = U0
    while True:
        while j < k and (sc[gs + j] & cm) != 0:
            j += 1
        if j < k:
            nm = cm | sc[gs + j]
            if sp - start > union_cap:
                return -2
            if sp + 1 > cap:
                return -1
            sc[sp] = nm
            sp += 1
            si[jstk + d] = j
            sc[mstk + d] = cm
            d += 1
            cm = nm
            j += 1
        else:
            if d == 0:
                break
            d -= 1
            j = si[jstk + d] + 1
            cm = sc[mstk + d]
    if k > 1:
        sp = dedupe(sc, start + 1, sp)
    return sp


@njit(cache=True, nogil=True)
def _sift(sc, start, stride, root, end):
    """Heap sift-down over entries sc[start + stride * k] (k < end), moving whole entries of ``stride`` words."""
    while True:
        child = 2 * root + 1
        if child >= end:
            return
        if child + 1 < end and sc[start + stride * (child + 1)] > sc[start + stride * child]:
            child += 1
        if sc[start + stride * root] >= sc[start + stride * child]:
            return
        for q in range(stride):
            t = sc[start + stride * root + q]
            sc[start + stride * root + q] = sc[start + stride * child + q]
            sc[start + stride * child + q] = t
        root = child


@njit(cache=True, nogil=True)
def heapsort(sc, start, n, stride):
    """Sort n entries of ``stride`` words at sc[start:] by their first word (in place, no allocation)."""
    for root in range(n // 2 - 1, -1, -1):
        _sift(sc, start, stride, root, n)
    for end in range(n - 1, 0, -1):
        for q in range(stride):
            t = sc[start + q]
            sc[start + q] = sc[start + stride * end + q]
            sc[start + stride * end + q] = t
        _sift(sc, start, stride, 0, end)


@njit(cache=True, nogil=True)
def dedupe(sc, start, end):
    """Drop repeated masks in sc[start:end] (order not kept); return the new end."""
    n = end - start
    if n <= _SMALL:
        w = start
        for i in range(start, end):
            x = sc[i]
            dup = False
            for q in range(start, w):
                if sc[q] == x:
                    dup = True
                    break
            if not dup:
                sc[w] = x
                w += 1
        return w
    heapsort(sc, start, n, 1)
    w = start + 1
    for i in range(start + 1, end):
        if sc[i] != sc[w - 1]:
            sc[w] = sc[i]
            w += 1
    return w


@njit(cache=True, nogil=True)
def sort_pairs(sc, start, end):
    """Sort the (key, mask) pairs in sc[start:end] by key; return the new end after dropping repeated keys."""
    n = (end - start) // 2
    if n <= _SMALL:
        for i in range(1, n):
            k = sc[start + 2 * i]
            m = sc[start + 2 * i + 1]
            j = i - 1
            while j >= 0 and sc[start + 2 * j] > k:
                sc[start + 2 * j + 2] = sc[start + 2 * j]
                sc[start + 2 * j + 3] = sc[start + 2 * j + 1]
                j -= 1
            sc[start + 2 * j + 2] = k
            sc[start + 2 * j + 3] = m
    else:
        heapsort(sc, start, n, 2)
    w = start  # drop repeats (equal key = equal card set and value)
    for i in range(n):
        if i == 0 or sc[start + 2 * i] != sc[w - 2]:
            sc[w] = sc[start + 2 * i]
            sc[w + 1] = sc[start + 2 * i + 1]
            w += 2
    return w


@njit(cache=True, nogil=True)
def write_trails(b, m8, mvc, M, tot, hand):
    """Write a trail of every card of ``hand`` (uint64 set) to game b's move table from row ``tot``, by card id,
    rows past M counted but not written; return the new count (docs/rules.md 1 trail)."""
    x = hand
    while x:
        c = lowbit(x)
        x &= x - U1
        if tot < M:
            m8[b, 0, tot] = 0
            m8[b, 1, tot] = c
            m8[b, 2, tot] = 0
            mvc[b, tot] = 0
        tot += 1
    return tot
