"""The PPO update split into shards (``update_shards``): the same update as one pass, up to float rounding."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import train.ppo_selfplay as ps  # noqa: E402
from train.config import CONFIGS_DIR, ConfigError  # noqa: E402
from train.ppo_selfplay import load_config  # noqa: E402


class _Captured(Exception):
    """Raised by the stand-in update once it has copied what it was given."""


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A tiny run's first update: the policy, its optimiser, the rollout, the options and the generator's state."""
    got: dict = {}
    real = ps.ppo_update

    def capture(policy, optimizer, ro, args, rng):
        got.update(policy=copy.deepcopy(policy), opt=copy.deepcopy(optimizer.state_dict()), ro=copy.deepcopy(ro),
                   args=args, rng=copy.deepcopy(rng.bit_generator.state))
        raise _Captured  # stop the run here

    values = {**load_config(CONFIGS_DIR / "ppo_tiny.yaml"), "run_dir": str(tmp_path_factory.mktemp("shards") / "r"),
              "eval_every": 0, "final_eval_deals": 0}
    ps.ppo_update = capture
    try:
        try:
            ps.train(ps.make_args(values))
        except _Captured:
            pass
    finally:
        ps.ppo_update = real
    assert "ro" in got, "the tiny run reached no update"
    return got


def _update(c: dict, shards: int, threads: int = 1) -> tuple[dict, ps.UpdateStats]:
    policy = copy.deepcopy(c["policy"])
    opt = torch.optim.Adam(policy.parameters(), lr=c["args"].learning_rate, eps=1e-5)
    opt.load_state_dict(c["opt"])
    rng = np.random.default_rng()
    rng.bit_generator.state = c["rng"]
    args = dataclasses.replace(c["args"], update_shards=shards, threads=threads)
    stats = ps.ppo_update(policy, opt, c["ro"], args, rng)
    return {k: v.clone() for k, v in policy.state_dict().items()}, stats


@pytest.mark.parametrize("shards", [2, 3])
def test_sharded_update_equals_one_pass(captured: dict, shards: int) -> None:
    one, s1 = _update(captured, 1)
    many, sn = _update(captured, shards)
    for k in one:
        np.testing.assert_allclose(many[k].numpy(), one[k].numpy(), rtol=1e-4, atol=1e-6, err_msg=k)
    for f in dataclasses.fields(s1):
        np.testing.assert_allclose(getattr(sn, f.name), getattr(s1, f.name), rtol=1e-4, atol=1e-7, err_msg=f.name)
    assert any(not torch.equal(one[k], captured["policy"].state_dict()[k]) for k in one)  # the update moved it


def test_sharded_update_is_deterministic_and_restores_the_thread_count(captured: dict) -> None:
    before = torch.get_num_threads()
    a, _ = _update(captured, 2, threads=2)
    b, _ = _update(captured, 2, threads=2)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert torch.get_num_threads() == before


@pytest.mark.parametrize("value", [0, 65, 1.5, "two"])
def test_bad_update_shards_is_a_config_error(value) -> None:
    with pytest.raises(ConfigError, match="update_shards"):
        ps.make_args({"update_shards": value})
