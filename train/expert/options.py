"""The options of expert iteration: :class:`ExitArgs` (one documented field each), the rule of every field and of
their combinations, and the command line's options read over a config file (:func:`resolve_args`). Imports no torch
(``cassino exit --help`` reads these)."""

from __future__ import annotations

import typing
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from agents.registry import MAX_SIMULATIONS, AgentSpecError, check_spec
from train import config
from train.config import ConfigError, boolean, integer, names, number, optional, rates, text

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
#: Written out (importing agents.bots here would load the batched core for every ``--help``); tests/test_exit.py
#: checks it is ``("random", *agents.bots.STYLES)``, so a new style is a rollout policy here too.
ROLLOUTS = ("random", "greedy", "beginner", "intermediate", "advanced")
#: The config read when no ``--config`` is given.
DEFAULT_CONFIG = config.CONFIGS_DIR / "exit_classic.yaml"


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
    try:
        check_spec(spec)
    except AgentSpecError as exc:
        raise ConfigError(f"{name}: {exc}", field=name) from None


def _folder_name(name: str, value: Any) -> str:
    """``exp_name``'s rule: :func:`train.config.text` with ``no_slash`` (it names the run folder), and no control
    character (a newline, a tab, an escape sequence) nor a lone surrogate, which would make a folder name that
    terminals and shells show wrongly or not at all."""
    value = _PART_OF_FOLDER(name, value)
    bad = next((c for c in value if unicodedata.category(c) in ("Cc", "Cs")), None)
    if bad is not None:
        raise ConfigError(f"{name}: must be printable characters (it is part of the run folder's name), got "
                          f"{value!r} with the control character U+{ord(bad):04X}", field=name)
    return value


_PART_OF_FOLDER = text(no_slash=True)

#: The rule of every :class:`ExitArgs` field.
EXIT_RULES: dict[str, config.FieldRule] = {
    "exp_name": _folder_name, "seed": integer(0, 2**63 - 1), "threads": integer(1, 1024), "device": config.device(),
    "precision": config.precision(),
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
