"""The option machinery of a training script: field rules, YAML config files, the command line and resume merging.

A trainer's options are a dataclass (``cls``) whose defaults are the only source of the built-in values. A YAML config
is a mapping of some of its fields, those that differ from the defaults; the command line's options (one per field,
help from the docstring under the field, :func:`options_type`) override the file, and the file overrides the
defaults. A resumed run takes the checkpoint's config, overridden by the options given again (:func:`resume_args`).
Nothing here knows a trainer: every function takes the dataclass, and :func:`resolve_args` takes the config read when
no ``--config`` is given (a path, or a function of the ``--preset`` given). The self-play trainer's options are
:mod:`train.ppo_args`; the run folder and its lock, :mod:`train.run_folder`.

**Validation happens in one place**, the dataclass: its ``__post_init__`` runs :func:`validate_fields` over a table
of per-field rules built from :func:`integer`, :func:`number`, :func:`boolean`, :func:`text`, :func:`names`,
:func:`rates` and :func:`optional`, so options built from a YAML file, from command-line flags, from a resumed
checkpoint or in Python get the same :class:`ConfigError`, naming the field. The command line's options are read
as text (:func:`parse_flag` converts them), so that a value of the wrong type (``--seed abc``) is reported the same way
as a value out of range (``--seed -1``), as one ``error: seed ...`` line.

**Why home-made rules, not pydantic or tyro's.** tyro checks only what a type says (an ``int``, a ``Literal`` of
choices) and only on the command line; it has no ranges, and a YAML file, a checkpoint's config or an ``Args`` made in
Python never pass through it, so it could not be the one place. pydantic (``pydantic.dataclasses`` with
``Field(ge=..., le=...)``, strict types) could: it covers ranges, choices, optional values, lists and mappings of
rates. It was weighed and not taken, for now: it is not a dependency of the project (a new one, for about 150 lines of
rules), its messages (``Input should be greater than or equal to 1``, several lines, a location tuple) would have to
be translated into the one-line ``error: FIELD: must be ...`` that the command line and the tests promise, with the
hints the rules give (YAML's ``1e-3`` read as text, a bare word given for a list); its strict mode refuses numpy
integers and its lax mode takes ``"7"`` and ``1.0`` for an integer, neither what a config should accept; and a rule
that asks the agent registry or the observation blocks (``check_spec``, ``check_blocks``) is a custom validator either
way. The rules here are small, tested field by field and shared by both trainers; switching would buy little. tyro is
kept for what it does well: the flags, their help and ``--help``.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import math
import textwrap
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import numpy as np
import tyro
import yaml

from agents.device import DeviceError, check_device
from agents.precision import PrecisionError, check_precision
from cassino_env.errors import excerpt, shown_name
from cassino_env.rules import RuleSet, make_rules

#: The folder of the YAML configs shipped with the project (every trainer's default config is there).
CONFIGS_DIR = Path(__file__).resolve().parent.parent / "configs"

_Args = TypeVar("_Args")


class ConfigError(ValueError):
    """A bad config file or option (the message names the file and field).

    Attributes:
        field: the name of the field at fault, or None when the problem is not one field's.
    """

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


# --- per-field rules: Args.__post_init__ checks every field with one of these --------------------------------------

#: A field rule: ``rule(name, value)`` returns the value (normalised: an int given for a float, a list for a tuple)
#: or raises :class:`ConfigError` naming the field.
FieldRule = Callable[[str, Any], Any]


def _refuse(name: str, want: str, value: Any) -> ConfigError:
    return ConfigError(f"{name}: must be {want}, got {excerpt(value)}", field=name)


def integer(lo: int | None = None, hi: int | None = None, want: str | None = None) -> FieldRule:
    """A rule: an int (a numpy integer too; not a bool) in ``lo .. hi`` (either end open when None).

    >>> integer(1)("num_envs", 4), integer(0, 2**63 - 1)("seed", 7)
    (4, 7)
    >>> integer(1)("num_envs", 0)
    Traceback (most recent call last):
    ...
    train.options.ConfigError: num_envs: must be an integer >= 1, got 0
    """
    if want is None:
        want = ("an integer" + (f" >= {lo}" if lo is not None and hi is None else "")
                + (f" <= {hi}" if hi is not None and lo is None else "")
                + (f" from {lo} to {hi}" if lo is not None and hi is not None else ""))

    def rule(name: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise _refuse(name, want, value)
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise _refuse(name, want, value)
        return int(value)

    return rule


def number(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False, want: str | None = None
           ) -> FieldRule:
    """A rule: a finite real number (an int is taken as a float; not a bool) in ``[lo, hi]`` (``(lo, hi]`` with
    ``lo_open``). A string is refused, even one that looks like a number (YAML reads ``1e-3`` as a string: write
    ``1.0e-3``)."""
    if want is None:
        low = "" if lo is None else f" {'>' if lo_open else '>='} {lo:g}"
        high = "" if hi is None else f" <= {hi:g}"
        want = "a finite number" + (low + (" and" if low and high else "") + high)

    def rule(name: str, value: Any) -> float:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            hint = " (YAML reads 1e-3 as a string: write 1.0e-3)" if isinstance(value, str) else ""
            raise ConfigError(f"{name}: must be {want}, got {excerpt(value)}{hint}", field=name)
        v = float(value)
        if not math.isfinite(v) or (lo is not None and (v <= lo if lo_open else v < lo)) or (hi is not None and v > hi):
            raise _refuse(name, want, value)
        return v

    return rule


def boolean() -> FieldRule:
    """A rule: True or False, nothing else (the string ``"no"`` is not False, nor 1 True)."""

    def rule(name: str, value: Any) -> bool:
        if not isinstance(value, (bool, np.bool_)):
            raise _refuse(name, "true or false", value)
        return bool(value)

    return rule


#: The longest text a ``no_slash`` field (a name inside a folder name: ``exp_name``) takes, in characters: the
#: run folder's name adds the preset, the seed and the time, and a file system takes names of 255 bytes.
MAX_NAME_CHARS = 200


def text(choices: tuple[str, ...] | None = None, *, no_slash: bool = False) -> FieldRule:
    """A rule: a non-empty string, one of ``choices`` when given; ``no_slash``: also no ``/`` and at most
    :data:`MAX_NAME_CHARS` characters (it names a folder)."""
    want = f"one of {', '.join(choices)}" if choices else "a non-empty string" + (" without /" if no_slash else "")

    def rule(name: str, value: Any) -> str:
        if not isinstance(value, str) or not value.strip() or "\0" in value:
            raise _refuse(name, want, value)
        if (choices and value not in choices) or (no_slash and ("/" in value or "\\" in value)):
            raise _refuse(name, want, value)
        if no_slash and len(value) > MAX_NAME_CHARS:
            raise _refuse(name, f"at most {MAX_NAME_CHARS} characters (it is part of the run folder's name)", value)
        return value

    return rule


def _checked_by(check: typing.Callable[[Any, str], str], error: type[ValueError]) -> FieldRule:
    """A rule from a checker of ``agents`` (``check(value, field)``, raising ``error`` whose message names the field):
    its ``error`` becomes a :class:`ConfigError` naming the field."""

    def rule(name: str, value: Any) -> str:
        try:
            return check(value, name)
        except error as exc:
            raise ConfigError(str(exc), field=name) from None

    return rule


def device() -> FieldRule:
    """A rule: a device name (:func:`agents.device.check_device`: ``auto``, ``cpu``, ``cuda``, ``cuda:N``, ``mps``)
    that torch sees on this machine; returned stripped. Torch is imported only for a GPU's name.

    >>> device()("device", "auto")
    'auto'
    >>> device()("device", "gpu")
    Traceback (most recent call last):
    ...
    train.options.ConfigError: device: 'gpu' is not a device; choose auto, cpu, cuda, cuda:N (N a GPU's index) or mps
    """

    return _checked_by(check_device, DeviceError)


def precision() -> FieldRule:
    """A rule: a precision name (:func:`agents.precision.check_precision`: ``auto``, ``fp32``, ``bf16``); returned
    stripped.

    >>> precision()("precision", "bf16")
    'bf16'
    >>> precision()("precision", "fp16")
    Traceback (most recent call last):
    ...
    train.options.ConfigError: precision: 'fp16' is not a precision; choose auto, fp32 or bf16
    """

    return _checked_by(check_precision, PrecisionError)


def resolve_run_device(args: Any) -> Any:
    """The ``torch.device`` a run's network goes to: its ``device`` option resolved
    (:func:`agents.device.resolve_device`; ``auto`` picks a GPU where torch sees one). Imports torch.

    Raises:
        ConfigError: naming ``device``, a device torch cannot see (the option's rule refuses it first when the
            options are made; this catches options changed since).
    """
    from agents.device import resolve_device

    try:
        return resolve_device(args.device)
    except DeviceError as exc:
        raise ConfigError(str(exc), field="device") from None


def optional(inner: FieldRule) -> FieldRule:
    """A rule: None, or a value ``inner`` accepts."""

    def rule(name: str, value: Any) -> Any:
        return None if value is None else inner(name, value)

    return rule


def names(check: Callable[[str, str], None] | None = None) -> FieldRule:
    """A rule: a list or tuple of non-empty strings (returned as a tuple); ``check(name, item)`` may refuse an item.
    A bare string is refused: it is not a list of one (in Python, ``tuple("random")`` is six letters); the YAML
    path, :func:`make_args`, turns a bare word into a list of one before the dataclass sees it."""

    def rule(name: str, value: Any) -> tuple[str, ...]:
        if isinstance(value, str):
            raise ConfigError(f"{name}: must be a list of names, got the string {value!r} (write [{value}])",
                              field=name)
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v.strip() for v in value):
            raise _refuse(name, "a list of non-empty strings", value)
        if check is not None:
            for v in value:
                check(name, v)
        return tuple(value)

    return rule


def rates(check: Callable[[str, str], None] | None = None) -> FieldRule:
    """A rule: a mapping of non-empty strings to numbers from 0 to 1 (a dict is returned); ``check(name, key)``
    may refuse a key."""
    share = number(0.0, 1.0)

    def rule(name: str, value: Any) -> dict[str, float]:
        if not isinstance(value, dict):
            raise _refuse(name, "a mapping of names to rates (NAME: RATE, rates from 0 to 1)", value)
        out = {}
        for k, v in value.items():
            if not isinstance(k, str) or not k.strip():
                raise _refuse(name, "a mapping with non-empty string keys", value)
            if check is not None:
                check(name, k)
            try:
                out[k] = share(f"{name}[{k!r}]", v)
            except ConfigError as exc:
                raise ConfigError(str(exc), field=name) from None
        return out

    return rule


def validate_fields(obj: Any, rules: dict[str, FieldRule]) -> None:
    """Check (and normalise, in place) every field of the dataclass instance ``obj`` with its rule.

    Raises:
        ConfigError: the first field its rule refuses (named in the message and in ``field``).
        KeyError: a field with no rule (a programming error: every field must have one).
    """
    for f in dataclasses.fields(obj):
        object.__setattr__(obj, f.name, rules[f.name](f.name, getattr(obj, f.name)))


# --- command-line values: text converted by field type -----------------------------------------------------------


def _unwrap_optional(t: Any) -> tuple[Any, bool]:
    args = typing.get_args(t)
    if type(None) in args:
        inner = [a for a in args if a is not type(None)]
        return (inner[0] if len(inner) == 1 else t), True
    return t, False


def parse_flag(t: Any, name: str, raw: Any) -> Any:
    """The value of a command-line option for a field of type ``t``, from its text (the options are read as strings
    so that every bad value gets a :class:`ConfigError` naming the field); a value that is not text (an option set
    from Python) is passed on as it is, for the dataclass to check.

    >>> parse_flag(int, "seed", "7"), parse_flag(float, "gamma", "0.5"), parse_flag(bool, "shaping", "True")
    (7, 0.5, True)
    >>> parse_flag(dict[str, float], "bot_rates", ("greedy", "0.2"))
    {'greedy': 0.2}
    >>> parse_flag(int, "seed", "1.5")
    Traceback (most recent call last):
    ...
    train.options.ConfigError: seed: must be an integer, got '1.5'
    """
    inner, is_optional = _unwrap_optional(t)
    origin = typing.get_origin(inner)
    if origin is dict:
        if not isinstance(raw, (list, tuple)) or not all(isinstance(x, str) for x in raw):
            return raw
        if len(raw) % 2:
            raise ConfigError(f"{name} takes NAME RATE pairs, got {' '.join(raw)!r}", field=name)
        try:
            return {k: parse_flag(float, f"{name}[{k!r}]", v) for k, v in zip(raw[::2], raw[1::2], strict=True)}
        except ConfigError as exc:
            raise ConfigError(str(exc), field=name) from None
    if origin is tuple or not isinstance(raw, str):
        return raw
    if is_optional and raw in ("None", "null"):
        return None
    try:
        if inner is bool:
            return {"true": True, "false": False}[raw.lower()]
        if inner is int:
            return int(raw)
        if inner is float:
            return float(raw)
    except (KeyError, ValueError):
        want = {bool: "True or False", int: "an integer", float: "a number"}[inner]
        raise ConfigError(f"{name}: must be {want}, got {excerpt(raw)}", field=name) from None
    return raw


# --- YAML files -------------------------------------------------------------------------------------------------------


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a key given twice in one mapping is an error (PyYAML keeps the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *defaults`: its keys may be overridden
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                twice = key in seen
            except TypeError:  # an unhashable key: PyYAML's own error says so
                break
            if twice:
                raise yaml.constructor.ConstructorError(None, None, f"the key {key!r} is given twice",
                                                        key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def find_config(path: str | Path) -> Path:
    """The config file ``path`` names: the path itself when it exists (relative to the working directory), else,
    for a relative path, the shipped config of that name: ``ppo_tiny``, ``ppo_tiny.yaml`` and
    ``configs/ppo_tiny.yaml`` all name :data:`CONFIGS_DIR` ``/ppo_tiny.yaml`` from any directory, as the default
    config is found. A path found nowhere is returned as given (reading it then fails, naming it)."""
    given = Path(path)
    if looked_at(given.exists) or given.is_absolute():
        return given
    name = given.name if given.suffix in (".yaml", ".yml") else given.name + ".yaml"
    if len(given.parts) == 1 or given.parent.as_posix() in ("configs", "./configs"):
        shipped = CONFIGS_DIR / name
        if looked_at(shipped.is_file):
            return shipped
    return given


def looked_at(check: Callable[[], bool]) -> bool:
    """``check()`` (``path.exists``, ``path.is_file``, ``path.is_dir``), False for a path that cannot be looked at
    (a name too long, no permission): not a file here; reading or creating it later says why."""
    try:
        return check()
    except OSError:
        return False



def _yaml_problem(exc: Exception) -> str:
    """A YAML error in one line: its problem and where (PyYAML's message spans lines, with a caret under the spot)."""
    problem, mark = getattr(exc, "problem", None), getattr(exc, "problem_mark", None)
    if not problem:
        return " ".join(str(exc).split())
    context = getattr(exc, "context", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"{context + ': ' if context else ''}{problem}{where}"


def load_config(cls: type, path: str | Path) -> dict[str, Any]:
    """Read a YAML config (a mapping of fields of the dataclass ``cls``); unknown fields, and a field given twice,
    are errors.

    Raises:
        ConfigError: naming the file and the problem (unreadable, not UTF-8, not YAML, nested too deeply).
    """
    if not str(path).strip():  # Path("") is ".", a folder: say what is wrong instead
        raise ConfigError("config: the file name is empty; name a YAML file of options (the shipped configs are in "
                          f"{CONFIGS_DIR})", field="config")
    path = find_config(path)
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)  # noqa: S506 (a safe loader)
    except FileNotFoundError as exc:
        shipped = ", ".join(sorted(p.name for p in CONFIGS_DIR.glob("*.yaml")))
        raise ConfigError(f"{shown_name(path)}: {exc.strerror or exc} (the shipped configs are in {CONFIGS_DIR}: "
                          f"{shipped}; a bare name such as ppo_tiny.yaml or configs/ppo_tiny.yaml is looked up "
                          "there)") from None
    except OSError as exc:  # a folder, no permission, a name too long
        raise ConfigError(f"{shown_name(path)}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{shown_name(path)}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except RecursionError:
        raise ConfigError(f"{shown_name(path)}: not valid YAML: nested too deeply") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{shown_name(path)}: not valid YAML: {_yaml_problem(exc)}") from None
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise ConfigError(f"{shown_name(path)}: a config must be a mapping of {cls.__name__} fields")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known, key=repr)  # keys of mixed types (1: 2, foo: 3) sort by their text
    if unknown:
        raise ConfigError(f"{shown_name(path)}: unknown field {unknown[0]!r} (fields are those of {cls.__module__}."
                          f"{cls.__qualname__})")
    return data


def make_args(cls: type[_Args], values: dict[str, Any]) -> _Args:
    """``cls`` from a dict of field values; YAML lists become tuples where the field is a tuple, and so does a
    single string (``eval_opponents: ladder``, a list of one).

    Raises:
        ConfigError: an unknown field, or a value the dataclass's rules refuse (naming the field).
    """
    hints = typing.get_type_hints(cls)
    unknown = sorted(str(k) for k in values if k not in hints)
    if unknown:
        raise ConfigError(f"unknown field {unknown[0]!r} (fields are those of {cls.__module__}.{cls.__qualname__})",
                          field=unknown[0])
    out = {}
    for k, v in values.items():
        if typing.get_origin(hints[k]) is tuple and isinstance(v, (list, str)):
            v = (v,) if isinstance(v, str) else tuple(v)
        out[k] = v
    return cls(**out)


def args_to_dict(args: Any) -> dict[str, Any]:
    """Plain dict of the fields (tuples as lists): YAML, TensorBoard and checkpoint friendly."""
    return {k: (list(v) if isinstance(v, tuple) else dict(v) if isinstance(v, dict) else v)
            for k, v in dataclasses.asdict(args).items()}


# --- the command line -------------------------------------------------------------------------------------------------

_METAVARS = {int: "INT", float: "FLOAT", str: "STR", bool: "{True,False}"}


def field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of a dataclass (what tyro shows as help), its base classes' fields included
    (a subclass's own docstring wins)."""
    docs: dict[str, str] = {}
    for klass in reversed([k for k in cls.__mro__ if dataclasses.is_dataclass(k)]):
        body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0].body
        for node, nxt in zip(body, body[1:], strict=False):
            if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(nxt, ast.Expr)
                    and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str)):
                docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


