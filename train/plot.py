"""Learning curves of a training run, read from its TensorBoard event files and drawn to a PNG.

Usage::

    cassino plot runs/classic__ppo_selfplay__1__1700000000          # writes RUN_DIR/learning_curves.png
    cassino plot RUN_DIR --out curves.png

>>> load_scalars("no/such/run")
Traceback (most recent call last):
...
FileNotFoundError: no/such/run: no TensorBoard event files (events.out.tfevents.*) in this folder
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import numpy as np
import tyro

#: Loss panels of the figure: (tag, title).
LOSS_TAGS = (
    ("losses/policy_loss", "policy loss"),
    ("losses/value_loss", "value loss"),
    ("losses/entropy", "entropy (legal moves, nats)"),
    ("losses/approx_kl", "approx. KL"),
    ("losses/clipfrac", "clip fraction"),
    ("losses/explained_variance", "explained variance"),
)


def load_scalars(run_dir: str | Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every scalar of a run's event files: ``{tag: (steps int64[n], values float64[n])}``, sorted by step.

    When a resumed run wrote a step twice, the value written last is kept.

    Raises:
        FileNotFoundError: the folder has no event files.
    """
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_dir = Path(run_dir)
    files = sorted(run_dir.glob("events.out.tfevents.*"), key=lambda p: p.stat().st_mtime)
    if not files:
        raise FileNotFoundError(f"{run_dir}: no TensorBoard event files (events.out.tfevents.*) in this folder")
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


def plot_run(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """Draw win rate against each evaluated bot over env steps, the losses and SPS; return the PNG's path.

    Args:
        run_dir: a run folder of ``cassino train`` (holding its event files).
        out: the PNG to write; default ``RUN_DIR/learning_curves.png``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run_dir = Path(run_dir)
    scalars = load_scalars(run_dir)
    out = Path(out) if out is not None else run_dir / "learning_curves.png"
    fig, axes = plt.subplots(2, 4, figsize=(18, 8))
    ax = axes[0, 0]
    win_tags = sorted(t for t in scalars if t.startswith("eval/winrate_vs_"))
    for tag in win_tags:
        steps, vals = scalars[tag]
        ax.plot(steps, vals, marker="o", ms=3, label=tag.removeprefix("eval/winrate_vs_"))
    ax.axhline(0.5, color="grey", lw=0.8, ls=":")
    ax.set_ylim(0, 1)
    ax.set_title("win rate vs bots (duplicate deals)")
    ax.set_xlabel("env steps")
    if win_tags:
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "no evaluations logged", ha="center", va="center", transform=ax.transAxes)
    panels = [*LOSS_TAGS, ("charts/SPS", "env steps per second")]
    for ax, (tag, title) in zip(axes.flat[1:], panels, strict=True):
        if tag in scalars:
            steps, vals = scalars[tag]
            ax.plot(steps, vals, lw=1)
        else:
            ax.text(0.5, 0.5, f"{tag} not logged", ha="center", va="center", transform=ax.transAxes)
        ax.set_title(title)
        ax.set_xlabel("env steps")
    fig.suptitle(run_dir.name)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def main(run_dir: Annotated[Path, tyro.conf.Positional, tyro.conf.arg(metavar="RUN_DIR")],
         out: Path | None = None) -> int:
    """Draw a training run's learning curves (win rate vs each bot, losses, SPS) from its TensorBoard files to a PNG.

    Args:
        run_dir: the run folder written by cassino train (it holds events.out.tfevents.* files).
        out: the PNG to write (default RUN_DIR/learning_curves.png).
    """
    from train.cli import bad_input

    with bad_input(FileNotFoundError) as failed:
        path = plot_run(run_dir, out)
    if failed.code:
        return failed.code
    print(f"wrote {path}")
    return 0
