"""torch's OpenMP threads wait passively in every front end that loads a network agent, not only in training.

With OpenMP's default (active, spinning) waiting, ``cassino eval --agents pretrained:classic,advanced --deals 2000``
took 36 s on the shared 2-core machine against 3.5 s with ``OMP_WAIT_POLICY=PASSIVE``; ``train.ppo_selfplay`` set
that default for training only. The setting only counts if it is in the environment when torch loads its OpenMP
runtime, so each check runs in a fresh interpreter and records the environment at the moment ``torch`` is imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO_ROOT

# Runs CODE after installing an import hook that records OMP_WAIT_POLICY when torch is first imported; prints it.
_PROBE = """
import builtins, json, os, sys
seen = []
_import = builtins.__import__
def _hook(name, *args, **kwargs):
    if not seen and name.split(".")[0] == "torch" and "torch" not in sys.modules:
        seen.append(os.environ.get("OMP_WAIT_POLICY"))
    return _import(name, *args, **kwargs)
builtins.__import__ = _hook
{code}
assert seen, "torch was never imported"
print(json.dumps(seen[0]))
"""

# The path of `cassino eval` with a network agent: train.evaluate builds agents through agents.registry, which loads
# agents.ppo_agent (and torch) only for a network spec.
_EVAL_PATH = """
import train.evaluate
from agents.registry import make_agent
from cassino_env.rules import make_rules
make_agent("pretrained:classic", make_rules("classic"))
"""


def _wait_policy_at_torch_import(code: str, **env: str) -> str | None:
    child_env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    child_env.update(env)
    out = subprocess.run([sys.executable, "-c", _PROBE.format(code=code)], cwd=REPO_ROOT, env=child_env,
                         capture_output=True, text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("code", [_EVAL_PATH, "import agents.ppo_agent", "import agents.policy",
                                  "import train.ppo_selfplay; import torch", "import train.rollout; import torch"],
                         ids=["eval-network-agent", "ppo_agent", "policy", "training", "ray-rollout-worker"])
def test_torch_loads_with_passive_waiting(code: str) -> None:
    assert _wait_policy_at_torch_import(code) == "PASSIVE"


def test_a_users_own_wait_policy_wins() -> None:
    assert _wait_policy_at_torch_import("import agents.ppo_agent", OMP_WAIT_POLICY="ACTIVE") == "ACTIVE"
