"""Options of a training script: its ``Args`` dataclass, YAML config files and the command line.

The dataclass's defaults are the only source of the built-in values. A YAML config (``configs/ppo_<preset>.yaml``)
is a mapping of some of its fields, those that differ from the defaults; the command line's options (one per field,
help from the docstring under the field) override the file, and the file overrides the defaults. A resumed run
takes the checkpoint's config, overridden by the options given again. The functions take the dataclass (``cls``)
so that every training script can use them; the self-play trainer's own :class:`Args` (and :data:`ARG_RULES`, the rule
of each of its fields) is defined at the end of this module, and ``train.ppo_selfplay`` binds the functions to it.

**Validation happens in one place**, the dataclass: ``Args.__post_init__`` runs :func:`validate_fields` over a table
of per-field rules built from :func:`integer`, :func:`number`, :func:`boolean`, :func:`text`, :func:`names`,
:func:`rates` and :func:`optional`, so an ``Args`` built from a YAML file, from command-line flags, from a resumed
checkpoint or in Python gets the same :class:`ConfigError`, naming the field. The command line's options are read
as text (:func:`parse_flag` converts them), so that a value of the wrong type (``--seed abc``) is reported the same way
as a value out of range (``--seed -1``), as one ``error: seed ...`` line.

Also here, the run's bookkeeping: the default run folder name, the run-folder lock (:func:`claim_run_dir`) and the
hyperparameter table logged to TensorBoard.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import math
import os
import textwrap
import time
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import numpy as np
import tyro
import yaml

from agents.registry import LADDER, AgentSpecError, check_spec
from cassino_env.errors import excerpt, shown_name
from cassino_env.rules import PRESETS, RuleSet, make_rules

#: The folder of the YAML configs.
CONFIGS_DIR = Path(__file__).resolve().parent.parent / "configs"
#: The config read when neither ``--config`` nor a preset with a config of its own is given.
DEFAULT_CONFIG = CONFIGS_DIR / "ppo_classic.yaml"

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
    train.config.ConfigError: num_envs: must be an integer >= 1, got 0
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
#: The longest name of one folder or file a file system takes, in bytes (NAME_MAX of ext4, APFS, NTFS).
NAME_MAX_BYTES = 255


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
    train.config.ConfigError: seed: must be an integer, got '1.5'
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


def preset_config(preset: str | None) -> Path:
    """The config file used when no ``--config`` is given: ``configs/ppo_<preset>.yaml`` for a preset that has one,
    else :data:`DEFAULT_CONFIG`.

    >>> preset_config("cicera").name, preset_config(None).name, preset_config("nonesuch").name
    ('ppo_cicera.yaml', 'ppo_classic.yaml', 'ppo_classic.yaml')
    """
    if not isinstance(preset, str) or preset not in PRESETS:  # checked by name first: no file is looked up
        return DEFAULT_CONFIG  # for an unknown preset, which the rules check then names
    path = CONFIGS_DIR / f"ppo_{preset}.yaml"
    return path if path.is_file() else DEFAULT_CONFIG


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
                 config_hint: str = "configs/ppo_PRESET.yaml for --preset PRESET, else configs/ppo_classic.yaml"
                 ) -> type:
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


def resolve_args(cls: type[_Args], options: Any) -> _Args:
    """Merge: built-in defaults < config file < options given. The file is ``options.config``, or without one
    the preset's own (``--preset cicera`` reads ``configs/ppo_cicera.yaml``, see :func:`preset_config`).

    Raises:
        ConfigError: a bad file or value, naming the field (and the file, for a value that came from it).
    """
    hints = typing.get_type_hints(cls)
    given = {k: parse_flag(hints[k], k, v) for k, v in given_options(options).items()}
    path = options.config if options.config is not None else preset_config(given.get("preset"))
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


#: Fields a resumed run never takes from the checkpoint: where it reads and writes is the command line's say.
RUN_CONTROL_FIELDS = ("resume", "run_dir", "reuse_run_dir")


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


# --- the run's bookkeeping --------------------------------------------------------------------------------------------


def default_run_dir(args: Any) -> Path:
    """``runs_root/{preset}__{exp_name}__{seed}__{unix time}`` (CleanRL's run name with the preset first)."""
    return Path(args.runs_root) / f"{args.preset}__{args.exp_name}__{args.seed}__{int(time.time())}"


#: The lock file of a run folder (:class:`RunLock`); it holds the PID of the run that holds the lock.
LOCK_NAME = ".lock"


class RunLock:
    """An exclusive lock on a run folder, held while a run writes to it: ``fcntl.flock`` on ``RUN/.lock``, which
    holds the PID of the holder. The operating system drops the lock when the process ends, however it ends, so a
    stale lock file never blocks a later run; the file itself stays (it is not a run's output).

    Raises:
        ConfigError: (from :meth:`acquire`) another process holds the lock, or the folder cannot be created.
    """

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        import fcntl  # POSIX; imported here so that the rest of this module loads anywhere

        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise ConfigError(f"run_dir {shown_name(self.run_dir)}: cannot create the run folder: "
                              f"{exc.strerror or exc}", field="run_dir") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.read(fd, 64).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise ConfigError(f"run_dir {shown_name(self.run_dir)} is in use by another run (PID {holder}, lock file "
                              f"{self.path}): two runs must not write one folder; wait for it to end or choose "
                              "another --run-dir", field="run_dir") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        self._fd = fd
        return self

    def release(self) -> None:
        """Drop the lock (closing the file drops it); safe to call twice."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def check_run_path(run_dir: str | Path, field: str = "run_dir") -> None:
    """Refuse a run folder that cannot be created, before any of it is made: a name in the path longer than
    :data:`NAME_MAX_BYTES` bytes (creating the parents first would leave them behind when the last name fails).
    Reads nothing.

    Raises:
        ConfigError: naming ``field``.
    """
    for part in Path(run_dir).parts:
        size = len(os.fsencode(part))
        if size > NAME_MAX_BYTES:
            raise ConfigError(f"{field}: {shown_name(run_dir)}: cannot create the run folder: a name in it is {size} "
                              f"bytes long, and a file system takes at most {NAME_MAX_BYTES}", field=field)


def check_run_dir(run_dir: str | Path, *, resuming: bool, reuse: bool) -> None:
    """Refuse a run folder a new run must not write to: one that cannot be created (:func:`check_run_path`), a path
    that exists and is not a folder, or a non-empty
    folder (its lock file aside) that is not the folder of the run being resumed, unless ``reuse``
    (``--reuse-run-dir True``). Reads only; writes nothing.

    Raises:
        ConfigError: naming ``run_dir``, saying how to go on.
    """
    check_run_path(run_dir)
    run_dir = Path(run_dir)
    if looked_at(run_dir.exists) and not run_dir.is_dir():
        raise ConfigError(f"run_dir {shown_name(run_dir)} exists and is not a folder", field="run_dir")
    if resuming or reuse or not looked_at(run_dir.is_dir):  # one that cannot be looked at: creating it says why
        return
    held = sorted(p.name for p in run_dir.iterdir() if p.name != LOCK_NAME)
    if held:
        shown = ", ".join(shown_name(name) for name in held[:3])
        raise ConfigError(f"run_dir {shown_name(run_dir)} is not empty (it holds {shown}"
                          f"{', ...' if len(held) > 3 else ''}): it may be another run's folder. Continue that run "
                          f"with --resume {shown_name(run_dir / 'checkpoints' / 'latest.pt')}, choose another "
                          "--run-dir, or pass --reuse-run-dir True to write into it anyway", field="run_dir")


def claim_run_dir(run_dir: str | Path, *, resuming: bool, reuse: bool) -> RunLock:
    """Lock a run folder for a run (:class:`RunLock`), creating it, after :func:`check_run_dir`; the check is
    repeated once the lock is held, so that a run that ended in between is not written over.

    Raises:
        ConfigError: see :func:`check_run_dir` and :class:`RunLock`.
    """
    check_run_dir(run_dir, resuming=resuming, reuse=reuse)
    lock = RunLock(run_dir).acquire()
    try:
        check_run_dir(run_dir, resuming=resuming, reuse=reuse)
    except ConfigError:
        lock.release()
        raise
    return lock


def run_dir_of_checkpoint(path: str | Path) -> Path:
    """The run folder a checkpoint belongs to, from its path: ``RUN`` for ``RUN/checkpoints/NAME.pt``.

    >>> run_dir_of_checkpoint("runs/x/checkpoints/latest.pt").as_posix()
    'runs/x'

    Raises:
        ConfigError: a checkpoint outside a ``checkpoints`` folder (its run folder cannot be told: give ``run_dir``).
    """
    path = Path(path)
    if path.parent.name != "checkpoints":
        raise ConfigError(f"resume {shown_name(path)}: not in a RUN/checkpoints/ folder, so its run folder cannot be "
                          "told from its path; give --run-dir (where the resumed run writes)", field="run_dir")
    return path.parent.parent


def hparams_table(args: Any) -> str:
    """The options as a Markdown table (TensorBoard's ``hyperparameters`` text)."""
    return "|param|value|\n|-|-|\n" + "\n".join(f"|{k}|{v}|" for k, v in args_to_dict(args).items())


# ======================================================================================================================
# The self-play trainer's options (train/ppo_selfplay.py): Args, the rule of every field, their combinations
# ======================================================================================================================
#: How past snapshots are drawn for the pool games (:class:`train.rollout.SnapshotPool`).
POOL_SAMPLING = ("uniform", "pfsp")
#: :data:`agents.policy.CRITICS`, written out so that reading the options does not import torch (a test checks).
CRITIC_CHOICES = ("shared", "separate")


@dataclasses.dataclass
class RunOptions:
    """The options every trainer's run starts with: its name, seed, threads and run folder (:class:`Args` and
    ``train.exit.ExitArgs`` extend it, each with its own ``exp_name``)."""

    # --- experiment -------------------------------------------------------------------------------------------------
    exp_name: str = "run"
    """name of the experiment, the second part of the run name"""
    seed: int = 1
    """seed of the networks, the games and every random choice of the run"""
    threads: int = 2
    """CPU threads torch may use (torch.set_num_threads); the env runs single-threaded. The PPO trainer's update
    also runs as this many shards unless update_shards says otherwise (at most 64)"""
    run_dir: str | None = None
    """folder the run writes to; default runs_root/{preset}__{exp_name}__{seed}__{unix time}"""
    runs_root: str = "runs"
    """parent folder of the default run folders"""
    resume: str | None = None
    """checkpoint to continue from: the run goes on in its own folder (RUN for RUN/checkpoints/X.pt, or run_dir)
    with its own config, except the options given on this command line (flags and the --config file)"""
    reuse_run_dir: bool = False
    """write into a run_dir that is not empty (the run folder of a run not being resumed); off, such a folder is
    refused. A folder another run is writing to (its lock held) is refused either way"""


#: The recipe's stages (train/recipe.py's STAGES; kept here so that the options import no trainer).
RECIPE_STAGES = ("ppo", "last_round", "early_rounds", "consolidate")


@dataclasses.dataclass
class Args(RunOptions):
    """Self-play PPO options. These defaults are the only built-in values (the default run, classic rules);
    ``configs/ppo_<preset>.yaml`` hold just the fields that differ from them."""

    exp_name: str = "ppo_selfplay"
    """name of the experiment, the second part of the run name"""
    progress_every_s: float = 30.0
    """seconds between progress lines on stdout"""
    max_train_seconds: float = 1140.0
    """with hours 0: stop training after this many wall-clock seconds of the run, resumed parts included (0: no
    limit), then save and evaluate as usual; a guard that keeps a PPO run within 20 minutes on a slow or busy machine.
    The recipe (hours > 0) ignores it: its budget is hours"""

    # --- the recipe: cassino train's stages in a compute budget (train/recipe.py) ----------------------------------
    hours: float = 0.3
    """the compute budget in hours of wall clock, resumed parts included: cassino train runs the whole recipe
    (self-play PPO, then expert iteration; train/recipe.py) in it, then the evaluation table; 0: self-play PPO alone
    (train/ppo_selfplay.py), for total_timesteps or max_train_seconds"""
    stages: tuple[str, ...] = RECIPE_STAGES
    """the recipe's stages that run, of ppo, last_round, early_rounds, consolidate (train/recipe.py)"""
    gate_deals: int = 2000
    """duplicate deals of each gate: the stage's network against the run's best, both alone"""
    gate_every_s: float = 0.0
    """seconds of training between gates; 0: the budget / 12, kept within 60-600 s"""
    gate_patience: int = 2
    """a stage ends after this many gates in a row without a gain"""
    gate_min_z: float = 1.0
    """a gate is a gain, and the candidate replaces the best, when it leads the best by at least this many standard
    errors of its margin (and by more than 0)"""
    stage_configs: str | None = None
    """the folder of the expert stages' configs (stage_last_round.yaml, stage_early_rounds.yaml,
    stage_consolidate.yaml: fields of train.exit.ExitArgs); null: the project's configs/ folder"""

    # --- rollout workers on Ray (train/rollout.py) -------------------------------------------------------------------
    ray_address: str | None = None
    """play the rollouts on Ray actors of the Ray cluster at this address (--ray; ray.init's: local starts one on
    this machine, auto joins the running one, also found through RAY_ADDRESS, ray://HOST:10001 a remote one), the
    PPO update staying here; null: play them in this process. Needs the ray extra"""
    num_workers: int = 1
    """with ray_address: the rollout workers (Ray actors, one CPU each), each playing num_envs / num_workers of the
    games; must divide num_envs. Without ray_address it must be 1"""

    # --- environment ------------------------------------------------------------------------------------------------
    preset: str = "classic"
    """rule preset (docs/rules.md 6)"""
    num_players: int | None = None
    """seats per game; None (null in a config file), the built-in default: the preset's first allowed count
    (docs/rules.md 6: 2, or 4 for cicera); 4 and 6 seats play partnerships"""
    reward: str = "points"
    """env reward: points (deal margin, zero-sum, every deal) or win (+-1 per match)"""
    reward_scale: float = 0.1
    """rewards are multiplied by this before PPO sees them (deal margins are about +-10 points)"""
    objective: str = "points"
    """what PPO maximises: points (the deal margin, times reward_scale) or match (at the end of every deal, the change
    of each side's chance of winning the match, 2 W - 1 from train/match_value.py; a match's rewards add up to +-1,
    its result; two sides only)"""
    endgame: bool = False
    """two seats: play the last round of every deal exactly (agents.endgame, as the trained agents play it), every
    seat; those moves are not trained on, and the deal's points are credited to each seat's last move before it"""
    shaping: bool = False
    """potential-based reward shaping (Ng et al. 1999): pay each change of the banked deal points (agents.features.
    banked_points) as it happens; with gamma=1 a deal's total reward is unchanged"""
    max_moves: int = 64
    """width of the env's move table; the rare longer lists keep their first moves (the core's overflow policy)"""
    obs_blocks: tuple[str, ...] | None = None
    """the observation's blocks, in order (cassino_env.obs: leave some out, reorder them, or add blocks registered
    with cassino_env.obs.register_block); null: cassino_env.obs.DEFAULT_BLOCKS; every checkpoint records the list
    (obs_blocks)"""

    # --- PPO --------------------------------------------------------------------------------------------------------
    total_timesteps: int = 10_000_000
    """env steps (moves, over all games and seats) to train for"""
    learning_rate: float = 3e-4
    """Adam learning rate"""
    anneal_lr: bool = True
    """decay the learning rate linearly to 0 over total_timesteps"""
    num_envs: int = 1024
    """games stepped together"""
    num_steps: int = 48
    """moves per game per rollout; a multiple of the deal length (52 - table_cards, 48) so rollouts hold whole deals"""
    gamma: float = 1.0
    """discount per own decision of a seat (1: the undiscounted deal margin; deals are 24 decisions long)"""
    gae_lambda: float = 0.95
    """GAE lambda"""
    num_minibatches: int = 8
    """minibatches per epoch over the trained transitions of a rollout"""
    update_epochs: int = 3
    """epochs over each rollout"""
    norm_adv: bool = True
    """normalise advantages per minibatch"""
    clip_coef: float = 0.2
    """PPO surrogate clipping coefficient"""
    clip_vloss: bool = True
    """clip the value loss as in CleanRL"""
    ent_coef: float = 0.01
    """entropy bonus coefficient (entropy over the legal moves)"""
    vf_coef: float = 0.5
    """value loss coefficient"""
    max_grad_norm: float = 0.5
    """global gradient-norm clip"""
    target_kl: float | None = None
    """stop an update's epochs early when the approximate KL exceeds this"""
    update_shards: int | None = None
    """split every minibatch of the update into this many shards, each computed by its own copy of the network on
    its own thread (one torch thread each) and their gradients summed: the same update up to float rounding, which
    uses the cores better than torch's threads inside each operation; null: threads"""

    # --- network ----------------------------------------------------------------------------------------------------
    hidden: int = 128
    """width of the observation torso (two layers)"""
    embed: int = 64
    """width of the move embeddings and scorer"""
    move_features: bool = True
    """give every candidate move the features of agents.features (points it takes, sweep, risk, exposure, ...)"""
    feature_prior: float = 0.0
    """with move_features: the untrained policy's logits start at this times the advanced bot's score of each move
    (logit per point; 0, the default: no hand-written prior, the network learns from a near-uniform start; 2.0 was
    the default before 2026-12-01 and is kept as a baseline)"""
    critic: str = "separate"
    """value estimator: shared (a head on the policy torso) or separate (its own network)"""
    critic_full_state: bool = True
    """with critic=separate: the critic also reads every hand and the stock (training only; the policy never does);
    ignored by the shared critic"""

    # --- opponents --------------------------------------------------------------------------------------------------
    pool_rate: float = 0.2
    """share of games in which a past snapshot from the pool plays the other seats"""
    pool_size: int = 10
    """snapshots kept in the pool (the newest; the initial weights are the first)"""
    snapshot_every: int = 500_000
    """env steps between snapshots added to the pool"""
    pool_sampling: str = "uniform"
    """how the pool games' snapshot is drawn each iteration: uniform, or pfsp (by how often the learner loses to it)"""
    bot_rates: dict[str, float] = dataclasses.field(default_factory=lambda: {"greedy": 0.15, "random": 0.05})
    """share of games per bot opponent (agents.registry specs); the rest of the games are pure self-play"""

    # --- evaluation and checkpoints ---------------------------------------------------------------------------------
    eval_every: int | None = None
    """env steps between evaluations against eval_opponents; null (the default): 1,000,000, or an eighth of the run
    when that is less (train.config.eval_interval), so a short run still draws a curve of about 8 points and a
    10M run evaluates every 1M; evaluations fall on rollout ends (at most one per rollout), besides the one at step 0
    and the one at the end; 0: only at the end"""
    eval_deals: int = 200
    """duplicate deals per evaluation and opponent (each played once from every seat)"""
    eval_opponents: tuple[str, ...] = LADDER
    """bots evaluated against during training (agents.registry specs; ladder: the bot ladder), logged as
    eval/winrate_vs_<bot>"""
    checkpoint_every: int = 1_000_000
    """env steps between checkpoints (checkpoints/step_N.pt, copied to latest.pt; 0: only final.pt)"""
    final_eval_deals: int = 2000
    """deal budget per opponent of the head-to-head evaluation after training (whole matches, seats swapped; 0: skip)"""
    final_eval_opponents: tuple[str, ...] = LADDER
    """the bots the final checkpoint is evaluated against (ladder: the bot ladder)"""

    def __post_init__(self) -> None:
        """Check every field (:data:`ARG_RULES`) and their combinations, whatever built the options: a YAML file, the
        command line, a resumed checkpoint or Python.

        Raises:
            ConfigError: naming the field (``ConfigError.field``) and the rule it breaks.
        """
        validate_fields(self, ARG_RULES)
        _check_combination(self)


def _obs_blocks(name: str, value: Any) -> tuple[str, ...] | None:
    """A rule: a list of distinct observation block names (``cassino_env.obs.check_blocks``)."""
    if value is None:  # the default list; nothing to import (`cassino train --help` stays light)
        return None
    from cassino_env.obs import ObsBlocksError, check_blocks

    try:
        return check_blocks(names()(name, value))
    except ObsBlocksError as exc:
        raise ConfigError(f"{name}: {exc}", field=name) from None


def _agent_spec(ladder: bool) -> typing.Callable[[str, str], None]:
    """A check of an agent spec by the registry (``agents.registry.check_spec``: names, arguments, budgets, nesting,
    the form of an import path ``MODULE:OBJECT``); ``agents.registry.make_agent`` builds it when the run starts."""

    def check(name: str, spec: str) -> None:
        try:
            check_spec(spec, ladder_ok=ladder)
        except AgentSpecError as exc:
            raise ConfigError(f"{name}: {exc}", field=name) from None

    return check


def _stage_name(name: str, stage: str) -> None:
    if stage not in RECIPE_STAGES:
        raise ConfigError(f"{name}: unknown stage {stage!r}: choose from {', '.join(RECIPE_STAGES)}", field=name)


#: The most env steps a run may ask for: a million steps a second would take 11.6 days.
MAX_TIMESTEPS = 10**12

#: The rule of every :class:`Args` field (:mod:`train.config`'s rule makers); ``Args.__post_init__`` applies them.
#: Upper bounds keep a run within what one machine can hold (the network widths, the rollout size; the rollout's
#: memory is also checked against the machine's, :func:`rollout_bytes`), within what the engine allows
#: (``max_moves`` up to 32,767) or within what trains at all in float32: a learning rate above 1, a reward scale
#: above 1,000 (deal margins of +-10 points become +-10,000), loss coefficients above 100 or a feature prior above 100
#: logits per point overflow or diverge at once (the trainer also stops at the first non-finite loss or gradient).
ARG_RULES: dict[str, FieldRule] = {
    # experiment
    "exp_name": text(no_slash=True), "seed": integer(0, 2**63 - 1, want="an integer 0 <= seed < 2**63"),
    "threads": integer(1, 1024), "run_dir": optional(text()), "runs_root": text(), "resume": optional(text()),
    "reuse_run_dir": boolean(), "progress_every_s": number(0.0), "max_train_seconds": number(0.0),
    # the recipe
    "hours": number(0.0, 10_000.0), "stages": names(_stage_name), "gate_deals": integer(2, 1_000_000),
    "gate_every_s": number(0.0), "gate_patience": integer(1, 1000), "gate_min_z": number(0.0, 100.0),
    "stage_configs": optional(text()),
    # rollout workers on Ray
    "ray_address": optional(text()), "num_workers": integer(1, 4096),
    # environment
    "preset": text(), "num_players": optional(integer(1)), "reward": text(("points", "win")),
    "reward_scale": number(0.0, 1000.0, lo_open=True), "objective": text(("points", "match")),
    "shaping": boolean(), "endgame": boolean(), "max_moves": integer(1, 32767), "obs_blocks": _obs_blocks,
    # PPO
    "total_timesteps": integer(1, MAX_TIMESTEPS), "learning_rate": number(0.0, 1.0, lo_open=True),
    "anneal_lr": boolean(),
    "num_envs": integer(1, 2**20), "num_steps": integer(1, 48_000), "gamma": number(0.0, 1.0),
    "gae_lambda": number(0.0, 1.0), "num_minibatches": integer(1, 2**20), "update_epochs": integer(1, 10_000),
    "norm_adv": boolean(), "clip_coef": number(0.0, 10.0, lo_open=True), "clip_vloss": boolean(),
    "ent_coef": number(0.0, 100.0),
    "vf_coef": number(0.0, 100.0), "max_grad_norm": number(0.0, 1e6, lo_open=True),
    "target_kl": optional(number(0.0, lo_open=True)), "update_shards": optional(integer(1, 64)),
    # network
    "hidden": integer(1, 4096), "embed": integer(1, 4096), "move_features": boolean(),
    "feature_prior": number(0.0, 100.0),
    "critic": text(CRITIC_CHOICES), "critic_full_state": boolean(),
    # opponents
    "pool_rate": number(0.0, 1.0), "pool_size": integer(1, 10_000), "snapshot_every": integer(0),
    "pool_sampling": text(POOL_SAMPLING), "bot_rates": rates(_agent_spec(ladder=False)),
    # evaluation and checkpoints
    "eval_every": optional(integer(0)), "eval_deals": integer(1, 100_000),
    "eval_opponents": names(_agent_spec(ladder=True)), "checkpoint_every": integer(0),
    "final_eval_deals": integer(0), "final_eval_opponents": names(_agent_spec(ladder=True)),
}


def rollout_bytes(args: Args, num_players: int, num_sides: int, exact: bool = True) -> int:
    """Bytes of the rollout buffers of a run (``num_steps x num_envs`` rows: observation, move table, features,
    critic input and the per-move scalars), as the rollout collector (:mod:`train.rollout`) allocates them;
    ``exact=False``: a bound above it that needs no import of the engine (observation length 1,024, 16 move
    features, critic input 1,024)."""
    M = args.max_moves
    if exact:
        from agents.features import NUM_MOVE_FEATURES, critic_state_size
        from cassino_env.obs import obs_size

        D, F, C = obs_size(num_players, num_sides, args.obs_blocks), NUM_MOVE_FEATURES, critic_state_size(num_players)
    else:
        D, F, C = 1024, 16, 1024
    F = F if args.move_features else 0
    C = C if args.critic_full_state and args.critic == "separate" else 0
    per_row = 4 * D + M * (1 + 1 + 1 + 8 + 1) + 4 * M * F + 4 * C + 8 + 4 + 4 + 1 + 4 + 1 + 8
    return args.num_steps * args.num_envs * per_row


def _machine_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not POSIX: no bound
        return 2**62


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


def _check_combination(args: Args) -> None:
    """The checks that involve several fields: the rules, the rollout length, the opponent rates, the memory."""
    rules = checked_rules(args.preset, args.num_players)
    deal_len = rules.deal_length
    if args.num_steps % deal_len:
        raise ConfigError(f"num_steps: must be a multiple of the deal length {deal_len} (rollouts hold whole "
                          f"deals), got {args.num_steps}", field="num_steps")
    if args.reward != "points":
        raise ConfigError(f"reward={args.reward!r}: the trainer plays one deal per episode (rollouts hold whole "
                          "deals), and the win reward pays only at the end of a match; use reward=points",
                          field="reward")
    if args.objective == "match" and rules.num_sides != 2:
        raise ConfigError(f"objective=match needs two sides; {args.preset} with {rules.num_players} players has "
                          f"{rules.num_sides}", field="objective")
    if args.endgame and rules.num_players != 2:
        raise ConfigError(f"endgame: the exact last round needs two seats; {args.preset} is played by "
                          f"{rules.num_players}", field="endgame")
    if args.objective == "match" and args.shaping:
        raise ConfigError("shaping pays banked deal points, which objective=match does not count: use one of them",
                          field="shaping")
    if args.num_workers > 1 and args.ray_address is None:
        raise ConfigError(f"num_workers={args.num_workers}: rollout workers are Ray actors; give ray_address (--ray "
                          "ADDRESS) too, or num_workers=1 to play the rollouts here", field="num_workers")
    if args.num_envs % args.num_workers:
        raise ConfigError(f"num_workers={args.num_workers} must divide num_envs={args.num_envs} (every worker plays "
                          "as many games)", field="num_workers")
    if args.pool_rate + sum(args.bot_rates.values()) > 1 + 1e-9:
        raise ConfigError(f"pool_rate and bot_rates add up to {args.pool_rate + sum(args.bot_rates.values()):g}: "
                          "the shares of the games must add up to at most 1", field="bot_rates")
    have = _machine_bytes()
    if rollout_bytes(args, rules.num_players, rules.num_sides, exact=False) <= have:
        return
    need = rollout_bytes(args, rules.num_players, rules.num_sides)
    if need > have:
        raise ConfigError(f"num_envs={args.num_envs} x num_steps={args.num_steps} (max_moves={args.max_moves}): the "
                          f"rollout buffers would take {need / 2**30:,.1f} GiB, more than this machine's "
                          f"{have / 2**30:,.1f} GiB of memory", field="num_envs")



#: The trainer's command-line options: one per :class:`Args` field (``--ray ADDRESS`` for ``ray_address``, as
#: ``cassino eval``'s).
TrainOptions = options_type(Args, aliases={"ray_address": ("--ray",)})


def check_options(args: Args) -> None:
    """Check every field of ``args`` and their combinations again (``Args.__post_init__`` does it when an Args is
    made; this catches one changed since, e.g. by attribute assignment).

    Raises:
        ConfigError: naming the field and the rule it breaks.
    """
    validate_fields(args, ARG_RULES)
    _check_combination(args)


#: The most env steps between two evaluations when ``eval_every`` is left at its default (null).
EVAL_EVERY_MAX = 1_000_000
#: The evaluation points (besides the one at step 0) a run gets at least, when ``eval_every`` is left at its default
#: and the run is long enough to hold that many rollouts.
EVAL_POINTS = 8


def eval_interval(eval_every: int | None, total_steps: int) -> int:
    """The env steps between evaluations: ``eval_every`` when given, else ``EVAL_EVERY_MAX`` or
    ``total_steps // EVAL_POINTS`` when that is less (at least 1); 0 means only at the end.

    >>> eval_interval(None, 9_977_856), eval_interval(None, 294_912), eval_interval(0, 294_912)
    (1000000, 36864, 0)
    """
    if eval_every is not None:
        return eval_every
    return max(1, min(EVAL_EVERY_MAX, total_steps // EVAL_POINTS))
