"""The ``cassino`` command line (``train`` is the top layer: front ends live here, over ``agents`` and ``cassino_env``).

Usage::

    cassino --help                      # the commands, one line each
    cassino --version                   # the installed version
    cassino moves position.json         # legal moves of a docs/interchange.md position, one JSON object a line
    cassino bench --engine core --json  # games and moves per second of an engine

Each command is a function whose typed parameters (documented in its Google-style docstring) become the command's
options through :func:`tyro.cli`. :data:`COMMANDS` maps a command name to ``"module:function"`` and a one-line
summary; a new command is one line there, as ``cassino plot`` is:
``"plot": ("train.plot:main", "draw a training run's learning curves to a PNG")``. Only the chosen command's module
is imported, so ``cassino moves`` never pays for importing torch or compiling the batched core.

Exit codes: 0 on success, 2 on bad input (a usage error, an unreadable file or a malformed position), with
``error: <message>`` on stderr: every command reports bad input through :func:`error` or :class:`bad_input`; 130
on Ctrl-C, with one line (the trainers' says what is saved; any other command's, its imports included, that it was
interrupted).
"""

import importlib
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import tyro

from train.errors import (  # noqa: F401 (re-exported: the commands' error helpers)
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    bad_input,
    error,
    fields_once,
)

#: Command name -> ("module:function", one-line summary). The function is run through tyro.cli; an int it returns
#: is the exit code (None means 0).
COMMANDS: dict[str, tuple[str, str]] = {
    "moves": ("train.cli:moves", "print the legal moves of a JSON position, one JSON object a line"),
    "bench": ("train.cli:bench", "measure an engine's speed in games and moves per second"),
    "proxy": ("train.proxy:main", "score agents on the development proxy set: regret per decision and top-1 agreement"),
    "eval": ("train.evaluate:main",
             "play agents against each other in duplicate format, any preset: win rates, margins, ratings"),
    "play": ("train.play:main", "play against a bot or a trained agent in the terminal"),
    "exploit": ("train.exploit:main",
                "exploitability probe: train a best response to a frozen agent, report its win rate against it"),
    "train": ("train.recipe:main", "train an agent in a compute budget (self-play PPO, then expert iteration), then "
                                   "evaluate it against the bot ladder"),
    "exit": ("train.expert.loop:main",
             "expert iteration: a search labels the network's decisions, the network learns them"),
    "plot": ("train.plot:main", "draw a training run's learning curves to a PNG"),
    "replay": ("train.records:main", "check a game-record file (every move legal, scores as recorded), summarise it"),
    "serve": ("train.serve:main", "a local web app: play any agent in the browser, step through game records"),
    "docs": ("train.docs:main", "print a shipped document or the section an error cites: cassino docs rules 4.4"),
}

#: The largest position file ``cassino moves`` reads, in bytes: a position is a small object (52 cards at most).
MAX_POSITION_BYTES = 1 << 20
#: The longest integer (in digits) ``cassino moves`` parses: the format's integers are seats, counts and values.
MAX_INT_DIGITS = 20


class InputError(ValueError):
    """A position file that cannot be read as one JSON object: too large, not UTF-8, not JSON, nested too deep."""


