"""Expert iteration (train/exit.py): a tiny run trains, writes loadable checkpoints and labels, and resumes exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from agents.ppo_agent import policy_from_checkpoint, read_checkpoint
from agents.registry import make_agent
from cassino_env.rules import make_rules
from train import config
from train.config import ConfigError
from train.exit import DEFAULT_CONFIG, ExitArgs, Labels, policy_targets, train

TINY = Path(__file__).resolve().parents[1] / "configs" / "exit_tiny.yaml"


def tiny_args(**over: object) -> ExitArgs:
    return config.make_args(ExitArgs, {**config.load_config(ExitArgs, TINY), **over})


@pytest.fixture(scope="module")
def straight(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two iterations in one go."""
    run = tmp_path_factory.mktemp("exit") / "straight"
    train(tiny_args(run_dir=str(run)))
    return run


def test_tiny_run_trains_and_writes_loadable_checkpoints(straight: Path) -> None:
    rules = make_rules("classic")
    ckpts = straight / "checkpoints"
    assert {p.name for p in ckpts.iterdir()} >= {"iter_00001.pt", "final.pt", "latest.pt"}
    first, final = read_checkpoint(ckpts / "iter_00001.pt"), read_checkpoint(ckpts / "final.pt")
    assert first["train"]["iteration"] == 1 and final["train"]["iteration"] == 2
    assert final["train"]["algo"] == "exit" and final["train"]["labels_total"] > 0
    changed = [k for k in first["model"] if not torch.equal(first["model"][k], final["model"][k])]
    assert changed, "the second iteration's update changed no weight"
    for spec in (f"checkpoint:{ckpts / 'final.pt'}", f"policy:checkpoint:{ckpts / 'final.pt'}"):
        agent = make_agent(spec, rules)
        from cassino_env.vector import CassinoVectorEnv

        env = CassinoVectorEnv(4, rules, seed=1, with_view=True)
        obs, _ = env.reset()
        a = agent.act(obs, np.random.default_rng(0))
        assert obs["action_mask"][np.arange(4), a].all()
    labels = Labels.load(straight / "labels" / "iter_00001.npz")
    assert len(labels) > 0
    assert (labels.mask.sum(axis=1) > 1).all(), "only decisions with a choice are labelled"
    assert np.isfinite(labels.q[labels.mask]).all() and np.isnan(labels.q[~labels.mask]).all()
    assert np.allclose(labels.prior.sum(axis=1), 1.0, atol=1e-4)
    assert (straight / "config.yaml").is_file()
    assert any(p.name.startswith("events.out.tfevents") for p in straight.iterdir())


def test_resume_goes_on_exactly(straight: Path, tmp_path: Path) -> None:
    run = tmp_path / "halves"
    train(tiny_args(run_dir=str(run), iterations=1))
    resumed = train(config.make_args(ExitArgs, {**config.args_to_dict(ExitArgs()),
                                                "resume": str(run / "checkpoints" / "final.pt"), "iterations": 2}),
                    explicit={"resume", "iterations"})
    a, b = read_checkpoint(straight / "checkpoints" / "final.pt"), read_checkpoint(resumed)
    assert b["train"]["iteration"] == 2 and b["train"]["global_step"] == a["train"]["global_step"]
    for k in a["model"]:
        assert torch.equal(a["model"][k], b["model"][k]), k
    la, lb = (Labels.load(r / "labels" / "iter_00002.npz") for r in (straight, run))
    assert np.array_equal(la.q, lb.q, equal_nan=True) and np.array_equal(la.ret, lb.ret)


def test_plot_draws_the_run(straight: Path, tmp_path: Path) -> None:
    from train.plot import plot_run

    out = plot_run(straight, tmp_path / "curve.png")
    assert out.is_file() and out.stat().st_size > 0


