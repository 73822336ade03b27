"""One writer per output directory: an advisory lock (:func:`fcntl.flock`) on the hidden
file :data:`LOCK` there, which records its holder (process id, host, the sweep it writes,
start time). The operating system releases it when the process ends, however it ends,
so a killed run leaves no stale lock.

The lock is the directory's, not a sweep's, because the sweeps of a directory share one
store (:mod:`~._database`): a second process writing any sweep into the same directory
is refused, naming the holder, or waits for it."""

from __future__ import annotations

import fcntl
import os
import socket
from datetime import datetime, timezone
from pathlib import Path

from ._errors import StoreLocked

LOCK = ".spheresde.lock"
"""The lock file of an output directory."""


class WriterLock:
    """The lock of the output directory ``out`` for writing the sweep ``name``, taken
    now: :class:`StoreLocked` when another process holds it, unless ``wait``."""

    def __init__(self, out: Path, name: str, *, wait: bool = False):
        handle = (Path(out) / LOCK).open("a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise StoreLocked(
                f"{out} is being written by {holder}; let it finish (or pass `wait=True` "
                "to wait for it), or write into another `out`"
            ) from None
        handle.seek(0)
        handle.truncate()
        started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        handle.write(f"pid {os.getpid()} on {socket.gethostname()} (its sweep '{name}'), "
                     f"started {started}\n")
        handle.flush()
        self._handle = handle

    def release(self) -> None:
        """Release the lock; idempotent."""
        if self._handle is not None:
            self._handle.truncate(0)  # no holder named once nobody holds it
            self._handle.close()  # closing the file releases the flock
            self._handle = None


__all__ = ["LOCK", "WriterLock"]
