"""The move-scoring policy network: it only ever chooses legal moves, scores moves independently of their column,
and its masked distribution and entropy cover the legal moves only."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from agents.base import Agent  # noqa: E402
from agents.policy import (  # noqa: E402
    CassinoPolicy,
    MoveBatch,
    card_bits,
    masked_entropy,
    masked_log_softmax,
    sample_actions,
)
from agents.ppo_agent import PPOAgent  # noqa: E402
from cassino_env.vector import CassinoVectorEnv  # noqa: E402


@pytest.fixture(scope="module")
def net() -> CassinoPolicy:
    torch.manual_seed(0)
    env = CassinoVectorEnv(num_envs=1, rules="classic", with_view=False)
    return CassinoPolicy(obs_dim=env.obs_size, hidden=32, embed=16)


@pytest.mark.parametrize(("preset", "num_players", "max_moves"),
                         [("classic", 2, 256), ("classic", 2, 8), ("classic", 3, 64), ("cicera", 4, 64),
                          ("bga", 6, 64), ("royal", 2, 64), ("stadium", 2, 64), ("matsuda", 2, 64)])
def test_policy_only_ever_chooses_legal_moves(preset: str, num_players: int, max_moves: int) -> None:
    """Sampled and arg-max moves over every state of whole deals (narrow move tables included) are all listed.

    The games are stepped with the sampled moves: an untrained arg-max policy may trail every card, and tables of
    30 loose cards make the core's capture enumeration slow."""
    torch.manual_seed(num_players)
    env = CassinoVectorEnv(num_envs=64, rules=preset, num_players=num_players, seed=3, max_moves=max_moves,
                           with_view=False)
    policy = CassinoPolicy(obs_dim=env.obs_size, hidden=32, embed=16)
    sampler, greedy = PPOAgent(policy, deterministic=False), PPOAgent(policy, deterministic=True)
    assert isinstance(sampler, Agent)
    rng = np.random.default_rng(0)
    obs, _ = env.reset()
    for step in range(52 - env.rules.table_cards + 5):  # a whole deal and into the next
        for agent in (greedy, sampler):
            a = agent.act(obs, rng)
            assert a.dtype == np.int64
            assert a.shape == (64,)
            assert (obs["action_mask"][np.arange(64), a] == 1).all(), f"illegal move at step {step}"
        obs, *_ = env.step(a)


def test_illegal_moves_get_zero_probability_and_entropy_counts_legal_moves_only(net: CassinoPolicy) -> None:
    env = CassinoVectorEnv(num_envs=32, rules="classic", seed=1, with_view=False)
    obs, _ = env.reset()
    batch = MoveBatch.from_obs(obs)
    logits, value = net(batch)
    assert value.shape == (32,)
    assert torch.isneginf(logits[~batch.mask]).all()
    assert torch.isfinite(logits[batch.mask]).all()
    logp = masked_log_softmax(logits, batch.mask)
    probs = logp.exp() * batch.mask
    assert torch.allclose(probs.sum(-1), torch.ones(32))
    ent = masked_entropy(logits, batch.mask)
    n_legal = batch.mask.sum(-1).float()
    assert torch.isfinite(ent).all()
    assert (ent >= -1e-6).all()
    assert (ent <= n_legal.log() + 1e-5).all()
    # a state with one legal move has zero entropy
    one = MoveBatch(obs=batch.obs[:1], kind=batch.kind[:1, :1], card=batch.card[:1, :1], value=batch.value[:1, :1],
                    cards=batch.cards[:1, :1], mask=batch.mask[:1, :1])
    with torch.no_grad():
        assert float(masked_entropy(*_logits(net, one))) == pytest.approx(0.0, abs=1e-6)


def _logits(net: CassinoPolicy, batch: MoveBatch) -> tuple[torch.Tensor, torch.Tensor]:
    logits, _ = net(batch)
    return logits, batch.mask


def test_scores_do_not_depend_on_move_order(net: CassinoPolicy) -> None:
    """A candidate is scored from its own features: permuting the move columns permutes the logits."""
    env = CassinoVectorEnv(num_envs=16, rules="classic", seed=2, with_view=False)
    obs, _ = env.reset()
    rng = np.random.default_rng(0)
    for _ in range(5):  # a few moves in, for captures and builds in the tables
        obs, *_ = env.step(PPOAgent(net, deterministic=False).act(obs, rng))
    batch = MoveBatch.from_obs(obs)
    perm = torch.from_numpy(rng.permutation(batch.mask.shape[1]))
    shuffled = MoveBatch(obs=batch.obs, kind=batch.kind[:, perm], card=batch.card[:, perm], value=batch.value[:, perm],
                         cards=batch.cards[:, perm], mask=batch.mask[:, perm])
    a, _ = net(batch)
    b, _ = net(shuffled)
    assert torch.allclose(a[:, perm], b, atol=1e-6)


