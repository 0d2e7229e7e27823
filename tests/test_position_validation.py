"""Malformed preset positions: the oracle and core.from_position refuse them, naming the field and rule."""

from __future__ import annotations

import pytest

import cassino_env
from cassino_env.errors import PositionError


def test_cicera_position_with_builds_is_rejected():
    """docs/rules.md 3 builds=none (cicera, docs/rules.md 6): a cicera position cannot hold builds.

    The core's from_position refuses ("builds: preset 'cicera' has no builds"), but the oracle accepts the position
    and even lists a capture of the build.
    """
    pos = {"rules": "cicera", "to_move": 0, "hands": [["7H"], ["2C"], ["3C"], ["4C"]],
           "builds": [{"cards": ["3D", "4D"], "value": 7, "owner": 1}]}
    with pytest.raises(PositionError, match="builds"):
        cassino_env.legal_moves(pos)


@pytest.mark.parametrize("value", [11, 12, 13])
def test_build_value_above_10_without_numeric_courts(value):
    """docs/rules.md 4.1 rule 3: v <= 10 with court_values=none; 14 is the only extra value ace_high allows.

    With {"preset": "classic", "ace_high": true} the oracle accepts builds of 11-13 (max_value is 14 there).
    """
    cards = {11: ["5D", "6D"], 12: ["5D", "7D"], 13: ["6D", "7D"]}[value]
    pos = {"rules": {"preset": "classic", "ace_high": True}, "to_move": 0, "hands": [["8S"], ["2C"]],
           "builds": [{"cards": cards, "value": value, "owner": 1}]}
    with pytest.raises(PositionError, match="value"):
        cassino_env.legal_moves(pos)


def test_core_from_position_rejects_build_that_does_not_split():
    """docs/rules.md 1 build: its cards split into groups each summing to the value.

    5C 5D 4D sum to 14 = 2 x 7 but do not split into groups of 7; from_position checks only the sum's divisibility
    (the oracle rejects the same build). The AEC env's reset(options={"position": ...}) goes through this path.
    """
    from cassino_env import core
    from cassino_env.cards import card_id
    from cassino_env.rules import make_rules

    build = ([card_id("5C"), card_id("5D"), card_id("4D")], 7, 1)
    with pytest.raises(PositionError):
        core.from_position(make_rules("stadium"), [[card_id("7C"), card_id("7D")], [card_id("3C")]], [], [build],
                           to_move=0)
