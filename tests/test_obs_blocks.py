"""A selectable, recorded observation (issue 25 item 2): the envs and agents take a block list; adding a block is
opt-in (one block added here, in this file alone); a checkpoint records its blocks and every shipped checkpoint
still loads and plays."""

from __future__ import annotations

import numpy as np
import pytest

from cassino_env import core
from cassino_env.obs import (
    BLOCKS,
    DEFAULT_BLOCKS,
    Block,
    ObsBlocksError,
    check_blocks,
    encode,
    encode_view,
    layout_of,
    obs_layout,
    obs_size,
    public_view,
    register_block,
    unregister_block,
    uses_default_blocks,
)
from cassino_env.rules import make_rules
from cassino_env.vector import CassinoVectorEnv, EnvConfigError

#: Today's list, written out: what a checkpoint without ``obs_blocks`` was trained on. It must never change.
TODAYS_BLOCKS = ("hand", "loose", "build_owned_by", "build_value", "captured_by", "unseen", "last_trail", "builds",
                 "hand_sizes", "captured_count", "spades_count", "sweeps", "in_play", "match_scores",
                 "seat_from_dealer", "progress", "last_capturer", "unseen_by_rank", "most_decided")


def fill_table_count(view, rules):
    """The added block: loose cards on the table / 52, and cards in the viewer's hand / hand size."""
    loose = np.bitwise_count(np.asarray(view["loose"], dtype=np.uint64)) / 52.0
    hand = np.bitwise_count(np.asarray(view["hand"], dtype=np.uint64)) / rules.hand_size
    return np.stack([loose, hand], axis=1)


@pytest.fixture
def table_count():
    """The block ``table_count`` registered (one place) for the test, removed afterwards."""
    register_block(Block("table_count", 2, 0, 0, "loose cards / 52; cards in my hand / hand size",
                         fill=fill_table_count))
    yield (*DEFAULT_BLOCKS, "table_count")  # asking for it: the second place
    unregister_block("table_count")


def played_state(preset: str = "classic", n: int | None = None, games: int = 12, plies: int = 13):
    rules = make_rules(preset, n)
    st = core.init(rules, np.arange(games, dtype=np.int64))
    counters = np.arange(games, dtype=np.uint64)
    for _ in range(plies):
        core.step(st, core.random_actions(st, counters))
    return st


def test_the_default_blocks_are_todays_list() -> None:
    assert DEFAULT_BLOCKS == TODAYS_BLOCKS == tuple(b.name for b in BLOCKS)
    assert check_blocks(None) == DEFAULT_BLOCKS
    assert layout_of(2, 2).default and layout_of(2, 2).width == obs_size(2, 2) == 546


def test_uses_default_blocks_is_none_or_the_default_list_in_order(table_count) -> None:
    assert uses_default_blocks(None) and uses_default_blocks(TODAYS_BLOCKS) and uses_default_blocks(list(TODAYS_BLOCKS))
    assert not uses_default_blocks(TODAYS_BLOCKS[::-1])  # the same blocks in another order are other columns
    assert not uses_default_blocks(TODAYS_BLOCKS[:-1]) and not uses_default_blocks(table_count)
    assert not uses_default_blocks(())


@pytest.mark.parametrize(("preset", "n"), [("classic", 2), ("cicera", 4), ("bga", 3)])
def test_a_subset_in_another_order_is_the_same_columns_and_the_view_encodes_alike(preset: str, n: int) -> None:
    st = played_state(preset, n)
    rules, viewer = st.rules, st.current_player
    full = encode(st, viewer)
    assert np.array_equal(full, encode_view(public_view(st), rules))
    blocks = tuple(reversed(DEFAULT_BLOCKS[2:]))
    part = encode(st, viewer, blocks=blocks)
    assert part.shape == (st.batch_size, obs_size(n, rules.num_sides, blocks)) < full.shape
    ours, theirs = obs_layout(n, rules.num_sides, blocks), obs_layout(n, rules.num_sides)
    for name in blocks:
        (a, k), (b, _) = ours[name], theirs[name]
        assert np.array_equal(part[:, a:a + k], full[:, b:b + k]), name
    assert np.array_equal(part, encode_view(public_view(st), rules, blocks))


def test_an_added_block_is_opt_in_and_every_env_takes_it(table_count) -> None:
    blocks = table_count
    assert obs_size(2, 2) == 546 and obs_size(2, 2, blocks) == 548  # the default is unchanged
    plain = CassinoVectorEnv(6, seed=3)
    added = CassinoVectorEnv(6, seed=3, blocks=blocks)
    assert added.obs_blocks == blocks and added.single_observation_space["observation"].shape == (548,)
    a, _ = plain.reset()
    b, _ = added.reset()
    rng = np.random.default_rng(0)
    for _ in range(20):
        assert np.array_equal(b["observation"][:, :546], a["observation"])
        expect = fill_table_count(a["view"], plain.rules)
        assert np.allclose(b["observation"][:, 546:], expect)
        assert added.single_observation_space["observation"].contains(b["observation"][0])
        legal = a["action_mask"] == 1
        acts = np.array([rng.choice(np.flatnonzero(row)) for row in legal])
        a, *_ = plain.step(acts)
        b, *_ = added.step(acts)
    import cassino_env

    aec = cassino_env.env(blocks=blocks)
    aec.reset(seed=5)
    obs = aec.observe(aec.agent_selection)["observation"]
    st = aec.unwrapped.core_state
    assert obs.shape == (548,) and np.array_equal(obs, encode(st, st.current_player, blocks=blocks)[0])
    assert aec.unwrapped.state().shape == (548 + 53 * 2 + 52,)
    from agents.gym_env import CassinoGymEnv

    gym = CassinoGymEnv(opponent="greedy", blocks=blocks)
    gobs, _ = gym.reset(seed=1)
    assert gobs["observation"].shape == (548,) and gym.observation_space["observation"].contains(gobs["observation"])


