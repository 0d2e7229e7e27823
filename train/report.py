"""Reports of an evaluation (the dict :func:`train.evaluate.evaluate` returns): terminal tables, Markdown, CSV and a
heatmap PNG of the match win matrix.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

#: The colour of a heatmap cell whose pair did not play (and of the diagonal).
NOT_PLAYED = "lightgrey"
#: The longest agent name the heatmap writes on its axes, in characters: a longer one (a checkpoint's path) is
#: shortened there (:func:`short_labels`); the tables, CSV and JSON keep every name whole.
LABEL_CHARS = 36

_SPEC_HEAD = re.compile(r"(?:[a-z][a-z0-9_-]*:)+")  # the spec names before a path: "policy:checkpoint:"


def _margin(e: dict[str, Any], fmt: str = "{:+.2f}", sep: str = ", ") -> str:
    lo, hi = e["margin_ci_low"], e["margin_ci_high"]
    ci = "n/a" if lo is None or hi is None else fmt.format(lo) + sep + fmt.format(hi)
    return f"{fmt.format(e['mean_margin_a'])} [{ci}]"


def _format(report: dict[str, Any]) -> str:
    """The format line: matches to the target, sessions when N > 1."""
    n = report.get("session_wins", 1)
    target = f" to {report['target']}" if "target" in report else ""
    return f"matches{target}" + (f", sessions of first to {n} match wins" if n > 1 else "")


#: What the rating columns mean, in one line (the table after training prints it under its ratings).
RATINGS_LEGEND = ("Elo (BT): every match result fitted at once, mean 1500, +400 = 10:1 odds of a match; OpenSkill: "
                  "rated match by match, mu +- sigma")


def rename_agent(report: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """A copy of ``report`` with agent ``old`` named ``new`` everywhere (its pairs, ratings and timings), so that a
    table names a checkpoint shortly; ``report["specs"]`` keeps the whole spec of each renamed agent.

    Raises:
        ValueError: ``new`` is already another agent's name.
    """
    if new != old and new in report["agents"]:
        raise ValueError(f"rename_agent: {new!r} is already an agent of the report")

    def name(n: str) -> str:
        return new if n == old else n

    out = dict(report)
    out["agents"] = [name(n) for n in report["agents"]]
    out["pairs"] = [{**e, "a": name(e["a"]), "b": name(e["b"])} for e in report["pairs"]]
    for key in ("ratings", "openskill", "seconds_per_decision"):
        if key in report:
            out[key] = {name(n): v for n, v in report[key].items()}
    out["specs"] = {**report.get("specs", {}), new: report.get("specs", {}).get(old, old)}
    return out


def format_table(report: dict[str, Any], only: str | None = None, legend: bool = False) -> str:
    """The report as plain-text tables (pairs, then ratings), for the terminal; with sessions (``session_wins``
    above 1) the pair table gains the session columns. ``only``: show only the pairs of this agent, the others
    counted in one line (they still place the ratings); ``legend``: a line saying what the rating columns mean."""
    sessions = report.get("session_wins", 1) > 1
    hidden, full = 0, report
    if only is not None:
        shown = [e for e in report["pairs"] if only in (e["a"], e["b"])] or report["pairs"]  # none: every pair
        hidden = len(report["pairs"]) - len(shown)
        report = {**report, "pairs": shown}
    lines = [f"{report['rules']} ({report['num_players']} players), {_format(report)}, seed {report['seed']}, "
             f"at least {report['deals']} deals per pair, {report['seconds']:.1f} s "
             f"({report['deals_per_minute']:,.0f} deals/min)", ""]
    wa = max(8, *(len(e["a"]) for e in report["pairs"]))
    wb = max(8, *(len(e["b"]) for e in report["pairs"]))
    s_head = f"{'sessions':>8}  {'session win A [95% CI]':<23}  " if sessions else ""
    head = (f"{'A':<{wa}}  {'B':<{wb}}  {s_head}{'matches':>7}  {'match win A [95% CI]':<23}  {'deals':>6}  "
            f"{'deal win A [95% CI]':<23}  margin A per deal [95% CI]")
    lines += [head, "-" * len(head)]
    for e in report["pairs"]:
        match = f"{e['match_win_rate_a']:6.1%} [{e['match_ci_low']:.1%}, {e['match_ci_high']:.1%}]"
        deal = f"{e['deal_win_rate_a']:6.1%} [{e['deal_ci_low']:.1%}, {e['deal_ci_high']:.1%}]"
        sess = ""
        if sessions:
            sess = f"{e['session_win_rate_a']:6.1%} [{e['session_ci_low']:.1%}, {e['session_ci_high']:.1%}]"
            sess = f"{e['sessions']:>8}  {sess:<23}  "
        lines.append(f"{e['a']:<{wa}}  {e['b']:<{wb}}  {sess}{e['matches']:>7}  {match:<23}  {e['deals']:>6}  "
                     f"{deal:<23}  {_margin(e)}")
    if hidden:
        lines.append(f"(and {hidden} pair{'s' if hidden != 1 else ''} of the other agents against each other, not "
                     "shown: they place the ratings below; every pair is in the saved report)")
    wn = max(8, *(len(n) for n in report["agents"]))
    marks, note = unmet_marks(full)
    lines += ["", f"{'agent':<{wn}}  {'Elo (BT)':>8}  {'OpenSkill mu':>12}  {'sigma':>5}", "-" * (wn + 33)]
    for n in rating_order(report):
        sk = report["openskill"][n]
        lines.append(f"{n:<{wn}}  {report['ratings'][n]:>8.0f}{marks[n]:<1}  {sk['mu']:>11.2f}  {sk['sigma']:>5.2f}")
    if legend:
        lines.append(RATINGS_LEGEND)
    spd = report.get("seconds_per_decision") or {}
    if any(v is not None for v in spd.values()):
        lines += ["", "seconds per decision (wall, this run): " + ", ".join(
            f"{n} {v:.3g}" for n, v in spd.items() if v is not None)]
    return "\n".join(lines + ([note] if note else []))


def rating_order(report: dict[str, Any]) -> list[str]:
    """The agents by rating, best first; equal ratings keep the tournament's order."""
    return sorted(report["agents"], key=lambda n: -round(report["ratings"][n], 6))


