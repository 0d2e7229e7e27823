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

Options come from :class:`Args` (one documented field each), whose defaults are the only built-in values;
``--config FILE`` reads a YAML file of the fields that differ from them (``configs/ppo_classic.yaml`` is the
default; ``--preset P`` without ``--config`` reads ``configs/ppo_P.yaml``: every preset has one), and every option
given on the command line overrides the file (:mod:`train.config`). Runs are written to
``runs/{preset}__{exp_name}__{seed}__{unix time}`` unless
``--run-dir`` names the folder: TensorBoard event files, ``config.yaml`` and ``checkpoints/`` (``step_N.pt`` every
``checkpoint_every`` env steps, ``final.pt`` at the end, ``latest.pt`` a copy of the newest, each written
atomically: a temporary file in the same folder, synced, then renamed; format in
:mod:`agents.ppo_agent`). Every option is checked by ``Args`` itself (:data:`ARG_RULES`), and with ``--resume``
every field of the checkpoint, before anything is written. A run locks its folder (``.lock``,
:class:`train.config.RunLock`) and refuses a folder that is not empty unless it resumes that folder's run or
``--reuse-run-dir True`` is given; a resumed run writes into its checkpoint's run folder (from the file's path) or
into ``--run-dir``.

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
:class:`SnapshotPool`), plays the pool games. **Bots** (``agents.registry.make_agent`` specs, e.g. ``greedy``)
play the bot games at ``bot_rates``. In the lists of bots to evaluate against, ``ladder`` stands for
``agents.registry.LADDER``.

