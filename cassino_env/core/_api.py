"""Python layer of the batched core: State, StepResult, init, step and helpers (documented in the package)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from ..cards import BUILD, CAPTURE, NUM_CARDS, TRAIL, is_court, rank
from ..errors import CassinoError, PositionError
from ..rules import RuleSet, splits
from . import _kernels as K
from ._layout import (
    BUILDS_CODE,
    BVAL,
    CFG_ACEHIGH,
    CFG_BUILDS,
    CFG_GENERAL,
    CFG_H,
    CFG_INPLAY,
    CFG_K,
    CFG_M,
    CFG_MAXV,
    CFG_NUMERIC,
    CFG_ONEGROUP,
    CFG_P,
    CFG_PAIRALL,
    CFG_PRUNE,
    CFG_RAISEOWN,
    CFG_RAISETABLE,
    CFG_RESET,
    CFG_RESLAST,
    CFG_RESOLVE,
    CFG_S,
    CFG_SCORING,
    CFG_SLOW,
    CFG_SWEEP,
    CFG_SWEEPLAST,
    CFG_T,
    CFG_TARGET,
    CUR,
    DEAL_INDEX,
    DEALER,
    DECK,
    ITEMS,
    LAST_CAP,
    LAST_TRAIL,
    MATCH_INDEX,
    MATCH_OVER,
    NCFG,
    NITEMS,
    OVERFLOW,
    OWNER,
    R_ACTOR,
    R_DEAL_DONE,
    R_MATCH_DONE,
    R_POINTS,
    R_WINNER,
    SCORING_CODE,
    SCORING_ITEMS,
    SEED,
    STOCK_POS,
    W8,
    W64I,
    build_slots,
    i16_width,
    res_layout,
    u64_width,
)


class ActionIndexError(CassinoError):
    """An action index outside ``0 .. num_moves[b] - 1`` for some game ``b`` (the message names ``b``)."""


@dataclass(frozen=True, eq=False)
class State:
    """The state of ``B`` Cassino matches as arrays with a leading batch axis (see the package docstring).

    Public array fields are numpy views into the packed ``_u64``, ``_i8``, ``_i16``, ``_i64``, ``_m8`` and ``_mvc``
    arrays; :func:`step` mutates them in place. Use :meth:`copy` for an independent state.
    """

    hand: np.ndarray
    loose: np.ndarray
    build_cards: np.ndarray
    build_value: np.ndarray
    build_owner: np.ndarray
    captured: np.ndarray
    sweeps: np.ndarray
    match_scores: np.ndarray
    in_play: np.ndarray
    deck: np.ndarray
    stock_pos: np.ndarray
    current_player: np.ndarray
    dealer: np.ndarray
    last_capturer: np.ndarray
    last_trail: np.ndarray
    seed: np.ndarray
    match_index: np.ndarray
    deal_index: np.ndarray
    move_kind: np.ndarray
    move_card: np.ndarray
    move_value: np.ndarray
    move_cards: np.ndarray
    num_moves: np.ndarray
    overflow: np.ndarray
    match_over: np.ndarray
    rules: RuleSet
    max_moves: int
    prune: bool
    auto_reset: bool
    _u64: np.ndarray
    _i8: np.ndarray
    _i16: np.ndarray
    _i64: np.ndarray
    _m8: np.ndarray
    _mvc: np.ndarray
    _cfg: np.ndarray
    _rl: np.ndarray

    @property
    def batch_size(self) -> int:
        """B, the number of games."""
        return self._u64.shape[0]

    @property
    def num_players(self) -> int:
        """P, seats per game."""
        return self.rules.num_players

    @property
    def num_sides(self) -> int:
        """S, scoring sides per game (P, or 2 partnerships of 4 players)."""
        return self.rules.num_sides

    @property
    def general_moves(self) -> bool:
        """True when these rules list moves with the core's general move generator (some rule switch is on), False
        for the classic one; a kernel of another module picks its step driver by it
        (:mod:`cassino_env.core.kernel_api`: ``step_range_general`` or ``step_range_classic``)."""
        return bool(self._cfg[K.CFG_GENERAL])

    @property
    def deal_over(self) -> np.ndarray:
        """bool[B]: the deal is over and nobody is to move (only with ``auto_reset=False``)."""
        return self.current_player < 0

    def copy(self) -> State:
        """An independent deep copy."""
        return _wrap(self.rules, self._u64.copy(), self._i8.copy(), self._i16.copy(), self._i64.copy(),
                     self._m8.copy(), self._mvc.copy(), self._cfg.copy())

    def take(self, index: np.ndarray | Sequence[int]) -> State:
        """A new, independent State whose game g is a copy of game ``index[g]`` of this one (games cloned and
        replicated: int[G] indices, repeats allowed); every field is copied, move tables and options included.

        Raises:
            ValueError: ``index`` is not a 1-D integer array of game numbers 0..batch_size-1.
        """
        index = np.asarray(index)
        if index.ndim != 1 or not (np.issubdtype(index.dtype, np.integer) or index.size == 0):
            raise ValueError(f"index must be a 1-D integer array (int[G]), got shape {index.shape} {index.dtype}")
        if index.size and (int(index.min()) < 0 or int(index.max()) >= self.batch_size):
            names = f"game numbers 0..{self.batch_size - 1}" if self.batch_size else "no game numbers (0 games)"
            raise ValueError(f"index must hold {names}, got {int(index.min())}..{int(index.max())}")
        index = index.astype(np.int64)
        return _wrap(self.rules, self._u64[index], self._i8[index], self._i16[index], self._i64[index],
                     self._m8[index], self._mvc[index], self._cfg.copy())

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickle and ``copy.deepcopy`` by the packed arrays, so the copy's public fields view its own arrays as the
        original's view the original's (a field-by-field copy would break those views)."""
        return (_wrap, (self.rules, self._u64, self._i8, self._i16, self._i64, self._m8, self._mvc, self._cfg))

    def stock(self, b: int) -> list[int]:
        """Undealt card ids of game ``b``, front (dealt first) first."""
        return [int(c) for c in self.deck[b, int(self.stock_pos[b]):]]


