"""Game records (train/records.py, docs/records.md): what the arena records replays exactly through the oracle on
every preset (positions, points, match winners), tampered records fail naming the game, deal and move, and the
``cassino eval --save-games`` / ``cassino replay`` commands."""

from __future__ import annotations

import contextlib
import copy
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import cassino_env
from agents.registry import make_agent
from cassino_env import core
from cassino_env.cards import card_text
from cassino_env.rules import make_rules
from train import cli
from train.arena import play_games, seat_agents
from train.records import (
    GameRecorder,
    RecordError,
    RecordWriter,
    deal_position,
    parse_lines,
    random_record,
    replay,
    replay_file,
    rules_field,
    summarize,
)

#: (preset, players, until, session wins): the runs recorded by the arena and replayed.
RUNS = [("classic", 2, "session", 1), ("classic", 4, "session", 1), ("matsuda", 2, "session", 2),
        ("cicera", 4, "deal", 1), ("bga", 3, "session", 1), ("bga", 6, "deal", 1), ("stadium", 2, "session", 1),
        ("royal", 2, "session", 1)]


def record_games(rules: Any, seeds: list[int], until: str = "session", session_wins: int = 1,
                 specs: tuple[str, str] = ("greedy", "random")) -> list[dict[str, Any]]:
    """Records of games played by :func:`train.arena.play_games` (every seat arrangement of the pair per seed)."""
    out: list[dict[str, Any]] = []
    agents = [make_agent(s, rules) for s in specs]
    arr = seat_agents(rules)
    seat_agent = np.tile(arr, (len(seeds), 1))
    game_seeds = np.repeat(np.array(seeds, dtype=np.int64), len(arr))
    recorder = GameRecorder(out.append, agent_names=list(specs))
    play_games(agents, rules, game_seeds, seat_agent, np.random.default_rng(0), until=until,
               session_wins=session_wins, recorder=recorder)
    assert recorder.games == len(out) == len(game_seeds)
    return out


@pytest.mark.parametrize(("preset", "players", "until", "wins"), RUNS, ids=[f"{r[0]}-{r[1]}p-{r[2]}" for r in RUNS])
def test_arena_records_replay_exactly(preset: str, players: int, until: str, wins: int) -> None:
    rules = make_rules(preset, players)
    seeds = [(3 << 32) + b for b in range(3)]
    records = record_games(rules, seeds, until, wins)
    for n, rec in enumerate(records, start=1):
        rec = json.loads(json.dumps(rec))  # through JSON, as a file holds it
        game = replay(rec, n, positions=True)
        assert rec["rules"] == preset and rec["num_players"] == players
        assert set(rec["seats"]) == {"greedy", "random"}
        if until == "deal":
            assert len(game.deals) == 1 and rec["play"] == "deal"
        else:
            assert rec["play"] == ("session" if wins > 1 else "match")
            assert len(rec["match_winners"]) >= wins and game.deals[-1].match_winner is not None
        for d in game.deals:
            assert len(d.positions) == len(d.moves) + 1
            assert d.positions[-1]["to_move"] is None
            assert cassino_env.score_deal(d.positions[-1])["totals"] == d.tally["totals"]
    # The oracle agrees with each step: apply_move on the position before a move gives the next position.
    d = replay(records[0], 1, positions=True).deals[0]
    for i in range(0, len(d.moves), 7):
        after = cassino_env.apply_move(d.positions[i], d.moves[i])
        assert after == d.positions[i + 1]
        assert d.moves[i] in cassino_env.legal_moves(d.positions[i])


@pytest.mark.parametrize(("preset", "players"), [("classic", 2), ("cicera", 4), ("bga", 6), ("royal", 3)])
def test_deal_position_is_what_the_core_deals(preset: str, players: int) -> None:
    rules = make_rules(preset, players)
    for seed in (0, 5, 2**40 + 1):
        pos = deal_position(rules, seed, 0, 0)
        cp = core.position(core.init(rules, np.array([seed])), 0)
        assert pos["hands"] == [[card_text(c) for c in sorted(h)] for h in cp["hands"]]
        assert pos["loose"] == [card_text(c) for c in sorted(cp["loose"])]
        assert pos["stock"] == [card_text(c) for c in cp["stock"]]
        assert (pos["dealer"], pos["to_move"]) == (cp["dealer"], cp["to_move"]) == (players - 1, 0)
    # deal 2 of match 1: the dealer has moved on twice, the totals are carried
    pos = deal_position(rules, 9, 1, 2, [5] * rules.num_sides)
    assert pos["dealer"] == (players + 1) % players and pos["match_scores"] == [5] * rules.num_sides


