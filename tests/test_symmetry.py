"""Suit symmetries (cassino_env/symmetry.py): the relabelled observation, moves, move features and critic state of
a position are the env's own for the relabelled position, over random positions of real games."""

from __future__ import annotations

import numpy as np
import pytest

from agents.features import NUM_MOVE_FEATURES, MoveFeaturizer, critic_state
from cassino_env import core
from cassino_env.cards import card_text
from cassino_env.obs import BLOCKS
from cassino_env.rules import make_rules
from cassino_env.symmetry import (
    CARD_BLOCKS,
    SUIT_FREE_BLOCKS,
    SymmetryError,
    card_classes,
    class_index,
    permute_card_blocks,
    permute_card_ids,
    permute_card_sets,
    permute_observation,
    suit_permutations,
    swap_suits,
)
from cassino_env.vector import CassinoVectorEnv


def test_every_kernel_block_is_classified() -> None:
    names = {b.name for b in BLOCKS}
    assert CARD_BLOCKS | SUIT_FREE_BLOCKS == names and not CARD_BLOCKS & SUIT_FREE_BLOCKS
    assert all(b.by_card is not None for b in BLOCKS), "every kernel block says whether it is laid out card by card"


def test_the_card_blocks_come_from_the_block_table() -> None:
    """The two lists are the block table's ``by_card`` (the hand lists they were, pinned), and a card block's every
    length part is a multiple of 52: entry ``52 k + c`` is about card ``c`` for any seat and side count."""
    assert CARD_BLOCKS == {"hand", "loose", "build_owned_by", "build_value", "captured_by", "unseen", "last_trail"}
    assert SUIT_FREE_BLOCKS == {"builds", "hand_sizes", "captured_count", "spades_count", "sweeps", "in_play",
                                "match_scores", "seat_from_dealer", "progress", "last_capturer", "unseen_by_rank",
                                "most_decided"}
    for b in BLOCKS:
        if b.by_card:
            assert b.base % 52 == b.per_seat % 52 == b.per_side % 52 == 0, b.name


@pytest.mark.parametrize(("preset", "count"), [("classic", 1), ("matsuda", 1), ("bga", 1), ("stadium", 1),
                                                ("royal", 1), ("cicera", 0)])
def test_which_presets_have_the_swap(preset: str, count: int) -> None:
    perms = suit_permutations(make_rules(preset))
    assert len(perms) == count
    for p in perms:
        assert sorted(p.tolist()) == list(range(52))
        assert [card_text(int(p[c])) for c in (0, 12, 22, 26, 39, 40)] == ["AH", "KH", "10D", "AC", "AS", "2S"]


def test_card_helpers_are_involutions_and_keep_no_card() -> None:
    p = swap_suits(0, 2)
    rng = np.random.default_rng(1)
    sets = rng.integers(0, 2**52, size=(5, 7), dtype=np.int64)
    assert np.array_equal(permute_card_sets(permute_card_sets(sets, p), p), sets)
    ids = np.array([[-1, 0, 13, 26, 51]], dtype=np.int8)
    assert permute_card_ids(ids, p).tolist() == [[-1, 26, 13, 0, 51]] and permute_card_ids(ids, p).dtype == np.int8
    x = rng.random((3, 104)).astype(np.float32)
    assert np.array_equal(permute_card_blocks(permute_card_blocks(x, p, 2), p, 2), x)


def _relabelled(pos: dict, p: np.ndarray) -> dict:
    def m(xs: list[int]) -> list[int]:
        return [int(p[c]) for c in xs]

    out = dict(pos)
    out["hands"] = [m(h) for h in pos["hands"]]
    out["captured"] = [m(h) for h in pos["captured"]]
    out["loose"], out["stock"] = m(pos["loose"]), m(pos["stock"])
    out["builds"] = [(m(c), v, o) for c, v, o in pos["builds"]]
    out["last_trail"] = None if pos["last_trail"] is None else int(p[pos["last_trail"]])
    return out


