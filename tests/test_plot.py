"""Figures that teach and numbers that say what they are: the learning-curve figure (train/plot.py: k/M step ticks,
labelled axes, interval bands, legend in ladder order outside the panels), the heatmap's unplayed pairs, match
counts and short distinct labels for long agent names (train/report.py), and the trainer's evaluation schedule and
labels (train/ppo_selfplay.py: an evaluation interval that gives short runs a curve, the Wilson interval logged with
each evaluation, the labelled progress line, the announced rounding of total_timesteps)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

pytest.importorskip("torch")

import matplotlib  # noqa: E402
import matplotlib.colors  # noqa: E402

from agents.registry import LADDER  # noqa: E402
from train.config import ConfigError  # noqa: E402
from train.plot import draw_recipe, draw_run, format_steps, ladder_order, load_recipe, load_scalars, plot_run  # noqa: E402
from train.ppo_selfplay import CONFIGS_DIR, eval_interval, load_config, make_args, train  # noqa: E402
from train.report import LABEL_CHARS, NOT_PLAYED, heatmap_figure, match_counts, short_labels  # noqa: E402

matplotlib.use("Agg")

STEPS = np.array([0, 49_152, 98_304, 147_456, 196_608, 245_760, 294_912])
BOTS = ("advanced", "random", "greedy")  # deliberately not in ladder order


def synthetic_scalars() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    out = {}
    for k, bot in enumerate(BOTS):
        win = np.linspace(0.3, 0.6, len(STEPS)) + 0.1 * k
        out[f"eval/winrate_vs_{bot}"] = (STEPS, win)
        out[f"eval/winrate_ci_low_vs_{bot}"] = (STEPS, win - 0.05)
        out[f"eval/winrate_ci_high_vs_{bot}"] = (STEPS, win + 0.05)
        out[f"eval/points_vs_{bot}"] = (STEPS, win * 4 - 2)
    for tag in ("losses/policy_loss", "losses/value_loss", "charts/SPS"):
        out[tag] = (STEPS[1:], np.linspace(1.0, 2.0, len(STEPS) - 1))
    return out


def test_step_ticks_read_in_k_and_m() -> None:
    assert [format_steps(x) for x in (0, 999, 1000, 49_152, 250_000, 1_000_000, 1_250_000, 12_000_000)] == [
        "0", "999", "1k", "49k", "250k", "1M", "1.2M", "12M"]


def test_ladder_order_puts_the_ladder_first_weakest_first() -> None:
    assert ladder_order(["pimc", *reversed(LADDER), "checkpoint:x.pt"]) == [*LADDER, "checkpoint:x.pt", "pimc"]


def test_the_figure_labels_its_axes_draws_bands_and_orders_the_legend_by_the_ladder() -> None:
    fig = draw_run(synthetic_scalars(), "run", {"eval_deals": 200})
    fig.canvas.draw()
    ax_win = fig.axes[0]
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["vs random", "vs greedy", "vs advanced"]
    # one band (a filled polygon) per bot: the Wilson interval
    assert len(ax_win.collections) == len(BOTS)
    assert "200 duplicate deals" in ax_win.get_title() and "argmax" in ax_win.get_title()
    for ax in fig.axes:
        assert ax.get_xlabel() and ax.get_ylabel(), ax.get_title()
    labels = [t.get_text() for t in ax_win.get_xticklabels() if t.get_text()]
    assert labels and all(t == "0" or t.endswith(("k", "M")) for t in labels), labels
    # the legend sits outside every panel: it overlaps no axes
    box = legend.get_window_extent()
    assert not any(box.overlaps(ax.get_window_extent()) for ax in fig.axes)
    matplotlib.pyplot.close(fig)


def test_plot_run_reads_a_run_folder(tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(tmp_path))
    for tag, (steps, vals) in synthetic_scalars().items():
        for s, v in zip(steps, vals, strict=True):
            writer.add_scalar(tag, float(v), int(s))
    writer.close()
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"preset": "classic", "eval_deals": 200}), encoding="utf-8")
    assert set(load_scalars(tmp_path)) == set(synthetic_scalars())
    out = plot_run(tmp_path, tmp_path / "curves.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


RECIPE_GATES = [  # the first gate makes the first best (no margin); a stage ends at its last gate
    {"n": 0, "stage": "ppo", "stage_index": 0, "at_s": 10.0, "margin": None, "se": None, "promoted": True,
     "gain": True, "winrate_vs_advanced": 0.3, "points_vs_advanced": -2.0, "proxy_regret": 0.5},
    {"n": 1, "stage": "ppo", "stage_index": 0, "at_s": 20.0, "margin": 0.8, "se": 0.2, "promoted": True,
     "gain": True, "winrate_vs_advanced": 0.4, "points_vs_advanced": -1.0, "proxy_regret": 0.4},
    {"n": 2, "stage": "last_round", "stage_index": 1, "at_s": 30.0, "margin": -0.1, "se": 0.2, "promoted": False,
     "gain": False},
    {"n": 3, "stage": "early_rounds", "stage_index": 2, "at_s": 40.0, "margin": 0.3, "se": 0.2, "promoted": True,
     "gain": True, "winrate_vs_advanced": 0.45, "points_vs_advanced": -0.5, "proxy_regret": 0.3},
]


def write_recipe_run(run_dir: Path) -> None:
    """A fake recipe run folder (train/recipe.py): recipe.json under way in its fourth stage, config.yaml, events."""
    from torch.utils.tensorboard import SummaryWriter

    state = {"version": 1, "elapsed_s": 50.0, "stage_index": 3, "stage_dir": "stages/03_consolidate", "stall": 1,
             "best": "checkpoints/best.pt", "best_stage": "early_rounds", "gates": RECIPE_GATES, "last_gate_s": 40.0,
             "done": False}
    (run_dir / "recipe.json").write_text(json.dumps(state), encoding="utf-8")
    (run_dir / "config.yaml").write_text(yaml.safe_dump({"preset": "classic", "num_players": 2, "hours": 0.5,
                                                         "gate_deals": 64, "gate_min_z": 1.0}), encoding="utf-8")
    writer = SummaryWriter(str(run_dir))
    for g in RECIPE_GATES:
        step = int(g["at_s"])
        if g["margin"] is not None:
            writer.add_scalar("gate/margin", g["margin"], step)
            writer.add_scalar("gate/margin_se", g["se"], step)
        writer.add_scalar("gate/promoted", float(g["promoted"]), step)
        writer.add_scalar("gate/stage", float(g["stage_index"]), step)
        if g["promoted"]:
            win = g["winrate_vs_advanced"]
            for tag, value in (("winrate", win), ("winrate_ci_low", win - 0.03), ("winrate_ci_high", win + 0.03),
                               ("points", g["points_vs_advanced"])):
                writer.add_scalar(f"eval/{tag}_vs_advanced", value, step)
            writer.add_scalar("eval/proxy_regret", g["proxy_regret"], step)
    writer.close()


def test_plot_draws_a_recipe_run_on_one_time_axis(tmp_path: Path) -> None:
    write_recipe_run(tmp_path)
    recipe = load_recipe(tmp_path)
    assert recipe is not None and recipe["gates"] == RECIPE_GATES and recipe["elapsed_s"] == 50.0
    # one span a stage, end to end; the stage under way (not gated yet) runs to the time used
    assert recipe["spans"] == [("ppo", 0.0, 20.0), ("last_round", 20.0, 30.0), ("early_rounds", 30.0, 40.0),
                               ("consolidate", 40.0, 50.0)]
    fig = draw_recipe(load_scalars(tmp_path), recipe, "run", {"gate_deals": 64})
    strip, best, gate, proxy, points = fig.axes  # the stage strip, three panels, the points' twin axis
    assert [t.get_text() for t in strip.texts] == ["ppo", "last round", "early rounds", "consolidate"]
    assert "64 duplicate deals" in gate.get_title() and proxy.get_ylabel().startswith("regret")
    assert best.get_ylabel() and points.get_ylabel() and proxy.get_xlabel().startswith("minutes of the run")
    assert [t.get_text() for t in gate.get_legend().get_texts()] == ["promoted (a gain) (2)", "kept the best (1)"]
    matplotlib.pyplot.close(fig)
    out = plot_run(tmp_path)
    assert out == tmp_path / "learning_curves.png" and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (tmp_path / "recipe.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match="recipe.json: not readable JSON"):
        load_recipe(tmp_path)
    assert load_recipe(tmp_path / "no_such_run") is None  # an ordinary run: drawn as before


def test_plot_names_a_missing_folder_a_file_and_a_folder_without_events(tmp_path: Path, capsys) -> None:
    """A new-user trial: ``cassino plot runs/nonexistent`` said the folder had no event files."""
    from train import cli

    (tmp_path / "empty").mkdir()
    (tmp_path / "a_file").write_text("x\n")
    for name, said in (("nonexistent", "no such folder"), ("a_file", "not a folder"),
                       ("empty", "no TensorBoard event files (events.out.tfevents.*) in this folder")):
        assert cli.main(["plot", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"error: {tmp_path / name}: {said}") and len(err.splitlines()) == 1, err
    assert not (tmp_path / "nonexistent").exists()


def test_plot_names_an_odd_folder_argument_in_one_line(tmp_path: Path, capsys, monkeypatch) -> None:
    """A breaker review: ``cassino plot $'new\\nline'`` printed a two-line error, ``cassino plot ''`` named the
    current folder (``.``), and a name too long to look up was an OSError's text of 5,000 characters."""
    from train import cli

    monkeypatch.chdir(tmp_path)
    for arg, said in (("new\nline", "error: 'new\\nline': no such folder (a run folder of cassino train)"),
                      ("", "error: run_dir: the folder argument is empty; name a run folder of cassino train"),
                      ("x" * 5000, "xxx' (5002 characters): no such folder (a run folder of cassino train)")):
        assert cli.main(["plot", arg]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and said in err and len(err) < 500, err
    assert list(tmp_path.iterdir()) == []


def report_with_unplayed_pairs() -> dict:
    names = ["a", "b", "c"]
    return {"rules": "classic", "num_players": 2, "agents": names,
            "pairs": [{"a": "a", "b": "b", "matches": 30}, {"a": "a", "b": "c", "matches": 28}],
            "win_matrix": [[None, 0.5, 0.25], [0.5, None, None], [0.75, None, None]]}


def test_the_heatmap_greys_unplayed_pairs_and_counts_matches() -> None:
    report = report_with_unplayed_pairs()
    assert match_counts(report).tolist() == [[0, 30, 28], [30, 0, 0], [28, 0, 0]]
    fig = heatmap_figure(report)
    ax = fig.axes[0]
    (image,) = ax.get_images()
    data = image.get_array()
    assert data.mask.tolist() == [[True, False, False], [False, True, True], [False, True, True]]
    # masked cells get the grey "bad" colour, not the colormap's middle (the colour of 50%)
    assert image.get_cmap().get_bad().tolist() == list(matplotlib.colors.to_rgba(NOT_PLAYED))
    assert not np.allclose(image.get_cmap()(0.5), matplotlib.colors.to_rgba(NOT_PLAYED))
    texts = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text() for t in ax.texts}
    assert texts[(0, 1)] == "50%\nn=30" and texts[(2, 0)] == "75%\nn=28"
    assert texts[(1, 2)] == texts[(2, 1)] == "not\nplayed"
    matplotlib.pyplot.close(fig)


