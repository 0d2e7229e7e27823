"""Expert iteration (Anthony, Tian & Barber 2017) for Cassino: a search labels every decision, the network learns it.

Usage::

    cassino exit                                     # configs/exit_classic.yaml: warm start from pretrained:classic
    cassino exit --config configs/exit_tiny.yaml     # a tiny run (seconds), as the tests run it
    cassino exit --iterations 40 --simulations 100 --target awr --temperature 0.5
    cassino exit --resume runs/RUN/checkpoints/latest.pt   # continue a run where it stopped
    cassino exit --ray auto --num-workers 4          # the labelling games on 4 Ray actors
    cassino plot RUN_DIR                             # its curve (eval/winrate_vs_advanced per iteration)

Options come from :class:`ExitArgs` (one documented field each); ``--config FILE`` reads a YAML file of the fields
that differ from its defaults (``configs/exit_classic.yaml`` when none is given) and every flag given overrides the
file, as ``cassino train`` does (:mod:`train.config`).

One iteration
-------------
1. **Games.** ``num_envs`` games are played for ``deals_per_iteration`` deals, all in one batch: self-play games (the
   current network plays every seat) and bot games at ``bot_rates`` (the network plays one side, rotating by deal,
   :func:`train.rollout.rotate_learner_side`; the split is :func:`train.rollout.split_games`'s). The
   network samples its moves (temperature 1), so the positions are the ones it reaches; with ``search_play`` > 0 it
   plays the search's best move instead in that share of its labelled decisions. With two seats the last round is
   played exactly by every seat (:func:`agents.endgame.play_endgame`, as the checkpoint agents play).
2. **Labels.** Every decision of the network's seats with more than one legal move is labelled with every legal
   move's value: in a two-seat last round exactly (``label_last_round``, :func:`train.proxy.exact_values`), elsewhere
   by the search, all the decisions of a move number at once (one
   batched search per ply over every game): ``search`` names it, ``pimc`` (:class:`agents.pimc.PIMCAgent`, flat
   Monte Carlo over sampled deals with ``rollout`` bot rollouts, ``simulations`` per decision) or ``search``
   (:class:`agents.search.SearchAgent` over the current network, rebuilt each iteration: its ``top_k`` most probable
   moves on ``simulations`` sampled lines of ``rollout`` play, scored by the network's critic after
   :data:`agents.search.DEFAULT_DEPTH` plies with two sides; the moves it does not search get the lowest searched
   value less :data:`UNSEARCHED_GAP`, :func:`searched_values`), which is expert iteration proper. A value is points of
   deal margin for the side to move (plus ``match_bonus`` when the deal ends the match). The labels of each
   iteration are written to ``RUN/labels/iter_NNNNN.npz``.
3. **Targets.** The policy is trained toward a distribution over the legal moves made from the values
   (:func:`policy_targets`): ``awr`` (the default) ``pi(a) exp((q(a) - max q) / temperature)`` normalised, where
   ``pi`` is the network as the update starts (an advantage-weighted, KL-regularised improvement step of the current
   network, as MPO's; noisy small differences of value barely move it); ``soft`` ``softmax(q / temperature)``;
   ``top`` the best move (ties shared). The loss is the cross-entropy to that target, over the last
   ``replay_iterations`` iterations' labels, ``epochs`` passes in minibatches. The critic is trained toward
   outcomes: the deal margin the labelled seat's side finally scored (times ``reward_scale``), never the search's
   values.
4. **Evaluation** (every ``eval_every`` iterations, and at the start and the end): the network alone (argmax, no
   exact last round: ``policy:checkpoint:PATH``) against each of ``eval_opponents`` over ``eval_deals`` duplicate
   deals (:func:`train.arena.evaluate_deals`), logged as ``eval/winrate_vs_<bot>`` with its Wilson interval and
   ``eval/points_vs_<bot>``, as the PPO trainer's, so ``cassino plot`` draws the curve; and, when a proxy set is
   there (:mod:`train.proxy`), its ``eval/proxy_regret`` and ``eval/proxy_top1``.
5. **Checkpoint** ``checkpoints/iter_NNNNN.pt`` (and ``latest.pt``), every ``checkpoint_every`` iterations, and
   ``final.pt``: the PPO checkpoint format (:mod:`agents.ppo_agent`), so ``checkpoint:PATH``, ``policy:checkpoint:PATH``
   and ``--resume`` read it; its ``train`` entry holds the config, the counters, the random generators' states and
   the games (they stop on a deal boundary). A resumed run reads the replay labels back from ``labels/`` and goes on
   exactly as the run would have.

The x axis of the scalars is ``global_step``: env steps (moves in all games) played so far, as PPO's.

TensorBoard scalars: ``exit/labels`` (this iteration), ``exit/labels_total``, ``exit/labels_per_s``,
``exit/search_agreement`` (share of labelled decisions where the network's most probable move is the search's best),
``exit/regret`` (mean ``max q - q(network's argmax)`` over the labels, points), ``losses/policy_loss``,
``losses/value_loss``, ``losses/entropy``, ``losses/explained_variance``, ``charts/points_vs_<bot>`` (the played
games' deal margin), ``time/label_s``, ``time/update_s``, ``time/eval_s``, and the ``eval/*`` above.

With ``--ray ADDRESS --num-workers N`` the games and their labels are made by N Ray actors, each a
:class:`LabelCollector` over ``num_envs / N`` games (the update stays here); worker 0 plays the local run's games
and draws from the driver's generator (:func:`train.rollout.worker_seeds`), so one worker is the local run.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import typing
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import tyro
import yaml

from agents.registry import MAX_SIMULATIONS
from cassino_env.errors import shown_name
from train import config
from train.config import ConfigError, boolean, integer, names, number, optional, rates, text

if typing.TYPE_CHECKING:
    import torch

    from cassino_env.rules import RuleSet

#: The policy targets :func:`policy_targets` makes (``target``).
TARGETS = ("soft", "top", "awr", "regret")
#: The heads a warm start may be given: the option naming its width, the :class:`agents.policy.NetworkShape` field,
#: and its name with an article.
HEADS = (("last_round_head", "last_round", "a last-round"), ("early_rounds_head", "early_rounds", "an earlier-rounds"))
#: What an update may move (:attr:`ExitArgs.train_params`).
TRAIN_PARAMS = ("all", "last_round_head", "early_rounds_head")
#: What a new earlier-rounds head reads (agents.policy.HEAD_INPUTS, kept here so that the config imports no torch).
HEAD_INPUTS = ("cards", "classes")
#: The labelling searches (``search``).
SEARCHES = ("pimc", "search", "none")
#: The rollout policies of the pimc search (scripted bots that step a whole batch of core states).
ROLLOUTS = ("random", "greedy", "beginner", "intermediate", "advanced")
#: The config read when no ``--config`` is given.
DEFAULT_CONFIG = config.CONFIGS_DIR / "exit_classic.yaml"
#: ``hook(iteration, policy, checkpoint) -> stop reason or None``, called after each iteration (:func:`train`).
IterationHook = typing.Callable[[int, Any, typing.Callable[[str], Path]], "str | None"]


@dataclass
class ExitArgs(config.RunOptions):
    """Expert-iteration options. These defaults are the built-in values; ``configs/exit_*.yaml`` hold the fields that
    differ from them."""

    # --- experiment ---------------------------------------------------------------------------------------------------
    exp_name: str = "exit"
    """name of the experiment, the second part of the run name"""
    max_train_seconds: float = 0.0
    """stop after the iteration during which this many wall-clock seconds of the run (resumed parts included) have
    passed (0: no limit), then save and evaluate as usual"""

    # --- Ray ----------------------------------------------------------------------------------------------------------
    ray_address: str | None = None
    """make the games and labels on Ray actors of the cluster at this address (--ray; local, auto, HOST:PORT)"""
    num_workers: int = 1
    """with ray_address: the label workers (one CPU each); must divide num_envs; 1 without ray_address"""

    # --- games --------------------------------------------------------------------------------------------------------
    preset: str = "classic"
    """rule preset (docs/rules.md 6)"""
    num_players: int | None = None
    """seats per game; None (null in a config file), the built-in default: the preset's first allowed count (2, or 4
    for cicera)"""
    num_envs: int = 256
    """games played (and searched) together each iteration"""
    deals_per_iteration: int = 2
    """deals every game plays per iteration"""
    bot_rates: dict[str, float] = field(default_factory=lambda: {"advanced": 0.25, "intermediate": 0.1})
    """share of games per bot opponent (agents.registry specs); the rest are self-play"""
    network_last_round: bool = False
    """the network plays its own last round (sampled from its policy), so the last round's labels are of the
    positions the network alone reaches; false: it plays that round exactly, as the shipped agents do"""
    search_play: float = 0.0
    """share of the network's labelled decisions where the search's best move is played instead of the network's
    sample (0: the games follow the network)"""
    max_moves: int = 64
    """width of the env's move table"""

    # --- the labelling search -----------------------------------------------------------------------------------------
    search: str = "pimc"
    """the search that labels the decisions: pimc (agents.pimc.PIMCAgent, every legal move), search
    (agents.search.SearchAgent over the current network: its top_k most probable moves, critic leaves with two
    sides), or none (only the exact last-round labels of label_last_round)"""
    simulations: int = 100
    """rollouts per labelled decision, spread over its legal moves (search: over its top_k candidates)"""
    top_k: int = 4
    """search=search: the candidate moves searched, the network's most probable; the other legal moves get the
    lowest searched value less 0.001 point (UNSEARCHED_GAP)"""
    min_samples: int = 4
    """at least this many sampled deals per labelled decision"""
    rollout: str = "advanced"
    """the search's rollout policy: random, greedy, beginner, intermediate or advanced"""
    match_bonus: float = 10.0
    """points added to (taken from) a rollout that ends the match won (lost)"""
    label_last_round: bool = True
    """two seats: label the last round's decisions too, with every move's exact value (train.proxy.exact_values:
    the move played, the rest of the deal solved); the shipped agents solve that round, the network alone
    (policy:SPEC) plays it"""
    label_from_round: int = 1
    """label only the decisions of this round of each deal and the later ones (1: every round; docs/rules.md 3):
    the games are still played from the deal's start, so the search's time goes to the rounds where the network
    is furthest from its labels (in classic, 5: the last round before the last)"""

    # --- learning -----------------------------------------------------------------------------------------------------
    init: str | None = "pretrained:classic"
    """warm start: the network of this checkpoint (checkpoint:PATH or pretrained:NAME); null: a fresh network"""
    iterations: int = 20
    """iterations to run (games + labels + update each); 0: play no games, train ``epochs`` passes over
    extra_labels alone (offline; the learning rate annealed over the passes with anneal_lr) and save final.pt"""
    target: str = "awr"
    """policy target from the move values: awr (the network as the update starts times exp((q - max q) /
    temperature), normalised), soft (softmax(q / temperature)), top (the best move) or regret (the policy's expected
    regret in points, plus 0.1 times the cross-entropy to the best move); docs/expert_iteration.md gives what each
    did"""
    temperature: float = 0.5
    """points per unit of logit of the soft and awr targets"""
    replay_iterations: int = 4
    """train on the labels of this many latest iterations"""
    extra_labels: tuple[str, ...] = ()
    """label files (iter_N.npz) or folders of them (an earlier run's labels/) added to every update's data (with
    iterations 0, the whole of it)"""
    holdout_labels: tuple[str, ...] = ()
    """label files or folders never trained on: the network's regret and agreement on them are printed (and logged)
    at every evaluation, to compare networks on decisions none of them learnt from"""
    augment_suits: bool = False
    """train on every label twice: as played, and with the cards relabelled by the preset's suit symmetry (clubs and
    hearts swapped: standard and bga scoring treat them alike, docs/rules.md 5.1-5.2; cassino_env.symmetry), which
    doubles the labels an update sees at no search cost; cicera's scoring (J of hearts) has none"""
    epochs: int = 4
    """passes over the replay labels per iteration (0: no update; the run makes labels only, with the init network)"""
    minibatch_size: int = 512
    """labels per gradient step"""
    learning_rate: float = 1e-4
    """Adam learning rate"""
    anneal_lr: bool = False
    """decay the learning rate linearly to 0 over the iterations (as cassino train's anneal_lr)"""
    vf_coef: float = 0.5
    """weight of the value loss"""
    ent_coef: float = 0.0
    """entropy bonus coefficient"""
    max_grad_norm: float = 0.5
    """global gradient-norm clip"""
    reward_scale: float = 0.1
    """the critic's target is the deal margin (points) times this, as PPO's"""
    train_params: str = "all"
    """what the update moves: all (the whole network and its critic), last_round_head (the last-round head alone:
    the rest, and so the network's play before the last round, stays as it was) or early_rounds_head (the
    earlier-rounds head alone: the network's play in the last round, and its critic, stay as they were)"""
    last_round_head: int = 0
    """give the starting network a last-round head of this width (agents.policy.add_last_round_head: it scores the
    moves where the stock is empty, and starts at 0, so the network plays as before until it is trained); 0: none (a
    network that has one keeps it)"""
    early_rounds_head: int = 0
    """give the starting network an earlier-rounds head of this width (agents.policy.add_early_rounds_head: it scores
    the moves where the stock is not empty, and starts at 0); 0: none (a network that has one keeps it)"""
    early_rounds_input: str = "cards"
    """what a new earlier-rounds head reads: cards (each card by its id) or classes (cards summed by suit class: a
    spade per rank, 10D, the other cards rank by rank, which the scoring treats alike,
    cassino_env.symmetry.card_classes; every label then teaches each position alike up to those suits; not with
    cicera's in-play bonuses)"""
    fresh_early_rounds_head: bool = False
    """with early_rounds_head: drop the init network's earlier-rounds head, if it has one, and give it a new one of
    that width and early_rounds_input (e.g. a head that reads card classes on pretrained:classic, whose head reads
    cards); without it a network that has a head keeps it"""

    # --- network (a fresh network; a warm start takes the checkpoint's shape) -----------------------------------------
    hidden: int = 128
    """width of the observation torso"""
    embed: int = 64
    """width of the move embeddings and scorer"""

    # --- evaluation and checkpoints -----------------------------------------------------------------------------------
    eval_every: int = 1
    """iterations (passes, with iterations 0) between evaluations of the network alone (0: only at the start and
    the end)"""
    eval_deals: int = 200
    """duplicate deals per evaluation and opponent"""
    eval_opponents: tuple[str, ...] = ("advanced",)
    """bots the network alone is evaluated against during the run"""
    proxy: str | None = "auto"
    """proxy set scored at every evaluation (train.proxy): a file, auto (the preset's default file when it exists) or
    null (none)"""
    checkpoint_every: int = 1
    """iterations between checkpoints (checkpoints/iter_N.pt, copied to latest.pt; with iterations 0, passes
    between checkpoints/pass_N.pt; 0: only final.pt)"""
    final_eval_deals: int = 0
    """deals per opponent of the match table after the run (train.evaluate; 0: skip)"""
    final_eval_opponents: tuple[str, ...] = ("advanced",)
    """the agents the final checkpoint is evaluated against"""

    def __post_init__(self) -> None:
        config.validate_fields(self, EXIT_RULES)
        _check_combination(self)