def options_type(cls: type, name: str = "TrainOptions", aliases: dict[str, tuple[str, ...]] | None = None,
                 config_hint: str = "none: the built-in defaults") -> type:
    """The command-line options of ``cls``: every field made optional, default None (= not given), plus
    ``--config``, so that a flag given on the command line always overrides the config file, even at its default
    value. ``aliases``: more flags for a field (``{"ray_address": ("--ray",)}``); ``config_hint``: the config read
    when ``--config`` is not given, as ``--help`` shows it. A flag's text reaches
    :func:`parse_flag` as given: ``None`` or ``null`` sets an optional field to None (and counts as given), and is
    refused for any other field."""
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    defaults = args_to_dict(cls())
    fields: list[Any] = [("config", Annotated[str | None, tyro.conf.arg(  # text: an empty name stays one (not ".")
        help="YAML file of options that differ from the built-in defaults; options given here override it",
        metavar="FILE",
        help_behavior_hint=f"(default: {config_hint})")],
        None)]
    for f in dataclasses.fields(cls):
        t = hints[f.name]
        inner = [a for a in typing.get_args(t) if a is not type(None)] if type(None) in typing.get_args(t) else [t]
        metavar = _METAVARS.get(inner[0]) if len(inner) == 1 else None
        flag_type: Any = str  # read as text, converted by parse_flag: a bad value is a ConfigError naming the field
        if typing.get_origin(t) is dict:
            metavar, flag_type = "NAME RATE [NAME RATE ...]", tuple[str, ...]
        elif typing.get_origin(t) is tuple:
            metavar, flag_type = "NAME [NAME ...]", tuple[str, ...]
        # constructor=str: the text as given, "None" too (tyro would read it as None, the same as not given, and a
        # resumed run would then take the checkpoint's value: --ray None must play the rollouts here)
        arg = tyro.conf.arg(help=docs.get(f.name), metavar=metavar, aliases=(aliases or {}).get(f.name),
                            help_behavior_hint=f"(built-in default: {defaults[f.name]!r})",
                            constructor=str if flag_type is str else None)
        fields.append((f.name, Annotated[flag_type | None, arg], None))
    return dataclasses.make_dataclass(name, [(n, t, dataclasses.field(default=d)) for n, t, d in fields])


