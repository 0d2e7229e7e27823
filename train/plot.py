"""Learning curves of a training run, read from its TensorBoard event files and drawn to a PNG.

Usage::

    cassino plot runs/classic__ppo_selfplay__1__1700000000          # writes RUN_DIR/learning_curves.png
    cassino plot RUN_DIR --out curves.png

The figure: on top, the evaluations during training against each bot (:mod:`train.ppo_selfplay`, "TensorBoard
scalars"): the **deal** win rate with its Wilson 95% interval as a band, and the mean deal margin, the policy
playing its most probable move (argmax); one colour per bot, the legend above the panels in ladder order (weakest
first, :data:`agents.registry.LADDER`; other opponents after it, by name). Below, the PPO losses, the learner's
deal margin in its training games and the training speed between its points (the first, which holds the kernels'
compile, left out; a run that ended before its ``total_timesteps`` says so in its title). An expert-iteration run
(``cassino exit``): its losses, its agreement and regret against the search, the proxy regret and the labelling
speed. Every x axis counts env steps (moves, over all games) in k and M, but that of a ``cassino exit`` run with
``iterations: 0`` (passes over saved labels): the labels trained on, below the losses the regret and agreement on
its held-out labels.

A recipe run (``cassino train`` with ``hours`` above 0, told by its ``RUN/recipe.json``, :mod:`train.recipe`) is drawn
on one time axis instead, minutes of the run: on top, a strip of its stages (full name where it fits, else the
initial; every panel shades the same spans); then the best network alone against ``advanced`` (its deal win rate with
the Wilson 95% band, and its points a deal on the right-hand axis, a step curve that changes at each promotion); then
each gate's margin, candidate minus best, with ±1.96 standard errors, a promotion and a kept best marked apart;
last, when logged, the best network's regret on the proxy set. A run stopped before its budget (Ctrl-C, a crash)
says so in its title, a dashed line where it stopped. Each stage's own curves: ``cassino plot
RUN/stages/NN_NAME``.

>>> format_steps(0), format_steps(750), format_steps(49_152), format_steps(1_500_000), format_steps(10_000_000)
('0', '750', '49k', '1.5M', '10M')
>>> ladder_order(["advanced", "pimc", "random", "greedy"])
['random', 'greedy', 'advanced', 'pimc']
>>> load_scalars("no/such/run")
Traceback (most recent call last):
...
FileNotFoundError: no/such/run: no such folder (a run folder of cassino train)
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
import tyro

from cassino_env.errors import shown_name

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Prefixes of the evaluation tags (``eval/winrate_vs_<bot>`` and its interval, ``eval/points_vs_<bot>``).
WIN_PREFIX = "eval/winrate_vs_"
CI_LOW_PREFIX = "eval/winrate_ci_low_vs_"
CI_HIGH_PREFIX = "eval/winrate_ci_high_vs_"
POINTS_PREFIX = "eval/points_vs_"

#: The panels under the evaluations: (tag, title, y-axis label).
LOSS_TAGS = (
    ("losses/policy_loss", "policy loss", "clipped surrogate loss"),
    ("losses/value_loss", "value loss", "squared error (scaled reward)"),
    ("losses/entropy", "entropy of the policy", "nats (over legal moves)"),
    ("losses/approx_kl", "approx. KL, old to new policy", "nats"),
    ("losses/clipfrac", "clip fraction", "share of ratios clipped"),
    ("losses/explained_variance", "explained variance of the critic", "1 - Var(error) / Var(return)"),
)
#: The last panels: (tag, title, y-axis label).
CHART_TAGS = (
    ("charts/episodic_return", "learner's deal margin in training games", "points per deal"),
    ("charts/SPS", "training speed", "env steps per second"),
)
#: The panels of an expert-iteration run (``cassino exit``, told by its ``exit/search_agreement`` tag) instead of
#: :data:`LOSS_TAGS` and :data:`CHART_TAGS`.
_LOSS = {panel[0]: panel for panel in LOSS_TAGS}
EXIT_TAGS = (
    ("losses/policy_loss", "policy loss", "cross-entropy to the search's target"),
    *(_LOSS[tag] for tag in ("losses/value_loss", "losses/entropy", "losses/explained_variance")),
    ("exit/search_agreement", "network's move is the search's best", "share of new labelled decisions"),
    ("exit/regret", "network's regret against the search", "points per new labelled decision"),
    ("eval/proxy_regret", "network alone on the proxy set", "regret, points per decision"),
    ("exit/labels_per_s", "labelling speed", "labels per second"),
)
#: The panels of an offline expert-iteration run (``cassino exit`` with ``iterations: 0``: passes over saved labels,
#: its x axis the labels trained on), told by its config.yaml.
OFFLINE_EXIT_TAGS = (
    EXIT_TAGS[0], _LOSS["losses/value_loss"],
    ("exit/holdout_regret", "network's regret on the held-out labels", "points per held-out decision"),
    ("exit/holdout_agreement", "network's move is the held-out label's best", "share of held-out decisions"),
    ("eval/proxy_regret", "network alone on the proxy set", "regret, points per decision"),
    ("time/update_s", "time of a pass", "seconds"),
)
STEP_LABEL = "env steps (moves, all games)"
#: The x axis of a recipe run (its event files' steps are seconds of the run).
RECIPE_X_LABEL = "minutes of the run (wall clock, resumed parts included)"
#: The colour of each stage of a recipe run (:data:`train.recipe.STAGES`): its shaded spans and its strip.
STAGE_COLOURS = {"ppo": "#8da0cb", "last_round": "#fc8d62", "early_rounds": "#66c2a5", "consolidate": "#e5c494"}
#: The colour of the best network's points a deal (its win rate is ``C0``), apart from every stage's.
POINTS_COLOUR = "#8b1a1a"
OFFLINE_STEP_LABEL = "labels trained on (passes over saved labels)"


def format_steps(x: float, _pos: Any = None) -> str:
    """A step count in k and M for axis ticks: ``49_152`` is ``'49k'``, ``1_500_000`` is ``'1.5M'``."""
    x = float(x)
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            v = x / scale
            return f"{v:.0f}{unit}" if abs(v) >= 10 or v == round(v) else f"{v:.1f}{unit}"
    return f"{x:.0f}"


def ladder_order(names: Iterable[str]) -> list[str]:
    """``names`` in ladder order (:data:`agents.registry.LADDER`, weakest first), any other name after, sorted."""
    from agents.registry import LADDER

    names = list(dict.fromkeys(names))
    return ([n for n in LADDER if n in names]) + sorted(n for n in names if n not in LADDER)


def load_scalars(run_dir: str | Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every scalar of a run's event files: ``{tag: (steps int64[n], values float64[n])}``, sorted by step.

    When a resumed run wrote a step twice, the value written last is kept.

    Raises:
        FileNotFoundError: no such folder, or one without event files.
        NotADirectoryError: a file, not a folder.
    """
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_dir = Path(run_dir)
    shown = shown_name(run_dir)
    try:
        found = run_dir.exists()
    except OSError:  # a name too long: no such folder
        found = False
    if not found:
        raise FileNotFoundError(f"{shown}: no such folder (a run folder of cassino train)")
    if not run_dir.is_dir():
        raise NotADirectoryError(f"{shown}: not a folder (a run folder of cassino train holds "
                                 "events.out.tfevents.* files)")
    files = sorted(run_dir.glob("events.out.tfevents.*"), key=lambda p: p.stat().st_mtime)
    if not files:
        raise FileNotFoundError(f"{shown}: no TensorBoard event files (events.out.tfevents.*) in this folder")
    merged: dict[str, dict[int, float]] = {}
    for f in files:
        acc = EventAccumulator(str(f), size_guidance={"scalars": 0})
        acc.Reload()
        for tag in acc.Tags()["scalars"]:
            series = merged.setdefault(tag, {})
            for ev in acc.Scalars(tag):
                series[int(ev.step)] = float(ev.value)
    out = {}
    for tag, series in merged.items():
        steps = np.array(sorted(series), dtype=np.int64)
        out[tag] = (steps, np.array([series[s] for s in steps], dtype=np.float64))
    return out



