"""A reusable contract checker for a rule set: the core and both environments, as Pgx's ``api_test`` does for its envs.

:func:`check_rules` plays random legal games of one rule set (a preset name, a :class:`~cassino_env.rules.RuleSet`
with any switches of docs/rules.md 3, or a docs/interchange.md ``rules`` mapping) through the batched core
(:func:`check_core`), the vector env (:func:`check_vector_env`) and the PettingZoo AEC env (:func:`check_aec_env`), and
checks at every step what the package documents whatever the play:

* **shapes and dtypes** of every State field, StepResult field, observation, mask and reward;
* **masks equal the legal list**: the core's and the vector env's masks are 1 exactly on the ``num_moves`` listed
  moves, every listed move is well formed (its card in the mover's hand, its table cards on the table, padding
  after the list); in the AEC env the mover's mask is the listed moves (``moves``) or their ids (``card_value``),
  and every other agent's mask is all zeros;
* **conservation**: each of the 52 cards is in exactly one place (a hand, the table, a build, a captured pile or
  the stock) after every step, and the stock is the deck the seed fixes (:func:`cassino_env.core.deck_for`);
* **points add up** where docs/rules.md 5 fixes them: each finished deal shares out 52 cards and 13 spades, the
  casinos (and aces or the jack of hearts) exactly once, totals are the sum of the items, seats get their side's
  points, match totals grow by the deal's, and a match ends exactly when a side reaches the target alone in the lead;
  environment rewards are zero-sum and equal for partners;
* **determinism**: the same seed and actions give the same games, bit for bit, and the AEC env plays the same
  game as the vector env seeded alike; the AEC env's fast one-game observation equals the batched encoder's.

A broken check raises :class:`ContractError` (an ``AssertionError``) whose message names the rule set, the part
checked, the game and step, and what differed. Nothing here imports pytest, ``agents`` or ``train``.

>>> from cassino_env.testing import check_rules
>>> summary = check_rules("classic", games=4, steps=30, episodes=1)  # doctest: +SKIP
>>> sorted(summary)  # doctest: +SKIP
['aec_steps', 'core_deals', 'core_matches', 'core_steps', 'vector_deals', 'vector_steps']
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from . import core
from .actions import MAX_MOVES, card_value_id
from .cards import NUM_CARDS
from .obs import MOVE_FEATURES, encode, obs_high, obs_size
from .rules import RuleSet, make_rules

__all__ = ["ContractError", "check_aec_env", "check_core", "check_rules", "check_vector_env"]

_FULL = np.uint64((1 << NUM_CARDS) - 1)
#: Items whose points every finished deal shares out in full, by ``scoring`` (docs/rules.md 5.1-5.3): the casinos, the
#: aces (standard, bga) or the jack of hearts (cicera).
_FIXED_ITEMS = {
    "standard": {"big_casino": 2, "little_casino": 1, "aces": 4},
    "bga": {"big_casino": 2, "little_casino": 1, "aces": 4},
    "cicera": {"big_casino": 1, "little_casino": 1, "jack_of_hearts": 1},
}


class ContractError(AssertionError):
    """A rule set broke the contract of the core or an environment; the message says which check, where."""


def check_rules(rules: str | RuleSet | Mapping[str, Any], *, num_players: int | None = None, games: int = 8,
                steps: int = 120, episodes: int = 2, seed: int = 0) -> dict[str, int]:
    """Check one rule set in the core, the vector env and the AEC env (module docstring).

    Args:
        rules: a preset name (docs/rules.md 6), a RuleSet or a ``{"preset": NAME, SWITCH: VALUE}`` mapping.
        num_players: seats (default: the preset's first allowed count, or the RuleSet's).
        games: games stepped together in the core and the vector env.
        steps: steps of random play in the core and the vector env (a deal is 48 to 52 steps).
        episodes: deals the AEC env plays with each action encoding.
        seed: seeds the games and the random choices.

    Returns:
        What was checked: ``core_steps``, ``core_deals``, ``core_matches``, ``vector_steps``, ``vector_deals``,
        ``aec_steps``.

    Raises:
        ContractError: a broken check (an AssertionError naming the rule set, the part, the game and the step).
        RulesError: ``rules`` is not a valid rule set.
    """
    rs = _resolve(rules, num_players)
    summary = check_core(rs, games=games, steps=steps, seed=seed)
    summary.update(check_vector_env(rs, games=games, steps=steps, seed=seed))
    summary.update(check_aec_env(rs, episodes=episodes, seed=seed))
    return summary


def _resolve(rules: str | RuleSet | Mapping[str, Any], num_players: int | None) -> RuleSet:
    if isinstance(rules, RuleSet) and num_players in (None, rules.num_players):
        return rules
    return make_rules(rules, num_players)


def _name(rules: RuleSet) -> str:
    return f"{rules.preset}-{rules.num_players}p"


def _ensure(ok: Any, where: str, what: str) -> None:
    if not bool(np.all(ok)):
        raise ContractError(f"{where}: {what}")


def _first(bad: np.ndarray) -> int:
    return int(np.flatnonzero(np.asarray(bad).reshape(len(bad), -1).any(axis=1))[0])


def _games_ok(ok: np.ndarray, where: str, what: str, detail=None) -> None:
    """``ok``: bool[B, ...]; on failure name the first game where it is False."""
    ok = np.asarray(ok)
    if ok.all():
        return
    b = _first(~ok)
    extra = f" ({detail(b)})" if detail is not None else ""
    raise ContractError(f"{where}, game {b}: {what}{extra}")


def _bitcount(a: np.ndarray) -> np.ndarray:
    """Set bits of each uint64 of ``a`` (int64, same shape); works with numpy 1.x."""
    a = np.ascontiguousarray(a, dtype=np.uint64)
    return np.unpackbits(a.view(np.uint8).reshape(*a.shape, 8), axis=-1).sum(axis=-1, dtype=np.int64)


def _check_dtypes(where: str, arrays: Mapping[str, np.ndarray], spec: Mapping[str, tuple[Any, tuple[int, ...]]]
                  ) -> None:
    for field, (dtype, shape) in spec.items():
        a = arrays[field]
        if not isinstance(a, np.ndarray) or a.dtype != np.dtype(dtype) or a.shape != shape:
            got = f"{a.dtype}{list(a.shape)}" if isinstance(a, np.ndarray) else type(a).__name__
            raise ContractError(f"{where}: {field} is {got}, expected {np.dtype(dtype)}{list(shape)}")


# -- the core ------------------------------------------------------------------------------------------------------


def _state_spec(rules: RuleSet, B: int, M: int) -> dict[str, tuple[Any, tuple[int, ...]]]:
    """dtype and shape of every State field (the table of :mod:`cassino_env.core`)."""
    P, S = rules.num_players, rules.num_sides
    K = 26 if rules.builds == "attach" else rules.max_value
    return {
        "hand": (np.uint64, (B, P)), "loose": (np.uint64, (B,)), "build_cards": (np.uint64, (B, K)),
        "build_value": (np.int8, (B, K)), "build_owner": (np.int8, (B, K)), "captured": (np.uint64, (B, P)),
        "sweeps": (np.int16, (B, P)), "in_play": (np.int16, (B, P)), "match_scores": (np.int16, (B, S)),
        "deck": (np.int8, (B, NUM_CARDS)), "stock_pos": (np.int8, (B,)), "current_player": (np.int8, (B,)),
        "dealer": (np.int8, (B,)), "last_capturer": (np.int8, (B,)), "last_trail": (np.int8, (B,)),
        "seed": (np.int64, (B,)), "match_index": (np.int64, (B,)), "deal_index": (np.int64, (B,)),
        "move_kind": (np.int8, (B, M)), "move_card": (np.int8, (B, M)), "move_value": (np.int8, (B, M)),
        "move_cards": (np.uint64, (B, M)), "num_moves": (np.int16, (B,)), "overflow": (np.bool_, (B,)),
        "match_over": (np.bool_, (B,)),
    }


def _result_spec(rules: RuleSet, B: int) -> dict[str, tuple[Any, tuple[int, ...]]]:
    P, S = rules.num_players, rules.num_sides
    return {
        "actor": (np.int8, (B,)), "deal_done": (np.bool_, (B,)), "match_done": (np.bool_, (B,)),
        "match_winner": (np.int8, (B,)), "deal_points": (np.int16, (B, P)), "deal_totals": (np.int16, (B, S)),
        "deal_items": (np.int16, (B, S, len(core.ITEMS))), "deal_cards": (np.int16, (B, S)),
        "deal_spades": (np.int16, (B, S)), "match_totals": (np.int16, (B, S)),
    }


def _stock_masks(st: core.State) -> np.ndarray:
    """uint64[B]: the cards of each game's stock (``deck[stock_pos:]``)."""
    B = st.batch_size
    pos = np.arange(NUM_CARDS)[None, :] >= st.stock_pos[:, None].astype(np.int64)
    bits = np.where(pos, np.uint64(1) << np.maximum(st.deck, 0).astype(np.uint64), np.uint64(0))
    return np.bitwise_or.reduce(bits, axis=1) if B else np.zeros(0, np.uint64)


