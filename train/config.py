"""Options of a training script: its ``Args`` dataclass, YAML config files and the command line.

The dataclass's defaults are the only source of the built-in values. A YAML config (``configs/ppo_<preset>.yaml``)
is a mapping of some of its fields, those that differ from the defaults; the command line's options (one per field,
help from the docstring under the field) override the file, and the file overrides the defaults. A resumed run
takes the checkpoint's config, overridden by the options given again. The functions take the dataclass (``cls``)
so that every training script can use them; ``train.ppo_selfplay`` binds them to its ``Args``.

Also here, the run's bookkeeping: the default run folder name and the hyperparameter table logged to TensorBoard.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
import time
import typing
from pathlib import Path
from typing import Annotated, Any, TypeVar

import tyro
import yaml

#: The folder of the YAML configs.
CONFIGS_DIR = Path(__file__).resolve().parent.parent / "configs"
#: The config read when neither ``--config`` nor a preset with a config of its own is given.
DEFAULT_CONFIG = CONFIGS_DIR / "ppo_classic.yaml"

_Args = TypeVar("_Args")


class ConfigError(ValueError):
    """A bad config file or option (the message names the file and field)."""


# --- YAML files -------------------------------------------------------------------------------------------------------


def load_config(cls: type, path: str | Path) -> dict[str, Any]:
    """Read a YAML config (a mapping of fields of the dataclass ``cls``); unknown fields are an error.

    Raises:
        ConfigError: naming the file and the problem.
    """
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a config must be a mapping of {cls.__name__} fields")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"{path}: unknown field {unknown[0]!r} (fields are those of {cls.__module__}."
                          f"{cls.__qualname__})")
    return data


def make_args(cls: type[_Args], values: dict[str, Any]) -> _Args:
    """``cls`` from a dict of field values; YAML lists become tuples where the field is a tuple, and so does a
    single string (``eval_opponents: ladder``)."""
    hints = typing.get_type_hints(cls)
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
    path = CONFIGS_DIR / f"ppo_{preset}.yaml"
    return path if preset and path.is_file() else DEFAULT_CONFIG


# --- the command line -------------------------------------------------------------------------------------------------

_METAVARS = {int: "INT", float: "FLOAT", str: "STR", bool: "{True,False}"}


def field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of a dataclass (what tyro shows as help)."""
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    docs = {}
    for node, nxt in zip(body, body[1:], strict=False):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str)):
            docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


def options_type(cls: type, name: str = "TrainOptions") -> type:
    """The command-line options of ``cls``: every field made optional, default None (= not given), plus
    ``--config``, so that a flag given on the command line always overrides the config file, even at its default
    value."""
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    defaults = args_to_dict(cls())
    fields: list[Any] = [("config", Annotated[Path | None, tyro.conf.arg(
        help="YAML file of options that differ from the built-in defaults; options given here override it",
        metavar="FILE",
        help_behavior_hint="(default: configs/ppo_PRESET.yaml for --preset PRESET, else configs/ppo_classic.yaml)")],
        None)]
    for f in dataclasses.fields(cls):
        t = hints[f.name]
        inner = [a for a in typing.get_args(t) if a is not type(None)] if type(None) in typing.get_args(t) else [t]
        metavar = _METAVARS.get(inner[0]) if len(inner) == 1 else None
        if typing.get_origin(t) is dict:
            metavar = "NAME RATE [NAME RATE ...]"
        elif typing.get_origin(t) is tuple:
            metavar = "NAME [NAME ...]"
        arg = tyro.conf.arg(help=docs.get(f.name), metavar=metavar,
                            help_behavior_hint=f"(built-in default: {defaults[f.name]!r})")
        fields.append((f.name, Annotated[t | None, arg], None))
    return dataclasses.make_dataclass(name, [(n, t, dataclasses.field(default=d)) for n, t, d in fields])


def resolve_args(cls: type[_Args], options: Any) -> _Args:
    """Merge: built-in defaults < config file < options given. The file is ``options.config``, or without one
    the preset's own (``--preset cicera`` reads ``configs/ppo_cicera.yaml``, see :func:`preset_config`)."""
    given = {f.name: getattr(options, f.name) for f in dataclasses.fields(options)
             if f.name != "config" and getattr(options, f.name) is not None}
    values = load_config(cls, options.config if options.config is not None else preset_config(given.get("preset")))
    values.update(given)
    return make_args(cls, values)


def resume_args(args: _Args, saved: dict[str, Any], explicit: set[str] | None = None) -> _Args:
    """The options of a resumed run: the checkpoint's (``saved``, its ``train`` entry: ``config`` and ``run_dir``),
    overridden by the fields of ``args`` given explicitly (``explicit``; None: every field). The run goes on in its
    own folder unless ``run_dir`` is given."""
    values = dict(saved["config"])
    given = args_to_dict(args)
    for name in (explicit if explicit is not None else given):
        values[name] = given[name]
    if given["run_dir"] is None or (explicit is not None and "run_dir" not in explicit):
        values["run_dir"] = saved["run_dir"]
    return make_args(type(args), values)


# --- the run's bookkeeping --------------------------------------------------------------------------------------------


def default_run_dir(args: Any) -> Path:
    """``runs_root/{preset}__{exp_name}__{seed}__{unix time}`` (CleanRL's run name with the preset first)."""
    return Path(args.runs_root) / f"{args.preset}__{args.exp_name}__{args.seed}__{int(time.time())}"


def hparams_table(args: Any) -> str:
    """The options as a Markdown table (TensorBoard's ``hyperparameters`` text)."""
    return "|param|value|\n|-|-|\n" + "\n".join(f"|{k}|{v}|" for k, v in args_to_dict(args).items())
