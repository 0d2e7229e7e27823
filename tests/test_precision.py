"""The ``precision`` option (agents/precision.py): its names and refusals, what ``auto`` picks, a network that keeps
its scores in float32 under bfloat16 autocast, and the expert stages' update and labelling at each precision."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from agents.policy import CassinoPolicy, MoveBatch  # noqa: E402
from agents.precision import (  # noqa: E402
    PRECISIONS,
    PrecisionError,
    autocast,
    check_precision,
    native_bf16,
    resolve_precision,
)
from cassino_env.rules import make_rules  # noqa: E402
from cassino_env.vector import CassinoVectorEnv  # noqa: E402
from train import cli, config  # noqa: E402
from train.config import ConfigError  # noqa: E402
from train.exit import ExitArgs, train  # noqa: E402
from train.expert.labels import Labels  # noqa: E402
from train.expert.update import trained_parameters, update  # noqa: E402
from train.ppo_selfplay import Args  # noqa: E402

CPU = torch.device("cpu")
TINY = Path(__file__).resolve().parents[1] / "configs" / "exit_tiny.yaml"


def test_the_names_and_what_auto_picks_on_this_machine() -> None:
    assert PRECISIONS == ("auto", "fp32", "bf16")
    assert check_precision(" fp32 ") == "fp32"
    assert resolve_precision("auto", CPU) == ("bf16" if native_bf16(CPU) else "fp32")
    assert resolve_precision("fp32", CPU) == "fp32" and resolve_precision("bf16", CPU) == "bf16"
    assert native_bf16(torch.device("meta")) is False  # neither a CPU nor a CUDA GPU: never bfloat16 by itself


@pytest.mark.parametrize("value", ["fp16", "BF16", "float32", "", 32, None])
def test_a_name_that_is_no_precision_is_refused_naming_the_field(value: object) -> None:
    with pytest.raises(PrecisionError, match="^precision: "):
        check_precision(value)
    assert issubclass(PrecisionError, ValueError)


@pytest.mark.parametrize("cls", [Args, ExitArgs])
def test_precision_is_an_option_of_both_trainers_checked_by_its_rule(cls: type) -> None:
    assert cls().precision == "auto"
    assert config.make_args(cls, {"precision": "bf16"}).precision == "bf16"
    with pytest.raises(ConfigError) as info:
        cls(precision="fp16")
    assert info.value.field == "precision" and str(info.value).startswith("precision: 'fp16' is not a precision")


def test_the_command_line_refuses_a_precision_with_one_line_and_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for command in (["train", "--hours", "0"], ["exit"]):
        assert cli.main([*command, "--precision", "half"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == ["error: precision: 'half' is not a precision; choose auto, fp32 or bf16"], err
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_a_resumed_run_takes_the_precision_given_now_not_the_checkpoints() -> None:
    saved = {"config": {**config.args_to_dict(ExitArgs()), "precision": "bf16"}}
    assert config.resume_args(ExitArgs(), saved, explicit=set()).precision == "auto"
    assert config.resume_args(ExitArgs(precision="fp32"), saved, explicit={"precision"}).precision == "fp32"


def test_fp32_is_no_autocast_and_bf16_is_bfloat16_autocast() -> None:
    with autocast("fp32", CPU):
        assert not torch.is_autocast_enabled("cpu")
    with autocast("bf16", CPU):
        assert torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16
    assert not torch.is_autocast_enabled("cpu")


def positions(n: int = 256) -> MoveBatch:
    """Move batches of ``n`` positions of random play (classic, two seats), for a network with move features."""
    from agents.features import MoveFeaturizer, critic_state

    rules = make_rules("classic")
    env = CassinoVectorEnv(n, rules, seed=3, with_view=True)
    obs, _ = env.reset()
    rng = np.random.default_rng(3)
    for _ in range(9):  # a few moves in: tables with builds and captures to choose from
        legal = obs["action_mask"]
        obs, *_ = env.step(np.array([rng.choice(np.flatnonzero(m)) for m in legal]))
    feats = MoveFeaturizer(rules)(obs)
    return MoveBatch.from_arrays(obs["observation"], obs["move_kind"], obs["move_card"], obs["move_value"],
                                 obs["move_cards"].view(np.int64), obs["action_mask"], feats, critic_state(env.state))


def network(obs_dim: int, crit_dim: int, feats: int) -> CassinoPolicy:
    torch.manual_seed(0)
    net = CassinoPolicy(obs_dim, 64, 32, move_features=feats, critic="separate", critic_dim=crit_dim)
    with torch.no_grad():  # scores of about 20 (a trained network's scale): their tenths are what bfloat16 rounds
        net.scorer[-1].bias.fill_(20.0)
        net.scorer[-1].weight.mul_(100.0)
    return net.eval()


def test_under_bf16_the_network_returns_float32_scores_that_keep_their_tenths() -> None:
    batch = positions()
    net = network(batch.obs.shape[1], batch.critic_obs.shape[1], batch.feats.shape[-1])
    with torch.no_grad():
        l32, v32 = net(batch)
        with autocast("bf16", CPU):
            l16, v16 = net(batch)
    assert l16.dtype == torch.float32 and v16.dtype == torch.float32
    m = batch.mask
    assert torch.isinf(l16[~m]).all() and torch.isfinite(l16[m]).all()
    spread = (l32[m] - 20.0).abs().mean()
    assert spread > 0.05, "the test's scores must differ by tenths around 20"
    # the matrix products before the last layer run in bfloat16: the scores move by well under their spread, and a
    # bfloat16 output of the last layer (steps of 0.125 at 16-32) would tie most moves of a row
    assert float((l32[m] - l16[m]).abs().mean()) < 0.25 * float(spread)
    choice = (m.sum(1) > 1)
    agree = (l32.argmax(-1) == l16.argmax(-1))[choice].float().mean()
    assert agree > 0.9, float(agree)
    assert float((v32 - v16).abs().max()) < 0.05


def labels_from(batch: MoveBatch, rng: np.random.Generator) -> Labels:
    n, w = batch.mask.shape
    q = np.where(batch.mask.numpy(), rng.normal(size=(n, w)), np.nan)
    prior = batch.mask.numpy() / batch.mask.numpy().sum(1, keepdims=True)
    return Labels(obs=batch.obs.numpy(), kind=batch.kind.numpy(), card=batch.card.numpy(), value=batch.value.numpy(),
                  cards=batch.cards.numpy(), mask=batch.mask.numpy(), feat=batch.feats.numpy(),
                  crit=batch.critic_obs.numpy(), q=q, prior=prior.astype(np.float32),
                  ret=rng.normal(size=n).astype(np.float32))


@pytest.mark.parametrize("params", ["all", "early_rounds_head"])
def test_the_update_at_bf16_takes_the_steps_fp32_takes_within_rounding(params: str) -> None:
    """The forward pass only runs under autocast: the losses match float32's to about bfloat16's precision, and the
    weights stay float32 and finite."""
    from agents.policy import add_early_rounds_head, last_round_gate

    batch = positions(512)
    losses, weights = {}, {}
    for precision in ("fp32", "bf16"):
        net = network(batch.obs.shape[1], batch.critic_obs.shape[1], batch.feats.shape[-1])
        if params == "early_rounds_head":  # the positions are in the first round: the head scores every row
            net = add_early_rounds_head(net, 64, last_round_gate(2, 2))
        opt = torch.optim.Adam(trained_parameters(net, params), lr=3e-4, eps=1e-5)
        args = ExitArgs(target="regret", train_params=params, epochs=2, minibatch_size=128, precision=precision)
        losses[precision] = update(net, opt, labels_from(batch, np.random.default_rng(5)), args,
                                   np.random.default_rng(0))
        weights[precision] = [p.detach().clone() for p in net.parameters()]
    assert all(p.dtype == torch.float32 and torch.isfinite(p).all() for p in weights["bf16"])
    for k in ("policy_loss", "entropy"):
        a, b = losses["fp32"][k], losses["bf16"][k]
        assert abs(a - b) <= 0.02 * max(abs(a), 1.0), (k, a, b)
    moved = [not torch.equal(p, q) for p, q in zip(weights["fp32"], weights["bf16"], strict=True)]
    assert any(moved), "bf16 computed exactly what fp32 did: autocast did not take effect"


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_a_tiny_expert_run_at_each_precision_trains_and_labels(precision: str, tmp_path: Path) -> None:
    args = config.make_args(ExitArgs, {**config.load_config(ExitArgs, TINY), "run_dir": str(tmp_path / "run"),
                                       "precision": precision})
    train(args)
    labels = Labels.load(tmp_path / "run" / "labels" / "iter_00001.npz")
    assert len(labels) > 0 and np.isfinite(labels.q[labels.mask]).all()
    assert (tmp_path / "run" / "checkpoints" / "final.pt").is_file()


def test_bf16_on_a_device_other_than_cpu_or_cuda_is_float32() -> None:
    with autocast("bf16", torch.device("meta")):
        assert not torch.is_autocast_enabled("cpu")
