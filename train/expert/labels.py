"""Expert iteration's labels: :class:`Labels` (the labelled decisions of an iteration), their files (written,
checked from their headers, read, joined) and their suit mirror (``augment_suits``)."""

from __future__ import annotations

import json
import math
import typing
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cassino_env.errors import shown_name
from cassino_env.rules import RuleSet, make_rules
from train import config
from train.config import ConfigError

#: Each label array's dtype and its shape after the N rows: "W" the move columns, "D" the observation length, "F"
#: the move features, "C" the separate critic's extra input (:class:`Labels`).
LABEL_ARRAYS: dict[str, tuple[str, tuple[str, ...]]] = {
    "obs": ("float32", ("D",)), "kind": ("int8", ("W",)), "card": ("int8", ("W",)), "value": ("int8", ("W",)),
    "cards": ("int64", ("W",)), "mask": ("bool", ("W",)), "feat": ("float32", ("W", "F")),
    "crit": ("float32", ("C",)), "q": ("float32", ("W",)), "prior": ("float32", ("W",)), "ret": ("float32", ()),
}


#: Per-label arrays of :class:`Labels`, in file order.
LABEL_ROWS = tuple(LABEL_ARRAYS)
#: The label file's record of its rules (a 0-d string array: the JSON of :meth:`RuleSet.to_dict`).
LABEL_RULES = "rules"


@dataclass
class Labels:
    """The labelled decisions of one iteration: N rows, ``W`` move columns (the widest legal list among them; the
    legal moves are the first columns of each row).

    Attributes:
        obs: float32[N, D]. kind, card, value: int8[N, W], the move table (-1 past the legal moves for kind and card).
        cards: int64[N, W], card bit sets. mask: bool[N, W], the legal moves. feat: float32[N, W, F] or None.
        crit: float32[N, C] or None, the full state the separate critic reads.
        q: float32[N, W], the search's value of each legal move (points; NaN past them).
        prior: float32[N, W], the network's probabilities when it played (for the awr target).
        ret: float32[N], the deal margin the seat's side scored in the end (points, unscaled).
        points: dict, bot name -> float64[E], the network's side's deal margins in games against that bot.
        label_s: seconds spent searching.
    """

    obs: np.ndarray
    kind: np.ndarray
    card: np.ndarray
    value: np.ndarray
    cards: np.ndarray
    mask: np.ndarray
    feat: np.ndarray | None
    crit: np.ndarray | None
    q: np.ndarray
    prior: np.ndarray
    ret: np.ndarray
    points: dict[str, np.ndarray] = field(default_factory=dict)
    label_s: float = 0.0

    def __len__(self) -> int:
        return len(self.ret)

    def save(self, path: Path, rules: RuleSet | None = None) -> None:
        """Write the rows to ``path`` (npz, atomically); with ``rules``, also the rule set they were played under
        (an array ``rules``: the JSON of :meth:`cassino_env.rules.RuleSet.to_dict`), which :meth:`load` checks."""
        from agents.ppo_agent import atomic_write

        arrays = {k: getattr(self, k) for k in LABEL_ROWS if getattr(self, k) is not None}
        if rules is not None:
            arrays[LABEL_RULES] = np.array(json.dumps(rules.to_dict(), sort_keys=True))
        atomic_write(path, lambda f: np.savez(f, **arrays))

    @staticmethod
    def load(path: Path, shape: Any = None, field: str = "labels", rules: RuleSet | None = None) -> Labels:
        """Read :meth:`save`'s file; with ``shape`` (the network's :class:`agents.policy.NetworkShape`) its arrays
        are checked first (:func:`check_label_file`); with ``rules``, a file that records other rules is refused
        (files written before the record was added, or without ``rules``, record none and are not checked).

        Every file is checked before its arrays are read (:func:`array_headers`: what they unpack to) and after
        (:func:`check_label_rows`: the values).

        Raises:
            ConfigError: naming ``field`` and the file, one that cannot be read, unpacks to more than its headers
                say or than :data:`MAX_UNPACK_RATIO` allows, holds values no search gives (see
                :func:`check_label_rows`), does not fit ``shape``, or holds labels of other rules than ``rules``.
        """
        if shape is not None:
            check_label_file(path, shape, field)
        else:
            array_headers(path, field)  # the sizes the arrays unpack to, before any is read
        try:
            with np.load(path, allow_pickle=False) as z:
                rows = {k: (z[k] if k in z.files else None) for k in LABEL_ROWS}
                recorded = str(z[LABEL_RULES][()]) if LABEL_RULES in z.files else None
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise ConfigError(f"{field}: {path}: not a readable label file: {exc}", field=field) from None
        check_label_rows(rows, path, field)
        if rules is not None and recorded is not None:
            try:
                theirs = json.loads(recorded)
                if not isinstance(theirs, dict):
                    raise TypeError(f"a JSON {type(theirs).__name__}, not an object of rule switches")
                other = make_rules(theirs)
            except (ValueError, TypeError, RecursionError) as exc:
                raise ConfigError(f"{field}: {path}: its rules record is not a rule set: {str(exc)[:200]}",
                                  field=field) from None
            if other != rules:
                ours, differ = rules.to_dict(), other.to_dict()
                switch = next((k for k in ours if ours[k] != differ.get(k)), "preset")
                raise ConfigError(f"{field}: {path} holds labels of {other.preset} with {other.num_players} players"
                                  + (f" ({switch}={differ.get(switch)!r}, this run {ours[switch]!r})"
                                     if (other.preset, other.num_players) == (rules.preset, rules.num_players)
                                     else "")
                                  + f"; this run plays {rules.preset} with {rules.num_players} players", field=field)
        return Labels(**rows)


