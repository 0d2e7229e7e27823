"""A trained policy as an :class:`agents.base.Agent`, and the checkpoint file format of ``train/ppo_selfplay.py``.

>>> from cassino_env.rules import make_rules
>>> from cassino_env.obs import obs_size
>>> agent = PPOAgent(CassinoPolicy(obs_dim=obs_size(2, 2), hidden=16, embed=8))
>>> agent.name
'ppo'

Checkpoint format
-----------------
A checkpoint is one ``torch.save`` file of a dict holding only tensors, numbers, strings, bools, ``None`` and
lists/dicts of those, so it loads with ``torch.load(path, weights_only=True)``: loading never runs code from the
file (no pickled classes or functions).

====================  ============================================================================================
key                   meaning
====================  ============================================================================================
``format``            ``"cassino-ppo-checkpoint"``
``format_version``    int, :data:`FORMAT_VERSION`
``env_version``       the environment version the policy was trained on, e.g. ``"cassino_v1"``
``preset``            rule preset name (docs/rules.md 6)
``num_players``       seats
``rules``             every rule switch (``RuleSet.to_dict()``)
``network``           :class:`agents.policy.NetworkShape` as a dict (``obs_dim``, ``hidden``, ``embed``,
                      ``move_features``, ``critic``, ``critic_dim``; ``last_round`` and ``last_round_gate`` for a
                      network with a last-round head, ``early_rounds`` too for one with an earlier-rounds head)
``model``             the network's ``state_dict``
``obs_blocks``        the observation's block names, in order (:mod:`cassino_env.obs`); a checkpoint without it
                      was trained on ``DEFAULT_BLOCKS``
``optimizer``         the optimiser's ``state_dict`` (training checkpoints)
``train``             training state (``train/ppo_selfplay.py``): iteration, global step, wall time, RNG states,
                      opponent pool, environment state, config
``provenance``        where the file came from: command, code commit, seed, stage, wall time (:mod:`agents.provenance`;
                      absent in files written before it)
====================  ============================================================================================

:func:`read_checkpoint` raises :class:`CheckpointError` (a ``ValueError``) naming the file and the problem for a
missing, truncated or corrupt file (a zip member whose CRC fails included), a file of another kind, a checkpoint for
another preset or player count, another network shape, or another environment version; every field is checked for
its type before it is used (``rules`` must make a valid rule set for the stated preset and player count, ``network``
a valid :class:`~agents.policy.NetworkShape`, ``model`` a mapping of finite tensors).
Before anything is unpacked, the archive's members must declare no more bytes than the file holds (``torch.save``
stores them uncompressed: a deflated bomb is refused from its directory); after loading, every tensor in the file must
be whole (:func:`check_tensors`: dense, contiguous, filling its own storage, sharing it with no other tensor), so an
expanded or strided view cannot stand for more bytes than the file holds.
:func:`policy_from_checkpoint` compares the tensors the declared shape needs (computed on PyTorch's ``meta`` device,
which allocates nothing) with the tensors in the file before it builds the network, so a file declaring a huge
network cannot make it allocate more than the weights the file holds. A training checkpoint's ``train`` and
``optimizer`` entries are checked by ``train.checkpoints.check_train_state`` before a resume uses them.

Checkpoints are written atomically (:func:`agents.files.atomic_write`): a temporary file in the same folder, flushed
to disk, then renamed over the target, so a reader (or a run killed mid-write) sees the old file or the new one, never
part; a symbolic link stays a link (its target is replaced), a device or a FIFO is written directly.

Devices. A checkpoint holds CPU tensors whatever device the network trained on (:func:`save_checkpoint` copies a
GPU's tensors across, :func:`agents.device.to_cpu`), and is always read onto the CPU (``torch.load`` with
``map_location="cpu"``), where every check above runs; the network built from it then goes to the device asked for
(``device=`` of :func:`policy_from_checkpoint` and :func:`load_checkpoint_agent`; :mod:`agents.device`), so a file
written on one device loads on any other.
"""

from __future__ import annotations

