"""The agent interface: one protocol that acts for a batch of games at once, and a one-game convenience on top.

An agent receives the observation dict of :class:`cassino_env.vector.CassinoVectorEnv` for B games (each game's
acting seat; ``obs["view"]`` holds that seat's knowledge as card bitmasks) and returns one move index per game,
legal under ``obs["action_mask"]``. Any agent plays any preset and any seat: it sees only the acting seat's view.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Agent(Protocol):
    """Acts for B games at once."""

    name: str

    def act(self, obs: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
        """Return int64[B] move indices, each with ``obs["action_mask"][b, i] == 1``.

        Args:
            obs: a vector-env observation dict for B games (see :mod:`cassino_env.vector`).
            rng: the caller's generator (agents never use numpy's global RNG).
        """
        ...


def slice_obs(obs: dict[str, Any], rows: np.ndarray) -> dict[str, Any]:
    """The observation dict restricted to games ``rows`` (int[k] or bool[B]), nested ``view`` included."""
    out: dict[str, Any] = {}
    for k, v in obs.items():
        out[k] = slice_obs(v, rows) if isinstance(v, dict) else v[rows]
    return out


def act_one(agent: Agent, obs: dict[str, Any], rng: np.random.Generator) -> int:
    """One-game convenience: ``obs`` holds arrays for a single game (no batch axis); returns one move index."""
    batched = {k: ({kk: np.asarray(vv)[None] for kk, vv in v.items()} if isinstance(v, dict) else np.asarray(v)[None])
               for k, v in obs.items()}
    return int(agent.act(batched, rng)[0])