def test_policy_targets() -> None:
    q = np.array([[2.0, 2.0, 0.0, np.nan], [0.0, 1.0, np.nan, np.nan]])
    mask = ~np.isnan(q)
    prior = np.array([[0.1, 0.1, 0.8, 0.0], [0.9, 0.1, 0.0, 0.0]])
    top = policy_targets(q, mask, prior, "top", 1.0)
    assert top.tolist() == [[0.5, 0.5, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]]
    soft = policy_targets(q, mask, prior, "soft", 0.5)
    assert np.allclose(soft.sum(axis=1), 1) and (soft[~mask] == 0).all()
    assert soft[1, 1] / soft[1, 0] == pytest.approx(np.exp(2.0), rel=1e-5)
    awr = policy_targets(q, mask, prior, "awr", 1.0)
    assert awr[1, 1] / awr[1, 0] == pytest.approx(np.e * 0.1 / 0.9, rel=1e-5)
    with pytest.raises(ValueError, match="target"):
        policy_targets(q, mask, prior, "nonesuch", 1.0)


@pytest.mark.parametrize(("field", "value"), [("target", "best"), ("temperature", 0.0), ("rollout", "pimc"),
                                          ("num_workers", 2), ("bot_rates", {"advanced": 0.8, "greedy": 0.5}),
                                          ("train_params", "head"), ("last_round_head", -1), ("anneal_lr", "yes")])
def test_bad_options_name_the_field(field: str, value: object) -> None:
    with pytest.raises(ConfigError) as info:
        tiny_args(**{field: value})
    assert info.value.field == field


def test_default_config_is_valid() -> None:
    args = config.make_args(ExitArgs, config.load_config(ExitArgs, DEFAULT_CONFIG))
    assert args.init == "pretrained:classic"


def test_command_line_refuses_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    from train.cli import main

    assert main(["exit", "--target", "best"]) == 2
    assert "target" in capsys.readouterr().err


def test_extra_labels_and_network_probs(straight: Path, tmp_path: Path) -> None:
    from agents.ppo_agent import policy_from_checkpoint
    from train.exit import join_labels, load_label_paths, network_probs

    parts = load_label_paths([str(straight / "labels")])
    assert len(parts) == 2
    data = join_labels(parts)
    assert len(data) == sum(len(p) for p in parts)
    net = policy_from_checkpoint(read_checkpoint(straight / "checkpoints" / "final.pt"))
    probs = network_probs(net, data, chunk=7)
    assert np.allclose(probs.sum(axis=1), 1.0, atol=1e-5) and (probs[~data.mask] == 0).all()
    with pytest.raises(ConfigError) as info:
        load_label_paths([str(tmp_path / "nothing")])
    assert info.value.field == "extra_labels"


def test_last_round_labels_are_exact() -> None:
    """With label_last_round the last round's decisions are labelled too, by train.proxy.exact_values: every value
    there is a whole number of points (the search's elsewhere are means over samples)."""
    from agents.features import NUM_MOVE_FEATURES, critic_state_size
    from agents.policy import CassinoPolicy
    from cassino_env.obs import obs_size
    from train.exit import LabelCollector

    rules = make_rules("classic")
    torch.manual_seed(0)
    net = CassinoPolicy(obs_dim=obs_size(2, 2), hidden=16, embed=8, move_features=NUM_MOVE_FEATURES,
                        critic="separate", critic_dim=critic_state_size(2))
    counts = {}
    for last in (False, True):
        args = tiny_args(label_last_round=last, bot_rates={})
        labels = LabelCollector(args, rules, 4, env_seed=5).collect(net, np.random.default_rng(0), 0)
        counts[last] = len(labels)
        whole = np.array([np.allclose(q[m], np.round(q[m])) for q, m in zip(labels.q, labels.mask, strict=True)])
        if last:
            assert whole.sum() > 0
    assert counts[True] > counts[False]


