"""Checkpoints: save/load round trip, a resumed run that matches an uninterrupted one number for number, and clear
errors for every kind of bad file."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from agents.policy import CassinoPolicy, MoveBatch  # noqa: E402
from agents.ppo_agent import (  # noqa: E402
    ENV_VERSION,
    CheckpointError,
    load_checkpoint_agent,
    read_checkpoint,
    save_checkpoint,
)
from cassino_env.obs import obs_size  # noqa: E402
from cassino_env.rules import make_rules  # noqa: E402
from cassino_env.vector import CassinoVectorEnv  # noqa: E402
from train.plot import load_scalars  # noqa: E402
from train.ppo_selfplay import Args, train  # noqa: E402

RULES = make_rules("classic", 2)


def tiny_args(run_dir: Path, **overrides) -> Args:
    """Four iterations of 16 games x 48 moves, with every feature on: pool, a bot, evaluation, checkpoints."""
    values = dict(exp_name="test", threads=1, run_dir=str(run_dir), progress_every_s=1e9, total_timesteps=4 * 768,
                  num_envs=16, hidden=16, embed=8, num_minibatches=4, update_epochs=2, pool_rate=0.25,
                  snapshot_every=768, bot_rates={"greedy": 0.25}, eval_every=1536, eval_deals=4,
                  eval_opponents=("random",), checkpoint_every=1536, final_eval_deals=0)
    values.update(overrides)
    return Args(**values)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny run straight through; returns its run folder."""
    run_dir = tmp_path_factory.mktemp("straight")
    train(tiny_args(run_dir))
    return run_dir


def _policy(shape_seed: int = 0, hidden: int = 16, embed: int = 8, num_players: int = 2) -> CassinoPolicy:
    torch.manual_seed(shape_seed)
    return CassinoPolicy(obs_dim=obs_size(num_players, num_players), hidden=hidden, embed=embed)


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    policy = _policy()
    path = save_checkpoint(tmp_path / "p.pt", policy, RULES)
    data = torch.load(path, weights_only=True)  # plain data: loads without running code
    assert data["env_version"] == ENV_VERSION
    assert data["preset"] == "classic"
    assert data["network"] == {"obs_dim": obs_size(2, 2), "hidden": 16, "embed": 8, "move_features": 0,
                               "critic": "shared", "critic_dim": 0}
    agent = load_checkpoint_agent(str(path), RULES)
    env = CassinoVectorEnv(num_envs=8, rules=RULES, seed=0, with_view=False)
    obs, _ = env.reset()
    with torch.no_grad():
        want, _ = policy(MoveBatch.from_obs(obs))
        got, _ = agent.policy(MoveBatch.from_obs(obs))
    assert torch.equal(want, got)
    assert np.array_equal(agent.act(obs, np.random.default_rng(0)), want.argmax(-1).numpy())


def test_resumed_run_matches_the_uninterrupted_run(uninterrupted: Path, tmp_path: Path) -> None:
    """Resume from the mid-run checkpoint (iteration 2 of 4): weights, optimiser and logged losses come out equal."""
    mid = uninterrupted / "checkpoints" / "step_00000001536.pt"
    assert mid.is_file()
    resumed_dir = tmp_path / "resumed"
    args = dataclasses.replace(tiny_args(resumed_dir), resume=str(mid))
    train(args, explicit={"resume", "run_dir"})
    a = torch.load(uninterrupted / "checkpoints" / "final.pt", weights_only=True)
    b = torch.load(resumed_dir / "checkpoints" / "final.pt", weights_only=True)
    assert a["train"]["global_step"] == b["train"]["global_step"] == 4 * 768
    for k in a["model"]:
        assert torch.equal(a["model"][k], b["model"][k]), k
    for k, v in a["optimizer"]["state"].items():
        for name, t in v.items():
            assert torch.equal(t, b["optimizer"]["state"][k][name]), (k, name)
    assert a["train"]["numpy_rng"] == b["train"]["numpy_rng"]
    assert a["train"]["pool"]["steps"] == b["train"]["pool"]["steps"]
    for k in a["train"]["env_state"]:
        assert torch.equal(a["train"]["env_state"][k], b["train"]["env_state"][k]), k
    sa, sb = load_scalars(uninterrupted), load_scalars(resumed_dir)
    for tag in ("losses/policy_loss", "losses/value_loss", "losses/entropy", "losses/approx_kl",
                "eval/winrate_vs_random", "charts/episodic_return"):
        steps_b, vals_b = sb[tag]
        steps_a, vals_a = sa[tag]
        tail = np.isin(steps_a, steps_b)
        assert steps_b.min() > 1536
        assert np.array_equal(steps_a[tail], steps_b), tag
        assert np.array_equal(vals_a[tail], vals_b), tag


