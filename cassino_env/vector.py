"""Batched self-play environment: N games stepped together over the core, for training and evaluation.

A thin layer over :mod:`cassino_env.core` (no rules of its own): each call plays one move in every game, for that
game's acting seat, and returns what the *next* acting seat sees. Every preset of docs/rules.md 6 runs, at every
player count it allows (``rules="cicera"``, ``rules="bga", num_players=6``, ...).

:class:`CassinoVectorEnv` is a :class:`gymnasium.vector.VectorEnv` (Gymnasium >= 1.0): ``single_observation_space``
(a ``Dict`` of ``Box`` spaces: the table below without the batch axis), ``observation_space`` (the same batched by
``gymnasium.vector.utils.batch_space``), ``single_action_space = Discrete(M)``, ``action_space =
MultiDiscrete([M] * B)``, ``metadata["autoreset_mode"]`` and ``reset(seed=..., options=None)`` /
``step(actions) -> (obs, rewards, terminations, truncations, infos)``, so Gymnasium's vector wrappers and
CleanRL-style loops take it. (Stable-Baselines3 has a VecEnv class of its own: it takes a Gymnasium vector env only
through an adapter.) Only a legal move may be played: sample actions with the mask,
``env.single_action_space.sample(mask=obs["action_mask"][b])``. ``obs["observation"]`` is a buffer that the next
step overwrites (the trainer copies it into its rollout at once): copy it to keep it.

**Autoreset: same step** (``gymnasium.vector.AutoresetMode.SAME_STEP``). The step that ends an episode (a deal, or a
match with ``episode="match"``) also deals the next one: its observation is the new episode's first, and the game
goes on with the next step. ``infos`` holds no ``final_obs``: an episode only ever terminates, never truncates, so no
value needs bootstrapping from a final observation (and after the deal's last card nobody is to move); the finished
deal's tallies are in ``infos["result"]``.

**Whose rewards.** This is a turn-based game of P seats behind a single-agent vector API: every step is one move by
the acting seat of each game (``obs["current_player"]``), but a deal's points are paid to every seat at once, on
the step of its last card, whoever plays it. So by default (``reward_seat=None``) ``rewards`` is ``float32[B, P]``:
every seat's reward at every step (0 except when a deal or match ends), and a seat is credited the rewards that
arrive between its own turns, as the self-play trainer (``train/ppo_selfplay.py``) does. This is the one departure
from Gymnasium's ``(num_envs,)`` rewards; ``reward_seat=p`` gives them: ``float32[B]``, seat p's rewards only (its
side's, in a partnership), for tools that sum rewards per episode (``gymnasium.wrappers.vector
.RecordEpisodeStatistics``, ``NormalizeReward``, ...); the other seats' moves are still stepped by the caller.

>>> env = CassinoVectorEnv(num_envs=4, rules="classic", seed=0)
>>> obs, info = env.reset()
>>> obs["observation"].shape == (4, env.obs_size), obs["action_mask"].shape, obs["current_player"].tolist()
(True, (4, 512), [0, 0, 0, 0])
>>> env.single_action_space, env.action_space, env.metadata["autoreset_mode"].value
(Discrete(512), MultiDiscrete([512 512 512 512]), 'SameStep')
>>> rng = np.random.default_rng(0)
>>> actions = np.array([rng.choice(np.flatnonzero(m)) for m in obs["action_mask"]])
>>> obs, rewards, terminated, truncated, info = env.step(actions)
>>> rewards.shape, terminated.dtype, obs in env.observation_space
((4, 2), dtype('bool'), True)

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
so a seat is credited rewards that arrive between its own turns (``reward_seat=p``: column p only, ``float32[B]``):

* ``reward="points"``: at the end of each deal, seat i gets its side's deal points minus the mean deal points of
  the other sides (docs/rules.md 5, the preset's scoring: standard, bga or cicera with its in-play points): zero-sum;
  partners (4 players: seats 0+2, 1+3; 6 players: p and p+3) get the same reward.
* ``reward="win"``: at the end of a match, +1 for the seats of the winning side and -1 for every other seat.

``episode="deal"`` ends an episode (``terminated``) after every deal; ``episode="match"`` after every match.
``reward="win"`` needs ``episode="match"``. ``truncated`` is always False (games are finite).

Seeding: a seed is an integer ``0 <= seed < 2**63`` (a bool, a float or anything else raises
:class:`cassino_env.errors.SeedError`, naming ``seed``). Game b is seeded ``(seed + b) mod 2**63``; its deals are
a pure function of that seed and its deal and match counters, so equal seeds and equal actions give equal games.
``reset()`` without a seed starts the games again from the last seed (the constructor's, or the last
``reset(seed=...)``'s).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from . import core
from .actions import MAX_MOVES
from .errors import CassinoError, check_seed
from .obs import encode, obs_high, obs_size, public_view
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


#: Card sets are 52-bit masks (bit c for card id c, docs/rules.md 1).
ALL_CARDS = (1 << 52) - 1
_I16_MAX = int(np.iinfo(np.int16).max)


def _box(low: float, high: Any, shape: tuple[int, ...], dtype: type) -> spaces.Box:
    lo = np.full(shape, low, dtype=dtype)
    hi = np.broadcast_to(np.asarray(high, dtype=dtype), shape).copy()
    return spaces.Box(low=lo, high=hi, shape=shape, dtype=dtype)


def observation_spaces(rules: RuleSet, max_moves: int, build_slots: int, with_view: bool) -> spaces.Dict:
    """The observation space of one game (the module docstring's table, without the batch axis).

    Bounds: card sets ``0 .. 2**52 - 1``; seats ``0 .. P - 1`` (``-1``: none, where the table says so); card ids
    ``0 .. 51``; capture and build values ``0 .. 14`` (an ace played as 14, docs/rules.md 3); points and match scores
    ``0 .. 32767`` (their int16 range: a match may run past its target).
    """
    P, S, M, K = rules.num_players, rules.num_sides, max_moves, build_slots
    seat, u64 = P - 1, np.uint64
    out: dict[str, spaces.Space] = {
        "observation": _box(0.0, obs_high(P, S), (obs_size(P, S),), np.float32),
        "action_mask": _box(0, 1, (M,), np.int8),
        "current_player": _box(0, seat, (), np.int8),
        "move_kind": _box(-1, 2, (M,), np.int8),
        "move_card": _box(-1, 51, (M,), np.int8),
        "move_value": _box(0, 14, (M,), np.int8),
        "move_cards": _box(0, ALL_CARDS, (M,), u64),
    }
    if with_view:
        out["view"] = spaces.Dict({
            "viewer": _box(0, seat, (), np.int8),
            "hand": _box(0, ALL_CARDS, (), u64),
            "loose": _box(0, ALL_CARDS, (), u64),
            "build_cards": _box(0, ALL_CARDS, (K,), u64),
            "build_value": _box(0, 14, (K,), np.int8),
            "build_owner": _box(-1, seat, (K,), np.int8),
            "captured": _box(0, ALL_CARDS, (P,), u64),
            "sweeps": _box(0, 52, (P,), np.int16),
            "in_play": _box(0, _I16_MAX, (P,), np.int16),
            "hand_sizes": _box(0, 52, (P,), np.int8),
            "stock_size": _box(0, 52, (), np.int8),
            "dealer": _box(0, seat, (), np.int8),
            "last_capturer": _box(-1, seat, (), np.int8),
            "last_trail": _box(-1, 51, (), np.int8),
            "match_scores": _box(0, _I16_MAX, (S,), np.int16),
            "unseen": _box(0, ALL_CARDS, (), u64),
        })
    return spaces.Dict(out)


class CassinoVectorEnv(VectorEnv):
    """N Cassino games stepped together, auto-resetting in the same step; a :class:`gymnasium.vector.VectorEnv`
    (see the module docstring for spaces, autoreset and whose rewards).

    Args:
        num_envs: B, games stepped together.
        rules: preset name (docs/rules.md 6) or a RuleSet.
        num_players: seats; defaults to the preset's first allowed count.
        seed: an integer ``0 <= seed < 2**63``; game b is seeded ``(seed + b) mod 2**63`` (its deals are a pure
            function of that seed and its counters).
        max_moves: M, width of the move table (default :data:`cassino_env.actions.MAX_MOVES`, chosen by
            measurement); longer lists keep their first M moves in canonical order and set the core's
            ``state.overflow`` (core overflow policy).
        prune: drop captures dominated by a larger capture with the same card (the core's option).
        reward: ``"points"`` or ``"win"``.
        episode: ``"deal"`` or ``"match"``.
        parallel: step the core with numba threads.
        with_view: add ``obs["view"]``, the acting seat's knowledge as card bitmasks
            (:func:`cassino_env.obs.public_view`), for bots and search agents.
        reward_seat: None (the default): ``rewards`` float32[B, P], every seat's; a seat p: float32[B], seat p's
            only, Gymnasium's ``(num_envs,)`` shape (module docstring, "Whose rewards").

    Attributes:
        single_observation_space, observation_space: ``gymnasium.spaces.Dict`` of one game / of B games.
        single_action_space, action_space: ``Discrete(M)`` / ``MultiDiscrete([M] * B)`` (move indices; only those
            with ``action_mask == 1`` are legal).
        metadata: ``{"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}``.

    Raises:
        EnvConfigError, RulesError: for bad arguments (the message names the argument).
        SeedError: a seed that is not an integer ``0 <= seed < 2**63``.
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, num_envs: int, rules: str | RuleSet = "classic", num_players: int | None = None,
                 seed: int = 0, max_moves: int = MAX_MOVES, prune: bool = True, reward: str = "points",
                 episode: str = "deal", parallel: bool = False, with_view: bool = True,
                 reward_seat: int | None = None) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, int | np.integer) or num_envs < 1:
            raise EnvConfigError(f"num_envs must be a positive integer, got {num_envs!r}")
        if isinstance(max_moves, bool) or not isinstance(max_moves, int | np.integer) or not 1 <= max_moves <= 32767:
            raise EnvConfigError(f"max_moves must be an integer 1..32767, got {max_moves!r}")  # move slots are int16
        num_envs, max_moves = int(num_envs), int(max_moves)
        for name, flag in (("prune", prune), ("parallel", parallel), ("with_view", with_view)):
            if not isinstance(flag, bool | np.bool_):
                raise EnvConfigError(f"{name} must be True or False, got {type(flag).__name__} {flag!r:.40}")
        prune, parallel, with_view = bool(prune), bool(parallel), bool(with_view)
        check_reward_episode(reward, episode)
        seed = check_seed(seed, "seed")
        self.rules = resolve_rules(rules, num_players)
        if reward_seat is not None and (isinstance(reward_seat, bool) or not isinstance(reward_seat, int)
                                        or not 0 <= reward_seat < self.rules.num_players):
            raise EnvConfigError(f"reward_seat must be None or a seat 0..{self.rules.num_players - 1}, "
                                 f"got {reward_seat!r}")
        self.reward_seat = reward_seat
        self.num_envs, self.max_moves, self.prune = num_envs, max_moves, prune
        self.reward, self.episode, self.parallel, self.with_view = reward, episode, parallel, with_view
        self.num_players = self.rules.num_players
        self.num_sides = self.rules.num_sides
        self.obs_size = obs_size(self.num_players, self.num_sides)
        self._seed = seed
        self.state: core.State | None = None
        self._obs_buf = np.empty((num_envs, self.obs_size), dtype=np.float32)
        self._slots = np.arange(max_moves, dtype=np.int16)[None, :]
        # The build slots K (a property of the rule set) from a one-game state, so the spaces exist before reset().
        slots = core.init(self.rules, np.zeros(1, dtype=np.int64), max_moves=1, prune=prune).build_cards.shape[1]
        self.single_observation_space = observation_spaces(self.rules, max_moves, slots, with_view)
        self.single_action_space = spaces.Discrete(max_moves)
        self._batched: dict[str, spaces.Space] = {}

    # The batched spaces are built on first use: B x M bounds arrays cost about 0.1 s at B = 1024, and the arena and
    # the trainer, which make many envs, never read them.
    @property
    def observation_space(self) -> spaces.Dict:  # type: ignore[override]
        """The observation space of the B games (``single_observation_space`` batched)."""
        if "obs" not in self._batched:
            self._batched["obs"] = batch_space(self.single_observation_space, self.num_envs)
        return self._batched["obs"]

    @property
    def action_space(self) -> spaces.MultiDiscrete:  # type: ignore[override]
        """``MultiDiscrete([M] * B)``: one move index per game."""
        if "act" not in self._batched:
            self._batched["act"] = batch_space(self.single_action_space, self.num_envs)
        return self._batched["act"]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start every game afresh, game b seeded ``(seed + b) mod 2**63`` (``seed`` None: the last seed again);
        return the first observations and an empty info.

        Raises:
            SeedError: a seed that is not an integer ``0 <= seed < 2**63``.
            EnvConfigError: any ``options`` (none are supported; every game is reset).
        """
        if seed is not None:
            seed = check_seed(seed, "seed")
        if options is not None and not isinstance(options, Mapping):
            raise EnvConfigError(f"options: expected None or an empty dict, got {type(options).__name__} "
                                 f"{options!r:.40}")
        if options:
            raise EnvConfigError(f"options: CassinoVectorEnv.reset takes none, got {sorted(map(str, options))}")
        super().reset(seed=seed)  # Gymnasium's np_random, seeded alike (the games do not draw from it)
        if seed is not None:
            self._seed = seed
        seeds = (np.uint64(self._seed) + np.arange(self.num_envs, dtype=np.uint64)) % np.uint64(2**63)
        self.state = core.init(self.rules, seeds.astype(np.int64), max_moves=self.max_moves, prune=self.prune)
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
            ``(obs, rewards, terminated bool[B], truncated bool[B], info)``: rewards float32[B, P], or float32[B]
            with ``reward_seat``; ``info`` holds the core's ``StepResult`` under ``"result"`` (deal tallies, match
            ends, the actor).

        Raises:
            cassino_env.core.ActionIndexError: an index that is not a listed move (nothing is applied).
        """
        st = self._require_state()
        result = core.step(st, actions, parallel=self.parallel)
        rewards = step_rewards(result, self.rules, self.reward)
        if self.reward_seat is not None:
            rewards = rewards[:, self.reward_seat].copy()
        terminated = result.match_done.copy() if self.episode == "match" else result.deal_done.copy()
        truncated = np.zeros(self.num_envs, dtype=bool)
        return self.observe(), rewards, terminated, truncated, {"result": result}

    def _require_state(self) -> core.State:
        if self.state is None:
            raise RuntimeError("call reset() before step() or observe()")
        return self.state
