"""Throughput of the two environments, AEC and vector, under random masked play, in steps per second (one step = one
move in one game): ``cassino bench --engine aec`` and ``--engine vector``. The engines themselves (the batched core
and the reference engine) are timed by :mod:`cassino_env.bench`, which also runs the command.

``bench_aec`` times the PettingZoo AEC env (:func:`cassino_env.env`, wrappers included) in the standard
``agent_iter`` / ``last`` / ``step`` loop, choosing a uniformly random legal action from ``obs["action_mask"]``; only
moves count as steps (the ``step(None)`` of terminated agents at an episode's end do not), and a finished episode
is followed by ``reset()``. ``bench_vector`` times :class:`cassino_env.vector.CassinoVectorEnv` with full
observations (encoding, mask, move tables and the public view, as ``observe()`` gives them), uniformly random listed
moves from :func:`cassino_env.core.random_actions`; by default its fastest path, ``copy=False`` (read-only views that
the next step overwrites, no copies), and its row says which (``"copy"``). Both warm up (JIT compilation) before
timing and use their own random generators.

>>> row = bench_aec("classic", 2, seconds=0.05)
>>> sorted(row)
['batch', 'engine', 'num_players', 'preset', 'seconds', 'steps', 'steps_per_second', 'threads']
"""

from __future__ import annotations

import random
import time
from typing import Any

import numpy as np


def _row(engine: str, preset: str, batch: int, num_players: int, threads: int, steps: int,
         elapsed: float) -> dict[str, Any]:
    return {"engine": engine, "preset": preset, "batch": int(batch), "num_players": int(num_players),
            "steps_per_second": steps / elapsed, "threads": int(threads), "seconds": elapsed, "steps": int(steps)}


def bench_aec(preset: str = "classic", num_players: int = 2, seconds: float = 2.0, *, seed: int = 0,
              **env_kwargs: Any) -> dict[str, Any]:
    """Random masked play in one AEC env for ``seconds`` (wall clock, seconds) after a warm-up.

    Args:
        preset: a docs/rules.md 6 preset the core implements.
        num_players: seats.
        seconds: time measured, seconds.
        seed: seeds the env (``reset(seed=...)`` once) and the action choice (a ``random.Random`` instance).
        **env_kwargs: more :func:`cassino_env.env` arguments (e.g. ``action_encoding="card_value"``).

    Returns:
        ``{"engine": "aec", "preset", "batch": 1, "num_players", "steps_per_second", "threads": 1, "seconds",
        "steps"}``.
    """
    from . import env as make_env

    e = make_env(rules=preset, num_players=num_players, **env_kwargs)
    rnd = random.Random(seed)

    def play(limit_s: float) -> tuple[int, float]:
        steps = 0
        t0 = time.perf_counter()
        while True:
            for _ in e.agent_iter():
                obs, _, terminated, truncated, _ = e.last()
                if terminated or truncated:
                    e.step(None)
                    continue
                legal = obs["action_mask"].nonzero()[0]
                e.step(int(legal[rnd.randrange(len(legal))]))
                steps += 1
            elapsed = time.perf_counter() - t0
            if elapsed >= limit_s:
                return steps, elapsed
            e.reset()

    e.reset(seed=seed)
    play(0.0)  # warm-up: one episode (compiles or loads the kernels)
    e.reset()
    steps, elapsed = play(seconds)
    return _row("aec", preset, 1, num_players, 1, steps, elapsed)


def bench_vector(preset: str = "classic", num_players: int = 2, batch: int = 1024, seconds: float = 2.0,
                 threads: int = 1, *, seed: int = 0, copy: bool = False, **env_kwargs: Any) -> dict[str, Any]:
    """Random play in a vector env of ``batch`` games with full observations for ``seconds`` after a warm-up.

    Args:
        preset: a docs/rules.md 6 preset the core implements.
        num_players: seats.
        batch: B, games stepped together.
        seconds: time measured, seconds.
        threads: numba threads; > 1 steps the core with its ``parallel=True`` kernels.
        seed: seeds the games and the per-game random counters.
        copy: the env's ``copy`` (False, the default here: views, the fastest path; True: the env's default, fresh
            copies of every array each step).
        **env_kwargs: more :class:`~cassino_env.vector.CassinoVectorEnv` arguments.

    Returns:
        ``{"engine": "vector", "preset", "batch", "num_players", "steps_per_second", "threads", "seconds",
        "steps", "copy"}``; ``steps`` counts one move per game per call.
    """
    from . import core
    from .vector import CassinoVectorEnv

    if threads > 1:
        import numba

        numba.set_num_threads(threads)
    venv = CassinoVectorEnv(batch, rules=preset, num_players=num_players, seed=seed, parallel=threads > 1,
                            copy=copy, **env_kwargs)
    venv.reset()
    rng = (np.arange(batch, dtype=np.uint64) + np.uint64(seed)) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(1)
    for _ in range(3):  # warm-up
        venv.step(core.random_actions(venv.state, rng))
    steps = 0
    t0 = time.perf_counter()
    while True:
        venv.step(core.random_actions(venv.state, rng))
        steps += batch
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return {**_row("vector", preset, batch, num_players, threads, steps, elapsed), "copy": venv.copy}


__all__ = ["bench_aec", "bench_vector"]
