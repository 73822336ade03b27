"""Files written in one step: a temporary file, fsync, :func:`os.replace`."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write_text(path: Path, text: str) -> None:
    """Replace ``path`` by ``text`` in one step (temporary file, fsync, :func:`os.replace`)."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as err:
        raise oserror_for(err, path) from err
    try:
        with os.fdopen(fd, "w", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide results from other users
        os.replace(tmp, path)
    except BaseException as err:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise oserror_for(err, path) from err
        raise


def oserror_for(err: OSError, path: str | os.PathLike) -> OSError:
    """``err`` about ``path``, the file it was for, not its temporary file (the same errno,
    so the same subclass: ``PermissionError``, ...)."""
    return OSError(err.errno, err.strerror or str(err), os.fspath(path))
