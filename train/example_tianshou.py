"""Worked example: Tianshou's PPO with action masks learns one seat of classic Cassino against a bot.

    pip install -e ".[tianshou]"
    python -m train.example_tianshou --steps 20000

Tianshou's multi-agent route (``tianshou.env.PettingZooEnv`` with ``MultiAgentPolicyManager``) runs on the AEC env with
no glue, but it learns from turn-based rewards only in part: each step's reward vector is stored with the transition of
the seat that acted, and the episode ends on the step of the deal's last card, so a seat's end-of-deal points reach its
policy only when that seat played the last card (in two-player classic seat 1 always plays it). This example takes the
single-agent route instead, which gathers the other seats' turns into the learner's step:
:class:`agents.gym_env.CassinoGymEnv` (``--opponent`` plays the other seat, the learner's seat is drawn at every reset).
Its Dict observation reaches the networks as a Tianshou ``Batch`` with ``observation`` and ``action_mask``; the actor
sets the logits of illegal ids to -1e9 before Tianshou's Categorical distribution samples, so every action is legal. At
the end the policy plays ``--eval-deals`` deals (:func:`agents.gym_env.play_deals`) and the script prints its deal win
rate.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from torch import nn


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Train, evaluate, print; returns the figures (for tests)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20_000, help="learner moves to train on")
    parser.add_argument("--steps-per-collect", type=int, default=1024)
    parser.add_argument("--num-envs", type=int, default=4)
    parser.add_argument("--opponent", default="advanced", help="agent spec of the other seat (agents.registry)")
    parser.add_argument("--eval-deals", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (small networks run fastest on one)")
    args = parser.parse_args(argv)

    from tianshou.algorithm.modelfree.ppo import PPO
    from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Collector, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.trainer import OnPolicyTrainerParams
    from tianshou.utils.net.common import AbstractDiscreteActor

    from agents.gym_env import CassinoGymEnv, play_deals

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)

    def make_env() -> CassinoGymEnv:
        return CassinoGymEnv(opponent=args.opponent)

    probe = make_env()
    obs_dim, num_actions, hidden = probe.obs_size, probe.num_actions, 128

    def torso() -> nn.Module:
        return nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())

    class MaskedActor(AbstractDiscreteActor):
        """Logits over the ids, illegal ones at -1e9 (``obs.action_mask``)."""

        def __init__(self) -> None:
            super().__init__(output_dim=num_actions)
            self.torso, self.head = torso(), nn.Linear(hidden, num_actions)

        def get_preprocess_net(self) -> nn.Module:
            return self.torso

        def forward(self, obs, state=None, info=None):
            x = torch.as_tensor(obs.observation, dtype=torch.float32)
            legal = torch.as_tensor(obs.action_mask).bool()
            return self.head(self.torso(x)).masked_fill(~legal, -1e9), state

    class Critic(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Sequential(torso(), nn.Linear(hidden, 1))

        def forward(self, obs, **kwargs):
            return self.net(torch.as_tensor(obs.observation, dtype=torch.float32))

    policy = ProbabilisticActorPolicy(actor=MaskedActor(), dist_fn=lambda logits: torch.distributions.Categorical(
        logits=logits), action_space=probe.action_space, deterministic_eval=True, action_scaling=False)
    algo = PPO(policy=policy, critic=Critic(), optim=AdamOptimizerFactory(lr=3e-4), gamma=1.0, gae_lambda=0.95,
               max_batchsize=512)
    envs = DummyVectorEnv([make_env for _ in range(args.num_envs)])
    envs.seed(args.seed)
    collector = Collector(algo, envs, VectorReplayBuffer(args.steps_per_collect, args.num_envs))
    collector.reset()
    epochs = max(1, args.steps // args.steps_per_collect)
    start = time.perf_counter()
    algo.run_training(OnPolicyTrainerParams(
        training_collector=collector, max_epochs=epochs, epoch_num_steps=args.steps_per_collect,
        collection_step_num_env_steps=args.steps_per_collect, batch_size=256, update_step_num_repetitions=4,
        test_collector=None, verbose=False, show_progress=False))
    train_s = time.perf_counter() - start
    actor = policy.actor.eval()

    @torch.no_grad()
    def greedy(env, obs):
        from tianshou.data import Batch

        logits, _ = actor(Batch(observation=obs["observation"][None], action_mask=obs["action_mask"][None]))
        return int(logits.argmax())

    rng = np.random.default_rng(args.seed)
    win, pts = play_deals(greedy, args.eval_deals, opponent=args.opponent)
    base_win, _ = play_deals(lambda e, o: int(rng.choice(np.flatnonzero(o["action_mask"]))), args.eval_deals,
                             opponent=args.opponent)
    steps = epochs * args.steps_per_collect
    print(f"Tianshou PPO, {steps} steps in {train_s:.0f} s ({steps / train_s:.0f} steps/s)")
    print(f"against {args.opponent} over {args.eval_deals} deals: deal win rate {win:.1%}, {pts:+.2f} points a deal "
          f"(random legal moves: {base_win:.1%})")
    return {"win_rate": win, "points": pts, "random_win_rate": base_win, "train_seconds": train_s}


if __name__ == "__main__":
    main()