def unmet_marks(report: dict[str, Any]) -> tuple[dict[str, str], str]:
    """``"*"`` for each agent that did not play every other (``versus_first``: only the first plays everyone), and the
    note that says which pairs never met: their ratings compare only through common opponents, so agents with the
    same results there get the same rating (a tie, whatever the order)."""
    counts = match_counts(report)
    names = report["agents"]
    unmet = [(names[i], names[j]) for i in range(len(names)) for j in range(i + 1, len(names)) if counts[i, j] == 0]
    marks = dict.fromkeys(names, "")
    for a, b in unmet:
        marks[a] = marks[b] = "*"
    if not unmet:
        return marks, ""
    shown = ", ".join(f"{a}-{b}" for a, b in unmet[:6]) + (f" and {len(unmet) - 6} more" if len(unmet) > 6 else "")
    return marks, (f"* did not play every agent (never met: {shown}): those ratings compare only through common "
                   "opponents; equal ratings are ties")


def format_markdown(report: dict[str, Any]) -> str:
    """The report as Markdown tables (README-ready)."""
    sessions = report.get("session_wins", 1) > 1
    lines = [f"{report['rules']}, {report['num_players']} players, {_format(report)}, seed {report['seed']}, at "
             f"least {report['deals']} deals per pair (duplicate: seats swapped on the same deals).", "",
             "| A | B | " + ("sessions | session win A (95% CI) | " if sessions else "")
             + "matches | match win A (95% CI) | deals | deal win A (95% CI) | margin A per deal (95% CI) |",
             "|---|---|" + ("---:|---|" if sessions else "") + "---:|---|---:|---|---|"]
    for e in report["pairs"]:
        sess = (f"{e['sessions']} | {e['session_win_rate_a']:.1%} ({e['session_ci_low']:.1%}–"
                f"{e['session_ci_high']:.1%}) | ") if sessions else ""
        lines.append(f"| {e['a']} | {e['b']} | {sess}{e['matches']} | {e['match_win_rate_a']:.1%} "
                     f"({e['match_ci_low']:.1%}–{e['match_ci_high']:.1%}) | {e['deals']} | "
                     f"{e['deal_win_rate_a']:.1%} ({e['deal_ci_low']:.1%}–{e['deal_ci_high']:.1%}) | "
                     f"{_margin(e, sep=' to ').replace('[', '(').replace(']', ')')} |")
    marks, note = unmet_marks(report)
    lines += ["", "| agent | Elo (Bradley–Terry) | OpenSkill μ ± σ |", "|---|---:|---|"]
    for n in rating_order(report):
        sk = report["openskill"][n]
        star = "\\*" if marks[n] else ""
        lines.append(f"| {n} | {report['ratings'][n]:.0f}{star} | {sk['mu']:.2f} ± {sk['sigma']:.2f} |")
    return "\n".join(lines + (["", "\\" + note] if note else []))


