"""The ``--device`` option (agents/device.py): its names, its refusals at the command line, and that ``cpu`` changes
nothing: the same weights, the same moves, checkpoints of CPU tensors that load on the CPU."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from agents.device import DEVICE_NAMES, DeviceError, check_device, device_of, resolve_device, to_cpu  # noqa: E402
from agents.policy import CassinoPolicy, MoveBatch  # noqa: E402
from agents.ppo_agent import load_checkpoint_agent, policy_from_checkpoint, read_checkpoint  # noqa: E402
from agents.registry import make_agent  # noqa: E402
from cassino_env.rules import make_rules  # noqa: E402
from cassino_env.vector import CassinoVectorEnv  # noqa: E402
from train import cli, config  # noqa: E402
from train.config import ConfigError  # noqa: E402
from train.exit import ExitArgs  # noqa: E402
from train.ppo_selfplay import Args, train  # noqa: E402

HAS_CUDA = torch.cuda.is_available()
HAS_MPS = getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()
PRETRAINED = Path(__file__).resolve().parents[1] / "agents" / "pretrained" / "classic.pt"


def tiny_args(run_dir: Path, **overrides: Any) -> Args:
    """Two iterations of 16 games x 48 moves (tests/test_reliability_runs.py's tiny run), a pool snapshot and a
    checkpoint after the first."""
    values = dict(exp_name="dev", threads=1, run_dir=str(run_dir), progress_every_s=0.0, max_train_seconds=0.0,
                  total_timesteps=2 * 768, num_envs=16, hidden=16, embed=8, num_minibatches=2, update_epochs=1,
                  pool_rate=0.25, snapshot_every=768, bot_rates={"greedy": 0.25}, eval_every=0, eval_deals=2,
                  eval_opponents=("random",), checkpoint_every=768, final_eval_deals=0)
    values.update(overrides)
    return Args(**values)


def tensors(value: Any, where: str = "") -> dict[str, torch.Tensor]:
    """Every tensor in a loaded checkpoint by its dotted place (the model, the optimiser, the pool, the games)."""
    if isinstance(value, torch.Tensor):
        return {where: value}
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    out: dict[str, torch.Tensor] = {}
    for k, v in items:
        out.update(tensors(v, f"{where}.{k}" if where else str(k)))
    return out


# --- the names ----------------------------------------------------------------------------------------------------


def test_auto_is_a_gpu_where_torch_sees_one_else_the_cpu() -> None:
    want = "cuda" if HAS_CUDA else "mps" if HAS_MPS else "cpu"
    assert resolve_device("auto").type == want
    assert resolve_device().type == want  # auto is the default
    if not (HAS_CUDA or HAS_MPS):
        assert resolve_device("auto") == torch.device("cpu")


def test_cpu_and_the_spellings_a_device_may_have() -> None:
    assert check_device("cpu") == "cpu" and check_device(" auto ") == "auto"
    assert resolve_device("cpu") == torch.device("cpu")
    for name in ("cuda", "cuda:0", "cuda:12", "mps"):
        assert check_device(name, available=False) == name
    assert DEVICE_NAMES == ("auto", "cpu", "cuda", "cuda:N", "mps")


@pytest.mark.parametrize("value", ["gpu", "CUDA", "Cpu", "cuda:", "cuda:x", "cuda:-1", "cuda:0:1", "tpu", "", " ",
                                   "cpu\n0", None, 0, ["cpu"]])
def test_a_name_that_is_no_device_is_refused_naming_the_field(value: object) -> None:
    with pytest.raises(DeviceError, match=r"^device: ") as info:
        check_device(value, available=False)
    assert isinstance(info.value, ValueError)
    with pytest.raises(DeviceError, match=r"^eval_device: "):
        check_device(value, "eval_device")


@pytest.mark.skipif(HAS_CUDA, reason="torch sees a CUDA GPU here")
@pytest.mark.parametrize("name", ["cuda", "cuda:0", "cuda:7"])
def test_cuda_is_refused_where_torch_sees_no_gpu(name: str) -> None:
    with pytest.raises(DeviceError, match=rf"^device: '{name}': torch sees no CUDA GPU on this machine"):
        resolve_device(name)


@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
def test_a_gpu_index_past_the_last_is_refused() -> None:
    count = torch.cuda.device_count()
    with pytest.raises(DeviceError, match=rf"torch sees {count} CUDA GPU"):
        resolve_device(f"cuda:{count}")


@pytest.mark.skipif(HAS_MPS, reason="torch sees an MPS device here")
def test_mps_is_refused_where_torch_sees_none() -> None:
    with pytest.raises(DeviceError, match=r"^device: 'mps': torch sees no MPS device"):
        check_device("mps")


def test_a_torch_device_is_taken_by_its_name_wherever_a_name_is() -> None:
    """Hostile: ``PPOAgent.to`` took ``torch.device("cpu")`` but ``make_agent``, ``evaluate`` and ``play_session``
    refused it ('got device device(type='cpu')')."""
    assert check_device(torch.device("cpu")) == "cpu" and check_device(torch.device("cpu", 0)) == "cpu"
    assert check_device(torch.device("cuda", 2), available=False) == "cuda:2"
    assert check_device(torch.device("mps", 0), available=False) == "mps"
    with pytest.raises(DeviceError, match="^device: 'meta' is not a device"):
        check_device(torch.device("meta"))
    agent = make_agent("pretrained:classic", make_rules("classic"), device=torch.device("cpu"))
    assert agent.device == torch.device("cpu")


def test_a_gpu_index_past_every_gpu_is_named_as_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hostile: ``--device cuda:99999`` was 'not a device; choose ... cuda:N', as if cuda:N were spelled wrong."""
    if not HAS_CUDA:
        with pytest.raises(DeviceError, match="^device: 'cuda:99999': torch sees no CUDA GPU"):
            check_device("cuda:99999")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert check_device("cuda:1") == "cuda:1"
    for name in ("cuda:2", "cuda:99999", "cuda:" + "9" * 5000):
        with pytest.raises(DeviceError, match=r"^device: 'cuda:.*: torch sees 2 CUDA GPUs here \(cuda:0 .. cuda:1\)$"):
            check_device(name)
    with pytest.raises(DeviceError) as info:
        check_device("cuda:" + "9" * 5000)
    assert len(str(info.value)) < 300  # the name cut in the middle, not 5,000 digits


# --- the options ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [Args, ExitArgs])
def test_device_is_an_option_of_both_trainers_checked_by_its_rule(cls: type) -> None:
    assert cls().device == "auto"
    assert cls(device=" cpu ").device == "cpu"
    with pytest.raises(ConfigError) as info:
        cls(device="gpu")
    assert info.value.field == "device" and str(info.value).startswith("device: 'gpu' is not a device")
    assert config.make_args(cls, {"device": "cpu"}).device == "cpu"  # the YAML path
    if not HAS_CUDA:
        with pytest.raises(ConfigError, match="^device: 'cuda': torch sees no CUDA GPU") as info:
            config.make_args(cls, {"device": "cuda"})
        assert info.value.field == "device"


def test_a_resumed_run_takes_the_device_given_now_not_the_checkpoints() -> None:
    """A run trained on a GPU goes on where there is none: the saved config's device is not taken (it would be
    refused here), the command line's is (default auto)."""
    saved = {"config": {**config.args_to_dict(Args()), "device": "cuda:3", "threads": 3}}
    args = config.resume_args(Args(), saved, explicit=set())
    assert args.device == "auto" and args.threads == 3  # threads, what the run learns with, come from the file
    args = config.resume_args(Args(device="cpu"), saved, explicit={"device"})
    assert args.device == "cpu"
    assert config.resume_args(Args(device="cpu"), saved, explicit=set()).device == "cpu"


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


@pytest.mark.parametrize("device", ["gpu", *([] if HAS_CUDA else ["cuda", "cuda:7"]), *([] if HAS_MPS else ["mps"])])
def test_train_refuses_a_device_with_one_line_and_exit_2_before_any_work(
        device: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["train", "--device", device, "--hours", "0"]) == 2
    assert one_error_line(capsys).startswith(f"error: device: {device!r}")
    assert list(tmp_path.iterdir()) == []  # no run folder, nothing written
    assert cli.main(["exit", "--device", device]) == 2
    assert one_error_line(capsys).startswith(f"error: device: {device!r}")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("device", ["gpu", *([] if HAS_CUDA else ["cuda"])])
def test_eval_and_play_refuse_a_device_with_one_line_and_exit_2(device: str, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert cli.main(["eval", "--agents", "random,greedy", "--deals", "2", "--no-progress", "--out-dir", str(out),
                     "--device", device]) == 2
    assert one_error_line(capsys).startswith(f"error: device: {device!r}")
    assert not out.exists()
    assert cli.main(["play", "--device", device]) == 2  # before the table is shown or a move is asked for
    assert one_error_line(capsys).startswith(f"error: device: {device!r}")
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("device", ["gpu", *([] if HAS_CUDA else ["cuda"])])
def test_exploit_and_proxy_take_and_check_a_device_as_every_network_command(device: str, tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Hostile: cassino exploit (a PPO trainer and an evaluation) and cassino proxy (networks scored) had no
    --device: exploit trained on auto's device with no say, and both refused the option as unrecognized."""
    run_dir = tmp_path / "probe"
    assert cli.main(["exploit", "random", "--minutes", "0.01", "--device", device, "--run-dir", str(run_dir)]) == 2
    assert one_error_line(capsys).startswith(f"error: device: {device!r}")
    assert capsys.readouterr().out == "" and not run_dir.exists()  # refused before its first line
    assert cli.main(["proxy", "--agents", "greedy", "--device", device, "--path", str(tmp_path / "none.npz")]) == 2
    assert one_error_line(capsys).startswith(f"error: device: {device!r}")  # before the file is looked for


def test_serve_refuses_a_device_before_it_listens(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("uvicorn")
    pytest.importorskip("starlette")
    assert cli.main(["serve", "--device", "gpu"]) == 2
    assert one_error_line(capsys) == ("error: device: 'gpu' is not a device; choose auto, cpu, cuda, cuda:N (N a GPU's "
                                      "index) or mps")


def test_the_web_apps_server_refuses_a_device_when_made_not_per_game() -> None:
    """Hostile: ``Server(device="gpu")`` (the API under cassino serve) was taken, then every game started was a 400
    blaming the page's ``opponent`` for the operator's device."""
    pytest.importorskip("starlette")
    from train.serve_state import Server

    with pytest.raises(DeviceError, match="^device: 'gpu' is not a device"):
        Server(device="gpu")
    assert Server(device=" cpu").device == "cpu" and Server().device is None
    assert Server(device=torch.device("cpu")).device == "cpu"


# --- cpu changes nothing ----------------------------------------------------------------------------------------------


def test_a_cpu_batch_and_network_move_nothing() -> None:
    """``MoveBatch.to`` and ``to_cpu`` on CPU tensors hand back the same objects: no copy, the same bits."""
    env = CassinoVectorEnv(3, "classic", seed=0, with_view=False)
    obs, _ = env.reset()
    batch = MoveBatch.from_obs(obs)
    assert batch.to("cpu") is batch and batch.to(torch.device("cpu")) is batch
    torch.manual_seed(0)
    net = CassinoPolicy(obs_dim=env.obs_size, hidden=16, embed=8)
    state = net.state_dict()
    assert to_cpu(state) is state and device_of(net) == net.device == torch.device("cpu")
    before = net(batch)
    weights = [p.data_ptr() for p in net.parameters()]
    assert net.to(resolve_device("cpu")) is net and [p.data_ptr() for p in net.parameters()] == weights
    after = net(batch)
    assert all(torch.equal(x, y) for x, y in zip(before, after, strict=True))


def test_to_cpu_hands_back_cpu_state_as_it_is() -> None:
    """A CPU run's checkpoint payload goes through :func:`to_cpu` unchanged (the same objects: what was always
    written); plain values pass through."""
    net = CassinoPolicy(obs_dim=10, hidden=4, embed=4)
    opt = torch.optim.Adam(net.parameters())
    sum(p.sum() for p in net.parameters()).backward()
    opt.step()
    state, opt_state = net.state_dict(), opt.state_dict()
    assert to_cpu(state) is state and hasattr(state, "_metadata")
    assert to_cpu(opt_state) is opt_state and opt_state["state"]
    assert to_cpu({"a": [1, "x", None, (2.0,)]}) == {"a": [1, "x", None, (2.0,)]}


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The tiny run twice from one seed: with ``device="cpu"`` and without the option."""
    root = tmp_path_factory.mktemp("device")
    with_cpu = train(tiny_args(root / "cpu", device="cpu"))
    without = train(tiny_args(root / "default"))
    return with_cpu, without


def test_a_cpu_run_trains_the_same_weights_as_a_run_without_the_option(pair: tuple[Path, Path]) -> None:
    if resolve_device("auto").type != "cpu":
        pytest.skip("auto is a GPU here: a run without the option trains there")
    a, b = (torch.load(p, weights_only=True) for p in pair)
    ta, tb = tensors({k: a[k] for k in ("model", "optimizer", "train")}), tensors({k: b[k] for k in
                                                                                  ("model", "optimizer", "train")})
    assert set(ta) == set(tb) and len(ta) > 50  # the weights, Adam's moments, the pool's snapshots, the games
    changed = [k for k in ta if not torch.equal(ta[k], tb[k])]
    assert changed == [], changed
    assert {t.device.type for t in ta.values()} == {"cpu"}
    assert a["train"]["config"]["device"] == "cpu" and b["train"]["config"]["device"] == "auto"


def test_a_training_checkpoint_records_the_device_and_holds_cpu_tensors(pair: tuple[Path, Path]) -> None:
    data = read_checkpoint(pair[0])
    assert data["provenance"]["device"] == "cpu"
    assert {t.device.type for t in tensors(data).values()} == {"cpu"}


def test_eval_provenance_says_where_a_network_trained() -> None:
    from agents.provenance import describe

    assert describe({"stage": "ppo", "seed": 1, "device": "cuda:0"}) == "stage ppo, seed 1, trained on cuda:0"
    assert "trained on" not in describe({"stage": "ppo"})  # a file written before the field


def test_a_run_resumed_on_another_device_names_each_in_turn(pair: tuple[Path, Path], tmp_path: Path) -> None:
    """Hostile: a run trained on a GPU and resumed on the CPU wrote checkpoints that said 'trained on cpu' alone.
    The GPU's file is simulated: the CPU run's middle checkpoint with its record saying cuda:0."""
    from agents.provenance import describe

    data = torch.load(pair[0].parent / "step_00000000768.pt", weights_only=True)
    data["provenance"]["device"] = "cuda:0"
    gpu = tmp_path / "gpu" / "checkpoints" / "step_00000000768.pt"
    gpu.parent.mkdir(parents=True)
    torch.save(data, gpu)
    resumed = read_checkpoint(train(tiny_args(tmp_path / "cpu", resume=str(gpu), device="cpu")))
    assert resumed["provenance"]["device"] == "cuda:0, then cpu"
    assert "trained on cuda:0, then cpu" in describe(resumed["provenance"])
    again = read_checkpoint(train(tiny_args(tmp_path / "cpu", resume=str(tmp_path / "cpu" / "checkpoints" /
                                                                        "latest.pt"), device="cpu",
                                            total_timesteps=3 * 768)))
    assert again["provenance"]["device"] == "cuda:0, then cpu"  # on the same device again: not named twice
    assert read_checkpoint(pair[0])["provenance"]["device"] == "cpu"  # a run on one device names it alone


def test_devices_in_turn_keeps_the_first_and_the_latest() -> None:
    from agents.provenance import MAX_DEVICES, devices_in_turn

    assert devices_in_turn(None, "cuda:0") == "cuda:0" and devices_in_turn(7, "cpu") == "cpu"
    assert devices_in_turn("", "cpu") == "cpu" and devices_in_turn("cuda:1", "cuda:1") == "cuda:1"
    text = "cpu"
    for i in range(20):
        text = devices_in_turn(text, f"cuda:{i % 2}")
    parts = text.split(", then ")
    assert len(parts) == MAX_DEVICES and parts[:2] == ["cpu", "..."] and parts[-1] == "cuda:1"


def test_the_first_progress_line_names_the_device(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    train(tiny_args(tmp_path / "run", device="cpu", checkpoint_every=0))
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("step ")]
    assert len(lines) == 2 and lines[0].endswith("| network on cpu") and "network on" not in lines[1], lines


def test_a_checkpoint_loads_onto_the_device_asked_for() -> None:
    rules = make_rules("classic")
    data = read_checkpoint(PRETRAINED, rules)  # read onto the CPU (map_location), checked there
    assert {t.device.type for t in tensors(data["model"]).values()} == {"cpu"}
    policy = policy_from_checkpoint(data, PRETRAINED, device="cpu")
    assert {p.device for p in policy.state_dict().values()} == {torch.device("cpu")}
    agent = load_checkpoint_agent(str(PRETRAINED), rules, device="cpu")
    assert agent.device == torch.device("cpu")
    for name, t in agent.policy.state_dict().items():
        assert torch.equal(t, data["model"][name]), name
    with pytest.raises(DeviceError, match="^device: 'gpu'"):
        load_checkpoint_agent(str(PRETRAINED), rules, device="gpu")


@pytest.mark.parametrize("spec", ["pretrained:classic", "policy:pretrained:classic", "search:pretrained:classic:40"])
def test_an_agent_on_the_cpu_plays_the_moves_it_plays_without_a_device(spec: str) -> None:
    rules = make_rules("classic")
    env = CassinoVectorEnv(8, rules, seed=5, with_view=True)
    obs, _ = env.reset()
    plain, on_cpu = make_agent(spec, rules), make_agent(spec, rules, device="cpu")
    net = on_cpu.net if hasattr(on_cpu, "net") else on_cpu
    assert net.device == torch.device("cpu")
    for _ in range(6):  # a few moves of every game
        a = plain.act(obs, np.random.default_rng(1))
        assert np.array_equal(on_cpu.act(obs, np.random.default_rng(1)), a)
        obs, *_ = env.step(a)


def test_make_agent_refuses_a_bad_device_before_building_even_a_bot() -> None:
    with pytest.raises(DeviceError, match="^device: 'gpu'"):
        make_agent("greedy", make_rules("classic"), device="gpu")
    assert make_agent("greedy", make_rules("classic"), device="cpu").name == "greedy"  # a bot ignores the device


def test_the_device_field_is_a_run_option_of_every_trainer() -> None:
    assert {f.name for f in dataclasses.fields(config.RunOptions)} >= {"device", "threads"}
    assert "device" in config.RUN_CONTROL_FIELDS


# --- on a GPU (skipped where torch sees none) -------------------------------------------------------------------------


@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
def test_a_gpu_run_writes_cpu_checkpoints_that_resume_and_load_on_the_cpu(tmp_path: Path) -> None:
    final = train(tiny_args(tmp_path / "gpu", device="cuda"))
    data = read_checkpoint(final)
    assert data["provenance"]["device"].startswith("cuda:")
    assert {t.device.type for t in tensors(data).values()} == {"cpu"}
    mid = tmp_path / "gpu" / "checkpoints" / "step_00000000768.pt"
    resumed = read_checkpoint(train(tiny_args(tmp_path / "cpu", resume=str(mid), device="cpu")))
    assert resumed["provenance"]["device"] == f"{data['provenance']['device']}, then cpu"  # each part's device
    assert resumed["train"]["global_step"] == 2 * 768
    rules = make_rules("classic")
    env = CassinoVectorEnv(8, rules, seed=2, with_view=True)
    obs, _ = env.reset()
    for device in ("cpu", "cuda"):
        agent = load_checkpoint_agent(str(final), rules, device=device)
        assert agent.device.type == device
        a = agent.act(obs, np.random.default_rng(0))
        assert obs["action_mask"][np.arange(8), a].all()


@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
def test_an_expert_iteration_run_trains_on_a_gpu(tmp_path: Path) -> None:
    from train.exit import train as exit_train

    tiny = Path(__file__).resolve().parents[1] / "configs" / "exit_tiny.yaml"
    args = config.make_args(ExitArgs, {**config.load_config(ExitArgs, tiny), "run_dir": str(tmp_path / "exit"),
                                       "device": "cuda"})
    data = read_checkpoint(exit_train(args))
    assert data["provenance"]["device"].startswith("cuda:")
    assert {t.device.type for t in tensors(data).values()} == {"cpu"}


@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
@pytest.mark.parametrize("spec", ["pretrained:classic", "search:pretrained:classic:40"])
def test_agents_on_a_gpu_play_legal_moves(spec: str) -> None:
    rules = make_rules("classic")
    env = CassinoVectorEnv(8, rules, seed=5, with_view=True)
    obs, _ = env.reset()
    agent = make_agent(spec, rules, device="cuda")
    assert (agent.net if hasattr(agent, "net") else agent).device.type == "cuda"
    for _ in range(6):
        a = agent.act(obs, np.random.default_rng(1))
        assert obs["action_mask"][np.arange(8), a].all()
        obs, *_ = env.step(a)
