"""The exact last-round solver (cassino_env.endgame) against a brute-force minimax written here.

The brute force plays every listed move with ``core.step`` on ``State.copy()`` copies of the one exact state that
:func:`cassino_env.determinize.determinize` rebuilds from the seat's view, down to the deal's end, and scores a leaf as
the root seat's deal total minus the other seat's, plus or minus the match bonus when the deal ends the match
(docs/rules.md 2.6, 5). A transposition table keyed by the position's public arrays keeps it to a second or two on a
round's first decision. The positions are last rounds reached by random legal play in the vector env, for every
two-seat preset of docs/rules.md 6, at every count of cards left in the hands (8, the round's first decision, down to
1).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from cassino_env import core, endgame
from cassino_env.cards import NUM_CARDS, card_id
from cassino_env.determinize import determinize, moves_of
from cassino_env.obs import public_view
from cassino_env.rules import make_rules
from cassino_env.vector import CassinoVectorEnv

TWO_SEAT_PRESETS = ("classic", "matsuda", "bga", "stadium", "royal")
BONUS = endgame.MATCH_BONUS

#: State fields that a move can change in a round with an empty stock (the transposition key of the brute force).
_KEY_FIELDS = ("hand", "loose", "build_cards", "build_value", "build_owner", "captured", "sweeps", "in_play",
               "current_player", "last_capturer", "last_trail")


def rows(obs: dict, idx) -> dict:
    """Games ``idx`` of a vector-env observation dict (every array indexed, the view too)."""
    out = {k: np.asarray(v)[idx] for k, v in obs.items() if k != "view"}
    if "view" in obs:
        out["view"] = {k: np.asarray(v)[idx] for k, v in obs["view"].items()}
    return out


def stack(batch: list[dict]) -> dict:
    """One observation dict of the one-game dicts of ``batch``, in order."""
    out = {k: np.concatenate([o[k] for o in batch]) for k in batch[0] if k != "view"}
    out["view"] = {k: np.concatenate([o["view"][k] for o in batch]) for k in batch[0]["view"]}
    return out


def obs_of(st: core.State) -> dict:
    """The vector env's observation fields that :func:`endgame.solve` reads, for a core State."""
    return {"action_mask": core.legal_mask(st).astype(np.int8), "move_kind": st.move_kind.copy(),
            "move_card": st.move_card.copy(), "move_value": st.move_value.copy(),
            "move_cards": st.move_cards.copy(), "view": public_view(st)}


def exact_state(rules, obs1: dict) -> core.State:
    """The one state consistent with a solvable one-game view."""
    return determinize(rules, obs1["view"], moves_of(obs1), 1, np.random.default_rng(0))


def brute_values(rules, obs1: dict, bonus: float) -> np.ndarray:
    """float64[n]: the minimax value of each listed root move of a one-game observation, for the seat to move."""
    st = exact_state(rules, obs1)
    me = int(st.current_player[0])
    memo: dict[bytes, float] = {}

    def move_values(s: core.State) -> list[float]:
        out = []
        for a in range(int(s.num_moves[0])):
            child = s.copy()
            r = core.step(child, np.array([a], dtype=np.int64))
            if r.deal_done[0]:
                v = float(r.deal_totals[0, me]) - float(r.deal_totals[0, 1 - me])
                if r.match_done[0]:
                    v += bonus if int(r.match_winner[0]) == me else -bonus
            else:
                key = b"".join(np.ascontiguousarray(getattr(child, f)).tobytes() for f in _KEY_FIELDS)
                if key not in memo:
                    vs = move_values(child)
                    memo[key] = max(vs) if int(child.current_player[0]) == me else min(vs)
                v = memo[key]
            out.append(v)
        return out

    return np.array(move_values(st), dtype=np.float64)


def cards_left(obs1: dict) -> int:
    return int(obs1["view"]["hand_sizes"][0].sum())


def num_moves(obs1: dict) -> int:
    return int(obs1["action_mask"][0].sum())


@functools.cache
def last_rounds(preset: str, seed: int = 7, games: int = 6, steps: int = 130) -> tuple:
    """Solvable one-game observations met in random play of a two-seat preset, with the true hands of each
    (``(obs1, hands uint64[2])`` pairs, in the order met, from more than one deal)."""
    rules = make_rules(preset, num_players=2)
    env = CassinoVectorEnv(games, rules, seed=seed, with_view=True)
    obs, _ = env.reset()
    rng = np.random.default_rng(seed)
    found = []
    for _ in range(steps):
        for b in np.flatnonzero(endgame.solvable(rules, obs["view"])):
            found.append((rows(obs, [b]), env.state.hand[b].copy()))
        n = obs["action_mask"].sum(axis=1)
        obs, *_ = env.step(np.floor(rng.random(games) * n).astype(np.int64))
    return tuple(found)