#: The most a label file's arrays may unpack to, as a multiple of its size on disk (:meth:`Labels.save` stores them
#: uncompressed, 1x; ``np.savez_compressed`` of real labels gives about 30x), above :data:`UNPACK_FLOOR`.
MAX_UNPACK_RATIO = 200
#: Bytes a label file's arrays may always unpack to, whatever its size on disk.
UNPACK_FLOOR = 64 << 20
#: The largest ``rules`` record (its JSON is about 2 kB).
MAX_RULES_BYTES = 1 << 20
#: The largest move value or outcome a label may hold, in points (a deal is worth tens of points).
MAX_POINTS = 1e6
#: Move kinds (trail, capture, build) and card ids the network embeds (agents.policy).
_NUM_KINDS, _NUM_CARDS = 3, 52


def array_headers(path: Path, field: str) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """The shape and dtype of each label array of a label file (:data:`LABEL_ARRAYS`), read from the ``.npy``
    headers alone; every array that would be read (those and ``rules``) must unpack to exactly what its header
    declares, and all of them together to at most :data:`MAX_UNPACK_RATIO` times the file's size on disk (or
    :data:`UNPACK_FLOOR`), so a header claiming absurd row counts or a decompression bomb is refused before any
    memory is taken for it.

    Raises:
        ConfigError: naming ``field`` and the file.
    """
    def bad(problem: str) -> ConfigError:
        return ConfigError(f"{field}: {path}: {problem}", field=field)

    heads: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    declared = 0
    try:
        on_disk = Path(path).stat().st_size
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                name = info.filename.removesuffix(".npy")
                if name not in LABEL_ARRAYS and name != LABEL_RULES:
                    continue
                with z.open(info) as f:
                    version = np.lib.format.read_magic(f)
                    if version == (1, 0):
                        shp, _, dtype = np.lib.format.read_array_header_1_0(f)
                    else:
                        shp, _, dtype = np.lib.format.read_array_header_2_0(f)
                    header_bytes = f.tell()
                shp, dtype = tuple(shp), np.dtype(dtype)
                data_bytes = math.prod(shp) * dtype.itemsize
                if info.file_size != header_bytes + data_bytes:
                    raise bad(f"array {name!r}: its header declares {dtype} {shp} ({data_bytes:,} bytes) but the "
                              f"archive holds {max(info.file_size - header_bytes, 0):,} bytes for it: a damaged or "
                              "forged label file")
                if name == LABEL_RULES:
                    if shp != () or dtype.kind != "U" or data_bytes > MAX_RULES_BYTES:
                        raise bad(f"array {name!r} is {dtype} {shp}: a label file's rules record is one string of "
                                  f"at most {MAX_RULES_BYTES:,} bytes")
                else:
                    heads[name] = (shp, dtype)
                declared += info.file_size
    except ConfigError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise bad(f"not a label file (a .npz of the arrays {', '.join(LABEL_ARRAYS)}): {exc}") from None
    limit = max(UNPACK_FLOOR, MAX_UNPACK_RATIO * on_disk)
    if declared > limit:
        raise bad(f"its arrays unpack to {declared:,} bytes from {on_disk:,} on disk, more than {MAX_UNPACK_RATIO}x "
                  f"(or {UNPACK_FLOOR >> 20} MiB) a label file may take: refused before reading (a decompression "
                  "bomb, or labels stored too compressed)")
    return heads


