"""The one trainer (train/recipe.py) at every seat count: the gate seats a pair as ``cassino eval`` does and scores it
from the candidate's sides (antisymmetric, level for a candidate that plays as the best), the stages each seat count
runs or skips, the proxy set's absence, and tiny runs end to end at 3, 4 (Cicera's partnerships) and 6 seats."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from agents.policy import CassinoPolicy
from agents.ppo_agent import read_checkpoint, save_checkpoint
from agents.registry import make_agent
from cassino_env.obs import obs_size
from cassino_env.rules import make_rules
from train import cli, config, proxy, recipe
from train.arena import arrangements, evaluate_deals, pair_deals
from train.config import Args

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "configs" / "recipe_tiny.yaml"
#: (preset, seats) with more than two seats: three sides alone, two partnerships, three partnerships of two.
MANY_SEATS = [("classic", 3), ("classic", 4), ("cicera", 4), ("bga", 6)]


def network_agents(tmp_path: Path, preset: str, players: int) -> tuple[object, object, object]:
    """Two argmax agents read from one checkpoint of a fresh small network (same weights, separate objects) and one
    of another network."""
    rules = make_rules(preset, players)
    torch.manual_seed(0)
    paths = [save_checkpoint(tmp_path / f"net{k}.pt",
                             CassinoPolicy(obs_dim=obs_size(rules.num_players, rules.num_sides), hidden=16, embed=8),
                             rules) for k in range(2)]
    return tuple(make_agent(f"policy:checkpoint:{p}", rules) for p in (paths[0], paths[0], paths[1]))


@pytest.mark.parametrize(("preset", "players"), MANY_SEATS)
def test_the_gate_is_antisymmetric_on_the_same_deals(preset: str, players: int) -> None:
    rules = make_rules(preset, players)
    a, b = make_agent("greedy", rules), make_agent("advanced", rules)  # two fixed agents, no random draws
    ab = recipe.gate_match(a, b, rules, 12, seed=recipe.GATE_SEED)
    ba = recipe.gate_match(b, a, rules, 12, seed=recipe.GATE_SEED)
    assert ab["per_deal"].shape == (12,) and ab["games"] == 12 * len(arrangements(rules))
    assert np.array_equal(ab["per_deal"], -ba["per_deal"]), "deal by deal, the candidate's margin is the best's negated"
    assert ab["points"] == -ba["points"] and ab["points_se"] == ba["points_se"]
    assert ab["winrate"] + ba["winrate"] == pytest.approx(1.0)
    assert ab["points"] < 0, "greedy loses to advanced in every preset (docs/evaluation.md's ladder)"


@pytest.mark.parametrize(("preset", "players"), MANY_SEATS)
def test_a_candidate_that_plays_as_the_best_ties_exactly(tmp_path: Path, preset: str, players: int) -> None:
    rules = make_rules(preset, players)
    best, same, other = network_agents(tmp_path, preset, players)
    level = recipe.gate_match(same, best, rules, 8, seed=recipe.GATE_SEED)
    assert np.all(level["per_deal"] == 0.0) and level["points"] == 0.0 and level["points_se"] == 0.0
    assert level["winrate"] == pytest.approx(0.5)
    ab = recipe.gate_match(other, best, rules, 8, seed=recipe.GATE_SEED)
    ba = recipe.gate_match(best, other, rules, 8, seed=recipe.GATE_SEED)
    assert np.any(ab["per_deal"] != 0.0), "two different networks do not tie on every deal"
    assert np.array_equal(ab["per_deal"], -ba["per_deal"])


def test_the_one_against_the_field_score_is_not_a_fair_gate_at_three_sides() -> None:
    """Why the gate seats a pair (both agents alone and in the majority): with one agent against the other in every
    other seat, A vs B is not minus B vs A at three sides."""
    rules = make_rules("classic", 3)
    a, b = make_agent("greedy", rules), make_agent("advanced", rules)
    ab = evaluate_deals(a, b, rules, 12, seed=recipe.GATE_SEED)["points"]
    ba = evaluate_deals(b, a, rules, 12, seed=recipe.GATE_SEED)["points"]
    assert ab != -ba


@pytest.mark.parametrize(("preset", "players"), [("classic", 2), ("classic", 4), ("cicera", 4)])
def test_at_two_sides_the_gate_plays_the_duplicate_deals_of_before(preset: str, players: int) -> None:
    rules = make_rules(preset, players)
    a, b = make_agent("greedy", rules), make_agent("advanced", rules)
    new = pair_deals(a, b, rules, 10, seed=3)
    old = evaluate_deals(a, b, rules, 10, seed=3)
    assert {k: new[k] for k in old} == old


def test_pair_deals_refuses_no_deals() -> None:
    rules = make_rules("classic", 3)
    with pytest.raises(ValueError, match="deals"):
        pair_deals(make_agent("greedy", rules), make_agent("greedy", rules), rules, 0, seed=0)


def test_no_proxy_set_is_one_line_not_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CASSINO_PROXY_DIR", str(tmp_path))
    rules = make_rules("bga", 6)
    found, line = proxy.find_default(rules)
    assert found is None and "no proxy set for bga at 6 seats" in line and "\n" not in line
    assert "python scripts/make_proxy.py --preset bga --num-players 6" in line
    assert proxy.default_path("bga", 6) == tmp_path / "bga-6p.npz"
    (tmp_path / "bga-6p.npz").write_bytes(b"not an archive")
    found, line = proxy.find_default(rules)
    assert found is None and "is not used" in line and "bga-6p.npz" in line


def test_one_round_deals_train_the_last_round_head() -> None:
    assert [recipe.one_round(make_rules(p, n)) for p, n in MANY_SEATS] == [False, False, True, False]
    staged = recipe.one_round_values({"early_rounds_head": 512, "early_rounds_input": "classes",
                                      "train_params": "early_rounds_head", "search": "search"})
    assert staged == {"last_round_head": 512, "train_params": "last_round_head", "search": "search"}
    assert recipe.one_round_values({"last_round_head": 16, "train_params": "last_round_head"}) == {
        "last_round_head": 16, "train_params": "last_round_head"}


def test_a_stage_file_these_seats_refuse_is_one_line_before_anything_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stages = tmp_path / "stages"
    stages.mkdir()
    for f in (ROOT / "configs" / "tiny_stages").glob("*.yaml"):
        (stages / f.name).write_text(f.read_text())
    with (stages / "stage_early_rounds.yaml").open("a") as f:
        f.write("label_from_round: 5\n")  # classic at 3 seats deals 4 rounds
    argv = ["train", "--stage-configs", str(stages), "--preset", "classic", "--num-players", "3",
            "--run-dir", str(tmp_path / "r")]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "stage_early_rounds.yaml: with classic at 3 seats" in err[0] and "label_from_round" in \
        err[0], err
    assert not (tmp_path / "r").exists()
    # the last-round stage file (network_last_round, search none: two seats' options) is not checked against 3 seats,
    # where that stage never runs; the run says so when it starts
    runner = recipe.Recipe(tiny_args(tmp_path, preset="classic", num_players=3), None)
    try:
        assert any(note.startswith("last_round is skipped: with 3 seats") for note in runner.notes), runner.notes
        assert runner.skipped_for_seats("last_round") and not runner.skipped_for_seats("early_rounds")
        assert runner.expert_args("early_rounds", tmp_path, None, check_only=True).num_players == 3
    finally:
        runner.release()


def tiny_args(tmp_path: Path, **over: object) -> Args:
    values = {**config.load_config(Args, TINY), "stage_configs": str(ROOT / "configs" / "tiny_stages"),
              "run_dir": str(tmp_path / "run"), "final_eval_deals": 0, **over}
    return config.make_args(Args, values)


@pytest.mark.slow
@pytest.mark.parametrize(("preset", "players"), [("classic", 3), ("cicera", 4), ("bga", 6)])
def test_a_tiny_recipe_runs_at_more_seats(tmp_path: Path, capsys: pytest.CaptureFixture[str], preset: str,
                                          players: int) -> None:
    args = tiny_args(tmp_path, preset=preset, num_players=players, hours=0.008, gate_every_s=3.0,
                     total_timesteps=6144, final_eval_deals=4 if preset == "cicera" else 0,
                     final_eval_opponents=["random"])
    final = recipe.train(args)
    out = capsys.readouterr().out.splitlines()
    run = tmp_path / "run"
    state = recipe.RecipeState.load(run / "recipe.json")
    assert final == run / "checkpoints" / "final.pt" and state.done
    ckpt = read_checkpoint(final, make_rules(preset, players))
    prov = ckpt["provenance"]
    assert (prov["preset"], prov["num_players"]) == (preset, players) and prov["stage"] == state.best_stage
    # the expert stage ran (its gates), the exact last round never did
    assert "early_rounds" in {g["stage"] for g in state.gates}, state.gates
    assert (run / "stages" / "02_early_rounds" / "labels").is_dir()
    assert not list((run / "stages").glob("*_last_round"))
    assert any(f"last_round skipped ({players} seats: the exact last round is two seats')" in line for line in out)
    assert not any("next: last_round" in line for line in out), "a stage these seats skip is never named next"
    arr = len(arrangements(make_rules(preset, players)))
    gate_lines = [line for line in out if line.startswith("[recipe ") and " gate " in line and "candidate vs" in line]
    assert gate_lines and all(("seatings" in line) == (arr > 2) for line in gate_lines), gate_lines
    assert any(f"no proxy set for {preset} at {players} seats" in line for line in out)
    if preset == "cicera":  # one round a deal: the head the expert stage trains is the last-round head
        assert any("is one round" in line for line in out)
        stage_net = read_checkpoint(run / "stages" / "02_early_rounds" / "checkpoints" / "final.pt")["model"]
        assert any(k.startswith("lr_") for k in stage_net) and not any(k.startswith("er_") for k in stage_net)
        saved = json.loads((run / "eval_after_training" / "eval.json").read_text())  # the table after training
        assert (saved["rules"], saved["num_players"]) == ("cicera", 4) and len(saved["pairs"]) == 1
    else:
        assert not any("is one round" in line for line in out)
    if preset == "classic":  # resumed with a larger budget, then drawn by cassino plot
        used = state.elapsed_s
        recipe.train(config.make_args(Args, {**config.args_to_dict(args), "resume": str(run), "run_dir": None,
                                             "hours": 0.012}), explicit={"hours"})
        again = recipe.RecipeState.load(run / "recipe.json")
        assert again.elapsed_s > used and again.gates[: len(state.gates)] == state.gates
        assert cli.main(["plot", str(run), "--out", str(tmp_path / "run.png")]) == 0
        assert (tmp_path / "run.png").stat().st_size > 0
