"""Scripted bots: ``random``, ``greedy`` and a ladder of hand-written strategies, ``beginner`` < ``intermediate`` <
``advanced``, modelled on the computer levels of the Trump Stadium site (docs/rules.md 6).

Every bot acts for a batch of games at once (:class:`agents.base.Agent`): it reads the acting seat's knowledge
(``obs["view"]``, :func:`cassino_env.obs.public_view`) and the move table (``move_kind``, ``move_card``,
``move_value``, ``move_cards``), scores every listed move in one numba pass over the batch and plays the best one.
Ties are broken by a fixed rule: the first tied move in the table's canonical order (trails, captures, builds; then
by card). Bots read the rules only through :class:`RuleTables` (card values, point cards, sweeps), so any bot plays
any preset and any seat.

Strategies
----------
A move's score is a weighted sum of the features below, in *points* (docs/rules.md 5): a card set ``X`` is worth
``V(X) = w_cards * |X| + w_spades * spades(X) + points(X)``, where ``points`` are the cards' own points under the
rules' scoring (standard and bga: each ace 1, 10D 2, 2S 1; cicera: 10D 1, 2S 1, JH 1, aces nothing, and the spades
of a napula its share: AS, 2S, 3S one point each, 4S a half, 5S a quarter) and ``w_cards = most-cards points /
(52 / sides + 1)``, ``w_spades = most-spades points / (13 / sides + 0.5)`` (a card is worth its share of the "most"
items: 3 and 1 in standard and bga, 2 and 1 in cicera). "The threat" is the next seat to move, an opponent;
"P(v)" is the chance that the threat holds a card capturing value ``v``, from the cards the bot has not seen.

======================  ==================================================================================
feature                 meaning
======================  ==================================================================================
``gain``                ``V`` of the cards a capture takes, the played card included
``sweep``               sweep points a capture earns now (it empties the table)
``bonus``               Cicera's other in-play points a capture earns now (docs/rules.md 5.3): pairing the card
                        the previous player just trailed, one suit throughout, three or more table cards
``sweep_risk``          ``P(threat can sweep the table left) * sweep points``
``exposure``            the threat's expected take from the table left: ``sum_v P(v) * V(what v captures)``,
                        ``what v captures`` = loose cards and builds of value ``v`` and pairs of loose numerals
                        summing to ``v``, plus the capturing card (in Cicera also the in-play point for pairing
                        a card just trailed)
``own_builds``          builds of the bot's side left on the table, each ``(1 - P(v)) * V(build + a card)``:
                        what the bot expects to collect next turn (protect and complete own builds)
``trail_value``         ``V`` of a trailed card
``keep``                points among unseen cards that only the played card (trail or build) could capture: the
                        option the bot gives up (keep cards that capture valuable cards)
``steal``               ``V`` of opponents' builds a capture takes (steal builds)
======================  ==================================================================================

================  ======================================================================================
bot               strategy (weights in :data:`STYLES`)
================  ======================================================================================
``random``        a uniformly random legal move (the caller's generator)
``greedy``        ``gain + sweep + bonus``: the move that scores most now; it never builds (a build scores 0 now and
                  trails come first in the table, so a tie between a trail and a build goes to the trail)
``beginner``      greedy, but trails its least valuable card and avoids a trail or build after which a sweep
                  is *possible* (some unseen card could sweep the table)
``intermediate``  also builds what it expects to collect, protects and completes its builds (``own_builds``),
                  steals builds, and weighs the sweep risk by a rough chance
                  ``P(v) ~ min(1, unseen(v) * hand / unseen)``
``advanced``      intermediate plus card tracking: exact hypergeometric chances ``P(v)`` from the unseen cards
                  (in the last round of a two-player deal it knows the opponent's hand), the threat's expected
                  take of the table it leaves (``exposure``), and it keeps cards that capture valuable unseen
                  cards (``keep``)
================  ======================================================================================

Measured ladder (classic, two players, duplicate matches; see docs/evaluation.md): each level beats the
one below it. ``Style.race_aware`` (stop valuing cards or spades once "most" is decided) is available but measured
no better, so no level uses it. Every preset and player count (``cassino eval --agents ladder``, 600 deals a pair,
seed 1): greedy beats random by 3.5-6.2 points a deal (16.7 in cicera), beginner beats greedy (0.6-5.1), and
advanced beats intermediate or ties it (within the 95% interval); intermediate beats beginner except in cicera (no
builds to make or steal) and in bga with four and six players, where they tie.

>>> import numpy as np
>>> from cassino_env.vector import CassinoVectorEnv
>>> env = CassinoVectorEnv(num_envs=3, seed=0)
>>> obs, _ = env.reset()
>>> bot = make_bot("advanced", env.rules)
>>> actions = bot.act(obs, np.random.default_rng(0))
>>> bool(all(obs["action_mask"][np.arange(3), actions]))
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit, prange

from agents.base import Agent
from cassino_env.cards import BIG_CASINO, JACK_OF_HEARTS, LITTLE_CASINO, NUM_CARDS, RANK, SPADE_MASK, SUIT_MASK
from cassino_env.core import check_numba_cache, popcount
from cassino_env.rules import RuleSet

# This module's kernels call the core's popcount and read the package's card tables: drop their on-disk cache when
# this file or the package's sources change, before any kernel here loads.
check_numba_cache(__file__)

#: Feature names, in the order of the feature axis of :func:`score_moves`'s features and of a bot's weights.
FEATURES = ("gain", "sweep", "sweep_risk", "exposure", "own_builds", "trail_value", "keep", "steal", "bonus")
F_GAIN, F_SWEEP, F_SWEEP_RISK, F_EXPOSE, F_OWN_BUILDS, F_TRAIL, F_KEEP, F_STEAL, F_BONUS = range(len(FEATURES))
NF = len(FEATURES)

#: How a bot estimates P(v), the chance that the threat holds a card capturing ``v``, from ``s`` such cards among
#: ``U`` unseen cards and a threat hand of ``h`` cards: 1 if ``s > 0`` (``any``); ``min(1, s * h / U)``
#: (``linear``); ``1 - C(U - s, h) / C(U, h)`` (``hypergeometric``, exact for a uniformly random hand).
PROB_ANY, PROB_LINEAR, PROB_HYPER = 0, 1, 2

#: Bit of a capture value in a value set (uint32): numeric values 1..14 are bits 1..14; a court that pairs only
#: (``court_values = none``) of rank r is bit ``COURT_BIT + r`` (27..29).
COURT_BIT = 16

# cfg entries of the kernel (int64 array)
_C_P, _C_S, _C_SWEEP, _C_PAIR_ALL, _C_ONE_GROUP, _C_HAND, _C_MAXV, _C_SWEEP_LAST, _C_NPTS, _C_IN_PLAY = range(10)
_NCFG = 10
_SPADE_IDS = {r: 39 + r - 1 for r in range(1, 14)}  # rank -> card id of that spade


@dataclass(frozen=True)
class RuleTables:
    """What a bot needs to know of a rule set, as arrays for the numba kernel.

    Attributes:
        rules: the rule set.
        cfg: int64[10] — seats, sides, sweep points, court pair take all, one-group capture, hand size, largest
            capture value, sweeps on the last play count, number of point cards, in-play bonuses.
        cap_bits: uint32[52] — the capture values of each card played from hand (bit v; see :data:`COURT_BIT`).
        same_cap: uint64[52] — the cards that share a capture value with each card (itself included).
        item_val: int8[52] — the value of each card lying loose on the table (an ace is 1; a pairing-only court of
            rank r is ``COURT_BIT + r``).
        point_cards: int64[k] — card ids that carry points of their own; ``point_values`` float64[k] their points.
        w_cards: points per captured card (share of the most-cards item).
        w_spades: points per captured spade (share of the most-spades item).
    """

    rules: RuleSet
    cfg: np.ndarray
    cap_bits: np.ndarray
    same_cap: np.ndarray
    item_val: np.ndarray
    point_cards: np.ndarray
    point_values: np.ndarray
    w_cards: float
    w_spades: float

    @classmethod
    def of(cls, rules: RuleSet) -> RuleTables:
        """The tables of ``rules`` (docs/rules.md 1 values, 3 switches, 5 scoring)."""
        numeric = rules.court_values == "numeric"
        cap = np.zeros(NUM_CARDS, dtype=np.uint32)
        item = np.zeros(NUM_CARDS, dtype=np.int8)
        for c in range(NUM_CARDS):
            r = int(RANK[c])
            if r <= 10 or numeric:
                cap[c] = 1 << r
                item[c] = r
                if r == 1 and rules.ace_high:  # docs/rules.md 3 ace_high: a played ace may count 14
                    cap[c] |= 1 << 14
            else:  # docs/rules.md 3 court_values=none: a court only pairs with a court of its rank
                cap[c] = 1 << (COURT_BIT + r)
                item[c] = COURT_BIT + r
        pts: dict[int, float] = {}
        if rules.scoring == "cicera":
            # docs/rules.md 5.3: 2S, 10D, JH one point each, aces nothing; a napula (AS 2S 3S, then the run) scores its
            # length: its first three spades a point each, 4S and 5S a share of the longer runs they extend
            pts = {BIG_CASINO: 1.0, JACK_OF_HEARTS: 1.0, _SPADE_IDS[1]: 1.0, _SPADE_IDS[3]: 1.0, _SPADE_IDS[4]: 0.5,
                   _SPADE_IDS[5]: 0.25}
            pts[LITTLE_CASINO] = 2.0  # little casino 1, and napula's second card 1
            most_cards = 2.0
        else:  # docs/rules.md 5.1 / 5.2: aces 1, big casino 2, little casino 1 (bga's shared ties keep these weights)
            pts = {BIG_CASINO: 2.0, LITTLE_CASINO: 1.0, 0: 1.0, 13: 1.0, 26: 1.0, 39: 1.0}
            most_cards = 3.0
        S = rules.num_sides
        cfg = np.zeros(_NCFG, dtype=np.int64)
        cfg[_C_P], cfg[_C_S], cfg[_C_SWEEP] = rules.num_players, S, rules.sweep_points
        cfg[_C_PAIR_ALL] = int(rules.court_values == "none" and rules.court_pair_take == "all")
        cfg[_C_ONE_GROUP] = int(rules.capture_mode == "one_group")
        cfg[_C_HAND], cfg[_C_MAXV] = rules.hand_size, rules.max_value
        cfg[_C_SWEEP_LAST], cfg[_C_NPTS] = int(rules.sweep_on_last_play), len(pts)
        cfg[_C_IN_PLAY] = int(rules.in_play_bonuses)
        same = np.array([sum(1 << d for d in range(NUM_CARDS) if cap[c] & cap[d]) for c in range(NUM_CARDS)],
                        dtype=np.uint64)
        return cls(rules=rules, cfg=cfg, cap_bits=cap, same_cap=same, item_val=item,
                   point_cards=np.array(sorted(pts), dtype=np.int64),
                   point_values=np.array([pts[c] for c in sorted(pts)], dtype=np.float64),
                   w_cards=most_cards / (52.0 / S + 1.0), w_spades=1.0 / (13.0 / S + 0.5))


# --- numba kernel --------------------------------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def _value(mask, cw, sw, pcards, pvals):
    """V(mask) in points: cards, spades and the cards' own points."""
    v = cw * popcount(mask) + sw * popcount(mask & SPADE_MASK)
    for j in range(pcards.shape[0]):
        if (mask >> np.uint64(pcards[j])) & np.uint64(1):
            v += pvals[j]
    return v


