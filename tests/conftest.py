"""Shared test fixtures and helpers: paths to the test data, the preset runs every suite parametrizes over, random
legal moves. Kept light: nothing here imports torch or compiles the core.

The module-level names are plain constants and functions; a test module imports them with ``from conftest import
...`` (pytest puts tests/ on ``sys.path``, the default ``prepend`` import mode with no ``__init__.py`` in tests/).
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cassino_env.rules import PRESETS

#: Repository root (the folder holding pyproject.toml).
REPO_ROOT = Path(__file__).resolve().parent.parent
#: tests/data: positions and expected results in the docs/interchange.md format.
DATA_DIR = Path(__file__).resolve().parent / "data"
#: docs/rules.md section 7 worked cases as data (docs/rules.md 7 states them in words).
WORKED_CASES_PATH = DATA_DIR / "worked_cases.json"


#: A random-game sweep runs twice: a tenth of its games in the default suite (``quick``) and all of them behind the
#: ``slow`` marker (``full``: ``pytest -m slow``, CI runs both). A sweep test takes the parameter ``share`` and plays
#: ``sweep_count(n, share)`` of its ``n`` games; the quick games are the first of the full sweep's.
SWEEP = [pytest.param(0.1, id="quick"), pytest.param(1.0, id="full", marks=pytest.mark.slow)]


def sweep_count(n: int, share: float) -> int:
    """The number of games a sweep of ``n`` plays at ``share`` (:data:`SWEEP`): at least 2."""
    return max(2, round(n * share))


def kernel_cache_state(repo_root: Path = REPO_ROOT) -> str:
    """``"warm"`` when numba's cache of the package's kernels matches the sources (they load in about a second),
    else ``"cold"`` (they compile on first use). Reads the stamp that ``cassino_env.core._cacheguard`` writes, without
    importing the core (so numba is not loaded here)."""
    import importlib.util

    path = repo_root / "cassino_env" / "core" / "_cacheguard.py"
    spec = importlib.util.spec_from_file_location("_cassino_cacheguard_probe", path)
    if spec is None or spec.loader is None:
        return "cold"
    guard = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(guard)
    cache = path.parent / "__pycache__"
    try:
        stamp = (cache / guard.STAMP).read_text().strip()
        fresh = stamp == guard.sources_hash() and any(cache.glob("*.nbi"))
    except OSError:
        fresh = False
    if os.environ.get("NUMBA_CACHE_DIR"):  # numba then caches there: look for its index files
        fresh = fresh and any(Path(os.environ["NUMBA_CACHE_DIR"]).rglob("*.nbi"))
    return "warm" if fresh else "cold"


def kernel_notice() -> str:
    """The line that opens a test run: whether the first minutes go to compiling the kernels."""
    if kernel_cache_state() == "warm":
        return "cassino-rl: numba kernels cached and current: they load in about a second"
    return ("cassino-rl: numba kernels compile first (cold cache, or sources changed since it was built): about 1-2 "
            "minutes of CPU on 2 cores before the first tests move, then cached on disk")


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Say at the start of the run what the first minutes are spent on: pytest captures the compile notice that the
    kernels print on stderr, so without this line a cold run's first tests look stalled. (``-q`` hides the header:
    :func:`pytest_sessionstart` writes the line then.)"""
    return [kernel_notice()] if config.get_verbosity() >= 0 else []


