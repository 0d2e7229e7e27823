"""The shipped documents: every citation of docs/rules.md and docs/interchange.md in the project names a section (and
a numbered rule or worked case) that exists, and no file cites a document users do not have."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "docs" / "rules.md"
INTERCHANGE = ROOT / "docs" / "interchange.md"

#: Where citations live: the packages, tests, configs, notebooks, scripts, CI, documents and the README.
_TREES = ("cassino_env", "agents", "train", "tests", "configs", "notebooks", "scripts", "docs", ".ci")
_FILES = ("README.md", "pyproject.toml")
_SUFFIXES = {".py", ".md", ".json", ".yaml", ".yml", ".toml", ".ipynb", ".txt", ".cfg", ""}
_SKIP_DIRS = {"__pycache__", ".ipynb_checkpoints", "runs"}


def _text_files() -> list[Path]:
    out = [ROOT / f for f in _FILES if (ROOT / f).is_file()]
    for tree in _TREES:
        for path in sorted((ROOT / tree).rglob("*")):
            if path.is_file() and path.suffix in _SUFFIXES and not _SKIP_DIRS & set(path.relative_to(ROOT).parts):
                out.append(path)
    return out


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return ""


def _sections(doc: Path) -> dict[str, list[str]]:
    """Section number ("4.1", "7") -> the lines of that section's own text, from the document's headings."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in _read(doc).splitlines():
        m = re.match(r"#{2,4}\s+(\d+(?:\.\d+)*)\.?\s", line)
        if m:
            current = sections.setdefault(m.group(1), [])
        elif line.startswith("#"):
            current = None
        elif current is not None:
            current.append(line)
    return sections


def _numbered_items(lines: list[str]) -> set[int]:
    return {int(m.group(1)) for line in lines if (m := re.match(r"(\d+)\.\s", line))}


def _headings(doc: Path) -> set[str]:
    return {m.group(1).strip() for line in _read(doc).splitlines() if (m := re.match(r"#{1,4}\s+(.+)", line))}


_NUM = r"\d+(?:\.\d+)?"
#: "docs/rules.md 4.4", "docs/rules.md section 3", "``docs/rules.md`` 6", "docs/rules.md 2, 4.4", "... 2.2-2.3".
_RULES_CITE = re.compile(rf"docs/rules\.md(?:``)?(?:'s)?\s+(?:sections?\s+)?(?P<refs>{_NUM}(?:\s*(?:,|-|–|and)\s*{_NUM}"
                         rf"(?![\d.]*\s*(?:points|players|seats|cards)))*)(?P<tail>(?:\s+(?:rules?|cases?)\s+\d+"
                         r"(?:\s*[-–]\s*\d+)?)?)")
_INTERCHANGE_CITE = re.compile(r"docs/interchange\.md(?:``)?\s+\"(?P<heading>[^\"]+)\"")


def _rules_citations() -> list[tuple[str, str, str]]:
    out = []
    for path in _text_files():
        text = _read(path)
        for m in _RULES_CITE.finditer(text):
            out.append((path.relative_to(ROOT).as_posix(), m.group("refs"), m.group("tail").strip()))
    return out


def test_rules_document_has_every_section_of_the_contract():
    sections = _sections(RULES)
    for number in ("1", "2", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "3", "4", "4.1", "4.2", "4.3", "4.4", "5",
                   "5.1", "5.2", "5.3", "6", "7"):
        assert number in sections, f"docs/rules.md has no section {number}"
    assert _numbered_items(sections["4.1"]) == set(range(1, 8))
    assert _numbered_items(sections["7"]) == set(range(1, 15))
    assert {"Position", "Move", "Deal tally", "Size"} <= _headings(INTERCHANGE)


def test_every_rules_citation_names_an_existing_section():
    sections = _sections(RULES)
    citations = _rules_citations()
    assert len(citations) > 100, "the citation pattern no longer finds the project's citations"
    bad = []
    for where, refs, tail in citations:
        numbers = re.findall(_NUM, refs)
        bad += [f"{where}: docs/rules.md {n}" for n in numbers if n not in sections]
        if tail and numbers:
            items = [int(x) for x in re.findall(r"\d+", tail)]
            known = _numbered_items(sections.get(numbers[-1], []))
            bad += [f"{where}: docs/rules.md {numbers[-1]} {tail}" for i in items if i not in known]
    assert not bad, "citations of sections docs/rules.md does not have:\n" + "\n".join(sorted(set(bad)))


def test_every_interchange_citation_names_an_existing_heading():
    headings = _headings(INTERCHANGE)
    cited = [(path.relative_to(ROOT).as_posix(), m.group("heading")) for path in _text_files()
             for m in _INTERCHANGE_CITE.finditer(_read(path))]
    assert len(cited) >= 5, "the citation pattern no longer finds the project's citations"
    bad = [f"{where}: {h!r}" for where, h in cited if h not in headings]
    assert not bad, f"citations of headings docs/interchange.md does not have ({sorted(headings)}):\n" + "\n".join(bad)


