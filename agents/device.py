"""Where the networks run: the ``--device`` option of every command that runs a network, read in one place.

A device is named ``auto``, ``cpu``, ``cuda``, ``cuda:N`` or ``mps``. ``auto`` (every command's default) is a GPU
where torch sees one, CUDA first, then Apple's MPS, else the CPU. Only the networks and the batches they read go to
the device; the rules core, the bots, the searches' rollouts and the environments stay on the CPU (numba and numpy),
and every forward pass moves its batch across once (:meth:`agents.policy.MoveBatch.to`). Checkpoints hold CPU
tensors whatever the device (:func:`agents.ppo_agent.save_checkpoint`) and load onto any device.

>>> check_device("cuda:1 ", available=False)  # the spelling alone (torch is not imported)
'cuda:1'
>>> check_device("auto"), str(resolve_device("cpu"))
('auto', 'cpu')
>>> check_device("gpu")
Traceback (most recent call last):
...
agents.device.DeviceError: device: 'gpu' is not a device; choose auto, cpu, cuda, cuda:N (N a GPU's index) or mps
"""

from __future__ import annotations

import re
import sys
import typing
from typing import Any

from cassino_env.errors import excerpt

if typing.TYPE_CHECKING:
    import torch

#: The names a device may have (``cuda:N`` stands for ``cuda:0``, ``cuda:1``, ...).
DEVICE_NAMES = ("auto", "cpu", "cuda", "cuda:N", "mps")

_SPELLING = re.compile(r"auto|cpu|cuda|cuda:[0-9]+|mps")
#: The longest GPU index read as a number (a longer one is past every GPU: no int() of thousands of digits).
_MAX_INDEX_DIGITS = 6


class DeviceError(ValueError):
    """A device that is not one of :data:`DEVICE_NAMES`, or that torch cannot see on this machine; the message
    starts with the field (``device: ...``)."""


def check_device(value: Any, field: str = "device", *, available: bool = True) -> str:
    """The device name ``value``, stripped of surrounding spaces, checked: spelled as one of :data:`DEVICE_NAMES`
    and, with ``available`` and unless it is ``auto`` or ``cpu``, a device torch sees here (torch is imported only
    then). A ``torch.device`` is taken by its name (``torch.device("cuda", 1)`` is ``cuda:1``, ``mps:0`` is
    ``mps``), as :meth:`agents.ppo_agent.PPOAgent.to` takes one.

    Args:
        value: the name, e.g. ``"auto"``, ``"cuda:1"``, or a ``torch.device``.
        field: the option it came from, named first in the error message.
        available: check that torch sees the device (False: the spelling only).

    Returns:
        str: the name, stripped (``auto`` stays ``auto``: :func:`resolve_device` picks the device).

    Raises:
        DeviceError: naming ``field``: not text (nor a ``torch.device``), an unknown name (``gpu``, ``CUDA``,
            ``cuda:x``), or a device torch does not see: no CUDA GPU (a CPU-only build of torch among the reasons), a
            GPU index past the last one (``cuda:99999``), no MPS device.
    """
    torch = sys.modules.get("torch")  # a torch.device can only come from a process that imported torch
    if torch is not None and isinstance(value, torch.device):
        plain = value.index is None or value.type == "cpu" or (value.type == "mps" and value.index == 0)
        value = value.type if plain else f"{value.type}:{value.index}"
    if not isinstance(value, str):
        raise DeviceError(f"{field}: must be a device name ({', '.join(DEVICE_NAMES)}), got {type(value).__name__} "
                          f"{excerpt(value)}")
    name = value.strip()
    if not _SPELLING.fullmatch(name):
        raise DeviceError(f"{field}: {excerpt(value)} is not a device; choose auto, cpu, cuda, cuda:N (N a GPU's "
                          "index) or mps")
    if available and name not in ("auto", "cpu"):
        _check_available(name, field)
    return name


def _check_available(name: str, field: str) -> None:
    import torch

    if name == "mps":
        backend = getattr(torch.backends, "mps", None)
        if backend is None or not backend.is_available():
            raise DeviceError(f"{field}: 'mps': torch sees no MPS device (an Apple-silicon GPU) on this machine; give "
                              "cpu, or auto to use a GPU where there is one")
        return
    shown = excerpt(name)
    if not torch.cuda.is_available():
        why = ("this torch is a CPU-only build" if torch.version.cuda is None
               else "torch.cuda.is_available() is False")
        raise DeviceError(f"{field}: {shown}: torch sees no CUDA GPU on this machine ({why}); give cpu, or auto to "
                          "use a GPU where there is one")
    digits = name.partition(":")[2] or "0"
    count = torch.cuda.device_count()
    if len(digits) > _MAX_INDEX_DIGITS or int(digits) >= count:
        raise DeviceError(f"{field}: {shown}: torch sees {count} CUDA GPU{'s' if count != 1 else ''} here "
                          f"(cuda:0 .. cuda:{count - 1})")


def resolve_device(value: Any = "auto", field: str = "device") -> torch.device:
    """The torch device of a device name (:func:`check_device`): ``auto`` is ``cuda`` where torch sees a CUDA GPU,
    else ``mps`` where it sees one, else ``cpu``; ``cuda`` is the current CUDA GPU by its index (``cuda:0``) and
    ``mps`` is ``mps:0``, as a network's parameters name their device, so the two compare equal.

    Returns:
        torch.device: the device, with an index for a GPU.

    Raises:
        DeviceError: as :func:`check_device`.
    """
    import torch

    name = check_device(value, field)
    if name == "auto":
        backend = getattr(torch.backends, "mps", None)
        name = ("cuda" if torch.cuda.is_available() else
                "mps" if backend is not None and backend.is_available() else "cpu")
    if name == "cuda":
        name = f"cuda:{torch.cuda.current_device()}"
    elif name == "mps":
        name = "mps:0"
    return torch.device(name)


def device_of(module: Any) -> torch.device:
    """The device of a network's parameters (``torch.device('cpu')`` for a network with none)."""
    import torch

    for p in module.parameters():
        return p.device
    return torch.device("cpu")


def to_cpu(value: Any) -> Any:
    """``value`` (a tensor, or dicts, lists and tuples holding tensors: a ``state_dict``, an optimiser's) with every
    tensor on the CPU, as checkpoints hold them; ``value`` itself, unchanged, when every tensor in it is there
    already (so a CPU run writes what it always wrote). A dict keeps its type and attributes (a ``state_dict``'s
    ``_metadata``)."""
    import copy

    import torch

    def on_cpu(x: Any) -> bool:
        if isinstance(x, torch.Tensor):
            return x.device.type == "cpu"
        if isinstance(x, dict):
            return all(on_cpu(v) for v in x.values())
        if isinstance(x, (list, tuple)):
            return all(on_cpu(v) for v in x)
        return True

    def convert(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            return x.detach().cpu()
        if isinstance(x, dict):
            out = copy.copy(x)
            for k, v in x.items():
                out[k] = convert(v)
            return out
        if isinstance(x, (list, tuple)):
            return type(x)(convert(v) for v in x)
        return x

    return value if on_cpu(value) else convert(value)
