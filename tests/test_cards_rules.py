"""Cards (docs/rules.md 1: ids, text, aliases) and rule sets (docs/rules.md 3 switches, 6 presets)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from cassino_env import CardError, RulesError
from cassino_env.cards import (
    BIG_CASINO,
    JACK_OF_HEARTS,
    LITTLE_CASINO,
    RANK,
    SUIT,
    card_id,
    card_text,
    cards_text,
    full_deck,
    is_court,
    parse_cards,
    rank,
    suit,
)
from cassino_env.rules import PRESETS, RuleSet, make_rules

RANKS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"]
SUITS = "CDHS"
SYMBOLS = "♣♦♥♠"


# -- cards -------------------------------------------------------------------------------------------------------------
def test_all_52_cards_both_ways() -> None:
    """docs/rules.md 1: id = 13 * suit + (rank - 1), suits C D H S, ranks A..K; text is rank + suit."""
    for s, suit_letter in enumerate(SUITS):
        for r, rank_text in enumerate(RANKS, start=1):
            cid = 13 * s + r - 1
            text = rank_text + suit_letter
            assert card_id(text) == cid
            assert card_text(cid) == text
            assert (rank(cid), suit(cid)) == (r, s)
            assert (RANK[cid], SUIT[cid]) == (r, s)
            assert is_court(cid) == (r >= 11)
    assert full_deck() == list(range(52))
    assert len({card_text(c) for c in range(52)}) == 52


def test_named_cards() -> None:
    assert (card_id("AS"), card_id("2S"), card_id("10D")) == (39, 40, 22)
    assert (BIG_CASINO, LITTLE_CASINO, JACK_OF_HEARTS) == (card_id("10D"), card_id("2S"), card_id("JH"))


@pytest.mark.parametrize("cid", range(52))
def test_aliases(cid: int) -> None:
    """docs/rules.md 1: parsers accept T for 10, lower case and the suit symbols ♣♦♥♠."""
    text = card_text(cid)
    rank_text, suit_letter = text[:-1], text[-1]
    symbol = SYMBOLS[SUITS.index(suit_letter)]
    spellings = {text.lower(), rank_text + symbol, rank_text.lower() + symbol, f" {text} "}
    if rank_text == "10":
        spellings |= {"T" + suit_letter, "t" + suit_letter.lower(), "T" + symbol}
    for spelling in spellings:
        assert card_id(spelling) == cid, spelling
    assert card_id(cid) == cid
    assert card_id(np.int64(cid)) == cid


@pytest.mark.parametrize("bad", ["", "S", "10", "1", "11S", "0C", "AX", "A S", "KK", "10DD", "♠A", "T", "JOKER",
                                 None, 52, -1, True, 3.0, ["AS"]])
def test_bad_cards(bad: Any) -> None:
    with pytest.raises(CardError) as err:
        card_id(bad)
    assert isinstance(err.value, ValueError)
    assert repr(bad) in str(err.value) or str(bad) in str(err.value)


@pytest.mark.parametrize("bad", [52, -1, 100])
def test_card_text_of_a_bad_id(bad: int) -> None:
    with pytest.raises(CardError, match="0..51"):
        card_text(bad)


def test_parse_cards() -> None:
    assert parse_cards(["10D", "as", "T♠"]) == [22, 39, 48]
    assert cards_text([48, 22, 39]) == ["10D", "AS", "10S"]
    with pytest.raises(CardError, match="loose: card AS appears twice"):
        parse_cards(["AS", "as"], field="loose")
    with pytest.raises(CardError, match="hand: .*'ZZ'"):
        parse_cards(["AS", "ZZ"], field="hand")
    with pytest.raises(CardError, match="hand: expected a list"):
        parse_cards("AS", field="hand")


# -- rule sets ---------------------------------------------------------------------------------------------------------
#: docs/rules.md section 6, row by row (switches not named in a row take the defaults of the row "In every preset").
SPEC: dict[str, tuple[tuple[int, ...], dict[str, Any]]] = {
    "classic": ((2, 3, 4), dict(table_cards=4, hand_size=4, court_values="none", court_pair_take="one",
                                ace_high=False, capture_mode="groups", builds="standard", raise_own_build=True,
                                raise_with_table_cards=False, owner_rule="no_trail", scoring="standard",
                                sweep_points=1, target=21)),
    "matsuda": ((2,), dict(table_cards=4, hand_size=4, court_values="numeric", ace_high=False, capture_mode="groups",
                           builds="reservation", raise_own_build=True, owner_rule="resolve_next_turn",
                           scoring="standard", sweep_points=1, target=21)),
    "cicera": ((4,), dict(table_cards=4, hand_size=12, court_values="none", court_pair_take="one", ace_high=False,
                          capture_mode="one_group", builds="none", scoring="cicera", sweep_points=1,
                          in_play_bonuses=True, target=51)),
    "bga": ((2, 3, 4, 6), dict(table_cards=4, hand_size=4, court_values="numeric", ace_high=True,
                               capture_mode="groups", builds="standard", raise_own_build=False,
                               raise_with_table_cards=False, owner_rule="resolve_next_turn", scoring="bga",
                               sweep_points=1, residue_to="last_player", target=21)),
    "stadium": ((2,), dict(table_cards=4, hand_size=4, court_values="none", court_pair_take="all", ace_high=False,
                           capture_mode="groups", builds="attach", raise_own_build=False,
                           owner_rule="resolve_next_turn", scoring="standard", sweep_points=1, target=21)),
    "royal": ((2, 3, 4), dict(table_cards=4, hand_size=4, court_values="numeric", ace_high=True,
                              capture_mode="groups", builds="standard", raise_own_build=True,
                              raise_with_table_cards=False, owner_rule="no_trail", scoring="standard",
                              sweep_points=1, target=21)),
}
EVERY_PRESET = dict(sweep_on_last_play=True)


def test_presets_match_rules_md_section_6() -> None:
    assert set(PRESETS) == set(SPEC)
    for name, (counts, switches) in SPEC.items():
        assert PRESETS[name][0] == counts, name
        for n in counts:
            r = make_rules(name, n)
            got = r.to_dict()
            for switch, value in {**EVERY_PRESET, **switches}.items():
                assert got[switch] == value, (name, switch)
            assert r.preset == name
            assert r.num_players == n
            assert r.partnerships == (n in (4, 6)), "partnerships by default for 4 and 6 players (docs/rules.md 3)"
            assert r.residue_to == ("last_player" if name == "bga" else "last_capturer")
            assert r.in_play_bonuses == (name == "cicera")


@pytest.mark.parametrize("name", sorted(SPEC))
def test_preset_player_counts(name: str) -> None:
    """docs/rules.md 6: a preset with a player count its row does not list is an error naming num_players."""
    counts = SPEC[name][0]
    assert make_rules(name).num_players == counts[0]
    for n in (1, 2, 3, 4, 5, 6, 8):
        if n in counts:
            assert make_rules(name, n).num_players == n
        else:
            with pytest.raises(RulesError, match="num_players"):
                make_rules(name, n)


def test_sides_and_derived_facts() -> None:
    assert make_rules("classic", 2).sides == ((0,), (1,))
    assert make_rules("classic", 3).sides == ((0,), (1,), (2,))
    four = make_rules("classic", 4)
    assert four.sides == ((0, 2), (1, 3))
    assert [four.side_of(s) for s in range(4)] == [0, 1, 0, 1]
    assert make_rules("classic", 4, partnerships=False).sides == ((0,), (1,), (2,), (3,))
    six = make_rules("bga", 6)
    assert six.sides == ((0, 3), (1, 4), (2, 5))
    assert [six.side_of(s) for s in range(6)] == [0, 1, 2, 0, 1, 2]
    assert [make_rules("classic", n).rounds_per_deal for n in (2, 3, 4)] == [6, 4, 3]
    assert make_rules("cicera").rounds_per_deal == 1
    assert make_rules("cicera", hand_size=6).rounds_per_deal == 2  # docs/rules.md 6: 6 each in two rounds allowed
    assert [make_rules(p).max_value for p in ("classic", "matsuda", "bga")] == [10, 13, 14]


BAD_SWITCHES = [
    (dict(num_players=5), "num_players"),
    (dict(court_values="half"), "court_values"),
    (dict(court_pair_take="two"), "court_pair_take"),
    (dict(capture_mode="any"), "capture_mode"),
    (dict(builds="tower"), "builds"),
    (dict(owner_rule="none"), "owner_rule"),
    (dict(residue_to="dealer"), "residue_to"),
    (dict(scoring="golf"), "scoring"),
    (dict(partnerships=1), "partnerships"),
    (dict(ace_high="yes"), "ace_high"),
    (dict(raise_own_build=None), "raise_own_build"),
    (dict(raise_with_table_cards=0), "raise_with_table_cards"),
    (dict(sweep_on_last_play="true"), "sweep_on_last_play"),
    (dict(in_play_bonuses=1), "in_play_bonuses"),
    (dict(table_cards=-1), "table_cards"),
    (dict(hand_size=0), "hand_size"),
    (dict(hand_size=True), "hand_size"),
    (dict(sweep_points=-1), "sweep_points"),
    (dict(sweep_points=1.5), "sweep_points"),
    (dict(target=0), "target"),
    (dict(num_players=3, partnerships=True), "partnerships"),
    (dict(hand_size=5), "hand_size"),  # 48 cards do not split into rounds of 2 x 5
    (dict(table_cards=3), "table_cards"),
    (dict(court_values="numeric", court_pair_take="all"), "court_pair_take"),
    (dict(in_play_bonuses=True), "in_play_bonuses"),
]


@pytest.mark.parametrize(("switches", "field"), BAD_SWITCHES, ids=[f for _, f in BAD_SWITCHES])
def test_rule_set_validation_names_the_field(switches: dict[str, Any], field: str) -> None:
    with pytest.raises(RulesError, match=field) as err:
        RuleSet(**switches)
    assert isinstance(err.value, ValueError)
    with pytest.raises(RulesError, match=field):
        make_rules("classic", **switches)


def test_make_rules_errors() -> None:
    with pytest.raises(RulesError, match="'klondike'"):
        make_rules("klondike")
    with pytest.raises(RulesError, match="'sweep_bonus'"):
        make_rules("classic", sweep_bonus=2)
    with pytest.raises(RulesError, match="preset"):
        make_rules({"sweep_points": 2})
    with pytest.raises(RulesError, match="num_players"):
        make_rules({"preset": "classic", "num_players": 3}, num_players=2)
    with pytest.raises(RulesError, match="cicera"):
        make_rules("cicera", partnerships=False)


def test_make_rules_forms_agree() -> None:
    r = make_rules("classic", 3, sweep_points=2)
    assert make_rules({"preset": "classic", "num_players": 3, "sweep_points": 2}) == r
    assert make_rules(r.to_dict()) == r
    assert make_rules(r) == r
    assert make_rules(r, 4).num_players == 4
    assert make_rules(r, sweep_points=0).sweep_points == 0
    with pytest.raises(AttributeError):
        r.sweep_points = 3  # frozen


_SWITCH_VALUES = {"court_values": ("none", "numeric"), "court_pair_take": ("one", "all"), "ace_high": (False, True),
                  "capture_mode": ("groups", "one_group"), "builds": ("none", "standard", "reservation", "attach"),
                  "raise_own_build": (False, True), "raise_with_table_cards": (False, True),
                  "owner_rule": ("no_trail", "resolve_next_turn"), "sweep_on_last_play": (False, True),
                  "residue_to": ("last_capturer", "last_player"), "scoring": ("standard", "bga", "cicera"),
                  "in_play_bonuses": (False, True)}


@pytest.mark.parametrize("switch", sorted(_SWITCH_VALUES))
def test_every_switch_value_runs_in_the_core(switch: str) -> None:
    """No switch value of docs/rules.md 3 is refused: each one, set on classic, deals and plays 2,000 random moves."""
    import numpy as np

    from cassino_env import core

    for value in _SWITCH_VALUES[switch]:
        extra: dict[str, Any] = {}
        if switch == "in_play_bonuses" and value:
            extra["scoring"] = "cicera"
        if switch == "court_pair_take" and value == "all":
            extra["court_values"] = "none"
        rules = make_rules("classic", **extra, **{switch: value})
        st = core.init(rules, np.arange(20))
        assert core.rollout(st, 100, np.arange(20, dtype=np.uint64)) == 2000
