"""Reliability of the rules oracle and of the environments' inputs: one seed range checked everywhere, moves checked
and listed in bounded time, malformed input answered by one clear error (never a traceback), short messages, card
texts only on the JSON path. Random malformed positions and moves are fuzzed; the search that lists and checks moves
is compared with the enumeration that states the rules, on thousands of random positions.
"""

from __future__ import annotations

import copy
import io
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import SWEEP, sweep_count

import cassino_env
from cassino_env.errors import (
    CassinoError,
    IllegalMoveError,
    MoveFormatError,
    MoveLimitError,
    PositionError,
    SeedError,
    check_seed,
)
from cassino_env.interchange import game_to_position, move_to_dict, position_to_game
from cassino_env.reference import BUILD, CAPTURE, TRAIL, Game, Move, splits_into
from cassino_env.rules import PRESETS, make_rules
from train.cli import main as cli_main

#: The 20 loose cards A-5 of every suit: the issue's freak table.
A_TO_5 = [r + s for r in ("A", "2", "3", "4", "5") for s in "CDHS"]


def crowded(k: int, hand: tuple[str, ...] = ("10S", "9S", "8S", "7S")) -> dict[str, Any]:
    """A classic position with the first ``k`` cards of :data:`A_TO_5` loose."""
    return {"rules": "classic", "to_move": 0, "hands": [list(hand), ["KC"]], "loose": A_TO_5[:k]}


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli_main(args)
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_error_line(code: int, err: str, *words: str) -> None:
    assert code == 2
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err[:500]
    assert "Traceback" not in err
    for w in words:
        assert w in lines[0]


# -- 9. seeds ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2**63 - 1, np.int64(5), np.uint64(2**63 - 1), np.int8(3)])
def test_check_seed_accepts_the_documented_range(seed: Any) -> None:
    assert check_seed(seed) == int(seed)
    assert type(check_seed(seed)) is int


@pytest.mark.parametrize("seed", [2**63, 2**64, -1, True, np.bool_(False), 1.0, np.float64(2.0), "3", None, [1]])
def test_check_seed_refuses_everything_else_naming_the_field(seed: Any) -> None:
    with pytest.raises(SeedError, match=r"^deal_seed: expected an integer 0 <= seed < 2\*\*63"):
        check_seed(seed, field="deal_seed")
    assert issubclass(SeedError, CassinoError) and issubclass(SeedError, ValueError)


@pytest.mark.parametrize("seed", [2**63, -1, True, 1.5])
def test_aec_reset_refuses_bad_seeds_and_changes_nothing(seed: Any) -> None:
    """Before: 2**63 and -1 raised OverflowError or numpy's own message; True and 1.5 were taken as seeds."""
    env = cassino_env.env()
    env.reset(seed=3)
    state = env.unwrapped.core_state
    with pytest.raises(SeedError, match="seed"):
        env.reset(seed=seed)
    assert env.unwrapped.core_state is state
    env.reset(seed=2**63 - 1)  # the top of the range plays
    assert env.agents


@pytest.mark.parametrize(("change", "field"), [
    ({"colour": 1}, "colour"),
    ({"hands": None}, "hands"),
    ({"sweeps": [10**30, 0]}, "sweeps"),
    ({"sweeps": [-1, 0]}, "sweeps"),
    ({"match_scores": [0, 2**40]}, "match_scores"),
    ({"to_move": True}, "to_move"),
    ({"hands": 7}, "hands"),
    ({"loose": ["AC"]}, "loose[0]"),
    ({"builds": [[[1, 2], 3]]}, "builds[0]"),
])
def test_aec_position_option_is_checked_as_the_oracle_checks_positions(change: dict, field: str) -> None:
    """Before: an unknown key or no hands gave a TypeError, huge sweeps an OverflowError, negative ones were taken."""
    env = cassino_env.env()
    env.reset(seed=1)
    state = env.unwrapped.core_state
    position = {"hands": [[0, 14], [27]], "to_move": 0, "loose": [5]}
    position.update(change)
    if change.get("hands", 0) is None:
        del position["hands"]
    with pytest.raises(PositionError, match=field.replace("[", r"\[").replace("]", r"\]")):
        env.reset(options={"position": position})
    assert env.unwrapped.core_state is state
    with pytest.raises(PositionError, match="options"):
        env.reset(options=["position"])