def test_label_from_round_labels_only_those_rounds() -> None:
    """label_from_round=5 labels the decisions of rounds 5 and 6 of a classic deal and no earlier one (the round read
    off the observation's progress block); the games still play every round."""
    from agents.features import NUM_MOVE_FEATURES, critic_state_size
    from agents.policy import CassinoPolicy
    from cassino_env.obs import obs_layout, obs_size
    from train.exit import LabelCollector

    rules = make_rules("classic")
    torch.manual_seed(0)
    net = CassinoPolicy(obs_dim=obs_size(2, 2), hidden=16, embed=8, move_features=NUM_MOVE_FEATURES,
                        critic="separate", critic_dim=critic_state_size(2))
    entry = obs_layout(2, 2)["progress"][0] + 1
    seen = {}
    for first in (1, 5):
        args = tiny_args(label_from_round=first, bot_rates={})
        collector = LabelCollector(args, rules, 4, env_seed=5)
        labels = collector.collect(net, np.random.default_rng(0), 0)
        rounds = np.rint(labels.obs[:, entry] * rules.rounds_per_deal).astype(int)
        assert np.array_equal(collector.round_of({"observation": labels.obs}), rounds)
        seen[first] = set(rounds.tolist())
    assert seen[1] == set(range(1, 7))
    assert seen[5] == {5, 6}


@pytest.mark.parametrize(("over", "match"), [({"label_from_round": 7}, "has 6 rounds"),
                                             ({"label_from_round": 6, "label_last_round": False}, "no decision"),
                                             ({"label_from_round": 0}, "label_from_round")])
def test_label_from_round_is_checked(over: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match) as info:
        tiny_args(**over)
    assert info.value.field == "label_from_round"


def test_search_none_needs_last_round_labels() -> None:
    with pytest.raises(ConfigError) as info:
        tiny_args(search="none", label_last_round=False)
    assert info.value.field == "search"
    assert tiny_args(search="none").search == "none"


@pytest.mark.slow
def test_one_ray_worker_is_the_local_run(straight: Path, tmp_path: Path) -> None:
    pytest.importorskip("ray")
    final = train(tiny_args(run_dir=str(tmp_path / "ray"), ray_address="local", num_workers=1))
    a, b = read_checkpoint(straight / "checkpoints" / "final.pt"), read_checkpoint(final)
    for k in a["model"]:
        assert torch.equal(a["model"][k], b["model"][k]), k


def test_search_labels_value_every_legal_move() -> None:
    """search=search: the network-guided search labels its top_k candidates with their searched means and every
    other legal move with the lowest of those; the labels it writes are finite on the legal moves only."""
    from agents.features import NUM_MOVE_FEATURES, critic_state_size
    from agents.policy import CassinoPolicy
    from cassino_env.obs import obs_size
    from cassino_env.vector import CassinoVectorEnv
    from train.exit import LabelCollector, searched_values

    rules = make_rules("classic")
    torch.manual_seed(0)
    net = CassinoPolicy(obs_dim=obs_size(2, 2), hidden=16, embed=8, move_features=NUM_MOVE_FEATURES,
                        critic="separate", critic_dim=critic_state_size(2))
    args = tiny_args(search="search", top_k=2, simulations=16, bot_rates={})
    collector = LabelCollector(args, rules, 4, env_seed=5)
    searcher = collector.search_over(net)
    assert searcher.leaf == "critic" and searcher.top_k == 2 and not searcher.exact
    env = CassinoVectorEnv(16, rules, seed=3, with_view=True)
    obs, _ = env.reset()
    n = (obs["action_mask"] != 0).sum(axis=1)
    rows = np.flatnonzero(n > 1)
    from agents.base import slice_obs

    sub = slice_obs(obs, rows)
    values = searched_values(searcher, sub, np.random.default_rng(1))
    assert len(values) == len(rows) and searcher._trace is None
    for v, k in zip(values, n[rows], strict=True):
        assert len(v) == k and np.isfinite(v).all()
        assert (v == v.min()).sum() >= k - 2, "moves outside the 2 candidates get the lowest searched value"
    labels = collector.collect(net, np.random.default_rng(0), 0)
    assert np.isfinite(labels.q[labels.mask]).all() and np.isnan(labels.q[~labels.mask]).all()
    with pytest.raises(ConfigError) as info:
        tiny_args(top_k=0)
    assert info.value.field == "top_k"


