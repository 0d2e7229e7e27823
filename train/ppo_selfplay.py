"""Self-play PPO for Cassino on the batched vector env, in the readable single-loop style of CleanRL's ``ppo.py``.

Usage::

    cassino train                                   # configs/ppo_classic.yaml: ~20 min on 2 CPU cores, then the
                                                    # head-to-head table of the final checkpoint vs the bot ladder
    cassino train --config configs/ppo_tiny.yaml    # a tiny run (seconds)
    cassino train --config configs/ppo_cicera.yaml  # another preset: configs/ppo_<preset>.yaml, one per preset
    cassino train --total-timesteps 200000 --seed 3 --run-dir runs/try
    cassino train --resume runs/RUN/checkpoints/latest.pt   # continue a run where it stopped
    cassino train --ray auto --num-workers 4        # rollouts on 4 Ray actors of the running Ray cluster
    tensorboard --logdir runs                       # curves; `cassino plot RUN_DIR` draws them to a PNG

Options come from :class:`train.config.Args` (one documented field each), whose defaults are the only built-in values;
``--config FILE`` reads a YAML file of the fields that differ from them (``configs/ppo_classic.yaml`` is the
default; ``--preset P`` without ``--config`` reads ``configs/ppo_P.yaml``: every preset has one), and every option
given on the command line overrides the file (:mod:`train.config`). Runs are written to
``runs/{preset}__{exp_name}__{seed}__{unix time}`` unless
``--run-dir`` names the folder: TensorBoard event files, ``config.yaml`` and ``checkpoints/`` (``step_N.pt`` every
``checkpoint_every`` env steps, ``final.pt`` at the end, ``latest.pt`` a copy of the newest, each written
atomically: a temporary file in the same folder, synced, then renamed; format in
:mod:`agents.ppo_agent`). Every option is checked by ``Args`` itself (:data:`train.config.ARG_RULES`), and with
``--resume`` every field of the checkpoint, before anything is written. A run locks its folder (``.lock``,
:class:`train.config.RunLock`) and refuses a folder that is not empty unless it resumes that folder's run or
``--reuse-run-dir True`` is given; a resumed run writes into its checkpoint's run folder (from the file's path) or
into ``--run-dir``.

Collector threads
-----------------
Without ``--ray``, ``num_workers`` N > 1 (the default is 2 where ``threads`` is 2 or more and ``num_envs`` is even)
plays the games in N :class:`train.rollout.RolloutCollector` objects on N threads of this process
(:class:`train.rollout.ThreadRollouts`), seeded and checkpointed as N Ray workers are; the numba kernels release
the GIL, so the collectors run side by side (docs/training.md, "Collector threads").

Rollouts on Ray
---------------
``--ray ADDRESS --num-workers N`` (``ray_address``, ``num_workers``; the ``ray`` extra) plays the rollouts on N Ray
actors, each a :class:`train.rollout.RolloutCollector` over ``num_envs / N`` games with its own copy of the policy,
the pool network and the bots; the driver keeps the learner (the PPO update, the pool, evaluations, logs and
checkpoints). Every iteration it puts the policy's and the pool snapshot's weights in Ray's object store once, the
workers collect in parallel and send back their learner transitions (GAE done), which are joined in worker order
for the same update. Worker 0 plays the games the local trainer would (same seed) and draws from the driver's
generator, so one worker trains exactly the local run; the others are seeded from ``seed`` and their index
(:mod:`train.rollout`). A checkpoint holds every worker's games and generator, and a run resumes with its own
``num_workers`` (a local run and a one-worker Ray run resume either way). ``time/ray_overhead_s`` is the seconds of
an iteration's collection beyond the slowest worker's own (the weights out, the rollouts back, joining them); with
Ray, ``time/env_s`` and ``time/inference_s`` are the slowest worker's.

How the game is turned into PPO data
------------------------------------
* **Whole deals per rollout.** Every deal is exactly ``52 - table_cards`` moves (48 in every preset), and all games
  start their first deal together, so a rollout of ``num_steps`` (a multiple of 48) holds whole deals in every game:
  every trajectory ends inside the rollout, GAE needs no bootstrap across rollouts, and a checkpoint taken between
  iterations sits on a deal boundary.
* **Per-seat credit.** A transition belongs to the seat that acted. Its reward is the sum of the rewards that seat
  received (the env pays every seat at every step) from its action until its own next action; GAE then runs along
  each (game, seat) trajectory, linking a transition to the same seat's next one and stopping at ``terminated``.
  The critic predicts the acting seat's return, so one network serves every seat.
* **Reward.** ``reward="points"``: at the end of each deal a seat gets its side's deal points minus the other
  side's (zero-sum). It arrives every 24 decisions instead of once a match (~3 deals), its scale follows the game's
  scoring items (cards, spades, casinos, aces, sweeps) so the critic learns which captures matter, and maximising the
  deal margin is what wins matches; ``reward_scale`` brings it to about +-1 for the critic.
* **Sides.** Rewards are paid per side (a player, or a partnership: 4 seats are sides ``seat % 2``, 6 seats sides
  ``seat % 3``, docs/rules.md 1): partners get the same reward, each seat keeps its own trajectory, and the same network
  plays every seat, so partners are trained as one team on their shared reward.
* **Masks.** Each transition stores its legal-move mask and move table; the update recomputes log-probabilities and
  the entropy over the legal moves only.

Opponents
---------
Games are split once, by the rates in the config, into: self-play games (the current policy plays every seat and
every seat's moves are trained on), pool games and bot games (the current policy plays one *learner side*, every
seat of it, rotating by deal, and only its moves are trained on; with partnerships the learner's partner is the
learner too, never the opponent). The **pool** holds snapshots of past weights: the initial weights, then
a copy every ``snapshot_every`` env steps; it keeps the newest ``pool_size`` (oldest dropped) and at each iteration
one snapshot, drawn uniformly (or with ``pool_sampling="pfsp"`` by how often the learner loses to it,
:class:`train.rollout.SnapshotPool`), plays the pool games. **Bots** (``agents.registry.make_agent`` specs, e.g.
``greedy``) play the bot games at ``bot_rates``. In the lists of bots to evaluate against, ``ladder`` stands for
``agents.registry.LADDER``.

TensorBoard scalars
-------------------
``charts/SPS`` (env steps per second; an env step is one move in one game), ``charts/learning_rate``,
``charts/episodic_return`` (learner deal margin, points), ``charts/points_vs_<opponent>``, ``losses/policy_loss``,
``losses/value_loss``, ``losses/entropy``, ``losses/approx_kl``, ``losses/old_approx_kl``, ``losses/clipfrac``,
``losses/explained_variance``; the time split ``time/env_s`` (stepping the games), ``time/inference_s`` (choosing moves:
the network and the bots), ``time/update_s`` (the PPO update), seconds per iteration, and ``time/env_fraction``,
``time/update_fraction`` (and with ``--ray`` ``time/ray_overhead_s``); at the start, every ``eval_every`` env steps
(:func:`train.config.eval_interval`) and at the end, ``eval/winrate_vs_<bot>`` with its Wilson 95% interval
``eval/winrate_ci_low_vs_<bot>`` and ``eval/winrate_ci_high_vs_<bot>``, and ``eval/points_vs_<bot>`` and
``time/eval_s``; the hyperparameters as a text table. These evaluations are **deal** win rates with **argmax** play:
``eval_deals`` duplicate deals, each the first deal of a fresh match, played once from every side, the policy playing
its most probable move, and with two seats the last round exactly as the checkpoint agents do (:mod:`agents.endgame`);
a game is won when the agent's side scores the most deal points, a tie counts half
(:func:`train.arena.evaluate_deals`). The progress line prints the latest of them with the step it was made at. The
table after training is another measure: **match** win rates (whole matches to the target, the final checkpoint playing
argmax too, :mod:`train.evaluate`).

Where the parts are
-------------------
This module is the PPO trainer itself: :func:`train`, whose loop (:func:`_train`) reads like CleanRL's ``ppo.py``
(collect, update, log, evaluate and checkpoint), and the PPO update (:func:`ppo_update`). The other phases are
:mod:`train.run`'s (set-up and resume, collect, logs, evaluations, checkpoints), written for this loop;
the options are :class:`train.config.Args`; the rollouts, the opponents and the per-seat credit are
:mod:`train.rollout` (on Ray: :mod:`train.ray_rollouts`); a training checkpoint's state and its checks are
:mod:`train.checkpoints`. The names tests and notebooks import from here (``Args``, ``train``, ``make_args``, ...)
are re-exported.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import time
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import tyro

from train import config
from train.checkpoints import check_train_state  # noqa: F401 (re-exported)
from train.config import (  # noqa: F401 (re-exported: the options live in train.config)
    ARG_RULES,
    CONFIGS_DIR,
    CRITIC_CHOICES,
    EVAL_EVERY_MAX,
    EVAL_POINTS,
    POOL_SAMPLING,
    Args,
    ConfigError,
    TrainOptions,
    check_options,
    eval_interval,
    rollout_bytes,
)
from train.rollout import (  # noqa: F401 (re-exported: the rollout's parts live in train.rollout)
    POOL,
    SELF,
    SeatCredit,
    SnapshotPool,
    compute_gae,
    make_bots,
    rotate_learner_side,
    split_games,
)
from train.run import (  # noqa: F401 (EVAL_ABOUT, final_evaluation: re-exported)
    EVAL_ABOUT,
    RunInterrupted,
    RunStopped,
    TrainingRun,
    collect,
    end_iteration,
    final_evaluation,
    finish,
    guard,
    log_rollout,
    setup,
)
from train.stopping import Diverged

if typing.TYPE_CHECKING:  # torch is imported where it is used, so `cassino train --help` stays quick
    import torch

    from train.rollout import Rollout


#: The exit code of a run stopped by Ctrl-C (SIGINT), as a shell reports it (128 + 2).
EXIT_INTERRUPTED = 130


def load_config(path: str | Path) -> dict[str, Any]:
    """The :class:`Args` fields of a YAML config (:func:`train.config.load_config`)."""
    return config.load_config(Args, path)


def make_args(values: dict[str, Any]) -> Args:
    """:class:`Args` from field values, as a YAML config holds them (:func:`train.config.make_args`)."""
    return config.make_args(Args, values)


def resolve_args(options: Any) -> Args:
    """Built-in defaults < config file < options given (:func:`train.config.resolve_args`)."""
    return config.resolve_args(Args, options, config.preset_config)


def main(options: Annotated[TrainOptions, tyro.conf.OmitArgPrefixes, tyro.conf.arg(name="")]) -> int:  # type: ignore[valid-type]
    """Train a self-play PPO agent, then evaluate its final checkpoint against the bot ladder.

    Writes TensorBoard logs and checkpoints under the run folder; see ``train/ppo_selfplay.py``. Exit codes: 0 done,
    2 bad input (one ``error:`` line), 1 a run that stopped (diverged, disk full: one ``error:`` line naming the step
    and the last good checkpoint), 130 Ctrl-C (one line: what is saved and the resume command).
    """
    return run_main(options, train)


def run_main(options: Any, trainer: Callable[[Args, set[str] | None], Path]) -> int:
    """The command line's part of a trainer over :class:`Args` (this module's :func:`main`, ``cassino train``'s
    :func:`train.recipe.main`): resolve the options, run ``trainer(args, explicit)``, and turn its failures into
    exit codes and one line each (:func:`main`)."""
    from agents.ppo_agent import CheckpointError
    from cassino_env.errors import CassinoError
    from train.errors import bad_input

    with bad_input(ConfigError, CheckpointError, CassinoError) as failed:
        try:
            args = resolve_args(options)
            trainer(args, config.explicit_fields(Args, options))  # flags and the --config file's fields
        except RunInterrupted as exc:  # Ctrl-C: what is saved and the resume command, one line
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # the run has stopped: a late Ctrl-C cannot cut the exit
            print(exc, file=sys.stderr)
            return EXIT_INTERRUPTED
        except RunStopped as exc:  # diverged, disk full: one line naming the step and the last good checkpoint
            print(f"error: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:  # before the training loop began: nothing trained yet
            print("interrupted before training began: nothing was trained", file=sys.stderr)
            return EXIT_INTERRUPTED
    return failed.code


def train(args: Args, explicit: set[str] | None = None,
          hook: Callable[[TrainingRun], str | None] | None = None) -> Path:
    """Run the training loop of the module docstring; return the final checkpoint's path.

    Everything is checked before anything is written: the options, the agent specs and, with ``args.resume``, every
    field of the checkpoint. The run folder is then locked for the run (:class:`train.config.RunLock`; the lock is
    dropped when this returns or raises). The run folder is ``args.run_dir``, else with ``args.resume`` the
    checkpoint's own run folder told from its path (``RUN`` for ``RUN/checkpoints/X.pt``; never a folder named
    inside the file), else a new folder under ``runs_root``. A folder that is not empty is refused unless it is the
    one being resumed or ``args.reuse_run_dir`` is set.

    Args:
        args: the options.
        explicit: with ``args.resume``, the fields given on the command line (they override the checkpoint's config;
            all other fields come from the checkpoint). None: every field of ``args`` is taken as given.
        hook: called after every iteration as ``hook(run)`` (a :class:`train.run.TrainingRun`); a string it returns
            stops the run there, as its stop reason (:mod:`train.recipe`'s gate). None: no hook.

    With ``args.ray_address`` the rollouts are played by ``args.num_workers`` Ray actors (module docstring, "Rollouts
    on Ray"), started once everything is checked and ended when this returns or raises (Ray too, when it was started
    here).

    Raises:
        ConfigError: a bad option, a run folder that may not be written to (naming ``run_dir``), no Ray cluster at
            ``ray_address`` or one with fewer CPUs than ``num_workers`` (in all, or free: held by other jobs).
        agents.ppo_agent.CheckpointError: a checkpoint that cannot be resumed (naming the file and the field).
    """
    held: list[Any] = []  # what to release, in order: the Ray workers (with --ray), the run folder's lock
    try:
        return _train(args, explicit, held, hook)
    finally:
        # every one, even when one fails (ending the workers of a cluster that has gone away raises): the lock is
        # always dropped, and the run's own error, if any, is the one raised (a release's comes out when none was)
        failed: BaseException | None = None
        for thing in held:
            try:
                thing.release()
            except Exception as exc:  # kept, raised once the rest are released
                failed = failed or exc
        if failed is not None and sys.exc_info()[1] is None:
            raise failed


def _train(args: Args, explicit: set[str] | None, held: list[Any],
           hook: Callable[[TrainingRun], str | None] | None = None) -> Path:
    """:func:`train`'s loop, in CleanRL's order: collect a rollout, update, log, then evaluate and checkpoint when due.
    The Ray workers and the run folder's lock go into ``held`` for :func:`train` to release."""
    run = setup(args, explicit, held)  # options, checkpoint, games, network, pool, run folder; evaluation at step 0
    if getattr(hook, "budget_note", None) is not None:  # a stage of cassino train: its lines show the run's budget
        run.budget_note = hook.budget_note  # type: ignore[attr-defined]
    args = run.args  # a resumed run's: its checkpoint's config and the options given
    with guard(run):  # Ctrl-C: stop after the iteration, saved; a diverged update: the step and the last checkpoint
        while run.iteration < run.num_iterations:
            run.iteration += 1
            t_iter = time.time()
            if args.anneal_lr:  # linearly to 0 over the run
                frac = 1.0 - (run.iteration - 1.0) / run.num_iterations
                run.optimizer.param_groups[0]["lr"] = args.learning_rate * frac

            ro = collect(run)  # one rollout of every game, GAE along each (game, seat) trajectory (train/rollout.py)

            t_upd = time.time()
            stats = ppo_update(run.policy, run.optimizer, ro, args, run.rng)  # over the learner's transitions
            t_done = time.time()

            log_update(run, stats)
            log_rollout(run, ro, t_iter, t_upd, t_done)
            if end_iteration(run, t_done, progress=f"v_loss {stats.value_loss:.3f} entropy {stats.entropy:.3f}"):
                break  # max_train_seconds reached
            if hook is not None and (reason := hook(run)):  # train.recipe's gate: a string stops the stage
                run.stop_reason = reason
                break
    return finish(run)  # final.pt, the summary line, the evaluation after training


# ----------------------------------------------------------------------------------------------------------------------
# The PPO update
# ----------------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class UpdateStats:
    """What one PPO update logs (``losses/*``): the last minibatch's losses, the mean clip fraction and the critic's
    explained variance over the rollout (NaN when the returns do not vary)."""

    policy_loss: float
    value_loss: float
    entropy: float
    old_approx_kl: float
    approx_kl: float
    clipfrac: float
    explained_variance: float


#: The most shards :func:`ppo_update` splits a minibatch into (``update_shards`` is checked against it; ``threads``,
#: its default, may be larger).
MAX_SHARDS = 64


def ppo_update(policy: torch.nn.Module, optimizer: torch.optim.Optimizer, ro: Rollout, args: Args,
               rng: np.random.Generator) -> UpdateStats:
    """The PPO update (CleanRL's): ``update_epochs`` epochs over the learner's transitions ``ro.flat`` in
    ``num_minibatches`` minibatches (shuffled by ``rng``; a last partial one is dropped), the clipped surrogate, the
    (clipped) value loss and the entropy over the legal moves, a global gradient-norm clip, and an early stop of the
    epochs past ``target_kl``.

    Each minibatch is split into ``update_shards`` shards (default ``threads``; one on a GPU, which computes the
    minibatch in one pass, each of its tensors moved there once): shard 0 is computed by ``policy``
    on this thread, the others by copies of it on a thread pool, each with one torch thread, and the shards'
    gradients are summed into ``policy``'s (every loss term is a sum over the minibatch divided by its size, so the
    sum is the whole minibatch's gradient, equal to one pass up to float rounding). Two shards on two cores run
    about 1.4 times as fast as one pass with two torch threads (docs/training.md, Throughput).

    Raises:
        train.stopping.Diverged: a loss or gradient norm that is not finite (before that minibatch's step is applied),
            or a weight that is not finite after the update.
    """
    import copy
    from concurrent.futures import ThreadPoolExecutor

    import torch

    from agents.device import device_of

    flat = ro.flat
    minibatch_size = max(len(flat) // args.num_minibatches, 1)
    shards = max(1, min(args.update_shards or args.threads, MAX_SHARDS, minibatch_size))
    if device_of(policy).type != "cpu":  # a GPU computes a minibatch in one pass: threads of shards would only queue
        shards = 1
    nets = [policy] + [copy.deepcopy(policy) for _ in range(shards - 1)]
    params = [list(n.parameters()) for n in nets]
    clipfracs = []
    threads_before = torch.get_num_threads()
    if shards > 1:
        torch.set_num_threads(1)  # each shard's thread computes alone
    for n in nets:
        n.train()
    pool = ThreadPoolExecutor(shards - 1) if shards > 1 else None
    try:
        for _epoch in range(args.update_epochs):
            perm = rng.permutation(flat)
            for start in range(0, len(perm) - minibatch_size + 1, minibatch_size):
                idx = np.sort(perm[start:start + minibatch_size])
                adv = ro.advantages[idx]
                if args.norm_adv:  # over the whole minibatch, before it is split
                    t = torch.from_numpy(adv)
                    adv = ((t - t.mean()) / (t.std() + 1e-8)).numpy()
                parts = np.array_split(np.arange(len(idx)), shards)
                with torch.no_grad():
                    for copy_params in params[1:]:
                        for p, q in zip(params[0], copy_params, strict=True):
                            q.copy_(p)
                futures = [pool.submit(_shard_loss, nets[k], ro, idx[parts[k]], adv[parts[k]], len(idx), args)
                           for k in range(1, shards)] if pool else []
                outs = [_shard_loss(policy, ro, idx[parts[0]], adv[parts[0]], len(idx), args)]
                outs += [f.result() for f in futures]
                with torch.no_grad():
                    for copy_params in params[1:]:
                        for p, q in zip(params[0], copy_params, strict=True):
                            if q.grad is not None:  # None: the parameter took no part (e.g. an unused head)
                                p.grad = q.grad.clone() if p.grad is None else p.grad.add_(q.grad)
                total = {k: sum(o[k] for o in outs) for k in outs[0]}
                loss = total["loss"]
                old_approx_kl, approx_kl = total["old_kl"], total["kl"]
                clipfracs.append(total["clipped"])
                grad_norm = torch.nn.utils.clip_grad_norm_(params[0], args.max_grad_norm)
                if not (torch.isfinite(loss) and torch.isfinite(grad_norm)):  # before the step: weights stay good
                    what = "loss" if not torch.isfinite(loss) else "gradient norm"
                    raise Diverged(f"the {what} is not finite ({(loss if what == 'loss' else grad_norm).item()}) in "
                                   f"epoch {_epoch + 1}, minibatch {start // minibatch_size + 1}")
                optimizer.step()
            if args.target_kl is not None and approx_kl > args.target_kl:
                break
    finally:
        if pool is not None:
            pool.shutdown()
        torch.set_num_threads(threads_before)
    if not all(bool(torch.isfinite(p).all()) for p in policy.parameters()):
        raise Diverged("a weight is not finite after the update")
    y_pred, y_true = ro.values[flat], ro.returns[flat]
    var_y = np.var(y_true)
    explained_var = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y
    return UpdateStats(policy_loss=total["pg"].item(), value_loss=total["v"].item(), entropy=total["ent"].item(),
                       old_approx_kl=old_approx_kl.item(), approx_kl=approx_kl.item(),
                       clipfrac=float(np.mean([c.item() for c in clipfracs])), explained_variance=float(explained_var))


def _shard_loss(policy: torch.nn.Module, ro: Rollout, idx: np.ndarray, adv: np.ndarray, n: int,
                args: Args) -> dict[str, torch.Tensor]:
    """One shard of a minibatch of :func:`ppo_update`: rows ``idx`` of the rollout (``adv`` their advantages, already
    normalised), every loss term summed over the shard and divided by the minibatch's size ``n``; computes
    ``policy``'s gradient of the shard's loss (zeroed first) and returns the terms (detached)."""
    import torch

    from agents.device import device_of
    from agents.policy import MoveBatch, masked_entropy, masked_log_softmax

    F, C = ro.feat is not None, ro.crit is not None
    device = device_of(policy)

    def tensor(a: np.ndarray) -> torch.Tensor:  # a shard's array on the network's device (on the CPU: no copy)
        return torch.from_numpy(np.ascontiguousarray(a)).to(device)

    mb = MoveBatch.from_arrays(ro.obs[idx], ro.kind[idx], ro.card[idx], ro.value[idx], ro.cards[idx], ro.mask[idx],
                               ro.feat[idx] if F else None, ro.crit[idx] if C else None).to(device)
    logits, newvalue = policy(mb)
    logp_all = masked_log_softmax(logits, mb.mask)
    act = tensor(ro.actions[idx])
    newlogprob = logp_all.gather(1, act[:, None]).squeeze(1)
    entropy = masked_entropy(logits, mb.mask)
    logratio = newlogprob - tensor(ro.logprobs[idx])
    ratio = logratio.exp()
    mb_adv = tensor(adv)
    clipped = torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)
    pg_loss = torch.max(-mb_adv * ratio, -mb_adv * clipped).sum() / n
    mb_ret = tensor(ro.returns[idx])
    if args.clip_vloss:
        mb_val = tensor(ro.values[idx])
        v_clipped = mb_val + torch.clamp(newvalue - mb_val, -args.clip_coef, args.clip_coef)
        v_loss = 0.5 * torch.max((newvalue - mb_ret) ** 2, (v_clipped - mb_ret) ** 2).sum() / n
    else:
        v_loss = 0.5 * ((newvalue - mb_ret) ** 2).sum() / n
    entropy_loss = entropy.sum() / n
    loss = pg_loss - args.ent_coef * entropy_loss + v_loss * args.vf_coef
    for p in policy.parameters():
        p.grad = None
    loss.backward()
    with torch.no_grad():
        return {"loss": loss.detach(), "pg": pg_loss.detach(), "v": v_loss.detach(), "ent": entropy_loss.detach(),
                "old_kl": (-logratio).sum() / n, "kl": ((ratio - 1) - logratio).sum() / n,
                "clipped": ((ratio - 1.0).abs() > args.clip_coef).float().sum() / n}


def log_update(run: TrainingRun, stats: UpdateStats) -> None:
    """Log an update's ``losses/*`` at the run's step."""
    for name, value in dataclasses.asdict(stats).items():
        run.writer.add_scalar(f"losses/{name}", value, run.global_step)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(tyro.cli(main, config=(tyro.conf.FlagCreatePairsOff,)))