def test_resume_keeps_the_run_config_and_folder(uninterrupted: Path, tmp_path: Path) -> None:
    """Without --run-dir a resumed run goes on in its own folder, told from the checkpoint's path (never the folder
    named inside the file); options not given come from the checkpoint."""
    mid = uninterrupted / "checkpoints" / "step_00000001536.pt"
    copy = tmp_path / "run" / "checkpoints" / "mid.pt"
    copy.parent.mkdir(parents=True)
    data = torch.load(mid, weights_only=True)
    data["train"]["run_dir"] = str(tmp_path / "original")
    data["train"]["config"]["total_timesteps"] = 3 * 768
    torch.save(data, copy)
    args = Args(resume=str(copy), total_timesteps=123, hidden=999)  # not given explicitly: ignored
    final = train(args, explicit={"resume"})
    assert final == tmp_path / "run" / "checkpoints" / "final.pt"
    assert not (tmp_path / "original").exists()
    assert torch.load(final, weights_only=True)["train"]["global_step"] == 3 * 768


class NotData:
    """An object: weights_only loading must refuse to unpickle it."""


def test_resume_from_a_run_folder_goes_on_from_its_latest_checkpoint(uninterrupted: Path, tmp_path: Path) -> None:
    """``--resume RUN`` (the README's form, which a recipe run takes) works for a PPO-only run too: RUN's
    checkpoints/latest.pt."""
    data = torch.load(uninterrupted / "checkpoints" / "step_00000001536.pt", weights_only=True)
    data["train"]["config"]["total_timesteps"] = 3 * 768
    latest = tmp_path / "run" / "checkpoints" / "latest.pt"
    latest.parent.mkdir(parents=True)
    torch.save(data, latest)
    final = train(Args(resume=str(tmp_path / "run")), explicit={"resume"})
    assert final == tmp_path / "run" / "checkpoints" / "final.pt"
    assert torch.load(final, weights_only=True)["train"]["global_step"] == 3 * 768


@pytest.mark.parametrize("kind", ["missing", "folder", "garbage", "truncated", "pickled_object", "not_a_checkpoint",
                                  "env_version", "format_version", "preset", "players", "rule_switch", "shape"])
def test_bad_checkpoints_give_clear_errors(tmp_path: Path, kind: str) -> None:
    path = tmp_path / f"{kind}.pt"
    good = save_checkpoint(tmp_path / "good.pt", _policy(), RULES)
    data = torch.load(good, weights_only=True)
    rules, expect = RULES, None
    if kind == "missing":
        expect = "no such checkpoint"
    elif kind == "folder":  # was "no such checkpoint file", for a folder that is there
        path.mkdir()
        expect = "a folder, not a checkpoint file"
    elif kind == "garbage":
        path.write_bytes(b"\x00not a checkpoint at all" * 10)
        expect = "not a readable checkpoint"
    elif kind == "truncated":
        path.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
        expect = "not a readable checkpoint"
    elif kind == "pickled_object":
        torch.save({**data, "extra": NotData()}, path)
        expect = "refused to load"
    elif kind == "not_a_checkpoint":
        torch.save({"weights": torch.zeros(3)}, path)
        expect = "not a cassino PPO checkpoint"
    elif kind == "env_version":
        torch.save({**data, "env_version": "cassino_v9"}, path)
        expect = "made for environment 'cassino_v9'"
    elif kind == "format_version":
        torch.save({**data, "format_version": 99}, path)
        expect = "format version 99"
    elif kind == "preset":
        torch.save({**data, "preset": "royal"}, path)
        expect = "made for preset 'royal'"
    elif kind == "players":
        rules = make_rules("classic", 3)
        torch.save(data, path)
        expect = "with 2 players, not 'classic' with 3"
    elif kind == "rule_switch":
        torch.save({**data, "rules": {**data["rules"], "sweep_points": 2}}, path)
        expect = "rule switch sweep_points=2"
    elif kind == "shape":
        torch.save({**data, "network": {**data["network"], "hidden": 17}}, path)
        expect = "weights do not fit network shape"
    with pytest.raises(CheckpointError, match=expect) as info:
        load_checkpoint_agent(str(path), rules)
    assert str(path) in str(info.value)
    assert isinstance(info.value, ValueError)


def test_resume_refuses_another_network_shape_and_an_evaluation_only_checkpoint(uninterrupted: Path,
                                                                                tmp_path: Path) -> None:
    mid = uninterrupted / "checkpoints" / "step_00000001536.pt"
    with pytest.raises(CheckpointError, match="network shape"):
        train(dataclasses.replace(tiny_args(tmp_path / "a"), resume=str(mid), hidden=32),
              explicit={"resume", "run_dir", "hidden"})
    with pytest.raises(CheckpointError, match="num_envs"):
        train(dataclasses.replace(tiny_args(tmp_path / "b"), resume=str(mid), num_envs=8),
              explicit={"resume", "run_dir", "num_envs"})
    eval_only = save_checkpoint(tmp_path / "eval_only.pt", _policy(), RULES)
    with pytest.raises(CheckpointError, match="evaluation-only"):
        train(dataclasses.replace(tiny_args(tmp_path / "c"), resume=str(eval_only)), explicit={"resume"})


