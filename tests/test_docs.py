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
            if path.is_file() and path.suffix in _SUFFIXES and not _SKIP_DIRS & set(path.parts):
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
