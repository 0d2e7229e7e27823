"""Move features for the networks: how each listed move relates to the position, from the bots' own kernel.

A network that embeds a move only by its cards cannot tell whether it sweeps, which points it takes, or what it
leaves for the next player; the scripted bots score exactly these facts (:mod:`agents.bots`). This module gives
the networks the same facts, computed by the same numba kernel (:func:`agents.bots.score_moves`, with the
``advanced`` bot's exact hypergeometric chances), so there is one implementation of each feature.

Every feature is in points of docs/rules.md 5 (the preset's scoring), scaled by :data:`SCALE` so typical values lie in
about [-2, 2]; padding moves (past ``num_moves``) are 0.

=====================  ===========================================================================================
feature                meaning (docs/rules.md item it comes from)
=====================  ===========================================================================================
``gain``               value of the cards a capture takes, the played card included: cards (most cards, 5.1),
                       spades (most spades), aces, little and big casino (5.1; cicera's 5.3 point cards); 0 for a
                       trail or build; range [0, about 12] points
``sweep``              sweep points a capture earns now (5.1 sweeps; 0 where the preset has none); [0, 1]
``sweep_risk``         chance the next opponent can sweep the table this move leaves, times the sweep points; [0, 1]
``exposure``           the next opponent's expected take of the table this move leaves (points); [0, about 10]
``own_builds``         builds of the mover's side left on the table, each weighted by the chance it survives the
                       next opponent (4.2 builds; 4.4 owner obligations); [0, about 10]
``trail_value``        value of the card trailed (0 unless a trail, 4.3); [0, about 4]
``keep``               points among the unseen cards that only the played card could capture: the option given
                       up by playing it; [0, about 5]
``steal``              value of opponents' builds this capture takes (4.2); [0, about 10]
``bonus``              Cicera's other in-play points earned now (5.3); [0, 3]
``advanced_score``     the ``advanced`` bot's score of the move, its weighted sum of the above (points)
=====================  ===========================================================================================

>>> import numpy as np
>>> from cassino_env.vector import CassinoVectorEnv
>>> env = CassinoVectorEnv(num_envs=2, seed=0, max_moves=64)
>>> obs, _ = env.reset()
>>> f = MoveFeaturizer(env.rules)(obs)
>>> f.shape, f.dtype, bool((f[~obs["action_mask"].astype(bool)] == 0).all())
((2, 64, 10), dtype('float32'), True)
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from agents.bots import FEATURES as BOT_FEATURES
from agents.bots import STYLES, RuleTables, score_moves, view_inputs
from cassino_env.cards import SPADE_MASK
from cassino_env.rules import RuleSet

#: Names of the move features, in order (the last axis of :meth:`MoveFeaturizer.__call__`).
MOVE_FEATURES: tuple[str, ...] = (*BOT_FEATURES, "advanced_score")
#: Number of move features F.
NUM_MOVE_FEATURES = len(MOVE_FEATURES)
#: Points are multiplied by this before they reach a network (a deal's points are about 0-11 per side).
SCALE = 0.25


class MoveFeaturizer:
    """Computes :data:`MOVE_FEATURES` for every listed move of a batch of vector-env observations.

    Args:
        rules: the rules played (the point values and chances depend on them).
    """

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self.tables = RuleTables.of(rules)
        self.style = STYLES["advanced"]

    def __call__(self, obs: dict[str, Any], out: np.ndarray | None = None) -> np.ndarray:
        """float32[B, M, F]: the move features of B games (M = ``obs["action_mask"].shape[1]``).

        Args:
            obs: a :class:`cassino_env.vector.CassinoVectorEnv` observation dict made with ``with_view=True``.
            out: a float32[B, M, F] C-contiguous array to write them into (a rollout buffer's row: every entry is
                written, so it need not be zeroed); None: a new array.

        Raises:
            ValueError: ``obs`` has no ``view`` (an env made with ``with_view=False``), or an ``out`` that is not a
                writable C-contiguous float32 array of that shape.
        """
        mask = np.asarray(obs["action_mask"]) != 0
        B, M = mask.shape
        if out is None:
            out = np.empty((B, M, NUM_MOVE_FEATURES), dtype=np.float32)
        else:
            _check_out(out, (B, M, NUM_MOVE_FEATURES))
        if B == 0:
            return out
        _, scores, feats = score_moves(self.tables, self.style, view_inputs(obs), with_scores=True,
                                       with_features=True)
        _pack_features(feats, scores, mask, SCALE, out)
        return out


def _check_out(out: Any, shape: tuple[int, ...]) -> None:
    """A buffer the kernels write into: a writable, C-contiguous float32 numpy array of ``shape``, else a
    ``ValueError`` naming ``out`` and what is wrong."""
    if not isinstance(out, np.ndarray):
        raise ValueError(f"out must be a numpy float32 array of shape {shape}, got {type(out).__name__}")
    wrong = [what for what, bad in (("dtype " + str(out.dtype), out.dtype != np.float32),
                                    (f"shape {out.shape}", out.shape != shape),
                                    ("not C-contiguous", not out.flags.c_contiguous),
                                    ("read-only", not out.flags.writeable)) if bad]
    if wrong:
        raise ValueError(f"out must be a writable C-contiguous float32 array of shape {shape}: got {', '.join(wrong)}")


@njit(cache=True, nogil=True)
def _pack_features(feats: np.ndarray, scores: np.ndarray, mask: np.ndarray, scale: float, out: np.ndarray) -> None:
    """Write the listed moves' features and bot score, times ``scale``, into the float32[B, M, F + 1] ``out``, and
    0 at the unlisted moves (one pass over ``out``). Each value is the float64 product rounded once to float32, as
    numpy's ``out[..., :F] = feats * scale`` would."""
    B, M, F = feats.shape
    for b in range(B):
        for m in range(M):
            if mask[b, m]:
                for f in range(F):
                    out[b, m, f] = feats[b, m, f] * scale
                out[b, m, F] = scores[b, m] * scale
            else:
                for f in range(F + 1):
                    out[b, m, f] = 0.0


