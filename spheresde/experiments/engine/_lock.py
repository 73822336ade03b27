"""One writer per sweep: an advisory lock (:func:`fcntl.flock`) on ``NAME.lock`` in the
output directory, which records its holder (process id, host, start time). The
operating system releases it when the process ends, however it ends, so a killed run
leaves no stale lock."""

from __future__ import annotations

import fcntl
import os
import socket
from datetime import datetime, timezone
from pathlib import Path

from ._errors import StoreLocked


class WriterLock:
    """The lock on ``path`` for writing ``what`` (named in the refusal), taken now:
    :class:`StoreLocked` when another process holds it, unless ``wait``."""

    def __init__(self, path: Path, what: Path, *, wait: bool = False):
        handle = Path(path).open("a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise StoreLocked(
                f"{what} is being written by {holder}; let it finish (or pass "
                "`wait=True` to wait for it), or write into another `out`"
            ) from None
        handle.seek(0)
        handle.truncate()
        started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        handle.write(f"pid {os.getpid()} on {socket.gethostname()}, started {started}\n")
        handle.flush()
        self._handle = handle

    def release(self) -> None:
        """Release the lock; idempotent."""
        if self._handle is not None:
            self._handle.truncate(0)  # no holder named once nobody holds it
            self._handle.close()  # closing the file releases the flock
            self._handle = None


__all__ = ["WriterLock"]