def _check_position(rules: RuleSet, st: core.State, where: str) -> None:
    """Conservation of the 52 cards, the seat and build fields, and the listed moves of every game."""
    B, P, M = st.batch_size, rules.num_players, st.max_moves
    _check_dtypes(where, {f: getattr(st, f) for f in _state_spec(rules, B, M)}, _state_spec(rules, B, M))
    places = np.concatenate([st.hand, st.loose[:, None], st.build_cards, st.captured], axis=1)
    stock = _stock_masks(st)
    n_stock = NUM_CARDS - st.stock_pos.astype(np.int64)
    _games_ok(np.sort(st.deck, axis=1) == np.arange(NUM_CARDS), where, "deck is not a permutation of the 52 cards")
    _games_ok(_bitcount(places).sum(axis=1) + n_stock == NUM_CARDS, where,
              "the 52 cards are not each in exactly one place (hands, table, builds, piles, stock)")
    _games_ok((np.bitwise_or.reduce(places, axis=1) | stock) == _FULL, where, "a card is nowhere")
    _games_ok((st.current_player >= 0) & (st.current_player < P), where, "current_player is not a seat",
              lambda b: f"current_player {int(st.current_player[b])}")
    _games_ok((st.dealer >= 0) & (st.dealer < P), where, "dealer is not a seat")
    _games_ok((st.last_capturer >= -1) & (st.last_capturer < P), where, "last_capturer is not a seat or -1")
    lt = st.last_trail.astype(np.int64)
    trailed_loose = (st.loose >> np.maximum(lt, 0).astype(np.uint64)) & np.uint64(1)
    _games_ok((lt == -1) | ((lt >= 0) & (lt < NUM_CARDS) & (trailed_loose == 1)), where,
              "last_trail is neither -1 nor a loose card")
    empty = st.build_cards == 0
    _games_ok(np.where(empty, (st.build_owner == -1) & (st.build_value == 0),
                       (st.build_owner >= 0) & (st.build_owner < P)), where,
              "a build slot's owner or value does not match whether it holds cards")
    is_value = np.vectorize(rules.is_build_value, otypes=[bool])
    _games_ok(empty | is_value(st.build_value.astype(np.int64)), where, "a build has a value the rules do not allow")
    _games_ok(_bitcount(st.build_cards) != 1, where, "a build of one card")
    if rules.builds != "attach":
        slot_value = np.arange(1, st.build_cards.shape[1] + 1)[None, :]
        _games_ok(empty | (st.build_value == slot_value), where, "where equal builds merge, slot v-1 holds value v")
    _check_moves(rules, st, where)