def _observed_pair(env: CassinoVectorEnv, obs: dict, b: int, p: np.ndarray) -> tuple[dict, dict, core.State]:
    """Game ``b``'s observation (a batch of one) and the env's own observation of its position relabelled by ``p``,
    with that position's State."""
    st = core.from_position(env.rules, **_relabelled(core.position(env.state, b), p), max_moves=env.max_moves)
    other = CassinoVectorEnv(1, env.rules, with_view=True, max_moves=env.max_moves)
    other.reset()
    other.state = st
    one = {k: ({kk: vv[b:b + 1] for kk, vv in v.items()} if isinstance(v, dict) else v[b:b + 1])
           for k, v in obs.items()}
    return one, other.observe(), st


def _moves(o: dict, feats: np.ndarray, p: np.ndarray | None = None, scores: np.ndarray | None = None) -> dict:
    """Move (kind, card, value, card set), relabelled by ``p`` when given -> (its rounded features[, score])."""
    n = int((o["action_mask"] != 0).sum())
    cards, card = o["move_cards"][0, :n], o["move_card"][0, :n]
    if p is not None:
        cards, card = permute_card_sets(cards, p), permute_card_ids(card, p)
    return {(int(o["move_kind"][0, i]), int(card[i]), int(o["move_value"][0, i]), int(cards[i])):
            (tuple(np.round(feats[0, i], 5)),) + (() if scores is None else (round(float(scores[i]), 4),))
            for i in range(n)}


@pytest.mark.parametrize("preset", ["classic", "matsuda", "royal", "bga"])
def test_relabelled_position_is_observed_as_the_relabelled_observation(preset: str) -> None:
    rules = make_rules(preset)
    (p,) = suit_permutations(rules)
    P, S = rules.num_players, rules.num_sides
    env = CassinoVectorEnv(32, rules, seed=11, with_view=True)
    obs, _ = env.reset()
    featurize = MoveFeaturizer(rules)
    rng = np.random.default_rng(2)
    checked = 0
    for t in range(45):
        if t % 4 == 1:
            for b in range(0, 32, 5):
                if core.position(env.state, b)["to_move"] is None:
                    continue
                o1, o2, st = _observed_pair(env, obs, b, p)
                assert np.array_equal(permute_observation(o1["observation"], p, P, S), o2["observation"])
                assert _moves(o1, featurize(o1), p) == _moves(o2, featurize(o2)), \
                    "the same moves, relabelled, with the same move features"
                crit = permute_card_blocks(critic_state(env.state)[b:b + 1], p, P + 1)
                assert np.array_equal(crit, critic_state(st))
                checked += 1
        m = obs["action_mask"] != 0
        obs, *_ = env.step(np.array([rng.choice(np.flatnonzero(r)) for r in m]))
    assert checked >= 50


def test_a_registered_block_is_refused() -> None:
    from cassino_env.obs import Block, register_block, unregister_block

    blocks = ["hand", "loose"]
    x = np.zeros((1, 104), dtype=np.float32)
    x[0, 0] = 1.0
    assert permute_observation(x, swap_suits(0, 2), 2, 2, blocks)[0, 26] == 1.0
    register_block(Block("test_sym_extra", 3, 0, 0, "test", fill=lambda view, rules: np.zeros((1, 3))))
    try:
        with pytest.raises(SymmetryError, match="test_sym_extra"):
            permute_observation(np.zeros((1, 107), np.float32), swap_suits(0, 2), 2, 2, ["hand", "loose",
                                                                                           "test_sym_extra"])
    finally:
        unregister_block("test_sym_extra")


