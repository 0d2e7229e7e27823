"""Keep numba's on-disk cache of the core consistent with its sources.

numba's ``cache=True`` re-compiles a function only when *its own* source file changes; a kernel in one module that
calls a function of another keeps the compiled copy of the callee it was built with. The core's kernels call
across ``_bits``, ``_crowded_gen``, ``_classic_gen``, ``_general_gen`` and ``_kernels``, so after any edit the cached
kernels could run stale code. This guard hashes the sources of the core at import and, when the hash differs from
the one stamped next to the cache, deletes the core's cached kernels (``__pycache__/*.nbi``, ``*.nbc``) so they are rebuilt. Best effort:
an unwritable cache folder is left alone (numba then uses its own fallback location).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_STAMP = "core_sources.sha256"


def sources_hash() -> str:
    """SHA-256 over the core package's Python sources, in name order."""
    h = hashlib.sha256()
    for path in sorted(_HERE.glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def refresh_cache(cache: Path, digest: str, stamp_name: str, patterns: tuple[str, ...]) -> None:
    """Delete the files of ``cache`` matching ``patterns`` unless the stamp file ``stamp_name`` there holds
    ``digest``; then write the stamp. Best effort: an unwritable folder is left alone."""
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


def check_numba_cache() -> None:
    """Delete the core's numba cache files if they were built from other sources than the current ones."""
    try:
        digest = sources_hash()
    except OSError:
        return
    refresh_cache(_HERE / "__pycache__", digest, _STAMP, ("*.nbi", "*.nbc"))