#: Names of documents (and folders) that live only with the project's specification, never shipped to users. Built
#: from pieces so that this file does not match itself.
_UNSHIPPED = [re.compile(p) for p in (r"\bRULES" r"\.md", r"\bINTERCHANGE" r"\.md", r"\bSTYLE" r"\.md",
                                       r"\bseeds? 0" r"\d\d\b", r"\.\./" r"shared", r"/work/" r"shared",
                                       r"\bshared/" r"(cases|seeds)")]


@pytest.mark.parametrize("pattern", _UNSHIPPED, ids=lambda p: p.pattern)
def test_no_file_cites_an_unshipped_document(pattern):
    hits = [f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}"
            for path in _text_files() for n, line in enumerate(_read(path).splitlines(), 1)
            if pattern.search(line) and path != Path(__file__).resolve()]
    assert not hits, "cites a document users do not have:\n" + "\n".join(hits)


def test_citation_pattern_reads_every_form():
    """The patterns above on the citation forms the project uses (so a wrong pattern cannot pass silently)."""
    forms = {
        "(docs/rules.md 4.4)": ("4.4", ""),
        "docs/rules.md section 3 switch": ("3", ""),
        "``docs/rules.md`` 6 (`classic`)": ("6", ""),
        "docs/rules.md 2, 4.4)": ("2, 4.4", ""),
        "docs/rules.md 2.2-2.3 (no deal)": ("2.2-2.3", ""),
        "docs/rules.md 4.1 rule 2)": ("4.1", "rule 2"),
        "docs/rules.md 7 case 12:": ("7", "case 12"),
        "docs/rules.md 2: 11 points": ("2", ""),
        "docs/rules.md 6: 2, or 4 for cicera": ("6", ""),
    }
    for text, (refs, tail) in forms.items():
        m = _RULES_CITE.search(text)
        assert m is not None and (m.group("refs"), m.group("tail").strip()) == (refs, tail), text
    assert _INTERCHANGE_CITE.search('see docs/interchange.md "Deal tally".').group("heading") == "Deal tally"


# -- the documents ship with the package (cassino_env.docs, `cassino docs`) ------------------------------------------


def test_the_package_documents_are_the_repository_files():
    """One source of truth: the package's documents resolve to docs/rules.md and docs/interchange.md (links in a
    clone), so the site, the citations and the wheel read the same bytes."""
    from cassino_env import docs

    for page, (name, _) in docs.PAGES.items():
        shipped = ROOT / "cassino_env" / "docs" / name
        assert shipped.is_symlink(), f"{shipped} must stay a link to docs/{name} (one copy of the text)"
        assert docs.path(page) == (ROOT / "docs" / name).resolve()
        assert docs.path(page).read_bytes() == (ROOT / "docs" / name).read_bytes()


def test_every_cited_rules_section_opens_from_the_package():
    from cassino_env import docs

    numbers = {n for _, refs, _ in _rules_citations() for n in re.findall(_NUM, refs)}
    assert {"4.4", "7", "2.6"} <= numbers
    for n in sorted(numbers):
        first = docs.text("rules", n).splitlines()[0]
        assert re.match(rf"#+ {re.escape(n)}\.?\s", first), (n, first)
    assert docs.text("rules", "4").count("\n### 4.") == 4  # a section holds its subsections
    assert docs.text("interchange", "deal tally").startswith("## Deal tally\n")


