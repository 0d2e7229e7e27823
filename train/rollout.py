"""Rollout collection for :mod:`train.ppo_selfplay`: games, opponents and per-seat credit, apart from the update.

A :class:`RolloutCollector` owns a vector env of its own games, which of those games are self-play, against the pool
snapshot or against a bot (:func:`train.ppo_selfplay.split_games`: the local trainer's split of its games, or a Ray
worker's share of the run's split of all of them, game ``g`` on worker ``g % N``), the rollout buffers and its
:class:`train.ppo_selfplay.SeatCredit`. :meth:`RolloutCollector.collect` plays one rollout of ``num_steps`` moves in
every game with the networks and the generator it is given, runs GAE along each (game, seat) trajectory and returns a
:class:`Rollout`: the learner's transitions and the iteration's statistics. The local trainer has one collector over
all ``num_envs`` games; ``cassino train --ray ADDRESS --num-workers N`` has N :class:`RolloutWorker` Ray actors,
each a collector over ``num_envs / N`` games with its own copy of the policy and the opponents
(:class:`RayRollouts`), and the learner on the driver.

Seeding of the workers (deterministic from the run's ``seed``): worker 0's games are seeded as the local trainer's
(``seed * 1_000_003 % 2**62``) and it draws from the driver's own generator, which travels to it with the weights
and back with the rollout, so a Ray run with one worker is the local run, bit for bit. Worker ``i >= 1`` seeds its
games and its generator from ``numpy.random.SeedSequence([seed, i])`` (two children). A checkpoint holds worker 0's
env state in ``train.env_state`` (the local trainer's field) and worker ``i``'s env and generator states in
``train.workers[i - 1]``.

Ray is imported only here, and only when a run asks for it (the ``ray`` extra).
"""

from __future__ import annotations

import os
import time
import typing
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from train import ppo_selfplay
from train.config import ConfigError
from train.ppo_selfplay import (
    POOL,
    SELF,
    Args,
    SeatCredit,
    _env_state,
    _restore_env_state,
    _rng_state,
    _set_rng_state,
    make_args,
    make_bots,
    rotate_learner_side,
    split_games,
)

