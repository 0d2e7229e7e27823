"""The JSON rules oracle (docs/interchange.md): validation, defaults, output form, canonical order, and consistency.

Bad input raises a ValueError subclass naming the field (or, for a forbidden move, the docs/rules.md rule) and never
modifies the input; every move ``legal_moves`` lists can be applied, and the result is again a valid position.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

import cassino_env
from cassino_env import IllegalMoveError, MoveFormatError, PositionError
from cassino_env.cards import card_id
from cassino_env.interchange import game_to_position, move_from_dict, position_to_game
from cassino_env.reference import Game
from cassino_env.rules import make_rules

ACTIONS = ("trail", "capture", "build")


def base(**changes: Any) -> dict[str, Any]:
    """A small valid classic position (table: 5H 4C, build [6S+3H]=9 of P1; P0: 9C 4D, P1: KH 2S), with changes."""
    pos = {"rules": "classic", "num_players": 2, "to_move": 0, "dealer": 1, "hands": [["9C", "4D"], ["KH", "2S"]],
           "loose": ["5H", "4C"], "builds": [{"cards": ["6S", "3H"], "value": 9, "owner": 1}], "captured": [[], []],
           "sweeps": [0, 0], "bonus_points": [0, 0], "stock": [], "last_capturer": None, "last_trail": None,
           "match_scores": [0, 0]}
    pos.update(changes)
    return pos


def without(field: str) -> dict[str, Any]:
    pos = base()
    del pos[field]
    return pos


def bad_build(**build: Any) -> dict[str, Any]:
    return base(builds=[{"cards": ["6S", "3H"], "value": 9, "owner": 1, **build}])


BAD_POSITIONS = [
    ("unknown field", base(colour="red"), "colour"),
    ("missing rules", without("rules"), "rules"),
    ("missing hands", without("hands"), "hands"),
    ("missing to_move", without("to_move"), "to_move"),
    ("bad card text", base(loose=["5H", "4X"]), "loose[1]"),
    ("bad card in a hand", base(hands=[["9C", "11D"], ["KH", "2S"]]), "hands[0]"),
    ("duplicate across fields", base(loose=["5H", "9C"]), "loose[1]"),
    ("duplicate within a field", base(loose=["5H", "5h"]), "loose[1]"),
    ("duplicate in a build", base(loose=["5H", "4C", "6S"]), "builds[0].cards"),
    ("duplicate in the stock", base(stock=["AC", "2C", "4C"]), "stock"),
    ("hand count vs num_players", base(num_players=3), "num_players"),
    ("hands not a list", base(hands="9C 4D"), "hands"),
    ("to_move outside the seats", base(to_move=2), "to_move"),
    ("to_move negative", base(to_move=-1), "to_move"),
    ("to_move a bool", base(to_move=True), "to_move"),
    ("dealer outside the seats", base(dealer=5), "dealer"),
    ("last_capturer outside the seats", base(last_capturer=2), "last_capturer"),
    ("build owner outside the seats", bad_build(owner=2), "builds[0].owner"),
    ("to_move holds no cards", base(hands=[[], ["KH", "2S"]]), "to_move"),
    ("build of one card", bad_build(cards=["9H"]), "builds[0].cards"),
    ("court in a build", bad_build(cards=["JH", "9H"], value=9), "builds[0].cards"),
    ("build cards not splitting", bad_build(cards=["6S", "2H"], value=9), "builds[0]"),
    ("build value over 10", bad_build(cards=["6S", "3H", "2H"], value=11), "builds[0].value"),
    ("build missing owner", base(builds=[{"cards": ["6S", "3H"], "value": 9}]), "builds[0]"),
    ("builds of equal value", base(loose=[], builds=[{"cards": ["6S", "3H"], "value": 9, "owner": 1},
                                                     {"cards": ["5H", "4C"], "value": 9, "owner": 0}]), "builds"),
    ("unknown preset", base(rules="klondike"), "rules"),
    ("unknown rule switch", base(rules={"preset": "classic", "sweep_bonus": 2}), "sweep_bonus"),
    ("rule switch bad value", base(rules={"preset": "classic", "sweep_points": -1}), "sweep_points"),
    ("rules object without preset", base(rules={"sweep_points": 1}), "preset"),
    ("player count the preset lacks", base(num_players=6, hands=[["9C"], ["4D"], ["KH"], ["2S"], ["AC"], ["AD"]],
                                           sweeps=[0] * 6, bonus_points=[0] * 6, captured=[[]] * 6,
                                           match_scores=[0, 0, 0]), "num_players"),
    ("sweeps of the wrong length", base(sweeps=[0]), "sweeps"),
    ("captured of the wrong length", base(captured=[[]]), "captured"),
    ("match_scores negative", base(match_scores=[0, -1]), "match_scores"),
    ("last_trail not loose", base(last_trail="9C"), "last_trail"),
    ("stock while every hand is empty", base(hands=[[], []], to_move=None, stock=["AC"]), "to_move"),
]


@pytest.mark.parametrize(("position", "field"), [(p, f) for _, p, f in BAD_POSITIONS],
                         ids=[name for name, _, _ in BAD_POSITIONS])
def test_bad_position_names_the_field(position: dict[str, Any], field: str) -> None:
    frozen = copy.deepcopy(position)
    for call in (lambda: cassino_env.legal_moves(position),
                 lambda: cassino_env.apply_move(position, {"action": "trail", "card": "9C"}),
                 lambda: cassino_env.score_deal(position)):
        with pytest.raises(PositionError) as err:
            call()
        assert isinstance(err.value, ValueError)
        assert field in str(err.value), f"{field!r} not named in: {err.value}"
        assert position == frozen, "the input was modified"


BAD_MOVES = [
    ("missing take", {"action": "capture", "card": "4D"}, "take"),
    ("missing use", {"action": "build", "card": "4D", "value": 8}, "use"),
    ("missing build value", {"action": "build", "card": "4D", "use": ["4C"]}, "value"),
    ("unknown field", {"action": "trail", "card": "4D", "speed": 3}, "speed"),
    ("take on a trail", {"action": "trail", "card": "4D", "take": []}, "take"),
    ("value on a capture", {"action": "capture", "card": "4D", "take": ["4C"], "value": 4}, "value"),
    ("bad action", {"action": "discard", "card": "4D"}, "action"),
    ("missing action", {"card": "4D"}, "action"),
    ("bad card", {"action": "trail", "card": "4Z"}, "card"),
    ("missing card", {"action": "trail"}, "card"),
    ("bad card in take", {"action": "capture", "card": "4D", "take": ["4Q"]}, "take"),
    ("take not a list", {"action": "capture", "card": "4D", "take": "4C"}, "take"),
    ("duplicate in take", {"action": "capture", "card": "4D", "take": ["4C", "4c"]}, "take"),
    ("bad ace", {"action": "capture", "card": "4D", "take": ["4C"], "ace": 7}, "ace"),
    ("build value not an integer", {"action": "build", "card": "4D", "value": "8", "use": ["4C"]}, "value"),
    ("move not an object", ["trail", "4D"], "move"),
]


@pytest.mark.parametrize(("move", "field"), [(m, f) for _, m, f in BAD_MOVES], ids=[n for n, _, _ in BAD_MOVES])
def test_malformed_move_names_the_field(move: Any, field: str) -> None:
    position, frozen_move = base(), copy.deepcopy(move)
    frozen = copy.deepcopy(position)
    with pytest.raises(MoveFormatError) as err:
        cassino_env.apply_move(position, move)
    assert isinstance(err.value, ValueError)
    assert field in str(err.value), f"{field!r} not named in: {err.value}"
    assert position == frozen
    assert move == frozen_move


ILLEGAL_MOVES = [
    ({"action": "trail", "card": "KH"}, "2.2"),  # P1's card
    ({"action": "capture", "card": "4D", "take": ["5H"]}, "docs/rules.md 1"),
    ({"action": "capture", "card": "4D", "take": ["6S"]}, "docs/rules.md 1 build"),  # part of a build
    ({"action": "capture", "card": "4D", "take": ["7S"]}, "2.2"),  # not on the table
    ({"action": "build", "card": "4D", "value": 8, "use": ["4C"]}, "4.1 rule 2"),
    ({"action": "build", "card": "4D", "value": 9, "use": ["5H"]}, "4.1 rule 6"),
    ({"action": "capture", "card": "9C", "take": ["6S", "3H", "5H"]}, "docs/rules.md 1"),
]


@pytest.mark.parametrize(("move", "rule"), ILLEGAL_MOVES, ids=[str(m) for m, _ in ILLEGAL_MOVES])
def test_illegal_move_names_the_rule(move: dict[str, Any], rule: str) -> None:
    position = base()
    frozen = copy.deepcopy(position)
    with pytest.raises(IllegalMoveError) as err:
        cassino_env.apply_move(position, move)
    assert isinstance(err.value, ValueError)
    assert "docs/rules.md" in str(err.value)
    assert rule in str(err.value)
    assert position == frozen


def test_move_after_the_deal_is_illegal() -> None:
    over = base(hands=[[], []], to_move=None, loose=[], builds=[])
    assert cassino_env.legal_moves(over) == []
    with pytest.raises(IllegalMoveError, match="docs/rules.md"):
        cassino_env.apply_move(over, {"action": "trail", "card": "9C"})


def test_score_deal_needs_a_finished_deal() -> None:
    with pytest.raises(PositionError, match="hands"):
        cassino_env.score_deal(base())


def test_rules_as_object() -> None:
    """docs/interchange.md: ``rules`` may be ``{"preset": NAME, SWITCH: VALUE}``; apply_move echoes it unchanged."""
    rules = {"preset": "classic", "sweep_points": 1}
    as_object = base(rules=rules)
    assert cassino_env.legal_moves(as_object) == cassino_env.legal_moves(base())
    after = cassino_env.apply_move(as_object, {"action": "trail", "card": "4D"})
    assert after["rules"] == rules
    assert after["rules"] is not rules
    finished = {"rules": {"preset": "classic", "sweep_points": 3}, "to_move": None, "hands": [[], []],
                "captured": [["10D"], ["2S"]], "sweeps": [1, 2]}
    # one card each: a tie for cards; big casino + 1 sweep vs most spades + little casino + 2 sweeps, 3 points each
    assert cassino_env.score_deal(finished)["totals"] == [2 + 3, 1 + 1 + 6]


def test_omitted_fields_take_their_defaults() -> None:
    """docs/interchange.md: every field but rules, hands and to_move may be omitted; dealer defaults to to_move - 1."""
    short = {"rules": "classic", "to_move": 0, "hands": [["9C", "4D"], ["KH", "2S"]], "loose": ["5H", "4C"],
             "builds": [{"cards": ["6S", "3H"], "value": 9, "owner": 1}]}
    assert cassino_env.legal_moves(short) == cassino_env.legal_moves(base())
    for move in cassino_env.legal_moves(base()):
        assert cassino_env.apply_move(short, move) == cassino_env.apply_move(base(), move)
    after = cassino_env.apply_move({"rules": "classic", "to_move": 1, "hands": [["9C"], ["4D"], ["KH"]]},
                                   {"action": "trail", "card": "4D"})
    assert after["num_players"] == 3
    assert after["dealer"] == 0
    assert after["to_move"] == 2
    assert after["match_scores"] == [0, 0, 0]
    assert after["captured"] == [[], [], []]
    assert after["last_capturer"] is None
    assert after["last_trail"] == "4D"
    assert after["stock"] == []
    first = cassino_env.apply_move({"rules": "classic", "to_move": 0, "hands": [["9C"], ["4D"]]},
                                   {"action": "trail", "card": "9C"})
    assert first["dealer"] == 1  # the seat before to_move 0


def test_input_lists_in_any_order() -> None:
    move = {"action": "build", "card": "4D", "value": 9, "use": ["5H", "6S", "3H"]}
    shuffled = {"use": ["3H", "5H", "6S"], "value": 9, "card": "4d", "action": "build"}
    after = cassino_env.apply_move(base(), move)
    assert cassino_env.apply_move(base(), shuffled) == after
    unsorted = base(loose=["4C", "5H"], hands=[["4D", "9C"], ["2S", "KH"]])
    assert cassino_env.apply_move(unsorted, move) == after
    assert cassino_env.apply_move(base(), {**move, "ace": 1}) == after


def is_sorted_ids(cards: list[str]) -> bool:
    ids = [card_id(c) for c in cards]
    return ids == sorted(ids)


def check_output_form(position: dict[str, Any]) -> None:
    """Output card lists are sorted by card id (docs/interchange.md "Move"); ``stock`` keeps its dealing order."""
    for field in ("hands", "captured"):
        assert all(is_sorted_ids(cards) for cards in position[field]), position[field]
    assert is_sorted_ids(position["loose"])
    assert all(is_sorted_ids(b["cards"]) for b in position["builds"])


def canonical_key(move: dict[str, Any]) -> tuple:
    """docs/interchange.md: trails, captures, builds; by played card id; by the sorted card-id list; by value."""
    cards = [card_id(c) for c in move.get("take", move.get("use", []))]
    value = move["value"] if move["action"] == "build" else move.get("ace", 1)
    return (ACTIONS.index(move["action"]), card_id(move["card"]), cards, value)


# hand_size 8: a six-card hand is more than classic deals (4; refused since issue 50), not more than this deal's
BUSY = {"rules": {"preset": "classic", "hand_size": 8}, "to_move": 1,
        "hands": [["KS", "8D", "AC"], ["AH", "2C", "3S", "6D", "9H", "QC"], ["7C", "10S"]],
        "loose": ["2H", "3D", "4C", "5S", "6C", "QH", "QD"],
        "builds": [{"cards": ["4H", "3H"], "value": 7, "owner": 2}, {"cards": ["AS", "AD"], "value": 1, "owner": 0}]}


def test_canonical_order_on_a_busy_position() -> None:
    """Table 2H 3D 4C 5S 6C QH QD, builds [4H+3H]=7 (seat 2), [AS | AD]=1 (seat 0); seat 1: A 2 3 6 9 Q."""
    moves = cassino_env.legal_moves(BUSY)
    keys = [canonical_key(m) for m in moves]
    assert keys == sorted(keys)
    assert len({str(k) for k in keys}) == len(keys), "no duplicates"
    actions = [m["action"] for m in moves]
    assert actions == sorted(actions, key=ACTIONS.index)
    assert set(actions) == set(ACTIONS)
    assert len(moves) > 40
    for m in moves:
        assert is_sorted_ids(m.get("take", m.get("use", [])))
        assert set(m) == {"action", "card"} | ({"take"} if m["action"] == "capture" else set()) | (
            {"value", "use"} if m["action"] == "build" else set())
    # Two groupings of the same cards are one move: 9 takes 6C+3D and 5S+4C, or 6C+2H+AC ... each card set once.
    nine = [frozenset(m["take"]) for m in moves if m["action"] == "capture" and m["card"] == "9H"]
    assert len(nine) == len(set(nine)) > 3


def positions_from_random_games(num: int, seed: int) -> list[tuple[Game, dict[str, Any]]]:
    """``num`` positions met in classic games of 2-4 players played with random legal moves."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < num:
        n = int(rng.integers(2, 5))
        g = Game.new_deal(make_rules("classic", n), rng.permutation(52), int(rng.integers(n)))
        for _ in range(int(rng.integers(0, 48))):
            moves = g.legal_moves()
            g.apply(moves[int(rng.integers(len(moves)))])
        out.append((g, game_to_position(g)))
    return out