@dataclass(frozen=True, eq=False)
class StepResult:
    """What :func:`step` reports per game (B games; P seats; S sides).

    Attributes:
        actor: int8[B] — seat that moved (-1: a game with nothing to play, auto-reset off).
        deal_done: bool[B] — this move ended a deal (it was scored; with auto-reset the next deal is already dealt).
        match_done: bool[B] — this move ended a match (docs/rules.md 2.6).
        match_winner: int8[B] — winning side of a match that ended, else -1.
        deal_points: int16[B, P] — each seat's SIDE points for a deal that ended (partners both get their side's
            points), else 0.
        deal_totals: int16[B, S] — points per side of a deal that ended, else 0.
        deal_items: int16[B, S, 9] — per side, points of each item of :data:`ITEMS` (cards, spades, big_casino,
            little_casino, aces, sweeps, napula, jack_of_hearts, in_play; items the rules' scoring lacks are 0) of a
            deal that ended, else 0.
        deal_cards: int16[B, S] — cards captured per side (residue included) in a deal that ended, else 0.
        deal_spades: int16[B, S] — spades captured per side in a deal that ended, else 0.
        match_totals: int16[B, S] — match totals per side after a deal that ended (before any reset), else 0.
    """

    actor: np.ndarray
    deal_done: np.ndarray
    match_done: np.ndarray
    match_winner: np.ndarray
    deal_points: np.ndarray
    deal_totals: np.ndarray
    deal_items: np.ndarray
    deal_cards: np.ndarray
    deal_spades: np.ndarray
    match_totals: np.ndarray


def _wrap(rules: RuleSet, u64, i8, i16, i64, m8, mvc, cfg) -> State:
    P, S, K = rules.num_players, rules.num_sides, int(cfg[CFG_K])
    t_col, it_col, nc_col, ns_col, width = res_layout(P, S)
    rl = np.array([t_col, it_col, nc_col, ns_col], dtype=np.int64)
    return State(
        hand=u64[:, 0:P], loose=u64[:, P], build_cards=u64[:, P + 1:P + 1 + K], build_value=i8[:, BVAL:BVAL + K],
        build_owner=i8[:, OWNER:OWNER + K], captured=u64[:, P + 1 + K:2 * P + 1 + K], sweeps=i16[:, 0:P],
        match_scores=i16[:, P:P + S], in_play=i16[:, P + S + 1:2 * P + S + 1],
        deck=i8[:, DECK:DECK + 52], stock_pos=i8[:, STOCK_POS], current_player=i8[:, CUR], dealer=i8[:, DEALER],
        last_capturer=i8[:, LAST_CAP], last_trail=i8[:, LAST_TRAIL], seed=i64[:, SEED],
        match_index=i64[:, MATCH_INDEX], deal_index=i64[:, DEAL_INDEX],
        move_kind=m8[:, 0, :], move_card=m8[:, 1, :], move_value=m8[:, 2, :], move_cards=mvc,
        num_moves=i16[:, P + S], overflow=i8[:, OVERFLOW].view(np.bool_), match_over=i8[:, MATCH_OVER].view(np.bool_),
        rules=rules, max_moves=int(cfg[CFG_M]), prune=bool(cfg[CFG_PRUNE]), auto_reset=bool(cfg[CFG_RESET]),
        _u64=u64, _i8=i8, _i16=i16, _i64=i64, _m8=m8, _mvc=mvc, _cfg=cfg, _rl=rl)