if typing.TYPE_CHECKING:
    import torch

    from cassino_env.rules import RuleSet


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
            (1 win, 0.5 tie, 0 loss), for :meth:`train.ppo_selfplay.SnapshotPool.record`.
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
            local trainer's split of ``num_envs`` games (:func:`train.ppo_selfplay.split_games`). A Ray worker gets
            its share of the run's split of all ``args.num_envs`` games (:class:`RolloutWorker`), so the workers
            together play the run's mix of opponents.
    """

    def __init__(self, args: Args, rules: RuleSet, num_envs: int, env_seed: int, bots: dict[str, Any],
                 ctrl: np.ndarray | None = None) -> None:
        from agents.bots import RuleTables
        from agents.features import NUM_MOVE_FEATURES, MoveFeaturizer, critic_state_size
        from cassino_env.vector import CassinoVectorEnv

        self.args, self.rules = args, rules
        B, T, P, S = num_envs, args.num_steps, rules.num_players, rules.num_sides
        self.B, self.T, self.P, self.S = B, T, P, S
        self.deal_len = 52 - rules.table_cards
        self.side_of_seat = np.arange(P) % S  # docs/rules.md 1: partners sit opposite, seats p and p + S
        self.bot_names = list(args.bot_rates)
        self.bots = bots
        self.env = CassinoVectorEnv(B, rules, seed=env_seed, max_moves=args.max_moves, reward=args.reward,
                                    episode="deal",
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
        self.obs_buf = np.zeros((T, B, D), dtype=np.float32)
        self.kind_buf = np.zeros((T, B, M), dtype=np.int8)
        self.card_buf = np.zeros((T, B, M), dtype=np.int8)
        self.value_buf = np.zeros((T, B, M), dtype=np.int8)
        self.cards_buf = np.zeros((T, B, M), dtype=np.int64)
        self.mask_buf = np.zeros((T, B, M), dtype=bool)
        self.feat_buf = np.zeros((T, B, M, F), dtype=np.float32) if F else None
        self.crit_buf = np.zeros((T, B, C), dtype=np.float32) if C else None
        self.actions = np.zeros((T, B), dtype=np.int64)
        self.logprobs = np.zeros((T, B), dtype=np.float32)
        self.values = np.zeros((T, B), dtype=np.float32)
        self.learn = np.zeros((T, B), dtype=bool)  # the current policy acted: the transition is trained on
        self.credit = SeatCredit(T, B, P)  # per-seat rewards, trajectory ends and links (for GAE)
        self.games = np.arange(B)

    # --- checkpoints -------------------------------------------------------------------------------------------------
    def env_state(self) -> dict[str, torch.Tensor]:
        """The games' state as tensors (``train.env_state`` of a checkpoint; between rollouts, on a deal start)."""
        return _env_state(self.env)

    def load_env_state(self, saved: dict[str, torch.Tensor]) -> None:
        """Restore :meth:`env_state` (checked beforehand by :func:`train.ppo_selfplay.check_train_state`)."""
        _restore_env_state(self.env, saved)
        self.obs = self.env.observe()

    # --- one rollout -------------------------------------------------------------------------------------------------
    def collect(self, policy: torch.nn.Module, opponent: Any, rng: np.random.Generator, deals_done: int) -> Rollout:
        """Play ``num_steps`` moves in every game and return the rollout (:class:`Rollout`, every row, GAE done).

        Args:
            policy: the current policy (``agents.policy.CassinoPolicy``); it plays the learner's seats.
            opponent: the agent of the pool games (the iteration's snapshot, an ``agents.ppo_agent.PPOAgent``).
            rng: the generator every random choice draws from (the policy's samples, the opponents').
            deals_done: deals every game has finished before this rollout (the learner's side rotates by it).
        """
        import torch

        from agents.base import slice_obs
        from agents.features import banked_points, critic_state, seat_margins
        from agents.policy import MoveBatch, masked_log_softmax, sample_actions
        from cassino_env.endgame import solvable, solve_state

        args, env = self.args, self.env
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
            if F:
                feat_buf[t] = self.featurizer(obs)
            if C:
                crit_buf[t] = critic_state(env.state)
            with torch.no_grad():
                mb = MoveBatch.from_arrays(obs_buf[t, rows], kind_buf[t, rows], card_buf[t, rows], value_buf[t, rows],
                                           cards_buf[t, rows], mask_buf[t, rows],
                                           feat_buf[t, rows] if F else None, crit_buf[t, rows] if C else None)
                logits, value = policy(mb)
                a = sample_actions(logits, rng)
                logp = masked_log_softmax(logits, mb.mask)[torch.arange(len(rows)), torch.from_numpy(a)]
            actions[t, rows] = a
            logprobs[t, rows] = logp.numpy()
            values[t, rows] = value.numpy()
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
        # (looked up in train.ppo_selfplay at each call, where it is defined and where a test replaces it)
        advantages = ppo_selfplay.compute_gae(credit.rewards, values, credit.dones, credit.next_t, args.gamma,
                                              args.gae_lambda)
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

    def __init__(self, collector: RolloutCollector, net_shape: Any) -> None:
        from agents.policy import CassinoPolicy

        self.collector = collector
        self.opponent_net = CassinoPolicy.from_shape(net_shape).eval()

    def collect(self, policy: torch.nn.Module, snapshot: dict[str, torch.Tensor], rng: np.random.Generator,
                deals_done: int) -> Rollout:
        """One rollout of every game: ``policy`` plays the learner, ``snapshot`` (weights) the pool games."""
        from agents.ppo_agent import PPOAgent

        self.opponent_net.load_state_dict(snapshot)
        opponent = PPOAgent(self.opponent_net, deterministic=False, rules=self.collector.rules)
        return self.collector.collect(policy, opponent, rng, deals_done)

    def state(self) -> dict[str, Any]:
        """The checkpoint's fields of the games: ``env_state``."""
        return {"env_state": self.collector.env_state()}

    def load(self, tr: dict[str, Any]) -> None:
        """Restore the games from a checked checkpoint's ``train`` entry."""
        self.collector.load_env_state(tr["env_state"])

    def release(self) -> None:
        """Nothing to release here."""


