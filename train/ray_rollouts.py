"""The rollouts of ``cassino train --ray ADDRESS --num-workers N``: N Ray actors, each a
:class:`train.rollout.RolloutCollector` over ``num_envs / N`` games, the learner on the driver.

:class:`RayRollouts` is used by the trainer as :class:`train.rollout.LocalRollouts` is (``collect``, ``state``,
``load``, ``release``); each actor is a :class:`RolloutWorker`. Seeding and the checkpoint's fields of the workers:
:mod:`train.rollout`; the actors, their reserved CPUs and the connection: :class:`train.ray_pool.WorkerPool`. Ray is
imported only when a run asks for it (the ``ray`` extra).
"""

from __future__ import annotations

import time
import typing
from typing import Any

import numpy as np

from train import config as config_module
from train import rollout
from train.config import Args
from train.ray_pool import WorkerPool
from train.rollout import Rollout, RolloutCollector, concat, make_bots, split_games, worker_seeds

if typing.TYPE_CHECKING:
    import torch


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
        args = config_module.make_args(Args, config)
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
        blocks = self.collector.env.obs_blocks
        opponent = PPOAgent(self.opponent_net, deterministic=False, rules=self.collector.rules, blocks=blocks,
                            env_blocks=blocks)
        rng = self.rng
        if rng_state is not None:
            rollout.set_rng_state(self.lent_rng, rng_state)
            rng = self.lent_rng
        ro = self.collector.collect(self.policy, opponent, rng, deals_done).compact()
        return ro, None if rng_state is None else rollout.rng_state(rng)

    def state(self) -> dict[str, Any]:
        """``env_state`` (tensors) and, for a worker with a generator of its own, ``numpy_rng``."""
        out: dict[str, Any] = {"env_state": self.collector.env_state()}
        if self.rng is not None:
            out["numpy_rng"] = rollout.rng_state(self.rng)
        return out

    def load(self, env_state: dict[str, torch.Tensor], rng_state: str | None) -> None:
        """Restore :meth:`state` (checked beforehand)."""
        self.collector.load_env_state(env_state)
        if rng_state is not None:
            rollout.set_rng_state(self.rng, rng_state)



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
        # the workers play on their CPU (one each), whatever device the learner's network is on
        self.pool = WorkerPool(RolloutWorker, args.ray_address, args.num_workers,
                               config={**config_module.args_to_dict(args), "device": "cpu"},
                               network=net_shape.to_dict())
        self.overhead_s: float | None = 0.0

    def collect(self, policy: torch.nn.Module, snapshot: dict[str, torch.Tensor], rng: np.random.Generator,
                deals_done: int) -> Rollout:
        """One rollout of every worker's games (:class:`LocalRollouts.collect`'s arguments); worker 0 draws from
        ``rng`` (its state goes there and back), the others from their own generators."""
        import ray

        t0 = time.time()
        from agents.device import to_cpu

        weights = ray.put(to_cpu(policy.state_dict()))
        opponent = ray.put(snapshot)
        calls = [a.collect.remote(weights, opponent, deals_done, rollout.rng_state(rng) if i == 0 else None)
                 for i, a in enumerate(self.pool.actors)]
        parts = ray.get(calls)
        rollout.set_rng_state(rng, parts[0][1])
        ro = concat([p for p, _ in parts])
        self.overhead_s = time.time() - t0 - ro.collect_s
        return ro

    def state(self) -> dict[str, Any]:
        """The checkpoint's fields of the games (:meth:`train.ray_pool.WorkerPool.state`)."""
        return self.pool.state()

    def load(self, tr: dict[str, Any]) -> None:
        """Send every worker its games from a checked checkpoint's ``train`` entry
        (:meth:`train.ray_pool.WorkerPool.load`)."""
        self.pool.load(tr)

    def release(self) -> None:
        """End the workers, and Ray when it was started here (:meth:`train.ray_pool.WorkerPool.release`)."""
        self.pool.release()
