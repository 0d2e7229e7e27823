"""The options of the training scripts, by their old address: every public name of three modules, re-exported.

``train.config`` was one module of five concerns; they now live apart, and this module keeps their names where the
trainers, the tests and the docs have always found them (``from train.config import Args, ConfigError``,
``config.claim_run_dir(...)``):

- :mod:`train.options`: the option machinery, the same for every trainer: the field rules (:func:`integer`,
  :func:`number`, ..., :func:`validate_fields`, :class:`ConfigError`), YAML configs (:func:`load_config`,
  :func:`make_args`), the command line (:func:`options_type`, :func:`parse_flag`, :func:`given_options`,
  :func:`explicit_fields`), the merge of defaults, file and flags (:func:`resolve_args`, which takes the config read
  by default as a parameter) and of a resumed run's options (:func:`resume_args`);
- :mod:`train.run_folder`: the options every run starts with (:class:`RunOptions`), the run folder and its lock
  (:func:`default_run_dir`, :func:`claim_run_dir`, :class:`RunLock`, :func:`run_dir_of_checkpoint`);
- :mod:`train.ppo_args`: the self-play trainer's :class:`Args`, the rule of every field (:data:`ARG_RULES`), the
  checks of their combinations, :data:`TrainOptions` and its default config (:func:`preset_config`).

New code may import from those modules directly; nothing is defined here.
"""

from __future__ import annotations

from cassino_env.errors import excerpt, shown_name
from train.options import (
    CONFIGS_DIR,
    MAX_NAME_CHARS,
    RUN_CONTROL_FIELDS,
    ConfigError,
    DefaultConfig,
    FieldRule,
    args_to_dict,
    boolean,
    checked_rules,
    device,
    explicit_fields,
    field_docs,
    find_config,
    given_options,
    hparams_table,
    integer,
    load_config,
    looked_at,
    make_args,
    names,
    number,
    optional,
    options_type,
    parse_flag,
    precision,
    rates,
    resolve_args,
    resolve_run_device,
    resume_args,
    text,
    validate_fields,
)
from train.ppo_args import (
    ARG_RULES,
    CRITIC_CHOICES,
    DEFAULT_CONFIG,
    EVAL_EVERY_MAX,
    EVAL_POINTS,
    MAX_TIMESTEPS,
    POOL_SAMPLING,
    RECIPE_STAGES,
    Args,
    TrainOptions,
    check_options,
    eval_interval,
    preset_config,
    rollout_bytes,
)
from train.run_folder import (
    LOCK_NAME,
    NAME_MAX_BYTES,
    RunLock,
    RunOptions,
    check_run_dir,
    check_run_path,
    claim_run_dir,
    default_run_dir,
    run_dir_of_checkpoint,
)

__all__ = [
    "ARG_RULES", "CONFIGS_DIR", "CRITIC_CHOICES", "DEFAULT_CONFIG", "EVAL_EVERY_MAX", "EVAL_POINTS", "LOCK_NAME",
    "MAX_NAME_CHARS", "MAX_TIMESTEPS", "NAME_MAX_BYTES", "POOL_SAMPLING", "RECIPE_STAGES", "RUN_CONTROL_FIELDS",
    "Args", "ConfigError", "DefaultConfig", "FieldRule", "RunLock", "RunOptions", "TrainOptions", "args_to_dict",
    "boolean", "check_options", "check_run_dir", "check_run_path", "checked_rules", "claim_run_dir", "device",
    "default_run_dir", "eval_interval", "excerpt", "explicit_fields", "field_docs", "find_config", "given_options",
    "hparams_table", "integer", "load_config", "looked_at", "make_args", "names", "number", "optional",
    "options_type", "parse_flag", "precision", "preset_config", "rates", "resolve_args", "resolve_run_device",
    "resume_args",
    "rollout_bytes", "run_dir_of_checkpoint", "shown_name", "text", "validate_fields",
]
