"""The one trainer: ``cassino train`` runs the whole recipe, from a fresh network, in a compute budget (``--hours``).

Usage::

    cassino train                                  # the default budget (hours: 0.3, 18 min), then the evaluation table
    cassino train --hours 2.5 --seed 7             # the champion's budget
    cassino train --resume runs/RUN --hours 5      # on from where RUN stopped, with a larger budget
    cassino train --hours 2.5 --ray local --num-workers 2 --threads 2   # the games and labels on 2 Ray actors
    cassino train --hours 0                        # self-play PPO alone (train/ppo_selfplay.py), as before
    cassino plot runs/RUN                          # the whole run on one time axis

The recipe, as one algorithm
----------------------------
The run is a sequence of **stages**, each a trainer of its own writing into ``RUN/stages/NN_NAME/``:

1. ``ppo``: self-play PPO from a fresh network (:mod:`train.ppo_selfplay`, the options of :class:`train.config.Args`;
   ``total_timesteps`` caps the stage and sets its learning-rate schedule).
2. ``last_round`` (two seats only, where the last round is solved exactly): expert iteration on a **last-round head**
   trained on the exact values of every move of the positions the network reaches (``configs/stage_last_round.yaml``;
   ``stage_configs`` names another folder of these files).
3. ``early_rounds``: expert iteration on an **earlier-rounds head** that reads cards by suit class, trained on the
   values the search over the current network gives (``configs/stage_early_rounds.yaml``; the search's own leaves
   for the seat count: :class:`agents.search.SearchAgent`'s default).
4. ``consolidate``: passes over all the earlier-rounds labels of the run so far (``configs/stage_consolidate.yaml``).

Every preset and seat count runs these stages (:func:`cassino_env.rules.make_rules`: classic 2-4, Cicera 4 in two
partnerships, bga 2-4 and 6 in three): with more than two seats ``last_round`` is skipped (no seat knows every card
in the last round, so there are no exact values), and where a deal is one round (Cicera: :func:`one_round`) stages
3 and 4 train the last-round head instead, the one head that plays there, on the search's labels.

After stage 4 the expert stages (2-4) are turned again, each from the run's best network, until the budget is
spent. ``stages`` chooses which run and in what order: ``ppo`` first, then the expert stages turned in the order it
lists them (:func:`expert_order`; the numbers above are the default order's). A run resumed with other ``stages``
goes on with the stage in progress where they keep it, leaves it where they drop it, and then turns the new order
from the stage after it (:func:`next_stage_name`). Every stage starts from the **best** network so far.

The gate (AlphaZero's evaluator). Every ``gate_every_s`` seconds of training, and when a stage ends, the stage's
current network (the *candidate*) plays the best network head to head, both alone (argmax, no exact last round), on
``gate_deals`` duplicate deals seated as ``cassino eval`` seats a pair (:func:`gate_match`: every seat arrangement
of the two, 2 games a deal with two sides, partnerships included, 6 with three sides; a game's margin the candidate's
sides' mean points minus the best's) whose seeds are ``60,000,000 + gate number x gate_deals`` onward (disjoint from the
evaluation seeds: 0 onward for ``cassino eval``, 10,000,000 + seed in runs, 20,000,000 + seed for the table after
training, 41,000,001 to 47,000,001 for the docs' held-out figures). It **replaces the best only when ahead**: its
mean margin is above 0 points a deal by at least ``gate_min_z`` standard errors of that margin (a *gain*). So the best
network never gets worse by the gate's measure, and within a stage the best stays put until the candidate has
pulled clear of it, so that slow gains add up until the gate can see them. ``final.pt`` is the best.

The switch rule (what a person decided between runs). A stage ends after ``gate_patience`` gates in a row without a
gain, and the next stage starts from the best network; an expert stage's first gate does not count against it (its
new head starts silent). Why this rule: the hand-run stages of docs/expert_iteration_history.md each gained most
early and then flattened (PPO after about 1M steps, the heads after 15-20 iterations), and a stage whose candidate
cannot beat the best by more than the gate's noise is spending the budget where nothing measured comes back. A stage
also ends when the budget is spent, or when the budget left is shorter than its last iteration (its first counted
from the stage's start), and then it is gated once more; an expert stage does not start when the budget left is
shorter than its first iteration measured earlier in the run, or when it never ran, than the shortest first
iteration of an expert stage in the run (:func:`first_iteration_estimate`, :func:`room_for_stage`).

Budget. ``hours`` counts the whole run's wall clock (the gates, the stages' start-up and the resumed parts included;
the evaluation table after training is not counted, nor the numba kernels' one-off compile of every stage, done
before the clock starts on a fresh run and on a resumed one: :func:`warm_up`). A run stopped by Ctrl-C, a crash or
its budget resumes with ``--resume RUN`` (or any checkpoint in it) and a ``--hours`` larger than the time it has
used: the current stage goes on from its last checkpoint, the best network and the gate's history from
``RUN/recipe.json``.

Files: ``RUN/config.yaml`` (the options), ``RUN/recipe.json`` (the state: stage, best, gates, time used),
``RUN/checkpoints/best.pt`` (the best network; ``best_gate_NNNN.pt`` each best in turn, NNNN the gate that
promoted it, so the best at any time of the run can be played), ``final.pt`` and ``latest.pt`` (copies of the best at
the end),
``RUN/gates/`` (candidates), ``RUN/stages/NN_NAME/`` (each stage's run folder), and TensorBoard events in ``RUN/``
whose x axis is **seconds of the run**: ``eval/winrate_vs_advanced`` (with its interval) and ``eval/points_vs_advanced``
(the best network alone against ``advanced`` on 1,000 duplicate deals seated as the gate's, seed 10,000,000 + seed, at
each promotion),
``gate/margin``, ``gate/margin_se``, ``gate/promoted``, ``gate/stage`` (the stage's index in :data:`STAGES`), and
``eval/proxy_regret`` when a proxy set of the preset and seat count is built (:mod:`train.proxy`; otherwise one line
says so). Every checkpoint records its provenance (:mod:`agents.provenance`): the command, the code's commit, the
seed, the stage and the run's wall time; the best's also the preset and seats.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import tyro
import yaml

from train import config
from train.config import Args, ConfigError, TrainOptions
from train.recipe_state import (  # noqa: F401 (re-exported: best_at, STATE_VERSION, the stages' order)
    EXPERT_STAGES,
    STAGES,
    STATE_VERSION,
    RecipeState,
    best_at,
    current_stage,
    expert_order,
    next_stage_name,
    stage_name,
)

#: The first deal seed of the gates (module docstring).
GATE_SEED = 60_000_000
#: Duplicate deals of the best network's evaluation against ``advanced`` at each promotion.
CURVE_DEALS = 1000
#: Last-round label files kept while the stage runs (its replay window, 6 in configs/stage_last_round.yaml, and more).
KEEP_LABELS = 12
def gate_match(candidate: Any, best: Any, rules: Any, deals: int, seed: int, max_moves: int = 64) -> dict[str, Any]:
    """The gate's match (module docstring): ``candidate`` and ``best`` on ``deals`` duplicate deals seeded ``seed``
    onward, seated as ``cassino eval`` seats a pair (:func:`train.arena.pair_deals`: every seat arrangement of the
    two, partners one agent; 2 games a deal with two sides, 4 seats in partnerships included, 6 with three sides),
    scored from the candidate's sides: a game's margin is the candidate's sides' mean deal points minus the best's.
    Antisymmetric (``gate_match(b, a)`` is minus ``gate_match(a, b)`` on the same deals for agents that play the same
    moves in the same positions) and 0 exactly, deal by deal, for a candidate that plays as the best does.

    Returns:
        :func:`train.arena.pair_deals`'s dict: ``points`` (the candidate's mean margin a deal, points), ``points_se``
        (its standard error over the deals), ``per_deal`` (float64[deals]), ``winrate`` (the candidate's share of the
        top score), ``games``.

    Raises:
        ValueError: ``deals`` < 1.
    """
    from train.arena import pair_deals

    return pair_deals(candidate, best, rules, deals, seed, max_moves=max_moves)


def one_round(rules: Any) -> bool:
    """Whether a deal of ``rules`` is one round (the hands take the whole stock: Cicera's 12 cards to each of 4
    seats), so the stock is empty from the first move and the network's earlier-rounds head never plays.

    >>> from cassino_env.rules import make_rules
    >>> one_round(make_rules("classic", 4)), one_round(make_rules("bga", 6)), one_round(make_rules("cicera", 4))
    (False, False, True)
    """
    return rules.rounds_per_deal == 1


def one_round_values(values: dict[str, Any]) -> dict[str, Any]:
    """An earlier-rounds stage's options (``early_rounds``, ``consolidate``) for a deal of one round
    (:func:`one_round`): the head it trains is the last-round head, of the stage's ``early_rounds_head`` width, the
    one head that plays there (it reads cards by id; with more than two seats no round is solved exactly, so the
    search labels every decision, the last round's too). Options without the earlier-rounds head are returned as
    they are.

    >>> one_round_values({"early_rounds_head": 16, "early_rounds_input": "classes",
    ...                   "train_params": "early_rounds_head"})
    {'train_params': 'last_round_head', 'last_round_head': 16}
    """
    if values.get("train_params") != "early_rounds_head" and not values.get("early_rounds_head"):
        return values
    out = {k: v for k, v in values.items()
           if k not in ("early_rounds_head", "early_rounds_input", "fresh_early_rounds_head")}
    if values.get("train_params") == "early_rounds_head":
        out["train_params"] = "last_round_head"
    if values.get("early_rounds_head"):
        out["last_round_head"] = values["early_rounds_head"]
    return out


def warm_up(rules: Any, stages: tuple[Any, ...] = ()) -> None:
    """Compile the numba kernels the recipe's stages use before its clock starts, on a fresh run and on a resumed
    one alike: the rules core, the environment and the exact last round (:func:`train.arena.warm_kernels`), the
    scripted bots' (one deal between ``advanced`` bots, the search's rollout policy), and for each expert stage
    in ``stages`` (their :class:`train.exit.ExitArgs`) one tiny iteration of its games and labels
    (:func:`train.expert.loop.warm_up`: the observation, the move features, the search, the threaded exact
    solves). Cached on disk after a machine's first run, when this takes seconds."""
    import numpy as np

    from agents.bots import make_bot
    from train.arena import play_games, warm_kernels
    from train.expert.loop import warm_up as warm_stage

    warm_kernels(rules)
    play_games([make_bot("advanced", rules)], rules, np.array([0], dtype=np.int64),
               np.zeros((1, rules.num_players), dtype=np.int64), np.random.default_rng(0), until="deal")
    for stage_args in stages:
        warm_stage(stage_args, rules)