TensorBoard scalars
-------------------
``charts/SPS`` (env steps per second; an env step is one move in one game), ``charts/learning_rate``,
``charts/episodic_return`` (learner deal margin, points), ``charts/points_vs_<opponent>``, ``losses/policy_loss``,
``losses/value_loss``, ``losses/entropy``, ``losses/approx_kl``, ``losses/old_approx_kl``, ``losses/clipfrac``,
``losses/explained_variance``; the time split ``time/env_s`` (stepping the games), ``time/inference_s`` (choosing moves:
the network and the bots), ``time/update_s`` (the PPO update), seconds per iteration, and ``time/env_fraction``,
``time/update_fraction`` (and with ``--ray`` ``time/ray_overhead_s``); at the start, every ``eval_every`` env steps
(:func:`eval_interval`) and at the end, ``eval/winrate_vs_<bot>`` with its Wilson 95% interval
``eval/winrate_ci_low_vs_<bot>`` and ``eval/winrate_ci_high_vs_<bot>``, and ``eval/points_vs_<bot>`` and
``time/eval_s``; the hyperparameters as a text table. These evaluations are **deal** win rates with **argmax** play:
``eval_deals`` duplicate deals, each the first deal of a fresh match, played once from every side, the policy playing
its most probable move, and with two seats the last round exactly as the checkpoint agents do (:mod:`agents.endgame`);
a game is won when the agent's side scores the most deal points, a tie counts half
(:func:`train.arena.evaluate_deals`). The progress line prints the latest of them with the step it was made at. The
table after training is another measure: **match** win rates (whole matches to the target, the final checkpoint playing
argmax too, :mod:`train.evaluate`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import time
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import tyro
import yaml

from agents.registry import BOT_NAMES, LADDER, AgentSpecError, expand_specs
from cassino_env.rules import make_rules
from train import config
from train.arena import evaluate_deals
from train.config import (  # noqa: F401 (CONFIGS_DIR: re-exported)
    CONFIGS_DIR,
    ConfigError,
    args_to_dict,
    boolean,
    integer,
    names,
    number,
    optional,
    rates,
    text,
)
from train.stats import wilson_interval

#: How past snapshots are drawn for the pool games (:class:`SnapshotPool`).
POOL_SAMPLING = ("uniform", "pfsp")
#: :data:`agents.policy.CRITICS`, written out so that reading the options does not import torch (a test checks).
CRITIC_CHOICES = ("shared", "separate")

if typing.TYPE_CHECKING:  # torch is imported where it is used, so `cassino train --help` stays quick
    import torch

#: The text logged as ``eval/about`` at the start of a run: what the eval/* scalars measure.
EVAL_ABOUT = ("eval/winrate_vs_BOT: the share of {deals} duplicate deals (each the first deal of a fresh match, "
              "played once from every side) that the agent's side won on deal points, ties counting half; "
              "the policy plays its most probable move (argmax; with two seats the last round exactly, "
              "agents.endgame). eval/winrate_ci_low_vs_BOT and "
              "eval/winrate_ci_high_vs_BOT: its Wilson 95% interval over the games. eval/points_vs_BOT: the "
              "mean deal margin (points). Logged at step 0, every {every:,} env steps (0: none) and at the end. "
              "These are deal win rates; the table printed after training gives match win rates.")


@dataclass
class Args:
    """Self-play PPO options. These defaults are the only built-in values (the default run, classic rules);
    ``configs/ppo_<preset>.yaml`` hold just the fields that differ from them."""

    # --- experiment -------------------------------------------------------------------------------------------------
    exp_name: str = "ppo_selfplay"
    """name of the experiment, the second part of the run name"""
    seed: int = 1
    """seed of the networks, the games and every random choice of the run"""
    threads: int = 2
    """CPU threads torch may use (torch.set_num_threads); the env runs single-threaded"""
    run_dir: str | None = None
    """folder the run writes to; default runs_root/{preset}__{exp_name}__{seed}__{unix time}"""
    runs_root: str = "runs"
    """parent folder of the default run folders"""
    resume: str | None = None
    """checkpoint to continue from: the run goes on in its own folder (RUN for RUN/checkpoints/X.pt, or run_dir)
    with its own config, except the options given on this command line (flags and the --config file)"""
    reuse_run_dir: bool = False
    """write into a run_dir that is not empty (the run folder of a run not being resumed); off, such a folder is
    refused. A folder another run is writing to (its lock held) is refused either way"""
    progress_every_s: float = 30.0
    """seconds between progress lines on stdout"""
    max_train_seconds: float = 1140.0
    """stop training after this many wall-clock seconds of the run, resumed parts included (0: no limit), then save
    and evaluate as usual; a guard that keeps the default run within 20 minutes on a slow or busy machine"""

    # --- rollout workers on Ray (train/rollout.py) -------------------------------------------------------------------
    ray_address: str | None = None
    """play the rollouts on Ray actors of the Ray cluster at this address (--ray; ray.init's: local starts one on
    this machine, auto joins the running one, also found through RAY_ADDRESS, ray://HOST:10001 a remote one), the
    PPO update staying here; null: play them in this process. Needs the ray extra"""
    num_workers: int = 1
    """with ray_address: the rollout workers (Ray actors, one CPU each), each playing num_envs / num_workers of the
    games; must divide num_envs. Without ray_address it must be 1"""

    # --- environment ------------------------------------------------------------------------------------------------
    preset: str = "classic"
    """rule preset (docs/rules.md 6)"""
    num_players: int | None = None
    """seats per game; null: the preset's first allowed count (docs/rules.md 6: 2, or 4 for cicera); 4 and 6 seats play
    partnerships"""
    reward: str = "points"
    """env reward: points (deal margin, zero-sum, every deal) or win (+-1 per match)"""
    reward_scale: float = 0.1
    """rewards are multiplied by this before PPO sees them (deal margins are about +-10 points)"""
    objective: str = "points"
    """what PPO maximises: points (the deal margin, times reward_scale) or match (at the end of every deal, the change
    of each side's chance of winning the match, 2 W - 1 from train/match_value.py; a match's rewards add up to +-1,
    its result; two sides only)"""
    endgame: bool = False
    """two seats: play the last round of every deal exactly (agents.endgame, as the trained agents play it), every
    seat; those moves are not trained on, and the deal's points are credited to each seat's last move before it"""
    shaping: bool = False
    """potential-based reward shaping (Ng et al. 1999): pay each change of the banked deal points (agents.features.
    banked_points) as it happens; with gamma=1 a deal's total reward is unchanged"""
    max_moves: int = 64
    """width of the env's move table; the rare longer lists keep their first moves (the core's overflow policy)"""

    # --- PPO --------------------------------------------------------------------------------------------------------
    total_timesteps: int = 10_000_000
    """env steps (moves, over all games and seats) to train for"""
    learning_rate: float = 3e-4
    """Adam learning rate"""
    anneal_lr: bool = True
    """decay the learning rate linearly to 0 over total_timesteps"""
    num_envs: int = 1024
    """games stepped together"""
    num_steps: int = 48
    """moves per game per rollout; a multiple of the deal length (52 - table_cards, 48) so rollouts hold whole deals"""
    gamma: float = 1.0
    """discount per own decision of a seat (1: the undiscounted deal margin; deals are 24 decisions long)"""
    gae_lambda: float = 0.95
    """GAE lambda"""
    num_minibatches: int = 8
    """minibatches per epoch over the trained transitions of a rollout"""
    update_epochs: int = 3
    """epochs over each rollout"""
    norm_adv: bool = True
    """normalise advantages per minibatch"""
    clip_coef: float = 0.2
    """PPO surrogate clipping coefficient"""
    clip_vloss: bool = True
    """clip the value loss as in CleanRL"""
    ent_coef: float = 0.01
    """entropy bonus coefficient (entropy over the legal moves)"""
    vf_coef: float = 0.5
    """value loss coefficient"""
    max_grad_norm: float = 0.5
    """global gradient-norm clip"""
    target_kl: float | None = None
    """stop an update's epochs early when the approximate KL exceeds this"""

    # --- network ----------------------------------------------------------------------------------------------------
    hidden: int = 128
    """width of the observation torso (two layers)"""
    embed: int = 64
    """width of the move embeddings and scorer"""
    move_features: bool = True
    """give every candidate move the features of agents.features (points it takes, sweep, risk, exposure, ...)"""
    feature_prior: float = 0.0
    """with move_features: the untrained policy's logits start at this times the advanced bot's score of each move
    (logit per point; 0, the default: no hand-written prior, the network learns from a near-uniform start; 2.0 was
    the default before 2026-12-01 and is kept as a baseline)"""
    critic: str = "separate"
    """value estimator: shared (a head on the policy torso) or separate (its own network)"""
    critic_full_state: bool = True
    """with critic=separate: the critic also reads every hand and the stock (training only; the policy never does);
    ignored by the shared critic"""

    # --- opponents --------------------------------------------------------------------------------------------------
    pool_rate: float = 0.2
    """share of games in which a past snapshot from the pool plays the other seats"""
    pool_size: int = 10
    """snapshots kept in the pool (the newest; the initial weights are the first)"""
    snapshot_every: int = 500_000
    """env steps between snapshots added to the pool"""
    pool_sampling: str = "uniform"
    """how the pool games' snapshot is drawn each iteration: uniform, or pfsp (by how often the learner loses to it)"""
    bot_rates: dict[str, float] = field(default_factory=lambda: {"greedy": 0.15, "random": 0.05})
    """share of games per bot opponent (agents.registry specs); the rest of the games are pure self-play"""

    # --- evaluation and checkpoints ---------------------------------------------------------------------------------
    eval_every: int | None = None
    """env steps between evaluations against eval_opponents; null (the default): 1,000,000, or an eighth of the run
    when that is less (train.ppo_selfplay.eval_interval), so a short run still draws a curve of about 8 points and a
    10M run evaluates every 1M; evaluations fall on rollout ends (at most one per rollout), besides the one at step 0
    and the one at the end; 0: only at the end"""
    eval_deals: int = 200
    """duplicate deals per evaluation and opponent (each played once from every seat)"""
    eval_opponents: tuple[str, ...] = LADDER
    """bots evaluated against during training (agents.registry specs; ladder: the bot ladder), logged as
    eval/winrate_vs_<bot>"""
    checkpoint_every: int = 1_000_000
    """env steps between checkpoints (checkpoints/step_N.pt, copied to latest.pt; 0: only final.pt)"""
    final_eval_deals: int = 2000
    """deal budget per opponent of the head-to-head evaluation after training (whole matches, seats swapped; 0: skip)"""
    final_eval_opponents: tuple[str, ...] = LADDER
    """the bots the final checkpoint is evaluated against (ladder: the bot ladder)"""

    def __post_init__(self) -> None:
        """Check every field (:data:`ARG_RULES`) and their combinations, whatever built the options: a YAML file, the
        command line, a resumed checkpoint or Python.

        Raises:
            ConfigError: naming the field (``ConfigError.field``) and the rule it breaks.
        """
        config.validate_fields(self, ARG_RULES)
        _check_combination(self)


def _agent_spec(ladder: bool) -> typing.Callable[[str, str], None]:
    """A check of an agent spec's name (``agents.registry.make_agent`` checks the rest when the run starts)."""
    heads = (*BOT_NAMES, "checkpoint", "pretrained", "policy", "endgame")

    def check(name: str, spec: str) -> None:
        if not (ladder and spec.strip() == "ladder") and spec.strip().partition(":")[0] not in heads:
            raise ConfigError(f"{name}: unknown agent {spec!r}; agents are {', '.join(BOT_NAMES)}, pimc:N, "
                              f"checkpoint:PATH, pretrained:NAME, policy:SPEC and endgame:SPEC"
                              + ("; ladder stands for the bot ladder" if ladder else ""), field=name)

    return check


#: The rule of every :class:`Args` field (:mod:`train.config`'s rule makers); ``Args.__post_init__`` applies them.
#: Upper bounds keep a run within what one machine can hold (the network widths, the rollout size; the rollout's
#: memory is also checked against the machine's, :func:`rollout_bytes`) or within what the engine allows
#: (``max_moves`` up to 32,767).
ARG_RULES: dict[str, config.FieldRule] = {
    # experiment
    "exp_name": text(no_slash=True), "seed": integer(0, 2**63 - 1, want="an integer 0 <= seed < 2**63"),
    "threads": integer(1, 1024), "run_dir": optional(text()), "runs_root": text(), "resume": optional(text()),
    "reuse_run_dir": boolean(), "progress_every_s": number(0.0), "max_train_seconds": number(0.0),
    # rollout workers on Ray
    "ray_address": optional(text()), "num_workers": integer(1, 4096),
    # environment
    "preset": text(), "num_players": optional(integer(1)), "reward": text(("points", "win")),
    "reward_scale": number(0.0, lo_open=True), "objective": text(("points", "match")),
    "shaping": boolean(), "endgame": boolean(), "max_moves": integer(1, 32767),
    # PPO
    "total_timesteps": integer(1), "learning_rate": number(0.0, lo_open=True), "anneal_lr": boolean(),
    "num_envs": integer(1, 2**20), "num_steps": integer(1, 48_000), "gamma": number(0.0, 1.0),
    "gae_lambda": number(0.0, 1.0), "num_minibatches": integer(1, 2**20), "update_epochs": integer(1, 10_000),
    "norm_adv": boolean(), "clip_coef": number(0.0, lo_open=True), "clip_vloss": boolean(), "ent_coef": number(0.0),
    "vf_coef": number(0.0), "max_grad_norm": number(0.0, lo_open=True),
    "target_kl": optional(number(0.0, lo_open=True)),
    # network
    "hidden": integer(1, 4096), "embed": integer(1, 4096), "move_features": boolean(), "feature_prior": number(0.0),
    "critic": text(CRITIC_CHOICES), "critic_full_state": boolean(),
    # opponents
    "pool_rate": number(0.0, 1.0), "pool_size": integer(1, 10_000), "snapshot_every": integer(0),
    "pool_sampling": text(POOL_SAMPLING), "bot_rates": rates(_agent_spec(ladder=False)),
    # evaluation and checkpoints
    "eval_every": optional(integer(0)), "eval_deals": integer(1, 100_000),
    "eval_opponents": names(_agent_spec(ladder=True)), "checkpoint_every": integer(0),
    "final_eval_deals": integer(0), "final_eval_opponents": names(_agent_spec(ladder=True)),
}


def rollout_bytes(args: Args, num_players: int, num_sides: int, exact: bool = True) -> int:
    """Bytes of the rollout buffers of a run (``num_steps x num_envs`` rows: observation, move table, features,
    critic input and the per-move scalars), as :func:`train` allocates them; ``exact=False``: a bound above it that
    needs no import of the engine (observation length 1,024, 16 move features, critic input 1,024)."""
    M = args.max_moves
    if exact:
        from agents.features import NUM_MOVE_FEATURES, critic_state_size
        from cassino_env.obs import obs_size

        D, F, C = obs_size(num_players, num_sides), NUM_MOVE_FEATURES, critic_state_size(num_players)
    else:
        D, F, C = 1024, 16, 1024
    F = F if args.move_features else 0
    C = C if args.critic_full_state and args.critic == "separate" else 0
    per_row = 4 * D + M * (1 + 1 + 1 + 8 + 1) + 4 * M * F + 4 * C + 8 + 4 + 4 + 1 + 4 + 1 + 8
    return args.num_steps * args.num_envs * per_row


def _machine_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not POSIX: no bound
        return 2**62


def _check_combination(args: Args) -> None:
    """The checks that involve several fields: the rules, the rollout length, the opponent rates, the memory."""
    try:
        make_rules(args.preset)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"preset {args.preset!r}: {exc}", field="preset") from None
    try:
        rules = make_rules(args.preset, args.num_players)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"num_players={args.num_players!r}: {exc}", field="num_players") from None
    deal_len = 52 - rules.table_cards
    if args.num_steps % deal_len:
        raise ConfigError(f"num_steps={args.num_steps} must be a multiple of the deal length {deal_len} "
                          "(rollouts hold whole deals)", field="num_steps")
    if args.reward != "points":
        raise ConfigError(f"reward={args.reward!r}: the trainer plays one deal per episode (rollouts hold whole "
                          "deals), and the win reward pays only at the end of a match; use reward=points",
                          field="reward")
    if args.objective == "match" and rules.num_sides != 2:
        raise ConfigError(f"objective=match needs two sides; {args.preset} with {rules.num_players} players has "
                          f"{rules.num_sides}", field="objective")
    if args.endgame and rules.num_players != 2:
        raise ConfigError(f"endgame: the exact last round needs two seats; {args.preset} is played by "
                          f"{rules.num_players}", field="endgame")
    if args.objective == "match" and args.shaping:
        raise ConfigError("shaping pays banked deal points, which objective=match does not count: use one of them",
                          field="shaping")
    if args.num_workers > 1 and args.ray_address is None:
        raise ConfigError(f"num_workers={args.num_workers}: rollout workers are Ray actors; give ray_address (--ray "
                          "ADDRESS) too, or num_workers=1 to play the rollouts here", field="num_workers")
    if args.num_envs % args.num_workers:
        raise ConfigError(f"num_workers={args.num_workers} must divide num_envs={args.num_envs} (every worker plays "
                          "as many games)", field="num_workers")
    if args.pool_rate + sum(args.bot_rates.values()) > 1 + 1e-9:
        raise ConfigError(f"pool_rate and bot_rates add up to {args.pool_rate + sum(args.bot_rates.values()):g}: "
                          "the shares of the games must add up to at most 1", field="bot_rates")
    have = _machine_bytes()
    if rollout_bytes(args, rules.num_players, rules.num_sides, exact=False) <= have:
        return
    need = rollout_bytes(args, rules.num_players, rules.num_sides)
    if need > have:
        raise ConfigError(f"num_envs={args.num_envs} x num_steps={args.num_steps} (max_moves={args.max_moves}): the "
                          f"rollout buffers would take {need / 2**30:,.1f} GiB, more than this machine's "
                          f"{have / 2**30:,.1f} GiB of memory", field="num_envs")


