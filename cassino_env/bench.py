"""Throughput benchmark: random legal play, in steps per second (one step = one player's move in one game).

>>> from cassino_env.bench import run
>>> rows = run(batch=(8,), seconds=0.05, json=True)  # doctest: +SKIP

``engine="core"`` times the batched core (:mod:`cassino_env.core`). By default (``mode="kernel"``) each timed call
plays a block of random moves in every game inside one numba call (``core.rollout``: the random choice is made in
numba from per-game splitmix64 counters seeded from ``seed``), so the figure is the engine's own speed; ``mode="api"``
instead calls ``core.step`` once per batch step from Python with actions from ``core.random_actions``, which adds
the Python call overhead an RL loop pays (a few microseconds per call, large at small batches). ``threads > 1``
uses the ``parallel=True`` kernels over ``threads`` numba threads (``numba.set_num_threads``). JIT compilation is
excluded: every configuration is warmed up before it is timed.

With one thread (``threads=1``, kernel mode) both batch drivers are timed, the serial one and the ``parallel=True``
one on one numba thread, in alternating blocks; the row gives the better of the two (``path``) and both figures
(``serial_steps_per_second``, ``parallel1_steps_per_second``).

``engine="reference"`` plays the same random games with the one-game reference engine
(:mod:`cassino_env.reference`) through :func:`_bench_reference`. ``engine="aec"`` and ``engine="vector"`` time the
environments over the core instead, through :mod:`cassino_env.bench_aec_vector`.

Every table starts with the machine it ran on (:func:`machine`: CPU model, cores; in JSON every row carries it), and
with ``peers=True`` OpenSpiel's ``hearts`` (when ``open_spiel`` is installed) is timed in the same process after the
rows, and each row's ratio to it is printed (:func:`_bench_hearts`).

The command line is ``cassino bench`` (``cassino bench --help``), which calls :func:`run`.
"""

from __future__ import annotations

import json as _json
import os
import platform
import time
from collections.abc import Iterable
from typing import Any

import numpy as np

from .errors import CassinoError, excerpt
from .rules import make_rules

#: The largest batch :func:`run` times, per engine: the core's state is about 2.6 KB a game (1M games: 2.7 GB), the
#: vector environment's observations about 75 KB a game (65,536 games: 4.9 GB), the reference engine's Python games
#: a few KB each.
MAX_BATCH = {"core": 1 << 20, "vector": 1 << 16, "reference": 1 << 16, "aec": 1 << 16}
#: The longest time :func:`run` spends at one batch size, seconds.
MAX_SECONDS = 3600.0


class BenchError(CassinoError):
    """A benchmark option out of range (a batch size, the seconds, the threads, the engine): names the option."""


def check_options(engine: str, batch: Iterable[int], seconds: float, threads: int, mode: str = "kernel") -> list[int]:
    """The batch sizes of :func:`run`, with its options checked before anything is compiled or timed.

    Raises:
        BenchError: naming the option: an unknown engine or mode, a batch size not an integer
            1..:data:`MAX_BATCH` (0 and -5 hung, 10**11 was a memory traceback), seconds not a finite number in
            (0, :data:`MAX_SECONDS`] (inf never ended; nan, -1 and 0 were taken), threads not an integer
            1..numba's ``NUMBA_NUM_THREADS`` (1000 was a numba traceback).
    """
    import numba

    if engine not in MAX_BATCH:
        raise BenchError(f"engine: expected one of {', '.join(MAX_BATCH)}, got {excerpt(engine)}")
    if mode not in ("kernel", "api"):
        raise BenchError(f"mode: expected 'kernel' or 'api', got {excerpt(mode)}")
    sizes = list(batch)
    top = MAX_BATCH[engine]
    if not sizes:
        raise BenchError("batch: expected at least one batch size")
    for b in sizes:
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or not 1 <= b <= top:
            raise BenchError(f"batch: expected batch sizes 1..{top:,} (games stepped together, engine {engine}), got "
                             f"{excerpt(b)}")
    if engine == "aec" and 1 not in sizes:  # the other sizes are skipped: nothing would be timed
        raise BenchError(f"batch: the aec engine plays one game at a time, so only batch 1 is timed; got "
                         f"{', '.join(str(int(b)) for b in sizes[:8])}")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float, np.floating, np.integer)) or not (
            0 < float(seconds) <= MAX_SECONDS):
        raise BenchError(f"seconds: expected a number of seconds in (0, {MAX_SECONDS:g}] per batch size, got "
                         f"{excerpt(seconds)}")
    most = int(numba.config.NUMBA_NUM_THREADS)
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or not 1 <= threads <= most:
        raise BenchError(f"threads: expected 1..{most} (numba's NUMBA_NUM_THREADS on this machine), got "
                         f"{excerpt(threads)}")
    return [int(b) for b in sizes]


