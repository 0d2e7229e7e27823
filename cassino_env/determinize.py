"""Determinisation: core states consistent with what one seat knows, for search over hidden cards.

A seat sees its own hand, the table, every captured pile, the sizes of the other hands and of the stock, and the
match so far (:func:`cassino_env.obs.public_view`). Everything else — which unseen card lies in which other hand,
and the order of the stock — is hidden. :func:`determinize` deals the unseen cards afresh, K times per game, into
the other hands (their sizes kept) and the stock, and returns a batched core :class:`~cassino_env.core.State`
with one game per sample, ready to be stepped (and cloned with :func:`take`).

A sample keeps everything the seat knows: its hand, the table (loose cards, builds with their declared values and
owners), captured piles, sweeps, in-play points (Cicera), match totals, dealer, last capturer, last trail, hand and
stock sizes, and the seat's move table. It also keeps what the rules let the seat infer: the owner of a build holds
a card that captures it (docs/rules.md 4.4), so each other seat that owns builds is dealt such a card for each value it
owns -- a card of that value, with numeric courts a court of it, and for a build of 14 (``ace_high``) an ace. One
card serves every build of its value (with ``attach`` several builds may share one) and an ace serves builds of 1
and of 14 alike. Samples are uniform over the deals consistent with these
facts (rejection sampling; after :data:`MAX_REJECTION_ROUNDS` rounds a sample still failing is repaired by swapping a
capturing card into the owner's hand). Nothing else (e.g. what an opponent's past play suggests) is modelled.

>>> import numpy as np
>>> from cassino_env.rules import make_rules
>>> from cassino_env import core
>>> from cassino_env.obs import public_view
>>> st = core.init(make_rules("classic"), [7])
>>> view = public_view(st)
>>> samples = determinize(st.rules, view, moves_of(st), 5, np.random.default_rng(0))
>>> samples.batch_size, bool((samples.hand[:, 0] == st.hand[0, 0]).all())  # seat 0's own hand is kept
(5, True)
>>> np.bitwise_count(samples.hand[:, 1]).tolist(), len(set(samples.hand[:, 1].tolist())) > 1  # seat 1's: re-dealt
([4, 4, 4, 4, 4], True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import core
from .cards import NUM_CARDS, RANK
from .rules import RuleSet

#: Rounds of rejection sampling (for build owners' capturing cards) before a failing sample is repaired.
MAX_REJECTION_ROUNDS = 30

_MOVE_FIELDS = ("move_kind", "move_card", "move_value", "move_cards")


def moves_of(source: Any) -> dict[str, np.ndarray]:
    """The move table of a core State or a vector-env observation dict: ``move_kind``, ``move_card``,
    ``move_value``, ``move_cards`` (each ``[B, M]``) and ``num_moves`` int64[B]."""
    if isinstance(source, dict):
        out = {k: np.asarray(source[k]) for k in _MOVE_FIELDS}
        out["num_moves"] = np.asarray(source["action_mask"]).sum(axis=1).astype(np.int64)
        return out
    out = {k: getattr(source, k) for k in _MOVE_FIELDS}
    out["num_moves"] = source.num_moves.astype(np.int64)
    return out


def take(state: core.State, index: np.ndarray) -> core.State:
    """A new State whose game g is a copy of game ``index[g]`` of ``state`` (clone and replicate games).

    Same as :meth:`cassino_env.core.State.take`: one gather per packed array, every field copied.
    """
    return state.take(index)


def capture_values(rules: RuleSet) -> np.ndarray:
    """bool[52, 15]: ``[c, v]`` when a card c played from hand captures value v (docs/rules.md 1 value, 3 ace_high): its
    rank for numerals (and courts where ``court_values`` is numeric), also 14 for an ace where ``ace_high``. Courts
    that only pair capture no value (they are never built)."""
    out = np.zeros((NUM_CARDS, 15), dtype=bool)
    for c in range(NUM_CARDS):
        r = int(RANK[c])
        if r <= 10 or rules.court_values == "numeric":
            out[c, r] = True
            if r == 1 and rules.ace_high:
                out[c, 14] = True
    return out


def _ids(mask: int) -> np.ndarray:
    m = int(mask)
    return np.array([c for c in range(NUM_CARDS) if (m >> c) & 1], dtype=np.int64)


def _sample_row(rules: RuleSet, view: dict[str, np.ndarray], r: int, k: int, rng: np.random.Generator,
                caps: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """K uniform deals of row r's unseen cards: int64[K, U] card ids, the other seats' hands first (seat order,
    the viewer skipped, each its known size), then the stock (front first). Also the seat blocks."""
    P = rules.num_players
    me = int(view["viewer"][r])
    unseen = _ids(view["unseen"][r])
    sizes = np.asarray(view["hand_sizes"][r]).astype(np.int64)
    blocks, pos = [], 0
    for q in range(P):
        if q != me:
            blocks.append((q, pos, pos + int(sizes[q])))
            pos += int(sizes[q])
    stock = int(view["stock_size"][r])
    if pos + stock != len(unseen):
        raise ValueError(f"row {r}: {len(unseen)} unseen cards but other hands hold {pos} and the stock {stock}")
    samples = rng.permuted(np.broadcast_to(unseen, (k, len(unseen))), axis=1)
    # docs/rules.md 4.4: the owner of a build holds a card that captures its value
    needs = []
    for slot in range(view["build_cards"].shape[1]):
        owner = int(view["build_owner"][r, slot])
        if view["build_cards"][r, slot] != 0 and owner >= 0 and owner != me:
            needs.append((owner, int(view["build_value"][r, slot])))
    needs = sorted(set(needs))  # one capturing card per (owner, value), however many builds of that value
    if needs:
        block_of = {q: (a, b) for q, a, b in blocks}

        def failing(s: np.ndarray) -> np.ndarray:
            bad = np.zeros(len(s), dtype=bool)
            for owner, value in needs:
                a, b = block_of[owner]
                bad |= ~caps[s[:, a:b], value].any(axis=1)
            return bad

        bad = failing(samples)
        rounds = 0
        while bad.any() and rounds < MAX_REJECTION_ROUNDS:
            idx = np.flatnonzero(bad)
            samples[idx] = rng.permuted(np.broadcast_to(unseen, (len(idx), len(unseen))), axis=1)
            bad[idx] = failing(samples[idx])
            rounds += 1
        for i in np.flatnonzero(bad):  # repair: swap capturing cards into the owners' hands
            row = samples[i]
            reserved: set[int] = set()  # positions holding a card some need relies on
            for owner, value in needs:
                a, b = block_of[owner]
                have = [t for t in range(a, b) if caps[row[t], value]]
                if have:  # already held (one card may serve several values: an ace, 1 and 14)
                    reserved.add(next((t for t in have if t in reserved), have[0]))
                    continue
                outside = [j for j in range(len(row)) if not a <= j < b and j not in reserved and caps[row[j], value]]
                free = [t for t in range(a, b) if t not in reserved]
                if not outside or not free:
                    continue  # the view is inconsistent with the rules; leave the sample as dealt
                j = outside[int(rng.integers(len(outside)))]
                t = free[int(rng.integers(len(free)))]
                row[j], row[t] = row[t], row[j]
                reserved.add(t)
    return samples, blocks


def determinize(rules: RuleSet, view: dict[str, np.ndarray], moves: dict[str, np.ndarray],
                num_samples: int | np.ndarray, rng: np.random.Generator, *, prune: bool = True) -> core.State:
    """Core states for ``num_samples`` deals of the hidden cards per game of a public view.

    Args:
        rules: the rules of the games.
        view: :func:`cassino_env.obs.public_view` of the seat to move, B games (``obs["view"]`` of the vector env).
        moves: that seat's move tables (:func:`moves_of` of the State or observation), ``[B, M]`` arrays.
        num_samples: K, samples per game (an int, or int[B] per game).
        rng: the generator that deals the hidden cards.
        prune: the move-generation option of the returned State (later move tables).

    Returns:
        A State of ``sum(K)`` games, game ``g`` = sample ``g - start(b)`` of view row ``b`` (rows in order), with
        ``auto_reset=False`` (a deal that ends leaves ``current_player == -1``). Its move tables are copied from
        ``moves`` (the seat's moves depend only on what it knows).
    """
    B = len(view["viewer"])
    ks = np.broadcast_to(np.asarray(num_samples, dtype=np.int64), (B,))
    G = int(ks.sum())
    row = np.repeat(np.arange(B), ks)
    M = moves["move_kind"].shape[1]
    st = core.blank(rules, G, max_moves=M, prune=prune, auto_reset=False)  # every field below is written
    # what the seat knows, copied to each of its samples
    me = view["viewer"].astype(np.int64)
    st.loose[:] = view["loose"][row]
    st.build_cards[:] = view["build_cards"][row]
    st.build_owner[:] = view["build_owner"][row]
    st.build_value[:] = view["build_value"][row]
    st.captured[:] = view["captured"][row]
    st.sweeps[:] = view["sweeps"][row]
    st.in_play[:] = view["in_play"][row]
    st.match_scores[:] = view["match_scores"][row]
    st.dealer[:] = view["dealer"][row]
    st.last_capturer[:] = view["last_capturer"][row]
    st.last_trail[:] = view["last_trail"][row]
    st.current_player[:] = me[row]
    st.stock_pos[:] = NUM_CARDS - view["stock_size"][row].astype(np.int64)
    st.seed[:] = 0
    st.match_index[:] = 0
    st.deal_index[:] = 0
    st.match_over[:] = False
    for name in _MOVE_FIELDS:
        getattr(st, name)[:] = moves[name][row]
    st.num_moves[:] = moves["num_moves"][row]
    st.overflow[:] = moves["num_moves"][row] >= M
    # the hidden cards, dealt afresh
    hand = np.zeros((G, rules.num_players), dtype=np.uint64)
    hand[np.arange(G), me[row]] = view["hand"][row]
    caps = capture_values(rules)
    bit = np.uint64(1) << np.arange(NUM_CARDS, dtype=np.uint64)
    start = 0
    for r in range(B):
        k = int(ks[r])
        if k == 0:
            continue
        samples, blocks = _sample_row(rules, view, r, k, rng, caps)
        sl = slice(start, start + k)
        for q, a, b in blocks:
            hand[sl, q] = np.bitwise_or.reduce(bit[samples[:, a:b]], axis=1) if b > a else 0
        stock = samples[:, blocks[-1][2] if blocks else 0:]
        sp = NUM_CARDS - stock.shape[1]
        deck = np.empty((k, NUM_CARDS), dtype=np.int8)
        deck[:, sp:] = stock
        # dealt positions: every card not in the stock, in id order (never read again; keeps the deck a permutation)
        in_stock = np.zeros((k, NUM_CARDS), dtype=bool)
        np.put_along_axis(in_stock, stock, True, axis=1)
        deck[:, :sp] = np.nonzero(~in_stock)[1].reshape(k, sp)
        st.deck[sl] = deck
        start += k
    st.hand[:] = hand
    return st
