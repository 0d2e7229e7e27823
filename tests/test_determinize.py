"""Determinisation (cassino_env.determinize): samples keep everything the seat knows and only re-deal unseen cards.

Each check runs on mid-deal states reached by random play, for 2, 3 and 4 players (4 in partnerships).
"""

from __future__ import annotations

import numpy as np
import pytest

from cassino_env import core
from cassino_env.determinize import capture_values, determinize, moves_of, take
from cassino_env.obs import public_view
from cassino_env.rules import make_rules

ALL = (1 << 52) - 1


def mid_deal_states(num_players: int, games: int = 48, steps: int = 13, seed: int = 0) -> core.State:
    """``games`` games after ``steps`` random moves (some mid-round, some just after a deal)."""
    st = core.init(make_rules("classic", num_players), np.arange(games) + 1000 * seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        core.step(st, np.floor(rng.random(games) * st.num_moves).astype(np.int64))
    return st


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_samples_keep_what_the_seat_knows(num_players: int) -> None:
    st = mid_deal_states(num_players, steps=13 + num_players)
    view = public_view(st)
    K = 6
    d = determinize(st.rules, view, moves_of(st), K, np.random.default_rng(1))
    assert d.batch_size == st.batch_size * K
    row = np.repeat(np.arange(st.batch_size), K)
    me = st.current_player.astype(np.int64)[row]
    g = np.arange(d.batch_size)
    # the seat's own cards, the table, the piles, the scores and the turn are exactly the real ones
    assert (d.hand[g, me] == st.hand[row, me]).all()
    for name in ("loose", "build_cards", "build_owner", "captured", "sweeps", "match_scores", "dealer",
                 "last_capturer", "last_trail", "current_player", "stock_pos", "move_kind", "move_card",
                 "move_value", "move_cards", "num_moves"):
        assert (getattr(d, name) == getattr(st, name)[row]).all(), name
    # every hand keeps its size
    assert (np.bitwise_count(d.hand) == np.bitwise_count(st.hand)[row]).all()
    # the other hands and the stock hold exactly the unseen cards, each once
    others = np.where(np.arange(num_players)[None, :] == me[:, None], np.uint64(0), d.hand)
    hidden = np.bitwise_or.reduce(others, axis=1)
    for gi in range(d.batch_size):
        stock = [int(c) for c in d.deck[gi, int(d.stock_pos[gi]):]]
        stock_mask = sum(1 << c for c in stock)
        assert len(set(stock)) == len(stock)
        assert int(hidden[gi]) & stock_mask == 0
        assert int(hidden[gi]) | stock_mask == int(view["unseen"][row[gi]])
        assert sorted(int(c) for c in d.deck[gi]) == list(range(52))  # the deck stays a permutation
    # conservation: 52 cards, each in one place
    total = np.bitwise_or.reduce(d.hand, axis=1) | d.loose | np.bitwise_or.reduce(d.build_cards, axis=1) \
        | np.bitwise_or.reduce(d.captured, axis=1)
    for gi in range(d.batch_size):
        stock_mask = sum(1 << int(c) for c in d.deck[gi, int(d.stock_pos[gi]):])
        assert int(total[gi]) | stock_mask == ALL
        assert int(total[gi]).bit_count() + (52 - int(d.stock_pos[gi])) == 52


@pytest.mark.parametrize("num_players", [2, 4])
def test_samples_are_playable_and_list_the_same_moves_as_a_fresh_position(num_players: int) -> None:
    st = mid_deal_states(num_players, games=12, steps=21, seed=3)
    d = determinize(st.rules, public_view(st), moves_of(st), 3, np.random.default_rng(2))
    # the copied move table is the one the engine would generate for the sampled position
    for gi in range(0, d.batch_size, 5):
        pos = core.position(d, gi)
        fresh = core.from_position(st.rules, pos["hands"], pos["loose"], pos["builds"], pos["to_move"],
                                   pos["dealer"], pos["stock"], pos["captured"], pos["sweeps"], pos["last_capturer"],
                                   pos["match_scores"], last_trail=pos["last_trail"], max_moves=d.max_moves)
        assert core.move_list(fresh, 0) == core.move_list(d, gi)
    # every sample plays to the end of its deal (auto-reset off) without an illegal state
    rng = np.random.default_rng(0)
    for _ in range(60):
        if (d.current_player < 0).all():
            break
        live = d.current_player >= 0
        assert (d.num_moves[live] > 0).all()
        core.step(d, np.floor(rng.random(d.batch_size) * np.maximum(d.num_moves, 1)).astype(np.int64))
    assert (d.current_player < 0).all()


def test_build_owners_are_dealt_a_capturing_card() -> None:
    # Seat 1 owns a build of 9 (4C+5D); seat 0 (the viewer) cannot see seat 1's two cards. RULES.md 4.4: the owner
    # holds a 9. Table: build 9 = 4C 5D (seat 1) and loose 2H; seat 0 holds 3S 7C; seat 1 holds 9H KD.
    rules = make_rules("classic")
    rest = [c for c in range(52) if c not in (42, 6, 34, 25, 27, 3, 17)]  # every other card in the stock
    st = core.from_position(rules, hands=[[42, 6], [34, 25]], loose=[27], builds=[([3, 17], 9, 1)], to_move=0,
                            stock=rest)
    view = public_view(st)
    d = determinize(rules, view, moves_of(st), 400, np.random.default_rng(5))
    caps = capture_values(rules)
    held = [[c for c in range(52) if int(h) >> c & 1] for h in d.hand[:, 1]]
    assert all(any(caps[c, 9] for c in h) for h in held)
    # the owner's other card is spread over the rest of the unseen cards, not fixed
    assert len({c for h in held for c in h if not caps[c, 9]}) > 10


def test_unseen_cards_are_dealt_uniformly() -> None:
    # A fresh deal seen by seat 0: 44 unseen cards, 4 in seat 1's hand. Each lands there with chance 4/44.
    st = core.init(make_rules("classic"), [11])
    K = 4000
    d = determinize(st.rules, public_view(st), moves_of(st), K, np.random.default_rng(3))
    unseen = [c for c in range(52) if int(public_view(st)["unseen"][0]) >> c & 1]
    counts = np.array([((d.hand[:, 1] >> np.uint64(c)) & np.uint64(1)).sum() for c in unseen])
    expected = K * 4 / len(unseen)
    sd = np.sqrt(K * (4 / 44) * (40 / 44))
    assert np.abs(counts - expected).max() < 5 * sd
    # and the stock order is shuffled: the first stock card varies
    assert len(set(d.deck[:, int(d.stock_pos[0])].tolist())) > 30


def test_take_clones_games_independently() -> None:
    st = mid_deal_states(2, games=4, steps=5)
    c = take(st, np.array([2, 2, 0]))
    assert core.position(c, 0) == core.position(st, 2) == core.position(c, 1)
    assert core.move_list(c, 2) == core.move_list(st, 0)
    before = core.position(st, 2)
    core.step(c, np.zeros(3, dtype=np.int64))
    assert core.position(st, 2) == before  # the source is untouched
    assert core.position(c, 0) != before