import math
import pickle
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from cassino_env.errors import excerpt, shown_name
from cassino_env.obs import DEFAULT_BLOCKS, ObsBlocksError, check_blocks, encode_view, obs_size
from cassino_env.rules import RuleSet, make_rules
from cassino_env.version import ENV_NAME

from .device import resolve_device, to_cpu
from .files import OutputPathError as OutputPathError  # re-exported: the writer's names of before
from .files import atomic_copy as atomic_copy
from .files import atomic_write
from .policy import CassinoPolicy, MoveBatch, NetworkShape, sample_actions
from .provenance import check_provenance, make_provenance

#: Version of the observation/reward/move-table behaviour a policy depends on: :data:`cassino_env.version.ENV_NAME`.
ENV_VERSION = ENV_NAME
#: The ``format`` tag and version of checkpoint files written by :func:`save_checkpoint`.
FORMAT = "cassino-ppo-checkpoint"
FORMAT_VERSION = 1


class CheckpointError(ValueError):
    """A checkpoint file that cannot be used: the message names the file and the problem."""


class PPOAgent:
    """A :class:`CassinoPolicy` as an Agent: acts for B games at once, with no gradient.

    Args:
        policy: the network.
        deterministic: play the most probable legal move (True) or sample from the policy with the caller's rng.
        name: the agent's name in tables.
        rules: the rules it plays (needed by a network with move features, and by ``endgame``).
        endgame: play the last round of a two-seat deal exactly (:mod:`agents.endgame`; the network's move is kept
            wherever it is as good as the best). ``checkpoint:`` and ``pretrained:`` agents have it on.
        blocks: the observation blocks the network reads (:mod:`cassino_env.obs`; None: ``DEFAULT_BLOCKS``; a
            checkpoint's ``obs_blocks``).
        env_blocks: the blocks of the observations it will be handed (None: ``DEFAULT_BLOCKS``, every env's
            default). When they are not ``blocks`` (or the observation has another length), the agent encodes its
            own observation from ``obs["view"]`` (:func:`cassino_env.obs.encode_view`).
    """

    def __init__(self, policy: CassinoPolicy, deterministic: bool = True, name: str = "ppo",
                 rules: RuleSet | None = None, endgame: bool = False, blocks: Sequence[str] | None = None,
                 env_blocks: Sequence[str] | None = None) -> None:
        self.blocks = check_blocks(blocks)
        self.env_blocks = check_blocks(env_blocks)
        if self.blocks != self.env_blocks and rules is None:
            raise ValueError("a network on other observation blocks than the default needs the rules it plays: "
                             "PPOAgent(..., rules=...)")
        self.policy = policy.eval()
        self.deterministic = deterministic
        self.name = name
        self.rules = rules
        if endgame and rules is None:
            raise ValueError("endgame play needs the rules the agent plays: PPOAgent(..., rules=..., endgame=True)")
        self.endgame = bool(endgame)
        self.featurizer = None
        if policy.shape.move_features:
            if rules is None:
                raise ValueError("a network with move features needs the rules it plays: PPOAgent(..., rules=...)")
            from .features import NUM_MOVE_FEATURES, MoveFeaturizer

            if policy.shape.move_features != NUM_MOVE_FEATURES:
                raise ValueError(f"the network reads {policy.shape.move_features} move features, this code computes "
                                 f"{NUM_MOVE_FEATURES}")
            self.featurizer = MoveFeaturizer(rules)

    @torch.no_grad()
    def act(self, obs: dict[str, Any], rng: np.random.Generator, feats: np.ndarray | None = None) -> np.ndarray:
        """int64[B]: a legal move index per game (see :class:`agents.base.Agent`).

        Args:
            obs: the vector-env observation dict of B games.
            rng: the caller's generator.
            feats: float32[B, M, F], the move features of ``obs`` when the caller has computed them already
                (:class:`agents.features.MoveFeaturizer`); computed here when None and the network reads them.
        """
        if len(obs["action_mask"]) == 0:
            return np.zeros(0, dtype=np.int64)
        if feats is None and self.featurizer is not None:
            feats = self.featurizer(obs)
        obs = self.own_observation(obs)
        logits = self.policy.logits(MoveBatch.from_obs(obs, feats))
        actions = sample_actions(logits, rng, self.deterministic).astype(np.int64)
        if self.endgame:
            from .endgame import play_endgame

            actions = play_endgame(self.rules, obs, actions)
        return actions

    @property
    def device(self) -> torch.device:
        """The device the network runs on (:attr:`agents.policy.CassinoPolicy.device`)."""
        return self.policy.device

    def to(self, device: torch.device | str) -> PPOAgent:
        """Move the network to ``device`` (a name of :mod:`agents.device`, checked, or a ``torch.device``);
        returns the agent. The observations stay numpy arrays; each ``act`` moves its batch across once.

        Raises:
            agents.device.DeviceError: a device name torch cannot see.
        """
        self.policy.to(device if isinstance(device, torch.device) else resolve_device(device))
        return self

    def own_observation(self, obs: dict[str, Any]) -> dict[str, Any]:
        """``obs`` with ``observation`` of this network's blocks: as given when they are ``env_blocks`` (and the
        length fits), else encoded from ``obs["view"]`` (what search agents over this network also use).

        Raises:
            ValueError: the observation is of other blocks and ``obs`` has no ``view`` (or the agent no rules).
        """
        width = np.shape(obs["observation"])[-1]
        if self.blocks == self.env_blocks and width == self.policy.shape.obs_dim:
            return obs
        if "view" not in obs or self.rules is None:
            raise ValueError(f"{self.name} reads observations of blocks {list(self.blocks)} (length "
                             f"{self.policy.shape.obs_dim}), the env gives length {width}: make the env with "
                             "with_view=True (the agent encodes its own) or with blocks= of the agent")
        return {**obs, "observation": encode_view(obs["view"], self.rules, self.blocks)}