RUNS = "/home/someone/projects/cassino/runs"
LONG_NAMES = [f"checkpoint:{RUNS}/classic__ppo_selfplay__1__1700000000/checkpoints/final.pt",
              f"policy:checkpoint:{RUNS}/classic__ppo_selfplay__1__1700000000/checkpoints/final.pt",
              f"checkpoint:{RUNS}/classic__ppo_selfplay__2__1700000999/checkpoints/final.pt",
              "checkpoint:runs/classic__ppo_selfplay__2__1700000999/checkpoints/step_00000003072.pt",
              "random", "advanced"]


def test_long_agent_names_get_short_distinct_labels() -> None:
    labels = short_labels(LONG_NAMES)
    assert all(len(s) <= LABEL_CHARS for s in labels) and len(set(labels)) == len(labels)
    assert labels[4:] == ["random", "advanced"]  # names that fit are kept
    assert labels[1] == "policy:checkpoint:…/final.pt"  # the spec names and the file, the folders between cut
    assert labels[3] == "checkpoint:…/step_00000003072.pt"
    assert "__1__" in labels[0] and "__2__" in labels[2]  # two runs' final.pt: where their paths differ
    # names no window tells apart (equal ones too) are numbered by position; every width down to 8 holds
    same = ["x" * 60, "x" * 60, "y" * 30 + "a" + "y" * 30, "y" * 30 + "b" + "y" * 30]
    for width in (8, 12, LABEL_CHARS):
        labels = short_labels(same + LONG_NAMES, width)
        assert all(len(s) <= width for s in labels) and len(set(labels)) == len(labels), labels
    assert short_labels(same)[:2] == ["x" * 11 + "…" + "x" * 22 + "#1", "x" * 11 + "…" + "x" * 22 + "#2"]
    with pytest.raises(ValueError, match="at least 8"):
        short_labels(LONG_NAMES, 7)