def _bot_spec(name: str, spec: str) -> None:
    """An agent spec checked by the registry (``agents.registry.check_spec``: names, budgets, nesting, the form of
    an import path); ``make_agent`` builds it when the run starts."""
    from agents.registry import AgentSpecError, check_spec

    try:
        check_spec(spec)
    except AgentSpecError as exc:
        raise ConfigError(f"{name}: {exc}", field=name) from None


#: The rule of every :class:`ExitArgs` field.
EXIT_RULES: dict[str, config.FieldRule] = {
    "exp_name": text(no_slash=True), "seed": integer(0, 2**63 - 1), "threads": integer(1, 1024),
    "run_dir": optional(text()), "runs_root": text(), "resume": optional(text()), "reuse_run_dir": boolean(),
    "max_train_seconds": number(0.0), "ray_address": optional(text()), "num_workers": integer(1, 4096),
    "preset": text(), "num_players": optional(integer(1)), "num_envs": integer(1, 2**20),
    "deals_per_iteration": integer(1, 10_000), "bot_rates": rates(_bot_spec), "search_play": number(0.0, 1.0),
    "max_moves": integer(1, 32767), "search": text(SEARCHES), "simulations": integer(1, MAX_SIMULATIONS),
    "top_k": integer(1, 64), "min_samples": integer(1, 10**6), "rollout": text(ROLLOUTS), "match_bonus": number(0.0),
    "label_last_round": boolean(), "label_from_round": integer(1, 52),
    "init": optional(text()), "iterations": integer(0, 10**6), "target": text(TARGETS),
    "temperature": number(0.0, lo_open=True), "replay_iterations": integer(1, 10_000),
    "extra_labels": names(), "holdout_labels": names(), "augment_suits": boolean(), "epochs": integer(0, 10_000),
    "minibatch_size": integer(1, 2**24), "learning_rate": number(0.0, lo_open=True),
    "anneal_lr": boolean(), "vf_coef": number(0.0),
    "ent_coef": number(0.0), "max_grad_norm": number(0.0, lo_open=True), "reward_scale": number(0.0, lo_open=True),
    "train_params": text(TRAIN_PARAMS), "last_round_head": integer(0, 4096), "network_last_round": boolean(),
    "early_rounds_head": integer(0, 4096), "early_rounds_input": text(HEAD_INPUTS),
    "fresh_early_rounds_head": boolean(),
    "hidden": integer(1, 4096), "embed": integer(1, 4096), "eval_every": integer(0), "eval_deals": integer(1, 100_000),
    "eval_opponents": names(_bot_spec), "proxy": optional(text()), "checkpoint_every": integer(0),
    "final_eval_deals": integer(0), "final_eval_opponents": names(_bot_spec),
}