def first_iteration_estimate(name: str, measured: dict[str, float]) -> tuple[float | None, str]:
    """The seconds the first iteration of expert stage ``name`` will take at least (start-up included), from the
    run's own measures (:attr:`RecipeState.first_iteration_s`): that stage's when it started before, else the shortest
    of the other expert stages' (each starts up alike: the network loaded, its iteration-0 evaluation, thousands of
    decisions played and labelled), else None (nothing measured yet). Returns it and what it is, for the line."""
    if name in measured:
        return measured[name], "its first iteration earlier in this run"
    others = [measured[k] for k in EXPERT_STAGES if k in measured]
    if others:
        return min(others), "the shortest first iteration of an expert stage in this run"
    return None, "nothing measured"


def room_for_stage(left_s: float, estimate_s: float | None) -> bool:
    """Whether an expert stage may start with ``left_s`` seconds of the budget left: not when its first iteration,
    as long as ``estimate_s`` (:func:`first_iteration_estimate`; None: nothing measured yet, it starts and measures
    it), would end past the budget (it would overrun by the rest of that iteration and its gate)."""
    return left_s > 0 and (estimate_s is None or left_s >= estimate_s)


def gate_interval(args: Args) -> float:
    """Seconds of training between gates: ``gate_every_s``, or when 0 the budget / 12 kept within 60-600 s.

    >>> gate_interval(Args(hours=0.3)), gate_interval(Args(hours=2.5)), gate_interval(Args(hours=0.01))
    (90.0, 600.0, 60.0)
    """
    if args.gate_every_s > 0:
        return float(args.gate_every_s)
    return float(min(600.0, max(60.0, args.hours * 3600.0 / 12)))