CSV_FIELDS = ("a", "b", "boards", "matches", "match_wins_a", "match_win_rate_a", "match_ci_low", "match_ci_high",
              "deals", "deal_wins_a", "deal_win_rate_a", "deal_ci_low", "deal_ci_high", "mean_margin_a",
              "margin_ci_low", "margin_ci_high", "sessions", "session_wins_a", "session_win_rate_a", "session_ci_low",
              "session_ci_high", "seconds", "deals_per_minute")


def to_csv(report: dict[str, Any]) -> str:
    """One CSV row per pair (columns :data:`CSV_FIELDS`)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for e in report["pairs"]:
        w.writerow(e)
    return buf.getvalue()


def match_counts(report: dict[str, Any]) -> np.ndarray:
    """int64[n, n]: matches played by each pair of ``report["agents"]`` (symmetric; 0 on the diagonal and for a pair
    not played, as with ``versus_first``)."""
    index = {name: i for i, name in enumerate(report["agents"])}
    counts = np.zeros((len(index), len(index)), dtype=np.int64)
    for e in report["pairs"]:
        i, j = index[e["a"]], index[e["b"]]
        counts[i, j] = counts[j, i] = e["matches"]
    return counts


def _head(name: str, width: int) -> int:
    """How many leading characters of ``name`` a shortened label keeps: its spec names (``policy:checkpoint:``), at
    most half of ``width``."""
    m = _SPEC_HEAD.match(name)
    return min(len(m.group()) if m else 0, width // 2)


def _cut(name: str, width: int) -> str:
    """``name`` in at most ``width`` characters: whole when it fits, else its spec names (the first third of a name
    without any), ``…`` and as much of its end as fits, from a ``/`` where there is one (a path's file and the whole
    folders above it)."""
    if len(name) <= width:
        return name
    head = _head(name, width) or width // 3
    tail = name[len(name) - (width - head - 1):]
    slash = tail.find("/")
    return name[:head] + "…" + (tail[slash:] if 0 < slash < len(tail) - 1 else tail)


def _window(name: str, at: int, width: int) -> str:
    """``name`` in at most ``width`` characters showing its character ``at`` (where it differs from names that
    :func:`_cut` shortens alike): its spec names, ``…``, the text from a third of the room before ``at``, ``…`` when
    more follows."""
    if len(name) <= width:
        return name
    head = _head(name, width)
    room = width - head - 2  # two ellipses at most
    end = min(len(name), max(head, at - room // 3) + room)
    start = max(head, end - room)
    return (name[:head] + ("…" if start > head else "") + name[start:end]
            + ("…" if end < len(name) else ""))


def short_labels(names: Sequence[str], width: int = LABEL_CHARS) -> list[str]:
    """Axis labels for ``names``: each at most ``width`` characters (>= 8), all distinct, in the order given.

    A name that fits is kept. A longer one keeps its spec names and its end, the middle becoming ``…``
    (``policy:checkpoint:…__1700000000/checkpoints/final.pt``). Names that would then read the same (two runs'
    ``final.pt`` whose run folders differ in the middle) show instead the stretch where they differ, between ``…``;
    names that still read the same (no window of ``width`` tells them apart, or equal names) end in ``#K``, K the
    name's position from 1.

    Raises:
        ValueError: ``width`` below 8.
    """
    if width < 8:
        raise ValueError(f"label width: at least 8 characters, got {width}")
    names = list(names)
    labels = [_cut(n, width) for n in names]
    for _ in range(len(names) + 1):
        groups: dict[str, list[int]] = {}
        for i, label in enumerate(labels):
            groups.setdefault(label, []).append(i)
        clashes = [idx for idx in groups.values() if len(idx) > 1]
        if not clashes:
            return labels
        for idx in clashes:
            at = len(os.path.commonprefix([names[i] for i in idx]))
            windows = [_window(names[i], at, width) for i in idx]
            if len(set(windows)) == 1:  # no window tells them apart: numbered
                windows = [_cut(names[i], width - len(f"#{i + 1}")) + f"#{i + 1}" for i in idx]
            for i, label in zip(idx, windows, strict=True):
                labels[i] = label
    return labels


def heatmap_figure(report: dict[str, Any]) -> Any:
    """The matplotlib Figure of :func:`save_heatmap`: agents named on the axes by :func:`short_labels`, the figure
    widened and heightened for the longest label so that the matrix keeps its size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = report["agents"]
    n = len(names)
    m = np.ma.masked_invalid(np.array([[np.nan if x is None else x for x in row] for row in report["win_matrix"]],
                                      dtype=np.float64))
    counts = match_counts(report)
    labels = short_labels(names)
    extra = max(0, max((len(s) for s in labels), default=0) - 12)  # the sizes below fit labels of 12 characters
    cmap = plt.get_cmap("RdBu").with_extremes(bad=NOT_PLAYED)  # a pair not played must not look like 50%
    fig, ax = plt.subplots(figsize=(1.3 * n + 2.8 + 0.075 * extra, 1.05 * n + 2.0 + 0.045 * extra))
    im = ax.imshow(m, vmin=0.0, vmax=1.0, cmap=cmap)
    ax.set_xticks(range(n), labels, rotation=35, ha="right", rotation_mode="anchor")
    ax.set_yticks(range(n), labels)
    ax.set_xlabel("column agent (opponent)")
    ax.set_ylabel("row agent")
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            if m.mask[i, j]:
                ax.text(j, i, "not\nplayed", ha="center", va="center", color="dimgrey", fontsize=8)
            else:
                ax.text(j, i, f"{m[i, j]:.0%}\nn={counts[i, j]:,}", ha="center", va="center", fontsize=8.5,
                        color="white" if abs(m[i, j] - 0.5) > 0.3 else "black")
    ax.set_title(f"match win rate, row vs column ({report['rules']}, {report['num_players']} players)\n"
                 "each cell: the row agent's share of the pair's matches; n: matches played", fontsize=10)
    bar = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    bar.set_label("row agent's match win rate")
    bar.ax.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
    fig.tight_layout()
    return fig


def save_heatmap(report: dict[str, Any], path: Path) -> None:
    """A PNG heatmap of the match win matrix: the row agent's match win rate against the column agent, with the
    matches played in each cell; a pair not played (and the diagonal) is grey (:data:`NOT_PLAYED`), not the colour
    of 50%. Names longer than :data:`LABEL_CHARS` are shortened on the axes (:func:`short_labels`)."""
    import matplotlib.pyplot as plt

    from agents.files import atomic_write

    fig = heatmap_figure(report)
    try:  # atomically, a link kept a link, a device or FIFO written directly (agents.files)
        atomic_write(path, lambda f: fig.savefig(f, format=Path(path).suffix[1:].lower() or None, dpi=120))
    finally:
        plt.close(fig)