def test_resume_into_another_folder_reads_the_checkpoints_labels(straight: Path, tmp_path: Path) -> None:
    """Resumed with --run-dir elsewhere, the replay window comes from the checkpoint's own labels/ and the run goes
    on exactly; a checkpoint whose labels are gone is refused before anything is written."""
    resumed = train(config.make_args(ExitArgs, {**config.args_to_dict(ExitArgs()), "run_dir": str(tmp_path / "other"),
                                                "resume": str(straight / "checkpoints" / "iter_00001.pt"),
                                                "iterations": 2}),
                    explicit={"resume", "iterations", "run_dir"})
    a, b = read_checkpoint(straight / "checkpoints" / "final.pt"), read_checkpoint(resumed)
    for k in a["model"]:
        assert torch.equal(a["model"][k], b["model"][k]), k
    bare = tmp_path / "bare" / "checkpoints"
    bare.mkdir(parents=True)
    (bare / "iter_00001.pt").write_bytes((straight / "checkpoints" / "iter_00001.pt").read_bytes())
    target = tmp_path / "target"
    with pytest.raises(ConfigError) as info:
        train(config.make_args(ExitArgs, {**config.args_to_dict(ExitArgs()), "run_dir": str(target),
                                          "resume": str(bare / "iter_00001.pt"), "iterations": 2}),
              explicit={"resume", "iterations", "run_dir"})
    assert info.value.field == "resume" and not target.exists()


def test_search_labeller_options() -> None:
    """search=search reads the critic through reward_scale, refuses a rollout it cannot play, and never makes an
    unsearched move a best one."""
    from agents.features import NUM_MOVE_FEATURES, critic_state_size
    from agents.policy import CassinoPolicy
    from cassino_env.obs import obs_size
    from train.exit import UNSEARCHED_GAP, LabelCollector

    rules = make_rules("classic")
    net = CassinoPolicy(obs_dim=obs_size(2, 2), hidden=16, embed=8, move_features=NUM_MOVE_FEATURES,
                        critic="separate", critic_dim=critic_state_size(2))
    args = tiny_args(search="search", top_k=1, reward_scale=1.0, bot_rates={}, rollout="greedy")
    collector = LabelCollector(args, rules, 4, env_seed=5)
    assert collector.search_over(net).value_scale == 1.0
    labels = collector.collect(net, np.random.default_rng(0), 0)
    searched = ~np.array([np.allclose(q[m], np.round(q[m])) for q, m in zip(labels.q, labels.mask, strict=True)])
    for q, m in zip(labels.q[searched], labels.mask[searched], strict=True):
        v = q[m]
        assert (v == v.max()).sum() == 1 and np.allclose(v[v < v.max()], v.max() - UNSEARCHED_GAP)
    from agents.bots import STYLES
    from train.expert.options import ROLLOUTS

    assert ROLLOUTS == ("random", *STYLES)
    with pytest.raises(ConfigError) as info:  # random has no batched rollout step in the search
        tiny_args(search="search", rollout="random")
    assert info.value.field == "rollout"
    # every scripted style is a rollout policy of the search (agents.search.ROLLOUTS from agents.bots.STYLES)
    beginner = LabelCollector(tiny_args(search="search", top_k=1, reward_scale=1.0, bot_rates={},
                                        rollout="beginner"), rules, 4, env_seed=5)
    assert len(beginner.collect(net, np.random.default_rng(0), 0))
    with pytest.raises(ConfigError) as info:
        tiny_args(simulations=200_000)
    assert info.value.field == "simulations"


