"""Determinisation (cassino_env.determinize): samples keep everything the seat knows and only re-deal unseen cards.

Each check runs on mid-deal states reached by random play, for every preset of docs/rules.md 6 at every player count it
allows; the build owners' obligations are checked for ace-high builds of 14 and side-by-side attach builds.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import PRESET_IDS, PRESET_PLAYERS

from cassino_env import core
from cassino_env import determinize as det_module
from cassino_env.cards import card_id
from cassino_env.determinize import capture_values, determinize, moves_of, take
from cassino_env.obs import public_view
from cassino_env.rules import make_rules

ALL = (1 << 52) - 1


def ids(*texts: str) -> list[int]:
    return [card_id(t) for t in texts]


def mid_deal_states(num_players: int, games: int = 48, steps: int = 13, seed: int = 0,
                    preset: str = "classic") -> core.State:
    """``games`` games after ``steps`` random moves (some mid-round, some just after a deal)."""
    st = core.init(make_rules(preset, num_players), np.arange(games) + 1000 * seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        core.step(st, np.floor(rng.random(games) * st.num_moves).astype(np.int64))
    return st


@pytest.mark.parametrize(("preset", "num_players"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_samples_keep_what_the_seat_knows(preset: str, num_players: int) -> None:
    st = mid_deal_states(num_players, steps=13 + num_players, preset=preset)
    view = public_view(st)
    K = 6
    d = determinize(st.rules, view, moves_of(st), K, np.random.default_rng(1))
    assert d.batch_size == st.batch_size * K
    row = np.repeat(np.arange(st.batch_size), K)
    me = st.current_player.astype(np.int64)[row]
    g = np.arange(d.batch_size)
    # the seat's own cards, the table, the piles, the scores and the turn are exactly the real ones
    assert (d.hand[g, me] == st.hand[row, me]).all()
    for name in ("loose", "build_cards", "build_value", "build_owner", "captured", "sweeps", "in_play",
                 "match_scores", "dealer",
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


@pytest.mark.parametrize(("preset", "num_players"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_samples_are_playable_and_list_the_same_moves_as_a_fresh_position(preset: str, num_players: int) -> None:
    st = mid_deal_states(num_players, games=12, steps=21, seed=3, preset=preset)
    d = determinize(st.rules, public_view(st), moves_of(st), 3, np.random.default_rng(2))
    # the copied move table is the one the engine would generate for the sampled position
    for gi in range(0, d.batch_size, 5):
        pos = core.position(d, gi)
        fresh = core.from_position(st.rules, **pos, max_moves=d.max_moves)
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
    # Seat 1 owns a build of 9 (4C+5D); seat 0 (the viewer) cannot see seat 1's two cards. docs/rules.md 4.4: the owner
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


@pytest.mark.parametrize("rounds", [det_module.MAX_REJECTION_ROUNDS, 0])  # 0: every failing sample is repaired
@pytest.mark.parametrize("preset", ["royal", "bga"])
def test_an_owner_of_a_build_of_14_is_dealt_an_ace(preset: str, rounds: int, monkeypatch) -> None:
    # ace_high (docs/rules.md 3): a build of 14 is captured only by an ace played as 14. Seat 1 owns KD+AC = 14 and
    # holds
    # two unseen cards; seat 0 views. Also a build of 1 (AD | AH, a multiple build) of seat 1: the same ace serves.
    monkeypatch.setattr(det_module, "MAX_REJECTION_ROUNDS", rounds)
    rules = make_rules(preset)
    seen = ids("3S", "7C", "KD", "AC", "AD", "AH", "9H", "AS", "5D")
    rest = [c for c in range(52) if c not in seen]
    st = core.from_position(rules, hands=[ids("3S", "7C"), ids("AS", "5D")], loose=ids("9H"),
                            builds=[(ids("KD", "AC"), 14, 1), (ids("AD", "AH"), 1, 1)], to_move=0, stock=rest)
    d = determinize(rules, public_view(st), moves_of(st), 300, np.random.default_rng(5))
    caps = capture_values(rules)
    assert caps[card_id("AS"), 14] and caps[card_id("AS"), 1] and not caps[card_id("KS"), 14]
    held = [[c for c in range(52) if int(h) >> c & 1] for h in d.hand[:, 1]]
    assert all(card_id("AS") in h for h in held)  # the only unseen ace
    assert len({c for h in held for c in h if c != card_id("AS")}) > 10  # the other card varies
    assert (d.build_value == st.build_value).all()


@pytest.mark.parametrize("rounds", [det_module.MAX_REJECTION_ROUNDS, 0])
def test_attach_builds_of_one_value_need_one_card(rounds: int, monkeypatch) -> None:
    # stadium (attach, docs/rules.md 4.3): seat 1 owns two builds of 6 side by side and a build of 8, and holds two
    # cards: one 6 serves both builds of 6, so every sample deals seat 1 one 6 and one 8.
    monkeypatch.setattr(det_module, "MAX_REJECTION_ROUNDS", rounds)
    rules = make_rules("stadium")
    seen = ids("3S", "7C", "4C", "2C", "4D", "2D", "5H", "3H", "6S", "8S")
    rest = [c for c in range(52) if c not in seen]
    st = core.from_position(rules, hands=[ids("3S", "7C"), ids("6S", "8S")],
                            builds=[(ids("4C", "2C"), 6, 1), (ids("4D", "2D"), 6, 1), (ids("5H", "3H"), 8, 1)],
                            to_move=0, stock=rest)
    view = public_view(st)
    assert sorted(int(v) for v in view["build_value"][0] if v) == [6, 6, 8]
    d = determinize(rules, view, moves_of(st), 300, np.random.default_rng(7))
    for h in d.hand[:, 1]:
        ranks = sorted(c % 13 + 1 for c in range(52) if int(h) >> c & 1)
        assert ranks == [6, 8]


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


@pytest.mark.parametrize(("preset", "num_players"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_take_copies_every_public_field(preset: str, num_players: int) -> None:
    st = mid_deal_states(num_players, games=6, steps=7, preset=preset)
    index = np.array([5, 0, 0, 3])
    c = take(st, index)
    assert (c.max_moves, c.prune, c.auto_reset, c.batch_size) == (st.max_moves, st.prune, st.auto_reset, 4)
    names = [n for n in vars(st) if not n.startswith("_") and isinstance(getattr(st, n), np.ndarray)
             and getattr(st, n).shape[:1] == (st.batch_size,)]
    assert len(names) > 20
    for name in names:
        np.testing.assert_array_equal(getattr(c, name), getattr(st, name)[index], err_msg=name)


@pytest.mark.parametrize("index", [np.zeros((2, 2), dtype=np.int64), np.array([0.5]), np.array([0, 6]), [-1]])
def test_take_refuses_indices_that_name_no_game(index) -> None:
    st = mid_deal_states(2, games=6, steps=3)
    with pytest.raises(ValueError, match="index"):
        st.take(index)


@pytest.mark.parametrize(("preset", "num_players"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_samples_on_blank_storage_are_the_samples_on_a_dealt_state(preset: str, num_players: int,
                                                                     monkeypatch) -> None:
    """determinize writes every field of its State: storage from core.blank gives the same packed arrays as storage
    that core.init dealt first, and the same games when played on."""
    rules = make_rules(preset, num_players)
    st = mid_deal_states(num_players, games=8, steps=9, preset=preset)
    view, moves = public_view(st), moves_of(st)
    fast = determinize(rules, view, moves, 3, np.random.default_rng(5))

    def dealt(rules, batch_size, **options):
        return core.init(rules, np.zeros(batch_size, dtype=np.int64), **options)

    monkeypatch.setattr(det_module.core, "blank", dealt)
    slow = determinize(rules, view, moves, 3, np.random.default_rng(5))
    for _ in range(12):
        for a, b in zip((fast._u64, fast._i8, fast._i16, fast._i64, fast._m8, fast._mvc),
                        (slow._u64, slow._i8, slow._i16, slow._i64, slow._m8, slow._mvc), strict=True):
            np.testing.assert_array_equal(a, b)
        live = fast.current_player >= 0
        if not live.any():
            break
        actions = np.where(live, np.arange(fast.batch_size) % np.maximum(fast.num_moves, 1), 0)
        core.step(fast, actions)
        core.step(slow, actions)


@pytest.mark.parametrize("batch_size", [-1, 2.0, True])
def test_blank_refuses_a_batch_size_that_is_not_a_count(batch_size) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        core.blank(make_rules("classic"), batch_size)


def test_a_blank_state_has_nobody_to_move_and_a_step_plays_nothing() -> None:
    st = core.blank(make_rules("classic"), 3, auto_reset=True)
    assert (st.current_player == -1).all() and (st.num_moves == 0).all() and (st.hand == 0).all()
    before = st.copy()
    res = core.step(st, np.zeros(3, dtype=np.int64))
    assert (res.actor == -1).all()
    np.testing.assert_array_equal(st._u64, before._u64)
    np.testing.assert_array_equal(st._i8, before._i8)
