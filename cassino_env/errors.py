"""Exception types raised by the rules engines and the JSON oracle.

Every error is a :class:`ValueError` subclass so callers can catch bad input with one ``except``; the message always
names the offending field or the rule (a docs/rules.md section) that forbids the move.
"""

from __future__ import annotations


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
