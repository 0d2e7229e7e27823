"""The batched rules core: B Cassino matches of any rule set (every docs/rules.md 6 preset and every switch of section
3)
as numpy arrays, stepped by numba kernels.

Pgx-style: a :class:`State` of arrays with a leading batch axis, a legal move table recomputed by every
:func:`init` and :func:`step`, and auto-reset of finished deals and matches. No Python loop over games runs in the
hot path; the kernels loop over the batch (``parallel=True`` spreads chunks of games over numba's threads).

>>> import numpy as np
>>> from cassino_env.rules import make_rules
>>> from cassino_env import core
>>> st = core.init(make_rules("classic"), np.arange(3))
>>> st.hand.shape, st.move_kind.shape, st.current_player.tolist()
((3, 2), (3, 256), [0, 0, 0])
>>> r = core.step(st, np.zeros(3, dtype=np.int64))   # move 0 of each game: a trail of its lowest card
>>> r.actor.tolist(), st.current_player.tolist()
([0, 0, 0], [1, 1, 1])

Cards and sets
--------------
A card id is ``13 * suit + rank - 1`` (docs/rules.md 1). A set of cards is a ``uint64`` bitmask: bit ``c`` set when card
``c`` is in the set. Shapes below: B games, P seats, S sides (P, or 2 for 4 players in partnerships), M = max_moves.

State arrays (views; :func:`step` mutates them in place)
--------------------------------------------------------
==================  ====================  ==============================================================================
field               dtype[shape]          meaning
==================  ====================  ==============================================================================
``hand``            uint64[B, P]          bit c set when seat p holds card c
``loose``           uint64[B]             loose table cards
``build_cards``     uint64[B, K]          cards of the build in slot k (0: empty slot). Where builds of equal value
                                          merge (``standard``, ``reservation``: docs/rules.md 4.1 rule 6) slot v-1 holds
                                          the build of value v and K is the largest build value (10; 13 with numeric
                                          courts; 14 with ``ace_high``); with ``attach`` builds K = 26 and a new
                                          build takes the first free slot
``build_value``     int8[B, K]            declared value of the build in slot k (0: empty)
``build_owner``     int8[B, K]            owner seat of the build in slot k, -1 for none
``captured``        uint64[B, P]          cards captured by seat p this deal (partners pool them when scoring)
``sweeps``          int16[B, P]           sweeps by seat p this deal
``in_play``         int16[B, P]           Cicera's in-play points (docs/rules.md 5.3) of seat p this deal, sweeps apart
``match_scores``    int16[B, S]           match totals per side (points) of the deals scored so far in this match
``deck``            int8[B, 52]           this deal's shuffled deck (positions before ``stock_pos`` are dealt)
``stock_pos``       int8[B]               the stock is ``deck[b, stock_pos[b]:]``, front dealt first
``current_player``  int8[B]               seat to move; -1 when the deal is over (only with ``auto_reset=False``)
``dealer``          int8[B]               the dealer's seat (P-1 in a match's first deal, then +1 per deal)
``last_capturer``   int8[B]               seat of the last capture this deal, -1 for none
``last_trail``      int8[B]               card trailed on the immediately preceding turn, -1 for none
``seed``            int64[B]              per-game seed
``match_index``     int64[B]              matches finished in this game (the match counter of the deck RNG)
``deal_index``      int64[B]              deals finished in this match (the deal counter of the deck RNG)
``move_kind``       int8[B, M]            0 trail, 1 capture, 2 build, -1 padding
``move_card``       int8[B, M]            hand card played (-1 padding)
``move_value``      int8[B, M]            capture value (court: its rank 11..13; an ace captured high: 14) or
                                          declared build value; 0 trail
``move_cards``      uint64[B, M]          table cards taken (capture) or used (build), whole builds included
``num_moves``       int16[B]              listed moves, ``min(legal moves, M)``
``overflow``        bool[B]               more than M legal moves: only the first M (canonical order) are listed
``match_over``      bool[B]               with ``auto_reset=False``: the finished deal also finished the match
==================  ====================  ==============================================================================

Also ``rules`` (the RuleSet), ``max_moves``, ``prune``, ``auto_reset`` and the packed internals ``_u64, _i8, _i16,
_i64, _m8, _mvc, _cfg, _rl`` (layout in :mod:`cassino_env.core._layout`). ``State.copy()`` deep-copies.

Moves
-----
The move table lists the legal moves of ``current_player`` in canonical order: trails, captures, builds; then by
played card id; then by the sorted card-id list of ``move_cards`` (a prefix first); then by value. The exact rules
are restated in :mod:`cassino_env.core._classic_gen` (the specialised generator of the classic switches) and
:mod:`cassino_env.core._general_gen` (every other rule set; :func:`uses_classic_generator` tells which one a rule set
gets). With ``prune=True`` (default) a capture strictly contained in
another capture by the same card is not listed, on tables of at most ``PRUNE_MAX_LOOSE`` (24) loose cards; a more
crowded table, which only play that keeps trailing reaches, lists every capture (finding the maximal ones grows
exponentially with the table; :func:`cassino_env.reference.prune_dominated` applies the same bound). Overflow
policy: a list longer than M keeps its first M moves in canonical order and sets ``overflow[b]``; trails come first,
so a list never loses all its moves.
``legal_mask(state)`` is ``bool[B, M]``, True on the first ``num_moves[b]`` entries.

Stepping
--------
``step(state, actions)`` plays ``actions[b]`` (an index < ``num_moves[b]``; checked for every game before anything
changes, else :class:`ActionIndexError` naming the game) in each game: it moves the card, passes the turn, deals a
new round when every hand is empty, and at the end of a deal gives the residue as ``residue_to`` says, scores the
deal (docs/rules.md 5, by ``scoring``: ``StepResult.deal_items`` follows :data:`ITEMS`, :func:`items_of` names the items
of a rule set) and adds it to the match totals. A match ends after a deal in which a side reaches the target with the
unique highest total (a tie for highest plays another deal). With ``auto_reset=True`` (default) the next deal (dealer
+1) or a new match (match counter +1, totals 0, dealer P-1) is dealt in the same step; with ``auto_reset=False``
the game stops with ``current_player == -1`` (cards left in place for inspection, later actions ignored) until
:func:`advance`. The :class:`StepResult` reports the actor, deal and match ends, points and the deal's tally.

Helpers
-------
``from_position(rules, hands, loose, builds, to_move, ...)`` builds a one-game State from explicit card ids;
``position(state, b)`` gives game b back as a dict of card-id lists; ``move_list(state, b)`` its listed moves as
``(kind, card, value, sorted card ids)``; ``tally(state)`` scores the captured piles as they stand; ``advance(state)``
deals on where auto-reset is off; ``refresh_moves(state)`` recomputes the move tables after position arrays were
written by hand; ``random_actions(state, rng)`` draws a listed move per game and ``rollout(state, n, rng)`` plays n
random moves per game inside one numba call (benchmarks, data generation). ``step``, ``rollout``: ``parallel=True``
spreads chunks of games over numba's threads (set their number with ``numba.set_num_threads``).

Crowded tables (many loose cards, typically from policies that trail a lot) can have millions of legal moves; the
generator then switches to an output-sensitive search that lists the first M in canonical order directly (see
:mod:`cassino_env.core._classic_gen`), so a step stays in milliseconds.

Fast entry and kernel helpers
-----------------------------
For adapters that step one game per Python call and need numba speed (the AEC env): ``step_kernel(actions, res,
*kernel_args(state))`` is :func:`step` without its checks as a numba function other kernels can call (actions
int64[B], a listed index per game with a player to move); ``kernel_args(state)`` gives the packed arrays it takes
(bind them once per state: they are the arrays the public fields view); ``result_rows(state)`` a zeroed
int16[B, W] buffer for its result rows; ``result_from_rows(res, rules)`` the :class:`StepResult` of those rows (the
one StepResult builder, :func:`step` uses it too). For kernels outside the core: ``popcount(x)`` and
``lowbit(x)`` (numba intrinsics: the set bits of an integer, and the index of its lowest set bit, 64 for 0; int64;
numba code only) and ``check_numba_cache(*files)``, the one numba cache
guard (it covers every module of ``cassino_env``; pass the source file of a module elsewhere whose kernels call
into it, see :mod:`cassino_env.core._cacheguard`). Suit masks are :data:`cassino_env.cards.SUIT_MASK`.

Randomness
----------
No global RNG: deal k of match m of game b uses ``deck_for(seed[b], m, k)``, a Fisher-Yates shuffle driven by
splitmix64 over counters. The deck is dealt ``deck[:table_cards]`` to the table, then ``hand_size`` cards to each seat
from the dealer's left; the stock is the rest, front first (docs/rules.md 2.1, 2.3).
"""