def machine() -> dict[str, Any]:
    """The machine a figure comes from: ``{"cpu": model name, "cores": logical CPUs, "cores_usable": CPUs this
    process may run on, "python", "numba"}`` (the CPU model from ``/proc/cpuinfo`` on Linux, else
    :func:`platform.processor`)."""
    import numba

    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    cores = os.cpu_count() or 0
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = cores
    return {"cpu": cpu or platform.processor() or platform.machine(), "cores": cores, "cores_usable": usable,
            "python": platform.python_version(), "numba": numba.__version__}


def _machine_line(info: dict[str, Any]) -> str:
    return (f"# machine: {info['cpu']}, {info['cores']} logical cores ({info['cores_usable']} usable), "
            f"Python {info['python']}, numba {info['numba']}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")


def _emit(row: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(_json.dumps(row), flush=True)
    else:
        path = f" [{row['path']} driver]" if "path" in row else ""
        path += f" [copy={row['copy']}]" if "copy" in row else ""
        print(f"{row['engine']:>9} {row['preset']} P={row['num_players']} threads={row['threads']} "
              f"B={row['batch']:>5}: {row['steps_per_second']:>13,.0f} steps/s ({row['steps']} steps in "
              f"{row['seconds']:.2f} s){path}", flush=True)


def _block(core, st, rng, parallel: bool) -> int:
    """Moves per game per timed call: grown until one call takes >= 50 ms (so per-call and thread wake-up costs are
    negligible), after a warm-up call that also compiles."""
    block = 4
    core.rollout(st, block, rng, parallel=parallel)
    while block < 10_000_000:
        t0 = time.perf_counter()
        core.rollout(st, block, rng, parallel=parallel)
        if time.perf_counter() - t0 >= 0.05:
            break
        block *= 4
    return block


def _bench_core_one_thread(rules, batch: int, seconds: float, seed: int) -> dict[str, Any]:
    """Both batch drivers on one thread (serial, and ``parallel=True`` with one numba thread), timed in alternating
    blocks for ``seconds`` together; returns the better one's ``steps``, ``seconds``, ``path`` and both rates."""
    import numba

    from . import core

    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        st = core.init(rules, np.arange(batch, dtype=np.int64) + seed)
        rng = (np.arange(batch, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) ^ np.uint64(seed)
        blocks = {False: _block(core, st, rng, False), True: _block(core, st, rng, True)}
        steps = {False: 0, True: 0}
        spent = {False: 0.0, True: 0.0}
        while spent[False] + spent[True] < seconds or min(steps.values()) == 0:
            for parallel in (False, True):
                t0 = time.perf_counter()
                steps[parallel] += core.rollout(st, blocks[parallel], rng, parallel=parallel)
                spent[parallel] += time.perf_counter() - t0
    finally:
        numba.set_num_threads(before)
    rate = {k: steps[k] / spent[k] for k in steps}
    best = rate[True] > rate[False]
    return {"steps": steps[best], "seconds": spent[best], "path": "parallel" if best else "serial",
            "serial_steps_per_second": rate[False], "parallel1_steps_per_second": rate[True]}


def _bench_core(rules, batch: int, seconds: float, threads: int, mode: str, seed: int) -> tuple[int, float]:
    import numba

    from . import core

    parallel = threads > 1
    if parallel:
        numba.set_num_threads(threads)
    st = core.init(rules, np.arange(batch, dtype=np.int64) + seed)
    rng = (np.arange(batch, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) ^ np.uint64(seed)
    if mode == "kernel":
        block = _block(core, st, rng, parallel)
        steps = 0
        t0 = time.perf_counter()
        while True:
            steps += core.rollout(st, block, rng, parallel=parallel)
            elapsed = time.perf_counter() - t0
            if elapsed >= seconds:
                return steps, elapsed
    if mode != "api":
        raise ValueError(f"mode must be 'kernel' or 'api', got {mode!r}")
    for _ in range(3):  # warm-up (compiles step and random_actions)
        core.step(st, core.random_actions(st, rng), parallel=parallel)
    steps = 0
    t0 = time.perf_counter()
    while True:
        core.step(st, core.random_actions(st, rng), parallel=parallel)
        steps += batch
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return steps, elapsed


def _bench_reference(rules, batch: int, seconds: float, seed: int = 0) -> tuple[int, float]:
    """Random play with the reference engine (``cassino_env.reference``): ``batch`` games stepped in turn.

    Each game plays deals from ``core.deck_for(seed + b, 0, k)``, choosing uniformly among
    ``prune_dominated(g.legal_moves(), len(g.loose))`` (the core's default list); a finished deal is replaced by
    the next one.
    Returns ``(steps, seconds)``.
    """
    import random

    from . import core
    from .reference import Game, prune_dominated

    P, S = rules.num_players, rules.num_sides
    rnd = random.Random(seed)
    deals = [0] * batch

    def new(b: int) -> Game:
        deck = [int(c) for c in core.deck_for(seed + b, 0, deals[b])]
        return Game.new_deal(rules, deck=deck, dealer=(P - 1 + deals[b]) % P, match_scores=[0] * S)

    games = [new(b) for b in range(batch)]
    steps = 0
    t0 = time.perf_counter()
    while True:
        for b in range(batch):
            g = games[b]
            g.apply(rnd.choice(prune_dominated(g.legal_moves(), len(g.loose))))
            steps += 1
            if g.is_deal_over():
                deals[b] += 1
                games[b] = new(b)
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return steps, elapsed


def _bench_hearts(seconds: float, seed: int = 0) -> dict[str, Any] | None:
    """OpenSpiel's ``hearts`` (4 players, default options) under uniformly random legal play for ``seconds``, in this
    process: the usual ``pyspiel`` loop (``legal_actions``, ``apply_action``; chance nodes sampled from
    ``chance_outcomes``, not counted). A step is one player's action (passes included). None when ``open_spiel``
    is not installed. Returns ``{"engine": "openspiel", "game": "hearts", "steps_per_second", "seconds",
    "steps"}``."""
    try:
        import pyspiel
    except ImportError:
        return None
    import random

    game = pyspiel.load_game("hearts")
    rnd = random.Random(seed)

    def play(limit_s: float) -> tuple[int, float]:
        state = game.new_initial_state()
        steps = 0
        t0 = time.perf_counter()
        while True:
            for _ in range(1000):
                if state.is_terminal():
                    state = game.new_initial_state()
                elif state.is_chance_node():
                    outcomes = state.chance_outcomes()
                    state.apply_action(outcomes[rnd.randrange(len(outcomes))][0])
                else:
                    legal = state.legal_actions()
                    state.apply_action(legal[rnd.randrange(len(legal))])
                    steps += 1
            elapsed = time.perf_counter() - t0
            if elapsed >= limit_s:
                return steps, elapsed

    play(0.0)
    steps, elapsed = play(seconds)
    return {"engine": "openspiel", "game": "hearts", "steps_per_second": steps / elapsed, "seconds": elapsed,
            "steps": steps}


def _emit_peers(rows: list[dict[str, Any]], seconds: float, seed: int, as_json: bool) -> dict[str, Any] | None:
    """Time :func:`_bench_hearts` and print it with each row's ratio to it (or say that OpenSpiel is missing)."""
    peer = _bench_hearts(seconds, seed)
    if peer is None:
        msg = "peers: OpenSpiel is not installed (pip install open_spiel), so no peer was timed"
        if as_json:
            print(_json.dumps({"engine": "openspiel", "game": "hearts", "available": False, "message": msg}),
                  flush=True)
        else:
            print(msg, flush=True)
        return None
    for row in rows:
        row["ratio_to_openspiel_hearts"] = row["steps_per_second"] / peer["steps_per_second"]
    if as_json:
        print(_json.dumps({**peer, "available": True, "ratios": [r["ratio_to_openspiel_hearts"] for r in rows]}),
              flush=True)
    else:
        print(f"     peer openspiel hearts P=4 (pyspiel loop, same process): {peer['steps_per_second']:>13,.0f} "
              f"steps/s ({peer['steps']} steps in {peer['seconds']:.2f} s)", flush=True)
        for row in rows:
            print(f"     ratio {row['engine']} {row['preset']} threads={row['threads']} B={row['batch']:>5}: "
                  f"{row['ratio_to_openspiel_hearts']:.1f}x openspiel hearts", flush=True)
    return peer


def run(engine: str = "core", preset: str = "classic", batch: int | Iterable[int] = (1, 64, 1024, 4096),
        seconds: float = 2.0, threads: int = 1, num_players: int | None = None, json: bool = False, *,
        mode: str = "kernel", seed: int = 0, peers: bool = False) -> list[dict[str, Any]]:
    """Time random play for each batch size and print one line (or one JSON object) per batch size.

    Args:
        engine: ``"core"`` (batched numba core), ``"reference"`` (the one-game reference engine), ``"aec"`` (the
            PettingZoo env, one game: only batch 1 is timed) or ``"vector"`` (the vector env, full observations,
            its ``copy=False`` path: :func:`cassino_env.bench_aec_vector.bench_vector`; the row's ``copy`` says so).
        preset: a docs/rules.md section 6 preset the engine implements (``classic``).
        batch: batch sizes B (games stepped together).
        seconds: wall-clock time measured per batch size, seconds.
        threads: numba threads; > 1 runs the ``parallel=True`` kernels (core only).
        num_players: seats per game (None: the preset's first allowed count).
        json: print one JSON object per line with keys ``engine, preset, batch, num_players, steps_per_second,
            threads, seconds, steps`` (and ``mode``) instead of text.
        mode: ``"kernel"`` (moves played inside numba) or ``"api"`` (``core.step`` per batch step), core only.
        seed: seeds the games and the random choices.
        peers: after the rows, time OpenSpiel's hearts in this process and print each row's ratio to it
            (``ratio_to_openspiel_hearts`` in the rows); says so when ``open_spiel`` is not installed.

    Raises:
        BenchError: an option out of range (:func:`check_options`), before anything is timed.
        cassino_env.errors.RulesError: an unknown preset or a player count it does not allow.

    Returns:
        The rows printed, as dicts, each with the :func:`machine` keys (``cpu``, ``cores``, ``cores_usable``,
        ``python``, ``numba``); with one thread in kernel mode also ``path`` and both drivers' rates; the vector
        env's rows also ``copy`` (False).
    """
    sizes = check_options(engine, [batch] if isinstance(batch, (int, np.integer)) else batch, seconds, threads, mode)
    rules = make_rules(preset, num_players=num_players)
    num_players = rules.num_players
    rows = []
    info = machine()
    if not json:
        print(_machine_line(info), flush=True)
    for B in sizes:
        extra: dict[str, Any] = {}
        if engine == "core" and mode == "kernel" and int(threads) == 1:
            extra = _bench_core_one_thread(rules, int(B), seconds, seed)
            steps, elapsed = extra.pop("steps"), extra.pop("seconds")
        elif engine == "core":
            steps, elapsed = _bench_core(rules, int(B), seconds, int(threads), mode, seed)
        elif engine == "reference":
            steps, elapsed = _bench_reference(rules, int(B), seconds, seed)
        elif engine in ("aec", "vector"):
            from .bench_aec_vector import bench_aec, bench_vector  # the environments, over the same core

            if engine == "aec":
                if B != 1:
                    continue  # the AEC env plays one game
                row = bench_aec(preset, num_players, seconds, seed=seed)
            else:
                row = bench_vector(preset, num_players, int(B), seconds, int(threads), seed=seed)
                extra = {"copy": row["copy"]}  # the env's fastest path, copy=False: say so
            steps, elapsed = int(row["steps"]), float(row["seconds"])
        else:
            raise ValueError(f"engine must be 'core', 'reference', 'aec' or 'vector', got {engine!r}")
        row = {"engine": engine, "preset": preset, "batch": int(B), "num_players": num_players,
               "steps_per_second": steps / elapsed, "threads": int(threads), "seconds": elapsed, "steps": int(steps),
               "mode": mode if engine == "core" else "python" if engine == "reference" else "env", **extra, **info}
        _emit(row, json)
        rows.append(row)
    if peers:
        _emit_peers(rows, seconds, seed, json)
    return rows

