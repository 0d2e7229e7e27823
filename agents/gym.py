"""Gymnasium ids of the single-agent environment: importing this module registers them.

Two ids per preset of docs/rules.md 6, ``cassino/<Preset>-v<N>`` and ``cassino/<Preset>Flat-v<N>`` (N is the
version of :data:`cassino_env.version.ENV_NAME`): ``cassino/Classic-v1``, ``cassino/ClassicFlat-v1``,
``cassino/Matsuda-v1``, ... ``cassino/Royal-v1``. Each makes :class:`agents.gym_env.CassinoGymEnv` (one seat learns,
an agent plays the others); the ``Flat`` ids pass ``flat=True`` (the observation is the float32 vector alone, so
Stable-Baselines3's ``"MlpPolicy"`` takes it; masks come from ``action_masks()``). Keyword arguments of
``gymnasium.make`` go to the env (``opponent="greedy"``, ``num_players=4``, ...).

The ids belong to this layer because their environment does: its other seats are agents (``advanced``, ``pimc``,
``pretrained:NAME``). The env package ``cassino_env`` registers nothing and names nothing of ``agents`` (the layering,
tests/test_layering.py). Two ways in, both the ones Gymnasium users know:

* ``import agents.gym`` (``import agents.gym_env`` does it too), then ``gymnasium.make("cassino/Classic-v1")``;
* no import at all: ``gymnasium.make("agents.gym:cassino/Classic-v1")`` (Gymnasium's ``"module:id"`` form imports
  the module first). That form also works where only the id string travels, e.g. SB3's ``SubprocVecEnv`` started
  with ``spawn``.

>>> import gymnasium, agents.gym
>>> "cassino/Classic-v1" in gymnasium.registry, "cassino/ClassicFlat-v1" in gymnasium.registry
(True, True)
>>> gym_id("cicera"), gym_id("cicera", flat=True)
('cassino/Cicera-v1', 'cassino/CiceraFlat-v1')
"""

from __future__ import annotations

import gymnasium

from cassino_env.errors import RulesError
from cassino_env.rules import PRESETS
from cassino_env.version import ENV_NAME

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


def gym_id(preset: str, flat: bool = False) -> str:
    """The Gymnasium id of a preset's single-agent environment, e.g. ``cassino/Classic-v1``
    (``cassino/ClassicFlat-v1`` with ``flat``).

    Raises:
        UnknownPresetError: (a ValueError and a KeyError) for a name that is not a preset of docs/rules.md 6.
    """
    if not isinstance(preset, str) or preset not in PRESETS:
        raise UnknownPresetError(f"unknown preset {preset!r}; presets are {', '.join(PRESETS)}")
    return f"{NAMESPACE}/{preset.capitalize()}{'Flat' if flat else ''}-v{VERSION}"


def register_ids() -> list[str]:
    """Register every preset's two ids (once: ids already registered are left as they are); returns the ids."""
    ids = []
    for preset in PRESETS:
        for flat in (False, True):
            env_id = gym_id(preset, flat)
            if env_id not in gymnasium.registry:
                kwargs = {"rules": preset, **({"flat": True} if flat else {})}
                gymnasium.register(id=env_id, entry_point=ENTRY_POINT, kwargs=kwargs)
            ids.append(env_id)
    return ids


#: Every registered id, two per preset (the Dict one, then the Flat one).
IDS = tuple(register_ids())

__all__ = ["ENTRY_POINT", "IDS", "NAMESPACE", "VERSION", "UnknownPresetError", "gym_id", "register_ids"]