def _run_config(run_dir: Path) -> dict[str, Any]:
    """The run's ``config.yaml`` (empty when it is missing or unreadable: the figure then says less)."""
    import yaml

    try:
        data = yaml.safe_load((run_dir / "config.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def load_recipe(run_dir: str | Path) -> dict[str, Any] | None:
    """A recipe run's gates and stages from its ``recipe.json`` (:mod:`train.recipe`); None when it has none (not a
    recipe run).

    Returns:
        ``{"gates": [...], "spans": [(stage, start_s, end_s), ...], "elapsed_s": float}``: the gate records as
        written (``at_s``, ``stage``, ``promoted``, ``margin`` and ``se``, None at the first gate, ...); one span a
        run of a stage, from the previous span's end (0 for the first) to its last gate, the last one (or the stage
        under way, not yet gated) to the time the run has used.

    Raises:
        ConfigError: a file that is not readable JSON or not a recipe state (naming the file).
    """
    from train.config import ConfigError

    path = Path(run_dir) / "recipe.json"
    if not path.is_file():
        return None
    shown = shown_name(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{shown}: not readable JSON ({exc})") from None
    number, maybe = (int, float), (int, float, type(None))
    kinds = {"at_s": number, "stage": str, "stage_index": int, "promoted": bool, "margin": maybe, "se": maybe}
    gates = data.get("gates") if isinstance(data, dict) else None
    if not isinstance(gates, list) or not isinstance(data.get("elapsed_s", 0.0), number):
        raise ConfigError(f"{shown}: not a recipe state of cassino train (no list of gates)")
    for k, gate in enumerate(gates):
        bad = [key for key, kind in kinds.items() if not isinstance(gate, dict) or not isinstance(gate.get(key), kind)
               or (kind is not bool and isinstance(gate.get(key), bool))]
        if bad:
            raise ConfigError(f"{shown}: gate {k}: field {bad[0]!r} missing or of the wrong type")
    elapsed = float(data.get("elapsed_s", 0.0))
    spans: list[list[Any]] = []  # [stage, stage_index, start_s, end_s]
    for gate in gates:
        if spans and spans[-1][1] == gate["stage_index"]:
            spans[-1][3] = float(gate["at_s"])
        else:
            spans.append([gate["stage"], gate["stage_index"], spans[-1][3] if spans else 0.0, float(gate["at_s"])])
    current, folder = data.get("stage_index"), data.get("stage_dir")
    if spans and (data.get("done") or current == spans[-1][1]):
        spans[-1][3] = max(spans[-1][3], elapsed)
    elif isinstance(current, int) and isinstance(folder, str) and "_" in folder:  # a stage under way, not gated yet
        start = spans[-1][3] if spans else 0.0
        spans.append([Path(folder).name.split("_", 1)[1], current, start, max(start, elapsed)])
    return {"gates": gates, "spans": [(name, start, end) for name, _, start, end in spans], "elapsed_s": elapsed,
            "done": data.get("done") is True}


def speed_between(steps: np.ndarray, sps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The training speed between successive points of ``charts/SPS``, which the trainer logs as a running average
    from the run's start (its steps over its wall time, the kernels' compile included: it rises like a ramp for
    minutes). Each point's wall time is its steps / its SPS; the speed at a point is the steps since the point
    before over the time since. The first point, whose interval holds the start-up and the compile, has none.

    >>> speed_between(np.array([100.0, 300.0, 500.0]), np.array([10.0, 20.0, 25.0]))
    (array([300., 500.]), array([40., 40.]))
    """
    steps, sps = np.asarray(steps, dtype=np.float64), np.asarray(sps, dtype=np.float64)
    ok = sps > 0
    steps, t = steps[ok], steps[ok] / sps[ok]
    dt, ds = np.diff(t), np.diff(steps)
    keep = (dt > 0) & (ds > 0)  # a resumed part starts its clock where the earlier one stopped: still increasing
    return steps[1:][keep], ds[keep] / dt[keep]


def stopped_early(config: dict[str, Any], last_step: float | None) -> str:
    """A note for a PPO run that ended before its ``total_timesteps`` (its time limit, Ctrl-C, a crash), else ``""``.

    >>> stopped_early({"total_timesteps": 10_000_000}, 5_505_024)
    'stopped early: 5.5M of 10M env steps'
    >>> stopped_early({"total_timesteps": 10_000_000}, 10_000_000), stopped_early({}, 5)
    ('', '')
    """
    total = config.get("total_timesteps")
    if last_step is None or not isinstance(total, int) or isinstance(total, bool) or total <= 0:
        return ""
    rollout = config.get("num_envs", 1) * config.get("num_steps", 1)
    rollout = rollout if isinstance(rollout, int) and rollout > 0 else 1
    if last_step + rollout > total:  # the total is rounded to whole rollouts
        return ""
    return f"stopped early: {format_steps(last_step)} of {format_steps(total)} env steps"


def _steps_axis(ax: Any, label: str = STEP_LABEL) -> None:
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10], integer=True))
    ax.xaxis.set_major_formatter(FuncFormatter(format_steps))
    ax.set_xlabel(label)
    ax.grid(alpha=0.25)


def _missing(ax: Any, what: str) -> None:
    ax.text(0.5, 0.5, f"{what} not logged", ha="center", va="center", transform=ax.transAxes, color="grey")


def draw_run(scalars: dict[str, tuple[np.ndarray, np.ndarray]], title: str = "",
             config: dict[str, Any] | None = None) -> Figure:
    """The learning-curve figure of :func:`plot_run` from :func:`load_scalars`' dict (``config``: the run's
    ``config.yaml`` fields, for the evaluation size in the titles)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    config = config or {}
    offline = config.get("iterations") == 0 and "extra_labels" in config  # cassino exit's passes over saved labels
    x_label = OFFLINE_STEP_LABEL if offline else STEP_LABEL
    fig = plt.figure(figsize=(18, 11), layout="constrained")
    grid = fig.add_gridspec(3, 4, height_ratios=[1.35, 1, 1])
    ax_win, ax_pts = fig.add_subplot(grid[0, :2]), fig.add_subplot(grid[0, 2:])
    heading = f"{title}: learning curves" if title else "learning curves"
    early = "" if offline or "exit/search_agreement" in scalars else stopped_early(config, _last_step(scalars))
    heading += f" ({early})" if early else ""
    bots = ladder_order(t.removeprefix(WIN_PREFIX) for t in scalars if t.startswith(WIN_PREFIX))
    colours = plt.get_cmap("tab10")
    for k, bot in enumerate(bots):
        colour = colours(k % 10)
        steps, vals = scalars[WIN_PREFIX + bot]
        if CI_LOW_PREFIX + bot in scalars and CI_HIGH_PREFIX + bot in scalars:
            (s_lo, lo), (s_hi, hi) = scalars[CI_LOW_PREFIX + bot], scalars[CI_HIGH_PREFIX + bot]
            if np.array_equal(s_lo, steps) and np.array_equal(s_hi, steps):
                ax_win.fill_between(steps, lo, hi, color=colour, alpha=0.18, lw=0)
        ax_win.plot(steps, vals, marker="o", ms=4, lw=1.6, color=colour, label=bot)
        if POINTS_PREFIX + bot in scalars:
            ax_pts.plot(*scalars[POINTS_PREFIX + bot], marker="o", ms=4, lw=1.6, color=colour)
    deals = config.get("eval_deals")
    size = f"{deals} duplicate deals per point, " if isinstance(deals, int) else ""
    ax_win.axhline(0.5, color="grey", lw=0.8, ls=":")
    ax_win.set_ylim(0, 1)
    ax_win.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
    ax_win.set_title(f"deal win rate against each bot ({size}argmax play; band: Wilson 95% interval)")
    ax_win.set_ylabel("deals won by the agent's side (ties half)")
    ax_pts.axhline(0.0, color="grey", lw=0.8, ls=":")
    ax_pts.set_title("mean deal margin against each bot (same evaluations)")
    ax_pts.set_ylabel("agent's points minus the bot's, per deal")
    for ax in (ax_win, ax_pts):
        _steps_axis(ax, x_label)
    if bots:
        handles, labels = ax_win.get_legend_handles_labels()
        # The figure's title heads the legend: a suptitle and an "outside" legend would overlap.
        fig.legend(handles, [f"vs {n}" for n in labels], loc="outside upper center", ncols=len(bots), frameon=False,
                   title=heading + " (opponents in ladder order, weakest first)", title_fontsize="large")
    else:
        _missing(ax_win, "eval/winrate_vs_<bot>")
        _missing(ax_pts, "eval/points_vs_<bot>")
    panels = (OFFLINE_EXIT_TAGS if offline else EXIT_TAGS if "exit/search_agreement" in scalars
              else (*LOSS_TAGS, *CHART_TAGS))
    for k, (tag, name, ylabel) in enumerate(panels):
        ax = fig.add_subplot(grid[1 + k // 4, k % 4])
        if tag == "charts/SPS" and tag in scalars:  # logged as a running average from the start: drawn between points
            steps, vals = speed_between(*scalars[tag])
            name = "training speed between points (the first, with the compile, left out)"
            if len(steps):
                ax.plot(steps, vals, lw=1.2, marker="." if len(steps) < 30 else None)
            else:
                _missing(ax, "a second point of charts/SPS")
        elif tag in scalars:
            steps, vals = scalars[tag]
            ax.plot(steps, vals, lw=1.2, marker="." if len(steps) < 30 else None)
        else:
            _missing(ax, tag)
        ax.set_title(name)
        ax.set_ylabel(ylabel)
        _steps_axis(ax, x_label)
    if not bots:
        fig.suptitle(heading)
    return fig


def _last_step(scalars: dict[str, tuple[np.ndarray, np.ndarray]]) -> float | None:
    """The last step any scalar was logged at (None: none logged)."""
    ends = [float(s[-1]) for s, _ in scalars.values() if len(s)]
    return max(ends) if ends else None


def _best_curve(scalars: dict[str, tuple[np.ndarray, np.ndarray]], gates: list[dict[str, Any]], tag: str,
                end_s: float) -> tuple[np.ndarray, np.ndarray] | None:
    """The best network's measure ``tag`` at each promotion (its event files, else the gates' records of the same
    name), held to ``end_s``: (seconds, values) for a step curve; None when never logged."""
    key = tag.removeprefix("eval/")
    if tag in scalars:
        steps, vals = scalars[tag]
        x, y = steps.astype(np.float64), vals
    else:
        kept = [g for g in gates if isinstance(g.get(key), (int, float))]
        x, y = np.array([g["at_s"] for g in kept], dtype=np.float64), np.array([g[key] for g in kept], dtype=float)
    if not len(x):
        return None
    return np.append(x, max(end_s, x[-1])), np.append(y, y[-1])


def _minutes_axis(ax: Any, label: str | None) -> None:
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(nbins=12, steps=[1, 2, 2.5, 5, 10]))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: f"{x:g}"))
    if label:
        ax.set_xlabel(label)
    ax.grid(alpha=0.25)


def draw_recipe(scalars: dict[str, tuple[np.ndarray, np.ndarray]], recipe: dict[str, Any], title: str = "",
                config: dict[str, Any] | None = None) -> Figure:
    """The figure of a recipe run (module docstring) from :func:`load_scalars`' dict and :func:`load_recipe`'s
    (``config``: the run's ``config.yaml`` fields, for the gate's size and rule in the titles)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    from train.recipe import CURVE_DEALS, STAGES

    config = config or {}
    gates, spans = recipe["gates"], recipe["spans"]
    end_s = max([recipe["elapsed_s"], 1.0, *(g["at_s"] for g in gates), *(float(s[-1]) for s, _ in scalars.values())])
    proxy = _best_curve(scalars, gates, "eval/proxy_regret", end_s)
    fig = plt.figure(figsize=(15, 12 if proxy else 9.5), layout="constrained")
    grid = fig.add_gridspec(4 if proxy else 3, 1, height_ratios=[0.16, 1.3, 1, 0.8][:4 if proxy else 3])
    ax_strip = fig.add_subplot(grid[0])
    axes = [fig.add_subplot(grid[k], sharex=ax_strip) for k in range(1, 4 if proxy else 3)]
    ax_best, ax_gate = axes[0], axes[1]
    for name, start, end in spans:
        colour = STAGE_COLOURS.get(name, "lightgrey")
        ax_strip.barh(0, (end - start) / 60, left=start / 60, height=1, color=colour, edgecolor="white", lw=1.5)
        share, label = (end - start) / end_s, name.replace("_", " ")
        label = label if share >= 0.006 * len(label) + 0.006 else label[0].upper() if share >= 0.008 else ""
        ax_strip.text((start + end) / 120, 0, label, ha="center", va="center", fontsize=9, clip_on=True)
        for ax in axes:
            ax.axvspan(start / 60, end / 60, color=colour, alpha=0.13, lw=0, zorder=0)
    ax_strip.set_ylim(-0.5, 0.5)
    ax_strip.set_yticks([])
    ax_strip.set_ylabel("stage", rotation=0, ha="right", va="center")
    ax_strip.tick_params(bottom=False, labelbottom=False)
    for side in ("top", "right", "bottom"):
        ax_strip.spines[side].set_visible(False)
    ax_strip.set_xlim(0, end_s / 60 * 1.01)
    win = _best_curve(scalars, gates, WIN_PREFIX + "advanced", end_s)
    if win is not None:
        lo = _best_curve(scalars, gates, CI_LOW_PREFIX + "advanced", end_s)
        hi = _best_curve(scalars, gates, CI_HIGH_PREFIX + "advanced", end_s)
        if lo is not None and hi is not None and np.array_equal(lo[0], win[0]) and np.array_equal(hi[0], win[0]):
            ax_best.fill_between(win[0] / 60, lo[1], hi[1], step="post", facecolor=(0.12, 0.47, 0.71, 0.18),
                                 edgecolor="C0", lw=0.6, label="Wilson 95% interval")
        ax_best.step(win[0] / 60, win[1], where="post", color="C0", lw=1.8, label="deal win rate (left axis)")
        ax_best.plot(win[0][:-1] / 60, win[1][:-1], "o", color="C0", ms=4)
        ax_best.axhline(0.5, color="grey", lw=0.8, ls=":")
    else:
        _missing(ax_best, WIN_PREFIX + "advanced")
    ax_best.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
    ax_best.set_ylabel("deals won (ties half)")
    ax_pts = ax_best.twinx()
    points = _best_curve(scalars, gates, POINTS_PREFIX + "advanced", end_s)
    if points is not None:
        ax_pts.step(points[0] / 60, points[1], where="post", color=POINTS_COLOUR, lw=1.4, ls="--",
                    label="points a deal (right axis)")
    ax_pts.set_ylabel("best's points minus advanced's, per deal", color=POINTS_COLOUR)
    ax_pts.tick_params(axis="y", colors=POINTS_COLOUR)
    handles = [h for ax in (ax_best, ax_pts) for h in ax.get_legend_handles_labels()[0]]
    if handles:
        ax_best.legend(handles=handles, loc="lower right", fontsize=9)
    ax_best.set_title(f"best network alone (argmax) vs advanced, {CURVE_DEALS:,} duplicate deals at each promotion")
    deals, z = config.get("gate_deals"), config.get("gate_min_z")
    size = f" on {deals:,} duplicate deals" if isinstance(deals, int) else ""
    rule = f"at least {z:g} se above 0" if isinstance(z, (int, float)) else "above 0"
    kinds = (("promoted (a gain)", "^", "C2", "C2", lambda g: g["promoted"]),
             ("kept the best", "s", "grey", "white", lambda g: not g["promoted"]))
    for label, marker, colour, face, chosen in kinds:
        picked = [g for g in gates if g["margin"] is not None and chosen(g)]
        if picked:
            ax_gate.errorbar([g["at_s"] / 60 for g in picked], [g["margin"] for g in picked],
                             yerr=[1.96 * (g["se"] or 0.0) for g in picked], fmt=marker, color=colour, mfc=face,
                             ms=6, capsize=3, lw=1, label=f"{label} ({len(picked)})")
    if any(g["margin"] is not None for g in gates):
        ax_gate.legend(loc="upper right", fontsize=9, ncols=3)
    else:
        _missing(ax_gate, "gate/margin")
    ax_gate.axhline(0.0, color="grey", lw=0.8, ls=":")
    ax_gate.set_title(f"each gate: candidate vs best, both alone{size} (bars: ±1.96 se; promoted when {rule})")
    ax_gate.set_ylabel("candidate's points minus the best's, per deal")
    if proxy:
        axes[2].step(proxy[0] / 60, proxy[1], where="post", color="C4", lw=1.6)
        axes[2].plot(proxy[0][:-1] / 60, proxy[1][:-1], "o", color="C4", ms=4)
        axes[2].set_title("best network alone on the proxy set (lower is better)")
        axes[2].set_ylabel("regret, points per decision")
    for ax in axes:
        _minutes_axis(ax, RECIPE_X_LABEL if ax is axes[-1] else None)
    names = {s[0] for s in spans}
    shown = [n for n in STAGES if n in names] + sorted(names - set(STAGES))
    after = [g for g in gates if g["margin"] is not None]  # the first gate makes the first best: no margin
    promoted = sum(bool(g["promoted"]) for g in after)
    heading = (f"{title + ': ' if title else ''}the recipe's {len(gates)} gates, "
               f"{promoted} promotion{'' if promoted == 1 else 's'} after the first")
    hours = config.get("hours")
    if (not recipe.get("done", True) and isinstance(hours, (int, float)) and not isinstance(hours, bool)
            and recipe["elapsed_s"] < hours * 3600 - 1):
        heading += f"; stopped at {recipe['elapsed_s'] / 60:.1f} of its {hours * 60:g} minutes (cassino train --resume)"
        for ax in axes:
            ax.axvline(recipe["elapsed_s"] / 60, color="black", lw=1.0, ls="--")
    fig.legend([Patch(color=STAGE_COLOURS.get(n, "lightgrey")) for n in shown], [n.replace("_", " ") for n in shown],
               loc="outside upper center", ncols=max(1, len(shown)), frameon=False,
               title=heading + "; stages shaded in every panel", title_fontsize="large")
    return fig


def plot_run(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """Draw a run's learning curves (module docstring) to a PNG; return its path.

    Args:
        run_dir: a run folder of ``cassino train`` (holding its event files).
        out: the PNG to write; default ``RUN_DIR/learning_curves.png``.

    Raises:
        FileNotFoundError, NotADirectoryError: as :func:`load_scalars`.
        ConfigError: as :func:`load_recipe`.
    """
    import matplotlib.pyplot as plt

    run_dir = Path(run_dir)
    scalars = load_scalars(run_dir)
    config = _run_config(run_dir)
    recipe = load_recipe(run_dir)
    out = Path(out) if out is not None else run_dir / "learning_curves.png"
    title = run_dir.name
    if config.get("preset"):
        players = f", {config['num_players']} players" if config.get("num_players") else ""
        title += f" ({config['preset']}{players})"
    if recipe is not None:
        hours = config.get("hours")
        if isinstance(hours, (int, float)) and not isinstance(hours, bool):
            title += f", budget {hours:g} h" + (f" ({hours * 60:g} min)" if hours < 1 else "")
        fig = draw_recipe(scalars, recipe, title, config)
    else:
        fig = draw_run(scalars, title, config)
    from agents.files import atomic_write

    try:  # atomically, a link kept a link, a device or FIFO written directly (agents.files)
        atomic_write(out, lambda f: fig.savefig(f, format=out.suffix[1:].lower() or None, dpi=100))
    finally:
        plt.close(fig)
    return out


def main(run_dir: Annotated[str, tyro.conf.Positional, tyro.conf.arg(metavar="RUN_DIR")],
         out: Path | None = None) -> int:
    """Draw a training run's learning curves (win rate vs each bot, losses, SPS) from its TensorBoard files to a PNG.

    Args:
        run_dir: the run folder written by cassino train (it holds events.out.tfevents.* files).
        out: the PNG to write (default RUN_DIR/learning_curves.png).
    """
    from train.config import ConfigError
    from train.errors import bad_input, error

    if not str(run_dir):  # read as text: a Path of '' would be '.', the current folder
        return error("run_dir: the folder argument is empty; name a run folder of cassino train (it holds "
                     "events.out.tfevents.* files)")
    # no folder or no event files (FileNotFoundError), an unwritable output, a bad recipe.json (ConfigError)
    with bad_input(OSError, ConfigError) as failed:
        path = plot_run(run_dir, out)
    if failed.code:
        return failed.code
    print(f"wrote {path}")
    return 0
