"""The anytime check of a ``cassino train`` run: its best network at several times of the run, each played head to
head against the one before (the principal issue's "each network beats the one before").

Usage::

    python scripts/anytime.py runs/RUN                          # at 20, 40, 80 and 150 minutes, networks alone
    python scripts/anytime.py runs/RUN --minutes 10 20 --deals 4000 --seed 50000001 --exact

Each pair plays ``--deals`` duplicate deals from ``--seed`` on (choose seeds no training, gate or tuning used: the
gates use 60,000,000 onward), both sides the network alone (``policy:checkpoint:``) or with ``--exact`` the exact
last round (``checkpoint:``, two seats). A time the run has not reached is reported and skipped. The table is
printed as Markdown; ``--out FILE`` also writes it as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from agents.registry import make_agent
from cassino_env.rules import make_rules
from train.config import ConfigError
from train.errors import error
from train.recipe import gate_match
from train.recipe_state import best_at


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="anytime.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("run", help="the run folder of a cassino train run (with recipe.json)")
    parser.add_argument("--minutes", type=float, nargs="+", default=[20.0, 40.0, 80.0, 150.0])
    parser.add_argument("--deals", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=50_000_001)
    parser.add_argument("--exact", action="store_true", help="both sides with the exact last round (two seats)")
    parser.add_argument("--out", type=Path, default=None, help="also write the rows as JSON here")
    a = parser.parse_args(argv)
    if a.deals < 1 or not 0 <= a.seed < 2**62 or any(not m > 0 for m in a.minutes):
        return error("deals must be >= 1, seed 0 .. 2**62 - 1 and every minute > 0")
    if not (Path(a.run) / "recipe.json").is_file():
        return error(f"{a.run}: not the run folder of a cassino train run with hours > 0 (no recipe.json there)")
    if a.out is not None and not a.out.parent.is_dir():
        return error(f"--out: the folder {a.out.parent} does not exist")
    try:
        points = []
        for m in sorted(a.minutes):
            found = best_at(a.run, m * 60.0)
            if found is None:
                print(f"{m:g} min: the run has no best network then (not reached, or before its first gate)")
                continue
            points.append((m, *found))
    except ConfigError as exc:
        return error(exc)
    if len(points) < 2:
        return error(f"{a.run}: fewer than two of the times {a.minutes} have a best network: nothing to compare")
    from agents.ppo_agent import read_checkpoint

    rules = make_rules(read_checkpoint(points[0][1])["rules"])
    prefix = "checkpoint:" if a.exact else "policy:checkpoint:"
    rows = []
    print("| at | best network (gate, stage) | vs the one before: margin a deal (95% CI) | deal win rate |")
    print("|---|---|---|---|")
    m_first, _, g_first = points[0]
    print(f"| {m_first:g} min | gate {g_first['n']}, {g_first['stage']} | (the first point) | - |")
    for (m0, p0, _g0), (m1, p1, g1) in zip(points, points[1:], strict=False):
        if p0 == p1:
            row = {"minutes": m1, "before": m0, "gate": g1["n"], "stage": g1["stage"], "same_network": True}
            print(f"| {m1:g} min | gate {g1['n']}, {g1['stage']} | the same network as at {m0:g} min | - |")
        else:
            # seated as the gate seats candidate and best (every seat arrangement of the pair, at any seat count)
            res = gate_match(make_agent(prefix + str(p1), rules), make_agent(prefix + str(p0), rules), rules,
                             a.deals, seed=a.seed)
            lo, hi = res["points"] - 1.96 * res["points_se"], res["points"] + 1.96 * res["points_se"]
            row = {"minutes": m1, "before": m0, "gate": g1["n"], "stage": g1["stage"], "margin": res["points"],
                   "margin_se": res["points_se"], "winrate": res["winrate"], "games": res["games"]}
            print(f"| {m1:g} min | gate {g1['n']}, {g1['stage']} | {res['points']:+.3f} [{lo:+.3f}, {hi:+.3f}] vs "
                  f"{m0:g} min | {res['winrate']:.3f} of {int(res['games']):,} |", flush=True)
        rows.append(row)
    if a.out is not None:
        a.out.write_text(json.dumps({"run": str(a.run), "deals": a.deals, "seed": a.seed, "exact": a.exact,
                                     "rows": rows}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