def given_options(options: Any) -> dict[str, Any]:
    """The fields set on the command line (``options`` from :func:`options_type`; ``--config`` aside), as given: text
    from the command line, which :func:`resolve_args` converts with :func:`parse_flag`."""
    out = {}
    for f in dataclasses.fields(options):
        raw = getattr(options, f.name)
        if f.name != "config" and raw is not None:
            out[f.name] = raw
    return out


#: The config a trainer reads when no ``--config`` is given: a path, or a function of the ``--preset`` given (None
#: when none is) that returns one (``train.ppo_args.preset_config``).
DefaultConfig = str | Path | Callable[[Any], str | Path]


def resolve_args(cls: type[_Args], options: Any, default_config: DefaultConfig) -> _Args:
    """Merge: built-in defaults < config file < options given. The file is ``options.config``, or without one
    ``default_config``: a path (``train.exit``: ``configs/exit_classic.yaml``), or a function of the ``--preset``
    given that returns one (the self-play trainer's ``train.ppo_args.preset_config``: ``--preset cicera`` reads
    ``configs/ppo_cicera.yaml``).

    Raises:
        ConfigError: a bad file or value, naming the field (and the file, for a value that came from it).
    """
    hints = typing.get_type_hints(cls)
    given = {k: parse_flag(hints[k], k, v) for k, v in given_options(options).items()}
    if options.config is not None:
        path = options.config
    else:
        path = default_config(given.get("preset")) if callable(default_config) else default_config
    from_file = load_config(cls, path)
    try:
        return make_args(cls, {**from_file, **given})
    except ConfigError as exc:
        if exc.field in from_file and exc.field not in given:
            raise ConfigError(f"{path}: {exc}", field=exc.field) from None
        raise


