"""Golden playthroughs: one seeded deal per preset, played by the reference engine, must match tests/golden/*.txt.

``scripts/make_golden.py`` writes the files and says what each line holds. Here the text is regenerated in memory and
compared line for line; any change to dealing, move generation or its canonical order, applying moves, the residue
or scoring shows as a diff. If the change is intended, regenerate on purpose and review the diff:

    python scripts/make_golden.py            # rewrite tests/golden/*.txt
    python scripts/make_golden.py --check    # only show the diff
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "make_golden.py"
_spec = importlib.util.spec_from_file_location("make_golden", _SCRIPT)
assert _spec is not None and _spec.loader is not None
make_golden = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("make_golden", make_golden)
_spec.loader.exec_module(make_golden)

REGENERATE = ("If this change is intended, regenerate the golden files on purpose and review the diff:\n"
              "    python scripts/make_golden.py          (writes tests/golden/*.txt)\n"
              "    python scripts/make_golden.py --check  (shows the diff only)\n")


def test_one_golden_file_per_preset() -> None:
    """Every docs/rules.md section 6 preset has one golden deal, and tests/golden holds no stale file."""
    presets = [preset for preset, _, _ in make_golden.GOLDEN]
    assert sorted(presets) == sorted(["classic", "matsuda", "cicera", "bga", "stadium", "royal"])
    on_disk = sorted(p.stem for p in make_golden.GOLDEN_DIR.glob("*.txt"))
    assert on_disk == sorted(presets), f"tests/golden holds {on_disk}, make_golden.GOLDEN lists {presets}"


@pytest.mark.parametrize(("preset", "num_players", "seed"), make_golden.GOLDEN,
                         ids=[f"{p}-{n}p-seed{s}" for p, n, s in make_golden.GOLDEN])
def test_golden_playthrough(preset: str, num_players: int, seed: int) -> None:
    path = make_golden.golden_path(preset)
    assert path.exists(), f"{path} is missing.\n{REGENERATE}"
    have = path.read_text(encoding="utf-8")
    want = make_golden.playthrough(preset, num_players, seed)
    if want != have:
        pytest.fail(f"the {preset} golden playthrough changed (seed {seed}, {num_players} players); "
                    f"diff from the file to the regenerated text:\n{make_golden.diff(preset, want, have)}\n"
                    f"{REGENERATE}", pytrace=False)


def test_playthrough_is_deterministic() -> None:
    """The same arguments give the same text twice in one process (no set order or global state leaks in)."""
    preset, num_players, seed = make_golden.GOLDEN[0]
    assert make_golden.playthrough(preset, num_players, seed) == make_golden.playthrough(preset, num_players, seed)
