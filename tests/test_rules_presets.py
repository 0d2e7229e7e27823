"""Rule cases for every rule where a preset differs from classic: ``tests/data/preset_cases.json``.

Each case is a docs/interchange.md position with the expected legal and illegal moves (each illegal move with the rule
text its error must name), the position after a move, or the deal's tally; :func:`test_worked_cases.check_case` runs
it. Test ids are the case ids, ``<preset>-<docs/rules.md section>-<rule>`` (e.g. ``bga-4.4-owner-must-capture``), and a
case's ``rule`` field names the docs/rules.md section and rule it tests, so every preset rule maps to a test.

Besides the cases: the docs/rules.md section 6 preset table itself (switch values, player counts, deal sizes), and a
check that every switch on which a preset differs from classic has at least one case.

A case carrying ``xfail`` states what docs/rules.md says where the reference engine disagrees; it is expected to fail
(strictly) until the engine or docs/rules.md is changed, and the text says why.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from test_worked_cases import check_case, load_cases

from cassino_env.errors import CassinoError, RulesError
from cassino_env.reference import Game
from cassino_env.rules import make_rules

CASES = load_cases("preset_cases.json")
PRESET_NAMES = ("classic", "matsuda", "cicera", "bga", "stadium", "royal")


def _preset(case: dict[str, Any]) -> str:
    rules = case["position"]["rules"]
    return rules if isinstance(rules, str) else rules["preset"]


def _param(case: dict[str, Any]) -> Any:
    marks = [pytest.mark.xfail(reason=case["xfail"], strict=True)] if "xfail" in case else []
    return pytest.param(case, id=case["id"], marks=marks)


def test_cases_are_well_formed() -> None:
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids)) >= 40
    for c in CASES:
        assert c["id"].split("-")[0] == _preset(c), f"{c['id']}: the id starts with the case's preset"
        assert c["rule"].startswith("docs/rules.md "), c["id"]
        assert c["note"], c["id"]
        assert {"legal", "illegal", "apply", "totals"} & set(c), f"{c['id']} checks nothing"
        assert ("after" in c) == ("apply" in c), c["id"]
        assert len(c.get("why", [])) == len(c.get("illegal", [])), c["id"]
        assert not c.get("exact_legal") or "legal" in c, c["id"]
    assert {_preset(c) for c in CASES} == set(PRESET_NAMES)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_preset_case(case: dict[str, Any]) -> None:
    check_case(case)


# -- docs/rules.md section 6: the preset table -------------------------------------------------------------------------

#: docs/rules.md section 6, one row per preset: allowed player counts and the switch values of section 3 (with
#: docs/rules.md 6's "In every preset" line: sweep_on_last_play true, in_play_bonuses only in cicera, residue_to
#: last_capturer except bga). ``rounds``: rounds per deal (4 table cards, then ``hand_size`` each per round).
TABLE: dict[str, dict[str, Any]] = {
    "classic": dict(players=(2, 3, 4), court_values="none", court_pair_take="one", ace_high=False,
                    capture_mode="groups", builds="standard", raise_own_build=True, raise_with_table_cards=False,
                    owner_rule="no_trail", scoring="standard", sweep_points=1, in_play_bonuses=False,
                    residue_to="last_capturer", target=21, hand_size=4),
    "matsuda": dict(players=(2,), court_values="numeric", ace_high=False, capture_mode="groups",
                    builds="reservation", raise_own_build=True, owner_rule="resolve_next_turn", scoring="standard",
                    sweep_points=1, in_play_bonuses=False, residue_to="last_capturer", target=21, hand_size=4),
    "cicera": dict(players=(4,), court_values="none", court_pair_take="one", ace_high=False,
                   capture_mode="one_group", builds="none", scoring="cicera", sweep_points=1, in_play_bonuses=True,
                   residue_to="last_capturer", target=51, hand_size=12),
    "bga": dict(players=(2, 3, 4, 6), court_values="numeric", ace_high=True, capture_mode="groups",
                builds="standard", raise_own_build=False, raise_with_table_cards=False,
                owner_rule="resolve_next_turn", scoring="bga", sweep_points=1, in_play_bonuses=False,
                residue_to="last_player", target=21, hand_size=4),
    "stadium": dict(players=(2,), court_values="none", court_pair_take="all", ace_high=False, capture_mode="groups",
                    builds="attach", raise_own_build=False, owner_rule="resolve_next_turn", scoring="standard",
                    sweep_points=1, in_play_bonuses=False, residue_to="last_capturer", target=21, hand_size=4),
    "royal": dict(players=(2, 3, 4), court_values="numeric", ace_high=True, capture_mode="groups",
                  builds="standard", raise_own_build=True, raise_with_table_cards=False, owner_rule="no_trail",
                  scoring="standard", sweep_points=1, in_play_bonuses=False, residue_to="last_capturer", target=21,
                  hand_size=4),
}


@pytest.mark.parametrize("preset", PRESET_NAMES, ids=lambda p: f"{p}-6-preset-table")
def test_preset_table(preset: str) -> None:
    """docs/rules.md 6: each preset's switches, player counts, partnerships, and the deal it makes."""
    row = dict(TABLE[preset])
    players = row.pop("players")
    for n in players:
        rules = make_rules(preset, n)
        for switch, want in row.items():
            assert getattr(rules, switch) == want, f"{preset} ({n} players): {switch}"
        assert rules.table_cards == 4, preset
        assert rules.sweep_on_last_play is True, preset
        assert rules.partnerships == (n in (4, 6)), f"{preset} ({n} players): partnerships"
        deck = random.Random(n).sample(range(52), 52)
        game = Game.new_deal(rules, deck, dealer=n - 1)
        assert len(game.loose) == 4
        assert [len(h) for h in game.hands] == [rules.hand_size] * n
        rounds = 48 // (rules.hand_size * n)
        assert len(game.stock) == (rounds - 1) * rules.hand_size * n, f"{preset} ({n} players): rounds"
    for n in sorted({2, 3, 4, 5, 6} - set(players)):
        with pytest.raises(CassinoError, match="docs/rules.md 6"):
            make_rules(preset, n)


