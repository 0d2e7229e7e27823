"""A griffe extension for the documentation site (mkdocs.yml): doctest examples in docstrings render as code.

The project's docstrings hold runnable examples (``>>>`` lines, checked by ``pytest --doctest-modules``) in their
prose, not only under an ``Examples:`` heading. Markdown reads a ``>>>`` line as three nested quotes and
``obs["mask"][0]`` in it as a reference link, so mkdocstrings would print them as text and warn (which fails
``mkdocs build --strict``). This extension fences each example, from its first ``>>>`` line to the blank line that
ends it (as doctest delimits examples), as a ``pycon`` code block, before the docstring is parsed.
"""

from __future__ import annotations

from typing import Any

import griffe


def fence_doctests(text: str) -> str:
    """``text`` with every doctest example wrapped in a fenced ``pycon`` block at the example's indentation.

    >>> fence_doctests("Sum:\\n\\n>>> 1 + 1\\n2\\n\\nDone.").splitlines()
    ['Sum:', '', '```pycon', '>>> 1 + 1', '2', '```', '', 'Done.']
    """
    out: list[str] = []
    indent: str | None = None  # the open example's indentation, None outside an example
    fenced = False  # inside a fence the docstring wrote itself
    for line in text.splitlines():
        stripped = line.lstrip()
        if indent is not None and not stripped:
            out.append(f"{indent}```")
            indent = None
        elif indent is None and stripped.startswith("```"):
            fenced = not fenced
        elif indent is None and not fenced and stripped.startswith(">>>"):
            indent = line[: len(line) - len(stripped)]
            out.append(f"{indent}```pycon")
        out.append(line)
    if indent is not None:
        out.append(f"{indent}```")
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    """Fences the doctest examples of every docstring griffe loads (:func:`fence_doctests`)."""

    def on_instance(self, *, node: Any, obj: griffe.Object, agent: Any, **kwargs: Any) -> None:  # noqa: ARG002
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)