def critic_state_size(num_players: int) -> int:
    """C, the length of :func:`critic_state`: every seat's hand and the stock, 52 cards each."""
    return 52 * (num_players + 1)


def critic_state(state: Any, out: np.ndarray | None = None) -> np.ndarray:
    """float32[B, 52 * (P + 1)]: what the acting seat cannot see, for a critic trained on the full state.

    Block r < P is the hand of relative seat r (seat ``(current_player + r) % P``; block 0 is the mover's own hand),
    block P the cards still in the stock (1.0 where card c is there). Read from a core State (``env.state``) during
    training only: the policy never sees it (see :class:`agents.policy.CassinoPolicy`). A game with nobody to move
    (``current_player`` -1) reads its blocks from seat 0.

    Args:
        state: a core State.
        out: a float32[B, 52 * (P + 1)] C-contiguous array to write into (every entry is written); None: a new one.

    Raises:
        ValueError: an ``out`` that is not a writable C-contiguous float32 array of that shape.
    """
    hand = np.ascontiguousarray(state.hand, dtype=np.uint64)
    B, P = hand.shape
    shape = (B, 52 * (P + 1))
    if out is None:
        out = np.empty(shape, dtype=np.float32)
    else:
        _check_out(out, shape)
    _critic_state_kernel(hand, np.asarray(state.current_player, dtype=np.int64), np.asarray(state.deck),
                         np.asarray(state.stock_pos, dtype=np.int64), out)
    return out


@njit(cache=True, nogil=True)
def _critic_state_kernel(hand: np.ndarray, current: np.ndarray, deck: np.ndarray, stock_pos: np.ndarray,
                         out: np.ndarray) -> None:
    """:func:`critic_state`'s blocks, written into every entry of ``out`` (float32[B, 52 * (P + 1)])."""
    B, P = hand.shape
    for b in range(B):
        out[b, :] = 0.0
        cur = max(current[b], 0)
        for r in range(P):
            h = hand[b, (cur + r) % P]
            for c in range(52):
                if (h >> np.uint64(c)) & np.uint64(1):
                    out[b, r * 52 + c] = 1.0
        for i in range(stock_pos[b], deck.shape[1]):
            out[b, P * 52 + deck[b, i]] = 1.0


def banked_points(state: Any, tables: RuleTables) -> np.ndarray:
    """float64[B, S]: each side's points already banked this deal, the potential of the reward shaping.

    A side's cards are worth what the bots value them at (:mod:`agents.bots`): ``w_cards`` per card and ``w_spades``
    per spade (its share of the most-cards and most-spades items, docs/rules.md 5.1), each point card its points (aces,
    little and big casino; Cicera's point cards and napula shares, 5.3), plus sweeps times the sweep points and
    Cicera's in-play points. 0 at the start of a deal, when nothing has been captured.

    Args:
        state: a core State (``env.state``).
        tables: the bots' tables of the same rules (:meth:`agents.bots.RuleTables.of`).
    """
    P, S = tables.rules.num_players, tables.rules.num_sides
    captured = np.asarray(state.captured, dtype=np.uint64)
    B = captured.shape[0]
    side_cards = np.zeros((B, S), dtype=np.uint64)
    for p in range(P):
        side_cards[:, p % S] |= captured[:, p]
    pts = tables.w_cards * np.bitwise_count(side_cards) + tables.w_spades * np.bitwise_count(side_cards & SPADE_MASK)
    for c, v in zip(tables.point_cards.tolist(), tables.point_values.tolist(), strict=True):
        pts = pts + v * ((side_cards >> np.uint64(c)) & np.uint64(1))
    extra = float(tables.rules.sweep_points) * np.asarray(state.sweeps, dtype=np.float64) + np.asarray(
        state.in_play, dtype=np.float64)
    for p in range(P):
        pts[:, p % S] += extra[:, p]
    return pts


def seat_margins(side_points: np.ndarray, num_players: int) -> np.ndarray:
    """float64[B, P]: each seat's side's points minus the mean of the other sides' (the env's ``points`` reward form,
    :mod:`cassino_env.vector`), from float[B, S] side points."""
    S = side_points.shape[1]
    others = (side_points.sum(axis=1, keepdims=True) - side_points) / max(S - 1, 1)
    return (side_points - others)[:, np.arange(num_players) % S]
