"""Worked example: RLlib (new API stack) multi-agent PPO, both seats played by one shared masked module.

    python -m venv --system-site-packages .venv-rllib && .venv-rllib/bin/pip install "ray[rllib]" "torch==2.13.0"
    .venv-rllib/bin/python -m train.example_rllib --iterations 4

``ray[rllib]`` (about 520 MB with its dependencies) pins its own gymnasium version, so it goes in a virtual
environment of its own (above: one that sees the project's installed packages, torch included, and adds ray in front
of them; CI does the same, ``.ci/run``). The env is :func:`cassino_env.rllib.env_creator`, registered with
``register_env`` as RLlib's docs do for any PettingZoo env: RLlib's ``PettingZooEnv`` over the AEC env made with the
observation key RLlib's action-masking module reads (``observations``, next to ``action_mask``), no ``moves`` block
and ``illegal_action="terminate"``, so RLlib's env pre-check, which steps unmasked random actions, passes. No glue:
the module is RLlib's own ``ActionMaskingTorchRLModule`` (from RLlib's examples) and every agent id maps to the one
module ``shared``. At the end the module plays ``--eval-deals`` deals against ``--opponent``
(:func:`agents.gym_env.play_deals`) and the script prints its deal win rate.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Train, evaluate, print; returns the figures (for tests)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=4, help="RLlib training iterations")
    parser.add_argument("--batch", type=int, default=1024, help="env steps per iteration (both seats' moves)")
    parser.add_argument("--opponent", default="advanced", help="agent spec the final evaluation plays against")
    parser.add_argument("--eval-deals", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (small networks run fastest on one)")
    args = parser.parse_args(argv)

    import ray
    import torch
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule
    from ray.tune.registry import register_env

    import cassino_env.rllib
    from agents.gym_env import play_deals

    torch.set_num_threads(args.threads)
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    register_env("cassino", cassino_env.rllib.env_creator)
    config = (
        PPOConfig()
        .environment("cassino", env_config={"rules": "classic"})
        .multi_agent(policies={"shared"}, policy_mapping_fn=lambda agent_id, episode, **kw: "shared")
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={"shared": RLModuleSpec(
            module_class=ActionMaskingTorchRLModule, model_config={"fcnet_hiddens": [128, 128]})}))
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=args.batch, minibatch_size=min(256, args.batch), num_epochs=4,
                  gamma=1.0, lr=3e-4)
        .debugging(seed=args.seed)
    )
    algo = config.build_algo()
    start = time.perf_counter()
    for _ in range(args.iterations):
        algo.train()
    train_s = time.perf_counter() - start
    module = algo.get_module("shared")

    @torch.no_grad()
    def greedy(env, obs):
        batch = {"obs": {"observations": torch.as_tensor(obs["observation"])[None],
                         "action_mask": torch.as_tensor(obs["action_mask"], dtype=torch.float32)[None]}}
        logits = module.forward_inference(batch)["action_dist_inputs"][0].clone()
        logits[torch.as_tensor(obs["action_mask"] == 0)] = -torch.inf
        return int(logits.argmax())

    rng = np.random.default_rng(args.seed)
    win, pts = play_deals(greedy, args.eval_deals, opponent=args.opponent)
    base_win, _ = play_deals(lambda e, o: int(rng.choice(np.flatnonzero(o["action_mask"]))), args.eval_deals,
                             opponent=args.opponent)
    algo.stop()
    ray.shutdown()
    steps = args.iterations * args.batch
    print(f"RLlib PPO self-play, {args.iterations} iterations (about {steps} env steps) in {train_s:.0f} s")
    print(f"against {args.opponent} over {args.eval_deals} deals: deal win rate {win:.1%}, {pts:+.2f} points a deal "
          f"(random legal moves: {base_win:.1%})")
    return {"win_rate": win, "points": pts, "random_win_rate": base_win, "train_seconds": train_s}


if __name__ == "__main__":
    main()