def _check_combination(args: ExitArgs) -> None:
    n = config.checked_rules(args.preset, args.num_players).num_players
    if sum(args.bot_rates.values()) > 1 + 1e-9:
        raise ConfigError(f"bot_rates add up to {sum(args.bot_rates.values()):g}: at most 1", field="bot_rates")
    if args.search == "search":
        from agents.search import ROLLOUTS as SEARCH_ROLLOUTS

        if args.rollout not in SEARCH_ROLLOUTS:
            raise ConfigError(f"rollout {args.rollout!r}: search=search plays its lines with one of "
                              f"{', '.join(r for r in SEARCH_ROLLOUTS if r != 'net')}", field="rollout")
    if args.iterations:  # what would be labelled (an offline run, iterations 0, labels nothing)
        rpd = config.checked_rules(args.preset, args.num_players).rounds_per_deal
        if args.label_from_round > rpd:
            raise ConfigError(f"label_from_round={args.label_from_round}: a deal of {args.preset} with {n} players has "
                              f"{rpd} rounds", field="label_from_round")
        if args.label_from_round == rpd and not args.label_last_round and n == 2:
            raise ConfigError(f"label_from_round={rpd} is the last round, which label_last_round=false leaves "
                              "unlabelled: no decision would be labelled", field="label_from_round")
        if args.search == "none" and not args.label_last_round:
            raise ConfigError("search=none labels only the exact last round: it needs label_last_round", field="search")
        if args.search == "none" and n != 2:
            raise ConfigError(f"search=none labels only a two-seat last round (exactly); with num_players={n} it would "
                              "label nothing", field="search")
        if args.network_last_round and n != 2:
            raise ConfigError(f"network_last_round: only a two-seat last round is played exactly (the default it "
                              f"changes); with num_players={n} the network plays every round already",
                              field="network_last_round")
        if args.train_params == "last_round_head" and n == 2 and not args.label_last_round:
            raise ConfigError("train_params=last_round_head: with two seats every last-round decision is labelled "
                              "exactly or not at all, so the head needs label_last_round", field="train_params")
        if args.train_params == "early_rounds_head" and args.search == "none":
            raise ConfigError("train_params=early_rounds_head: search=none labels only the last round, which the "
                              "earlier-rounds head does not play (give search: search or pimc)", field="train_params")
        if args.early_rounds_head and args.search == "none":
            raise ConfigError(f"early_rounds_head={args.early_rounds_head}: search=none labels only the last round, so "
                              "no label would reach the earlier-rounds head (give search: search or pimc, or leave "
                              "early_rounds_head out: a network that has the head keeps it)", field="early_rounds_head")
    if args.fresh_early_rounds_head and not args.early_rounds_head:
        raise ConfigError("fresh_early_rounds_head: it replaces the init network's earlier-rounds head by a new one; "
                          "give early_rounds_head its width", field="fresh_early_rounds_head")
    if args.early_rounds_input != "cards":
        if not args.early_rounds_head:
            raise ConfigError(f"early_rounds_input={args.early_rounds_input}: it is what a new earlier-rounds head "
                              "reads; give early_rounds_head a width too", field="early_rounds_input")
        from cassino_env.symmetry import SymmetryError, card_classes

        try:
            card_classes(config.checked_rules(args.preset, args.num_players))
        except SymmetryError as exc:
            raise ConfigError(f"early_rounds_input=classes: {exc}", field="early_rounds_input") from None
    if args.augment_suits:
        from cassino_env.symmetry import suit_permutations

        rules = config.checked_rules(args.preset, args.num_players)
        if not suit_permutations(rules):
            raise ConfigError(f"augment_suits: preset {rules.preset!r} scores with {rules.scoring!r}, which names a "
                              "card of every suit but clubs (spades, 10D, JH: docs/rules.md 5.3), so no two suits "
                              "score alike: it has no suit symmetry to augment with", field="augment_suits")
    if args.iterations == 0 and not (args.extra_labels and args.epochs):
        raise ConfigError("iterations=0 plays no games and trains on extra_labels alone: give extra_labels (label "
                          "files or an earlier run's labels/ folder) and epochs of at least 1", field="iterations")
    if args.num_workers > 1 and args.ray_address is None:
        raise ConfigError(f"num_workers={args.num_workers}: label workers are Ray actors; give ray_address (--ray) "
                          "too", field="num_workers")
    if args.num_envs % args.num_workers:
        raise ConfigError(f"num_workers={args.num_workers} must divide num_envs={args.num_envs}", field="num_workers")


# ----------------------------------------------------------------------------------------------------------------------
# Labels
# ----------------------------------------------------------------------------------------------------------------------
#: Each label array's dtype and its shape after the N rows: "W" the move columns, "D" the observation length, "F"
#: the move features, "C" the separate critic's extra input (:class:`Labels`).
LABEL_ARRAYS: dict[str, tuple[str, tuple[str, ...]]] = {
    "obs": ("float32", ("D",)), "kind": ("int8", ("W",)), "card": ("int8", ("W",)), "value": ("int8", ("W",)),
    "cards": ("int64", ("W",)), "mask": ("bool", ("W",)), "feat": ("float32", ("W", "F")),
    "crit": ("float32", ("C",)), "q": ("float32", ("W",)), "prior": ("float32", ("W",)), "ret": ("float32", ()),
}


#: Per-label arrays of :class:`Labels`, in file order.
LABEL_ROWS = tuple(LABEL_ARRAYS)
#: The label file's record of its rules (a 0-d string array: the JSON of :meth:`RuleSet.to_dict`).
LABEL_RULES = "rules"


@dataclass
class Labels:
    """The labelled decisions of one iteration: N rows, ``W`` move columns (the widest legal list among them; the
    legal moves are the first columns of each row).

    Attributes:
        obs: float32[N, D]. kind, card, value: int8[N, W], the move table (-1 past the legal moves for kind and card).
        cards: int64[N, W], card bit sets. mask: bool[N, W], the legal moves. feat: float32[N, W, F] or None.
        crit: float32[N, C] or None, the full state the separate critic reads.
        q: float32[N, W], the search's value of each legal move (points; NaN past them).
        prior: float32[N, W], the network's probabilities when it played (for the awr target).
        ret: float32[N], the deal margin the seat's side scored in the end (points, unscaled).
        points: dict, bot name -> float64[E], the network's side's deal margins in games against that bot.
        label_s: seconds spent searching.
    """

    obs: np.ndarray
    kind: np.ndarray
    card: np.ndarray
    value: np.ndarray
    cards: np.ndarray
    mask: np.ndarray
    feat: np.ndarray | None
    crit: np.ndarray | None
    q: np.ndarray
    prior: np.ndarray
    ret: np.ndarray
    points: dict[str, np.ndarray] = field(default_factory=dict)
    label_s: float = 0.0

    def __len__(self) -> int:
        return len(self.ret)

    def save(self, path: Path, rules: RuleSet | None = None) -> None:
        """Write the rows to ``path`` (npz, atomically); with ``rules``, also the rule set they were played under
        (an array ``rules``: the JSON of :meth:`cassino_env.rules.RuleSet.to_dict`), which :meth:`load` checks."""
        from agents.ppo_agent import atomic_write

        arrays = {k: getattr(self, k) for k in LABEL_ROWS if getattr(self, k) is not None}
        if rules is not None:
            arrays[LABEL_RULES] = np.array(json.dumps(rules.to_dict(), sort_keys=True))
        atomic_write(path, lambda f: np.savez(f, **arrays))

    @staticmethod
    def load(path: Path, shape: Any = None, field: str = "labels", rules: RuleSet | None = None) -> Labels:
        """Read :meth:`save`'s file; with ``shape`` (the network's :class:`agents.policy.NetworkShape`) its arrays
        are checked first (:func:`check_label_file`); with ``rules``, a file that records other rules is refused
        (files written before the record was added, or without ``rules``, record none and are not checked).

        Raises:
            ConfigError: naming ``field`` and the file, one that cannot be read, does not fit ``shape``, or holds
                labels of other rules than ``rules``.
        """
        if shape is not None:
            check_label_file(path, shape, field)
        try:
            with np.load(path, allow_pickle=False) as z:
                rows = {k: (z[k] if k in z.files else None) for k in LABEL_ROWS}
                recorded = str(z[LABEL_RULES][()]) if LABEL_RULES in z.files else None
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise ConfigError(f"{field}: {path}: not a readable label file: {exc}", field=field) from None
        if rules is not None and recorded is not None:
            from cassino_env.rules import make_rules

            try:
                theirs = json.loads(recorded)
                if not isinstance(theirs, dict):
                    raise TypeError(f"a JSON {type(theirs).__name__}, not an object of rule switches")
                other = make_rules(theirs)
            except (ValueError, TypeError, RecursionError) as exc:
                raise ConfigError(f"{field}: {path}: its rules record is not a rule set: {str(exc)[:200]}",
                                  field=field) from None
            if other != rules:
                ours, differ = rules.to_dict(), other.to_dict()
                switch = next((k for k in ours if ours[k] != differ.get(k)), "preset")
                raise ConfigError(f"{field}: {path} holds labels of {other.preset} with {other.num_players} players"
                                  + (f" ({switch}={differ.get(switch)!r}, this run {ours[switch]!r})"
                                     if (other.preset, other.num_players) == (rules.preset, rules.num_players)
                                     else "")
                                  + f"; this run plays {rules.preset} with {rules.num_players} players", field=field)
        return Labels(**rows)


