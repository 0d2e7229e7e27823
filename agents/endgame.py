"""Any agent, with the last round of a two-seat deal played exactly (:mod:`cassino_env.endgame`).

With two seats, once the stock is empty the seat to move knows every card still in play (the unseen cards are the
other hand), so the rest of the deal is a small game of perfect information: :func:`cassino_env.endgame.solve`
plays it by exact alpha-beta search (about 2,000 positions, 2 ms, at a round's first move in classic; fewer after).
:func:`play_endgame` replaces an agent's moves there by a best move, keeping the agent's own move whenever it is as
good as the best; everywhere else (more seats, cards left in the stock, a last round too big to search within
:data:`cassino_env.endgame.MAX_NODES` positions) the agent's moves are kept.

The trained agents (``checkpoint:PATH``, ``pretrained:NAME``) play this way by default; ``endgame:SPEC`` gives it to
any agent (``endgame:advanced``) and ``policy:SPEC`` plays a trained network alone (:mod:`agents.registry`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agents.base import Agent, slice_obs
from cassino_env.endgame import solvable, solve
from cassino_env.rules import RuleSet


def play_endgame(rules: RuleSet, obs: dict[str, Any], actions: np.ndarray) -> np.ndarray:
    """``actions`` (int64[B], listed move indices) with every solvable game's move replaced by a best move.

    Args:
        rules: the rules of the games.
        obs: the vector-env observation dict of the B games (with ``view``; without it nothing is solved).
        actions: the agent's moves; ties go to them (an agent's move that is as good as the best is kept).

    Returns:
        A new int64[B] array.
    """
    out = np.array(actions, dtype=np.int64, copy=True)
    if rules.num_players != 2 or "view" not in obs or len(out) == 0:
        return out
    rows = np.flatnonzero(solvable(rules, obs["view"]))
    if rows.size:
        best, _, _ = solve(rules, slice_obs(obs, rows), first=out[rows])
        out[rows] = best
    return out


class EndgameAgent:
    """``base`` with the exact last round of :func:`play_endgame` (an :class:`agents.base.Agent`).

    Args:
        base: any agent.
        rules: the rules it plays.
        name: its name in tables (default ``endgame:<base name>``).
    """

    def __init__(self, base: Agent, rules: RuleSet, name: str | None = None) -> None:
        self.base = base
        self.rules = rules
        self.name = name or f"endgame:{base.name}"

    def act(self, obs: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
        """int64[B]: the base agent's moves, exact in two-seat last rounds."""
        return play_endgame(self.rules, obs, self.base.act(obs, rng))
