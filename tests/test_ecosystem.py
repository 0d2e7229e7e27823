"""Each RL library's plain user code on the environments, with no glue (docs/ecosystem.md; issue 26 items 1-8).

The lines are the ones each library's users write: SB3's ``make_vec_env`` with a bare id, ``MaskablePPO("MlpPolicy",
...)`` on a Flat id, TorchRL's ``PettingZooWrapper(cassino_env.env(), use_mask=True)`` checked by
``check_env_specs``, Tianshou's collector resetting without a seed. RLlib runs in its own virtual environment (CI,
``.ci/run`` step 3); here only what it reads is checked. The slow test starts SB3's ``SubprocVecEnv`` with each start
method from a user's script.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium
import numpy as np
import pytest

import agents.gym  # noqa: F401 - registers the cassino/... ids
import cassino_env
from agents.gym_env import CassinoGymEnv
from cassino_env.aec import deal_points_bound
from cassino_env.render_image import HEIGHT, WIDTH
from cassino_env.rules import PRESETS, make_rules

FRAME = (HEIGHT, WIDTH, 3)


# --- 1. rgb_array: SB3's make_vec_env with the bare id ------------------------------------------------------------

def test_sb3_make_vec_env_takes_the_bare_id_and_renders_frames():
    """make_vec_env passes render_mode="rgb_array": it was refused (EnvConfigError), so n_envs=2 failed."""
    from stable_baselines3.common.env_util import make_vec_env

    vec = make_vec_env("cassino/Classic-v1", n_envs=2, seed=0)
    obs = vec.reset()
    assert obs["observation"].shape == (2, vec.envs[0].unwrapped.obs_size)
    frames = vec.get_images()
    assert [f.shape for f in frames] == [FRAME, FRAME] and frames[0].dtype == np.uint8
    assert len(np.unique(frames[0].reshape(-1, 3), axis=0)) > 10  # cards and text on the felt, not a blank image
    vec.close()


@pytest.mark.parametrize("make", [lambda: CassinoGymEnv(render_mode="rgb_array", learner_seat=0),
                                  lambda: cassino_env.env(render_mode="rgb_array")], ids=["gym", "aec"])
def test_rgb_array_frames_keep_one_size_through_a_deal(make):
    """Gymnasium's convention: metadata lists rgb_array, render() returns uint8[H, W, 3] of one size (a video)."""
    env = make()
    assert "rgb_array" in env.metadata["render_modes"] and env.metadata["render_fps"] > 0
    env.reset(seed=2)
    raw = env.unwrapped
    shapes, frames = set(), []
    for _ in range(60):
        frame = env.render()
        shapes.add((frame.shape, frame.dtype.name))
        frames.append(frame)
        if isinstance(raw, CassinoGymEnv):
            _, _, done, _, _ = env.step(int(np.flatnonzero(env.action_masks())[0]))
        else:
            obs, _, done, _, _ = env.last()
            env.step(None if done else int(np.flatnonzero(obs["action_mask"])[0]))
            done = not env.agents
        if done:
            break
    assert shapes == {(FRAME, "uint8")}
    assert not np.array_equal(frames[0], frames[-1])  # the table changed as cards were played


# --- 2. a flat observation: MaskablePPO("MlpPolicy", ...) ---------------------------------------------------------

def test_maskable_ppo_mlp_policy_on_the_flat_id():
    """MaskablePPO("MlpPolicy", env) was refused ("use MultiInputPolicy": the observation was a Dict)."""
    from sb3_contrib import MaskablePPO

    env = gymnasium.make("cassino/ClassicFlat-v1", opponent="random")
    assert env.observation_space == gymnasium.spaces.Box(0.0, env.observation_space.high, (env.unwrapped.obs_size,),
                                                         np.float32)
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=64)
    obs, _ = env.reset(seed=5)
    mask = env.unwrapped.action_masks()
    action, _ = model.predict(obs, action_masks=mask, deterministic=True)
    assert mask[int(action)]
    with pytest.raises(cassino_env.vector.EnvConfigError, match="^flat=True and with_moves=True"):
        CassinoGymEnv(flat=True, with_moves=True)


def test_flat_observation_is_the_dict_observation_vector():
    flat, full = CassinoGymEnv(flat=True, learner_seat=1), CassinoGymEnv(learner_seat=1)
    fo, finfo = flat.reset(seed=9)
    do, dinfo = full.reset(seed=9)
    np.testing.assert_array_equal(fo, do["observation"])
    np.testing.assert_array_equal(flat.action_masks(), full.action_masks())
    np.testing.assert_array_equal(finfo["action_mask"], dinfo["action_mask"])
    assert flat.observation_space.contains(fo)


# --- 3. the AEC mask only in the observation: TorchRL's PettingZooWrapper(..., use_mask=True) -----------------------