def explicit_fields(cls: type, options: Any) -> set[str]:
    """The fields a run's command line sets: its flags, and the fields of the ``--config`` file when one is given
    (with ``--resume``, these override the checkpoint's config; a preset's own file, read when no ``--config`` is
    given, does not count)."""
    fields = set(given_options(options))
    if options.config is not None:
        fields |= set(load_config(cls, options.config))
    return fields


#: Fields a resumed run never takes from the checkpoint: where it reads and writes, and the device and precision it
#: runs at, are the command line's say (a run trained on a GPU goes on where there is none; its default, ``auto``,
#: or the one given).
RUN_CONTROL_FIELDS = ("resume", "run_dir", "reuse_run_dir", "device", "precision")


def resume_args(args: _Args, saved: dict[str, Any], explicit: set[str] | None = None, *,
                source: str = "checkpoint", saved_error: type[ValueError] = ConfigError) -> _Args:
    """The options of a resumed run: the checkpoint's config (``saved``, its ``train`` entry), overridden by the
    fields of ``args`` given explicitly (``explicit``; None: every field). :data:`RUN_CONTROL_FIELDS` always come
    from ``args``: the folder named inside the file is never used (``run_dir`` None lets the trainer derive the run
    folder from the checkpoint's path).

    Raises:
        saved_error: the checkpoint's config is malformed (not a mapping, an unknown field, a field its rule refuses
            and that was not given again), the message starting with ``source``.
        ConfigError: a field given explicitly is refused.
    """
    cfg = saved.get("config") if isinstance(saved, dict) else None
    if not isinstance(cfg, dict):
        raise saved_error(f"{source}: train.config must be a mapping of the run's options, got {type(cfg).__name__}")
    known = {f.name for f in dataclasses.fields(args)}
    unknown = sorted(str(k) for k in cfg if k not in known)
    if unknown:
        raise saved_error(f"{source}: train.config has an unknown field {unknown[0]!r}")
    values = dict(cfg)
    given = args_to_dict(args)
    overridden = set(explicit if explicit is not None else given) & known
    for name in overridden | set(RUN_CONTROL_FIELDS):
        if name in given:
            values[name] = given[name]
    try:
        return make_args(type(args), values)
    except ConfigError as exc:
        if exc.field is not None and exc.field not in overridden and exc.field not in RUN_CONTROL_FIELDS:
            raise saved_error(f"{source}: train.config.{exc}") from None
        raise


def hparams_table(args: Any) -> str:
    """The options as a Markdown table (TensorBoard's ``hyperparameters`` text)."""
    return "|param|value|\n|-|-|\n" + "\n".join(f"|{k}|{v}|" for k, v in args_to_dict(args).items())


# --- the game's rules, as a run's options name them -----------------------------------------------------------------


def checked_rules(preset: str, num_players: int | None) -> RuleSet:
    """The rules of a run's ``preset`` and ``num_players`` (docs/rules.md 6).

    Raises:
        ConfigError: naming ``preset`` (an unknown one) or ``num_players`` (a count the preset does not allow).
    """
    try:
        make_rules(preset)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"preset: {exc}", field="preset") from None  # exc names the preset
    try:
        return make_rules(preset, num_players)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"num_players: {exc}", field="num_players") from None  # exc names the count

