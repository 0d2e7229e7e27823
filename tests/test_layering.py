"""Layering: dependencies run one way, ``cassino_env`` <- ``agents`` <- ``train``.

``cassino_env`` (rules, core, oracle, environments) is a library: it works with ``agents`` and ``train`` made
unimportable, and no module of it names them.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

#: The layers above ``cassino_env``: it may import neither.
UPPER = ("agents", "train")

#: Run in a fresh interpreter: block ``agents`` and ``train``, then use the library as a user would.
SCRIPT = r"""
import importlib.abc
import json
import sys

UPPER = ("agents", "train")
tried = []


class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in UPPER:
            tried.append(name)
            raise ImportError(f"{name} is blocked: cassino_env must not import the layers above it")
        return None


sys.meta_path.insert(0, Blocked())
for name in list(sys.modules):
    if name.partition(".")[0] in UPPER:
        del sys.modules[name]

import numpy as np

import cassino_env

# a whole AEC game (a match: deals until a side wins), random legal actions from the mask
env = cassino_env.env(episode="match")
env.reset(seed=7)
rng = np.random.default_rng(7)
steps, returns = 0, dict.fromkeys(env.possible_agents, 0.0)
for agent in env.agent_iter():
    obs, reward, terminated, truncated, info = env.last()
    returns[agent] += reward
    if terminated or truncated:
        env.step(None)
        continue
    legal = np.flatnonzero(obs["action_mask"])
    assert legal.size > 0
    env.step(int(rng.choice(legal)))
    steps += 1
env.close()

# an oracle query (docs/interchange.md): docs/rules.md 7 case 1, seat 0 holds 8S
moves = cassino_env.legal_moves({"rules": "classic", "num_players": 2, "to_move": 0, "hands": [["8S"], ["2C"]],
                                 "loose": ["AH", "2D", "3C", "5D", "6H", "8C"]})
loaded = sorted(n for n in sys.modules if n.partition(".")[0] in UPPER)
print(json.dumps({"steps": steps, "returns": returns, "moves": moves, "tried": tried, "loaded": loaded}))
"""


def test_cassino_env_works_without_agents_and_train(repo_root: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=repo_root, capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["tried"] == [], f"cassino_env tried to import {out['tried']}"
    assert out["loaded"] == []
    assert out["steps"] > 40  # at least one whole deal of 2 x 24 cards was played
    assert sorted(out["returns"]) == ["player_0", "player_1"]
    assert out["moves"]  # the 8S can trail, capture 8C and more
    assert {m["action"] for m in out["moves"]} >= {"trail", "capture"}


#: ``import agents``, ``from train.x import y`` (also in a doctest), ``importlib.import_module("agents...")``.
_UPPER_IMPORT = re.compile(rf"^\s*(?:>>> )?(?:import|from)\s+(?:{'|'.join(UPPER)})\b"
                           rf"|import_module\(\s*[\"'](?:{'|'.join(UPPER)})\b", re.MULTILINE)


def test_no_cassino_env_module_names_the_layers_above(repo_root: Path) -> None:
    files = sorted((repo_root / "cassino_env").rglob("*.py"))
    assert files
    offenders = [f"{path.relative_to(repo_root)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0).strip()}"
                 for path in files for text in [path.read_text(encoding="utf-8")]
                 for m in _UPPER_IMPORT.finditer(text)]
    assert offenders == [], "cassino_env imports the layers above it:\n" + "\n".join(offenders)


#: An import of one of the core's private modules: ``from .core._layout import X``, ``from cassino_env.core._bits
#: import Y``, ``import cassino_env.core._kernels``.
_CORE_PRIVATE = re.compile(r"^\s*(?:>>> )?(?:from|import)\s+(?:cassino_env)?\.?core\._\w+", re.MULTILINE)


def test_outside_the_core_only_its_public_modules_are_imported(repo_root: Path) -> None:
    """The core's public API is ``cassino_env.core`` and, for kernels elsewhere, ``cassino_env.core.kernel_api``:
    no module outside ``cassino_env/core/`` (the library, agents, train, scripts, tests) imports a private one."""
    core_dir = repo_root / "cassino_env" / "core"
    files = sorted(p for d in ("cassino_env", "agents", "train", "scripts") for p in (repo_root / d).rglob("*.py")
                   if core_dir not in p.parents)
    assert len(files) > 20
    offenders = [f"{path.relative_to(repo_root)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0).strip()}"
                 for path in files for text in [path.read_text(encoding="utf-8")]
                 for m in _CORE_PRIVATE.finditer(text)]
    assert offenders == [], "modules outside the core import its private modules:\n" + "\n".join(offenders)