def save_checkpoint(path: str | Path, policy: CassinoPolicy, rules: RuleSet, *,
                    optimizer: torch.optim.Optimizer | None = None, train: dict[str, Any] | None = None,
                    blocks: Sequence[str] | None = None, provenance: dict[str, Any] | None = None) -> Path:
    """Write a checkpoint (format in the module docstring) atomically (:func:`atomic_write`); ``blocks``: the
    observation blocks the policy reads (None: ``DEFAULT_BLOCKS``), recorded as ``obs_blocks``; ``provenance``: its
    record (None: :func:`agents.provenance.make_provenance`'s common fields).

    Returns:
        The path written.

    Raises:
        CheckpointError: a head that reads card classes whose maps are not those of ``rules`` and ``blocks`` (the
            file would never load); nothing is written.
    """
    path = Path(path)
    if policy.shape.early_rounds_input == "classes":
        _check_card_classes(policy, {"rules": rules.to_dict(), "obs_blocks": list(check_blocks(blocks))}, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "env_version": ENV_VERSION,
        "preset": rules.preset,
        "num_players": rules.num_players,
        "rules": rules.to_dict(),
        "network": policy.shape.to_dict(),
        "obs_blocks": list(check_blocks(blocks)),
        "model": policy.state_dict(),
        "optimizer": None if optimizer is None else optimizer.state_dict(),
        "train": train,
        "provenance": make_provenance() if provenance is None else provenance,
    }
    try:
        check_provenance(payload["provenance"])
    except ValueError as exc:
        raise CheckpointError(f"{shown_name(path)}: {exc}") from None
    for key in ("model", "optimizer", "train"):  # the file holds CPU tensors whatever the device (module docstring)
        payload[key] = to_cpu(payload[key])
    return atomic_write(path, lambda f: torch.save(payload, f))


