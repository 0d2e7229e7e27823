"""Match formats: Trump Stadium's session (first side to win N matches, N = 1, 2 or 3; cassino_env/session.py), its use
in the evaluation (``cassino eval --session-wins N``), and the first player alternating between the deals of a
match (Matsuda's reservation game), which the core's dealer rotation gives."""

from __future__ import annotations

import contextlib
import io
import itertools
import json

import numpy as np
import pytest

from cassino_env import core
from cassino_env.errors import CassinoError
from cassino_env.rules import PRESETS, make_rules
from cassino_env.session import (
    SESSION_WINS,
    Session,
    SessionBatch,
    SessionError,
    SessionResult,
    check_session_wins,
    max_matches,
    session_result,
)
from train import cli
from train.evaluate import evaluate, play_pair

# --- the session module -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, 4, -1, True, 1.0, "2", None])
def test_session_length_must_be_1_2_or_3(bad) -> None:
    with pytest.raises(SessionError, match="first side to win 1, 2 or 3 matches"):
        check_session_wins(bad)
    with pytest.raises(SessionError):
        Session(bad)
    assert issubclass(SessionError, CassinoError)  # the commands report it as bad input (exit 2)


def test_first_side_to_n_wins_takes_the_session() -> None:
    assert SESSION_WINS == (1, 2, 3)
    assert session_result([1], 1) == SessionResult(winner=1, wins=(0, 1), matches=1)
    assert session_result([0, 1, 0], 2) == SessionResult(winner=0, wins=(2, 1), matches=3)
    assert session_result([1, 1], 2) == SessionResult(winner=1, wins=(0, 2), matches=2)
    assert session_result([0, 1, 1, 0, 1], 3) == SessionResult(winner=1, wins=(2, 3), matches=5)
    assert session_result([0, 1, 0, 1], 3).winner is None  # undecided: more matches to play
    assert session_result([], 2) == SessionResult(winner=None, wins=(0, 0), matches=0)
    # three players: sides 0, 1, 2
    assert session_result([2, 0, 1, 2], 2, num_sides=3) == SessionResult(winner=2, wins=(1, 1, 2), matches=4)


def test_session_rejects_matches_after_the_decision_and_bad_sides() -> None:
    with pytest.raises(SessionError, match="decided after match 2"):
        session_result([1, 1, 0], 2)
    with pytest.raises(SessionError, match="side 0..1"):
        session_result([2], 2)
    with pytest.raises(SessionError, match="side 0..2"):
        session_result([-1], 1, num_sides=3)
    with pytest.raises(SessionError, match="at least 2 sides"):
        Session(2, num_sides=1)
    batch = SessionBatch(2, 2, 1)
    batch.record(np.array([0]), np.array([1]))
    with pytest.raises(SessionError, match="game 0"):
        batch.record(np.array([0]), np.array([0]))
    with pytest.raises(SessionError, match="sides 0..1"):
        batch.record(np.array([1]), np.array([2]))


@pytest.mark.parametrize(("n", "sides"), list(itertools.product(SESSION_WINS, (2, 3))))
def test_every_order_of_match_winners_is_decided_within_max_matches(n: int, sides: int) -> None:
    """All winner sequences of max_matches(n, sides) matches: the session is decided at the first side's n-th
    win, never later than max_matches; the batched tracker agrees with Session game by game."""
    longest = max_matches(n, sides)
    seqs = list(itertools.product(range(sides), repeat=longest))
    batch = SessionBatch(len(seqs), sides, n)
    for m in range(longest):
        live = np.flatnonzero(~batch.done)
        batch.record(live, np.array([seqs[g][m] for g in live]))
    assert batch.done.all()
    for g, seq in enumerate(seqs):
        s = Session(n, sides)
        k = 0
        while not s.done:
            s.add(seq[k])
            k += 1
        assert max(s.wins) == n and s.wins.count(n) == 1
        assert s.winner == seq[k - 1]  # the deciding match is won by the session's winner
        assert (batch.winner[g], batch.matches[g], tuple(batch.wins[g])) == (s.winner, s.matches, s.wins)
        assert n <= s.matches <= longest


# --- Matsuda's reservation game: the first player alternates between deals ------------------------------------------