def test_the_heatmap_of_long_agent_names_stays_readable() -> None:
    n = len(LONG_NAMES)
    pairs = [{"a": LONG_NAMES[i], "b": LONG_NAMES[j], "matches": 20} for i in range(n) for j in range(i + 1, n)]
    report = {"rules": "classic", "num_players": 2, "agents": LONG_NAMES, "pairs": pairs,
              "win_matrix": [[None if i == j else 0.5 for j in range(n)] for i in range(n)]}
    fig = heatmap_figure(report)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == short_labels(LONG_NAMES)
    assert [t.get_text() for t in ax.get_yticklabels()] == short_labels(LONG_NAMES)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    page = fig.bbox
    for text in (*ax.get_xticklabels(), *ax.get_yticklabels(), ax.title, ax.xaxis.label, ax.yaxis.label):
        box = text.get_window_extent(renderer)
        assert page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1 and page.y0 - 1 <= box.y0 and box.y1 <= page.y1 + 1, (
            text.get_text(), box, page)
    cell = ax.get_window_extent(renderer).width / n / fig.dpi  # inches a cell: the labels took no room from it
    assert cell >= 0.8, cell
    matplotlib.pyplot.close(fig)


def test_the_default_evaluation_interval_gives_short_runs_a_curve() -> None:
    assert eval_interval(None, 9_977_856) == 1_000_000  # the default 10M run: as before, every 1M
    assert eval_interval(1234, 294_912) == 1234 and eval_interval(0, 294_912) == 0  # given: kept
    rollout = 49_152
    for rollouts in (6, 10, 40, 203):  # 300k, 500k, 2M, 10M steps
        total = rollouts * rollout
        every = eval_interval(None, total)
        marks = {s // every for s in range(rollout, total + 1, rollout)}
        points = 1 + len(marks)  # step 0, then every rollout end that crosses a multiple of the interval
        assert points >= min(8, 1 + rollouts), (total, points)
        assert points <= 12 or every == 1_000_000


def test_a_short_run_logs_intervals_and_labels_what_it_prints(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    args = make_args(load_config(CONFIGS_DIR / "ppo_tiny.yaml"))
    args = dataclasses.replace(args, run_dir=str(tmp_path), eval_every=None, total_timesteps=5000,
                               final_eval_deals=20, eval_opponents=("greedy",), final_eval_opponents=("greedy",))
    train(args)
    out = capsys.readouterr().out
    assert "total_timesteps=5,000 is rounded to 4,608 env steps" in out  # 3 rollouts of 32 x 48
    assert "deal win rate (argmax play) at step 1,536 vs greedy" in out  # the eval's own step, not step 0
    assert "match win rates" in out  # the final table says what it is
    scalars = load_scalars(tmp_path)
    steps, win = scalars["eval/winrate_vs_greedy"]
    assert steps.tolist() == [0, 1536, 3072, 4608]  # an eighth of the run is under a rollout: every rollout
    lo, hi = scalars["eval/winrate_ci_low_vs_greedy"][1], scalars["eval/winrate_ci_high_vs_greedy"][1]
    assert (lo <= win).all() and (win <= hi).all() and (0 <= lo).all() and (hi <= 1).all() and (lo < hi).all()


def test_the_speed_panel_leaves_out_the_compile_and_a_short_run_says_it_stopped_early() -> None:
    """charts/SPS is a running average from the start, the compile included: drawn as it was, it rose like a ramp."""
    from train.plot import draw_run, speed_between, stopped_early

    steps = np.array([1_000.0, 2_000.0, 3_000.0, 4_000.0])
    seconds = np.array([100.0, 101.0, 102.0, 103.0])  # 100 s of compile, then 1,000 steps a second
    at, speed = speed_between(steps, steps / seconds)
    assert at.tolist() == [2_000.0, 3_000.0, 4_000.0] and np.allclose(speed, 1_000.0)
    assert stopped_early({"total_timesteps": 10_000_000, "num_envs": 64, "num_steps": 96}, 5_505_024) == (
        "stopped early: 5.5M of 10M env steps")
    assert stopped_early({"total_timesteps": 6_144, "num_envs": 64, "num_steps": 96}, 6_144) == ""
    scalars = synthetic_scalars()
    scalars["charts/SPS"] = (steps, steps / seconds)
    fig = draw_run(scalars, "run", {"total_timesteps": 10_000_000})
    titles = [ax.get_title() for ax in fig.axes]
    assert any(t.startswith("training speed between points") for t in titles), titles
    assert "stopped early: 295k of 10M env steps" in fig.legends[0].get_title().get_text()
    matplotlib.pyplot.close(fig)
    fig = draw_run(synthetic_scalars(), "run", {"total_timesteps": 294_912})
    assert "stopped early" not in fig.legends[0].get_title().get_text()
    matplotlib.pyplot.close(fig)


def test_a_recipe_run_stopped_before_its_budget_says_so(tmp_path: Path) -> None:
    write_recipe_run(tmp_path)  # 50 s used of a 0.5 h budget, not done
    recipe = load_recipe(tmp_path)
    fig = draw_recipe(load_scalars(tmp_path), recipe, "run", {"hours": 0.5})
    assert "stopped at 0.8 of its 30 minutes" in fig.legends[0].get_title().get_text()
    matplotlib.pyplot.close(fig)
    fig = draw_recipe(load_scalars(tmp_path), {**recipe, "done": True}, "run", {"hours": 0.5})
    assert "stopped at" not in fig.legends[0].get_title().get_text()
    matplotlib.pyplot.close(fig)
