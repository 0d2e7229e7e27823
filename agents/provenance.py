"""Where a checkpoint came from: the ``provenance`` entry every checkpoint carries (:mod:`agents.ppo_agent`).

A provenance is a flat mapping of plain values (strings, numbers, bools, ``None``) so that a checkpoint still loads
with ``weights_only=True``. :func:`make_provenance` fills the fields every writer knows; a trainer adds its own
(``seed``, ``stage``, ``wall_s``). ``cassino eval --provenance`` prints it (:func:`describe`).

================  ==================================================================================================
field             meaning
================  ==================================================================================================
``command``       the command line that made the file (``sys.argv`` shell-quoted, the program by its file name)
``commit``        the project's git commit when the code ran from a git checkout, else ``None``
``dirty``         True when that checkout had uncommitted changes to tracked files, ``None`` when unknown
``version``       the installed package's version (``cassino-rl``), ``None`` when not installed
``saved_at``      when the file was written, UTC, ISO 8601 to the second
``seed``          the run's seed (trainers)
``stage``         the trainer's stage that made the network (:mod:`train.recipe`: ``ppo``, ``last_round``, ...)
``wall_s``        seconds of the run's wall clock when the network was made (trainers)
``device``        the torch device the network trained on, ``cpu`` or ``cuda:0`` (trainers; the file's tensors are
                  on the CPU whatever it was); a run resumed on another device names each in turn,
                  ``cuda:0, then cpu`` (:func:`devices_in_turn`)
``preset``        the rule preset the network was trained at, e.g. ``classic`` (``cassino train``'s best network)
``num_players``   the seats of its games (``cassino train``'s best network)
``stage_index``   the stage's position in the run (``cassino train``: 0 for the first ``ppo``)
``hours``         the run's budget in hours (``cassino train``)
``recipe``        the trainer that made it (``cassino train``: ``"cassino train (train/recipe.py)"``)
================  ==================================================================================================
"""

from __future__ import annotations

import datetime
import functools
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

#: The project's root folder (a git checkout when installed editable).
_ROOT = Path(__file__).resolve().parent.parent
#: The longest string a provenance field may hold, in characters (a command line is cut to it).
MAX_TEXT = 4000
#: The most fields a provenance may hold.
MAX_FIELDS = 64


