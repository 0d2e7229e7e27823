"""The one trainer (train/recipe.py): stages, the gate, the budget, resume, provenance and bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
import yaml

from agents.ppo_agent import CheckpointError, read_checkpoint, save_checkpoint
from agents.provenance import check_provenance, describe, make_provenance
from train import cli, config, recipe
from train.config import Args, ConfigError

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "configs" / "recipe_tiny.yaml"


def tiny_args(tmp_path: Path, **over: object) -> Args:
    values = {**config.load_config(Args, TINY), "stage_configs": str(ROOT / "configs" / "tiny_stages"),
              "run_dir": str(tmp_path / "run"), "final_eval_deals": 0, **over}
    return config.make_args(Args, values)


def test_stage_order() -> None:
    assert recipe.stage_name(0) == "ppo"
    assert [recipe.stage_name(i) for i in range(1, 7)] == [*recipe.EXPERT_STAGES, *recipe.EXPERT_STAGES]
    assert recipe.STAGES == config.RECIPE_STAGES


def test_default_is_the_recipe_and_tiny_ppo_is_not() -> None:
    assert Args().hours > 0, "cassino train with no options runs the recipe"
    assert Args().hours * 60 <= 20, "the default budget keeps the main job within 20 minutes"
    assert config.load_config(Args, config.CONFIGS_DIR / "ppo_tiny.yaml")["hours"] == 0


@pytest.mark.parametrize(("flags", "words"), [
    (["--hours", "-1"], "hours"),
    (["--stages", "ppo", "nosuch"], "unknown stage 'nosuch'"),
    (["--gate-deals", "1"], "gate_deals"),
    (["--gate-patience", "0"], "gate_patience"),
    (["--stages", "ppo", "ppo"], "each stage once"),
    (["--stages", "early_rounds", "ppo"], "begin with ppo"),
])
def test_bad_options_are_one_error_line(flags: list[str], words: str, capsys: pytest.CaptureFixture[str],
                                        tmp_path: Path) -> None:
    assert cli.main(["train", "--run-dir", str(tmp_path / "r"), *flags]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and words in err[0], err
    assert not (tmp_path / "r").exists(), "nothing is written for bad options"


def test_resume_of_what_is_not_a_recipe_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "plain").mkdir()
    assert cli.main(["train", "--resume", str(tmp_path / "plain"), "--hours", "1"]) == 2
    assert "recipe.json is missing" in capsys.readouterr().err
    assert cli.main(["train", "--resume", str(tmp_path / "nosuch"), "--hours", "1"]) == 2
    assert "no such checkpoint file or run folder" in capsys.readouterr().err
    (tmp_path / "loose.pt").write_bytes(b"x")
    assert cli.main(["train", "--resume", str(tmp_path / "loose.pt"), "--hours", "1"]) == 2
    assert "neither a run folder" in capsys.readouterr().err
    # without --hours, a checkpoint of a PPO run resumes that run (its own errors)
    assert cli.main(["train", "--resume", str(tmp_path / "loose.pt")]) == 2
    assert "not a readable checkpoint" in capsys.readouterr().err


@pytest.mark.parametrize("bad", [
    "[]", "{", json.dumps({"version": 99}),
    json.dumps({**recipe.RecipeState().to_dict(), "best": "../../etc/passwd"}),
    json.dumps({**recipe.RecipeState().to_dict(), "stall": -1}),
    json.dumps({**recipe.RecipeState().to_dict(), "elapsed_s": "soon"}),
    json.dumps({**recipe.RecipeState().to_dict(), "gates": [1, 2]}),
    json.dumps({**recipe.RecipeState().to_dict(), "elapsed_s": 1e300}),
    json.dumps({**recipe.RecipeState().to_dict(), "gates": [{"n": 0, "stage": "ppo", "stage_index": 0,
                                                             "at_s": 1.0, "promoted": "yes", "margin": None,
                                                             "se": None}]}),
])
def test_a_malformed_state_file_is_refused(tmp_path: Path, bad: str) -> None:
    path = tmp_path / "recipe.json"
    path.write_text(bad)
    with pytest.raises(ConfigError, match="resume"):
        recipe.RecipeState.load(path)


def test_state_round_trip(tmp_path: Path) -> None:
    gate = {"n": 0, "stage": "ppo", "stage_index": 0, "at_s": 3.5, "promoted": True, "margin": None, "se": None}
    state = recipe.RecipeState(elapsed_s=12.5, stage_index=3, stage_dir="stages/03_consolidate", stall=1,
                               best="checkpoints/best.pt", best_stage="early_rounds", gates=[gate],
                               last_gate_s=10.0)
    (tmp_path / "recipe.json").write_text(json.dumps(state.to_dict()))
    assert recipe.RecipeState.load(tmp_path / "recipe.json") == state
    state.first_iteration_s = {"last_round": 93.0}
    (tmp_path / "recipe.json").write_text(json.dumps(state.to_dict()))
    assert recipe.RecipeState.load(tmp_path / "recipe.json") == state
    older = state.to_dict()  # a state file written before first_iteration_s: loads with none measured
    del older["first_iteration_s"]
    (tmp_path / "recipe.json").write_text(json.dumps(older))
    assert recipe.RecipeState.load(tmp_path / "recipe.json").first_iteration_s == {}
    (tmp_path / "recipe.json").write_text(json.dumps({**older, "first_iteration_s": {"last_round": "slow"}}))
    with pytest.raises(ConfigError, match="first_iteration_s"):
        recipe.RecipeState.load(tmp_path / "recipe.json")
    state.stage = "consolidate"  # the current stage's name; absent in older files (None)
    (tmp_path / "recipe.json").write_text(json.dumps(state.to_dict()))
    assert recipe.RecipeState.load(tmp_path / "recipe.json") == state
    del older["stage"]
    (tmp_path / "recipe.json").write_text(json.dumps(older))
    assert recipe.RecipeState.load(tmp_path / "recipe.json").stage is None
    (tmp_path / "recipe.json").write_text(json.dumps({**older, "stage": "nosuch"}))
    with pytest.raises(ConfigError, match="'stage'"):
        recipe.RecipeState.load(tmp_path / "recipe.json")
    (tmp_path / "recipe.json").write_text(json.dumps({**older, "stage": "early_rounds"}))  # stage_dir: consolidate
    with pytest.raises(ConfigError, match="'stage' is 'early_rounds' but stage_dir"):
        recipe.RecipeState.load(tmp_path / "recipe.json")
    # an older file's stage: its folder's, else the index-th of the one order there was (whatever stages selected)
    assert recipe.current_stage(recipe.RecipeState(stage_index=3, stage_dir="stages/03_early_rounds")) == "early_rounds"
    assert recipe.current_stage(recipe.RecipeState(stage_index=3)) == "consolidate"


def test_an_expert_stage_starts_only_with_room_for_its_first_iteration() -> None:
    # the user's case: last_round's first iteration took 93 s earlier in the run; 68 s left does not start it again
    assert not recipe.room_for_stage(68.0, 93.0)
    assert recipe.room_for_stage(93.0, 93.0) and recipe.room_for_stage(400.0, 93.0)
    assert recipe.room_for_stage(68.0, None)  # never measured in this run: it starts, and measures it
    assert not recipe.room_for_stage(0.0, None) and not recipe.room_for_stage(-1.0, 5.0)
    # the estimate: the stage's own first iteration, else the shortest of the other expert stages', else none
    measured = {"ppo": 12.0, "last_round": 35.0}
    assert recipe.first_iteration_estimate("last_round", measured)[0] == 35.0
    assert recipe.first_iteration_estimate("early_rounds", measured)[0] == 35.0  # PPO's is not an expert iteration
    assert recipe.first_iteration_estimate("early_rounds", {**measured, "consolidate": 20.0})[0] == 20.0
    assert recipe.first_iteration_estimate("early_rounds", {"ppo": 12.0})[0] is None
    # the resumed run of the brief: early_rounds never ran, 4 s left, last_round's first iteration took 35 s
    assert not recipe.room_for_stage(4.0, recipe.first_iteration_estimate("early_rounds", measured)[0])


def test_a_resumed_run_warms_the_same_kernels_as_a_fresh_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, list[str]]] = []

    def fake_warm_up(rules: object, stages: tuple = ()) -> None:
        calls.append((f"{rules.preset} {rules.num_players}", sorted(a.exp_name for a in stages)))

    monkeypatch.setattr(recipe, "warm_up", fake_warm_up)
    args = tiny_args(tmp_path, hours=0.01)
    fresh = recipe.Recipe(args, None)
    fresh.save_state()
    (fresh.run_dir / "config.yaml").write_text(yaml.safe_dump(config.args_to_dict(fresh.args), sort_keys=False))
    fresh.release()
    resumed = recipe.Recipe(config.make_args(Args, {**config.args_to_dict(args), "resume": str(tmp_path / "run"),
                                                    "run_dir": None, "hours": 0.02}), {"hours"})
    resumed.release()
    assert len(calls) == 2 and calls[0] == calls[1], calls
    # every expert stage's kernels (its games and labels) compile before the clock starts, not only the core's
    assert calls[0][1] == sorted(f"{args.exp_name}_{n}" for n in recipe.EXPERT_STAGES), calls


def test_the_stage_warm_up_plays_and_labels_without_reading_init(tmp_path: Path) -> None:
    from cassino_env.rules import make_rules
    from train.exit import ExitArgs
    from train.expert.loop import warm_up

    rules = make_rules("classic", 2)
    for name in ("last_round", "early_rounds"):
        values = config.load_config(ExitArgs, ROOT / "configs" / "tiny_stages" / f"stage_{name}.yaml")
        values.update(init=f"checkpoint:{tmp_path / 'no_such.pt'}", run_dir=str(tmp_path / name))
        warm_up(config.make_args(ExitArgs, values), rules)  # the missing init is not read: no error
        assert not (tmp_path / name).exists()  # nothing saved


def test_provenance_fields_and_checks() -> None:
    p = make_provenance(seed=5, stage="ppo", wall_s=60.0)
    assert p["seed"] == 5 and p["stage"] == "ppo" and p["saved_at"].endswith("Z")
    assert "stage ppo, seed 5, 1.0 min of the run" in describe(p)
    assert describe(None).startswith("no record")
    shown = describe({"command": "x\n\x1b[31mFAKE"})
    assert "\n" not in shown and "\x1b" not in shown and "FAKE" in shown  # escaped, one line
    for bad in ([], {"x": [1]}, {"": 1}, {"x": "y" * 5000}, {f"k{i}": i for i in range(100)}):
        with pytest.raises(ValueError, match="provenance"):
            check_provenance(bad)


def test_a_hostile_provenance_is_refused_on_load(tmp_path: Path) -> None:
    from cassino_env.rules import make_rules

    src = ROOT / "agents" / "pretrained" / "classic.pt"
    data = torch.load(src, weights_only=True)
    data["provenance"] = {"command": {"nested": 1}}
    torch.save(data, tmp_path / "bad.pt")
    with pytest.raises(CheckpointError, match="provenance.command"):
        read_checkpoint(tmp_path / "bad.pt", make_rules("classic", 2))


@pytest.mark.slow
def test_a_tiny_recipe_runs_every_stage_gates_and_resumes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = tiny_args(tmp_path, hours=0.012, gate_every_s=4.0)
    final = recipe.train(args)
    out = capsys.readouterr().out.splitlines()
    run = tmp_path / "run"
    state = recipe.RecipeState.load(run / "recipe.json")
    assert final == run / "checkpoints" / "final.pt" and state.done
    stages = {g["stage"] for g in state.gates}
    assert "ppo" in stages and stages & set(recipe.EXPERT_STAGES), stages
    # every stage's progress lines show the run's budget, not the time its step or iteration ceiling would take
    # (a stage's iteration lines name no cap: "iteration 3 | ..."; iteration 0 is the evaluation before training)
    progress = [line for line in out if re.match(r"step |iteration [1-9]\d*[ /]|cassino exit: \d+ iteration", line)]
    assert any(line.startswith("iteration ") for line in progress) or not stages & {"last_round", "early_rounds"}
    assert all("recipe: " in line and " used, " in line for line in progress), progress
    for g in state.gates[1:]:  # the gate promotes only a candidate clearly ahead of the best
        assert g["promoted"] == g["gain"] == (g["margin"] > 0 and g["margin"] >= args.gate_min_z * g["se"]), g
    assert state.gates[0]["promoted"]
    # final.pt is the best network, with its record
    best, fin = read_checkpoint(run / "checkpoints" / "best.pt"), read_checkpoint(final)
    for k, v in best["model"].items():
        assert torch.equal(v, fin["model"][k]), k
    promoted = [g["n"] for g in state.gates if g["promoted"]]
    assert sorted(p.name for p in (run / "checkpoints").glob("best_gate_*.pt")) == [
        f"best_gate_{n:04d}.pt" for n in promoted]
    # the best at any time of the run: the last promoted gate's copy (the anytime curve)
    for g in state.gates:
        found = recipe.best_at(run, g["at_s"])
        last = [h for h in state.gates if h["promoted"] and h["at_s"] <= g["at_s"]][-1]
        assert found is not None and found[0] == run / "checkpoints" / f"best_gate_{last['n']:04d}.pt", (g, found)
    assert recipe.best_at(run, state.elapsed_s + 1.0) is None  # not reached
    assert recipe.best_at(run, state.gates[0]["at_s"] / 2) is None  # before the first gate
    prov = fin["provenance"]
    assert prov["stage"] == state.best_stage and prov["seed"] == args.seed and prov["wall_s"] > 0
    assert prov["recipe"].startswith("cassino train")
    # every stage folder is a run of its own trainer
    for folder in (run / "stages").iterdir():
        assert (folder / "checkpoints" / "final.pt").is_file(), folder
        assert not list((folder / "checkpoints").glob("gate_*.pt")), "gated candidates are deleted"
        if folder.name.endswith("_last_round"):  # nothing reads a finished last-round stage's labels again
            assert not list((folder / "labels").glob("*.npz")), folder
    # a larger budget goes on from where it stopped
    used = state.elapsed_s
    recipe.train(config.make_args(Args, {**config.args_to_dict(args), "resume": str(run), "run_dir": None,
                                         "hours": 0.02}), explicit={"hours"})
    again = recipe.RecipeState.load(run / "recipe.json")
    assert again.elapsed_s > used and len(again.gates) > len(state.gates) and again.stage_index >= state.stage_index
    assert again.gates[: len(state.gates)] == state.gates


def test_ppo_only_stage_list_ends_after_ppo(tmp_path: Path) -> None:
    args = tiny_args(tmp_path, hours=0.004, gate_every_s=2.0, stages=["ppo"], total_timesteps=6144)
    recipe.train(args)
    state = recipe.RecipeState.load(tmp_path / "run" / "recipe.json")
    assert {g["stage"] for g in state.gates} == {"ppo"} and state.done
    assert sorted(p.name for p in (tmp_path / "run" / "stages").iterdir()) == ["00_ppo"]


def test_stages_run_in_the_order_given(tmp_path: Path) -> None:
    assert recipe.expert_order(("ppo", "consolidate", "early_rounds")) == ("consolidate", "early_rounds")
    assert recipe.expert_order(("ppo",)) == recipe.EXPERT_STAGES
    args = tiny_args(tmp_path, hours=0.01, gate_every_s=3.0, stages=["ppo", "early_rounds", "last_round"],
                     total_timesteps=6144)
    recipe.train(args)
    state = recipe.RecipeState.load(tmp_path / "run" / "recipe.json")
    folders = sorted(p.name for p in (tmp_path / "run" / "stages").iterdir())
    turn = ["early_rounds", "last_round"]
    assert len(folders) >= 2 and folders == [f"{i:02d}_{'ppo' if i == 0 else turn[(i - 1) % 2]}"
                                             for i in range(len(folders))], folders
    assert [g["stage"] for g in state.gates if g["stage_index"] == 1] and all(
        g["stage"] == "early_rounds" for g in state.gates if g["stage_index"] == 1), state.gates
    # resumed with other stages: the stage in progress is not among them and is left; the rest turn in the new order
    before = len(folders)
    recipe.train(config.make_args(Args, {**config.args_to_dict(args), "resume": str(tmp_path / "run"), "run_dir": None,
                                         "hours": 0.02, "stages": ["ppo", "last_round"]}),
                 explicit={"hours", "stages"})
    again = recipe.RecipeState.load(tmp_path / "run" / "recipe.json")
    later = sorted(p.name for p in (tmp_path / "run" / "stages").iterdir())[before:]
    assert all(f.endswith("_last_round") for f in later), later
    new_gates = again.gates[len(state.gates):]
    assert new_gates and all(g["stage"] == "last_round" for g in new_gates), again.gates
    assert again.gates[: len(state.gates)] == state.gates


def test_saved_checkpoints_carry_provenance(tmp_path: Path) -> None:
    from agents.policy import CassinoPolicy
    from cassino_env.obs import obs_size
    from cassino_env.rules import make_rules

    rules = make_rules("classic", 2)
    path = save_checkpoint(tmp_path / "a.pt", CassinoPolicy(obs_dim=obs_size(2, 2), hidden=8, embed=4), rules)
    prov = read_checkpoint(path)["provenance"]
    assert {"command", "commit", "saved_at", "version"} <= set(prov)


def test_a_bad_stage_config_is_refused_before_anything_is_written(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    stages = tmp_path / "stages"
    stages.mkdir()
    for f in (ROOT / "configs" / "tiny_stages").glob("*.yaml"):
        (stages / f.name).write_text(f.read_text())
    with (stages / "stage_early_rounds.yaml").open("a") as f:
        f.write("nosuchfield: 1\n")
    assert cli.main(["train", "--stage-configs", str(stages), "--run-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown field 'nosuchfield'" in err[0], err
    assert not (tmp_path / "r").exists()
    assert cli.main(["train", "--stage-configs", str(tmp_path / "none"), "--run-dir", str(tmp_path / "r")]) == 2
    assert "No such file" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_the_lines_show_the_budget_and_the_run_closes_with_how_to_go_on(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A newcomer's run was cut without warning and its closing line did not say how to go on (issue 50)."""
    args = tiny_args(tmp_path, hours=0.004, gate_every_s=2.0, stages=["ppo"], total_timesteps=6144,
                     final_eval_deals=4, final_eval_opponents=["random", "greedy"])
    recipe.train(args)
    run = tmp_path / "run"
    lines = capsys.readouterr().out.strip().splitlines()
    said = [line for line in lines if line.startswith("[recipe ")]
    assert said and all(" used, " in line and line.endswith(" left") for line in said), said
    # PPO's own progress line shows the run's budget, not the time its step cap would take
    steps = [line for line in lines if line.startswith("step ")]
    assert steps and all("recipe: " in line and " used, " in line for line in steps), steps  # the first too
    # the table after training: the checkpoint named shortly (its path once above), its pairs, the ratings explained
    assert f"checkpoint:final.pt below is checkpoint:{run / 'checkpoints' / 'final.pt'}" in lines
    table = [line for line in lines if line.startswith(("checkpoint:final.pt ", "random ", "greedy "))]
    assert not any(line.startswith("random ") and " greedy " in line for line in table), table
    assert any(line.startswith("(and 1 pair of the other agents") for line in lines)
    assert any(line.startswith("Elo (BT): ") for line in lines)
    for folder in ("eval_after_training", "eval_after_training_network_alone"):
        assert {p.name for p in (run / folder).iterdir()} == {"eval.json", "eval.csv", "eval.md", "heatmap.png"}
    saved = json.loads((run / "eval_after_training" / "eval.json").read_text())
    assert len(saved["pairs"]) == 3, "the saved report keeps every pair"
    assert saved["specs"] == {"checkpoint:final.pt": f"checkpoint:{run / 'checkpoints' / 'final.pt'}"}
    # the closing line, under the tables, says how to go on
    assert lines[-1].startswith(f"the run is in {run} (") and lines[-1].endswith(
        f"go on with: cassino train --resume {run} --hours 0.008"), lines[-1]