def _check_moves(rules: RuleSet, st: core.State, where: str) -> None:
    B, M = st.batch_size, st.max_moves
    n = st.num_moves.astype(np.int64)
    _games_ok((n >= 1) & (n <= M), where, "the player to move has no listed move, or more than max_moves",
              lambda b: f"num_moves {int(n[b])}")
    listed = np.arange(M)[None, :] < n[:, None]
    _games_ok(core.legal_mask(st) == listed, where, "legal_mask is not the first num_moves entries")
    kind, card, value, cards = st.move_kind, st.move_card, st.move_value, st.move_cards
    _games_ok(listed | ((kind == -1) & (card == -1)), where, "an entry after the listed moves is not padding")
    _games_ok(~listed | ((kind >= 0) & (kind <= 2)), where, "a listed move has a kind other than trail/capture/build")
    mover = st.hand[np.arange(B), np.maximum(st.current_player, 0)]
    in_hand = (mover[:, None] >> np.maximum(card, 0).astype(np.uint64)) & np.uint64(1)
    _games_ok(~listed | ((card >= 0) & (in_hand == 1)), where, "a listed move plays a card the mover does not hold")
    table = st.loose | np.bitwise_or.reduce(st.build_cards, axis=1)
    _games_ok(~listed | ((cards & ~table[:, None]) == 0), where, "a listed move takes or uses cards not on the table")
    trail = kind == 0
    _games_ok(~listed | ~trail | ((cards == 0) & (value == 0)), where, "a trail with table cards or a value")
    _games_ok(~listed | trail | ((cards != 0) & (value >= 1) & (value <= 14)), where,
              "a capture or build without table cards or with a value outside 1..14")
    for b in range(B):
        rows = {(int(kind[b, i]), int(card[b, i]), int(value[b, i]), int(cards[b, i])) for i in range(int(n[b]))}
        _ensure(len(rows) == n[b], f"{where}, game {b}", "a move is listed twice")