# ----------------------------------------------------------------------------------------------------------------------
# Options: a YAML config holds the fields that differ from Args' defaults; the command line overrides it
# (train/config.py)
# ----------------------------------------------------------------------------------------------------------------------
TrainOptions = config.options_type(Args, aliases={"ray_address": ("--ray",)})  # --ray ADDRESS, as cassino eval's


def load_config(path: str | Path) -> dict[str, Any]:
    """The :class:`Args` fields of a YAML config (:func:`train.config.load_config`)."""
    return config.load_config(Args, path)


def make_args(values: dict[str, Any]) -> Args:
    """:class:`Args` from field values, as a YAML config holds them (:func:`train.config.make_args`)."""
    return config.make_args(Args, values)


def resolve_args(options: Any) -> Args:
    """Built-in defaults < config file < options given (:func:`train.config.resolve_args`)."""
    return config.resolve_args(Args, options)


def main(options: Annotated[TrainOptions, tyro.conf.OmitArgPrefixes, tyro.conf.arg(name="")]) -> int:  # type: ignore[valid-type]
    """Train a self-play PPO agent, then evaluate its final checkpoint against the bot ladder.

    Writes TensorBoard logs and checkpoints under the run folder; see ``train/ppo_selfplay.py``.
    """
    from agents.ppo_agent import CheckpointError
    from cassino_env.errors import CassinoError
    from train.cli import bad_input

    with bad_input(ConfigError, CheckpointError, CassinoError) as failed:
        args = resolve_args(options)
        train(args, explicit=config.explicit_fields(Args, options))  # flags and the --config file's fields
    return failed.code


# ----------------------------------------------------------------------------------------------------------------------
# Opponents
# ----------------------------------------------------------------------------------------------------------------------
SELF, POOL = 0, 1  # controller ids; bot j is 2 + j


def rotate_learner_side(games: np.ndarray, deal_number: int, num_sides: int) -> np.ndarray:
    """int64[B]: the side the current policy plays in each pool or bot game during its ``deal_number``-th deal.

    It rotates by game and by deal so the learner plays every side (and so every seat: the dealer moves one seat
    per deal) equally often; the learner plays every seat of its side, the opponent every seat of the others.

    >>> rotate_learner_side(np.arange(4), 0, 2).tolist(), rotate_learner_side(np.arange(4), 1, 2).tolist()
    ([0, 1, 0, 1], [1, 0, 1, 0])
    """
    return (np.asarray(games, dtype=np.int64) + int(deal_number)) % num_sides


def split_games(num_envs: int, pool_rate: float, bot_rates: dict[str, float]) -> np.ndarray:
    """int64[B]: the controller of each game's non-learner seats: SELF, POOL or 2 + index of the bot.

    Games are split in fixed blocks (not drawn) so the mix is exact every rollout: the first games are self-play.

    Raises:
        ConfigError: rates that are negative or add up to more than 1.
    """
    rates = [pool_rate, *bot_rates.values()]
    if any(r < 0 for r in rates) or sum(rates) > 1 + 1e-9:
        raise ConfigError(f"pool_rate and bot_rates must be >= 0 and add up to at most 1, got {rates}")
    counts = [int(round(r * num_envs)) for r in rates]
    n_self = num_envs - sum(counts)
    if n_self < 0:
        counts[-1] += n_self
        n_self = 0
    ctrl = np.full(num_envs, SELF, dtype=np.int64)
    start = n_self
    for j, n in enumerate(counts):
        ctrl[start:start + n] = POOL + j
        start += n
    return ctrl