def sample(preset: str) -> list[int]:
    """Indices into :func:`last_rounds` of the positions the brute force checks: every one with 1..6 cards left, four
    with 7 (a choice of moves first) and the two first decisions of a round (8 cards) with the fewest moves (to keep
    the brute force short)."""
    found = [o for o, _ in last_rounds(preset)]
    out = [i for i, o in enumerate(found) if cards_left(o) <= 6]
    sevens = [i for i, o in enumerate(found) if cards_left(o) == 7]
    sevens.sort(key=lambda i: num_moves(found[i]) < 2)  # stable: positions with a choice first, in the order met
    eights = [i for i, o in enumerate(found) if cards_left(o) == 8 and num_moves(o) > 1]
    eights.sort(key=lambda i: num_moves(found[i]))
    return out + sevens[:4] + eights[:2]


@functools.cache
def brute_of(preset: str, i: int, bonus: float) -> np.ndarray:
    """:func:`brute_values` of position ``i`` of :func:`last_rounds` (computed once per test session)."""
    return brute_values(make_rules(preset, num_players=2), last_rounds(preset)[i][0], bonus)


@pytest.mark.parametrize("preset", TWO_SEAT_PRESETS)
def test_solve_agrees_with_brute_force_minimax(preset: str) -> None:
    rules = make_rules(preset, num_players=2)
    found = last_rounds(preset)
    # the view pins the state down: the rebuilt hands are the true ones
    for obs1, hands in found[::5]:
        assert (exact_state(rules, obs1).hand[0] == hands).all()
    picked = sample(preset)
    positions = [found[i][0] for i in picked]
    assert {cards_left(o) for o in positions} == set(range(1, 9))
    batch = stack(positions)
    best, value, nodes = endgame.solve(rules, batch)
    assert best.dtype == np.int64 and value.dtype == np.float64 and nodes.dtype == np.int64
    assert best.shape == value.shape == nodes.shape == (len(positions),)
    assert (batch["action_mask"][np.arange(len(positions)), best] == 1).all()
    assert (nodes >= 1).all()
    for j, i in enumerate(picked):
        vals = brute_of(preset, i, BONUS)
        assert value[j] == vals.max(), (i, cards_left(positions[j]), vals)
        assert vals[best[j]] == vals.max(), (i, cards_left(positions[j]), vals, best[j])
    # the same without a match bonus (the pure deal margin), on the smaller positions
    small = [i for i in picked if cards_left(found[i][0]) <= 6]
    best0, value0, _ = endgame.solve(rules, stack([found[i][0] for i in small]), match_bonus=0.0)
    for j, i in enumerate(small):
        vals = brute_of(preset, i, 0.0)
        assert value0[j] == vals.max() and vals[best0[j]] == vals.max(), (i, vals, best0[j])
        assert abs(value0[j]) < 100


@pytest.mark.parametrize("preset", TWO_SEAT_PRESETS)
def test_value_does_not_depend_on_the_move_tried_first(preset: str) -> None:
    # alpha-beta's cut-offs depend on the order moves are tried, its value must not: every last-round position met,
    # the round's first decisions included, solved with each of up to four different first moves
    rules = make_rules(preset, num_players=2)
    batch = stack([o for o, _ in last_rounds(preset)])
    n = batch["action_mask"].sum(axis=1)
    _, value, _ = endgame.solve(rules, batch)
    for k in range(4):
        first = np.minimum(k, n - 1).astype(np.int64)
        best_k, value_k, _ = endgame.solve(rules, batch, first=first)
        assert (value_k == value).all(), np.flatnonzero(value_k != value)
        assert (batch["action_mask"][np.arange(len(n)), best_k] == 1).all()