@njit(cache=True, nogil=True)
def _value_bits(mask, cw, sw, pmask, ptv):
    """:func:`_value` by the set bits of ``mask & pmask`` (``ptv``: float64[64], each point card's points by card
    id): the same sum in the same order where the point cards are listed in ascending id order (as
    :class:`RuleTables` lists them), so bit for bit the same value, without a pass over every point card."""
    v = cw * popcount(mask) + sw * popcount(mask & SPADE_MASK)
    x = mask & pmask
    one = np.uint64(1)
    while x:
        low = x & (~x + one)
        v += ptv[popcount(low - one)]
        x ^= low
    return v


@njit(cache=True, nogil=True)
def _p_hit(s, unseen, h, mode):
    """P(a hand of h cards drawn from ``unseen`` cards holds at least one of ``s`` given cards)."""
    if s <= 0 or h <= 0 or unseen <= 0:
        return 0.0
    if mode == PROB_ANY:
        return 1.0
    if mode == PROB_LINEAR:
        return min(1.0, s * h / unseen)
    if h >= unseen or s >= unseen:
        return 1.0
    miss = 1.0
    for i in range(h):
        if unseen - s - i <= 0:
            return 1.0
        miss *= (unseen - s - i) / (unseen - i)
    return 1.0 - miss