def check_label_file(path: Path, shape: Any, field: str) -> None:
    """Check a label file (:meth:`Labels.save`) against the network that will train on it, from the arrays'
    headers alone (nothing is loaded): a zip of ``.npy`` arrays, every array of :data:`LABEL_ARRAYS` the network
    needs (``feat`` with move features, ``crit`` with a full-state critic) with its dtype, the same N rows, the same
    move columns, and the network's observation length, feature count and critic input.

    Raises:
        ConfigError: naming ``field``, the file and the array.
    """
    def bad(problem: str) -> ConfigError:
        return ConfigError(f"{field}: {path}: {problem}", field=field)

    heads: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    try:
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                name = info.filename.removesuffix(".npy")
                if name not in LABEL_ARRAYS:
                    continue
                with z.open(info) as f:
                    version = np.lib.format.read_magic(f)
                    if version == (1, 0):
                        shp, _, dtype = np.lib.format.read_array_header_1_0(f)
                    else:
                        shp, _, dtype = np.lib.format.read_array_header_2_0(f)
                heads[name] = (tuple(shp), np.dtype(dtype))
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise bad(f"not a label file (a .npz of the arrays {', '.join(LABEL_ARRAYS)}): {exc}") from None
    sizes = {"D": shape.obs_dim, "F": shape.move_features, "C": shape.critic_dim}
    need = [k for k in LABEL_ARRAYS if not (k == "feat" and not sizes["F"]) and not (k == "crit" and not sizes["C"])]
    missing = [k for k in need if k not in heads]
    if missing:
        raise bad(f"array {missing[0]!r} is missing (a label file holds {', '.join(need)})")
    n = heads["ret"][0][0] if len(heads["ret"][0]) == 1 else None
    width = heads["mask"][0][1] if len(heads["mask"][0]) == 2 else None
    for k in need:
        dtype, dims = LABEL_ARRAYS[k]
        want = (n, *[width if d == "W" else sizes[d] for d in dims])
        got, got_dtype = heads[k]
        if n is None or width is None or got != want or got_dtype != np.dtype(dtype):
            what = {"D": f"the network's observation length {sizes['D']}", "F": f"its {sizes['F']} move features",
                    "C": f"its critic's {sizes['C']} full-state inputs"}
            fits = ", ".join(what[d] for d in dims if d in what)
            raise bad(f"array {k!r} is {got_dtype} {got}, the network needs {dtype} {want}"
                      + (f" ({fits}: labels of another preset, player count or network?)" if fits else ""))


def label_files(paths: typing.Iterable[str], field: str = "extra_labels") -> list[Path]:
    """Label files given as files, or as folders of ``iter_*.npz`` files (in name order).

    Raises:
        ConfigError: naming ``field``, a path that is neither.
    """
    out: list[Path] = []
    for p in map(Path, paths):
        files = (sorted(p.glob("iter_*.npz")) if config.looked_at(p.is_dir)
                 else [p] if config.looked_at(p.is_file) else [])
        if not files:
            raise ConfigError(f"{field}: {shown_name(p)} is neither a label file nor a folder of iter_*.npz "
                              "files", field=field)
        out.extend(files)
    return out


def load_label_paths(paths: typing.Iterable[str], shape: Any = None, rules: RuleSet | None = None) -> list[Labels]:
    """The :class:`Labels` of label files, or of every ``iter_*.npz`` in folders, in name order; with ``shape``
    each is checked against that network (:func:`check_label_file`), with ``rules`` against the run's rules (the
    files' own record, :meth:`Labels.load`).

    Raises:
        ConfigError: naming ``extra_labels``, a path that is neither, or a file that is not a label file fitting
            ``shape`` or ``rules``.
    """
    return [Labels.load(f, shape, "extra_labels", rules) for f in label_files(paths)]


def load_joined_labels(paths: typing.Iterable[str], shape: Any = None, rules: RuleSet | None = None,
                       field: str = "extra_labels") -> Labels | None:
    """The rows of label files (or folders of them, as :func:`load_label_paths`) in one :class:`Labels`, as
    :func:`join_labels` of them would be, but filled file by file into arrays made once: the memory it takes is
    the joined rows' and one file's (a million labels of the classic network are about 6 GB), not twice the
    rows'. None when ``paths`` is empty. With ``shape`` (the network that will train on them), ``feat`` and
    ``crit`` are kept only where the network reads them, so files made by networks with and without a separate
    critic join; without it, the files must agree on which of the two they hold.

    Raises:
        ConfigError: naming ``field``, as :func:`load_label_paths`; also a file named twice (directly or through
            its folder), files that hold no labels at all (0 rows), and, without ``shape``, files that disagree on
            which arrays they hold or lack one every label file has.
    """
    files = label_files(paths, field)
    if not files:
        return None
    seen: dict[Path, Path] = {}
    for f in files:
        first = seen.setdefault(f.resolve(), f)
        if first is not f:
            raise ConfigError(f"{field}: {shown_name(f)} is named twice (its labels would count twice)", field=field)
    heads = []
    for f in files:  # the headers first: nothing is allocated for files that would be refused
        if shape is not None:
            check_label_file(f, shape, field)
        try:
            with np.load(f, allow_pickle=False) as z:
                heads.append((z["mask"].shape, {k for k in LABEL_ROWS if k in z.files}))
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
            raise ConfigError(f"{field}: {f}: not a readable label file: {exc}", field=field) from None
    optional = {"feat", "crit"}
    if shape is not None:  # the arrays this network reads (check_label_file checked that each file has them)
        keep = {k for k in LABEL_ROWS if k not in optional}
        keep |= {"feat"} if shape.move_features else set()
        keep |= {"crit"} if shape.critic_dim else set()
    else:
        keep = heads[0][1]
        for f, (_, has) in zip(files, heads, strict=True):
            if has != keep:
                k = sorted(has ^ keep)[0]
                raise ConfigError(f"{field}: {f}: array {k!r} is " + ("missing" if k in keep else "there")
                                  + f", unlike in {files[0]}", field=field)
        lacking = sorted(k for k in LABEL_ROWS if k not in optional and k not in keep)
        if lacking:
            raise ConfigError(f"{field}: {files[0]}: array {lacking[0]!r} is missing (every label file has "
                              f"{', '.join(k for k in LABEL_ROWS if k not in optional)})", field=field)
    n = sum(m for (m, _), _ in heads)
    if n == 0:
        more = len(files) - 1
        named = shown_name(files[0]) + (f" and {more} more file{'s' if more > 1 else ''} hold" if more else " holds")
        raise ConfigError(f"{field}: {named} no labels (0 rows)", field=field)
    width = max(w for (m, w), _ in heads if m)
    rows: dict[str, Any] = dict.fromkeys(LABEL_ROWS)
    points: dict[str, list[np.ndarray]] = {}
    at, label_s = 0, 0.0
    for f, ((m, w), _) in zip(files, heads, strict=True):
        part = Labels.load(f, None, field, rules)
        if len(part) != m or part.mask.shape[1] != w:
            raise ConfigError(f"{field}: {f}: its arrays disagree on the rows or move columns", field=field)
        for k in keep:
            a = getattr(part, k)
            if rows[k] is None:
                cols = (width, *a.shape[2:]) if k in _FILL else a.shape[1:]
                rows[k] = np.empty((n, *cols), dtype=a.dtype)
            if k in _FILL:
                rows[k][at:at + m, :w] = a
                rows[k][at:at + m, w:] = _FILL[k]
            else:
                rows[k][at:at + m] = a
        for name, v in part.points.items():
            points.setdefault(name, []).append(v)
        at += m
        label_s = max(label_s, part.label_s)
    return Labels(**rows, points={k: np.concatenate(v) for k, v in points.items()}, label_s=label_s)


