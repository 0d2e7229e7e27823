"""The vector env's ``copy`` option (cassino_env.vector): ``copy=False`` returns read-only views of buffers the next
step overwrites, with the same values, shapes and dtypes as the default fresh copies; the fused step agrees with the
core, the encoder and the public view it replaces, serial and parallel."""

from __future__ import annotations

import numpy as np
import pytest

from cassino_env import core
from cassino_env.obs import encode, public_view
from cassino_env.vector import CassinoVectorEnv, EnvConfigError, step_rewards

RUNS = [("classic", 2), ("cicera", 4), ("bga", 6), ("matsuda", 2), ("royal", 3)]
IDS = [f"{p}-{n}p" for p, n in RUNS]


def _rng(B: int, seed: int = 0) -> np.ndarray:
    return (np.arange(B, dtype=np.uint64) + np.uint64(seed)) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(1)


def _flat(obs: dict) -> dict[str, np.ndarray]:
    out = {k: v for k, v in obs.items() if k != "view"}
    out.update({f"view.{k}": v for k, v in obs.get("view", {}).items()})
    return out


def _same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert list(a) == list(b)
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
        assert np.array_equal(a[k], b[k]), k


def _result(res: core.StepResult) -> dict[str, np.ndarray]:
    return {f: getattr(res, f) for f in core.StepResult.__dataclass_fields__}


@pytest.mark.parametrize(("preset", "n"), RUNS, ids=IDS)
@pytest.mark.parametrize(("reward", "episode", "seat"), [("points", "deal", None), ("win", "match", 1)])
def test_copy_false_gives_the_values_of_copy_true(preset, n, reward, episode, seat):
    B = 24
    kw = dict(rules=preset, num_players=n, seed=5, reward=reward, episode=episode, reward_seat=seat)
    fresh, views = CassinoVectorEnv(B, **kw), CassinoVectorEnv(B, copy=False, **kw)
    assert fresh.copy is True and views.copy is False
    o1, _ = fresh.reset()
    o2, _ = views.reset()
    _same(_flat(o1), _flat(o2))
    rng = _rng(B, 2)
    for _ in range(250 if episode == "match" else 120):
        a = core.random_actions(fresh.state, rng)
        o1, r1, t1, u1, i1 = fresh.step(a)
        o2, r2, t2, u2, i2 = views.step(a)
        _same(_flat(o1), _flat(o2))
        _same({"r": r1, "t": t1, "u": u1}, {"r": r2, "t": t2, "u": u2})
        _same(_result(i1["result"]), _result(i2["result"]))
        assert r2.shape == ((B, n) if seat is None else (B,))


@pytest.mark.parametrize(("preset", "n"), RUNS, ids=IDS)
@pytest.mark.parametrize("parallel", [False, True])
def test_fused_step_matches_the_core_encoder_and_view(preset, n, parallel):
    B = 40
    env = CassinoVectorEnv(B, rules=preset, num_players=n, seed=11, parallel=parallel, copy=False)
    obs, _ = env.reset()
    ref = core.init(env.rules, np.arange(11, 11 + B, dtype=np.int64), max_moves=env.max_moves)
    rng = _rng(B, 4)
    for _ in range(150):
        assert np.array_equal(obs["observation"], encode(ref, ref.current_player))
        assert np.array_equal(obs["action_mask"], core.legal_mask(ref).astype(np.int8))
        for key in ("current_player", "move_kind", "move_card", "move_value", "move_cards"):
            assert np.array_equal(obs[key], getattr(ref, key)), key
        _same(obs["view"], public_view(ref))
        a = core.random_actions(ref, rng)
        res = core.step(ref, a)
        obs, rewards, terminated, truncated, info = env.step(a)
        assert np.array_equal(rewards, step_rewards(res, env.rules, env.reward))
        assert np.array_equal(terminated, res.deal_done) and not truncated.any()
        _same(_result(info["result"]), _result(res))


def test_copy_false_arrays_are_read_only_views_the_next_step_overwrites():
    B = 32
    env = CassinoVectorEnv(B, seed=1, copy=False)
    obs, _ = env.reset()
    rng = _rng(B)
    out = env.step(core.random_actions(env.state, rng))
    obs = out[0]
    held = [*_flat(obs).values(), *out[1:4], *_result(out[4]["result"]).values()]
    kept = [x.copy() for x in held]
    for x in held:
        if x is not obs["observation"]:  # the observation buffer is writable, as with copy=True
            assert not x.flags.writeable
            with pytest.raises(ValueError, match="read-only"):
                x[...] = 0
    changed = 0
    for _ in range(40):
        out2 = env.step(core.random_actions(env.state, rng))
        now = [*_flat(out2[0]).values(), *out2[1:4], *_result(out2[4]["result"]).values()]
        for x, y in zip(held, now, strict=True):
            assert np.shares_memory(x, y)  # the same buffers, overwritten in place
            assert np.array_equal(x, y)
        changed += sum(not np.array_equal(x, k) for x, k in zip(held, kept, strict=True))
    assert changed > 0
    assert np.array_equal(obs["move_kind"], env.state.move_kind)  # views of the state's own move table