def test_labelling_prints_progress(capsys: pytest.CaptureFixture[str]) -> None:
    """A local run's labelling says where it is (move, labels, rate) while an iteration runs."""
    from agents.features import NUM_MOVE_FEATURES, critic_state_size
    from agents.policy import CassinoPolicy
    from cassino_env.obs import obs_size
    from train.exit import LabelCollector

    net = CassinoPolicy(obs_dim=obs_size(2, 2), hidden=16, embed=8, move_features=NUM_MOVE_FEATURES,
                        critic="separate", critic_dim=critic_state_size(2))
    collector = LabelCollector(tiny_args(bot_rates={}), make_rules("classic"), 2, env_seed=5)
    collector.collect(net, np.random.default_rng(0), 0, progress=1e-9)
    lines = [x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("labelling:")]
    assert len(lines) == 48 and "move 48/48" in lines[-1] and "labels (" in lines[-1]


def test_plot_of_an_exit_run_draws_its_own_panels(straight: Path) -> None:
    """An exit run's figure shows the search's panels, not PPO's KL and clip fraction."""
    from train.plot import EXIT_TAGS, draw_run, load_scalars

    fig = draw_run(load_scalars(straight))
    titles = {ax.get_title() for ax in fig.axes}
    assert {name for _, name, _ in EXIT_TAGS} <= titles and "clip fraction" not in titles


def test_last_round_head_run_moves_the_head_alone(straight: Path, tmp_path: Path) -> None:
    """train_params=last_round_head with a last_round_head: only the head's weights change (the network's play
    before the last round stays bit for bit), on exact last-round labels of the positions the network reaches
    itself (network_last_round), with the regret target; the checkpoint keeps the head."""
    from agents.policy import CassinoPolicy
    from agents.ppo_agent import policy_from_checkpoint
    from train.exit import trained_parameters

    start = straight / "checkpoints" / "final.pt"
    run = tmp_path / "head"
    train(tiny_args(run_dir=str(run), init=f"checkpoint:{start}", search="none", last_round_head=16,
                    train_params="last_round_head", target="regret", network_last_round=True, learning_rate=1e-2))
    first = policy_from_checkpoint(read_checkpoint(start))
    last = policy_from_checkpoint(read_checkpoint(run / "checkpoints" / "final.pt"))
    assert first.shape.last_round == 0 and last.shape.last_round == 16
    head = {k for k in last.state_dict() if k.startswith("lr_")}
    assert head and head == set(last.state_dict()) - set(first.state_dict())
    assert all(torch.equal(v, last.state_dict()[k]) for k, v in first.state_dict().items())
    assert not torch.equal(last.lr_scorer[-1].weight, torch.zeros_like(last.lr_scorer[-1].weight))
    with pytest.raises(ConfigError) as info:
        trained_parameters(CassinoPolicy(obs_dim=10), "last_round_head")
    assert info.value.field == "train_params"


@pytest.mark.parametrize("head_input", ["cards", "classes"])
def test_early_rounds_head_run_moves_the_head_alone(straight: Path, tmp_path: Path, head_input: str) -> None:
    """train_params=early_rounds_head with an early_rounds_head: only that head's weights change (the rest of the
    network, its last round and its critic, stay bit for bit), on the search's labels of the rounds before the
    last, with the regret target; the checkpoint keeps the head (reading cards or card classes, as asked), and a
    network without one is refused."""
    from agents.policy import CassinoPolicy
    from agents.ppo_agent import policy_from_checkpoint
    from train.exit import trained_parameters

    start = straight / "checkpoints" / "final.pt"
    run = tmp_path / "early"
    train(tiny_args(run_dir=str(run), init=f"checkpoint:{start}", early_rounds_head=16, label_last_round=False,
                    train_params="early_rounds_head", target="regret", learning_rate=1e-2,
                    early_rounds_input=head_input))
    first = policy_from_checkpoint(read_checkpoint(start))
    last = policy_from_checkpoint(read_checkpoint(run / "checkpoints" / "final.pt"))
    assert first.shape.early_rounds == 0 and last.shape.early_rounds == 16
    assert last.shape.early_rounds_input == head_input
    head = {k for k in last.state_dict() if k.startswith("er_")}
    assert head and head == set(last.state_dict()) - set(first.state_dict())
    assert all(torch.equal(v, last.state_dict()[k]) for k, v in first.state_dict().items())
    assert not torch.equal(last.er_scorer[-1].weight, torch.zeros_like(last.er_scorer[-1].weight))
    with pytest.raises(ConfigError) as info:
        trained_parameters(CassinoPolicy(obs_dim=10), "early_rounds_head")
    assert info.value.field == "train_params"
    with pytest.raises(ConfigError) as info:
        tiny_args(search="none", train_params="early_rounds_head", early_rounds_head=16)
    assert info.value.field == "train_params"


