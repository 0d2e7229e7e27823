"""The phases of a training run that every trainer shares (set-up and resume, the run folder, checkpoint,
evaluation, the Ctrl-C guard, the time left, finish), and self-play PPO's own phases (collect, log, the end of an
iteration).

Both trainers are one loop over these phases: self-play PPO (:mod:`train.ppo_selfplay`) and expert iteration
(:mod:`train.expert.loop`). What a run holds between iterations is a :class:`Run`: the options, the rules, the
network and its optimiser, the generator, the TensorBoard writer, the counters and the last checkpoint; its
:meth:`Run.checkpoint` writes a training checkpoint (:mod:`train.checkpoints`) and :meth:`Run.saved_so_far` says
what is saved for the message of a run that stops. Each trainer's run is a subclass that adds its own parts and
fills in the few methods that differ: :class:`TrainingRun` (the pool, the rollouts) and
:class:`train.expert.loop.ExitRun` (the labelling games, the replay labels). The shape of either trainer::

    args, ckpt = resume_options(args, explicit)  # the checkpoint's config, the options given over it
    run_dir, resuming_here = run_folder(args, ckpt)  # checked (read only): fail before anything is written
    run = ...                                    # the trainer's network, optimiser, games (everything checked)
    load_train_state(run, ckpt)                  # resumed: optimiser, counters (and load_generators)
    claim_run_folder(run, held, resuming_here)   # locked now; write_run_folder: config.yaml, the writer
    with guard(run):                             # Ctrl-C once: stop after the iteration, saved; twice: at once
        while run.iteration < run.num_iterations:
            run.iteration += 1
            ...                                  # the trainer's iteration: games, update, logs
            run.evaluate(); run.checkpoint(name) # when due
            if hook is not None and (reason := hook(...)):  # the recipe's gate: a string stops the stage
                run.stop_reason = reason
                break
            stop_if_interrupted(run, name)       # Ctrl-C was pressed: saved, RunInterrupted with the resume command
    final = finish(run)                          # final.pt, the summary line, the evaluation after training

For PPO, :func:`setup` does the set-up (and the evaluation at step 0) and :func:`end_iteration` the end of each
iteration (pool snapshots, evaluations, checkpoints, the progress line). The recipe (:mod:`train.recipe`, ``cassino
train``) drives both trainers through their hooks, ``hook(run)`` with a :class:`TrainingRun` after each PPO
iteration and ``hook(iteration, policy, checkpoint)`` after each expert iteration (the consolidation stage runs
without one); its budget shows in their progress lines (``Run.budget_note``, :func:`time_left`). Everything is
checked before anything is written; the run folder is then locked, and the lock and the Ray workers go into
``held`` for the trainer's ``train`` to release.
"""

from __future__ import annotations

import contextlib
import shutil
import time
import typing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from agents.registry import AgentSpecError, expand_specs
from cassino_env.rules import make_rules
from train import config
from train.checkpoints import check_train_state, read_training_checkpoint, save_training_checkpoint
from train.config import Args, ConfigError, args_to_dict, check_options, eval_interval
from train.rollout import SELF, SnapshotPool, ThreadRollouts, make_bots, rng_state, set_rng_state
from train.run_folder import remove_stale_temporaries
from train.stats import wilson_interval
from train.stopping import RunInterrupted, RunStopped, guard, stop_if_interrupted

if typing.TYPE_CHECKING:
    import torch
    from torch.utils.tensorboard import SummaryWriter

    from agents.policy import CassinoPolicy, NetworkShape
    from cassino_env.rules import RuleSet
    from train.rollout import Rollout

#: The text logged as ``eval/about`` at the start of a run: what the eval/* scalars measure.
EVAL_ABOUT = ("eval/winrate_vs_BOT: the share of {deals} duplicate deals (each the first deal of a fresh match, "
              "played once from every side) that the agent's side won on deal points, ties counting half; "
              "the policy plays its most probable move (argmax; with two seats the last round exactly, "
              "agents.endgame). eval/winrate_ci_low_vs_BOT and "
              "eval/winrate_ci_high_vs_BOT: its Wilson 95% interval over the games. eval/points_vs_BOT: the "
              "mean deal margin (points). Logged at step 0, every {every:,} env steps (0: none) and at the end. "
              "These are deal win rates; the table printed after training gives match win rates.")


def fmt_time(s: float) -> str:
    """Seconds as ``MmSSs`` (``HhMMm`` from an hour on).

    >>> fmt_time(75), fmt_time(3700)
    ('1m15s', '1h01m')
    """
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


