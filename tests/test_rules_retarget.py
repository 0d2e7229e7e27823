"""A RuleSet re-targeted to another player count obeys docs/rules.md 6 (player counts) and docs/rules.md 3
(``partnerships``
defaults to true for 4 and 6 players), as ``make_rules(preset, n)`` does; ``cassino_env.env``, the vector env,
``play`` and ``eval`` take this path.
"""

from __future__ import annotations

import pytest

import cassino_env
from cassino_env.errors import RulesError
from cassino_env.rules import make_rules


@pytest.mark.parametrize(("preset", "n"), [("matsuda", 3), ("classic", 6), ("stadium", 4), ("royal", 6)])
def test_ruleset_retarget_rejects_unlisted_player_count(preset, n):
    """docs/rules.md 6: a preset with a player count its row does not list is an error."""
    base = make_rules(preset)
    with pytest.raises(RulesError):
        make_rules(base, num_players=n)


@pytest.mark.parametrize(("preset", "n"), [("bga", 6), ("bga", 4), ("classic", 4), ("royal", 4)])
def test_ruleset_retarget_defaults_partnerships(preset, n):
    """docs/rules.md 3 partnerships: default true for 4 and 6 players (as make_rules(preset, n) gives)."""
    retargeted = make_rules(make_rules(preset), num_players=n)
    assert retargeted.partnerships == make_rules(preset, num_players=n).partnerships is True


def test_env_with_ruleset_and_player_count():
    """The AEC env documents RulesError for a count the preset does not allow (docs/rules.md 6)."""
    with pytest.raises(RulesError):
        cassino_env.env(rules=make_rules("matsuda"), num_players=3)
    env = cassino_env.env(rules=make_rules("bga"), num_players=6)
    assert env.unwrapped.rules.sides == ((0, 3), (1, 4), (2, 5))


def test_cicera_partnerships_off_via_ruleset():
    """docs/rules.md 6: cicera is played in 4-player partnerships only (make_rules("cicera",
    partnerships=False) refuses)."""
    with pytest.raises(RulesError):
        make_rules(make_rules("cicera"), partnerships=False)