def test_cassino_play_refuses_a_seed_out_of_range(capsys: pytest.CaptureFixture[str]) -> None:
    """Before: `cassino play --seed 18446744073709551616` ended in a traceback."""
    code, out, err = run_cli(["play", "--seed", str(2**64)], capsys)
    assert_one_error_line(code, err, "seed", "2**63")
    assert out == ""


# -- 10. bounded time -------------------------------------------------------------------------------------------------


def test_apply_move_checks_a_capture_on_a_crowded_table_in_milliseconds() -> None:
    """Before: validating one 2-card capture on a 20-card table listed every capture first (29 s)."""
    pos = crowded(20)
    before = copy.deepcopy(pos)
    start = time.perf_counter()
    after = cassino_env.apply_move(pos, {"action": "capture", "card": "7S", "take": ["2C", "5D"]})
    cassino_env.apply_move(pos, {"action": "build", "card": "7S", "value": 10, "use": ["2C", "AD"]})
    cassino_env.apply_move(pos, {"action": "capture", "card": "10S", "take": A_TO_5})  # 60 = six groups of 10
    with pytest.raises(IllegalMoveError, match="groups of value 9"):
        cassino_env.apply_move(pos, {"action": "capture", "card": "9S", "take": A_TO_5[:-1]})
    assert time.perf_counter() - start < 2.0
    assert pos == before
    assert sorted(after["captured"][0]) == sorted(["7S", "2C", "5D"])


def test_legal_moves_limit_bounds_listing() -> None:
    """Before: no bound: 16 loose A-5 cards took 12 s (71,076 moves), 18 and 20 ran past a minute."""
    start = time.perf_counter()
    with pytest.raises(MoveLimitError, match="more than limit=1000"):
        cassino_env.legal_moves(crowded(20), limit=1000)
    assert time.perf_counter() - start < 5.0
    assert len(cassino_env.legal_moves(crowded(4), limit=1000)) == len(cassino_env.legal_moves(crowded(4)))
    moves = cassino_env.legal_moves(crowded(4))
    assert cassino_env.legal_moves(crowded(4), limit=len(moves)) == moves
    with pytest.raises(MoveLimitError):
        cassino_env.legal_moves(crowded(4), limit=len(moves) - 1)
    for bad in (-1, 1.5, True, "10"):
        with pytest.raises(MoveLimitError, match="limit"):
            cassino_env.legal_moves(crowded(4), limit=bad)


def test_iter_legal_moves_streams_in_canonical_order() -> None:
    """The first moves of the freak 20-card table come at once, and agree with the exact list where that is
    computable."""
    start = time.perf_counter()
    first = [m for _, m in zip(range(300), cassino_env.iter_legal_moves(crowded(20)), strict=False)]
    assert time.perf_counter() - start < 3.0
    assert len(first) == 300
    assert first[:4] == [{"action": "trail", "card": c} for c in ("7S", "8S", "9S", "10S")]
    game = position_to_game(crowded(12))
    assert [move_to_dict(m) for m in game.search_moves()] == [move_to_dict(m)
                                                                for m in game.legal_moves_by_enumeration()]
    with pytest.raises(PositionError, match="hands"):
        cassino_env.iter_legal_moves({"rules": "classic", "to_move": 0, "hands": 3})  # checked before any move