class SnapshotPool:
    """A bounded pool of past weights (see the module docstring for the rule).

    With ``sampling="pfsp"`` (prioritised fictitious self-play, AlphaStar's "hard" weighting), a snapshot is drawn
    with probability proportional to ``(1 - w) ** 2 + 0.05``, where ``w`` is the learner's deal win rate against it
    in pool games (a tie counts half), an exponential average with weight :attr:`EMA` per deal and 0.5 for a snapshot
    not yet played; ``"uniform"`` draws every snapshot equally often.
    """

    #: Weight of each new deal in a snapshot's running win rate.
    EMA = 0.01

    def __init__(self, size: int, sampling: str = "uniform") -> None:
        if sampling not in POOL_SAMPLING:
            raise ConfigError(f"pool_sampling must be one of {', '.join(POOL_SAMPLING)}, got {sampling!r}")
        self.size = size
        self.sampling = sampling
        self.snapshots: list[dict[str, torch.Tensor]] = []
        self.steps: list[int] = []  # global step at which each snapshot was taken
        self.winrate: list[float] = []  # the learner's running deal win rate against each snapshot

    def add(self, policy: torch.nn.Module, step: int) -> None:
        """Add a copy of ``policy``'s weights; drop the oldest beyond ``size``."""
        self.snapshots.append({k: v.detach().clone() for k, v in policy.state_dict().items()})
        self.steps.append(int(step))
        self.winrate.append(0.5)
        while len(self.snapshots) > self.size:
            self.snapshots.pop(0)
            self.steps.pop(0)
            self.winrate.pop(0)

    def weights(self) -> np.ndarray:
        """float64[len]: the probability of drawing each snapshot."""
        if self.sampling == "uniform":
            w = np.ones(len(self.snapshots))
        else:
            w = (1.0 - np.asarray(self.winrate, dtype=np.float64)) ** 2 + 0.05
        return w / w.sum()

    def sample(self, rng: np.random.Generator) -> int:
        """Index of a snapshot drawn by :meth:`weights` (uniform: one draw of ``rng.integers``)."""
        if self.sampling == "uniform":
            return int(rng.integers(len(self.snapshots)))
        return int(rng.choice(len(self.snapshots), p=self.weights()))

    def record(self, index: int, results: np.ndarray) -> None:
        """Fold the learner's deal results against snapshot ``index`` (float[k]: 1 win, 0.5 tie, 0 loss) into its
        running win rate."""
        for r in np.asarray(results, dtype=np.float64):
            self.winrate[index] += self.EMA * (float(r) - self.winrate[index])

    def state(self) -> dict[str, Any]:
        """Checkpoint form (tensors and lists)."""
        return {"snapshots": self.snapshots, "steps": list(self.steps), "winrate": list(self.winrate)}

    def load(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state`."""
        self.snapshots = list(state["snapshots"])
        self.steps = [int(s) for s in state["steps"]]
        self.winrate = [float(w) for w in state.get("winrate", [0.5] * len(self.snapshots))]


def check_options(args: Args) -> None:
    """Check every field of ``args`` and their combinations again (``Args.__post_init__`` does it when an Args is
    made; this catches one changed since, e.g. by attribute assignment).

    Raises:
        ConfigError: naming the field and the rule it breaks.
    """
    config.validate_fields(args, ARG_RULES)
    _check_combination(args)


#: The most env steps between two evaluations when ``eval_every`` is left at its default (null).
EVAL_EVERY_MAX = 1_000_000
#: The evaluation points (besides the one at step 0) a run gets at least, when ``eval_every`` is left at its default
#: and the run is long enough to hold that many rollouts.
EVAL_POINTS = 8


def eval_interval(eval_every: int | None, total_steps: int) -> int:
    """The env steps between evaluations: ``eval_every`` when given, else ``EVAL_EVERY_MAX`` or
    ``total_steps // EVAL_POINTS`` when that is less (at least 1); 0 means only at the end.

    >>> eval_interval(None, 9_977_856), eval_interval(None, 294_912), eval_interval(0, 294_912)
    (1000000, 36864, 0)
    """
    if eval_every is not None:
        return eval_every
    return max(1, min(EVAL_EVERY_MAX, total_steps // EVAL_POINTS))


def make_bots(names: typing.Iterable[str], rules: Any) -> dict[str, Any]:
    """Bot agents by spec, from ``agents.registry.make_agent``."""
    names = list(names)
    if not names:
        return {}
    from agents.registry import make_agent

    return {name: make_agent(name, rules) for name in names}


# ----------------------------------------------------------------------------------------------------------------------
# Per-seat credit and GAE in a turn-based game
# ----------------------------------------------------------------------------------------------------------------------
class SeatCredit:
    """Bookkeeping that gives each transition to the seat that acted and credits it the rewards of that seat until
    its next action; links each transition to the same seat's next one for GAE.

    One row per (step ``t``, game ``b``) of a rollout of ``T`` steps in ``B`` games with ``P`` seats. Call
    :meth:`act` before each env step and :meth:`step` after it.

    Attributes:
        rewards: float32[T, B] — rewards credited to the transition (its seat's, from its action to its next).
        dones: bool[T, B] — the seat's trajectory ends after this transition (the episode terminated).
        next_t: int64[T, B] — step of the same seat's next transition in the same game (-1: none yet).
    """

    def __init__(self, T: int, B: int, P: int) -> None:
        self.rewards = np.zeros((T, B), dtype=np.float32)
        self.dones = np.zeros((T, B), dtype=bool)
        self.next_t = np.full((T, B), -1, dtype=np.int64)
        self.last = np.full((B, P), -1, dtype=np.int64)  # each seat's open transition (its step) per game
        self.games = np.arange(B)

    def reset(self) -> None:
        """Start a rollout (every trajectory of the previous one has ended)."""
        self.rewards.fill(0.0)
        self.dones.fill(False)
        self.next_t.fill(-1)
        self.last.fill(-1)

    def act(self, t: int, seat: np.ndarray, recorded: np.ndarray | None = None) -> None:
        """Seat ``seat[b]`` acts at step ``t`` in game ``b``: link its previous transition to this one.

        ``recorded`` (bool[B], default all): the games where the move is a transition of the seat; elsewhere the
        move is played for it (the exact last round of ``endgame``) and the seat's open transition stays open, so
        the rewards that follow are credited to the seat's last recorded move.
        """
        games = self.games if recorded is None else self.games[recorded]
        seat = seat if recorded is None else seat[recorded]
        prev = self.last[games, seat]
        has = prev >= 0
        self.next_t[prev[has], games[has]] = t
        self.last[games, seat] = t

    def step(self, reward: np.ndarray, terminated: np.ndarray) -> None:
        """After an env step: credit ``reward[b, p]`` (float[B, P], every seat) to seat p's open transition;
        where ``terminated[b]``, end every seat's trajectory in game b."""
        g, s = np.nonzero(self.last >= 0)
        self.rewards[self.last[g, s], g] += reward[g, s]
        if terminated.any():
            ended = np.flatnonzero(terminated)
            g, s = np.nonzero(self.last[ended] >= 0)
            self.dones[self.last[ended[g], s], ended[g]] = True
            self.last[ended] = -1

    @property
    def open(self) -> bool:
        """Some trajectory has not ended."""
        return bool((self.last >= 0).any())


def compute_gae(rewards: np.ndarray, values: np.ndarray, dones: np.ndarray, next_t: np.ndarray, gamma: float,
                gae_lambda: float) -> np.ndarray:
    """float32[T, B]: GAE advantages along each (game, seat) trajectory.

    ``delta_t = r_t + gamma * V(next) - V_t`` and ``A_t = delta_t + gamma * lambda * A(next)``, where *next* is the
    same seat's next transition ``next_t[t, b]`` in the same game; both terms are 0 after ``dones[t, b]`` (a
    transition with no next and not done would need a bootstrap: rollouts hold whole deals, so there is none).
    """
    T, B = rewards.shape
    games = np.arange(B)
    advantages = np.zeros((T, B), dtype=np.float32)
    for t in reversed(range(T)):
        nt = next_t[t]
        cont = ~dones[t] & (nt >= 0)
        nt_safe = np.where(cont, nt, 0)
        next_value = np.where(cont, values[nt_safe, games], 0.0)
        next_adv = np.where(cont, advantages[nt_safe, games], 0.0)
        delta = rewards[t] + gamma * next_value - values[t]
        advantages[t] = delta + gamma * gae_lambda * next_adv
    return advantages


# ----------------------------------------------------------------------------------------------------------------------
# Checkpoints of the training state
# ----------------------------------------------------------------------------------------------------------------------
def _env_state(env: Any) -> dict[str, torch.Tensor]:
    """The vector env's core state as tensors: every public array field (uint64 stored as its int64 bits)."""
    import torch

    st = env.state
    out = {}
    for f in dataclasses.fields(st):
        v = getattr(st, f.name)
        if f.name.startswith("_") or not isinstance(v, np.ndarray):
            continue
        arr = v.view(np.int64) if v.dtype == np.uint64 else v.view(np.int8) if v.dtype == np.bool_ else v
        out[f.name] = torch.from_numpy(np.ascontiguousarray(arr).copy())
    return out


def _same_folder(a: Path, b: Path) -> bool:
    return a.resolve() == b.resolve()


def check_train_state(tr: dict[str, Any], path: str | Path, policy: torch.nn.Module, env: Any,
                      optimizer_state: Any, num_workers: int = 1) -> None:
    """Check every field of a checkpoint's ``train`` entry and its ``optimizer`` (``optimizer_state``) before any is
    used to resume (nothing is changed): the counters, the RNG states, the opponent pool (each snapshot must have the
    network's tensors, finite), the environment state (the env's fields, shapes and dtypes), the other Ray workers'
    states and the optimiser's state (:func:`_check_optimizer_state`). The ``config`` entry is checked by
    :func:`train.config.resume_args`.

    ``env`` has the games of one collector (``num_envs / num_workers``); ``train.env_state`` holds worker 0's (all
    the games of a local run), ``train.workers`` (absent: none) one ``{env_state, numpy_rng}`` per further Ray
    worker (train/rollout.py), so a run resumes with its own number of workers; a local run and a Ray run of one
    worker have the same state and resume either way.

    Raises:
        agents.ppo_agent.CheckpointError: naming the file and the field (``train.<field>``).
    """
    import torch

    from agents.ppo_agent import CheckpointError

    def bad(field: str, problem: str) -> CheckpointError:
        return CheckpointError(f"{path}: train.{field}: {problem}")

    for name in ("iteration", "global_step"):
        v = tr.get(name)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise bad(name, f"must be an integer >= 0, got {v!r}")
    v = tr.get("elapsed_s")
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise bad("elapsed_s", f"must be a finite number of seconds >= 0, got {v!r}")
    def check_rng(name: str, state: Any) -> None:
        try:
            if not isinstance(state, str):
                raise TypeError(f"a JSON string, got {type(state).__name__}")
            _set_rng_state(np.random.default_rng(0), state)  # a scratch generator: the run's is set only once all pass
        except (TypeError, ValueError, KeyError, OverflowError) as exc:
            raise bad(name, f"not a numpy generator state: {exc}") from None

    def check_env(name: str, saved: Any) -> None:
        fields = _env_state(env)
        if not isinstance(saved, dict) or set(saved) != set(fields):
            missing = sorted(set(fields) - set(saved)) if isinstance(saved, dict) else []
            raise bad(name, "must hold the vector env's state fields" + (f" (no {missing[0]!r})" if missing else ""))
        for k, ref in fields.items():
            t = saved[k]
            if not isinstance(t, torch.Tensor) or t.dtype != ref.dtype or t.shape != ref.shape:
                got = (t.dtype, tuple(t.shape)) if isinstance(t, torch.Tensor) else type(t).__name__
                games = (f"num_envs={env.num_envs}" if num_workers == 1 else
                         f"{env.num_envs} games (num_envs / num_workers={num_workers})")
                raise bad(f"{name}.{k}", f"must be a {ref.dtype} tensor of shape {tuple(ref.shape)} for {games}, "
                                         f"got {got}")

    check_rng("numpy_rng", tr.get("numpy_rng"))
    want = torch.get_rng_state()
    t = tr.get("torch_rng")
    if not isinstance(t, torch.Tensor) or t.dtype != want.dtype or t.shape != want.shape:
        got = (t.dtype, tuple(t.shape)) if isinstance(t, torch.Tensor) else type(t).__name__
        raise bad("torch_rng", f"must be a {want.dtype} tensor of shape {tuple(want.shape)} (torch.get_rng_state()), "
                               f"got {got}")
    pool = tr.get("pool")
    if not isinstance(pool, dict) or not isinstance(pool.get("snapshots"), list) or not pool["snapshots"]:
        raise bad("pool", "must hold a non-empty list of snapshots")
    snaps, n = pool["snapshots"], len(pool["snapshots"])
    weights = {k: (v.shape, v.dtype) for k, v in policy.state_dict().items()}
    for i, snap in enumerate(snaps):
        if not isinstance(snap, dict) or set(snap) != set(weights):
            raise bad(f"pool.snapshots[{i}]", "must hold the network's tensors, by name")
        for k, (shape, dtype) in weights.items():
            w = snap[k]
            if not isinstance(w, torch.Tensor) or w.shape != shape or w.dtype != dtype:
                raise bad(f"pool.snapshots[{i}].{k}", f"must be a {dtype} tensor of shape {tuple(shape)}")
            if w.is_floating_point() and not bool(torch.isfinite(w).all()):
                raise bad(f"pool.snapshots[{i}].{k}", "holds NaN or infinite values (corrupt weights)")
    steps = pool.get("steps")
    if (not isinstance(steps, list) or len(steps) != n
            or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in steps)):
        raise bad("pool.steps", f"must be a list of {n} integers >= 0 (one per snapshot)")
    rates_ = pool.get("winrate", [0.5] * n)
    if (not isinstance(rates_, list) or len(rates_) != n
            or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x <= 1 for x in rates_)):
        raise bad("pool.winrate", f"must be a list of {n} numbers from 0 to 1 (one per snapshot)")
    workers = tr.get("workers", [])
    if not isinstance(workers, list):
        raise bad("workers", f"must be a list (one entry per Ray worker after the first), got {type(workers).__name__}")
    if len(workers) + 1 != num_workers:
        made = "a local run or one Ray worker" if not workers else f"{len(workers) + 1} Ray workers"
        raise bad("workers", f"the run was made with {made} (num_workers={len(workers) + 1}); resume it with "
                             f"num_workers={len(workers) + 1}" + (" and ray_address" if workers else "")
                  + f", not num_workers={num_workers}")
    check_env("env_state", tr.get("env_state"))
    for i, w in enumerate(workers):
        if not isinstance(w, dict) or set(w) != {"env_state", "numpy_rng"}:
            raise bad(f"workers[{i}]", "must hold env_state and numpy_rng")
        check_env(f"workers[{i}].env_state", w["env_state"])
        check_rng(f"workers[{i}].numpy_rng", w["numpy_rng"])
    _check_optimizer_state(optimizer_state, path, policy)


def _check_optimizer_state(opt: Any, path: str | Path, policy: torch.nn.Module) -> None:
    """Check a checkpoint's ``optimizer`` entry (an Adam ``state_dict``) against the network: one group over all its
    parameters, finite hyperparameters, and moment tensors of each parameter's shape, finite (torch's
    ``load_state_dict`` checks the group sizes only, and a wrong shape would fail in the middle of training).

    Raises:
        agents.ppo_agent.CheckpointError: naming the file and the field (``optimizer.<field>``).
    """
    import torch

    from agents.ppo_agent import CheckpointError

    def bad(field: str, problem: str) -> CheckpointError:
        return CheckpointError(f"{path}: optimizer.{field}: {problem}")

    def is_num(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    if not isinstance(opt, dict) or not isinstance(opt.get("state"), dict) or not isinstance(opt.get("param_groups"),
                                                                                            list):
        raise CheckpointError(f"{path}: optimizer: must be an optimiser state_dict (state, param_groups)")
    params = list(policy.parameters())
    groups = opt["param_groups"]
    if len(groups) != 1 or not isinstance(groups[0], dict) or groups[0].get("params") != list(range(len(params))):
        raise bad("param_groups", f"must be one group of the network's {len(params)} parameters")
    group = groups[0]
    for key in ("lr", "eps", "weight_decay"):
        if not (is_num(group.get(key)) and group[key] >= 0):
            raise bad(f"param_groups[0].{key}", f"must be a finite number >= 0, got {group.get(key)!r}")
    betas = group.get("betas")
    if not (isinstance(betas, (list, tuple)) and len(betas) == 2 and all(is_num(b) and 0 <= b < 1 for b in betas)):
        raise bad("param_groups[0].betas", f"must be two numbers from 0 to 1 (1 excluded), got {betas!r}")
    for key in ("amsgrad", "maximize"):
        if not isinstance(group.get(key, False), bool):
            raise bad(f"param_groups[0].{key}", f"must be true or false, got {group.get(key)!r}")
    for k, st in opt["state"].items():
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < len(params) or not isinstance(st, dict):
            raise bad("state", f"entry {k!r} is not one of the network's {len(params)} parameters")
        step = st.get("step")
        value = step.item() if isinstance(step, torch.Tensor) and step.numel() == 1 else step
        if not (is_num(value) and value >= 0):
            raise bad(f"state[{k}].step", f"must be a finite number >= 0, got {step!r}")
        for name in ("exp_avg", "exp_avg_sq", *(("max_exp_avg_sq",) if group.get("amsgrad") else ())):
            t, ref = st.get(name), params[k]
            if not isinstance(t, torch.Tensor) or t.shape != ref.shape or t.dtype != ref.dtype:
                raise bad(f"state[{k}].{name}", f"must be a {ref.dtype} tensor of shape {tuple(ref.shape)}")
            if not bool(torch.isfinite(t).all()) or (name != "exp_avg" and bool((t < 0).any())):
                raise bad(f"state[{k}].{name}", "holds NaN, infinite or (for a second moment) negative values")


def _restore_env_state(env: Any, saved: dict[str, torch.Tensor]) -> None:
    """Write a :func:`_env_state` back into a freshly reset env of the same shape (the fields are views)."""
    st = env.state
    for name, t in saved.items():
        dst = getattr(st, name)
        src = t.numpy()
        src = src.view(np.uint64) if dst.dtype == np.uint64 else src.view(np.bool_) if dst.dtype == np.bool_ else src
        if src.shape != dst.shape:
            raise ValueError(f"env state field {name}: shape {src.shape}, expected {dst.shape}")
        dst[...] = src


def _rng_state(rng: np.random.Generator) -> str:
    return json.dumps(rng.bit_generator.state)


def _set_rng_state(rng: np.random.Generator, state: str) -> None:
    rng.bit_generator.state = json.loads(state)


# ----------------------------------------------------------------------------------------------------------------------
# Training
# ----------------------------------------------------------------------------------------------------------------------
def _fmt_time(s: float) -> str:
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def train(args: Args, explicit: set[str] | None = None) -> Path:
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
        return _train(args, explicit, held)
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


def _train(args: Args, explicit: set[str] | None, held: list[Any]) -> Path:  # noqa: C901 - one readable loop, as CleanRL
    """:func:`train`'s body; the Ray workers and the run folder's lock go into ``held`` for :func:`train` to release."""
    import torch
    from torch.utils.tensorboard import SummaryWriter

    from agents.features import MOVE_FEATURES, NUM_MOVE_FEATURES, critic_state_size
    from agents.features import SCALE as FEATURE_SCALE
    from agents.policy import (
        CRITICS,
        CassinoPolicy,
        MoveBatch,
        NetworkShape,
        masked_entropy,
        masked_log_softmax,
    )
    from agents.ppo_agent import (
        CheckpointError,
        PPOAgent,
        atomic_copy,
        atomic_write,
        check_network,
        policy_from_checkpoint,
        read_checkpoint,
        save_checkpoint,
    )
    from cassino_env.vector import CassinoVectorEnv
    from train.rollout import LocalRollouts, RayRollouts, RolloutCollector, worker_seeds

    # --- resume: the checkpoint's config, overridden by what was given explicitly ------------------------------------
    ckpt = None
    if args.resume is not None:
        ckpt = read_checkpoint(args.resume)
        if not isinstance(ckpt.get("train"), dict) or ckpt.get("optimizer") is None:
            raise CheckpointError(f"{args.resume}: an evaluation-only checkpoint; --resume needs a training checkpoint")
        args = config.resume_args(args, ckpt["train"], explicit, source=str(args.resume), saved_error=CheckpointError)

    check_options(args)  # Args checked itself when made; again here, for an Args changed since
    if args.critic not in CRITICS:  # CRITIC_CHOICES, the options' copy, is agents.policy's (a test checks)
        raise ConfigError(f"critic={args.critic!r}: choose from {', '.join(CRITICS)}")
    torch.set_num_threads(args.threads)
    rules = make_rules(args.preset, args.num_players)
    deal_len = 52 - rules.table_cards
    if ckpt is not None and (ckpt["preset"] != rules.preset or ckpt["num_players"] != rules.num_players):
        raise CheckpointError(f"{args.resume}: made for preset {ckpt['preset']!r} with {ckpt['num_players']} players, "
                              f"not {rules.preset!r} with {rules.num_players}")
    B, T = args.num_envs, args.num_steps
    batch_steps = B * T
    num_iterations = max(args.total_timesteps // batch_steps, 1)
    if num_iterations * batch_steps != args.total_timesteps:
        print(f"note: total_timesteps={args.total_timesteps:,} is rounded to {num_iterations * batch_steps:,} env "
              f"steps: training runs whole rollouts of num_envs x num_steps = {B:,} x {T} = {batch_steps:,} env steps "
              f"({num_iterations} rollout{'s' if num_iterations > 1 else ''})", flush=True)
    eval_every = eval_interval(args.eval_every, num_iterations * batch_steps)
    if args.run_dir:
        run_dir = Path(args.run_dir)
    elif ckpt is not None:  # the checkpoint's own run folder, from its path: never a folder named inside the file
        run_dir = config.run_dir_of_checkpoint(args.resume)
    else:
        run_dir = config.default_run_dir(args)
    resuming_here = ckpt is not None and Path(args.resume).parent.name == "checkpoints" and _same_folder(
        Path(args.resume).parent.parent, run_dir)
    config.check_run_dir(run_dir, resuming=resuming_here, reuse=args.reuse_run_dir)  # reads only: fail early
    ckpt_dir = run_dir / "checkpoints"

    # --- seeding, env, network, opponents ----------------------------------------------------------------------------
    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    bot_names = list(args.bot_rates)
    eval_names = expand_specs(args.eval_opponents)  # "ladder": the bots of agents.registry.LADDER
    try:  # every agent spec is checked before anything is written, the final evaluation's too
        bots = make_bots(dict.fromkeys([*bot_names, *eval_names]), rules)
        make_bots([s for s in expand_specs(args.final_eval_opponents) if s not in bots], rules)
    except AgentSpecError as exc:
        raise ConfigError(f"bot_rates / eval_opponents / final_eval_opponents: {exc}") from None
    worker_envs = B // args.num_workers  # the games of one collector (train/rollout.py)
    if args.ray_address is None:  # one collector here, over every game, drawing from `rng`
        collector = RolloutCollector(args, rules, B, worker_seeds(args.seed, 0)[0], bots)
        env = collector.env
    else:  # the games live on the Ray workers: an env of one worker's size gives the shapes to check a checkpoint by
        env = CassinoVectorEnv(worker_envs, rules, seed=0, max_moves=args.max_moves, reward=args.reward, episode="deal",
                               with_view=bool(bot_names) or args.move_features)
        env.reset()
    D, M = env.obs_size, args.max_moves
    F = NUM_MOVE_FEATURES if args.move_features else 0
    C = critic_state_size(rules.num_players) if args.critic_full_state and args.critic == "separate" else 0
    net_shape = NetworkShape(obs_dim=D, hidden=args.hidden, embed=args.embed, move_features=F, critic=args.critic,
                             critic_dim=C)
    if ckpt is not None:  # the file's network against the run's, before any network is allocated
        check_network(ckpt, args.resume, net_shape)
    policy = CassinoPolicy.from_shape(net_shape)
    if F and args.feature_prior:
        policy.set_feature_prior(MOVE_FEATURES.index("advanced_score"), args.feature_prior / FEATURE_SCALE)
    optimizer = torch.optim.Adam(policy.parameters(), lr=args.learning_rate, eps=1e-5)
    rollouts: LocalRollouts | RayRollouts | None = None
    if args.ray_address is None:
        rollouts = LocalRollouts(collector, net_shape)  # its pool network drawn from torch's generator here
    pool = SnapshotPool(args.pool_size, args.pool_sampling)
    opp_names = ["self", "pool", *bot_names]
    iteration, global_step, elapsed_before = 0, 0, 0.0

    if ckpt is not None:
        expected = net_shape
        policy.load_state_dict(policy_from_checkpoint(ckpt, args.resume, expected).state_dict())
        tr = ckpt["train"]
        check_train_state(tr, args.resume, policy, env, ckpt["optimizer"],  # every field, before any is applied
                          num_workers=args.num_workers)
        try:
            optimizer.load_state_dict(ckpt["optimizer"])
        except (ValueError, KeyError, TypeError, RuntimeError) as exc:
            raise CheckpointError(f"{args.resume}: optimizer: does not fit the network: {exc}") from None
        iteration, global_step, elapsed_before = int(tr["iteration"]), int(tr["global_step"]), float(tr["elapsed_s"])
        pool.load(tr["pool"])
        _set_rng_state(rng, tr["numpy_rng"])
        torch.set_rng_state(tr["torch_rng"])
    else:
        pool.add(policy, 0)

    # --- the Ray workers (--ray), once everything is checked; then the games of the checkpoint, here or there -------
    if rollouts is None:
        rollouts = RayRollouts(args, net_shape)  # ConfigError (ray_address, num_workers) before anything is written
        held.append(rollouts)  # released (actors ended, Ray shut down if started here) when the run ends
        print(f"{args.num_workers} rollout worker{'s' if args.num_workers > 1 else ''} on the Ray cluster at "
              f"{args.ray_address!r}, {worker_envs:,} games each", flush=True)
    if ckpt is not None:
        rollouts.load(ckpt["train"])
        print(f"resumed {args.resume} at iteration {iteration}, step {global_step:,}", flush=True)

    # --- the run folder: locked and written only now, once every option and the checkpoint have been checked -------
    held.append(config.claim_run_dir(run_dir, resuming=resuming_here, reuse=args.reuse_run_dir))
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    config_text = yaml.safe_dump(args_to_dict(args), sort_keys=False).encode("utf-8")
    atomic_write(run_dir / "config.yaml", lambda f: f.write(config_text))
    writer = SummaryWriter(str(run_dir))
    if ckpt is None:
        writer.add_text("hyperparameters", config.hparams_table(args))
        writer.add_text("eval/about", EVAL_ABOUT.format(deals=args.eval_deals, every=eval_every))

    def checkpoint(name: str) -> Path:
        train_state = {
            "config": args_to_dict(args), "run_dir": str(run_dir), "iteration": iteration, "global_step": global_step,
            "elapsed_s": elapsed_before + (time.time() - start_time), "numpy_rng": _rng_state(rng),
            "torch_rng": torch.get_rng_state(), "pool": pool.state(), **rollouts.state(),  # env_state (workers)
        }
        path = save_checkpoint(ckpt_dir / name, policy, rules, optimizer=optimizer, train=train_state)
        atomic_copy(path, ckpt_dir / "latest.pt")  # never half-written: a temporary file renamed into place
        return path

    def run_eval() -> dict[str, float]:
        t0 = time.time()
        # argmax play (module docstring), with the exact last round of the checkpoint agents (agents.endgame)
        agent = PPOAgent(policy, deterministic=True, rules=rules, endgame=True)
        out = {}
        for name in eval_names:
            res = evaluate_deals(agent, bots[name], rules, args.eval_deals, seed=(10_000_000 + args.seed) % 2**62,
                                 max_moves=M)
            lo, hi = wilson_interval(res["winrate"] * res["games"], res["games"])
            writer.add_scalar(f"eval/winrate_vs_{name}", res["winrate"], global_step)
            writer.add_scalar(f"eval/winrate_ci_low_vs_{name}", lo, global_step)
            writer.add_scalar(f"eval/winrate_ci_high_vs_{name}", hi, global_step)
            writer.add_scalar(f"eval/points_vs_{name}", res["points"], global_step)
            out[name] = res["winrate"]
        writer.add_scalar("time/eval_s", time.time() - t0, global_step)
        policy.train()
        return out

    start_time = time.time()
    last_progress = 0.0
    last_eval: dict[str, float] = {}
    last_eval_step = global_step
    eval_mark = global_step // eval_every if eval_every else 0
    snap_mark = global_step // args.snapshot_every if args.snapshot_every else 0
    ckpt_mark = global_step // args.checkpoint_every if args.checkpoint_every else 0
    stop_reason = "total_timesteps reached"
    if ckpt is None and eval_every:
        last_eval = run_eval()  # the starting point of the curves
    while iteration < num_iterations:
        iteration += 1
        t_iter = time.time()
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = args.learning_rate * (1.0 - (iteration - 1.0) / num_iterations)
        snap = pool.sample(rng)
        deals_done = global_step // (B * deal_len)

        # --- rollout, and GAE along each (game, seat) trajectory (train/rollout.py) ---------------------------------
        ro = rollouts.collect(policy, pool.snapshots[snap], rng, deals_done)
        pool.record(snap, ro.pool_results)
        t_env, t_inf = ro.env_s, ro.inference_s
        global_step += batch_steps

        # --- PPO update over the learner transitions -----------------------------------------------------------------
        t_upd = time.time()
        flat = ro.flat
        b_obs, b_kind, b_card, b_value, b_cards, b_mask = ro.obs, ro.kind, ro.card, ro.value, ro.cards, ro.mask
        b_feat, b_crit = ro.feat, ro.crit
        b_actions, b_logprobs = ro.actions, ro.logprobs
        b_adv, b_returns, b_values = ro.advantages, ro.returns, ro.values
        minibatch_size = max(len(flat) // args.num_minibatches, 1)
        clipfracs = []
        policy.train()
        for _epoch in range(args.update_epochs):
            perm = rng.permutation(flat)
            for start in range(0, len(perm) - minibatch_size + 1, minibatch_size):
                idx = np.sort(perm[start:start + minibatch_size])
                mb = MoveBatch.from_arrays(b_obs[idx], b_kind[idx], b_card[idx], b_value[idx], b_cards[idx],
                                           b_mask[idx], b_feat[idx] if F else None, b_crit[idx] if C else None)
                logits, newvalue = policy(mb)
                logp_all = masked_log_softmax(logits, mb.mask)
                act = torch.from_numpy(b_actions[idx])
                newlogprob = logp_all.gather(1, act[:, None]).squeeze(1)
                entropy = masked_entropy(logits, mb.mask)
                logratio = newlogprob - torch.from_numpy(b_logprobs[idx])
                ratio = logratio.exp()
                with torch.no_grad():
                    old_approx_kl = (-logratio).mean()
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs.append(((ratio - 1.0).abs() > args.clip_coef).float().mean().item())
                mb_adv = torch.from_numpy(b_adv[idx])
                if args.norm_adv:
                    mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                pg_loss = torch.max(-mb_adv * ratio,
                                    -mb_adv * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)).mean()
                mb_ret = torch.from_numpy(b_returns[idx])
                if args.clip_vloss:
                    mb_val = torch.from_numpy(b_values[idx])
                    v_clipped = mb_val + torch.clamp(newvalue - mb_val, -args.clip_coef, args.clip_coef)
                    v_loss = 0.5 * torch.max((newvalue - mb_ret) ** 2, (v_clipped - mb_ret) ** 2).mean()
                else:
                    v_loss = 0.5 * ((newvalue - mb_ret) ** 2).mean()
                entropy_loss = entropy.mean()
                loss = pg_loss - args.ent_coef * entropy_loss + v_loss * args.vf_coef
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(policy.parameters(), args.max_grad_norm)
                optimizer.step()
            if args.target_kl is not None and approx_kl > args.target_kl:
                break
        y_pred, y_true = b_values[flat], b_returns[flat]
        var_y = np.var(y_true)
        explained_var = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y
        t_done = time.time()

        # --- logging -------------------------------------------------------------------------------------------------
        elapsed = elapsed_before + (t_done - start_time)
        sps = int(global_step / max(elapsed, 1e-9))
        writer.add_scalar("charts/learning_rate", optimizer.param_groups[0]["lr"], global_step)
        writer.add_scalar("losses/value_loss", v_loss.item(), global_step)
        writer.add_scalar("losses/policy_loss", pg_loss.item(), global_step)
        writer.add_scalar("losses/entropy", entropy_loss.item(), global_step)
        writer.add_scalar("losses/old_approx_kl", old_approx_kl.item(), global_step)
        writer.add_scalar("losses/approx_kl", approx_kl.item(), global_step)
        writer.add_scalar("losses/clipfrac", float(np.mean(clipfracs)), global_step)
        writer.add_scalar("losses/explained_variance", float(explained_var), global_step)
        writer.add_scalar("charts/SPS", sps, global_step)
        iter_s = t_done - t_iter
        writer.add_scalar("time/env_s", t_env, global_step)
        writer.add_scalar("time/inference_s", t_inf, global_step)
        writer.add_scalar("time/update_s", t_done - t_upd, global_step)
        writer.add_scalar("time/env_fraction", t_env / iter_s, global_step)
        writer.add_scalar("time/update_fraction", (t_done - t_upd) / iter_s, global_step)
        if rollouts.overhead_s is not None:
            writer.add_scalar("time/ray_overhead_s", rollouts.overhead_s, global_step)
        if len(ro.ep_returns):
            rets, who = ro.ep_returns, ro.ep_ctrl
            writer.add_scalar("charts/episodic_return", float(rets[who != SELF].mean()) if (who != SELF).any()
                              else 0.0, global_step)
            for c in np.unique(who[who != SELF]):
                writer.add_scalar(f"charts/points_vs_{opp_names[c]}", float(rets[who == c].mean()), global_step)

        # --- snapshots, evaluation, checkpoints, progress ------------------------------------------------------------
        if args.snapshot_every and global_step // args.snapshot_every > snap_mark:
            snap_mark = global_step // args.snapshot_every
            pool.add(policy, global_step)
        over_time = args.max_train_seconds > 0 and elapsed >= args.max_train_seconds
        last_iter = iteration >= num_iterations or over_time
        if (eval_every and global_step // eval_every > eval_mark) or last_iter:
            eval_mark = global_step // eval_every if eval_every else 0
            last_eval, last_eval_step = run_eval(), global_step
        if args.checkpoint_every and global_step // args.checkpoint_every > ckpt_mark and not last_iter:
            ckpt_mark = global_step // args.checkpoint_every
            checkpoint(f"step_{global_step:011d}.pt")
        now = time.time()
        if now - last_progress >= args.progress_every_s or last_iter:
            last_progress = now
            left = (num_iterations - iteration) * (elapsed / max(global_step, 1)) * batch_steps
            if args.max_train_seconds > 0:  # the time limit ends the run first when it comes sooner
                left = min(left, max(args.max_train_seconds - elapsed, 0.0))
            wins = " ".join(f"{k} {v:.2f}" for k, v in last_eval.items())
            wins = f"deal win rate (argmax play) at step {last_eval_step:,} vs {wins}" if wins else ""
            print(f"step {global_step:>11,}/{num_iterations * batch_steps:,} ({100 * iteration / num_iterations:3.0f}%)"
                  f" | SPS {sps:,} | {_fmt_time(elapsed)} elapsed, ~{_fmt_time(left)} left"
                  f" | v_loss {v_loss.item():.3f} entropy {entropy_loss.item():.3f}"
                  + (f" | {wins}" if wins else ""), flush=True)
        if over_time:
            stop_reason = f"max_train_seconds={args.max_train_seconds:g} reached"
            break

    final = checkpoint("final.pt")
    writer.flush()
    elapsed = elapsed_before + (time.time() - start_time)
    print(f"trained {global_step:,} env steps in {_fmt_time(elapsed)} ({global_step / max(elapsed, 1e-9):,.0f} SPS, "
          f"{stop_reason}); final checkpoint {final}", flush=True)
    writer.close()
    if args.final_eval_deals > 0 and args.final_eval_opponents:
        final_evaluation(final, rules, args)
    return final


def final_evaluation(path: Path, rules: Any, args: Args) -> dict[str, Any]:
    """Head-to-head evaluation of a checkpoint against the bot ladder (``train.evaluate``); prints the table."""
    from train.evaluate import evaluate, format_table

    t0 = time.time()
    opponents = expand_specs(args.final_eval_opponents)
    specs = [f"checkpoint:{path}", *opponents]
    print(f"evaluating {path} against {', '.join(opponents)} on {args.final_eval_deals:,} duplicate deals each: "
          f"whole matches to {rules.target}, the checkpoint playing its most probable move (argmax"
          f"{', the last round exactly' if rules.num_players == 2 else ''}); the table gives "
          "match win rates (not the deal win rates of the progress line) ...", flush=True)
    result = evaluate(specs, rules, deals=args.final_eval_deals, seed=(args.seed + 20_000_000) % 2**31)
    print(format_table(result), flush=True)
    print(f"(evaluation took {_fmt_time(time.time() - t0)})", flush=True)
    return result


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(tyro.cli(main, config=(tyro.conf.FlagCreatePairsOff,)))
