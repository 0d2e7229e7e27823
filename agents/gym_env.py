"""Agents inside the environments, and a single-agent Gymnasium environment for trainers that bring their own loop.

Every agent (:class:`agents.base.Agent`: a bot, ``pimc``, ``checkpoint:PATH``, ``pretrained:NAME``, or a plain
callable) reads the vector env's observation dict. :func:`state_obs` (:func:`cassino_env.obs.state_obs`, re-exported
here) builds that dict from any core state, so an agent can act inside the PettingZoo AEC env (:func:`aec_action`)
and for the other seats of :class:`CassinoGymEnv`;
:func:`move_action` maps a listed move index to the action id that plays it in either action encoding.

:class:`CassinoGymEnv` is a ``gymnasium.Env``: one seat (the learner) is played by the caller, every other seat by
an agent; the rewards of the other seats' turns are gathered into the learner's next step. It has
``action_masks()`` (sb3-contrib's ``MaskablePPO``), both action encodings, a flat observation (``flat=True``, for
``"MlpPolicy"``), ``rgb_array`` rendering (``RecordVideo``, SB3's ``make_vec_env``) and registered ids
(``gymnasium.make("cassino/Classic-v1")`` after ``import agents.gym``, or ``gymnasium.make("agents.gym:cassino/
Classic-v1")`` with no import: :mod:`agents.gym`), and its default passes Gymnasium's and Stable-Baselines3's
``check_env``.

>>> import gymnasium, numpy as np
>>> env = gymnasium.make("cassino/Classic-v1", opponent="greedy", learner_seat=0)
>>> obs, info = env.reset(seed=3)
>>> sorted(obs), obs["observation"].shape == (env.unwrapped.obs_size,), env.action_space
(['action_mask', 'observation'], True, Discrete(524))
>>> total, done = 0.0, False
>>> while not done:
...     legal = np.flatnonzero(env.unwrapped.action_masks())
...     obs, reward, done, truncated, info = env.step(int(legal[0]))
...     total += reward
>>> bool(total == info["deal_points"][0] - info["deal_points"][1])  # the learner's side minus the other side
True
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

import agents.gym  # noqa: F401 - registers the cassino/... ids with gymnasium
from agents.base import Agent
from agents.registry import AgentSpecError, make_agent
from cassino_env.actions import (
    CV_BUILD_ID,
    ENCODINGS,
    MAX_MOVES,
    NUM_CARD_VALUE_ACTIONS,
    IllegalActionError,
    card_value_id,
    resolve_actions,
)
from cassino_env.aec import action_id_of, raw_env, resolve_illegal_reward
from cassino_env.errors import PositionError, check_seed, excerpt
from cassino_env.obs import MOVE_FEATURES, encode, fill_move_rows, obs_high, obs_size, state_obs
from cassino_env.rules import RuleSet
from cassino_env.vector import EnvConfigError

#: What the other seats of :class:`CassinoGymEnv` may be: an agent spec (``agents.registry``), an Agent, or a
#: callable ``f(obs, rng)`` with the signature of :meth:`agents.base.Agent.act`.
OpponentLike = str | Agent | Callable[[dict[str, Any], np.random.Generator], Any]
ILLEGAL_ACTIONS = ("raise", "terminate")


def move_action(env, move: int) -> int:
    """The action id of listed move ``move`` of the seat to move, in the AEC env's action encoding.

    ``moves``: the index itself. ``card_value``: the move's fixed id (:func:`cassino_env.actions.card_value_id`).
    An id stands for every move with its kind, card and value and plays the one with the most table cards, so under
    ``card_value`` a move that takes fewer table cards than another with the same card and value is played as that
    other move (``docs/rules.md`` allows both; the AEC docstring, Action Space).

    Args:
        env: a Cassino AEC env (wrapped or raw) after ``reset``.
        move: an index into the core's move list, ``0 <= move < num_moves``.

    Raises:
        IllegalActionError: ``move`` is not a listed move.
    """
    raw = env.unwrapped
    st = raw.core_state
    n = int(st.num_moves[0]) if st is not None and int(st.current_player[0]) >= 0 else 0
    i = operator.index(move)
    if not 0 <= i < n:
        raise IllegalActionError(f"move {i} is not a listed move (0..{n - 1})")
    if raw.action_encoding == "moves":
        return i
    return card_value_id(st.move_kind[0, i], st.move_card[0, i], st.move_value[0, i])


class _CallableAgent:
    """A plain function as an Agent (its name is the function's)."""

    def __init__(self, fn: Callable[[dict[str, Any], np.random.Generator], Any]) -> None:
        self.fn = fn
        self.name = getattr(fn, "__name__", "callable")

    def act(self, obs: dict[str, Any], rng: np.random.Generator) -> Any:
        # As returned: the one check of a move (agents.base.one_move) refuses 2.9, None or 'abc' rather than a cast
        # here turning 2.9 into move 2 or None into a raw TypeError.
        return self.fn(obs, rng)


def as_agent(opponent: OpponentLike, rules: RuleSet) -> Agent:
    """An Agent from a spec string (:func:`agents.registry.make_agent`), an Agent (as it is) or a callable.

    Raises:
        AgentSpecError: an unknown spec, or anything else (a number, None, bytes: naming ``opponent``).
    """
    if isinstance(opponent, str):
        return make_agent(opponent, rules)
    if hasattr(opponent, "act"):
        return opponent
    if callable(opponent):
        return _CallableAgent(opponent)
    raise AgentSpecError(f"opponent must be an agent spec, an Agent or a callable f(obs, rng), got "
                         f"{type(opponent).__name__} {excerpt(opponent)}")


def _agent_move(agent: Agent, state, rng: np.random.Generator) -> int:
    """The listed move index ``agent`` plays for the seat to move of a one-game core state (checked legal)."""
    obs = state_obs(state)
    from .base import one_move  # the one check of an agent's moves (0.7, None, an array: refused, not truncated)

    return one_move(agent.act(obs, rng), int(state.num_moves[0]), str(getattr(agent, "name", agent)),
                    error=IllegalActionError)


def aec_action(agent: Agent, env, rng: np.random.Generator) -> int:
    """The action id that ``agent`` plays for ``env.agent_selection`` in a Cassino AEC env (either encoding).

    >>> import cassino_env
    >>> from agents.bots import make_bot
    >>> env = cassino_env.env(action_encoding="card_value")
    >>> env.reset(seed=1)
    >>> a = aec_action(make_bot("advanced", env.unwrapped.rules), env, np.random.default_rng(0))
    >>> bool(env.observe(env.agent_selection)["action_mask"][a])
    True

    Raises:
        IllegalActionError: the agent chose a move that is not listed.
    """
    raw = env.unwrapped
    return move_action(env, _agent_move(agent, raw.core_state, rng))


class CassinoGymEnv(gymnasium.Env):
    """One seat of a Cassino game as a single-agent Gymnasium environment; an agent plays every other seat.

    Observation: ``Dict(observation=Box(float32[D]), action_mask=Box(int8[A]))``, plus ``moves`` int8[A, 56] when
    ``with_moves`` (the AEC env's observation of the learner, module docstring of :mod:`cassino_env.aec`); with
    ``flat=True`` the ``Box(float32[D])`` vector alone (what SB3's ``"MlpPolicy"`` takes; the ``Flat`` ids). Action:
    ``Discrete(A)``, A = 524 (``card_value``, the default: ids mean the same in every state, as MLP policies need) or
    ``max_moves`` (``moves``).

    Masks: ``action_masks()`` returns bool[A] (sb3-contrib's convention; safe to index with), the observation's and
    ``info["action_mask"]`` int8[A] (the space's dtype, as PettingZoo's); all three hold the same legal actions. Once
    the episode is over the mask is all zeros (nobody is to move): a terminal observation, e.g. the one
    ``gymnasium.make_vec`` returns before its next-step autoreset, has no legal action, and the action passed on that
    autoreset step is ignored.

    Reward: the learner's reward of the AEC env (``reward="points"``: its side's deal points minus the other sides'
    mean, at the end of each deal; ``"win"``: +1/-1 at the end of a match), summed over its own move and the other
    seats' moves until it is to move again or the episode ends, so a deal's points reach the learner whoever played
    the last card. ``info`` holds ``learner_seat``, ``overflow`` (the move list was cut at ``max_moves``) and, on the
    step that ends a deal, ``deal_points`` (float32[S], every side's points of that deal).

    Args:
        rules, num_players, reward, episode, max_moves, prune, render_mode: as :func:`cassino_env.env`.
        opponent: who plays the other seats: an agent spec (``"advanced"``, ``"pimc:64"``, ``"checkpoint:PATH"``,
            ``"pretrained:classic"``; :mod:`agents.registry`), an Agent, a callable ``f(obs, rng)`` with the
            signature of :meth:`agents.base.Agent.act`, or a sequence of those with one per other seat (in seat
            order, the learner's left out).
        learner_seat: the learner's seat, or None (the default) for a seat drawn at every reset from the env's
            generator.
        action_encoding: ``"card_value"`` (default) or ``"moves"``.
        with_moves: add the ``moves`` block to the observation (default: only with ``action_encoding="moves"``,
            whose ids mean nothing without it).
        illegal_action: ``"terminate"`` (default: the episode ends with ``illegal_reward``; that step's info holds
            ``illegal_action`` True and ``illegal_action_id``, the action id or -1 when it was not an id of the
            action space, as the AEC env's infos; the text of why is ``illegal_reason``; what Gymnasium's and SB3's
            checkers need, as they play random, unmasked actions) or ``"raise"`` (an ``IllegalActionError``,
            nothing changes).
        illegal_reward: the learner's reward for an illegal action under ``"terminate"``; default (None) minus the
            most points a side can take in a deal (``cassino_env.aec.deal_points_bound``: -35 in two-player
            classic; -1 with ``reward="win"``), so an illegal move never pays better than losing a whole deal.
        flat: the observation is the float32[D] vector alone (default False: the Dict above).
        blocks: the learner's observation blocks, in order (:mod:`cassino_env.obs`; None: ``DEFAULT_BLOCKS``);
            each opponent reads what it was made for (a trained network its checkpoint's blocks).

    Raises:
        EnvConfigError, RulesError, AgentSpecError: a bad argument (the message names it).

    Seeding: ``reset(seed=s)`` seeds the env's generator (learner seat, the other seats' random choices) and starts a
    new match seeded ``s``; ``reset()`` continues as the AEC env does (the next deal after a finished one).
    ``reset(options={"position": ...})`` starts from a position (:meth:`cassino_env.aec.raw_env.reset`).

    Copies: ``copy.deepcopy``, ``copy.copy`` and ``pickle`` give an independent env in the same state, mid-game
    included (the AEC env's "Copying and pickling"); the opponents are copied with it (pickling needs picklable
    opponents: a spec string or an importable function, not a lambda). ``gymnasium.make``'s wrappers make their own
    shallow ``copy.copy``, which shares this env: copy a made env with ``copy.deepcopy``. A callable opponent's move
    is checked as it is returned (:func:`agents.base.one_move`): 2.9, None or ``'abc'`` are an
    ``IllegalActionError``, never cast to a move.
    """

    metadata = {"render_modes": ["ansi", "human", "rgb_array"], "render_fps": 1}

    def __init__(self, rules: str | RuleSet | Mapping[str, Any] = "classic", num_players: int | None = None,
                 opponent: OpponentLike | Sequence[OpponentLike] = "advanced", learner_seat: int | None = None,
                 action_encoding: str = "card_value", with_moves: bool | None = None, reward: str = "points",
                 episode: str = "deal", illegal_action: str = "terminate", illegal_reward: float | None = None,
                 max_moves: int = MAX_MOVES, prune: bool = True, render_mode: str | None = None,
                 flat: bool = False, blocks: Sequence[str] | None = None) -> None:
        if action_encoding not in ENCODINGS:
            raise EnvConfigError(f"action_encoding={action_encoding!r} is not one of {list(ENCODINGS)}")
        if illegal_action not in ILLEGAL_ACTIONS:
            raise EnvConfigError(f"illegal_action={illegal_action!r} is not one of {list(ILLEGAL_ACTIONS)}")
        for name, flag in (("with_moves", with_moves), ("prune", prune), ("flat", flat)):
            if not (isinstance(flag, bool | np.bool_) or (name == "with_moves" and flag is None)):
                raise EnvConfigError(f"{name} must be True or False, got {type(flag).__name__} {excerpt(flag)}")
        if flat and with_moves:
            raise EnvConfigError("flat=True and with_moves=True: a flat observation is the vector alone, without the "
                                 "moves block (use the Dict observation for it)")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise EnvConfigError(f"render_mode={render_mode!r} is not None or one of {self.metadata['render_modes']}")
        self._aec = raw_env(rules=rules, num_players=num_players, render_mode=render_mode, reward=reward,
                            episode=episode, max_moves=max_moves, prune=prune, blocks=blocks,
                            illegal_action="raise")  # every move is checked before it reaches the AEC env
        self.obs_blocks = self._aec.obs_blocks
        illegal_reward = resolve_illegal_reward(illegal_reward, self._aec.rules, reward)
        self.rules = self._aec.rules
        P, S = self.rules.num_players, self.rules.num_sides
        bad_seat = isinstance(learner_seat, bool) or not isinstance(learner_seat, int | np.integer)
        if learner_seat is not None and (bad_seat or not 0 <= int(learner_seat) < P):
            raise EnvConfigError(f"learner_seat must be None or a seat 0..{P - 1}, got {learner_seat!r}")
        self.learner_seat = None if learner_seat is None else int(learner_seat)
        if isinstance(opponent, Sequence) and not isinstance(opponent, str | bytes | bytearray):
            if len(opponent) != P - 1:
                raise EnvConfigError(f"opponent: a sequence needs one agent per other seat ({P - 1}), got "
                                     f"{len(opponent)}")
            self.opponents = [as_agent(o, self.rules) for o in opponent]
        else:
            one = as_agent(opponent, self.rules)
            self.opponents = [one] * (P - 1)
        self.action_encoding = action_encoding
        self._encoding = ENCODINGS.index(action_encoding)
        self.flat = bool(flat)
        self.with_moves = action_encoding == "moves" and not self.flat if with_moves is None else bool(with_moves)
        self.illegal_action, self.illegal_reward = illegal_action, float(illegal_reward)
        self.render_mode = render_mode
        A = NUM_CARD_VALUE_ACTIONS if self._encoding else self._aec.max_moves
        self.num_actions, self.obs_size = A, obs_size(P, S, self.obs_blocks)
        obs_spaces = {"observation": spaces.Box(low=0.0, high=obs_high(P, S, self.obs_blocks), shape=(self.obs_size,),
                                                dtype=np.float32),
                      "action_mask": spaces.Box(low=0, high=1, shape=(A,), dtype=np.int8)}
        if self.with_moves:
            obs_spaces["moves"] = spaces.Box(low=-1, high=52, shape=(A, MOVE_FEATURES), dtype=np.int8)
        self.observation_space = obs_spaces["observation"] if self.flat else spaces.Dict(obs_spaces)
        self.action_space = spaces.Discrete(A)
        self._to_move = np.full(A, -1, dtype=np.int32)
        self._mask = np.zeros(A, dtype=np.int8)
        self._seat = 0
        self._done = True
        self.illegal_reason: str | None = None  # why the last illegal action ended an episode (None after reset)

    def __copy__(self) -> CassinoGymEnv:
        """A deep copy (module docstring, copies): a shallow one would share the AEC env and so its game."""
        import copy as _copy

        return _copy.deepcopy(self)

    # -- the other seats ---------------------------------------------------------------------------------------------
    def _opponent(self, seat: int) -> Agent:
        return self.opponents[seat - (seat > self._seat)]

    def _play_others(self) -> float:
        """Play the other seats until the learner is to move or the episode ends; the learner's reward meanwhile."""
        aec, me = self._aec, self._aec.possible_agents[self._seat]
        total = 0.0
        while not aec.terminations[me] and aec.agent_selection != me:
            seat = aec.agent_name_mapping[aec.agent_selection]
            aec.step(_agent_move(self._opponent(seat), aec.core_state, self.np_random))
            total += self._collect()
        return total

    def _collect(self) -> float:
        """The learner's reward of the step just played (and the deal's points when it ended a deal)."""
        aec = self._aec
        if aec.last_result is not None and aec.last_result is not self._seen_result:
            self._seen_result = aec.last_result
            self._deal_points = aec.last_result.deal_totals[0].astype(np.float32)
        return float(aec.rewards[aec.possible_agents[self._seat]])

    # -- observation -------------------------------------------------------------------------------------------------
    def _observe(self) -> tuple[dict[str, np.ndarray] | np.ndarray, dict[str, Any]]:
        aec, st = self._aec, self._aec.core_state
        acting = not self._done and aec.agent_selection == aec.possible_agents[self._seat]
        if acting:
            resolve_actions(self._encoding, st.move_kind[0], st.move_card[0], st.move_value[0], st.move_cards[0],
                            st.num_moves[0], CV_BUILD_ID, self._to_move, self._mask)
        else:
            self._to_move[:] = -1
            self._mask[:] = 0
        obs = {"observation": encode(st, np.array([self._seat]), blocks=self.obs_blocks)[0],
               "action_mask": self._mask.copy()}
        if self.with_moves:
            moves = np.empty((self.num_actions, MOVE_FEATURES), dtype=np.int8)
            fill_move_rows(st.move_kind[0], st.move_card[0], st.move_value[0], st.move_cards[0], self._to_move, moves)
            obs["moves"] = moves
        info: dict[str, Any] = {"action_mask": self._mask.copy(), "learner_seat": self._seat,
                                "overflow": bool(acting and st.overflow[0])}
        if self._deal_points is not None:
            info["deal_points"] = self._deal_points
        return (obs["observation"] if self.flat else obs), info

    def action_masks(self) -> np.ndarray:
        """bool[A]: the learner's legal actions now (all False once the episode is over)."""
        return self._mask.astype(bool)

    # -- gymnasium API -----------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start an episode (see Seeding); returns the learner's first observation and info.

        Raises:
            SeedError: a seed that is not an integer 0 <= seed < 2**63 (:func:`cassino_env.errors.check_seed`).
            PositionError: a position in which the learner never moves.
        """
        if seed is not None:
            seed = check_seed(seed)  # a numpy integer is a seed too; a bool or a negative one is refused
        super().reset(seed=seed)
        P = self.rules.num_players
        self._seat = int(self.np_random.integers(P)) if self.learner_seat is None else self.learner_seat
        self._aec.reset(seed=seed, options=options)
        self._done, self._seen_result, self._deal_points = False, None, None
        self.illegal_reason = None
        self._play_others()
        if self._aec.terminations[self._aec.possible_agents[self._seat]]:
            self._done = True
            raise PositionError(f"position: the learner (seat {self._seat}) has no move before the episode ends")
        self._deal_points = None
        if self.render_mode == "human":
            self.render()  # the AEC env prints after every step, not after a reset
        return self._observe()

    def step(self, action: int) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Play the learner's ``action`` and the other seats' moves up to the learner's next turn.

        Returns:
            ``(obs, reward, terminated, truncated, info)``; truncated is always False (games are finite).

        Raises:
            IllegalActionError: an illegal action with ``illegal_action="raise"``; RuntimeError: a step after the
                episode ended, before ``reset()``.
        """
        if self._done:
            raise RuntimeError("the episode is over: call reset() before step()")
        self._deal_points = None
        try:
            # a 0-d array is a number; a 1-element one is not (Discrete.contains refuses it, and so does the AEC env)
            value = action.item() if isinstance(action, np.ndarray) and action.ndim == 0 else action
            if isinstance(value, bool | np.bool_):
                raise TypeError("a bool is not an action id (True is not action 1), as in the AEC env")
            a = operator.index(value)
        except (TypeError, ValueError) as exc:
            why = f"{exc}; " if "bool" in str(exc) else ""
            return self._illegal(action, f"{why}expected an integer action id 0..{self.num_actions - 1}")
        if not 0 <= a < self.num_actions:
            return self._illegal(a, f"outside the action space 0..{self.num_actions - 1}")
        mi = int(self._to_move[a])
        if mi < 0:
            return self._illegal(a, "not legal here (action_mask is 0)")
        aec = self._aec
        aec.step(mi)
        reward = self._collect() + self._play_others()
        self._done = bool(aec.terminations[aec.possible_agents[self._seat]])
        obs, info = self._observe()
        return obs, reward, self._done, False, info

    def _illegal(self, action: Any, why: str) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        msg = f"learner (seat {self._seat}): action {action!r} is illegal: {why}"
        if self.illegal_action == "raise":
            raise IllegalActionError(msg)
        self._done = True
        self.illegal_reason = msg
        obs, info = self._observe()
        info["illegal_action"] = True  # numbers only, as the AEC env's infos; the text is self.illegal_reason
        info["illegal_action_id"] = action_id_of(action, self.num_actions)
        return obs, self.illegal_reward, True, False, info

    def render(self) -> str | np.ndarray | None:
        """The AEC env's rendering (``ansi``: the text; ``human``: printed; ``rgb_array``: an image of the table,
        uint8[480, 720, 3]); None without a render_mode."""
        if self.render_mode is None:
            gymnasium.logger.warn("You are calling render method without specifying any render mode.")
            return None
        return self._aec.render()


def play_deals(policy: Callable[[CassinoGymEnv, dict[str, np.ndarray]], int], deals: int, seed: int = 10**9,
               **env_kwargs: Any) -> tuple[float, float]:
    """How a learner policy does against an opponent: ``(deal win rate, mean points per deal)`` over ``deals`` deals.

    Deal ``d`` is the episode ``reset(seed=seed + d)`` of ``CassinoGymEnv(**env_kwargs)`` (default seeds from 10**9
    on, apart from the small seeds training usually starts from); a deal is won when the learner's return (its side's
    points minus the other sides' mean) is positive. ``policy(env, obs)`` returns the learner's action.

    Raises:
        ValueError: ``deals`` below 1.
    """
    if deals < 1:
        raise ValueError(f"deals must be at least 1, got {deals}")
    env = CassinoGymEnv(**env_kwargs)
    wins, points = 0, 0.0
    for d in range(deals):
        obs, _ = env.reset(seed=seed + d)
        total, done = 0.0, False
        while not done:
            obs, reward, done, _, _ = env.step(policy(env, obs))
            total += reward
        wins += total > 0
        points += total
    return wins / deals, points / deals


__all__ = ["CassinoGymEnv", "aec_action", "as_agent", "move_action", "play_deals", "state_obs"]
