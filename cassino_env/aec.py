# noqa: D212, D415
"""
# Cassino

This environment follows the conventions of PettingZoo's classic environments (``pettingzoo/classic``). It is a thin
layer over the batched rules core (:mod:`cassino_env.core`, one game) and holds no rules of its own.

| Import             | `import cassino_env; env = cassino_env.env(rules="classic", num_players=2)`             |
|--------------------|-----------------------------------------------------------------------------------------|
| Actions            | Discrete                                                                                |
| Parallel API       | No                                                                                      |
| Manual Control     | No                                                                                      |
| Agents             | `agents = ['player_0', 'player_1', ...]` (seat order; seat p moves after p-1)           |
| Agents             | 2, 3, 4 or 6 as the preset allows (4: partnerships 0+2 vs 1+3; 6: p and p+3)            |
| Action Shape       | (1)                                                                                     |
| Action Values      | [0, 511] (`moves`, default) or [0, 523] (`card_value`)                                  |
| Observation Shape  | dict: `observation` (D,), `action_mask` (A,) (+ `moves` (A, 56): `with_moves=True`)     |
| Observation Values | `observation` [0, 1] (scores, sweeps, in-play points may exceed 1), `action_mask` {0, 1} |

Cassino is a fishing card game: each player in turn plays one card from hand to *capture* table cards of equal
value or sums (``docs/rules.md`` 1, 3), to *build* a pile that only a card of its value can later take (4), or to
*trail*
it face up. After every card is played the deal is scored: in the classic preset most cards 3, most spades 1, big
casino (10♦) 2, little casino (2♠) 1, each ace 1, each sweep 1 (5.1); a match is played to 21 (2.6). Every preset of
``docs/rules.md`` 6 runs: `classic` (2, 3, 4 players), `matsuda` (2), `cicera` (4, partnerships; 12-card hands, one
round
a deal, in-play points, to 51), `bga` (2, 3, 4, 6; numeric courts, ace high, ties for most shared), `stadium` (2) and
`royal` (2, 3, 4; numeric courts, ace high). ``docs/rules.md`` is the rules contract.

>>> import numpy as np, cassino_env
>>> env = cassino_env.env(num_players=2)
>>> env.reset(seed=42)
>>> rng = np.random.default_rng(0)
>>> episode_return = dict.fromkeys(env.possible_agents, 0.0)
>>> for agent in env.agent_iter():
...     obs, reward, terminated, truncated, info = env.last()
...     episode_return[agent] += reward
...     env.step(None if terminated or truncated else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
>>> episode_return["player_0"] == -episode_return["player_1"]  # zero-sum deal points
True
>>> env.unwrapped.action_to_string(0), env.unwrapped.string_to_action("#0")
('#0', 0)

### Arguments

``` python
cassino_env.env(rules="classic", num_players=None, render_mode=None, action_encoding="moves", reward="points",
                episode="deal", illegal_action="terminate", illegal_reward=None, max_moves=512, prune=True,
                mask_in_info=False, with_moves=False, observation_key="observation", blocks=None)
```

`rules`: a preset name of ``docs/rules.md`` 6 ({presets}),
a `RuleSet` (`cassino_env.make_rules`, any switches of ``docs/rules.md`` 3) or a mapping
`{"preset": NAME, SWITCH: VALUE}`.

`num_players`: seats, a count the preset allows (``docs/rules.md`` 6; `RulesError` otherwise); default the preset's
first (2; 4 for cicera).

`render_mode`: `None`, `"ansi"` (`render()` returns the text), `"human"` (prints it, also after every step) or
`"rgb_array"` (`render()` returns an image of the table, uint8[480, 720, 3]: `cassino_env.render_image`).

`action_encoding`: `"moves"` (action i = the i-th listed legal move) or `"card_value"` (a fixed table of 524 ids),
see Action Space.

`reward`: `"points"` (zero-sum deal points) or `"win"` (+1/-1 at the end of a match), see Rewards.

`episode`: `"deal"` (an episode is one deal) or `"match"` (deals until a side wins). `reward="win"` needs `"match"`.

`illegal_action`: `"terminate"` (the default, what PettingZoo's classic games do with their
`TerminateIllegalWrapper`: the game ends, every agent is terminated, not truncated; the offender's side gets
`illegal_reward`, every other side an equal share of its opposite, so rewards stay zero-sum) or `"raise"` (an illegal
action raises `IllegalActionError`, a `ValueError`, naming the action and why; nothing changes: for code that must
never play one). Every agent's info holds `illegal_action` (bool: False until an illegal action ends the game, then
True in the offender's info) and `illegal_action_id` (int: the offending action id, -1 when none or when the action
was not an id of the action space), numbers only, so adapters that turn infos into tensors (TorchRL) take them; the
readable reason is `env.unwrapped.illegal_reason` (str; None until an illegal action ends a game, and after
`reset()`).

`illegal_reward`: the penalty of `illegal_action="terminate"` (the single-agent Gymnasium env's convention and value,
`agents.gym_env.CassinoGymEnv`). The default (None) costs at least as much as the worst deal: with `reward="points"`
minus `deal_points_bound(rules)`, the most points one side can take in a deal (35 in two-player classic), so no
illegal move ever pays better than playing on; with `reward="win"` -1 (a lost match).

`max_moves`: the width M of the legal-move list (default `cassino_env.actions.MAX_MOVES` = 512, chosen by
measurement: ``scripts/measure_moves.py``). A longer list keeps its first M moves in canonical order (trails first,
so never none) and `info["overflow"]` is True; about 2 decisions in 100,000 of random classic play overflow 512
(measured over 409,600 random decisions per preset and player count: 1-5 in 100,000 in the presets with `standard` or
`reservation` builds, none in cicera and stadium, whose longest lists were 128 and 94 moves).

`prune`: drop captures strictly contained in another capture with the same card (the core's default).

`mask_in_info`: also put the mask in `infos[agent]["action_mask"]` (default False: the mask is only in the
observation, as in PettingZoo's classic games; TorchRL's `PettingZooWrapper(env, use_mask=True)` needs that). True is
for code that reads the mask from `infos`.

`with_moves`: add the `moves` block (the move table, Observation Space) to the observation and its space (default
False: the observation has PettingZoo's classic two keys, `observation` and `action_mask`, so
`observation, action_mask = obs.values()` works, and an adapter that copies the whole observation every step
(TorchRL) copies D + A numbers rather than D + 57 A). Code that scores candidate moves asks for it with True.

`observation_key`: the key of the float32 vector in the observation dict, `"observation"` (default, PettingZoo's) or
`"observations"` (what RLlib's action-masking module reads; `cassino_env.rllib.env_creator` sets it).

`blocks`: the observation's blocks, in order (`cassino_env.obs`: leave some out, reorder them, add registered
ones); None (default) is `cassino_env.obs.DEFAULT_BLOCKS`, the table below.

### Observation Space

The observation is a dictionary with an `"observation"` element, the seat's view as a float32 vector described
below, and an `"action_mask"` (Legal Actions Mask), in that order (PettingZoo's classic games' two keys). With
`with_moves=True` it also has `"moves"`, per-action move features: int8[A, 56], row a =
(kind 0 trail / 1 capture / 2 build / -1 none, played card id or -1, capture or build value (0 trail), number of
table cards taken or used, then 52 bits: table card c taken or used), i.e. `cassino_env.obs.move_features` of the
move action a plays. Rows of illegal actions, and every row of an agent that is not to move, are padding
(-1, -1, 0, ...). So a network can score candidate moves rather than ids.

The vector is `cassino_env.obs.encode` (the project's one encoding): what that seat may know and nothing else -- never
another hand or the stock order. Seats and sides are relative to the viewer (relative seat r is seat
`(viewer + r) % P`; relative side s likewise). Index table for P seats and S sides, D = {obs_size_formula}
({obs_sizes}), the same for every preset (generated from `cassino_env.obs.BLOCKS`, the one list of the layout):

{obs_table}

Values are the preset's (``docs/rules.md`` 1, 3): courts are 11-13 where `court_values` is numeric, a build may be
declared 14 and an ace captures as 14 (a move value of 14) where `ace_high`; with `attach` builds several builds may
share a value (`builds` then marks each owner). Blocks a preset never uses stay 0 (builds in cicera; `in_play`
outside it).

`state()` returns the full privileged state for centralised critics: float32[D + 52 P + 52 + P] = the encoding seen
by seat 0 (so relative = absolute seats), then every hand (block p: seat p holds card c), then the stock order (card
c is the k-th card to be dealt: (k + 1) / 52; 0 when not in the stock), then the seat to move one-hot (all 0 when
nobody is). `position()` gives the same as a dict of card-id lists (`cassino_env.core.position`).

#### Legal Actions Mask

The legal actions of the agent to move are `observation["action_mask"]`, int8[A] with 1 for a legal action; the same
mask is in `info["action_mask"]` with `mask_in_info=True`. As in PettingZoo, the mask is all zeros for every agent
that is not to move, and for every agent once the episode is over. (The batched layers differ: the core's `legal_mask`
and the vector env's `action_mask` always have a player to move, since finished games reset in the same step.)

### Action Space

`action_encoding="moves"`: Discrete(M). Action i plays the i-th move of the core's canonical legal-move list
(trails, captures, builds; then played card id; then the sorted table cards; then value); `observation["moves"][i]`
describes it (`with_moves=True`). Ids mean different moves in different states.

`action_encoding="card_value"`: Discrete(524), ids that mean the same in every state and preset (version 1 of the
table in `cassino_env.actions`): 0-51 trail card c; 52-103 capture with card c (face value; a court by pairing);
104-107 capture with the ace of suit s as 14; 108-523 build with card c declaring v (v = rank(c)..14, by card then
value). When several legal moves share an id, it plays the one with the most table cards, then the first in
canonical order. `observation["moves"][a]` describes the move id a plays now (`with_moves=True`).

Every id has readable text and back: `env.unwrapped.action_to_string(a)` ("capture 3C 5H with 8S", "build 9 with 2C",
"#17" for an unlisted `moves` id) and `env.unwrapped.string_to_action(text)`.

### Rewards

Rewards arrive when a deal ends (every seat gets its reward then, whoever played the last card; PettingZoo's
`_cumulative_rewards` holds it until the seat next acts or sees its termination). Partners share their side's reward
(cicera and 4-player games: seats 0+2 and 1+3; 6 players: seats p and p+3). Deal points are the preset's scoring
(``docs/rules.md`` 5: standard, bga with shared points for tied "most" items, cicera with napula and in-play points), as
itemised in `last_result.deal_items` (`cassino_env.core.ITEMS`).

| `reward`   | when                 | seat of side s gets                                                          |
|------------|----------------------|------------------------------------------------------------------------------|
| `"points"` | end of every deal    | side s's deal points minus the mean deal points of the other sides (zero-sum) |
| `"win"`    | end of the match     | +1 for the winning side, -1 for every other side                             |

Illegal actions (`illegal_action="terminate"`, the default): `illegal_reward` to the offender's side (default: minus
the most points a side can take in a deal, or -1 with `reward="win"`), and `-illegal_reward / (S - 1)` to each other
side.
Rewards are the same as `cassino_env.vector` (`vector.step_rewards`). Episodes end by termination only (truncation is
always False).

Seeding: `reset(seed=s)` starts a new match whose deals are a pure function of `s` (the vector env's game seeded
`s`). `reset()` without a seed continues the same stream after an episode that ended normally (the next deal, or the
next match), exactly as the vector env auto-resets; otherwise (first reset, or an episode cut short) it starts a new
match seeded from the env's own `numpy.random.Generator` (seeded by the last `reset(seed=...)`, else from the OS).
The global RNGs are never used. `reset(options={"position": core.position(...)-style dict})` starts from an
explicit position.

### Copying and pickling

`copy.deepcopy(env)`, `copy.copy(env)` and `pickle.loads(pickle.dumps(env))` (of `env()` or of `raw_env`) give an
independent env in the same state, mid-game included: the same agent to move, observations, rewards, infos and
random generator, so the copy and the original play on identically and stepping one leaves the other as it is (a
copy is how a search tries moves). `copy.copy` is a deep copy too: a shallow one would share the game's arrays.
Before the first `reset()` a copy is an un-reset env with the same arguments. Around a wrapper of another library
(PettingZoo's `TerminateIllegalWrapper`, `OrderEnforcingWrapper`, Gymnasium's `gymnasium.make` wrappers) use
`copy.deepcopy` or pickle: those wrappers' own `copy.copy` keeps the same inner env, so stepping such a copy steps the
original too. Actions: integer ids only; a bool (`True`, `np.True_`) or a one-element array is not an action id but
an illegal action, as in the Gymnasium env.

### Version History

* v0: Initial release: classic preset, `moves` and `card_value` (table version 1) encodings, `MAX_MOVES` 512.
  Every preset of ``docs/rules.md`` 6 (matsuda, cicera, bga with 6 players, stadium, royal); the observation gained the
  `in_play` block (D 525 -> 527 for 2 players).
* v1: the observation gained the `last_capturer`, `unseen_by_rank` and `most_decided` blocks (D 527 -> 546 for 2
  players); checkpoints of v0 do not load.
  The `mask_in_info` and `with_moves` arguments (for adapters such as TorchRL's `PettingZooWrapper`: the mask only in
  the observation, no `moves` block); their defaults keep the observation, infos and rewards as they were, so the
  version stays v1.
  Defaults an RL library expects: `mask_in_info` defaults to False (the mask only in the observation, as PettingZoo's
  classic games); `illegal_action="terminate"` costs at least a whole deal's points by default, the other sides
  sharing its opposite (zero-sum; it was -1.0 to the offender's side, 0 to the others); `render_mode="rgb_array"`;
  `observation_key`. Observations, the rewards of legal play and the move tables are unchanged, so a trained policy
  sees the same game and the version stays v1 (`cassino_env.version`: checkpoints keep loading).
  PettingZoo's classic defaults: `illegal_action="terminate"` is the default (it was `"raise"`, which stays an
  option); the observation is `observation` and `action_mask` only by default (`with_moves=True` adds the `moves`
  block, which was there by default); infos hold `illegal_action` (a bool, it was the reason as text) and
  `illegal_action_id`, the reason is `illegal_reason`. The observation vector, the mask, the move table and the rewards
  are unchanged, so the version stays v1.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle
from numba import njit
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from . import core
from .actions import (
    CV_BUILD_ID,
    CV_CARD,
    CV_KIND,
    ENCODINGS,
    MAX_MOVES,
    NUM_CARD_VALUE_ACTIONS,
    ActionTextError,
    IllegalActionError,
    card_value_to_string,
    find_move,
    move_text,
    parse_move_text,
    resolve_actions,
    string_to_card_value,
)
from .cards import card_text
from .errors import PositionError, check_seed, excerpt
from .interchange import check_core_position
from .obs import (
    MOVE_FEATURES,
    ObsBlocksError,
    encode_kernel,
    encoder_inputs,
    encoder_params,
    fill_added,
    fill_doc,
    fill_move_rows,
    layout_of,
    obs_high,
    public_view,
)
from .render import render_text
from .rules import PRESETS, RuleSet
from .vector import EnvConfigError, check_reward_episode, resolve_rules, step_rewards
from .version import ENV_NAME

if __doc__:  # None under python -OO
    __doc__ = fill_doc(__doc__)  # the observation's index table and sizes, from cassino_env.obs.BLOCKS
    __doc__ = __doc__.replace("{presets}", ", ".join(f'`"{name}"`' for name in PRESETS))  # cassino_env.rules.PRESETS

ILLEGAL_ACTIONS = ("raise", "terminate")
RENDER_MODES = ("ansi", "human", "rgb_array")
OBSERVATION_KEYS = ("observation", "observations")


def deal_points_bound(rules: RuleSet) -> int:
    """The most points one side can take in one deal under ``rules`` (docs/rules.md 5), an upper bound: every fixed
    item (most cards and spades, the casinos, aces or the jack of hearts, a whole napula), plus a sweep and Cicera's
    in-play points (at most 3 a play, 5.3) on every card the side plays.

    >>> from cassino_env.rules import make_rules
    >>> deal_points_bound(make_rules("classic")), deal_points_bound(make_rules("cicera"))
    (35, 115)
    """
    if rules.scoring == "cicera":
        fixed = 2 + 1 + 13 + 1 + 1 + 1  # most cards, most spades, napula (A to K), 2S, 10D, JH
    else:
        fixed = 3 + 1 + 2 + 1 + 4  # most cards, most spades, 10D, 2S, four aces (bga's ties share no more)
    plays = rules.deal_length // rules.num_players * (rules.num_players // rules.num_sides)
    per_play = rules.sweep_points + (3 if rules.in_play_bonuses else 0)
    return fixed + per_play * plays


def resolve_illegal_reward(illegal_reward: float | None, rules: RuleSet, reward: str) -> float:
    """The penalty of an illegal action under ``illegal_action="terminate"``: ``illegal_reward`` checked, or the
    default for None (``-deal_points_bound(rules)`` with ``reward="points"``, -1 with ``"win"``).

    Raises:
        EnvConfigError: ``illegal_reward`` is not None or a finite number.
    """
    if illegal_reward is None:
        return -1.0 if reward == "win" else -float(deal_points_bound(rules))
    if (isinstance(illegal_reward, bool) or not isinstance(illegal_reward, (int, float, np.integer, np.floating))
            or not np.isfinite(illegal_reward)):
        raise EnvConfigError(f"illegal_reward must be None or a finite number, got {type(illegal_reward).__name__} "
                             f"{excerpt(illegal_reward)}")
    return float(illegal_reward)


class OrderEnforcingWrapper(wrappers.OrderEnforcingWrapper):
    """PettingZoo's ``OrderEnforcingWrapper`` with the per-step attribute traffic short-circuited after reset.

    The stock wrapper reaches ``agents``, ``agent_selection``, ``terminations``, ``_cumulative_rewards`` ... through
    two ``__getattr__`` layers, eight times a step in the usual ``agent_iter``/``last``/``step`` loop (about a third
    of a step's time here). After ``reset()`` this subclass forwards ``last()`` and those reads directly; before it,
    everything behaves (and fails) exactly as the stock wrapper does. It is an ``OrderEnforcingWrapper``.
    """

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """``env.last()``, checked for reset."""
        if not self._has_reset:
            return super().last(observe)
        return self.env.last(observe)

    @property
    def agents(self) -> list[str]:
        """The live agents (AttributeError before reset, as the stock wrapper)."""
        if not self._has_reset:
            raise AttributeError("agents cannot be accessed before reset")
        return self.env.agents

    @property
    def agent_selection(self) -> str:
        """The agent to act (AttributeError before reset, as the stock wrapper)."""
        if not self._has_reset:
            raise AttributeError("agent_selection cannot be accessed before reset")
        return self.env.agent_selection

    def __str__(self) -> str:
        return str(self.env)

    def __copy__(self) -> OrderEnforcingWrapper:
        """A deep copy (the env's game included): a shallow one would share the wrapped env and so its game."""
        import copy as _copy

        return _copy.deepcopy(self)


def env(**kwargs: Any) -> AECEnv:
    """The Cassino AEC environment with PettingZoo's standard wrapper for classic games.

    ``raw_env(**kwargs)`` wrapped in an ``OrderEnforcingWrapper`` (reset before step, no step after the end; the
    subclass above only makes it cheaper). The other two wrappers of PettingZoo's classic ``env()`` are replaced by
    ``raw_env`` itself: its ``illegal_action`` argument does what ``TerminateIllegalWrapper`` does (by default; or
    raises, ``illegal_action="raise"``), and it checks the action range with an error naming the action rather than
    ``AssertOutOfBoundsWrapper``'s bare assertion.

    Args:
        **kwargs: the arguments of :class:`raw_env` (module docstring, Arguments).
    """
    return OrderEnforcingWrapper(raw_env(**kwargs))


@njit(cache=True, nogil=True)
def _step_one(act, res, u64, i8, i16, i64, m8, mvc, cfg, rl, encoding, num_moves, kind, card, value, cards,
              build_id, to_move, mask):
    """Play move ``act[0]`` of the one game and map the next player's action ids (one numba call per step)."""
    core.step_kernel(act, res, u64, i8, i16, i64, m8, mvc, cfg, rl)
    resolve_actions(encoding, kind[0], card[0], value[0], cards[0], num_moves[0], build_id, to_move, mask)


@njit(cache=True, nogil=True)
def _observe_one(viewer, out, kind, card, value, cards, to_move, moves, *obs_inputs):
    """The observation vector of seat ``viewer[0]`` and the move feature rows of ``to_move``, one numba call
    (``obs_inputs``: :func:`cassino_env.obs.encoder_inputs` of the state)."""
    encode_kernel(viewer, out, *obs_inputs)
    fill_move_rows(kind[0], card[0], value[0], cards[0], to_move, moves)


def action_id_of(action: Any, num_actions: int) -> int:
    """``action`` as an int when it is an id ``0..num_actions - 1`` (not a bool), else -1: the ``illegal_action_id``
    of an info.

    >>> action_id_of(7, 512), action_id_of(600, 512), action_id_of(None, 512), action_id_of(True, 512)
    (7, -1, -1, -1)
    """
    if isinstance(action, (bool, np.bool_)):
        return -1
    try:
        a = operator.index(action)
    except TypeError:
        return -1
    return a if 0 <= a < num_actions else -1


#: The attributes of :class:`raw_env` that view ``core_state``'s arrays (made again, never copied).
_STATE_BOUND = ("_obs_args", "_tables", "_res", "_step_args", "_cur")


class raw_env(AECEnv, EzPickle):
    """Cassino as a PettingZoo AEC environment (see the module docstring for spaces, rewards and arguments).

    Attributes:
        rules: the RuleSet played.
        core_state: the one-game :class:`cassino_env.core.State` (B = 1, no auto-reset), None before reset.
        last_result: the core StepResult of the last deal that ended (tallies, match totals), or None.
        arguments: ``action_encoding``, ``reward``, ``episode``, ``illegal_action``, ``illegal_reward``,
            ``max_moves``, ``prune``, ``render_mode``, ``with_moves`` and ``mask_in_info`` are kept as attributes
            of those names.
        illegal_reason: why the last illegal action was refused (text), or None (none since ``reset()``).
        num_actions: A, the size of the action space (max_moves or 524).
    """

    metadata = {"render_modes": list(RENDER_MODES), "name": ENV_NAME, "is_parallelizable": False,
                "render_fps": 1}

    def __init__(self, rules: str | RuleSet | Mapping[str, Any] = "classic", num_players: int | None = None,
                 render_mode: str | None = None, action_encoding: str = "moves", reward: str = "points",
                 episode: str = "deal", illegal_action: str = "terminate", illegal_reward: float | None = None,
                 max_moves: int = MAX_MOVES, prune: bool = True, mask_in_info: bool = False,
                 with_moves: bool = False, observation_key: str = "observation",
                 blocks: Sequence[str] | None = None) -> None:
        EzPickle.__init__(self, rules=rules, num_players=num_players, render_mode=render_mode,
                          action_encoding=action_encoding, reward=reward, episode=episode,
                          illegal_action=illegal_action, illegal_reward=illegal_reward, max_moves=max_moves,
                          prune=prune, mask_in_info=mask_in_info, with_moves=with_moves,
                          observation_key=observation_key, blocks=blocks)
        super().__init__()
        check_reward_episode(reward, episode)
        if action_encoding not in ENCODINGS:
            raise EnvConfigError(f"action_encoding={action_encoding!r} is not one of {list(ENCODINGS)}")
        if illegal_action not in ILLEGAL_ACTIONS:
            raise EnvConfigError(f"illegal_action={illegal_action!r} is not one of {list(ILLEGAL_ACTIONS)}")
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise EnvConfigError(f"render_mode={render_mode!r} is not None or one of {list(RENDER_MODES)}")
        if (isinstance(max_moves, bool) or not isinstance(max_moves, (int, np.integer))
                or not 1 <= int(max_moves) <= 32767):
            raise EnvConfigError(f"max_moves must be an integer 1..32767, got {max_moves!r:.40}")
        for name, flag in (("prune", prune), ("mask_in_info", mask_in_info), ("with_moves", with_moves)):
            if not isinstance(flag, (bool, np.bool_)):
                raise EnvConfigError(f"{name} must be True or False, got {type(flag).__name__} {flag!r:.40}")
        if observation_key not in OBSERVATION_KEYS:
            raise EnvConfigError(f"observation_key={observation_key!r:.40} is not one of {list(OBSERVATION_KEYS)}")
        self.rules = resolve_rules(rules, num_players)
        self.action_encoding, self.reward, self.episode = action_encoding, reward, episode
        self.illegal_action = illegal_action
        self.illegal_reward = resolve_illegal_reward(illegal_reward, self.rules, reward)
        self.observation_key = observation_key
        self.max_moves, self.prune, self.render_mode = int(max_moves), bool(prune), render_mode
        self.mask_in_info, self.with_moves = bool(mask_in_info), bool(with_moves)
        P, S = self.rules.num_players, self.rules.num_sides
        self._P, self._S = P, S
        self.possible_agents = [f"player_{p}" for p in range(P)]
        self.agent_name_mapping = {a: p for p, a in enumerate(self.possible_agents)}
        self._encoding = 0 if action_encoding == "moves" else 1
        A = self.max_moves if self._encoding == 0 else NUM_CARD_VALUE_ACTIONS
        self.num_actions = A
        try:
            self._layout = layout_of(P, S, blocks)
        except ObsBlocksError as exc:
            raise EnvConfigError(str(exc)) from None
        self.obs_blocks = self._layout.blocks
        D = self._layout.size
        self._obs_dim = D
        high = obs_high(P, S, self.obs_blocks)
        self.observation_spaces = {a: spaces.Dict({
            observation_key: spaces.Box(low=0.0, high=high, shape=(D,), dtype=np.float32),
            "action_mask": spaces.Box(low=0, high=1, shape=(A,), dtype=np.int8),
            **({"moves": spaces.Box(low=-1, high=52, shape=(A, MOVE_FEATURES), dtype=np.int8)} if with_moves else {}),
        }) for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(A) for a in self.possible_agents}
        self.state_space = spaces.Box(low=0.0, high=np.concatenate([high, np.ones(53 * P + 52, np.float32)]),
                                      shape=(D + 53 * P + 52,), dtype=np.float32)
        self._act = np.zeros(1, dtype=np.int64)
        self._viewer = np.zeros(1, dtype=np.int64)
        self._to_move = np.full(A, -1, dtype=np.int32)
        self._no_moves = np.full(A, -1, dtype=np.int32)
        self._zeros = np.zeros(A, dtype=np.int8)
        self._zeros.flags.writeable = False
        self._mask = self._zeros
        self._np_random = np.random.default_rng()  # instance-owned; re-seeded by reset(seed=...)
        self.core_state: core.State | None = None
        self.last_result: core.StepResult | None = None
        self._seat = -1  # seat to move, -1 when nobody (episode over)
        self._rewarded = False
        self._last_move: str | None = None
        self.illegal_reason: str | None = None
        self.agents: list[str] = []

    # -- spaces ------------------------------------------------------------------------------------------------------
    def observation_space(self, agent: str) -> spaces.Space:
        """The observation space of ``agent`` (the same object on every call)."""
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        """The action space of ``agent``: Discrete(A) (the same object on every call)."""
        return self.action_spaces[agent]

    # -- reset -------------------------------------------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start an episode (see "Seeding" in the module docstring).

        Args:
            seed: an integer 0 <= seed < 2**63 (``cassino_env.check_seed``): start a new match whose deals are a pure
                function of it.
            options: ``{"position": {...}}`` starts from an explicit position: the keyword arguments of
                :func:`cassino_env.core.from_position` (e.g. :func:`cassino_env.core.position` output; ``hands`` and
                ``to_move`` required), checked by :func:`cassino_env.interchange.check_core_position`. Other keys
                are ignored.

        Raises:
            SeedError: a seed outside that range, a bool or a non-integer.
            PositionError: naming the field, for a malformed ``options`` or position (nothing changes).
        """
        if seed is not None:
            seed = check_seed(seed)
        position = None
        if options is not None:
            if not isinstance(options, Mapping):  # other keys are ignored (PettingZoo's api_test passes some)
                raise PositionError(f"options: expected None or a dict such as {{'position': {{...}}}}, got "
                                    f"{type(options).__name__} {excerpt(options)}")
            if options.get("position") is not None:
                position = check_core_position(options["position"], self.rules)
        st = self.core_state
        if position is not None:  # built first, so that a position the core refuses changes nothing
            game_seed = seed if seed is not None else int(self._np_random.integers(0, 2**62))
            self.core_state = core.from_position(self.rules, max_moves=self.max_moves, prune=self.prune,
                                                 auto_reset=False, seed=game_seed, **position)
            if seed is not None:
                self._np_random = np.random.default_rng(seed)
        elif seed is not None:
            self._np_random = np.random.default_rng(seed)
            self.core_state = self._new_game(seed)
        elif st is not None and st.current_player[0] < 0:
            core.advance(st)  # the episode ended with its deal: next deal, or a new match after a finished one
        else:
            self.core_state = self._new_game(int(self._np_random.integers(0, 2**62)))
        st = self.core_state
        self._bind_state()
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self._skip_agent_selection = None
        self._rewarded = False
        self._last_move = None
        self.illegal_reason = None
        self.last_result = None
        self._resolve()
        if int(st.current_player[0]) < 0 or int(st.num_moves[0]) == 0:
            self.agents = []
            raise PositionError("position: the player to move has no legal move (an empty hand?)")
        self._turn_to(int(st.current_player[0]), None)

    def _bind_state(self) -> None:
        """Bind the kernels' array arguments to ``core_state``, once per state (views stay valid: the core steps in
        place)."""
        st = self.core_state
        tables = (st.move_kind, st.move_card, st.move_value, st.move_cards)
        self._obs_args = encoder_inputs(st, encoder_params(self.rules, self.obs_blocks))
        self._tables = tables
        self._res = core.result_rows(st)
        self._step_args = (self._act, self._res, *core.kernel_args(st), self._encoding, st.num_moves, *tables,
                           CV_BUILD_ID, self._to_move)
        self._cur = st.current_player

    # -- copies and pickles: the whole game, never a fresh env (module docstring, "Copying and pickling") --------------
    def _game_dict(self, copy_value: Any) -> dict[str, Any]:
        """``__dict__`` with every value passed through ``copy_value`` except the kernels' bindings (views of
        ``core_state``, made again by :meth:`_bind_state`); ``core_state`` copies and pickles by its packed arrays
        (``State.__reduce__``)."""
        return {k: copy_value(v) for k, v in self.__dict__.items() if k not in _STATE_BOUND}

    def _restore(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._zeros.flags.writeable = False
        if self._mask is not self._zeros and not self._mask.flags.writeable:
            self._mask = self._mask.copy()
        if self.core_state is not None:
            self._bind_state()

    def __deepcopy__(self, memo: dict[int, Any]) -> raw_env:
        """An independent copy of the env and its game (mid-game included): stepping one leaves the other as is."""
        import copy as _copy

        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new._restore(self._game_dict(lambda v: _copy.deepcopy(v, memo)))
        return new

    def __copy__(self) -> raw_env:
        """As :meth:`__deepcopy__`: a shallow copy would share the game's arrays, so both envs would step one game."""
        import copy as _copy

        return _copy.deepcopy(self)

    def __getstate__(self) -> dict[str, Any]:  # replaces EzPickle's (which re-made a fresh, un-reset env)
        """The pickled state: the whole env, its game included (restored by ``__setstate__``)."""
        return self._game_dict(lambda v: v)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._restore(dict(state))

    def _new_game(self, game_seed: int) -> core.State:
        return core.init(self.rules, np.array([game_seed], dtype=np.int64), max_moves=self.max_moves,
                         prune=self.prune, auto_reset=False)

    def _resolve(self) -> None:
        st = self.core_state
        self._mask = np.empty(self.num_actions, dtype=np.int8)
        resolve_actions(self._encoding, st.move_kind[0], st.move_card[0], st.move_value[0], st.move_cards[0],
                        st.num_moves[0], CV_BUILD_ID, self._to_move, self._mask)

    def _turn_to(self, seat: int, prev: str | None) -> None:
        """Hand the turn to ``seat``: agent_selection and the infos' masks (the previous mover's becomes zeros)."""
        self._seat = seat
        name = self.possible_agents[seat]
        self.agent_selection = name
        if prev is None:
            self.infos = {a: self._info(self._zeros, False) for a in self.agents}
        elif prev != name:
            self.infos[prev] = self._info(self._zeros, False)
        self.infos[name] = self._info(self._mask, bool(self.core_state.overflow[0]))

    def _info(self, mask: np.ndarray, overflow: bool) -> dict[str, Any]:
        """One agent's info: ``overflow``, ``illegal_action`` (False) and ``illegal_action_id`` (-1), and
        ``action_mask`` unless ``mask_in_info`` is False. Every info has the same keys from ``reset()`` on, numbers
        only: TorchRL's wrapper builds its info spec from the first infos and turns every value into a tensor."""
        if self.mask_in_info:
            return {"action_mask": mask, "overflow": overflow, "illegal_action": False, "illegal_action_id": -1}
        return {"overflow": overflow, "illegal_action": False, "illegal_action_id": -1}

    # -- step --------------------------------------------------------------------------------------------------------
    def step(self, action: int | None) -> None:
        """Play ``action`` for ``agent_selection`` (None for an agent that is terminated).

        Raises:
            IllegalActionError: an illegal action with ``illegal_action="raise"`` (nothing changes).
        """
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            return self._was_dead_step(action)
        if isinstance(action, (bool, np.bool_)) or (isinstance(action, np.ndarray) and action.dtype == np.bool_):
            return self._illegal(agent, action, "a bool is not an action id (True is not action 1), as in the "
                                 f"Gymnasium env; expected an integer action id 0..{self.num_actions - 1}")
        try:
            a = operator.index(action)
        except TypeError:
            return self._illegal(agent, action, f"expected an integer action id 0..{self.num_actions - 1}")
        if 0 <= a < self.num_actions:
            mi = int(self._to_move[a])
            if mi < 0:
                return self._illegal(agent, a, self._why_illegal(a))
        else:
            return self._illegal(agent, a, f"outside the action space 0..{self.num_actions - 1}")
        self._cumulative_rewards[agent] = 0.0
        if self._rewarded:
            self._clear_rewards()
            self._rewarded = False
        if self.render_mode is not None:
            self._last_move = f"{agent}: {self._move_text(mi)}"
        self._act[0] = mi
        self._mask = mask = np.empty(self.num_actions, dtype=np.int8)
        _step_one(*self._step_args, mask)
        cur = int(self._cur[0])
        if cur >= 0:
            self._turn_to(cur, agent)
        else:
            self._end_of_deal(agent)
        if self.render_mode == "human":
            self.render()

    def _end_of_deal(self, agent: str) -> None:
        P = self._P
        st = self.core_state
        result = core.result_from_rows(self._res, self.rules)
        self.last_result = result
        r = step_rewards(result, self.rules, self.reward)[0]
        for p in range(P):
            self.rewards[self.possible_agents[p]] = float(r[p])
        self._rewarded = True
        if self.episode == "deal" or bool(result.match_done[0]):
            self._terminate((self.agent_name_mapping[agent] + 1) % P)
        else:
            core.advance(st)  # the match goes on: the next deal is dealt within this episode
            self._resolve()
            self._turn_to(int(st.current_player[0]), agent)
        self._accumulate_rewards()

    def _terminate(self, next_seat: int) -> None:
        self._seat = -1
        self._mask = self._zeros
        self.terminations = dict.fromkeys(self.agents, True)
        self.agent_selection = self.possible_agents[next_seat]
        self.infos = {a: self._info(self._zeros, False) for a in self.agents}

    def _illegal(self, agent: str, action: Any, reason: str) -> None:
        text = ""
        if (isinstance(action, (int, np.integer)) and not isinstance(action, (bool, np.bool_))
                and 0 <= int(action) < self.num_actions):
            text = f" ({self.action_to_string(int(action))})"
        msg = f"{agent}: action {action!r}{text} is illegal: {reason}"
        if self.illegal_action == "raise":
            raise IllegalActionError(msg)
        self.illegal_reason = msg
        seat = self.agent_name_mapping[agent]
        self._cumulative_rewards[agent] = 0.0
        for p, name in enumerate(self.possible_agents):
            self.rewards[name] = self.illegal_reward if p % self._S == seat % self._S else 0.0
        self._rewarded = True
        for p, name in enumerate(self.possible_agents):  # the other sides share the opposite: zero-sum
            if p % self._S != seat % self._S:
                self.rewards[name] = -self.illegal_reward / (self._S - 1)
        self._terminate((seat + 1) % self._P)
        self.infos[agent]["illegal_action"] = True  # numbers only (TorchRL); the text is self.illegal_reason
        self.infos[agent]["illegal_action_id"] = action_id_of(action, self.num_actions)
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _why_illegal(self, a: int) -> str:
        st = self.core_state
        n = int(st.num_moves[0])
        if self._encoding == 0:
            return f"only the listed moves 0..{n - 1} are legal" + (" (the list overflowed)" if st.overflow[0] else "")
        c = int(CV_CARD[a])
        if not int(st.hand[0, self._seat]) >> c & 1:
            return f"{self.possible_agents[self._seat]} does not hold {card_text(c)}"
        same = [card_value_to_string(i) for i in np.flatnonzero(self._to_move >= 0) if int(CV_CARD[i]) == c]
        kind = ("trail", "capture", "build")[int(CV_KIND[a])]
        return f"no legal {kind} matches it here; legal with {card_text(c)}: {', '.join(same) or 'nothing'}"

    # -- observe -----------------------------------------------------------------------------------------------------
    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """The observation of ``agent`` (fresh arrays): ``observation`` float32[D], ``action_mask`` int8[A] (zeros
        unless ``agent`` is to move) and, with ``with_moves=True`` only, ``moves`` int8[A, 56] (padding unless
        ``agent`` is to move)."""
        p = self.agent_name_mapping[agent]
        acting = p == self._seat
        out = np.empty((1, self._layout.width), dtype=np.float32)
        self._viewer[0] = p
        mask = self._mask.copy() if acting else np.zeros_like(self._zeros)
        if not self.with_moves:
            encode_kernel(self._viewer, out, *self._obs_args)
            return {self.observation_key: self._finish_obs(out), "action_mask": mask}
        moves = np.empty((self.num_actions, MOVE_FEATURES), dtype=np.int8)
        _observe_one(self._viewer, out, *self._tables, self._to_move if acting else self._no_moves, moves,
                     *self._obs_args)
        return {self.observation_key: self._finish_obs(out), "action_mask": mask, "moves": moves}

    def _finish_obs(self, out: np.ndarray) -> np.ndarray:
        """float32[D] of the encoder's buffer ``out`` (float32[1, width]): the registered blocks filled in from the
        observed seat's public view, the kernel's left-out blocks cut off (the default blocks: ``out[0]``)."""
        if self._layout.added:
            fill_added(out, public_view(self.core_state, self._viewer), self.rules, self._layout)
        return out[0] if self._layout.width == self._obs_dim else out[0, :self._obs_dim].copy()

    def state(self) -> np.ndarray:
        """float32[D + 53 P + 52]: the full privileged state (module docstring, "Observation Space")."""
        st = self.core_state
        P, D = self._P, self._obs_dim
        out = np.zeros((1, D + 53 * P + 52), dtype=np.float32)
        self._viewer[0] = 0
        if self._layout.default:
            encode_kernel(self._viewer, out[:, :D], *self._obs_args)
        else:
            buf = np.empty((1, self._layout.width), dtype=np.float32)
            encode_kernel(self._viewer, buf, *self._obs_args)
            out[0, :D] = self._finish_obs(buf)
        bits = np.arange(52, dtype=np.uint64)
        out[0, D:D + 52 * P] = ((st.hand[0][:, None] >> bits) & np.uint64(1)).reshape(-1)
        stock = st.stock(0)
        out[0, D + 52 * P + np.array(stock, dtype=np.int64)] = (np.arange(len(stock)) + 1) / 52.0
        if self._seat >= 0:
            out[0, D + 52 * P + 52 + self._seat] = 1.0
        return out[0]

    def position(self) -> dict[str, Any]:
        """The full position as card-id lists (:func:`cassino_env.core.position`): privileged, for tests and tools."""
        return core.position(self.core_state, 0)

    # -- action strings ----------------------------------------------------------------------------------------------
    def _move_text(self, i: int) -> str:
        st = self.core_state
        return move_text(st.move_kind[0, i], st.move_card[0, i], st.move_value[0, i], st.move_cards[0, i])

    def action_to_string(self, action: int) -> str:
        """Readable text of an action id in the current state (a ``card_value`` id's text never depends on it).

        ``moves``: the listed move's text ("capture 3C 5H with 8S"), or ``#i`` for an id beyond the listed moves.
        ``card_value``: the id's fixed text ("capture with 8S", "build 9 with 2C").

        Raises:
            IllegalActionError: for an id outside the action space.
        """
        a = operator.index(action)
        if not 0 <= a < self.num_actions:
            raise IllegalActionError(f"action {a} is outside the action space 0..{self.num_actions - 1}")
        if self._encoding == 1:
            return card_value_to_string(a)
        if self._seat >= 0 and a < int(self.core_state.num_moves[0]):
            return self._move_text(a)
        return f"#{a}"

    def string_to_action(self, text: str) -> int:
        """The action id named by ``text`` (the inverse of :meth:`action_to_string`).

        ``moves`` also accepts card_value-style text ("capture with 8S": the listed move chosen by the card_value
        rule) and ``card_value`` also accepts concrete moves (their id).

        Raises:
            ActionTextError: text that does not parse or names no listed move.
        """
        if self._encoding == 1:
            return string_to_card_value(text)
        p = parse_move_text(text)
        if p.index is not None:
            if not 0 <= p.index < self.num_actions:
                raise ActionTextError(f"{text!r}: action {p.index} is outside 0..{self.num_actions - 1}")
            return p.index
        st = self.core_state
        n = int(st.num_moves[0]) if self._seat >= 0 else 0
        i = find_move(p, st.move_kind[0], st.move_card[0], st.move_value[0], st.move_cards[0], n)
        if i < 0:
            who = self.possible_agents[self._seat] if self._seat >= 0 else "nobody"
            raise ActionTextError(f"{text!r} is not a listed legal move of {who} here")
        return i

    # -- render ------------------------------------------------------------------------------------------------------
    def render(self) -> str | np.ndarray | None:
        """``ansi``: the text of the table, builds with owners, the viewer's (agent to move) hand and scores;
        ``human``: print it; ``rgb_array``: the same as an image, uint8[480, 720, 3] (:mod:`cassino_env.render_image`;
        the empty felt before the first reset). Returns None (with a warning) when no render_mode was given."""
        if self.render_mode is None:
            gymnasium.logger.warn("You are calling render method without specifying any render mode.")
            return None
        if self.render_mode == "rgb_array":
            from .render_image import HEIGHT, WIDTH, render_rgb

            if self.core_state is None:
                return np.zeros((HEIGHT, WIDTH, 3), dtype=np.uint8)
            return render_rgb(self.core_state, 0, viewer=self._seat if self._seat >= 0 else None,
                              names=self.possible_agents, last_move=self._last_move, title=self.metadata["name"])
        if self.core_state is None:
            return None if self.render_mode == "human" else ""
        text = render_text(self.core_state, 0, viewer=self._seat if self._seat >= 0 else None,
                           names=self.possible_agents, last_move=self._last_move, title=self.metadata["name"])
        if self.render_mode == "ansi":
            return text
        print(text + "\n")
        return None

    def close(self) -> None:
        """Nothing to release."""


__all__ = ["ILLEGAL_ACTIONS", "OBSERVATION_KEYS", "RENDER_MODES", "ActionTextError", "IllegalActionError",
           "action_id_of", "deal_points_bound", "env", "raw_env", "resolve_illegal_reward"]