def test_many_random_records_round_trip() -> None:
    """Random legal play from the oracle's exact lists (not the core's pruned ones) replays too, on every preset."""
    n = 0
    for preset, players in [("classic", 2), ("classic", 3), ("matsuda", 2), ("stadium", 2), ("bga", 4), ("royal", 2)]:
        rules = make_rules(preset, players)
        for seed in range(4):
            rec = random_record(rules, seed=seed * 1000 + 17, play="deal", rng_seed=seed)
            assert replay(json.loads(json.dumps(rec)), n).deals[0].tally["totals"] == rec["deals"][0]["points"]
            n += 1
    rec = random_record(make_rules("classic", target=11), seed=4, play="match")
    assert rec["rules"] == {"preset": "classic", "target": 11}
    assert replay(rec).deals[-1].match_winner == rec["match_winners"][0]


@pytest.fixture(scope="module")
def match_record() -> dict[str, Any]:
    """One classic match recorded by the arena (greedy and random)."""
    return record_games(make_rules("classic"), [11])[0]


def _tampered(rec: dict[str, Any], change: Any) -> dict[str, Any]:
    bad = copy.deepcopy(rec)
    change(bad)
    return bad


def test_an_illegal_move_names_game_deal_and_move(match_record: dict[str, Any]) -> None:
    rec = match_record
    moves = rec["deals"][1]["moves"]
    # a card the player does not hold: the next player's card played out of turn
    wrong = _tampered(rec, lambda r: r["deals"][1]["moves"].__setitem__(4, {"action": "trail",
                                                                            "card": moves[5]["card"]}))
    with pytest.raises(RecordError, match=r"^game 7, deal 2, move 5 \(.*\): .*not in the hand of seat"):
        replay(wrong, 7)
    # a malformed move names the field
    malformed = _tampered(rec, lambda r: r["deals"][0]["moves"].__setitem__(0, {"action": "steal", "card": "AS"}))
    with pytest.raises(RecordError, match=r"^game 2, deal 1, move 1 .*action: expected"):
        replay(malformed, 2)
    # a capture of a card that is not on the table
    held = set(deal_position(make_rules("classic"), rec["seed"], 0, 0)["hands"][0])
    card = sorted(held)[0]
    other = next(c for c in ("2S", "10D", "AH", "5C") if c not in held)
    cap = _tampered(rec, lambda r: r["deals"][0]["moves"].__setitem__(0, {"action": "capture", "card": card,
                                                                          "take": [other]}))
    with pytest.raises(RecordError, match=r"^game 3, deal 1, move 1 \(.*\): "):
        replay(cap, 3)