def _check_result(rules: RuleSet, res: core.StepResult, before: core.State, after: core.State, where: str) -> None:
    B, P, S = before.batch_size, rules.num_players, rules.num_sides
    _check_dtypes(where, {f: getattr(res, f) for f in _result_spec(rules, B)}, _result_spec(rules, B))
    _games_ok(res.actor == before.current_player, where, "StepResult.actor is not the seat that was to move")
    done = res.deal_done
    side = np.arange(P) % S
    items = res.deal_items.astype(np.int64)
    _games_ok(~done[:, None] | (res.deal_points == res.deal_totals[:, side]), where,
              "a seat's deal_points are not its side's deal_totals")
    _games_ok(res.deal_totals == items.sum(axis=2), where, "deal_totals are not the sum of deal_items")
    unused = [k for k, name in enumerate(core.ITEMS) if name not in core.items_of(rules)]
    _games_ok(items[:, :, unused] == 0, where, f"points for an item {rules.scoring!r} scoring does not have")
    _games_ok(items >= 0, where, "a negative item")
    quiet = ~done[:, None]
    for field in ("deal_points", "deal_totals", "deal_cards", "deal_spades", "match_totals"):
        _games_ok(~quiet | (getattr(res, field) == 0), where, f"{field} is not 0 in a step that ended no deal")
    _games_ok(done | ~res.match_done, where, "match_done without deal_done")
    _games_ok(~done | (res.deal_cards.sum(axis=1) == NUM_CARDS), where, "a finished deal did not share 52 cards",
              lambda b: f"deal_cards {res.deal_cards[b].tolist()}")
    _games_ok(~done | (res.deal_spades.sum(axis=1) == 13), where, "a finished deal did not share 13 spades")
    for item, points in _FIXED_ITEMS[rules.scoring].items():
        k = core.ITEMS.index(item)
        _games_ok(~done | (items[:, :, k].sum(axis=1) == points), where,
                  f"{item} did not score {points} in all (docs/rules.md 5)",
                  lambda b, k=k: f"{items[b, :, k].tolist()}")
    totals = before.match_scores.astype(np.int64) + res.deal_totals
    _games_ok(~done[:, None] | (res.match_totals == totals), where,
              "match_totals are not the previous totals plus the deal's")
    top = res.match_totals.max(axis=1)
    alone = (res.match_totals == top[:, None]).sum(axis=1) == 1
    should_end = done & (top >= rules.target) & alone
    _games_ok(res.match_done == should_end, where,
              "the match did not end exactly when a side reached the target alone in the lead",
              lambda b: f"match_totals {res.match_totals[b].tolist()}, target {rules.target}")
    winner = np.where(res.match_done, res.match_totals.argmax(axis=1), -1)
    _games_ok(res.match_winner == winner, where, "match_winner is not the side that won the match")
    going_on = done & ~res.match_done
    _games_ok(~going_on[:, None] | (after.match_scores == res.match_totals), where,
              "after a deal the match scores are not its match totals")
    _games_ok(~res.match_done[:, None] | (after.match_scores == 0), where, "a new match did not start from 0")
    _games_ok(~done[:, None] | (after.captured == 0), where, "a new deal did not start with empty piles")
    _games_ok(done[:, None] | (after.match_scores == before.match_scores), where,
              "match scores changed without a deal ending")


def _digest(h: Any, *arrays: np.ndarray) -> None:
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())