def test_read_checkpoint_without_rules_skips_the_rules_check(tmp_path: Path) -> None:
    path = save_checkpoint(tmp_path / "p3.pt", _policy(num_players=3), make_rules("classic", 3))
    assert read_checkpoint(path)["num_players"] == 3


def _no_progress_block(data: dict) -> None:
    from cassino_env.obs import DEFAULT_BLOCKS

    data["obs_blocks"] = [b for b in DEFAULT_BLOCKS if b != "progress"]
    data["network"]["obs_dim"] = obs_size(2, 2, data["obs_blocks"])


@pytest.mark.parametrize(("change", "expect"), [
    (lambda d: d["network"].update(early_rounds=-1), "network early_rounds must be an int >= 0, got -1"),
    (lambda d: d["network"].update(early_rounds=True), "network early_rounds must be an int >= 0, got True"),
    (lambda d: d["network"].update(early_rounds=10**30), "cannot be built: a size past 64-bit integers"),
    (lambda d: d["network"].update(hidden=10**30), "cannot be built: a size past 64-bit integers"),
    (lambda d: d["network"].update(early_rounds=2**20), "model.er_obs.weight is"),
    (lambda d: d["network"].pop("last_round_gate"), "network.last_round_gate: missing"),
    (lambda d: d["network"].update(last_round_gate=0), "network.last_round_gate: must be 524"),
    (lambda d: d["network"].update(early_rounds=0), "last_round_gate=524 without a last-round head"),
    (lambda d: d["network"].update(early_rounds=0, last_round_gate=0), "'er_keep' is not part of that network"),
    (lambda d: d["model"].update({"er_obs.weight": torch.zeros(9, 3)}), r"model.er_obs.weight is torch.float32 \(9"),
    (_no_progress_block, "network.early_rounds: an earlier-rounds head needs the observation's progress block"),
])
def test_an_earlier_rounds_networks_bad_fields_are_named(tmp_path: Path, change, expect: str) -> None:
    """A network with an earlier-rounds head and no last-round head: a bad width (negative, a bool, past int64 —
    once a TypeError with torch's C++ trace), a gate missing or pointing elsewhere, head weights of the wrong shape
    or without the head, or observation blocks without the stock size: a CheckpointError naming the field."""
    from agents.policy import add_early_rounds_head, last_round_gate

    net = add_early_rounds_head(_policy(), 8, last_round_gate(2, 2))
    good = save_checkpoint(tmp_path / "er.pt", net, RULES)
    assert load_checkpoint_agent(str(good), RULES).policy.shape.early_rounds == 8
    _assert_refused(torch.load(good, weights_only=True), change, expect, tmp_path)


def _assert_refused(data: dict, change, expect: str, tmp_path: Path) -> None:
    """``data`` (a checkpoint dict) changed by ``change`` and saved: loading it is one CheckpointError matching
    ``expect``, naming the file, without torch's C++ trace."""
    change(data)
    path = tmp_path / "bad.pt"
    torch.save(data, path)
    with pytest.raises(CheckpointError, match=expect) as info:
        load_checkpoint_agent(str(path), RULES)
    assert str(path) in str(info.value) and "frame #" not in str(info.value)


def _swap_two_classes(data: dict) -> None:
    cls = data["model"]["er_card_class"]
    cls[[0, 39]] = cls[[39, 0]]  # AC with AS: the spade is a class of its own


@pytest.mark.parametrize(("change", "expect"), [
    (None, None),
    (lambda d: d["network"].update(early_rounds_input="suits"), "network early_rounds_input must be one of"),
    (lambda d: d["model"].pop("er_obs_index"), "er_obs_index"),
    (lambda d: d["model"].update({"er_obs_index": torch.arange(546, dtype=torch.float32)}), "er_obs_index"),
    (lambda d: d["model"].update({"er_obs_index": torch.full((546,), 10**6, dtype=torch.int64)}),
     "er_obs_index: the card classes stored with the weights are not those of the checkpoint's rules"),
    (_swap_two_classes, "er_card_class: the card classes stored"),
])
def test_a_head_that_reads_card_classes_loads_with_its_own_classes_only(tmp_path: Path, change, expect) -> None:
    """An earlier-rounds head of ``early_rounds_input="classes"``: it saves and loads with its class maps (and plays
    as saved); a file whose maps are missing, of another dtype, out of range or not the rules' classes is a
    CheckpointError naming the field."""
    from agents.policy import add_early_rounds_head, last_round_gate
    from cassino_env.symmetry import card_classes, class_index

    net = add_early_rounds_head(_policy(), 8, last_round_gate(2, 2),
                                classes=(class_index(RULES), card_classes(RULES)))
    good = save_checkpoint(tmp_path / "cls.pt", net, RULES)
    data = torch.load(good, weights_only=True)
    if change is None:
        loaded = load_checkpoint_agent(str(good), RULES).policy
        assert loaded.shape.early_rounds_input == "classes" and data["network"]["early_rounds_input"] == "classes"
        assert torch.equal(loaded.er_card_class, torch.as_tensor(card_classes(RULES)))
        return
    _assert_refused(data, change, expect, tmp_path)
