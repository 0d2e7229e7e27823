"""Copy a training checkpoint into the package as a shipped, evaluation-only agent (``pretrained:NAME``).

Usage::

    python scripts/ship_checkpoint.py runs/RUN/checkpoints/final.pt classic

It keeps the network, its shape, the rules, the observation blocks and the checkpoint's provenance (the command,
commit, seed, stage and wall time of the run that made it: ``cassino eval --provenance`` shows it), and drops the
optimizer and training state (the file shrinks to the weights alone), then checks that the written file loads for
its rules as ``pretrained:NAME``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from agents.ppo_agent import policy_from_checkpoint, read_checkpoint, save_checkpoint
from agents.registry import PRETRAINED_DIR, make_agent
from cassino_env.rules import make_rules


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    src, name = Path(argv[0]), argv[1]
    data = read_checkpoint(src)
    rules = make_rules(data["rules"])
    policy = policy_from_checkpoint(data, src)
    out = save_checkpoint(PRETRAINED_DIR / f"{name}.pt", policy, rules, blocks=data.get("obs_blocks"),
                          provenance=data.get("provenance"))
    agent = make_agent(f"pretrained:{name}", rules)
    print(f"wrote {out} ({out.stat().st_size:,} bytes) for {rules.preset} with {rules.num_players} players: "
          f"{agent.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