def read_checkpoint(path: str | Path, rules: RuleSet | None = None) -> dict[str, Any]:
    """Load and validate a checkpoint dict without executing code from the file (``weights_only=True``).

    Args:
        path: the checkpoint file.
        rules: when given, the checkpoint must be for the same preset, player count and rule switches.

    Raises:
        CheckpointError: naming the file and the problem (missing, corrupt, not a checkpoint, another env
            version, preset, player count or rule switch).
    """
    path = Path(path)
    shown = shown_name(path)  # one line: quoted when unprintable, cut past 200 characters
    try:
        is_dir, is_file = path.is_dir(), path.is_file()
    except OSError as exc:  # a name too long, no permission: not a file that can be read
        raise CheckpointError(f"{shown}: no such checkpoint file ({exc.strerror or exc})") from None
    if is_dir:
        raise CheckpointError(f"{shown}: a folder, not a checkpoint file (a run folder keeps them in checkpoints/)")
    if not is_file:
        raise CheckpointError(f"{shown}: no such checkpoint file")
    try:  # torch.save writes a zip archive; anything else, or a member whose CRC fails, is corrupt or truncated
        with zipfile.ZipFile(path) as archive:
            _check_declared_sizes(archive, path)  # before anything is unpacked
            bad = archive.testzip()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        if isinstance(exc, CheckpointError):
            raise
        raise CheckpointError(f"{shown}: not a readable checkpoint (not a torch.save archive: corrupt or truncated?): "
                              f"{exc}") from None
    if bad is not None:
        raise CheckpointError(f"{shown}: corrupt checkpoint: the CRC of its member {bad!r} does not match")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:  # weights_only met something other than tensors and plain containers
        detail = str(exc).partition("WeightsUnpickler error:")[2].strip().split("\n")[0] or str(exc).split("\n")[0]
        raise CheckpointError(f"{shown}: refused to load: it holds more than plain data (tensors, numbers, strings, "
                              f"lists, dicts), and loading it could run code ({detail})") from None
    except (RuntimeError, EOFError, zipfile.BadZipFile, OSError, ValueError, KeyError) as exc:
        raise CheckpointError(f"{shown}: not a readable checkpoint (corrupt or truncated?): "
                              f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CheckpointError(f"{shown}: not a cassino PPO checkpoint (no format={FORMAT!r} field)")
    if data.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(f"{shown}: checkpoint format version {data.get('format_version')!r}, this code reads "
                              f"version {FORMAT_VERSION}")
    if data.get("env_version") != ENV_VERSION:
        raise CheckpointError(f"{shown}: made for environment {data.get('env_version')!r}, this code runs "
                              f"{ENV_VERSION!r}; observations or rewards differ, retrain the policy")
    for key in ("preset", "num_players", "rules", "network", "model"):
        if key not in data:
            raise CheckpointError(f"{shown}: checkpoint has no {key!r} field")
    check_tensors(data, path)
    _check_fields(data, path)
    if rules is not None:
        if data["preset"] != rules.preset or data["num_players"] != rules.num_players:
            raise CheckpointError(f"{shown}: made for preset {data['preset']!r} with {data['num_players']} players, "
                                  f"not {rules.preset!r} with {rules.num_players}")
        theirs, ours = data["rules"], rules.to_dict()
        diff = sorted(k for k in set(theirs) | set(ours) if theirs.get(k) != ours.get(k))
        if diff:
            k = diff[0]
            raise CheckpointError(f"{shown}: made for rule switch {k}={theirs.get(k)!r}, not {ours.get(k)!r}")
    made = make_rules(data["rules"])  # valid (checked above)
    if made.preset != data["preset"] or made.num_players != data["num_players"]:
        raise CheckpointError(f"{shown}: rules are for preset {made.preset!r} with {made.num_players} players, but the "
                              f"checkpoint says preset {data['preset']!r} with {data['num_players']}")
    return data


#: The floating-point dtypes a checkpoint's weights may have (the network's own is float32).
_FLOATS = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def _check_declared_sizes(archive: zipfile.ZipFile, path: Path) -> None:
    """The sizes the archive's members declare, before any is unpacked: ``torch.save`` stores its members
    uncompressed, so together they declare no more bytes than the file holds; a compressed member (which could
    unpack to gigabytes) is refused without being read."""
    held = path.stat().st_size
    declared = 0
    for info in archive.infolist():
        declared += info.file_size
        if info.compress_type != zipfile.ZIP_STORED or declared > held:
            raise CheckpointError(f"{path}: not a torch.save checkpoint: its member {excerpt(info.filename)} is "
                                  f"compressed ({info.file_size:,} bytes declared, {info.compress_size:,} stored; "
                                  f"the file holds {held:,}): torch.save stores members uncompressed, and an archive "
                                  "that unpacks to more than its size is refused before it is unpacked")


def _tensors(data: Any) -> Iterator[tuple[str, torch.Tensor]]:
    """(dotted name, tensor) for every tensor in a loaded checkpoint, depth first, each container visited once (a
    pickle may repeat or nest references)."""
    seen: set[int] = set()
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        where, x = stack.pop()
        if isinstance(x, torch.Tensor):
            yield where, x
        elif isinstance(x, (dict, list, tuple)) and id(x) not in seen:
            seen.add(id(x))
            items = x.items() if isinstance(x, dict) else enumerate(x)
            stack.extend((f"{where}.{k}" if where else str(k), v) for k, v in reversed(list(items)))


def check_tensors(data: Any, path: str | Path = "<checkpoint>") -> None:
    """Every tensor of a loaded checkpoint (model, optimiser and training state) is whole: a dense CPU tensor,
    contiguous, that fills its own storage exactly (``numel * element_size`` bytes from offset 0) and shares it with
    no other tensor. A tensor saved as a view (``torch.zeros(1).expand(...)``, a strided, overlapping or sliced view,
    two names over one storage) is refused, so a file can never make the loader (or the network built from it)
    allocate more than the bytes it holds.

    Raises:
        CheckpointError: naming the file and the tensor (``model.NAME``, ``optimizer.state...``).
    """
    owners: dict[int, str] = {}
    for where, t in _tensors(data):
        if t.layout != torch.strided or t.is_quantized or t.is_nested or t.device.type != "cpu":
            raise CheckpointError(f"{path}: {where}: a {t.layout} {t.dtype} tensor on {t.device}; a checkpoint holds "
                                  "dense tensors only")
        try:
            storage = t.untyped_storage()
            stored = int(storage.nbytes())
        except (RuntimeError, NotImplementedError) as exc:
            raise CheckpointError(f"{path}: {where}: a tensor without plain storage ({exc})") from None
        need = int(t.numel()) * int(t.element_size())
        if not t.is_contiguous() or t.storage_offset() != 0 or stored != need:
            raise CheckpointError(
                f"{path}: {where}: {t.dtype} {tuple(t.shape)} ({need:,} bytes) is a view of a storage of {stored:,} "
                f"bytes (strides {t.stride()}, offset {t.storage_offset()}); checkpoint tensors are whole and "
                "contiguous, so that a file cannot make the loader allocate more than it holds")
        if stored:
            ptr = int(storage.data_ptr())
            if ptr in owners:
                raise CheckpointError(f"{path}: {where}: shares its storage with {owners[ptr]}; checkpoint tensors "
                                      "each hold their own")
            owners[ptr] = where


def _check_fields(data: dict[str, Any], path: Path) -> None:
    """The types of a checkpoint's fields, and the rules they state (see :func:`read_checkpoint`)."""
    from cassino_env.errors import CassinoError

    if not isinstance(data["preset"], str):
        raise CheckpointError(f"{path}: preset must be a preset name, got {data['preset']!r}")
    n = data["num_players"]
    if isinstance(n, bool) or not isinstance(n, int):
        raise CheckpointError(f"{path}: num_players must be an integer, got {n!r}")
    if not isinstance(data["rules"], dict):
        raise CheckpointError(f"{path}: rules must be a mapping of rule switches, got {type(data['rules']).__name__}")
    try:
        make_rules(data["rules"])
    except (CassinoError, ValueError, TypeError, KeyError) as exc:
        raise CheckpointError(f"{path}: rules: not a valid rule set: {exc}") from None
    net = data["network"]
    if not isinstance(net, dict):
        raise CheckpointError(f"{path}: network must be a mapping (agents.policy.NetworkShape), got "
                              f"{type(net).__name__}")
    known = set(NetworkShape.__dataclass_fields__)
    unknown = sorted(str(k) for k in net if k not in known)
    if unknown or "obs_dim" not in net:
        field = f"network.{unknown[0]}" if unknown else "network.obs_dim"
        raise CheckpointError(f"{path}: {field}: {'unknown field' if unknown else 'missing'} (fields are "
                              f"{', '.join(sorted(known))})")
    try:
        NetworkShape(**net)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"{path}: bad network shape {net!r}: {exc}") from None
    model = data["model"]
    if not isinstance(model, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                              for k, v in model.items()):
        raise CheckpointError(f"{path}: model must be a mapping of tensor names to tensors (a state_dict)")
    for name, tensor in model.items():
        if tensor.is_floating_point() and tensor.dtype not in _FLOATS:  # float8: no isfinite, and no network uses it
            raise CheckpointError(f"{path}: model.{name}: a {tensor.dtype} tensor; weights are "
                                  f"{', '.join(str(d) for d in _FLOATS)}")
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise CheckpointError(f"{path}: model.{name}: corrupt weights: NaN or infinite values")
    for key in ("optimizer", "train"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            raise CheckpointError(f"{path}: {key} must be a mapping or null, got {type(data[key]).__name__}")
    if data.get("provenance") is not None:
        try:
            check_provenance(data["provenance"])
        except ValueError as exc:
            raise CheckpointError(f"{path}: {exc}") from None
    checkpoint_blocks(data, path)


def checkpoint_blocks(data: dict[str, Any], path: str | Path = "<checkpoint>") -> tuple[str, ...]:
    """The observation blocks a checkpoint dict was trained on: its ``obs_blocks``, or ``DEFAULT_BLOCKS`` for a
    checkpoint that predates the field.

    Raises:
        CheckpointError: ``obs_blocks`` is not a list of distinct block names known here (a block registered in
            the training session must be registered again: :func:`cassino_env.obs.register_block`).
    """
    blocks = data.get("obs_blocks")
    if blocks is None:
        return DEFAULT_BLOCKS
    if not isinstance(blocks, list | tuple) or len(blocks) > 1000:
        raise CheckpointError(f"{path}: obs_blocks must be a list of observation block names, got "
                              f"{type(blocks).__name__}")
    try:
        return check_blocks(list(blocks))
    except ObsBlocksError as exc:
        raise CheckpointError(f"{path}: obs_blocks: {exc} (a block added with cassino_env.obs.register_block must be "
                              "registered before the checkpoint loads)") from None


def expected_tensors(shape: NetworkShape) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
    """Name -> (shape, dtype) of the ``state_dict`` of a :class:`CassinoPolicy` of ``shape``, computed on PyTorch's
    ``meta`` device: nothing is allocated, whatever the sizes."""
    with torch.device("meta"):
        net = CassinoPolicy.from_shape(shape)
    return {k: (tuple(v.shape), v.dtype) for k, v in net.state_dict().items()}


def policy_from_checkpoint(data: dict[str, Any], path: str | Path = "<checkpoint>",
                           expected_shape: NetworkShape | None = None,
                           device: torch.device | str | None = None) -> CassinoPolicy:
    """Build the network a validated checkpoint dict describes and load its weights, once
    :func:`check_network` has passed (so nothing bigger than the file's tensors is allocated). The network is built
    and checked on the CPU, then moved to ``device`` (None: left on the CPU; a name of :mod:`agents.device`).

    Raises:
        agents.device.DeviceError: a device name torch cannot see (checked before anything is built).
        CheckpointError: the network shape differs from ``expected_shape`` or from the environment's observation
            length, or the weights do not fit the stored shape.
    """
    target = None if device is None or isinstance(device, torch.device) else resolve_device(device)
    shape = check_network(data, path, expected_shape)
    policy = CassinoPolicy.from_shape(shape)
    try:
        policy.load_state_dict(data["model"])
    except (RuntimeError, KeyError, TypeError) as exc:
        raise CheckpointError(f"{path}: weights do not fit network shape {shape.to_dict()}: {exc}") from None
    for name, tensor in policy.state_dict().items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise CheckpointError(f"{path}: corrupt weights: {name} holds NaN or infinite values")
    if shape.early_rounds_input == "classes":
        _check_card_classes(policy, data, path)
    if device is not None:
        policy.to(device if target is None else target)
    return policy


def _check_card_classes(policy: CassinoPolicy, data: dict[str, Any], path: str | Path) -> None:
    """A head that reads cards by class must sum them as its rules and observation blocks say (the maps are
    stored with the weights; a file whose maps differ, tampered or of other rules, is refused)."""
    from cassino_env.symmetry import SymmetryError, card_classes, class_index

    rules = make_rules(data["rules"])
    try:
        want = (class_index(rules, checkpoint_blocks(data, path)), card_classes(rules))
    except SymmetryError as exc:
        raise CheckpointError(f"{path}: network.early_rounds_input: 'classes' does not fit these rules: "
                              f"{exc}") from None
    for name, expected in zip(("er_obs_index", "er_card_class"), want, strict=True):
        if not np.array_equal(getattr(policy, name).cpu().numpy(), expected):
            raise CheckpointError(f"{path}: {name}: the card classes stored with the weights are not those of the "
                                  f"checkpoint's rules ({rules.preset}) and observation blocks")


def check_network(data: dict[str, Any], path: str | Path = "<checkpoint>",
                  expected_shape: NetworkShape | None = None) -> NetworkShape:
    """The network shape of a checkpoint dict, checked without allocating anything: a valid
    :class:`~agents.policy.NetworkShape`, equal to ``expected_shape`` when given, reading the observation length of
    its rules, and whose tensors (:func:`expected_tensors`, on the meta device) are exactly the file's, by name,
    shape and dtype.

    Raises:
        CheckpointError: naming the file and the field.
    """
    try:
        shape = NetworkShape(**data["network"])
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"{path}: bad network shape {data['network']!r}: {exc}") from None
    if expected_shape is not None and shape != expected_shape:
        raise CheckpointError(f"{path}: network shape {shape.to_dict()} differs from the expected "
                              f"{expected_shape.to_dict()}")
    try:
        rules = make_rules(data["rules"])
    except (ValueError, TypeError, KeyError) as exc:
        raise CheckpointError(f"{path}: rules: not a valid rule set: {exc}") from None
    blocks = checkpoint_blocks(data, path)
    need = obs_size(rules.num_players, rules.num_sides, blocks)
    if shape.obs_dim != need:
        raise CheckpointError(f"{path}: network reads observations of length {shape.obs_dim}, the environment "
                              f"gives {need} (observation blocks {', '.join(blocks)})")
    if shape.last_round or shape.early_rounds:
        from .policy import last_round_gate

        if "last_round_gate" not in data["network"]:
            raise CheckpointError(f"{path}: network.last_round_gate: missing (a network with a last-round or "
                                  "earlier-rounds head names the observation entry that tells the last round)")
        field, head = ("last_round", "a last-round") if shape.last_round else ("early_rounds", "an earlier-rounds")
        try:
            gate = last_round_gate(rules.num_players, rules.num_sides, blocks)
        except ValueError:
            raise CheckpointError(f"{path}: network.{field}: {head} head needs the observation's progress block (its "
                                  f"stock size tells the round), and the observation blocks {', '.join(blocks)} "
                                  "have none") from None
        if shape.last_round_gate != gate:
            raise CheckpointError(f"{path}: network.last_round_gate: must be {gate}, the stock-size entry of the "
                                  f"progress block in these observation blocks, got {shape.last_round_gate} (the "
                                  "heads would not tell the last round from the others)")
    if shape.move_features:
        from .features import NUM_MOVE_FEATURES

        if shape.move_features != NUM_MOVE_FEATURES:
            raise CheckpointError(f"{path}: network reads {shape.move_features} move features, this code computes "
                                  f"{NUM_MOVE_FEATURES} (agents.features.MOVE_FEATURES)")
    # The declared shape against the tensors in the file, before anything is allocated: a file cannot make the
    # network bigger than the weights it holds.
    try:
        want = expected_tensors(shape)
    except (RuntimeError, ValueError, OverflowError) as exc:
        raise CheckpointError(f"{path}: network shape {shape.to_dict()} cannot be built: {exc}") from None
    except TypeError:  # torch cannot even unpack the size (past int64), its message a C++ trace
        raise CheckpointError(f"{path}: network shape {shape.to_dict()} cannot be built: a size past 64-bit "
                              "integers") from None
    model = data.get("model")
    if not isinstance(model, dict) or not all(isinstance(t, torch.Tensor) for t in model.values()):
        raise CheckpointError(f"{path}: model must be a mapping of tensor names to tensors (a state_dict)")
    declared = sum(math.prod(s) for s, _ in want.values())
    held = sum(int(t.numel()) for t in model.values() if isinstance(t, torch.Tensor))
    if set(model) != set(want):
        odd = sorted(set(model) ^ set(want))[0]
        raise CheckpointError(f"{path}: weights do not fit network shape {shape.to_dict()}: tensor {odd!r} is "
                              f"{'missing' if odd in want else 'not part of that network'}")
    for name, (size, dtype) in want.items():
        t = model[name]
        if tuple(t.shape) != size or t.dtype != dtype:
            raise CheckpointError(f"{path}: weights do not fit network shape {shape.to_dict()} (it declares "
                                  f"{declared:,} parameters, the file holds {held:,}): model.{name} is "
                                  f"{t.dtype} {tuple(t.shape)}, the shape needs {dtype} {size}")
    return shape


