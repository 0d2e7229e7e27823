"""The expert-iteration run: :func:`train` (games and labels, the update, evaluations, checkpoints, resume; the
package's docstring, :mod:`train.expert`, gives one iteration) and ``cassino exit`` (:func:`main`)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import sys
import time
import typing
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import tyro
import yaml

from agents.registry import PRETRAINED_DIR
from cassino_env.errors import CassinoError, shown_name
from cassino_env.rules import RuleSet, make_rules
from train import config
from train import proxy as proxy_mod
from train.arena import evaluate_deals
from train.checkpoints import (
    check_counters,
    check_optimizer_state,
    check_rng_states,
    check_workers,
    read_training_checkpoint,
    save_training_checkpoint,
)
from train.config import ConfigError
from train.errors import bad_input
from train.expert.collect import PROGRESS_SECONDS, LocalLabels, RayLabels
from train.expert.labels import Labels, augmented, join_labels, label_files, load_joined_labels
from train.expert.options import HEADS, ExitArgs, ExitOptions, resolve_args
from train.expert.update import label_stats, trained_parameters, update
from train.rollout import make_bots
from train.rollout import rng_state as _rng_state
from train.rollout import set_rng_state as _set_rng_state
from train.run import RunInterrupted, RunStopped, final_evaluation
from train.run import fmt_time as _fmt_time
from train.stats import wilson_interval

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
    from cassino_env.obs import DEFAULT_BLOCKS, obs_size

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
    if tuple(blocks) != tuple(DEFAULT_BLOCKS):
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


#: The temporary files :func:`agents.files.atomic_write` makes for a run's files (``.NAME.RANDOM.tmp`` beside NAME),
#: by folder of the run: config.yaml's in the run folder, any in checkpoints/ and labels/.
_TEMPORARIES = (("", ".config.yaml.*.tmp"), ("checkpoints", ".*.tmp"), ("labels", ".*.tmp"))


def _remove_stale_temporaries(run_dir: Path) -> int:
    """Remove the temporary files a killed run left in ``run_dir`` (:data:`_TEMPORARIES`: files being written,
    never renamed into place); called with the folder's lock held, so no other run is writing them. Returns how
    many were removed (and says so when any)."""
    gone = 0
    for sub, pattern in _TEMPORARIES:
        folder = run_dir / sub
        for f in folder.glob(pattern) if folder.is_dir() else ():
            if f.is_file() and not f.is_symlink():
                with contextlib.suppress(OSError):
                    f.unlink()
                    gone += 1
    if gone:
        print(f"removed {gone} temporary file{'s' if gone != 1 else ''} left in {run_dir} by a run that was killed "
              "while writing", flush=True)
    return gone


def _identity(path: Path) -> tuple[int, int] | None:
    """A file's inode and modification time (None: no file), to tell whether a write replaced it."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns


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
        pace = _fmt_time(elapsed_before / iteration)
        line += f"about {_fmt_time(est)} at this run's pace so far ({pace} an iteration)"
    else:
        line += ("the first iteration measures the pace (its labelling prints a line every "
                 f"{PROGRESS_SECONDS:.0f} s), then each iteration line gives the time left")
    if args.max_train_seconds > 0:
        line += f"; stops at max_train_seconds={args.max_train_seconds:g}"
    line += (f"; a checkpoint every {args.checkpoint_every} iteration{'s' if args.checkpoint_every != 1 else ''}"
             if args.checkpoint_every else "; a checkpoint only at the end (checkpoint_every 0)")
    return line


def _time_left(args: ExitArgs, iteration: int, start_iteration: int, start_time: float, elapsed: float) -> str:
    """`` | ~XmYYs left`` at this session's pace per iteration (empty after the last)."""
    todo = args.iterations - iteration
    if todo <= 0 or iteration <= start_iteration:
        return ""
    left = todo * (time.time() - start_time) / (iteration - start_iteration)
    if args.max_train_seconds > 0:
        left = min(left, max(args.max_train_seconds - elapsed, 0.0))
    return f", ~{_fmt_time(left)} left"


