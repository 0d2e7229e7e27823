"""Evaluation (train/evaluate.py, ``cassino eval``): intervals and ratings against known values, duplicate seating,
reproducibility for a seed, 2/3/4 players, and the command's JSON, CSV and heatmap outputs."""

from __future__ import annotations

import contextlib
import io
import json
import math

import numpy as np
import pytest
from scipy.stats import binomtest

from agents.registry import check_spec, make_agent
from cassino_env.rules import make_rules
from train import cli
from train.evaluate import (
    CSV_FIELDS,
    arrangements,
    bradley_terry_elo,
    evaluate,
    format_table,
    openskill_ratings,
    ratio_interval,
    wilson_interval,
)


@pytest.mark.parametrize(("k", "n"), [(0, 10), (7, 10), (50, 100), (99, 100), (1, 3), (380, 1000)])
def test_wilson_matches_scipy(k: int, n: int) -> None:
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    lo, hi = wilson_interval(k, n)
    assert lo == pytest.approx(ci.low, abs=1e-12)
    assert hi == pytest.approx(ci.high, abs=1e-12)


def test_wilson_known_values_and_half_counts() -> None:
    # Wilson (1927) / Newcombe (1998) table: 81 of 263 -> 0.2553 .. 0.3662
    lo, hi = wilson_interval(81, 263)
    assert (round(lo, 4), round(hi, 4)) == (0.2553, 0.3662)
    # half-counted ties sit between the neighbouring integer counts
    assert wilson_interval(7, 10)[0] < wilson_interval(7.5, 10)[0] < wilson_interval(8, 10)[0]
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_ratio_interval_is_the_cluster_mean_with_its_standard_error() -> None:
    totals, counts = np.array([3.0, -1.0, 4.0, 2.0]), np.array([2.0, 1.0, 3.0, 2.0])
    mean, lo, hi = ratio_interval(totals, counts)
    assert mean == pytest.approx(1.0)
    resid = totals - counts
    se = math.sqrt((resid ** 2).sum() * 4 / 3) / counts.sum()
    assert (hi - lo) / 2 == pytest.approx(1.959963984540054 * se)


def test_bradley_terry_known_values() -> None:
    # Two agents, 3 wins to 1: P = 0.75, Elo difference 400 log10(3).
    r = bradley_terry_elo(np.array([[0, 3], [1, 0]]), virtual_draws=0)
    assert r[0] - r[1] == pytest.approx(400 * math.log10(3), abs=1e-3)
    assert r.mean() == pytest.approx(1500)
    # With one virtual drawn match per pair: 3.5 to 1.5.
    r = bradley_terry_elo(np.array([[0, 3], [1, 0]]))
    assert r[0] - r[1] == pytest.approx(400 * math.log10(3.5 / 1.5), abs=1e-3)
    # Counts generated from Elo ratings 0, 200, 500 are fitted back exactly (the MLE of expected counts).
    true = np.array([0.0, 200.0, 500.0])
    n = 1000.0
    p = 1.0 / (1.0 + 10 ** ((true[None, :] - true[:, None]) / 400))
    wins = n * p
    np.fill_diagonal(wins, 0)
    r = bradley_terry_elo(wins, virtual_draws=0)
    assert r - r[0] == pytest.approx(true, abs=0.05)
    # A perfect score stays finite.
    assert np.isfinite(bradley_terry_elo(np.array([[0, 50], [0, 0]]))).all()


def test_openskill_known_values() -> None:
    # openskill.py's documented first game of two fresh Plackett-Luce players (mu 25, sigma 25/3).
    s = openskill_ratings(["a", "b"], [(0, 1)])
    assert s["a"]["mu"] == pytest.approx(27.6354, abs=1e-4)
    assert s["b"]["mu"] == pytest.approx(22.3646, abs=1e-4)
    assert s["a"]["sigma"] == pytest.approx(8.0659, abs=1e-4)
    assert s["a"]["ordinal"] == pytest.approx(s["a"]["mu"] - 3 * s["a"]["sigma"])


def test_arrangements_swap_every_side() -> None:
    assert arrangements(make_rules("classic", 2)) == [(0, 1), (1, 0)]
    three = arrangements(make_rules("classic", 3))
    assert len(three) == 6
    assert sum(sum(a) for a in three) == 9
    assert arrangements(make_rules("classic", 4)) == [(0, 1), (1, 0)]  # partners are the same agent
    assert len(arrangements(make_rules("classic", 4, partnerships=False))) == 14


def strip_times(report: dict) -> dict:
    out = json.loads(json.dumps(report))
    for k in ("seconds", "deals_per_minute", "seconds_per_decision"):
        out.pop(k)
    for e in out["pairs"]:
        for k in ("seconds", "deals_per_minute"):
            e.pop(k)
    return out


