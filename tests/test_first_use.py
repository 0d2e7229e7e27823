"""First use, what a newcomer trips over (issue 26 items 9-16): the test run says what it is doing and why tests
skip, the notebook command works, a bare config name is found from anywhere, ``cassino eval``'s bar counts right and
stays out of files, ``--versus-first`` ratings say which agents never met, ``cassino play``'s help explains ``#17``."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT


def _pyproject() -> str:
    return (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")


# --- 9, 10: the run says that kernels compile, and why a test skips -----------------------------------------------

def test_a_quiet_run_starts_by_saying_what_the_kernels_do(repo_root: Path) -> None:
    """Under -q pytest prints no header, and it captures the kernels' compile notice: the first line says it."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "--co", "-p", "no:cacheprovider",
                           "tests/test_markers.py"], cwd=repo_root, capture_output=True, text=True, timeout=600,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith("cassino-rl: numba kernels "), proc.stdout[:500]
    assert ("compile first" in first) or ("cached and current" in first)


def test_the_default_run_prints_skip_reasons() -> None:
    addopts = re.search(r'^addopts = "(.*)"$', _pyproject(), re.MULTILINE)
    assert addopts and "-rs" in addopts.group(1).split()


# --- 11: the notebook command ---------------------------------------------------------------------------------------

def test_the_dev_extra_installs_what_the_notebook_command_needs(repo_root: Path) -> None:
    dev = _pyproject().split("\ndev = [", 1)[1].split("\n]", 1)[0]
    assert "nbconvert" in dev and "nbmake" in dev
    proc = subprocess.run([sys.executable, "-m", "nbconvert", "--version"], capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0 and re.fullmatch(r"\d+\.\d+\.\d+\s*", proc.stdout), proc.stderr


def test_the_notebook_and_the_readme_agree_on_the_default_run_time(repo_root: Path) -> None:
    """The notebook said "~20 minutes" for `cassino train`, the README "about 11 minutes"."""
    cells = json.loads((repo_root / "notebooks" / "learning_curves.ipynb").read_text(encoding="utf-8"))["cells"]
    text = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    assert "jupyter nbconvert --to notebook --execute notebooks/learning_curves.ipynb" in text
    said = re.findall(r"(\d+) minutes on 2 CPU cores", text)
    readme = re.findall(r"about (\d+) minutes on 2 CPU cores", (repo_root / "README.md").read_text(encoding="utf-8"))
    assert said and readme and set(said) == {readme[0]}


# --- 12: a bare config name from anywhere ---------------------------------------------------------------------------

def test_a_config_name_is_found_outside_the_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from train.config import CONFIGS_DIR, ConfigError, find_config, load_config
    from train.ppo_selfplay import Args

    monkeypatch.chdir(tmp_path)  # `--config configs/ppo_tiny.yaml` failed here; the default config was found
    tiny = load_config(Args, "configs/ppo_tiny.yaml")
    assert tiny == load_config(Args, CONFIGS_DIR / "ppo_tiny.yaml") and tiny["total_timesteps"] > 0
    assert find_config("ppo_tiny") == find_config("ppo_tiny.yaml") == CONFIGS_DIR / "ppo_tiny.yaml"
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "ppo_tiny.yaml").write_text("total_timesteps: 64\n", encoding="utf-8")
    assert load_config(Args, "configs/ppo_tiny.yaml") == {"total_timesteps": 64}  # a file of one's own comes first
    with pytest.raises(ConfigError, match=r"configs/ppo_nope\.yaml: .*the shipped configs are in .*ppo_tiny\.yaml"):
        load_config(Args, "configs/ppo_nope.yaml")


# --- 13: cassino eval's progress bar --------------------------------------------------------------------------------

class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "file"])
def test_the_eval_bar_never_passes_its_total_and_stays_out_of_files(terminal: bool,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A pair plays whole matches, so it plays a few deals more than asked: the bar showed "152deal" of 150."""
    from train.evaluate import evaluate

    err = _Terminal() if terminal else io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    report = evaluate(["random", "greedy", "random"], deals=5, seed=1, progress=True, batch_games=4)
    assert all(e["deals"] >= 5 for e in report["pairs"]) and any(e["deals"] > 5 for e in report["pairs"])
    text = err.getvalue()
    if not terminal:
        assert text == ""  # no \r lines in a log file
        return
    counts = [tuple(map(int, m)) for m in re.findall(r"(\d+)/(\d+)", text)]
    assert counts and all(done <= total == 15 for done, total in counts)
    assert counts[-1] == (15, 15)


# --- 14: ratings of agents that never met ---------------------------------------------------------------------------

def test_versus_first_ratings_mark_the_agents_that_never_met() -> None:
    from train.evaluate import evaluate
    from train.report import format_markdown, format_table

    report = evaluate(["greedy", "random", "random"], deals=4, seed=2, versus_first=True, batch_games=4)
    table, markdown = format_table(report), format_markdown(report)
    names = report["agents"]
    assert f"never met: {names[1]}-{names[2]}" in table and "equal ratings are ties" in table
    rows = {line.split()[0]: line for line in table.splitlines() if line.split() and line.split()[0] in names}
    assert "*" in rows[names[1]] and "*" in rows[names[2]] and "*" not in rows[names[0]]
    assert "never met" in markdown
    full = evaluate(["greedy", "random"], deals=4, seed=2, batch_games=4)
    assert "never met" not in format_table(full) and "*" not in format_table(full).split("agent")[-1]


# --- 16: cassino play's help explains #17 ---------------------------------------------------------------------------

def test_play_help_explains_the_raw_id_form() -> None:
    """An error said "raw move ids run from #0 to #N" but `?` never said what #17 is."""
    from train.play import play_session

    out = io.StringIO()
    assert play_session("greedy", "classic", inp=io.StringIO("?\n#999\nq\n"), out=out, seed=1) == 0
    text = out.getvalue()
    help_at, error_at = text.index("#17"), text.index("raw move ids run from #0")
    assert help_at < error_at and "move number 1 is #0" in text
