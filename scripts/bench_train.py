"""Time the trainer's iteration phases (collect, update) on this machine: ``python scripts/bench_train.py``.

Runs the default ``cassino train`` (configs/ppo_classic.yaml, the default network) for ``--iterations`` rollouts of
``num_envs x num_steps`` env steps in a fresh process, without the evaluations (``eval_every 0``, two deals at the
end, no final evaluation) and without the wall-clock guard, then prints one line per run with the machine: env
steps per second over the iterations, and each phase's seconds per iteration from the run's TensorBoard scalars
(``time/env_s``: stepping the games, ``time/inference_s``: choosing moves, ``time/update_s``: the PPO update) with
the update's share. ``--tree DIR`` runs another checkout of the project (e.g. a ``git worktree`` of an older
commit) with the same options, and ``--alternate DIR`` runs this tree and DIR in turn, ``--repeat`` times each, for
a same-window comparison (best of the repeats each); ``--set FIELD=VALUE`` changes an option of the runs. On a
shared machine the load average is printed with the figures: compare only runs of the same window.

Example: ``python scripts/bench_train.py --iterations 3 --alternate /tmp/base --repeat 2``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Run in the tree under test (its own train package first on sys.path): train, then report the phase times.
CHILD = r"""
import json, sys, time
tree, run_dir, iterations, sets = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
sys.path.insert(0, tree)
from train.ppo_selfplay import make_args, train
values = {"run_dir": run_dir, "eval_every": 0, "final_eval_deals": 0, "eval_deals": 2,
          "eval_opponents": ["random"], "max_train_seconds": 0.0, "progress_every_s": 1e9, **sets}
args = make_args(values)
values["total_timesteps"] = iterations * args.num_envs * args.num_steps
args = make_args(values)
t0 = time.time()
train(args)
wall = time.time() - t0
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
ea = EventAccumulator(run_dir); ea.Reload()
def mean(tag):
    v = [e.value for e in ea.Scalars(tag)]
    return sum(v) / len(v)
sps = [e.value for e in ea.Scalars("charts/SPS")]
print("RESULT " + json.dumps({"steps": args.total_timesteps, "wall_s": wall, "sps": sps[-1],
                              "env_s": mean("time/env_s"), "inference_s": mean("time/inference_s"),
                              "update_s": mean("time/update_s"), "update_fraction": mean("time/update_fraction")}))
"""


def machine() -> str:
    """One line: the CPU, its cores, the load average, Python and torch, the date (UTC)."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = " ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    import torch

    return (f"{cpu}, {os.cpu_count()} cores, load average {load}, Python {platform.python_version()}, torch "
            f"{torch.__version__}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")


def parse_sets(parser: argparse.ArgumentParser, items: list[str]) -> dict[str, object]:
    """The ``--set FIELD=VALUE`` options as a dict (each value read as YAML); a malformed one is the parser's error."""
    import yaml

    sets = {}
    for item in items:
        k, sep, v = item.partition("=")
        if not sep:
            parser.error(f"--set {item!r}: expected FIELD=VALUE")
        sets[k] = yaml.safe_load(v)
    return sets


def add_tree_options(parser: argparse.ArgumentParser, fields: str) -> None:
    """The options every bench script takes: ``--tree``, ``--alternate``, ``--repeat`` and ``--set`` (``fields``:
    the options class its ``--set`` names, e.g. ``Args``)."""
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout to run (default: this one)")
    parser.add_argument("--alternate", type=Path, default=None, help="a second checkout, run in turn with --tree")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each tree (best of them is reported)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help=f"an {fields} field for the runs (a YAML value), e.g. --set threads=1")


def trees_of(parser: argparse.ArgumentParser, a: argparse.Namespace) -> list[Path]:
    """The checkouts to run (``--tree``, then ``--alternate``), each checked to be one of this project."""
    if a.repeat < 1:
        parser.error("--repeat must be >= 1")
    trees = [a.tree] + ([a.alternate] if a.alternate else [])
    for name, tree in zip(("--tree", "--alternate"), trees, strict=False):
        if not (tree / "train").is_dir():
            parser.error(f"{name} {tree}: not a checkout of this project (no train/ folder)")
    return trees


def alternate(trees: list[Path], repeat: int, run: Callable[[Path], dict[str, float]],
              fmt: Callable[[Path, dict[str, float]], str], key: str) -> None:
    """Run each tree in turn ``repeat`` times, print every run, the best of each tree (by ``key``) and their ratio."""
    print(f"machine: {machine()}", flush=True)
    best: dict[Path, dict[str, float]] = {}
    for i in range(repeat):
        for tree in trees:
            r = run(tree)
            print(f"run {i + 1}: {fmt(tree, r)}", flush=True)
            if tree not in best or r[key] > best[tree][key]:
                best[tree] = r
    for tree in trees:
        print(f"best: {fmt(tree, best[tree])}")
    if len(trees) == 2:
        print(f"ratio {trees[0]} / {trees[1]}: {best[trees[0]][key] / best[trees[1]][key]:.2f}x "
              f"(load average now {os.getloadavg()[0]:.1f})")


def run_once(tree: Path, iterations: int, sets: dict[str, object]) -> dict[str, float]:
    """One benchmark run of ``tree`` in a fresh process; returns its figures."""
    with tempfile.TemporaryDirectory(prefix="bench_train_") as tmp:
        return run_child(tree, CHILD, [str(Path(tmp) / "run"), str(iterations), json.dumps(sets)])


def run_child(tree: Path, code: str, argv: list[str]) -> dict[str, float]:
    """Run ``code`` in a fresh Python process in ``tree`` (argv: the tree, then ``argv``); its ``RESULT {json}``
    line as a dict. A run that fails ends the script with its error's last lines."""
    proc = subprocess.run([sys.executable, "-c", code, str(tree), *argv], cwd=tree, capture_output=True, text=True,
                          check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode or not lines:
        raise SystemExit(f"error: the run of {tree} failed:\n{proc.stderr[-2000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def fmt(tree: Path, r: dict[str, float]) -> str:
    return (f"{tree}: {r['sps']:,.0f} env steps/s over {r['steps']:,} steps | per iteration: env {r['env_s']:.2f} s, "
            f"inference {r['inference_s']:.2f} s, update {r['update_s']:.2f} s (update share "
            f"{100 * r['update_fraction']:.0f}%)")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iterations", type=int, default=3, help="rollouts per run (49,152 env steps each by default)")
    add_tree_options(p, "Args")
    a = p.parse_args()
    if a.iterations < 1:
        p.error("--iterations must be >= 1")
    sets = parse_sets(p, a.set)
    alternate(trees_of(p, a), a.repeat, lambda tree: run_once(tree, a.iterations, sets), fmt, "sps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
