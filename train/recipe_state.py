"""The state of a ``cassino train`` run between its stages and across resumes: ``RUN/recipe.json``
(:class:`RecipeState`), the order its stages take (:func:`expert_order`, :func:`stage_name`,
:func:`next_stage_name`, :func:`current_stage`), and the run's best network at any time of it (:func:`best_at`, the
anytime curve).

The recipe itself (stages, gate, switch rule, budget) is :mod:`train.recipe`; this module holds only what reads and
writes its state file, so that tools reading a finished run (``scripts/anytime.py``) need nothing of the trainer.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from train.config import RECIPE_STAGES, ConfigError

#: The state file's format version.
STATE_VERSION = 1
#: The stages of the recipe, in their default order (train/recipe.py's docstring).
STAGES = RECIPE_STAGES
#: The expert stages, in their default order: turned again after the first pass.
EXPERT_STAGES = STAGES[1:]


@dataclasses.dataclass
class RecipeState:
    """The recipe's state between stages and across resumes (``RUN/recipe.json``).

    Attributes:
        elapsed_s: wall seconds the run has used (its earlier parts included).
        stage_index: the current stage's number (0 the PPO stage, then the expert stages in turns).
        stage_dir: the current stage's folder, relative to the run folder (None: not started).
        stall: gates in a row without a gain in the current stage.
        best: the best network's checkpoint, relative to the run folder (None before the first gate).
        best_stage: the stage that made it. gates: one record a gate. last_gate_s: elapsed_s at the last gate.
        done: True when the budget was spent and final.pt written.
        first_iteration_s: stage name -> wall seconds from the start of its latest stage to its first iteration's end
            (start-up included), measured in this run; what starting that kind of stage again costs at least
            (:func:`train.recipe.room_for_stage`). Absent in older files: empty.
        stage: the current stage's name, one of :data:`train.config.RECIPE_STAGES` (a stage goes on as what it is
            when a run is resumed with other ``stages``; the next is the one after it in the run's order). Absent in
            older files: None, read as the stage ``stage_dir`` names, else the ``stage_index``-th of the default
            order (:func:`train.recipe.stage_name`), the one order there was when they were written.
    """

    elapsed_s: float = 0.0
    stage_index: int = 0
    stage_dir: str | None = None
    stall: int = 0
    best: str | None = None
    best_stage: str | None = None
    gates: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    last_gate_s: float = 0.0
    done: bool = False
    first_iteration_s: dict[str, float] = dataclasses.field(default_factory=dict)
    stage: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written to ``recipe.json``."""
        return {"version": STATE_VERSION, **dataclasses.asdict(self)}

    @classmethod
    def load(cls, path: Path) -> RecipeState:
        """Read ``recipe.json``.

        Raises:
            ConfigError: a missing, unreadable or malformed file (naming it and the field; field ``resume``).
        """
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"resume: {path} is missing: not the run folder of a cassino train run with hours > 0 "
                              "(a PPO-only run resumes from its checkpoint: --resume RUN/checkpoints/latest.pt "
                              "--hours 0)", field="resume") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"resume: {path}: not readable JSON ({exc})", field="resume") from None
        if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
            raise ConfigError(f"resume: {path}: not a recipe state of version {STATE_VERSION}", field="resume")
        kinds = {"elapsed_s": (int, float), "stage_index": int, "stage_dir": (str, type(None)), "stall": int,
                 "best": (str, type(None)), "best_stage": (str, type(None)), "gates": list,
                 "last_gate_s": (int, float), "done": bool}
        for name, kind in kinds.items():
            if name not in data or not isinstance(data[name], kind) or (
                    isinstance(data[name], bool) and kind in (int, (int, float))):
                raise ConfigError(f"resume: {path}: field {name!r} missing or of the wrong type", field="resume")
        gate_kinds = {"n": int, "stage": str, "stage_index": int, "at_s": (int, float), "promoted": bool,
                      "margin": (int, float, type(None)), "se": (int, float, type(None))}
        for i, gate in enumerate(data["gates"]):
            bad = not isinstance(gate, dict) or any(
                key not in gate or not isinstance(gate[key], kind) or (isinstance(gate[key], bool) and kind is not bool)
                for key, kind in gate_kinds.items())
            if bad:
                raise ConfigError(f"resume: {path}: gates[{i}] is not a gate record (n, stage, stage_index, at_s, "
                                  "promoted, margin, se)", field="resume")
        for name, top in (("elapsed_s", 10_000 * 3600.0), ("stage_index", 1_000_000), ("stall", 1_000_000)):
            if not 0 <= data[name] <= top:  # NaN fails too
                raise ConfigError(f"resume: {path}: {name} must be 0 .. {top:g}, got {data[name]!r:.40}",
                                  field="resume")
        for name in ("stage_dir", "best"):  # paths inside the run folder only
            value = data[name]
            if value is not None and (Path(value).is_absolute() or ".." in Path(value).parts):
                raise ConfigError(f"resume: {path}: {name} must be a path inside the run folder, got {value!r:.80}",
                                  field="resume")
        first = data.get("first_iteration_s", {})
        if not isinstance(first, dict) or any(
                not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 1e9
                for k, v in first.items()):
            raise ConfigError(f"resume: {path}: field 'first_iteration_s' must map stage names to seconds",
                              field="resume")
        stage = data.get("stage")
        if stage is not None and stage not in RECIPE_STAGES:
            raise ConfigError(f"resume: {path}: field 'stage' must be one of {', '.join(RECIPE_STAGES)}, got "
                              f"{stage!r:.40}", field="resume")
        named = Path(data["stage_dir"]).name.partition("_")[2] if data["stage_dir"] else None
        if stage is not None and named in RECIPE_STAGES and named != stage:
            raise ConfigError(f"resume: {path}: field 'stage' is {stage!r} but stage_dir {data['stage_dir']!r} is a "
                              f"{named} stage's folder", field="resume")
        return cls(**{k: data[k] for k in kinds}, first_iteration_s={k: float(v) for k, v in first.items()},
                   stage=stage)


