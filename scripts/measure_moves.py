"""Measure the length of the core's (pruned) legal-move list over many random games, to size the action space.

Plays ``--games`` complete random matches per player count with the batched core (:mod:`cassino_env.core`), every
move chosen uniformly among the listed legal moves (the env's "random masked play"), and records the length of the
list offered at every decision (the initial position and the position after every move, i.e. every list an agent
is shown). The core is run with a very wide move table (``--measure-width``, default 16384) so that the true length is
seen; a list longer than that is counted as a measurement overflow and reported (its length is unknown).

For each candidate width ``M`` (``--candidates``) the script reports how many decisions and how many matches would
overflow it (the env keeps the first M moves in canonical order and flags ``overflow``). The chosen width is
:data:`cassino_env.actions.MAX_MOVES`; its evidence is printed as a table and, with ``--json``, as JSON.

Usage::

    python scripts/measure_moves.py                       # 100,000 matches for each of 2, 3 and 4 players
    python scripts/measure_moves.py --games 2000 --players 2

Run time: about half a minute per player count for 100,000 matches (one core).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from cassino_env import core
from cassino_env.rules import make_rules

QUANTILES = (0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999)


def measure(preset: str, num_players: int, games: int, batch: int, width: int, candidates: list[int],
            seed: int = 0) -> dict:
    """Play ``games`` random matches (``batch`` at a time, auto-reset) and return the list-length statistics.

    Returns:
        A dict with ``decisions`` (lists seen), ``matches``, ``deals``, ``max``, ``quantiles`` ({q: length}),
        ``measure_overflow`` (lists longer than ``width``), and per candidate M ``over[M]`` = decisions with a list
        longer than M and ``matches_over[M]`` = matches with at least one such decision.
    """
    rules = make_rules(preset, num_players=num_players)
    st = core.init(rules, seed + np.arange(batch, dtype=np.int64), max_moves=width)
    rng = (np.arange(batch, dtype=np.uint64) + np.uint64(seed)) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(1)
    hist = np.zeros(width + 1, dtype=np.int64)
    cands = np.array(sorted(candidates), dtype=np.int64)
    seen_over = np.zeros((batch, len(cands)), dtype=bool)  # this game's current match overflowed candidate k
    matches_over = np.zeros(len(cands), dtype=np.int64)
    measure_overflow = 0
    matches = deals = 0

    def record() -> None:
        nonlocal measure_overflow
        n = st.num_moves.astype(np.int64)
        hist[:] += np.bincount(n, minlength=width + 1)
        measure_overflow += int(st.overflow.sum())
        seen_over[:] |= (n[:, None] > cands[None, :]) | st.overflow[:, None]

    record()
    while matches < games:
        res = core.step(st, core.random_actions(st, rng))
        deals += int(res.deal_done.sum())
        done = res.match_done
        if done.any():
            # attribute the finished matches' overflow, then start afresh for the new matches (already dealt)
            k = min(int(done.sum()), games - matches)
            rows = np.flatnonzero(done)[:k]
            matches_over += seen_over[rows].sum(axis=0)
            seen_over[done] = False
            matches += k
        record()
    decisions = int(hist.sum())
    cdf = np.cumsum(hist) / decisions
    over = {int(m): int(hist[m + 1:].sum()) for m in cands}  # an unmeasured list (width overflow) counts in hist[width]
    return {
        "preset": preset, "num_players": num_players, "matches": matches, "deals": deals, "decisions": decisions,
        "max": int(np.flatnonzero(hist).max()), "max_exact": measure_overflow == 0, "measure_width": width,
        "measure_overflow": measure_overflow,
        "quantiles": {str(q): int(np.searchsorted(cdf, q)) for q in QUANTILES},
        "over": over, "matches_over": {int(m): int(x) for m, x in zip(cands, matches_over, strict=True)},
    }


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point; prints one table per player count (or JSON lines with ``--json``)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="classic")
    ap.add_argument("--players", type=int, nargs="+", default=[2, 3, 4])
    ap.add_argument("--games", type=int, default=100_000, help="complete matches per player count")
    ap.add_argument("--batch", type=int, default=1000, help="games stepped together")
    ap.add_argument("--measure-width", type=int, default=16384, help="move-table width used to measure")
    ap.add_argument("--candidates", type=int, nargs="+", default=[128, 192, 256, 384, 512, 1024, 2048, 4096])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    from cassino_env.actions import MAX_MOVES

    for p in a.players:
        t0 = time.perf_counter()
        r = measure(a.preset, p, a.games, a.batch, a.measure_width, a.candidates + [MAX_MOVES], a.seed)
        r["seconds"] = round(time.perf_counter() - t0, 1)
        if a.json:
            print(json.dumps(r), flush=True)
            continue
        q = r["quantiles"]
        print(f"{a.preset}, {p} players: {r['matches']:,} matches, {r['deals']:,} deals, {r['decisions']:,} "
              f"decisions, {r['seconds']} s")
        longest = f"{r['max']:,}" if r["max_exact"] else f"over {r['measure_width']:,}"
        print(f"  list length: max {longest} ({r['measure_overflow']} lists longer than the measuring width "
              f"{r['measure_width']:,}), median {q['0.5']}, p90 {q['0.9']}, p99 {q['0.99']}, "
              f"p99.9 {q['0.999']}, p99.99 {q['0.9999']}, p99.999 {q['0.99999']}")
        for m in sorted(r["over"]):
            mark = "  <- MAX_MOVES" if m == MAX_MOVES else ""
            print(f"  M = {m:>5}: {r['over'][m]:>8,} decisions overflow "
                  f"({r['over'][m] / r['decisions']:.2e}), {r['matches_over'][m]:>6,} matches with one{mark}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