@njit(cache=True, nogil=True)
def _partition(vals, n, target, order, bins, choice):
    """True if the ``n`` item values split into groups each summing to ``target`` (bin packing, exact)."""
    total = 0
    for i in range(n):
        total += vals[i]
    k = total // target
    if k * target != total:
        return False
    if k == 1:
        return True
    # sort item values descending into order[]
    for i in range(n):
        order[i] = vals[i]
    for i in range(1, n):
        x = order[i]
        j = i - 1
        while j >= 0 and order[j] < x:
            order[j + 1] = order[j]
            j -= 1
        order[j + 1] = x
    for j in range(k):
        bins[j] = 0
    for i in range(n):
        choice[i] = -1
    i = 0
    while i >= 0:
        if i == n:
            return True
        j = choice[i]
        if j >= 0:
            bins[j] -= order[i]
        j += 1
        while j < k:
            # an item goes into a bin with room; only the first empty bin is tried (bins are interchangeable)
            if bins[j] + order[i] <= target and (bins[j] > 0 or j == 0 or bins[j - 1] > 0):
                break
            j += 1
        if j < k:
            choice[i] = j
            bins[j] += order[i]
            i += 1
        else:
            choice[i] = -1
            i -= 1
    return False


@njit(cache=True, nogil=True)
def _sweep_values(vals, n, cfg, order, bins, choice):
    """uint32 set of capture values that take every table item at once (docs/rules.md 1 sweep, 3 capture_mode)."""
    if n == 0:
        return np.uint32(0)
    court = 0
    total = 0
    mx = 0
    for i in range(n):
        if vals[i] > COURT_BIT:
            court += 1
        total += vals[i]
        mx = max(mx, vals[i])
    if court > 0:
        # pairing-only courts: one court alone, or (court_pair_take = all) loose courts of one rank only
        if court == n and (n == 1 or cfg[_C_PAIR_ALL] != 0):
            for i in range(n):
                if vals[i] != vals[0]:
                    return np.uint32(0)
            return np.uint32(1) << np.uint32(vals[0])
        return np.uint32(0)
    maxv = cfg[_C_MAXV]
    out = np.uint32(0)
    if cfg[_C_ONE_GROUP] != 0:  # one group only: the table must sum to the value
        if total <= maxv:
            out |= np.uint32(1) << np.uint32(total)
        return out
    for v in range(mx, maxv + 1):
        if total % v == 0 and _partition(vals, n, v, order, bins, choice):
            out |= np.uint32(1) << np.uint32(v)
    return out