def check_label_rows(rows: dict[str, np.ndarray | None], path: Path, field: str) -> None:
    """Check the values of a label file's arrays (``rows``: :data:`LABEL_ROWS` to array or None), as read: the
    arrays :class:`Labels` needs are there with their dtypes, N rows and W move columns; every row has a legal
    move, its legal moves its first columns; on the legal moves ``kind`` is 0-2 and ``card`` 0-51 (the ids the
    network embeds), ``cards`` holds no bit past the 52 cards, ``q`` is a finite number of points (at most
    :data:`MAX_POINTS` either way) and ``prior`` a probability; ``ret`` is finite (and within :data:`MAX_POINTS`),
    ``obs``, ``feat`` and ``crit`` finite.

    Raises:
        ConfigError: naming ``field``, the file, the array and the first row at fault.
    """
    def bad(problem: str) -> ConfigError:
        return ConfigError(f"{field}: {path}: {problem}", field=field)

    missing = [k for k in LABEL_ROWS if rows.get(k) is None and k not in ("feat", "crit")]
    if missing:
        raise bad(f"array {missing[0]!r} is missing (a label file holds "
                  f"{', '.join(k for k in LABEL_ROWS if k not in ('feat', 'crit'))})")
    ret, mask = rows["ret"], rows["mask"]
    if ret.ndim != 1 or mask.ndim != 2:
        raise bad(f"arrays 'ret' and 'mask' are {ret.shape} and {mask.shape}: [N] and [N, W] are needed")
    n, width = ret.shape[0], mask.shape[1]
    for k, (dtype, dims) in LABEL_ARRAYS.items():
        a = rows.get(k)
        if a is None:
            continue
        lead = (n, *(width if d == "W" else a.shape[1 + i] if a.ndim > 1 + i else -1 for i, d in enumerate(dims)))
        if a.dtype != np.dtype(dtype) or a.shape != lead:
            raise bad(f"array {k!r} is {a.dtype} {a.shape}: {dtype} with {n} rows and {width} move columns is "
                      "needed (its arrays disagree)")

    def first_row(fault: np.ndarray) -> int:
        return int(np.flatnonzero(fault.reshape(len(fault), -1).any(axis=1))[0])

    none = ~mask.any(axis=1)
    if none.any():
        raise bad(f"row {first_row(none)} has no legal move (array 'mask'): a label is a decision between moves")
    gap = mask[:, 1:] & ~mask[:, :-1]
    if gap.any():
        r = first_row(gap)
        raise bad(f"row {r}: array 'mask' has a legal move in column {int(np.flatnonzero(gap[r])[0]) + 1} after an "
                  "illegal one: a row's legal moves are its first columns")
    checks = [
        ("kind", (rows["kind"] < 0) | (rows["kind"] >= _NUM_KINDS), f"a move kind outside 0-{_NUM_KINDS - 1}"),
        ("card", (rows["card"] < 0) | (rows["card"] >= _NUM_CARDS), f"a card id outside 0-{_NUM_CARDS - 1}"),
        ("cards", (rows["cards"] < 0) | (rows["cards"] >= 1 << _NUM_CARDS), "a card set with bits past the 52 cards"),
        ("q", ~(np.abs(rows["q"]) <= MAX_POINTS), "a move value that is not a finite number of points (NaN, inf, "
                                                  f"or beyond {MAX_POINTS:g})"),
        ("prior", ~((rows["prior"] >= 0) & (rows["prior"] <= 1 + 1e-3)), "a probability outside 0-1 (or NaN)"),
    ]
    for k, fault, what in checks:
        fault = fault & mask
        if fault.any():
            r = first_row(fault)
            c = int(np.flatnonzero(fault[r])[0])
            raise bad(f"row {r}, legal move {c}: array {k!r} holds {what} ({rows[k][r, c]!r})")
    if not (np.abs(ret) <= MAX_POINTS).all():
        r = first_row(~(np.abs(ret) <= MAX_POINTS))
        raise bad(f"row {r}: array 'ret' (the deal's outcome) is {ret[r]!r}, not a finite number of points")
    for k in ("obs", "feat", "crit"):
        a = rows.get(k)
        if a is not None and not np.isfinite(a).all():
            r = first_row(~np.isfinite(a))
            raise bad(f"row {r}: array {k!r} holds a value that is not finite (NaN or inf)")


