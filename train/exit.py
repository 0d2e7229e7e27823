"""Expert iteration's old module name: the code is the package :mod:`train.expert` (options, labels, collect, update,
loop); this module re-exports its public names, so ``from train.exit import ExitArgs, train`` and
``python -m train.exit`` keep working. New code imports from ``train.expert.*``."""

from __future__ import annotations

import os
import sys

import tyro

from train.expert.collect import (
    PROGRESS_SECONDS,
    UNSEARCHED_GAP,
    LabelCollector,
    LabelWorker,
    LocalLabels,
    RayLabels,
    searched_values,
)
from train.expert.labels import (
    LABEL_ARRAYS,
    LABEL_ROWS,
    LABEL_RULES,
    Labels,
    array_headers,
    augmented,
    check_label_file,
    check_label_rows,
    join_labels,
    label_files,
    load_joined_labels,
    load_label_paths,
    mirror_labels,
)
from train.expert.loop import IterationHook, main, train
from train.expert.options import (
    DEFAULT_CONFIG,
    EXIT_RULES,
    HEAD_INPUTS,
    HEADS,
    ROLLOUTS,
    SEARCHES,
    TARGETS,
    TRAIN_PARAMS,
    ExitArgs,
    ExitOptions,
    resolve_args,
)
from train.expert.update import label_stats, network_probs, policy_targets, trained_parameters, update

__all__ = [
    "DEFAULT_CONFIG", "EXIT_RULES", "HEADS", "HEAD_INPUTS", "LABEL_ARRAYS", "LABEL_ROWS", "LABEL_RULES",
    "PROGRESS_SECONDS", "ROLLOUTS", "SEARCHES", "TARGETS", "TRAIN_PARAMS", "UNSEARCHED_GAP", "ExitArgs", "ExitOptions",
    "IterationHook", "LabelCollector", "LabelWorker", "Labels", "LocalLabels", "RayLabels", "array_headers",
    "augmented", "check_label_file", "check_label_rows", "join_labels", "label_files", "label_stats",
    "load_joined_labels", "load_label_paths", "main", "mirror_labels", "network_probs", "policy_targets",
    "resolve_args", "searched_values", "train", "trained_parameters", "update",
]

if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(tyro.cli(main, config=(tyro.conf.FlagCreatePairsOff,)))