def test_table_cards_embedding_is_the_sum_of_the_cards_embeddings(net: CassinoPolicy) -> None:
    """The uint64 bitmask of table cards is unpacked in torch: bit c selects row c of the table embedding."""
    cards = [0, 22, 40, 51]  # AC, 10D, 2S, KS
    mask = np.array([sum(1 << c for c in cards)], dtype=np.uint64).view(np.int64)
    kind, card, value = (torch.tensor([1]), torch.tensor([5]), torch.tensor([6]))
    got = net.embed_moves(kind, card, value, torch.from_numpy(mask))
    w = net.table_emb.weight  # [embed, 52]
    want = (net.card_emb.weight[5] + w[:, cards].sum(-1) + net.kind_emb.weight[1] + net.value_emb.weight[6]
            + net.count_emb.weight[len(cards)])
    assert torch.allclose(got[0], want, atol=1e-6)


def test_sampling_follows_the_callers_generator(net: CassinoPolicy) -> None:
    env = CassinoVectorEnv(num_envs=64, rules="classic", seed=4, with_view=False)
    obs, _ = env.reset()
    logits, _ = net(MoveBatch.from_obs(obs))
    a = sample_actions(logits, np.random.default_rng(5))
    b = sample_actions(logits, np.random.default_rng(5))
    assert np.array_equal(a, b)
    assert np.array_equal(sample_actions(logits, np.random.default_rng(5), deterministic=True),
                          logits.argmax(-1).numpy())


def _shipped_batch(num_envs: int):
    """``(pretrained:classic, a MoveBatch of num_envs first positions with their full states as critic_obs)``."""
    import torch

    from agents.features import critic_state
    from agents.policy import MoveBatch
    from agents.registry import make_agent
    from cassino_env.rules import make_rules
    from cassino_env.vector import CassinoVectorEnv

    rules = make_rules("classic")
    agent = make_agent("pretrained:classic", rules)
    env = CassinoVectorEnv(num_envs, rules, seed=5, with_view=True)
    obs, _ = env.reset()
    batch = MoveBatch.from_obs(obs, agent.featurizer(obs))
    batch.critic_obs = torch.from_numpy(critic_state(env.state))
    return agent, batch


