"""Text rendering of one game of a core state: the table, builds with their owners, the viewer's hand and scores.

Cards are written with suit symbols (``10♦``, ``A♠``). Only what the viewer may see is drawn: the viewer's own hand,
the other hands as sizes, the stock as its size. Builds show their declared value (up to 14 where ``ace_high``); a
``values:`` line says how courts and aces count where that differs from classic (numeric courts J 11, Q 12, K 13; an
ace capturing as 14), and presets with in-play points (Cicera, docs/rules.md 5.3) get an ``in-play`` column.

>>> import numpy as np
>>> from cassino_env import core
>>> from cassino_env.rules import make_rules
>>> st = core.from_position(make_rules("classic"), hands=[[7, 20], [1]], loose=[2, 17], builds=[([3, 4], 9, 1)],
...                         captured=[[40], []], to_move=0)
>>> print(render_text(st, viewer=0))  # doctest: +NORMALIZE_WHITESPACE
classic, 2 players | match 1, deal 1 | stock 0
dealer: player_1    to move: player_0
table:  3♣ 5♦
builds: 9 = 4♣ 5♣ (player_1)
hand:   player_0: 8♣ 8♦
seat      hand  captured  spades  sweeps
player_0     2         1       1       0
player_1     1         0       0       0
score:  player_0 0 · player_1 0 (target 21)
"""

from __future__ import annotations

from collections.abc import Sequence

from .cards import NUM_CARDS, RANKS

SUIT_SYMBOLS = "♣♦♥♠"


def pretty_card(card: int) -> str:
    """Card text with a suit symbol, e.g. ``pretty_card(22) == '10♦'``."""
    c = int(card)
    return RANKS[c % 13] + SUIT_SYMBOLS[c // 13]


def pretty_cards(cards) -> str:
    """Space-separated pretty card texts of a uint64 card-set mask or a sequence of ids, by card id."""
    if not isinstance(cards, (list, tuple)):
        m = int(cards)
        cards = [c for c in range(NUM_CARDS) if m >> c & 1]
    return " ".join(pretty_card(c) for c in sorted(cards))


def values_note(rules) -> str | None:
    """How courts and aces count under ``rules`` (docs/rules.md 1, 3), or None for classic values (A 1, courts pair)."""
    parts = []
    if rules.court_values == "numeric":
        parts.append("J 11 · Q 12 · K 13")
    if rules.ace_high:
        parts.append("A 1, or 14 when it captures")
    return " · ".join(parts) or None


def render_text(state, b: int = 0, viewer: int | None = None, names: Sequence[str] | None = None,
                last_move: str | None = None, title: str | None = None) -> str:
    """Game ``b`` of a :class:`cassino_env.core.State` as text (see the module docstring for an example).

    Args:
        state: a core state.
        b: the game to draw.
        viewer: seat whose hand is shown (default: the seat to move; none when the deal is over).
        names: seat names (default ``player_0`` ...).
        last_move: text of the last move, shown under the header when given.
        title: a first line (e.g. the env name), omitted when None.

    Returns:
        Lines joined by ``\\n``, no trailing newline.
    """
    rules = state.rules
    P, S = rules.num_players, rules.num_sides
    names = list(names) if names is not None else [f"player_{p}" for p in range(P)]
    cur = int(state.current_player[b])
    if viewer is None:
        viewer = cur if cur >= 0 else None
    stock = 52 - int(state.stock_pos[b])
    lines = [] if title is None else [title]
    lines.append(f"{rules.preset}, {P} players | match {int(state.match_index[b]) + 1}, "
                 f"deal {int(state.deal_index[b]) + 1} | stock {stock}")
    to_move = names[cur] if cur >= 0 else "nobody (deal over)"
    lines.append(f"dealer: {names[int(state.dealer[b])]}    to move: {to_move}")
    note = values_note(rules)
    if note:
        lines.append(f"values: {note}")
    if last_move:
        lines.append(f"last:   {last_move}")
    loose = int(state.loose[b])
    lines.append(f"table:  {pretty_cards(loose) if loose else '(no loose cards)'}")
    builds = []
    for k in range(state.build_cards.shape[1]):
        cards = int(state.build_cards[b, k])
        if cards:
            value = int(state.build_value[b, k])
            builds.append(f"{value} = {pretty_cards(cards)} ({names[int(state.build_owner[b, k])]})")
    lines.append("builds: " + (" · ".join(builds) if builds else "(none)"))
    if viewer is not None:
        hand = int(state.hand[b, viewer])
        lines.append(f"hand:   {names[viewer]}: {pretty_cards(hand) if hand else '(empty)'}")
    width = max(len(n) for n in names)
    in_play = rules.in_play_bonuses
    lines.append(f"{'seat':<{width}}  hand  captured  spades  sweeps" + ("  in-play" if in_play else ""))
    for p in range(P):
        pile = int(state.captured[b, p])
        spades = sum(1 for c in range(39, 52) if pile >> c & 1)
        lines.append(f"{names[p]:<{width}}  {int(state.hand[b, p]).bit_count():>4}  {pile.bit_count():>8}  "
                     f"{spades:>6}  {int(state.sweeps[b, p]):>6}"
                     + (f"  {int(state.in_play[b, p]):>7}" if in_play else ""))
    sides = ["+".join(names[q] for q in range(s, P, S)) for s in range(S)]
    scores = " · ".join(f"{sides[s]} {int(state.match_scores[b, s])}" for s in range(S))
    lines.append(f"score:  {scores} (target {rules.target})")
    return "\n".join(lines)


__all__ = ["SUIT_SYMBOLS", "pretty_card", "pretty_cards", "render_text", "values_note"]