def test_torchrl_pettingzoo_wrapper_with_use_mask_on_the_default_env():
    """With the mask also in infos by default, TorchRL's wrapper failed at reset (a TypeError)."""
    from torchrl.envs import PettingZooWrapper
    from torchrl.envs.utils import check_env_specs

    env = PettingZooWrapper(cassino_env.env(), use_mask=True)
    check_env_specs(env)
    td = env.rollout(8)
    assert td["player_0", "action_mask"].dtype.is_floating_point is False


def test_the_aec_infos_hold_no_mask_by_default_and_the_option_stays():
    plain, with_info = cassino_env.env(), cassino_env.env(mask_in_info=True)
    for e in (plain, with_info):
        e.reset(seed=1)
    _, _, _, _, info = plain.last()
    _, _, _, _, info2 = with_info.last()
    assert "action_mask" not in info and set(info) == {"overflow", "illegal_action", "illegal_action_id"}
    np.testing.assert_array_equal(info2["action_mask"], with_info.last()[0]["action_mask"])


# --- 4. RLlib: the keys its action-masking module reads ------------------------------------------------------------

def test_the_rllib_keys_and_defaults():
    from cassino_env.rllib import RLLIB_DEFAULTS

    e = cassino_env.env(**RLLIB_DEFAULTS)
    e.reset(seed=0)
    obs = e.observe(e.agent_selection)
    assert set(obs) == {"observations", "action_mask"} == set(e.observation_space("player_0").spaces)
    e.step(int(np.flatnonzero(obs["action_mask"] == 0)[0]))  # a random unmasked action: RLlib's pre-check
    assert all(e.terminations.values())
    with pytest.raises(cassino_env.vector.EnvConfigError, match="^observation_key"):
        cassino_env.env(observation_key="obs")


def test_the_rllib_env_creator_wraps_the_env_in_rllibs_pettingzoo_env():
    pytest.importorskip("ray.rllib.env.wrappers.pettingzoo_env", reason="ray[rllib] lives in its own venv (.ci/run)")
    from cassino_env.rllib import env_creator

    env = env_creator({"rules": "matsuda"})
    obs, _ = env.reset(seed=0)
    assert set(next(iter(obs.values()))) == {"observations", "action_mask"}


# --- 5. an illegal move costs at least a whole deal, zero-sum -----------------------------------------------------

def test_an_illegal_move_costs_more_than_the_worst_deal():
    """The default was -1.0 while a lost deal is about -8: unmasked PPO learned to play an illegal first move."""
    env = CassinoGymEnv(opponent="advanced", learner_seat=0)
    worst = 0.0
    for seed in range(12):  # legal play: a deal's return never falls below the illegal move's cost
        obs, _ = env.reset(seed=seed)
        total, done = 0.0, False
        while not done:
            legal = np.flatnonzero(env.action_masks())
            _, r, done, _, info = env.step(int(legal[-1]))
            total += r
        worst = min(worst, total)
    obs, _ = env.reset(seed=0)
    _, illegal, done, _, info = env.step(int(np.flatnonzero(env.action_masks() == 0)[0]))
    assert done and info["illegal_action"] is True and "illegal" in env.illegal_reason
    assert illegal == -deal_points_bound(env.rules) <= -11 < worst  # classic: 11 points a deal besides sweeps


