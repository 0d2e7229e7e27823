"""Worked example: PPO with action masks in TorchRL, self-play on the PettingZoo AEC env, no glue.

    pip install -e ".[torchrl]"
    python -m train.example_torchrl --frames 20000

TorchRL's ``PettingZooWrapper(env, use_mask=True)`` wraps the AEC env as it is, whose defaults are what it needs
(``cassino_env.aec``, Arguments; spelled out below): ``mask_in_info=False`` keeps the mask only in the observation
(as PettingZoo's classic games do; with the mask in both places the wrapper fails on ``reset``), and
``with_moves=False`` leaves out the ``moves`` block, which the wrapper would otherwise copy at every step (an
(A, 56) array). Each seat is a group
of one agent; one network plays both (masked softmax over the 524 ``card_value`` ids, ``MaskedCategorical``), and
its turns are the steps where the group's ``mask`` is set.

PPO here is the clipped objective on Monte Carlo returns (gamma 1: the deal's points, which the wrapper pays to
both groups on the step that ends the deal) with a learned value baseline; steps of a deal the rollout cut short are
left out (each batch starts a new deal). At the end the policy plays ``--eval-deals`` deals against ``--opponent``
through :func:`agents.gym_env.play_deals` and the script prints its deal win rate.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from torch import nn


class Net(nn.Module):
    """Observation -> (logits over the actions, value)."""

    def __init__(self, obs_dim: int, num_actions: int, hidden: int = 128) -> None:
        super().__init__()
        self.torso = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.pi = nn.Linear(hidden, num_actions)
        self.v = nn.Linear(hidden, 1)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.torso(obs)
        return self.pi(h), self.v(h).squeeze(-1)


def returns_to_go(reward: torch.Tensor, done: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """float[T] rewards and bool[T] episode ends -> (undiscounted return from each step on, bool[T] complete):
    steps after the last episode end have no complete return."""
    out = torch.zeros_like(reward)
    acc = torch.zeros(())
    complete = torch.zeros_like(done)
    seen_end = False
    for t in range(len(reward) - 1, -1, -1):
        if done[t]:
            acc = torch.zeros(())
            seen_end = True
        acc = acc + reward[t]
        out[t] = acc
        complete[t] = seen_end
    return out, complete


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Train, evaluate, print; returns the figures (for tests)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=20_000, help="env steps (moves of both seats) to train on")
    parser.add_argument("--frames-per-batch", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=4, help="PPO epochs per batch")
    parser.add_argument("--opponent", default="advanced", help="agent spec the final evaluation plays against")
    parser.add_argument("--eval-deals", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (small networks run fastest on one)")
    args = parser.parse_args(argv)

    from torchrl.envs.libs.pettingzoo import PettingZooWrapper
    from torchrl.modules import MaskedCategorical

    import cassino_env
    from agents.gym_env import play_deals

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    base = cassino_env.env(action_encoding="card_value", mask_in_info=False, with_moves=False)
    env = PettingZooWrapper(base, use_mask=True, seed=args.seed)
    groups = list(env.group_map)
    obs_dim = base.observation_space("player_0")["observation"].shape[0]
    num_actions = base.action_space("player_0").n
    net = Net(obs_dim, num_actions)
    opt = torch.optim.Adam(net.parameters(), lr=3e-4)

    def dist_of(obs: torch.Tensor, mask: torch.Tensor) -> tuple[MaskedCategorical, torch.Tensor]:
        logits, value = net(obs)
        return MaskedCategorical(logits=logits, mask=mask), value

    @torch.no_grad()
    def policy(td):
        for g in groups:
            mask = td[g, "action_mask"].bool().clone()
            idle = ~mask.any(-1)
            mask[idle, 0] = True  # a seat not to move: any action, the wrapper ignores it
            dist, _ = dist_of(td[g, "observation", "observation"], mask)
            td[g, "action"] = dist.sample()
        return td

    start, frames, batches = time.perf_counter(), 0, 0
    collect_s = 0.0
    while frames < args.frames:
        t0 = time.perf_counter()
        # every batch starts a new deal (auto_reset); the deal it cuts short at the end is left out below
        roll = env.rollout(args.frames_per_batch, policy, break_when_any_done=False)
        collect_s += time.perf_counter() - t0
        frames += roll.batch_size[0]
        batches += 1
        done = roll["next", "done"].reshape(-1)
        obs, act, mask, ret = [], [], [], []
        for g in groups:
            active = roll[g, "mask"].reshape(-1)
            reward = roll["next", g, "reward"].reshape(-1)
            g_ret, complete = returns_to_go(reward, done)
            keep = active & complete
            obs.append(roll[g, "observation", "observation"].reshape(len(active), -1)[keep])
            act.append(roll[g, "action"].reshape(-1)[keep])
            mask.append(roll[g, "action_mask"].reshape(len(active), -1)[keep].bool())
            ret.append(g_ret[keep])
        obs, act, mask, ret = (torch.cat(x) for x in (obs, act, mask, ret))
        if len(act) == 0:
            continue
        with torch.no_grad():
            old_dist, old_v = dist_of(obs, mask)
            old_logp = old_dist.log_prob(act)
            adv = ret - old_v
            adv = (adv - adv.mean()) / (adv.std() + 1e-8) if len(adv) > 1 else adv
        for _ in range(args.epochs):
            dist, v = dist_of(obs, mask)
            ratio = (dist.log_prob(act) - old_logp).exp()
            pg = -torch.min(ratio * adv, ratio.clamp(0.8, 1.2) * adv).mean()
            loss = pg + 0.5 * ((v - ret) ** 2).mean() - 0.01 * dist.entropy().mean()
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(net.parameters(), 0.5)
            opt.step()
    train_s = time.perf_counter() - start

    @torch.no_grad()
    def greedy(gym_env, obs):
        logits, _ = net(torch.as_tensor(obs["observation"])[None])
        logits[0, torch.as_tensor(obs["action_mask"] == 0)] = -torch.inf
        return int(logits.argmax())

    rng = np.random.default_rng(args.seed)
    win, pts = play_deals(greedy, args.eval_deals, opponent=args.opponent)
    base_win, _ = play_deals(lambda e, o: int(rng.choice(np.flatnonzero(o["action_mask"]))), args.eval_deals,
                             opponent=args.opponent)
    print(f"TorchRL PPO self-play, {frames} frames in {train_s:.0f} s (collection {frames / collect_s:.0f} frames/s)")
    print(f"against {args.opponent} over {args.eval_deals} deals: deal win rate {win:.1%}, {pts:+.2f} points a deal "
          f"(random legal moves: {base_win:.1%})")
    return {"win_rate": win, "points": pts, "random_win_rate": base_win, "frames_per_s": frames / collect_s,
            "train_seconds": train_s}


if __name__ == "__main__":
    main()