@dataclass(eq=False, kw_only=True)
class Run:
    """What every trainer's run holds between iterations, and the phases that read only this: the checkpoint, what
    is saved (for the messages of a run that stops), the time left. :class:`TrainingRun` (self-play PPO) and
    :class:`train.expert.loop.ExitRun` (expert iteration) add their own parts and fill in the few methods that
    differ (:meth:`more_state`, :meth:`position`, :meth:`summary`).

    Attributes:
        args: the run's options (a resumed run's: the checkpoint's config overridden by the options given).
        rules: its rules. run_dir: its folder; ckpt_dir: ``run_dir / "checkpoints"``.
        policy: the network; optimizer: its Adam optimiser; rng: the generator every random choice draws from.
        num_iterations: iterations to play (a resumed run's count includes the ones before).
        writer: the TensorBoard writer (None until the run folder is written, :func:`write_run_folder`).
        iteration, global_step: iterations played and env steps taken (a resumed run's count on from its
            checkpoint); start_iteration: the iteration this session started at.
        elapsed_before: wall seconds of the run's earlier parts; start_time: ``time.time()`` at this part's start.
        stop_reason: why the loop ended (for the summary line).
        last_checkpoint, last_checkpoint_at: the last checkpoint written whole (a resumed run's: its file) and where
            the run was then (:meth:`position`); None before the first. written: checkpoints this session wrote.
        remove_if_unsaved: the run made its folder, and removes it when it stops before its first checkpoint
            (:meth:`abandon`).
        interrupt_requested: Ctrl-C was pressed once (:func:`guard`): the run stops after the iteration, saved.
        budget_note: for a stage of ``cassino train`` (:mod:`train.recipe`), what is used and left of the recipe's
            budget, shown in the progress lines instead of the time left (:func:`time_left`); None otherwise.
        devices_before: a resumed run's earlier devices (the resumed checkpoint's provenance ``device``), so that a
            checkpoint of a run resumed on another device names both (``cuda:0, then cpu``); None for a fresh run.
    """

    #: The command that resumes a run of this trainer (in the messages of a run that stops).
    command: typing.ClassVar[str] = "cassino train"
    #: What a diverged run may try (the options that scale the loss).
    diverged_hint: typing.ClassVar[str] = "with a smaller learning_rate, or reward_scale, ent_coef, vf_coef"

    args: Any
    rules: RuleSet
    run_dir: Path
    policy: CassinoPolicy
    optimizer: torch.optim.Optimizer
    rng: np.random.Generator
    num_iterations: int
    writer: SummaryWriter | None = None
    iteration: int = 0
    global_step: int = 0
    start_iteration: int = 0
    elapsed_before: float = 0.0
    start_time: float = 0.0
    stop_reason: str = "iterations reached"
    last_checkpoint: Path | None = None
    last_checkpoint_at: str = ""
    written: int = 0
    remove_if_unsaved: bool = False
    interrupt_requested: bool = False
    budget_note: typing.Callable[[], str] | None = None
    devices_before: str | None = None

    @property
    def ckpt_dir(self) -> Path:
        """``run_dir / "checkpoints"``."""
        return self.run_dir / "checkpoints"

    @property
    def resumable(self) -> bool:
        """Whether a checkpoint of this run can be resumed (an expert-iteration run of passes alone cannot)."""
        return True

    def elapsed(self, now: float | None = None) -> float:
        """Wall seconds of the whole run up to ``now`` (default: now), its earlier parts included."""
        return self.elapsed_before + ((time.time() if now is None else now) - self.start_time)

    def position(self) -> str:
        """Where the run is, for its messages (``step 12,288``)."""
        return f"step {self.global_step:,}"

    def more_state(self) -> dict[str, Any]:
        """The trainer's own fields of a checkpoint's ``train`` entry (its games, pool, counters)."""
        return {}

    def summary(self) -> str:
        """The summary line's beginning (:func:`finish`): what was trained, in how long, and why it stopped."""
        return f"trained {self.global_step:,} env steps in {fmt_time(self.elapsed())} ({self.stop_reason})"

    def checkpoint(self, name: str) -> Path:
        """Write ``ckpt_dir / name`` and copy it to ``latest.pt`` (:func:`train.checkpoints.save_training_checkpoint`);
        taken between iterations, so the games sit on a deal boundary and a resume continues exactly.

        The ``train`` entry holds the config, the run folder, the counters, the wall time, both generators' states
        and :meth:`more_state`. When NAME is written but its copy ``latest.pt`` is not, NAME is taken back, so
        ``latest.pt``, the checkpoint the messages resume from, stays the newest one.

        Raises:
            RunStopped: the file cannot be written (a full disk, a folder gone), naming it and what is saved.
        """
        import torch

        train_state = {"config": args_to_dict(self.args), "run_dir": str(self.run_dir), "iteration": self.iteration,
                       "global_step": self.global_step, "elapsed_s": self.elapsed(), "numpy_rng": rng_state(self.rng),
                       "torch_rng": torch.get_rng_state(), **self.more_state()}
        path = self.ckpt_dir / name
        before = _identity(path)
        try:
            save_training_checkpoint(path, self.policy, self.rules, self.optimizer, train_state,
                                     blocks=getattr(self.args, "obs_blocks", None), devices_before=self.devices_before)
        except OSError as exc:  # a full disk, a folder gone: the files written before are intact
            if name != "latest.pt" and _identity(path) not in (before, None):  # NAME written, latest.pt not
                with contextlib.suppress(OSError):
                    path.unlink()
            where = exc.filename or path
            raise RunStopped(f"cannot write the checkpoint {where} at {self.position()}: {exc.strerror or exc}; "
                             f"{self.saved_so_far()}") from None
        self.last_checkpoint, self.last_checkpoint_at = path, self.position()
        self.written += 1
        return path

    def saved_so_far(self) -> str:
        """What is saved, and the command that resumes from it (for the messages of a run that stops)."""
        last, at, resume = self.last_checkpoint, self.last_checkpoint_at, self.args.resume
        if self.written and not self.resumable:
            return f"the last checkpoint, {last} ({at}), is intact (this run is not resumed)"
        if self.written:
            return (f"the last checkpoint, {last} ({at}), is intact: resume with: {self.command} --resume "
                    f"{self.ckpt_dir / 'latest.pt'}")
        if resume is not None:
            again = f" --run-dir {self.run_dir}" if self.args.run_dir else ""
            return (f"this session saved nothing, the run is as {resume} left it ({at}): resume with: "
                    f"{self.command} --resume {resume}{again}")
        return "nothing was saved (no checkpoint was written yet: the run starts again from scratch)"

    def abandon(self) -> str:
        """Remove the run folder when the run made it (``remove_if_unsaved``) and has saved no checkpoint in it;
        returns what to add to the message (empty when nothing was removed)."""
        if self.written or not self.remove_if_unsaved:
            return ""
        if self.writer is not None:
            with contextlib.suppress(Exception):
                self.writer.close()
        shutil.rmtree(self.run_dir, ignore_errors=True)
        return f"; the run folder {self.run_dir}, made by this run, is removed"