def test_first_move_is_kept_when_optimal_and_overridden_when_not() -> None:
    kept_over_default = 0
    overridden = 0
    for preset in TWO_SEAT_PRESETS:
        rules = make_rules(preset, num_players=2)
        found = last_rounds(preset)
        picked = [i for i in sample(preset) if cards_left(found[i][0]) <= 6 and num_moves(found[i][0]) > 1]
        vals = [brute_of(preset, i, BONUS) for i in picked]
        batch = stack([found[i][0] for i in picked])
        default, _, _ = endgame.solve(rules, batch)
        # an optimal first move is returned: the last optimal one in table order (often not the default's choice)
        first = np.array([int(np.flatnonzero(v == v.max())[-1]) for v in vals], dtype=np.int64)
        best, value, _ = endgame.solve(rules, batch, first=first)
        assert (best == first).all(), (preset, best, first)
        assert (value == [v.max() for v in vals]).all()
        kept_over_default += int((first != default).sum())
        # a losing first move is searched but not returned
        worse = [j for j, v in enumerate(vals) if (v < v.max()).any()]
        first2 = np.array([int(np.flatnonzero(v < v.max())[0]) if j in worse else 0 for j, v in enumerate(vals)],
                          dtype=np.int64)
        best2, value2, _ = endgame.solve(rules, batch, first=first2)
        for j in worse:
            assert vals[j][best2[j]] == vals[j].max() and best2[j] != first2[j]
            assert value2[j] == vals[j].max()
        overridden += len(worse)
    assert kept_over_default > 0 and overridden > 0  # both cases were met


def play_to_stock_empty(rules, games: int, seed: int, with_view: bool = True) -> tuple[CassinoVectorEnv, dict]:
    """A vector env and its observation once every game is in a round with an empty stock (random play)."""
    env = CassinoVectorEnv(games, rules, seed=seed, with_view=with_view)
    obs, _ = env.reset()
    rng = np.random.default_rng(seed)
    while not (env.state.stock_pos == NUM_CARDS).all():
        n = obs["action_mask"].sum(axis=1)
        # a game already in its last round trails (move 0) so that it stays there until the others catch up
        acts = np.where(env.state.stock_pos == NUM_CARDS, 0, np.floor(rng.random(games) * n)).astype(np.int64)
        obs, *_ = env.step(acts)
    return env, obs


def test_solvable_only_in_a_two_seat_last_round() -> None:
    rules = make_rules("classic", num_players=2)
    env = CassinoVectorEnv(8, rules, seed=3, with_view=True)
    obs, _ = env.reset()
    rng = np.random.default_rng(3)
    seen = {False: 0, True: 0}
    for _ in range(60):
        ok = endgame.solvable(rules, obs["view"])
        assert ok.dtype == np.bool_ and ok.shape == (8,)
        assert (ok == (obs["view"]["stock_size"] == 0)).all()
        for flag in ok:
            seen[bool(flag)] += 1
        n = obs["action_mask"].sum(axis=1)
        obs, *_ = env.step(np.floor(rng.random(8) * n).astype(np.int64))
    assert seen[False] and seen[True]
    for num_players in (3, 4):
        rules_n = make_rules("classic", num_players=num_players)
        _, obs_n = play_to_stock_empty(rules_n, 3, seed=num_players)
        assert (obs_n["view"]["stock_size"] == 0).all()
        assert not endgame.solvable(rules_n, obs_n["view"]).any()
        with pytest.raises(ValueError, match="two-seat"):
            endgame.solve(rules_n, obs_n)


def test_solve_refuses_an_unsolvable_game_or_a_missing_view() -> None:
    rules = make_rules("classic", num_players=2)
    env = CassinoVectorEnv(3, rules, seed=5, with_view=True)
    obs, _ = env.reset()  # the first round: the stock holds cards
    with pytest.raises(ValueError, match="game 0 is not a two-seat last round"):
        endgame.solve(rules, obs)
    _, last = play_to_stock_empty(rules, 3, seed=5)
    mixed = stack([rows(last, [0]), rows(obs, [1]), rows(last, [2])])
    with pytest.raises(ValueError, match="game 1 is not"):
        endgame.solve(rules, mixed)
    endgame.solve(rules, last)  # every game solvable: no error
    _, no_view = play_to_stock_empty(rules, 3, seed=5, with_view=False)
    assert "view" not in no_view
    with pytest.raises(ValueError, match=r"obs\['view'\].*with_view=True"):
        endgame.solve(rules, no_view)


def cards(*texts: str) -> list[int]:
    return [card_id(t) for t in texts]