def check_label_file(path: Path, shape: Any, field: str) -> None:
    """Check a label file (:meth:`Labels.save`) against the network that will train on it, from the arrays'
    headers alone (nothing is loaded): a zip of ``.npy`` arrays, every array of :data:`LABEL_ARRAYS` the network
    needs (``feat`` with move features, ``crit`` with a full-state critic) with its dtype, the same N rows, the same
    move columns, and the network's observation length, feature count and critic input.

    Raises:
        ConfigError: naming ``field``, the file and the array.
    """
    def bad(problem: str) -> ConfigError:
        return ConfigError(f"{field}: {path}: {problem}", field=field)

    heads = array_headers(path, field)
    sizes = {"D": shape.obs_dim, "F": shape.move_features, "C": shape.critic_dim}
    need = [k for k in LABEL_ARRAYS if not (k == "feat" and not sizes["F"]) and not (k == "crit" and not sizes["C"])]
    missing = [k for k in need if k not in heads]
    if missing:
        raise bad(f"array {missing[0]!r} is missing (a label file holds {', '.join(need)})")
    n = heads["ret"][0][0] if len(heads["ret"][0]) == 1 else None
    width = heads["mask"][0][1] if len(heads["mask"][0]) == 2 else None
    if n is None or width is None:
        raise bad(f"arrays 'ret' and 'mask' are {heads['ret'][0]} and {heads['mask'][0]}: [N] and [N, W] are needed")
    for k in need:
        dtype, dims = LABEL_ARRAYS[k]
        want = (n, *[width if d == "W" else sizes[d] for d in dims])
        got, got_dtype = heads[k]
        if n is None or width is None or got != want or got_dtype != np.dtype(dtype):
            what = {"D": f"the network's observation length {sizes['D']}", "F": f"its {sizes['F']} move features",
                    "C": f"its critic's {sizes['C']} full-state inputs"}
            fits = ", ".join(what[d] for d in dims if d in what)
            raise bad(f"array {k!r} is {got_dtype} {got}, the network needs {dtype} {want}"
                      + (f" ({fits}: labels of another preset, player count or network?)" if fits else ""))


def label_files(paths: typing.Iterable[str], field: str = "extra_labels") -> list[Path]:
    """Label files given as files, or as folders of ``iter_*.npz`` files (in name order).

    Raises:
        ConfigError: naming ``field``, a path that is neither.
    """
    out: list[Path] = []
    for p in map(Path, paths):
        files = (sorted(p.glob("iter_*.npz")) if config.looked_at(p.is_dir)
                 else [p] if config.looked_at(p.is_file) else [])
        if not files:
            raise ConfigError(f"{field}: {shown_name(p)} is neither a label file nor a folder of iter_*.npz "
                              "files", field=field)
        out.extend(files)
    return out


