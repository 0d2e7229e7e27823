"""docs/rules.md section 7 worked cases, run from ``tests/data/worked_cases.json`` (the same cases as
positions and moves).

The file's ``about`` field says how each case is checked; :func:`check_case` does exactly that and is shared with
``test_rules_classic.py``, whose cases use the same format plus a few optional fields (``exact_legal``, ``why``,
``items``, ``sides``; see ``tests/data/classic_cases.json``).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import cassino_env
from cassino_env.cards import card_id

DATA = Path(__file__).parent / "data"


def load_cases(name: str) -> list[dict[str, Any]]:
    """The ``cases`` list of ``tests/data/<name>``."""
    return json.loads((DATA / name).read_text(encoding="utf-8"))["cases"]


def move_key(move: dict[str, Any]) -> tuple:
    """A move's identity (docs/interchange.md "Move"): action, card, the set of take/use cards, value, ace."""
    cards = move.get("take", move.get("use", []))
    return (move["action"], card_id(move["card"]), frozenset(card_id(c) for c in cards), move.get("value"),
            move.get("ace", 1))


def _card_set(cards: list[str]) -> frozenset[int]:
    return frozenset(card_id(c) for c in cards)


def normalise(field: str, value: Any) -> Any:
    """A position field in comparable form: card lists as sets (``stock`` in order), builds as a set."""
    if field in ("hands", "captured"):
        return [_card_set(cards) for cards in value]
    if field == "loose":
        return _card_set(value)
    if field == "stock":
        return [card_id(c) for c in value]
    if field == "builds":
        return {(_card_set(b["cards"]), b["value"], b["owner"]) for b in value}
    if field == "last_trail":
        return None if value is None else card_id(value)
    return value


def check_case(case: dict[str, Any]) -> None:
    """Check one case of the worked-cases format (see the ``about`` fields of the data files)."""
    position = case["position"]
    frozen = copy.deepcopy(position)
    listed = cassino_env.legal_moves(position)
    keys = [move_key(m) for m in listed]
    assert len(keys) == len(set(keys)), f"{case['id']}: duplicate legal moves {listed}"
    for move in case.get("legal", []):
        assert move_key(move) in keys, f"{case['id']}: legal move {move} not listed; listed: {listed}"
    if case.get("exact_legal"):
        assert set(keys) == {move_key(m) for m in case["legal"]}, f"{case['id']}: listed {listed}"
    whys = case.get("why", [None] * len(case.get("illegal", [])))
    for move, why in zip(case.get("illegal", []), whys, strict=True):
        assert move_key(move) not in keys, f"{case['id']}: illegal move {move} is listed"
        with pytest.raises(cassino_env.IllegalMoveError) as err:
            cassino_env.apply_move(position, move)
        assert "docs/rules.md" in str(err.value), f"{case['id']}: {move}: message names no rule: {err.value}"
        if why is not None:
            assert why in str(err.value), f"{case['id']}: {move}: expected {why!r} in {err.value}"
    if "apply" in case:
        after = cassino_env.apply_move(position, case["apply"])
        for field, want in case["after"].items():
            assert normalise(field, after[field]) == normalise(field, want), (
                f"{case['id']}: after[{field!r}] is {after[field]}, expected {want}")
    if "totals" in case:
        tally = cassino_env.score_deal(position)
        assert tally["totals"] == case["totals"], f"{case['id']}: {tally}"
        assert sum(tally["totals"]) == sum(sum(items.values()) for items in tally["items"])
        if "items" in case:
            assert tally["items"] == case["items"], f"{case['id']}: {tally}"
        if "sides" in case:
            assert tally["sides"] == case["sides"], f"{case['id']}: {tally}"
    assert position == frozen, f"{case['id']}: the oracle modified its input position"


WORKED = load_cases("worked_cases.json")


def test_worked_cases_file_is_complete() -> None:
    """docs/rules.md section 7 has 14 cases; the JSON holds each once, W01-W14."""
    assert [c["id"] for c in WORKED] == [f"W{i:02d}" for i in range(1, 15)]


@pytest.mark.parametrize("case", WORKED, ids=lambda c: c["id"])
def test_worked_case(case: dict[str, Any]) -> None:
    check_case(case)