def test_the_anytime_script_plays_each_best_against_the_one_before(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("anytime", ROOT / "scripts" / "anytime.py")
    anytime = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(anytime)
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    net = read_checkpoint(ROOT / "agents" / "pretrained" / "classic.pt")
    policy = __import__("agents.ppo_agent", fromlist=["policy_from_checkpoint"]).policy_from_checkpoint(net, "x")
    from cassino_env.rules import make_rules

    for n in (0, 2):
        save_checkpoint(run / "checkpoints" / f"best_gate_{n:04d}.pt", policy, make_rules("classic"))
    gates = [{"n": 0, "stage": "ppo", "stage_index": 0, "at_s": 60.0, "promoted": True, "margin": None, "se": None},
             {"n": 1, "stage": "ppo", "stage_index": 0, "at_s": 150.0, "promoted": False, "margin": -0.1, "se": 0.1},
             {"n": 2, "stage": "last_round", "stage_index": 1, "at_s": 250.0, "promoted": True, "margin": 0.3,
              "se": 0.1}]
    (run / "recipe.json").write_text(json.dumps(recipe.RecipeState(elapsed_s=300.0, gates=gates).to_dict()))
    out = tmp_path / "anytime.json"
    assert anytime.main([str(run), "--minutes", "1", "2", "4.5", "6", "--deals", "3", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "6 min: the run has no best network then" in text
    rows = json.loads(out.read_text())["rows"]
    assert [r["minutes"] for r in rows] == [2, 4.5]
    assert rows[0]["same_network"] and rows[1]["gate"] == 2 and rows[1]["games"] == 6
    assert abs(rows[1]["margin"]) < 1e-9  # the same weights on both sides of duplicate deals: level
    assert anytime.main([str(run), "--minutes", "0.5", "6"]) == 2  # fewer than two points
    assert "error: " in capsys.readouterr().err
    assert anytime.main([str(tmp_path / "nosuch")]) == 2  # not a run folder: one line, before any game
    assert anytime.main([str(run), "--out", str(tmp_path / "nosuch" / "a.json")]) == 2
    assert capsys.readouterr().err.count("error: ") == 2



def test_the_table_after_training_names_a_checkpoint_below_the_current_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A new-user trial: ``cassino train --run-dir /tmp/x/p3`` run from /tmp/x printed every bot-against-bot pair
    under the checkpoint's name line and then "(and 15 pairs ... not shown)": the report named the checkpoint by its
    path relative to the current folder (``checkpoint:p3/checkpoints/final.pt``), so the short name matched no pair."""
    from agents.policy import CassinoPolicy
    from cassino_env.obs import obs_size
    from cassino_env.rules import make_rules
    from train.run import final_evaluation

    rules = make_rules("classic", 2)
    final = tmp_path / "p3" / "checkpoints" / "final.pt"
    final.parent.mkdir(parents=True)
    save_checkpoint(final, CassinoPolicy(obs_dim=obs_size(2, 2), hidden=8, embed=4), rules)
    monkeypatch.chdir(tmp_path)
    args = Args(final_eval_deals=4, final_eval_opponents=["random", "greedy"], device="cpu")
    final_evaluation(final, rules, args)
    lines = capsys.readouterr().out.splitlines()
    assert f"checkpoint:final.pt below is checkpoint:{final}" in lines
    names = {"checkpoint:final.pt", "random", "greedy"}
    pairs = [line.split()[:2] for line in lines if len(line.split()) > 2 and set(line.split()[:2]) <= names]
    assert pairs == [["checkpoint:final.pt", "random"], ["checkpoint:final.pt", "greedy"]], lines
    assert "(and 1 pair of the other agents against each other, not shown: they place the ratings below; every pair " \
           "is in the saved report)" in lines
    saved = json.loads((tmp_path / "p3" / "eval_after_training" / "eval.json").read_text())
    assert saved["agents"][0] == "checkpoint:final.pt" and len(saved["pairs"]) == 3
    assert saved["specs"] == {"checkpoint:final.pt": f"checkpoint:{final}"}