def test_fresh_early_rounds_head_replaces_the_init_networks_head(straight: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A network whose earlier-rounds head reads cards: early_rounds_input=classes alone is refused (it keeps its
    head); with fresh_early_rounds_head the head is dropped (agents.policy.remove_early_rounds_head: the network
    below it, bit for bit) and a new one that reads classes is trained, and the run says so."""
    from agents.policy import add_early_rounds_head, last_round_gate, remove_early_rounds_head
    from agents.ppo_agent import policy_from_checkpoint, save_checkpoint

    base = policy_from_checkpoint(read_checkpoint(straight / "checkpoints" / "final.pt"))
    with pytest.raises(ValueError, match="no earlier-rounds head"):
        remove_early_rounds_head(base)
    headed = add_early_rounds_head(base, 8, last_round_gate(2, 2))
    below = remove_early_rounds_head(headed)
    assert below.shape == base.shape and all(torch.equal(v, below.state_dict()[k])
                                             for k, v in base.state_dict().items())
    start = save_checkpoint(tmp_path / "headed.pt", headed, make_rules("classic"))
    common = dict(init=f"checkpoint:{start}", early_rounds_head=8, early_rounds_input="classes",
                  label_last_round=False, train_params="early_rounds_head", target="regret")
    with pytest.raises(ConfigError) as info:
        train(tiny_args(run_dir=str(tmp_path / "kept"), **common))
    assert info.value.field == "early_rounds_input" and "reads cards" in str(info.value)
    with pytest.raises(ConfigError) as info:
        tiny_args(fresh_early_rounds_head=True)
    assert info.value.field == "fresh_early_rounds_head"
    run = tmp_path / "fresh"
    capsys.readouterr()
    train(tiny_args(run_dir=str(run), fresh_early_rounds_head=True, **common))
    out = capsys.readouterr().out
    assert "earlier-rounds head removed" in out and "width 8, reading classes" in out
    last = policy_from_checkpoint(read_checkpoint(run / "checkpoints" / "final.pt"))
    assert last.shape.early_rounds == 8 and last.shape.early_rounds_input == "classes"
    assert all(torch.equal(v, last.state_dict()[k]) for k, v in base.state_dict().items())


def test_regret_target_is_the_best_moves_cross_entropy_part() -> None:
    q = np.array([[2.0, 2.0, 0.0], [0.0, 1.0, np.nan]])
    mask = ~np.isnan(q)
    assert policy_targets(q, mask, np.zeros_like(q), "regret", 1.0).tolist() == [[0.5, 0.5, 0.0], [0.0, 1.0, 0.0]]


def test_last_round_config_is_valid() -> None:
    args = config.make_args(ExitArgs, config.load_config(ExitArgs, config.CONFIGS_DIR / "exit_last_round.yaml"))
    assert args.train_params == "last_round_head" and args.last_round_head > 0 and args.search == "none"


def test_early_rounds_config_is_valid() -> None:
    args = config.make_args(ExitArgs, config.load_config(ExitArgs, config.CONFIGS_DIR / "exit_early_rounds.yaml"))
    assert args.train_params == "early_rounds_head" and args.early_rounds_head > 0 and args.search == "search"
    assert not args.label_last_round


def test_augment_suits_mirrors_the_labels(straight: Path, tmp_path: Path) -> None:
    """augment_suits: each update also trains on the labels with clubs and hearts swapped (cassino_env.symmetry);
    the relabelling twice is the identity, values and outcomes stay, and presets that tell every suit apart refuse
    the option."""
    from cassino_env.symmetry import suit_permutations
    from train.exit import augmented, join_labels, load_label_paths, mirror_labels

    rules = make_rules("classic")
    (perm,) = suit_permutations(rules)
    data = join_labels(load_label_paths([str(straight / "labels")]))
    once = mirror_labels(data, perm, 2, 2)
    assert not np.array_equal(once.obs, data.obs) and not np.array_equal(once.cards, data.cards)
    assert np.array_equal(once.q, data.q, equal_nan=True) and np.array_equal(once.ret, data.ret)
    twice = mirror_labels(once, perm, 2, 2)
    for k in ("obs", "card", "cards", "crit", "feat", "mask"):
        a, b = getattr(twice, k), getattr(data, k)
        assert (a is None and b is None) or np.array_equal(a, b), k
    both = augmented(data, rules)
    assert len(both) == 2 * len(data) and np.array_equal(both.obs[len(data):], once.obs)
    run = tmp_path / "aug"
    train(tiny_args(run_dir=str(run), augment_suits=True, iterations=1))
    assert (run / "checkpoints" / "final.pt").is_file()
    with pytest.raises(ConfigError) as info:
        tiny_args(augment_suits=True, preset="cicera", num_players=None)
    assert info.value.field == "augment_suits"


def read_shape(run: Path) -> object:
    return policy_from_checkpoint(read_checkpoint(run / "checkpoints" / "final.pt")).shape


def test_joined_labels_are_the_joined_files(straight: Path, tmp_path: Path) -> None:
    """load_joined_labels fills the rows file by file into arrays made once: the same rows as join_labels of the
    files; a path that is neither a file nor a folder of label files, a file named twice, and files of 0 rows are
    refused naming the field; with the network's shape, an array it does not read may be in some files only."""
    import dataclasses

    from train.exit import LABEL_ROWS, join_labels, load_joined_labels, load_label_paths

    labels = straight / "labels"
    paths = [str(labels / "iter_00002.npz"), str(labels / "iter_00001.npz")]
    want = join_labels(load_label_paths(paths))
    got = load_joined_labels(paths, rules=make_rules("classic"))
    assert got is not None and len(got) == len(want) == sum(len(Labels.load(Path(f))) for f in paths)
    for k in LABEL_ROWS:
        a, b = getattr(got, k), getattr(want, k)
        assert (a is None and b is None) or (a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)), k
    assert load_joined_labels([]) is None

    def refused(paths: list[str], field: str = "extra_labels", shape: object = None) -> str:
        with pytest.raises(ConfigError) as info:
            load_joined_labels(paths, shape, field=field)
        assert info.value.field == field
        return str(info.value)

    refused([str(tmp_path / "nothing")], "holdout_labels")
    assert "named twice" in refused([str(labels / "iter_00002.npz"), str(labels)])
    one = Labels.load(labels / "iter_00001.npz")
    empty = dataclasses.replace(one, **{k: getattr(one, k)[:0] for k in LABEL_ROWS if getattr(one, k) is not None})
    empty.save(tmp_path / "empty.npz")
    assert "0 rows" in refused([str(tmp_path / "empty.npz")], "holdout_labels")
    with_empty = load_joined_labels([str(tmp_path / "empty.npz"), paths[1]])
    assert with_empty is not None and len(with_empty) == len(one)
    # a file with a separate critic's inputs and one without: refused without the network's shape, joined for a
    # network that reads none (its crit dropped)
    crit = np.zeros((len(one), 7), dtype=np.float32)
    dataclasses.replace(one, crit=crit if one.crit is None else None).save(tmp_path / "other.npz")
    mixed = [paths[1], str(tmp_path / "other.npz")]
    assert "'crit'" in refused(mixed)
    shape = read_shape(straight)
    assert shape.critic_dim and one.crit is not None  # the tiny run's network reads the full state
    assert "'crit'" in refused(mixed, shape=shape)  # which the file without it cannot give
    no_crit = dataclasses.replace(shape, critic="shared", critic_dim=0)
    both = load_joined_labels(mixed, no_crit)
    assert both is not None and both.crit is None and len(both) == 2 * len(one)


