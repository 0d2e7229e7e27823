"""The run folder: its default name, the checks before a run writes to it, its lock, and the options every
trainer's run starts with (:class:`RunOptions`: name, seed, threads, device, the folder, resume).

A run writes to one folder (``--run-dir``, else :func:`default_run_dir`); :func:`claim_run_dir` refuses a folder a new
run must not write to and locks it (:class:`RunLock`) for as long as the run writes; a resumed run goes on in the
folder of its checkpoint (:func:`run_dir_of_checkpoint`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from pathlib import Path
from typing import Any

from cassino_env.errors import shown_name
from train.options import ConfigError, looked_at

#: The longest name of one folder or file a file system takes, in bytes (NAME_MAX of ext4, APFS, NTFS).
NAME_MAX_BYTES = 255


@dataclasses.dataclass
class RunOptions:
    """The options every trainer's run starts with: its name, seed, threads, device, precision and run folder
    (``train.ppo_args.Args`` and ``train.exit.ExitArgs`` extend it, each with its own ``exp_name``)."""

    # --- experiment -------------------------------------------------------------------------------------------------
    exp_name: str = "run"
    """name of the experiment, the second part of the run name"""
    seed: int = 1
    """seed of the networks, the games and every random choice of the run"""
    threads: int = 2
    """CPU threads torch may use (torch.set_num_threads); the env runs single-threaded. The PPO trainer's update
    also runs as this many shards unless update_shards says otherwise (at most 64)"""
    device: str = "auto"
    """where the network trains and plays: auto (a GPU where torch sees one, CUDA first, then MPS, else the CPU), cpu,
    cuda, cuda:N or mps; the games, bots and searches stay on the CPU, and Ray workers play on their CPU. A resumed
    run takes the device given now (default auto), never the checkpoint's: it is where a run goes on, not what it
    learns"""
    precision: str = "auto"
    """the expert stages' arithmetic (agents.precision): auto (bf16 on a device that computes bfloat16 natively: a
    CPU with AVX-512 BF16 or AMX, a CUDA GPU that supports it; else fp32), fp32, or bf16 (the forward passes of the
    labelling and the update under torch.autocast; weights, gradients and the optimiser stay float32). PPO, the
    gates and every evaluation run in float32 whatever it says. A resumed run takes the precision given now, as the
    device"""
    run_dir: str | None = None
    """folder the run writes to; default runs_root/{preset}__{exp_name}__{seed}__{unix time}"""
    runs_root: str = "runs"
    """parent folder of the default run folders"""
    resume: str | None = None
    """checkpoint to continue from: the run goes on in its own folder (RUN for RUN/checkpoints/X.pt, or run_dir)
    with its own config, except the options given on this command line (flags and the --config file)"""
    reuse_run_dir: bool = False
    """write into a run_dir that is not empty (the run folder of a run not being resumed); off, such a folder is
    refused. A folder another run is writing to (its lock held) is refused either way"""


def default_run_dir(args: Any) -> Path:
    """``runs_root/{preset}__{exp_name}__{seed}__{unix time}`` (CleanRL's run name with the preset first)."""
    return Path(args.runs_root) / f"{args.preset}__{args.exp_name}__{args.seed}__{int(time.time())}"


#: The lock file of a run folder (:class:`RunLock`); it holds the PID of the run that holds the lock.
LOCK_NAME = ".lock"


class RunLock:
    """An exclusive lock on a run folder, held while a run writes to it: ``fcntl.flock`` on ``RUN/.lock``, which
    holds the PID of the holder. The operating system drops the lock when the process ends, however it ends, so a
    stale lock file never blocks a later run; the file itself stays (it is not a run's output).

    Raises:
        ConfigError: (from :meth:`acquire`) another process holds the lock, or the folder cannot be created.
    """

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        import fcntl  # POSIX; imported here so that the rest of this module loads anywhere

        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise ConfigError(f"run_dir {shown_name(self.run_dir)}: cannot create the run folder: "
                              f"{exc.strerror or exc}", field="run_dir") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.read(fd, 64).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise ConfigError(f"run_dir {shown_name(self.run_dir)} is in use by another run (PID {holder}, lock file "
                              f"{self.path}): two runs must not write one folder; wait for it to end or choose "
                              "another --run-dir", field="run_dir") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        self._fd = fd
        return self

    def release(self) -> None:
        """Drop the lock (closing the file drops it); safe to call twice."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def check_run_path(run_dir: str | Path, field: str = "run_dir") -> None:
    """Refuse a run folder that cannot be created, before any of it is made: a name in the path longer than
    :data:`NAME_MAX_BYTES` bytes (creating the parents first would leave them behind when the last name fails).
    Reads nothing.

    Raises:
        ConfigError: naming ``field``.
    """
    for part in Path(run_dir).parts:
        size = len(os.fsencode(part))
        if size > NAME_MAX_BYTES:
            raise ConfigError(f"{field}: {shown_name(run_dir)}: cannot create the run folder: a name in it is {size} "
                              f"bytes long, and a file system takes at most {NAME_MAX_BYTES}", field=field)


def check_run_dir(run_dir: str | Path, *, resuming: bool, reuse: bool) -> None:
    """Refuse a run folder a new run must not write to: one that cannot be created (:func:`check_run_path`), a path
    that exists and is not a folder, or a non-empty
    folder (its lock file aside) that is not the folder of the run being resumed, unless ``reuse``
    (``--reuse-run-dir True``). Reads only; writes nothing.

    Raises:
        ConfigError: naming ``run_dir``, saying how to go on.
    """
    check_run_path(run_dir)
    run_dir = Path(run_dir)
    if looked_at(run_dir.exists) and not run_dir.is_dir():
        raise ConfigError(f"run_dir {shown_name(run_dir)} exists and is not a folder", field="run_dir")
    if resuming or reuse or not looked_at(run_dir.is_dir):  # one that cannot be looked at: creating it says why
        return
    held = sorted(p.name for p in run_dir.iterdir() if p.name != LOCK_NAME)
    if held:
        shown = ", ".join(shown_name(name) for name in held[:3])
        raise ConfigError(f"run_dir {shown_name(run_dir)} is not empty (it holds {shown}"
                          f"{', ...' if len(held) > 3 else ''}): it may be another run's folder. Continue that run "
                          f"with --resume {shown_name(run_dir / 'checkpoints' / 'latest.pt')}, choose another "
                          "--run-dir, or pass --reuse-run-dir True to write into it anyway", field="run_dir")


def claim_run_dir(run_dir: str | Path, *, resuming: bool, reuse: bool) -> RunLock:
    """Lock a run folder for a run (:class:`RunLock`), creating it, after :func:`check_run_dir`; the check is
    repeated once the lock is held, so that a run that ended in between is not written over.

    Raises:
        ConfigError: see :func:`check_run_dir` and :class:`RunLock`.
    """
    check_run_dir(run_dir, resuming=resuming, reuse=reuse)
    lock = RunLock(run_dir).acquire()
    try:
        check_run_dir(run_dir, resuming=resuming, reuse=reuse)
    except ConfigError:
        lock.release()
        raise
    return lock


def run_dir_of_checkpoint(path: str | Path) -> Path:
    """The run folder a checkpoint belongs to, from its path: ``RUN`` for ``RUN/checkpoints/NAME.pt``.

    >>> run_dir_of_checkpoint("runs/x/checkpoints/latest.pt").as_posix()
    'runs/x'

    Raises:
        ConfigError: a checkpoint outside a ``checkpoints`` folder (its run folder cannot be told: give ``run_dir``).
    """
    path = Path(path)
    if path.parent.name != "checkpoints":
        raise ConfigError(f"resume {shown_name(path)}: not in a RUN/checkpoints/ folder, so its run folder cannot be "
                          "told from its path; give --run-dir (where the resumed run writes)", field="run_dir")
    return path.parent.parent


#: The temporary files :func:`agents.files.atomic_write` makes for a run's files (``.NAME.RANDOM.tmp`` beside NAME),
#: by folder of the run: config.yaml's in the run folder, any in checkpoints/ and (expert iteration) labels/.
TEMPORARIES = (("", ".config.yaml.*.tmp"), ("checkpoints", ".*.tmp"), ("labels", ".*.tmp"))


def remove_stale_temporaries(run_dir: Path) -> int:
    """Remove the temporary files a killed run left in ``run_dir`` (:data:`TEMPORARIES`: files being written,
    never renamed into place); called with the folder's lock held, so no other run is writing them. Returns how
    many were removed (and says so when any)."""
    gone = 0
    for sub, pattern in TEMPORARIES:
        folder = run_dir / sub
        for f in folder.glob(pattern) if folder.is_dir() else ():
            if f.is_file() and not f.is_symlink():
                with contextlib.suppress(OSError):
                    f.unlink()
                    gone += 1
    if gone:
        print(f"removed {gone} temporary file{'s' if gone != 1 else ''} left in {run_dir} by a run that was killed "
              "while writing", flush=True)
    return gone
