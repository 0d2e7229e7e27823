"""cassino eval --ray: the pairs of a tournament as Ray tasks give the local run's report (train/evaluate.py); with
--boards-per-task every chunk of boards of a pair is a task, and the report is the local chunked run's."""

from __future__ import annotations

import json

import numpy as np
import pytest
import ray

from agents.bots import make_bot
from agents.registry import make_agent
from cassino_env.rules import make_rules
from train.arena import chunks_kept, merge_records, play_chunk, play_pair, play_pair_in_chunks
from train.cli import main as cli_main
from train.evaluate import evaluate, summarize_pair
from train.records import GameRecorder

#: what may differ between two runs of one tournament: how long they took
TIMINGS = ("seconds", "deals_per_minute", "seconds_per_decision")  # wall times differ run to run


def without_timings(report: dict) -> dict:
    out = {k: v for k, v in report.items() if k not in TIMINGS}
    out["pairs"] = [{k: v for k, v in p.items() if k not in TIMINGS} for p in report["pairs"]]
    return out


@pytest.mark.slow  # starts a Ray instance and its workers (first: Ray is not running yet)
def test_cassino_eval_ray_prints_the_local_report(tmp_path, capsys):
    args = ["eval", "--agents", "random,greedy", "--deals", "20", "--seed", "5", "--json"]
    assert cli_main([*args, "--out-dir", str(tmp_path / "a")]) == 0
    local = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert cli_main([*args, "--out-dir", str(tmp_path / "b"), "--ray", "local"]) == 0
    remote = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert without_timings(remote) == without_timings(local)


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.mark.slow  # starts a Ray instance and its workers
def test_eval_on_ray_equals_the_local_run(local_ray):
    rules = make_rules("classic", 3)
    # random draws from the pair's generator; an Agent object travels to the workers as it is
    specs = ["random", "greedy", make_bot("beginner", rules)]
    local = evaluate(specs, rules, deals=30, seed=11)
    remote = evaluate(specs, rules, deals=30, seed=11, ray_address="auto")
    assert without_timings(remote) == without_timings(local)
    assert len(local["pairs"]) == 3 and local["pairs"][0]["deals"] >= 30
    # every agent's seconds per decision is timed on the workers and reported (it was None on Ray)
    spd = remote["seconds_per_decision"]
    assert set(spd) == set(local["seconds_per_decision"]) and all(v is not None and v >= 0 for v in spd.values())


def test_ray_does_not_take_game_records():
    with pytest.raises(ValueError, match="ray_address"):
        evaluate(["random", "greedy"], deals=4, seed=0, ray_address="local", recorder=object())


# --- chunks of boards (boards_per_task) -------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -3, 1.5, True, "2", 2**32 + 1])
def test_boards_per_task_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match="boards_per_task"):
        evaluate(["random", "greedy"], deals=4, seed=0, boards_per_task=bad)


