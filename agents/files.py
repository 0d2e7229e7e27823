"""Writing output files safely: atomically where the target is a regular file, directly where it is a stream.

Every file the project writes (checkpoints, run configs, game records, evaluation reports, plots) goes through
:func:`write_target`, which decides how the name given is written:

====================================  ==========================================================================
the name given is                     written
====================================  ==========================================================================
absent, or a regular file             atomically (:func:`atomic_write`): a temporary file in the same folder,
                                      flushed and synced, renamed over the name; a replaced file keeps its mode
a symbolic link                       its final target, by the rule for that target: the link stays a link
a character device or a FIFO          directly, as a stream (``/dev/null``, ``/dev/stdout``, a named pipe): a
                                      rename would replace the device node or the pipe by a regular file
a folder, a block device, a socket,   refused with :class:`OutputPathError` (a ``ValueError`` and an ``OSError``)
a link that loops
====================================  ==========================================================================

>>> import tempfile
>>> folder = Path(tempfile.mkdtemp())
>>> os.symlink("real.txt", folder / "link.txt")
>>> _ = atomic_write(folder / "link.txt", lambda f: f.write(b"hello"))
>>> (folder / "link.txt").is_symlink(), (folder / "real.txt").read_bytes()
(True, b'hello')
>>> write_target("/dev/null")
(PosixPath('/dev/null'), False)
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any


class OutputPathError(OSError, ValueError):
    """An output name that cannot be written: a folder, a block device, a socket, a symbolic link that loops.

    Both an ``OSError`` (what writing a file raises) and a ``ValueError`` (the project's bad-input error)."""

    def __str__(self) -> str:
        return str(self.strerror) if self.strerror else super().__str__()


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file, a character device or a FIFO"


def write_target(path: str | Path) -> tuple[Path, bool]:
    """How ``path`` is written (table in the module docstring): ``(the file to open, atomically)``.

    ``atomically`` is True for a regular file or a name that does not exist yet (then the file to open is that
    name, or a symbolic link's final target), False for a character device or a FIFO (written in place).

    Raises:
        OutputPathError: ``path`` is a folder, a block device, a socket or a link that loops (naming it).
        OSError: ``path`` cannot be looked at (a name too long, a parent that is a file, no permission).
    """
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return path, True
    if stat.S_ISLNK(st.st_mode):
        try:
            st = os.stat(path)  # follows the whole chain
        except FileNotFoundError:  # a dangling link: its target gets created
            return Path(os.path.realpath(path)), True
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise OutputPathError(exc.errno, f"{path}: a symbolic link that loops") from None
            raise
        path = Path(os.path.realpath(path))
    if stat.S_ISREG(st.st_mode):
        return path, True
    if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        return path, False
    raise OutputPathError(errno.EISDIR if stat.S_ISDIR(st.st_mode) else errno.EINVAL,
                          f"{path}: {_kind(st.st_mode)}, not a file that can be written")


def atomic_write(path: str | Path, write: Callable[[IO[bytes]], Any]) -> Path:
    """Write a file by :func:`write_target`'s rule: ``write(f)`` fills a binary file.

    For a regular file (or a new name) ``f`` is a temporary file in the target's folder, which is flushed and synced
    to disk (``os.fsync``) and then renamed over the target (``os.replace``, atomic on POSIX and Windows); the folder
    is synced too, so the rename survives a crash. If anything fails, or the process is interrupted, before the
    rename, the target keeps its old content (or stays absent) and the temporary file is removed. A new file gets the
    usual permissions (0o666 less the umask), a replaced one keeps its mode. A symbolic link stays a link (its target
    is written); a character device or a FIFO is written directly.

    Returns:
        The path given.

    Raises:
        OutputPathError: a target that cannot be written (see :func:`write_target`).
        OSError: the file cannot be written (a full disk, no permission).
    """
    given = Path(path)
    target, atomic = write_target(given)
    if not atomic:
        with open(target, "wb") as f:
            write(f)
        return given
    if target == given:  # folders are made for the name given, not for where a link points
        target.parent.mkdir(parents=True, exist_ok=True)
    try:
        old_mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        old_mode = None
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name[:200]}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            if old_mode is None:
                umask = os.umask(0)
                os.umask(umask)
                old_mode = 0o666 & ~umask
            with contextlib.suppress(OSError, AttributeError):  # no fchmod on Windows
                os.fchmod(f.fileno(), old_mode)
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError, AttributeError):  # a folder cannot be opened (and need not be synced) on Windows
        dir_fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return given


def atomic_write_text(path: str | Path, text: str) -> Path:
    """:func:`atomic_write` of ``text`` in UTF-8. Returns the path given."""
    data = text.encode("utf-8")
    return atomic_write(path, lambda f: f.write(data))


def atomic_copy(src: str | Path, dst: str | Path) -> Path:
    """Copy ``src`` to ``dst`` by :func:`atomic_write`'s rule: ``dst`` is the old file or a whole copy, never part
    of one. Returns ``dst``."""
    with open(src, "rb") as source:
        return atomic_write(dst, lambda f: shutil.copyfileobj(source, f, 1 << 20))
