"""The suite's split (pyproject.toml addopts, tests/conftest.py): a plain `pytest` leaves the long tests out, and
`pytest -m slow` runs exactly them: the full random-game sweeps, the training runs and the notebooks."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path


def _collected(repo_root: Path, *args: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                          cwd=repo_root, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return {line for line in proc.stdout.splitlines() if "::" in line}


def test_default_run_leaves_the_slow_tests_out_and_slow_runs_only_them(repo_root: Path) -> None:
    paths = ("tests/test_differential.py", "notebooks")
    default = _collected(repo_root, *paths)
    slow = _collected(repo_root, *paths, "-m", "slow")
    everything = _collected(repo_root, *paths, "-m", "")
    assert default and slow and not default & slow and default | slow == everything
    assert "notebooks/learning_curves.ipynb::learning_curves.ipynb" in slow
    sweep = "tests/test_differential.py::test_presets_match_reference[{}-matsuda-2p]"
    assert sweep.format("full") in slow and sweep.format("quick") in default
    full = re.compile(r"[\[-]full[\]-]")  # the "full" value of conftest.SWEEP in a test id
    assert not any(full.search(t) for t in default)
    assert sum(bool(full.search(t)) for t in slow) == sum("quick" in t for t in default)  # each sweep twice


def test_training_runs_are_marked_slow() -> None:
    import test_train

    for test in (test_train.test_tiny_training_run_end_to_end, test_train.test_every_preset_config_trains):
        assert "slow" in {m.name for m in getattr(test, "pytestmark", [])}, test.__name__