def test_cassino_eval_refuses_a_bad_boards_per_task(tmp_path, capsys):
    code = cli_main(["eval", "--agents", "random,greedy", "--deals", "4", "--boards-per-task", "0", "--no-progress",
                     "--out-dir", str(tmp_path / "ev")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("error: boards_per_task") == 1 and "Traceback" not in err, err
    assert not (tmp_path / "ev").exists()


def test_chunks_are_whole_independent_and_numbered_globally():
    rules = make_rules("classic")
    a, b = make_agent("random", rules), make_agent("greedy", rules)
    rec = play_pair_in_chunks(a, b, rules, 50, 9, 1, 3)
    boards = len(rec.deals)
    assert boards % 3 == 0 and sum(rec.deals) >= 50
    assert sum(rec.deals[: boards - 3]) < 50  # it stops after the first chunk that reaches the budget
    assert chunks_kept([sum(rec.deals[c: c + 3]) for c in range(0, boards, 3)], 50) == boards // 3
    assert sorted({board for board, _, _ in rec.results}) == list(range(boards))
    # each chunk depends only on (seed, pair, chunk): played alone, in any order, it is the same
    alone = [play_chunk(a, b, rules, 9, 1, c, 3) for c in reversed(range(boards // 3))][::-1]
    merged = merge_records(alone)
    for name in ("match_wins_a", "matches", "deals", "deal_wins_a", "margin_a", "results", "sessions",
                 "session_wins_a"):
        assert getattr(merged, name) == getattr(rec, name), name
    # batch_games splits a chunk into batches drawing from the chunk's one generator: deterministic bots see no change
    small = play_chunk(make_agent("beginner", rules), b, rules, 9, 1, 0, 3, batch_games=2)
    big = play_chunk(make_agent("beginner", rules), b, rules, 9, 1, 0, 3)
    assert small.results == big.results and small.deals == big.deals


def test_without_boards_per_task_each_pair_is_one_generator_in_waves():
    """How docs/evaluation.md's figures were measured: pair k is play_pair with default_rng([seed, k])."""
    rules = make_rules("classic")
    specs = ["random", "greedy", "pimc:4"]
    report = evaluate(specs, rules, deals=12, seed=4)
    agents = [make_agent(s, rules) for s in specs]
    for k, (i, j) in enumerate([(0, 1), (0, 2), (1, 2)]):
        rec = play_pair(agents[i], agents[j], rules, 12, 4, np.random.default_rng([4, k]))
        want = summarize_pair(specs[i], specs[j], rec)
        assert without_timings({"pairs": [report["pairs"][k]]}) == without_timings({"pairs": [want]})


def test_chunked_local_run_writes_game_records():
    games = []
    report = evaluate(["random", "greedy"], deals=20, seed=2, boards_per_task=2, recorder=GameRecorder(games.append))
    pair = report["pairs"][0]
    assert len(games) == pair["boards"] * 2 and pair["boards"] % 2 == 0
    assert sum(len(g["deals"]) for g in games) == pair["deals"] >= 20


@pytest.mark.slow  # starts a Ray instance and its workers
def test_cassino_eval_ray_with_chunks_prints_the_local_chunked_report(tmp_path, capsys):
    args = ["eval", "--agents", "random,greedy", "--deals", "30", "--seed", "5", "--json", "--boards-per-task", "2"]
    assert cli_main([*args, "--out-dir", str(tmp_path / "a")]) == 0
    local = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert cli_main([*args, "--out-dir", str(tmp_path / "b"), "--ray", "local"]) == 0
    remote = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert without_timings(remote) == without_timings(local)
    assert local["pairs"][0]["boards"] % 2 == 0 and local["pairs"][0]["deals"] >= 30


@pytest.mark.slow  # starts a Ray instance and its workers
def test_chunked_eval_on_ray_equals_the_local_chunked_run(local_ray):
    rules = make_rules("classic")
    # pimc and random draw from their chunk's generator (determinisations, random moves); greedy and the Agent object
    # do not
    specs = ["pimc:8", "random", "greedy", make_bot("beginner", rules)]
    local = evaluate(specs, rules, deals=16, seed=13, boards_per_task=1)
    remote = evaluate(specs, rules, deals=16, seed=13, boards_per_task=1, ray_address="auto")
    assert without_timings(remote) == without_timings(local)
    assert all(v is not None and v >= 0 for v in remote["seconds_per_decision"].values())
    assert len(local["pairs"]) == 6 and all(p["deals"] >= 16 for p in local["pairs"])
    # the chunks' generators are not the pair's: the stochastic pairs' draws differ from the unchunked run
    unchunked = evaluate(specs[:2], rules, deals=16, seed=13)
    assert without_timings(unchunked)["pairs"][0] != without_timings(local)["pairs"][0]


@pytest.mark.slow  # starts a Ray instance and its workers
def test_one_pair_on_ray_runs_as_several_tasks(local_ray, monkeypatch):
    submitted = []
    real_remote = ray.remote

    def counting_remote(*args, **kwargs):
        if kwargs or len(args) != 1 or getattr(args[0], "__name__", "") != "_chunk_task":
            return real_remote(*args, **kwargs)  # Ray's own uses (ray.remote(num_cpus=0), actors)
        task = real_remote(args[0])

        class Counted:
            def remote(self, *args):
                submitted.append((args[4], args[5]))  # (pair, chunk) of train.evaluate._chunk_task
                return task.remote(*args)

        return Counted()

    monkeypatch.setattr(ray, "remote", counting_remote)
    rules = make_rules("classic")
    specs = ["pimc:8", "advanced"]
    remote = evaluate(specs, rules, deals=30, seed=21, boards_per_task=1, ray_address="auto")
    local = evaluate(specs, rules, deals=30, seed=21, boards_per_task=1)
    assert without_timings(remote) == without_timings(local)
    boards = local["pairs"][0]["boards"]
    assert boards >= 3  # one pair, several chunks: several tasks, two at a time on the two CPUs
    assert sorted(submitted)[:boards] == [(0, c) for c in range(boards)]
    assert len(submitted) <= boards + 3  # a few chunks launched ahead at most, discarded
