"""The self-play trainer's options (:mod:`train.ppo_selfplay`, and ``cassino train``'s recipe, :mod:`train.recipe`):
:class:`Args`, the rule of every field (:data:`ARG_RULES`), the checks of their combinations, the command line's
:data:`TrainOptions` and the config read by default (:func:`preset_config`).

``Args``'s defaults are the only built-in values (the default run, classic rules); a YAML config
(``configs/ppo_<preset>.yaml``) holds just the fields that differ from them. The machinery that reads configs and
flags and merges a resumed run's options is :mod:`train.options`; ``train.ppo_selfplay`` binds it to :class:`Args`.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from pathlib import Path
from typing import Any

from agents.registry import LADDER, AgentSpecError, check_spec
from cassino_env.rules import PRESETS
from train.options import (
    CONFIGS_DIR,
    ConfigError,
    FieldRule,
    boolean,
    checked_rules,
    device,
    integer,
    names,
    number,
    optional,
    options_type,
    precision,
    rates,
    text,
    validate_fields,
)
from train.run_folder import RunOptions

#: The config read when neither ``--config`` nor a preset with a config of its own is given.
DEFAULT_CONFIG = CONFIGS_DIR / "ppo_classic.yaml"


def preset_config(preset: str | None) -> Path:
    """The config file used when no ``--config`` is given: ``configs/ppo_<preset>.yaml`` for a preset that has one,
    else :data:`DEFAULT_CONFIG`.

    >>> preset_config("cicera").name, preset_config(None).name, preset_config("nonesuch").name
    ('ppo_cicera.yaml', 'ppo_classic.yaml', 'ppo_classic.yaml')
    """
    if not isinstance(preset, str) or preset not in PRESETS:  # checked by name first: no file is looked up
        return DEFAULT_CONFIG  # for an unknown preset, which the rules check then names
    path = CONFIGS_DIR / f"ppo_{preset}.yaml"
    return path if path.is_file() else DEFAULT_CONFIG


# --- Args, the rule of every field, their combinations --------------------------------------------------------------
#: How past snapshots are drawn for the pool games (:class:`train.rollout.SnapshotPool`).
POOL_SAMPLING = ("uniform", "pfsp")
#: :data:`agents.policy.CRITICS`, written out so that reading the options does not import torch (a test checks).
CRITIC_CHOICES = ("shared", "separate")


#: The recipe's stages (train/recipe.py's STAGES; kept here so that the options import no trainer).
RECIPE_STAGES = ("ppo", "last_round", "early_rounds", "consolidate")


@dataclasses.dataclass
class Args(RunOptions):
    """Self-play PPO options. These defaults are the only built-in values (the default run, classic rules);
    ``configs/ppo_<preset>.yaml`` hold just the fields that differ from them."""

    exp_name: str = "ppo_selfplay"
    """name of the experiment, the second part of the run name"""
    progress_every_s: float = 30.0
    """seconds between progress lines on stdout"""
    max_train_seconds: float = 1140.0
    """with hours 0: stop training after this many wall-clock seconds of the run, resumed parts included (0: no
    limit), then save and evaluate as usual; a guard that keeps a PPO run within 20 minutes on a slow or busy machine.
    The recipe (hours > 0) ignores it: its budget is hours"""

    # --- the recipe: cassino train's stages in a compute budget (train/recipe.py) ----------------------------------
    hours: float = 0.3
    """the compute budget in hours of wall clock, resumed parts included: cassino train runs the whole recipe
    (self-play PPO, then expert iteration; train/recipe.py) in it, then the evaluation table; 0: self-play PPO alone
    (train/ppo_selfplay.py), for total_timesteps or max_train_seconds"""
    stages: tuple[str, ...] = RECIPE_STAGES
    """the recipe's stages that run and their order, of ppo, last_round, early_rounds, consolidate: ppo first, then
    the expert stages turned in the order given until the budget is spent (train/recipe.py)"""
    gate_deals: int = 2000
    """duplicate deals of each gate: the stage's network against the run's best, both alone"""
    gate_every_s: float = 0.0
    """seconds of training between gates; 0: the budget / 12, kept within 60-600 s"""
    gate_patience: int = 2
    """a stage ends after this many gates in a row without a gain"""
    gate_min_z: float = 1.0
    """a gate is a gain, and the candidate replaces the best, when it leads the best by at least this many standard
    errors of its margin (and by more than 0)"""
    stage_configs: str | None = None
    """the folder of the expert stages' configs (stage_last_round.yaml, stage_early_rounds.yaml,
    stage_consolidate.yaml: fields of train.exit.ExitArgs); null: the project's configs/ folder"""

    # --- rollout workers on Ray (train/rollout.py) -------------------------------------------------------------------
    ray_address: str | None = None
    """play the rollouts on Ray actors of the Ray cluster at this address (--ray; ray.init's: local starts one on
    this machine, auto joins the running one, also found through RAY_ADDRESS, ray://HOST:10001 a remote one), the
    PPO update staying here; null: play them in this process. Needs the ray extra"""
    num_workers: int | None = None
    """the rollout workers, each playing num_envs / num_workers of the games (must divide num_envs): with
    ray_address, Ray actors (one CPU each); without it, collector threads in this process (one torch thread each;
    train/rollout.py ThreadRollouts; 1: one collector). null, the default: 1 with ray_address, else 2 where threads
    is 2 or more and num_envs is even, else 1 (the run's config records the number chosen)"""

    # --- environment ------------------------------------------------------------------------------------------------
    preset: str = "classic"
    """rule preset (docs/rules.md 6)"""
    num_players: int | None = None
    """seats per game; None (null in a config file), the built-in default: the preset's first allowed count
    (docs/rules.md 6: 2, or 4 for cicera); 4 and 6 seats play partnerships"""
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
    obs_blocks: tuple[str, ...] | None = None
    """the observation's blocks, in order (cassino_env.obs: leave some out, reorder them, or add blocks registered
    with cassino_env.obs.register_block); null: cassino_env.obs.DEFAULT_BLOCKS; every checkpoint records the list
    (obs_blocks)"""

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
    update_epochs: int = 1
    """epochs over each rollout (1 since 2026-12-07, 3 before: a third of the update's arithmetic, and at the default
    budget the networks measured as strong at 1.7 times the env steps a second; docs/training.md, "One pass over
    each rollout")"""
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
    """stop an update's epochs early when the approximate KL exceeds this (checked after each epoch, so with one
    epoch, the default, it stops nothing)"""
    update_shards: int | None = None
    """split every minibatch of the update into this many shards, each computed by its own copy of the network on
    its own thread (one torch thread each) and their gradients summed: the same update up to float rounding, which
    uses the cores better than torch's threads inside each operation; null: threads"""

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
    bot_rates: dict[str, float] = dataclasses.field(default_factory=lambda: {"greedy": 0.15, "random": 0.05})
    """share of games per bot opponent (agents.registry specs); the rest of the games are pure self-play"""

    # --- evaluation and checkpoints ---------------------------------------------------------------------------------
    eval_every: int | None = None
    """env steps between evaluations against eval_opponents; null (the default): 1,000,000, or an eighth of the run
    when that is less (train.config.eval_interval), so a short run still draws a curve of about 8 points and a
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
        validate_fields(self, ARG_RULES)
        # resolved once, here: dataclasses.replace(args, threads=...) keeps the number chosen (build Args anew)
        if self.num_workers is None:  # two collector threads where torch may use two threads
            local_pair = self.ray_address is None and self.threads >= 2 and self.num_envs % 2 == 0
            self.num_workers = 2 if local_pair else 1
        _check_combination(self)


def _obs_blocks(name: str, value: Any) -> tuple[str, ...] | None:
    """A rule: a list of distinct observation block names (``cassino_env.obs.check_blocks``)."""
    if value is None:  # the default list; nothing to import (`cassino train --help` stays light)
        return None
    from cassino_env.obs import ObsBlocksError, check_blocks

    try:
        return check_blocks(names()(name, value))
    except ObsBlocksError as exc:
        raise ConfigError(f"{name}: {exc}", field=name) from None


def _agent_spec(ladder: bool) -> typing.Callable[[str, str], None]:
    """A check of an agent spec by the registry (``agents.registry.check_spec``: names, arguments, budgets, nesting,
    the form of an import path ``MODULE:OBJECT``); ``agents.registry.make_agent`` builds it when the run starts."""

    def check(name: str, spec: str) -> None:
        try:
            check_spec(spec, ladder_ok=ladder)
        except AgentSpecError as exc:
            raise ConfigError(f"{name}: {exc}", field=name) from None

    return check


def _stage_name(name: str, stage: str) -> None:
    if stage not in RECIPE_STAGES:
        raise ConfigError(f"{name}: unknown stage {stage!r}: choose from {', '.join(RECIPE_STAGES)}", field=name)


#: The most env steps a run may ask for: a million steps a second would take 11.6 days.
MAX_TIMESTEPS = 10**12

#: The rule of every :class:`Args` field (:mod:`train.options`'s rule makers); ``Args.__post_init__`` applies them.
#: Upper bounds keep a run within what one machine can hold (the network widths, the rollout size; the rollout's
#: memory is also checked against the machine's, :func:`rollout_bytes`), within what the engine allows
#: (``max_moves`` up to 32,767) or within what trains at all in float32: a learning rate above 1, a reward scale
#: above 1,000 (deal margins of +-10 points become +-10,000), loss coefficients above 100 or a feature prior above 100
#: logits per point overflow or diverge at once (the trainer also stops at the first non-finite loss or gradient).
ARG_RULES: dict[str, FieldRule] = {
    # experiment
    "exp_name": text(no_slash=True), "seed": integer(0, 2**63 - 1, want="an integer 0 <= seed < 2**63"),
    "threads": integer(1, 1024), "device": device(), "precision": precision(), "run_dir": optional(text()),
    "runs_root": text(),
    "resume": optional(text()),
    "reuse_run_dir": boolean(), "progress_every_s": number(0.0), "max_train_seconds": number(0.0),
    # the recipe
    "hours": number(0.0, 10_000.0), "stages": names(_stage_name), "gate_deals": integer(2, 1_000_000),
    "gate_every_s": number(0.0), "gate_patience": integer(1, 1000), "gate_min_z": number(0.0, 100.0),
    "stage_configs": optional(text()),
    # rollout workers on Ray
    "ray_address": optional(text()), "num_workers": optional(integer(1, 4096)),
    # environment
    "preset": text(), "num_players": optional(integer(1)), "reward": text(("points", "win")),
    "reward_scale": number(0.0, 1000.0, lo_open=True), "objective": text(("points", "match")),
    "shaping": boolean(), "endgame": boolean(), "max_moves": integer(1, 32767), "obs_blocks": _obs_blocks,
    # PPO
    "total_timesteps": integer(1, MAX_TIMESTEPS), "learning_rate": number(0.0, 1.0, lo_open=True),
    "anneal_lr": boolean(),
    "num_envs": integer(1, 2**20), "num_steps": integer(1, 48_000), "gamma": number(0.0, 1.0),
    "gae_lambda": number(0.0, 1.0), "num_minibatches": integer(1, 2**20), "update_epochs": integer(1, 10_000),
    "norm_adv": boolean(), "clip_coef": number(0.0, 10.0, lo_open=True), "clip_vloss": boolean(),
    "ent_coef": number(0.0, 100.0),
    "vf_coef": number(0.0, 100.0), "max_grad_norm": number(0.0, 1e6, lo_open=True),
    "target_kl": optional(number(0.0, lo_open=True)), "update_shards": optional(integer(1, 64)),
    # network
    "hidden": integer(1, 4096), "embed": integer(1, 4096), "move_features": boolean(),
    "feature_prior": number(0.0, 100.0),
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
    critic input and the per-move scalars), as the rollout collector (:mod:`train.rollout`) allocates them;
    ``exact=False``: a bound above it that needs no import of the engine (observation length 1,024, 16 move
    features, critic input 1,024)."""
    M = args.max_moves
    if exact:
        from agents.features import NUM_MOVE_FEATURES, critic_state_size
        from cassino_env.obs import obs_size

        D, F, C = obs_size(num_players, num_sides, args.obs_blocks), NUM_MOVE_FEATURES, critic_state_size(num_players)
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
    rules = checked_rules(args.preset, args.num_players)
    deal_len = rules.deal_length
    if args.num_steps % deal_len:
        raise ConfigError(f"num_steps: must be a multiple of the deal length {deal_len} (rollouts hold whole "
                          f"deals), got {args.num_steps}", field="num_steps")
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



#: The trainer's command-line options: one per :class:`Args` field (``--ray ADDRESS`` for ``ray_address``, as
#: ``cassino eval``'s).
TrainOptions = options_type(Args, aliases={"ray_address": ("--ray",)},
                            config_hint="configs/ppo_PRESET.yaml for --preset PRESET, else configs/ppo_classic.yaml")


def check_options(args: Args) -> None:
    """Check every field of ``args`` and their combinations again (``Args.__post_init__`` does it when an Args is
    made; this catches one changed since, e.g. by attribute assignment).

    Raises:
        ConfigError: naming the field and the rule it breaks.
    """
    validate_fields(args, ARG_RULES)
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