def test_deal_sizes_named_in_rules_md_6() -> None:
    """docs/rules.md 6: matsuda deals 6 rounds; cicera one round of 12 cards each to 4 players."""
    assert 48 // (make_rules("matsuda", 2).hand_size * 2) == 6
    cicera = make_rules("cicera", 4)
    assert (cicera.hand_size, 48 // (cicera.hand_size * 4)) == (12, 1)


#: For a switch on which a preset differs from classic, the text a case's ``rule`` must contain (per value).
SWITCH_TEXT: dict[str, Any] = {
    "court_values": "court_values=numeric",
    "court_pair_take": "court_pair_take=all",
    "ace_high": "ace_high",
    "capture_mode": "capture_mode=one_group",
    "builds": {"reservation": "4.2", "attach": "4.3", "none": "builds=none"},
    "raise_own_build": "raise_own_build",
    "owner_rule": "resolve_next_turn",
    "scoring": {"bga": "5.2", "cicera": "5.3"},
    "in_play_bonuses": "5.3 in-play",
    "residue_to": "residue_to=last_player",
}


@pytest.mark.parametrize("preset", PRESET_NAMES[1:], ids=lambda p: f"{p}-coverage")
def test_every_difference_from_classic_has_a_case(preset: str) -> None:
    classic, rules = TABLE["classic"], TABLE[preset]
    rule_texts = [c["rule"] for c in CASES if _preset(c) == preset]
    for switch, text in SWITCH_TEXT.items():
        value = rules.get(switch, classic.get(switch))
        if switch not in rules or value == classic.get(switch):
            continue
        want = text[value] if isinstance(text, dict) else text
        assert any(want in r for r in rule_texts), f"{preset}: no case names {want!r} ({switch}={value})"


@pytest.mark.parametrize("switch", ["sweep_on_last_play", "residue_to", "raise_with_table_cards"])
def test_overridden_switches_have_cases(switch: str) -> None:
    """The switches no preset sets apart from classic are covered through a rules object override."""
    assert any(isinstance(c["position"]["rules"], dict) and switch in c["position"]["rules"] for c in CASES)


@pytest.mark.parametrize("count", [2.0, True, "2", [2]])
def test_a_player_count_that_is_not_an_integer_is_refused(count) -> None:
    """``make_rules("classic", 2.0)`` was accepted (2.0 == 2) and failed later in RuleSet with a TypeError;
    ``"2"`` was refused as ``not 2``."""
    with pytest.raises(RulesError, match=r"^num_players must be an integer, got "):
        make_rules("classic", count)
    with pytest.raises(RulesError, match=r"^num_players must be an integer"):
        make_rules({"preset": "classic", "num_players": count})


def test_a_numpy_player_count_is_a_count() -> None:
    assert make_rules("classic", np.int64(3)).num_players == 3
    assert type(make_rules("classic", np.int64(3)).num_players) is int


@pytest.mark.parametrize("switch", ["target", "sweep_points"])
def test_a_number_switch_fits_the_core(switch: str) -> None:
    """target=10**30 was accepted and the batched core failed with an OverflowError on reset."""
    assert getattr(make_rules("classic", **{switch: 2**31 - 1}), switch) == 2**31 - 1
    with pytest.raises(RulesError, match=rf"^{switch} must be at most 2147483647, got 10000"):
        make_rules("classic", **{switch: 10**30})