def _run(state: State, mode: int, *, actions: np.ndarray | None = None, nsteps: int = 0,
         rng: np.ndarray | None = None, res: np.ndarray | None = None, parallel: bool = False) -> int:
    """Call the serial or parallel batch driver of :mod:`._kernels` in ``mode``; return the moves played."""
    B = state.batch_size
    if actions is None:
        actions = np.zeros(B, dtype=np.int64)
    if rng is None:
        rng = np.zeros(B, dtype=np.uint64)
    if res is None:
        res = np.empty((B, res_layout(state.num_players, state.num_sides)[4]), dtype=np.int16)
    args = (mode, actions, nsteps, rng, state._u64, state._i8, state._i16, state._i64, state._m8, state._mvc, res,
            state._cfg, state._rl)
    general = bool(state._cfg[K.CFG_GENERAL])  # one driver per generator: only the one used compiles
    if not parallel:
        return int((K.run_serial_general if general else K.run_serial_classic)(*args))
    threads = numba.get_num_threads()
    chunk = max(1, min(K.CHUNK, -(-B // (4 * threads))))  # about four chunks per thread
    return int((K.run_parallel_general if general else K.run_parallel_classic)(*args, chunk))


#: The move-generation switches of the specialised classic generator (:mod:`._classic_gen`); a rule set with any other
#: value is listed by the general generator (:mod:`._general_gen`). Scoring, residue and sweep switches are kernel-side
#: and work with either.
CLASSIC_GENERATOR = {"court_values": "none", "court_pair_take": "one", "ace_high": False, "capture_mode": "groups",
                     "builds": "standard", "raise_own_build": True, "raise_with_table_cards": False,
                     "owner_rule": "no_trail"}


def uses_classic_generator(rules: RuleSet) -> bool:
    """True when ``rules`` is listed by the specialised classic move generator (see :data:`CLASSIC_GENERATOR`)."""
    return all(getattr(rules, k) == v for k, v in CLASSIC_GENERATOR.items())


def items_of(rules: RuleSet) -> tuple[str, ...]:
    """The scoring items of ``rules.scoring`` (docs/rules.md 5), a subset of :data:`ITEMS` in the reference's order."""
    return SCORING_ITEMS[rules.scoring]


def _check_rules(rules: RuleSet) -> None:
    if not isinstance(rules, RuleSet):
        raise TypeError(f"rules must be a RuleSet (cassino_env.rules.make_rules), got {type(rules).__name__}")


def _alloc(rules: RuleSet, B: int, max_moves: int, prune: bool, auto_reset: bool, slow: bool = False,
           general: bool = False) -> State:
    if not isinstance(max_moves, (int, np.integer)) or not 1 <= max_moves <= 32767:
        raise ValueError(f"max_moves must be an integer 1..32767, got {max_moves!r}")
    P, S, K = rules.num_players, rules.num_sides, build_slots(rules)
    cfg = np.zeros(NCFG, dtype=np.int64)
    cfg[CFG_P], cfg[CFG_S], cfg[CFG_T], cfg[CFG_H] = P, S, rules.table_cards, rules.hand_size
    cfg[CFG_TARGET], cfg[CFG_SWEEP], cfg[CFG_M] = rules.target, rules.sweep_points, max_moves
    cfg[CFG_PRUNE], cfg[CFG_RESET], cfg[CFG_SLOW] = int(bool(prune)), int(bool(auto_reset)), int(bool(slow))
    cfg[CFG_K] = K
    cfg[CFG_GENERAL] = int(bool(general) or not uses_classic_generator(rules))
    cfg[CFG_MAXV] = rules.max_value
    cfg[CFG_NUMERIC] = int(rules.court_values == "numeric")
    cfg[CFG_ACEHIGH] = int(rules.ace_high)
    cfg[CFG_PAIRALL] = int(rules.court_pair_take == "all")
    cfg[CFG_ONEGROUP] = int(rules.capture_mode == "one_group")
    cfg[CFG_BUILDS] = BUILDS_CODE[rules.builds]
    cfg[CFG_RAISEOWN] = int(rules.raise_own_build)
    cfg[CFG_RAISETABLE] = int(rules.raise_with_table_cards)
    cfg[CFG_RESOLVE] = int(rules.owner_rule == "resolve_next_turn")
    cfg[CFG_SWEEPLAST] = int(rules.sweep_on_last_play)
    cfg[CFG_RESLAST] = int(rules.residue_to == "last_player")
    cfg[CFG_SCORING] = SCORING_CODE[rules.scoring]
    cfg[CFG_INPLAY] = int(rules.in_play_bonuses)
    u64 = np.zeros((B, u64_width(P, K)), dtype=np.uint64)
    i8 = np.zeros((B, W8), dtype=np.int8)
    i8[:, OWNER:OWNER + K] = -1
    i8[:, DECK:DECK + 52] = -1
    i8[:, LAST_CAP] = -1
    i8[:, LAST_TRAIL] = -1
    i8[:, STOCK_POS] = 52
    i16 = np.zeros((B, i16_width(P, S)), dtype=np.int16)
    i64 = np.zeros((B, W64I), dtype=np.int64)
    m8 = np.zeros((B, 3, max_moves), dtype=np.int8)
    m8[:, 0:2, :] = -1
    mvc = np.zeros((B, max_moves), dtype=np.uint64)
    return _wrap(rules, u64, i8, i16, i64, m8, mvc, cfg)


def init(rules: RuleSet, seeds: np.ndarray | Sequence[int], *, max_moves: int = 256, prune: bool = True,
         auto_reset: bool = True, _slow_path: bool = False, _general_path: bool = False) -> State:
    """Start ``B = len(seeds)`` matches, one per seed; deal their first deals and list the moves.

    Args:
        rules: any rule set (:func:`cassino_env.rules.make_rules`: a docs/rules.md 6 preset plus switch overrides).
        seeds: int64[B] — per-game seeds; game b's deal k of match m uses ``deck_for(seeds[b], m, k)``.
        max_moves: M, the width of the move table; longer lists keep their first M moves and set ``overflow``.
        prune: drop captures dominated by a larger capture with the same card, on tables of at most
            ``PRUNE_MAX_LOOSE`` (24) loose cards (the oracle never prunes: docs/interchange.md "Size").
        auto_reset: a game whose deal ends starts its next deal, or a new match, within the same step.
        _slow_path: test hook: list every move by the output-sensitive generator (cassino_env.core._crowded_gen) that
            otherwise serves only crowded classic tables.
        _general_path: test hook: list moves by the general generator (cassino_env.core._general_gen) even where the
            classic generator applies.

    Raises:
        TypeError: ``rules`` is not a RuleSet.
        ValueError: ``seeds`` is not a 1-D integer array, or ``max_moves`` is outside 1..32767.
    """
    _check_rules(rules)
    seeds = np.asarray(seeds)
    if seeds.ndim != 1 or not np.issubdtype(seeds.dtype, np.integer):
        raise ValueError(f"seeds must be a 1-D integer array (int64[B]), got shape {seeds.shape} {seeds.dtype}")
    st = _alloc(rules, len(seeds), max_moves, prune, auto_reset, _slow_path, _general_path)
    st._i64[:, SEED] = seeds.astype(np.int64)
    _run(st, K.MODE_INIT)
    return st


def blank(rules: RuleSet, batch_size: int, *, max_moves: int = 256, prune: bool = True,
          auto_reset: bool = True) -> State:
    """``batch_size`` games with nothing dealt (no cards anywhere, no moves listed, ``current_player`` -1: nobody to
    move, so a step plays nothing, as after a deal's end with ``auto_reset=False``): storage for a caller that writes
    every field of a position itself (:func:`cassino_env.determinize.determinize`), without the deal :func:`init`
    makes. Options as :func:`init`.

    Raises:
        TypeError: ``rules`` is not a RuleSet.
        ValueError: ``batch_size`` is not a non-negative integer, or ``max_moves`` is outside 1..32767.
    """
    _check_rules(rules)
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 0:
        raise ValueError(f"batch_size must be a non-negative integer, got {batch_size!r}")
    st = _alloc(rules, int(batch_size), max_moves, prune, auto_reset)
    st.current_player[:] = -1  # nobody to move: a step before the caller writes a position plays nothing
    return st


def step(state: State, actions: np.ndarray | Sequence[int], *, parallel: bool = False) -> StepResult:
    """Play ``actions[b]`` (an index into game b's move table) in every game, in place; see the package docstring.

    Games with nobody to move (deal over, ``auto_reset=False``) ignore their action.

    Raises:
        ActionIndexError: naming the first game whose index is not in ``0 .. num_moves[b] - 1``; nothing changes.
    """
    B = state.batch_size
    a = np.asarray(actions)
    if a.shape != (B,) or not np.issubdtype(a.dtype, np.integer):
        raise ActionIndexError(f"actions must be an integer array of shape ({B},), got shape {a.shape} {a.dtype}")
    a = a.astype(np.int64)
    live = state.current_player >= 0
    n = state.num_moves.astype(np.int64)
    bad = live & ((a < 0) | (a >= n))
    if bad.any():
        b = int(np.flatnonzero(bad)[0])
        raise ActionIndexError(f"game {b}: action {int(a[b])} is not a listed move index 0..{int(n[b]) - 1}")
    a = np.where(live, a, 0)
    res = np.empty((B, res_layout(state.num_players, state.num_sides)[4]), dtype=np.int16)
    _run(state, K.MODE_STEP, actions=a, res=res, parallel=parallel)
    return result_from_rows(res, state.rules)


def result_from_rows(res: np.ndarray, rules: RuleSet) -> StepResult:
    """The :class:`StepResult` of the packed per-game result rows the kernels write (the one builder of StepResult).

    Args:
        res: int16[B, W], rows written by a step (:func:`step`, or :data:`step_kernel` into :func:`result_rows`).
        rules: the rule set of the state stepped (its seats P and sides S give the row layout).

    Returns:
        A StepResult of fresh arrays (``res`` may be reused).
    """
    P, S = rules.num_players, rules.num_sides
    B = res.shape[0]
    t_col, it_col, nc_col, ns_col, _ = res_layout(P, S)
    items = res[:, it_col:nc_col].reshape(B, S, NITEMS).copy()
    totals = items[:, :, 0].copy()  # the items' sum, column by column: numpy's reduce over 9 is slow at this shape
    for k in range(1, NITEMS):
        totals += items[:, :, k]
    return StepResult(
        actor=res[:, R_ACTOR].astype(np.int8), deal_done=res[:, R_DEAL_DONE] != 0,
        match_done=res[:, R_MATCH_DONE] != 0, match_winner=res[:, R_WINNER].astype(np.int8),
        deal_points=res[:, R_POINTS:R_POINTS + P].copy(), deal_totals=totals,
        deal_items=items, deal_cards=res[:, nc_col:ns_col].copy(), deal_spades=res[:, ns_col:ns_col + S].copy(),
        match_totals=res[:, t_col:t_col + S].copy())


def result_rows(state: State) -> np.ndarray:
    """int16[B, W]: a zeroed buffer for the result rows :data:`step_kernel` writes (see :func:`result_from_rows`)."""
    return np.zeros((state.batch_size, res_layout(state.num_players, state.num_sides)[4]), dtype=np.int16)


def kernel_args(state: State) -> tuple[np.ndarray, ...]:
    """The packed arrays of ``state`` that :data:`step_kernel` takes after ``(actions, res)``, in order.

    ``(u64 uint64[B, 2P + K + 1], i8 int8[B, W8], i16 int16[B, 2P + S + 1], i64 int64[B, 3], m8 int8[B, 3, M],
    mvc uint64[B, M], cfg int64[NCFG], rl int64[4])`` — the very arrays the public fields of ``state`` view, so a
    kernel that steps them updates ``state`` in place (layout: :mod:`cassino_env.core._layout`). Bind them once per
    state; they stay valid for its life.
    """
    return (state._u64, state._i8, state._i16, state._i64, state._m8, state._mvc, state._cfg, state._rl)


def tally(state: State) -> dict[str, np.ndarray]:
    """Score every game's captured piles, sweeps and in-play points as they stand (docs/rules.md 5, by ``scoring``);
    nothing changes, no residue is given.

    For a deal that is over (``auto_reset=False``) this is the deal's tally. Returns ``{"items": int16[B, S, 9]
    (points per item of ITEMS; items the scoring lacks are 0), "totals": int16[B, S] (points), "cards":
    int16[B, S], "spades": int16[B, S] (cards and spades captured)}``.
    """
    B, P, S = state.batch_size, state.num_players, state.num_sides
    t_col, it_col, nc_col, ns_col, width = res_layout(P, S)
    res = np.empty((B, width), dtype=np.int16)
    K.score_all(state._u64, state._i16, res, state._cfg, state._rl)
    items = res[:, it_col:nc_col].reshape(B, S, NITEMS).copy()
    return {"items": items, "totals": items.sum(axis=2, dtype=np.int16), "cards": res[:, nc_col:ns_col].copy(),
            "spades": res[:, ns_col:ns_col + S].copy()}


def advance(state: State) -> None:
    """With ``auto_reset=False``: start the next deal (or a new match after a finished one) where a deal is over."""
    _run(state, K.MODE_ADVANCE)


def refresh_moves(state: State) -> None:
    """Recompute every game's move table from its position, after position arrays were written by hand."""
    state._m8[:, 0:2, :] = -1
    state._m8[:, 2, :] = 0
    state._mvc[:] = 0
    state.num_moves[:] = 0
    _run(state, K.MODE_REGEN)


def legal_mask(state: State) -> np.ndarray:
    """bool[B, M]: True for the listed moves (the first ``num_moves[b]`` entries of each row)."""
    return np.arange(state.max_moves)[None, :] < state.num_moves[:, None].astype(np.int64)


def random_actions(state: State, rng: np.ndarray) -> np.ndarray:
    """int64[B]: a uniformly random listed move index per game (0 where none); advances ``rng`` (uint64[B])."""
    return K.random_actions(rng, state._u64, state._i16, state._cfg)


def rollout(state: State, num_steps: int, rng: np.ndarray, *, parallel: bool = False) -> int:
    """Play ``num_steps`` uniformly random listed moves in every game inside one numba call; return moves played.

    ``rng``: uint64[B] per-game counters, advanced in place (start them from any values, e.g. seeds). No
    StepResult is kept: this is the engine loop for benchmarks and data generation.
    """
    rng = np.asarray(rng)
    if rng.shape != (state.batch_size,) or rng.dtype != np.uint64:
        raise ValueError(f"rng must be uint64[{state.batch_size}], got {rng.dtype}{list(rng.shape)}")
    return _run(state, K.MODE_ROLLOUT, nsteps=int(num_steps), rng=rng, parallel=parallel)


def deck_for(seed: int, match_index: int, deal_index: int) -> np.ndarray:
    """int8[52]: the shuffled deck of deal ``deal_index`` of match ``match_index`` of a game seeded ``seed``.

    A pure function of its arguments (splitmix64 counters), so the reference engine can replay the same deals.
    """
    out = np.empty(NUM_CARDS, dtype=np.int8)
    K.deck_into(out, np.int64(seed), np.int64(match_index), np.int64(deal_index))
    return out


def _mask(cards: Sequence[int]) -> np.uint64:
    m = 0
    for c in cards:
        m |= 1 << int(c)
    return np.uint64(m)


def _ids(mask: int | np.integer) -> list[int]:
    m = int(mask)
    out = []
    while m:
        low = m & -m
        out.append(low.bit_length() - 1)
        m ^= low
    return out


def from_position(rules: RuleSet, hands: Sequence[Sequence[int]], loose: Sequence[int] = (),
                  builds: Sequence[tuple[Sequence[int], int, int]] = (), to_move: int = 0, dealer: int | None = None,
                  stock: Sequence[int] = (), captured: Sequence[Sequence[int]] | None = None,
                  sweeps: Sequence[int] | None = None, last_capturer: int | None = None,
                  match_scores: Sequence[int] | None = None, *, last_trail: int | None = None,
                  max_moves: int = 256, prune: bool = True, auto_reset: bool = False, seed: int = 0,
                  _slow_path: bool = False, _general_path: bool = False, in_play: Sequence[int] | None = None
                  ) -> State:
    """A one-game State (B = 1) from an explicit position, card ids throughout; moves are listed for ``to_move``.

    ``builds`` are ``(cards, value, owner)``; ``stock`` is dealt front first; ``dealer`` defaults to the seat
    before ``to_move``; ``in_play`` holds Cicera's in-play points per seat so far (docs/rules.md 5.3). The position need
    not hold all 52 cards, but no card may appear twice. With ``auto_reset=False`` (the default here) a deal that
    ends leaves ``current_player == -1`` and its cards in place.

    Raises:
        PositionError: naming the field for a malformed position (a card twice, a bad seat or build, two builds
            of one value where equal values merge, docs/rules.md 4.1 rule 6).
    """
    _check_rules(rules)
    P, S = rules.num_players, rules.num_sides
    seen: dict[int, str] = {}

    def cards_of(xs: Sequence[int], name: str) -> np.uint64:
        for c in xs:
            if not isinstance(c, (int, np.integer)) or not 0 <= int(c) < NUM_CARDS:
                raise PositionError(f"{name}: {c!r} is not a card id 0..51")
            if int(c) in seen:
                raise PositionError(f"{name}: card {int(c)} is also in {seen[int(c)]}")
            seen[int(c)] = name
        return _mask(xs)

    def seat(x: Any, name: str, nullable: bool = False) -> int:
        if x is None and nullable:
            return -1
        if not isinstance(x, (int, np.integer)) or not 0 <= int(x) < P:
            raise PositionError(f"{name}: expected a seat 0..{P - 1}, got {x!r}")
        return int(x)

    if len(hands) != P:
        raise PositionError(f"hands: expected {P} hands, got {len(hands)}")
    st = _alloc(rules, 1, max_moves, prune, auto_reset, _slow_path, _general_path)
    u64, i8, i16, i64 = st._u64, st._i8, st._i16, st._i64
    for q, h in enumerate(hands):
        u64[0, q] = cards_of(h, f"hands[{q}]")
    u64[0, P] = cards_of(loose, "loose")
    nslots = int(st._cfg[CFG_K])
    bcol = P + 1
    if rules.builds == "none" and len(builds):
        raise PositionError(f"builds: preset {rules.preset!r} has no builds (docs/rules.md 3 builds=none)")
    for k, bld in enumerate(builds):
        try:
            bcards, value, owner = bld
        except (TypeError, ValueError):
            raise PositionError(f"builds[{k}]: expected (cards, value, owner)") from None
        if not isinstance(value, (int, np.integer)) or not rules.is_build_value(int(value)):
            raise PositionError(f"builds[{k}].value: {value!r} is not a build value of these rules: 1..10, 11..13 "
                                "with numeric courts, 14 with ace_high (docs/rules.md 4.1 rule 3)")
        if len(bcards) < 2 or (rules.court_values == "none" and any(is_court(int(c)) for c in bcards)):
            raise PositionError(f"builds[{k}].cards: a build holds two or more valued cards (docs/rules.md 1, 3)")
        if not splits([rank(int(c)) for c in bcards], int(value)):
            raise PositionError(f"builds[{k}]: cards do not split into groups of {value} (docs/rules.md 1 build)")
        o = seat(owner, f"builds[{k}].owner")
        if rules.builds == "reservation" and any(o == int(i8[0, OWNER + q]) for q in range(nslots)
                                                  if u64[0, bcol + q]):
            raise PositionError(f"builds[{k}].owner: seat {o} owns two reservations; under reservation a "
                                "player owns at most one (docs/rules.md 4.4)")
        v = int(value)
        if rules.builds == "attach":
            if k >= nslots:
                raise PositionError(f"builds: more than {nslots} builds")
            slot = k
        else:
            slot = v - 1
            if u64[0, bcol + slot] != 0:
                raise PositionError(f"builds[{k}]: a second build of value {v} (equal values merge, docs/rules.md 4.1 "
                                    "rule 6)")
        u64[0, bcol + slot] = cards_of(bcards, f"builds[{k}].cards")
        i8[0, OWNER + slot] = o
        i8[0, BVAL + slot] = v
    if captured is not None:
        if len(captured) != P:
            raise PositionError(f"captured: expected {P} piles, got {len(captured)}")
        for q, pile in enumerate(captured):
            u64[0, bcol + nslots + q] = cards_of(pile, f"captured[{q}]")
    stock = list(stock)
    cards_of(stock, "stock")
    i8[0, DECK + NUM_CARDS - len(stock):DECK + NUM_CARDS] = np.array(stock, dtype=np.int8)
    i8[0, STOCK_POS] = NUM_CARDS - len(stock)
    if sweeps is not None:
        if len(sweeps) != P:
            raise PositionError(f"sweeps: expected {P} counts, got {len(sweeps)}")
        i16[0, 0:P] = sweeps
    if match_scores is not None:
        if len(match_scores) != S:
            raise PositionError(f"match_scores: expected {S} totals, got {len(match_scores)}")
        i16[0, P:P + S] = match_scores
    if in_play is not None:
        if len(in_play) != P:
            raise PositionError(f"in_play: expected {P} counts, got {len(in_play)}")
        i16[0, P + S + 1:2 * P + S + 1] = in_play
    i8[0, CUR] = seat(to_move, "to_move")
    i8[0, DEALER] = (i8[0, CUR] - 1) % P if dealer is None else seat(dealer, "dealer")
    i8[0, LAST_CAP] = seat(last_capturer, "last_capturer", nullable=True)
    if last_trail is not None:
        if not isinstance(last_trail, (int, np.integer)) or not 0 <= int(last_trail) < NUM_CARDS:
            raise PositionError(f"last_trail: {last_trail!r} is not a card id 0..51")
        if int(last_trail) not in loose:
            raise PositionError(f"last_trail: card {int(last_trail)} is not a loose table card (the card just "
                                "trailed lies loose until the next move)")
        i8[0, LAST_TRAIL] = int(last_trail)
    i64[0, SEED] = seed
    _run(st, K.MODE_REGEN)
    return st


def move_list(state: State, b: int) -> list[tuple[int, int, int, tuple[int, ...]]]:
    """Game ``b``'s listed moves as ``(kind, card, value, sorted table card ids)`` tuples, in table order."""
    n = int(state.num_moves[b])
    return [(int(state.move_kind[b, i]), int(state.move_card[b, i]), int(state.move_value[b, i]),
             tuple(_ids(state.move_cards[b, i]))) for i in range(n)]


def position(state: State, b: int) -> dict[str, Any]:
    """Game ``b`` as a plain dict of card-id lists (the arguments of :func:`from_position`, plus the deal state)."""
    P = state.num_players
    cur = int(state.current_player[b])
    lc = int(state.last_capturer[b])
    lt = int(state.last_trail[b])
    return {
        "hands": [_ids(state.hand[b, q]) for q in range(P)],
        "loose": _ids(state.loose[b]),
        "builds": [(_ids(state.build_cards[b, k]), int(state.build_value[b, k]), int(state.build_owner[b, k]))
                   for k in range(state.build_cards.shape[1]) if state.build_cards[b, k]],
        "to_move": None if cur < 0 else cur,
        "dealer": int(state.dealer[b]),
        "stock": state.stock(b),
        "captured": [_ids(state.captured[b, q]) for q in range(P)],
        "sweeps": [int(x) for x in state.sweeps[b]],
        "in_play": [int(x) for x in state.in_play[b]],
        "last_capturer": None if lc < 0 else lc,
        "last_trail": None if lt < 0 else lt,
        "match_scores": [int(x) for x in state.match_scores[b]],
    }


#: ``step_kernel(actions, res, *kernel_args(state))``: :func:`step` without its checks, as a numba function that
#: other kernels can call (the one-game fast path of the AEC env fuses it with its action mapping). ``actions``:
#: int64[B], a listed move index for every game with a player to move; ``res``: int16[B, W] from
#: :func:`result_rows`, turned into a StepResult by :func:`result_from_rows`. Returns the number of moves played.
step_kernel = K.step_kernel

__all__ = [
    "BUILD", "CAPTURE", "ITEMS", "TRAIL", "ActionIndexError", "State", "StepResult", "advance", "deck_for",
    "from_position", "init", "items_of", "kernel_args", "legal_mask", "move_list", "position", "random_actions",
    "refresh_moves", "result_from_rows", "result_rows", "rollout", "step", "step_kernel", "tally",
    "uses_classic_generator",
]
