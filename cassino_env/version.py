"""The environment's name and version, one constant (PettingZoo style: ``<name>_v<N>``).

Bump the ``_vN`` suffix when observations, rewards or move tables change in a way a trained policy depends on. It is
the AEC env's ``metadata["name"]``, the ``env_version`` stamped in checkpoints (``agents.ppo_agent``) and what the
tests check against. This module imports nothing, so anything may read it cheaply.
"""

#: Name and version of the environment.
ENV_NAME = "cassino_v1"