def all_cards(position: dict[str, Any]) -> list[int]:
    texts = [c for h in position["hands"] for c in h] + position["loose"] + position["stock"]
    texts += [c for b in position["builds"] for c in b["cards"]] + [c for p in position["captured"] for c in p]
    return [card_id(c) for c in texts]


@pytest.mark.parametrize("seed", range(4))
def test_every_legal_move_applies_on_random_positions(seed: int) -> None:
    for game, position in positions_from_random_games(15, seed):
        frozen = copy.deepcopy(position)
        assert position_to_game(position) == game
        moves = cassino_env.legal_moves(position)
        assert len({str(m) for m in moves}) == len(moves)
        assert moves == sorted(moves, key=canonical_key)
        for move in moves:
            after = cassino_env.apply_move(position, move)
            assert position == frozen, "apply_move modified its input"
            check_output_form(after)
            assert sorted(all_cards(after)) == list(range(52)), "conservation (docs/rules.md 2)"
            expected = game.copy()
            expected.apply(move_from_dict(expected, move))
            assert after == game_to_position(expected)
            follow = cassino_env.legal_moves(after)
            assert (after["to_move"] is None) == (follow == [])
            assert all(m["card"] in after["hands"][after["to_move"]] for m in follow)
            assert follow == sorted(follow, key=canonical_key)
            for m in follow[:3]:
                cassino_env.apply_move(after, m)


