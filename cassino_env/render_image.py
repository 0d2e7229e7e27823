"""Image rendering of one game of a core state: the environments' ``render_mode="rgb_array"``.

:func:`render_rgb` draws what :func:`cassino_env.render.render_text` writes, as a picture: a green table with the loose
cards and the builds (value and owner above each), the viewer's hand face up, every other hand as face-down cards,
and the header and score lines as text. Only what the viewer may see is drawn. The image is always
:data:`HEIGHT` x :data:`WIDTH` (a video needs frames of one size: Gymnasium's ``RecordVideo``), uint8 RGB; what does
not fit (a table of more than 34 loose cards) is cut at the edge.

Drawing uses Pillow (installed with matplotlib, a dependency) and the DejaVu Sans font that matplotlib ships (suit
symbols included); both are imported on the first call only.

>>> from cassino_env import core
>>> from cassino_env.rules import make_rules
>>> st = core.from_position(make_rules("classic"), hands=[[7, 20], [1]], loose=[2, 17], builds=[([3, 4], 9, 1)],
...                         captured=[[40], []], to_move=0)
>>> img = render_rgb(st, viewer=0)
>>> img.shape, img.dtype.name
((480, 720, 3), 'uint8')
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from .cards import NUM_CARDS, RANKS
from .render import SUIT_SYMBOLS

#: Image height and width in pixels.
HEIGHT, WIDTH = 480, 720
_FELT, _TEXT, _CARD, _BACK, _RED, _BLACK = "#1d6b41", "#f4f1e6", "#fbfaf5", "#2b4c8c", "#c0262d", "#1a1a1a"
_CW, _CH, _GAP = 36, 52, 4  # card width, height, gap


@functools.lru_cache(maxsize=4)
def _font(size: int, bold: bool = False):
    import matplotlib
    from PIL import ImageFont

    name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
    return ImageFont.truetype(f"{matplotlib.get_data_path()}/fonts/ttf/{name}", size)


def _cards(mask: int) -> list[int]:
    return [c for c in range(NUM_CARDS) if mask >> c & 1]


def _card(draw, x: int, y: int, card: int | None) -> None:
    """One card at (x, y): face up (rank over suit, red for diamonds and hearts) or, ``card`` None, face down."""
    box = (x, y, x + _CW, y + _CH)
    if card is None:
        draw.rounded_rectangle(box, radius=4, fill=_BACK, outline=_CARD, width=2)
        return
    draw.rounded_rectangle(box, radius=4, fill=_CARD, outline="#777777")
    colour = _RED if card // 13 in (1, 2) else _BLACK
    draw.text((x + _CW // 2, y + 15), RANKS[card % 13], fill=colour, font=_font(16, bold=True), anchor="mm")
    draw.text((x + _CW // 2, y + 37), SUIT_SYMBOLS[card // 13], fill=colour, font=_font(18), anchor="mm")


def _row(draw, x: int, y: int, cards: Sequence[int | None], right: int = WIDTH - 12) -> int:
    """Cards left to right from (x, y), wrapping at ``right``; returns the y below the last row."""
    x0 = x
    for c in cards:
        if x + _CW > right:
            x, y = x0, y + _CH + _GAP
        _card(draw, x, y, c)
        x += _CW + _GAP
    return y + _CH


def render_rgb(state, b: int = 0, viewer: int | None = None, names: Sequence[str] | None = None,
               last_move: str | None = None, title: str | None = None) -> np.ndarray:
    """Game ``b`` of a :class:`cassino_env.core.State` as an image: uint8[HEIGHT, WIDTH, 3], RGB.

    The arguments are those of :func:`cassino_env.render.render_text`: ``viewer`` is the seat whose hand is shown
    face up (default the seat to move; none once the deal is over), ``names`` the seat names, ``last_move`` and
    ``title`` optional header lines.
    """
    from PIL import Image, ImageDraw

    rules = state.rules
    P, S = rules.num_players, rules.num_sides
    names = list(names) if names is not None else [f"player_{p}" for p in range(P)]
    cur = int(state.current_player[b])
    if viewer is None:
        viewer = cur if cur >= 0 else None
    img = Image.new("RGB", (WIDTH, HEIGHT), _FELT)
    draw = ImageDraw.Draw(img)
    small, label = _font(13), _font(14, bold=True)
    header = [] if title is None else [title]
    header.append(f"{rules.preset}, {P} players · match {int(state.match_index[b]) + 1}, deal "
                  f"{int(state.deal_index[b]) + 1} · stock {52 - int(state.stock_pos[b])} · dealer "
                  f"{names[int(state.dealer[b])]} · to move: {names[cur] if cur >= 0 else 'nobody (deal over)'}")
    if last_move:
        header.append(f"last: {last_move}")
    y = 8
    for line in header:
        draw.text((12, y), line, fill=_TEXT, font=small)
        y += 18
    # the other seats: face-down hands, one line each (up to five cards drawn, then the count)
    y += 4
    for p in range(P):
        if p == viewer:
            continue
        n = int(state.hand[b, p]).bit_count()
        draw.text((12, y + 2), f"{names[p]}: {n} in hand", fill=_TEXT, font=small)
        for k in range(min(n, 12)):
            draw.rounded_rectangle((180 + 12 * k, y, 180 + 12 * k + 16, y + 20), radius=2, fill=_BACK,
                                   outline=_CARD)
        y += 24
    # the table: loose cards, then the builds with their value and owner
    y += 6
    draw.text((12, y), "table", fill=_TEXT, font=label)
    loose = _cards(int(state.loose[b]))
    y = _row(draw, 80, y, loose) if loose else y + 20
    x, by = 80, y + _GAP + 16
    for k in range(state.build_cards.shape[1]):
        cards = _cards(int(state.build_cards[b, k]))
        if not cards:
            continue
        width = len(cards) * (_CW + _GAP)
        if x + width > WIDTH - 12 and x > 80:
            x, by = 80, by + _CH + 22
        draw.text((x, by - 16), f"build {int(state.build_value[b, k])} ({names[int(state.build_owner[b, k])]})",
                  fill=_TEXT, font=small)
        _row(draw, x, by, cards)
        x += width + 14
    y = max(y, by + _CH if x > 80 else y) + 10
    if x > 80:
        draw.text((12, by), "builds", fill=_TEXT, font=label)
    # the viewer's hand, face up
    if viewer is not None:
        draw.text((12, y), "hand", fill=_TEXT, font=label)
        draw.text((12, y + 18), names[viewer], fill=_TEXT, font=small)
        hand = _cards(int(state.hand[b, viewer]))
        y = _row(draw, 80, y, hand) + 10 if hand else y + 40
    # the score lines at the bottom
    lines = [f"{names[p]}: captured {int(state.captured[b, p]).bit_count()}, sweeps {int(state.sweeps[b, p])}"
             for p in range(P)]
    sides = ["+".join(names[q] for q in range(s, P, S)) for s in range(S)]
    lines.append("score: " + " · ".join(f"{sides[s]} {int(state.match_scores[b, s])}" for s in range(S))
                 + f" (target {rules.target})")
    y = max(y, HEIGHT - 8 - 17 * len(lines))
    for line in lines:
        draw.text((12, y), line, fill=_TEXT, font=small)
        y += 17
    return np.asarray(img, dtype=np.uint8).copy()


__all__ = ["HEIGHT", "WIDTH", "render_rgb"]
