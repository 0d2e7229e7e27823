"""The two documents the library cites, shipped inside the package: the rules contract and the JSON format.

Errors and docstrings cite sections of them ("docs/rules.md 4.4", 'docs/interchange.md "Move"'). In a clone of the
repository those paths are the files themselves; an installed copy (a wheel) holds them here, in the package, so a
citation can be opened wherever the library runs: ``cassino docs rules 4.4`` prints that section, ``cassino docs
rules --path`` the file's location, and from Python :func:`path` and :func:`text` do the same.

One source of truth: the repository's ``docs/rules.md`` and ``docs/interchange.md`` are the files (the
documentation site is built from them); this folder holds symbolic links to them, which the wheel build replaces
with the files' contents (``pyproject.toml``, ``[tool.setuptools.package-data]``).

>>> path("rules").name
'rules.md'
>>> text("rules", "4.4").splitlines()[0]
'### 4.4 Owner obligations'
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["PAGES", "DocumentError", "path", "sections", "text"]

#: Page name -> (file name, what it is). The names are those of ``cassino docs PAGE``.
PAGES: dict[str, tuple[str, str]] = {
    "rules": ("rules.md", "the rules contract: every preset and switch, cited by section in errors"),
    "interchange": ("interchange.md", "the JSON format of positions, moves and deal tallies (the rules oracle)"),
}

_HEADING = re.compile(r"(#{1,6})\s+(.+?)\s*$")


class DocumentError(ValueError):
    """An unknown page or section; the message lists the ones there are."""


def path(page: str) -> Path:
    """The file of a shipped document.

    Args:
        page: a key of :data:`PAGES` (``"rules"``, ``"interchange"``).

    Returns:
        The path of the Markdown file: in a clone, the repository's ``docs/`` file (this folder's link resolved).

    Raises:
        DocumentError: an unknown page (the message lists :data:`PAGES`).
    """
    if page not in PAGES:
        raise DocumentError(f"page: unknown document {page!r:.40}; the documents are {', '.join(PAGES)}")
    return (Path(__file__).resolve().parent / PAGES[page][0]).resolve()


def sections(page: str) -> list[tuple[str, int, int]]:
    """The headings of a document as ``(key, level, line index)``, in order.

    A heading's key is its number when it has one ("4.4" for ``### 4.4 Owner obligations``, "7" for ``## 7.
    Worked cases``), else its text ("Move"). Level is the count of ``#``.

    Raises:
        DocumentError: an unknown page.
    """
    out = []
    fenced = False
    for i, line in enumerate(path(page).read_text(encoding="utf-8").splitlines()):
        if line.startswith("```"):
            fenced = not fenced
        m = None if fenced else _HEADING.match(line)
        if m:
            title = m.group(2)
            number = re.match(r"(\d+(?:\.\d+)*)\.?(?:\s|$)", title)
            out.append((number.group(1) if number else title, len(m.group(1)), i))
    return out


def text(page: str, section: str | None = None) -> str:
    """A shipped document's text, whole or one section (its heading and everything up to the next heading of the
    same or a higher level, so "4" includes 4.1 to 4.4).

    Args:
        page: a key of :data:`PAGES`.
        section: a section number as errors cite it (``"4.4"``, ``"7"``) or a heading's text (``"Move"``,
            case-insensitive); None for the whole document.

    Raises:
        DocumentError: an unknown page or section (the message lists the document's sections).
    """
    lines = path(page).read_text(encoding="utf-8").splitlines()
    if section is None:
        return "\n".join(lines) + "\n"
    heads = sections(page)
    wanted = section.strip().rstrip(".").casefold()
    for n, (key, level, start) in enumerate(heads):
        if key.casefold() == wanted:
            end = next((i for _, lv, i in heads[n + 1:] if lv <= level), len(lines))
            return "\n".join(lines[start:end]).rstrip() + "\n"
    keys = ", ".join(key for key, level, _ in heads if level > 1)
    raise DocumentError(f"section: {page} has no section {section!r:.40}; its sections are {keys}")
