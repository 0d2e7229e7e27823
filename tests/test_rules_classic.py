"""Classic-preset rule cases as data: ``tests/data/classic_cases.json``, one or more per rule of docs/rules.md 2-5.

Each case is a docs/interchange.md position with the expected legal and illegal moves, the position after a move, or
the
deal's tally; its ``note`` carries a one-line picture of the table. :func:`test_worked_cases.check_case` runs them.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_worked_cases import check_case, load_cases

CASES = load_cases("classic_cases.json")


def test_cases_are_well_formed() -> None:
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids)) >= 40
    for c in CASES:
        assert c["rules_section"].startswith("docs/rules.md "), c["id"]
        assert c["note"], c["id"]
        rules = c["position"]["rules"]
        assert (rules if isinstance(rules, str) else rules["preset"]) == "classic", c["id"]
        assert {"legal", "illegal", "apply", "totals"} & set(c), f"{c['id']} checks nothing"
        assert "after" in c if "apply" in c else "after" not in c, c["id"]
        assert len(c.get("why", c.get("illegal", []))) == len(c.get("illegal", [])), c["id"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["id"])
def test_classic_case(case: dict[str, Any]) -> None:
    check_case(case)