def test_bad_block_lists_name_the_problem() -> None:
    for bad, message in ((["hand", "hand"], "listed twice"), (["nosuch"], "unknown block 'nosuch'"), ([], "at least"),
                         ("hand", "a list of block names")):
        with pytest.raises(ObsBlocksError, match=message):
            check_blocks(bad)
        with pytest.raises(EnvConfigError, match=message):
            CassinoVectorEnv(2, blocks=bad)
    with pytest.raises(ObsBlocksError, match="fill"):
        register_block(Block("nofill", 1, 0, 0, "no fill"))
    with pytest.raises(ObsBlocksError, match="kernel"):
        register_block(Block("hand", 1, 0, 0, "taken", fill=fill_table_count))


def test_a_checkpoint_records_its_blocks_and_plays_in_any_env(table_count, tmp_path) -> None:
    pytest.importorskip("torch")
    from agents.policy import CassinoPolicy
    from agents.ppo_agent import CheckpointError, read_checkpoint, save_checkpoint
    from agents.registry import make_agent

    rules = make_rules("classic")
    path = save_checkpoint(tmp_path / "blocks.pt", CassinoPolicy(obs_dim=548, hidden=16, embed=8), rules,
                           blocks=table_count)
    assert read_checkpoint(path)["obs_blocks"] == list(table_count)
    agent = make_agent(f"checkpoint:{path}", rules)
    assert agent.blocks == table_count
    own = CassinoVectorEnv(8, seed=2, blocks=table_count)
    default = CassinoVectorEnv(8, seed=2)
    a, _ = own.reset()
    b, _ = default.reset()
    rng = np.random.default_rng(0)
    for _ in range(10):  # the same moves from its own observation and from one it encodes from the view
        moves = agent.act(a, rng)
        assert np.array_equal(moves, agent.act(b, rng))
        a, *_ = own.step(moves)
        b, *_ = default.step(moves)
    unregister_block("table_count")
    with pytest.raises(CheckpointError, match="unknown block 'table_count'"):
        make_agent(f"checkpoint:{path}", rules)


def test_every_shipped_checkpoint_still_loads_and_plays_with_a_block_added(table_count) -> None:
    """The shipped checkpoints predate ``obs_blocks``: they mean today's list, in a default env and in one with the
    added block (the agent encodes its own observation from the view)."""
    pytest.importorskip("torch")
    from agents.ppo_agent import read_checkpoint
    from agents.registry import PRETRAINED_DIR, make_agent, pretrained_names

    assert pretrained_names()
    for name in pretrained_names():
        data = read_checkpoint(PRETRAINED_DIR / f"{name}.pt")
        rules = make_rules(data["rules"])
        agent = make_agent(f"pretrained:{name}", rules)
        assert agent.blocks == DEFAULT_BLOCKS
        for blocks in (None, table_count):
            env = CassinoVectorEnv(4, rules, seed=1, blocks=blocks)
            obs, _ = env.reset()
            rng = np.random.default_rng(0)
            for _ in range(3):
                moves = agent.act(obs, rng)
                assert (obs["action_mask"][np.arange(4), moves] == 1).all(), name
                obs, *_ = env.step(moves)


def test_a_run_trains_on_its_blocks_and_its_checkpoint_records_them(table_count, tmp_path) -> None:
    """``Args.obs_blocks``: the run's env, network and checkpoints use the list; the checkpoint loads and plays."""
    pytest.importorskip("torch")
    from agents.ppo_agent import read_checkpoint
    from agents.registry import make_agent
    from train.config import ConfigError
    from train.ppo_selfplay import Args, train

    blocks = table_count[3:]  # the first three left out, one added
    train(Args(threads=1, run_dir=str(tmp_path), total_timesteps=512, num_envs=16, hidden=8, embed=4,
               num_minibatches=1, update_epochs=1, eval_every=0, eval_deals=2, eval_opponents=("random",),
               checkpoint_every=0, final_eval_deals=0, progress_every_s=1e9, max_train_seconds=0.0,
               obs_blocks=blocks))
    final = tmp_path / "checkpoints" / "final.pt"
    data = read_checkpoint(final)
    assert data["obs_blocks"] == list(blocks) and data["network"]["obs_dim"] == obs_size(2, 2, blocks)
    agent = make_agent(f"checkpoint:{final}", make_rules("classic"))
    env = CassinoVectorEnv(4, seed=0)
    obs, _ = env.reset()
    moves = agent.act(obs, np.random.default_rng(0))  # in a default env: it encodes its own observation
    assert (obs["action_mask"][np.arange(4), moves] == 1).all()
    with pytest.raises(ConfigError, match="obs_blocks: blocks: unknown block 'nosuch'"):
        Args(obs_blocks=("nosuch",))
