"""Golden playthroughs: one full deal per preset, played by the reference engine, written as text.

Each file ``tests/golden/<preset>.txt`` records one deal from a fixed seed: the deck, then one line per move (move
number, seat, the hand before the move, the table with every build's value and owner, how many moves were legal,
which was picked, and the move), then the captured piles and the deal's tally (``score_deal``). The moves are picked
by ``random.Random(seed).randrange(len(legal))`` among the reference engine's ``legal_moves()`` in canonical order,
so any change to move generation, move order, dealing, the residue or scoring shows up as a diff.

``tests/test_golden.py`` regenerates the text in memory and compares. Regenerate the files only on purpose, after a
rules change you mean (and review the diff):

    python scripts/make_golden.py            # rewrite tests/golden/*.txt
    python scripts/make_golden.py --check    # diff against the files; exit 1 if any differs

The deck is ``cassino_env.core.deck_for(seed, 0, 0)`` (match 0, deal 0: what the batched core deals for that seed)
when the core is importable, else ``random.Random(seed).sample(range(52), 52)``; the file's ``deck:`` line says which.
The dealer is ``num_players - 1``, a match's first dealer.
"""

from __future__ import annotations

import argparse
import difflib
import random
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(REPO_ROOT))

from cassino_env.cards import card_text  # noqa: E402
from cassino_env.reference import Build, Game  # noqa: E402
from cassino_env.rules import make_rules  # noqa: E402

GOLDEN_DIR = REPO_ROOT / "tests" / "golden"

#: (preset, num_players, seed): one golden deal each; the file is tests/golden/<preset>.txt. The seeds were picked
#: among 1..119 for deals that exercise much: several builds and a sweep, an ace captured as 14 (bga, royal),
#: in-play points (cicera).
GOLDEN: tuple[tuple[str, int, int], ...] = (
    ("classic", 2, 81),
    ("matsuda", 2, 43),
    ("cicera", 4, 103),
    ("bga", 2, 30),
    ("stadium", 2, 115),
    ("royal", 2, 102),
)


def deck_and_source(seed: int) -> tuple[list[int], str]:
    """The deal's deck and a line naming where it came from (see the module docstring)."""
    try:
        from cassino_env.core import deck_for
    except ImportError:
        return random.Random(seed).sample(range(52), 52), f"random.Random({seed}).sample(range(52), 52)"
    return [int(c) for c in deck_for(seed, 0, 0)], f"cassino_env.core.deck_for({seed}, 0, 0)"


def _cards(cards: Iterable[int]) -> str:
    """Card texts sorted by card id, or ``-`` for none."""
    return " ".join(card_text(c) for c in sorted(cards)) or "-"


def _builds(builds: Sequence[Build]) -> str:
    """Builds as ``[cards]=value@Pseat``, ordered by their sorted card ids, or ``-``."""
    shown = sorted(builds, key=lambda b: sorted(b.cards))
    return " ".join(f"[{'+'.join(card_text(c) for c in sorted(b.cards))}]={b.value}@P{b.owner}" for b in shown) or "-"


def playthrough(preset: str, num_players: int, seed: int) -> str:
    """The golden text of one deal of ``preset`` for ``num_players`` from ``seed`` (deterministic)."""
    rules = make_rules(preset, num_players)
    deck, source = deck_and_source(seed)
    dealer = num_players - 1
    game = Game.new_deal(rules, deck, dealer)
    pick = random.Random(seed)
    lines = [
        f"# Golden playthrough: preset {preset}, {num_players} players, seed {seed}; one deal, reference engine.",
        "# Regenerate only on purpose: python scripts/make_golden.py (diff only: --check).",
        "# Per move: number, seat, hand before the move, loose table cards, builds [cards]=value@Pseat,",
        f"# legal = len(legal_moves()), pick = random.Random({seed}).randrange(legal), then the move.",
        f"rules: {preset}, {num_players} players",
        f"deck: {source}",
        f"deck cards: {' '.join(card_text(c) for c in deck)}",
        f"dealer: P{dealer}",
        f"deal: table {_cards(game.loose)}; " + "; ".join(f"P{s} {_cards(h)}" for s, h in enumerate(game.hands)),
    ]
    number, stock_left = 0, len(game.stock)
    while not game.is_deal_over():
        if len(game.stock) != stock_left:
            stock_left = len(game.stock)
            lines.append(f"-- next round dealt ({stock_left} cards left in the stock): "
                         + "; ".join(f"P{s} {_cards(h)}" for s, h in enumerate(game.hands)))
        number += 1
        seat = game.to_move
        moves = game.legal_moves()
        index = pick.randrange(len(moves))
        move = moves[index]
        lines.append(f"{number:03d} P{seat} hand {_cards(game.hands[seat])} | loose {_cards(game.loose)} | "
                     f"builds {_builds(game.builds)} | legal {len(moves)} pick {index} | {move}")
        game.apply(move)
    lines.append(f"end: table left {_cards(game.loose)}, builds {_builds(game.builds)}; "
                 f"last capturer {'-' if game.last_capturer is None else f'P{game.last_capturer}'}")
    for s in range(num_players):
        lines.append(f"P{s} captured {len(game.captured[s])}: {_cards(game.captured[s])}; sweeps {game.sweeps[s]}, "
                     f"in-play points {game.bonus_points[s]}")
    tally = game.score_deal()
    for side, items, total in zip(tally["sides"], tally["items"], tally["totals"], strict=True):
        seats = "+".join(f"P{s}" for s in side)
        lines.append(f"tally {seats}: " + ", ".join(f"{k} {v}" for k, v in items.items()) + f"; total {total}")
    return "\n".join(lines) + "\n"


def golden_path(preset: str) -> Path:
    """Path of the golden file of ``preset``."""
    return GOLDEN_DIR / f"{preset}.txt"


def diff(preset: str, want: str, have: str) -> str:
    """A unified diff from the file's text ``have`` to the regenerated text ``want``."""
    path = golden_path(preset).relative_to(REPO_ROOT)
    return "".join(difflib.unified_diff(have.splitlines(keepends=True), want.splitlines(keepends=True),
                                        fromfile=f"{path} (file)", tofile=f"{path} (regenerated)"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="diff against tests/golden/*.txt instead of writing")
    args = parser.parse_args(argv)
    differs = 0
    for preset, num_players, seed in GOLDEN:
        text = playthrough(preset, num_players, seed)
        path = golden_path(preset)
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        if args.check:
            if old != text:
                differs += 1
                sys.stdout.write(diff(preset, text, old) or f"{path}: missing\n")
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if old != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(REPO_ROOT)}")
    if args.check:
        print(f"{differs} of {len(GOLDEN)} golden files differ" if differs else "golden files are up to date")
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main())
