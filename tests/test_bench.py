"""`cassino bench` stays honest: the machine with every table, both one-thread drivers timed (the better reported),
OpenSpiel's hearts as a peer in the same process (or a clear line when it is missing); and the core's drivers: one
per move generator, so classic play compiles only the classic one, with the serial and parallel drivers playing the
same games."""

from __future__ import annotations

import builtins
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cassino_env import bench, core
from cassino_env.rules import make_rules


def test_rows_carry_the_machine_and_both_one_thread_drivers(capsys: pytest.CaptureFixture[str]) -> None:
    rows = bench.run(batch=(8,), seconds=0.05, json=True)
    (row,) = rows
    assert row["cpu"] and row["cores"] >= 1 and 1 <= row["cores_usable"] <= row["cores"]
    assert row["path"] in ("serial", "parallel")
    rates = {"serial": row["serial_steps_per_second"], "parallel": row["parallel1_steps_per_second"]}
    assert min(rates.values()) > 0
    assert row["steps_per_second"] == pytest.approx(max(rates.values()))
    assert rates[row["path"]] == max(rates.values())
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert printed["cpu"] == row["cpu"] and printed["path"] == row["path"]


def test_the_text_table_starts_with_the_machine_line(capsys: pytest.CaptureFixture[str]) -> None:
    bench.run(batch=(4,), seconds=0.02, threads=2)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("# machine: ") and "logical cores" in lines[0]
    assert bench.machine()["cpu"] in lines[0]
    assert "threads=2" in lines[1] and "steps/s" in lines[1]


def test_peers_time_openspiel_hearts_and_print_the_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pyspiel")
    rows = bench.run(batch=(4,), seconds=0.05, peers=True)
    out = capsys.readouterr().out
    assert "peer openspiel hearts" in out and "x openspiel hearts" in out
    peer = bench._bench_hearts(0.05)
    assert peer is not None and peer["steps"] > 0 and peer["game"] == "hearts"
    assert rows[0]["ratio_to_openspiel_hearts"] > 0


def test_peers_say_so_when_openspiel_is_missing(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    real_import = builtins.__import__

    def no_pyspiel(name: str, *args: object, **kwargs: object) -> object:
        if name == "pyspiel":
            raise ImportError("No module named 'pyspiel'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyspiel)
    assert bench._bench_hearts(0.01) is None
    rows = bench.run(batch=(4,), seconds=0.02, peers=True, json=True)
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert last == {"engine": "openspiel", "game": "hearts", "available": False, "message": last["message"]}
    assert "not installed" in last["message"] and "ratio_to_openspiel_hearts" not in rows[0]


@pytest.mark.parametrize("preset", ["classic", "matsuda"])
def test_serial_and_parallel_drivers_play_the_same_games(preset: str) -> None:
    """The serial driver passes its arrays down borrowed (no reference counting): same games as the parallel one."""
    a = core.init(make_rules(preset), np.arange(40))
    b = a.copy()
    ra = np.arange(40, dtype=np.uint64)
    rb = ra.copy()
    assert core.rollout(a, 300, ra, parallel=False) == core.rollout(b, 300, rb, parallel=True)
    np.testing.assert_array_equal(ra, rb)
    for name in ("_u64", "_i8", "_i16", "_i64", "_m8", "_mvc"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_classic_play_compiles_only_the_classic_driver(repo_root: Path, tmp_path: Path) -> None:
    code = ("import numpy as np; from cassino_env import core; from cassino_env.core import _kernels as K; "
            "from cassino_env.rules import make_rules; st = core.init(make_rules('classic'), np.arange(3)); "
            "core.rollout(st, 5, np.zeros(3, np.uint64)); "
            "print(len(K.run_serial_classic.signatures), len(K.run_serial_general.signatures), "
            "len(K.run_parallel_classic.signatures), len(K.run_parallel_general.signatures))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=repo_root, capture_output=True, text=True, timeout=600,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "0", "0", "0"]


def test_the_vector_rows_say_they_time_the_copy_free_path(capsys: pytest.CaptureFixture[str]) -> None:
    from cassino_env.bench_aec_vector import bench_vector

    (row,) = bench.run(engine="vector", batch=(8,), seconds=0.05)
    assert row["copy"] is False and row["steps"] > 0
    assert "[copy=False]" in capsys.readouterr().out.splitlines()[1]
    assert bench_vector(batch=8, seconds=0.02, copy=True)["copy"] is True