def _small_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise InputError(f"an integer of {len(text.lstrip('-'))} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def read_json_object(file: Path) -> dict[str, Any]:
    """Read one JSON object from ``file`` (``-``: standard input), at most :data:`MAX_POSITION_BYTES` bytes of
    UTF-8.

    Raises:
        InputError: naming the file, for an unreadable, oversized, non-UTF-8, invalid or too deeply nested file,
            an integer of more than :data:`MAX_INT_DIGITS` digits, an object with a field given twice (naming it, at
            any depth), or JSON that is not an object.
    """
    try:
        if str(file) == "-":
            data = sys.stdin.buffer.read(MAX_POSITION_BYTES + 1)
        else:
            with open(file, "rb") as fh:
                data = fh.read(MAX_POSITION_BYTES + 1)
    except OSError as exc:
        raise InputError(f"{file}: {exc.strerror or exc}") from None
    if len(data) > MAX_POSITION_BYTES:
        raise InputError(f"{file}: larger than {MAX_POSITION_BYTES} bytes; a position is a small JSON object")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{file}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None
    try:
        value = json.loads(text, parse_int=_small_int, object_pairs_hook=fields_once(InputError))
    except InputError as exc:
        raise InputError(f"{file}: not a position: {exc}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{file}: not valid JSON: {exc}") from None
    except RecursionError:
        raise InputError(f"{file}: JSON nested too deeply; a position is a shallow object") from None
    except ValueError as exc:  # e.g. an over-long number the parser itself refuses
        raise InputError(f"{file}: not valid JSON: {str(exc)[:200]}") from None
    if not isinstance(value, dict):
        raise InputError(f"{file}: a position must be a JSON object, not {type(value).__name__}")
    return value


def moves(file: Annotated[Path, tyro.conf.Positional, tyro.conf.arg(metavar="FILE")],
          limit: int | None = None) -> int:
    """Print the legal moves of a position, one JSON object a line, in canonical order, each as soon as it is found.

    The position is one JSON object in the format of docs/interchange.md, e.g.
    {"rules": "classic", "to_move": 0, "hands": [["8S"], ["2C"]], "loose": ["AH", "5D", "3C"]}.
    Moves come trails first, then captures, then builds, e.g. {"action": "capture", "card": "8S", "take": ["3C", "5D"]}.
    A file larger than 1 MiB, not UTF-8, not JSON, or a malformed position is an error (exit code 2).

    Args:
        file: path of the JSON position file; - reads it from standard input.
        limit: print at most this many moves; a position with more prints the first LIMIT, then stops with an
            error (exit code 2). Listing takes time in proportion to the moves listed.
    """
    if limit is not None and limit < 0:
        return error(f"--limit: expected an integer >= 0, got {limit}")
    try:
        position = read_json_object(file)
    except InputError as exc:
        return error(exc)

    import cassino_env  # lazily: keeps `cassino --help` and the other commands light

    try:
        found = cassino_env.iter_legal_moves(position)
    except ValueError as exc:  # malformed position: the message names the field (docs/interchange.md)
        return error(f"{file}: {exc}")
    try:
        for count, move in enumerate(found):
            if limit is not None and count == limit:
                sys.stdout.flush()
                return error(f"{file}: more than --limit {limit} legal moves; the first {limit} are printed")
            print(json.dumps(move))
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. `cassino moves big.json | head`: stop quietly, like other Unix tools
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit-time flush cannot fail
    return 0


def bench(
    engine: Literal["core", "reference", "aec", "vector"] = "core",
    preset: str = "classic",
    batch: tuple[int, ...] = (1, 64, 1024, 4096),
    seconds: float = 2.0,
    threads: int = 1,
    num_players: int | None = None,
    json: bool = False,
    peers: bool = False,
) -> int:
    """Measure an engine's speed: random legal games played for a fixed time at each batch size.

    The table starts with the machine (CPU model, cores). With one thread the core's serial and parallel drivers
    are both timed and the better is reported.

    Args:
        engine: core is the batched numba engine; reference is the slow, one-game-at-a-time engine; aec is the
            PettingZoo environment (one game); vector is the vector environment with full observations, on its
            fastest path (copy=False: views that the next step overwrites; the row says copy=False).
        preset: rule preset of docs/rules.md section 6 ({presets}).
        batch: batch sizes (games stepped together) to measure, one after another.
        seconds: wall-clock seconds spent at each batch size.
        threads: numba threads the core may use.
        num_players: seats at each table (None, the default: the preset's first allowed count, 2 or 4 for cicera).
        json: print one JSON object of results instead of a table.
        peers: also time OpenSpiel's hearts in this process (when open_spiel is installed) and print each row's
            ratio to it.
    """
    from cassino_env import bench as bench_module  # lazily: imports and compiles the batched core
    from cassino_env.errors import CassinoError

    with bad_input(CassinoError) as failed:  # unknown preset, a player count the preset does not allow, ...
        bench_module.run(engine=engine, preset=preset, batch=tuple(batch), seconds=seconds, threads=threads,
                         num_players=num_players, json=json, peers=peers)
    return failed.code


#: The fields of a command's help that :func:`agents.registry.fill_help` fills in: the agent table's lists and the
#: presets of :data:`cassino_env.rules.PRESETS`.
_HELP_FIELDS = re.compile(r"\{(?:agent_specs|agent_list_specs|ladder|bots|presets)\}")


def one_line_args(doc: str | None) -> str | None:
    """``doc`` with each parameter's description in its ``Args:`` section on one line. tyro keeps the line breaks of
    a function's docstring, so ``cassino eval --help`` (every command that is a function) broke an option's text where
    the source wrapped it, leaving ragged half-empty lines. A line indented deeper than the parameter lines is joined
    to the line before it; every other line (the summary, ``Returns:``, ``Raises:``, examples) is kept. None stays
    None.

    >>> doc = "Play.\\n\\n    Args:\\n        seed: seed\\n            of the deals.\\n        deals: how many.\\n    "
    >>> print(one_line_args(doc).strip())
    Play.
    <BLANKLINE>
        Args:
            seed: seed of the deals.
            deals: how many.
    """
    if doc is None:
        return None
    out: list[str] = []
    header: int | None = None  # the indent of "Args:" while inside that section
    param: int | None = None  # the indent of its parameter lines
    for line in doc.split("\n"):
        indent = len(line) - len(line.lstrip())
        text = line.strip()
        if header is not None and text and indent <= header:
            header = param = None  # the section has ended (Returns:, Raises:, ...)
        if header is None:
            if text == "Args:":
                header = indent
            out.append(line)
        elif not text:
            out.append(line)
        elif param is None or indent <= param:
            param = indent if param is None else param
            out.append(line)
        else:
            out[-1] = f"{out[-1].rstrip()} {text}"
    return "\n".join(out)


def _usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = [
        "usage: cassino [-h] [--version] COMMAND [ARGS ...]",
        "",
        "Cassino card game: rules oracle, benchmarks and self-play reinforcement learning.",
        "",
        "commands:",
        *(f"  {name:<{width}}  {summary}" for name, (_, summary) in COMMANDS.items()),
        "",
        "Run 'cassino COMMAND --help' for a command's options.",
    ]
    return "\n".join(lines)


def version() -> str:
    """The installed cassino-rl version (pyproject.toml's ``version``), read from the package metadata without
    importing the library; ``"unknown"`` when the project is not installed (a bare source tree)."""
    from importlib import metadata

    try:
        return metadata.version("cassino-rl")
    except metadata.PackageNotFoundError:
        return "unknown"


def _load(target: str) -> Callable[..., Any]:
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


class _UsageError(Exception):
    """A command line tyro rejected, as one sentence for :func:`error` (raised by :func:`_usage_error_line`)."""


def _option_name(argument: Any) -> str:
    """How the user spells a tyro argument: ``--deals`` (every alias, ``/``-joined) or a positional's metavar."""
    lowered = getattr(argument, "lowered", None)
    flags = tuple(getattr(lowered, "name_or_flags", ()) or ())
    if flags and str(flags[0]).startswith("-"):
        return "/".join(str(flag) for flag in flags)
    return str(getattr(lowered, "metavar", None) or (flags[0] if flags else "argument"))


def _shown(token: str) -> str:
    """A command-line word as an error line shows it: bare when plain, quoted (``repr``) when empty, spaced or odd."""
    return token if token and token.isprintable() and not any(c.isspace() for c in token) else repr(token)


def _instantiation_message(event: Any) -> str:
    """tyro's message for a value it could not convert, on one line and in words: a union's several attempts
    (``int | None``) become ``expects INT or None, got 'x'``, Python's int and float errors ``expects an integer``
    and ``expects a number``; the value as typed, cut in the middle when long."""
    message = str(event.message)
    found = re.match(r"no type matching (\S+) could be instantiated from \[(.*?)\]\.(?:\s|$)", message, re.S)
    if found:  # "{None}|INT" -> "INT or None"; the value is tyro's repr of the word
        kinds = [kind.strip("{}") for kind in found.group(1).split("|")]
        return f"expects {' or '.join(sorted(kinds, key=lambda kind: kind == 'None'))}, got {_cut(found.group(2))}"
    for pattern, kind in ((r"invalid literal for int\(\) with base 10: (.*)", "an integer"),
                          (r"could not convert string to float: (.*)", "a number")):
        found = re.fullmatch(pattern, message, re.S)
        if found:
            return f"expects {kind}, got {_cut(found.group(1))}"
    found = re.search(r"value has (\d+) digits", message)
    if message.startswith("Exceeds the limit") and found:  # int() of thousands of digits
        return f"expects an integer of at most 4,300 digits, got one of {int(found.group(1)):,}"
    return _cut(" ".join(message.split()), 200)


def _cut(text: str, limit: int = 80) -> str:
    """``text`` (already quoted) as an error line shows it: cut in the middle past ``limit`` characters."""
    return text if len(text) <= limit else f"{text[:limit // 2]}...{text[-(limit // 2):]} ({len(text):,} characters)"


def _usage_error_line(event: Any) -> None:
    """tyro's parse-error hook: the failures a ``cassino`` command line meets become one ``error: ...`` line (the
    project's convention for bad input) instead of tyro's boxed panel. It raises :class:`_UsageError`; a failure it
    does not know returns, and tyro prints its own panel (exit 2 all the same)."""
    from tyro import _errors as events

    if isinstance(event, events.InstantiationFailure):
        where = f"{_option_name(event.argument)}: " if event.argument is not None else ""
        raise _UsageError(f"{where}{_instantiation_message(event)}")
    if isinstance(event, events.InvalidChoice):
        raise _UsageError(f"{_option_name(event.argument)}: {event.value!r} is not one of {', '.join(event.choices)}")
    if isinstance(event, events.BadValue):
        name = _option_name(event.argument)
        if event.reason == "too_few_values" or event.offending_value is None:
            if not name.startswith("-"):  # a positional: an unknown option before it may have taken it as its value
                raise _UsageError(f"missing required {name}, or an unknown option before it took it as its value")
            raise _UsageError(f"{name}: expects a value")
        raise _UsageError(f"{name}: takes no value (got {event.offending_value!r})")
    if isinstance(event, events.UnrecognizedArgs):
        raise _UsageError(f"unrecognized option(s): {' '.join(map(_shown, event.tokens))}")
    if isinstance(event, events.MissingArgs):
        missing = ", ".join(_option_name(item.arg) for item in event.missing_arguments)
        tokens = event.unrecognized_tokens
        extra = f"; unrecognized option(s): {' '.join(map(_shown, tokens))}" if tokens else ""
        raise _UsageError(f"missing required {missing}{extra}")


def _parse(command: Callable[..., Any], name: str, args: list[str]) -> Any:
    """``tyro.cli`` over ``command``; a command line it rejects raises :class:`_UsageError`. The hook is tyro's
    private ``_errors.on_parse_error`` (tyro 1.0): where a tyro release lacks it, tyro prints its own panel and
    raises ``SystemExit(2)``."""
    kwargs = dict(prog=f"cassino {name}", args=args, config=(tyro.conf.FlagCreatePairsOff,))
    try:
        from tyro._errors import on_parse_error
    except ImportError:  # an older or newer tyro without the hook
        return tyro.cli(command, **kwargs)
    with on_parse_error(_usage_error_line):
        return tyro.cli(command, **kwargs)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``cassino`` command line; returns the exit code (2 for bad input, with ``error: ...`` on stderr; 130
    for Ctrl-C, with one line and no traceback). A failure of tyro's that the project does not word itself exits
    through tyro's own ``SystemExit(2)``.

    Args:
        argv: the arguments after the program name; defaults to ``sys.argv[1:]``.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print(_usage(), file=sys.stderr)
        return EXIT_BAD_INPUT
    if args[0] in ("-h", "--help"):
        print(_usage())
        return 0
    if args[0] in ("-V", "--version"):
        print(f"cassino-rl {version()}")
        return 0
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        import difflib

        from cassino_env.errors import excerpt

        close = difflib.get_close_matches(name.lower(), COMMANDS, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        return error(f"unknown command {excerpt(name)}; {hint}choose from {', '.join(COMMANDS)} (cassino --help says "
                     "what each does)")
    try:
        command = _load(COMMANDS[name][0])
        if _HELP_FIELDS.search(getattr(command, "__agent_help_template__", None) or command.__doc__ or ""):
            from agents.registry import agent_help

            agent_help(command)  # its help's agent lists (the agent table) and presets (PRESETS): agents.registry
        command.__doc__ = one_line_args(command.__doc__)  # its options' help unbroken: tyro keeps a function's breaks
        result = _parse(command, name, rest)
    except _UsageError as failure:
        return error(f"{failure} (cassino {name} --help lists the options)")
    except KeyboardInterrupt:  # Ctrl-C where the command does not say itself what it saved (its imports included)
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)  # stopped: a second Ctrl-C cannot cut the line short
        print(f"cassino {name}: interrupted (Ctrl-C)", file=sys.stderr)
        return EXIT_INTERRUPTED
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    raise SystemExit(main())
