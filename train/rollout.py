"""Rollout collection for the self-play trainers: games, opponents and per-seat credit, apart from the update.

A :class:`RolloutCollector` owns a vector env of its own games, which of those games are self-play, against the pool
snapshot or against a bot (:func:`split_games`: the local trainer's split of its games, or a Ray worker's share of the
run's split of all of them, game ``g`` on worker ``g % N``), the rollout buffers and its :class:`SeatCredit`.
:meth:`RolloutCollector.collect` plays one rollout of ``num_steps`` moves in every game with the networks and the
generator it is given, runs GAE along each (game, seat) trajectory (:func:`compute_gae`) and returns a
:class:`Rollout`: the learner's transitions and the iteration's statistics. The local trainer has one collector over
all ``num_envs`` games (:class:`LocalRollouts`); ``cassino train --ray ADDRESS --num-workers N`` has N Ray actors,
each a collector over ``num_envs / N`` games (:mod:`train.ray_rollouts`), and the learner on the driver.

Also here, what a rollout needs besides the games: the opponents (:data:`SELF`, :data:`POOL`, :func:`split_games`,
:func:`rotate_learner_side`, the :class:`SnapshotPool` of past weights, :func:`make_bots`) and the state a
checkpoint keeps of the games and generators (:func:`env_state`, :func:`restore_env_state`, :func:`rng_state`,
:func:`set_rng_state`).

Seeding of the workers (deterministic from the run's ``seed``, :func:`worker_seeds`): worker 0's games are seeded as
the local trainer's (``seed * 1_000_003 % 2**62``) and it draws from the driver's own generator, which travels to it
with the weights and back with the rollout, so a Ray run with one worker is the local run, bit for bit. Worker
``i >= 1`` seeds its games and its generator from ``numpy.random.SeedSequence([seed, i])`` (two children). A
checkpoint holds worker 0's env state in ``train.env_state`` (the local trainer's field) and worker ``i``'s env and
generator states in ``train.workers[i - 1]``.
"""

from __future__ import annotations

import dataclasses
import json
import time
import typing
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from train.config import POOL_SAMPLING, Args, ConfigError

if typing.TYPE_CHECKING:
    import torch

    from cassino_env.rules import RuleSet


# ----------------------------------------------------------------------------------------------------------------------
# Opponents
# ----------------------------------------------------------------------------------------------------------------------
SELF, POOL = 0, 1  # controller ids; bot j is 2 + j


def rotate_learner_side(games: np.ndarray, deal_number: int, num_sides: int) -> np.ndarray:
    """int64[B]: the side the current policy plays in each pool or bot game during its ``deal_number``-th deal.

    It rotates by game and by deal so the learner plays every side (and so every seat: the dealer moves one seat
    per deal) equally often; the learner plays every seat of its side, the opponent every seat of the others.

    >>> rotate_learner_side(np.arange(4), 0, 2).tolist(), rotate_learner_side(np.arange(4), 1, 2).tolist()
    ([0, 1, 0, 1], [1, 0, 1, 0])
    """
    return (np.asarray(games, dtype=np.int64) + int(deal_number)) % num_sides


def split_games(num_envs: int, pool_rate: float, bot_rates: dict[str, float]) -> np.ndarray:
    """int64[B]: the controller of each game's non-learner seats: SELF, POOL or 2 + index of the bot.

    Games are split in fixed blocks (not drawn) so the mix is exact every rollout: the first games are self-play.

    Raises:
        ConfigError: rates that are negative or add up to more than 1.
    """
    rates = [pool_rate, *bot_rates.values()]
    if any(r < 0 for r in rates) or sum(rates) > 1 + 1e-9:
        raise ConfigError(f"pool_rate and bot_rates must be >= 0 and add up to at most 1, got {rates}")
    counts = [int(round(r * num_envs)) for r in rates]
    n_self = num_envs - sum(counts)
    if n_self < 0:
        counts[-1] += n_self
        n_self = 0
    ctrl = np.full(num_envs, SELF, dtype=np.int64)
    start = n_self
    for j, n in enumerate(counts):
        ctrl[start:start + n] = POOL + j
        start += n
    return ctrl