def test_positions_need_not_hold_52_cards() -> None:
    """docs/interchange.md: a position of fewer cards is accepted; only a card appearing twice is an error."""
    pos = {"rules": "classic", "to_move": 0, "hands": [["7S"], ["KD"]], "loose": ["3H", "4H"]}
    assert {"action": "capture", "card": "7S", "take": ["3H", "4H"]} in cassino_env.legal_moves(pos)


def test_court_capture_is_listed_plainly() -> None:
    """A court pairing a court is a plain capture dict (docs/rules.md 3 court_values=none: no value, no ace field)."""
    moves = cassino_env.legal_moves({"rules": "classic", "to_move": 0, "hands": [["QS"], ["2C"]], "loose": ["QH"]})
    assert moves == [{"action": "trail", "card": "QS"}, {"action": "capture", "card": "QS", "take": ["QH"]}]


@pytest.mark.parametrize(("preset", "players"), [("classic", 2), ("matsuda", 2), ("cicera", 4), ("bga", 3),
                                                 ("stadium", 2), ("royal", 2)])
def test_oracle_round_trip_through_whole_deals(preset: str, players: int) -> None:
    """Every position apply_move returns is valid input again, up to score_deal of the finished deal (even when the
    deal's last card is a trail that went into the residue)."""
    import random

    from cassino_env.cards import card_text
    from cassino_env.core import deck_for

    for seed in range(6):
        deck = [card_text(int(c)) for c in deck_for(seed, 0, 0)]
        hand = 12 if preset == "cicera" else 4
        hands = [deck[4 + hand * q:4 + hand * (q + 1)] for q in range(players)]
        pos = {"rules": {"preset": preset, "num_players": players}, "to_move": 0, "hands": hands,
               "loose": deck[:4], "stock": deck[4 + hand * players:], "dealer": players - 1}
        rng = random.Random(seed)
        while True:
            moves = cassino_env.legal_moves(pos)
            if not moves:
                break
            pos = cassino_env.apply_move(pos, rng.choice(moves))
        tally = cassino_env.score_deal(pos)
        assert len(tally["totals"]) == (2 if preset == "cicera" else players)
