"""The arithmetic of the expert stages' networks: the ``precision`` option (``auto``, ``fp32``, ``bf16``), read in one
place.

``bf16`` runs the network's forward passes under ``torch.autocast`` with bfloat16 (weights, optimiser state and
gradients stay float32; the matrix products run in bfloat16, and :class:`agents.policy.CassinoPolicy` keeps its last
scoring layers in float32, so logits of tens keep their tenths). It pays where the products are large: the expert
stages' heads (512 wide, three layers a candidate move) in their update and in the search that labels for them
(docs/benchmarks.md, "bfloat16 in the expert stages"). PPO's network is small and its update compares
probabilities to a thousandth (the clipped ratio), so PPO always runs in float32, whatever this option says.

``auto`` (the default) is ``bf16`` on a device that computes bfloat16 natively (a CPU with AVX-512 BF16 or AMX, as
oneDNN reports it; a CUDA GPU that supports it) and ``fp32`` elsewhere: on a CPU without those instructions bfloat16
is emulated and slower than float32. Evaluation, the gates and every agent play in float32.

>>> check_precision(" bf16"), check_precision("auto")
('bf16', 'auto')
>>> check_precision("half")
Traceback (most recent call last):
...
agents.precision.PrecisionError: precision: 'half' is not a precision; choose auto, fp32 or bf16
"""

from __future__ import annotations

import contextlib
import typing
from typing import Any

from cassino_env.errors import excerpt

if typing.TYPE_CHECKING:
    import torch

#: The names a precision may have.
PRECISIONS = ("auto", "fp32", "bf16")


class PrecisionError(ValueError):
    """A precision that is not one of :data:`PRECISIONS`; the message starts with the field (``precision: ...``)."""


def check_precision(value: Any, field: str = "precision") -> str:
    """The precision ``value``, stripped of surrounding spaces, checked against :data:`PRECISIONS`.

    Raises:
        PrecisionError: naming ``field``: not text, or not one of :data:`PRECISIONS`.
    """
    if not isinstance(value, str):
        raise PrecisionError(f"{field}: must be one of {', '.join(PRECISIONS)}, got {type(value).__name__} "
                             f"{excerpt(value)}")
    name = value.strip()
    if name not in PRECISIONS:
        raise PrecisionError(f"{field}: {excerpt(value)} is not a precision; choose auto, fp32 or bf16")
    return name


def native_bf16(device: torch.device) -> bool:
    """Whether ``device`` computes bfloat16 matrix products natively: a CPU whose oneDNN reports bfloat16 support
    (AVX-512 BF16 or AMX), a CUDA GPU that torch says supports bfloat16; False elsewhere (MPS included)."""
    import torch

    if device.type == "cpu":
        try:
            return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
        except (AttributeError, RuntimeError):  # a torch built without oneDNN
            return False
    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    return False


def resolve_precision(name: str, device: torch.device) -> str:
    """``fp32`` or ``bf16``: the precision ``name`` (:func:`check_precision`) on ``device``, ``auto`` picked by
    :func:`native_bf16`."""
    name = check_precision(name)
    if name == "auto":
        return "bf16" if native_bf16(device) else "fp32"
    return name


def autocast(name: str, device: torch.device) -> contextlib.AbstractContextManager[Any]:
    """A context in which the networks' forward passes on ``device`` run at precision ``name`` (``auto``, ``fp32``,
    ``bf16``): ``torch.autocast`` with bfloat16 for ``bf16`` on a CPU or a CUDA GPU, nothing for ``fp32`` or on any
    other device (MPS runs float32). Like ``torch.autocast`` it holds
    for the calling thread only; wrap the forward pass and the loss, not the backward pass or the optimiser's step.

    Raises:
        PrecisionError: an unknown ``name``.
    """
    import torch

    if resolve_precision(name, device) == "fp32" or device.type not in ("cpu", "cuda"):
        return contextlib.nullcontext()  # elsewhere (MPS) bfloat16 autocast is not offered: float32
    return torch.autocast(device.type, dtype=torch.bfloat16)