@pytest.mark.parametrize(("args", "message"), [
    (["nosuch"], "page: unknown document 'nosuch'; the documents are rules, interchange"),
    (["rules", "9.9"], "section: rules has no section '9.9'; its sections are Sources, 1, 2, 2.1"),
    (["rules", "4.4", "--path"], "section: --path prints the whole file's path"),
])
def test_cassino_docs_bad_input_is_one_error_line(args, message, capsys):
    from train import cli

    assert cli.main(["docs", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"error: {message}") and captured.err.count("\n") == 1


def test_cassino_docs_prints_a_cited_section_the_whole_file_or_its_path(capsys):
    from train import cli

    assert cli.main(["docs", "rules", "4.4"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("### 4.4 Owner obligations\n") and "### 5" not in out and "no_trail" in out
    assert cli.main(["docs", "interchange"]) == 0
    assert capsys.readouterr().out == (ROOT / "docs" / "interchange.md").read_text(encoding="utf-8")
    assert cli.main(["docs", "rules", "--path"]) == 0
    assert Path(capsys.readouterr().out.strip()) == (ROOT / "docs" / "rules.md").resolve()
    assert cli.main(["docs"]) == 0
    listed = capsys.readouterr().out
    assert "rules" in listed and "interchange" in listed and str((ROOT / "docs" / "rules.md").resolve()) in listed


@pytest.mark.slow
def test_the_wheel_holds_the_documents_and_cassino_docs_reads_them(tmp_path):
    """`pip wheel` replaces the links by the files' bytes; an installed wheel (no clone next to it) prints a cited
    section."""
    import shutil
    import subprocess
    import sys
    import zipfile

    src = tmp_path / "src"  # a copy, links kept as links, so the build leaves nothing in the checkout (build/)
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "docs", "cassino_env", "agents", "train"):
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy2
        kwargs = {"symlinks": True, "ignore": shutil.ignore_patterns("__pycache__")} if (ROOT / name).is_dir() else {}
        copy(ROOT / name, src / name, **kwargs)
    assert (src / "cassino_env" / "docs" / "rules.md").is_symlink()
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path), str(src)], check=True, capture_output=True, timeout=600)
    (wheel,) = tmp_path.glob("cassino_rl-*.whl")
    with zipfile.ZipFile(wheel) as z:
        for name in ("rules.md", "interchange.md"):
            assert z.read(f"cassino_env/docs/{name}") == (ROOT / "docs" / name).read_bytes()
        z.extractall(tmp_path / "site")
    code = ("import sys; from train import cli; import cassino_env.docs as d; print(d.path('rules')); "
            "sys.exit(cli.main(['docs', 'rules', '4.4']))")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"}, check=False)
    assert done.returncode == 0, done.stderr
    where, first = done.stdout.splitlines()[:2]
    assert Path(where) == tmp_path / "site" / "cassino_env" / "docs" / "rules.md"
    assert first == "### 4.4 Owner obligations"


# -- the documentation site (mkdocs.yml; CI builds it with `mkdocs build --strict`) ---------------------------------


def _nav_pages(nav) -> list[str]:
    out = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        out += _nav_pages(value) if isinstance(value, list) else [value]
    return out


def test_the_site_lists_every_page_and_has_an_api_reference():
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = _nav_pages(config["nav"])
    pages = sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md"))
    assert sorted(nav) == pages, "every docs/ page is in mkdocs.yml's nav, and every nav entry is a page"
    assert len(pages) >= 8
    for page in ("rules.md", "interchange.md", "environments.md", "training.md", "benchmarks.md", "ecosystem.md",
                 "records.md", "getting-started.md"):
        assert page in nav, page
    api = [p for p in nav if p.startswith("api/")]
    blocks = [line for p in api for line in (ROOT / "docs" / p).read_text(encoding="utf-8").splitlines()
              if line.startswith("::: ")]
    assert {"::: cassino_env.rules", "::: cassino_env.vector", "::: agents.registry"} <= set(blocks)
    for block in blocks:  # each names an importable module, as mkdocstrings needs
        module = block.split()[1]
        assert (ROOT / module.replace(".", "/")).with_suffix(".py").is_file() or \
            (ROOT / module.replace(".", "/") / "__init__.py").is_file(), block
    assert config["theme"]["name"] == "material" and config.get("strict") is True


def test_doctest_examples_render_as_code_on_the_site():
    """scripts/griffe_doctests.py fences each doctest example (from its first >>> to the blank line after it)."""
    import importlib.util

    pytest.importorskip("griffe", reason="griffe comes with the docs extra (pip install -e '.[docs]')")

    spec = importlib.util.spec_from_file_location("griffe_doctests", ROOT / "scripts" / "griffe_doctests.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = 'Args:\n    x: the mask.\n\n    >>> obs["mask"][0]\n    1\n\nAfter.\n\n```python\n>>> kept\n```'
    assert module.fence_doctests(text).splitlines() == [
        "Args:", "    x: the mask.", "", "    ```pycon", '    >>> obs["mask"][0]', "    1", "    ```", "", "After.", "",
        "```python", ">>> kept", "```"]
    assert module.fence_doctests(">>> 1\n1").splitlines() == ["```pycon", ">>> 1", "1", "```"]


def test_the_api_reference_covers_every_public_module():
    """Every module of the three packages (private ``_x.py`` ones and the worked examples aside) has a ``:::`` block
    in docs/api/, so the reference does not silently miss a new module."""
    blocks = {line.split()[1] for page in (ROOT / "docs" / "api").glob("*.md")
              for line in page.read_text(encoding="utf-8").splitlines() if line.startswith("::: ")}
    modules = {p.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".").removesuffix(".__init__")
               for package in ("cassino_env", "agents", "train") for p in (ROOT / package).rglob("*.py")
               if "__pycache__" not in p.parts and not p.name.startswith("_") or p.name == "__init__.py"}
    modules = {m for m in modules if not any(part.startswith("_") for part in m.split("."))
               and not m.startswith("train.example_") and m not in {"agents", "train"}}
    missing = sorted(modules - blocks)
    assert not missing, f"docs/api/ has no ::: block for {missing}"
