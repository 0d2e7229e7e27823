"""cassino eval --ray on a local two-node Ray cluster (ray.cluster_utils.Cluster): the local run's report, with
pairs as tasks and with chunks of boards as tasks (--boards-per-task)."""

from __future__ import annotations

import pytest

ray = pytest.importorskip("ray")  # the ray extra; CI installs it (the dev extra)

from ray.cluster_utils import Cluster  # noqa: E402

from cassino_env.rules import make_rules  # noqa: E402
from train.evaluate import evaluate  # noqa: E402

TIMINGS = ("seconds", "deals_per_minute", "seconds_per_decision")  # the last: None on Ray


def without_timings(report: dict) -> dict:
    out = {k: v for k, v in report.items() if k not in TIMINGS}
    out["pairs"] = [{k: v for k, v in p.items() if k not in TIMINGS} for p in report["pairs"]]
    return out


@pytest.mark.slow  # starts two Ray nodes and their workers
def test_eval_on_a_two_node_cluster_equals_the_local_run():
    rules = make_rules("classic")
    specs = ["random", "greedy", "beginner", "advanced"]
    local = evaluate(specs, rules, deals=24, seed=3)
    # chunks of boards (--boards-per-task): one task per chunk, spread over both nodes; pimc and random draw from
    # their chunk's generator
    chunked_specs = ["pimc:4", "random", "advanced"]
    chunked = evaluate(chunked_specs, rules, deals=12, seed=3, boards_per_task=1)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
        assert sum(1 for n in ray.nodes() if n["Alive"]) == 2
        remote = evaluate(specs, rules, deals=24, seed=3, ray_address=cluster.address)
        chunked_remote = evaluate(chunked_specs, rules, deals=12, seed=3, boards_per_task=1,
                                  ray_address=cluster.address)
    finally:
        ray.shutdown()
        cluster.shutdown()
    assert without_timings(remote) == without_timings(local)
    assert len(local["pairs"]) == 6
    assert without_timings(chunked_remote) == without_timings(chunked)
    assert len(chunked["pairs"]) == 3 and all(p["boards"] >= 2 for p in chunked["pairs"])


@pytest.mark.slow  # imports Ray and looks for a running instance
def test_no_cluster_at_the_address_is_a_clear_error(capsys):
    from train.cli import main as cli_main

    assert not ray.is_initialized()
    with pytest.raises(ValueError, match="ray_address: cannot start or reach a Ray cluster at 'auto'"):
        evaluate(["random", "greedy"], deals=4, seed=0, ray_address="auto")
    assert not ray.is_initialized()
    assert cli_main(["eval", "--agents", "random,greedy", "--deals", "4", "--ray", "auto", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("error: ray_address") == 1 and "Traceback" not in err


def test_an_address_where_no_cluster_answers_is_one_error_line_at_once(tmp_path, capsys):
    """A HOST:PORT where nothing listens is refused after one TCP connect (ray.init would retry it for minutes)."""
    import socket
    import time

    from train.cli import main as cli_main

    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"127.0.0.1:{port}"
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"ray_address: no Ray cluster answers at '127\.0\.0\.1:\d+'"):
        evaluate(["random", "greedy"], deals=4, seed=0, ray_address=address)
    assert cli_main(["eval", "--agents", "random,greedy", "--deals", "4", "--ray", address, "--no-progress",
                     "--out-dir", str(tmp_path / "ev")]) == 2
    assert time.perf_counter() - t0 < 30
    err = capsys.readouterr().err
    assert err.count("error: ray_address: no Ray cluster answers") == 1 and "Traceback" not in err
    assert not ray.is_initialized() and not (tmp_path / "ev").exists()
