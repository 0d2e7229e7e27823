"""Build the development proxy set (:mod:`train.proxy`): positions from real games, every move labelled by search.

Usage::

    python scripts/make_proxy.py                               # classic, 2 players, 2,400 positions (~20 min)
    python scripts/make_proxy.py --preset classic --num-players 4 --positions 600
    python scripts/make_proxy.py --positions 20 --simulations 64 --path /tmp/tiny.npz   # a quick check

The file goes outside the repository (default ``~/.cache/cassino-rl/proxy/<preset>-<P>p.npz``, or
``$CASSINO_PROXY_DIR``); the same seed gives the same positions. Score agents on it with ``cassino proxy``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import tyro


def make(preset: str = "classic", num_players: int | None = None, positions: int = 2400, simulations: int = 6000,
         seed: int = 20231, path: Path | None = None) -> int:
    """Collect and label a proxy set, then write it.

    Args:
        preset: rule preset of the games.
        num_players: seats (default the preset's).
        positions: decisions kept (each with more than one legal move).
        simulations: rollouts per decision of the labelling ``pimc`` (the last round of two seats is exact).
        seed: seed of the games, the draw of the positions and the labelling.
        path: the file to write (default ``~/.cache/cassino-rl/proxy/<preset>-<P>p.npz``).
    """
    from train.errors import bad_input
    from train.proxy import build

    t0 = time.time()
    with bad_input() as failed:
        out = build(preset, num_players, positions, seed, simulations, path)
    if failed.code:
        return failed.code
    print(f"wrote {out} ({positions} positions, {time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(tyro.cli(make))