@functools.lru_cache(maxsize=1)
def code_commit() -> tuple[str | None, bool | None]:
    """``(commit, dirty)`` of the git checkout this code runs from, or ``(None, None)`` when it is not one (an
    installed wheel) or git is missing; asked once a process."""
    try:
        head = subprocess.run(["git", "-C", str(_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=False)
        if head.returncode != 0:
            return None, None
        status = subprocess.run(["git", "-C", str(_ROOT), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10, check=False)
        dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
        return head.stdout.strip() or None, dirty
    except (OSError, subprocess.SubprocessError):
        return None, None


def _version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("cassino-rl")
    except metadata.PackageNotFoundError:
        return None


def make_provenance(**fields: Any) -> dict[str, Any]:
    """A provenance with the common fields (module docstring) and ``fields`` added (they win).

    >>> p = make_provenance(seed=3, stage="ppo")
    >>> p["seed"], p["stage"], sorted(p)[:3]
    (3, 'ppo', ['command', 'commit', 'dirty'])
    """
    commit, dirty = code_commit()
    argv = [Path(sys.argv[0]).name, *sys.argv[1:]] if sys.argv and sys.argv[0] else []  # cassino, not its full path
    command = shlex.join(argv) if argv else None
    out: dict[str, Any] = {
        "command": None if command is None else command[:MAX_TEXT],
        "commit": commit,
        "dirty": dirty,
        "version": _version(),
        "saved_at": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    out.update(fields)
    check_provenance(out)
    return out


#: How :func:`devices_in_turn` joins the devices of a run's parts; MAX_DEVICES: the most it names (the first, then
#: the latest ones).
DEVICE_JOIN = ", then "
MAX_DEVICES = 8


def devices_in_turn(before: Any, now: str) -> str:
    """The ``device`` field of a checkpoint of a run now training on ``now``, whose earlier parts trained on
    ``before`` (the resumed checkpoint's ``device`` field; None, empty or not text: unknown, a fresh run): ``now``
    alone, ``before`` itself when its last device is ``now``, else ``before`` and ``now`` in turn. Past
    :data:`MAX_DEVICES` devices the first is kept and the middle ones are dropped (``...``).

    >>> devices_in_turn(None, "cpu"), devices_in_turn("cpu", "cpu"), devices_in_turn("cuda:0", "cpu")
    ('cpu', 'cpu', 'cuda:0, then cpu')
    >>> devices_in_turn("cuda:0, then cpu", "cuda:0")
    'cuda:0, then cpu, then cuda:0'
    """
    if not isinstance(before, str) or not before.strip():
        return now
    parts = [part.strip() for part in before.split(DEVICE_JOIN)]
    if parts[-1] == now:
        return before
    parts.append(now)
    if len(parts) > MAX_DEVICES:
        parts = [parts[0], "...", *parts[-(MAX_DEVICES - 2):]]
    return DEVICE_JOIN.join(parts)


def check_provenance(value: Any, where: str = "provenance") -> None:
    """Refuse a provenance that is not a flat mapping of plain values.

    Raises:
        ValueError: naming ``where`` and the field (:class:`agents.ppo_agent.CheckpointError` wraps it).
    """
    if not isinstance(value, dict):
        raise ValueError(f"{where}: must be a mapping, got {type(value).__name__}")
    if len(value) > MAX_FIELDS:
        raise ValueError(f"{where}: {len(value)} fields, at most {MAX_FIELDS}")
    for key, item in value.items():
        if not isinstance(key, str) or not key or len(key) > 64:
            raise ValueError(f"{where}: a field name must be a short string, got {key!r:.80}")
        if item is not None and not isinstance(item, (str, int, float, bool)):
            raise ValueError(f"{where}.{key}: must be a string, number, bool or null, got {type(item).__name__}")
        if isinstance(item, str) and len(item) > MAX_TEXT:
            raise ValueError(f"{where}.{key}: {len(item)} characters, at most {MAX_TEXT}")


def describe(value: dict[str, Any] | None) -> str:
    """One line saying where a network came from (``cassino eval --provenance``); ``"no record"`` for None.

    >>> describe({"command": "cassino train", "commit": "0123456789abcdef", "dirty": False, "seed": 1,
    ...           "stage": "ppo", "wall_s": 600.0, "saved_at": "2026-12-06T08:00:00Z"})
    'stage ppo, seed 1, 10.0 min of the run, commit 0123456789ab, saved 2026-12-06T08:00:00Z, command: cassino train'
    >>> describe({"preset": "classic", "num_players": 3, "stage": "ppo", "seed": 1, "device": "cpu"})
    'classic at 3 seats, stage ppo, seed 1, trained on cpu'
    """
    if not value:
        return "no record (made before checkpoints recorded their provenance)"
    # a record is the file author's text: shown one line, control characters escaped (no terminal codes pass)
    value = {k: (v if not isinstance(v, str) or v.isprintable() else repr(v)) for k, v in value.items()}
    parts = []
    if value.get("preset") is not None:  # what the network plays: cassino train's best network says it
        seats = value.get("num_players")
        parts.append(f"{value['preset']}" + (f" at {seats} seats" if seats is not None else ""))
    if value.get("stage") is not None:
        parts.append(f"stage {value['stage']}")
    if value.get("seed") is not None:
        parts.append(f"seed {value['seed']}")
    if isinstance(value.get("wall_s"), (int, float)):
        parts.append(f"{value['wall_s'] / 60:.1f} min of the run")
    if value.get("device"):
        parts.append(f"trained on {value['device']}")
    if value.get("commit"):
        parts.append(f"commit {str(value['commit'])[:12]}" + (" (with uncommitted changes)" if value.get("dirty")
                                                              else ""))
    if value.get("saved_at"):
        parts.append(f"saved {value['saved_at']}")
    if value.get("command"):
        parts.append(f"command: {value['command']}")
    return ", ".join(parts) or "an empty record"
