"""Bad input as one line and an exit code: the error helpers every command uses (not the command line itself).

A command reports bad input with ``error: <message>`` on stderr and exit code :data:`EXIT_BAD_INPUT` (2), through
:func:`error` or the :class:`bad_input` context manager; the project's own input errors all derive from
``ValueError`` (``CassinoError``, ``AgentSpecError``, ``CheckpointError``, ``ConfigError``). The ``cassino`` command
line (:mod:`train.cli`) and every command module import these from here, so no module needs the command line.
"""

from __future__ import annotations

import sys
from types import TracebackType

#: The exit code of a command refused for bad input.
EXIT_BAD_INPUT = 2


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
