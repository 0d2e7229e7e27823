"""The expert-iteration run: :func:`train` (games and labels, the update, evaluations, checkpoints, resume; the
package's docstring, :mod:`train.expert`, gives one iteration) and ``cassino exit`` (:func:`main`)."""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import time
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar

import numpy as np
import tyro

from agents.registry import PRETRAINED_DIR
from cassino_env.errors import CassinoError, shown_name
from cassino_env.rules import RuleSet, make_rules
from train import config
from train import proxy as proxy_mod
from train.checkpoints import check_counters, check_optimizer_state, check_rng_states, check_workers
from train.config import ConfigError
from train.errors import bad_input
from train.expert.collect import PROGRESS_SECONDS, LocalLabels, RayLabels
from train.expert.labels import Labels, augmented, join_labels, label_files, load_joined_labels
from train.expert.options import HEADS, ExitArgs, ExitOptions, resolve_args
from train.expert.update import label_stats, trained_parameters, update
from train.rollout import make_bots
from train.run import (
    Run,
    RunInterrupted,
    RunStopped,
    claim_run_folder,
    evaluate_against,
    finish,
    fmt_time,
    guard,
    load_generators,
    load_train_state,
    resume_options,
    run_folder,
    stop_if_interrupted,
    time_left,
    write_run_folder,
)

#: The exit code of a run stopped by Ctrl-C (128 + SIGINT, as ``cassino train``'s).
EXIT_INTERRUPTED = 130

#: ``hook(iteration, policy, checkpoint) -> stop reason or None``, called after each iteration (:func:`train`).
IterationHook = typing.Callable[[int, Any, typing.Callable[[str], Path]], "str | None"]


