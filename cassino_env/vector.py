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
``env.single_action_space.sample(mask=obs["action_mask"][b])``.

**Copies.** By default (``copy=True``, Gymnasium's contract for vector envs) every array returned is fresh and the
caller's: no later ``step()`` or ``reset()`` writes into it, so a stored ``(obs, next_obs)`` pair holds two
observations. ``CassinoVectorEnv(..., copy=False)`` returns views instead that alias the env's buffers and its
state's arrays (observations, public view, rewards, terminations, truncations and ``info["result"]``): overwritten
in place by the next ``step()`` (and replaced by ``reset()``), some not contiguous, all read-only except
``obs["observation"]`` (the encoder's buffer, writable); same shapes, dtypes and values. Copy what you keep. That is
the fastest path (no copy of the observations and the B x M move tables each step; ``cassino bench --engine vector``
times it).
Either way a step is one numba call (:mod:`cassino_env._vector_kernels`): check the actions, play them, list the
next moves, encode the observation, the mask and the public view, and report.

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

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from . import _vector_kernels as VK
from . import core
from .actions import MAX_MOVES
from .core.kernel_api import CHUNK, NITEMS, R_POINTS, res_layout
from .errors import CassinoError, check_seed
from .obs import ObsBlocksError, encoder_params, fill_added, layout_of, obs_high, obs_size, public_view
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


def observation_spaces(rules: RuleSet, max_moves: int, build_slots: int, with_view: bool,
                       blocks: Sequence[str] | None = None) -> spaces.Dict:
    """The observation space of one game (the module docstring's table, without the batch axis).

    Bounds: card sets ``0 .. 2**52 - 1``; seats ``0 .. P - 1`` (``-1``: none, where the table says so); card ids
    ``0 .. 51``; capture and build values ``0 .. 14`` (an ace played as 14, docs/rules.md 3); points and match scores
    ``0 .. 32767`` (their int16 range: a match may run past its target).
    """
    P, S, M, K = rules.num_players, rules.num_sides, max_moves, build_slots
    seat, u64 = P - 1, np.uint64
    out: dict[str, spaces.Space] = {
        "observation": _box(0.0, obs_high(P, S, blocks), (obs_size(P, S, blocks),), np.float32),
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
        copy: True (the default, Gymnasium's contract): :meth:`step`, :meth:`reset` and :meth:`observe` return
            fresh arrays, the caller's, that no later call writes into. False: every array they return
            (observations, the public view, rewards, terminations, truncations, ``info["result"]``'s fields) is a
            view of a buffer of the env or of its state that the next :meth:`step` (or :meth:`reset`) overwrites,
            some of them not contiguous, read-only except ``obs["observation"]``; same shapes, dtypes and values.
            Copy what you keep. This skips the copies (the move tables alone are 11 bytes per move slot per game)
            and is the fastest way to step.
        blocks: the observation's blocks, in order (:mod:`cassino_env.obs`; None: ``DEFAULT_BLOCKS``, the fused
            step as it always was). Another list may leave blocks out, reorder them or add registered ones.

    Attributes:
        single_observation_space, observation_space: ``gymnasium.spaces.Dict`` of one game / of B games.
        single_action_space, action_space: ``Discrete(M)`` / ``MultiDiscrete([M] * B)`` (move indices; only those
            with ``action_mask == 1`` are legal).
        metadata: ``{"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}``.
        copy: the constructor's ``copy`` (False: :meth:`step` and :meth:`observe` return views that the next step
            overwrites).
        obs_blocks: the observation's block names (the constructor's ``blocks``); ``obs_size`` its length D.

    Raises:
        EnvConfigError, RulesError: for bad arguments (the message names the argument).
        SeedError: a seed that is not an integer ``0 <= seed < 2**63``.
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, num_envs: int, rules: str | RuleSet = "classic", num_players: int | None = None,
                 seed: int = 0, max_moves: int = MAX_MOVES, prune: bool = True, reward: str = "points",
                 episode: str = "deal", parallel: bool = False, with_view: bool = True,
                 reward_seat: int | None = None, copy: bool = True, blocks: Sequence[str] | None = None) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, int | np.integer) or num_envs < 1:
            raise EnvConfigError(f"num_envs must be a positive integer, got {num_envs!r}")
        if isinstance(max_moves, bool) or not isinstance(max_moves, int | np.integer) or not 1 <= max_moves <= 32767:
            raise EnvConfigError(f"max_moves must be an integer 1..32767, got {max_moves!r}")  # move slots are int16
        num_envs, max_moves = int(num_envs), int(max_moves)
        for name, flag in (("prune", prune), ("parallel", parallel), ("with_view", with_view), ("copy", copy)):
            if not isinstance(flag, bool | np.bool_):
                raise EnvConfigError(f"{name} must be True or False, got {type(flag).__name__} {flag!r:.40}")
        prune, parallel, with_view, copy = bool(prune), bool(parallel), bool(with_view), bool(copy)
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
        try:
            self._layout = layout_of(self.num_players, self.num_sides, blocks)
        except ObsBlocksError as exc:
            raise EnvConfigError(str(exc)) from None
        self.obs_blocks = self._layout.blocks
        self.obs_size = self._layout.size
        self._seed = seed
        self.state: core.State | None = None
        self.copy = copy
        self._obs_buf = np.empty((num_envs, self._layout.width), dtype=np.float32)
        self._alloc_buffers()
        # The build slots K (a property of the rule set) from a one-game state, so the spaces exist before reset().
        slots = core.init(self.rules, np.zeros(1, dtype=np.int64), max_moves=1, prune=prune).build_cards.shape[1]
        self.single_observation_space = observation_spaces(self.rules, max_moves, slots, with_view, self.obs_blocks)
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
        """The current observations (see the module docstring): fresh arrays (with ``copy=False``: views that the
        next step overwrites, the constructor's ``copy``)."""
        self._require_state()
        self._run(False, self._no_actions)
        return self._obs_out()

    def _obs_out(self) -> dict[str, Any]:
        views = self._views
        if not self.copy:
            out = dict(views)
            if self.with_view:
                out["view"] = dict(views["view"])
            return out
        out = {k: v.copy() for k, v in views.items() if k != "view"}
        if self.with_view:
            out["view"] = {k: v.copy() for k, v in views["view"].items()}
        return out

    def step(self, actions: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray,
                                                 dict[str, Any]]:
        """Play ``actions[b]`` (a move index, legal under ``action_mask``) in every game.

        Returns:
            ``(obs, rewards, terminated bool[B], truncated bool[B], info)``: rewards float32[B, P], or float32[B]
            with ``reward_seat``; ``info`` holds the core's ``StepResult`` under ``"result"`` (deal tallies, match
            ends, the actor).

            With ``copy=True`` (the default) every array is fresh, the caller's; with ``copy=False`` every array
            (``info["result"]``'s too) is a view that the next step overwrites, read-only except
            ``obs["observation"]`` (the constructor's ``copy``).

        Raises:
            cassino_env.core.ActionIndexError: an index that is not a listed move, or ``actions`` not an integer
                array of shape (B,) (nothing is applied).

        One numba call checks the actions, plays them, lists the next moves and writes the next observation, the
        rewards and the report into the env's buffers (:mod:`cassino_env._vector_kernels`); the values are those of
        :func:`cassino_env.core.step`, :func:`step_rewards`, :func:`cassino_env.obs.encode` and
        :func:`cassino_env.obs.public_view`.
        """
        st = self._require_state()
        B = self.num_envs
        a = np.asarray(actions)
        if a.shape != (B,) or a.dtype.kind not in "iu":
            raise core.ActionIndexError(f"actions must be an integer array of shape ({B},), got shape {a.shape} "
                                        f"{a.dtype}")
        if a.dtype != np.int64:
            a = a.astype(np.int64)
        bad = self._run(True, a)
        if bad >= 0:
            n = int(st.num_moves[bad])
            raise core.ActionIndexError(f"game {bad}: action {int(a[bad])} is not a listed move index 0..{n - 1}")
        out = self._step_out
        if self.copy:
            result = core.StepResult(**{f: getattr(out[3], f).copy() for f in _RESULT_FIELDS})
            return self._obs_out(), out[0].copy(), out[1].copy(), np.zeros(B, dtype=bool), {"result": result}
        return self._obs_out(), out[0], out[1], out[2], {"result": out[3]}

    def _require_state(self) -> core.State:
        if self.state is None:
            raise RuntimeError("call reset() before step() or observe()")
        return self.state

    # --- the fused step (cassino_env._vector_kernels) -------------------------------------------------------------

    def _alloc_buffers(self) -> None:
        """The output buffers of the fused kernel (fixed for the env's life; the state's arrays bind per state)."""
        B, M, P, S = self.num_envs, self.max_moves, self.num_players, self.num_sides
        self._mask = np.zeros((B, M), dtype=np.int8)
        self._mask_n = np.zeros(B, dtype=np.int16)  # entries of each mask row set to 1
        self._vu64 = np.zeros((2, B), dtype=np.uint64)  # the viewer's hand, the unseen cards
        self._vi8 = np.zeros((2, B), dtype=np.int8)  # the viewer, the stock size
        self._hsz = np.zeros((B, P), dtype=np.int8)
        self._flags = np.zeros((4, B), dtype=np.int8)  # actor, deal done, match done, match winner
        self._flags[VK.F_WINNER] = -1
        self._totals = np.zeros((B, S), dtype=np.int16)
        self._rewards = np.zeros((B, P), dtype=np.float32)
        self._res = np.zeros((B, res_layout(P, S)[4]), dtype=np.int16)
        self._no_actions = np.zeros(B, dtype=np.int64)
        self._bound: core.State | None = None

    def _run(self, stepped: bool, actions: np.ndarray) -> int:
        st = self.state
        if st is not self._bound:
            self._bind(st)
        bad = int(self._kernel(stepped, self._chunk, actions, *self._kargs))
        if self._layout.added and bad < 0:  # blocks outside the kernel, from the acting seat's public view
            view = self._views["view"] if self.with_view else public_view(st)
            fill_added(self._obs_buf, view, self.rules, self._layout)
        return bad

    def _bind(self, st: core.State) -> None:
        """Bind the kernel's arguments and the returned views to state ``st`` (a new state after reset(), or one
        assigned to ``env.state``)."""
        B, P, S = self.num_envs, self.num_players, self.num_sides
        if st.batch_size != B or st.rules.num_players != P or st.rules.num_sides != S or st.max_moves != self.max_moves:
            raise EnvConfigError(f"env.state must have {B} games of {P} seats and max_moves={self.max_moves}")
        general = st.general_moves
        if self.parallel:
            import numba

            self._kernel = VK.step_parallel_general if general else VK.step_parallel_classic
            self._chunk = max(1, min(CHUNK, -(-B // (4 * numba.get_num_threads()))))
        else:
            self._kernel = VK.step_serial_general if general else VK.step_serial_classic
            self._chunk = B
        self._kargs = (self._res, *core.kernel_args(st), encoder_params(st.rules, self.obs_blocks), self._obs_buf,
                       self._mask, self._mask_n, self._vu64, self._vi8, self._hsz, self._flags, self._totals,
                       self._rewards, self.reward == "win")
        ro = _read_only
        views: dict[str, Any] = {
            "observation": self._obs_buf if self._layout.width == self.obs_size else self._obs_buf[:, :self.obs_size],
            "action_mask": ro(self._mask),
            "current_player": ro(st.current_player),
            "move_kind": ro(st.move_kind),
            "move_card": ro(st.move_card),
            "move_value": ro(st.move_value),
            "move_cards": ro(st.move_cards),
        }
        if self.with_view:
            views["view"] = {
                "viewer": ro(self._vi8[VK.V_VIEWER]), "hand": ro(self._vu64[VK.V_HAND]), "loose": ro(st.loose),
                "build_cards": ro(st.build_cards), "build_value": ro(st.build_value),
                "build_owner": ro(st.build_owner), "captured": ro(st.captured), "sweeps": ro(st.sweeps),
                "in_play": ro(st.in_play), "hand_sizes": ro(self._hsz), "stock_size": ro(self._vi8[VK.V_STOCK]),
                "dealer": ro(st.dealer), "last_capturer": ro(st.last_capturer), "last_trail": ro(st.last_trail),
                "match_scores": ro(st.match_scores), "unseen": ro(self._vu64[VK.V_UNSEEN]),
            }
        self._views = views
        res, (t_col, it_col, nc_col, ns_col, _) = self._res, res_layout(P, S)
        items = res[:, it_col:nc_col].view()
        items.shape = (B, S, NITEMS)  # a view (raises rather than copy)
        result = core.StepResult(
            actor=ro(self._flags[VK.F_ACTOR]), deal_done=ro(self._flags[VK.F_DEAL_DONE].view(np.bool_)),
            match_done=ro(self._flags[VK.F_MATCH_DONE].view(np.bool_)), match_winner=ro(self._flags[VK.F_WINNER]),
            deal_points=ro(res[:, R_POINTS:R_POINTS + P]), deal_totals=ro(self._totals), deal_items=ro(items),
            deal_cards=ro(res[:, nc_col:ns_col]), deal_spades=ro(res[:, ns_col:ns_col + S]),
            match_totals=ro(res[:, t_col:t_col + S]))
        rewards = self._rewards if self.reward_seat is None else self._rewards[:, self.reward_seat]
        terminated = result.match_done if self.episode == "match" else result.deal_done
        self._step_out = (ro(rewards), terminated, ro(np.zeros(B, dtype=bool)), result)
        self._bound = st


_RESULT_FIELDS = tuple(core.StepResult.__dataclass_fields__)


def _read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a``."""
    v = a.view()
    v.flags.writeable = False
    return v