@pytest.mark.parametrize("preset", [p for p, (counts, _) in PRESETS.items() if 2 in counts])
def test_first_player_alternates_between_deals_of_a_two_player_match(preset: str) -> None:
    """A match's first dealer is seat P-1 = 1, so seat 0 plays first; the dealer moves one seat per deal, so the
    first player of the deals of a match goes 0, 1, 0, 1, …; a new match starts again with seat 0."""
    rules = make_rules(preset, 2)
    st = core.init(rules, np.arange(8, dtype=np.int64), max_moves=64)
    assert st.dealer.tolist() == [1] * 8 and st.current_player.tolist() == [0] * 8
    deal_no = np.zeros(8, dtype=np.int64)  # deals begun in the current match, the first one included
    firsts: list[list[int]] = [[0] for _ in range(8)]  # first player of each deal of each game's first match
    matches_seen = np.zeros(8, dtype=np.int64)
    rng = np.random.default_rng(0)
    for _ in range(2000):
        acts = (rng.random(8) * st.num_moves).astype(np.int64)
        res = core.step(st, acts)
        new_match = np.flatnonzero(res.match_done)
        new_deal = np.flatnonzero(res.deal_done & ~res.match_done)
        for b in new_deal.tolist():
            deal_no[b] += 1
            first = int(st.current_player[b])
            assert int(st.dealer[b]) == (first - 1) % 2  # the player after the dealer starts
            assert first == deal_no[b] % 2, f"game {b}, deal {deal_no[b]}: seat {first} plays first"
            if matches_seen[b] == 0:
                firsts[b].append(first)
        for b in new_match.tolist():
            assert int(st.dealer[b]) == 1 and int(st.current_player[b]) == 0  # a new match: dealer P-1, seat 0
            deal_no[b] = 0
            matches_seen[b] += 1
        if (matches_seen >= 1).all():
            break
    assert (matches_seen >= 1).all()
    for seq in firsts:
        assert len(seq) >= 2  # a match to 21 lasts more than one deal
        assert seq == [k % 2 for k in range(len(seq))]


# --- sessions in the evaluation -----------------------------------------------------------------------------------


def test_one_match_sessions_equal_matches() -> None:
    r = evaluate(["random", "greedy"], "classic", deals=40, seed=3)
    e = r["pairs"][0]
    assert r["session_wins"] == 1 and r["target"] == 21
    assert e["sessions"] == e["matches"] == 2 * e["boards"]
    assert e["session_wins_a"] == e["match_wins_a"]
    assert (e["session_ci_low"], e["session_ci_high"]) == (e["match_ci_low"], e["match_ci_high"])


@pytest.mark.parametrize("n", [2, 3])
def test_sessions_fold_the_match_winners_of_each_game(n: int) -> None:
    rules = make_rules("classic", 2)
    from agents.registry import make_agent

    a, b = make_agent("random", rules), make_agent("greedy", rules)
    rec = play_pair(a, b, rules, deals=60, seed=5, rng=np.random.default_rng(0), session_wins=n)
    assert rec.sessions == [2] * len(rec.sessions)
    # Replay each (board, arrangement) game's match winners through Session: the recorded session winners agree.
    games: dict[tuple[int, int], list[int]] = {}
    for board, arr, winner in rec.results:
        games.setdefault((board, arr), []).append(winner)
    assert len(games) == 2 * len(rec.sessions)
    wins_a = np.zeros(len(rec.sessions), dtype=np.int64)
    for (board, _arr), winners in games.items():
        res = session_result(winners, n)  # agent 0 = A, 1 = B: a two-side session
        assert res.winner is not None and res.matches == len(winners)
        wins_a[board] += res.winner == 0
    assert wins_a.tolist() == rec.session_wins_a
    assert sum(rec.matches) == len(rec.results) >= n * sum(rec.sessions)


def test_session_report_and_duplicate_fairness() -> None:
    r = evaluate(["random", "greedy"], "classic", deals=60, seed=1, session_wins=2)
    e = r["pairs"][0]
    assert r["session_wins"] == 2
    assert e["sessions"] == 2 * e["boards"]
    assert e["matches"] >= 2 * e["sessions"]
    assert 0 <= e["session_ci_low"] <= e["session_win_rate_a"] <= e["session_ci_high"] <= 1
    assert e["session_win_rate_a"] < 0.5  # random loses to greedy
    # the same deterministic bot on both sides of duplicate boards: sessions split evenly
    g = evaluate(["greedy", "greedy"], "classic", deals=40, seed=2, session_wins=3)["pairs"][0]
    assert g["session_win_rate_a"] == 0.5 and g["match_win_rate_a"] == 0.5


def test_eval_command_session_wins(tmp_path) -> None:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert cli.main(["eval", "--agents", "random,greedy", "--deals", "20", "--session-wins", "2", "--json",
                         "--out-dir", str(tmp_path)]) == 0
    report = json.loads(buf.getvalue())
    (pair,) = report["pairs"]
    assert report["session_wins"] == 2
    for key in ("sessions", "session_wins_a", "session_win_rate_a", "session_ci_low", "session_ci_high"):
        assert key in pair
    assert "session win A" in (tmp_path / "eval.md").read_text()
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert cli.main(["eval", "--agents", "random,greedy", "--deals", "10", "--session-wins", "2",
                         "--no-progress", "--out-dir", str(tmp_path / "t")]) == 0
    out = buf.getvalue()
    assert "sessions of first to 2 match wins" in out and "session win A" in out


@pytest.mark.parametrize("bad", ["0", "4"])
def test_eval_command_rejects_a_bad_session_length(bad: str, capsys) -> None:
    assert cli.main(["eval", "--agents", "random,greedy", "--deals", "4", "--session-wins", bad]) == 2
    assert "first side to win 1, 2 or 3 matches" in capsys.readouterr().err
