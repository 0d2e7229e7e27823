"""Exception types raised by the rules engines and the JSON oracle.

Every error is a :class:`ValueError` subclass so callers can catch bad input with one ``except``; the message always
names the offending field or the rule (a docs/rules.md section) that forbids the move.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

#: Seeds are integers in ``0 <= seed < SEED_LIMIT`` (2**63, the range of a numpy int64 seed): one range everywhere
#: (the AEC and vector environments, the oracle's callers, ``cassino play``), checked by :func:`check_seed`.
SEED_LIMIT = 2**63


class CassinoError(ValueError):
    """Base class of every bad-input error raised by :mod:`cassino_env`."""


class CardError(CassinoError):
    """A card text or card id could not be parsed (docs/rules.md section 1)."""


class RulesError(CassinoError):
    """An unknown preset, an unknown switch, or a switch value outside docs/rules.md section 3."""


class PositionError(CassinoError):
    """A malformed position: the message names the field (docs/interchange.md "Position")."""


class MoveFormatError(CassinoError):
    """A malformed move dict: the message names the field (docs/interchange.md "Move")."""


class IllegalMoveError(CassinoError):
    """A well-formed move that the rules forbid; the message names the rule (docs/rules.md section)."""


class SeedError(CassinoError):
    """A seed that is not an integer ``0 <= seed < 2**63`` (:data:`SEED_LIMIT`); the message names the field."""


class MoveLimitError(CassinoError):
    """A position with more legal moves than the ``limit`` a caller allowed (``legal_moves(position, limit=N)``)."""


def check_seed(value: Any, field: str = "seed") -> int:
    """Return ``value`` as a Python int if it is a valid seed: an integer (a Python int or a numpy integer, not a
    bool) with ``0 <= value < 2**63``.

    >>> check_seed(7)
    7
    >>> check_seed(-1)
    Traceback (most recent call last):
    ...
    cassino_env.errors.SeedError: seed: expected an integer 0 <= seed < 2**63, got -1

    Raises:
        SeedError: naming ``field``, for a bool, a float, text, None, a negative or too large integer.
    """
    if isinstance(value, (bool, np.bool_)) or not hasattr(type(value), "__index__"):
        raise SeedError(f"{field}: expected an integer 0 <= seed < 2**63, got {type(value).__name__} "
                        f"{excerpt(value)}")
    n = operator.index(value)
    if not 0 <= n < SEED_LIMIT:
        raise SeedError(f"{field}: expected an integer 0 <= seed < 2**63, got {excerpt(n)}")
    return n


def excerpt(value: Any, limit: int = 80) -> str:
    """A short ``repr`` of ``value`` for an error message: at most about ``limit`` characters, cut in the middle
    with ``...``; an integer too long to print names its digit count instead.

    >>> excerpt("x" * 1000, limit=20)
    "'xxxxxxx...xxxxxxx' (1002 characters)"
    """
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    try:
        text = repr(value)
    except Exception:  # e.g. a structure nested too deep to print, or an object whose repr fails
        return f"a {type(value).__name__} that cannot be printed"
    if len(text) <= limit:
        return text
    half = (limit - 3) // 2
    return f"{text[:half]}...{text[-half:]} ({len(text)} characters)"


def shown_name(value: Any, limit: int = 200) -> str:
    """A file or host name for a one-line error message: as given when it is printable, has no leading or trailing
    spaces and is at most ``limit`` characters; else quoted (``repr``: line breaks and other unprintable characters
    escaped) and, past ``limit``, cut in the middle (:func:`excerpt`).

    >>> shown_name("runs/x"), shown_name("a\\nb"), shown_name(" lead")
    ('runs/x', "'a\\\\nb'", "' lead'")
    """
    text = str(value)
    if text and text.isprintable() and text == text.strip() and len(text) <= limit:
        return text
    return excerpt(text, limit)
