"""Gymnasium ids of the single-agent environment: ``import cassino_env.gym`` registers them.

One id per preset of docs/rules.md 6, ``cassino/<Preset>-v<N>`` (N is the version of :data:`ENV_NAME`):
``cassino/Classic-v1``, ``cassino/Matsuda-v1``, ``cassino/Cicera-v1``, ``cassino/Bga-v1``, ``cassino/Stadium-v1``
and ``cassino/Royal-v1``. Each makes :class:`agents.gym_env.CassinoGymEnv` (one seat learns, an agent plays the
others); keyword arguments of ``gymnasium.make`` go to it (``opponent="greedy"``, ``num_players=4``, ...).

The entry point is a string, so registering imports nothing of ``agents``: that layer is imported by
``gymnasium.make`` only (this package never imports it: README, "Layout"). Importing this module imports
gymnasium (about 0.3 s), which is why ``import cassino_env`` alone does not register the ids; ``import agents.gym_env``
registers them too, and ``gymnasium.make("cassino_env.gym:cassino/Classic-v1")`` imports this module itself.

>>> import gymnasium, cassino_env.gym
>>> "cassino/Classic-v1" in gymnasium.registry
True
>>> gym_id("cicera")
'cassino/Cicera-v1'
"""

from __future__ import annotations

import gymnasium

from .errors import RulesError
from .rules import PRESETS
from .version import ENV_NAME

#: The namespace of the ids.
NAMESPACE = "cassino"
#: Where ``gymnasium.make`` finds the environment class (imported only then).
ENTRY_POINT = "agents.gym_env:CassinoGymEnv"
#: The ids' version: the number after ``_v`` in :data:`cassino_env.version.ENV_NAME`.
VERSION = int(ENV_NAME.rpartition("_v")[2])


class UnknownPresetError(RulesError, KeyError):
    """A name that is not a preset of docs/rules.md 6: a ``RulesError`` (a ``ValueError``, as the project's errors
    are) and a ``KeyError`` (a failed lookup), its message unquoted."""

    __str__ = Exception.__str__


def gym_id(preset: str) -> str:
    """The Gymnasium id of a preset's single-agent environment, e.g. ``cassino/Classic-v1``.

    Raises:
        UnknownPresetError: (a ValueError and a KeyError) for a name that is not a preset of docs/rules.md 6.
    """
    if not isinstance(preset, str) or preset not in PRESETS:
        raise UnknownPresetError(f"unknown preset {preset!r}; presets are {', '.join(PRESETS)}")
    return f"{NAMESPACE}/{preset.capitalize()}-v{VERSION}"


def register_ids() -> list[str]:
    """Register every preset's id (once: ids already registered are left as they are); returns the ids."""
    ids = []
    for preset in PRESETS:
        env_id = gym_id(preset)
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=ENTRY_POINT, kwargs={"rules": preset})
        ids.append(env_id)
    return ids


#: Every registered id, one per preset.
IDS = tuple(register_ids())

__all__ = ["ENTRY_POINT", "IDS", "NAMESPACE", "VERSION", "UnknownPresetError", "gym_id", "register_ids"]