def pytest_sessionstart(session: pytest.Session) -> None:
    """Under ``-q`` (``pytest -q``, CI) the header is not printed: write the kernel line to the terminal anyway."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and session.config.get_verbosity() < 0:
        reporter.write_line(kernel_notice())


def _cpu_seconds() -> float:
    import resource

    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """With ``CASSINO_CPU_LOG=FILE``, append each test's CPU seconds (this process and the subprocesses it waited
    for; set-up and teardown included) and its id to FILE as it finishes: what the suite's CPU time goes to,
    measured even on a loaded machine and even from a run cut short."""
    path = os.environ.get("CASSINO_CPU_LOG")
    start = _cpu_seconds() if path else 0.0
    yield
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(f"{_cpu_seconds() - start:.2f}\t{item.nodeid}\n")


#: The default suite's CPU budget: 3 minutes (user + system, subprocesses included). Measured with CASSINO_CPU_LOG on
#: 2026-12-01 (2,209 tests, 319 s of CPU, of them 302 s in the tests and 17 s collecting), these tests took 2 s of CPU
#: or more each, 160 s together; they run with the slow tests (``pytest -m slow``, CI's second pass), which leaves
#: about 2.5 minutes. A quick sweep (:data:`SWEEP`) is never listed: its share stays in the default run by design. An
#: id that no longer exists marks nothing.
CPU_HEAVY = frozenset({
    "tests/test_aec.py::test_pettingzoo_api_test[deal-classic-2p-moves]",
    "tests/test_aec.py::test_pettingzoo_api_test[deal-matsuda-2p-moves]",
    "tests/test_bench.py::test_serial_and_parallel_drivers_play_the_same_games[matsuda]",
    "tests/test_browser.py::test_play_a_deal_then_replay_it",
    "tests/test_compile_notice.py::test_notice_when_a_kernel_compiles_and_silence_when_it_is_cached",
    "tests/test_core.py::test_overflow_never_loses_all_moves",
    "tests/test_endgame.py::test_solve_agrees_with_brute_force_minimax[bga]",
    "tests/test_endgame.py::test_solve_agrees_with_brute_force_minimax[classic]",
    "tests/test_endgame.py::test_solve_agrees_with_brute_force_minimax[matsuda]",
    "tests/test_endgame.py::test_solve_agrees_with_brute_force_minimax[royal]",
    "tests/test_endgame.py::test_solve_agrees_with_brute_force_minimax[stadium]",
    "tests/test_endgame_hostile.py::test_a_crowded_table_is_searched_within_the_budget[classic]",
    "tests/test_eval_ray.py::test_without_boards_per_task_each_pair_is_one_generator_in_waves",
    "tests/test_layering.py::test_no_module_imports_another_modules_private_names",
    "tests/test_markers.py::test_default_run_leaves_the_slow_tests_out_and_slow_runs_only_them",
    "tests/test_match_value.py::test_a_tiny_run_trains_on_the_match_objective",
    "tests/test_omp_wait.py::test_a_users_own_wait_policy_wins",
    "tests/test_omp_wait.py::test_torch_loads_with_passive_waiting[eval-network-agent]",
    "tests/test_omp_wait.py::test_torch_loads_with_passive_waiting[ppo_agent]",
    "tests/test_omp_wait.py::test_torch_loads_with_passive_waiting[ray-rollout-worker]",
    "tests/test_omp_wait.py::test_torch_loads_with_passive_waiting[training]",
    "tests/test_play.py::test_cli_play_with_piped_input",
    "tests/test_plot.py::test_a_short_run_logs_intervals_and_labels_what_it_prints",
    "tests/test_reference_invariants.py::test_classic_moves_match_a_brute_force_reading",
    "tests/test_reliability_runs.py::test_fuzz_malformed_checkpoint_fields_always_give_a_checkpoint_error",
    "tests/test_train_failures.py::test_ctrl_c_during_training_saves_the_run_and_prints_the_resume_command",
    "tests/test_train_failures.py::test_ctrl_c_twice_stops_at_once_with_one_line",
    "tests/test_vector.py::test_parallel_equals_serial[cicera-4]",
    "tests/test_vector.py::test_parallel_equals_serial[classic-4]",
})


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The notebooks (run cell by cell by nbmake) and the :data:`CPU_HEAVY` tests are long tests too: marked
    ``slow`` before ``-m`` selects."""
    for item in items:
        if item.path.suffix == ".ipynb" or item.nodeid in CPU_HEAVY:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root, e.g. as the working directory of a subprocess."""
    return REPO_ROOT


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The tests/data folder."""
    return DATA_DIR


@pytest.fixture(scope="session")
def worked_cases_path() -> Path:
    """Path of tests/data/worked_cases.json."""
    return WORKED_CASES_PATH


@pytest.fixture(scope="session")
def worked_cases() -> list[dict[str, Any]]:
    """The worked cases, each ``{"id", "note", "position", "legal", "illegal", ...}`` (see the file's "about")."""
    return json.loads(WORKED_CASES_PATH.read_text(encoding="utf-8"))["cases"]


#: Every docs/rules.md 6 preset with each player count it supports, as ``(preset, num_players)``.
PRESET_PLAYERS: list[tuple[str, int]] = [(preset, n) for preset, (counts, _) in PRESETS.items() for n in counts]


def preset_ids(runs: list[tuple[str, int]]) -> list[str]:
    """Parametrize ids ``"<preset>-<n>p"`` of ``(preset, num_players)`` runs."""
    return [f"{p}-{n}p" for p, n in runs]


#: The ids of :data:`PRESET_PLAYERS` (``"classic-2p"``, ...).
PRESET_IDS: list[str] = preset_ids(PRESET_PLAYERS)


def random_action(obs: dict, rnd: random.Random) -> int:
    """A uniformly random legal action of one AEC observation (its ``action_mask``), drawn with ``rnd``."""
    legal = np.flatnonzero(obs["action_mask"])
    return int(legal[rnd.randrange(len(legal))])


def permute_hidden(pos: dict, viewer: int, rnd: random.Random, rules) -> dict:
    """The interchange position ``pos`` with every card the viewer cannot see (other hands, the stock) dealt anew,
    sizes kept.

    Deals that break what the viewer can infer -- a build's owner holds a card that captures it (docs/rules.md 4.4; an
    ace for a build of 14 where ``ace_high``) -- are drawn again: they are not positions of the game.
    """
    from cassino_env.determinize import capture_values  # imports the core: only when a test asks

    caps = capture_values(rules)
    P = len(pos["hands"])
    hidden = [c for q in range(P) if q != viewer for c in pos["hands"][q]] + list(pos["stock"])
    while True:
        rnd.shuffle(hidden)
        hands = [list(h) for h in pos["hands"]]
        k = 0
        for q in range(P):
            if q != viewer:
                hands[q] = hidden[k:k + len(pos["hands"][q])]
                k += len(pos["hands"][q])
        if all(any(caps[c, value] for c in hands[owner]) for _, value, owner in pos["builds"]):
            return {**pos, "hands": hands, "stock": hidden[k:]}