def match_point_position(match_scores: tuple[int, int]) -> core.State:
    """Classic, two seats, the last round's third ply: seat 0 (10H QS) to move against seat 1 (4H QH), the table AS
    6S 9S, seat 0's pile of 23 cards holding the other three aces, both casinos and five spades (seat 1's: the other 22
    cards, four spades), seat 0 the last capturer."""
    hands = [cards("10H", "QS"), cards("4H", "QH")]
    loose = cards("AS", "6S", "9S")
    pile0 = cards("AC", "3C", "6C", "QC", "KC", "AD", "2D", "4D", "8D", "10D", "JD", "QD", "AH", "3H", "7H", "8H",
                  "9H", "KH", "2S", "4S", "7S", "8S", "10S")
    placed = set(hands[0] + hands[1] + loose + pile0)
    pile1 = [c for c in range(NUM_CARDS) if c not in placed]
    return core.from_position(make_rules("classic", num_players=2), hands, loose=loose, captured=[pile0, pile1],
                              to_move=0, last_capturer=0, match_scores=list(match_scores))


def test_winning_the_match_comes_before_the_deal_margin() -> None:
    rules = make_rules("classic", num_players=2)
    capture = (1, card_id("10H"), 10, tuple(sorted(cards("AS", "9S"))))
    trail_queen = (0, card_id("QS"), 0, ())
    st = match_point_position((0, 20))  # seat 1 needs one point to win the match; seat 0 cannot reach 21 here
    moves = core.move_list(st, 0)
    obs = obs_of(st)
    assert endgame.solvable(rules, obs["view"]).all()
    margins = brute_values(rules, obs, 0.0)
    match = brute_values(rules, obs, BONUS)
    # the widest margin (trailing the queen) hands seat 1 its point and the match; the capture keeps it off 21
    assert moves[int(np.argmax(margins))] == trail_queen and margins.max() > margins[moves.index(capture)]
    assert moves[int(np.argmax(match))] == capture and match.max() == margins[moves.index(capture)]
    assert match[moves.index(trail_queen)] == margins.max() - BONUS
    best, value, _ = endgame.solve(rules, obs)
    assert moves[int(best[0])] == capture and value[0] == match.max()
    best0, value0, _ = endgame.solve(rules, obs, match_bonus=0.0)
    assert moves[int(best0[0])] == trail_queen and value0[0] == margins.max()
    # far from the match's end the deal margin alone decides
    far = obs_of(match_point_position((0, 0)))
    best_far, value_far, _ = endgame.solve(rules, far)
    assert core.move_list(match_point_position((0, 0)), 0)[int(best_far[0])] == trail_queen
    assert value_far[0] == margins.max()


@pytest.mark.parametrize("preset", TWO_SEAT_PRESETS)
def test_match_bonus_counts_when_the_deal_decides_the_match(preset: str) -> None:
    rules = make_rules(preset, num_players=2)
    target = rules.target
    positions = [o for o, _ in last_rounds(preset) if cards_left(o) <= 5]
    decided = 0
    for mine, other in ((target - 1, target - 1), (target - 2, 0), (0, target - 3), (target - 6, target - 4)):
        batch = []
        for obs1 in positions:
            o = rows(obs1, [0])
            me = int(o["view"]["viewer"][0])
            o["view"]["match_scores"][0, me] = mine
            o["view"]["match_scores"][0, 1 - me] = other
            batch.append(o)
        best, value, _ = endgame.solve(rules, stack(batch))
        for i, o in enumerate(batch):
            vals = brute_values(rules, o, BONUS)
            assert value[i] == vals.max() and vals[best[i]] == vals.max(), (mine, other, i, vals, best[i])
            if abs(vals.max()) > BONUS / 2:  # the brute force's line ends the match: the value carries the bonus
                decided += 1
                assert abs(value[i]) > BONUS / 2
    assert decided > len(positions)  # most of these deals decide the match


def test_solve_refuses_a_first_move_that_is_not_listed() -> None:
    # an index past the listed moves would be played from the move table's padding, and returned as the best move
    rules = make_rules("classic", num_players=2)
    _, last = play_to_stock_empty(rules, 3, seed=5)
    n = last["action_mask"].sum(axis=1).astype(np.int64)
    for bad in (n, n + 200, np.full(3, -1)):
        with pytest.raises(ValueError, match=r"first\[0\]"):
            endgame.solve(rules, last, first=bad)
    with pytest.raises(ValueError, match="first"):
        endgame.solve(rules, last, first=np.zeros(2, dtype=np.int64))
    with pytest.raises(ValueError, match="first"):
        endgame.solve(rules, last, first=np.full(3, 0.5))
    best, _, _ = endgame.solve(rules, last, first=n - 1)  # the last listed moves are fine
    assert (best < n).all()
