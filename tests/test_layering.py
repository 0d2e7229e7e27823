"""Layering: dependencies run one way, ``cassino_env`` <- ``agents`` <- ``train``.

``cassino_env`` (rules, core, oracle, environments) is a library: it works with ``agents`` and ``train`` made
unimportable, and no module of it names them, not even as a string (an entry point that Gymnasium would import
later). The Gymnasium ids of the single-agent env live with that env in ``agents`` (``agents.gym``), one documented
import away.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

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
# every module of the library imports with the layers above blocked, and none registered an id naming them
import importlib, pkgutil
import gymnasium

modules = [m.name for m in pkgutil.walk_packages(cassino_env.__path__, "cassino_env.")]
for name in modules:
    importlib.import_module(name)
upward = [spec.id for spec in gymnasium.registry.values() if isinstance(spec.entry_point, str)
          and spec.entry_point.partition(".")[0].partition(":")[0] in UPPER]
loaded = sorted(n for n in sys.modules if n.partition(".")[0] in UPPER)
print(json.dumps({"steps": steps, "returns": returns, "moves": moves, "tried": tried, "loaded": loaded,
                  "modules": len(modules), "upward": upward}))
"""


def test_cassino_env_works_without_agents_and_train(repo_root: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=repo_root, capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["tried"] == [], f"cassino_env tried to import {out['tried']}"
    assert out["loaded"] == []
    assert out["modules"] > 20 and out["upward"] == []  # cassino_env/gym.py registered "agents.gym_env:..." ids
    assert out["steps"] > 40  # at least one whole deal of 2 x 24 cards was played
    assert sorted(out["returns"]) == ["player_0", "player_1"]
    assert out["moves"]  # the 8S can trail, capture 8C and more
    assert {m["action"] for m in out["moves"]} >= {"trail", "capture"}


#: ``import agents``, ``from train.x import y`` (also in a doctest), ``importlib.import_module("agents...")``.
_UPPER_IMPORT = re.compile(rf"^\s*(?:>>> )?(?:import|from)\s+(?:{'|'.join(UPPER)})\b"
                           rf"|import_module\(\s*[\"'](?:{'|'.join(UPPER)})\b", re.MULTILINE)


#: A string naming a module of those layers, as an entry point does: ``"agents.gym_env:CassinoGymEnv"``,
#: ``'train.cli'``.
_UPPER_STRING = re.compile(rf"[\"'](?:{'|'.join(UPPER)})[.:]\w")


def test_no_cassino_env_module_names_the_layers_above(repo_root: Path) -> None:
    files = sorted((repo_root / "cassino_env").rglob("*.py"))
    assert files
    offenders = [f"{path.relative_to(repo_root)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0).strip()}"
                 for path in files for text in [path.read_text(encoding="utf-8")]
                 for pattern in (_UPPER_IMPORT, _UPPER_STRING) for m in pattern.finditer(text)]
    assert offenders == [], "cassino_env imports the layers above it:\n" + "\n".join(offenders)


#: A user's first lines, in a fresh interpreter: the ids by Gymnasium's ``"module:id"`` form with no import, then by
#: the one documented import.
IDS_SCRIPT = r"""
import json, sys
import gymnasium

env = gymnasium.make("agents.gym:cassino/Classic-v1")
obs, info = env.reset(seed=0)
first = sorted(obs)
import agents.gym

flat = gymnasium.make("cassino/ClassicFlat-v1")
print(json.dumps({"first": first, "flat": list(flat.observation_space.shape), "ids": len(agents.gym.IDS)}))
"""


def test_the_gymnasium_ids_are_one_documented_import_away(repo_root: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", IDS_SCRIPT], cwd=repo_root, capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["first"] == ["action_mask", "observation"]
    assert len(out["flat"]) == 1 and out["ids"] == 12


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


# --- train/ and agents/ by concern: no import circles, no module reaching into another's private names -------------
#: The top-level packages of the project: imports of their modules are the project's own.
PROJECT = ("cassino_env", "agents", "train", "scripts", "tests")


def _module_name(repo_root: Path, path: Path) -> str:
    parts = path.relative_to(repo_root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, name: str) -> list[tuple[int, str, list[str]]]:
    """Every import of ``path`` (module ``name``), at any depth (a function's lazy import counts: it is a dependency
    all the same): ``(line, absolute module, imported names)``."""
    import ast

    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")
            base = base[:len(base) - node.level + 1] if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            out.append((node.lineno, module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out.extend((node.lineno, a.name, []) for a in node.names)
    return out


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


#: Per package checked for circles: the least number of modules it must have (so that a moved folder fails loudly).
CIRCLE_FREE = {"train": 15, "agents": 12}


@pytest.mark.parametrize("package", sorted(CIRCLE_FREE))
def test_no_import_circles(repo_root: Path, package: str) -> None:
    """No two modules of ``train/`` or of ``agents/`` import each other, directly or round a longer circle, counting
    imports inside functions too (a circle is two rooms pretending to be one).

    ``train/``: the trainer, its rollouts, the Ray connection, the evaluation harness and the command line depend one
    way. ``agents/``: the agent table (``agents/registry.py``) is a plug-in table whose factories import the agents
    they build inside functions, lazily, so that reading the table loads no numba or torch. Those lazy imports count
    here like any other: they are why the registry sits at the top of ``agents/``, above every agent it builds, and
    nothing it builds looks a name up in it again. So ``agents.bots.make_bot`` makes the scripted bots of
    ``agents.bots`` alone (any bot of the table: ``agents.registry.make_bot``), ``search:SPEC`` gets its network
    built by the table (``agents.search.make_search_agent(..., make_net)``), ``MAX_SIMULATIONS`` lives in
    ``agents.base``, below the table and both search players, and ``state_obs`` in ``cassino_env.obs``. Above the
    table only ``agents.gym_env``, whose opponents are agent specs."""
    files = {_module_name(repo_root, p): p for p in sorted((repo_root / package).rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        deps = set()
        for _, module, imported in _imports(path, name):
            deps.update(m for m in (module, *(f"{module}.{x}" for x in imported)) if m in files and m != package)
        graph[name] = deps - {name}
    assert len(graph) > CIRCLE_FREE[package]
    assert _circles(graph) == []


def test_agents_never_imports_train(repo_root: Path) -> None:
    """No arrow runs back up from ``agents`` to ``train`` (``cassino_env`` imports neither: the tests above), counting
    imports inside functions and ``importlib.import_module("train...")``."""
    upward = re.compile(r"^\s*(?:>>> )?(?:import|from)\s+train\b|import_module\(\s*[\"']train\b", re.MULTILINE)
    files = sorted((repo_root / "agents").rglob("*.py"))
    assert files
    offenders = [f"{path.relative_to(repo_root)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0).strip()}"
                 for path in files for text in [path.read_text(encoding="utf-8")] for m in upward.finditer(text)]
    assert offenders == [], "agents imports train:\n" + "\n".join(offenders)


#: Tests that import a private name on purpose, each with why: a unit test of that private helper itself.
PRIVATE_IN_TESTS = {
    ("tests/test_aec.py", "cassino_env.core._cacheguard"): "tests the kernel cache guard, a core internal",
    ("tests/test_compile_notice.py", "cassino_env.core._cacheguard"): "tests the first-compile notice of the guard",
    ("tests/test_bench.py", "train.bench._bench_hearts"): "tests the benchmark's OpenSpiel row without OpenSpiel",
    ("tests/test_bench.py", "cassino_env.bench._bench_hearts"): "tests the benchmark's OpenSpiel row",
    ("tests/test_cli.py", "train.cli._usage"): "tests the usage text of the command line",
    ("tests/test_cli.py", "train.cli._load"): "reads each command as the command line loads it, to test its help",
    ("tests/test_bots.py", "agents.bots._value"): "checks the bot kernel's point sum by set bits against the loop",
    ("tests/test_bots.py", "agents.bots._value_bits"): "checks the bot kernel's point sum by set bits",
    ("tests/test_play.py", "train.play._why_illegal"): "tests the terminal game's explanation of an illegal move",
    ("tests/test_presets_env.py", "train.play._deal_report"): "tests the terminal game's end-of-deal report",
}


def _is_module(repo_root: Path, dotted: str) -> bool:
    path = repo_root / Path(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _private_uses(repo_root: Path, path: Path) -> list[tuple[int, str]]:
    """``(line, module.name)`` of every private name (``_x``, not ``__x__``) of another project module that ``path``
    imports (``from m import _x``) or reads off an imported module (``m._x``). Private modules imported by their
    own package (``from . import _kernels`` in ``cassino_env``) are that package's internals, not another's."""
    import ast

    name = _module_name(repo_root, path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    aliases: dict[str, str] = {}
    for line, module, imported in _imports(path, name):
        if module.partition(".")[0] not in PROJECT:
            continue
        for x in imported:
            target = f"{module}.{x}"
            private = x.startswith("_") and not x.startswith("__")
            own_private_module = private and module == package and (repo_root / Path(*module.split(".")) /
                                                                     f"{x}.py").is_file()
            if private and not own_private_module:
                found.append((line, target))
            if _is_module(repo_root, target):  # `from train import config`: config._x would be config's private
                aliases.setdefault(x, target)
        if not imported:
            aliases.setdefault(module.partition(".")[0], module.partition(".")[0])
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            chain, base = [node.attr], node.value
            while isinstance(base, ast.Attribute):
                chain.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name) and base.id in aliases:
                found.append((node.lineno, ".".join([aliases[base.id], *reversed(chain)])))
    return found


def test_no_module_imports_another_modules_private_names(repo_root: Path) -> None:
    """No module imports (or reads off an imported module) a private name of another: what a module shares is
    public. The core's own modules are left out (their private modules are the core's internals, shared through
    ``cassino_env.core`` and ``kernel_api``: the test above keeps the rest of the project out of them); tests are
    held to the rule too, but for :data:`PRIVATE_IN_TESTS`, each a unit test of the private helper it imports."""
    core_dir = repo_root / "cassino_env" / "core"
    files = sorted(p for d in PROJECT for p in (repo_root / d).rglob("*.py") if core_dir not in p.parents)
    assert len(files) > 50
    offenders = []
    for path in files:
        rel = path.relative_to(repo_root).as_posix()
        for line, target in _private_uses(repo_root, path):
            if rel.startswith("tests/") and any(rel == f and (target == t or target.startswith(t + "."))
                                                for f, t in PRIVATE_IN_TESTS):
                continue
            offenders.append(f"{rel}:{line}: {target}")
    assert offenders == [], "modules use another module's private names:\n" + "\n".join(offenders)


#: A State's packed arrays (``cassino_env.core.State._u64`` ... ``_rl``), the core's alone.
_STATE_PACKED = re.compile(r"\.\_(?:u64|i8|i16|i64|m8|mvc|cfg|rl)\b")


def test_only_the_core_reads_a_states_packed_arrays(repo_root: Path) -> None:
    """Outside the core, a State is read through its public fields and properties (``State.general_moves``, not
    ``state._cfg``) and kernels get its arrays from ``cassino_env.core.kernel_args``; tests of the core's internals
    (tests/test_core.py) may look inside."""
    core_dir = repo_root / "cassino_env" / "core"
    files = sorted(p for d in ("cassino_env", "agents", "train", "scripts") for p in (repo_root / d).rglob("*.py")
                   if core_dir not in p.parents)
    offenders = [f"{path.relative_to(repo_root)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
                 for path in files for text in [path.read_text(encoding="utf-8")]
                 for m in _STATE_PACKED.finditer(text)]
    assert offenders == [], "modules outside the core read a State's packed arrays:\n" + "\n".join(offenders)


#: The longest a module of ``train/`` or ``agents/`` may grow, in lines (past it a module holds more than one room).
MAX_MODULE_LINES = 800


@pytest.mark.parametrize("package", ["train", "agents"])
def test_no_module_is_over_the_line_limit(repo_root: Path, package: str) -> None:
    """Every source file of ``train/`` and ``agents/`` has at most :data:`MAX_MODULE_LINES` lines: a module that
    grows past it is split by what it does (as ``train/stopping.py`` and ``train/recipe_state.py`` were)."""
    files = sorted((repo_root / package).rglob("*.py"))
    assert len(files) > CIRCLE_FREE[package]
    long = {str(p.relative_to(repo_root)): n for p in files
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}
