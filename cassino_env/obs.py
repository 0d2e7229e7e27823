"""Observation encoding: what one seat may know, as a flat float32 vector, for every game of a core state at once.

The encoding is a view of the batched core's state (:mod:`cassino_env.core`) through one seat's eyes: its own hand,
the table, every build with its value and owner, every side's captured cards (they were face up when taken), the
cards it has not seen, the stock size, round and deal progress, scores, sweeps, in-play points (Cicera, RULES.md
5.3), its seat relative to the dealer and the last trailed card. One layout serves every preset of RULES.md 6: values
run to 14 (numeric courts 11-13, an ace captured high 14), hands are normalised by the preset's ``hand_size`` (12 in
Cicera), and blocks a preset never fills (builds in Cicera, in-play points outside it) stay 0. Other hands and the
stock order never enter it. Seats and sides are *relative to the viewer*: relative seat ``r`` is seat
``(viewer + r) % P``; relative side ``s`` is side ``(side(viewer) + s) % S``.

Layout of ``observation`` (float32[D]; P seats, S sides, 52 cards in card-id order, RULES.md 1):

=====================  ==========  ===========================================================================
block                  length      meaning (1.0 = yes unless stated)
=====================  ==========  ===========================================================================
``hand``               52          the viewer holds card c
``loose``              52          card c lies loose on the table
``build_owned_by``     52 * P      card c is in a build owned by relative seat r (block r)
``build_value``        52          value of the build holding card c / 14 (0 when not in a build)
``captured_by``        52 * S      card c is in the captured pile of relative side s (block s)
``unseen``             52          card c is in another hand or the stock (not visible to the viewer)
``last_trail``         52          card c was trailed on the immediately preceding turn
``builds``             14 * (P+1)  per build value v = 1..14: a build of v exists; then its owner (relative seat
                                   one-hot, P entries; with ``attach`` builds several builds may share a value:
                                   every owner of one is marked)
``hand_sizes``         P           cards in the hand of relative seat r / hand_size
``captured_count``     S           cards captured by relative side s / 52
``spades_count``       S           spades captured by relative side s / 13
``sweeps``             P           sweeps this deal by relative seat r / 4
``in_play``            P           Cicera's in-play points this deal of relative seat r / 4 (RULES.md 5.3; 0 in
                                   presets without ``in_play_bonuses``)
``match_scores``       S           match total of relative side s / target
``seat_from_dealer``   P           one-hot: the viewer sits r seats after the dealer (r = 1 moves first)
``progress``           3           stock size / 52; rounds dealt / rounds per deal; cards played / 52
=====================  ==========  ===========================================================================
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .core._bits import popcount as _popcount
from .rules import RuleSet

NUM_VALUES = 14  # build values 1..14 (14: ace high, RULES.md 3)


def obs_layout(num_players: int, num_sides: int) -> dict[str, tuple[int, int]]:
    """``{block: (start, length)}`` of the observation vector for P seats and S sides (see the module table)."""
    P, S = num_players, num_sides
    sizes = [("hand", 52), ("loose", 52), ("build_owned_by", 52 * P), ("build_value", 52),
             ("captured_by", 52 * S), ("unseen", 52), ("last_trail", 52), ("builds", NUM_VALUES * (P + 1)),
             ("hand_sizes", P), ("captured_count", S), ("spades_count", S), ("sweeps", P), ("in_play", P),
             ("match_scores", S), ("seat_from_dealer", P), ("progress", 3)]
    out, start = {}, 0
    for name, n in sizes:
        out[name] = (start, n)
        start += n
    return out


def obs_size(num_players: int, num_sides: int) -> int:
    """D, the length of the observation vector."""
    layout = obs_layout(num_players, num_sides)
    start, n = layout["progress"]
    return start + n


@njit(cache=True)
def _encode(viewer, hand, loose, build_cards, build_value, build_owner, captured, sweeps, in_play, match_scores,
            stock_pos, dealer, last_trail, params, out):
    # params: P, S, hand_size, target, table_cards, rounds_per_deal
    P, S, H, target, T, R = params[0], params[1], params[2], params[3], params[4], params[5]
    B = out.shape[0]
    K = build_cards.shape[1]
    o_hand = 0
    o_loose = 52
    o_bown = 104
    o_bval = o_bown + 52 * P
    o_cap = o_bval + 52
    o_unseen = o_cap + 52 * S
    o_trail = o_unseen + 52
    o_builds = o_trail + 52
    o_hs = o_builds + 14 * (P + 1)
    o_cc = o_hs + P
    o_sc = o_cc + S
    o_sw = o_sc + S
    o_ip = o_sw + P
    o_ms = o_ip + P
    o_sd = o_ms + S
    o_pr = o_sd + P
    one = np.uint64(1)
    spade_mask = np.uint64(((1 << 13) - 1) << 39)
    for b in range(B):
        row = out[b]
        row[:] = 0.0
        me = viewer[b]
        if me < 0:
            continue
        my_side = me % S
        visible = hand[b, me] | loose[b]
        for c in range(52):
            bit = one << np.uint64(c)
            if hand[b, me] & bit:
                row[o_hand + c] = 1.0
            if loose[b] & bit:
                row[o_loose + c] = 1.0
        for k in range(K):
            cards = build_cards[b, k]
            if cards == 0:
                continue
            visible |= cards
            v = build_value[b, k]
            rel = (build_owner[b, k] - me) % P
            row[o_builds + (v - 1) * (P + 1)] = 1.0
            row[o_builds + (v - 1) * (P + 1) + 1 + rel] = 1.0
            for c in range(52):
                if cards & (one << np.uint64(c)):
                    row[o_bown + 52 * rel + c] = 1.0
                    row[o_bval + c] = v / 14.0
        for q in range(P):
            visible |= captured[b, q]
            rs = (q % S - my_side) % S
            pile = captured[b, q]
            row[o_cc + rs] += _popcount(pile) / 52.0
            row[o_sc + rs] += _popcount(pile & spade_mask) / 13.0
            for c in range(52):
                if pile & (one << np.uint64(c)):
                    row[o_cap + 52 * rs + c] = 1.0
            rq = (q - me) % P
            row[o_hs + rq] = _popcount(hand[b, q]) / H
            row[o_sw + rq] = sweeps[b, q] / 4.0
            row[o_ip + rq] = in_play[b, q] / 4.0
        for c in range(52):
            if not visible & (one << np.uint64(c)):
                row[o_unseen + c] = 1.0
        if last_trail[b] >= 0:
            row[o_trail + last_trail[b]] = 1.0
        for s in range(S):
            row[o_ms + (s - my_side) % S] = match_scores[b, s] / target
        row[o_sd + (me - dealer[b]) % P] = 1.0
        sp = stock_pos[b]
        row[o_pr] = (52 - sp) / 52.0
        row[o_pr + 1] = ((sp - T) // (H * P)) / R
        played = 0
        for q in range(P):
            played += _popcount(hand[b, q])
        row[o_pr + 2] = (sp - T - played) / 52.0


def build_values(state) -> np.ndarray:
    """int8[B, K]: the declared value of each build slot of a core state (``state.build_value``; 0 for an empty
    slot). Slots are not values: with ``attach`` builds take the first free slot (:mod:`cassino_env.core._layout`)."""
    return state.build_value


def encode(state, viewer: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Encode the observation of seat ``viewer[b]`` in every game ``b`` of a core state.

    Args:
        state: a :class:`cassino_env.core.State` with B games.
        viewer: int[B] — the seat whose view to encode (a row of zeros where it is negative).
        out: optional float32[B, D] buffer to fill.

    Returns:
        float32[B, D], D = :func:`obs_size` (layout in the module docstring).
    """
    rules: RuleSet = state.rules
    P, S = rules.num_players, rules.num_sides
    B = state.batch_size
    if out is None:
        out = np.empty((B, obs_size(P, S)), dtype=np.float32)
    params = np.array([P, S, rules.hand_size, rules.target, rules.table_cards, rules.rounds_per_deal], dtype=np.int64)
    _encode(np.asarray(viewer, dtype=np.int64), state.hand, state.loose, state.build_cards, state.build_value,
            state.build_owner, state.captured, state.sweeps, state.in_play, state.match_scores, state.stock_pos,
            state.dealer, state.last_trail, params, out)
    return out