def test_wrong_scores_and_truncation_are_errors(match_record: dict[str, Any]) -> None:
    rec = match_record
    with pytest.raises(RecordError, match=r"^game 1, deal 1: points \[.*\] differ from the recorded"):
        replay(_tampered(rec, lambda r: r["deals"][0]["points"].__setitem__(0, r["deals"][0]["points"][0] + 1)), 1)
    with pytest.raises(RecordError, match=r"^game 1, deal 1: the record ends after \d+ moves, but the deal is not"):
        replay(_tampered(rec, lambda r: r["deals"][0]["moves"].pop()), 1)
    with pytest.raises(RecordError, match=r"^game 1, deal 1, move \d+: the deal is over after \d+ moves"):
        replay(_tampered(rec, lambda r: r["deals"][0]["moves"].append({"action": "trail", "card": "AS"})), 1)
    with pytest.raises(RecordError, match=r"^game 1: match_winners: the deals give \[\d\], the record says"):
        replay(_tampered(rec, lambda r: r.__setitem__("match_winners", [1 - r["match_winners"][0]])), 1)
    with pytest.raises(RecordError, match=r"^game 1: play is 'match' but the match is not over"):
        replay(_tampered(rec, lambda r: (r["deals"].pop(), r.__setitem__("match_winners", []))), 1)
    with pytest.raises(RecordError, match=r"^game 1, deal 2: match 0, deal 5 recorded, but the game is at match 0"):
        replay(_tampered(rec, lambda r: r["deals"][1].__setitem__("deal", 5)), 1)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("seed", True, "seed: expected an integer"), ("seed", 2**63, "seed: expected an integer"),
    ("seed", -1, "seed: expected an integer"), ("rules", "poker", "rules: "), ("num_players", 5, "rules: "),
    ("play", "tournament", "play: expected one of"), ("seats", ["greedy"], "seats: expected 2 agent names"),
    ("version", 2, "version: this code reads version 1"), ("colour", "red", "colour: unknown field"),
    ("deals", [], "deals: expected a non-empty list"), ("session_wins", 4, "session_wins: "),
])
def test_bad_fields_are_named(match_record: dict[str, Any], field: str, value: Any, message: str) -> None:
    with pytest.raises(RecordError, match=rf"^game 9: {message}"):
        replay(_tampered(match_record, lambda r: r.__setitem__(field, value)), 9)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("points", lambda p: [float(x) for x in p], r"points: expected 2 integers \(one per side\), got \[\d+\.0"),
    ("points", lambda p: [True if x == 1 else x for x in p] + [0], "points: expected 2 integers"),
    ("points", lambda p: None, "points: expected 2 integers"),
    ("match", lambda m: float(m), r"match: expected an integer, got 0\.0"),
    ("match", lambda m: False, "match: expected an integer, got False"),
    ("deal", lambda d: [d], r"deal: expected an integer, got \[0\]"),
])
def test_a_deal_s_numbers_must_be_integers(match_record: dict[str, Any], field: str, value: Any,
                                           message: str) -> None:
    """Points 3.0 or True, and a deal numbered 0.0 or False, compared equal to the integers and were accepted."""
    rec = _tampered(match_record, lambda r: r["deals"][0].__setitem__(field, value(r["deals"][0][field])))
    with pytest.raises(RecordError, match=rf"^game 4, deal 1: {message}"):
        replay(rec, 4)


def test_unreadable_json_lines_are_record_errors() -> None:
    """A line nested 100000 deep and a 5000-digit number escaped as RecursionError and a bare ValueError."""
    for text, message in (('{"a":' * 100000, "nested too deeply"), ("9" * 5000, "Exceeds the limit")):
        with pytest.raises(RecordError, match=rf"^game 2 \(line 2\): not valid JSON: {message}"):
            list(parse_lines("{}\n" + text + "\n"))


def test_a_wrong_seed_does_not_replay(match_record: dict[str, Any]) -> None:
    """The seed decides the cards: the same moves from another seed's deal are illegal at once."""
    with pytest.raises(RecordError, match=r"^game 1, deal 1, move \d+ "):
        replay(_tampered(match_record, lambda r: r.__setitem__("seed", r["seed"] + 1)), 1)


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


def test_eval_save_games_then_replay(tmp_path: Path) -> None:
    path = tmp_path / "games.jsonl"
    code, out, _ = _run(["eval", "--agents", "greedy,random,beginner", "--deals", "6", "--seed", "3",
                         "--out-dir", str(tmp_path / "ev"), "--no-progress", "--save-games", str(path)])
    assert code == 0 and f"game records to {path}" in out
    lines = path.read_text(encoding="utf-8").splitlines()
    games = replay_file(path)
    assert len(games) == len(lines) >= 6
    report = json.loads((tmp_path / "ev" / "eval.json").read_text(encoding="utf-8"))
    assert sum(len(g.deals) for g in games) == sum(p["deals"] for p in report["pairs"])
    assert {tuple(sorted(set(g.record["seats"]))) for g in games} == {("greedy", "random"), ("beginner", "greedy"),
                                                                      ("beginner", "random")}
    # the match wins in the records are the report's
    pair = report["pairs"][0]  # greedy vs random
    wins = sum(g.record["seats"][g.record["match_winners"][0]] == "greedy" for g in games
               if set(g.record["seats"]) == {"greedy", "random"})
    assert wins == pair["match_wins_a"]

    code, out, err = _run(["replay", str(path)])
    assert code == 0 and err == ""
    assert out.startswith(f"{path}: {len(lines)} games, ") and "all valid" in out and "greedy" in out
    code, out, _ = _run(["replay", str(path), "--json"])
    summary = json.loads(out)
    assert code == 0 and summary["games"] == len(lines) == summarize(games)["games"]

    # a tampered line: an error naming the game (its line) and the move, exit 2, nothing printed on stdout
    recs = [json.loads(x) for x in lines]
    recs[2]["deals"][0]["moves"][3] = {"action": "trail", "card": recs[2]["deals"][0]["moves"][4]["card"]}
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    code, out, err = _run(["replay", str(bad)])
    assert code == 2 and out == ""
    assert err.startswith("error: game 3, deal 1, move 4 ") and err.count("\n") == 1