@pytest.mark.parametrize(("preset", "n"), [("classic", 3), ("cicera", 4), ("bga", 6)])
def test_the_aec_illegal_penalty_is_zero_sum_and_bounds_every_deal(preset, n):
    rules = make_rules(preset, num_players=n)
    bound = deal_points_bound(rules)
    e = cassino_env.env(rules=preset, num_players=n, illegal_action="terminate")
    rng = np.random.default_rng(n)
    for seed in range(6):  # random legal deals: no side's points exceed the bound
        e.reset(seed=seed)
        for _agent in e.agent_iter():
            obs, _, done, _, _ = e.last()
            e.step(None if done else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        assert int(e.unwrapped.last_result.deal_totals[0].max()) <= bound
    e.reset(seed=0)
    offender = e.agent_selection
    e.step(int(np.flatnonzero(e.last()[0]["action_mask"] == 0)[0]))
    rewards = e.unwrapped.rewards
    assert rewards[offender] == -bound and abs(sum(rewards.values())) < 1e-9
    assert cassino_env.env(reward="win", episode="match").unwrapped.illegal_reward == -1.0


def test_every_preset_has_a_bound():
    assert {p: deal_points_bound(make_rules(p)) for p in PRESETS}["classic"] == 35


# --- 6. Tianshou: the collector resets without a seed -------------------------------------------------------------

@pytest.mark.slow  # about 7 s of CPU (Tianshou's import and collector): the default suite's budget (conftest)
def test_tianshou_collector_credits_every_deal_to_the_learner_whichever_seat_it_holds():
    """Tianshou's collector resets without a seed (the match goes on, the dealer rotates). On the single-agent route
    (docs/ecosystem.md) each episode's stored rewards add up to the learner's side's deal points minus the other
    side's, in both seats; the multi-agent route (tianshou.env.PettingZooEnv) stores a seat's points only with the
    transition of the seat that played the deal's last card (seat 1 got 0.0 of its +8.0)."""
    import torch
    from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
    from tianshou.data import Collector, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.utils.net.common import AbstractDiscreteActor

    envs = DummyVectorEnv([lambda: CassinoGymEnv(opponent="random") for _ in range(2)])
    envs.seed(3)

    class UniformLegal(AbstractDiscreteActor):
        """Equal logits over the legal ids of the observation's mask."""

        def __init__(self) -> None:
            super().__init__(output_dim=524)
            self.zero = torch.nn.Parameter(torch.zeros(1))

        def get_preprocess_net(self) -> torch.nn.Module:
            return torch.nn.Identity()

        def forward(self, obs, state=None, info=None):
            legal = torch.as_tensor(obs.action_mask).bool()
            return self.zero.expand(legal.shape).masked_fill(~legal, -1e9), state

    policy = ProbabilisticActorPolicy(actor=UniformLegal(), action_space=envs.action_space[0], action_scaling=False,
                                      dist_fn=lambda logits: torch.distributions.Categorical(logits=logits))
    buf = VectorReplayBuffer(2048, 2)
    collector = Collector(policy, envs, buf)
    collector.reset()
    collector.collect(n_episode=8)
    episodes, seats = [], set()
    for sub in buf.buffers:  # one buffer per env, its transitions in order
        total = 0.0
        for i in range(len(sub)):
            total += float(sub.rew[i])
            if sub.terminated[i]:
                seat = int(sub.info["learner_seat"][i])
                points = sub.info["deal_points"][i]
                episodes.append((total, float(points[seat % 2] - points[1 - seat % 2])))
                seats.add(seat)
                total = 0.0
    assert len(episodes) >= 8 and seats == {0, 1}
    assert all(abs(got - want) < 1e-5 for got, want in episodes), episodes


# --- 8. masks: dtypes documented, the terminal observation of make_vec ---------------------------------------------

def test_make_vec_terminal_observation_has_no_legal_action_and_the_next_step_resets():
    vec = gymnasium.make_vec("cassino/Classic-v1", num_envs=2, opponent="random")
    obs, _ = vec.reset(seed=0)
    for _ in range(200):
        actions = [int(np.flatnonzero(m)[0]) if m.any() else 0 for m in obs["action_mask"]]
        obs, _, term, _, info = vec.step(np.array(actions))
        if term.any():
            break
    assert term.any()
    i = int(np.flatnonzero(term)[0])
    assert not obs["action_mask"][i].any()  # the episode is over: nobody is to move (documented)
    obs, reward, term2, _, _ = vec.step(np.zeros(2, dtype=np.int64))  # next-step autoreset: the action is ignored
    assert obs["action_mask"][i].any() and reward[i] == 0.0 and not term2[i]
    env = CassinoGymEnv()
    o, info = env.reset(seed=1)
    assert env.action_masks().dtype == np.bool_ and o["action_mask"].dtype == info["action_mask"].dtype == np.int8
    np.testing.assert_array_equal(env.action_masks(), o["action_mask"].astype(bool))


# --- 1 (slow): SubprocVecEnv with each start method, from a user's script ------------------------------------------

USER_SCRIPT = textwrap.dedent("""
    import sys
    import agents.gym  # the one documented import (registers cassino/...)
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import SubprocVecEnv

    if __name__ == "__main__":
        for method in sys.argv[1:]:
            vec = make_vec_env("cassino/Classic-v1", n_envs=2, vec_env_cls=SubprocVecEnv,
                               vec_env_kwargs={"start_method": method})
            obs = vec.reset()
            frames = vec.get_images()
            print(method, obs["observation"].shape, frames[0].shape, flush=True)
            vec.close()
""")


@pytest.mark.slow
def test_sb3_subproc_vec_env_with_every_start_method(tmp_path: Path, repo_root: Path):
    script = tmp_path / "user.py"
    script.write_text(USER_SCRIPT, encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script), "fork", "forkserver", "spawn"], cwd=repo_root,
                          capture_output=True, text=True, timeout=900, check=False,
                          env={**__import__("os").environ, "PYTHONPATH": str(repo_root)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.split("\n")
    for method in ("fork", "forkserver", "spawn"):
        assert any(line.startswith(f"{method} (2, ") and "(480, 720, 3)" in line for line in lines), proc.stdout