def main(options: Annotated[TrainOptions, tyro.conf.OmitArgPrefixes, tyro.conf.arg(name="")]) -> int:  # type: ignore[valid-type]
    """Train an agent: the whole recipe in ``--hours`` (0: self-play PPO alone), then evaluate the final network
    against the bot ladder (module docstring). Exit codes: 0 done, 2 bad input (one ``error:`` line), 1 a run that
    stopped (one ``error:`` line), 130 Ctrl-C (one line: what is saved and the resume command)."""
    from train import ppo_selfplay

    return ppo_selfplay.run_main(options, train_any)


def train_any(args: Args, explicit: set[str] | None = None) -> Path:
    """The recipe when ``args.hours`` > 0, else self-play PPO alone (:func:`train.ppo_selfplay.train`). A resumed run
    goes on as what it is: ``--resume`` of a PPO run's checkpoint (no ``recipe.json`` in its run folder) resumes that
    PPO run, unless ``--hours`` is given again."""
    from train.ppo_selfplay import train as ppo_train

    if args.resume is not None and not _is_recipe_run(args.resume) and (explicit is None or "hours" not in explicit):
        return ppo_train(args, explicit)
    if args.hours > 0:
        return train(args, explicit)
    return ppo_train(args, explicit)


def _is_recipe_run(resume: str) -> bool:
    """Whether ``--resume`` names a recipe run: its folder, or a file in its ``checkpoints/``, with a
    ``recipe.json``."""
    path = Path(resume)
    try:
        folder = path if path.is_dir() else path.parent.parent
        return (folder / "recipe.json").is_file()
    except OSError:
        return False


def train(args: Args, explicit: set[str] | None = None) -> Path:
    """Run the recipe (module docstring) in ``args.hours``; return ``RUN/checkpoints/final.pt``, the best network.

    Args:
        args: the options (``hours`` > 0). With ``resume`` (the run folder, or a file in it): the run's saved options,
            overridden by ``explicit``.
        explicit: the options given on the command line (with ``resume``); None: all of them.

    Raises:
        ConfigError: a bad option, a run folder that may not be written to, a run to resume that is not one.
        agents.ppo_agent.CheckpointError: a stage checkpoint that cannot be resumed.
        train.stopping.RunInterrupted: Ctrl-C (the state is saved; the message gives the resume command).
    """
    runner = Recipe(args, explicit)
    try:
        return runner.run()
    finally:
        runner.release()