def test_iterations_0_trains_on_the_extra_labels_alone(straight: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """iterations 0: no games and no label files, ``epochs`` passes over extra_labels (a checkpoint and a progress
    line each), the regret on holdout_labels at the start and the end; the earlier-rounds head alone moves when it
    alone is trained. Without extra_labels it is refused, and such a run is not resumed."""
    start = straight / "checkpoints" / "final.pt"
    run = tmp_path / "offline"
    labels = straight / "labels"
    capsys.readouterr()
    train(tiny_args(run_dir=str(run), init=f"checkpoint:{start}", iterations=0, epochs=2, learning_rate=1e-2,
                    extra_labels=(str(labels / "iter_00001.npz"),), holdout_labels=(str(labels / "iter_00002.npz"),),
                    early_rounds_head=16, train_params="early_rounds_head", target="regret", anneal_lr=True,
                    eval_every=0))
    out = capsys.readouterr().out
    assert "pass 0 |" in out and "pass 1/2 |" in out and "pass 2/2 |" in out
    assert out.count("held-out labels: regret") == 2
    assert {p.name for p in (run / "checkpoints").iterdir()} == {"pass_00001.pt", "pass_00002.pt", "final.pt",
                                                                 "latest.pt"}
    assert not (run / "labels").exists()
    first = read_checkpoint(start)["model"]
    last = read_checkpoint(run / "checkpoints" / "final.pt")["model"]
    assert all(torch.equal(v, last[k]) for k, v in first.items())
    assert not torch.equal(last["er_scorer.5.weight"], torch.zeros_like(last["er_scorer.5.weight"]))
    # its figure: the held-out panels, and the labels trained on as the x axis
    from train.plot import OFFLINE_EXIT_TAGS, OFFLINE_STEP_LABEL, draw_run, load_scalars

    fig = draw_run(load_scalars(run), config=config.args_to_dict(tiny_args(iterations=0, extra_labels=("x",))))
    assert {name for _, name, _ in OFFLINE_EXIT_TAGS} <= {ax.get_title() for ax in fig.axes}
    assert {ax.get_xlabel() for ax in fig.axes} == {OFFLINE_STEP_LABEL}
    regret = load_scalars(run)["exit/holdout_regret"]
    assert list(regret[0]) == [0, 2 * len(Labels.load(labels / "iter_00001.npz"))]
    with pytest.raises(ConfigError) as info:
        tiny_args(iterations=0)
    assert info.value.field == "iterations"
    with pytest.raises(ConfigError) as info:
        train(tiny_args(resume=str(run / "checkpoints" / "final.pt")))
    assert info.value.field == "resume"
    with pytest.raises(ConfigError) as info:
        train(tiny_args(resume=str(straight / "checkpoints" / "final.pt"), iterations=0,
                        extra_labels=(str(labels),)))
    assert info.value.field == "iterations"
    # held-out labels that are also trained on, and extra labels of 0 rows, are refused before the run folder
    # is made
    import dataclasses

    one = Labels.load(labels / "iter_00001.npz")
    dataclasses.replace(one, **{k: v[:0] for k, v in vars(one).items() if isinstance(v, np.ndarray)}).save(
        tmp_path / "empty.npz")
    for over, field in (({"extra_labels": (str(labels),), "holdout_labels": (str(labels / "iter_00002.npz"),)},
                         "holdout_labels"),
                        ({"extra_labels": (str(tmp_path / "empty.npz"),)}, "extra_labels")):
        with pytest.raises(ConfigError) as info:
            train(tiny_args(run_dir=str(tmp_path / "refused"), init=f"checkpoint:{start}", iterations=0, epochs=1,
                            **over))
        assert info.value.field == field, str(info.value)
        assert not (tmp_path / "refused").exists()