#: Columns of the per-move feature rows (``moves`` observation): kind, played card, value, number of table cards,
#: then 52 bits of the table cards taken or used.
MOVE_FEATURES = 4 + 52


def move_features(kind: np.ndarray, card: np.ndarray, value: np.ndarray, cards: np.ndarray) -> np.ndarray:
    """Per-move feature rows from a move table: int8[..., M, 56] (``MOVE_FEATURES``).

    Columns: 0 kind (0 trail, 1 capture, 2 build, -1 padding), 1 played card id (-1 padding), 2 capture or build
    value (0 trail), 3 number of table cards taken or used, 4..55 one bit per table card id taken or used.
    Inputs are the core's ``move_kind``, ``move_card``, ``move_value`` (int8[..., M]) and ``move_cards``
    (uint64[..., M]).
    """
    bits = ((cards[..., None] >> np.arange(52, dtype=np.uint64)) & np.uint64(1)).astype(np.int8)
    out = np.empty(kind.shape + (MOVE_FEATURES,), dtype=np.int8)
    out[..., 0] = kind
    out[..., 1] = card
    out[..., 2] = value
    out[..., 3] = bits.sum(axis=-1, dtype=np.int8)
    out[..., 4:] = bits
    return out


@njit(cache=True)
def fill_move_rows(kind, card, value, cards, to_move, out):
    """Write :func:`move_features` rows for one game into ``out`` (int8[A, 56]): row ``a`` describes move
    ``to_move[a]`` of the move table (``kind``, ``card``, ``value``: int8[M]; ``cards``: uint64[M]), or is a padding
    row (kind -1, card -1, zeros) where ``to_move[a] < 0``. The one-game fast path of the environments; equal to
    ``move_features`` row for row."""
    A = out.shape[0]
    one = np.uint64(1)
    out[:, :] = 0
    for a in range(A):
        i = to_move[a]
        if i < 0:
            out[a, 0] = -1
            out[a, 1] = -1
            continue
        out[a, 0] = kind[i]
        out[a, 1] = card[i]
        out[a, 2] = value[i]
        m = cards[i]
        n = 0
        while m:
            c = _lowbit_index(m)
            out[a, 4 + c] = 1
            m &= m - one
            n += 1
        out[a, 3] = n


