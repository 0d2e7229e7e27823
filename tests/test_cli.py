"""The ``cassino`` command line: ``cassino moves`` against docs/interchange.md, its error path, and the command list."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from train import cli

# docs/rules.md 7 case 1, classic, seat 0 to move holding 8S; seat 1 holds 2C.
#   table:  AH  2D  3C  5D  6H  8C
#   hand:   8S
# The 8 may take {8, 6+2, 5+3} or {8, 5+2+A}, never all six cards.
POSITION = {
    "rules": "classic",
    "num_players": 2,
    "to_move": 0,
    "hands": [["8S"], ["2C"]],
    "loose": ["AH", "2D", "3C", "5D", "6H", "8C"],
}


def run_cli(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``python -m train.cli ARGS`` as a user would run ``cassino ARGS``."""
    return subprocess.run([sys.executable, "-m", "train.cli", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=300, check=False)


def move_key(move: dict) -> tuple:
    """A move with its card lists as sets: two groupings of the same cards are the same move."""
    return tuple(sorted((k, frozenset(v) if isinstance(v, list) else v) for k, v in move.items()))


@pytest.fixture
def position_file(tmp_path: Path) -> Path:
    path = tmp_path / "position.json"
    path.write_text(json.dumps(POSITION), encoding="utf-8")
    return path


def test_moves_prints_one_json_move_a_line(position_file: Path, repo_root: Path) -> None:
    result = run_cli("moves", str(position_file), cwd=repo_root)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    moves = [json.loads(line) for line in lines]
    assert all(isinstance(m, dict) for m in moves)
    assert lines == [json.dumps(m) for m in moves]  # compact: one object a line, nothing else
    # Trails come first (docs/interchange.md "Move").
    assert moves[0] == {"action": "trail", "card": "8S"}
    keys = {move_key(m) for m in moves}
    assert len(keys) == len(moves)  # each move once
    assert move_key({"action": "capture", "card": "8S", "take": ["2D", "3C", "5D", "6H", "8C"]}) in keys
    assert move_key({"action": "capture", "card": "8S", "take": ["AH", "2D", "5D", "8C"]}) in keys
    assert move_key({"action": "capture", "card": "8S", "take": ["AH", "2D", "3C", "5D", "6H", "8C"]}) not in keys
    # The groups of value 8 are 8C, 6H+2D, 5D+3C and 5D+2D+AH; classic takes any non-empty set of disjoint groups
    # (docs/rules.md 3, capture_mode groups). With no second card in hand there is no build.
    groups = [["8C"], ["2D", "6H"], ["3C", "5D"], ["AH", "2D", "5D"]]
    takes = [[]]
    for group in groups:
        takes += [take + group for take in takes if not set(take) & set(group)]
    expected = {move_key({"action": "trail", "card": "8S"})}
    expected |= {move_key({"action": "capture", "card": "8S", "take": take}) for take in takes if take}
    assert len(expected) == 10
    assert keys == expected


def test_moves_in_process_matches_library(position_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import cassino_env

    assert cli.main(["moves", str(position_file)]) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert printed == cassino_env.legal_moves(POSITION)


def test_moves_reads_standard_input(repo_root: Path) -> None:
    result = run_cli("moves", "-", cwd=repo_root, stdin=json.dumps(POSITION))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[0]) == {"action": "trail", "card": "8S"}


def test_moves_malformed_json_exits_2(tmp_path: Path, repo_root: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"rules": "classic", "hands": [["8S"]', encoding="utf-8")
    result = run_cli("moves", str(path), cwd=repo_root)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("error: ")
    assert "broken.json" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(None, "No such file", id="missing-file"),
        pytest.param("[1, 2, 3]", "JSON object", id="not-an-object"),
        pytest.param("", "not valid JSON", id="empty-file"),
        # docs/interchange.md "Position": a field not in its table is refused, the error naming it.
        pytest.param(json.dumps({**POSITION, "colour": "red"}), "colour", id="unknown-field"),
    ],
)
def test_moves_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None,
                                 expected: str) -> None:
    path = tmp_path / "position.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert cli.main(["moves", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("error: ")
    assert expected in captured.err