def _identity(path: Path) -> tuple[int, int] | None:
    """A file's inode and modification time (None: no file), to tell whether a write replaced it."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns


@dataclass(eq=False, kw_only=True)
class TrainingRun(Run):
    """A self-play PPO run (:func:`setup` makes it; the phases read and update it): a :class:`Run` and

    Attributes:
        batch_steps: env steps per rollout (``num_envs * num_steps``); ``num_iterations`` rollouts are played.
        eval_every: env steps between evaluations (:func:`train.config.eval_interval`; 0: only at the end).
        bots: the bot agents by spec (``bot_rates`` and ``eval_opponents``); eval_names: the evaluation opponents;
            opp_names: the names of the controllers (``self``, ``pool``, then the bots of ``bot_rates``).
        net_shape: the network's shape. pool: the opponent pool; rollouts: :class:`train.rollout.LocalRollouts` or
            :class:`train.ray_rollouts.RayRollouts`.
        last_eval, last_eval_step: the latest deal win rates by opponent and the step they were measured at.
        device: the torch device the network runs on (``args.device`` resolved, :func:`agents.device.resolve_device`;
            the games, bots and pool snapshots stay on the CPU); said_device: the progress line has named it (the
            first one does).
    """

    batch_steps: int
    eval_every: int
    bots: dict[str, Any]
    eval_names: list[str]
    opp_names: list[str]
    net_shape: NetworkShape
    pool: SnapshotPool
    rollouts: Any = None
    stop_reason: str = "total_timesteps reached"
    last_progress: float = 0.0
    last_eval: dict[str, float] = field(default_factory=dict)
    last_eval_step: int = 0
    eval_mark: int = 0
    snap_mark: int = 0
    ckpt_mark: int = 0
    device: Any = None
    said_device: bool = False

    def more_state(self) -> dict[str, Any]:
        """The opponent pool and the games (``env_state``, and ``workers`` with Ray)."""
        return {"pool": self.pool.state(), **self.rollouts.state()}

    def summary(self) -> str:
        """``trained N env steps in T (S SPS, the stop reason)``."""
        elapsed = self.elapsed()
        return (f"trained {self.global_step:,} env steps in {fmt_time(elapsed)} "
                f"({self.global_step / max(elapsed, 1e-9):,.0f} SPS, {self.stop_reason})")

    def evaluate(self) -> dict[str, float]:
        """Deal win rates of the policy (argmax play, with the exact last round of the checkpoint agents,
        :mod:`agents.endgame`) against each of ``eval_names``, logged as ``eval/*`` at ``global_step``; returns them
        by opponent. The policy is left in training mode."""
        from agents.ppo_agent import PPOAgent

        t0 = time.time()
        agent = PPOAgent(self.policy, deterministic=True, rules=self.rules, endgame=True, blocks=self.args.obs_blocks)
        res = evaluate_against(self, agent, {name: self.bots[name] for name in self.eval_names})
        self.writer.add_scalar("time/eval_s", time.time() - t0, self.global_step)
        self.policy.train()
        return {name: r["winrate"] for name, r in res.items()}


def evaluate_against(run: Run, agent: Any, bots: dict[str, Any]) -> dict[str, dict[str, float]]:
    """The evaluation of every trainer: ``agent`` against each of ``bots`` (name -> agent) over ``eval_deals``
    duplicate deals of the run's rules (:func:`train.arena.evaluate_deals`, the seed fixed by ``seed``, so every
    evaluation of a run plays the same deals), logged at ``global_step`` as ``eval/winrate_vs_NAME`` with its Wilson
    95% interval (``eval/winrate_ci_low_vs_NAME``, ``..._high_...``) and ``eval/points_vs_NAME``.

    Returns:
        by name: ``winrate`` (share of deals won, ties half), ``points`` (mean deal margin), ``games``, and the
        interval's ``lo`` and ``hi``.
    """
    from train.arena import evaluate_deals

    out, step, w, args = {}, run.global_step, run.writer, run.args
    for name, bot in bots.items():
        res = evaluate_deals(agent, bot, run.rules, args.eval_deals, seed=(10_000_000 + args.seed) % 2**62,
                             max_moves=args.max_moves)
        lo, hi = wilson_interval(res["winrate"] * res["games"], res["games"])
        w.add_scalar(f"eval/winrate_vs_{name}", res["winrate"], step)
        w.add_scalar(f"eval/winrate_ci_low_vs_{name}", lo, step)
        w.add_scalar(f"eval/winrate_ci_high_vs_{name}", hi, step)
        w.add_scalar(f"eval/points_vs_{name}", res["points"], step)
        out[name] = {"winrate": res["winrate"], "points": res["points"], "games": res["games"], "lo": lo, "hi": hi}
    return out


# ----------------------------------------------------------------------------------------------------------------------
# Set-up and resume
# ----------------------------------------------------------------------------------------------------------------------
def resume_options(args: Any, explicit: set[str] | None,
                   check: typing.Callable[[dict[str, Any], str], None] | None = None,
                   ) -> tuple[Any, dict[str, Any] | None]:
    """With ``args.resume``: read the checkpoint and return the checkpoint's config overridden by the fields in
    ``explicit`` (:func:`train.config.resume_args`), and the checkpoint; without it, ``(args, None)``. ``check``,
    when given, is called as ``check(checkpoint, args.resume)`` before the checkpoint's config is read (a trainer
    refusing another trainer's run).

    Raises:
        agents.ppo_agent.CheckpointError: an unreadable or evaluation-only checkpoint, or a config it holds that is
            not valid; whatever ``check`` raises.
    """
    if args.resume is None:
        return args, None
    from agents.ppo_agent import CheckpointError

    latest = Path(args.resume) / "checkpoints" / "latest.pt"
    with contextlib.suppress(OSError):  # a run folder (as a recipe run takes it): its latest checkpoint
        if Path(args.resume).is_dir() and latest.is_file():
            args = replace(args, resume=str(latest))
    ckpt = read_training_checkpoint(args.resume)
    if check is not None:
        check(ckpt, args.resume)
    args = config.resume_args(args, ckpt["train"], explicit, source=str(args.resume), saved_error=CheckpointError)
    return args, ckpt


def run_folder(args: Any, ckpt: dict[str, Any] | None) -> tuple[Path, bool]:
    """The run folder (``args.run_dir``, else a resumed checkpoint's own folder told from its path, else a new one
    under ``runs_root``) and whether the run resumes into the folder of its checkpoint; checked (read only) to be
    one the run may write to.

    Raises:
        ConfigError: naming ``run_dir``.
    """
    if args.run_dir:
        run_dir = Path(args.run_dir)
    elif ckpt is not None:  # the checkpoint's own run folder, from its path: never a folder named inside the file
        run_dir = config.run_dir_of_checkpoint(args.resume)
    else:
        run_dir = config.default_run_dir(args)
    resume = Path(args.resume) if ckpt is not None else None
    resuming_here = (resume is not None and resume.parent.name == "checkpoints"
                     and resume.parent.parent.resolve() == run_dir.resolve())
    config.check_run_dir(run_dir, resuming=resuming_here, reuse=args.reuse_run_dir)  # reads only: fail early
    return run_dir, resuming_here


def iterations(args: Args) -> tuple[int, int]:
    """``(num_iterations, batch_steps)``: whole rollouts of ``num_envs x num_steps`` env steps, at least one; a note
    is printed when ``total_timesteps`` is not a multiple of a rollout."""
    B, T = args.num_envs, args.num_steps
    batch_steps = B * T
    num_iterations = max(args.total_timesteps // batch_steps, 1)
    if num_iterations * batch_steps != args.total_timesteps:
        print(f"note: total_timesteps={args.total_timesteps:,} is rounded to {num_iterations * batch_steps:,} env "
              f"steps: training runs whole rollouts of num_envs x num_steps = {B:,} x {T} = {batch_steps:,} env steps "
              f"({num_iterations} rollout{'s' if num_iterations > 1 else ''})", flush=True)
    return num_iterations, batch_steps


def setup(args: Args, explicit: set[str] | None, held: list[Any]) -> TrainingRun:
    """Set up a run (and resume it, with ``args.resume``): the options, the checkpoint, the games, the network, its
    optimiser, the pool, the Ray workers and the run folder, then the evaluation at step 0 of a fresh run.

    Everything is checked before anything is written: the options, every agent spec and, with ``args.resume``,
    every field of the checkpoint. The Ray workers (``args.ray_address``) and the run folder's lock are appended to
    ``held``, for the caller to release when the run ends.

    Raises:
        ConfigError: a bad option, agent spec or run folder; no Ray cluster at ``ray_address``.
        agents.ppo_agent.CheckpointError: a checkpoint that cannot be resumed (naming the file and the field).
    """
    import torch

    from agents.policy import CRITICS
    from agents.ppo_agent import CheckpointError

    args, ckpt = resume_options(args, explicit)
    check_options(args)  # Args checked itself when made; again here, for an Args changed since
    if args.critic not in CRITICS:  # CRITIC_CHOICES, the options' copy, is agents.policy's (a test checks)
        raise ConfigError(f"critic={args.critic!r}: choose from {', '.join(CRITICS)}")
    torch.set_num_threads(args.threads)
    device = config.resolve_run_device(args)
    rules = make_rules(args.preset, args.num_players)
    if ckpt is not None and (ckpt["preset"] != rules.preset or ckpt["num_players"] != rules.num_players):
        raise CheckpointError(f"{args.resume}: made for preset {ckpt['preset']!r} with {ckpt['num_players']} players, "
                              f"not {rules.preset!r} with {rules.num_players}")
    num_iterations, batch_steps = iterations(args)
    eval_every = eval_interval(args.eval_every, num_iterations * batch_steps)
    run_dir, resuming_here = run_folder(args, ckpt)

    run = build(args, rules, ckpt, num_iterations=num_iterations, batch_steps=batch_steps, eval_every=eval_every,
                run_dir=run_dir, device=device)
    if ckpt is not None:
        restore(run, ckpt)
    else:
        run.pool.add(run.policy, 0)
    start_workers(run, ckpt, held)

    # the run folder: locked and written only now, once every option and the checkpoint have been checked
    claim_run_folder(run, held, resuming_here)
    write_run_folder(run, fresh=ckpt is None)
    if ckpt is None:
        run.writer.add_text("eval/about", EVAL_ABOUT.format(deals=args.eval_deals, every=eval_every))

    run.start_time = time.time()
    run.last_eval_step = run.global_step
    run.eval_mark = run.global_step // eval_every if eval_every else 0
    run.snap_mark = run.global_step // args.snapshot_every if args.snapshot_every else 0
    run.ckpt_mark = run.global_step // args.checkpoint_every if args.checkpoint_every else 0
    if ckpt is None and eval_every:
        run.last_eval = run.evaluate()  # the starting point of the curves
    return run


def build(args: Args, rules: RuleSet, ckpt: dict[str, Any] | None, *, num_iterations: int, batch_steps: int,
          eval_every: int, run_dir: Path, device: Any = None) -> TrainingRun:
    """Seed the run and make its parts: the bots (every spec checked, the final evaluation's too), the local games
    (without Ray), the network (checked against a resumed checkpoint's before it is allocated; made on the CPU from
    the seed, whatever the device, then moved to ``device``, None: the CPU), its optimiser and the pool; nothing is
    restored yet (:func:`restore`)."""
    import torch

    from agents.features import MOVE_FEATURES, NUM_MOVE_FEATURES, critic_state_size
    from agents.features import SCALE as FEATURE_SCALE
    from agents.policy import CassinoPolicy, NetworkShape
    from agents.ppo_agent import check_network
    from cassino_env.vector import CassinoVectorEnv
    from train.rollout import LocalRollouts, RolloutCollector, ThreadRollouts, worker_seeds

    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    bot_names = list(args.bot_rates)
    eval_names = expand_specs(args.eval_opponents)  # "ladder": the bots of agents.registry.LADDER
    try:  # every agent spec is checked before anything is written, the final evaluation's too
        bots = make_bots(dict.fromkeys([*bot_names, *eval_names]), rules)
        make_bots([s for s in expand_specs(args.final_eval_opponents) if s not in bots], rules)
    except AgentSpecError as exc:
        raise ConfigError(f"bot_rates / eval_opponents / final_eval_opponents: {exc}") from None
    collector = None
    if args.ray_address is None and args.num_workers == 1:  # one collector here, over every game, drawing from `rng`
        collector = RolloutCollector(args, rules, args.num_envs, worker_seeds(args.seed, 0)[0], bots)
        obs_dim = collector.env.obs_size
    else:  # the games live on collector threads or Ray workers; an env of these rules gives the observation length
        probe = CassinoVectorEnv(1, rules, seed=0, max_moves=args.max_moves, reward=args.reward, episode="deal",
                                 blocks=args.obs_blocks)
        obs_dim = probe.obs_size
    F = NUM_MOVE_FEATURES if args.move_features else 0
    C = critic_state_size(rules.num_players) if args.critic_full_state and args.critic == "separate" else 0
    net_shape = NetworkShape(obs_dim=obs_dim, hidden=args.hidden, embed=args.embed, move_features=F,
                             critic=args.critic, critic_dim=C)
    if ckpt is not None:  # the file's network against the run's, before any network is allocated
        check_network(ckpt, args.resume, net_shape)
    policy = CassinoPolicy.from_shape(net_shape)
    if F and args.feature_prior:
        policy.set_feature_prior(MOVE_FEATURES.index("advanced_score"), args.feature_prior / FEATURE_SCALE)
    device = torch.device("cpu") if device is None else device
    policy.to(device)  # the same initial weights on every device: drawn on the CPU above
    # fused: one kernel for every parameter's update instead of ~10 small ops per parameter (6-10x faster on CPU,
    # the same formula; results agree to float rounding, about 1e-8 per step): docs/training.md, "Throughput"
    optimizer = torch.optim.Adam(policy.parameters(), lr=args.learning_rate, eps=1e-5, fused=True)
    # its pool network drawn from torch's generator here, after the policy (the same draws as always)
    if collector is not None:
        rollouts = LocalRollouts(collector, net_shape, device)
    elif args.ray_address is None:  # collector threads here, num_envs / num_workers games each
        rollouts = ThreadRollouts(args, rules, net_shape, device)
    else:
        rollouts = None  # the Ray workers, started by start_workers
    return TrainingRun(args=args, rules=rules, run_dir=run_dir, num_iterations=num_iterations,
                       batch_steps=batch_steps, eval_every=eval_every, rng=rng, bots=bots, eval_names=eval_names,
                       opp_names=["self", "pool", *bot_names], net_shape=net_shape, policy=policy,
                       optimizer=optimizer, pool=SnapshotPool(args.pool_size, args.pool_sampling), rollouts=rollouts,
                       device=device)


def restore(run: TrainingRun, ckpt: dict[str, Any]) -> None:
    """Resume: check every field of the checkpoint's training state against the run
    (:func:`train.checkpoints.check_train_state`), then load the network, the optimiser, the counters, the pool and
    the generators (the games are loaded by :func:`start_workers`).

    Raises:
        agents.ppo_agent.CheckpointError: naming the file and the field.
    """
    from agents.ppo_agent import policy_from_checkpoint
    from cassino_env.vector import CassinoVectorEnv

    args = run.args
    run.policy.load_state_dict(policy_from_checkpoint(ckpt, args.resume, run.net_shape).state_dict())
    tr = ckpt["train"]
    if run.rollouts is not None:
        env = run.rollouts.collector.env
    else:  # an env of one Ray worker's size gives the shapes to check the checkpoint's games by
        env = CassinoVectorEnv(args.num_envs // args.num_workers, run.rules, seed=0, max_moves=args.max_moves,
                               reward=args.reward, episode="deal", with_view=bool(args.bot_rates) or args.move_features,
                               blocks=args.obs_blocks)
        env.reset()
    check_train_state(tr, args.resume, run.policy, env, ckpt["optimizer"],  # every field, before any is applied
                      num_workers=args.num_workers)
    load_train_state(run, ckpt)
    for group in run.optimizer.param_groups:  # a checkpoint's own settings replace these: the fused kernel stays
        group["fused"], group["foreach"] = True, None
    run.pool.load(tr["pool"])
    load_generators(run, tr)


def load_train_state(run: Run, ckpt: dict[str, Any]) -> None:
    """Resume, once every field of the checkpoint has been checked (:mod:`train.checkpoints`): the optimiser's
    state, the counters, the wall time of the earlier parts, the devices they trained on (``devices_before``) and
    the file resumed as the last checkpoint. The
    generators are :func:`load_generators`' (a trainer loads them once its set-up has drawn what it draws); the
    trainer's own parts (pool, games) are its own.

    Raises:
        agents.ppo_agent.CheckpointError: the optimiser's state does not fit the network.
    """
    from agents.ppo_agent import CheckpointError

    try:
        run.optimizer.load_state_dict(ckpt["optimizer"])
    except (ValueError, KeyError, TypeError, RuntimeError) as exc:
        raise CheckpointError(f"{run.args.resume}: optimizer: does not fit the network: {exc}") from None
    tr = ckpt["train"]
    run.iteration, run.global_step = int(tr["iteration"]), int(tr["global_step"])
    run.start_iteration, run.elapsed_before = run.iteration, float(tr.get("elapsed_s", 0.0))
    run.last_checkpoint, run.last_checkpoint_at = Path(run.args.resume), run.position()
    before = (ckpt.get("provenance") or {}).get("device")  # where the earlier parts trained (checked plain text)
    run.devices_before = before if isinstance(before, str) else None


def load_generators(run: Run, tr: dict[str, Any]) -> None:
    """Resume the run's numpy generator and torch's global one from a checkpoint's ``train`` entry (checked)."""
    import torch

    set_rng_state(run.rng, tr["numpy_rng"])
    torch.set_rng_state(tr["torch_rng"])


def start_workers(run: TrainingRun, ckpt: dict[str, Any] | None, held: list[Any]) -> None:
    """With ``ray_address``, start the Ray workers (once everything is checked; appended to ``held``); then load a
    resumed checkpoint's games, here or there.

    Raises:
        ConfigError: naming ``ray_address`` or ``num_workers``.
    """
    args = run.args
    if isinstance(run.rollouts, ThreadRollouts):  # its threads end with the run
        held.append(run.rollouts)
    if run.rollouts is None:
        from train.ray_rollouts import RayRollouts

        run.rollouts = RayRollouts(args, run.net_shape)  # ConfigError (ray_address, num_workers) before any write
        held.append(run.rollouts)  # released (actors ended, Ray shut down if started here) when the run ends
        print(f"{args.num_workers} rollout worker{'s' if args.num_workers > 1 else ''} on the Ray cluster at "
              f"{args.ray_address!r}, {args.num_envs // args.num_workers:,} games each", flush=True)
    if ckpt is not None:
        run.rollouts.load(ckpt["train"])
        print(f"resumed {args.resume} at iteration {run.iteration}, step {run.global_step:,}", flush=True)


# ----------------------------------------------------------------------------------------------------------------------
# The run folder
# ----------------------------------------------------------------------------------------------------------------------
def claim_run_folder(run: Run, held: list[Any], resuming_here: bool, *, remove_if_unsaved: bool = False) -> None:
    """Lock the run folder for the run, creating it (:func:`train.config.claim_run_dir`: called once every option
    and the checkpoint have been checked; the lock is appended to ``held``), then remove the temporary files a
    killed run left in a folder that is resumed or reused (:func:`remove_stale_temporaries`).
    ``remove_if_unsaved``: a folder the run makes is removed should the run stop before its first checkpoint
    (:meth:`Run.abandon`).

    Raises:
        ConfigError: naming ``run_dir`` (in use by another run, not empty, cannot be created).
    """
    args = run.args
    made = not config.looked_at(run.run_dir.exists)
    held.append(config.claim_run_dir(run.run_dir, resuming=resuming_here, reuse=args.reuse_run_dir))
    run.remove_if_unsaved = remove_if_unsaved and made and not args.reuse_run_dir
    if resuming_here or args.reuse_run_dir:
        remove_stale_temporaries(run.run_dir)


def write_run_folder(run: Run, fresh: bool) -> None:
    """Write the claimed run folder's ``config.yaml`` (the run's options), make ``checkpoints/`` and open the
    TensorBoard writer (``run.writer``); a ``fresh`` run (not resumed) logs its options as ``hyperparameters``.

    Raises:
        RunStopped: ``config.yaml`` cannot be written.
    """
    from torch.utils.tensorboard import SummaryWriter

    from agents.ppo_agent import atomic_write

    run.ckpt_dir.mkdir(parents=True, exist_ok=True)
    config_text = yaml.safe_dump(args_to_dict(run.args), sort_keys=False).encode("utf-8")
    try:
        atomic_write(run.run_dir / "config.yaml", lambda f: f.write(config_text))
    except OSError as exc:
        raise RunStopped(f"cannot write {run.run_dir / 'config.yaml'}: {exc.strerror or exc}") from None
    run.writer = SummaryWriter(str(run.run_dir))
    if fresh:
        run.writer.add_text("hyperparameters", config.hparams_table(run.args))


# ----------------------------------------------------------------------------------------------------------------------
# Collect, log, evaluate and checkpoint, finish
# ----------------------------------------------------------------------------------------------------------------------
def collect(run: TrainingRun) -> Rollout:
    """One rollout of every game (:meth:`train.rollout.LocalRollouts.collect`): the iteration's pool snapshot drawn,
    the current policy playing the learner's seats; the learner's results against the snapshot are recorded in the
    pool and ``global_step`` advances by ``batch_steps``. Returns the rollout, GAE done."""
    snap = run.pool.sample(run.rng)
    deals_done = run.global_step // (run.args.num_envs * run.rules.deal_length)
    ro = run.rollouts.collect(run.policy, run.pool.snapshots[snap], run.rng, deals_done)
    run.pool.record(snap, ro.pool_results)
    run.global_step += run.batch_steps
    return ro


def log_rollout(run: TrainingRun, ro: Rollout, t_iter: float, t_upd: float, t_done: float) -> None:
    """Log an iteration's speed, time split and deal margins (``charts/SPS``, ``time/*``,
    ``charts/episodic_return``, ``charts/points_vs_<opponent>``): the iteration started at ``t_iter``, its update
    at ``t_upd`` and ended at ``t_done`` (``time.time()`` values)."""
    w, step = run.writer, run.global_step
    w.add_scalar("charts/learning_rate", run.optimizer.param_groups[0]["lr"], step)
    w.add_scalar("charts/SPS", int(step / max(run.elapsed(t_done), 1e-9)), step)
    iter_s = t_done - t_iter
    w.add_scalar("time/env_s", ro.env_s, step)
    w.add_scalar("time/inference_s", ro.inference_s, step)
    w.add_scalar("time/update_s", t_done - t_upd, step)
    w.add_scalar("time/env_fraction", ro.env_s / iter_s, step)
    w.add_scalar("time/update_fraction", (t_done - t_upd) / iter_s, step)
    if run.rollouts.overhead_s is not None:
        w.add_scalar("time/ray_overhead_s", run.rollouts.overhead_s, step)
    if len(ro.ep_returns):
        rets, who = ro.ep_returns, ro.ep_ctrl
        w.add_scalar("charts/episodic_return", float(rets[who != SELF].mean()) if (who != SELF).any() else 0.0, step)
        for c in np.unique(who[who != SELF]):
            w.add_scalar(f"charts/points_vs_{run.opp_names[c]}", float(rets[who == c].mean()), step)


def end_iteration(run: TrainingRun, t_done: float, progress: str = "") -> bool:
    """After an iteration's update (ended at ``t_done``): add a pool snapshot, evaluate, write a checkpoint and print
    the progress line (with ``progress``, e.g. the losses) when each is due; returns True when the run must stop
    now (``max_train_seconds`` reached; ``stop_reason`` says so)."""
    args, step = run.args, run.global_step
    elapsed = run.elapsed(t_done)
    if args.snapshot_every and step // args.snapshot_every > run.snap_mark:
        run.snap_mark = step // args.snapshot_every
        run.pool.add(run.policy, step)
    over_time = args.max_train_seconds > 0 and elapsed >= args.max_train_seconds
    last_iter = run.iteration >= run.num_iterations or over_time
    if (run.eval_every and step // run.eval_every > run.eval_mark) or last_iter:
        run.eval_mark = step // run.eval_every if run.eval_every else 0
        run.last_eval, run.last_eval_step = run.evaluate(), step
    if args.checkpoint_every and step // args.checkpoint_every > run.ckpt_mark and not last_iter:
        run.ckpt_mark = step // args.checkpoint_every
        run.checkpoint(f"step_{step:011d}.pt")
    now = time.time()
    if now - run.last_progress >= args.progress_every_s or last_iter:
        run.last_progress = now
        if not run.said_device:  # the run's first progress line (of this process) names where the network runs
            run.said_device = True
            progress = f"{progress} | network on {run.device}" if progress else f"network on {run.device}"
        print(progress_line(run, elapsed, progress), flush=True)
    if over_time:
        run.stop_reason = f"max_train_seconds={args.max_train_seconds:g} reached"
    if not last_iter:  # Ctrl-C: saved here, between iterations, on a deal boundary
        stop_if_interrupted(run, f"step_{step:011d}.pt")
    return over_time


def time_left(run: Run, elapsed: float) -> str:
    """What is left of the run, for its progress lines (``elapsed``: :meth:`Run.elapsed` now): a stage of ``cassino
    train``'s budget note (``run.budget_note``: the recipe's budget, not the stage's iteration cap, ends it), else
    ``~XmYYs left`` at this session's pace per iteration, no later than ``max_train_seconds``; empty after the last
    iteration and before this session's first."""
    if run.budget_note is not None:
        return run.budget_note()
    todo, done = run.num_iterations - run.iteration, run.iteration - run.start_iteration
    if todo <= 0 or done <= 0:
        return ""
    left = todo * (elapsed - run.elapsed_before) / done
    if run.args.max_train_seconds > 0:  # the time limit ends the run first when it comes sooner
        left = min(left, max(run.args.max_train_seconds - elapsed, 0.0))
    return f"~{fmt_time(left)} left"


def progress_line(run: TrainingRun, elapsed: float, extra: str = "") -> str:
    """The progress line: step, share done, speed, time spent and left (:func:`time_left`), ``extra`` (the losses),
    the latest evaluation."""
    step = run.global_step
    wins = " ".join(f"{k} {v:.2f}" for k, v in run.last_eval.items())
    sides = run.rules.num_sides
    level = f" (level play: {1 / sides:.2f}, one side against {sides - 1} sides of the bot)" if sides > 2 else ""
    wins = f"deal win rate (argmax play) at step {run.last_eval_step:,} vs {wins}{level}" if wins else ""
    sps = int(step / max(elapsed, 1e-9))
    left = time_left(run, elapsed)
    cap = run.num_iterations * run.batch_steps
    done = (f"step {step:>11,} (stage cap {cap:,})" if run.budget_note is not None  # a stage: the budget ends it
            else f"step {step:>11,}/{cap:,} ({100 * run.iteration / run.num_iterations:3.0f}%)")
    return (f"{done} | SPS {sps:,} | {fmt_time(elapsed)} elapsed"
            + (f", {left}" if left else "") + (f" | {extra}" if extra else "") + (f" | {wins}" if wins else ""))


def finish(run: Run) -> Path:
    """Write ``final.pt`` (copied to ``latest.pt``), print the summary line (:meth:`Run.summary`), close the writer
    and run the evaluation after training (:func:`final_evaluation`, unless ``final_eval_deals`` is 0); returns the
    final checkpoint.

    ``final.pt`` is written under :func:`guard`, as the loop's checkpoints are: a first Ctrl-C waits for it, a second
    stops at once, saying what is saved. A Ctrl-C pressed in the last iteration or while ``final.pt`` is written
    stops the run once it is saved, before the evaluation after training (a stage of ``cassino train`` before its
    gate).

    Raises:
        RunInterrupted: Ctrl-C (the message names the final checkpoint, or what is saved when it was not written,
            and how to evaluate it); RunStopped: ``final.pt`` cannot be written (:meth:`Run.checkpoint`).
    """
    with guard(run, first="stopping once the final checkpoint is written"):  # twice: at once
        final = run.checkpoint("final.pt")
        run.writer.flush()
        print(f"{run.summary()}; final checkpoint {final}", flush=True)
        run.writer.close()
    evaluation = run.args.final_eval_deals > 0 and bool(run.args.final_eval_opponents)
    if run.interrupt_requested:  # the user asked the run to stop: it stops here, saved, whatever is left to do
        skipped = (f"; the evaluation after training is skipped: evaluate it with: cassino eval --agents "
                   f"checkpoint:{final},ladder" if evaluation else "")
        raise RunInterrupted(f"interrupted at {run.position()}: nothing is lost, the run is complete: {final} holds "
                             f"the trained network{skipped}")
    if evaluation:
        try:
            final_evaluation(final, run.rules, run.args)
        except KeyboardInterrupt:
            raise RunInterrupted(f"interrupted during the evaluation after training: nothing is lost, the trained "
                                 f"network is {final}: evaluate it with: cassino eval --agents checkpoint:{final},"
                                 "ladder") from None
    return final


def final_evaluation(path: Path, rules: Any, args: Args, network_alone: bool = False) -> dict[str, Any]:
    """Head-to-head evaluation of a checkpoint against the bot ladder (``train.evaluate``); prints the table (the
    checkpoint named by its file name, its pairs only, the ratings explained) and saves the whole report as
    ``cassino eval`` does, in ``RUN/eval_after_training/`` (``..._network_alone/``), RUN the checkpoint's run folder.
    ``network_alone``: the network playing every round itself (``policy:checkpoint:PATH``, no exact last round)."""
    from train.evaluate import evaluate, write_report
    from train.report import format_table, rename_agent

    t0 = time.time()
    opponents = expand_specs(args.final_eval_opponents)
    head = "policy:" if network_alone else ""
    spec, short = f"{head}checkpoint:{path}", f"{head}checkpoint:{Path(path).name}"
    exact = rules.num_players == 2 and not network_alone
    print(f"evaluating {'the network alone of ' if network_alone else ''}{path} against {', '.join(opponents)} on "
          f"{args.final_eval_deals:,} duplicate deals each: whole matches to {rules.target}, the checkpoint playing "
          f"its most probable move (argmax{', the last round exactly' if exact else ''}); the table gives "
          "match win rates (not the deal win rates of the progress line) ...", flush=True)
    result = evaluate([spec, *opponents], rules, deals=args.final_eval_deals, seed=(args.seed + 20_000_000) % 2**31,
                      device=args.device)
    named = result["agents"][0]  # the report's name: the path relative to here when the run folder lies below it
    if short != named and short not in result["agents"]:  # the table names it shortly, its whole spec once here
        result = rename_agent(result, named, short)
        result["specs"][short] = spec  # the whole path: the saved report works from any folder
        print(f"{short} below is {spec}")
    else:
        short = named
    print(format_table(result, only=short, legend=True), flush=True)
    # saved beside the checkpoints, as cassino eval saves its report (RUN/checkpoints/final.pt: RUN/eval_...)
    out_dir = Path(path).parent.parent / ("eval_after_training" + ("_network_alone" if network_alone else ""))
    try:
        write_report(result, out_dir)
        print(f"wrote {out_dir}/eval.json, eval.csv, eval.md, heatmap.png (every pair)")
    except OSError as exc:  # the table above is the result; a report that cannot be written is not an error
        print(f"note: the report was not saved in {out_dir}: {exc.strerror or exc}")
    print(f"(evaluation took {fmt_time(time.time() - t0)})", flush=True)
    return result
