"""The durable store of an output directory: one SQLite database, the hidden file
:data:`STORE`, which holds every sweep written there (its metadata, its runs, its
finished points and the finished chunks of its unfinished points).

SQLite (the standard library's :mod:`sqlite3`) does what the store needs better than
rewriting files: a finished point is one small transaction, atomic and durable (the
write-ahead log is fsynced at every commit, ``synchronous=FULL``), whose cost does not
grow with the grid, and an interrupted transaction is rolled back when the database is
next opened. A damaged database is reported by SQLite itself (``SQLITE_CORRUPT``,
``SQLITE_NOTADB``); SQLite does not checksum a record's bytes, so every point and chunk
keeps a CRC-32 digest of its text (:func:`digest`), checked when it is read back.

The errors of SQLite become the ones the rest of the package reports: a damaged file a
:class:`~._errors.CorruptStore`, a full disk, an I/O error or a read-only file an
:class:`OSError` naming the database (see :meth:`Database.translated`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from ._errors import CorruptStore

STORE = ".spheresde.sqlite"
"""The store's file in an output directory."""

APPLICATION_ID = 0x53504853  # "SPHS": tells our database from another SQLite file
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sweeps (
    name TEXT PRIMARY KEY, meta TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS runs (
    name TEXT, number INTEGER, record TEXT NOT NULL,
    PRIMARY KEY (name, number)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS points (
    name TEXT, key TEXT, lines TEXT NOT NULL, digest TEXT NOT NULL,
    PRIMARY KEY (name, key)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chunks (
    name TEXT, key TEXT, k INTEGER, counts TEXT NOT NULL, digest TEXT NOT NULL,
    PRIMARY KEY (name, key, k)) WITHOUT ROWID;
"""

# SQLite's primary result codes that are faults of the disk or of the file's permissions,
# as the errno an OSError of the same fault would carry
_ERRNO = {"SQLITE_FULL": errno.ENOSPC, "SQLITE_IOERR": errno.EIO,
          "SQLITE_READONLY": errno.EACCES, "SQLITE_PERM": errno.EACCES,
          "SQLITE_CANTOPEN": errno.EACCES, "SQLITE_BUSY": errno.EBUSY,
          "SQLITE_LOCKED": errno.EBUSY}


def digest(text: str) -> str:
    """CRC-32 (8 hex digits) of ``text``: the digest of a stored point or chunk."""
    return f"{zlib.crc32(text.encode()):08x}"


class Database:
    """The store :data:`STORE` of the directory ``out``, opened to write (created if
    missing) or, with ``write=False``, to read only (it must exist)."""

    def __init__(self, out: Path, *, write: bool):
        self.path = Path(out) / STORE
        self._write = write
        self._connection = None
        self._empty = False
        try:
            # one thread at a time, not always the one that opened it (a sweep may be
            # closed from another thread)
            if write:
                connection = sqlite3.connect(self.path, isolation_level=None,
                                             check_same_thread=False)
            else:
                connection = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro",
                                             uri=True, isolation_level=None,
                                             check_same_thread=False)
            self._connection = connection
            (application,), (version,) = (connection.execute(f"PRAGMA {p}").fetchone()
                                          for p in ("application_id", "user_version"))
            tables = connection.execute("SELECT count(*) FROM sqlite_schema").fetchone()[0]
            # a writer killed before it made the tables leaves a file without them, which
            # a reader takes for an empty store
            self._empty = not tables
            if tables and application != APPLICATION_ID:
                raise self.damaged("a SQLite database, but not a store of sweeps")
            if version > SCHEMA_VERSION:
                raise CorruptStore(f"{self.path}: written by a newer spheresde (store "
                                   f"version {version}); upgrade spheresde to resume it")
            if write:  # a commit is one fsync of the log: 1.4 ms a commit here, where a
                # rollback journal took 5.5 to 6
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute("PRAGMA synchronous=FULL")
                with self.transaction():
                    for statement in (f"PRAGMA application_id={APPLICATION_ID}",
                                      f"PRAGMA user_version={SCHEMA_VERSION}",
                                      *_SCHEMA.split(";")[:-1]):
                        connection.execute(statement)
                self._empty = False
        except sqlite3.Error as err:
            self.close()
            raise self.translated(err) from None
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Close the database; idempotent. A writer leaves it in SQLite's rollback-journal
        mode, one file at rest, which a reader opens without creating any (a reader of a
        write-ahead log would leave its ``-shm`` and ``-wal`` files beside it)."""
        connection, self._connection = self._connection, None
        if connection is None:
            return
        try:
            if self._write:
                connection.execute("PRAGMA journal_mode=DELETE")
        except sqlite3.Error:
            pass  # a reader has it open now (or it never opened): it stays as it is
        finally:
            connection.close()

    def damaged(self, what: str) -> CorruptStore:
        """The refusal of a store that fails its check: ``what`` is wrong with it."""
        return CorruptStore(
            f"{self.path}: {what}; move it away, and the sweeps of {self.path.parent} "
            "resume from their CSV and JSON files as they were last written")

    def translated(self, err: sqlite3.Error) -> Exception:
        """``err`` as the package reports it: a damaged file a :class:`CorruptStore`, a
        fault of the disk an :class:`OSError` naming the database, anything else as is."""
        name = getattr(err, "sqlite_errorname", "")
        primary = "_".join(name.split("_")[:2])  # SQLITE_IOERR_WRITE is an SQLITE_IOERR
        if primary in ("SQLITE_CORRUPT", "SQLITE_NOTADB"):
            return self.damaged(f"not a readable database ({err})")
        if primary in _ERRNO:
            code = _ERRNO[primary]
            return OSError(code, f"{os.strerror(code)} ({err})", str(self.path))
        return err

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Database]:
        """One transaction: committed when the block ends, rolled back if it raises
        (Ctrl-C included), so the store holds all of it or none of it."""
        try:
            self._connection.execute("BEGIN IMMEDIATE")
            try:
                yield self
            except BaseException:
                if self._connection.in_transaction:  # SQLite may have rolled back already
                    self._connection.execute("ROLLBACK")
                raise
            self._connection.execute("COMMIT")
        except sqlite3.Error as err:
            raise self.translated(err) from None

    def _rows(self, sql: str, *args: object) -> list[tuple]:
        if self._empty:
            return []
        try:
            return self._connection.execute(sql, args).fetchall()
        except sqlite3.Error as err:
            raise self.translated(err) from None

    def _run(self, sql: str, args: Iterable[tuple]) -> None:
        """``sql`` once per tuple of ``args``, inside :meth:`transaction`."""
        self._connection.executemany(sql, args)

    # ------------------------------------------------------------------ reading

    def meta(self, name: str) -> str | None:
        """The metadata of the sweep ``name`` (JSON text), None if it is not stored."""
        found = self._rows("SELECT meta FROM sweeps WHERE name = ?", name)
        return found[0][0] if found else None

    def runs(self, name: str) -> list[str]:
        """The run records of the sweep ``name`` (JSON text each), oldest first."""
        return [r for (r,) in self._rows(
            "SELECT record FROM runs WHERE name = ? ORDER BY number", name)]

    def points(self, name: str) -> list[tuple[str, str, str]]:
        """(key, lines as JSON text, digest) of each finished point of ``name``."""
        return self._rows("SELECT key, lines, digest FROM points WHERE name = ?", name)

    def chunks(self, name: str) -> list[tuple[str, int, str, str]]:
        """(point key, chunk index, counts as JSON text, digest) of each stored chunk."""
        return self._rows("SELECT key, k, counts, digest FROM chunks WHERE name = ?", name)

    # ------------------------------------------------------------------ writing
    # (inside :meth:`transaction`)

    def forget(self, name: str) -> None:
        """Remove everything of the sweep ``name``."""
        for table in ("sweeps", "runs", "points", "chunks"):
            self._run(f"DELETE FROM {table} WHERE name = ?", [(name,)])

    def put_meta(self, name: str, meta: str) -> None:
        self._run("INSERT OR REPLACE INTO sweeps VALUES (?, ?)", [(name, meta)])

    def put_run(self, name: str, number: int, record: str) -> None:
        self._run("INSERT OR REPLACE INTO runs VALUES (?, ?, ?)", [(name, number, record)])

    def put_points(self, name: str, points: Iterable[tuple[str, str]]) -> None:
        """Store finished points, (key, lines as JSON text) each, with their digests."""
        self._run("INSERT OR REPLACE INTO points VALUES (?, ?, ?, ?)",
                  ((name, key, lines, digest(lines)) for key, lines in points))

    def drop_points(self, name: str, keys: Iterable[str]) -> None:
        self._run("DELETE FROM points WHERE name = ? AND key = ?", ((name, k) for k in keys))

    def put_chunk(self, name: str, key: str, k: int, counts: str) -> None:
        self._run("INSERT OR REPLACE INTO chunks VALUES (?, ?, ?, ?, ?)",
                  [(name, key, k, counts, digest(counts))])

    def drop_chunks(self, name: str, keys: Iterable[str] | None = None) -> None:
        """Remove the chunks of the points ``keys`` of the sweep ``name`` (None: all)."""
        if keys is None:
            self._run("DELETE FROM chunks WHERE name = ?", [(name,)])
        else:
            self._run("DELETE FROM chunks WHERE name = ? AND key = ?",
                      ((name, k) for k in keys))


__all__ = ["STORE", "Database", "digest"]