def test_evaluation_is_reproducible_for_a_seed() -> None:
    a = evaluate(["random", "greedy", "beginner"], "classic", deals=60, seed=4)
    b = evaluate(["random", "greedy", "beginner"], "classic", deals=60, seed=4)
    c = evaluate(["random", "greedy", "beginner"], "classic", deals=60, seed=5)
    assert strip_times(a) == strip_times(b)
    assert strip_times(a) != strip_times(c)
    assert [(e["a"], e["b"]) for e in a["pairs"]] == [("random", "greedy"), ("random", "beginner"),
                                                      ("greedy", "beginner")]
    for e in a["pairs"]:
        assert e["deals"] >= 60
        assert e["matches"] == 2 * e["boards"]  # each board once per seating
        assert 0 <= e["match_ci_low"] <= e["match_win_rate_a"] <= e["match_ci_high"] <= 1
        assert 0 <= e["deal_ci_low"] <= e["deal_win_rate_a"] <= e["deal_ci_high"] <= 1
        assert e["margin_ci_low"] <= e["mean_margin_a"] <= e["margin_ci_high"]
    assert a["ratings"]["greedy"] > a["ratings"]["random"]


def test_the_kernel_warm_up_runs_before_the_timer_and_changes_no_result(monkeypatch) -> None:
    """The first run on a machine compiles the numba kernels; evaluate compiles them (the rules core's, the
    environment's, the exact last round's) before its clock starts (a new user's first report showed ~70 deals/min
    for a pair that plays thousands), and the warm-up games draw from their own generator, so the report is the one
    without them."""
    import train.evaluate as ev

    calls = []
    real = ev.warm_kernels
    with_warm = evaluate(["random", "greedy"], "classic", deals=30, seed=8)
    monkeypatch.setattr(ev, "warm_kernels", lambda rules: calls.append(rules.preset) or real(rules))
    again = evaluate(["random", "greedy"], "classic", deals=30, seed=8)
    monkeypatch.setattr(ev, "warm_kernels", lambda rules: None)
    without = evaluate(["random", "greedy"], "classic", deals=30, seed=8)
    assert calls == ["classic"]
    assert strip_times(with_warm) == strip_times(again) == strip_times(without)


def test_the_warm_up_reaches_the_exact_last_round(monkeypatch) -> None:
    """The warm-up plays its deals' last rounds through the endgame solver, so its kernels compile there too."""
    import agents.endgame as endgame
    from train.arena import warm_kernels

    solved = []
    real = endgame.solve
    monkeypatch.setattr(endgame, "solve", lambda *a, **k: solved.append(1) or real(*a, **k))
    warm_kernels(make_rules("classic"))
    assert solved


def test_duplicate_deals_cancel_for_equal_agents() -> None:
    # The same deterministic bot on both sides of a duplicate board: A's seat wins exactly what B's seat wins.
    r = evaluate(["greedy", "greedy"], "classic", deals=40, seed=1)
    e = r["pairs"][0]
    assert (e["a"], e["b"]) == ("greedy", "greedy#2")
    assert e["match_win_rate_a"] == 0.5
    assert e["deal_win_rate_a"] == 0.5
    assert e["mean_margin_a"] == 0.0


@pytest.mark.parametrize("num_players", [3, 4])
def test_evaluation_with_three_and_four_players(num_players: int) -> None:
    r = evaluate(["random", "advanced"], "classic", deals=30, seed=2, num_players=num_players)
    e = r["pairs"][0]
    assert e["matches"] == len(arrangements(make_rules("classic", num_players))) * e["boards"]
    assert e["mean_margin_a"] < 0
    assert e["match_win_rate_a"] < 0.5