@njit(cache=True, nogil=True)
def score_kernel(viewer, my_hand, hand_sizes, unseen, loose, bcards, bvalue, bowner, captured, stock_size,
                 mk, mc, mv, mcards, nmoves, last_trail, cfg, cap_bits, same_cap, item_val, pcards, pvals, wbase, w,
                 flags, scores, feats):
    """Score every listed move of every game (see the module docstring); fill ``scores`` (-inf past the list)
    and, when ``feats`` has B rows, the raw features. Callable from other kernels (:mod:`agents.lines`).

    The first sixteen arguments are the tuple of :func:`state_inputs` (B games: int64[B] seat to move, uint64[B]
    its hand, int64[B, P] hand sizes, uint64[B] unseen cards, uint64[B] loose cards, uint64[B, K] build cards,
    int64[B, K] build values and owners, uint64[B, S] captured piles, int64[B] stock size, the int8[B, M] move
    table's kind, card and value, its uint64[B, M] cards, int64[B] listed moves, int64[B] last trail); then the
    :class:`RuleTables` arrays (``cfg`` ... ``point_values``), float64[2] ``wbase`` (``w_cards``, ``w_spades``),
    float64[F] weights, int64[4] ``flags`` (probability mode, race-aware weights, whether the features of the table
    left are needed, whether ``keep`` is needed), and the outputs float64[B, M] ``scores`` and float64[B, M, F]
    ``feats`` (either with 0 rows when not wanted). Returns int64[B]: the best move per game (the first of ties; 0
    where nobody is to move)."""
    B = viewer.shape[0]
    M = mk.shape[1]
    K = bcards.shape[1]
    P = cfg[_C_P]
    S = cfg[_C_S]
    sweep_pts = float(cfg[_C_SWEEP])
    prob_mode = flags[0]
    race = flags[1] != 0
    table_feats = flags[2] != 0
    need_keep = flags[3] != 0
    need_info = table_feats or need_keep
    want = feats.shape[0] == B
    fill = scores.shape[0] == B
    best = np.zeros(B, dtype=np.int64)
    cnt = np.zeros(32, dtype=np.int64)
    umask = np.zeros(32, dtype=np.uint64)  # unseen cards that capture value v
    pv = np.zeros(32, dtype=np.float64)
    vals = np.zeros(80, dtype=np.int64)
    order = np.zeros(80, dtype=np.int64)
    bins = np.zeros(80, dtype=np.int64)
    choice = np.zeros(80, dtype=np.int64)
    ids = np.zeros(64, dtype=np.int64)
    uids = np.zeros(64, dtype=np.int64)
    tb_cards = np.zeros(K + 1, dtype=np.uint64)
    tb_val = np.zeros(K + 1, dtype=np.int64)
    one = np.uint64(1)
    f = np.zeros(NF, dtype=np.float64)
    ptv = np.zeros(64, dtype=np.float64)  # each point card's points by card id, for _value_bits
    pmask = np.uint64(0)
    for j in range(pcards.shape[0]):  # listed in ascending id order (RuleTables), as _value_bits sums them
        ptv[pcards[j]] = pvals[j]
        pmask |= one << np.uint64(pcards[j])
    for b in range(B):
        if fill:
            for i in range(M):
                scores[b, i] = -np.inf
        p = viewer[b]
        n_mv = nmoves[b]
        if p < 0 or n_mv <= 0:
            continue
        my_side = p % S
        # unseen cards, and how many capture each value
        U = 0
        if need_info:
            for v in range(32):
                cnt[v] = 0
                umask[v] = 0
            x = unseen[b]
            while x:
                low = x & (~x + one)
                c = popcount(low - one)
                x ^= low
                uids[U] = c
                U += 1
                bb = np.uint64(cap_bits[c])
                while bb:
                    lb = bb & (~bb + one)
                    v = popcount(lb - one)
                    cnt[v] += 1
                    umask[v] |= low
                    bb ^= lb
        # the threat: the next seat holding cards, when it is an opponent
        h = 0
        found = False
        for k in range(1, P):
            q = (p + k) % P
            if hand_sizes[b, q] > 0:
                if q % S != my_side:
                    h = hand_sizes[b, q]
                found = True
                break
        if not found and hand_sizes[b, p] <= 1 and stock_size[b] > 0:
            h = cfg[_C_HAND]  # a new round is dealt from the unseen cards
        last_play = stock_size[b] == 0 and hand_sizes[b, p] <= 1
        for q in range(P):
            if q != p and hand_sizes[b, q] > 0:
                last_play = False
        if need_info:
            for v in range(32):
                pv[v] = _p_hit(cnt[v], U, h, prob_mode)
        # race-aware weights: most cards / most spades already decided -> worth nothing more
        cw = wbase[0]
        sw = wbase[1]
        if race:
            mine_c = 0
            mine_s = 0
            other_c = 0
            other_s = 0
            tot_c = 0
            tot_s = 0
            for s in range(S):
                pile = np.uint64(0)
                for q in range(s, P, S):
                    pile |= captured[b, q]
                nc = popcount(pile)
                ns = popcount(pile & SPADE_MASK)
                tot_c += nc
                tot_s += ns
                if s == my_side:
                    mine_c = nc
                    mine_s = ns
                else:
                    other_c = max(other_c, nc)
                    other_s = max(other_s, ns)
            if mine_c > other_c + NUM_CARDS - tot_c or other_c > mine_c + NUM_CARDS - tot_c:
                cw = 0.0
            if mine_s > other_s + 13 - tot_s or other_s > mine_s + 13 - tot_s:
                sw = 0.0
        hand = my_hand[b]
        table_now = loose[b]
        for k in range(K):
            table_now |= bcards[b, k]
        best_score = -np.inf
        for i in range(n_mv):
            kind = mk[b, i]
            c = mc[b, i]
            val = mv[b, i]
            cards = mcards[b, i]
            cbit = one << np.uint64(c)
            rest = hand & ~cbit
            for j in range(NF):
                f[j] = 0.0
            if kind == 1:
                f[F_GAIN] = _value_bits(cards | cbit, cw, sw, pmask, ptv)
                for k in range(K):
                    if bcards[b, k] != 0 and (bcards[b, k] & cards) != 0 and bowner[b, k] % S != my_side:
                        f[F_STEAL] += _value_bits(bcards[b, k], cw, sw, pmask, ptv)
                if (table_now & ~cards) == 0 and (cfg[_C_SWEEP_LAST] != 0 or not last_play):
                    f[F_SWEEP] = sweep_pts
                if cfg[_C_IN_PLAY] != 0:  # docs/rules.md 5.3 in-play points other than the sweep
                    lt = last_trail[b]
                    if lt >= 0 and cards == (one << np.uint64(lt)) and lt % 13 == c % 13:
                        f[F_BONUS] += 1.0
                    if (cards & ~SUIT_MASK[c // 13]) == 0:
                        f[F_BONUS] += 1.0
                    if popcount(cards) >= 3:
                        f[F_BONUS] += 1.0
            elif kind == 0:
                f[F_TRAIL] = _value_bits(cbit, cw, sw, pmask, ptv)
            if kind != 1 and need_keep and (rest & same_cap[c]) == 0:
                # keep: points among unseen cards that only this card (of the hand) could capture
                x = unseen[b] & np.uint64(same_cap[c]) & pmask & ~cbit  # point cards, ascending ids as pcards
                while x:
                    low = x & (~x + one)
                    f[F_KEEP] += ptv[popcount(low - one)]
                    x ^= low
            if table_feats:
                # the table after the move: loose cards ids[:nl] and builds tb_*[:nbld]; vals[:n] their values
                loose2 = loose[b] | cbit if kind == 0 else loose[b] & ~cards
                n = 0
                nl = 0
                x = loose2
                while x:
                    low = x & (~x + one)
                    cid = popcount(low - one)
                    ids[nl] = cid
                    nl += 1
                    vals[n] = item_val[cid]
                    n += 1
                    x ^= low
                nbld = 0
                for k in range(K):
                    if bcards[b, k] != 0 and (kind == 0 or (bcards[b, k] & cards) == 0):
                        tb_cards[nbld] = bcards[b, k]
                        tb_val[nbld] = bvalue[b, k]
                        nbld += 1
                        vals[n] = bvalue[b, k]
                        n += 1
                        if bowner[b, k] % S == my_side:
                            bval = _value_bits(bcards[b, k], cw, sw, pmask, ptv) + cw
                            f[F_OWN_BUILDS] += (1.0 - pv[bvalue[b, k]]) * bval
                if kind == 2:
                    tb_cards[nbld] = cards | cbit
                    tb_val[nbld] = val
                    nbld += 1
                    vals[n] = val
                    n += 1
                    f[F_OWN_BUILDS] += (1.0 - pv[val]) * (_value_bits(cards | cbit, cw, sw, pmask, ptv) + cw)
                sv = np.uint32(0)
                if h > 0 and n > 0:
                    sv = _sweep_values(vals, n, cfg, order, bins, choice)
                if sv != 0:
                    hit = np.uint64(0)
                    for v in range(32):
                        if (sv >> np.uint32(v)) & np.uint32(1):
                            hit |= umask[v]
                    f[F_SWEEP_RISK] = _p_hit(popcount(hit), U, h, prob_mode) * sweep_pts
                if h > 0:
                    if cfg[_C_IN_PLAY] != 0 and kind == 0:  # the threat pairs the card just trailed: +1 (5.3)
                        f[F_EXPOSE] += pv[item_val[c]]
                    # what the threat could take: builds, loose cards, pairs of loose numerals, by value
                    for k in range(nbld):
                        f[F_EXPOSE] += pv[tb_val[k]] * (_value_bits(tb_cards[k], cw, sw, pmask, ptv) + cw)
                    for a in range(nl):
                        ca = ids[a]
                        va = item_val[ca]
                        got = one << np.uint64(ca)
                        f[F_EXPOSE] += pv[va] * (_value_bits(got, cw, sw, pmask, ptv) + cw)
                        if va > COURT_BIT:
                            continue
                        for a2 in range(a + 1, nl):
                            vb = item_val[ids[a2]]
                            if vb < COURT_BIT and va + vb <= cfg[_C_MAXV]:
                                pair = got | (one << np.uint64(ids[a2]))
                                f[F_EXPOSE] += pv[va + vb] * _value_bits(pair, cw, sw, pmask, ptv)
            sc = 0.0
            for j in range(NF):
                sc += w[j] * f[j]
            if fill:
                scores[b, i] = sc
            if want:
                for j in range(NF):
                    feats[b, i, j] = f[j]
            if sc > best_score:
                best_score = sc
                best[b] = i
    return best


# --- inputs -------------------------------------------------------------------------------------------------------


def _view_inputs(obs: dict[str, Any]) -> tuple:
    view = obs.get("view")
    if view is None:
        raise ValueError("scripted bots read obs['view']: create the environment with with_view=True")
    mask = np.asarray(obs["action_mask"])
    nmoves = mask.sum(axis=1).astype(np.int64)
    return (np.asarray(view["viewer"]).astype(np.int64), np.asarray(view["hand"], dtype=np.uint64),
            np.asarray(view["hand_sizes"]).astype(np.int64), np.asarray(view["unseen"], dtype=np.uint64),
            np.asarray(view["loose"], dtype=np.uint64), np.ascontiguousarray(view["build_cards"], dtype=np.uint64),
            np.ascontiguousarray(view["build_value"]).astype(np.int64),
            np.ascontiguousarray(view["build_owner"]).astype(np.int64),
            np.ascontiguousarray(view["captured"], dtype=np.uint64),
            np.asarray(view["stock_size"]).astype(np.int64),
            np.ascontiguousarray(obs["move_kind"]), np.ascontiguousarray(obs["move_card"]),
            np.ascontiguousarray(obs["move_value"]), np.ascontiguousarray(obs["move_cards"]),
            nmoves, np.asarray(view["last_trail"]).astype(np.int64))


#: The kernel inputs of a vector-env observation made with ``with_view=True`` (the acting seat's knowledge).
view_inputs = _view_inputs

_ALL = np.uint64((1 << NUM_CARDS) - 1)


@njit(cache=True, nogil=True)
def seat_knowledge(current_player, hands, loose, build_cards, captured):
    """What the seat to move knows of each of B games, from a State's fields (int8[B] ``current_player``, uint64[B, P]
    ``hand``, uint64[B] ``loose``, uint64[B, K] ``build_cards``, uint64[B, S] ``captured``; any strides): (int64[B]
    seat to move, uint64[B] its hand, int64[B, P] every hand's size, uint64[B] the cards it has not seen). One pass
    over each game; :func:`state_inputs` and :mod:`agents.lines` read a State through it. Callable from kernels."""
    B, P = hands.shape
    cur = np.empty(B, dtype=np.int64)
    hand = np.empty(B, dtype=np.uint64)
    sizes = np.empty((B, P), dtype=np.int64)
    unseen = np.empty(B, dtype=np.uint64)
    for b in range(B):
        c = np.int64(current_player[b])
        cur[b] = c
        h = hands[b, max(c, 0)]
        hand[b] = h
        for q in range(P):
            sizes[b, q] = popcount(hands[b, q])
        seen = h | loose[b]
        for k in range(build_cards.shape[1]):
            seen |= build_cards[b, k]
        for k in range(captured.shape[1]):
            seen |= captured[b, k]
        unseen[b] = _ALL & ~seen
    return cur, hand, sizes, unseen


def state_inputs(state) -> tuple:
    """The kernel inputs for the seat to move in every game of a core State (the seat's knowledge only).

    Used by search rollouts, which play bots inside determinised core states without building observations.
    """
    cur, hand, sizes, unseen = seat_knowledge(state.current_player, state.hand, state.loose, state.build_cards,
                                              state.captured)
    return (cur, hand, sizes, unseen, state.loose,
            np.ascontiguousarray(state.build_cards), state.build_value.astype(np.int64),
            state.build_owner.astype(np.int64), np.ascontiguousarray(state.captured),
            (52 - state.stock_pos).astype(np.int64), state.move_kind, state.move_card,
            state.move_value, state.move_cards, state.num_moves.astype(np.int64),
            state.last_trail.astype(np.int64))


# --- bots ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Style:
    """A scripted strategy: feature weights (in the order of :data:`FEATURES`) and how it estimates chances.

    Attributes:
        weights: the score of a move is ``sum(weights * features)``.
        prob_mode: :data:`PROB_ANY`, :data:`PROB_LINEAR` or :data:`PROB_HYPER`.
        race_aware: stop valuing cards / spades once "most cards" / "most spades" is decided.
    """

    weights: tuple[float, ...]
    prob_mode: int = PROB_HYPER
    race_aware: bool = False

    @property
    def needs_table(self) -> bool:
        """True when a feature of the table left after the move has a non-zero weight."""
        return any(self.weights[j] != 0 for j in (F_SWEEP_RISK, F_EXPOSE, F_OWN_BUILDS))


def _w(**kw: float) -> tuple[float, ...]:
    return tuple(float(kw.get(name, 0.0)) for name in FEATURES)


#: The ladder. Weights are in points per point of feature (see the module docstring); they were chosen by
#: duplicate matches between variants (``cassino eval``), keeping each change that raised the mean margin.
STYLES: dict[str, Style] = {
    "greedy": Style(_w(gain=1, sweep=1, bonus=1), PROB_ANY),
    "beginner": Style(_w(gain=1, sweep=1, bonus=1, trail_value=-1, sweep_risk=-1), PROB_ANY),
    "intermediate": Style(_w(gain=1, sweep=1, bonus=1, sweep_risk=-1, own_builds=1, steal=0.5, trail_value=-0.25),
                          PROB_LINEAR),
    "advanced": Style(_w(gain=1, sweep=1, bonus=1, sweep_risk=-1, exposure=-1, own_builds=1, steal=1, keep=-0.2),
                      PROB_HYPER),
}


#: Most games per ``prange`` task of :func:`_score_chunks` (as the rules core's parallel driver).
_CHUNK = 64


@njit(cache=True, parallel=True)
def _score_chunks(viewer, my_hand, hand_sizes, unseen, loose, bcards, bvalue, bowner, captured, stock_size,
                  mk, mc, mv, mcards, nmoves, last_trail, cfg, cap_bits, same_cap, item_val, pcards, pvals, wbase, w,
                  flags, scores, feats, chunk):
    """As :func:`score_kernel`, chunks of ``chunk`` games spread over numba's threads (``prange``); each chunk is
    scored by :func:`score_kernel` on its rows (games are independent, so the result is the serial one)."""
    B = viewer.shape[0]
    fill = scores.shape[0] == B
    want = feats.shape[0] == B
    best = np.zeros(B, dtype=np.int64)
    nch = (B + chunk - 1) // chunk
    for ch in prange(nch):
        s = ch * chunk
        e = min(B, s + chunk)
        sc = scores[s:e] if fill else scores[:0]
        ft = feats[s:e] if want else feats[:0]
        best[s:e] = score_kernel(viewer[s:e], my_hand[s:e], hand_sizes[s:e], unseen[s:e], loose[s:e], bcards[s:e],
                                 bvalue[s:e], bowner[s:e], captured[s:e], stock_size[s:e], mk[s:e], mc[s:e],
                                 mv[s:e], mcards[s:e], nmoves[s:e], last_trail[s:e], cfg, cap_bits, same_cap,
                                 item_val, pcards, pvals, wbase, w, flags, sc, ft)
    return best


def score_moves(tables: RuleTables, style: Style, inputs: tuple, with_scores: bool = True,
                with_features: bool = False, parallel: bool = False,
                ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Score the listed moves of B games.

    Args:
        tables: the rule tables.
        style: weights and chance model.
        inputs: from :func:`state_inputs` or the observation (see :class:`ScriptedBot`).
        with_scores: also return every move's score (rollouts skip it: only the best move is needed).
        with_features: also return the raw features.
        parallel: split the games over numba's threads (:func:`numba.get_num_threads`; the same result as serial).

    Returns:
        ``(best int64[B], scores float64[B, M] or None, features float64[B, M, F] or None)``; scores are ``-inf``
        past each game's listed moves; ``best`` is the first highest-scoring move (0 for a game with nobody to
        move).
    """
    B, M = inputs[10].shape
    scores = np.empty((B, M) if with_scores or with_features else (0, 0), dtype=np.float64)
    feats = np.zeros((B, M, len(FEATURES)) if with_features else (0, 0, 0), dtype=np.float64)
    flags = np.array([style.prob_mode, int(style.race_aware), int(style.needs_table or with_features),
                      int(style.weights[F_KEEP] != 0 or with_features)], dtype=np.int64)
    wbase = np.array([tables.w_cards, tables.w_spades], dtype=np.float64)
    kernel_args = (*inputs, tables.cfg, tables.cap_bits, tables.same_cap, tables.item_val, tables.point_cards,
                   tables.point_values, wbase, np.asarray(style.weights, dtype=np.float64), flags, scores, feats)
    if parallel and B > _CHUNK:
        import numba

        chunk = max(1, min(_CHUNK, -(-B // (4 * numba.get_num_threads()))))  # about four chunks per thread
        best = _score_chunks(*kernel_args, chunk)
    else:
        best = score_kernel(*kernel_args)
    return best, (scores if scores.shape[0] == B else None), (feats if with_features else None)


class ScriptedBot:
    """A hand-written strategy of :data:`STYLES` as an :class:`agents.base.Agent`.

    Args:
        name: a key of :data:`STYLES`.
        rules: the rules it plays.
        style: a custom :class:`Style` instead of ``STYLES[name]``.
    """

    def __init__(self, name: str, rules: RuleSet, style: Style | None = None) -> None:
        self.name = name
        self.rules = rules
        self.tables = RuleTables.of(rules)
        self.style = style if style is not None else STYLES[name]

    def act(self, obs: dict[str, Any], rng: np.random.Generator) -> np.ndarray:  # noqa: ARG002 - deterministic
        """int64[B]: the best-scoring legal move per game (first of ties); see the module docstring."""
        if len(obs["action_mask"]) == 0:
            return np.zeros(0, dtype=np.int64)
        best, _, _ = score_moves(self.tables, self.style, _view_inputs(obs), with_scores=False)
        return best

    def features(self, obs: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """``(scores float64[B, M], features float64[B, M, F])`` of every listed move, for inspection."""
        _, scores, feats = score_moves(self.tables, self.style, _view_inputs(obs), with_features=True)
        return scores, feats

    def act_state(self, state, parallel: bool = False) -> np.ndarray:
        """int64[B]: the move this bot plays for the seat to move in every game of a core State, from that seat's
        knowledge only (search rollouts use this; 0 where nobody is to move); ``parallel``: the games split over
        numba's threads."""
        best, _, _ = score_moves(self.tables, self.style, state_inputs(state), with_scores=False, parallel=parallel)
        return best


class RandomBot:
    """Uniformly random legal moves, drawn from the caller's generator."""

    name = "random"

    def act(self, obs: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
        """int64[B]: a uniformly random index among each game's legal moves."""
        mask = np.asarray(obs["action_mask"]) != 0
        if len(mask) == 0:
            return np.zeros(0, dtype=np.int64)
        n = mask.sum(axis=1)
        pick = np.floor(rng.random(len(mask)) * n).astype(np.int64)  # the pick-th legal move, 0-based
        return np.argmax(np.cumsum(mask, axis=1) > pick[:, None], axis=1).astype(np.int64)


def make_bot(name: str, rules: RuleSet) -> Agent:
    """A bot of this module by name: ``random`` or a style of :data:`STYLES` (``greedy``, ``beginner``,
    ``intermediate``, ``advanced``), as the search players' rollouts use them. Any other name of the agent table (a
    bot registered there, ``pimc``, ...) is :func:`agents.registry.make_bot`'s: the registry builds this module's
    bots, not the other way round.

    Raises:
        ValueError: for another name (the message lists this module's bots).
    """
    if name == "random":
        return RandomBot()
    if isinstance(name, str) and name in STYLES:
        return ScriptedBot(name, rules)
    raise ValueError(f"unknown bot {name!r}; the bots of agents.bots are random, {', '.join(STYLES)} (any bot of "
                     "the agent table: agents.registry.make_bot)")