def train(args: ExitArgs, explicit: set[str] | None = None, hook: IterationHook | None = None) -> Path:
    """Run expert iteration (:mod:`train.expert`); return the final checkpoint's path.

    ``hook``, when given, is called after every iteration (its checkpoint written) as ``hook(iteration, policy,
    checkpoint)``, ``checkpoint(name)`` writing ``checkpoints/NAME`` and returning its path; a string it returns stops
    the run there (the string is the stop reason printed), as :mod:`train.recipe`'s gate does.

    Raises:
        ConfigError: a bad option or run folder.
        agents.ppo_agent.CheckpointError: a checkpoint that cannot be resumed or warm-started from.
    """
    held: list[Any] = []
    try:
        return _train(args, explicit, held, hook)
    finally:
        for thing in reversed(held):
            thing.release()


def _train(args: ExitArgs, explicit: set[str] | None, held: list[Any],  # noqa: C901 - one readable loop
           hook: IterationHook | None = None) -> Path:
    import torch
    from torch.utils.tensorboard import SummaryWriter

    from agents.ppo_agent import (
        CheckpointError,
        atomic_copy,
        atomic_write,
        check_network,
        checkpoint_blocks,
        policy_from_checkpoint,
    )
    from cassino_env.obs import DEFAULT_BLOCKS

    ckpt = None
    if args.resume is not None:
        ckpt = read_training_checkpoint(args.resume)
        if ckpt["train"].get("algo") != "exit" and ("pool" in ckpt["train"] or "labels_total" not in ckpt["train"]):
            raise ConfigError(f"resume: {shown_name(Path(args.resume))} is a checkpoint of cassino train (self-play "
                              f"PPO), not of an expert-iteration run: start one from its network with --init "
                              f"checkpoint:{shown_name(Path(args.resume))}, or resume it with cassino train --resume",
                              field="resume")
        saved = ckpt["train"].get("config")
        if isinstance(saved, dict) and saved.get("iterations") == 0:
            raise ConfigError(f"resume: {shown_name(Path(args.resume))} is of a run with iterations 0 (passes over "
                              "extra_labels alone), which is not resumed: run it again, or give init: "
                              "checkpoint:PATH to go on from its network", field="resume")
        args = config.resume_args(args, ckpt["train"], explicit, source=str(args.resume), saved_error=CheckpointError)
        if args.iterations == 0:
            raise ConfigError("iterations=0 trains a network from init on extra_labels alone; it does not resume a "
                              "run (give init: checkpoint:PATH instead of resume)", field="iterations")
    torch.set_num_threads(args.threads)
    rules = make_rules(args.preset, args.num_players)
    deal_len = rules.deal_length
    if args.run_dir:
        run_dir = Path(args.run_dir)
    elif ckpt is not None:
        run_dir = config.run_dir_of_checkpoint(args.resume)
    else:
        run_dir = config.default_run_dir(args)
    resuming_here = ckpt is not None and Path(args.resume).parent.name == "checkpoints" and (
        Path(args.resume).parent.parent.resolve() == run_dir.resolve())
    config.check_run_dir(run_dir, resuming=resuming_here, reuse=args.reuse_run_dir)
    ckpt_dir, label_dir = run_dir / "checkpoints", run_dir / "labels"
    eval_bots = make_bots(args.eval_opponents, rules)
    proxy = _proxy(args, rules)

    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    if ckpt is not None:
        check_network(ckpt, args.resume)
        if checkpoint_blocks(ckpt, args.resume) != tuple(DEFAULT_BLOCKS):
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
    else:
        policy = _init_network(args, rules)
    _check_widths(args, policy, ckpt is not None, explicit)
    policy.to(config.resolve_run_device(args))  # made on the CPU (the same weights anywhere), trained on the device
    optimizer = torch.optim.Adam(trained_parameters(policy, args.train_params), lr=args.learning_rate, eps=1e-5)
    iteration, global_step, labels_total, elapsed_before = 0, 0, 0, 0.0
    games: LocalLabels | RayLabels | None
    if args.iterations == 0:  # offline: no games
        games = None
    elif args.ray_address is None:
        games = LocalLabels(args, rules)
    else:
        games = RayLabels(args, policy.shape)
        held.append(games)
    if ckpt is not None:
        tr = ckpt["train"]
        _check_train_state(tr, args.resume, ckpt["optimizer"], policy,
                           [q for g in optimizer.param_groups for q in g["params"]], games, args.num_workers)
        try:
            optimizer.load_state_dict(ckpt["optimizer"])
        except (ValueError, KeyError, TypeError, RuntimeError) as exc:
            raise CheckpointError(f"{args.resume}: optimizer: does not fit the network: {exc}") from None
        iteration, global_step = int(tr["iteration"]), int(tr["global_step"])
        labels_total, elapsed_before = int(tr["labels_total"]), float(tr.get("elapsed_s", 0.0))
    replay_first = max(0, iteration - args.replay_iterations + 1)  # label files of this window are read back
    # a run resumed into another folder reads the replay window from the checkpoint's own run folder
    src = label_dir if resuming_here or not args.resume else config.run_dir_of_checkpoint(args.resume) / "labels"
    window = [src / f"iter_{i:05d}.npz" for i in range(replay_first + 1, iteration + 1)]
    missing = [f for f in window if not f.is_file()]
    if missing:
        raise ConfigError(f"resume: the replay labels {missing[0]} of the checkpoint's run are missing (an exit run "
                          "is resumed with the labels/ folder beside its checkpoints/)", field="resume")
    # every label file is read and checked against the network before the run folder is touched
    replay = [Labels.load(f, policy.shape, "resume", rules) for f in window]
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
    joined = load_joined_labels(args.extra_labels, policy.shape, rules)
    extra = [] if joined is None else [joined]
    del joined  # with augment_suits, the mirrored copy replaces it
    holdout = load_joined_labels(args.holdout_labels, policy.shape, rules, "holdout_labels")
    if args.augment_suits:  # each label mirrored once, kept beside it for every update that replays it
        replay, extra = [augmented(x, rules) for x in replay], [augmented(x, rules) for x in extra]
    if ckpt is not None:
        _set_rng_state(rng, tr["numpy_rng"])
        torch.set_rng_state(tr["torch_rng"])
        games.load(tr)

    created = not config.looked_at(run_dir.exists)  # a folder this run makes is removed if it saves nothing
    held.append(config.claim_run_dir(run_dir, resuming=resuming_here, reuse=args.reuse_run_dir))
    start_iteration = iteration
    saved: list[tuple[Path, int]] = []  # the checkpoints this run wrote, with their iteration (pass)
    writer: Any = None

    def saved_so_far() -> str:
        """What is saved, and the command that goes on from it (for the messages of a run that stops)."""
        if saved:
            path, at = saved[-1]
            if path.name == "final.pt":  # stopped in the evaluation after the run
                return (f"the run had ended: its final checkpoint, {path}, is whole (evaluate it with: cassino eval "
                        f"--agents checkpoint:{path},ladder)")
            if games is None:
                return f"the last checkpoint, {path} (pass {at}), is intact (an offline run is not resumed)"
            return (f"the last checkpoint, {path} (iteration {at}), is intact: resume with: cassino exit --resume "
                    f"{ckpt_dir / 'latest.pt'}")
        if ckpt is not None:
            again = f" --run-dir {run_dir}" if args.run_dir else ""
            return (f"this session saved nothing, the run is as {args.resume} left it (iteration {start_iteration}): "
                    f"resume with: cassino exit --resume {args.resume}{again}")
        return "nothing was saved (the first checkpoint is written when the first iteration ends)"

    def abandon() -> str:
        """Remove the run folder when this run made it and saved no checkpoint in it; say so (or nothing)."""
        if saved or not created or args.reuse_run_dir:
            return ""
        if writer is not None:
            with contextlib.suppress(Exception):
                writer.close()
        shutil.rmtree(run_dir, ignore_errors=True)
        return f"; the run folder {run_dir}, made by this run, is removed"

    try:
        if resuming_here or args.reuse_run_dir:
            _remove_stale_temporaries(run_dir)
        ckpt_dir.mkdir(parents=True, exist_ok=True)
        if games is not None:
            label_dir.mkdir(parents=True, exist_ok=True)
        if ckpt is not None and not resuming_here:  # the new folder holds its replay window: it resumes by itself
            for f in window:
                if f.resolve() != (label_dir / f.name).resolve():
                    atomic_copy(f, label_dir / f.name)
        config_text = yaml.safe_dump(config.args_to_dict(args), sort_keys=False).encode("utf-8")
        atomic_write(run_dir / "config.yaml", lambda f: f.write(config_text))
        writer = SummaryWriter(str(run_dir))
        if ckpt is None:
            writer.add_text("hyperparameters", config.hparams_table(args))
        if ckpt is not None:
            print(f"resumed {args.resume} at iteration {iteration}, step {global_step:,}", flush=True)
        opening = _opening_line(args, rules, run_dir, iteration, elapsed_before, extra)
        if getattr(hook, "budget_note", None) is not None:  # a stage of cassino train: its gate and budget end it
            opening += f"; iterations is a ceiling: the recipe's gate and budget end the stage ({hook.budget_note()})"
        print(opening, flush=True)
        return _run(**locals())
    except KeyboardInterrupt:
        raise RunInterrupted(f"interrupted (stopped at once; the work since the last checkpoint is lost): "
                             f"{saved_so_far()}{abandon()}") from None
    except RunStopped as exc:
        raise type(exc)(f"{exc}; {saved_so_far()}{abandon()}") from None
    except OSError as exc:  # a full disk, a folder gone: the files written before are intact
        where = exc.filename or run_dir
        raise RunStopped(f"cannot write {where}: {exc.strerror or exc}; {saved_so_far()}{abandon()}") from None
    except BaseException:
        abandon()
        raise