def load_label_paths(paths: typing.Iterable[str], shape: Any = None, rules: RuleSet | None = None) -> list[Labels]:
    """The :class:`Labels` of label files, or of every ``iter_*.npz`` in folders, in name order; with ``shape``
    each is checked against that network (:func:`check_label_file`), with ``rules`` against the run's rules (the
    files' own record, :meth:`Labels.load`).

    Raises:
        ConfigError: naming ``extra_labels``, a path that is neither, or a file that is not a label file fitting
            ``shape`` or ``rules``.
    """
    return [Labels.load(f, shape, "extra_labels", rules) for f in label_files(paths)]


def load_joined_labels(paths: typing.Iterable[str], shape: Any = None, rules: RuleSet | None = None,
                       field: str = "extra_labels") -> Labels | None:
    """The rows of label files (or folders of them, as :func:`load_label_paths`) in one :class:`Labels`, as
    :func:`join_labels` of them would be, but filled file by file into arrays made once: the memory it takes is
    the joined rows' and one file's (a million labels of the classic network are about 6 GB), not twice the
    rows'. None when ``paths`` is empty. With ``shape`` (the network that will train on them), ``feat`` and
    ``crit`` are kept only where the network reads them, so files made by networks with and without a separate
    critic join; without it, the files must agree on which of the two they hold.

    Raises:
        ConfigError: naming ``field``, as :func:`load_label_paths`; also a file named twice (directly or through
            its folder), files that hold no labels at all (0 rows), and, without ``shape``, files that disagree on
            which arrays they hold or lack one every label file has.
    """
    files = label_files(paths, field)
    if not files:
        return None
    seen: dict[Path, Path] = {}
    for f in files:
        first = seen.setdefault(f.resolve(), f)
        if first is not f:
            raise ConfigError(f"{field}: {shown_name(f)} is named twice (its labels would count twice)", field=field)
    heads = []
    for f in files:  # the headers first: nothing is allocated for files that would be refused
        if shape is not None:
            check_label_file(f, shape, field)
        else:
            array_headers(f, field)
        try:
            with np.load(f, allow_pickle=False) as z:
                heads.append((z["mask"].shape, {k for k in LABEL_ROWS if k in z.files}))
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
            raise ConfigError(f"{field}: {f}: not a readable label file: {exc}", field=field) from None
    optional = {"feat", "crit"}
    if shape is not None:  # the arrays this network reads (check_label_file checked that each file has them)
        keep = {k for k in LABEL_ROWS if k not in optional}
        keep |= {"feat"} if shape.move_features else set()
        keep |= {"crit"} if shape.critic_dim else set()
    else:
        keep = heads[0][1]
        for f, (_, has) in zip(files, heads, strict=True):
            if has != keep:
                k = sorted(has ^ keep)[0]
                raise ConfigError(f"{field}: {f}: array {k!r} is " + ("missing" if k in keep else "there")
                                  + f", unlike in {files[0]}", field=field)
        lacking = sorted(k for k in LABEL_ROWS if k not in optional and k not in keep)
        if lacking:
            raise ConfigError(f"{field}: {files[0]}: array {lacking[0]!r} is missing (every label file has "
                              f"{', '.join(k for k in LABEL_ROWS if k not in optional)})", field=field)
    n = sum(m for (m, _), _ in heads)
    if n == 0:
        more = len(files) - 1
        named = shown_name(files[0]) + (f" and {more} more file{'s' if more > 1 else ''} hold" if more else " holds")
        raise ConfigError(f"{field}: {named} no labels (0 rows)", field=field)
    width = max(w for (m, w), _ in heads if m)
    rows: dict[str, Any] = dict.fromkeys(LABEL_ROWS)
    points: dict[str, list[np.ndarray]] = {}
    at, label_s = 0, 0.0
    for f, ((m, w), _) in zip(files, heads, strict=True):
        part = Labels.load(f, None, field, rules)
        if len(part) != m or part.mask.shape[1] != w:
            raise ConfigError(f"{field}: {f}: its arrays disagree on the rows or move columns", field=field)
        for k in keep:
            a = getattr(part, k)
            if rows[k] is None:
                cols = (width, *a.shape[2:]) if k in _FILL else a.shape[1:]
                rows[k] = np.empty((n, *cols), dtype=a.dtype)
            if k in _FILL:
                rows[k][at:at + m, :w] = a
                rows[k][at:at + m, w:] = _FILL[k]
            else:
                rows[k][at:at + m] = a
        for name, v in part.points.items():
            points.setdefault(name, []).append(v)
        at += m
        label_s = max(label_s, part.label_s)
    return Labels(**rows, points={k: np.concatenate(v) for k, v in points.items()}, label_s=label_s)


