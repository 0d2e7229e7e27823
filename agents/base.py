"""The agent interface: one protocol that acts for a batch of games at once, and a one-game convenience on top.

An agent receives the observation dict of :class:`cassino_env.vector.CassinoVectorEnv` for B games (each game's
acting seat; ``obs["view"]`` holds that seat's knowledge as card bitmasks) and returns one move index per game,
legal under ``obs["action_mask"]``. Any agent plays any preset and any seat: it sees only the acting seat's view.

**Your own agent** is any object with a ``name`` (text) and an ``act(obs, rng)`` method as :class:`Agent` says;
nothing to inherit. What it reads, per game b (the vector env's table): ``action_mask[b, i]`` (1 for the listed
moves), ``move_kind[b, i]`` (0 trail, 1 capture, 2 build, -1 padding), ``move_card[b, i]`` (the hand card played,
card id 0..51, docs/rules.md 1), ``move_value[b, i]``, ``move_cards[b, i]`` (bit c for each table card taken or used),
``observation[b]`` (the encoded view, :mod:`cassino_env.obs`) and ``view`` (hand, table, builds, captured cards, ...,
:func:`cassino_env.obs.public_view`). The games of one call may be at any point of any match; draw randomness only
from ``rng``. A class or factory that takes the RuleSet is an agent spec by its import path, ``MODULE:OBJECT``
(:func:`agents.registry.load_agent`): ``cassino eval --agents mypkg.mybot:MostCards,advanced``. For example, a
bot that plays the capture taking the most table cards (else the first listed move; ties: the first listed):

>>> class MostCards:
...     name = "most-cards"
...     def __init__(self, rules):
...         self.rules = rules
...     def act(self, obs, rng):
...         taken = np.bitwise_count(obs["move_cards"]).astype(np.int64)  # int64[B, M]: table cards of each move
...         taken[obs["move_kind"] != 1] = 0  # only captures take them (a build uses them)
...         return np.where(obs["action_mask"] == 1, taken, -1).argmax(axis=1)
>>> from cassino_env.vector import CassinoVectorEnv
>>> env = CassinoVectorEnv(num_envs=3, seed=0)
>>> obs, _ = env.reset()
>>> moves = MostCards(env.rules).act(obs, np.random.default_rng(0))
>>> isinstance(MostCards(env.rules), Agent), bool(obs["action_mask"][np.arange(3), moves].all())
(True, True)
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