def test_help_lists_every_command(repo_root: Path) -> None:
    result = run_cli("--help", cwd=repo_root)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for name, (_, summary) in cli.COMMANDS.items():
        assert any(line.split()[:1] == [name] and line.rstrip().endswith(summary) for line in lines), name


@pytest.mark.parametrize("name", list(cli.COMMANDS))
def test_every_command_has_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main([name, "--help"])
    assert exit_info.value.code == 0
    assert f"cassino {name}" in capsys.readouterr().out


def test_bench_help_shows_its_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["bench", "--help"])
    out = capsys.readouterr().out
    for option in ("--engine", "--preset", "--batch", "--seconds", "--threads", "--num-players", "--json"):
        assert option in out


def test_no_command_prints_the_usage_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 2
    assert "usage: cassino" in capsys.readouterr().err


def test_an_unknown_command_is_one_line_with_the_closest_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["evl"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown command 'evl'; did you mean 'eval'? choose from moves, bench")
    assert err.count("\n") == 1
    assert cli.main(["no-such-command"]) == 2
    assert "did you mean" not in capsys.readouterr().err
    assert cli.main(["EVAL"]) == 2
    assert "did you mean 'eval'?" in capsys.readouterr().err
    assert cli.main(["e" * 10_000]) == 2
    assert len(capsys.readouterr().err) < 400


@pytest.mark.parametrize(("args", "said"), [
    (["eval", "--agents", "greedy,random", "--deals", "abc"], "error: --deals: expects an integer, got 'abc'"),
    (["bench", "--engine", "foo"], "error: --engine: 'foo' is not one of core, reference, aec, vector"),
    (["eval", "--agents"], "error: --agents: expects a value"),
    (["eval", "--agents", "greedy,random", "--dealz", "3"], "error: unrecognized option(s): --dealz 3"),
    (["moves"], "error: missing required FILE"),
    (["eval", "--dealz", "3"], "error: missing required --agents; unrecognized option(s): --dealz 3"),
    (["bench", "--num-players", "two"], "error: --num-players: expects INT or None, got 'two'"),
    (["bench", "--seconds", "x"], "error: --seconds: expects a number, got 'x'"),
    (["bench", "--num-players", "[x]"], "error: --num-players: expects INT or None, got '[x]' (cassino"),
    (["bench", "--num-players", "a  b"], "error: --num-players: expects INT or None, got 'a  b' (cassino"),
    (["bench", "--num-players", "x" * 5000], "error: --num-players: expects INT or None, got 'xxxxxxx"),
    (["eval", "--agents", "a,b", "--deals", "9" * 5000], "error: --deals: expects an integer of at most 4,300 digits"),
    (["bench", ""], "error: unrecognized option(s): ''"),
    (["eval", "a\nb"], "error: missing required --agents; unrecognized option(s): 'a\\nb'"),
    (["moves", "--bogus", "position.json"], "error: missing required FILE, or an unknown option before it took it"),
], ids=["not-an-int", "not-a-choice", "no-value", "unknown-option", "no-positional", "missing-and-unknown",
        "not-an-optional-int", "not-a-float", "a-bracket-in-the-value",
        "spaces-kept", "a-long-value-cut", "thousands-of-digits", "empty-word", "word-with-a-line-break",
        "unknown-option-before-a-positional"])
def test_a_rejected_command_line_is_one_error_line(args: list[str], said: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """What tyro rejects is reported as the project's other bad input is: one ``error: ...`` line naming the option
    and pointing at the command's help, exit 2, and none of tyro's boxed panel."""
    if not hasattr(pytest.importorskip("tyro._errors"), "on_parse_error"):
        pytest.skip("this tyro has no parse-error hook; its own panel is printed")
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(said), err
    assert err.count("\n") == 1 and f"(cassino {args[0]} --help lists the options)" in err and len(err) < 400
    assert "\u2500" not in err and "\u256d" not in err


def test_eval_and_train_help_show_the_preset_options(capsys: pytest.CaptureFixture[str]) -> None:
    """Every preset is reachable from the command line: eval takes the preset, its player count, the target and
    Trump Stadium's session length; train takes the preset (and reads configs/ppo_PRESET.yaml for it)."""
    with pytest.raises(SystemExit):
        cli.main(["eval", "--help"])
    out = capsys.readouterr().out
    for option in ("--agents", "--preset", "--num-players", "--session-wins", "--target", "--seed", "--deals"):
        assert option in out
    with pytest.raises(SystemExit):
        cli.main(["train", "--help"])
    out = capsys.readouterr().out
    for option in ("--config", "--preset", "--num-players"):
        assert option in out


#: Every command that takes --preset, with the arguments it needs besides (the torch ones are marked).
PRESET_COMMANDS = [
    (["train"], True), (["exit"], True), (["exploit", "greedy"], True), (["eval", "--agents", "random,greedy"], False),
    (["play"], False), (["proxy", "--agents", "greedy"], False), (["bench"], False),
]


@pytest.mark.parametrize(("args", "torch"), PRESET_COMMANDS, ids=[a[0] for a, _ in PRESET_COMMANDS])
def test_an_unknown_preset_is_named_once(args: list[str], torch: bool, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A new-user trial: ``cassino train --preset clasic`` said "preset 'clasic': unknown preset 'clasic'; ..."."""
    if torch:
        pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    assert cli.main([*args, "--preset", "clasic"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "unknown preset 'clasic'; known presets: " in err[0], err
    assert err[0].count("clasic") == 1, err
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize("command", ["train", "exit"])
def test_a_player_count_the_preset_lacks_is_named_once(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    assert cli.main([command, "--num-players", "5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: num_players: preset 'classic' allows num_players 2, 3, 4, not 5 (docs/rules.md 6)", err


@pytest.mark.parametrize("command", ["play", "eval", "exploit", "bench", "proxy", "train", "exit"])
def test_the_num_players_help_says_what_none_means(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A new-user trial: ``cassino play --help`` showed ``--num-players {None}|INT ... (default: None)`` and did not
    say what None means."""
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    out = " ".join(capsys.readouterr().out.replace("\u2502", " ").split())
    text = out[out.index("--num-players"):]
    text = text[:text.index(" --", 2)]
    assert "None" in text and "default: the preset's first allowed count" in text, text


@pytest.mark.parametrize("name", list(cli.COMMANDS))
def test_every_option_help_is_one_paragraph(name: str) -> None:
    """A new-user trial: ``cassino play --help`` broke the --device text after "cuda," and ``cassino eval --help``
    broke most options where the docstring's source lines ended (tyro keeps a function's line breaks), leaving
    half-empty lines. The command line joins each parameter's lines; the summary and the sections after are kept."""
    import docstring_parser

    command = cli._load(cli.COMMANDS[name][0])
    doc = command.__doc__ or ""
    joined = cli.one_line_args(doc)
    before, after = docstring_parser.parse(doc), docstring_parser.parse(joined)
    assert [p.arg_name for p in after.params] == [p.arg_name for p in before.params]
    for old, new in zip(before.params, after.params, strict=True):
        assert "\n" not in (new.description or ""), new.arg_name
        assert (new.description or "").split() == (old.description or "").split()  # the same words
    assert after.short_description == before.short_description
    assert after.long_description == before.long_description
    assert cli.one_line_args(joined) == joined


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib import metadata

    import cassino_env

    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out == f"cassino-rl {metadata.version('cassino-rl')}\n"
    assert metadata.version("cassino-rl") == cassino_env.__version__  # pyproject.toml and the package agree
    assert "[--version]" in cli._usage()


def test_help_of_every_command_imports_neither_torch_nor_the_kernels(repo_root: Path) -> None:
    """`cassino COMMAND --help` stays quick: torch and the batched core are imported where they are used."""
    code = ("import sys\nfrom train import cli\nfor name in cli.COMMANDS:\n    try:\n"
            "        cli.main([name, '--help'])\n    except SystemExit:\n        pass\n"
            "print(sorted(m for m in ('torch', 'cassino_env.core') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=repo_root, capture_output=True, text=True, timeout=240,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "[]", proc.stdout[-2000:]


def one_error_line(capsys: pytest.CaptureFixture[str], *, quiet: bool = True) -> str:
    """The one ``error:`` line, the last, a command refused for bad input printed; ``quiet``: it printed nothing
    else (not: the trainer's notes, a first compile's notice, may come before it)."""
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert [line for line in err if line.startswith("error: ")] == err[-1:], err
    assert not quiet or (captured.out == "" and len(err) == 1), (captured.out[-500:], err)
    return err[-1]


@pytest.mark.parametrize("command", ["train", "exit"])
def test_a_preset_name_too_long_for_a_file_name_is_an_unknown_preset(command: str,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A breaker review: ``cassino train --preset <5,000 characters>`` ended in OSError (file name too long): the
    preset's config file was looked up before the name was checked."""
    pytest.importorskip("torch")
    assert cli.main([command, "--preset", "x" * 5000]) == 2
    err = one_error_line(capsys)
    assert err.startswith("error: preset: unknown preset 'xxx") and "...xxx" in err and "(5002 characters)" in err
    assert len(err) < 300, err


#: A path no file can have: one name longer than any file system takes (looking it up is ENAMETOOLONG, an OSError).
LONG_NAME = "y" * 300


@pytest.mark.parametrize(("args", "torch"), [
    (["train", "--config", LONG_NAME], True), (["train", "--resume", LONG_NAME], True),
    (["train", "--run-dir", LONG_NAME], True), (["exit", "--config", LONG_NAME], True),
    (["exit", "--resume", LONG_NAME], True), (["eval", "--agents", f"checkpoint:{LONG_NAME},random"], True),
    (["play", "--opponent", f"checkpoint:{LONG_NAME}"], True), (["exploit", f"checkpoint:{LONG_NAME}"], True),
    (["proxy", "--agents", "random", "--path", LONG_NAME], False), (["plot", LONG_NAME], False),
], ids=["train-config", "train-resume", "train-run-dir", "exit-config", "exit-resume", "eval-checkpoint",
        "play-checkpoint", "exploit-checkpoint", "proxy-path", "plot"])
def test_a_path_too_long_to_look_up_is_no_file(args: list[str], torch: bool, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A breaker review: Path.is_file()/exists() raise OSError for such a name; each command says the file is not
    there (or cannot be made), in one line that quotes an excerpt of the name, and writes nothing."""
    if torch:
        pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    assert cli.main(args) == 2
    err = one_error_line(capsys, quiet=False)  # the trainer notes its rounded step count before it makes the folder
    assert "(300 characters)" in err or "(302 characters)" in err, err
    assert LONG_NAME not in err and len(err) < 600, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("spec", ["search:ladder", "search:foo", "search:policy:random", "search:pretrained:classic:0"])
def test_serve_refuses_a_search_spec_play_refuses_before_it_starts(spec: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A breaker review: ``cassino serve --allow-agent search:ladder`` started the server; play, eval and exploit
    refuse the spec. Its argument is now read by the registry's check, which serve runs before listening."""
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    assert cli.main(["serve", "--port", "0", "--allow-agent", spec]) == 2
    err = one_error_line(capsys)
    assert err.startswith("error: allow-agent: ") and "Cassino is served" not in err, err
    assert cli.main(["play", "--opponent", spec]) == 2
    assert one_error_line(capsys).removeprefix("error: opponent: ") == err.removeprefix("error: allow-agent: ")


@pytest.mark.parametrize(("args", "start"), [
    (["play", "--opponent", "ladder"], "error: opponent: unknown agent 'ladder': "),
    (["play", "--opponent", "pimc:0"], "error: opponent: pimc:N needs a positive number"),
    (["eval", "--agents", "LADDER,random", "--deals", "2"], "error: agents: unknown agent 'LADDER'; "),
    (["eval", "--agents", "random,search:ladder", "--deals", "2"], "error: agents: search:SPEC[:N]: "),
    (["proxy", "--agents", "random,nobody"], "error: agents: unknown agent 'nobody'; "),
])
def test_an_agent_spec_error_names_its_option(args: list[str], start: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A breaker review: ``cassino play --opponent ladder`` and ``cassino eval --agents LADDER,random`` printed the
    registry's message without the option it came from (cassino exploit says ``agent:``, serve ``allow-agent:``)."""
    if args[0] == "proxy":
        from train.proxy import default_path

        if not default_path().is_file():  # proxy reads its file before it builds the agents
            pytest.skip("no default proxy file (python scripts/make_proxy.py)")
    monkeypatch.chdir(tmp_path)
    assert cli.main(args) == 2
    assert one_error_line(capsys).startswith(start)


@pytest.mark.parametrize("command", ["train", "exit"])
@pytest.mark.parametrize(("flag", "value", "said"), [
    ("--num-players", "0", "error: num_players: must be an integer >= 1, got 0"),
    ("--preset", "", "error: preset: must be a non-empty string, got ''"),
])
def test_a_field_rule_names_its_field_as_the_rules_check_does(command: str, flag: str, value: str, said: str,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A breaker review: ``num_players must be an integer >= 1`` beside ``num_players: preset 'classic' allows ...``
    for the same option; every field rule now says ``FIELD: must be ...``."""
    pytest.importorskip("torch")
    assert cli.main([command, flag, value]) == 2
    assert one_error_line(capsys) == said


def test_exploit_checks_its_options_before_it_prints(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A breaker review: ``cassino exploit ladder`` printed "exploit: training a best response to ladder ..." and
    then the error; a bad agent, or a bad option the trainer refuses, is now the only line."""
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["exploit", "ladder"]) == 2
    assert one_error_line(capsys).startswith("error: agent: unknown agent 'ladder': ")
    assert cli.main(["exploit", "random", "--threads", "0"]) == 2
    assert one_error_line(capsys).startswith("error: threads: must be an integer from 1 to 1024")
    assert list(tmp_path.iterdir()) == []


#: A name with a line break (and so with no printable one-line form as given).
NEWLINE_NAME = "a\nb"


@pytest.mark.parametrize(("args", "start", "torch"), [
    (["train", "--resume", NEWLINE_NAME], "error: resume: 'a\\nb': no such checkpoint file", True),
    (["exit", "--resume", NEWLINE_NAME], "error: resume: 'a\\nb': no such checkpoint file", True),
    (["train", "--config", NEWLINE_NAME], "error: 'a\\nb': No such file or directory", True),
    (["exit", "--config", NEWLINE_NAME], "error: 'a\\nb': No such file or directory", True),
    (["play", "--opponent", f"checkpoint:{NEWLINE_NAME}"], "error: opponent: 'a\\nb': no such checkpoint file", True),
    (["eval", "--agents", f"random,checkpoint:{NEWLINE_NAME}"], "error: agents: 'a\\nb': no such checkpoint", True),
    (["exploit", f"checkpoint:{NEWLINE_NAME}"], "error: agent: 'a\\nb': no such checkpoint file", True),
    (["play", "--opponent", "checkpoint:/nonexist.pt"], "error: opponent: /nonexist.pt: no such checkpoint", True),
    (["eval", "--agents", "random,checkpoint:/nonexist.pt"], "error: agents: /nonexist.pt: no such checkpoint",
     True),
    (["train", "--resume", "\u00fcn\u00ef"], "error: resume: \u00fcn\u00ef: no such checkpoint file", True),
    (["serve", "--port", "0", "--host", NEWLINE_NAME], "error: host: expected an address to listen on, got 'a\\nb'",
     False),
], ids=["train-resume", "exit-resume", "train-config", "exit-config", "play-checkpoint", "eval-checkpoint",
        "exploit-checkpoint", "play-missing", "eval-missing", "train-resume-missing", "serve-host"])
def test_an_odd_name_is_quoted_in_one_line_naming_its_option(args: list[str], start: str, torch: bool,
                                                             tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A breaker review: a line break in a path split the error over two lines, and a missing ``checkpoint:PATH``
    did not name its option; the name is now quoted (repr-style) and the option named, in one line."""
    if torch:
        pytest.importorskip("torch")
    else:
        pytest.importorskip("uvicorn")
    monkeypatch.chdir(tmp_path)
    assert cli.main(args) == 2
    assert one_error_line(capsys, quiet=False).startswith(start)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("spec", ["pretrained:nosuch", "search:pretrained:nosuch", "policy:pretrained:nosuch"])
def test_serve_refuses_an_unknown_pretrained_name_before_it_starts(spec: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A breaker review: ``cassino serve --allow-agent pretrained:nosuch`` started serving; the registry's check
    now knows the shipped names (no file is read)."""
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    assert cli.main(["serve", "--port", "0", "--allow-agent", spec]) == 2
    assert one_error_line(capsys).startswith("error: allow-agent: unknown pretrained agent 'nosuch'; shipped: ")


@pytest.mark.parametrize(("args", "said"), [
    (["play", "--preset", "bad"], "error: preset: unknown preset 'bad'; known presets: "),
    (["proxy", "--preset", "bad", "--agents", "random"], "error: preset: unknown preset 'bad'; known presets: "),
    (["eval", "--preset", "bad", "--agents", "random,greedy"], "error: preset: unknown preset 'bad'; known presets: "),
    (["play", "--num-players", "7"], "error: num_players: preset 'classic' allows num_players 2, 3, 4, not 7"),
    (["eval", "--agents", "random,greedy", "--deals", "0"], "error: deals: must be an integer from 1 to 10,000,000, "
     "got 0"),
    (["eval", "--agents", "random,greedy", "--deals", "9" * 40], "error: deals: must be an integer from 1 to "
     "10,000,000, got 9999"),
    (["eval", "--agents", ""], "error: agents: evaluation needs at least two agents, got 0"),
    (["eval", "--agents", "random"], "error: agents: evaluation needs at least two agents, got 1"),
], ids=["play-preset", "proxy-preset", "eval-preset", "play-num-players", "eval-deals-0", "eval-deals-40-digits",
        "eval-no-agents", "eval-one-agent"])
def test_a_bad_option_of_play_eval_proxy_names_its_field(args: list[str], said: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A breaker review: ``cassino play --preset bad`` and ``cassino eval --deals 0`` did not name their option, and
    ``cassino eval --deals <40 digits>`` ran on without end; each is now one line naming the field."""
    monkeypatch.chdir(tmp_path)
    assert cli.main(args) == 2
    assert one_error_line(capsys).startswith(said)
    assert list(tmp_path.iterdir()) == []


def test_num_steps_not_a_multiple_of_the_deal_names_its_field(capsys: pytest.CaptureFixture[str]) -> None:
    """A breaker review: ``num_steps=100 must be ...``; the field rules say ``FIELD: must be ...``."""
    pytest.importorskip("torch")
    assert cli.main(["train", "--num-steps", "100"]) == 2
    assert one_error_line(capsys) == ("error: num_steps: must be a multiple of the deal length 48 (rollouts hold "
                                      "whole deals), got 100")


@pytest.mark.parametrize("command", ["train", "exit"])
def test_an_exp_name_too_long_for_a_folder_is_refused_before_anything_is_made(command: str, tmp_path: Path,
                                                                              capsys: pytest.CaptureFixture[str],
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A breaker review: ``--exp-name <300 y's>`` failed to create the run folder but left an empty ``runs/``."""
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    assert cli.main([command, "--exp-name", LONG_NAME]) == 2
    err = one_error_line(capsys, quiet=False)
    assert err.startswith("error: exp_name: must be at most 200 characters") and "(302 characters)" in err, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args", [["train"], ["exit"], ["exploit", "random"]], ids=["train", "exit", "exploit"])
def test_a_run_dir_whose_last_name_cannot_be_made_leaves_no_parent(args: list[str], tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A breaker review: ``--run-dir $'a\\nb/'<300 y's>`` made ``a\\nb`` before the last name failed; the whole path
    is now checked first (every name at most 255 bytes), and exploit checks it before its first line."""
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    assert cli.main([*args, "--run-dir", f"{NEWLINE_NAME}/{LONG_NAME}"]) == 2
    err = one_error_line(capsys, quiet=args[0] == "exploit")  # the trainer notes its rounded step count first
    assert err.startswith("error: run_dir: 'a\\nb/yyy") and "a name in it is 300 bytes long" in err, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("args", "said"), [
    (["train", "--config", ""], "error: config: the file name is empty"),
    (["exit", "--config", ""], "error: config: the file name is empty"),
    (["proxy", "--agents", "random", "--path", ""], "error: path: the file name is empty"),
    (["proxy", "--agents", "random", "--path", NEWLINE_NAME], "error: 'a\\nb': no proxy file"),
    (["plot", " lead"], "error: ' lead': no such folder"),
], ids=["train-config", "exit-config", "proxy-path", "proxy-newline", "plot-lead"])
def test_an_empty_or_odd_file_name_is_said_so(args: list[str], said: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A breaker review: ``--config ''`` said ".: Is a directory", ``proxy --path ''`` ".: no proxy file", and
    ``cassino plot ' lead'`` printed the name unquoted."""
    if args[0] in ("train", "exit"):
        pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    assert cli.main(args) == 2
    assert one_error_line(capsys).startswith(said)
    assert list(tmp_path.iterdir()) == []


def test_exit_init_with_a_name_too_long_gives_a_short_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A breaker review: ``cassino exit --init checkpoint:<5,000 characters>`` printed a 5,055-character line; the
    checkpoint reader quotes an excerpt of the name."""
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["exit", "--init", "checkpoint:" + "z" * 5000]) == 2
    err = one_error_line(capsys, quiet=False)
    assert "(5002 characters)" in err and "no such checkpoint file" in err and len(err) < 300, err
    assert err.startswith("error: init: "), err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("args", "content", "said"), [
    (["play", "--opponent", "checkpoint:a\nb.pt"], b"junk", "error: opponent: 'a\\nb.pt': not a readable checkpoint"),
    (["train", "--config", "a\nb.pt"], b"[", "error: 'a\\nb.pt': not valid YAML"),
    (["train", "--config", "a\nb.pt"], b"\xff", "error: 'a\\nb.pt': not UTF-8 text"),
], ids=["checkpoint-corrupt", "config-not-yaml", "config-not-utf8"])
def test_a_bad_file_with_an_odd_name_is_one_line(args: list[str], content: bytes, said: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A breaker review: a line break in a file name split the error; every message of the checkpoint reader and
    the config reader quotes such a name."""
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a\nb.pt").write_bytes(content)
    assert cli.main(args) == 2
    assert one_error_line(capsys).startswith(said)


@pytest.mark.parametrize("kind", ["file", "full-folder"])
def test_a_run_dir_with_a_line_break_is_quoted_when_refused(kind: str, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A breaker review: a line break in ``--run-dir`` split the error; the folder checks quote the name."""
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    if kind == "file":
        (tmp_path / NEWLINE_NAME).write_text("")
        said = "error: run_dir 'a\\nb' exists and is not a folder"
    else:
        (tmp_path / NEWLINE_NAME).mkdir()
        (tmp_path / NEWLINE_NAME / "x\ny").write_text("")
        said = "error: run_dir 'a\\nb' is not empty (it holds 'x\\ny'): "
    assert cli.main(["train", "--run-dir", NEWLINE_NAME]) == 2
    assert one_error_line(capsys, quiet=False).startswith(said)


@pytest.mark.parametrize("agents", ["advanced,,random", ",advanced,random", "advanced, ,random"])
@pytest.mark.parametrize("command", ["eval", "proxy"])
def test_an_empty_agent_entry_is_refused(command: str, agents: str, capsys: pytest.CaptureFixture[str]) -> None:
    """An empty entry in --agents was dropped silently; a typo like a doubled comma is now said (a trailing comma is
    let be), by every command that takes a list of agents."""
    assert cli.main([command, "--agents", agents]) == 2
    assert capsys.readouterr().err.startswith(f"error: agents: an empty entry in {agents!r}")


def test_a_json_field_given_twice_is_one_message_in_the_file_reader_and_the_web_app(tmp_path: Path) -> None:
    """train.errors.fields_once is the one duplicate-field hook: the position reader raises its InputError, the
    web app's body parser its RequestError and the game-record reader its RecordError (it had a third copy of the
    hook), with the same words, at any depth; a field named once passes."""
    from train.errors import fields_once
    from train.serve_state import RequestError, parse_json

    position = tmp_path / "twice.json"
    position.write_text('{"rules": "classic", "hands": {"0": [], "0": []}}')
    with pytest.raises(cli.InputError, match=r"twice\.json: not a position: '0': the field is given twice"):
        cli.read_json_object(position)
    with pytest.raises(RequestError, match=r"^'seed': the field is given twice$"):
        parse_json(b'{"opponent": "greedy", "seed": 1, "seed": 2}')
    assert parse_json(b'{"a": {"b": 1}, "b": 2}') == {"a": {"b": 1}, "b": 2}
    with pytest.raises(LookupError, match="the field is given twice"):
        json.loads('[{"x": 1}, {"y": 1, "y": 1}]', object_pairs_hook=fields_once(LookupError))
    from train.records import RecordError, parse_line  # the game-record reader (cassino replay, the web app's viewer)

    with pytest.raises(RecordError, match=r"^game 3 \(line 3\): 'to': the field is given twice \(a record names"):
        parse_line(3, '{"format": "cassino-game", "seats": [{"name": "a", "to": 1, "to": 2}]}')


@pytest.mark.parametrize("where", ["import", "run"])
def test_ctrl_c_of_any_command_is_one_line_and_exit_130(where: str, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Hostile: Ctrl-C while a command's modules were imported (torch takes seconds) or while a command that says
    nothing of its own about Ctrl-C ran (cassino eval) was a Python traceback."""
    import signal

    def interrupted(*a: object, **k: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_load" if where == "import" else "_parse",
                        interrupted if where == "import" else lambda *a, **k: interrupted())
    previous = signal.getsignal(signal.SIGINT)
    try:
        code = cli.main(["eval", "--agents", "random,greedy"])
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # a second Ctrl-C cannot cut the exit short
    finally:
        signal.signal(signal.SIGINT, previous)
    captured = capsys.readouterr()
    assert code == cli.EXIT_INTERRUPTED == 130
    assert captured.err == "cassino eval: interrupted (Ctrl-C)\n" and captured.out == ""