def _pad(a: np.ndarray, width: int, fill: Any) -> np.ndarray:
    if a.shape[1] == width:
        return a
    pad = [(0, 0), (0, width - a.shape[1])] + [(0, 0)] * (a.ndim - 2)
    return np.pad(a, pad, constant_values=fill)


_FILL = {"kind": -1, "card": -1, "value": 0, "cards": 0, "mask": False, "feat": 0.0, "q": np.nan, "prior": 0.0}


def join_labels(parts: list[Labels]) -> Labels:
    """One :class:`Labels` of several (rows concatenated, the move columns padded to the widest)."""
    parts = [p for p in parts if len(p)] or parts[:1]
    width = max(p.mask.shape[1] for p in parts)
    rows: dict[str, Any] = {}
    for k in LABEL_ROWS:
        if getattr(parts[0], k) is None:
            rows[k] = None
        elif k in _FILL:
            rows[k] = np.concatenate([_pad(getattr(p, k), width, _FILL[k]) for p in parts])
        else:
            rows[k] = np.concatenate([getattr(p, k) for p in parts])
    points: dict[str, list[np.ndarray]] = {}
    for p in parts:
        for name, v in p.points.items():
            points.setdefault(name, []).append(v)
    return Labels(**rows, points={k: np.concatenate(v) for k, v in points.items()},
                  label_s=max(p.label_s for p in parts))


