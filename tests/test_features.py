"""Move features, the full-state critic input, banked points (the shaping potential), the feature-reading network
and its prior, PFSP snapshot sampling, and the ``pretrained:`` agent spec."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest
from conftest import PRESET_IDS, PRESET_PLAYERS

torch = pytest.importorskip("torch")

from agents.bots import STYLES, RuleTables, make_bot, score_moves, view_inputs  # noqa: E402
from agents.features import (  # noqa: E402
    MOVE_FEATURES,
    NUM_MOVE_FEATURES,
    SCALE,
    MoveFeaturizer,
    banked_points,
    critic_state,
    critic_state_size,
    seat_margins,
)
from agents.policy import CassinoPolicy, MoveBatch, NetworkShape  # noqa: E402
from agents.ppo_agent import CheckpointError, PPOAgent, load_checkpoint_agent, save_checkpoint  # noqa: E402
from agents.registry import AgentSpecError, make_agent, pretrained_names  # noqa: E402
from cassino_env.rules import make_rules  # noqa: E402
from cassino_env.vector import CassinoVectorEnv  # noqa: E402
from train.ppo_selfplay import Args, SnapshotPool, train  # noqa: E402


@pytest.mark.parametrize(("preset", "n"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_move_features_are_the_bots_features(preset: str, n: int) -> None:
    """Every feature is the bots' kernel's, scaled; padding is 0; the advanced score picks the advanced bot's move."""
    env = CassinoVectorEnv(num_envs=32, rules=preset, num_players=n, seed=4, max_moves=64)
    fz, bot = MoveFeaturizer(env.rules), make_bot("advanced", env.rules)
    obs, _ = env.reset()
    rng = np.random.default_rng(0)
    for _ in range(20):
        f = fz(obs)
        mask = obs["action_mask"].astype(bool)
        assert f.shape == (32, 64, NUM_MOVE_FEATURES) and f.dtype == np.float32
        assert (f[~mask] == 0).all()
        _, scores, feats = score_moves(RuleTables.of(env.rules), STYLES["advanced"], view_inputs(obs),
                                       with_features=True)
        # bit for bit the float64 value times SCALE rounded once to float32 (the kernel's one-pass packing)
        assert np.array_equal(f[..., :-1][mask], (feats * SCALE).astype(np.float32)[mask])
        assert np.array_equal(f[..., -1][mask], (scores * SCALE).astype(np.float32)[mask])
        best = np.where(mask, f[..., MOVE_FEATURES.index("advanced_score")], -np.inf).argmax(axis=1)
        np.testing.assert_allclose(np.where(mask, scores, -np.inf)[np.arange(32), best],
                                   np.where(mask, scores, -np.inf).max(axis=1))
        assert (bot.act(obs, rng) == np.where(mask, scores, -np.inf).argmax(axis=1)).all()
        obs, *_ = env.step(bot.act(obs, rng))


