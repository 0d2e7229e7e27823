"""How a training run stops: the errors that end it, and the guard every trainer's loop runs under.

A run (:class:`train.run.Run`: self-play PPO's :class:`train.run.TrainingRun`, expert iteration's
:class:`train.expert.loop.ExitRun`) stops for one of three reasons, each an exception whose message says what is
saved and how to go on: :class:`RunInterrupted` (Ctrl-C; ``cassino train`` exits with 130), :class:`Diverged` (a loss
that is not a finite number) and :class:`RunStopped` (a file that cannot be written; exit 1). :func:`guard` turns
Ctrl-C, a divergence and a disk error into these, and :func:`stop_if_interrupted` stops a run between two iterations
after the first Ctrl-C, saved. The functions read the run only through :class:`train.run.Run`'s attributes and
methods (``interrupt_requested``, ``position()``, ``checkpoint(name)``, ``saved_so_far()``, ``abandon()``, ...), so
this module imports nothing of ``train.run`` (which imports it).
"""

from __future__ import annotations

import contextlib
import errno
import signal
import threading
from collections.abc import Iterator
from typing import Any


class RunStopped(RuntimeError):
    """A run that cannot go on (its losses are no longer finite, a checkpoint cannot be written): the message names
    the step and the last checkpoint written whole, which is left intact (``cassino train`` prints it as one
    ``error:`` line and exits with 1)."""


class Diverged(RunStopped):
    """The PPO update met a loss or a gradient that is not a finite number; no weights of it were applied."""


class RunInterrupted(RunStopped):
    """Ctrl-C (SIGINT): the message says what is saved and how to resume (``cassino train`` prints it as one line and
    exits with 130)."""


def stop_if_interrupted(run: Any, name: str) -> None:
    """Between two iterations: when Ctrl-C was pressed once (:func:`guard`), save the run (``checkpoints/NAME``,
    unless this iteration's checkpoint was just written) and raise :class:`RunInterrupted` with the command that
    resumes it; otherwise nothing. Not called after the last iteration: :func:`finish` writes the final checkpoint
    and then stops the run."""
    if not run.interrupt_requested:
        return
    if run.written and run.last_checkpoint_at == run.position():
        path = run.last_checkpoint
    else:
        path = run.checkpoint(name)
    if not run.resumable:
        raise RunInterrupted(f"interrupted at {run.position()}: {path} holds the network (this run is not resumed)")
    raise RunInterrupted(f"interrupted at {run.position()}: nothing is lost, {path} holds the run: resume with: "
                         f"{run.command} --resume {run.ckpt_dir / 'latest.pt'}")


#: The errors of writing a file that may come without its name (a full disk or quota, a read-only or failing one).
DISK_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO)


@contextlib.contextmanager
def guard(run: Any, first: str = "stopping after this iteration, with a checkpoint") -> Iterator[None]:
    """Every trainer's guard around its loop (and :func:`finish`'s around ``final.pt``). The first Ctrl-C (SIGINT)
    asks the run to stop after the current iteration, with a checkpoint (:func:`stop_if_interrupted` raises
    :class:`RunInterrupted` saying how to resume; ``first``: what the line printed then says is done); a second
    stops at once (the work since the last checkpoint is lost, and the message says so). A :class:`Diverged`
    update is given where the run is and the last checkpoint; a file that cannot be written (an ``OSError`` naming
    a file, or one of :data:`DISK_ERRORS`) becomes a :class:`RunStopped` naming it; other errors pass as they are.
    Whatever stops the run, a folder it made and saved nothing in is removed (:meth:`Run.abandon`, said in the
    message). The previous SIGINT handler is restored on the way out; outside the main thread (no signals there) only
    the messages are added."""
    previous = None

    def on_sigint(signum: int, frame: Any) -> None:
        if run.interrupt_requested:
            raise KeyboardInterrupt
        run.interrupt_requested = True
        print(f"Ctrl-C: {first} (Ctrl-C again: stop at once)", flush=True)

    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    except KeyboardInterrupt:
        raise RunInterrupted(f"interrupted at {run.position()} (stopped at once, the work since the last checkpoint "
                             f"is lost): {run.saved_so_far()}{run.abandon()}") from None
    except Diverged as exc:
        raise Diverged(f"training diverged at {run.position()}: {exc}; no weights of it were saved, "
                       f"{run.saved_so_far()}{run.abandon()} ({run.diverged_hint})") from None
    except RunStopped as exc:  # its message says what is saved (Run.checkpoint, RunInterrupted)
        gone = run.abandon()
        if not gone:
            raise
        raise type(exc)(f"{exc}{gone}") from None
    except OSError as exc:
        if exc.filename is None and exc.errno not in DISK_ERRORS:  # not a file's (a cluster gone): as it is
            run.abandon()
            raise
        # a full disk, a folder gone: the files written before are intact
        raise RunStopped(f"cannot write {exc.filename or run.run_dir} at {run.position()}: {exc.strerror or exc}; "
                         f"{run.saved_so_far()}{run.abandon()}") from None
    except BaseException:
        run.abandon()
        raise
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