class RolloutWorker:
    """A Ray actor's body: a :class:`RolloutCollector` over ``num_envs / num_workers`` games, seeded by
    :func:`worker_seeds`, with its own copies of the policy, the pool network and the bots; torch uses one thread.

    Args:
        config: the run's options (``train.config.args_to_dict``), checked again here.
        index: the worker's index, 0 to ``num_workers - 1``.
        num_workers: the number of workers sharing the games.
        network: the network's shape (``NetworkShape.to_dict()``).
    """

    def __init__(self, config: dict[str, Any], index: int, num_workers: int, network: dict[str, Any]) -> None:
        import torch

        from agents.policy import CassinoPolicy
        from cassino_env.rules import make_rules

        torch.set_num_threads(1)
        args = make_args(config)
        rules = make_rules(args.preset, args.num_players)
        env_seed, self.rng = worker_seeds(args.seed, index)
        # the run's split of all its games, dealt out in turn (game g to worker g % num_workers): the workers together
        # play the run's exact mix, each about the same share of every opponent (a split of a worker's own few games
        # would round small shares away)
        ctrl = split_games(args.num_envs, args.pool_rate, args.bot_rates)[index::num_workers]
        self.collector = RolloutCollector(args, rules, args.num_envs // num_workers, env_seed,
                                          make_bots(args.bot_rates, rules), ctrl=ctrl)
        self.policy = CassinoPolicy.from_shape(network)
        self.opponent_net = CassinoPolicy.from_shape(network).eval()
        self.lent_rng = np.random.default_rng(0)  # worker 0 draws from the driver's generator, set at each call

    def ready(self) -> int:
        """The number of games (a call that returns once the actor is up)."""
        return self.collector.B

    def collect(self, weights: dict[str, torch.Tensor], snapshot: dict[str, torch.Tensor], deals_done: int,
                rng_state: str | None) -> tuple[Rollout, str | None]:
        """One rollout with these weights (the policy's, the pool snapshot's); returns its learner rows
        (:meth:`Rollout.compact`) and, when ``rng_state`` (the driver's generator, for worker 0) was given, the
        generator's state after it."""
        from agents.ppo_agent import PPOAgent

        self.policy.load_state_dict(weights)
        self.opponent_net.load_state_dict(snapshot)
        opponent = PPOAgent(self.opponent_net, deterministic=False, rules=self.collector.rules)
        rng = self.rng
        if rng_state is not None:
            _set_rng_state(self.lent_rng, rng_state)
            rng = self.lent_rng
        ro = self.collector.collect(self.policy, opponent, rng, deals_done).compact()
        return ro, None if rng_state is None else _rng_state(rng)

    def state(self) -> dict[str, Any]:
        """``env_state`` (tensors) and, for a worker with a generator of its own, ``numpy_rng``."""
        out: dict[str, Any] = {"env_state": self.collector.env_state()}
        if self.rng is not None:
            out["numpy_rng"] = _rng_state(self.rng)
        return out

    def load(self, env_state: dict[str, torch.Tensor], rng_state: str | None) -> None:
        """Restore :meth:`state` (checked beforehand)."""
        self.collector.load_env_state(env_state)
        if rng_state is not None:
            _set_rng_state(self.rng, rng_state)


#: Seconds :func:`_check_reachable` waits for a cluster's head to accept a connection.
CONNECT_TIMEOUT_S = 5.0
#: Seconds :class:`RayRollouts` waits for the cluster to reserve a CPU per worker before refusing the run.
FREE_CPU_WAIT_S = 10.0


def _check_reachable(address: str) -> None:
    """Refuse a ``HOST:PORT`` address (given, or ``auto``'s ``RAY_ADDRESS``) where nothing accepts a TCP connection:
    ``ray.init`` would retry it for many minutes (20 tries of about 40 s), printing warnings. ``local``, ``auto``
    without ``RAY_ADDRESS`` and ``ray://`` (Ray Client gives up by itself after 30 s) are left to ``ray.init``, and so
    is an address that is not ``HOST:PORT`` (it refuses those at once).

    Raises:
        ConfigError: naming ``ray_address``.
    """
    import socket

    source = ""
    if address == "auto":
        address, source = os.environ.get("RAY_ADDRESS", "").strip(), " (RAY_ADDRESS)"
    host, sep, port = address.rpartition(":")
    host = host.strip("[]")  # [::1]:6379
    if not sep or not host or not port.isdigit() or "://" in address or address in ("local", "auto"):
        return
    try:
        with socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S):
            pass
    except (OSError, OverflowError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
        raise ConfigError(f"ray_address: no Ray cluster answers at {address!r}{source} ({reason}); start one there "
                          "(ray start --head) or give the head node's address", field="ray_address") from None


def connect_ray(address: str) -> bool:
    """``ray.init(address=address)`` unless Ray is already initialised in this process; True when it was started here
    (the caller shuts it down).

    Raises:
        ConfigError: naming ``ray_address``: Ray is not installed, or no cluster can be started or reached there
            (a ``HOST:PORT`` where nothing answers within :data:`CONNECT_TIMEOUT_S` seconds, at once).
    """
    try:
        import ray
    except ImportError:
        raise ConfigError("ray_address: Ray is not installed (pip install -e \".[ray]\")",
                          field="ray_address") from None
    if ray.is_initialized():
        return False
    _check_reachable(address)
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    except (ConnectionError, TimeoutError, RuntimeError, ValueError) as exc:  # no cluster there, a bad address
        if ray.is_initialized():
            ray.shutdown()
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"ray_address: cannot start or reach a Ray cluster at {address!r}: {first[:200]}",
                          field="ray_address") from None
    return True