@pytest.mark.parametrize(("preset", "n"), [("classic", 2), ("cicera", 4), ("royal", 3)])
def test_features_and_critic_state_write_every_entry_of_a_given_buffer(preset: str, n: int) -> None:
    """``out=`` (the rollout's buffers, reused from the last rollout): every entry is written, so a buffer full of
    stale values gives the same arrays as a fresh call; a buffer of another shape or dtype is refused."""
    env = CassinoVectorEnv(num_envs=64, rules=preset, num_players=n, seed=5, max_moves=64)
    fz = MoveFeaturizer(env.rules)
    obs, _ = env.reset()
    rng = np.random.default_rng(3)
    feat_out = np.full((64, 64, NUM_MOVE_FEATURES), np.nan, dtype=np.float32)
    crit_out = np.full((64, critic_state_size(n)), 7.0, dtype=np.float32)
    for _ in range(15):
        assert fz(obs, out=feat_out) is feat_out and np.array_equal(feat_out, fz(obs))
        assert critic_state(env.state, out=crit_out) is crit_out
        assert np.array_equal(crit_out, critic_state(env.state))
        feat_out[:] = np.nan
        crit_out[:] = 7.0
        obs, *_ = env.step(make_bot("greedy", env.rules).act(obs, rng))
    with pytest.raises(ValueError, match="out must be"):
        fz(obs, out=np.zeros((64, 64, NUM_MOVE_FEATURES), dtype=np.float64))
    with pytest.raises(ValueError, match="out must be"):
        critic_state(env.state, out=np.zeros((64, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="not C-contiguous"):
        critic_state(env.state, out=np.zeros((critic_state_size(n), 64), dtype=np.float32).T)
    frozen = np.zeros((64, critic_state_size(n)), dtype=np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        critic_state(env.state, out=frozen)
    with pytest.raises(ValueError, match="got list"):
        fz(obs, out=[])


def test_critic_state_holds_every_hand_and_the_stock() -> None:
    rules = make_rules("classic", num_players=3)
    env = CassinoVectorEnv(num_envs=8, rules=rules, seed=2)
    env.reset()
    for _ in range(5):
        st = env.state
        x = critic_state(st).reshape(8, 4, 52)
        assert x.shape[1] * 52 == critic_state_size(3)
        for b in range(8):
            cur = int(st.current_player[b])
            for r in range(3):
                bits = np.flatnonzero(x[b, r])
                want = [c for c in range(52) if int(st.hand[b, (cur + r) % 3]) >> c & 1]
                assert bits.tolist() == want
            assert sorted(np.flatnonzero(x[b, 3]).tolist()) == sorted(st.deck[b, st.stock_pos[b]:].tolist())
        env.step(make_bot("greedy", rules).act(env.observe(), np.random.default_rng(0)))


@pytest.mark.parametrize(("preset", "n"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_banked_points_start_at_zero_and_only_grow_within_a_deal(preset: str, n: int) -> None:
    env = CassinoVectorEnv(num_envs=16, rules=preset, num_players=n, seed=9)
    obs, _ = env.reset()
    tables, bot = RuleTables.of(env.rules), make_bot("greedy", env.rules)
    before = banked_points(env.state, tables)
    assert (before == 0).all()
    for _ in range(52 - env.rules.table_cards - 1):  # the last move scores the deal and deals the next one
        obs, _, terminated, _, _ = env.step(bot.act(obs, np.random.default_rng(0)))
        assert not terminated.any()
        now = banked_points(env.state, tables)
        assert (now >= before - 1e-9).all()
        before = now
    margins = seat_margins(before, env.rules.num_players)
    assert margins.shape == (16, env.rules.num_players)
    if env.rules.num_sides == 2:
        np.testing.assert_allclose(margins[:, 0], -margins[:, 1])


def test_network_shape_is_validated() -> None:
    with pytest.raises(ValueError, match="hidden"):
        NetworkShape(obs_dim=10, hidden=-5)
    with pytest.raises(ValueError, match="critic"):
        NetworkShape(obs_dim=10, critic="oracle")
    with pytest.raises(ValueError, match="critic_dim"):
        NetworkShape(obs_dim=10, critic_dim=4)
    assert NetworkShape(obs_dim=10).to_dict() == {"obs_dim": 10, "hidden": 128, "embed": 64, "move_features": 0,
                                                  "critic": "shared", "critic_dim": 0}


def test_feature_prior_starts_the_policy_at_the_advanced_bot() -> None:
    """With a large prior weight the untrained network's arg-max move is the advanced bot's (up to score ties)."""
    env = CassinoVectorEnv(num_envs=64, rules="classic", seed=5)
    net = CassinoPolicy(obs_dim=env.obs_size, hidden=16, embed=8, move_features=NUM_MOVE_FEATURES,
                        critic="separate", critic_dim=critic_state_size(2))
    net.set_feature_prior(MOVE_FEATURES.index("advanced_score"), 1000.0)
    agent, bot = PPOAgent(net, rules=env.rules), make_bot("advanced", env.rules)
    fz = MoveFeaturizer(env.rules)
    obs, _ = env.reset()
    rng = np.random.default_rng(1)
    for _ in range(30):
        ours, theirs = agent.act(obs, rng), bot.act(obs, rng)
        score = fz(obs)[..., -1]
        np.testing.assert_allclose(score[np.arange(64), ours], score[np.arange(64), theirs], atol=1e-3)
        obs, *_ = env.step(theirs)
    with pytest.raises(ValueError, match="rules"):
        PPOAgent(net)
    batch = MoveBatch.from_obs(obs, fz(obs))
    with pytest.raises(ValueError, match="critic_obs"):
        net(batch)  # the value needs the full state; acting (logits) does not
    assert net.logits(batch).shape[0] == 64


def test_pfsp_draws_the_snapshots_the_learner_loses_to() -> None:
    pool = SnapshotPool(3, "pfsp")
    net = torch.nn.Linear(2, 1)
    for step in range(3):
        pool.add(net, step)
    pool.record(0, np.ones(300))   # the learner beats snapshot 0
    pool.record(2, np.zeros(300))  # and loses to snapshot 2
    w = pool.weights()
    assert w[2] > w[1] > w[0] and abs(w.sum() - 1) < 1e-12
    draws = np.bincount([pool.sample(np.random.default_rng(i)) for i in range(400)], minlength=3)
    assert draws[2] > draws[1] > draws[0]
    again = SnapshotPool(3, "pfsp")
    again.load(pool.state())
    assert again.winrate == pool.winrate
    with pytest.raises(ValueError, match="pool_sampling"):
        SnapshotPool(3, "elo")


def test_training_with_features_full_state_critic_shaping_and_pfsp(tmp_path: Path) -> None:
    """A tiny run with every strength option on trains, and its checkpoint plays as ``checkpoint:PATH``."""
    final = train(Args(threads=1, run_dir=str(tmp_path), total_timesteps=2 * 768, num_envs=16, hidden=16, embed=8,
                       num_minibatches=2, update_epochs=1, eval_every=0, eval_deals=2, eval_opponents=("greedy",),
                       checkpoint_every=0, final_eval_deals=0, progress_every_s=1e9, max_train_seconds=0.0,
                       snapshot_every=768, move_features=True, feature_prior=2.0, critic="separate",
                       critic_full_state=True, shaping=True, pool_sampling="pfsp"))
    rules = make_rules("classic")
    agent = make_agent(f"checkpoint:{final}", rules)
    env = CassinoVectorEnv(num_envs=4, rules=rules, seed=0)
    obs, _ = env.reset()
    a = agent.act(obs, np.random.default_rng(0))
    assert (obs["action_mask"][np.arange(4), a] == 1).all()


def test_pretrained_specs(tmp_path: Path) -> None:
    with pytest.raises(AgentSpecError, match="unknown pretrained agent 'nonesuch'"):
        make_agent("pretrained:nonesuch", make_rules("classic"))
    for name in pretrained_names():  # every shipped checkpoint loads for its own rules and plays
        preset, _, players = name.partition("-")
        rules = make_rules(preset, num_players=int(players[:-1]) if players else None)
        agent = make_agent(f"pretrained:{name}", rules)
        assert agent.name == f"pretrained:{name}"
        env = CassinoVectorEnv(num_envs=2, rules=rules, seed=0)
        obs, _ = env.reset()
        assert (obs["action_mask"][np.arange(2), agent.act(obs, np.random.default_rng(0))] == 1).all()


def test_a_checkpoint_with_another_feature_count_is_refused(tmp_path: Path) -> None:
    rules = make_rules("classic")
    env = CassinoVectorEnv(num_envs=1, rules=rules)
    net = CassinoPolicy(obs_dim=env.obs_size, hidden=8, embed=4, move_features=NUM_MOVE_FEATURES - 1)
    path = save_checkpoint(tmp_path / "f.pt", net, rules)
    with pytest.raises(CheckpointError, match="move features"):
        load_checkpoint_agent(str(path), rules)


def test_critic_options_are_checked_before_the_run_folder_is_written(tmp_path: Path) -> None:
    from train.ppo_selfplay import ConfigError

    for bad in ({"critic": "oracle"}, {"critic": ""}, {"critic": "SEPARATE"}):
        with pytest.raises(ConfigError, match="critic"):
            train(Args(run_dir=str(tmp_path / "run"), **{**_FAST, **bad}))
        assert not (tmp_path / "run").exists()


_FAST = dict(threads=1, total_timesteps=768, num_envs=16, hidden=8, embed=4, num_minibatches=1, update_epochs=1,
             eval_every=0, eval_deals=1, eval_opponents=("greedy",), checkpoint_every=0, final_eval_deals=0,
             progress_every_s=1e9, max_train_seconds=0.0, snapshot_every=768)


@pytest.mark.parametrize("bad", [{"pool_sampling": "elo"}, {"feature_prior": float("nan")}, {"feature_prior": -1.0},
                                 {"pool_size": 0}, {"num_envs": 0}, {"num_minibatches": 0},
                                 {"bot_rates": {"nonesuch": 0.1}}, {"eval_opponents": ("pretrained:nonesuch",)},
                                 {"final_eval_opponents": ("pretrained:cicera",)}])
def test_bad_options_fail_before_the_run_folder_is_written(bad: dict, tmp_path: Path) -> None:
    from train.ppo_selfplay import ConfigError

    with pytest.raises((ConfigError, CheckpointError)):
        train(Args(run_dir=str(tmp_path / "run"), **{**_FAST, **bad}))
    assert not (tmp_path / "run").exists()


def test_the_shared_critic_needs_no_second_flag(tmp_path: Path) -> None:
    final = train(Args(run_dir=str(tmp_path), critic="shared", **_FAST))
    from agents.ppo_agent import read_checkpoint

    assert read_checkpoint(final)["network"]["critic_dim"] == 0


def test_a_failed_resume_leaves_the_run_as_it_was(tmp_path: Path) -> None:
    from train.ppo_selfplay import ConfigError

    final = train(Args(run_dir=str(tmp_path), **_FAST))
    before = (tmp_path / "config.yaml").read_text()
    for bad in ({"pool_sampling": "elo"}, {"move_features": False}):
        with pytest.raises((ConfigError, CheckpointError)):
            train(Args(resume=str(final), **{**_FAST, **bad}), explicit=set(bad))
        assert (tmp_path / "config.yaml").read_text() == before


def test_corrupt_weights_are_refused(tmp_path: Path) -> None:
    rules = make_rules("classic")
    env = CassinoVectorEnv(num_envs=1, rules=rules)
    net = CassinoPolicy(obs_dim=env.obs_size, hidden=8, embed=4)
    good = save_checkpoint(tmp_path / "good.pt", net, rules)
    with torch.no_grad():
        net.torso[0].weight[0, 0] = float("nan")
    nan = save_checkpoint(tmp_path / "nan.pt", net, rules)
    with pytest.raises(CheckpointError, match="NaN or infinite"):
        load_checkpoint_agent(str(nan), rules)
    raw = bytearray(good.read_bytes())
    with zipfile.ZipFile(good) as archive:  # a tensor's member: flip bytes inside its data (not a header's padding)
        member = next(m for m in archive.infolist() if "/data/" in m.filename and m.file_size >= 64)
    name_len, extra_len = struct.unpack("<HH", raw[member.header_offset + 26:member.header_offset + 30])
    data = member.header_offset + 30 + name_len + extra_len
    for i in range(data, data + 16):
        raw[i] ^= 0xFF
    flipped = tmp_path / "flipped.pt"
    flipped.write_bytes(bytes(raw))
    with pytest.raises(CheckpointError):
        load_checkpoint_agent(str(flipped), rules)