class SnapshotPool:
    """A bounded pool of past weights (see the module docstring for the rule).

    With ``sampling="pfsp"`` (prioritised fictitious self-play, AlphaStar's "hard" weighting), a snapshot is drawn
    with probability proportional to ``(1 - w) ** 2 + 0.05``, where ``w`` is the learner's deal win rate against it
    in pool games (a tie counts half), an exponential average with weight :attr:`EMA` per deal and 0.5 for a snapshot
    not yet played; ``"uniform"`` draws every snapshot equally often.
    """

    #: Weight of each new deal in a snapshot's running win rate.
    EMA = 0.01

    def __init__(self, size: int, sampling: str = "uniform") -> None:
        if sampling not in POOL_SAMPLING:
            raise ConfigError(f"pool_sampling must be one of {', '.join(POOL_SAMPLING)}, got {sampling!r}")
        self.size = size
        self.sampling = sampling
        self.snapshots: list[dict[str, torch.Tensor]] = []
        self.steps: list[int] = []  # global step at which each snapshot was taken
        self.winrate: list[float] = []  # the learner's running deal win rate against each snapshot

    def add(self, policy: torch.nn.Module, step: int) -> None:
        """Add a copy of ``policy``'s weights, on the CPU whatever the network's device (they go into checkpoints);
        drop the oldest beyond ``size``."""
        self.snapshots.append({k: v.detach().to("cpu", copy=True) for k, v in policy.state_dict().items()})
        self.steps.append(int(step))
        self.winrate.append(0.5)
        while len(self.snapshots) > self.size:
            self.snapshots.pop(0)
            self.steps.pop(0)
            self.winrate.pop(0)

    def weights(self) -> np.ndarray:
        """float64[len]: the probability of drawing each snapshot."""
        if self.sampling == "uniform":
            w = np.ones(len(self.snapshots))
        else:
            w = (1.0 - np.asarray(self.winrate, dtype=np.float64)) ** 2 + 0.05
        return w / w.sum()

    def sample(self, rng: np.random.Generator) -> int:
        """Index of a snapshot drawn by :meth:`weights` (uniform: one draw of ``rng.integers``)."""
        if self.sampling == "uniform":
            return int(rng.integers(len(self.snapshots)))
        return int(rng.choice(len(self.snapshots), p=self.weights()))

    def record(self, index: int, results: np.ndarray) -> None:
        """Fold the learner's deal results against snapshot ``index`` (float[k]: 1 win, 0.5 tie, 0 loss) into its
        running win rate."""
        for r in np.asarray(results, dtype=np.float64):
            self.winrate[index] += self.EMA * (float(r) - self.winrate[index])

    def state(self) -> dict[str, Any]:
        """Checkpoint form (tensors and lists)."""
        return {"snapshots": self.snapshots, "steps": list(self.steps), "winrate": list(self.winrate)}

    def load(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state`."""
        self.snapshots = list(state["snapshots"])
        self.steps = [int(s) for s in state["steps"]]
        self.winrate = [float(w) for w in state.get("winrate", [0.5] * len(self.snapshots))]



def make_bots(names: typing.Iterable[str], rules: Any) -> dict[str, Any]:
    """Bot agents by spec, from ``agents.registry.make_agent``."""
    names = list(names)
    if not names:
        return {}
    from agents.registry import make_agent

    return {name: make_agent(name, rules) for name in names}



# ----------------------------------------------------------------------------------------------------------------------
# Per-seat credit and GAE in a turn-based game
# ----------------------------------------------------------------------------------------------------------------------
class SeatCredit:
    """Bookkeeping that gives each transition to the seat that acted and credits it the rewards of that seat until
    its next action; links each transition to the same seat's next one for GAE.

    One row per (step ``t``, game ``b``) of a rollout of ``T`` steps in ``B`` games with ``P`` seats. Call
    :meth:`act` before each env step and :meth:`step` after it.

    Attributes:
        rewards: float32[T, B] — rewards credited to the transition (its seat's, from its action to its next).
        dones: bool[T, B] — the seat's trajectory ends after this transition (the episode terminated).
        next_t: int64[T, B] — step of the same seat's next transition in the same game (-1: none yet).
    """

    def __init__(self, T: int, B: int, P: int) -> None:
        self.rewards = np.zeros((T, B), dtype=np.float32)
        self.dones = np.zeros((T, B), dtype=bool)
        self.next_t = np.full((T, B), -1, dtype=np.int64)
        self.last = np.full((B, P), -1, dtype=np.int64)  # each seat's open transition (its step) per game
        self.games = np.arange(B)

    def reset(self) -> None:
        """Start a rollout (every trajectory of the previous one has ended)."""
        self.rewards.fill(0.0)
        self.dones.fill(False)
        self.next_t.fill(-1)
        self.last.fill(-1)

    def act(self, t: int, seat: np.ndarray, recorded: np.ndarray | None = None) -> None:
        """Seat ``seat[b]`` acts at step ``t`` in game ``b``: link its previous transition to this one.

        ``recorded`` (bool[B], default all): the games where the move is a transition of the seat; elsewhere the
        move is played for it (the exact last round of ``endgame``) and the seat's open transition stays open, so
        the rewards that follow are credited to the seat's last recorded move.
        """
        games = self.games if recorded is None else self.games[recorded]
        seat = seat if recorded is None else seat[recorded]
        prev = self.last[games, seat]
        has = prev >= 0
        self.next_t[prev[has], games[has]] = t
        self.last[games, seat] = t

    def step(self, reward: np.ndarray, terminated: np.ndarray) -> None:
        """After an env step: credit ``reward[b, p]`` (float[B, P], every seat) to seat p's open transition;
        where ``terminated[b]``, end every seat's trajectory in game b."""
        g, s = np.nonzero(self.last >= 0)
        self.rewards[self.last[g, s], g] += reward[g, s]
        if terminated.any():
            ended = np.flatnonzero(terminated)
            g, s = np.nonzero(self.last[ended] >= 0)
            self.dones[self.last[ended[g], s], ended[g]] = True
            self.last[ended] = -1

    @property
    def open(self) -> bool:
        """Some trajectory has not ended."""
        return bool((self.last >= 0).any())


def compute_gae(rewards: np.ndarray, values: np.ndarray, dones: np.ndarray, next_t: np.ndarray, gamma: float,
                gae_lambda: float) -> np.ndarray:
    """float32[T, B]: GAE advantages along each (game, seat) trajectory.

    ``delta_t = r_t + gamma * V(next) - V_t`` and ``A_t = delta_t + gamma * lambda * A(next)``, where *next* is the
    same seat's next transition ``next_t[t, b]`` in the same game; both terms are 0 after ``dones[t, b]`` (a
    transition with no next and not done would need a bootstrap: rollouts hold whole deals, so there is none).
    """
    T, B = rewards.shape
    games = np.arange(B)
    advantages = np.zeros((T, B), dtype=np.float32)
    for t in reversed(range(T)):
        nt = next_t[t]
        cont = ~dones[t] & (nt >= 0)
        nt_safe = np.where(cont, nt, 0)
        next_value = np.where(cont, values[nt_safe, games], 0.0)
        next_adv = np.where(cont, advantages[nt_safe, games], 0.0)
        delta = rewards[t] + gamma * next_value - values[t]
        advantages[t] = delta + gamma * gae_lambda * next_adv
    return advantages



# ----------------------------------------------------------------------------------------------------------------------
# The games' and the generators' state, as a checkpoint holds them
# ----------------------------------------------------------------------------------------------------------------------
def env_state(env: Any) -> dict[str, torch.Tensor]:
    """The vector env's core state as tensors: every public array field (uint64 stored as its int64 bits)."""
    import torch

    st = env.state
    out = {}
    for f in dataclasses.fields(st):
        v = getattr(st, f.name)
        if f.name.startswith("_") or not isinstance(v, np.ndarray):
            continue
        arr = v.view(np.int64) if v.dtype == np.uint64 else v.view(np.int8) if v.dtype == np.bool_ else v
        out[f.name] = torch.from_numpy(np.ascontiguousarray(arr).copy())
    return out



def restore_env_state(env: Any, saved: dict[str, torch.Tensor]) -> None:
    """Write a :func:`env_state` back into a freshly reset env of the same shape (the fields are views)."""
    st = env.state
    for name, t in saved.items():
        dst = getattr(st, name)
        src = t.numpy()
        src = src.view(np.uint64) if dst.dtype == np.uint64 else src.view(np.bool_) if dst.dtype == np.bool_ else src
        if src.shape != dst.shape:
            raise ValueError(f"env state field {name}: shape {src.shape}, expected {dst.shape}")
        dst[...] = src


def rng_state(rng: np.random.Generator) -> str:
    return json.dumps(rng.bit_generator.state)


def set_rng_state(rng: np.random.Generator, state: str) -> None:
    rng.bit_generator.state = json.loads(state)



# ----------------------------------------------------------------------------------------------------------------------
# One rollout
# ----------------------------------------------------------------------------------------------------------------------
@dataclass
class Rollout:
    """One rollout's data for the PPO update and its statistics for the logs.

    The arrays have one row per stored transition, ``N`` rows: a collector's rollout has every move of its ``T``
    steps in its ``B`` games (``N = T * B``, row ``t * B + b``; views of the collector's buffers, overwritten by its
    next rollout), of which the rows ``flat`` are the learner's (the current policy acted: they are trained on);
    :meth:`compact` and :func:`concat` keep the learner's rows only (``flat = arange(N)``). ``D`` is the observation
    length, ``M`` the move-table width, ``F`` the move features (None without them), ``C`` the critic's state length
    (None without it).

    Attributes:
        obs: float32[N, D]. kind, card, value: int8[N, M], the move table. cards: int64[N, M], card bit sets.
        mask: bool[N, M], the legal moves. feat: float32[N, M, F] or None. crit: float32[N, C] or None.
        actions: int64[N], move indices. logprobs, values, advantages, returns: float32[N].
        flat: int64[K], the rows trained on, increasing.
        ep_returns: float64[E], the learner side's deal margin (points) of every deal finished in a non-self-play
            game, then self-play games' too (controller in ``ep_ctrl``); ep_ctrl: int64[E], the game's controller
            (``SELF``, ``POOL`` or 2 + bot index).
        pool_results: float64[R], the learner's deal results against the pool snapshot, in the order played
            (1 win, 0.5 tie, 0 loss), for :meth:`SnapshotPool.record`.
        env_s, inference_s: seconds stepping the games and choosing moves; collect_s: the rollout's wall seconds
            (GAE included).
    """

    obs: np.ndarray
    kind: np.ndarray
    card: np.ndarray
    value: np.ndarray
    cards: np.ndarray
    mask: np.ndarray
    feat: np.ndarray | None
    crit: np.ndarray | None
    actions: np.ndarray
    logprobs: np.ndarray
    values: np.ndarray
    advantages: np.ndarray
    returns: np.ndarray
    flat: np.ndarray
    ep_returns: np.ndarray = field(default_factory=lambda: np.zeros(0))
    ep_ctrl: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    pool_results: np.ndarray = field(default_factory=lambda: np.zeros(0))
    env_s: float = 0.0
    inference_s: float = 0.0
    collect_s: float = 0.0

    ROWS: typing.ClassVar[tuple[str, ...]] = ("obs", "kind", "card", "value", "cards", "mask", "feat", "crit",
                                              "actions", "logprobs", "values", "advantages", "returns")

    def compact(self) -> Rollout:
        """A copy holding the learner's rows only (what a Ray worker sends back: less to transfer)."""
        rows = {k: None if getattr(self, k) is None else getattr(self, k)[self.flat] for k in self.ROWS}
        return Rollout(**rows, flat=np.arange(len(self.flat), dtype=np.int64), ep_returns=self.ep_returns,
                       ep_ctrl=self.ep_ctrl, pool_results=self.pool_results, env_s=self.env_s,
                       inference_s=self.inference_s, collect_s=self.collect_s)


def concat(parts: list[Rollout]) -> Rollout:
    """The learner's rows of several rollouts, one after the other (workers in order), and their statistics joined;
    the times are those of the slowest part (the one the driver waited for)."""
    parts = [p.compact() if len(p.flat) != len(p.actions) else p for p in parts]
    rows = {k: None if getattr(parts[0], k) is None else np.concatenate([getattr(p, k) for p in parts])
            for k in Rollout.ROWS}
    slowest = max(parts, key=lambda p: p.collect_s)
    return Rollout(**rows, flat=np.arange(sum(len(p.flat) for p in parts), dtype=np.int64),
                   ep_returns=np.concatenate([p.ep_returns for p in parts]),
                   ep_ctrl=np.concatenate([p.ep_ctrl for p in parts]),
                   pool_results=np.concatenate([p.pool_results for p in parts]),
                   env_s=slowest.env_s, inference_s=slowest.inference_s, collect_s=slowest.collect_s)


def worker_seeds(seed: int, index: int) -> tuple[int, np.random.Generator | None]:
    """Worker ``index``'s env seed and generator (module docstring): worker 0 seeds its games as the local trainer
    and has no generator of its own (None: it draws from the driver's)."""
    if index == 0:
        return seed * 1_000_003 % 2**62, None
    env_ss, rng_ss = np.random.SeedSequence([seed, index]).spawn(2)
    return int(env_ss.generate_state(1, np.uint64)[0]) % 2**62, np.random.default_rng(rng_ss)


class RolloutCollector:
    """The games of one collector (the local trainer's, or one Ray worker's) and everything a rollout of them needs.

    Args:
        args: the run's options (``num_steps``, the opponents' rates, ``reward_scale``, ``objective``, ``shaping``,
            ``gamma``, ``gae_lambda``, ``max_moves``, ``move_features``, ``critic`` and ``critic_full_state``).
        rules: the run's rules.
        num_envs: games of this collector (B).
        env_seed: the seed of its games (``CassinoVectorEnv``).
        bots: the bot agents by spec; those of ``args.bot_rates`` play its bot games.
        ctrl: int64[num_envs], the controller of each of its games (``SELF``, ``POOL`` or 2 + bot index); None: the
            local trainer's split of ``num_envs`` games (:func:`split_games`). A Ray worker gets
            its share of the run's split of all ``args.num_envs`` games (:class:`RolloutWorker`), so the workers
            together play the run's mix of opponents.
        buffers: the rollout storage of the move tables and inputs (``obs``, ``kind``, ``card``, ``value``, ``cards``,
            ``mask``, ``feat``, ``crit``: C-contiguous arrays of :meth:`buffer_shapes`), given by
            :class:`ThreadRollouts` as blocks of one array for all its collectors; None: allocated here.
    """

    def __init__(self, args: Args, rules: RuleSet, num_envs: int, env_seed: int, bots: dict[str, Any],
                 ctrl: np.ndarray | None = None, buffers: dict[str, np.ndarray] | None = None) -> None:
        from agents.bots import RuleTables
        from agents.features import NUM_MOVE_FEATURES, MoveFeaturizer, critic_state_size
        from cassino_env.vector import CassinoVectorEnv

        self.args, self.rules = args, rules
        B, T, P, S = num_envs, args.num_steps, rules.num_players, rules.num_sides
        self.B, self.T, self.P, self.S = B, T, P, S
        self.deal_len = rules.deal_length
        self.side_of_seat = np.arange(P) % S  # docs/rules.md 1: partners sit opposite, seats p and p + S
        self.bot_names = list(args.bot_rates)
        self.bots = bots
        self.env = CassinoVectorEnv(B, rules, seed=env_seed, max_moves=args.max_moves, reward=args.reward,
                                    episode="deal", blocks=args.obs_blocks,
                                    with_view=bool(self.bot_names) or args.move_features or args.endgame)
        self.obs, _ = self.env.reset()
        D, M = self.env.obs_size, args.max_moves
        F = NUM_MOVE_FEATURES if args.move_features else 0
        C = critic_state_size(P) if args.critic_full_state and args.critic == "separate" else 0
        self.D, self.M, self.F, self.C = D, M, F, C
        self.featurizer = MoveFeaturizer(rules) if F else None
        self.shaping_tables = RuleTables.of(rules) if args.shaping else None
        self.endgame = bool(args.endgame)
        self.solve_parallel = args.threads > 1
        self.match_value = None
        if args.objective == "match":
            from train.match_value import MatchValue

            self.match_value = MatchValue.of(rules, seed=args.seed % 2**31)
        self.ctrl = split_games(B, args.pool_rate, args.bot_rates) if ctrl is None else np.asarray(ctrl, np.int64)
        if self.ctrl.shape != (B,):
            raise ValueError(f"ctrl: one controller per game, {B}, got shape {self.ctrl.shape}")
        self.is_self = self.ctrl == SELF
        # rollout storage: one row per (step, game); every move is stored, `learn` marks the trained ones
        shapes = self.buffer_shapes(args, rules, B)
        if buffers is None:
            buffers = {k: None if shape is None else np.zeros(shape, dtype) for k, (shape, dtype) in shapes.items()}
        for k, (shape, dtype) in shapes.items():
            buf = buffers.get(k)
            if (shape is None) != (buf is None) or (buf is not None and (
                    buf.shape != shape or buf.dtype != dtype or not buf.flags.c_contiguous)):
                raise ValueError(f"buffers[{k!r}]: a C-contiguous {np.dtype(dtype)} array of shape {shape} needed")
        self.obs_buf, self.kind_buf, self.card_buf = buffers["obs"], buffers["kind"], buffers["card"]
        self.value_buf, self.cards_buf, self.mask_buf = buffers["value"], buffers["cards"], buffers["mask"]
        self.feat_buf, self.crit_buf = buffers["feat"], buffers["crit"]
        self.actions = np.zeros((T, B), dtype=np.int64)
        self.logprobs = np.zeros((T, B), dtype=np.float32)
        self.values = np.zeros((T, B), dtype=np.float32)
        self.learn = np.zeros((T, B), dtype=bool)  # the current policy acted: the transition is trained on
        self.credit = SeatCredit(T, B, P)  # per-seat rewards, trajectory ends and links (for GAE)
        self.games = np.arange(B)

    @staticmethod
    def buffer_shapes(args: Args, rules: RuleSet, B: int) -> dict[str, tuple[tuple[int, ...] | None, Any]]:
        """The rollout storage of ``B`` games of a run: name -> (shape or None when unused, dtype)."""
        from agents.features import NUM_MOVE_FEATURES, critic_state_size
        from cassino_env.obs import obs_size

        T, M = args.num_steps, args.max_moves
        D = obs_size(rules.num_players, rules.num_sides, args.obs_blocks)
        F = NUM_MOVE_FEATURES if args.move_features else 0
        C = critic_state_size(rules.num_players) if args.critic_full_state and args.critic == "separate" else 0
        return {"obs": ((T, B, D), np.float32), "kind": ((T, B, M), np.int8), "card": ((T, B, M), np.int8),
                "value": ((T, B, M), np.int8), "cards": ((T, B, M), np.int64), "mask": ((T, B, M), np.bool_),
                "feat": ((T, B, M, F) if F else None, np.float32), "crit": ((T, B, C) if C else None, np.float32)}

    # --- checkpoints -------------------------------------------------------------------------------------------------
    def env_state(self) -> dict[str, torch.Tensor]:
        """The games' state as tensors (``train.env_state`` of a checkpoint; between rollouts, on a deal start)."""
        return env_state(self.env)

    def load_env_state(self, saved: dict[str, torch.Tensor]) -> None:
        """Restore :meth:`env_state` (checked beforehand by :func:`train.checkpoints.check_train_state`)."""
        restore_env_state(self.env, saved)
        self.obs = self.env.observe()

    # --- one rollout -------------------------------------------------------------------------------------------------
    def collect(self, policy: torch.nn.Module, opponent: Any, rng: np.random.Generator, deals_done: int) -> Rollout:
        """Play ``num_steps`` moves in every game and return the rollout (:class:`Rollout`, every row, GAE done).

        Args:
            policy: the current policy (``agents.policy.CassinoPolicy``); it plays the learner's seats.
            opponent: the agent of the pool games (the iteration's snapshot, an ``agents.ppo_agent.PPOAgent``).
            rng: the generator every random choice draws from (the policy's samples, the opponents').
            deals_done: deals every game has finished before this rollout (the learner's side rotates by it).

        The network runs on one torch thread here, whatever ``threads`` says: its batches (one position per game)
        are too small for torch's threads to pay, and one thread was measured faster on 2 cores (docs/training.md,
        Throughput).
        """
        import torch

        threads_before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return self._collect(policy, opponent, rng, deals_done)
        finally:
            torch.set_num_threads(threads_before)

    def _collect(self, policy: torch.nn.Module, opponent: Any, rng: np.random.Generator, deals_done: int) -> Rollout:
        import torch

        from agents.base import slice_obs
        from agents.device import device_of
        from agents.features import banked_points, critic_state, seat_margins
        from agents.policy import MoveBatch, masked_log_softmax, sample_actions
        from cassino_env.endgame import solvable, solve_state

        args, env = self.args, self.env
        device = device_of(policy)  # the network's; the games and their buffers stay on the CPU
        B, T, P, S, deal_len, F, C = self.B, self.T, self.P, self.S, self.deal_len, self.F, self.C
        obs_buf, kind_buf, card_buf, value_buf = self.obs_buf, self.kind_buf, self.card_buf, self.value_buf
        cards_buf, mask_buf, feat_buf, crit_buf = self.cards_buf, self.mask_buf, self.feat_buf, self.crit_buf
        actions, logprobs, values, learn, credit = self.actions, self.logprobs, self.values, self.learn, self.credit
        ctrl, is_self, side_of_seat, games = self.ctrl, self.is_self, self.side_of_seat, self.games
        obs = self.obs
        t_start = time.time()
        t_env = t_inf = 0.0
        credit.reset()
        deal_return = np.zeros((B, P), dtype=np.float64)
        ep_returns: list[np.ndarray] = []
        ep_ctrl: list[np.ndarray] = []
        pool_results: list[np.ndarray] = []
        potential = np.zeros((B, P))  # shaping potential (seat margins of banked points): 0, every deal is fresh
        match_before = env.state.match_scores.astype(np.int64)  # rollouts start at deal starts
        for t in range(T):
            t0 = time.time()
            if t % deal_len == 0:
                learner_side = rotate_learner_side(games, deals_done + t // deal_len, S)
            cp = obs["current_player"].astype(np.int64)
            mine = is_self | (side_of_seat[cp] == learner_side)
            obs_buf[t] = obs["observation"]
            kind_buf[t], card_buf[t], value_buf[t] = obs["move_kind"], obs["move_card"], obs["move_value"]
            cards_buf[t] = obs["move_cards"].view(np.int64)
            mask_buf[t] = obs["action_mask"]
            learn[t] = mine
            rows = np.flatnonzero(mine)
            if F:  # written in place (every entry): no per-step array and copy
                self.featurizer(obs, out=feat_buf[t])
            if C:
                critic_state(env.state, out=crit_buf[t])
            with torch.inference_mode():
                mb = MoveBatch.from_arrays(obs_buf[t, rows], kind_buf[t, rows], card_buf[t, rows], value_buf[t, rows],
                                           cards_buf[t, rows], mask_buf[t, rows],
                                           feat_buf[t, rows] if F else None,
                                           crit_buf[t, rows] if C else None).to(device)  # once a step
                logits, value = policy(mb)
                a = sample_actions(logits, rng)
                at = torch.from_numpy(a).to(logits.device)
                logp = masked_log_softmax(logits, mb.mask)[torch.arange(len(rows), device=logits.device), at]
            actions[t, rows] = a
            logprobs[t, rows] = logp.cpu().numpy()  # the network's outputs come back once a step (no copy on the CPU)
            values[t, rows] = value.cpu().numpy()
            for c in np.unique(ctrl[~mine]):
                rows_c = np.flatnonzero(~mine & (ctrl == c))
                if c == POOL:  # the pool snapshot reads the move features already computed for every game
                    actions[t, rows_c] = opponent.act(slice_obs(obs, rows_c), rng,
                                                      feats=feat_buf[t, rows_c] if F else None)
                else:
                    actions[t, rows_c] = self.bots[self.bot_names[c - 2]].act(slice_obs(obs, rows_c), rng)
            recorded = None
            if self.endgame:  # two seats, stock empty: every seat's move is the exact one, and not trained on
                solved = np.flatnonzero(solvable(self.rules, obs["view"]))
                if solved.size:
                    # the true state: in a two-seat last round the seat to move knows it all (cassino_env.endgame)
                    best, value, _ = solve_state(env.state, solved, first=actions[t, solved],
                                                 parallel=self.solve_parallel)
                    actions[t, solved] = best
                    solved = solved[~np.isnan(value)]  # a search given up (endgame.MAX_NODES) keeps the move sampled
                if solved.size:
                    learn[t, solved] = False
                    recorded = np.ones(B, dtype=bool)
                    recorded[solved] = False
            credit.act(t, cp, recorded)  # the transition belongs to the seat that acted
            t1 = time.time()
            obs, reward, terminated, _, step_info = env.step(actions[t])
            t2 = time.time()
            paid = reward
            if self.shaping_tables is not None:  # a finished deal's next state is a fresh deal: potential 0
                after = seat_margins(banked_points(env.state, self.shaping_tables), P)
                after[terminated] = 0.0
                paid = reward + (after - potential)
                potential = after
            if self.match_value is None:
                credit.step(args.reward_scale * paid, terminated)  # every seat's reward, to its open transition
            else:  # objective=match: the change of each side's match-win chance, at the end of a deal
                paid = np.zeros((B, P))
                ended = np.flatnonzero(terminated)
                if len(ended):
                    res = step_info["result"]
                    side_r = self.match_value.rewards(match_before[ended], res.match_totals[ended],
                                                      res.match_done[ended], res.match_winner[ended])
                    paid[ended] = side_r[:, side_of_seat]
                    match_before[ended] = env.state.match_scores[ended]
                credit.step(paid, terminated)
            deal_return += reward
            if terminated.any():
                ended = np.flatnonzero(terminated)
                ep_returns.append(deal_return[ended, learner_side[ended]])  # seat s is on side s
                ep_ctrl.append(ctrl[ended])
                vs_pool = ended[ctrl[ended] == POOL]
                if len(vs_pool):
                    margin = deal_return[vs_pool, learner_side[vs_pool]]
                    pool_results.append(np.where(margin > 0, 1.0, np.where(margin == 0, 0.5, 0.0)))
                deal_return[ended] = 0.0
            t_inf += t1 - t0
            t_env += t2 - t1
        self.obs = obs
        assert not credit.open, "rollouts hold whole deals"

        # --- GAE along each (game, seat) trajectory ------------------------------------------------------------------
        advantages = compute_gae(credit.rewards, values, credit.dones, credit.next_t, args.gamma, args.gae_lambda)
        returns = advantages + values
        D, M = self.D, self.M
        return Rollout(
            obs=obs_buf.reshape(T * B, D), kind=kind_buf.reshape(T * B, M), card=card_buf.reshape(T * B, M),
            value=value_buf.reshape(T * B, M), cards=cards_buf.reshape(T * B, M), mask=mask_buf.reshape(T * B, M),
            feat=feat_buf.reshape(T * B, M, F) if F else None, crit=crit_buf.reshape(T * B, C) if C else None,
            actions=actions.reshape(-1), logprobs=logprobs.reshape(-1), values=values.reshape(-1),
            advantages=advantages.reshape(-1), returns=returns.reshape(-1), flat=np.flatnonzero(learn.reshape(-1)),
            ep_returns=np.concatenate(ep_returns) if ep_returns else np.zeros(0),
            ep_ctrl=np.concatenate(ep_ctrl) if ep_ctrl else np.zeros(0, dtype=np.int64),
            pool_results=np.concatenate(pool_results) if pool_results else np.zeros(0),
            env_s=t_env, inference_s=t_inf, collect_s=time.time() - t_start)


# ----------------------------------------------------------------------------------------------------------------------
# Where the rollouts are played: here (LocalRollouts) or on Ray actors (RayRollouts); the trainer uses either alike
# ----------------------------------------------------------------------------------------------------------------------
class LocalRollouts:
    """The local trainer's rollouts: one :class:`RolloutCollector` over all the games, in this process, drawing from
    the trainer's generator; the pool games' network is built here (after the policy: the same torch draws as
    always)."""

    #: seconds of the last rollout spent beyond the collection itself (none here)
    overhead_s: float | None = None

    def __init__(self, collector: RolloutCollector, net_shape: Any, device: Any = None) -> None:
        from agents.policy import CassinoPolicy

        self.collector = collector
        self.opponent_net = CassinoPolicy.from_shape(net_shape).eval()
        if device is not None:  # the pool games' network runs where the policy does (its snapshots load across)
            self.opponent_net.to(device)

    def collect(self, policy: torch.nn.Module, snapshot: dict[str, torch.Tensor], rng: np.random.Generator,
                deals_done: int) -> Rollout:
        """One rollout of every game: ``policy`` plays the learner, ``snapshot`` (weights) the pool games."""
        from agents.ppo_agent import PPOAgent

        self.opponent_net.load_state_dict(snapshot)
        blocks = self.collector.env.obs_blocks
        opponent = PPOAgent(self.opponent_net, deterministic=False, rules=self.collector.rules, blocks=blocks,
                            env_blocks=blocks)
        return self.collector.collect(policy, opponent, rng, deals_done)

    def state(self) -> dict[str, Any]:
        """The checkpoint's fields of the games: ``env_state``."""
        return {"env_state": self.collector.env_state()}

    def load(self, tr: dict[str, Any]) -> None:
        """Restore the games from a checked checkpoint's ``train`` entry."""
        self.collector.load_env_state(tr["env_state"])

    def release(self) -> None:
        """Nothing to release here."""



class ThreadRollouts:
    """The rollouts of a local run with ``num_workers`` > 1 (no Ray): ``num_workers`` :class:`RolloutCollector`
    objects in this process, each over ``num_envs / num_workers`` games and seeded as the Ray workers are
    (:func:`worker_seeds`: worker 0 draws from the trainer's generator, the others from their own; the run's split
    of games dealt out in turn), collected at once on a pool of threads, one torch thread each. The rules core, the
    bots and the move features are numba kernels that release the GIL, and torch releases it in its operations, so
    the collectors' games proceed side by side on the cores (docs/training.md, "Collector threads"). The
    checkpoint's fields are a Ray run's of as many workers: ``env_state`` (worker 0's games) and ``workers``.

    Args:
        args: the run's options.
        rules: the run's rules.
        net_shape: the network's shape (the pool games' network is built from it, one per collector).
        device: where the pool games' networks run (the policy's device).
    """

    #: seconds of the last rollout spent beyond the collection itself (none logged: the threads' start and join
    #: are part of it)
    overhead_s: float | None = None

    def __init__(self, args: Args, rules: RuleSet, net_shape: Any, device: Any = None) -> None:
        from concurrent.futures import ThreadPoolExecutor

        from agents.policy import CassinoPolicy

        n = args.num_workers
        ctrl = split_games(args.num_envs, args.pool_rate, args.bot_rates)
        self.collectors: list[RolloutCollector] = []
        self.rngs: list[np.random.Generator | None] = []
        # one array for all the collectors' storage, block i collector i's: their rollouts join as views
        self.shared = {k: None if shape is None else np.zeros((n, *shape), dtype)
                       for k, (shape, dtype) in RolloutCollector.buffer_shapes(args, rules, args.num_envs // n).items()}
        for i in range(n):
            env_seed, rng = worker_seeds(args.seed, i)
            self.collectors.append(RolloutCollector(
                args, rules, args.num_envs // n, env_seed, make_bots(args.bot_rates, rules), ctrl=ctrl[i::n],
                buffers={k: None if buf is None else buf[i] for k, buf in self.shared.items()}))
            self.rngs.append(rng)
        self.collector = self.collectors[0]  # worker 0's games: what a resumed checkpoint's env_state is checked by
        for c in self.collectors:  # numba's parallel kernels only from the main thread (agents/pimc.py): the exact
            c.solve_parallel = False  # last round of --endgame solved serially in each collector's thread
        self.opponent_nets = [CassinoPolicy.from_shape(net_shape).eval() for _ in range(n)]
        if device is not None:
            for net in self.opponent_nets:
                net.to(device)
        self.pool = ThreadPoolExecutor(n, thread_name_prefix="cassino-rollout")

    def collect(self, policy: torch.nn.Module, snapshot: dict[str, torch.Tensor], rng: np.random.Generator,
                deals_done: int) -> Rollout:
        """One rollout of every collector's games (:meth:`LocalRollouts.collect`'s arguments), their learner rows
        joined in worker order (:func:`concat`)."""
        import torch

        from agents.ppo_agent import PPOAgent

        t0 = time.time()
        blocks = self.collector.env.obs_blocks
        opponents = []
        for net, c in zip(self.opponent_nets, self.collectors, strict=True):
            net.load_state_dict(snapshot)
            opponents.append(PPOAgent(net, deterministic=False, rules=c.rules, blocks=blocks, env_blocks=blocks))
        from concurrent.futures import wait

        from agents.device import device_of

        draws = [rng if i == 0 else self.rngs[i] for i in range(len(self.collectors))]
        threads_before = torch.get_num_threads()
        torch.set_num_threads(1)  # for every collector thread (torch's setting is the process's)
        try:
            if device_of(policy).type != "cpu":  # one network on a GPU from two threads: not safe on every backend
                parts = [c.collect(policy, opp, r, deals_done)  # (MPS); in turn, the same rollouts
                         for c, opp, r in zip(self.collectors, opponents, draws, strict=True)]
            else:
                futures = [self.pool.submit(c.collect, policy, opp, r, deals_done)
                           for c, opp, r in zip(self.collectors, opponents, draws, strict=True)]
                wait(futures)  # every collector done, even when one fails, before anything is restored
                parts = [f.result() for f in futures]
        finally:
            torch.set_num_threads(threads_before)
        return self._join(parts, time.time() - t0)

    def _join(self, parts: list[Rollout], wall_s: float) -> Rollout:
        """The collectors' rollouts as one: the move tables and inputs are views of the shared storage (rows of
        collector i after those of collectors 0..i-1), the per-row scalars joined in that order, the learner's rows
        offset to match; the phase times are the slowest collector's, ``collect_s`` the wall time of all."""
        rows = len(parts[0].actions)
        big = {k: None if buf is None else buf.reshape(len(parts) * rows, *buf.shape[3:])
               for k, buf in self.shared.items()}
        small = {k: np.concatenate([getattr(p, k) for p in parts])
                 for k in ("actions", "logprobs", "values", "advantages", "returns")}
        slowest = max(parts, key=lambda p: p.collect_s)
        return Rollout(**big, **small, flat=np.concatenate([p.flat + i * rows for i, p in enumerate(parts)]),
                       ep_returns=np.concatenate([p.ep_returns for p in parts]),
                       ep_ctrl=np.concatenate([p.ep_ctrl for p in parts]),
                       pool_results=np.concatenate([p.pool_results for p in parts]),
                       env_s=slowest.env_s, inference_s=slowest.inference_s, collect_s=wall_s)

    def state(self) -> dict[str, Any]:
        """The checkpoint's fields of the games: worker 0's ``env_state`` and the others' ``{env_state, numpy_rng}``
        under ``workers``, as a Ray run of as many workers keeps them."""
        return {"env_state": self.collectors[0].env_state(),
                "workers": [{"env_state": c.env_state(), "numpy_rng": rng_state(r)}
                            for c, r in zip(self.collectors[1:], self.rngs[1:], strict=True)]}

    def load(self, tr: dict[str, Any]) -> None:
        """Restore the games from a checked checkpoint's ``train`` entry (its ``workers`` count checked against
        ``num_workers`` beforehand, :func:`train.checkpoints.check_workers`)."""
        self.collectors[0].load_env_state(tr["env_state"])
        for c, i, w in zip(self.collectors[1:], range(1, len(self.collectors)), tr["workers"], strict=True):
            c.load_env_state(w["env_state"])
            set_rng_state(self.rngs[i], w["numpy_rng"])

    def release(self) -> None:
        """End the threads."""
        self.pool.shutdown()