@njit(cache=True)
def _lowbit_index(m):
    c = 0
    one = np.uint64(1)
    while not (m >> np.uint64(c)) & one:
        c += 1
    return c


@njit(cache=True)
def _popcounts(x, out):
    flat = x.reshape(-1)
    o = out.reshape(-1)
    for i in range(flat.shape[0]):
        o[i] = _popcount(flat[i])


def public_view(state, viewer: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """What seat ``viewer[b]`` (default: the seat to move) may know in each game, as card-set bitmasks.

    Bots and search agents read this instead of decoding the flat observation. Seats here are absolute (not relative
    to the viewer). Nothing hidden from the viewer is included: other hands appear only as their sizes and the
    stock only as its size. Arrays are fresh copies.

    Returns:
        ``viewer`` int8[B]; ``hand`` uint64[B] (the viewer's cards); ``loose`` uint64[B]; ``build_cards``
        uint64[B, K]; ``build_value`` int8[B, K]; ``build_owner`` int8[B, K] (-1: empty slot); ``captured``
        uint64[B, P]; ``sweeps`` int16[B, P]; ``in_play`` int16[B, P] (Cicera's in-play points, RULES.md 5.3);
        ``hand_sizes`` int8[B, P]; ``stock_size`` int8[B]; ``dealer``
        int8[B]; ``last_capturer`` int8[B] (-1 none); ``last_trail`` int8[B] (-1 none); ``match_scores`` int16[B, S];
        ``unseen`` uint64[B] (cards in other hands or the stock).
    """
    B = state.batch_size
    v = (state.current_player if viewer is None else np.asarray(viewer)).astype(np.int64)
    idx = np.arange(B)
    safe = np.maximum(v, 0)
    hand = np.where(v >= 0, state.hand[idx, safe], np.uint64(0))
    builds = np.bitwise_or.reduce(state.build_cards, axis=1)
    seen = hand | state.loose | builds | np.bitwise_or.reduce(state.captured, axis=1)
    hand_sizes = np.empty(state.hand.shape, dtype=np.int8)
    _popcounts(np.ascontiguousarray(state.hand), hand_sizes)
    return {
        "viewer": v.astype(np.int8),
        "hand": hand,
        "loose": state.loose.copy(),
        "build_cards": state.build_cards.copy(),
        "build_value": state.build_value.copy(),
        "build_owner": state.build_owner.copy(),
        "captured": state.captured.copy(),
        "sweeps": state.sweeps.copy(),
        "in_play": state.in_play.copy(),
        "hand_sizes": hand_sizes,
        "stock_size": (52 - state.stock_pos).astype(np.int8),
        "dealer": state.dealer.copy(),
        "last_capturer": state.last_capturer.copy(),
        "last_trail": state.last_trail.copy(),
        "match_scores": state.match_scores.copy(),
        "unseen": np.uint64((1 << 52) - 1) & ~seen,
    }
