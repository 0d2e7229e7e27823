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
from ``rng``. A class with ``act`` that takes the RuleSet (or a factory marked
``@agents.registry.agent_factory``) is an agent spec by its import path, ``MODULE:OBJECT``
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

#: The largest budget of the search players, ``pimc:N`` and ``search:SPEC:N``: rollouts per decision, all stepped as
#: one batch of about 6 kB a game, so about 0.6 GB and seconds per decision at the cap (the default, 4000, takes
#: 0.2 s). Here, below both players and the agent table (:mod:`agents.registry`), which all read it.
MAX_SIMULATIONS = 100_000


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
    width = int(np.asarray(obs["action_mask"]).shape[-1])
    return one_move(agent.act(batched, rng), width, str(getattr(agent, "name", agent)))  # 0.7 or None: AgentMoveError


class AgentMoveError(RuntimeError, ValueError):
    """An agent returned moves that are not listed move indices (a float, a bool, text, None, an array of the wrong
    length, an unlisted index): the message names the agent, the game and the value. A ``ValueError`` (bad input:
    ``error:`` and exit 2 at the command line) and, as before, a ``RuntimeError``."""


def integer_moves(actions: Any, name: str, games: np.ndarray | None = None,
                  error: type[Exception] = AgentMoveError) -> np.ndarray:
    """int64[n]: an agent's moves, which must be integers (a numpy integer array, or ints); a float (0.7), a string
    ("0"), a bool or None is refused, not rounded or parsed into some move.

    Args:
        actions: what ``agent.act`` returned.
        name: the agent's name, for the message.
        games: the game number of each move, for the message (when it has their shape).
        error: the exception raised (default :class:`AgentMoveError`).

    Raises:
        AgentMoveError: naming the agent, the game and the value (an excerpt).
    """
    from cassino_env.errors import excerpt

    try:
        a = np.asarray(actions) if not isinstance(actions, (str, bytes)) else np.asarray([actions], dtype=object)
    except (ValueError, TypeError) as exc:  # a ragged list, an object numpy cannot read
        raise error(f"agent {name!r} returned moves that are not an array of integer indices: {excerpt(actions)} "
                    f"({exc})") from None
    if a.dtype == object:  # a list mixing kinds: every item must be an int
        bad = [i for i, x in enumerate(a.reshape(-1)) if isinstance(x, bool) or not isinstance(x, (int, np.integer))]
    elif a.dtype == np.bool_ or not np.issubdtype(a.dtype, np.integer):
        bad = list(range(a.size))
    else:
        bad = []
    if bad:
        i = bad[0]
        game = int(games.reshape(-1)[i]) if games is not None and a.shape == games.shape else None
        raise error(f"agent {name!r} returned a move that is not an integer index: {excerpt(a.reshape(-1)[i])} "
                    f"(dtype {a.dtype}{'' if game is None else f', game {game}'}); moves are int64 indices into the "
                    "move table")
    try:
        return a.astype(np.int64)
    except OverflowError as exc:  # a Python int beyond int64
        raise error(f"agent {name!r} returned a move index beyond int64: {exc}") from None


def one_move(actions: Any, num_moves: int, name: str, error: type[Exception] = AgentMoveError) -> int:
    """The one move an agent returned for a one-game observation, checked as :func:`integer_moves` does: exactly
    one integer, a listed move ``0 <= move < num_moves``.

    Raises:
        AgentMoveError: (or ``error``) naming the agent and the value.
    """
    a = integer_moves(actions, name, error=error)
    if a.ndim > 1 or a.size != 1:
        raise error(f"agent {name!r} returned moves of shape {a.shape} for one game (expected one move index)")
    a = a.reshape(-1)
    move = int(a[0])
    if not 0 <= move < num_moves:
        raise error(f"agent {name!r} chose move {move}, not one of the {num_moves} listed moves")
    return move