def test_cassino_moves_limit_streams_then_stops(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "crowded.json"
    path.write_text(json.dumps(crowded(20)), encoding="utf-8")
    code, out, err = run_cli(["moves", str(path), "--limit", "7"], capsys)
    assert_one_error_line(code, err, "more than --limit 7")
    expected = [m for _, m in zip(range(7), cassino_env.iter_legal_moves(crowded(20)), strict=False)]
    assert [json.loads(line) for line in out.splitlines()] == expected
    code, out, err = run_cli(["moves", str(path), "--limit", "-1"], capsys)
    assert_one_error_line(code, err, "--limit")
    small = tmp_path / "small.json"
    small.write_text(json.dumps(crowded(4)), encoding="utf-8")
    code, out, err = run_cli(["moves", str(small), "--limit", "1000"], capsys)
    assert code == 0 and err == ""
    assert [json.loads(line) for line in out.splitlines()] == cassino_env.legal_moves(crowded(4))


def test_cassino_moves_caps_its_input(capsys: pytest.CaptureFixture[str]) -> None:
    """Before: `cassino moves /dev/zero` read until MemoryError."""
    start = time.perf_counter()
    code, out, err = run_cli(["moves", "/dev/zero"], capsys)
    assert_one_error_line(code, err, "/dev/zero", "larger than")
    assert time.perf_counter() - start < 5.0 and out == ""


# -- 11. malformed input: an error line at the command line, a ValueError subclass from the API ---------------------


@pytest.mark.parametrize(("content", "words"), [
    (b"[" * 200_000 + b"]" * 200_000, ["nested too deeply"]),
    ('{"rules": "classic", "to_move": 0, "hands": [["10\u00e9"]]}'.encode("latin-1"), ["not UTF-8", "offset"]),
    (b'{"rules": "classic", "to_move": ' + b"7" * 5000 + b', "hands": [["8S"]]}', ["5000 digits"]),
    (b'{"rules": "classic", "to_move": 0, "hands": [[9], ["2C"]]}', ["hands[0][0]", "card text"]),
    (b'{"rules": "classic", "num_players": 2.0, "to_move": 0, "hands": [["8S"], ["2C"]]}', ["num_players"]),
    (b"\xef\xbb\xbf{}", ["not valid JSON"]),
    (b"", ["not valid JSON"]),
], ids=["deep", "latin-1", "long-int", "card-id", "float-players", "bom", "empty"])
def test_cassino_moves_bad_files_are_one_error_line(content: bytes, words: list[str], tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Before: deep nesting (RecursionError), Latin-1 (UnicodeDecodeError) and a 5,000-digit integer (ValueError
    of int conversion) ended in tracebacks."""
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    code, out, err = run_cli(["moves", str(path)], capsys)
    assert_one_error_line(code, err, *words)
    assert out == "" and len(err) < 400


def test_cassino_moves_reads_standard_input(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\xff\xfe")))
    code, _, err = run_cli(["moves", "-"], capsys)
    assert_one_error_line(code, err, "-: not UTF-8")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(crowded(4)).encode())))
    code, out, err = run_cli(["moves", "-"], capsys)
    assert code == 0 and len(out.splitlines()) == len(cassino_env.legal_moves(crowded(4)))


def nested(depth: int) -> Any:
    x: Any = "classic"
    for _ in range(depth):
        x = {"preset": x}
    return x


@pytest.mark.parametrize(("change", "error", "field"), [
    ({"rules": nested(100_000)}, PositionError, "rules.preset"),
    ({"rules": {"preset": "classic", "target": [[[]]]}}, PositionError, "rules.target"),
    ({"hands": [[["8S"]], ["2C"]]}, PositionError, r"hands\[0\]\[0\]"),
    ({"to_move": 10**5000}, PositionError, "to_move"),
    ({"sweeps": [10**5000, 0]}, PositionError, "sweeps"),
    ({"sweeps": [53, 0]}, PositionError, "sweeps"),
    ({"match_scores": [0, 10**4]}, PositionError, "match_scores"),
    ({"builds": [{"cards": ["3H", "6S"], "value": 10**5000, "owner": 1}]}, PositionError, r"builds\[0\]\.value"),
], ids=["deep-rules", "nested-switch", "nested-card", "long-seat", "long-sweeps", "sweeps", "scores", "long-value"])
def test_api_malformed_positions_raise_a_position_error(change: dict, error: type, field: str) -> None:
    pos = {"rules": "classic", "to_move": 0, "hands": [["8S"], ["2C"]], "loose": ["5H"]} | change
    with pytest.raises(error, match=field) as info:
        cassino_env.legal_moves(pos)
    assert len(str(info.value)) < 400


@pytest.mark.parametrize(("move", "field"), [
    ({"action": [], "card": "8S"}, "action"),
    ({"action": {}, "card": "8S"}, "action"),
    ({"action": "capture", "card": "8S", "take": ["5H"], "ace": 1.0}, "ace"),
    ({"action": "capture", "card": "8S", "take": "5H"}, "take"),
    ({"action": "build", "card": "8S", "use": ["5H"], "value": 10**5000}, "value"),
    ({"action": "build", "card": "8S", "use": ["5H"], "value": 13.0}, "value"),
    ({"action": "trail", "card": 46}, "card"),
    ({"action": "capture", "card": "8S", "take": [17]}, r"take\[0\]"),
    ({"action": "trail", "card": "8S", 3: 4}, "3"),
])
def test_api_malformed_moves_raise_a_move_format_error(move: dict, field: str) -> None:
    """Before: "action": [] raised TypeError (unhashable), ids were taken as cards (46 is 8S), ace 1.0 as 1."""
    pos = {"rules": "classic", "to_move": 0, "hands": [["8S"], ["2C"]], "loose": ["5H", "3C"]}
    with pytest.raises(MoveFormatError, match=field):
        cassino_env.apply_move(pos, move)


# -- 12. short messages, card texts only --------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["hand", "loose", "stock", "last_trail", "unknown field", "rules", "move card",
                                   "move take"])
def test_messages_quote_a_short_excerpt_of_a_huge_value(where: str) -> None:
    """Before: the whole 10 MB string was repeated in the message (10 MB on stderr)."""
    big = "Q" * 10_000_000
    pos: dict[str, Any] = {"rules": "classic", "to_move": 0, "hands": [["8S"], ["2C"]], "loose": ["5H"]}
    move: dict[str, Any] = {"action": "trail", "card": "8S"}
    if where == "hand":
        pos["hands"][0].append(big)
    elif where == "loose":
        pos["loose"] = [big]
    elif where == "stock":
        pos["stock"] = [big]
    elif where == "last_trail":
        pos["last_trail"] = big
    elif where == "unknown field":
        pos[big] = 1
    elif where == "rules":
        pos["rules"] = {"preset": "classic", big: 1}
    elif where == "move card":
        move = {"action": "trail", "card": big}
    else:
        move = {"action": "capture", "card": "8S", "take": ["5H", big]}
    with pytest.raises(CassinoError) as info:
        cassino_env.apply_move(pos, move)
    assert len(str(info.value)) < 300
    assert "characters" in str(info.value)


@pytest.mark.parametrize(("change", "field"), [
    ({"hands": [[46], ["2C"]]}, r"hands\[0\]\[0\]"),
    ({"loose": [9]}, r"loose\[0\]"),
    ({"captured": [[9], []]}, r"captured\[0\]\[0\]"),
    ({"stock": [9]}, r"stock\[0\]"),
    ({"builds": [{"cards": [0, 1], "value": 3, "owner": 1}]}, r"builds\[0\]\.cards\[0\]"),
    ({"loose": ["5H"], "last_trail": 30}, "last_trail"),  # 30 is 5H
    ({"num_players": 2.0}, "num_players"),
    ({"num_players": True}, "num_players"),
    ({"rules": {"preset": "classic", "num_players": 2.0}}, "rules.num_players"),
])
def test_card_ids_and_float_counts_are_refused_naming_the_field(change: dict, field: str) -> None:
    """docs/interchange.md: cards are card texts. Before: 9 was taken as 10C and 2.0 as 2 players."""
    pos = {"rules": "classic", "to_move": 0, "hands": [["8S"], ["2C"]]} | change
    with pytest.raises(PositionError, match=field):
        cassino_env.legal_moves(pos)


def test_internal_paths_still_take_card_ids() -> None:
    """The env's core positions (and Game) use card ids: 9 is 10C there; only the JSON path insists on texts."""
    env = cassino_env.env()
    env.reset(options={"position": {"hands": [[9, 46], [1]], "to_move": 0, "loose": [8]}})
    assert env.agents
    game = Game(rules=make_rules("classic"), hands=[{9}, {1}], loose={8}, to_move=0)
    assert Move(TRAIL, 9) in game.legal_moves()


@pytest.mark.parametrize(("position", "field"), [
    ({"hands": [list(range(7)), [40]], "to_move": 0}, r"hands\[0\]: 7 cards"),  # classic deals 4
    ({"hands": [[9], [1]], "to_move": 0, "match_scores": [21, 3]}, "match_scores: side 0"),
])
def test_core_positions_get_the_json_checks_too(position: dict, field: str) -> None:
    """The env's reset(options={"position": ...}) refuses what the JSON oracle refuses: a hand larger than the rules
    deal, a match already won (a tie at the top past the target still plays on)."""
    env = cassino_env.env()
    with pytest.raises(PositionError, match=field):
        env.reset(options={"position": position})
    env.reset(options={"position": {"hands": [[9], [1]], "to_move": 0, "match_scores": [21, 21]}})
    assert env.agents


# -- the search against the enumeration ---------------------------------------------------------------------------


def random_positions(rnd: random.Random, games: int, crowd: bool) -> list[Game]:
    """Positions of random games of every preset and player count (builds and trails favoured, so tables fill);
    with ``crowd``, each position also gets up to 6 stock cards laid loose on the table."""
    out = []
    runs = [(p, n) for p, (counts, _) in PRESETS.items() for n in counts]
    for i in range(games):
        preset, n = runs[i % len(runs)]
        rules = make_rules(preset, num_players=n)
        deck = list(range(52))
        rnd.shuffle(deck)
        game = Game.new_deal(rules, deck, dealer=rnd.randrange(n))
        while game.to_move is not None:
            g = game.copy()
            if crowd and g.stock:
                k = rnd.randint(0, min(6, len(g.stock)))
                g.loose |= set(g.stock[:k])
                del g.stock[:k]
            out.append(g)
            moves = game.legal_moves()
            weights = [4 if m.kind == TRAIL else 3 if m.kind == BUILD else 1 for m in moves]
            game.apply(rnd.choices(moves, weights)[0])
    return out


def near_misses(game: Game, legal: list[Move], rnd: random.Random) -> list[Move]:
    """Moves that differ from legal ones by a card, a value or a kind, and random card sets: most are illegal."""
    table = sorted(game.loose.union(*(b.cards for b in game.builds)))
    hand = sorted(game.hands[game.to_move])
    out = []
    for m in rnd.sample(legal, min(len(legal), 6)):
        cards = set(m.cards)
        if table:
            cards ^= {rnd.choice(table)}
        out.append(Move(m.kind, m.card, m.value, tuple(sorted(cards))))
        out.append(Move(m.kind, m.card, m.value + rnd.choice((-1, 1)), m.cards))
        out.append(Move(CAPTURE if m.kind == BUILD else BUILD, m.card, m.value, m.cards))
    for _ in range(6):
        card = rnd.choice(hand)
        cards = tuple(sorted(rnd.sample(table, rnd.randint(1, min(len(table), 5))))) if table else ()
        kind = rnd.choice((CAPTURE, BUILD))
        value = game.value(card) or 0 if kind == CAPTURE and rnd.random() < 0.7 else rnd.randint(1, 14)
        out.append(Move(kind, card, value, cards))
    return out


@pytest.mark.parametrize("share", SWEEP)
def test_search_agrees_with_the_enumeration(share: float) -> None:
    """search_moves lists exactly the enumeration's moves in its order, and check() accepts exactly those moves, on
    random positions of every preset, as dealt and with crowded tables (3,000 positions quick, 30,000 slow)."""
    rnd = random.Random(20261201)
    positions = random_positions(rnd, sweep_count(300, share), crowd=False)
    positions += random_positions(rnd, sweep_count(300, share), crowd=True)
    assert len(positions) >= 25_000 * share
    for game in positions:
        legal = game.legal_moves_by_enumeration()
        assert list(game.search_moves()) == legal, game
        assert game.legal_moves() == legal
        allowed = set(legal)
        for m in legal:
            game.check(m)
        for m in near_misses(game, legal, rnd):
            if m in allowed:
                continue
            with pytest.raises(IllegalMoveError):
                game.check(m)


def test_search_lets_a_stuck_owner_trail_on_a_crowded_table() -> None:
    """Decision of docs/presets.md: when the 4.4 obligations block every move (royal: one ace covers builds of 1 and of
    14), any trail is legal; on a table of 12 items the search, not the enumeration, answers, and check() agrees."""
    pos = {"rules": "royal", "to_move": 0, "hands": [["AS"], ["2C"]],
           "loose": ["3C", "4C", "5C", "6C", "7C", "8C", "9C", "3D", "4D", "5D"],
           "builds": [{"cards": ["AC", "AD"], "value": 1, "owner": 0},
                      {"cards": ["KC", "AH"], "value": 14, "owner": 0}]}
    game = position_to_game(pos)
    assert list(game.search_moves()) == game.legal_moves_by_enumeration() == [Move(TRAIL, 39)]
    assert cassino_env.legal_moves(pos) == [{"action": "trail", "card": "AS"}]
    assert "AS" in cassino_env.apply_move(pos, {"action": "trail", "card": "AS"})["loose"]
    with pytest.raises(IllegalMoveError, match="4.4"):
        cassino_env.apply_move(pos, {"action": "capture", "card": "AS", "take": ["AC", "AD"]})


def test_splits_into_agrees_with_brute_force() -> None:
    """The partition question on value counts, against trying every assignment of cards to groups."""
    rnd = random.Random(7)

    def brute(values: list[int], v: int) -> bool:
        if not values:
            return True
        first, rest = values[0], values[1:]

        def fill(need: int, pool: list[int]) -> bool:
            if need == 0:
                return brute(pool, v)
            return any(pool[i] <= need and fill(need - pool[i], pool[:i] + pool[i + 1:]) for i in range(len(pool)))

        return first <= v and fill(v - first, rest)

    for _ in range(1500):
        v = rnd.randint(1, 14)
        values = [rnd.randint(1, 13) for _ in range(rnd.randint(0, 9))]
        assert splits_into(values, v) == brute(values, v), (values, v)
    start = time.perf_counter()
    assert splits_into([a for a in range(1, 11) for _ in range(4)], 10)  # 40 cards, 22 groups
    assert not splits_into([9] * 4 + [8] * 4 + [2] * 4 + [3] * 4 + [4] * 3, 10)  # 100, but no 1 fills a 9
    assert not splits_into([6] * 4 + [7] * 4 + [2] * 4 + [5] * 4, 10)  # 80, but nothing fills a 7 (no 3, no 1)
    assert time.perf_counter() - start < 1.0


# -- fuzz: random malformed positions and moves -----------------------------------------------------------------------

ORACLE_ERRORS = (PositionError, MoveFormatError, IllegalMoveError, MoveLimitError)


def junk(rnd: random.Random, depth: int = 0) -> Any:
    """A random JSON-like value: the scalars a malformed file holds, short and long texts, nested lists and objects."""
    choice = rnd.randrange(14 if depth < 4 else 10)
    return [
        lambda: None, lambda: True, lambda: rnd.randint(-3, 60), lambda: 10 ** rnd.randint(10, 5000),
        lambda: -(2**63), lambda: rnd.random() * 100, lambda: rnd.choice(["8S", "10d", "T♠", "1C", "", " ", "ZZ"]),
        lambda: "x" * rnd.randint(50, 5000), lambda: rnd.choice(["classic", "cicera", "capture", "trail", "build"]),
        lambda: rnd.randint(0, 51),
        lambda: [junk(rnd, depth + 1) for _ in range(rnd.randint(0, 4))],
        lambda: {rnd.choice(["preset", "cards", "value", "owner", "x"]): junk(rnd, depth + 1)
                 for _ in range(rnd.randint(0, 3))},
        lambda: [rnd.choice(A_TO_5) for _ in range(rnd.randint(0, 5))],
        lambda: [[junk(rnd, depth + 2)]],
    ][choice]()


def mutate(rnd: random.Random, value: Any, depth: int = 0) -> Any:
    """``value`` with one random change somewhere inside: replaced by junk, a key dropped or added, a list item
    dropped, duplicated or replaced."""
    if depth > 0 and rnd.random() < 0.3 or not isinstance(value, (dict, list)) or not value:
        return junk(rnd)
    if isinstance(value, dict):
        out = dict(value)
        key = rnd.choice(list(out))
        r = rnd.random()
        if r < 0.15:
            del out[key]
        elif r < 0.25:
            out[rnd.choice(["colour", "ace", "take", "use", "value", "num_players", "stock", 7])] = junk(rnd)
        else:
            out[key] = mutate(rnd, out[key], depth + 1)
        return out
    out = list(value)
    i = rnd.randrange(len(out))
    r = rnd.random()
    if r < 0.15:
        del out[i]
    elif r < 0.3:
        out.insert(i, out[i])
    else:
        out[i] = mutate(rnd, out[i], depth + 1)
    return out


def answer(call: Any, *args: Any, errors: tuple[type[Exception], ...] = ORACLE_ERRORS) -> str | None:
    """None when ``call(*args)`` answers, else the message of one of the documented ``errors``; any other exception
    fails the test."""
    try:
        call(*args)
    except errors as e:
        return str(e)
    return None


@pytest.mark.parametrize("share", SWEEP)
def test_fuzz_malformed_positions_and_moves(share: float, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Every call on a randomly broken position or move either answers or raises one of the oracle's documented
    errors with a short message; the inputs are never changed and nothing is written or printed."""
    monkeypatch.chdir(tmp_path)
    rnd = random.Random(1234)
    bases = [(game_to_position(g), [move_to_dict(m) for m in g.legal_moves()])
             for g in random_positions(rnd, 14, crowd=False)[::7]]
    errors = 0
    for _ in range(sweep_count(40_000, share)):
        pos, moves = rnd.choice(bases)
        move = rnd.choice(moves) if moves else {"action": "trail", "card": "AS"}
        if rnd.random() < 0.6:
            pos = mutate(rnd, pos)
        if rnd.random() < 0.6:
            move = mutate(rnd, move)
        pos_before, move_before = copy.deepcopy(pos), copy.deepcopy(move)
        for call, args in ((cassino_env.legal_moves, (pos, 300)), (cassino_env.apply_move, (pos, move)),
                           (cassino_env.score_deal, (pos,))):
            message = answer(call, *args)
            errors += message is not None
            assert message is None or len(message) < 600, message[:1000]
        assert pos == pos_before and move == move_before
    assert errors > sweep_count(40_000, share)  # the fuzz mostly breaks things
    assert list(tmp_path.iterdir()) == []
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("share", SWEEP)
def test_fuzz_cassino_moves_files(share: float, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Randomly damaged position files: exit 0 with moves, or exit 2 with exactly one short `error:` line."""
    rnd = random.Random(99)
    bases = [json.dumps(game_to_position(g)).encode() for g in random_positions(rnd, 7, crowd=False)[::11]]
    path = tmp_path / "p.json"
    for _ in range(sweep_count(1500, share)):
        data = bytearray(rnd.choice(bases))
        for _ in range(rnd.randint(1, 4)):
            r, i = rnd.random(), rnd.randrange(len(data))
            if r < 0.4:
                data[i] = rnd.randrange(256)
            elif r < 0.6:
                del data[i:i + rnd.randint(1, 20)]
            elif r < 0.8:
                data[i:i] = rnd.choice([b"[", b"{", b"]", b'"', b"9" * 30, b"\xe9", b",", b"null"])
            else:
                data = data[:i]
            if not data:
                break
        path.write_bytes(bytes(data))
        code, out, err = run_cli(["moves", str(path), "--limit", "200"], capsys)
        if code == 0:
            assert err == ""
            assert all(isinstance(json.loads(line), dict) for line in out.splitlines())
        else:
            assert code == 2 and len(err) < 700, err[:1000]
            lines = err.splitlines()
            assert len(lines) == 1 and lines[0].startswith("error: "), err[:1000]


@pytest.mark.parametrize("share", SWEEP)
def test_fuzz_env_positions(share: float) -> None:
    """Randomly broken core positions given to the AEC env's reset: it plays, or raises a PositionError and keeps
    its state; never another exception."""
    from cassino_env import core

    rnd = random.Random(5)
    env = cassino_env.env()
    env.reset(seed=11)
    raw = env.unwrapped
    bases = []
    for _ in range(12):
        bases.append(core.position(raw.core_state, 0))
        agent = env.agent_selection
        obs = env.observe(agent)
        env.step(int(rnd.choice(np.flatnonzero(obs["action_mask"]))))
    refused = 0
    for _ in range(sweep_count(3000, share)):
        position = mutate(rnd, rnd.choice(bases))
        state = raw.core_state
        message = answer(env.reset, None, {"position": position}, errors=(PositionError,))
        if message is not None:
            refused += 1
            assert raw.core_state is state and len(message) < 600, message[:1000]
    assert refused > sweep_count(3000, share) // 2


# -- issue 50, reliability 9: silent accepts of the oracle -------------------------------------------------------------

def _pos(**change: Any) -> dict[str, Any]:
    return {"rules": "classic", "to_move": 0, "hands": [["8S", "2C"], ["3D", "4D"]], "loose": ["5H"], **change}


@pytest.mark.parametrize(("change", "words"), [
    ({"hands": [["1S", "2C"], ["3D", "4D"]]}, ["hands[0][0]", "'1S' is not a card", "an ace is A"]),
    ({"hands": [[" 8S ", "2C"], ["3D", "4D"]]}, ["hands[0][0]", "' 8S ' is not a card", "spaces"]),
    ({"hands": [["8\u017f", "2C"], ["3D", "4D"]]}, ["hands[0][0]", "neither ASCII"]),  # "ſ".upper() == "S"
    ({"loose": ["5H\n"]}, ["loose[0]", "spaces"]),
    ({"last_trail": "1H", "loose": ["AH"]}, ["last_trail", "an ace is A"]),
    ({"hands": [["AS", "2S", "3S", "4S", "5S", "6S", "7S"], ["3D"]]}, ["hands[0]", "7 cards", "the 4 a hand"]),
    ({"hands": [["8S"], ["AC", "2C", "3C", "4C", "5C"]]}, ["hands[1]", "5 cards"]),
    ({"hands": [[], []]}, ["to_move", "every hand and the stock are empty", "must be null"]),
    ({"match_scores": [30, 2]}, ["match_scores", "side 0 has 30", "target 21"]),
    ({"match_scores": [0, 21]}, ["match_scores", "side 1 has 21"]),
], ids=["rank-1", "spaces", "long-s", "newline", "last-trail-1", "7-card-hand", "5-card-hand", "empty-hands-to-move",
        "scores-past-target", "scores-at-target"])
def test_positions_the_oracle_took_silently_are_refused_naming_the_field(change: dict, words: list[str],
                                                                        tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Before: "1S" was an ace of spades, " 8S " the eight, a 7-card classic hand and a player to move with every hand
    empty (0 moves) were listed, and a match already won went on."""
    with pytest.raises(PositionError) as info:
        cassino_env.legal_moves(_pos(**change))
    for w in words:
        assert w in str(info.value)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(_pos(**change)))
    code, out, err = run_cli(["moves", str(path)], capsys)
    assert_one_error_line(code, err, *words)
    assert out == ""


@pytest.mark.parametrize("change", [
    {"match_scores": [25, 25]},  # a tie at the top past the target plays another deal (docs/rules.md 2.6)
    {"match_scores": [20, 0]},
    {"hands": [["8s", "TC"], ["3D", "4D"]]},  # case and the T alias stay texts of cards
    {"hands": [[], []], "to_move": None},  # a deal that is over: no moves
])
def test_positions_near_those_limits_stay_accepted(change: dict) -> None:
    moves = cassino_env.legal_moves(_pos(**change))
    assert (moves == []) == (change.get("to_move", 0) is None)


@pytest.mark.parametrize(("text", "field"), [
    ('{"rules": "classic", "to_move": 0, "to_move": 1, "hands": [["8S"], ["2C"]]}', "'to_move'"),
    ('{"rules": "classic", "to_move": 0, "hands": [["8S"], ["2C"]], "builds": [{"cards": [], "cards": []}]}',
     "'cards'"),
    ('{"rules": {"preset": "classic", "preset": "royal"}, "to_move": 0, "hands": [["8S"], ["2C"]]}', "'preset'"),
], ids=["top-level", "nested", "rules"])
def test_cassino_moves_refuses_a_field_given_twice(text: str, field: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Before: the last of the two was used silently (the web app refuses a field given twice)."""
    path = tmp_path / "p.json"
    path.write_text(text)
    code, out, err = run_cli(["moves", str(path)], capsys)
    assert_one_error_line(code, err, field, "the field is given twice")
    assert out == ""