def pad_columns(a: np.ndarray, width: int, fill: Any) -> np.ndarray:
    if a.shape[1] == width:
        return a
    pad = [(0, 0), (0, width - a.shape[1])] + [(0, 0)] * (a.ndim - 2)
    return np.pad(a, pad, constant_values=fill)


_FILL = {"kind": -1, "card": -1, "value": 0, "cards": 0, "mask": False, "feat": 0.0, "q": np.nan, "prior": 0.0}


def join_labels(parts: list[Labels]) -> Labels:
    """One :class:`Labels` of several (rows concatenated, the move columns padded to the widest)."""
    parts = [p for p in parts if len(p)] or parts[:1]
    width = max(p.mask.shape[1] for p in parts)
    rows: dict[str, Any] = {}
    for k in LABEL_ROWS:
        if getattr(parts[0], k) is None:
            rows[k] = None
        elif k in _FILL:
            rows[k] = np.concatenate([pad_columns(getattr(p, k), width, _FILL[k]) for p in parts])
        else:
            rows[k] = np.concatenate([getattr(p, k) for p in parts])
    points: dict[str, list[np.ndarray]] = {}
    for p in parts:
        for name, v in p.points.items():
            points.setdefault(name, []).append(v)
    return Labels(**rows, points={k: np.concatenate(v) for k, v in points.items()},
                  label_s=max(p.label_s for p in parts))


def mirror_labels(data: Labels, perm: np.ndarray, num_players: int, num_sides: int) -> Labels:
    """The same decisions with every card ``c`` relabelled ``perm[c]`` (a suit symmetry of the rules,
    :func:`cassino_env.symmetry.suit_permutations`): the observations (the default blocks), the moves' cards and card
    sets and the critic's full state are relabelled; the move values, the move features, the prior and the outcome stay
    (the symmetry keeps them; tests/test_symmetry.py checks the observations and features against the env's).

    Args:
        data: N labelled decisions. perm: int64[52], a card permutation.
        num_players, num_sides: of the rules the labels were made under (the observation's layout).
    """
    from cassino_env.symmetry import permute_card_blocks, permute_card_ids, permute_card_sets, permute_observation

    crit = None if data.crit is None else permute_card_blocks(data.crit, perm, data.crit.shape[1] // 52)
    return Labels(obs=permute_observation(data.obs, perm, num_players, num_sides), kind=data.kind,
                  card=permute_card_ids(data.card, perm), value=data.value, cards=permute_card_sets(data.cards, perm),
                  mask=data.mask, feat=data.feat, crit=crit, q=data.q, prior=data.prior, ret=data.ret,
                  points=dict(data.points), label_s=data.label_s)


def augmented(data: Labels, rules: RuleSet) -> Labels:
    """``data`` followed by its copy under each of the rules' suit symmetries (``augment_suits``)."""
    from cassino_env.symmetry import suit_permutations

    perms = suit_permutations(rules)
    copies = [mirror_labels(data, p, rules.num_players, rules.num_sides) for p in perms]
    for c in copies:
        c.points = {}  # the games' margins against each bot are counted once, with the labels as played
    return join_labels([data, *copies])
