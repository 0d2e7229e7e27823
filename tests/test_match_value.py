"""The match-aware objective (train/match_value.py): the match-win table and the rewards it pays."""

from __future__ import annotations

import numpy as np
import pytest

from cassino_env.rules import make_rules
from train.config import ConfigError
from train.match_value import MatchValue, deal_distribution
from train.ppo_selfplay import Args


@pytest.fixture(scope="module")
def classic_value():
    return MatchValue.of(make_rules("classic"), games=64, deals=2)


def test_deal_distribution_is_symmetric_and_sums_to_one():
    d = deal_distribution(make_rules("classic"), games=32, deals=2)
    assert d.shape[0] == d.shape[1] and np.isclose(d.sum(), 1.0) and np.allclose(d, d.T)
    assert d[0, 0] == 0.0  # classic deals always hand out points (docs/rules.md 2.6, 5.1)


def test_win_table_is_a_fair_monotone_chance(classic_value):
    W = classic_value.W
    assert W.shape == (21, 21) and np.isclose(W[0, 0], 0.5)
    assert np.allclose(W + W.T, 1.0)  # symmetric deals: my chance plus yours is one
    assert (W >= 0).all() and (W <= 1).all()
    assert (np.diff(W, axis=0) >= -1e-12).all()  # more points of mine never lower my chance
    assert (np.diff(W, axis=1) <= 1e-12).all()
    assert W[20, 0] > 0.95 and W[0, 20] < 0.05


def test_rewards_telescope_to_the_match_result(classic_value):
    # a three-deal match: 0-0 -> 6-5 -> 13-9 -> 22-12, won by side 0
    scores = [(0, 0), (6, 5), (13, 9), (22, 12)]
    total = np.zeros(2)
    for i in range(3):
        done = i == 2
        r = classic_value.rewards(np.array([scores[i]]), np.array([scores[i + 1]]), np.array([done]),
                                  np.array([0 if done else -1]))
        assert np.isclose(r.sum(), 0.0)  # zero-sum between the sides
        total += r[0]
    assert np.allclose(total, [1.0, -1.0])


def test_a_distribution_with_a_scoreless_deal_is_refused():
    d = np.zeros((3, 3))
    d[0, 0] = d[1, 2] = d[2, 1] = 1 / 3
    with pytest.raises(ValueError, match="0-0"):
        MatchValue(d, 21)


def test_objective_is_checked_with_the_other_fields():
    with pytest.raises(ConfigError) as info:
        Args(objective="matches")
    assert info.value.field == "objective"
    with pytest.raises(ConfigError) as info:
        Args(objective="match", shaping=True)
    assert info.value.field == "shaping"
    with pytest.raises(ConfigError) as info:
        Args(objective="match", num_players=3)  # classic with 3 players: three sides
    assert info.value.field == "objective"


def test_a_tiny_run_trains_on_the_match_objective(tmp_path):
    """objective=match end to end: the run trains, and its value targets stay within a match result's range."""
    from train.plot import load_scalars
    from train.ppo_selfplay import make_args, train

    tiny = dict(threads=1, total_timesteps=3 * 768, num_envs=16, hidden=16, embed=8, num_minibatches=2,
                update_epochs=1, eval_every=0, checkpoint_every=0, final_eval_deals=0, progress_every_s=1e9,
                max_train_seconds=0.0)
    args = make_args({**tiny, "run_dir": str(tmp_path), "objective": "match"})
    final = train(args)
    assert final.is_file()
    value_loss = load_scalars(tmp_path)["losses/value_loss"][1]
    assert np.isfinite(value_loss).all() and (value_loss < 4.0).all()  # returns lie in [-2, 2]