class RayRollouts:
    """The rollouts of ``cassino train --ray``: ``args.num_workers`` :class:`RolloutWorker` actors (one CPU each,
    spread over the cluster's nodes), each over ``num_envs / num_workers`` games. Every iteration the policy's and
    the pool snapshot's weights are put in the object store once, every worker collects a rollout in parallel, and
    their learner rows are joined in worker order (:func:`concat`).

    Attributes:
        overhead_s: seconds of the last :meth:`collect` beyond the slowest worker's own collection (putting the
            weights, the calls, sending the rollouts back, joining them): ``time/ray_overhead_s``.

    Raises:
        ConfigError: naming ``ray_address`` (no Ray, no cluster there) or ``num_workers`` (more workers than the
            cluster has CPUs, or than it has free: other jobs hold them).
    """

    def __init__(self, args: Args, net_shape: Any) -> None:
        import ray
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        self.started = connect_ray(args.ray_address)
        self.actors: list[Any] = []
        self.group: Any = None
        try:
            cpus = ray.cluster_resources().get("CPU", 0)
            if cpus < args.num_workers:
                raise ConfigError(f"num_workers={args.num_workers}: the Ray cluster at {args.ray_address!r} has "
                                  f"{cpus:g} CPUs; each worker takes one", field="num_workers")
            # one CPU per worker reserved up front (spread over the nodes): CPUs that other jobs hold would have the
            # workers wait for them without a word, for as long as those jobs run; a few seconds' grace covers the
            # actors of a run that has just ended (Ray frees their CPUs shortly after)
            self.group = placement_group([{"CPU": 1}] * args.num_workers, strategy="SPREAD")
            if not self.group.wait(timeout_seconds=FREE_CPU_WAIT_S):
                raise ConfigError(f"num_workers={args.num_workers}: the Ray cluster at {args.ray_address!r} has "
                                  f"{cpus:g} CPUs but not {args.num_workers} free within {FREE_CPU_WAIT_S:g} s (other "
                                  "jobs hold them) and each worker takes one; wait for those to end, or give fewer "
                                  "workers", field="num_workers")
            actor = ray.remote(num_cpus=1)(RolloutWorker)
            from train.config import args_to_dict

            config = args_to_dict(args)
            self.actors = [actor.options(scheduling_strategy=PlacementGroupSchedulingStrategy(
                self.group, placement_group_bundle_index=i)).remote(config, i, args.num_workers, net_shape.to_dict())
                for i in range(args.num_workers)]
            ray.get([a.ready.remote() for a in self.actors])
        except BaseException:
            self.release()
            raise
        self.overhead_s: float | None = 0.0

    def collect(self, policy: torch.nn.Module, snapshot: dict[str, torch.Tensor], rng: np.random.Generator,
                deals_done: int) -> Rollout:
        """One rollout of every worker's games (:class:`LocalRollouts.collect`'s arguments); worker 0 draws from
        ``rng`` (its state goes there and back), the others from their own generators."""
        import ray

        t0 = time.time()
        weights = ray.put(policy.state_dict())
        opponent = ray.put(snapshot)
        calls = [a.collect.remote(weights, opponent, deals_done, _rng_state(rng) if i == 0 else None)
                 for i, a in enumerate(self.actors)]
        parts = ray.get(calls)
        _set_rng_state(rng, parts[0][1])
        ro = concat([p for p, _ in parts])
        self.overhead_s = time.time() - t0 - ro.collect_s
        return ro

    def state(self) -> dict[str, Any]:
        """The checkpoint's fields of the games: worker 0's ``env_state`` and the others' ``workers``."""
        import ray

        states = ray.get([a.state.remote() for a in self.actors])
        return {"env_state": states[0]["env_state"], **({"workers": states[1:]} if len(states) > 1 else {})}

    def load(self, tr: dict[str, Any]) -> None:
        """Send every worker its games (and generator) from a checked checkpoint's ``train`` entry."""
        import ray

        workers = [{"env_state": tr["env_state"], "numpy_rng": None}, *tr.get("workers", [])]
        ray.get([a.load.remote(w["env_state"], w["numpy_rng"]) for a, w in zip(self.actors, workers, strict=True)])

    def release(self) -> None:
        """End the workers, and Ray when it was started here."""
        import ray

        for a in self.actors:
            ray.kill(a)
        self.actors = []
        if self.group is not None:  # the reserved CPUs go back to the cluster (one this run did not start, too)
            from ray.util.placement_group import remove_placement_group

            remove_placement_group(self.group)
            self.group = None
        if self.started:
            ray.shutdown()
            self.started = False