def test_replay_file_errors(tmp_path: Path) -> None:
    good = json.dumps(random_record(make_rules("classic"), seed=1))
    cases = {"empty.jsonl": ("", "no records"), "blank.jsonl": (good + "\n\n" + good + "\n", "game 2 \\(line 2\\): "
                                                                   "empty line"),
             "notjson.jsonl": (good + "\n{oops\n", "game 2 \\(line 2\\): not valid JSON"),
             "list.jsonl": ("[1, 2]\n", "game 1: a record is a JSON object")}
    for name, (text, message) in cases.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        with pytest.raises(RecordError, match=message):
            replay_file(tmp_path / name)
        code, _, err = _run(["replay", str(tmp_path / name)])
        assert code == 2 and err.startswith("error: ")
    code, _, err = _run(["replay", str(tmp_path / "missing.jsonl")])
    assert code == 2 and "missing.jsonl" in err


def test_a_failed_eval_leaves_no_file(tmp_path: Path) -> None:
    path = tmp_path / "games.jsonl"
    code, _, err = _run(["eval", "--agents", "greedy,nobody", "--deals", "2", "--out-dir", str(tmp_path / "ev"),
                         "--no-progress", "--save-games", str(path)])
    assert code == 2 and "nobody" in err
    assert list(tmp_path.iterdir()) == []


def test_save_games_to_a_folder_is_refused_before_playing(tmp_path: Path) -> None:
    """--save-games DIR played the whole evaluation, then failed with an IsADirectoryError traceback and left
    DIR.tmp behind; --save-games '' said "PosixPath('.') has an empty name"."""
    folder = tmp_path / "out"
    folder.mkdir()
    for target in (str(folder), ""):
        code, _, err = _run(["eval", "--agents", "random,greedy", "--deals", "2", "--out-dir", str(tmp_path / "ev"),
                             "--no-progress", "--save-games", target])
        assert code == 2 and err.startswith("error: save_games: ") and "is a folder" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"] and list(folder.iterdir()) == []


def test_writer_leaves_no_tmp_when_the_rename_fails(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"

    def played_while_the_name_became_a_folder() -> None:
        with RecordWriter(path) as w:
            w.write(random_record(make_rules("classic"), seed=1))
            path.mkdir()

    with pytest.raises(RecordError, match=r"^save_games: cannot write .*g\.jsonl: "):
        played_while_the_name_became_a_folder()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.jsonl"] and path.is_dir()


def test_a_full_disk_is_a_record_error_and_leaves_no_tmp(tmp_path: Path) -> None:
    """An OSError from write (ENOSPC) escaped as a traceback."""
    import errno

    class FullDisk(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    path = tmp_path / "g.jsonl"

    def played_onto_a_full_disk() -> None:
        with RecordWriter(path) as w:
            w._file.close()
            w._file = FullDisk()
            w.write(random_record(make_rules("classic"), seed=1))

    with pytest.raises(RecordError, match=r"^save_games: cannot write .*g\.jsonl: No space left on device$"):
        played_onto_a_full_disk()
    assert list(tmp_path.iterdir()) == []


def test_writer_is_atomic(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"

    def interrupted() -> None:
        with RecordWriter(path) as w:
            w.write(random_record(make_rules("classic"), seed=2))
            assert path.with_name("g.jsonl.tmp").exists() and not path.exists()
            raise KeyError("interrupted")

    with pytest.raises(KeyError):
        interrupted()
    assert not path.exists() and not path.with_name("g.jsonl.tmp").exists()


def test_rules_field_round_trips() -> None:
    for rules in (make_rules("classic", 4), make_rules("matsuda", target=51), make_rules("bga", 6),
                  make_rules("classic", sweep_points=2)):
        assert make_rules(rules_field(rules), num_players=rules.num_players) == rules


def test_replay_into_a_closed_pipe_is_quiet(tmp_path: Path) -> None:
    """`cassino replay FILE | head -0`: the reader is gone before the summary is written; exit 0, no traceback."""
    import subprocess
    import sys

    path = tmp_path / "g.jsonl"
    path.write_text(json.dumps(random_record(make_rules("classic"), seed=5)) + "\n", encoding="utf-8")
    code = f"import sys; from train.cli import main; sys.exit(main(['replay', {str(path)!r}]))"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # before the replay has printed anything (importing alone takes longer)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and err == b""
