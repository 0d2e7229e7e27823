"""``cassino replay`` against hostile record files (issue 50, reliability 8): seat names with escape sequences or
line breaks never reach the terminal raw; a lone surrogate, a field given twice, a line past the size cap or bytes
that are not UTF-8 are one ``error:`` line naming the game (its line), exit 2, before anything is reported valid."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from cassino_env.rules import make_rules
from train import cli
from train import records as records_mod
from train.records import MAX_LINE_BYTES, RecordError, parse_lines, random_record

RULES = make_rules("classic")


@pytest.fixture(scope="module")
def record() -> dict[str, Any]:
    return random_record(RULES, 7)


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


def _one_error(code: int, out: str, err: str) -> str:
    assert code == 2 and out == "", (code, out, err)
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("name", ["\x1b[31mred\x1b[0m", "a\r\nb", "tab\there", "bell\x07", "\x9b2J", "\u202eevil",
                                  "x" * 500],
                         ids=["ansi", "crlf", "tab", "bell", "c1-csi", "bidi", "long"])
def test_seat_names_never_reach_the_terminal_raw(record: dict[str, Any], tmp_path: Path, name: str) -> None:
    rec = dict(record, seats=[name, "plain"])
    path = tmp_path / "g.jsonl"
    path.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    code, out, err = _run(["replay", str(path)])
    assert code == 0, err
    assert all(c.isprintable() for line in out.splitlines() for c in line), repr(out)
    assert "\r" not in out and "plain" in out and len(max(out.splitlines(), key=len)) < 200
    code, out, _ = _run(["replay", str(path), "--json"])
    assert code == 0 and out.isascii() and json.loads(out)["groups"][0]["agents"].keys() == {name, "plain"}


def test_a_file_name_with_an_escape_sequence_is_shown_escaped(record: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "g\x1b[2J.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    code, out, _ = _run(["replay", str(path)])
    assert code == 0 and "\x1b" not in out and "\\x1b" in out


@pytest.mark.parametrize("where", ["seat", "info", "key"])
def test_a_lone_surrogate_is_refused_before_the_record_is_reported_valid(record: dict[str, Any], tmp_path: Path,
                                                                          where: str) -> None:
    """Before: the summary said "all valid", then printing the seat name raised UnicodeEncodeError."""
    rec = dict(record)
    if where == "seat":
        rec["seats"] = ["\ud800", "b"]
    elif where == "info":
        rec["info"] = {"note": ["ok", "x\udfffy"]}
    else:
        rec["info"] = {"\udc80": 1}
    path = tmp_path / "g.jsonl"
    path.write_text(json.dumps(rec) + "\n", encoding="ascii")  # json.dumps writes the surrogate as an escape
    err = _one_error(*_run(["replay", str(path)]))
    assert "game 1 (line 1)" in err and "lone surrogate" in err


def test_a_surrogate_pair_is_text(record: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    path.write_text(json.dumps(dict(record, seats=["\U0001f600", "b"])) + "\n", encoding="ascii")
    code, out, err = _run(["replay", str(path)])
    assert code == 0 and "\U0001f600" in out, err


@pytest.mark.parametrize("twice", ["seed", "deal-field", "move-field", "info"])
def test_a_field_given_twice_is_refused_as_the_web_app_does(record: dict[str, Any], tmp_path: Path,
                                                             twice: str) -> None:
    line = json.dumps(dict(record, info={"a": 1}))
    if twice == "seed":
        line = line.replace('"seed": ', f'"seed": {record["seed"]}, "seed": ', 1)
    elif twice == "deal-field":
        line = line.replace('"points": ', '"points": [0, 0], "points": ', 1)
    elif twice == "move-field":
        line = line.replace('"card": ', '"card": "2C", "card": ', 1)
    else:
        line = line.replace('"a": 1', '"a": 1, "a": 2', 1)
    path = tmp_path / "g.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    err = _one_error(*_run(["replay", str(path)]))
    assert "game 1 (line 1)" in err and "the field is given twice" in err
    with pytest.raises(RecordError, match="given twice"):  # the text parser the web app's upload uses
        list(parse_lines(line))


def test_a_line_past_the_cap_is_refused_before_it_is_read_whole(record: dict[str, Any], tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: a 100 MB line took 1.33 GB to parse. Here a line one byte past the cap is refused after the good
    line before it, and JSON never sees it."""
    good = json.dumps(record)
    path = tmp_path / "g.jsonl"
    with path.open("w", encoding="utf-8") as f:
        f.write(good + "\n")
        f.write('{"pad": "' + "x" * (MAX_LINE_BYTES - 10) + '"}\n')
    seen: list[int] = []
    real = records_mod.json_module.loads
    monkeypatch.setattr(records_mod.json_module, "loads", lambda s, **k: (seen.append(len(s)), real(s, **k))[1])
    err = _one_error(*_run(["replay", str(path)]))
    assert f"game 2 (line 2): the line is longer than {MAX_LINE_BYTES:,} bytes" in err
    assert seen == [len(good)]
    with pytest.raises(RecordError, match="longer than"):
        list(parse_lines(path.read_text(encoding="utf-8")))


def test_a_line_at_the_cap_with_crlf_is_read(record: dict[str, Any], tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    line = json.dumps(record).encode()
    monkeypatch.setattr(records_mod, "MAX_LINE_BYTES", len(line))
    path = tmp_path / "g.jsonl"
    path.write_bytes(line + b"\r\n" + line)
    code, out, err = _run(["replay", str(path)])
    assert code == 0 and "2 games" in out, err
    path.write_bytes(line + b" \r\n")
    assert "longer than" in _one_error(*_run(["replay", str(path)]))


@pytest.mark.parametrize("raw", [b"\xff\xfe{}", b'{"a": "\xed\xa0\x80"}', b"\xc3"], ids=["bom16", "cesu", "cut"])
def test_bytes_that_are_not_utf8_are_one_error(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "g.jsonl"
    path.write_bytes(raw + b"\n")
    assert "game 1 (line 1): not UTF-8 text" in _one_error(*_run(["replay", str(path)]))


def test_an_empty_file_and_a_folder_are_one_error(tmp_path: Path) -> None:
    (tmp_path / "e.jsonl").write_bytes(b"")
    assert "no records" in _one_error(*_run(["replay", str(tmp_path / "e.jsonl")]))
    _one_error(*_run(["replay", str(tmp_path)]))