def mirror_labels(data: Labels, perm: np.ndarray, num_players: int, num_sides: int) -> Labels:
    """The same decisions with every card ``c`` relabelled ``perm[c]`` (a suit symmetry of the rules,
    :func:`cassino_env.symmetry.suit_permutations`): the observations (the default blocks), the moves' cards and card
    sets and the critic's full state are relabelled; the move values, the move features, the prior and the outcome stay
    (the symmetry keeps them; tests/test_symmetry.py checks the observations and features against the env's).

    Args:
        data: N labelled decisions. perm: int64[52], a card permutation.
        num_players, num_sides: of the rules the labels were made under (the observation's layout).
    """
    from cassino_env.symmetry import permute_card_blocks, permute_card_ids, permute_card_sets, permute_observation

    crit = None if data.crit is None else permute_card_blocks(data.crit, perm, data.crit.shape[1] // 52)
    return Labels(obs=permute_observation(data.obs, perm, num_players, num_sides), kind=data.kind,
                  card=permute_card_ids(data.card, perm), value=data.value, cards=permute_card_sets(data.cards, perm),
                  mask=data.mask, feat=data.feat, crit=crit, q=data.q, prior=data.prior, ret=data.ret,
                  points=dict(data.points), label_s=data.label_s)


def augmented(data: Labels, rules: RuleSet) -> Labels:
    """``data`` followed by its copy under each of the rules' suit symmetries (``augment_suits``)."""
    from cassino_env.symmetry import suit_permutations

    perms = suit_permutations(rules)
    copies = [mirror_labels(data, p, rules.num_players, rules.num_sides) for p in perms]
    for c in copies:
        c.points = {}  # the games' margins against each bot are counted once, with the labels as played
    return join_labels([data, *copies])


def policy_targets(q: np.ndarray, mask: np.ndarray, prior: np.ndarray, target: str, temperature: float) -> np.ndarray:
    """float32[N, W]: the distribution over each row's legal moves the policy is trained toward.

    Args:
        q: float[N, W], move values in points (NaN past the legal moves).
        mask: bool[N, W], the legal moves.
        prior: float[N, W], the behaviour policy's probabilities (``awr`` only).
        target: ``soft`` (``softmax(q / temperature)``), ``top`` (the best moves, ties sharing equally; also the
            cross-entropy part of ``regret``, :func:`update`) or ``awr`` (``prior * exp((q - max q) / temperature)``,
            normalised; the prior floored at 1e-3 so a move the network never plays can still be learned).
        temperature: points per unit of logit (soft, awr).

    >>> q = np.array([[1.0, 0.0, np.nan]]); m = np.array([[True, True, False]])
    >>> policy_targets(q, m, np.full((1, 3), 0.5), "top", 1.0).tolist()
    [[1.0, 0.0, 0.0]]
    >>> [round(float(x), 3) for x in policy_targets(q, m, np.full((1, 3), 0.5), "soft", 1.0)[0]]
    [0.731, 0.269, 0.0]

    Raises:
        ValueError: an unknown ``target``.
    """
    if target not in TARGETS:
        raise ValueError(f"target must be one of {', '.join(TARGETS)}, got {target!r}")
    qv = np.where(mask, np.nan_to_num(q, nan=0.0), -np.inf)
    best = qv.max(axis=1, keepdims=True)
    if target in ("top", "regret"):
        w = (mask & (qv >= best - 1e-9)).astype(np.float64)
    else:
        w = np.where(mask, np.exp((qv - best) / temperature), 0.0)
        if target == "awr":
            w = w * np.where(mask, np.maximum(prior, 1e-3), 0.0)
    return (w / w.sum(axis=1, keepdims=True)).astype(np.float32)


#: Seconds between the progress lines of a local run's labelling (an iteration of the default config takes minutes).
PROGRESS_SECONDS = 30.0
#: Points below the lowest searched candidate given to the legal moves ``search=search`` does not search.
UNSEARCHED_GAP = 1e-3


def searched_values(searcher: Any, obs: dict[str, Any], rng: np.random.Generator) -> list[np.ndarray]:
    """Every legal move's value by a :class:`agents.search.SearchAgent` (``exact`` off), one float64 array per game of
    ``obs`` (each with more than one legal move; points for the side to move): the searched candidates' mean
    outcomes, the legal moves it did not search the lowest of those less :data:`UNSEARCHED_GAP` (no move is
    credited with a value it was not measured to have, and a tie of the candidates never makes an unsearched move
    a best one, for ``target: top`` and ``search_play``)."""
    mask = np.asarray(obs["action_mask"]) != 0
    searcher._trace = []
    try:
        searcher.act(obs, rng)
        trace = searcher._trace
    finally:
        searcher._trace = None
    order = np.concatenate([_pad(o, mask.shape[1], -1) for o, _ in trace])
    means = np.concatenate([_pad(m, mask.shape[1], -np.inf) for _, m in trace])
    if len(order) != len(mask):
        raise RuntimeError(f"the search traced {len(order)} decisions of {len(mask)}")
    out = []
    for r in range(len(mask)):
        n = int(mask[r].sum())
        done = np.isfinite(means[r])
        v = np.full(n, means[r][done].min() - UNSEARCHED_GAP)
        v[order[r][done]] = means[r][done]
        out.append(v)
    return out


class LabelCollector:
    """The games of one collector (the local run's, or one Ray worker's) and the labelling search.

    Args:
        args: the run's options.
        rules: its rules.
        num_envs: games of this collector.
        env_seed: the seed of its games.
        ctrl: int64[num_envs], each game's controller (``SELF`` or 2 + bot index,
            :func:`train.rollout.split_games`); None: the split of ``num_envs`` games.
    """

    def __init__(self, args: ExitArgs, rules: RuleSet, num_envs: int, env_seed: int,
                 ctrl: np.ndarray | None = None) -> None:
        from agents.features import MoveFeaturizer
        from agents.pimc import PIMCAgent
        from cassino_env.obs import obs_layout
        from cassino_env.vector import CassinoVectorEnv
        from train.rollout import make_bots, split_games

        self.args, self.rules = args, rules
        self.B, self.P, self.S = num_envs, rules.num_players, rules.num_sides
        self.deal_len = rules.deal_length
        self.side_of_seat = np.arange(self.P) % self.S
        self.bot_names = list(args.bot_rates)
        self.bots = make_bots(self.bot_names, rules)
        self.env = CassinoVectorEnv(num_envs, rules, seed=env_seed, max_moves=args.max_moves, reward="points",
                                    episode="deal", with_view=True)
        self.obs, _ = self.env.reset()
        self.featurizer = MoveFeaturizer(rules)
        self.rounds_entry = obs_layout(self.P, self.S)["progress"][0] + 1  # rounds dealt / rounds per deal
        self.search = PIMCAgent(rules, simulations=args.simulations, min_samples=args.min_samples,
                                rollout=args.rollout, match_bonus=args.match_bonus)
        self.ctrl = split_games(num_envs, 0.0, args.bot_rates) if ctrl is None else np.asarray(ctrl, np.int64)
        self.games = np.arange(num_envs)

    def search_over(self, policy: Any) -> Any:
        """``search=search``'s labeller: :class:`agents.search.SearchAgent` over ``policy`` (its defaults: critic leaves
        with two sides, read in points through ``reward_scale``, the scale the critic is trained at), ``simulations``
        and ``top_k`` as given, the last round left to ``label_last_round``."""
        from agents.ppo_agent import PPOAgent
        from agents.search import SearchAgent

        a = self.args
        return SearchAgent(self.rules, PPOAgent(policy, rules=self.rules), simulations=a.simulations, top_k=a.top_k,
                           min_samples=a.min_samples, rollout=a.rollout, match_bonus=a.match_bonus, exact=False,
                           value_scale=a.reward_scale)

    def env_state(self) -> dict[str, torch.Tensor]:
        """The games' state (``train.env_state`` of a checkpoint)."""
        from train.rollout import env_state

        return env_state(self.env)

    def load_env_state(self, saved: dict[str, torch.Tensor]) -> None:
        """Restore :meth:`env_state`."""
        from train.rollout import restore_env_state

        restore_env_state(self.env, saved)
        self.obs = self.env.observe()

    def round_of(self, obs: dict[str, Any]) -> np.ndarray:
        """int64[N]: the round of the deal each row of ``obs`` is in (1 to ``rules.rounds_per_deal``), read off the
        observation's ``progress`` block (rounds dealt / rounds per deal)."""
        rpd = self.rules.rounds_per_deal
        return np.rint(np.asarray(obs["observation"])[:, self.rounds_entry] * rpd).astype(np.int64)

    def collect(self, policy: Any, rng: np.random.Generator, deals_done: int, progress: float = 0.0) -> Labels:
        """Play ``deals_per_iteration`` deals in every game, label the network's decisions (module docstring);
        ``progress`` > 0: print a line at most every that many seconds (the move reached, labels so far, their
        rate)."""
        import torch

        from agents.base import slice_obs
        from agents.endgame import play_endgame
        from agents.features import critic_state
        from agents.policy import MoveBatch, sample_actions
        from cassino_env.endgame import solvable
        from train.proxy import exact_values
        from train.rollout import SELF, rotate_learner_side

        args, env, B, S = self.args, self.env, self.B, self.S
        is_self = self.ctrl == SELF
        use_crit = policy.shape.critic_dim > 0
        parts: list[dict[str, Any]] = []
        points: dict[str, list[np.ndarray]] = {}
        label_s = 0.0
        obs = self.obs
        policy.eval()
        searcher = self.search_over(policy) if args.search == "search" else None
        t_start = t_said = time.time()
        n_labels = 0
        for d in range(args.deals_per_iteration):
            learner_side = rotate_learner_side(self.games, deals_done + d, S)
            deal_return = np.zeros((B, self.P))
            rec_game: list[np.ndarray] = []
            rec_seat: list[np.ndarray] = []
            start = len(parts)
            for move in range(self.deal_len):
                cp = obs["current_player"].astype(np.int64)
                mine = np.flatnonzero(is_self | (self.side_of_seat[cp] == learner_side))
                actions = np.zeros(B, dtype=np.int64)
                sub = slice_obs(obs, mine)
                feats = self.featurizer(sub)
                with torch.no_grad():
                    logits = policy.logits(MoveBatch.from_obs(sub, feats))
                actions[mine] = sample_actions(logits, rng)
                probs = torch.softmax(logits, dim=-1).numpy()
                for c in np.unique(self.ctrl[~np.isin(self.games, mine)]):
                    rows_c = np.flatnonzero((self.ctrl == c) & ~np.isin(self.games, mine))
                    actions[rows_c] = self.bots[self.bot_names[c - 2]].act(slice_obs(obs, rows_c), rng)
                n_legal = (np.asarray(sub["action_mask"]) != 0).sum(axis=1)
                lab = n_legal > 1
                if args.label_from_round > 1:
                    lab &= self.round_of(sub) >= args.label_from_round
                exact = np.zeros_like(lab)
                if self.rules.num_players == 2:
                    exact = lab & solvable(self.rules, sub["view"])
                    lab &= ~exact
                    exact &= bool(args.label_last_round)
                if args.search == "none":
                    lab[:] = False
                li_s, li_e = np.flatnonzero(lab), np.flatnonzero(exact)
                t0 = time.time()
                if not li_s.size:
                    qs = []
                elif args.search == "search":
                    qs = searched_values(searcher, slice_obs(sub, li_s), rng)
                else:
                    qs = [np.asarray(v, dtype=np.float64) for v in self.search.move_values(slice_obs(sub, li_s), rng)]
                if li_e.size:  # exact values of every move (train.proxy's labeller); a search given up is dropped
                    qe = exact_values(self.rules, slice_obs(sub, li_e), args.match_bonus)
                    qe_rows = [qe[r, :n_legal[i]] for r, i in enumerate(li_e)]
                    keep = np.array([bool(np.isfinite(v).all()) for v in qe_rows])
                    li_e = li_e[keep]
                    qs += [v for v, k in zip(qe_rows, keep, strict=True) if k]
                label_s += time.time() - t0
                li = np.concatenate([li_s, li_e]).astype(np.int64)
                if li.size:
                    W = int(n_legal[li].max())
                    q = np.full((li.size, W), np.nan, dtype=np.float32)
                    for r, v in enumerate(qs):
                        q[r, :len(v)] = v
                    rows = mine[li]
                    if args.search_play > 0:
                        play = rng.random(li.size) < args.search_play
                        actions[rows[play]] = np.nanargmax(q[play], axis=1)
                    parts.append({
                        "obs": np.asarray(sub["observation"])[li].astype(np.float32),
                        "kind": np.asarray(sub["move_kind"])[li, :W].astype(np.int8),
                        "card": np.asarray(sub["move_card"])[li, :W].astype(np.int8),
                        "value": np.asarray(sub["move_value"])[li, :W].astype(np.int8),
                        "cards": np.asarray(sub["move_cards"])[li, :W].view(np.int64),
                        "mask": (np.asarray(sub["action_mask"])[li, :W] != 0),
                        "feat": feats[li, :W].astype(np.float32),
                        "crit": critic_state(env.state)[rows].astype(np.float32) if use_crit else None,
                        "q": q, "prior": _pad(probs[li], W, 0.0)[:, :W].astype(np.float32),
                    })
                    rec_game.append(rows)
                    rec_seat.append(cp[rows])
                    n_labels += li.size
                if progress > 0 and time.time() - t_said >= progress:
                    t_said = time.time()
                    print(f"  labelling: deal {d + 1}/{args.deals_per_iteration}, move {move + 1}/{self.deal_len}, "
                          f"{n_labels:,} labels ({n_labels / max(t_said - t_start, 1e-9):,.0f}/s)", flush=True)
                if not args.network_last_round:  # the network's exact last round
                    actions[mine] = play_endgame(self.rules, sub, actions[mine])
                obs, reward, terminated, _, _ = env.step(actions)
                deal_return += reward
            assert terminated.all(), "every game ends its deal after 52 - table_cards moves"
            for i, (g, s) in enumerate(zip(rec_game, rec_seat, strict=True)):
                parts[start + i]["ret"] = deal_return[g, s].astype(np.float32)
            for c in np.unique(self.ctrl[~is_self]):
                games_c = np.flatnonzero(self.ctrl == c)
                points.setdefault(self.bot_names[c - 2], []).append(deal_return[games_c, learner_side[games_c]])
        self.obs = obs
        labels = [Labels(**{k: p[k] for k in LABEL_ROWS}) for p in parts]
        if not labels:
            raise ConfigError(f"no decision was labelled in {B} games of {args.deals_per_iteration} deal(s): give "
                              "more games (num_envs) or deals (deals_per_iteration)", field="num_envs")
        out = join_labels(labels)
        out.points = {k: np.concatenate(v) for k, v in points.items()}
        out.label_s = label_s
        return out


class LabelWorker:
    """A Ray actor's body: a :class:`LabelCollector` over ``num_envs / num_workers`` games (worker ``index``'s
    share of the run's split), seeded by :func:`train.rollout.worker_seeds`; torch uses one thread."""

    def __init__(self, cfg: dict[str, Any], index: int, num_workers: int, network: dict[str, Any]) -> None:
        import torch

        from agents.policy import CassinoPolicy
        from cassino_env.rules import make_rules
        from train.rollout import split_games, worker_seeds

        torch.set_num_threads(1)
        args = config.make_args(ExitArgs, cfg)
        rules = make_rules(args.preset, args.num_players)
        env_seed, self.rng = worker_seeds(args.seed, index)
        ctrl = split_games(args.num_envs, 0.0, args.bot_rates)[index::num_workers]
        self.collector = LabelCollector(args, rules, args.num_envs // num_workers, env_seed, ctrl=ctrl)
        self.policy = CassinoPolicy.from_shape(network)
        self.lent_rng = np.random.default_rng(0)
        self.progress = PROGRESS_SECONDS if index == 0 else 0.0  # worker 0's lines reach the driver's console

    def ready(self) -> int:
        """The number of games (returns once the actor is up)."""
        return self.collector.B

    def collect(self, weights: dict[str, Any], deals_done: int, rng_state: str | None) -> tuple[Labels, str | None]:
        """One iteration's games and labels with these weights; worker 0 gets and returns the driver's generator."""
        from train.rollout import rng_state as _rng_state
        from train.rollout import set_rng_state as _set_rng_state

        self.policy.load_state_dict(weights)
        rng = self.rng
        if rng_state is not None:
            _set_rng_state(self.lent_rng, rng_state)
            rng = self.lent_rng
        labels = self.collector.collect(self.policy, rng, deals_done, progress=self.progress)
        return labels, None if rng_state is None else _rng_state(rng)

    def state(self) -> dict[str, Any]:
        """``env_state`` and, for a worker with its own generator, ``numpy_rng``."""
        from train.rollout import rng_state as _rng_state

        out: dict[str, Any] = {"env_state": self.collector.env_state()}
        if self.rng is not None:
            out["numpy_rng"] = _rng_state(self.rng)
        return out

    def load(self, env_state: dict[str, Any], rng_state: str | None) -> None:
        """Restore :meth:`state`."""
        from train.rollout import set_rng_state as _set_rng_state

        self.collector.load_env_state(env_state)
        if rng_state is not None:
            _set_rng_state(self.rng, rng_state)


class LocalLabels:
    """The local run's games: one :class:`LabelCollector`, drawing from the run's generator."""

    def __init__(self, args: ExitArgs, rules: RuleSet) -> None:
        from train.rollout import worker_seeds

        self.collector = LabelCollector(args, rules, args.num_envs, worker_seeds(args.seed, 0)[0])

    def collect(self, policy: Any, rng: np.random.Generator, deals_done: int) -> Labels:
        return self.collector.collect(policy, rng, deals_done, progress=PROGRESS_SECONDS)

    def state(self) -> dict[str, Any]:
        return {"env_state": self.collector.env_state()}

    def load(self, tr: dict[str, Any]) -> None:
        self.collector.load_env_state(tr["env_state"])

    def release(self) -> None:
        """Nothing to release."""


class RayLabels:
    """``--ray``: ``num_workers`` :class:`LabelWorker` actors; their labels are joined in worker order."""

    def __init__(self, args: ExitArgs, net_shape: Any) -> None:
        import ray

        from train.ray_cluster import connect_ray

        self.started = connect_ray(args.ray_address)
        self.actors: list[Any] = []
        try:
            cpus = ray.cluster_resources().get("CPU", 0)
            if cpus < args.num_workers:
                raise ConfigError(f"num_workers={args.num_workers}: the Ray cluster at {args.ray_address!r} has "
                                  f"{cpus:g} CPUs; each worker takes one", field="num_workers")
            actor = ray.remote(num_cpus=1)(LabelWorker)
            cfg = config.args_to_dict(args)
            self.actors = [actor.remote(cfg, i, args.num_workers, net_shape.to_dict())
                           for i in range(args.num_workers)]
            ray.get([a.ready.remote() for a in self.actors])
        except BaseException:
            self.release()
            raise

    def collect(self, policy: Any, rng: np.random.Generator, deals_done: int) -> Labels:
        import ray

        from train.rollout import rng_state as _rng_state
        from train.rollout import set_rng_state as _set_rng_state

        weights = ray.put(policy.state_dict())
        parts = ray.get([a.collect.remote(weights, deals_done, _rng_state(rng) if i == 0 else None)
                         for i, a in enumerate(self.actors)])
        _set_rng_state(rng, parts[0][1])
        return join_labels([p for p, _ in parts])

    def state(self) -> dict[str, Any]:
        import ray

        states = ray.get([a.state.remote() for a in self.actors])
        return {"env_state": states[0]["env_state"], **({"workers": states[1:]} if len(states) > 1 else {})}

    def load(self, tr: dict[str, Any]) -> None:
        import ray

        workers = [{"env_state": tr["env_state"], "numpy_rng": None}, *tr.get("workers", [])]
        if len(workers) != len(self.actors):
            raise ConfigError(f"num_workers={len(self.actors)}: the checkpoint was made with {len(workers)} workers",
                              field="num_workers")
        ray.get([a.load.remote(w["env_state"], w["numpy_rng"]) for a, w in zip(self.actors, workers, strict=True)])

    def release(self) -> None:
        import ray

        for a in self.actors:
            ray.kill(a)
        self.actors = []
        if self.started:
            ray.shutdown()
            self.started = False


# ----------------------------------------------------------------------------------------------------------------------
# The update
# ----------------------------------------------------------------------------------------------------------------------
def _batch(data: Labels, idx: np.ndarray) -> Any:
    from agents.policy import MoveBatch

    return MoveBatch.from_arrays(data.obs[idx], data.kind[idx], data.card[idx], data.value[idx], data.cards[idx],
                                 data.mask[idx], None if data.feat is None else data.feat[idx],
                                 None if data.crit is None else data.crit[idx])


def network_probs(policy: Any, data: Labels, chunk: int = 4096) -> np.ndarray:
    """float32[N, W]: ``policy``'s move probabilities on every row of ``data`` (0 past the legal moves)."""
    import torch

    out = np.zeros(data.mask.shape, dtype=np.float32)
    policy.eval()
    with torch.no_grad():
        for s in range(0, len(data), chunk):
            idx = np.arange(s, min(len(data), s + chunk))
            p = torch.softmax(policy.logits(_batch(data, idx)), dim=-1).numpy()
            out[idx, :p.shape[1]] = p
    return out


def update(policy: Any, optimizer: Any, data: Labels, args: ExitArgs, rng: np.random.Generator) -> dict[str, float]:
    """``args.epochs`` passes of minibatch steps over ``data``: cross-entropy to :func:`policy_targets` (for ``awr``
    the prior is the network as it is when the update starts, :func:`network_probs`: each iteration's step is
    anchored to the network it improves, the replayed labels included) plus
    ``vf_coef`` times the critic's squared error to ``ret * reward_scale`` (halved), minus ``ent_coef`` times the
    entropy. ``target="regret"``: the policy loss is the expected regret ``sum_a pi(a) (max q - q(a))`` (points:
    each decision weighs what is at stake in it) plus 0.1 times the cross-entropy to the best moves. The optimiser
    holds the parameters :func:`trained_parameters` gives (with ``train_params`` one of the heads neither the
    rest of the network nor the critic moves, and the value loss is left out). Returns the last pass's mean losses."""
    import torch

    from agents.policy import masked_entropy, masked_log_softmax

    prior = network_probs(policy, data) if args.target == "awr" else data.prior
    target = policy_targets(data.q, data.mask, prior, args.target, args.temperature)
    gap = None
    if args.target == "regret":
        qv = np.where(data.mask, np.nan_to_num(data.q, nan=0.0), -np.inf)
        gap = np.where(data.mask, qv.max(axis=1, keepdims=True) - qv, 0.0).astype(np.float32)
    head_only = args.train_params != "all"
    params = [q for group in optimizer.param_groups for q in group["params"]]  # trained_parameters', set at the start
    ret = data.ret * np.float32(args.reward_scale)
    N = len(data)
    mb = max(1, min(args.minibatch_size, N))
    stats = {"policy_loss": math.nan, "value_loss": math.nan, "entropy": math.nan}
    policy.train()
    for _epoch in range(args.epochs):
        perm = rng.permutation(N)
        sums = np.zeros(3)
        steps = 0
        for s in range(0, N - mb + 1, mb):
            idx = np.sort(perm[s:s + mb])
            batch = _batch(data, idx)
            W = batch.mask.shape[1]
            logits, value = policy(batch)
            logp = masked_log_softmax(logits, batch.mask)
            tgt = torch.from_numpy(target[idx, :W])
            pg = -(tgt * logp).sum(-1).mean()
            if gap is not None:
                pg = 0.1 * pg + (logp.exp() * torch.from_numpy(gap[idx, :W])).sum(-1).mean()
            vl = 0.5 * ((value - torch.from_numpy(ret[idx])) ** 2).mean()
            ent = masked_entropy(logits, batch.mask).mean()
            loss = pg - args.ent_coef * ent + (0.0 if head_only else args.vf_coef * vl)
            optimizer.zero_grad()
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(params, args.max_grad_norm)
            if not (torch.isfinite(loss) and torch.isfinite(grad_norm)):  # before the step: the weights stay good
                from train.run import Diverged

                what = "loss" if not torch.isfinite(loss) else "gradient norm"
                raise Diverged(f"the {what} is not finite ({(loss if what == 'loss' else grad_norm).item()}) in "
                               f"epoch {_epoch + 1}, minibatch {s // mb + 1} of the update; no weights of it were "
                               "saved (with a smaller learning_rate, or reward_scale)")
            optimizer.step()
            sums += (pg.item(), vl.item(), ent.item())
            steps += 1
        if steps:
            stats = dict(zip(("policy_loss", "value_loss", "entropy"), (sums / steps).tolist(), strict=True))
    return stats


def trained_parameters(policy: Any, train_params: str) -> list[Any]:
    """The parameters an update moves (:attr:`ExitArgs.train_params`): every one, or one head's alone (the
    last-round or the earlier-rounds head; the others are set to need no gradient).

    Raises:
        ConfigError: naming ``train_params``, the head alone of a network that has none.
    """
    if train_params == "all":
        return list(policy.parameters())
    if train_params == "early_rounds_head":
        head = policy.early_rounds_parameters()
        if not head:
            raise ConfigError("train_params=early_rounds_head: the network has no earlier-rounds head (give "
                              "early_rounds_head a width)", field="train_params")
    else:
        head = policy.last_round_parameters()
        if not head:
            raise ConfigError("train_params=last_round_head: the network has no last-round head (give "
                              "last_round_head a width)", field="train_params")
    keep = {id(p) for p in head}
    for p in policy.parameters():
        p.requires_grad_(id(p) in keep)
    return head


def _offline_passes(args: ExitArgs, rules: RuleSet, policy: Any, optimizer: Any, data: Labels, rng: np.random.Generator,
                    writer: Any, checkpoint: Any, run_eval: Any, start_time: float) -> Path:
    """``iterations: 0``: ``args.epochs`` passes of :func:`update` over ``data`` (the extra labels), the learning
    rate annealed linearly over the passes with ``anneal_lr``; a progress line, TensorBoard scalars and a checkpoint
    (``pass_N.pt``) each pass, an evaluation every ``eval_every`` passes and after the last; then final.pt."""
    import dataclasses

    from train.run import final_evaluation
    from train.run import fmt_time as _fmt_time

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


def label_stats(policy: Any, data: Labels, reward_scale: float) -> dict[str, float]:
    """The network's agreement with the search on ``data`` (its argmax is a best labelled move), its mean regret
    (points) and the critic's explained variance of the outcomes."""
    import torch

    if not len(data):
        return {"agreement": math.nan, "regret": math.nan, "explained_variance": math.nan}
    agree, regret, values = [], [], []
    policy.eval()
    with torch.no_grad():
        for s in range(0, len(data), 4096):
            i = np.arange(s, min(len(data), s + 4096))
            logits, v = policy(_batch(data, i))
            a = logits.argmax(-1).numpy()
            q = np.where(data.mask[i], np.nan_to_num(data.q[i], nan=-np.inf), -np.inf)
            best = q.max(axis=1)
            got = q[np.arange(len(i)), a]
            agree.append(got >= best - 1e-9)
            regret.append(best - got)
            values.append(v.numpy())
    v = np.concatenate(values)
    y = data.ret * np.float32(reward_scale)
    var = float(np.var(y))
    return {"agreement": float(np.concatenate(agree).mean()), "regret": float(np.concatenate(regret).mean()),
            "explained_variance": math.nan if var == 0 else float(1 - np.var(y - v) / var)}


# ----------------------------------------------------------------------------------------------------------------------
# The run
# ----------------------------------------------------------------------------------------------------------------------
ExitOptions = config.options_type(ExitArgs, name="ExitOptions", aliases={"ray_address": ("--ray",)},
                                  config_hint="configs/exit_classic.yaml")


def resolve_args(options: Any) -> ExitArgs:
    """Built-in defaults < config file (``--config``, else :data:`DEFAULT_CONFIG`) < flags given."""
    hints = typing.get_type_hints(ExitArgs)
    given = {k: config.parse_flag(hints[k], k, v) for k, v in config.given_options(options).items()}
    path = options.config if options.config is not None else DEFAULT_CONFIG
    from_file = config.load_config(ExitArgs, path)
    try:
        return config.make_args(ExitArgs, {**from_file, **given})
    except ConfigError as exc:
        if exc.field in from_file and exc.field not in given:
            raise ConfigError(f"{path}: {exc}", field=exc.field) from None
        raise


def main(options: Annotated[ExitOptions, tyro.conf.OmitArgPrefixes, tyro.conf.arg(name="")]) -> int:  # type: ignore[valid-type]
    """Expert iteration: a search labels the network's decisions, the network learns the labels, repeat.

    See ``train/exit.py`` and docs/expert_iteration.md.
    """
    from agents.ppo_agent import CheckpointError
    from cassino_env.errors import CassinoError
    from train.cli import bad_input
    from train.run import RunStopped

    with bad_input(ConfigError, CheckpointError, CassinoError) as failed:
        args = resolve_args(options)
        explicit = config.explicit_fields(ExitArgs, options)
        try:
            train(args, explicit=explicit)
        except RunStopped as exc:  # a diverged update: one line, the checkpoints written before it are intact
            print(f"error: {exc}", file=sys.stderr)
            return 1
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
    from agents.registry import PRETRAINED_DIR
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
    from train import proxy as proxy_mod

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
    from train.checkpoints import (
        check_counters,
        check_optimizer_state,
        check_rng_states,
        check_workers,
    )

    check_counters(tr, path, ("iteration", "global_step", "labels_total"))
    check_rng_states(tr, path)
    fields = games.state()["env_state"]
    n = next(iter(fields.values())).shape[0] if fields else 0
    desc = f"num_envs={n}" if num_workers == 1 else f"{n} games (num_envs / num_workers={num_workers})"
    check_workers(tr, path, num_workers, fields, desc)
    check_optimizer_state(optimizer_state, path, policy, params)


def train(args: ExitArgs, explicit: set[str] | None = None, hook: IterationHook | None = None) -> Path:
    """Run expert iteration (module docstring); return the final checkpoint's path.

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
        PPOAgent,
        atomic_write,
        check_network,
        checkpoint_blocks,
        policy_from_checkpoint,
    )
    from cassino_env.obs import DEFAULT_BLOCKS
    from cassino_env.rules import make_rules
    from train.arena import evaluate_deals
    from train.checkpoints import read_training_checkpoint, save_training_checkpoint
    from train.rollout import make_bots
    from train.rollout import rng_state as _rng_state
    from train.rollout import set_rng_state as _set_rng_state
    from train.run import final_evaluation
    from train.run import fmt_time as _fmt_time
    from train.stats import wilson_interval

    ckpt = None
    if args.resume is not None:
        ckpt = read_training_checkpoint(args.resume)
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
        print(f"resumed {args.resume} at iteration {iteration}, step {global_step:,}", flush=True)

    held.append(config.claim_run_dir(run_dir, resuming=resuming_here, reuse=args.reuse_run_dir))
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    if games is not None:
        label_dir.mkdir(parents=True, exist_ok=True)
    config_text = yaml.safe_dump(config.args_to_dict(args), sort_keys=False).encode("utf-8")
    atomic_write(run_dir / "config.yaml", lambda f: f.write(config_text))
    writer = SummaryWriter(str(run_dir))
    if ckpt is None:
        writer.add_text("hyperparameters", config.hparams_table(args))
    start_time = time.time()

    def checkpoint(name: str, step: int | None = None) -> Path:
        state = {"config": config.args_to_dict(args), "run_dir": str(run_dir), "algo": "exit",
                 "iteration": iteration, "global_step": global_step if step is None else step,
                 "labels_total": labels_total,
                 "elapsed_s": elapsed_before + (time.time() - start_time), "numpy_rng": _rng_state(rng),
                 "torch_rng": torch.get_rng_state(), **(games.state() if games is not None else {})}
        return save_training_checkpoint(ckpt_dir / name, policy, rules, optimizer, state)  # and latest.pt

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
            from train.proxy import score

            r = score(agent, proxy, seed=0)
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
                + f" | {_fmt_time(elapsed)} elapsed")
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


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(tyro.cli(main, config=(tyro.conf.FlagCreatePairsOff,)))
