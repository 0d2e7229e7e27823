"""Bad input as one line and an exit code: the error helpers every command uses (not the command line itself).

A command reports bad input with ``error: <message>`` on stderr and exit code :data:`EXIT_BAD_INPUT` (2), through
:func:`error` or the :class:`bad_input` context manager; the project's own input errors all derive from
``ValueError`` (``CassinoError``, ``AgentSpecError``, ``CheckpointError``, ``ConfigError``). The command modules
(``cassino exit``'s :mod:`train.expert.loop` among them) import these from here, and :mod:`train.cli` re-exports
them: no module imports the command line to report bad input.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import TracebackType
from typing import Any

#: The exit code of a command refused for bad input.
EXIT_BAD_INPUT = 2
#: The exit code of a command stopped by Ctrl-C (SIGINT): 128 + 2, as a shell reports a process it stopped.
EXIT_INTERRUPTED = 130


def error(message: object) -> int:
    """Print ``error: <message>`` on stderr; returns :data:`EXIT_BAD_INPUT` for the command to return."""
    print(f"error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


class bad_input:  # a context manager, named like contextlib.suppress
    """Bad input as an exit code: an exception of one of ``errors`` raised in the ``with`` block is reported by
    :func:`error` and sets ``code`` to :data:`EXIT_BAD_INPUT` (``code`` stays 0 otherwise); other exceptions pass.

    Args:
        errors: the exception types that mean bad input (default ``ValueError``, the base of the project's
            CassinoError, AgentSpecError, CheckpointError and ConfigError).

    >>> with bad_input() as failed:
    ...     int("x")
    >>> failed.code
    2
    """

    def __init__(self, *errors: type[BaseException]) -> None:
        self.errors = errors or (ValueError,)
        self.code = 0

    def __enter__(self) -> bad_input:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        if exc is None or not isinstance(exc, self.errors):
            return False
        self.code = error(exc)
        return True


def fields_once(error: Callable[[str], Exception]) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    """A ``json.loads`` ``object_pairs_hook`` that refuses a JSON object naming a field twice (JSON leaves which of
    the two counts open; the web app and the command line refuse it alike), at any depth.

    Args:
        error: the exception class to raise (a ``ValueError`` subclass: the command line's ``InputError``, the web
            app's ``RequestError``), called with the message ``<field>: the field is given twice``, the field name
            quoted and shortened by ``cassino_env.errors.excerpt``.

    >>> import json
    >>> json.loads('{"a": 1, "b": {"c": 2}}', object_pairs_hook=fields_once(ValueError))
    {'a': 1, 'b': {'c': 2}}
    >>> json.loads('{"a": {"c": 1, "c": 2}}', object_pairs_hook=fields_once(ValueError))
    Traceback (most recent call last):
    ValueError: 'c': the field is given twice
    """
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in pairs:
            if k in out:
                from cassino_env.errors import excerpt

                raise error(f"{excerpt(k)}: the field is given twice")
            out[k] = v
        return out

    return hook


def spec_errors() -> tuple[type[BaseException], ...]:
    """The errors of building an agent from its spec, for an ``except`` that names the option it came from:
    ``AgentSpecError`` and, once ``agents.ppo_agent`` is loaded (a checkpoint was read), ``CheckpointError``.
    Evaluated when an exception is being matched, so no module is imported for it (torch stays unloaded)."""
    from agents.registry import AgentSpecError

    loaded = sys.modules.get("agents.ppo_agent")
    return (AgentSpecError,) if loaded is None else (AgentSpecError, loaded.CheckpointError)


def agent_specs(agents: str) -> list[str]:
    """The specs of a comma-separated ``--agents`` option, stripped; a trailing comma is let be.

    Raises:
        ValueError: an empty entry (two commas in a row, one at the start, or only spaces between two), named as
            the ``agents`` option.
    """
    from cassino_env.errors import excerpt

    specs = [spec.strip() for spec in agents.split(",")]
    if "" in specs[:-1]:
        raise ValueError(f"agents: an empty entry in {excerpt(agents)} (two commas in a row, or one at the start)")
    return [spec for spec in specs if spec]


def named_rules(preset: object, num_players: object = None, **switches: object) -> object:
    """``cassino_env.rules.make_rules(preset, num_players, **switches)`` for a command's options: an unknown preset
    is an error naming ``preset:``, a player count it does not allow one naming ``num_players:`` (as the trainer's
    :func:`train.config.checked_rules` says them).

    Raises:
        cassino_env.errors.RulesError: naming the field.
    """
    from cassino_env.errors import RulesError
    from cassino_env.rules import make_rules

    try:
        make_rules(preset)  # type: ignore[arg-type]
    except (ValueError, TypeError) as exc:
        raise RulesError(f"preset: {exc}") from None  # exc names the preset
    try:
        make_rules(preset, num_players)  # type: ignore[arg-type]
    except (ValueError, TypeError) as exc:
        raise RulesError(f"num_players: {exc}") from None  # exc names the count
    return make_rules(preset, num_players, **switches)  # type: ignore[arg-type]
