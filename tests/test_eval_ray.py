"""cassino eval --ray: the pairs of a tournament as Ray tasks give the local run's report (train/evaluate.py)."""

from __future__ import annotations

import json

import pytest
import ray

from agents.bots import make_bot
from cassino_env.rules import make_rules
from train.cli import main as cli_main
from train.evaluate import evaluate

#: what may differ between two runs of one tournament: how long they took
TIMINGS = ("seconds", "deals_per_minute")


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


def test_ray_does_not_take_game_records():
    with pytest.raises(ValueError, match="ray_address"):
        evaluate(["random", "greedy"], deals=4, seed=0, ray_address="local", recorder=object())
