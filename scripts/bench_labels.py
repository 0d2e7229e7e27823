"""Time the expert stage's labelling (games and search) on this machine: ``python scripts/bench_labels.py``.

Builds the labeller of an expert stage (``--config``, by default the recipe's earlier-rounds stage,
configs/stage_early_rounds.yaml: the search of 250 lines over the network's 4 most probable moves, critic leaves)
over a network (``--init``, by default ``pretrained:classic``) in a fresh process, compiles its kernels on a few
games, then times one iteration of the stage's games (``num_envs`` games, one deal each) and prints labels a second,
the share of the time spent searching, and the machine. ``--tree DIR`` runs another checkout of the project (e.g. a
``git worktree`` of an older commit) and ``--alternate DIR`` runs this tree and DIR in turn, ``--repeat`` times
each (best of the repeats each), as scripts/bench_train.py; ``--set FIELD=VALUE`` changes an option of the stage
(e.g. ``--set threads=1``, ``--set num_envs=128``). Compare only runs of the same window: the load average is
printed with the figures.

Example: ``python scripts/bench_labels.py --alternate /tmp/base --repeat 2``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench_train import add_tree_options, alternate, parse_sets, run_child, trees_of

ROOT = Path(__file__).resolve().parent.parent

#: Run in the tree under test (its own packages first on sys.path): one warm-up on a few games, one timed iteration.
CHILD = r"""
import json, sys, time
tree, config_path, init, sets = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
sys.path.insert(0, tree)
import numpy as np, torch, yaml
from agents.registry import make_agent
from cassino_env.rules import make_rules
from train import config
from train.exit import ExitArgs
import os
if os.path.exists(os.path.join(tree, "train", "expert", "collect.py")):
    from train.expert.collect import LabelCollector
else:  # checkouts before the expert stage's package (e.g. b24101b) kept it in train/exit.py
    from train.exit import LabelCollector
values = {**yaml.safe_load(open(config_path)), "init": init, **sets}
args = config.make_args(ExitArgs, values)
torch.set_num_threads(args.threads)
rules = make_rules(args.preset, args.num_players)
policy = make_agent(init, rules).policy
rng = np.random.default_rng(args.seed)
LabelCollector(args, rules, 8, 1).collect(policy, rng, 0)  # the kernels compile (cached on disk after)
collector = LabelCollector(args, rules, args.num_envs, 0)
t0 = time.time()
labels = collector.collect(policy, rng, 0)
wall = time.time() - t0
print("RESULT " + json.dumps({"games": args.num_envs, "labels": len(labels), "wall_s": wall,
                              "search_s": labels.label_s, "threads": args.threads}))
"""


def run_once(tree: Path, config_path: Path, init: str, sets: dict[str, object]) -> dict[str, float]:
    """One timed iteration of ``tree``'s labeller in a fresh process; returns its figures."""
    r = run_child(tree, CHILD, [str(config_path), init, json.dumps(sets)])
    r["labels_s"] = r["labels"] / r["wall_s"]
    return r


def fmt(tree: Path, r: dict[str, float]) -> str:
    return (f"{tree}: {r['labels_s']:,.0f} labels/s ({r['labels']:,} labels of {r['games']} games in "
            f"{r['wall_s']:.1f} s; searching {100 * r['search_s'] / r['wall_s']:.0f}% of it; threads "
            f"{r['threads']})")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", type=Path, default=ROOT / "configs" / "stage_early_rounds.yaml",
                   help="the expert stage's options (a YAML file of train.exit.ExitArgs fields; default: "
                        "configs/stage_early_rounds.yaml)")
    p.add_argument("--init", default="pretrained:classic", help="the network searched (an agent spec; default: "
                                                                 "pretrained:classic)")
    add_tree_options(p, "ExitArgs")
    a = p.parse_args()
    if not a.config.is_file():
        p.error(f"--config {a.config}: no such file")
    sets = parse_sets(p, a.set)
    alternate(trees_of(p, a), a.repeat, lambda tree: run_once(tree, a.config.resolve(), a.init, sets), fmt,
              "labels_s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
