"""RLlib's multi-agent route with no glue: an env creator for ``ray.tune.registry.register_env``.

RLlib's action-masking module (``ActionMaskingTorchRLModule``, RLlib's examples) reads the observation keys
``observations`` and ``action_mask``, and RLlib's env pre-check (``check_multiagent_environments``) steps random,
unmasked actions. :func:`env_creator` makes the AEC env with what both need (:data:`RLLIB_DEFAULTS`: the vector under
``observations``, no ``moves`` block, ``card_value`` ids, illegal actions ending the game with the default penalty,
``cassino_env.aec``) and wraps it in RLlib's own ``PettingZooEnv``, which pays every seat its end-of-deal reward. The
plain RLlib code, run in a virtual environment with ``ray[rllib]`` (it pins its own gymnasium)::

    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule
    from ray.tune.registry import register_env

    import cassino_env.rllib

    register_env("cassino", cassino_env.rllib.env_creator)
    config = (PPOConfig().environment("cassino", env_config={"rules": "classic"})
              .multi_agent(policies={"shared"}, policy_mapping_fn=lambda agent_id, episode, **kw: "shared")
              .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={
                  "shared": RLModuleSpec(module_class=ActionMaskingTorchRLModule)}))
              .env_runners(num_env_runners=0).training(train_batch_size_per_learner=512, minibatch_size=128))
    print(config.build_algo().train()["env_runners"]["num_env_steps_sampled"])

``env_config`` holds any arguments of :func:`cassino_env.env` (they override the defaults). This module imports
nothing of ray until :func:`env_creator` runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The AEC env arguments :func:`env_creator` sets unless ``env_config`` says otherwise.
RLLIB_DEFAULTS: dict[str, Any] = {"observation_key": "observations", "with_moves": False,
                                  "action_encoding": "card_value", "illegal_action": "terminate"}


def env_creator(env_config: Mapping[str, Any] | None = None):
    """RLlib's ``PettingZooEnv`` over ``cassino_env.env(**{**RLLIB_DEFAULTS, **env_config})``.

    Args:
        env_config: arguments of :func:`cassino_env.env` (RLlib passes its ``EnvContext``, a dict).

    Raises:
        ImportError: ray[rllib] is not installed; EnvConfigError, RulesError: a bad argument (the message names it).
    """
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv

    from .aec import env

    return PettingZooEnv(env(**{**RLLIB_DEFAULTS, **dict(env_config or {})}))


__all__ = ["RLLIB_DEFAULTS", "env_creator"]