def load_checkpoint_agent(path: str, rules: RuleSet, deterministic: bool = True, endgame: bool = True, *,
                          device: torch.device | str | None = None) -> PPOAgent:
    """The Agent of a checkpoint, for evaluation (``checkpoint:PATH`` specs) and play.

    Args:
        path: a checkpoint written by ``cassino train``.
        rules: the rules it will play; the checkpoint must have been trained for them.
        deterministic: play the most probable move (default) or sample.
        endgame: play the last round of a two-seat deal exactly (default; :class:`PPOAgent`); False: the network
            alone.
        device: where the network runs (a name of :mod:`agents.device`: ``auto``, ``cpu``, ``cuda``, ...; None:
            the CPU). The file is read onto the CPU whatever it is.

    Raises:
        CheckpointError: naming the file and the problem (see :func:`read_checkpoint`).
        agents.device.DeviceError: a device name torch cannot see (before the file is read).
    """
    if device is not None and not isinstance(device, torch.device):
        device = resolve_device(device)
    data = read_checkpoint(path, rules)
    return PPOAgent(policy_from_checkpoint(data, path, device=device), deterministic=deterministic,
                    name=checkpoint_name(path), rules=rules, endgame=endgame, blocks=checkpoint_blocks(data, path))


def checkpoint_name(path: str | Path) -> str:
    """The name a checkpoint agent goes by in reports and at the table: ``checkpoint:PATH``, with PATH relative to
    the current folder when the file lies inside it and as given otherwise, so two runs' ``final.pt`` stay apart. It
    is the agent spec of that same agent (:func:`agents.registry.make_agent`): a name copied from a printed table
    works in ``cassino eval --agents`` run from the same folder.

    >>> checkpoint_name("runs/a/checkpoints/final.pt")
    'checkpoint:runs/a/checkpoints/final.pt'
    >>> checkpoint_name(Path.cwd() / "runs" / "b" / "final.pt")
    'checkpoint:runs/b/final.pt'
    """
    path = Path(path)
    try:
        path = path.resolve().relative_to(Path.cwd().resolve()) if path.is_absolute() else path
    except ValueError:  # outside the current folder: keep the path as given
        pass
    return f"checkpoint:{path.as_posix()}"