def _core_play(rules: RuleSet, games: int, steps: int, seed: int, check: bool) -> tuple[str, int, int]:
    """Random play in the core; returns (digest of every state and result, deals, matches)."""
    where0 = f"{_name(rules)} core"
    seeds = seed * 1000 + np.arange(games, dtype=np.int64)
    st = core.init(rules, seeds)
    rng = np.random.default_rng(seed)
    h = hashlib.sha256()
    fields = list(_state_spec(rules, games, st.max_moves))
    deals = matches = 0
    if check:
        _check_position(rules, st, f"{where0}, after init")
        for b in range(games):
            _ensure(np.array_equal(st.deck[b], core.deck_for(int(seeds[b]), 0, 0)), f"{where0}, game {b}",
                    "the first deal is not deck_for(seed, 0, 0)")
    for t in range(steps):
        actions = rng.integers(st.num_moves.astype(np.int64))
        before = st.copy() if check else None
        res = core.step(st, actions)
        _digest(h, *(getattr(st, f) for f in fields), *(getattr(res, f) for f in _result_spec(rules, games)))
        deals += int(res.deal_done.sum())
        matches += int(res.match_done.sum())
        if check:
            where = f"{where0}, step {t}"
            _check_result(rules, res, before, st, where)
            _check_position(rules, st, where)
            for b in np.flatnonzero(res.deal_done):
                deck = core.deck_for(int(st.seed[b]), int(st.match_index[b]), int(st.deal_index[b]))
                _ensure(np.array_equal(st.deck[b], deck), f"{where}, game {b}",
                        "the new deal is not deck_for(seed, match_index, deal_index)")
    return h.hexdigest(), deals, matches


def check_core(rules: RuleSet, *, games: int = 8, steps: int = 120, seed: int = 0) -> dict[str, int]:
    """Check the batched core on ``steps`` random steps of ``games`` games (auto-reset), then replay them.

    Returns ``{"core_steps", "core_deals", "core_matches"}``. Raises :class:`ContractError`.
    """
    digest, deals, matches = _core_play(rules, games, steps, seed, check=True)
    again, _, _ = _core_play(rules, games, steps, seed, check=False)
    _ensure(digest == again, f"{_name(rules)} core", "the same seeds and actions gave different games")
    return {"core_steps": steps * games, "core_deals": deals, "core_matches": matches}


# -- the vector env ------------------------------------------------------------------------------------------------


def _check_rewards(rules: RuleSet, rewards: np.ndarray, where: str, reward: str = "points") -> None:
    """float32[B, P]: partners equal; zero-sum over sides for ``points``."""
    P, S = rules.num_players, rules.num_sides
    for p in range(S, P):
        _games_ok(rewards[:, p] == rewards[:, p % S], where, f"seats {p % S} and {p} (partners) got different rewards")
    if reward == "points":
        _games_ok(np.abs(rewards[:, :S].sum(axis=1)) < 1e-3, where, "rewards of the sides do not sum to 0",
                  lambda b: f"{rewards[b].tolist()}")


def _vector_play(rules: RuleSet, games: int, steps: int, seed: int, check: bool) -> tuple[str, int]:
    from .vector import CassinoVectorEnv

    where0 = f"{_name(rules)} vector env"
    P, S, M = rules.num_players, rules.num_sides, MAX_MOVES
    D = obs_size(P, S)
    env = CassinoVectorEnv(num_envs=games, rules=rules, seed=seed * 1000)
    obs, _ = env.reset()
    high = obs_high(P, S)
    rng = np.random.default_rng(seed + 1)
    h = hashlib.sha256()
    deals = 0
    for t in range(steps + 1):
        where = f"{where0}, step {t}"
        if check:
            st = env.state
            _check_dtypes(where, obs, {"observation": (np.float32, (games, D)), "action_mask": (np.int8, (games, M)),
                                       "current_player": (np.int8, (games,))})
            _games_ok(obs["action_mask"] == core.legal_mask(st), where, "action_mask is not the core's legal moves")
            _games_ok(obs["current_player"] == st.current_player, where, "current_player is not the core's")
            _games_ok(obs["observation"] == encode(st, st.current_player), where,
                      "the observation is not the acting seat's encoding")
            _games_ok((obs["observation"] >= 0) & (obs["observation"] <= high), where,
                      "the observation is outside the observation space")
        _digest(h, obs["observation"], obs["action_mask"], obs["current_player"])
        if t == steps:
            break
        n = obs["action_mask"].sum(axis=1).astype(np.int64)
        obs, rewards, terminated, truncated, info = env.step(rng.integers(n))
        _digest(h, rewards, terminated)
        deals += int(info["result"].deal_done.sum())
        if check:
            _check_dtypes(where, {"rewards": rewards, "terminated": terminated, "truncated": truncated},
                          {"rewards": (np.float32, (games, P)), "terminated": (np.bool_, (games,)),
                           "truncated": (np.bool_, (games,))})
            _games_ok(terminated == info["result"].deal_done, where, "terminated is not the end of the deal")
            _games_ok(~truncated, where, "truncated (games are finite)")
            _games_ok(terminated[:, None] | (rewards == 0), where, "a reward in a step that ended no deal")
            _check_rewards(rules, rewards, where)
    return h.hexdigest(), deals