def _run(*, args: ExitArgs, rules: RuleSet, run_dir: Path, ckpt_dir: Path, label_dir: Path, ckpt: Any, policy: Any,
         optimizer: Any, games: Any, rng: np.random.Generator, writer: Any, saved: list[tuple[Path, int]],
         iteration: int, global_step: int, labels_total: int, elapsed_before: float, start_iteration: int,
         replay: list[Labels], extra: list[Labels], extra_files: list[Path], holdout: Labels | None, proxy: Any,
         eval_bots: dict[str, Any], deal_len: int, hook: IterationHook | None, **_: Any) -> Path:
    """The run once its folder is claimed and written: the iterations (or the offline passes) and the final checkpoint
    (:func:`train`)."""
    import torch

    from agents.ppo_agent import PPOAgent

    start_time = time.time()

    def checkpoint(name: str, step: int | None = None) -> Path:
        state = {"config": config.args_to_dict(args), "run_dir": str(run_dir), "algo": "exit",
                 "iteration": iteration, "global_step": global_step if step is None else step,
                 "labels_total": labels_total,
                 "elapsed_s": elapsed_before + (time.time() - start_time), "numpy_rng": _rng_state(rng),
                 "torch_rng": torch.get_rng_state(), **(games.state() if games is not None else {})}
        path = ckpt_dir / name
        before = _identity(path)
        try:
            save_training_checkpoint(path, policy, rules, optimizer, state)  # and latest.pt
        except OSError:
            # NAME written but not its copy latest.pt: NAME is taken back, so latest.pt, the checkpoint the messages
            # resume from, is the newest one (a NAME that failed to write is left as it was, by atomic_write)
            if name != "latest.pt" and _identity(path) not in (before, None):
                with contextlib.suppress(OSError):
                    path.unlink()
            raise
        saved.append((path, iteration if games is not None else (step or 0) // max(len(extra[0]), 1)))
        return path

    def run_eval(step: int | None = None) -> str:
        at = global_step if step is None else step
        t0 = time.time()
        agent = PPOAgent(policy, deterministic=True, rules=rules, endgame=False)  # the network alone
        parts = []
        for name, bot in eval_bots.items():
            res = evaluate_deals(agent, bot, rules, args.eval_deals, seed=(10_000_000 + args.seed) % 2**62,
                                 max_moves=args.max_moves)
            lo, hi = wilson_interval(res["winrate"] * res["games"], res["games"])
            writer.add_scalar(f"eval/winrate_vs_{name}", res["winrate"], at)
            writer.add_scalar(f"eval/winrate_ci_low_vs_{name}", lo, at)
            writer.add_scalar(f"eval/winrate_ci_high_vs_{name}", hi, at)
            writer.add_scalar(f"eval/points_vs_{name}", res["points"], at)
            parts.append(f"{name} {res['winrate']:.3f} [{lo:.3f}, {hi:.3f}] {res['points']:+.2f} pts")
        if proxy is not None:
            r = proxy_mod.score(agent, proxy, seed=0)
            writer.add_scalar("eval/proxy_regret", r["regret"], at)
            writer.add_scalar("eval/proxy_top1", r["top1"], at)
            parts.append(f"proxy regret {r['regret']:.3f} ± {1.96 * r['regret_se']:.3f} top-1 {r['top1']:.3f}")
        line = "network alone: deal win rate vs " + ", ".join(parts)
        if holdout is not None:
            h = label_stats(policy, holdout, args.reward_scale)
            writer.add_scalar("exit/holdout_regret", h["regret"], at)
            writer.add_scalar("exit/holdout_agreement", h["agreement"], at)
            line += f"; held-out labels: regret {h['regret']:.4f} pts, agrees {h['agreement']:.3f}"
        writer.add_scalar("time/eval_s", time.time() - t0, at)
        policy.train()
        return line

    if extra:
        mirrored = " (with their mirror: augment_suits)" if args.augment_suits else ""
        passes = f"{args.epochs} pass{'es' if args.epochs != 1 else ''}"
        print(f"{len(extra[0]):,} extra labels{mirrored} from {len(extra_files)} files "
              + ("join every update" if games is not None else f"are the data of {passes}"), flush=True)
    if ckpt is None:
        print(f"{'iteration' if games is not None else 'pass'} 0 | {run_eval()}", flush=True)
    if games is None:
        return _offline_passes(args, rules, policy, optimizer, extra[0], rng, writer, checkpoint, run_eval,
                               start_time)
    stop = "iterations reached"
    while iteration < args.iterations:
        iteration += 1
        if args.anneal_lr:  # linearly to 0 over the run
            optimizer.param_groups[0]["lr"] = args.learning_rate * (1.0 - (iteration - 1.0) / args.iterations)
        t0 = time.time()
        labels = games.collect(policy, rng, iteration - 1)
        t_label = time.time() - t0
        labels.save(label_dir / f"iter_{iteration:05d}.npz", rules)
        global_step += args.num_envs * args.deals_per_iteration * deal_len
        labels_total += len(labels)
        before = label_stats(policy, labels, args.reward_scale)  # the network that played, on its own decisions
        replay = [*replay, augmented(labels, rules) if args.augment_suits else labels][-args.replay_iterations:]
        t1 = time.time()
        losses = update(policy, optimizer, join_labels([*extra, *replay]), args, rng)
        t_update = time.time() - t1
        writer.add_scalar("exit/labels", len(labels), global_step)
        writer.add_scalar("exit/labels_total", labels_total, global_step)
        writer.add_scalar("exit/labels_per_s", len(labels) / max(labels.label_s, 1e-9), global_step)
        writer.add_scalar("exit/search_agreement", before["agreement"], global_step)
        writer.add_scalar("exit/regret", before["regret"], global_step)
        writer.add_scalar("losses/explained_variance", before["explained_variance"], global_step)
        for k, v in losses.items():
            writer.add_scalar(f"losses/{k}", v, global_step)
        for name, pts in labels.points.items():
            writer.add_scalar(f"charts/points_vs_{name}", float(pts.mean()), global_step)
        writer.add_scalar("time/label_s", t_label, global_step)
        writer.add_scalar("time/update_s", t_update, global_step)
        elapsed = elapsed_before + (time.time() - start_time)
        over_time = args.max_train_seconds > 0 and elapsed >= args.max_train_seconds
        last = iteration >= args.iterations or over_time
        line = (f"iteration {iteration}/{args.iterations} | step {global_step:,} | {len(labels):,} labels "
                f"({labels_total:,} in all, {len(labels) / max(labels.label_s, 1e-9):,.0f}/s) | network agrees with "
                f"the search {before['agreement']:.3f}, regret {before['regret']:.3f} pts | "
                + (f"policy loss {losses['policy_loss']:.3f} value loss {losses['value_loss']:.3f}" if args.epochs
                   else "no update (epochs 0: labels only)")
                + f" | {_fmt_time(elapsed)} elapsed"
                # a stage of cassino train: the run's budget used and left (train/recipe.py), not the ceiling's time
                + (f", {hook.budget_note()}" if getattr(hook, "budget_note", None) is not None
                   else _time_left(args, iteration, start_iteration, start_time, elapsed)))
        if (args.eval_every and iteration % args.eval_every == 0) or last:
            line += f" | {run_eval()}"
        print(line, flush=True)
        if args.checkpoint_every and iteration % args.checkpoint_every == 0:  # the last too: a resumed run's
            checkpoint(f"iter_{iteration:05d}.pt")                           # final.pt replaces this one's
        if over_time:
            stop = f"max_train_seconds={args.max_train_seconds:g} reached"
            break
        if hook is not None and (reason := hook(iteration, policy, checkpoint)):
            stop = reason
            break
    final = checkpoint("final.pt")
    writer.close()
    elapsed = elapsed_before + (time.time() - start_time)
    print(f"{iteration} iteration{'s' if iteration != 1 else ''}, {labels_total:,} labels in {_fmt_time(elapsed)} "
          f"({stop}); final checkpoint "
          f"{final}", flush=True)
    if args.final_eval_deals > 0 and args.final_eval_opponents:
        final_evaluation(final, rules, args)
    return final


def _offline_passes(args: ExitArgs, rules: RuleSet, policy: Any, optimizer: Any, data: Labels, rng: np.random.Generator,
                    writer: Any, checkpoint: Any, run_eval: Any, start_time: float) -> Path:
    """``iterations: 0``: ``args.epochs`` passes of :func:`update` over ``data`` (the extra labels), the learning
    rate annealed linearly over the passes with ``anneal_lr``; a progress line, TensorBoard scalars and a checkpoint
    (``pass_N.pt``) each pass, an evaluation every ``eval_every`` passes and after the last; then final.pt."""
    one_pass = dataclasses.replace(args, epochs=1)
    stop = f"{args.epochs} passes"
    done = 0
    for p in range(1, args.epochs + 1):
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = args.learning_rate * (1.0 - (p - 1.0) / args.epochs)
        t0 = time.time()
        losses = update(policy, optimizer, data, one_pass, rng)
        done = p
        step = p * len(data)  # the x axis of an offline run: labels trained on
        for k, v in losses.items():
            writer.add_scalar(f"losses/{k}", v, step)
        writer.add_scalar("time/update_s", time.time() - t0, step)
        elapsed = time.time() - start_time
        over_time = args.max_train_seconds > 0 and elapsed >= args.max_train_seconds
        line = (f"pass {p}/{args.epochs} | {len(data):,} labels | policy loss {losses['policy_loss']:.4f} | "
                f"{_fmt_time(elapsed)} elapsed")
        if (args.eval_every and p % args.eval_every == 0) or p == args.epochs or over_time:
            line += f" | {run_eval(step)}"
        print(line, flush=True)
        if args.checkpoint_every and p % args.checkpoint_every == 0:
            checkpoint(f"pass_{p:05d}.pt", step)
        if over_time:
            stop = f"max_train_seconds={args.max_train_seconds:g} reached"
            break
    final = checkpoint("final.pt", done * len(data))
    writer.close()
    print(f"{done} pass{'es' if done != 1 else ''} over {len(data):,} labels in {_fmt_time(time.time() - start_time)}"
          f" ({stop}); final checkpoint {final}", flush=True)
    if args.final_eval_deals > 0 and args.final_eval_opponents:
        final_evaluation(final, rules, args)
    return final


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(tyro.cli(main, config=(tyro.conf.FlagCreatePairsOff,)))