from ._cacheguard import check_numba_cache

check_numba_cache()  # before any kernel loads: drop on-disk compiled kernels built from other sources

from ._api import (  # noqa: E402 - after the cache check on purpose
    BUILD,
    CAPTURE,
    ITEMS,
    TRAIL,
    ActionIndexError,
    State,
    StepResult,
    advance,
    blank,
    deck_for,
    from_position,
    init,
    items_of,
    kernel_args,
    legal_mask,
    move_list,
    position,
    random_actions,
    refresh_moves,
    result_from_rows,
    result_rows,
    rollout,
    step,
    step_kernel,
    tally,
    uses_classic_generator,
)
from ._bits import lowbit, popcount  # noqa: E402

__all__ = [
    "BUILD",
    "CAPTURE",
    "ITEMS",
    "TRAIL",
    "ActionIndexError",
    "State",
    "StepResult",
    "advance",
    "blank",
    "check_numba_cache",
    "deck_for",
    "from_position",
    "init",
    "kernel_args",
    "legal_mask",
    "move_list",
    "lowbit",
    "popcount",
    "position",
    "random_actions",
    "refresh_moves",
    "result_from_rows",
    "result_rows",
    "rollout",
    "step",
    "step_kernel",
    "tally",
    "items_of",
    "uses_classic_generator",
]
