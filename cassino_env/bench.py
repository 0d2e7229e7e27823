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

``engine="reference"`` plays the same random games with the one-game reference engine
(:mod:`cassino_env.reference`) through :func:`_bench_reference`.

The command line is ``cassino bench`` (``cassino bench --help``), which calls :func:`run`.
"""

from __future__ import annotations

import json as _json
import time
from collections.abc import Iterable
from typing import Any

import numpy as np

from .rules import make_rules


def _emit(row: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(_json.dumps(row), flush=True)
    else:
        print(f"{row['engine']:>9} {row['preset']} P={row['num_players']} threads={row['threads']} "
              f"B={row['batch']:>5}: {row['steps_per_second']:>13,.0f} steps/s ({row['steps']} steps in "
              f"{row['seconds']:.2f} s)", flush=True)


def _bench_core(rules, batch: int, seconds: float, threads: int, mode: str, seed: int) -> tuple[int, float]:
    import numba

    from . import core

    parallel = threads > 1
    if parallel:
        numba.set_num_threads(threads)
    st = core.init(rules, np.arange(batch, dtype=np.int64) + seed)
    rng = (np.arange(batch, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) ^ np.uint64(seed)
    if mode == "kernel":
        # Blocks of moves per game grown until one call takes >= 50 ms (so per-call and thread wake-up costs are
        # negligible), after a warm-up call that also compiles.
        block = 4
        core.rollout(st, block, rng, parallel=parallel)
        while block < 10_000_000:
            t0 = time.perf_counter()
            core.rollout(st, block, rng, parallel=parallel)
            if time.perf_counter() - t0 >= 0.05:
                break
            block *= 4
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
    ``prune_dominated(g.legal_moves())`` (the core's default list); a finished deal is replaced by the next one.
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
            g.apply(rnd.choice(prune_dominated(g.legal_moves())))
            steps += 1
            if g.is_deal_over():
                deals[b] += 1
                games[b] = new(b)
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return steps, elapsed


def run(engine: str = "core", preset: str = "classic", batch: int | Iterable[int] = (1, 64, 1024, 4096),
        seconds: float = 2.0, threads: int = 1, num_players: int | None = None, json: bool = False, *,
        mode: str = "kernel", seed: int = 0) -> list[dict[str, Any]]:
    """Time random play for each batch size and print one line (or one JSON object) per batch size.

    Args:
        engine: ``"core"`` (batched numba core), ``"reference"`` (the one-game reference engine), ``"aec"`` (the
            PettingZoo env, one game: only batch 1 is timed) or ``"vector"`` (the vector env, full observations).
        preset: a docs/rules.md section 6 preset the engine implements (``classic``).
        batch: batch sizes B (games stepped together).
        seconds: wall-clock time measured per batch size, seconds.
        threads: numba threads; > 1 runs the ``parallel=True`` kernels (core only).
        num_players: seats per game (None: the preset's first allowed count).
        json: print one JSON object per line with keys ``engine, preset, batch, num_players, steps_per_second,
            threads, seconds, steps`` (and ``mode``) instead of text.
        mode: ``"kernel"`` (moves played inside numba) or ``"api"`` (``core.step`` per batch step), core only.
        seed: seeds the games and the random choices.

    Returns:
        The rows printed, as dicts.
    """
    rules = make_rules(preset, num_players=num_players)
    num_players = rules.num_players
    sizes = [batch] if isinstance(batch, int) else list(batch)
    rows = []
    for B in sizes:
        if engine == "core":
            steps, elapsed = _bench_core(rules, int(B), seconds, int(threads), mode, seed)
        elif engine == "reference":
            steps, elapsed = _bench_reference(rules, int(B), seconds, seed)
        elif engine in ("aec", "vector"):
            from .bench_env import bench_aec, bench_vector  # the environments, over the same core

            if engine == "aec":
                if B != 1:
                    continue  # the AEC env plays one game
                row = bench_aec(preset, num_players, seconds, seed=seed)
            else:
                row = bench_vector(preset, num_players, int(B), seconds, int(threads), seed=seed)
            steps, elapsed = int(row["steps"]), float(row["seconds"])
        else:
            raise ValueError(f"engine must be 'core', 'reference', 'aec' or 'vector', got {engine!r}")
        row = {"engine": engine, "preset": preset, "batch": int(B), "num_players": num_players,
               "steps_per_second": steps / elapsed, "threads": int(threads), "seconds": elapsed, "steps": int(steps),
               "mode": mode if engine == "core" else "python" if engine == "reference" else "env"}
        _emit(row, json)
        rows.append(row)
    return rows