def check_vector_env(rules: RuleSet, *, games: int = 8, steps: int = 120, seed: int = 0) -> dict[str, int]:
    """Check :class:`cassino_env.vector.CassinoVectorEnv` on ``steps`` random steps of ``games`` games, then replay.

    Returns ``{"vector_steps", "vector_deals"}``. Raises :class:`ContractError`.
    """
    digest, deals = _vector_play(rules, games, steps, seed, check=True)
    again, _ = _vector_play(rules, games, steps, seed, check=False)
    _ensure(digest == again, f"{_name(rules)} vector env", "the same seed and actions gave different games")
    return {"vector_steps": steps * games, "vector_deals": deals}


# -- the AEC env ---------------------------------------------------------------------------------------------------


def _padding(moves: np.ndarray) -> np.ndarray:
    """bool[A]: rows of a ``moves`` observation that are padding (-1, -1, 0, ...)."""
    return (moves[:, 0] == -1) & (moves[:, 1] == -1) & (moves[:, 2:] == 0).all(axis=1)


def _aec_play(rules: RuleSet, encoding: str, episodes: int, seed: int, check: bool) -> tuple[str, int, list[int]]:
    """Random AEC play; returns (digest, steps, the move indices played)."""
    from .aec import env as make_env
    from .obs import move_features

    where0 = f"{_name(rules)} AEC env ({encoding})"
    P, S = rules.num_players, rules.num_sides
    D = obs_size(P, S)
    # the infos' masks and the move table are checked too; a legal move refused would raise, not end the game
    e = make_env(rules=rules, action_encoding=encoding, mask_in_info=True, with_moves=True, illegal_action="raise")
    raw = e.unwrapped
    A = raw.num_actions
    rng = np.random.default_rng(seed + 2)
    h = hashlib.sha256()
    played: list[int] = []
    steps = 0
    for episode in range(episodes):
        e.reset(seed=seed * 1000 + episode)
        for agent in e.agent_iter(max_iter=10_000):
            where = f"{where0}, episode {episode}, step {steps}"
            obs, reward, terminated, truncated, info = e.last()
            _digest(h, obs["observation"], obs["action_mask"], obs["moves"], np.float64(reward))
            if terminated or truncated:
                if check:
                    _ensure(not obs["action_mask"].any(), where, f"{agent} has a nonzero mask after the episode")
                e.step(None)
                continue
            seat = raw.agent_name_mapping[agent]
            if check:
                _check_aec_turn(rules, raw, obs, info, agent, seat, where, D, A, move_features)
            legal = np.flatnonzero(obs["action_mask"])
            a = int(legal[rng.integers(len(legal))])
            if encoding == "moves":
                played.append(a)
            e.step(a)
            steps += 1
            if check and raw.rewards and any(raw.rewards.values()):
                rewards = np.array([[raw.rewards[name] for name in raw.possible_agents]], dtype=np.float32)
                _check_rewards(rules, rewards, where)
    return h.hexdigest(), steps, played