def test_copy_true_returns_fresh_arrays():
    B = 8
    env = CassinoVectorEnv(B, seed=2)
    obs, _ = env.reset()
    rng = _rng(B)
    a = env.step(core.random_actions(env.state, rng))
    b = env.step(core.random_actions(env.state, rng))
    for x, y in zip([*_flat(a[0]).values(), *a[1:4], *_result(a[4]["result"]).values()],
                    [*_flat(b[0]).values(), *b[1:4], *_result(b[4]["result"]).values()], strict=True):
        assert x.flags.writeable
        assert not np.shares_memory(x, y)  # the observation too: the caller's (Gymnasium's copy contract)
    for key in ("move_kind", "move_cards", "current_player"):
        assert not np.shares_memory(b[0][key], getattr(env.state, key))


@pytest.mark.parametrize("copy", [True, False])
def test_bad_action_applies_nothing(copy):
    B = 6
    env = CassinoVectorEnv(B, seed=3, copy=copy)
    obs, _ = env.reset()
    before = env.state.copy()
    mask = obs["action_mask"].copy()
    actions = np.zeros(B, dtype=np.int32)
    actions[4] = int(env.state.num_moves[4])
    with pytest.raises(core.ActionIndexError,
                       match=rf"^game 4: action {actions[4]} is not a listed move index 0..{actions[4] - 1}$"):
        env.step(actions)
    with pytest.raises(core.ActionIndexError, match="game 2: action -1"):
        env.step(np.array([0, 0, -1, 0, 0, 9999]))
    with pytest.raises(core.ActionIndexError, match=r"shape \(6,\)"):
        env.step(np.zeros(5, dtype=np.int64))
    with pytest.raises(core.ActionIndexError, match="integer array"):
        env.step(np.zeros(B, dtype=np.float64))
    for field in ("_u64", "_i8", "_i16", "_i64", "_m8", "_mvc"):
        assert np.array_equal(getattr(before, field), getattr(env.state, field)), field
    assert np.array_equal(env.observe()["action_mask"], mask)
    env.step(actions.astype(np.uint8) * 0)  # any integer dtype
    assert env.state.deal_index.tolist() == [0] * B


def test_assigned_state_rebinds():
    """A state assigned to ``env.state`` (as the arena and the server do, auto-reset off here) is the one stepped."""
    env = CassinoVectorEnv(1, seed=0, copy=False)
    env.reset()
    env.state = core.init(env.rules, np.array([7], dtype=np.int64), max_moves=env.max_moves, auto_reset=False)
    ref = core.init(env.rules, np.array([7], dtype=np.int64), max_moves=env.max_moves, auto_reset=False)
    obs = env.observe()
    rng = _rng(1)
    while ref.current_player[0] >= 0:
        assert np.array_equal(obs["observation"], encode(ref, ref.current_player))
        _same(obs["view"], public_view(ref))
        a = core.random_actions(ref, rng)
        res = core.step(ref, a)
        obs, rewards, terminated, _, info = env.step(a)
        _same(_result(info["result"]), _result(res))
    assert terminated[0] and obs["view"]["viewer"][0] == -1 and not obs["observation"].any()
    env.state = core.init(env.rules, np.array([1, 2], dtype=np.int64), max_moves=env.max_moves)
    with pytest.raises(EnvConfigError, match="env.state"):
        env.observe()


def test_copy_must_be_a_bool():
    with pytest.raises(EnvConfigError, match="copy must be True or False"):
        CassinoVectorEnv(2, copy="no")


def test_classic_steps_compile_only_the_classic_serial_step(repo_root) -> None:
    import subprocess
    import sys

    code = ("import numpy as np; from cassino_env import core, _vector_kernels as VK; "
            "from cassino_env.vector import CassinoVectorEnv; env = CassinoVectorEnv(3, copy=False); env.reset(); "
            "env.step(core.random_actions(env.state, np.zeros(3, np.uint64))); "
            "print(*(len(k.signatures) for k in (VK.step_serial_classic, VK.step_serial_general, "
            "VK.step_parallel_classic, VK.step_parallel_general)))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=repo_root, capture_output=True, text=True, timeout=600,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "0", "0", "0"]
