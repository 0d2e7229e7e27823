"""The README's Layout table against the tree: every folder of the project has a row, every module of a package is
named in its folder's row, every file a row names exists, and a name given with its module ("`config.py`, `Args`")
is defined there. Also: the README stays a front page (at most 300 lines) whose links resolve."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

#: Top-level folders that are not part of the project: tool and build output, caches, virtual environments.
_NOT_PROJECT = {"runs", "site", "build", "dist", "__pycache__"}
#: Folders whose every Python module (``__init__.py`` aside) the row must name.
_PACKAGES = ("cassino_env", "cassino_env/core", "agents", "train", "scripts")


def _layout() -> dict[str, str]:
    """Row path (``cassino_env/``, ``.ci/run``) -> its description, from the README's "## Layout" table."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\|\s*`([^`]+)`\s*\|(.*)\|\s*$", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


def _top_level_names(path: Path) -> set[str]:
    """Names defined or imported at the top level of a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def test_every_project_folder_has_a_row():
    rows = _layout()
    folders = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".")
               and p.name not in _NOT_PROJECT and not p.name.endswith(".egg-info")}
    missing = sorted(f"{f}/" for f in folders if f"{f}/" not in rows)
    assert not missing, f"README Layout has no row for {missing}"
    assert ".ci/run" in rows
    stale = sorted(r for r in rows if not (ROOT / r).exists())
    assert not stale, f"README Layout has rows for paths that do not exist: {stale}"


@pytest.mark.parametrize("folder", _PACKAGES)
def test_every_module_is_named_in_its_row(folder):
    rows = _layout()
    assert f"{folder}/" in rows, f"README Layout has no row for {folder}/"
    description = rows[f"{folder}/"]
    modules = sorted(p.name for p in (ROOT / folder).glob("*.py") if p.name != "__init__.py")
    missing = [m for m in modules if f"`{m}`" not in description]
    assert not missing, f"README Layout's {folder}/ row does not name {missing}"
    subfolders = sorted(p.name for p in (ROOT / folder).iterdir() if p.is_dir() and p.name != "__pycache__"
                        and not p.name.startswith("."))
    missing = [d for d in subfolders if f"`{d}/`" not in description]
    assert not missing, f"README Layout's {folder}/ row does not name the folders {missing}"


def test_every_file_a_row_names_exists():
    bad = []
    for row, description in _layout().items():
        base = ROOT / row if row.endswith("/") else ROOT
        for name in re.findall(r"`([\w.-]+(?:/[\w.-]*)*\.(?:py|md|yaml|yml|ipynb)|[\w.-]+/)`", description):
            if not ((base / name).exists() or (ROOT / name).exists()):
                bad.append(f"{row}: {name}")
    assert not bad, f"README Layout names files that are not there: {bad}"


def test_a_name_given_with_its_module_is_defined_there():
    """"(`config.py`, `Args`)" and "(`testing.py`, `check_rules`)" say where a name lives: it must be there."""
    pairs = []
    for row, description in _layout().items():
        for module, name in re.findall(r"`(\w+\.py)`[,:] `([A-Za-z_]\w*)`", description):
            path = ROOT / row / module
            pairs.append((row, module, name))
            assert path.is_file(), f"{row}: {module} is not a file"
            names = _top_level_names(path)
            if name not in names and "__getattr__" in names:  # a computed module attribute (PEP 562)
                dotted = (Path(row) / module).with_suffix("").as_posix().replace("/", ".")
                names |= {name} if hasattr(importlib.import_module(dotted), name) else set()
            assert name in names, f"README Layout: {row}{module} does not define {name}"
    assert len(pairs) >= 4, "the pattern no longer finds the table's module-and-name pairs"


def test_readme_is_a_front_page_whose_links_resolve():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300, "the README is a front page of at most 300 lines; the rest goes in docs/"
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if not re.match(r"\w+://", link)]
    assert len(local) >= 10
    missing = sorted({link for link in local if not (ROOT / link).exists()})
    assert not missing, f"README links to files that are not there: {missing}"
    # the two commands of the quick start: the main job on a lean install (the core dependencies, no extra), then the
    # tests on the dev extra; CI installs everything (issue 50: training needs no Ray, TorchRL, Playwright or Jupyter)
    assert ('pip install torch==2.13.0 && pip install -e . && cassino train\n'
            'pip install -e ".[dev]" && ruff check . && pytest -q\n') in text
    assert 'pip install -e ".[dev,docs]"' in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
