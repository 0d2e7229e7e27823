"""``cassino docs``: open the documents that errors cite, from any installed copy.

An error such as ``IllegalMoveError: ... (docs/rules.md 4.4)`` names a section of a document that ships inside the
package (:mod:`cassino_env.docs`); ``cassino docs rules 4.4`` prints that section, ``cassino docs rules`` the whole
document, ``cassino docs rules --path`` where the file is, and ``cassino docs`` lists the documents.
"""

from __future__ import annotations

from typing import Annotated

import tyro

from train.errors import error


def main(page: Annotated[str | None, tyro.conf.Positional, tyro.conf.arg(metavar="PAGE")] = None,
         section: Annotated[str | None, tyro.conf.Positional, tyro.conf.arg(metavar="SECTION")] = None,
         path: bool = False) -> int:
    """Print a shipped document (the rules contract, the JSON format), one section of it, or where it is.

    Errors cite sections as "docs/rules.md 4.4": `cassino docs rules 4.4` prints section 4.4.
    With no PAGE, lists the documents and their files.

    Args:
        page: the document: rules (docs/rules.md) or interchange (docs/interchange.md).
        section: a section number (4.4, 7) or heading (Move, "Deal tally"); default the whole document.
        path: print the file's path instead of its text.
    """
    from cassino_env import docs

    try:
        if page is None:
            for name, (_, what) in docs.PAGES.items():
                print(f"{name:<12} {docs.path(name)}\n{'':<12} {what}")
            return 0
        if path:
            if section is not None:
                return error("section: --path prints the whole file's path; leave the section out")
            print(docs.path(page))
            return 0
        print(docs.text(page, section), end="")
    except docs.DocumentError as exc:
        return error(exc)
    except BrokenPipeError:  # e.g. `cassino docs rules | head`
        pass
    return 0