def test_forward_with_a_separate_critic_equals_logits_and_value():
    """forward runs both first layers as one product; it gives what logits() and value() give alone."""
    import torch

    agent, batch = _shipped_batch(16)
    with torch.no_grad():
        logits, value = agent.policy(batch)
        np.testing.assert_allclose(logits.numpy(), agent.policy.logits(batch).numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(value.numpy(), agent.policy.value(batch).numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(agent.policy.state_value(batch.obs, batch.critic_obs).numpy(),
                                   value.numpy(), rtol=1e-5, atol=1e-5)


def test_a_separate_critic_refuses_full_states_that_are_not_a_row_per_observation():
    """critic_obs of another row count would broadcast one game's state over every row: refused by every pass."""
    import torch

    agent, batch = _shipped_batch(4)
    full = batch.critic_obs
    for wrong in (full[:1], full[0]):
        batch.critic_obs = wrong
        with torch.no_grad(), pytest.raises(ValueError, match="critic_obs must have a row per observation"):
            agent.policy.value(batch)
        with torch.no_grad(), pytest.raises(ValueError, match="critic_obs must have a row per observation"):
            agent.policy(batch)
        with torch.no_grad(), pytest.raises(ValueError, match="critic_obs must have a row per observation"):
            agent.policy.state_value(batch.obs, wrong)


def _deal_batches(num_envs: int = 64, seed: int = 5) -> list[tuple[dict, np.ndarray]]:
    """(observation, move features) of every turn of one deal of random play, the last round included."""
    import copy

    from agents.features import MoveFeaturizer

    env = CassinoVectorEnv(num_envs=num_envs, rules="classic", seed=seed, with_view=True, episode="deal")
    featurize = MoveFeaturizer(env.rules)
    rng = np.random.default_rng(seed)
    obs, _ = env.reset()
    out = []
    for _ in range(52 - env.rules.table_cards):
        out.append((copy.deepcopy(obs), featurize(obs)))  # the env reuses its arrays
        legal = obs["action_mask"].astype(bool)
        obs, *_ = env.step(np.array([rng.choice(np.flatnonzero(m)) for m in legal]))
    return out


def test_last_round_head_scores_only_the_last_round_and_starts_silent() -> None:
    """A network given a last-round head plays exactly as before; once the head's weights move, its logits change
    in the rows where the stock is empty and nowhere else; its gradient reaches only those rows."""
    from agents.policy import add_last_round_head, last_round_gate

    torch.manual_seed(0)
    env = CassinoVectorEnv(num_envs=1, rules="classic", with_view=False)
    base = CassinoPolicy(obs_dim=env.obs_size, hidden=32, embed=16, move_features=10)
    net = add_last_round_head(base, 24, last_round_gate(2, 2))
    assert net.shape.last_round == 24 and net.last_round_parameters()
    with pytest.raises(ValueError, match="already"):
        add_last_round_head(net, 8, 0)
    seen_last = seen_other = 0
    with torch.no_grad():
        for p in net.lr_scorer[-1].parameters():
            p.normal_()
    for obs, feats in _deal_batches():
        batch = MoveBatch.from_obs(obs, feats)
        last = obs["observation"][:, last_round_gate(2, 2)] == 0
        with torch.no_grad():
            a, b = base.logits(batch), net.logits(batch)
        legal = batch.mask.numpy()
        same = (a == b).numpy() | ~legal
        assert same[~last].all(), "the head moved a logit before the last round"
        if last.any():
            assert not same[last].all(), "the head did not score the last round"
        seen_last += int(last.sum())
        seen_other += int((~last).sum())
    assert seen_last and seen_other


def test_last_round_head_shape_is_checked_and_round_trips(tmp_path) -> None:
    from agents.policy import NetworkShape, add_last_round_head, last_round_gate
    from agents.ppo_agent import policy_from_checkpoint, read_checkpoint, save_checkpoint
    from cassino_env.rules import make_rules

    with pytest.raises(ValueError, match="last_round_gate"):
        NetworkShape(obs_dim=10, last_round=8, last_round_gate=10)
    with pytest.raises(ValueError, match="last_round"):
        NetworkShape(obs_dim=10, last_round=-1)
    env = CassinoVectorEnv(num_envs=1, rules="classic", with_view=False)
    net = add_last_round_head(CassinoPolicy(obs_dim=env.obs_size, hidden=16, embed=8), 12, last_round_gate(2, 2))
    path = save_checkpoint(tmp_path / "head.pt", net, make_rules("classic"))
    back = policy_from_checkpoint(read_checkpoint(path), path)
    assert back.shape == net.shape
    assert all(torch.equal(x, y) for x, y in zip(back.state_dict().values(), net.state_dict().values(), strict=True))


def test_early_rounds_head_scores_only_before_the_last_round_and_starts_silent(tmp_path) -> None:
    """An earlier-rounds head beside a last-round head: given, it changes nothing; once its weights move, the logits
    change where the stock is not empty and nowhere else (the last round stays the last-round head's); the shape
    round-trips through a checkpoint, and a gate other than the last-round head's is refused."""
    from agents.policy import add_early_rounds_head, add_last_round_head, last_round_gate
    from agents.ppo_agent import policy_from_checkpoint, read_checkpoint, save_checkpoint
    from cassino_env.rules import make_rules

    torch.manual_seed(0)
    env = CassinoVectorEnv(num_envs=1, rules="classic", with_view=False)
    gate = last_round_gate(2, 2)
    base = add_last_round_head(CassinoPolicy(obs_dim=env.obs_size, hidden=32, embed=16, move_features=10), 8, gate)
    net = add_early_rounds_head(base, 24, gate)
    assert net.shape.early_rounds == 24 and net.shape.last_round == 8
    assert {id(p) for p in net.early_rounds_parameters()}.isdisjoint(id(p) for p in net.last_round_parameters())
    with pytest.raises(ValueError, match="already"):
        add_early_rounds_head(net, 8, gate)
    with pytest.raises(ValueError, match="same one"):
        add_early_rounds_head(base, 8, gate + 1)
    batches = [(MoveBatch.from_obs(obs, feats), obs["observation"][:, gate] == 0) for obs, feats in _deal_batches()]
    with torch.no_grad():
        assert all(torch.equal(base.logits(b), net.logits(b)) for b, _ in batches)
        for p in net.er_scorer[-1].parameters():
            p.normal_()
    seen_last = seen_other = 0
    for batch, last in batches:
        with torch.no_grad():
            a, b = base.logits(batch), net.logits(batch)
        legal = batch.mask.numpy()
        same = (a == b).numpy() | ~legal
        assert same[last].all(), "the earlier-rounds head moved a logit of the last round"
        if (~last).any():
            assert not same[~last].all(), "the earlier-rounds head did not score the earlier rounds"
        seen_last += int(last.sum())
        seen_other += int((~last).sum())
    assert seen_last and seen_other
    path = save_checkpoint(tmp_path / "heads.pt", net, make_rules("classic"))
    back = policy_from_checkpoint(read_checkpoint(path), path)
    assert back.shape == net.shape
    assert all(torch.equal(x, y) for x, y in zip(back.state_dict().values(), net.state_dict().values(), strict=True))


def test_card_bits_unpacks_every_card_of_a_mask() -> None:
    """``card_bits`` (one byte-table lookup) equals the shift-and-mask form on masks with any of the 52 bits set,
    the empty and full masks included, and keeps a leading shape."""
    rng = np.random.default_rng(0)
    masks = rng.integers(0, 2**52, size=500, dtype=np.int64)
    masks[:3] = [0, 2**52 - 1, 1 << 51]
    t = torch.from_numpy(masks)
    want = ((t.unsqueeze(-1) >> torch.arange(52)) & 1).to(torch.float32)
    assert torch.equal(card_bits(t), want)
    assert torch.equal(card_bits(t.view(20, 25)), want.view(20, 25, 52))
    assert card_bits(t[:0]).shape == (0, 52)
    assert torch.equal(card_bits(t[5]), want[5])  # one mask, no leading axis
    with pytest.raises(ValueError, match="int64"):
        card_bits(t.to(torch.int32))
    with pytest.raises(ValueError, match="int64"):
        card_bits(t.to(torch.float64))