def expert_order(stages: tuple[str, ...]) -> tuple[str, ...]:
    """The expert stages in the order a run turns them: as ``stages`` gives them (``ppo`` left out), or all of
    :data:`EXPERT_STAGES` where it gives none (a PPO-alone recipe, whose expert stages are all skipped).

    >>> expert_order(("ppo", "early_rounds", "last_round")), expert_order(("ppo",))
    (('early_rounds', 'last_round'), ('last_round', 'early_rounds', 'consolidate'))
    """
    return tuple(s for s in stages if s != "ppo") or EXPERT_STAGES


def stage_name(index: int) -> str:
    """The stage of a stage number in the default order (:data:`EXPERT_STAGES`): 0 is ``ppo``, then the expert
    stages in turns; how a state file written before stages had an order reads its stage (:func:`current_stage`).

    >>> [stage_name(i) for i in range(6)]
    ['ppo', 'last_round', 'early_rounds', 'consolidate', 'last_round', 'early_rounds']
    """
    return "ppo" if index == 0 else EXPERT_STAGES[(index - 1) % len(EXPERT_STAGES)]


def next_stage_name(name: str, order: tuple[str, ...]) -> str:
    """The stage that follows ``name`` in a run whose expert stages turn in ``order`` (:func:`expert_order`): the
    one after it, the last followed by the first; the first after ``ppo`` or after a stage ``order`` lacks (a run
    resumed with other ``stages``).

    >>> order = ("early_rounds", "last_round")
    >>> [next_stage_name(n, order) for n in ("ppo", "early_rounds", "last_round", "consolidate")]
    ['early_rounds', 'last_round', 'early_rounds', 'early_rounds']
    """
    return order[(order.index(name) + 1) % len(order)] if name in order else order[0]


def current_stage(state: RecipeState) -> str:
    """The current stage of a run's state: its ``stage``; in a state file written before stages had an order (no
    ``stage``), the stage its ``stage_dir`` names, else the ``stage_index``-th of the one order there was then
    (:data:`EXPERT_STAGES`, whatever ``stages`` selected).

    >>> current_stage(RecipeState(stage_index=3)), current_stage(RecipeState(stage_index=3, stage_dir="stages/03_x"))
    ('consolidate', 'consolidate')
    >>> current_stage(RecipeState(stage_index=3, stage_dir="stages/03_last_round"))
    'last_round'
    """
    if state.stage is not None:
        return state.stage
    named = Path(state.stage_dir).name.partition("_")[2] if state.stage_dir else ""
    return named if named in STAGES else stage_name(state.stage_index)


def best_at(run_dir: str | Path, seconds: float) -> tuple[Path, dict[str, Any]] | None:
    """The run's best network at ``seconds`` of the run (its wall clock, as ``recipe.json`` counts it): the
    ``checkpoints/best_gate_NNNN.pt`` of the last gate promoted at or before then, with that gate's record; None
    before the first gate or when the run has not reached ``seconds`` (the anytime curve: docs/recipe.md).

    Raises:
        ConfigError: ``run_dir`` is not a recipe run (field ``resume``), or a promoted gate's checkpoint is missing.
    """
    run = Path(run_dir)
    state = RecipeState.load(run / "recipe.json")
    if seconds > state.elapsed_s:
        return None
    promoted = [g for g in state.gates if g["promoted"] and g["at_s"] <= seconds]
    if not promoted:
        return None
    gate = promoted[-1]
    path = run / "checkpoints" / f"best_gate_{gate['n']:04d}.pt"
    if not path.is_file():
        raise ConfigError(f"resume: {path} is missing: the best network of gate {gate['n']} (every best of a run is "
                          "kept in its checkpoints/ folder)", field="resume")
    return path, gate