class Recipe:
    """One recipe run: its options, folder, state and best network (:func:`train` drives it)."""

    def __init__(self, args: Args, explicit: set[str] | None) -> None:
        from cassino_env.obs import uses_default_blocks
        from cassino_env.rules import make_rules

        self.state = RecipeState()
        resuming = args.resume is not None
        if resuming:
            self.run_dir = _run_folder_of(args.resume)
            self.state = RecipeState.load(self.run_dir / "recipe.json")
            saved = _saved_config(self.run_dir)
            args = config.resume_args(args, {"config": saved}, explicit, source=str(self.run_dir / "config.yaml"))
            args = dataclasses.replace(args, resume=None)
        else:
            self.run_dir = Path(args.run_dir) if args.run_dir else config.default_run_dir(args)
        if args.hours <= 0:
            raise ConfigError("hours: must be > 0 for the recipe (0 runs self-play PPO alone)", field="hours")
        if len(set(args.stages)) != len(args.stages):
            raise ConfigError(f"stages: each stage once, got {' '.join(args.stages)}", field="stages")
        if not args.stages or args.stages[0] != "ppo":
            raise ConfigError("stages: the recipe starts from a fresh network, so its stages begin with ppo (an expert "
                              "stage alone on a network you have: cassino exit --init checkpoint:PATH), got "
                              f"{' '.join(args.stages) or 'none'}", field="stages")
        if args.endgame or not uses_default_blocks(args.obs_blocks) or not args.move_features:
            raise ConfigError("the recipe's expert stages read the default observation with move features and train "
                              "without endgame (give --hours 0 for a PPO run with endgame, obs_blocks or "
                              "move_features false)", field="hours")
        if resuming and self.state.elapsed_s >= args.hours * 3600:
            raise ConfigError(f"hours: the run has used {self.state.elapsed_s / 3600:.2f} h already: give a larger "
                              "--hours to go on", field="hours")
        self.state.done = False  # a larger budget: the run goes on (a run that ran out of stages ends again at once)
        self.args = args
        self.order = expert_order(args.stages)  # the expert stages' turn, as stages gives them
        self.state.stage = current_stage(self.state)
        self.rules = make_rules(args.preset, args.num_players)
        self.notes: list[str] = []  # lines said once when the run starts: what these rules change in the recipe
        warm: list[Any] = []  # the expert stages' options, their kernels compiled before the clock starts
        for name in EXPERT_STAGES:  # the stage files are read and checked against these rules now, not when the
            if name in args.stages and not self.skipped_for_seats(name):  # stage starts hours later
                warm.append(self.expert_args(name, Path("."), None, check_only=True))
        if one_round(self.rules) and any(n in args.stages for n in ("early_rounds", "consolidate")):
            self.notes.append(f"a deal of {self.rules.preset} at {self.rules.num_players} seats is one round (the "
                              "stock is empty from the first move): early_rounds and consolidate train the last-round "
                              "head (the one that plays) on the search's labels, not an earlier-rounds head")
        if "last_round" in args.stages and self.skipped_for_seats("last_round"):
            self.notes.append(f"last_round is skipped: with {self.rules.num_players} seats no seat knows every card "
                              "in the last round, so there are no exact values to train its head on (two seats only)")
        from train.arena import arrangements

        # the gate's games a deal, as the gate line says them (the seat arrangements of a pair)
        arr = len(arrangements(self.rules))
        self.seatings = "" if arr == 2 else f" x {arr} seatings"
        self._proxy: Any = None
        self._proxy_looked = False
        self.budget_s = args.hours * 3600.0
        self.gate_every = gate_interval(args)
        warm_up(self.rules, tuple(warm))  # the one-off numba compile is not the budget's (minutes on a first run)
        self.lock = config.claim_run_dir(self.run_dir, resuming=resuming, reuse=args.reuse_run_dir)
        self.writer: Any = None
        self.t_start = time.time()
        self.elapsed_before = self.state.elapsed_s
        self._best_agent: Any = None
        self._curve_bot: Any = None
        self.stopped_by_gate = False
        self.last_hook_s: float | None = None  # elapsed() at the stage's last iteration (None: none yet)
        self.stage_start_s = 0.0  # elapsed() when the current stage started or resumed

    # --- bookkeeping ------------------------------------------------------------------------------------------------
    def elapsed(self) -> float:
        """Wall seconds of the run so far, its earlier parts included."""
        return self.elapsed_before + (time.time() - self.t_start)

    def left(self) -> float:
        """Seconds of the budget left."""
        return self.budget_s - self.elapsed()

    def save_state(self) -> None:
        """Write ``recipe.json`` atomically."""
        from agents.files import atomic_write

        self.state.elapsed_s = self.elapsed()
        text = json.dumps(self.state.to_dict(), indent=1).encode("utf-8")
        atomic_write(self.run_dir / "recipe.json", lambda f: f.write(text))

    def release(self) -> None:
        """Close the writer and drop the run folder's lock."""
        if self.writer is not None:
            self.writer.close()
        self.lock.release()

    def say(self, text: str) -> None:
        """A progress line of the recipe: the stage, the text, the budget used and left."""
        name = self.stage_now()
        print(f"[recipe {name}] {text} | {self.budget_used()}", flush=True)

    def budget_used(self) -> str:
        """The budget used and left: ``6m05s of 18m00s used, 11m55s left``."""
        from train.run import fmt_time

        return (f"{fmt_time(self.elapsed())} of {fmt_time(self.budget_s)} used, {fmt_time(max(0.0, self.left()))} "
                "left")

    def go_on(self) -> str:
        """The command that goes on with this run at twice its budget."""
        return f"cassino train --resume {self.run_dir} --hours {self.args.hours * 2:g}"

    # --- the run ----------------------------------------------------------------------------------------------------
    def run(self) -> Path:
        """Stages until the budget is spent, then final.pt and the evaluation table."""
        from torch.utils.tensorboard import SummaryWriter

        from agents.files import atomic_write
        from train.run import RunInterrupted, final_evaluation, fmt_time

        (self.run_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
        text = yaml.safe_dump(config.args_to_dict(self.args), sort_keys=False).encode("utf-8")
        atomic_write(self.run_dir / "config.yaml", lambda f: f.write(text))
        self.writer = SummaryWriter(str(self.run_dir))
        stages = ", ".join(s for s in self.args.stages if not self.skipped_for_seats(s))  # what runs at these seats
        self.say(f"run folder {self.run_dir}: the recipe ({stages}) in {fmt_time(self.budget_s)}"
                 f" for {self.rules.preset} at {self.rules.num_players} seats, a gate every {fmt_time(self.gate_every)}"
                 f" ({self.args.gate_deals:,} duplicate deals{self.seatings})")
        for note in self.notes:
            self.say(note)
        skipped = 0  # stages skipped in a row: a whole turn of them means nothing is left to run
        try:
            while self.left() > 0 and not self.state.done:
                name = self.stage_now()
                if self.skip(name):
                    skipped += name in self.order  # a full turn of the order skipped: nothing is left to run
                    why = f" ({self.rules.num_players} seats: the exact last round is two seats')" \
                        if self.skipped_for_seats(name) else ""
                    self.next_stage(f"{name} skipped{why}")
                    if skipped >= len(self.order):
                        self.state.done = True
                    continue
                need, what = first_iteration_estimate(name, self.state.first_iteration_s)
                if name != "ppo" and self.state.stage_dir is None and not room_for_stage(self.left(), need):
                    skipped += 1  # the stage's first iteration would end past the budget: the next kind may fit
                    self.next_stage(f"{name} not started: {fmt_time(max(0.0, self.left()))} left, under {what} "
                                    f"({fmt_time(need or 0.0)})")
                    if skipped >= len(self.order):
                        self.state.done = True
                    continue
                skipped = 0
                self.run_stage(name)
        except (RunInterrupted, KeyboardInterrupt):
            self.save_state()  # the stage's own message names its checkpoint; the run resumes as a whole, from here
            where = self.run_dir / "recipe.json"
            now = self.stage_now()
            raise RunInterrupted(f"interrupted in stage {now} ({self.budget_used()}): "
                                 f"{where} and the stage's latest checkpoint hold the run: resume the whole run with: "
                                 f"cassino train --resume {self.run_dir}") from None
        final = self.finish()
        if self.args.final_eval_deals > 0 and self.args.final_eval_opponents:
            try:
                final_evaluation(final, self.rules, self.args)
                policy_args = dataclasses.replace(self.args, final_eval_opponents=("advanced",))
                final_evaluation(final, self.rules, policy_args, network_alone=True)
            except KeyboardInterrupt:
                raise RunInterrupted(f"interrupted during the evaluation after training: nothing is lost, the trained "
                                     f"network is {final}: evaluate it with: cassino eval --agents checkpoint:{final},"
                                     f"ladder; go on training with: {self.go_on()}") from None
            # the tables above pushed the summary line out of sight: the closing line says how to go on
            print(f"the run is in {self.run_dir} ({fmt_time(self.state.elapsed_s)} of its {fmt_time(self.budget_s)} "
                  f"budget used); go on with: {self.go_on()}", flush=True)
        return final

    def skip(self, name: str) -> bool:
        """Whether stage ``name`` does not run: not in ``stages``, a last round with more than two seats (no exact
        solver), a consolidation with no labels, or an expert stage before any best network."""
        if name not in self.args.stages:
            return True
        if name != "ppo" and self.state.best is None:
            return True
        if self.skipped_for_seats(name):
            return True
        return name == "consolidate" and not self.label_folders()

    def stage_now(self) -> str:
        """The current stage's name (:attr:`RecipeState.stage`)."""
        return current_stage(self.state)

    def skipped_for_seats(self, name: str) -> bool:
        """Whether stage ``name`` never runs at these rules' seats: ``last_round`` with more than two (the exact last
        round needs a seat that knows every card: :func:`cassino_env.endgame.solvable`)."""
        return name == "last_round" and self.rules.num_players != 2

    def next_stage(self, why: str) -> None:
        """Move on to the next stage (saved); the line says which stage the rest of the budget goes to."""
        after = next_stage_name(self.stage_now(), self.order)
        runs = after in self.args.stages and not self.skipped_for_seats(after)
        self.say(why + (f"; next: {after}" if self.left() > 0 and runs else ""))
        if self.state.stage_index > 0 and not any(s in self.args.stages for s in EXPERT_STAGES):
            self.state.done = True  # PPO alone was asked for, and it has ended
        self.state.stage_index += 1
        self.state.stage, self.state.stage_dir, self.state.stall = after, None, 0
        self.save_state()

    def stage_folder(self) -> Path:
        """The current stage's folder (named and saved at its start)."""
        if self.state.stage_dir is None:
            name = self.stage_now()
            self.state.stage_dir = f"stages/{self.state.stage_index:02d}_{name}"
            self.save_state()
        return self.run_dir / self.state.stage_dir

    def label_folders(self) -> list[str]:
        """The label folders of the run's earlier-rounds stages so far."""
        stages = self.run_dir / "stages"
        if not stages.is_dir():
            return []
        return [str(d / "labels") for d in sorted(stages.iterdir())
                if d.name.endswith("_early_rounds") and any((d / "labels").glob("iter_*.npz"))]

    def run_stage(self, name: str) -> None:
        """Run the current stage until its rule or the budget stops it, then gate its final network."""
        folder = self.stage_folder()
        latest = folder / "checkpoints" / "latest.pt"
        resume = str(latest) if latest.is_file() else None
        self.say(("resuming" if resume else "starting") + f" the stage in {folder}")
        self.last_hook_s = None
        self.stage_start_s = self.elapsed()  # the first iteration's hook measures from here (start-up included)
        if name == "ppo":
            final = self.ppo_stage(folder, resume)
        else:
            final = self.expert_stage(name, folder, resume)
        if not self.stopped_by_gate:  # the stage ended by itself (its steps, its passes): its final network is gated
            self.gate(final)
        self.stopped_by_gate = False
        self.prune(stage_ended=True)
        self.next_stage(f"{name} ended")

    def ppo_stage(self, folder: Path, resume: str | None) -> Path:
        from train.ppo_selfplay import train as ppo_train

        stage_args = dataclasses.replace(self.args, run_dir=str(folder), resume=resume, hours=0.0,
                                         max_train_seconds=0.0, final_eval_deals=0, reuse_run_dir=resume is None)

        def hook(run: Any) -> str | None:
            return self.maybe_gate(lambda n: run.checkpoint(n))

        # PPO's progress lines show the run's budget, not the time its step cap would take at this speed
        hook.budget_note = lambda: f"recipe: {self.budget_used()}"  # type: ignore[attr-defined]
        return ppo_train(stage_args, None, hook=hook)

    def stage_values(self, name: str) -> dict[str, Any]:
        """The fields of stage ``name``'s config file (``stage_configs``, else configs/).

        Raises:
            ConfigError: a missing or malformed file, or a field :class:`train.exit.ExitArgs` does not have.
        """
        from train.exit import ExitArgs

        args = getattr(self, "args", None)
        folder = Path(args.stage_configs) if args is not None and args.stage_configs else config.CONFIGS_DIR
        return config.load_config(ExitArgs, folder / f"stage_{name}.yaml")

    def expert_args(self, name: str, folder: Path, resume: str | None, check_only: bool = False) -> Any:
        """The stage's :class:`train.exit.ExitArgs`: its config file, then the run's own options (the preset and
        seats among them). Where a deal is one round (:func:`one_round`: Cicera) the earlier-rounds stages train the
        last-round head instead, of the same width, on the same labels (:func:`one_round_values`). ``check_only``:
        before the run starts, the stage's options checked against the run's rules (no best network nor labels yet:
        placeholders stand for them).

        Raises:
            ConfigError: a stage file whose options these rules refuse (naming the file and the field).
        """
        from train.exit import ExitArgs

        values = self.stage_values(name)
        a = self.args
        if one_round(self.rules):
            values = one_round_values(values)
        best = "best.pt" if check_only else self.state.best
        values.update(run_dir=str(folder), resume=resume, seed=(a.seed * 1_000 + self.state.stage_index) % 2**63,
                      preset=a.preset, num_players=a.num_players, threads=a.threads, device=a.device,
                      precision=a.precision, ray_address=a.ray_address,
                      # the expert stages' workers are Ray actors only (PPO's may be collector threads here)
                      num_workers=a.num_workers if a.ray_address is not None else 1,
                      init=f"checkpoint:{self.run_dir / best}",
                      max_train_seconds=0.0, final_eval_deals=0, reuse_run_dir=resume is None,
                      exp_name=f"{a.exp_name}_{name}")
        if name == "consolidate":
            values["extra_labels"] = ["labels"] if check_only else self.label_folders()
            values["max_train_seconds"] = 1.0 if check_only else max(1.0, self.left())
        try:
            return config.make_args(ExitArgs, values)
        except ConfigError as exc:
            if not check_only:
                raise
            where = Path(a.stage_configs) if a.stage_configs else config.CONFIGS_DIR
            raise ConfigError(f"{where / f'stage_{name}.yaml'}: with {self.rules.preset} at {self.rules.num_players} "
                              f"seats: {exc}", field=exc.field) from None

    def expert_stage(self, name: str, folder: Path, resume: str | None) -> Path:
        from train.exit import train as exit_train

        stage_args = self.expert_args(name, folder, resume)

        def hook(iteration: int, policy: Any, checkpoint: Any) -> str | None:
            return self.maybe_gate(lambda n: checkpoint(n))

        hook.budget_note = lambda: f"recipe: {self.budget_used()}"  # type: ignore[attr-defined]
        return exit_train(stage_args, None, hook=hook if name != "consolidate" else None)

    # --- the gate ---------------------------------------------------------------------------------------------------
    def maybe_gate(self, write: Any) -> str | None:
        """A stage's hook after each of its iterations: gate when due; returns the stop reason when the stage ends
        (its rule, or the budget: spent, or too short for another iteration as long as the last one)."""
        now = self.elapsed()
        last, self.last_hook_s = self.last_hook_s, now
        if last is None:  # the stage's first iteration: from the stage's start, its start-up included
            last = self.stage_start_s
            self.state.first_iteration_s[self.stage_now()] = round(now - last, 1)
        # the budget is spent, or will be before another iteration like the last one ends: stop here, not past it
        over = self.left() <= 0 or self.left() < now - last
        if not over and now - self.state.last_gate_s < self.gate_every:
            return None
        n = len(self.state.gates)
        path = write(f"gate_{n:04d}.pt")
        self.gate(path)
        self.prune()
        self.stopped_by_gate = True
        if over:
            return "the budget is spent"
        if self.state.stall >= self.args.gate_patience:
            return f"{self.state.stall} gates in a row without a gain (gate_patience)"
        self.stopped_by_gate = False
        return None

    def gate(self, candidate: Path) -> None:
        """Play ``candidate`` against the best network (module docstring); promote it when ahead; log and save."""
        from agents.registry import make_agent

        t0 = time.time()
        n = len(self.state.gates)
        name = self.stage_now()
        cand = make_agent(f"policy:checkpoint:{candidate}", self.rules, device=self.args.device)
        record: dict[str, Any] = {"n": n, "stage": name, "stage_index": self.state.stage_index,
                                  "candidate": str(candidate), "at_s": round(self.elapsed(), 1)}
        if self.state.best is None:
            margin, se, promoted, gain = math.nan, math.nan, True, True
        else:
            res = gate_match(cand, self.best_agent(), self.rules, self.args.gate_deals,
                             seed=GATE_SEED + n * self.args.gate_deals, max_moves=self.args.max_moves)
            margin, se = res["points"], res["points_se"]
            gain = promoted = margin > 0 and margin >= self.args.gate_min_z * se
        # an expert stage's heads start silent: its first gate measures nothing learnt yet and is not held against it
        first_of_stage = not any(g["stage_index"] == self.state.stage_index for g in self.state.gates)
        silent = first_of_stage and name != "ppo" and not gain
        record.update(margin=None if math.isnan(margin) else round(margin, 4),
                      se=None if math.isnan(se) else round(se, 4), promoted=promoted, gain=gain)
        self.state.stall = 0 if gain else self.state.stall + (0 if silent else 1)
        step = int(self.elapsed())
        if not math.isnan(margin):
            self.writer.add_scalar("gate/margin", margin, step)
            self.writer.add_scalar("gate/margin_se", se, step)
        self.writer.add_scalar("gate/promoted", float(promoted), step)
        self.writer.add_scalar("gate/stage", float(STAGES.index(name)), step)
        line = ("first gate: the candidate is the best" if self.state.best is None else
                f"gate {n}: candidate vs best {margin:+.3f} ± {1.96 * se:.3f} a deal over {self.args.gate_deals:,} "
                f"deals{self.seatings}: {'promoted' if promoted else 'kept the best'}{' (a gain)' if gain else ''}")
        if promoted:
            self.promote(candidate, name)
            record.update(self.curve_point(step))
            line += f" | best alone vs advanced: deal win rate {record['winrate_vs_advanced']:.3f}, " \
                    f"{record['points_vs_advanced']:+.2f} a deal"
        record["gate_s"] = round(time.time() - t0, 1)
        self.state.gates.append(record)
        self.state.last_gate_s = self.elapsed()
        self.save_state()
        self.writer.flush()
        self.say(line + f" ({record['gate_s']:.0f} s)")

    def prune(self, stage_ended: bool = False) -> None:
        """Delete the current stage's files that nothing reads again: the gated candidates (a promoted one is kept as
        ``best_gate_NNNN.pt``), all but the newest periodic checkpoint (``latest.pt`` resumes the stage), and the
        last-round labels beyond the newest :data:`KEEP_LABELS` (all of them once the stage has ended: only the
        earlier-rounds labels are read again, by ``consolidate``). A last-round iteration writes about 50 MB of labels,
        so a run of hours would otherwise fill a disk."""
        folder = self.stage_folder()
        ckpts = folder / "checkpoints"
        for old in ckpts.glob("gate_*.pt"):
            old.unlink(missing_ok=True)
        for pattern in ("iter_*.pt", "step_*.pt", "pass_*.pt"):
            for old in sorted(ckpts.glob(pattern))[:-1]:
                old.unlink(missing_ok=True)
        if self.stage_now() == "last_round":
            labels = sorted((folder / "labels").glob("iter_*.npz"))
            for old in labels if stage_ended else labels[:-KEEP_LABELS]:
                old.unlink(missing_ok=True)

    def best_agent(self) -> Any:
        from agents.registry import make_agent

        if self._best_agent is None:
            self._best_agent = make_agent(f"policy:checkpoint:{self.run_dir / self.state.best}", self.rules,
                                          device=self.args.device)
        return self._best_agent

    def promote(self, candidate: Path, name: str) -> None:
        """Write the candidate's network as ``checkpoints/best.pt`` (no optimiser or training state) with its
        provenance, and a copy as ``checkpoints/best_gate_NNNN.pt`` (NNNN the gate's number)."""
        from agents.files import atomic_copy
        from agents.ppo_agent import policy_from_checkpoint, read_checkpoint, save_checkpoint
        from agents.provenance import make_provenance

        ckpt = read_checkpoint(candidate, self.rules)
        policy = policy_from_checkpoint(ckpt, candidate)
        provenance = make_provenance(seed=self.args.seed, stage=name, wall_s=round(self.elapsed(), 1),
                                     stage_index=self.state.stage_index, hours=self.args.hours,
                                     recipe="cassino train (train/recipe.py)", preset=self.rules.preset,
                                     num_players=self.rules.num_players,
                                     device=(ckpt.get("provenance") or {}).get("device"))  # the stage's
        best = self.run_dir / "checkpoints" / "best.pt"
        save_checkpoint(best, policy, self.rules, blocks=ckpt.get("obs_blocks"), provenance=provenance)
        # every best in turn stays, so the best at any time of the run can be played (the anytime curve)
        atomic_copy(best, self.run_dir / "checkpoints" / f"best_gate_{len(self.state.gates):04d}.pt")
        self.state.best, self.state.best_stage = "checkpoints/best.pt", name
        self._best_agent = None

    def proxy_set(self) -> Any:
        """The proxy set of the run's preset and seats (:func:`train.proxy.find_default`), looked for once; None when
        there is none, said in one line (``eval/proxy_regret`` is then not logged)."""
        if not self._proxy_looked:
            from train.proxy import find_default

            self._proxy_looked = True
            self._proxy, note = find_default(self.rules)
            if self._proxy is None:
                self.say(note)
        return self._proxy

    def curve_point(self, step: int) -> dict[str, float]:
        """The best network alone against ``advanced`` (``CURVE_DEALS`` duplicate deals), logged at ``step``."""
        from agents.registry import make_agent
        from train.stats import wilson_interval

        if self._curve_bot is None:
            self._curve_bot = make_agent("advanced", self.rules)
        res = gate_match(self.best_agent(), self._curve_bot, self.rules, CURVE_DEALS,
                         seed=(10_000_000 + self.args.seed) % 2**62, max_moves=self.args.max_moves)
        lo, hi = wilson_interval(res["winrate"] * res["games"], res["games"])
        w = self.writer
        w.add_scalar("eval/winrate_vs_advanced", res["winrate"], step)
        w.add_scalar("eval/winrate_ci_low_vs_advanced", lo, step)
        w.add_scalar("eval/winrate_ci_high_vs_advanced", hi, step)
        w.add_scalar("eval/points_vs_advanced", res["points"], step)
        out = {"winrate_vs_advanced": round(res["winrate"], 4), "points_vs_advanced": round(res["points"], 4)}
        proxy = self.proxy_set()
        if proxy is not None:
            from train.proxy import score

            r = score(self.best_agent(), proxy, seed=0)
            w.add_scalar("eval/proxy_regret", r["regret"], step)
            out["proxy_regret"] = round(r["regret"], 4)
        return out

    def finish(self) -> Path:
        """Copy the best network to ``final.pt`` and ``latest.pt``; print the summary line."""
        from agents.files import atomic_copy
        from train.run import fmt_time

        if self.state.best is None:
            raise ConfigError("hours: the budget ended before the first gate: give a larger --hours", field="hours")
        best = self.run_dir / self.state.best
        final = self.run_dir / "checkpoints" / "final.pt"
        atomic_copy(best, final)
        atomic_copy(best, self.run_dir / "checkpoints" / "latest.pt")
        self.state.done = self.left() <= 0 or self.state.done
        self.save_state()
        promoted = sum(1 for g in self.state.gates if g["promoted"] and g["margin"] is not None)  # as cassino plot
        promotions = f"{promoted} promotion{'' if promoted == 1 else 's'}"
        print(f"recipe done in {fmt_time(self.elapsed())}: {len(self.state.gates)} gates, {promotions} after "
              f"the first; the best network (from stage {self.state.best_stage}) is {final}; go on with: "
              f"{self.go_on()}", flush=True)
        return final


def _run_folder_of(resume: str) -> Path:
    """The run folder named by ``--resume``: the folder itself, or the run folder of a file in its checkpoints/."""
    path = Path(resume)
    try:
        if path.is_dir():
            return path
        exists = path.exists()
    except OSError as exc:  # a name too long, no permission
        raise ConfigError(f"resume: {config.shown_name(path)}: {exc.strerror or exc}", field="resume") from None
    if not exists:
        raise ConfigError(f"resume: {config.shown_name(path)}: no such checkpoint file or run folder", field="resume")
    if path.parent.name == "checkpoints":
        return path.parent.parent
    raise ConfigError(f"resume: {config.shown_name(path)}: neither a run folder nor a checkpoint in a run folder's "
                      "checkpoints/", field="resume")


def _saved_config(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "config.yaml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"resume: {path}: not readable ({first})", field="resume") from None
    if not isinstance(data, dict):
        raise ConfigError(f"resume: {path}: not a mapping of options", field="resume")
    return data




if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(tyro.cli(main, config=(tyro.conf.FlagCreatePairsOff,)))

