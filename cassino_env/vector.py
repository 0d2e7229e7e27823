"""Batched self-play environment: N games stepped together over the core, for training and evaluation.

A thin layer over :mod:`cassino_env.core` (no rules of its own): each call plays one move in every game, for that
game's acting seat, and returns what the *next* acting seat sees. Finished episodes reset automatically (the core
deals the next deal, or a new match, in the same step), as Gymnasium's vector environments do. Every preset of
docs/rules.md 6 runs, at every player count it allows (``rules="cicera"``, ``rules="bga", num_players=6``, ...).

>>> env = CassinoVectorEnv(num_envs=4, rules="classic", seed=0)
>>> obs, info = env.reset()
>>> obs["observation"].shape == (4, env.obs_size), obs["action_mask"].shape, obs["current_player"].tolist()
(True, (4, 512), [0, 0, 0, 0])
>>> rng = np.random.default_rng(0)
>>> actions = np.array([rng.choice(np.flatnonzero(m)) for m in obs["action_mask"]])
>>> obs, rewards, terminated, truncated, info = env.step(actions)
>>> rewards.shape, terminated.dtype
((4, 2), dtype('bool'))

Observations (a dict of arrays, B = ``num_envs``, M = ``max_moves``, D = :func:`cassino_env.obs.obs_size`):

==================  ==============  ==========================================================================
key                 dtype[shape]    meaning
==================  ==============  ==========================================================================
``observation``     float32[B, D]   the acting seat's view (:mod:`cassino_env.obs`)
``action_mask``     int8[B, M]      1 for the listed legal moves (the first ``num_moves`` entries)
``current_player``  int8[B]         the acting seat of each game
``move_kind``       int8[B, M]      0 trail, 1 capture, 2 build, -1 padding
``move_card``       int8[B, M]      hand card played (-1 padding)
``move_value``      int8[B, M]      capture value or declared build value (0 trail)
``move_cards``      uint64[B, M]    bit c set for each table card id taken or used
``view``            dict            with ``with_view=True``: :func:`cassino_env.obs.public_view` of the acting seat
==================  ==============  ==========================================================================

Rewards are ``float32[B, P]`` for every seat of every game at every step (0 except when a deal or match ends),
so a seat is credited rewards that arrive between its own turns:

* ``reward="points"``: at the end of each deal, seat i gets its side's deal points minus the mean deal points of
  the other sides (docs/rules.md 5, the preset's scoring: standard, bga or cicera with its in-play points): zero-sum;
  partners (4 players: seats 0+2, 1+3; 6 players: p and p+3) get the same reward.
* ``reward="win"``: at the end of a match, +1 for the seats of the winning side and -1 for every other seat.

``episode="deal"`` ends an episode (``terminated``) after every deal; ``episode="match"`` after every match.
``reward="win"`` needs ``episode="match"``. ``truncated`` is always False (games are finite).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import core
from .actions import MAX_MOVES
from .errors import CassinoError
from .obs import encode, obs_size, public_view
from .rules import RuleSet, make_rules

REWARDS = ("points", "win")
EPISODES = ("deal", "match")


class EnvConfigError(CassinoError):
    """A bad environment argument (the message names it)."""


def resolve_rules(rules: str | RuleSet, num_players: int | None) -> RuleSet:
    """A RuleSet from a preset name or RuleSet and an optional player count.

    Raises:
        RulesError: unknown preset or bad player count.
    """
    if isinstance(rules, RuleSet):
        return rules if num_players in (None, rules.num_players) else make_rules(rules, num_players)
    return make_rules(rules, num_players)


def check_reward_episode(reward: str, episode: str) -> None:
    """Validate the ``reward`` and ``episode`` arguments shared by the AEC and vector environments.

    Raises:
        EnvConfigError: naming the argument.
    """
    if reward not in REWARDS:
        raise EnvConfigError(f"reward={reward!r} is not one of {list(REWARDS)}")
    if episode not in EPISODES:
        raise EnvConfigError(f"episode={episode!r} is not one of {list(EPISODES)}")
    if reward == "win" and episode != "match":
        raise EnvConfigError("reward='win' pays only at the end of a match: it needs episode='match'")


def step_rewards(result: core.StepResult, rules: RuleSet, reward: str) -> np.ndarray:
    """float32[B, P]: per-seat rewards of one core step (see the module docstring)."""
    P, S = rules.num_players, rules.num_sides
    side_of = np.arange(P) % S
    if reward == "points":
        totals = result.deal_totals.astype(np.float32)  # [B, S]
        others = (totals.sum(axis=1, keepdims=True) - totals) / max(S - 1, 1)
        per_side = totals - others
    else:
        won = result.match_winner[:, None] == np.arange(S)[None, :]
        per_side = np.where(result.match_done[:, None], np.where(won, 1.0, -1.0), 0.0).astype(np.float32)
    return per_side[:, side_of]


class CassinoVectorEnv:
    """N Cassino games stepped together, auto-resetting; see the module docstring for spaces and rewards.

    Args:
        num_envs: B, games stepped together.
        rules: preset name (docs/rules.md 6) or a RuleSet.
        num_players: seats; defaults to the preset's first allowed count.
        seed: game b is seeded ``seed + b`` (its deals are a pure function of that seed and its counters).
        max_moves: M, width of the move table (default :data:`cassino_env.actions.MAX_MOVES`, chosen by
            measurement); longer lists keep their first M moves in canonical order and set the core's
            ``state.overflow`` (core overflow policy).
        prune: drop captures dominated by a larger capture with the same card (the core's option).
        reward: ``"points"`` or ``"win"``.
        episode: ``"deal"`` or ``"match"``.
        parallel: step the core with numba threads.
        with_view: add ``obs["view"]``, the acting seat's knowledge as card bitmasks
            (:func:`cassino_env.obs.public_view`), for bots and search agents.

    Raises:
        EnvConfigError, RulesError: for bad arguments (the message names the argument).
    """

    def __init__(self, num_envs: int, rules: str | RuleSet = "classic", num_players: int | None = None,
                 seed: int = 0, max_moves: int = MAX_MOVES, prune: bool = True, reward: str = "points",
                 episode: str = "deal", parallel: bool = False, with_view: bool = True) -> None:
        if not isinstance(num_envs, int) or num_envs < 1:
            raise EnvConfigError(f"num_envs must be a positive integer, got {num_envs!r}")
        if not isinstance(max_moves, int) or max_moves < 1:
            raise EnvConfigError(f"max_moves must be a positive integer, got {max_moves!r}")
        check_reward_episode(reward, episode)
        self.rules = resolve_rules(rules, num_players)
        self.num_envs, self.max_moves, self.prune = num_envs, max_moves, prune
        self.reward, self.episode, self.parallel, self.with_view = reward, episode, parallel, with_view
        self.num_players = self.rules.num_players
        self.num_sides = self.rules.num_sides
        self.obs_size = obs_size(self.num_players, self.num_sides)
        self._seed = seed
        self.state: core.State | None = None
        self._obs_buf = np.empty((num_envs, self.obs_size), dtype=np.float32)
        self._slots = np.arange(max_moves, dtype=np.int16)[None, :]

    def reset(self, seed: int | None = None) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start every game afresh (game b seeded ``seed + b``); return the first observations and an empty info."""
        if seed is not None:
            self._seed = int(seed)
        seeds = self._seed + np.arange(self.num_envs, dtype=np.int64)
        self.state = core.init(self.rules, seeds, max_moves=self.max_moves, prune=self.prune)
        return self.observe(), {}

    def observe(self) -> dict[str, np.ndarray]:
        """The current observations (see the module docstring); arrays are fresh copies except ``observation``,
        which is a reused buffer overwritten by the next call."""
        st = self._require_state()
        return {
            "observation": encode(st, st.current_player, out=self._obs_buf),
            "action_mask": (self._slots < st.num_moves[:, None]).view(np.int8),  # == core.legal_mask, as int8
            "current_player": st.current_player.copy(),
            "move_kind": st.move_kind.copy(),
            "move_card": st.move_card.copy(),
            "move_value": st.move_value.copy(),
            "move_cards": st.move_cards.copy(),
            **({"view": public_view(st)} if self.with_view else {}),
        }

    def step(self, actions: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray,
                                                 dict[str, Any]]:
        """Play ``actions[b]`` (a move index, legal under ``action_mask``) in every game.

        Returns:
            ``(obs, rewards float32[B, P], terminated bool[B], truncated bool[B], info)``; ``info`` holds the core's
            ``StepResult`` under ``"result"`` (deal tallies, match ends, the actor).

        Raises:
            cassino_env.core.ActionIndexError: an index that is not a listed move (nothing is applied).
        """
        st = self._require_state()
        result = core.step(st, actions, parallel=self.parallel)
        rewards = step_rewards(result, self.rules, self.reward)
        terminated = result.match_done.copy() if self.episode == "match" else result.deal_done.copy()
        truncated = np.zeros(self.num_envs, dtype=bool)
        return self.observe(), rewards, terminated, truncated, {"result": result}

    def _require_state(self) -> core.State:
        if self.state is None:
            raise RuntimeError("call reset() before step() or observe()")
        return self.state