def test_eval_command_writes_json_csv_and_heatmap(tmp_path) -> None:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = cli.main(["eval", "--agents", "random,greedy", "--deals", "30", "--seed", "3", "--json",
                         "--out-dir", str(tmp_path)])
    assert code == 0
    report = json.loads(buf.getvalue())
    (pair,) = report["pairs"]
    for key in ("a", "b", "matches", "match_win_rate_a", "match_ci_low", "match_ci_high", "deal_win_rate_a",
                "mean_margin_a"):
        assert key in pair
    assert set(report["ratings"]) == {"random", "greedy"}
    assert json.loads((tmp_path / "eval.json").read_text()) == report
    lines = (tmp_path / "eval.csv").read_text().splitlines()
    assert lines[0].split(",") == list(CSV_FIELDS)
    assert len(lines) == 2
    assert (tmp_path / "heatmap.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| random | greedy |" in (tmp_path / "eval.md").read_text()
    # the readable table
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert cli.main(["eval", "--agents", "random,greedy", "--deals", "10", "--no-progress",
                         "--out-dir", str(tmp_path / "t")]) == 0
    assert "match win A" in buf.getvalue()
    assert "Elo" in buf.getvalue()


def test_eval_command_rejects_bad_agents(capsys) -> None:
    assert cli.main(["eval", "--agents", "greedy,nobody", "--deals", "10"]) == 2
    assert "unknown agent 'nobody'" in capsys.readouterr().err
    assert cli.main(["eval", "--agents", "greedy", "--deals", "10"]) == 2


def test_checkpoint_agents_load_lazily_and_play(tmp_path) -> None:
    pytest.importorskip("torch")
    from agents.policy import CassinoPolicy
    from agents.ppo_agent import save_checkpoint
    from cassino_env.obs import obs_size

    rules = make_rules("classic")
    path = save_checkpoint(tmp_path / "tiny.pt", CassinoPolicy(obs_dim=obs_size(2, 2), hidden=16, embed=8), rules)
    r = evaluate([f"checkpoint:{path}", "random"], rules, deals=8, seed=0)
    assert r["agents"][0].startswith("checkpoint:")
    assert r["pairs"][0]["deals"] >= 8
    assert cli.main(["eval", "--agents", f"checkpoint:{tmp_path / 'missing.pt'},random", "--deals", "4"]) == 2


def test_checkpoint_agents_are_named_by_their_path(tmp_path, monkeypatch) -> None:
    """Two runs' final.pt are told apart in the report: each is named checkpoint:PATH, relative to the current
    folder, a spec that builds the same agent again (a name copied from a printed table works in --agents)."""
    pytest.importorskip("torch")
    from agents.policy import CassinoPolicy
    from agents.ppo_agent import save_checkpoint
    from cassino_env.obs import obs_size

    rules = make_rules("classic")
    for run in ("run_a", "run_b"):
        save_checkpoint(tmp_path / run / "final.pt", CassinoPolicy(obs_dim=obs_size(2, 2), hidden=16, embed=8), rules)
    monkeypatch.chdir(tmp_path)
    r = evaluate(["checkpoint:run_a/final.pt", f"checkpoint:{tmp_path / 'run_b' / 'final.pt'}", "random"], rules,
                 deals=4, seed=0)
    assert r["agents"] == ["checkpoint:run_a/final.pt", "checkpoint:run_b/final.pt", "random"]
    assert {e["a"] for e in r["pairs"]} == {"checkpoint:run_a/final.pt", "checkpoint:run_b/final.pt"}
    assert "checkpoint:run_a/final.pt" in format_table(r)
    for name in r["agents"]:
        check_spec(name)
        assert make_agent(name, rules).name == name


def test_a_table_for_one_agent_counts_only_the_pairs_it_leaves_out() -> None:
    """format_table(only=NAME) shows NAME's pairs and counts the rest; a name in no pair shows every pair and counts
    none (it said "(and 3 pairs ... not shown)" under all three: a new-user trial, train/run.py final_evaluation)."""
    r = evaluate(["beginner", "random", "greedy"], "classic", deals=4, seed=0)
    mine = format_table(r, only="beginner")
    assert "(and 1 pair of the other agents against each other, not shown" in mine
    assert not any(line.split()[:2] == ["random", "greedy"] for line in mine.splitlines())
    assert sum(line.split()[:1] == ["beginner"] for line in mine.splitlines()) == 3  # 2 pairs and its rating
    every = format_table(r, only="checkpoint:elsewhere.pt")
    assert "not shown" not in every
    assert every.splitlines()[:7] == format_table(r).splitlines()[:7]  # the head line, the header and the 3 pairs


def test_versus_first_plays_only_the_first_agent_against_the_others() -> None:
    r = evaluate(["beginner", "random", "greedy"], "classic", deals=20, seed=0, versus_first=True)
    assert [(e["a"], e["b"]) for e in r["pairs"]] == [("beginner", "random"), ("beginner", "greedy")]
    assert r["win_matrix"][1][2] is None
    assert set(r["ratings"]) == {"beginner", "random", "greedy"}


def test_partners_are_seated_as_one_agent() -> None:
    from train.evaluate import seat_agents

    assert seat_agents(make_rules("cicera", 4)).tolist() == [[0, 1, 0, 1], [1, 0, 1, 0]]  # seats 0+2 vs 1+3
    six = seat_agents(make_rules("bga", 6))  # partners p and p + 3
    assert len(six) == 6 and (six[:, :3] == six[:, 3:]).all()
    assert seat_agents(make_rules("classic", 3)).tolist() == [list(a) for a in arrangements(make_rules("classic", 3))]


@pytest.mark.parametrize(("preset", "num_players"), [("classic", 2), ("matsuda", 2), ("cicera", 4), ("bga", 2),
                                                     ("bga", 6), ("stadium", 2), ("royal", 3)])
def test_the_bot_ladder_plays_every_preset(preset: str, num_players: int, tmp_path) -> None:
    """``cassino eval --agents ladder --preset P``: the ladder of scripted bots, every pair, in every preset."""
    from agents.registry import LADDER

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = cli.main(["eval", "--agents", "ladder", "--preset", preset, "--num-players", str(num_players),
                         "--deals", "4", "--seed", "1", "--batch-games", "64", "--json", "--out-dir", str(tmp_path)])
    assert code == 0
    report = json.loads(buf.getvalue())
    assert (report["rules"], report["num_players"]) == (preset, num_players)
    assert report["agents"] == list(LADDER)
    assert len(report["pairs"]) == len(LADDER) * (len(LADDER) - 1) // 2
    assert report["target"] == make_rules(preset, num_players).target  # 51 for cicera
    assert all(e["deals"] >= 4 for e in report["pairs"])


def test_eval_command_takes_a_preset_its_players_and_a_target(capsys, tmp_path) -> None:
    assert cli.main(["eval", "--agents", "random,greedy", "--preset", "cicera", "--num-players", "2",
                     "--deals", "4"]) == 2
    assert "allows num_players 4" in capsys.readouterr().err
    assert cli.main(["eval", "--agents", "random,greedy", "--preset", "nonesuch", "--deals", "4"]) == 2
    assert "unknown preset" in capsys.readouterr().err
    assert cli.main(["eval", "--agents", "random,greedy", "--preset", "matsuda", "--target", "51", "--deals", "4",
                     "--json", "--out-dir", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out)["target"] == 51


def test_seeds_outside_the_board_range_are_rejected(capsys) -> None:
    from train.evaluate import SEED_MAX, SEED_MIN, board_seed

    assert (SEED_MIN, SEED_MAX) == (0, 2**31 - 1)
    for bad in (SEED_MAX + 1, SEED_MIN - 1, 2**40, -(2**40)):
        with pytest.raises(ValueError, match="out of range"):
            evaluate(["random", "greedy"], "classic", deals=2, seed=bad)
    with pytest.raises(ValueError, match="board .* out of range"):
        board_seed(0, 2**32)
    assert board_seed(SEED_MAX, 2**32 - 1) == 2**63 - 1  # the largest board seed fits an int64
    assert board_seed(SEED_MIN, 0) == 0
    assert cli.main(["eval", "--agents", "random,greedy", "--deals", "2", "--seed", str(2**31)]) == 2
    assert "seed 2147483648 is out of range" in capsys.readouterr().err
    # the extremes of the range play and differ from each other
    a = evaluate(["random", "greedy"], "classic", deals=6, seed=SEED_MAX)
    b = evaluate(["random", "greedy"], "classic", deals=6, seed=SEED_MIN)
    assert a["pairs"][0]["deals"] >= 6 and b["pairs"][0]["deals"] >= 6
    assert strip_times(a)["pairs"] != strip_times(b)["pairs"]


def test_one_arena_for_training_checks_and_duplicate_boards() -> None:
    """train.arena.play_games is the game loop of both the evaluation during training (first deals only) and
    ``cassino eval`` (whole sessions): with the same seeds, seats and generator the first deals come out the same,
    and a session's logged matches add up to its winner."""
    from agents.registry import make_agent
    from train.arena import play_games

    rules = make_rules("bga", 3)
    agents = (make_agent("random", rules), make_agent("greedy", rules))
    seeds = np.array([5, 5, 9, 11], dtype=np.int64)  # a repeated seed: two arrangements of one board
    seat_agent = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0], [0, 0, 1]], dtype=np.int64)
    first = play_games(agents, rules, seeds, seat_agent, np.random.default_rng(3), until="deal")
    whole = play_games(agents, rules, seeds, seat_agent, np.random.default_rng(3), session_wins=2)
    assert first.deal_game.tolist() == [0, 1, 2, 3]  # every game's first deal ends on the same move
    np.testing.assert_array_equal(whole.deal_totals[:4], first.deal_totals)
    assert whole.deal_game[:4].tolist() == [0, 1, 2, 3]
    for g in range(len(seeds)):
        wins = np.bincount(whole.match_winner[whole.match_game == g], minlength=rules.num_sides)
        assert wins.max() == 2 and int(np.argmax(wins)) == whole.session_winner[g]


@pytest.mark.parametrize("n", [10, 13, 24, 25, 48, 399])
def test_wilson_interval_holds_the_observed_rate_at_the_ends(n: int) -> None:
    """All wins (or none) gave an upper end of 0.9999999999999999 below the rate 1.0 for these n (rounding)."""
    from train.stats import wilson_interval

    for k in (0, n // 2, n):
        low, high = wilson_interval(k, n)
        assert 0.0 <= low <= k / n <= high <= 1.0
