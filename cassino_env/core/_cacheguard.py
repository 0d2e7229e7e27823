"""The one guard that keeps numba's on-disk kernel cache consistent with the sources, for every module with kernels.

numba's ``cache=True`` re-compiles a function only when *its own* source file changes. A kernel that calls a
function of another module keeps the compiled copy of the callee it was built with, and the module-level constants
it read (card ids, layout columns, bit tables) are frozen into it. The package's kernels call across modules
everywhere: the core's drivers (``_kernels``) into the three move generators and ``_bits``; :mod:`cassino_env.obs`
and :mod:`cassino_env.actions` into the core's bit intrinsics; the AEC env's fused kernels into the core, obs and
actions; and outside the package, the scripted bots' kernels into the core's intrinsics. After an edit in any of
them a cached kernel could run stale code.

So :func:`check_numba_cache` hashes the sources and, when the hash differs from the one stamped next to a cache,
deletes that cache's compiled kernels (``*.nbi``, ``*.nbc``) so numba rebuilds them:

* ``check_numba_cache()`` — the ``cassino_env`` package: one hash over all of its ``.py`` sources (every module
  with kernels, and every module whose constants they may read, without a list to keep: a kernel module imports the
  package's ``__init__``, which imports most of the rest anyway). On a change the kernels cached in every
  ``__pycache__`` folder of the package are dropped. :mod:`cassino_env.core` calls it at import, before any kernel
  loads, and every module of the package with kernels imports the core first.
* ``check_numba_cache(path, ...)`` — also modules outside the package whose kernels call into it (for example
  ``agents/bots.py`` calls ``cassino_env.core.check_numba_cache(__file__)`` at import): each file's kernels
  (``__pycache__/<stem>.*.nbi``, ``*.nbc`` next to it) are dropped when the package's sources or the file changed.

Best effort: an unreadable source or an unwritable cache folder is left alone (numba then uses its own fallback).

**Compile notice.** Compiling the kernels takes a minute or two (on a 2-core machine) the first time they are used,
and after any change to the sources; later processes load them from the cache in about a second. So that this first
use is not a silent wait, :func:`check_numba_cache` also installs a numba event listener (once per process) that
prints one line on stderr when a kernel of the package, or of a module that passed its file, starts to compile —
:data:`COMPILE_NOTICE`, at most once per process. Kernels loaded from the cache print nothing.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: The ``cassino_env`` package folder.
PACKAGE = Path(__file__).resolve().parent.parent
#: Name of the stamp file (the hash the cached kernels were built from) in each cache folder.
STAMP = "numba_sources.sha256"
_PATTERNS = ("*.nbi", "*.nbc")
#: The line printed on stderr when the first kernel of a process starts to compile; ``{what}`` names its group.
COMPILE_NOTICE = ("cassino-rl: compiling {what} (first use: seconds to a few minutes by machine and load; "
                  "cached on disk after that) ...")
#: Module prefix -> what its kernels are, for :data:`COMPILE_NOTICE` (first match wins; others print nothing).
_KERNEL_GROUPS = {"cassino_env.core": "the rules kernels", "cassino_env": "the environment kernels"}
_notice_installed = False


def package_sources() -> list[Path]:
    """Every ``.py`` source of the ``cassino_env`` package, in a fixed order (relative path)."""
    return sorted(PACKAGE.rglob("*.py"), key=_key)


def _key(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def sources_hash(extra: Path | Sequence[Path] | None = None) -> str:
    """SHA-256 over :func:`package_sources` (relative path and bytes of each), then the bytes of ``extra`` (one file
    or several, in order) if given."""
    h = hashlib.sha256()
    for path in package_sources():
        h.update(_key(path).encode())
        h.update(path.read_bytes())
    for path in [] if extra is None else [extra] if isinstance(extra, Path) else extra:
        h.update(b"\0extra\0")
        h.update(path.read_bytes())
    return h.hexdigest()


def _refresh(cache: Path, digest: str, stamp_name: str, patterns: tuple[str, ...]) -> None:
    """Delete the files of ``cache`` matching ``patterns`` unless the stamp ``stamp_name`` there holds ``digest``;
    then write the stamp (creating ``cache`` if needed)."""
    try:
        stamp = cache / stamp_name
        if stamp.is_file() and stamp.read_text().strip() == digest:
            return
        if cache.is_dir():
            for pattern in patterns:
                for f in cache.glob(pattern):
                    f.unlink(missing_ok=True)
        cache.mkdir(exist_ok=True)
        stamp.write_text(digest + "\n")
    except OSError:
        pass


def check_numba_cache(*sources: str | os.PathLike[str], depends_on: Sequence[str | os.PathLike[str]] = ()) -> None:
    """Drop cached numba kernels built from other sources than the current ones (module docstring).

    Args:
        *sources: source files outside the package whose kernels call into it (e.g. ``__file__`` of
            ``agents/bots.py``). With none, only the package's own caches are checked.
        depends_on: other files outside the package whose kernels those of ``sources`` call (e.g.
            ``agents/bots.py`` for ``agents/lines.py``): a change to any of them drops the kernels of ``sources`` too.
    """
    _install_compile_notice(*sources)
    try:
        digest = sources_hash()
    except OSError:
        return
    for cache in sorted({p.parent / "__pycache__" for p in package_sources()}):
        _refresh(cache, digest, STAMP, _PATTERNS)
    for src in sources:
        path = Path(src).resolve()
        try:
            file_digest = sources_hash([path, *(Path(d).resolve() for d in depends_on)])
        except OSError:
            continue
        _refresh(path.parent / "__pycache__", file_digest, f"{path.stem}.{STAMP}",
                 tuple(f"{path.stem}.{p}" for p in _PATTERNS))


def _kernel_group(module: str) -> str | None:
    """What the kernels of ``module`` are called in :data:`COMPILE_NOTICE`, or None for another project's."""
    for prefix, what in _KERNEL_GROUPS.items():
        if module == prefix or module.startswith(prefix + "."):
            return what
    return None


def _install_compile_notice(*sources: str | os.PathLike[str]) -> None:
    """Register (once per process) the numba listener that prints :data:`COMPILE_NOTICE` when the first kernel of
    the package, or of a module among ``sources`` (e.g. ``agents/bots.py``: "the bots' kernels"), compiles."""
    global _notice_installed
    for src in sources:  # a module outside the package: its kernels are named after the file
        stem = Path(src).stem
        _KERNEL_GROUPS.setdefault(f"{Path(src).parent.name}.{stem}", f"the {stem} kernels")
    if _notice_installed:
        return
    try:
        from numba.core import event
    except ImportError:  # a numba without the event API: no notice, nothing else changes
        return

    class CompileNotice(event.Listener):
        printed = False

        def on_start(self, ev: Any) -> None:
            if CompileNotice.printed:
                return
            func = getattr((ev.data or {}).get("dispatcher"), "py_func", None)
            what = _kernel_group(getattr(func, "__module__", "") or "")
            if what is not None:
                CompileNotice.printed = True
                print(COMPILE_NOTICE.format(what=what), file=sys.stderr, flush=True)

        def on_end(self, ev: Any) -> None:
            pass

    event.register("numba:compile", CompileNotice())
    _notice_installed = True
