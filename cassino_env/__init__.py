"""cassino-rl: exact rules, a batched core and RL environments for the Cassino family of card games.

The rules oracle of docs/interchange.md lives at the top level::

    import cassino_env
    moves = cassino_env.legal_moves(position)       # list[dict], canonical order, exact
    after = cassino_env.apply_move(position, move)  # new position dict; input unchanged
    tally = cassino_env.score_deal(position)        # per-side items and totals of a finished deal
    first = cassino_env.iter_legal_moves(position)  # the same moves one at a time (legal_moves(..., limit=N) bounds)
"""

from .cards import card_id, card_text
from .errors import (
    CardError,
    CassinoError,
    IllegalMoveError,
    MoveFormatError,
    MoveLimitError,
    PositionError,
    RulesError,
    SeedError,
    check_seed,
)
from .interchange import apply_move, iter_legal_moves, legal_moves, score_deal
from .rules import PRESETS, RuleSet, make_rules

__version__ = "0.1.0"


def __getattr__(name: str):
    """Import the PettingZoo environment lazily: the rules oracle should not pay for pettingzoo and numba."""
    if name in ("env", "raw_env"):
        from . import aec

        return getattr(aec, name)
    raise AttributeError(f"module 'cassino_env' has no attribute {name!r}")

__all__ = [
    "PRESETS",
    "CardError",
    "CassinoError",
    "IllegalMoveError",
    "MoveFormatError",
    "MoveLimitError",
    "PositionError",
    "RuleSet",
    "RulesError",
    "SeedError",
    "apply_move",
    "card_id",
    "card_text",
    "check_seed",
    "env",
    "iter_legal_moves",
    "legal_moves",
    "make_rules",
    "raw_env",
    "score_deal",
]