def main(options: Annotated[ExitOptions, tyro.conf.OmitArgPrefixes, tyro.conf.arg(name="")]) -> int:  # type: ignore[valid-type]
    """Expert iteration: a search labels the network's decisions, the network learns the labels, repeat.

    See ``train/expert/`` and docs/expert_iteration.md.
    """
    from agents.ppo_agent import CheckpointError

    with bad_input(ConfigError, CheckpointError, CassinoError) as failed:
        try:
            args = resolve_args(options)
            explicit = config.explicit_fields(ExitArgs, options)
            train(args, explicit=explicit)
        except RunInterrupted as exc:  # Ctrl-C: what is saved and the resume command, one line
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # the run has stopped: a late Ctrl-C cannot cut the exit
            print(exc, file=sys.stderr)
            return EXIT_INTERRUPTED
        except RunStopped as exc:  # diverged, disk full: one line, the checkpoints written before it are intact
            print(f"error: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:  # before the run folder was made: nothing was written
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            print("interrupted before the run began: nothing was written", file=sys.stderr)
            return EXIT_INTERRUPTED
    return failed.code


def _init_network(args: ExitArgs, rules: RuleSet) -> Any:
    """The starting network: the ``init`` checkpoint's, or a fresh one of the run's widths."""
    from agents.features import NUM_MOVE_FEATURES, critic_state_size
    from agents.policy import (
        CassinoPolicy,
        add_early_rounds_head,
        add_last_round_head,
        last_round_gate,
        remove_early_rounds_head,
    )
    from agents.ppo_agent import CheckpointError, checkpoint_blocks, policy_from_checkpoint, read_checkpoint
    from cassino_env.obs import DEFAULT_BLOCKS, obs_size, uses_default_blocks

    gate = last_round_gate(rules.num_players, rules.num_sides)
    if args.init is None:
        net = CassinoPolicy(obs_dim=obs_size(rules.num_players, rules.num_sides), hidden=args.hidden,
                            embed=args.embed, move_features=NUM_MOVE_FEATURES, critic="separate",
                            critic_dim=critic_state_size(rules.num_players), last_round=args.last_round_head,
                            last_round_gate=gate if args.last_round_head else 0)
        if args.early_rounds_head:
            net = add_early_rounds_head(net, args.early_rounds_head, gate, classes=_classes(args, rules))
        return net
    kind, _, name = args.init.partition(":")
    if kind == "pretrained":
        path = PRETRAINED_DIR / f"{name}.pt"
    elif kind == "checkpoint":
        path = Path(name)
    else:
        raise ConfigError(f"init: checkpoint:PATH or pretrained:NAME, got {args.init!r}", field="init")
    try:
        ckpt = read_checkpoint(path, rules)
    except CheckpointError as exc:
        raise ConfigError(f"init: {exc}", field="init") from None
    blocks = checkpoint_blocks(ckpt, path)
    if not uses_default_blocks(blocks):
        raise ConfigError(f"init {args.init}: the network reads the observation blocks {', '.join(blocks)}; cassino "
                          f"exit plays and labels with the default blocks ({', '.join(DEFAULT_BLOCKS)})",
                          field="init")
    net = policy_from_checkpoint(ckpt, path)
    if not net.shape.move_features:
        raise ConfigError(f"init {args.init}: the network reads no move features; expert iteration needs them",
                          field="init")
    if args.fresh_early_rounds_head and net.shape.early_rounds:
        net = remove_early_rounds_head(net)
        print(f"init {args.init}: its earlier-rounds head removed (fresh_early_rounds_head)", flush=True)
    for (option, shape_field, name), add in zip(HEADS, (add_last_round_head, add_early_rounds_head), strict=True):
        want, have = getattr(args, option), getattr(net.shape, shape_field)
        if want and have and want != have:
            raise ConfigError(f"{option}={want}: the network of init {args.init} has {name} head of width {have} "
                              f"already (give {have}, or leave {option} out)", field=option)
        if want and not have:
            net = add(net, want, gate) if option == "last_round_head" else add(net, want, gate, _classes(args, rules))
            reads = f", reading {net.shape.early_rounds_input}" if option == "early_rounds_head" else ""
            print(f"init {args.init}: given {name} head of width {want}{reads} (it starts at 0: the network plays "
                  "as before until it is trained)", flush=True)
    if args.early_rounds_head and net.shape.early_rounds_input != args.early_rounds_input:
        raise ConfigError(f"early_rounds_input={args.early_rounds_input}: the earlier-rounds head of init {args.init} "
                          f"reads {net.shape.early_rounds_input} (give {net.shape.early_rounds_input}, or leave "
                          "early_rounds_head out)", field="early_rounds_input")
    return net


def warm_up(args: ExitArgs, rules: RuleSet) -> None:
    """Compile the numba kernels one iteration of this run's games and labels uses (the environment's observation and
    move features, the search's determinisations and rollouts, the exact last round, on numba's threads where
    ``args.threads`` > 1), so that a budgeted run (``cassino train``: :func:`train.recipe.warm_up`) does not pay the
    compile inside its budget: 2 games of one deal with a fresh network of ``args``' widths, labelled by a search of
    few simulations; nothing is saved and ``args.init`` is not read. Compiled kernels are cached on disk, so after a
    machine's first run this takes seconds. A run of passes alone (``iterations: 0``) labels nothing: no-op."""
    from train.expert.collect import LabelCollector

    if args.iterations == 0:
        return
    small = dataclasses.replace(args, init=None, deals_per_iteration=1, simulations=min(args.simulations, 4),
                                min_samples=1)
    net = _init_network(small, rules)
    LabelCollector(small, rules, num_envs=2, env_seed=0).collect(net, np.random.default_rng(0), 0)


def _classes(args: ExitArgs, rules: RuleSet) -> tuple[Any, Any] | None:
    """What a new earlier-rounds head sums its cards by (agents.policy.add_early_rounds_head), or None (by id)."""
    if args.early_rounds_input == "cards":
        return None
    from cassino_env.symmetry import card_classes, class_index

    return class_index(rules), card_classes(rules)


def _proxy(args: ExitArgs, rules: RuleSet) -> Any:
    if args.proxy is None:
        return None
    path = proxy_mod.default_path(rules.preset, rules.num_players) if args.proxy == "auto" else Path(args.proxy)
    if args.proxy == "auto" and not path.is_file():
        return None
    try:
        proxy = proxy_mod.load(path)
    except proxy_mod.ProxyError as exc:
        raise ConfigError(f"proxy: {exc}", field="proxy") from None
    if proxy.rules != rules:
        raise ConfigError(f"proxy: {shown_name(path)} holds positions of {proxy.rules.preset} with "
                          f"{proxy.rules.num_players} players; this run plays {rules.preset} with {rules.num_players}",
                          field="proxy")
    return proxy


def _check_train_state(tr: dict[str, Any], path: str, optimizer_state: Any, policy: Any, params: list[Any],
                       games: LocalLabels | RayLabels, num_workers: int) -> None:
    """Every field of an exit checkpoint's ``train`` entry and its ``optimizer`` before any is used to resume
    (nothing is changed): the counters, the generators, the games of each worker against the run's own
    (``games.state()``), and the optimiser's state against ``params``, the parameters the run trains
    (train/checkpoints.py's checks, shared with the PPO trainer).

    Raises:
        agents.ppo_agent.CheckpointError: naming the file and the field.
    """
    check_counters(tr, path, ("iteration", "global_step", "labels_total"))
    check_rng_states(tr, path)
    fields = games.state()["env_state"]
    n = next(iter(fields.values())).shape[0] if fields else 0
    desc = f"num_envs={n}" if num_workers == 1 else f"{n} games (num_envs / num_workers={num_workers})"
    check_workers(tr, path, num_workers, fields, desc)
    check_optimizer_state(optimizer_state, path, policy, params)


def _check_widths(args: ExitArgs, policy: Any, resumed: bool, explicit: set[str] | None) -> None:
    """``hidden`` and ``embed`` make a fresh network only: given (``explicit``; None: where they differ from the
    defaults) with a warm start or a resume, they must be the network's own widths.

    Raises:
        ConfigError: naming the field.
    """
    if args.init is None and not resumed:
        return
    defaults = ExitArgs.__dataclass_fields__
    for name in ("hidden", "embed"):
        given = name in explicit if explicit is not None else getattr(args, name) != defaults[name].default
        have = getattr(policy.shape, name)
        if given and getattr(args, name) != have:
            whose = "the resumed run's network" if resumed else f"the network of init {args.init}"
            raise ConfigError(f"{name}={getattr(args, name)}: {whose} has {name} {have}, and "
                              + ("a resumed run goes on with its own network" if resumed else
                                 "a warm start keeps its network's widths (init: null makes a fresh network of "
                                 f"{name} {getattr(args, name)})")
                              + f"; leave {name} out (of the flags and the --config file)", field=name)


def _labelled_moves(args: ExitArgs, rules: RuleSet) -> int:
    """An upper bound of the decisions an iteration labels: the network's moves in the labelled rounds (those with
    one legal move are not labelled)."""
    P, rpd = rules.num_players, rules.rounds_per_deal
    rounds = rpd - args.label_from_round + 1
    if P == 2 and not args.label_last_round:
        rounds -= 1
    if args.search == "none":
        rounds = 1 if P == 2 and args.label_last_round else 0
    self_share = 1.0 - sum(args.bot_rates.values())
    moves = rules.deal_length * (self_share + (1.0 - self_share) / P) * max(rounds, 0) / rpd
    return int(round(args.num_envs * args.deals_per_iteration * moves))


def _opening_line(args: ExitArgs, rules: RuleSet, run_dir: Path, iteration: int, elapsed_before: float,
                  extra: list[Labels]) -> str:
    """The run's first line: what it will do, where it writes, and how long it should take (from the run's own pace
    when resumed; a fresh run measures its first iteration, and every iteration line then gives the time left)."""
    if args.iterations == 0:
        return (f"cassino exit: {args.epochs} pass{'es' if args.epochs != 1 else ''} over {len(extra[0]):,} labels "
                f"into {run_dir}")
    todo = args.iterations - iteration
    search = ("exactly (the last round alone)" if args.search == "none"
              else f"by {args.search} ({args.simulations} simulations, {args.rollout} rollouts)")
    line = (f"cassino exit: {todo} iteration{'s' if todo != 1 else ''}"
            + (f" (iterations {iteration + 1}-{args.iterations})" if iteration else "")
            + f" into {run_dir}: each plays {args.num_envs} games of {args.deals_per_iteration} "
            f"deal{'s' if args.deals_per_iteration != 1 else ''} and labels up to {_labelled_moves(args, rules):,} "
            f"decisions {search}; ")
    if iteration and elapsed_before > 0:
        est = todo * elapsed_before / iteration
        if args.max_train_seconds > 0:
            est = min(est, max(args.max_train_seconds - elapsed_before, 0.0))
        pace = fmt_time(elapsed_before / iteration)
        line += f"about {fmt_time(est)} at this run's pace so far ({pace} an iteration)"
    else:
        line += ("the first iteration measures the pace (its labelling prints a line every "
                 f"{PROGRESS_SECONDS:.0f} s), then each iteration line gives the time left")
    if args.max_train_seconds > 0:
        line += f"; stops at max_train_seconds={args.max_train_seconds:g}"
    line += (f"; a checkpoint every {args.checkpoint_every} iteration{'s' if args.checkpoint_every != 1 else ''}"
             if args.checkpoint_every else "; a checkpoint only at the end (checkpoint_every 0)")
    return line


@dataclass(eq=False, kw_only=True)
class ExitRun(Run):
    """An expert-iteration run: a :class:`train.run.Run` (the counters, the checkpoint, what is saved) and

    Attributes:
        games: the labelling games, here (:class:`LocalLabels`) or on Ray (:class:`RayLabels`); None for a run of
            passes over the extra labels alone (``iterations: 0``), which is not resumed.
        bots: the evaluation opponents, by spec. proxy: the proxy set (:mod:`train.proxy`) or None.
        holdout: the held-out labels or None. replay: the labels of the last ``replay_iterations`` iterations.
        extra: the extra labels, joined (one :class:`Labels`, or none); extra_files: their files.
        labels_total: labels made in all iterations so far.
    """

    command: ClassVar[str] = "cassino exit"
    diverged_hint: ClassVar[str] = "with a smaller learning_rate, or reward_scale, vf_coef"

    games: LocalLabels | RayLabels | None
    bots: dict[str, Any]
    proxy: Any = None
    holdout: Labels | None = None
    replay: list[Labels] = field(default_factory=list)
    extra: list[Labels] = field(default_factory=list)
    extra_files: list[Path] = field(default_factory=list)
    labels_total: int = 0

    @property
    def label_dir(self) -> Path:
        """``run_dir / "labels"``: every iteration's labels (``iter_NNNNN.npz``)."""
        return self.run_dir / "labels"

    @property
    def resumable(self) -> bool:
        """A run of passes alone (no games) is not resumed."""
        return self.games is not None

    @property
    def passes(self) -> int:
        """Passes over the extra labels done, in a run of passes (its step counts the labels trained on)."""
        return self.global_step // max(len(self.extra[0]), 1) if self.extra else 0

    def position(self) -> str:
        """``iteration N``, or ``pass N`` in a run of passes."""
        return f"iteration {self.iteration}" if self.games is not None else f"pass {self.passes}"

    def more_state(self) -> dict[str, Any]:
        """``algo: exit``, ``labels_total`` and the games (``env_state``, and ``workers`` with Ray)."""
        return {"algo": "exit", "labels_total": self.labels_total,
                **(self.games.state() if self.games is not None else {})}

    def summary(self) -> str:
        """``N iterations, M labels in T (the stop reason)`` (``N passes over M labels ...`` without games)."""
        if self.games is None:
            n, done = len(self.extra[0]), self.passes
            return (f"{done} pass{'es' if done != 1 else ''} over {n:,} labels in {fmt_time(self.elapsed())} "
                    f"({self.stop_reason})")
        return (f"{self.iteration} iteration{'s' if self.iteration != 1 else ''}, {self.labels_total:,} labels in "
                f"{fmt_time(self.elapsed())} ({self.stop_reason})")

    def evaluate(self) -> str:
        """The network alone (argmax, no exact last round) against each of ``bots``
        (:func:`train.run.evaluate_against`), the proxy's regret and agreement when there is a proxy set, and the
        held-out labels' when there are any, logged at ``global_step``; returns them as the text of a progress line.
        The policy is left in training mode."""
        from agents.ppo_agent import PPOAgent

        at, w, t0 = self.global_step, self.writer, time.time()
        agent = PPOAgent(self.policy, deterministic=True, rules=self.rules, endgame=False)  # the network alone
        parts = [f"{name} {r['winrate']:.3f} [{r['lo']:.3f}, {r['hi']:.3f}] {r['points']:+.2f} pts"
                 for name, r in evaluate_against(self, agent, self.bots).items()]
        if self.proxy is not None:
            r = proxy_mod.score(agent, self.proxy, seed=0)
            w.add_scalar("eval/proxy_regret", r["regret"], at)
            w.add_scalar("eval/proxy_top1", r["top1"], at)
            parts.append(f"proxy regret {r['regret']:.3f} ± {1.96 * r['regret_se']:.3f} top-1 {r['top1']:.3f}")
        line = "network alone: deal win rate vs " + ", ".join(parts)
        if self.holdout is not None:
            h = label_stats(self.policy, self.holdout, self.args.reward_scale)
            w.add_scalar("exit/holdout_regret", h["regret"], at)
            w.add_scalar("exit/holdout_agreement", h["agreement"], at)
            line += f"; held-out labels: regret {h['regret']:.4f} pts, agrees {h['agreement']:.3f}"
        w.add_scalar("time/eval_s", time.time() - t0, at)
        self.policy.train()
        return line


def train(args: ExitArgs, explicit: set[str] | None = None, hook: IterationHook | None = None) -> Path:
    """Run expert iteration (:mod:`train.expert`); return the final checkpoint's path.

    ``hook``, when given, is called after every iteration (its checkpoint written) as ``hook(iteration, policy,
    checkpoint)``, ``checkpoint(name)`` writing ``checkpoints/NAME`` and returning its path; a string it returns stops
    the run there (the string is the stop reason printed), as :mod:`train.recipe`'s gate does.

    Raises:
        ConfigError: a bad option or run folder.
        agents.ppo_agent.CheckpointError: a checkpoint that cannot be resumed or warm-started from.
        train.stopping.RunStopped: the run could not go on (a file that cannot be written, a diverged update; the
            message says what is saved); train.stopping.RunInterrupted: Ctrl-C (the message gives the resume command).
    """
    held: list[Any] = []
    try:
        return _train(args, explicit, held, hook)
    finally:
        for thing in reversed(held):
            thing.release()


def _train(args: ExitArgs, explicit: set[str] | None, held: list[Any], hook: IterationHook | None = None) -> Path:
    """:func:`train` on :mod:`train.run`'s phases: set-up and resume (everything checked and read before the run
    folder is touched), the run folder, the loop under :func:`train.run.guard`, :func:`train.run.finish`."""
    import torch

    from agents.ppo_agent import atomic_copy

    args, ckpt = resume_options(args, explicit, check=_exit_checkpoint)
    if ckpt is not None and args.iterations == 0:
        raise ConfigError("iterations=0 trains a network from init on extra_labels alone; it does not resume a "
                          "run (give init: checkpoint:PATH instead of resume)", field="iterations")
    torch.set_num_threads(args.threads)
    rules = make_rules(args.preset, args.num_players)
    run_dir, resuming_here = run_folder(args, ckpt)
    bots = make_bots(args.eval_opponents, rules)
    proxy = _proxy(args, rules)

    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    policy = _init_network(args, rules) if ckpt is None else _resumed_network(args, ckpt)
    _check_widths(args, policy, ckpt is not None, explicit)
    policy.to(config.resolve_run_device(args))  # made on the CPU (the same weights anywhere), trained on the device
    optimizer = torch.optim.Adam(trained_parameters(policy, args.train_params), lr=args.learning_rate, eps=1e-5)
    games: LocalLabels | RayLabels | None
    if args.iterations == 0:  # offline: no games
        games = None
    elif args.ray_address is None:
        games = LocalLabels(args, rules)
    else:
        games = RayLabels(args, policy.shape)
        held.append(games)
    run = ExitRun(args=args, rules=rules, run_dir=run_dir, policy=policy, optimizer=optimizer, rng=rng,
                  num_iterations=args.iterations, games=games, bots=bots, proxy=proxy)
    if ckpt is not None:
        tr = ckpt["train"]
        _check_train_state(tr, args.resume, ckpt["optimizer"], policy,
                           [q for g in optimizer.param_groups for q in g["params"]], games, args.num_workers)
        load_train_state(run, ckpt)
        run.labels_total = int(tr["labels_total"])
    window = _read_labels(run, resuming_here)  # every label file read and checked before the folder is touched
    if ckpt is not None:
        load_generators(run, tr)
        games.load(tr)

    claim_run_folder(run, held, resuming_here, remove_if_unsaved=True)
    with guard(run):  # Ctrl-C: stop after the iteration, saved; a folder made and nothing saved in it is removed
        if games is not None:
            run.label_dir.mkdir(parents=True, exist_ok=True)
        if ckpt is not None and not resuming_here:  # the new folder holds its replay window: it resumes by itself
            for f in window:
                if f.resolve() != (run.label_dir / f.name).resolve():
                    atomic_copy(f, run.label_dir / f.name)
        write_run_folder(run, fresh=ckpt is None)
        if ckpt is not None:
            print(f"resumed {args.resume} at iteration {run.iteration}, step {run.global_step:,}", flush=True)
        opening = _opening_line(args, rules, run_dir, run.iteration, run.elapsed_before, run.extra)
        run.budget_note = getattr(hook, "budget_note", None)  # a stage of cassino train: its gate and budget end it
        if run.budget_note is not None:
            opening += f"; iterations is a ceiling: the recipe's gate and budget end the stage ({run.budget_note()})"
        print(opening, flush=True)
        _run(run, hook)
    return finish(run)  # final.pt, the summary line, the evaluation after training


def _exit_checkpoint(ckpt: dict[str, Any], path: str | Path) -> None:
    """A checkpoint ``cassino exit --resume`` takes: an expert-iteration run's, with iterations (before its config
    is read: a PPO run's config has fields :class:`ExitArgs` has not).

    Raises:
        ConfigError: naming ``resume``.
    """
    tr, name = ckpt["train"], shown_name(Path(path))
    if tr.get("algo") != "exit" and ("pool" in tr or "labels_total" not in tr):
        raise ConfigError(f"resume: {name} is a checkpoint of cassino train (self-play PPO), not of an "
                          f"expert-iteration run: start one from its network with --init checkpoint:{name}, or resume "
                          "it with cassino train --resume", field="resume")
    saved = tr.get("config")
    if isinstance(saved, dict) and saved.get("iterations") == 0:
        raise ConfigError(f"resume: {name} is of a run with iterations 0 (passes over extra_labels alone), which is "
                          "not resumed: run it again, or give init: checkpoint:PATH to go on from its network",
                          field="resume")


def _resumed_network(args: ExitArgs, ckpt: dict[str, Any]) -> Any:
    """A resumed run's network, checked against the options (its blocks, its heads).

    Raises:
        agents.ppo_agent.CheckpointError: a network that is not the default blocks' or does not load.
        ConfigError: a head option the network does not match, naming it.
    """
    from agents.ppo_agent import CheckpointError, check_network, checkpoint_blocks, policy_from_checkpoint
    from cassino_env.obs import uses_default_blocks

    check_network(ckpt, args.resume)
    if not uses_default_blocks(checkpoint_blocks(ckpt, args.resume)):
        raise CheckpointError(f"{args.resume}: obs_blocks: cassino exit runs with the default observation blocks")
    policy = policy_from_checkpoint(ckpt, args.resume)
    for option, shape_field, name in HEADS:
        want, have = getattr(args, option), getattr(policy.shape, shape_field)
        if want and want != have:
            raise ConfigError(f"{option}={want}: the run's network has "
                              + (f"{name} head of width {have}" if have else f"no {name.split()[1]} head")
                              + "; a resumed run goes on with its own network (a new run with init: "
                              f"checkpoint:PATH and {option} gives one a head)", field=option)
    if args.early_rounds_head and policy.shape.early_rounds_input != args.early_rounds_input:
        raise ConfigError(f"early_rounds_input={args.early_rounds_input}: the run's earlier-rounds head reads "
                          f"{policy.shape.early_rounds_input}; a resumed run goes on with its own network",
                          field="early_rounds_input")
    return policy


def _read_labels(run: ExitRun, resuming_here: bool) -> list[Path]:
    """Read and check every label file the run trains on or holds out, before the run folder is touched: a resumed
    run's replay window (from its checkpoint's run folder), the extra and the held-out labels (mirrored with
    ``augment_suits``), into ``run``; returns the replay window's files.

    Raises:
        ConfigError: a missing replay file, or a file both trained on twice or trained on and held out.
    """
    args, rules, shape, iteration = run.args, run.rules, run.policy.shape, run.iteration
    replay_first = max(0, iteration - args.replay_iterations + 1)  # label files of this window are read back
    # a run resumed into another folder reads the replay window from the checkpoint's own run folder
    src = run.label_dir if resuming_here or not args.resume else config.run_dir_of_checkpoint(args.resume) / "labels"
    window = [src / f"iter_{i:05d}.npz" for i in range(replay_first + 1, iteration + 1)]
    missing = [f for f in window if not f.is_file()]
    if missing:
        raise ConfigError(f"resume: the replay labels {missing[0]} of the checkpoint's run are missing (an exit run "
                          "is resumed with the labels/ folder beside its checkpoints/)", field="resume")
    replay = [Labels.load(f, shape, "resume", rules) for f in window]
    extra_files = label_files(args.extra_labels) if args.extra_labels else []
    replayed = {f.resolve(): f for f in window}
    twice = [f for f in extra_files if f.resolve() in replayed]
    if twice:
        raise ConfigError(f"extra_labels: {shown_name(twice[0])} is also in the replay window of the resumed run "
                          f"(iterations {replay_first + 1}-{iteration}, read back from {shown_name(src)}): its labels "
                          "would count twice; leave that file or folder out of extra_labels", field="extra_labels")
    if args.holdout_labels:  # held out means never trained on
        trained = {f.resolve() for f in [*window, *extra_files]}
        both = [f for f in label_files(args.holdout_labels, "holdout_labels") if f.resolve() in trained]
        if both:
            raise ConfigError(f"holdout_labels: {shown_name(both[0])} is also trained on (in extra_labels or the "
                              "replay window): held-out labels must be others", field="holdout_labels")
    joined = load_joined_labels(args.extra_labels, shape, rules)
    extra = [] if joined is None else [joined]
    del joined  # with augment_suits, the mirrored copy replaces it
    run.holdout = load_joined_labels(args.holdout_labels, shape, rules, "holdout_labels")
    if args.augment_suits:  # each label mirrored once, kept beside it for every update that replays it
        replay, extra = [augmented(x, rules) for x in replay], [augmented(x, rules) for x in extra]
    run.replay, run.extra, run.extra_files = replay, extra, extra_files
    return window


def _run(run: ExitRun, hook: IterationHook | None) -> None:
    """The loop once the run folder is claimed and written: the evaluation at the start, then the iterations (or the
    passes, :func:`_offline_passes`); :func:`_train` writes the final checkpoint."""
    args, rules, policy, optimizer, writer = run.args, run.rules, run.policy, run.optimizer, run.writer
    run.start_time = time.time()
    if run.extra:
        mirrored = " (with their mirror: augment_suits)" if args.augment_suits else ""
        passes = f"{args.epochs} pass{'es' if args.epochs != 1 else ''}"
        print(f"{len(run.extra[0]):,} extra labels{mirrored} from {len(run.extra_files)} files "
              + ("join every update" if run.games is not None else f"are the data of {passes}"), flush=True)
    if args.resume is None:
        print(f"{'iteration' if run.games is not None else 'pass'} 0 | {run.evaluate()}", flush=True)
    if run.games is None:
        _offline_passes(run)
        return
    while run.iteration < args.iterations:
        run.iteration += 1
        iteration = run.iteration
        if args.anneal_lr:  # linearly to 0 over the run
            optimizer.param_groups[0]["lr"] = args.learning_rate * (1.0 - (iteration - 1.0) / args.iterations)
        t0 = time.time()
        labels = run.games.collect(policy, run.rng, iteration - 1)
        t_label = time.time() - t0
        labels.save(run.label_dir / f"iter_{iteration:05d}.npz", rules)
        run.global_step += args.num_envs * args.deals_per_iteration * rules.deal_length
        run.labels_total += len(labels)
        step = run.global_step
        before = label_stats(policy, labels, args.reward_scale)  # the network that played, on its own decisions
        run.replay = [*run.replay, augmented(labels, rules) if args.augment_suits else labels][-args.replay_iterations:]
        t1 = time.time()
        losses = update(policy, optimizer, join_labels([*run.extra, *run.replay]), args, run.rng)
        t_update = time.time() - t1
        writer.add_scalar("exit/labels", len(labels), step)
        writer.add_scalar("exit/labels_total", run.labels_total, step)
        writer.add_scalar("exit/labels_per_s", len(labels) / max(labels.label_s, 1e-9), step)
        writer.add_scalar("exit/search_agreement", before["agreement"], step)
        writer.add_scalar("exit/regret", before["regret"], step)
        writer.add_scalar("losses/explained_variance", before["explained_variance"], step)
        for k, v in losses.items():
            writer.add_scalar(f"losses/{k}", v, step)
        for name, pts in labels.points.items():
            writer.add_scalar(f"charts/points_vs_{name}", float(pts.mean()), step)
        writer.add_scalar("time/label_s", t_label, step)
        writer.add_scalar("time/update_s", t_update, step)
        elapsed = run.elapsed()
        over_time = args.max_train_seconds > 0 and elapsed >= args.max_train_seconds
        last = iteration >= args.iterations or over_time
        left = time_left(run, elapsed)  # a stage of cassino train: the recipe's budget used and left
        of = "" if run.budget_note is not None else f"/{args.iterations}"  # a stage: the budget ends it, not a count
        line = (f"iteration {iteration}{of} | step {step:,} | {len(labels):,} labels "
                f"({run.labels_total:,} in all, {len(labels) / max(labels.label_s, 1e-9):,.0f}/s) | network agrees "
                f"with the search {before['agreement']:.3f}, regret {before['regret']:.3f} pts | "
                + (f"policy loss {losses['policy_loss']:.3f} value loss {losses['value_loss']:.3f}" if args.epochs
                   else "no update (epochs 0: labels only)")
                + f" | {fmt_time(elapsed)} elapsed" + (f", {left}" if left else ""))
        if (args.eval_every and iteration % args.eval_every == 0) or last:
            line += f" | {run.evaluate()}"
        print(line, flush=True)
        if args.checkpoint_every and iteration % args.checkpoint_every == 0:  # the last too: a resumed run's
            run.checkpoint(f"iter_{iteration:05d}.pt")                       # final.pt replaces this one's
        if over_time:
            run.stop_reason = f"max_train_seconds={args.max_train_seconds:g} reached"
            break
        if hook is not None and (reason := hook(iteration, policy, run.checkpoint)):
            run.stop_reason = reason
            break
        if not last:  # Ctrl-C once: saved here, between iterations, on a deal boundary
            stop_if_interrupted(run, f"iter_{iteration:05d}.pt")


def _offline_passes(run: ExitRun) -> None:
    """``iterations: 0``: ``args.epochs`` passes of :func:`update` over the extra labels, the learning rate annealed
    linearly over the passes with ``anneal_lr``; a progress line, TensorBoard scalars and a checkpoint
    (``pass_N.pt``) each pass, an evaluation every ``eval_every`` passes and after the last. The step (the x axis)
    counts the labels trained on."""
    args, data, optimizer = run.args, run.extra[0], run.optimizer
    one_pass = dataclasses.replace(args, epochs=1)
    run.stop_reason = f"{args.epochs} passes"
    for p in range(1, args.epochs + 1):
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = args.learning_rate * (1.0 - (p - 1.0) / args.epochs)
        t0 = time.time()
        losses = update(run.policy, optimizer, data, one_pass, run.rng)
        run.global_step = step = p * len(data)
        for k, v in losses.items():
            run.writer.add_scalar(f"losses/{k}", v, step)
        run.writer.add_scalar("time/update_s", time.time() - t0, step)
        elapsed = run.elapsed()
        over_time = args.max_train_seconds > 0 and elapsed >= args.max_train_seconds
        line = (f"pass {p}/{args.epochs} | {len(data):,} labels | policy loss {losses['policy_loss']:.4f} | "
                f"{fmt_time(elapsed)} elapsed")
        if (args.eval_every and p % args.eval_every == 0) or p == args.epochs or over_time:
            line += f" | {run.evaluate()}"
        print(line, flush=True)
        if args.checkpoint_every and p % args.checkpoint_every == 0:
            run.checkpoint(f"pass_{p:05d}.pt")
        if over_time:
            run.stop_reason = f"max_train_seconds={args.max_train_seconds:g} reached"
            break
        if p < args.epochs:
            stop_if_interrupted(run, f"pass_{p:05d}.pt")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(tyro.cli(main, config=(tyro.conf.FlagCreatePairsOff,)))
