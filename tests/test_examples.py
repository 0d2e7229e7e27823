"""The worked examples of docs/ecosystem.md run at tiny budgets and report what they learned.

Each example's ``main(argv)`` is the script's command line (``python -m train.example_X ARGS``) and returns the
figures it prints. The budgets here only show that the examples run end to end and that their evaluation is sane;
docs/ecosystem.md gives figures of larger budgets. The RLlib example needs its own virtual environment; CI runs it
after the tests (``.ci/run``).
"""

from __future__ import annotations

import pytest
import torch

from train import example_sb3, example_tianshou, example_torchrl


def check_figures(out: dict[str, float], printed: str) -> None:
    assert 0.0 <= out["win_rate"] <= 1.0 and 0.0 <= out["random_win_rate"] <= 1.0
    assert out["train_seconds"] > 0
    assert "deal win rate" in printed and "random legal moves" in printed


@pytest.mark.slow  # a training run, however tiny
def test_sb3_maskable_ppo_example(capsys):
    out = example_sb3.main(["--timesteps", "256", "--n-steps", "128", "--eval-deals", "4"])
    check_figures(out, capsys.readouterr().out)


@pytest.mark.slow  # a training run, however tiny
def test_torchrl_example_runs_on_the_unwrapped_aec_env(capsys):
    out = example_torchrl.main(["--frames", "200", "--frames-per-batch", "100", "--epochs", "1", "--eval-deals", "4"])
    check_figures(out, capsys.readouterr().out)
    assert out["frames_per_s"] > 0


@pytest.mark.parametrize(("reward", "done", "expected", "complete"), [
    ([0, 0, 3, 0, -1], [False, False, True, False, False], [3, 3, 3, -1, -1], [True, True, True, False, False]),
    ([1, 0, 2], [True, False, True], [1, 2, 2], [True, True, True]),
])
def test_torchrl_example_returns_to_go(reward, done, expected, complete):
    ret, ok = example_torchrl.returns_to_go(torch.tensor(reward, dtype=torch.float32), torch.tensor(done))
    assert ret.tolist() == expected and ok.tolist() == complete


@pytest.mark.slow  # a training run, however tiny
def test_tianshou_example(capsys):
    out = example_tianshou.main(["--steps", "128", "--steps-per-collect", "128", "--num-envs", "2",
                                 "--eval-deals", "4"])
    check_figures(out, capsys.readouterr().out)