@pytest.mark.parametrize(("call", "field"), [
    (lambda p: swap_suits(0, 4), "b"),
    (lambda p: swap_suits(0, 1.5), "b"),
    (lambda p: permute_card_ids(np.array([3]), np.zeros(52, np.int64)), "perm"),
    (lambda p: permute_card_ids(np.array([3]), np.arange(51)), "perm"),
    (lambda p: permute_card_ids(np.array([26.7]), p), "card"),
    (lambda p: permute_card_ids(np.array([52]), p), "card"),
    (lambda p: permute_card_sets(np.array([1.0]), p), "cards"),
    (lambda p: permute_card_sets(np.array([1 << 55], np.int64), p), "cards"),
    (lambda p: permute_card_blocks(np.zeros((2, 104)), p, 0), "blocks"),
    (lambda p: permute_card_blocks(np.zeros((2, 100)), p, 2), "x"),
    (lambda p: permute_observation(np.zeros((3, 536), np.float32), p, 2, 2), "obs"),
    (lambda p: permute_observation(np.zeros((3, 546), np.float32), p, 0, 2), "num_players"),
    (lambda p: permute_observation(np.zeros((3, 546), np.float32), p, 2, 3), "num_sides"),
    (lambda p: permute_observation({"observation": np.zeros((3, 546), np.float32)}, p, 2, 2), "obs"),
])
def test_bad_input_is_a_symmetry_error_naming_the_argument(call, field: str) -> None:
    with pytest.raises(SymmetryError, match=f"^{field}:"):
        call(swap_suits(0, 2))
    assert issubclass(SymmetryError, ValueError)


def _class_preserving_permutation(cls: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random card permutation that moves every card within its class (rank by rank)."""
    perm = np.arange(52, dtype=np.int64)
    for k in np.unique(cls):
        ids = np.flatnonzero(cls == k)
        perm[ids] = rng.permutation(ids)
    return perm


@pytest.mark.parametrize("preset", ["classic", "bga", "cicera"])
def test_card_classes_keep_the_named_cards_apart(preset: str) -> None:
    rules = make_rules(preset)
    if rules.in_play_bonuses:
        with pytest.raises(SymmetryError, match="in-play bonuses"):
            card_classes(rules)
        return
    cls = card_classes(rules)
    assert int(cls.max()) + 1 == 27 and len(np.unique(cls)) == 27
    for c in range(52):
        alike = np.flatnonzero(cls == cls[c])
        assert len({c2 % 13 for c2 in alike}) == 1, "a class holds one rank"
        if c // 13 == 3 or card_text(c) == "10D":
            assert alike.tolist() == [c], f"{card_text(c)} is a class of its own"


@pytest.mark.parametrize("preset", ["classic", "bga"])
def test_a_classes_head_scores_rank_by_rank_relabelled_positions_alike(preset: str) -> None:
    """The rank-by-rank symmetry: a position with cards swapped within their classes (say 5C and 5H, but not 5C and
    KH) has the same moves, relabelled, with the same move features (so the same values), and an earlier-rounds head
    that reads classes (its weights random) scores each move as it scores the relabelled move."""
    import torch

    from agents.policy import CassinoPolicy, MoveBatch, add_early_rounds_head, last_round_gate

    rules = make_rules(preset)
    P, S = rules.num_players, rules.num_sides
    cls = card_classes(rules)
    env = CassinoVectorEnv(16, rules, seed=5, with_view=True)
    obs, _ = env.reset()
    featurize = MoveFeaturizer(rules)
    torch.manual_seed(0)
    net = CassinoPolicy(obs_dim=env.obs_size, hidden=16, embed=8, move_features=NUM_MOVE_FEATURES)
    net = add_early_rounds_head(net, 32, last_round_gate(P, S), classes=(class_index(rules), card_classes(rules)))
    with torch.no_grad():
        torch.nn.init.normal_(net.er_scorer[-1].weight)
        net.er_keep.zero_()  # the logits are the head's scores alone
    rng = np.random.default_rng(7)
    checked = 0
    for t in range(30):
        if t % 3 == 1:
            for b in range(0, 16, 3):
                pos = core.position(env.state, b)
                if pos["to_move"] is None or not pos["stock"]:
                    continue
                p = _class_preserving_permutation(cls, rng)
                o1, o2, _ = _observed_pair(env, obs, b, p)
                f1, f2 = featurize(o1), featurize(o2)
                with torch.no_grad():
                    l1 = net.logits(MoveBatch.from_obs(o1, f1))[0].numpy()
                    l2 = net.logits(MoveBatch.from_obs(o2, f2))[0].numpy()
                assert _moves(o1, f1, p, l1) == _moves(o2, f2, None, l2), \
                    "the same moves, relabelled, with the same features and the same head score"
                checked += 1
        m = obs["action_mask"] != 0
        obs, *_ = env.step(np.array([rng.choice(np.flatnonzero(r)) for r in m]))
    assert checked >= 20
