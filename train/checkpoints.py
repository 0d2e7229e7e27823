"""A training run's checkpoints beyond the network: writing one, and reading and checking one to resume it.

A training checkpoint (format: :mod:`agents.ppo_agent`) holds the network, the optimiser's state and a ``train``
entry: the run's config, its folder, the counters (``iteration``, ``global_step``, ``elapsed_s``), the generators'
states (``numpy_rng``, ``torch_rng``), the opponent pool and the games (``env_state``, and ``workers`` with more than
one Ray worker). :func:`save_training_checkpoint` writes one (atomically, then copied to ``latest.pt``);
:func:`read_training_checkpoint` reads one to resume, and :func:`check_train_state` checks every field of its
``train`` and ``optimizer`` entries against the run before any is used, so that a bad file is refused with the
field's name and nothing is changed.
"""

from __future__ import annotations

import math
import typing
from pathlib import Path
from typing import Any

import numpy as np

from train.rollout import env_state, set_rng_state

if typing.TYPE_CHECKING:
    import torch


def read_training_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read a checkpoint to resume (:func:`agents.ppo_agent.read_checkpoint`, which checks the file and the network's
    entries); its ``train`` and ``optimizer`` entries are checked later, against the run (:func:`check_train_state`).

    Raises:
        agents.ppo_agent.CheckpointError: an unreadable file, or an evaluation-only checkpoint (no training state).
            For a run folder's ``latest.pt`` (missing, corrupt or truncated) the message names the newest other
            checkpoint beside it, which may be whole (:func:`other_checkpoint`).
    """
    from agents.ppo_agent import CheckpointError, read_checkpoint
    from cassino_env.errors import shown_name

    try:
        ckpt = read_checkpoint(path)
    except CheckpointError as exc:  # named as the option it came from
        other = other_checkpoint(Path(path))
        hint = (f"; the newest other checkpoint beside it, {other.name}, may be whole: copy it over latest.pt to "
                "resume from it" if other is not None else "")
        raise CheckpointError(f"resume: {exc}{hint}") from None
    if not isinstance(ckpt.get("train"), dict) or ckpt.get("optimizer") is None:
        raise CheckpointError(f"resume: {shown_name(path)}: an evaluation-only checkpoint; --resume needs a training "
                              "checkpoint")
    return ckpt


def other_checkpoint(path: Path) -> Path | None:
    """For ``RUN/checkpoints/latest.pt``: the newest other ``.pt`` file in that folder (by modification time), a
    checkpoint ``latest.pt`` was a copy of; None for another file, or when there is none."""
    if path.name != "latest.pt" or path.parent.name != "checkpoints":
        return None
    try:
        others = [(f.stat().st_mtime_ns, f.name, f) for f in path.parent.glob("*.pt")
                  if f.name != "latest.pt" and f.is_file()]
    except OSError:
        return None
    return max(others)[2] if others else None


def save_training_checkpoint(path: Path, policy: torch.nn.Module, rules: Any, optimizer: torch.optim.Optimizer,
                             train_state: dict[str, Any], blocks: tuple[str, ...] | None = None,
                             devices_before: str | None = None) -> Path:
    """Write a training checkpoint to ``path`` and copy it to ``latest.pt`` beside it, each atomically (a temporary
    file in the same folder, synced, then renamed: never half-written); returns ``path``.

    Args:
        path: the file, ``RUN/checkpoints/NAME.pt``.
        policy: the network. rules: the run's rules. optimizer: its optimiser.
        train_state: the ``train`` entry (module docstring).
        blocks: the observation blocks the policy reads (None: the default list), recorded as ``obs_blocks``.
        devices_before: a resumed run's: the device (or devices) its earlier parts trained on, the resumed
            checkpoint's provenance ``device`` (None: a fresh run, or unknown).

    The file's ``provenance`` (:mod:`agents.provenance`) records the command, the code's commit, the run's seed,
    its wall time (``train_state["elapsed_s"]``), the stage (``train_state["stage"]``, else its ``algo``) and the
    device the network trained on (``cpu``, ``cuda:0``; ``cuda:0, then cpu`` for a run resumed on another device,
    :func:`agents.provenance.devices_in_turn`); its tensors are on the CPU whatever that device was.

    Raises:
        OSError: the file could not be written (the previous files are left as they were).
    """
    from agents.device import device_of
    from agents.ppo_agent import atomic_copy, save_checkpoint
    from agents.provenance import devices_in_turn, make_provenance

    cfg = train_state.get("config") if isinstance(train_state.get("config"), dict) else {}
    wall = train_state.get("elapsed_s")
    provenance = make_provenance(seed=cfg.get("seed"), stage=train_state.get("stage", train_state.get("algo", "ppo")),
                                 wall_s=float(wall) if isinstance(wall, (int, float)) else None,
                                 device=devices_in_turn(devices_before, str(device_of(policy))))
    path = save_checkpoint(path, policy, rules, optimizer=optimizer, train=train_state, blocks=blocks,
                           provenance=provenance)
    atomic_copy(path, path.parent / "latest.pt")
    return path


def check_train_state(tr: dict[str, Any], path: str | Path, policy: torch.nn.Module, env: Any,
                      optimizer_state: Any, num_workers: int = 1) -> None:
    """Check every field of a checkpoint's ``train`` entry and its ``optimizer`` (``optimizer_state``) before any is
    used to resume (nothing is changed): the counters, the RNG states, the opponent pool (each snapshot must have the
    network's tensors, finite), the environment state (the env's fields, shapes and dtypes), the other Ray workers'
    states and the optimiser's state (:func:`check_optimizer_state`). The ``config`` entry is checked by
    :func:`train.config.resume_args`.

    ``env`` has the games of one collector (``num_envs / num_workers``); ``train.env_state`` holds worker 0's (all
    the games of a local run), ``train.workers`` (absent: none) one ``{env_state, numpy_rng}`` per further Ray
    worker (train/rollout.py), so a run resumes with its own number of workers; a local run and a Ray run of one
    worker have the same state and resume either way.

    Raises:
        agents.ppo_agent.CheckpointError: naming the file and the field (``train.<field>``).
    """
    import torch

    from agents.ppo_agent import CheckpointError

    def bad(field: str, problem: str) -> CheckpointError:
        return CheckpointError(f"{path}: train.{field}: {problem}")

    check_counters(tr, path, ("iteration", "global_step"))
    games = f"num_envs={env.num_envs}" if num_workers == 1 else (f"{env.num_envs} games (num_envs / "
                                                                  f"num_workers={num_workers})")

    check_rng_states(tr, path)
    pool = tr.get("pool")
    if not isinstance(pool, dict) or not isinstance(pool.get("snapshots"), list) or not pool["snapshots"]:
        raise bad("pool", "must hold a non-empty list of snapshots")
    snaps, n = pool["snapshots"], len(pool["snapshots"])
    weights = {k: (v.shape, v.dtype) for k, v in policy.state_dict().items()}
    for i, snap in enumerate(snaps):
        if not isinstance(snap, dict) or set(snap) != set(weights):
            raise bad(f"pool.snapshots[{i}]", "must hold the network's tensors, by name")
        for k, (shape, dtype) in weights.items():
            w = snap[k]
            if not isinstance(w, torch.Tensor) or w.shape != shape or w.dtype != dtype:
                raise bad(f"pool.snapshots[{i}].{k}", f"must be a {dtype} tensor of shape {tuple(shape)}")
            if w.is_floating_point() and not bool(torch.isfinite(w).all()):
                raise bad(f"pool.snapshots[{i}].{k}", "holds NaN or infinite values (corrupt weights)")
    steps = pool.get("steps")
    if (not isinstance(steps, list) or len(steps) != n
            or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in steps)):
        raise bad("pool.steps", f"must be a list of {n} integers >= 0 (one per snapshot)")
    rates_ = pool.get("winrate", [0.5] * n)
    if (not isinstance(rates_, list) or len(rates_) != n
            or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x <= 1 for x in rates_)):
        raise bad("pool.winrate", f"must be a list of {n} numbers from 0 to 1 (one per snapshot)")
    check_workers(tr, path, num_workers, env_state(env), games)
    check_optimizer_state(optimizer_state, path, policy)


def check_workers(tr: dict[str, Any], path: str | Path, num_workers: int, fields: dict[str, torch.Tensor],
                  games: str) -> None:
    """A ``train`` entry's games by worker: ``env_state`` (worker 0's) and ``workers``, one ``{env_state,
    numpy_rng}`` per further Ray worker, as many as ``num_workers`` asks; each games' state is checked against
    ``fields``, the state of one collector's games (:func:`check_env_fields`; ``games`` says how many).

    Raises:
        agents.ppo_agent.CheckpointError: naming the file and the field.
    """
    from agents.ppo_agent import CheckpointError

    def bad(field: str, problem: str) -> CheckpointError:
        return CheckpointError(f"{path}: train.{field}: {problem}")

    workers = tr.get("workers", [])
    if not isinstance(workers, list):
        raise bad("workers", f"must be a list (one entry per rollout worker after the first), got "
                             f"{type(workers).__name__}")
    if len(workers) + 1 != num_workers:
        made = "one rollout worker" if not workers else f"{len(workers) + 1} rollout workers"
        raise bad("workers", f"the run was made with {made} (num_workers={len(workers) + 1}: collector threads "
                             f"here or Ray actors); resume it with num_workers={len(workers) + 1}, not "
                             f"num_workers={num_workers}")
    check_env_fields(tr.get("env_state"), fields, path, "env_state", games)
    for i, w in enumerate(workers):
        if not isinstance(w, dict) or set(w) != {"env_state", "numpy_rng"}:
            raise bad(f"workers[{i}]", "must hold env_state and numpy_rng")
        check_env_fields(w["env_state"], fields, path, f"workers[{i}].env_state", games)
        check_rng(w["numpy_rng"], path, f"workers[{i}].numpy_rng")


def check_counters(tr: dict[str, Any], path: str | Path, names: tuple[str, ...]) -> None:
    """The integer counters ``names`` of a ``train`` entry (each >= 0) and its ``elapsed_s`` (finite seconds >= 0).

    Raises:
        agents.ppo_agent.CheckpointError: naming the file and the field (``train.<field>``).
    """
    from agents.ppo_agent import CheckpointError

    for name in names:
        v = tr.get(name)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise CheckpointError(f"{path}: train.{name}: must be an integer >= 0, got {v!r}")
    v = tr.get("elapsed_s")
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise CheckpointError(f"{path}: train.elapsed_s: must be a finite number of seconds >= 0, got {v!r}")


def check_rng(state: Any, path: str | Path, name: str) -> None:
    """A numpy generator state (``train.<name>``: the JSON text of :func:`train.rollout.rng_state`), tried on a
    scratch generator so that nothing of the run changes.

    Raises:
        agents.ppo_agent.CheckpointError: naming the file and the field.
    """
    from agents.ppo_agent import CheckpointError

    try:
        if not isinstance(state, str):
            raise TypeError(f"a JSON string, got {type(state).__name__}")
        set_rng_state(np.random.default_rng(0), state)
    except (TypeError, ValueError, KeyError, OverflowError) as exc:
        raise CheckpointError(f"{path}: train.{name}: not a numpy generator state: {exc}") from None


def check_rng_states(tr: dict[str, Any], path: str | Path) -> None:
    """A ``train`` entry's ``numpy_rng`` (:func:`check_rng`) and ``torch_rng`` (a tensor of
    ``torch.get_rng_state()``'s dtype and shape).

    Raises:
        agents.ppo_agent.CheckpointError: naming the file and the field.
    """
    import torch

    from agents.ppo_agent import CheckpointError

    check_rng(tr.get("numpy_rng"), path, "numpy_rng")
    want = torch.get_rng_state()
    t = tr.get("torch_rng")
    if not isinstance(t, torch.Tensor) or t.dtype != want.dtype or t.shape != want.shape:
        got = (t.dtype, tuple(t.shape)) if isinstance(t, torch.Tensor) else type(t).__name__
        raise CheckpointError(f"{path}: train.torch_rng: must be a {want.dtype} tensor of shape {tuple(want.shape)} "
                              f"(torch.get_rng_state()), got {got}")


def check_env_fields(saved: Any, fields: dict[str, torch.Tensor], path: str | Path, name: str, games: str) -> None:
    """A saved games' state (``train.<name>``) against ``fields``, the state of the run's own games
    (:func:`train.rollout.env_state`): the same fields, each a tensor of the same dtype and shape; ``games`` says
    how many games the run has (for the message).

    Raises:
        agents.ppo_agent.CheckpointError: naming the file and the field.
    """
    import torch

    from agents.ppo_agent import CheckpointError

    if not isinstance(saved, dict) or set(saved) != set(fields):
        missing = sorted(set(fields) - set(saved)) if isinstance(saved, dict) else []
        raise CheckpointError(f"{path}: train.{name}: must hold the vector env's state fields"
                              + (f" (no {missing[0]!r})" if missing else ""))
    for k, ref in fields.items():
        t = saved[k]
        if not isinstance(t, torch.Tensor) or t.dtype != ref.dtype or t.shape != ref.shape:
            got = (t.dtype, tuple(t.shape)) if isinstance(t, torch.Tensor) else type(t).__name__
            raise CheckpointError(f"{path}: train.{name}.{k}: must be a {ref.dtype} tensor of shape "
                                  f"{tuple(ref.shape)} for {games}, got {got}")


def check_optimizer_state(opt: Any, path: str | Path, policy: torch.nn.Module,
                          params: list[torch.Tensor] | None = None) -> None:
    """Check a checkpoint's ``optimizer`` entry (an Adam ``state_dict``) against the network: one group over its
    parameters (``params``, the ones the run trains; None: all of them), finite hyperparameters, and moment tensors
    of each parameter's shape, finite (torch's ``load_state_dict`` checks the group sizes only, and a wrong shape
    would fail in the middle of training).

    Raises:
        agents.ppo_agent.CheckpointError: naming the file and the field (``optimizer.<field>``).
    """
    import torch

    from agents.ppo_agent import CheckpointError

    def bad(field: str, problem: str) -> CheckpointError:
        return CheckpointError(f"{path}: optimizer.{field}: {problem}")

    def is_num(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    if not isinstance(opt, dict) or not isinstance(opt.get("state"), dict) or not isinstance(opt.get("param_groups"),
                                                                                            list):
        raise CheckpointError(f"{path}: optimizer: must be an optimiser state_dict (state, param_groups)")
    params = list(policy.parameters()) if params is None else list(params)
    groups = opt["param_groups"]
    if len(groups) != 1 or not isinstance(groups[0], dict) or groups[0].get("params") != list(range(len(params))):
        n = len(groups[0].get("params", ())) if len(groups) == 1 and isinstance(groups[0], dict) else None
        raise bad("param_groups", f"must be one group of the {len(params)} parameters the run trains"
                  + (f", got {n} (another train_params?)" if n is not None else ""))
    group = groups[0]
    for key in ("lr", "eps", "weight_decay"):
        if not (is_num(group.get(key)) and group[key] >= 0):
            raise bad(f"param_groups[0].{key}", f"must be a finite number >= 0, got {group.get(key)!r}")
    betas = group.get("betas")
    if not (isinstance(betas, (list, tuple)) and len(betas) == 2 and all(is_num(b) and 0 <= b < 1 for b in betas)):
        raise bad("param_groups[0].betas", f"must be two numbers from 0 to 1 (1 excluded), got {betas!r}")
    for key in ("amsgrad", "maximize"):
        if not isinstance(group.get(key, False), bool):
            raise bad(f"param_groups[0].{key}", f"must be true or false, got {group.get(key)!r}")
    for k, st in opt["state"].items():
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < len(params) or not isinstance(st, dict):
            raise bad("state", f"entry {k!r} is not one of the network's {len(params)} parameters")
        step = st.get("step")
        value = step.item() if isinstance(step, torch.Tensor) and step.numel() == 1 else step
        if not (is_num(value) and value >= 0):
            raise bad(f"state[{k}].step", f"must be a finite number >= 0, got {step!r}")
        for name in ("exp_avg", "exp_avg_sq", *(("max_exp_avg_sq",) if group.get("amsgrad") else ())):
            t, ref = st.get(name), params[k]
            if not isinstance(t, torch.Tensor) or t.shape != ref.shape or t.dtype != ref.dtype:
                raise bad(f"state[{k}].{name}", f"must be a {ref.dtype} tensor of shape {tuple(ref.shape)}")
            if not bool(torch.isfinite(t).all()) or (name != "exp_avg" and bool((t < 0).any())):
                raise bad(f"state[{k}].{name}", "holds NaN, infinite or (for a second moment) negative values")

