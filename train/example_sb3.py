"""Worked example: sb3-contrib's MaskablePPO learns one seat of classic Cassino against the ``advanced`` bot.

    pip install -e ".[sb3]"
    python -m train.example_sb3 --timesteps 100000

The environment is :class:`agents.gym_env.CassinoGymEnv` made through its Gymnasium id (``cassino/Classic-v1``):
the learner's seat is drawn at every reset, the bot plays the other seat, and a deal's points (the learner's minus the
bot's) are the episode's return. ``action_masks()`` gives MaskablePPO the legal ``card_value`` ids, so no illegal
move is ever sampled. At the end the trained policy plays ``--eval-deals`` fresh deals (``agents.gym_env.play_deals``:
deal seeds from 10**9 on, never seen in training) and the script prints its deal win rate and mean points against
the bot, and the same for a uniformly random legal policy as the baseline.
"""

from __future__ import annotations

import argparse
import time

import gymnasium
import numpy as np


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Train, evaluate, print; returns the figures (for tests)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timesteps", type=int, default=100_000, help="learner moves to train on")
    parser.add_argument("--opponent", default="advanced", help="agent spec of the other seat (agents.registry)")
    parser.add_argument("--eval-deals", type=int, default=200, help="deals of the final evaluation")
    parser.add_argument("--n-steps", type=int, default=2048, help="PPO rollout length")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (small networks run fastest on one)")
    args = parser.parse_args(argv)

    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    from agents.gym_env import play_deals  # also registers cassino/... with gymnasium

    torch.set_num_threads(args.threads)
    vec = DummyVecEnv([lambda: Monitor(gymnasium.make("cassino/Classic-v1", opponent=args.opponent))])
    vec.seed(args.seed)
    model = MaskablePPO("MultiInputPolicy", vec, n_steps=args.n_steps, batch_size=min(256, args.n_steps),
                        learning_rate=3e-4, gamma=1.0, seed=args.seed, verbose=0, device="cpu")
    start = time.perf_counter()
    model.learn(total_timesteps=args.timesteps)
    train_s = time.perf_counter() - start

    def trained(env, obs):
        action, _ = model.predict(obs, action_masks=env.unwrapped.action_masks(), deterministic=True)
        return int(action)

    rng = np.random.default_rng(args.seed)

    def random_legal(env, obs):
        return int(rng.choice(np.flatnonzero(env.unwrapped.action_masks())))

    win, pts = play_deals(trained, args.eval_deals, opponent=args.opponent)
    base_win, base_pts = play_deals(random_legal, args.eval_deals, opponent=args.opponent)
    print(f"MaskablePPO, {args.timesteps} timesteps in {train_s:.0f} s ({args.timesteps / train_s:.0f} steps/s)")
    print(f"against {args.opponent} over {args.eval_deals} deals: deal win rate {win:.1%}, {pts:+.2f} points a deal "
          f"(random legal moves: {base_win:.1%}, {base_pts:+.2f})")
    return {"win_rate": win, "points": pts, "random_win_rate": base_win, "random_points": base_pts,
            "train_seconds": train_s}


if __name__ == "__main__":
    main()
