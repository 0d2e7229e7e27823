"""Every documentation example that shows its output prints exactly that output (issue 26 item 15).

A ```python block followed (after one paragraph at most) by a ```text block is an example with its printed output:
the test runs the block and compares what it prints, line by line, with the text block. The pages listed must have
at least one such example, so an example that prints nothing cannot come back unnoticed.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)
#: The pages checked (relative to docs/): the README's "From Python" example too, the first code a newcomer runs.
PAGES = ("oracle.md", "environments.md", "../README.md")


def examples(page: str) -> list[tuple[str, str]]:
    """(code, expected output) pairs of a page: a python block whose next block is a text block."""
    blocks = [(m.group(1), m.group(2), m.start(), m.end()) for m in BLOCK.finditer((DOCS / page).read_text())]
    pairs = []
    for (lang, code, _, _), (nxt, out, _, _) in zip(blocks, blocks[1:], strict=False):
        if lang == "python" and nxt == "text":
            pairs.append((code, out))
    return pairs


@pytest.mark.parametrize("page", PAGES)
def test_examples_print_what_the_page_shows(page: str) -> None:
    pairs = examples(page)
    assert pairs, f"docs/{page} has no example with its printed output"
    for code, expected in pairs:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            exec(compile(code, f"docs/{page}", "exec"), {"__name__": "__doc_example__"})
        printed = buf.getvalue().strip().splitlines()
        assert printed, f"an example of docs/{page} prints nothing"
        assert printed == expected.strip().splitlines()
