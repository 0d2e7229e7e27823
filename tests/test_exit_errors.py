"""Bad input to expert iteration (train/exit.py) and to the last-round head (agents/policy.py): every case is refused
with an error naming the field, before the run folder is touched; nothing is half-written."""

from __future__ import annotations

import copy
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from agents.policy import MAX_LAST_ROUND_WIDTH, CassinoPolicy, NetworkShape, add_last_round_head, last_round_gate
from agents.ppo_agent import CheckpointError, check_network, read_checkpoint, save_checkpoint
from cassino_env.obs import DEFAULT_BLOCKS, obs_size
from cassino_env.rules import make_rules
from train import config
from train.config import ConfigError
from train.exit import ExitArgs, Labels, load_label_paths, train, update

TINY = Path(__file__).resolve().parents[1] / "configs" / "exit_tiny.yaml"


def tiny_args(**over: object) -> ExitArgs:
    return config.make_args(ExitArgs, {**config.load_config(ExitArgs, TINY), **over})


def resume_args(path: Path, **over: object) -> tuple[ExitArgs, set[str]]:
    given = {"resume": str(path), "iterations": 3, **over}
    return config.make_args(ExitArgs, {**config.args_to_dict(ExitArgs()), **given}), set(given)


def listing(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` with its size and modification time (ns)."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny run of two iterations whose network has a 16-wide last-round head, trained alone."""
    out = tmp_path_factory.mktemp("exit_err") / "run"
    train(tiny_args(run_dir=str(out), last_round_head=16, train_params="last_round_head", target="regret"))
    return out


def test_the_configs_head_inputs_are_the_networks() -> None:
    """train.exit keeps its own copy of the head inputs (the config imports no torch): the two must agree."""
    from agents.policy import HEAD_INPUTS
    from train.exit import HEAD_INPUTS as CONFIG_HEAD_INPUTS

    assert CONFIG_HEAD_INPUTS == HEAD_INPUTS


@pytest.mark.parametrize(("over", "field"), [
    ({"num_players": 3, "search": "none"}, "search"),
    ({"num_players": 3, "network_last_round": True}, "network_last_round"),
    ({"label_last_round": False, "train_params": "last_round_head", "last_round_head": 8}, "train_params"),
    ({"early_rounds_head": 8, "search": "none"}, "early_rounds_head"),  # no label would reach the new head
    ({"early_rounds_input": "classes"}, "early_rounds_input"),  # what a new head reads, and no head
    ({"early_rounds_input": "suits", "early_rounds_head": 8}, "early_rounds_input"),
    ({"preset": "cicera", "num_players": 4, "early_rounds_head": 8, "early_rounds_input": "classes"},
     "early_rounds_input"),
])
def test_combinations_that_would_label_or_change_nothing_are_refused(over: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        tiny_args(**over)
    assert info.value.field == field


def test_init_head_width_must_match_the_networks_head(run: Path, tmp_path: Path) -> None:
    target = tmp_path / "new"
    with pytest.raises(ConfigError) as info:
        train(tiny_args(run_dir=str(target), init=f"checkpoint:{run / 'checkpoints' / 'final.pt'}",
                        last_round_head=64))
    assert info.value.field == "last_round_head" and "width 16" in str(info.value) and not target.exists()


def test_resume_refuses_another_head_width(run: Path, tmp_path: Path) -> None:
    copy_ = tmp_path / "copy"
    shutil.copytree(run, copy_)
    before = listing(copy_)
    args, explicit = resume_args(copy_ / "checkpoints" / "iter_00001.pt", last_round_head=64)
    with pytest.raises(ConfigError) as info:
        train(args, explicit=explicit)
    assert info.value.field == "last_round_head" and "width 16" in str(info.value)
    assert listing(copy_) == before


def test_resume_refuses_another_head_input(tmp_path: Path) -> None:
    """A run whose earlier-rounds head reads cards, resumed with early_rounds_input=classes: refused, nothing of the
    run changed (its config kept saying cards while the network read cards, before)."""
    run = tmp_path / "er"
    train(tiny_args(run_dir=str(run), early_rounds_head=8, iterations=1))
    before = listing(run)
    args, explicit = resume_args(run / "checkpoints" / "latest.pt", early_rounds_head=8, early_rounds_input="classes")
    with pytest.raises(ConfigError) as info:
        train(args, explicit=explicit)
    assert info.value.field == "early_rounds_input" and "reads cards" in str(info.value)
    assert listing(run) == before


def _nan_moment(ck: dict[str, Any]) -> None:
    ck["optimizer"]["state"][0]["exp_avg_sq"].view(-1)[0] = math.nan


@pytest.mark.parametrize(("change", "field"), [
    (lambda ck: ck["train"].__setitem__("torch_rng", torch.zeros(3, dtype=torch.uint8)), "train.torch_rng"),
    (lambda ck: ck["train"].__setitem__("numpy_rng", "not json"), "train.numpy_rng"),
    (lambda ck: ck["train"].__setitem__("numpy_rng", '{"bit_generator": "MT19937"}'), "train.numpy_rng"),
    (lambda ck: ck["train"].__setitem__("env_state", {"x": torch.zeros(2)}), "train.env_state"),
    (lambda ck: ck["train"]["env_state"].__setitem__(next(iter(ck["train"]["env_state"])), torch.zeros(1)),
     "train.env_state."),
    (lambda ck: ck["train"].__setitem__("elapsed_s", math.nan), "train.elapsed_s"),
    (lambda ck: ck["train"].__setitem__("labels_total", -1), "train.labels_total"),
    (lambda ck: ck["optimizer"]["state"][0].__setitem__("exp_avg", torch.zeros(3)), "optimizer.state[0].exp_avg"),
    (_nan_moment, "optimizer.state[0].exp_avg_sq"),
    (lambda ck: ck["optimizer"]["param_groups"][0].__setitem__("lr", "fast"), "optimizer.param_groups[0].lr"),
])
def test_resume_refuses_a_corrupt_training_state_before_writing(run: Path, tmp_path: Path, change: Any,
                                                               field: str) -> None:
    copy_ = tmp_path / "copy"
    shutil.copytree(run, copy_)
    path = copy_ / "checkpoints" / "iter_00001.pt"
    ck = torch.load(path, weights_only=False)
    change(ck)
    torch.save(ck, path)
    before = listing(copy_)
    args, explicit = resume_args(path)
    with pytest.raises(CheckpointError, match=field.replace("[", r"\[").replace("]", r"\]")):
        train(args, explicit=explicit)
    assert listing(copy_) == before


def test_resume_with_another_train_params_says_so(run: Path, tmp_path: Path) -> None:
    copy_ = tmp_path / "copy"
    shutil.copytree(run, copy_)
    args, explicit = resume_args(copy_ / "checkpoints" / "iter_00001.pt", train_params="all")
    with pytest.raises(CheckpointError, match="optimizer.param_groups.*another train_params"):
        train(args, explicit=explicit)


def test_a_truncated_replay_file_is_refused_on_resume(run: Path, tmp_path: Path) -> None:
    copy_ = tmp_path / "copy"
    shutil.copytree(run, copy_)
    f = copy_ / "labels" / "iter_00001.npz"
    f.write_bytes(f.read_bytes()[:500])
    before = listing(copy_)
    args, explicit = resume_args(copy_ / "checkpoints" / "iter_00001.pt")
    with pytest.raises(ConfigError) as info:
        train(args, explicit=explicit)
    assert info.value.field == "resume" and "iter_00001.npz" in str(info.value)
    assert listing(copy_) == before


def _rewrite(src: Path, dst: Path, **change: Any) -> Path:
    with np.load(src) as z:
        arrays = {k: z[k] for k in z.files}
    for k, v in change.items():
        if v is None:
            del arrays[k]
        else:
            arrays[k] = v
    np.savez(dst, **arrays)
    return dst


def test_extra_labels_are_checked_against_the_network(run: Path, tmp_path: Path) -> None:
    src = run / "labels" / "iter_00001.npz"
    n = len(Labels.load(src))
    shape = read_checkpoint(run / "checkpoints" / "final.pt")["network"]
    shape = NetworkShape(**shape)
    (tmp_path / "text.npz").write_text("hello")
    bad = {
        "text.npz": tmp_path / "text.npz",
        "no q": _rewrite(src, tmp_path / "noq.npz", q=None),
        "3 players": _rewrite(src, tmp_path / "wide.npz", obs=np.zeros((n, shape.obs_dim + 128), np.float32)),
        "float64 ret": _rewrite(src, tmp_path / "ret.npz", ret=np.zeros(n)),
        "rows": _rewrite(src, tmp_path / "rows.npz", ret=np.zeros(n + 1, np.float32)),
    }
    for what, path in bad.items():
        with pytest.raises(ConfigError) as info:
            load_label_paths([str(path)], shape)
        assert info.value.field == "extra_labels" and str(path) in str(info.value), what
    target = tmp_path / "new"
    with pytest.raises(ConfigError):
        train(tiny_args(run_dir=str(target), init=f"checkpoint:{run / 'checkpoints' / 'final.pt'}",
                        extra_labels=(str(bad["no q"]),)))
    assert not target.exists()
    assert len(load_label_paths([str(src)], shape)[0]) == n


def test_label_files_record_their_rules_and_other_rules_are_refused(run: Path, tmp_path: Path) -> None:
    src = run / "labels" / "iter_00001.npz"
    with np.load(src) as z:
        assert "rules" in z.files and z["rules"].dtype.kind == "U"
    shape = NetworkShape(**read_checkpoint(run / "checkpoints" / "final.pt")["network"])
    classic, matsuda = make_rules("classic"), make_rules("matsuda")
    assert obs_size(2, 2) == shape.obs_dim  # matsuda's labels would fit the network: only the record tells them apart
    assert len(load_label_paths([str(src)], shape, classic)[0]) == len(Labels.load(src))
    with pytest.raises(ConfigError) as info:
        load_label_paths([str(src)], shape, matsuda)
    assert info.value.field == "extra_labels" and "holds labels of classic with 2 players" in str(info.value) \
        and "this run plays matsuda with 2 players" in str(info.value)
    with pytest.raises(ConfigError, match=r"sweep_points=1, this run 2"):
        Labels.load(src, rules=make_rules("classic", sweep_points=2))
    for i, record in enumerate(["{not json", "5", "[1, 2]", "null", '"classic"', "[" * 100_000 + "]" * 100_000,
                                '{"preset": "nosuch"}', '{"preset": "classic", "num_players": "two"}']):
        broken = _rewrite(src, tmp_path / f"broken{i}.npz", rules=np.array(record))
        with pytest.raises(ConfigError, match="rules record is not a rule set") as info:
            Labels.load(broken, rules=classic)
        assert info.value.field == "labels" and len(str(info.value)) < 400, record[:20]
    unrecorded = _rewrite(src, tmp_path / "old.npz", rules=None)  # files of earlier versions record nothing
    assert len(Labels.load(unrecorded, shape, rules=matsuda)) == len(Labels.load(src))
    target = tmp_path / "new"
    with pytest.raises(ConfigError) as info:
        train(tiny_args(run_dir=str(target), preset="matsuda", extra_labels=(str(src),)))
    assert info.value.field == "extra_labels" and not target.exists()


def test_init_refuses_a_network_of_other_observation_blocks(tmp_path: Path) -> None:
    rules = make_rules("classic")
    blocks = tuple(b for b in DEFAULT_BLOCKS if b != "most_decided")
    net = CassinoPolicy(obs_dim=obs_size(2, 2, blocks), hidden=16, embed=8, move_features=10)
    path = save_checkpoint(tmp_path / "short.pt", net, rules, blocks=blocks)
    target = tmp_path / "new"
    with pytest.raises(ConfigError) as info:
        train(tiny_args(run_dir=str(target), init=f"checkpoint:{path}"))
    assert info.value.field == "init" and "blocks" in str(info.value) and not target.exists()


def test_a_diverged_update_raises_before_the_step(run: Path) -> None:
    from agents.ppo_agent import policy_from_checkpoint
    from train.stopping import Diverged

    net = policy_from_checkpoint(read_checkpoint(run / "checkpoints" / "final.pt"))
    data = Labels.load(run / "labels" / "iter_00002.npz")
    data.ret[:] = np.inf
    before = copy.deepcopy(net.state_dict())
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    with pytest.raises(Diverged, match="not finite"):
        update(net, opt, data, tiny_args(), np.random.default_rng(0))
    assert all(torch.equal(v, net.state_dict()[k]) for k, v in before.items())


def test_a_checkpoints_gate_must_be_the_stock_entry(run: Path) -> None:
    data = read_checkpoint(run / "checkpoints" / "final.pt")
    assert check_network(data).last_round_gate == last_round_gate(2, 2) == 524
    wrong = copy.deepcopy(data)
    wrong["network"]["last_round_gate"] = 0
    with pytest.raises(CheckpointError, match="network.last_round_gate: must be 524"):
        check_network(wrong, "x.pt")
    del wrong["network"]["last_round_gate"]
    with pytest.raises(CheckpointError, match="network.last_round_gate: missing"):
        check_network(wrong, "x.pt")


def test_add_last_round_head_checks_its_arguments() -> None:
    net = CassinoPolicy(obs_dim=30, hidden=8, embed=4)
    for width in (0, -1, True, 2.0, MAX_LAST_ROUND_WIDTH + 1):
        with pytest.raises(ValueError, match="width"):
            add_last_round_head(net, width, 3)  # type: ignore[arg-type]
    for gate in (-1, 30, True):
        with pytest.raises(ValueError, match="last_round_gate"):
            add_last_round_head(net, 4, gate)  # type: ignore[arg-type]
    net.eval()
    for p in net.parameters():
        p.requires_grad_(False)
    out = add_last_round_head(net, 4, 3)
    assert not out.training and out.shape.last_round == 4
    assert all(not p.requires_grad for n, p in out.named_parameters() if not n.startswith("lr_"))
    assert all(p.requires_grad for p in out.last_round_parameters())
    with pytest.raises(ValueError, match="already"):
        add_last_round_head(out, 4, 3)
    with pytest.raises(ValueError, match="without a last-round head"):
        NetworkShape(obs_dim=10, last_round=0, last_round_gate=9)


def test_the_command_line_cap_is_the_apis() -> None:
    with pytest.raises(ConfigError) as info:
        tiny_args(last_round_head=MAX_LAST_ROUND_WIDTH + 1)
    assert info.value.field == "last_round_head"
    assert tiny_args(last_round_head=MAX_LAST_ROUND_WIDTH).last_round_head == MAX_LAST_ROUND_WIDTH


def test_a_bad_extra_labels_name_or_proxy_file_names_its_field(tmp_path: Path) -> None:
    """A name too long to look up is no label file (not an OSError), and a proxy file that is not one is a
    ConfigError naming ``proxy``, before the run folder is made."""
    with pytest.raises(ConfigError) as info:
        load_label_paths(["x" * 5000])
    assert info.value.field == "extra_labels" and len(str(info.value)) < 400
    bad = tmp_path / "proxy.npz"
    bad.write_bytes(b"not a proxy")
    run = tmp_path / "run"
    for proxy in (str(bad), str(tmp_path / "missing.npz")):
        with pytest.raises(ConfigError) as info:
            train(tiny_args(run_dir=str(run), proxy=proxy))
        assert info.value.field == "proxy"
        assert not run.exists()


def test_a_proxy_of_other_rules_is_refused(tmp_path: Path) -> None:
    """cassino exit --proxy FILE: the file's positions must be of the run's rules (a royal run scoring classic
    positions would report a regret that means nothing)."""
    from train import proxy as proxy_mod

    src = proxy_mod.build("classic", None, positions=4, seed=3, simulations=8, path=tmp_path / "p.npz",
                          progress=False, deals_per_source=1)
    run = tmp_path / "run"
    with pytest.raises(ConfigError, match="royal") as info:
        train(tiny_args(run_dir=str(run), preset="royal", proxy=str(src)))
    assert info.value.field == "proxy" and not run.exists()
