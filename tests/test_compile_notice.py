"""The first use of the kernels is not a silent wait: one line on stderr when numba starts compiling them, once per
process, and nothing when they come from the cache (cassino_env/core/_cacheguard.py, COMPILE_NOTICE)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cassino_env.core._cacheguard import COMPILE_NOTICE

NOTICE_START = COMPILE_NOTICE.split("{")[0]  # "cassino-rl: compiling "


def _run(code: str, cache_dir: Path, repo_root: Path, timeout: int) -> subprocess.CompletedProcess:
    """``python -c code`` with numba's cache in ``cache_dir`` (NUMBA_CACHE_DIR: an empty folder is a cold cache)."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    proc = subprocess.run([sys.executable, "-c", code], cwd=repo_root, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_notice_when_a_kernel_compiles_and_silence_when_it_is_cached(tmp_path: Path, repo_root: Path) -> None:
    """One small kernel (mix64) with a cold cache: the notice, once, before the kernel's result; then the same with
    the cache it left: no notice. Importing the core compiles nothing, so it prints nothing either."""
    code = ("import numpy as np; from cassino_env.core import _bits; "
            "print(int(_bits.mix64(np.uint64(5))), flush=True); print(int(_bits.mix64(np.uint64(6))), flush=True)")
    cold = _run(code, tmp_path, repo_root, timeout=240)
    assert cold.stderr.count(NOTICE_START) == 1, cold.stderr
    assert COMPILE_NOTICE.format(what="the rules kernels") in cold.stderr.splitlines()
    assert any(tmp_path.rglob("*.nbi")), "numba wrote no cache to NUMBA_CACHE_DIR"
    warm = _run(code, tmp_path, repo_root, timeout=240)
    assert NOTICE_START not in warm.stderr, warm.stderr
    assert warm.stdout == cold.stdout
    imported = _run("import cassino_env.core", tmp_path / "empty", repo_root, timeout=240)
    assert NOTICE_START not in imported.stderr


def test_notice_names_the_kernels_of_the_package_only() -> None:
    from cassino_env.core import _cacheguard

    assert _cacheguard._kernel_group("cassino_env.core._kernels") == "the rules kernels"
    assert _cacheguard._kernel_group("cassino_env.obs") == "the environment kernels"
    assert _cacheguard._kernel_group("someone_elses.module") is None
    assert _cacheguard._kernel_group("cassino_envx") is None


@pytest.mark.slow
def test_a_cold_first_use_prints_the_notice_once(tmp_path: Path, repo_root: Path) -> None:
    """A whole first use, every kernel compiled (1-2 minutes): `cassino bench` prints the notice exactly once."""
    code = "from train.cli import main; main(['bench', '--batch', '4', '--seconds', '0.2'])"
    cold = _run(code, tmp_path, repo_root, timeout=900)
    assert cold.stderr.count(NOTICE_START) == 1, cold.stderr
    assert "steps/s" in cold.stdout or "moves" in cold.stdout
