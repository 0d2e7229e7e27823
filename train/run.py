"""The self-play PPO run's phases other than the learning update (set-up and resume, collect, log, evaluate,
checkpoint, finish), and the few pieces every trainer takes from here.

Who uses what. :mod:`train.ppo_selfplay` is the one loop over the phases (below). Expert iteration
(:mod:`train.expert`) runs a loop of its own (labels, update, checkpoints) and takes from here only the stop
errors (:class:`RunStopped`, :class:`Diverged`), :func:`fmt_time` and :func:`final_evaluation` (the table after
training); what else it shares with PPO lives in other modules (:mod:`train.config`'s run
folder and resume, :mod:`train.checkpoints`, :func:`train.arena.evaluate_deals`, :mod:`train.rollout`'s bots and
generator states). The recipe (:mod:`train.recipe`, ``cassino train``) drives both trainers through their hooks,
``hook(run)`` with a :class:`TrainingRun` after each PPO iteration and ``hook(iteration, policy, checkpoint)`` after
each expert iteration (the consolidation stage runs without one), and takes :class:`RunInterrupted`,
:func:`fmt_time` and :func:`final_evaluation` from here.

The PPO trainer is a short loop over the phases::

    run = setup(args, explicit, held)       # options, checkpoint, games, network, pool, run folder; eval at step 0
    while run.iteration < run.num_iterations:
        run.iteration += 1
        ro = collect(run)                   # one rollout of every game, GAE done (train.rollout)
        stats = ppo_update(run.policy, run.optimizer, ro, args, run.rng)  # the learning step, not a phase here
        log_rollout(run, ro, t_iter, t_upd, t_done)
        if end_iteration(run, t_done, progress=...):  # snapshots, evaluations, checkpoints, the progress line
            break
        if hook is not None and (reason := hook(run)):  # the recipe's gate: a string stops the stage
            run.stop_reason = reason
            break
    final = finish(run)                     # final.pt, the summary line, the evaluation after training

:class:`TrainingRun` holds what lasts from one iteration to the next: the options, the rules, the network and its
optimiser, the opponent pool, the rollouts (here or on Ray), the generator, the TensorBoard writer and the counters.
Its :meth:`TrainingRun.checkpoint` writes a training checkpoint (:mod:`train.checkpoints`) and
:meth:`TrainingRun.evaluate` the deal win rates against ``eval_opponents`` (:func:`train.arena.evaluate_deals`).
Everything is checked before anything is written (:func:`setup`); the run folder is then locked, and the lock and the
Ray workers go into ``held`` for the caller to release (:func:`train.ppo_selfplay.train`).
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
import typing
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from agents.registry import AgentSpecError, expand_specs
from cassino_env.rules import make_rules
from train import config
from train.checkpoints import check_train_state, read_training_checkpoint, save_training_checkpoint
from train.config import Args, ConfigError, args_to_dict, check_options, eval_interval
from train.rollout import SELF, SnapshotPool, make_bots, rng_state, set_rng_state
from train.stats import wilson_interval

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


class RunStopped(RuntimeError):
    """A run that cannot go on (its losses are no longer finite, a checkpoint cannot be written): the message names
    the step and the last checkpoint written whole, which is left intact (``cassino train`` prints it as one
    ``error:`` line and exits with 1)."""


class Diverged(RunStopped):
    """The PPO update met a loss or a gradient that is not a finite number; no weights of it were applied."""


class RunInterrupted(RunStopped):
    """Ctrl-C (SIGINT): the message says what is saved and how to resume (``cassino train`` prints it as one line and
    exits with 130)."""


def fmt_time(s: float) -> str:
    """Seconds as ``MmSSs`` (``HhMMm`` from an hour on).

    >>> fmt_time(75), fmt_time(3700)
    ('1m15s', '1h01m')
    """
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


@dataclass(eq=False)
class TrainingRun:
    """What a training run holds between iterations (:func:`setup` makes it; the phases read and update it).

    Attributes:
        args: the run's options (a resumed run's: the checkpoint's config overridden by the options given).
        rules: its rules. run_dir: its folder; ckpt_dir: ``run_dir / "checkpoints"``.
        num_iterations: rollouts to play; batch_steps: env steps per rollout (``num_envs * num_steps``).
        eval_every: env steps between evaluations (:func:`train.config.eval_interval`; 0: only at the end).
        rng: the generator every random choice of the run draws from.
        bots: the bot agents by spec (``bot_rates`` and ``eval_opponents``); eval_names: the evaluation opponents;
            opp_names: the names of the controllers (``self``, ``pool``, then the bots of ``bot_rates``).
        net_shape: the network's shape; policy: the network; optimizer: its Adam optimiser.
        device: the torch device the network runs on (``args.device`` resolved, :func:`agents.device.resolve_device`;
            the games, bots and pool snapshots stay on the CPU).
        pool: the opponent pool; rollouts: :class:`train.rollout.LocalRollouts` or
            :class:`train.ray_rollouts.RayRollouts`.
        writer: the TensorBoard writer (None until the run folder is claimed).
        iteration, global_step: rollouts played and env steps taken (a resumed run's count on from its checkpoint);
            elapsed_before: wall seconds of the run's earlier parts; start_time: ``time.time()`` at this part's start.
            said_device: the progress line has named ``device`` (the first one does).
        last_eval, last_eval_step: the latest deal win rates by opponent and the step they were measured at.
        stop_reason: why the loop ended (for the summary line).
        last_checkpoint, last_checkpoint_step: the last checkpoint written whole (a resumed run's: its file) and its
            step; None before the first.
        interrupt_requested: Ctrl-C was pressed once (:func:`guard`): the run stops after the iteration, saved.
    """

    args: Args
    rules: RuleSet
    run_dir: Path
    num_iterations: int
    batch_steps: int
    eval_every: int
    rng: np.random.Generator
    bots: dict[str, Any]
    eval_names: list[str]
    opp_names: list[str]
    net_shape: NetworkShape
    policy: CassinoPolicy
    optimizer: torch.optim.Optimizer
    pool: SnapshotPool
    rollouts: Any = None
    writer: SummaryWriter | None = None
    iteration: int = 0
    global_step: int = 0
    elapsed_before: float = 0.0
    start_time: float = 0.0
    last_progress: float = 0.0
    last_eval: dict[str, float] = field(default_factory=dict)
    last_eval_step: int = 0
    eval_mark: int = 0
    snap_mark: int = 0
    ckpt_mark: int = 0
    stop_reason: str = "total_timesteps reached"
    last_checkpoint: Path | None = None
    last_checkpoint_step: int = 0
    interrupt_requested: bool = False
    device: Any = None
    said_device: bool = False

    @property
    def ckpt_dir(self) -> Path:
        """``run_dir / "checkpoints"``."""
        return self.run_dir / "checkpoints"

    def elapsed(self, now: float | None = None) -> float:
        """Wall seconds of the whole run up to ``now`` (default: now), its earlier parts included."""
        return self.elapsed_before + ((time.time() if now is None else now) - self.start_time)

    def checkpoint(self, name: str) -> Path:
        """Write ``ckpt_dir / name`` and copy it to ``latest.pt`` (:func:`train.checkpoints.save_training_checkpoint`);
        taken between iterations, so the games sit on a deal boundary and a resume continues exactly."""
        import torch

        train_state = {
            "config": args_to_dict(self.args), "run_dir": str(self.run_dir), "iteration": self.iteration,
            "global_step": self.global_step, "elapsed_s": self.elapsed(), "numpy_rng": rng_state(self.rng),
            "torch_rng": torch.get_rng_state(), "pool": self.pool.state(), **self.rollouts.state(),  # env_state
        }
        try:
            path = save_training_checkpoint(self.ckpt_dir / name, self.policy, self.rules, self.optimizer, train_state,
                                            blocks=self.args.obs_blocks)
        except OSError as exc:  # a full disk, a folder gone: the files written before are intact
            where = exc.filename or self.ckpt_dir / name
            raise RunStopped(f"cannot write the checkpoint {where} at step {self.global_step:,}: "
                             f"{exc.strerror or exc}; {self.saved_so_far()}") from None
        self.last_checkpoint, self.last_checkpoint_step = path, self.global_step
        return path

    def saved_so_far(self) -> str:
        """What is saved, and the command that resumes from it (for the messages of a run that stops)."""
        if self.last_checkpoint is None:
            return "no checkpoint was written yet (the run starts again from scratch)"
        latest = self.ckpt_dir / "latest.pt"
        ckpt = latest if self.last_checkpoint.parent == self.ckpt_dir else self.last_checkpoint
        return (f"the last checkpoint, {self.last_checkpoint} (step {self.last_checkpoint_step:,}), is intact: resume "
                f"with: cassino train --resume {ckpt}")

    def evaluate(self) -> dict[str, float]:
        """Deal win rates of the policy (argmax play, with the exact last round of the checkpoint agents,
        :mod:`agents.endgame`) against each of ``eval_names``, logged as ``eval/*`` at ``global_step``; returns them
        by opponent. The policy is left in training mode."""
        from agents.ppo_agent import PPOAgent
        from train.arena import evaluate_deals

        t0 = time.time()
        agent = PPOAgent(self.policy, deterministic=True, rules=self.rules, endgame=True, blocks=self.args.obs_blocks)
        out, step, w = {}, self.global_step, self.writer
        for name in self.eval_names:
            res = evaluate_deals(agent, self.bots[name], self.rules, self.args.eval_deals,
                                 seed=(10_000_000 + self.args.seed) % 2**62, max_moves=self.args.max_moves)
            lo, hi = wilson_interval(res["winrate"] * res["games"], res["games"])
            w.add_scalar(f"eval/winrate_vs_{name}", res["winrate"], step)
            w.add_scalar(f"eval/winrate_ci_low_vs_{name}", lo, step)
            w.add_scalar(f"eval/winrate_ci_high_vs_{name}", hi, step)
            w.add_scalar(f"eval/points_vs_{name}", res["points"], step)
            out[name] = res["winrate"]
        w.add_scalar("time/eval_s", time.time() - t0, step)
        self.policy.train()
        return out


# ----------------------------------------------------------------------------------------------------------------------
# Set-up and resume
# ----------------------------------------------------------------------------------------------------------------------
def resume_options(args: Args, explicit: set[str] | None) -> tuple[Args, dict[str, Any] | None]:
    """With ``args.resume``: read the checkpoint and return the checkpoint's config overridden by the fields in
    ``explicit`` (:func:`train.config.resume_args`), and the checkpoint; without it, ``(args, None)``.

    Raises:
        agents.ppo_agent.CheckpointError: an unreadable or evaluation-only checkpoint, or a config it holds that is
            not valid.
    """
    if args.resume is None:
        return args, None
    from agents.ppo_agent import CheckpointError

    ckpt = read_training_checkpoint(args.resume)
    args = config.resume_args(args, ckpt["train"], explicit, source=str(args.resume), saved_error=CheckpointError)
    return args, ckpt


def run_folder(args: Args, ckpt: dict[str, Any] | None) -> tuple[Path, bool]:
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
    from torch.utils.tensorboard import SummaryWriter

    from agents.policy import CRITICS
    from agents.ppo_agent import CheckpointError, atomic_write

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
    held.append(config.claim_run_dir(run_dir, resuming=resuming_here, reuse=args.reuse_run_dir))
    run.ckpt_dir.mkdir(parents=True, exist_ok=True)
    config_text = yaml.safe_dump(args_to_dict(args), sort_keys=False).encode("utf-8")
    try:
        atomic_write(run_dir / "config.yaml", lambda f: f.write(config_text))
    except OSError as exc:
        raise RunStopped(f"cannot write {run_dir / 'config.yaml'}: {exc.strerror or exc}") from None
    run.writer = SummaryWriter(str(run_dir))
    if ckpt is None:
        run.writer.add_text("hyperparameters", config.hparams_table(args))
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
    from train.rollout import LocalRollouts, RolloutCollector, worker_seeds

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
    if args.ray_address is None:  # one collector here, over every game, drawing from `rng`
        collector = RolloutCollector(args, rules, args.num_envs, worker_seeds(args.seed, 0)[0], bots)
        obs_dim = collector.env.obs_size
    else:  # the games live on the Ray workers; their observation length is that of an env of these rules
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
    rollouts = LocalRollouts(collector, net_shape, device) if collector is not None else None
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
    import torch

    from agents.ppo_agent import CheckpointError, policy_from_checkpoint
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
    try:
        run.optimizer.load_state_dict(ckpt["optimizer"])
    except (ValueError, KeyError, TypeError, RuntimeError) as exc:
        raise CheckpointError(f"{args.resume}: optimizer: does not fit the network: {exc}") from None
    for group in run.optimizer.param_groups:  # a checkpoint's own settings replace these: the fused kernel stays
        group["fused"], group["foreach"] = True, None
    run.iteration, run.global_step = int(tr["iteration"]), int(tr["global_step"])
    run.last_checkpoint, run.last_checkpoint_step = Path(args.resume), run.global_step
    run.elapsed_before = float(tr["elapsed_s"])
    run.pool.load(tr["pool"])
    set_rng_state(run.rng, tr["numpy_rng"])
    torch.set_rng_state(tr["torch_rng"])


def start_workers(run: TrainingRun, ckpt: dict[str, Any] | None, held: list[Any]) -> None:
    """With ``ray_address``, start the Ray workers (once everything is checked; appended to ``held``); then load a
    resumed checkpoint's games, here or there.

    Raises:
        ConfigError: naming ``ray_address`` or ``num_workers``.
    """
    args = run.args
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
    if run.interrupt_requested and not last_iter:  # Ctrl-C: saved here, between iterations, on a deal boundary
        path = run.checkpoint(f"step_{step:011d}.pt")
        raise RunInterrupted(f"interrupted at step {step:,}: nothing is lost, {path} holds the run: resume with: "
                             f"cassino train --resume {run.ckpt_dir / 'latest.pt'}")
    return over_time


@contextlib.contextmanager
def guard(run: TrainingRun) -> Iterator[None]:
    """The training loop's guard. The first Ctrl-C (SIGINT) asks the run to stop after the current iteration, with a
    checkpoint (:func:`end_iteration` raises :class:`RunInterrupted` saying how to resume); a second stops at once
    (the steps since the last checkpoint are lost, and the message says so). A :class:`Diverged` update is given
    the step and the last checkpoint. The previous SIGINT handler is restored on the way out; outside the main
    thread (no signals there) only the messages are added."""
    previous = None

    def on_sigint(signum: int, frame: Any) -> None:
        if run.interrupt_requested:
            raise KeyboardInterrupt
        run.interrupt_requested = True
        print("Ctrl-C: stopping after this iteration, with a checkpoint (Ctrl-C again: stop at once)", flush=True)

    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    except KeyboardInterrupt:
        raise RunInterrupted(f"interrupted at step {run.global_step:,} (stopped at once, the steps since the last "
                             f"checkpoint are lost): {run.saved_so_far()}") from None
    except Diverged as exc:
        raise Diverged(f"training diverged at step {run.global_step:,} (iteration {run.iteration}): {exc}; no weights "
                       f"of it were saved, {run.saved_so_far()} (with a smaller learning_rate, or reward_scale, "
                       "ent_coef, vf_coef)") from None
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def progress_line(run: TrainingRun, elapsed: float, extra: str = "") -> str:
    """The progress line: step, share done, speed, time spent and left, ``extra`` (the losses), the latest
    evaluation."""
    args, step = run.args, run.global_step
    left = (run.num_iterations - run.iteration) * (elapsed / max(step, 1)) * run.batch_steps
    if args.max_train_seconds > 0:  # the time limit ends the run first when it comes sooner
        left = min(left, max(args.max_train_seconds - elapsed, 0.0))
    wins = " ".join(f"{k} {v:.2f}" for k, v in run.last_eval.items())
    wins = f"deal win rate (argmax play) at step {run.last_eval_step:,} vs {wins}" if wins else ""
    sps = int(step / max(elapsed, 1e-9))
    note = getattr(run, "budget_note", None)  # the recipe's stage: the run's budget used and left (train/recipe.py)
    left_text = f"~{fmt_time(left)} left" if note is None else note()
    return (f"step {step:>11,}/{run.num_iterations * run.batch_steps:,} "
            f"({100 * run.iteration / run.num_iterations:3.0f}%) | SPS {sps:,} | {fmt_time(elapsed)} elapsed, "
            f"{left_text}" + (f" | {extra}" if extra else "") + (f" | {wins}" if wins else ""))


def finish(run: TrainingRun) -> Path:
    """Write ``final.pt`` (copied to ``latest.pt``), print the summary line, close the writer and run the evaluation
    after training (:func:`final_evaluation`, unless ``final_eval_deals`` is 0); returns the final checkpoint."""
    final = run.checkpoint("final.pt")
    run.writer.flush()
    elapsed = run.elapsed()
    print(f"trained {run.global_step:,} env steps in {fmt_time(elapsed)} ({run.global_step / max(elapsed, 1e-9):,.0f} "
          f"SPS, {run.stop_reason}); final checkpoint {final}", flush=True)
    run.writer.close()
    if run.args.final_eval_deals > 0 and run.args.final_eval_opponents:
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
    if short != spec and short not in result["agents"]:  # the table names it shortly, its whole spec once here
        result = rename_agent(result, spec, short)
        print(f"{short} below is {spec}")
    else:
        short = spec
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