def _check_aec_turn(rules: RuleSet, raw: Any, obs: dict[str, np.ndarray], info: dict[str, Any], agent: str, seat: int,
                    where: str, D: int, A: int, move_features: Any) -> None:
    st = raw.core_state
    _check_dtypes(where, obs, {"observation": (np.float32, (D,)), "action_mask": (np.int8, (A,)),
                               "moves": (np.int8, (A, MOVE_FEATURES))})
    _ensure(raw.observation_space(agent)["observation"].contains(obs["observation"]), where,
            "the observation is outside its space")
    _ensure(int(st.current_player[0]) == seat, where, f"{agent} is selected but seat {int(st.current_player[0])} "
            "is to move")
    _ensure(np.array_equal(obs["observation"], encode(st, np.array([seat]))[0]), where,
            "the one-game observation differs from the batched encoder's (cassino_env.obs.encode)")
    _ensure(np.array_equal(info["action_mask"], obs["action_mask"]), where, "info['action_mask'] is not the mask")
    n = int(st.num_moves[0])
    mask = obs["action_mask"].astype(bool)
    rows = move_features(st.move_kind[0, :n], st.move_card[0, :n], st.move_value[0, :n], st.move_cards[0, :n])
    if raw.action_encoding == "moves":
        _ensure(np.array_equal(mask, np.arange(A) < n), where, "the mask is not the listed legal moves")
        _ensure(np.array_equal(obs["moves"][:n], rows), where, "a legal action's move row is not its listed move")
    else:
        ids = {card_value_id(*rows[i, :3]) for i in range(n)}
        _ensure(set(np.flatnonzero(mask).tolist()) == ids, where,
                "the mask is not the card_value ids of the listed moves")
        listed = {r.tobytes() for r in rows}
        _ensure(all(obs["moves"][a].tobytes() in listed for a in np.flatnonzero(mask)), where,
                "a legal id's move row is not a listed move")
    _ensure(_padding(obs["moves"][~mask]).all(), where, "an illegal action's move row is not padding")
    for other in raw.agents:
        if other == agent:
            continue
        o = raw.observe(other)
        _ensure(not o["action_mask"].any(), where, f"{other} is not to move but its observed mask is not all zeros")
        _ensure(not np.asarray(raw.infos[other]["action_mask"]).any(), where,
                f"{other} is not to move but its info mask is not all zeros")
        _ensure(_padding(o["moves"]).all(), where, f"{other} is not to move but its move rows are not padding")
    state = raw.state()
    P = rules.num_players
    _ensure(state.dtype == np.float32 and state.shape == (D + 53 * P + 52,), where,
            f"state() is {state.dtype}{list(state.shape)}")


def _same_as_vector(rules: RuleSet, seed: int, actions: list[int], where: str) -> None:
    """The AEC env seeded s plays the game the vector env seeds s (same actions: same observations)."""
    from .aec import raw_env
    from .vector import CassinoVectorEnv

    e = raw_env(rules=rules, illegal_action="raise")
    e.reset(seed=seed * 1000)
    v = CassinoVectorEnv(num_envs=1, rules=rules, seed=seed * 1000)
    vobs, _ = v.reset()
    for t, a in enumerate(actions):
        if not e.agents or e.terminations[e.agent_selection]:
            break
        o = e.observe(e.agent_selection)
        _ensure(np.array_equal(o["observation"], vobs["observation"][0]), f"{where}, step {t}",
                "the AEC env's observation differs from the vector env's for the same seed and actions")
        _ensure(np.array_equal(o["action_mask"], vobs["action_mask"][0]), f"{where}, step {t}",
                "the AEC env's mask differs from the vector env's")
        e.step(a)
        vobs, vrew, _, _, _ = v.step(np.array([a]))
        _ensure([e.rewards[f"player_{q}"] for q in range(rules.num_players)] == vrew[0].tolist(),
                f"{where}, step {t}", "the AEC env's rewards differ from the vector env's")


def check_aec_env(rules: RuleSet, *, episodes: int = 2, seed: int = 0) -> dict[str, int]:
    """Check the PettingZoo AEC env (both action encodings) on ``episodes`` random deals each, then replay them.

    Returns ``{"aec_steps"}``. Raises :class:`ContractError`.
    """
    total = 0
    for encoding in ("moves", "card_value"):
        digest, steps, played = _aec_play(rules, encoding, episodes, seed, check=True)
        again, _, _ = _aec_play(rules, encoding, episodes, seed, check=False)
        _ensure(digest == again, f"{_name(rules)} AEC env ({encoding})",
                "the same seed and actions gave different games")
        total += steps
        if encoding == "moves" and episodes:
            _same_as_vector(rules, seed, played, f"{_name(rules)} AEC env vs vector env")
    return {"aec_steps": total}
