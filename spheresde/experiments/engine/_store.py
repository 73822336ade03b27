"""The resumable store of a sweep: one typed row per grid point (or several), each
finished point appended to a database, the CSV written from it once a run ends.

A sweep ``NAME`` in an output directory is kept in the directory's store (the hidden
SQLite database ``.spheresde.sqlite``, :mod:`~._database`, shared by the sweeps of the
directory): its metadata (package version, every parameter, the seed), one record per
run (wall time, grid points and chunks computed), its finished points (their CSV lines)
and the finished chunks of its unfinished points. A finished point is one transaction,
atomic and durable, whose cost does not grow with the grid; a crash at any instant
(Ctrl-C, a killed process, a power cut) loses at most the point or chunk in flight.
When a run ends, normally or not (an exception, Ctrl-C), the store is written out as
``NAME.csv`` (the rows, points in grid order, see :class:`Sweep`) and ``NAME.json`` (the
metadata, the runs and a CRC-32 digest of every point's CSV lines), each in one step; a
killed run leaves them as the previous run wrote them, and the next run writes them
again. Re-running with the same parameters computes only the missing points.

The identity of a sweep is every parameter except its grid axes: the same command with
one more beta computes only the new points; a grid without some stored points refuses
unless told to prune them (a typo in a grid never deletes finished points); another
value of a non-grid parameter (the horizon, the seed, ...) refuses
(:class:`ParameterMismatch`) unless told to overwrite, and overwriting replaces a store
only when its parameters differ, so an interrupted overwriting run resumes.

**Files written before the store.** A sweep that the directory's store does not hold but
whose ``NAME.csv`` and ``NAME.json`` are there (written by an earlier version of the
package, which rewrote both after every point, or copied from another directory) is
read from them and moved into the store, then resumed; its chunk cache
``NAME.chunks.json``, which carries no digests, is discarded with one
:class:`StoreWarning` and its chunks computed again (an edited chunk could not be told
from a genuine one).

**Checks.** Whatever is read back is checked first, and a sweep that fails is refused
(:class:`CorruptStore`, one line naming the file, what is wrong and what to do): a
store that SQLite cannot read, or a record whose text does not match its digest; a
metadata that is not a sweep's; rows with another header, a field that does not parse
as its type, another value of an echoed parameter or of a field the sweep fixes
(``expect``), a point repeated, or, in a ``NAME.csv``, lines that do not match their
digest in ``NAME.json`` (a pair written before digests existed is read with every check
but that one). Each stored chunk keeps a digest of its counts too, and its counts are
checked by the experiment's own rule (lengths, non-negative counts that sum to the
chunk's size); a chunk cache that fails is only a cache: it is discarded with one
:class:`StoreWarning` and its chunks are computed again.

**One writer.** Opening a sweep to write takes the lock of its output directory
(:mod:`~._lock`); a second process writing any sweep into the same directory is refused
(:class:`StoreLocked`, naming the holder) or waits for it. Several jobs therefore run
side by side in separate output directories, or as one job with several workers.

**Chunks.** A grid point's trajectories are split into chunks of ``chunk_size``
(the last one shorter), and chunk ``k`` of a point draws its randomness from
:func:`chunk_seed` of the sweep seed, the point's own coordinates and ``k`` only. A
chunk returns integer counts (outcomes, cluster sizes, simulated steps), and a point's
row is computed from the counts of its chunks summed in chunk order; so a point's
numbers do not depend on which process, machine or executor ran which chunk, nor in
which order, and are identical to the last digit (on the same kind of device). The
chunk size is part of the sweep's identity (another chunk size means other random
streams, so other numbers). What a task finished (one chunk, or the chunks of several
small points that the driver gathered into one task) is stored at once, in one
transaction (:meth:`Sweep.store`), so a killed run loses at most the tasks in flight;
the grouping is no part of the sweep's identity (it changes no number) and the records
are the same whatever it was, so a store resumes under any grouping; the submitting
process is the only writer; the chunks of a point are removed in the transaction that
stores its rows.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import typing
import warnings
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Generic, TypeVar

from ._chunks import ChunkCache, Counts
from ._database import STORE, Database, digest
from ._errors import CorruptStore, ParameterMismatch, StoreWarning
from ._files import atomic_write_text
from ._lock import WriterLock
from ._spelling import format_value

PACKAGE = __name__.split(".")[0]
"""The distribution this engine belongs to, whose version every sweep records."""


def _version() -> str:
    """:data:`PACKAGE`'s installed version, read from its metadata (not by importing the
    package, which would load everything above the engine)."""
    import importlib.metadata

    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _normalized(params: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(params, sort_keys=True))


def _spell(value: Any) -> str:
    """CSV text of one row value; a tuple of integers is written space-separated."""
    if isinstance(value, tuple):
        return " ".join(format_value(v) for v in value)
    return format_value(value)


def _reader(annotation: Any) -> Callable[[str], Any]:
    """Parse CSV text back into a row field of type ``annotation``."""
    if typing.get_origin(annotation) is tuple:
        (element, _) = typing.get_args(annotation)
        return lambda text: tuple(element(v) for v in text.split())
    if annotation is bool:
        return lambda text: text == "True"
    if annotation in (int, float, str):
        return annotation
    raise TypeError(f"unsupported row field type {annotation!r}")


R = TypeVar("R")


class Sweep(Generic[R]):
    """A grid of points stored in the output directory ``out`` (its store, then
    ``NAME.csv`` and ``NAME.json``; see the module docstring).

    Rows are typed: ``row_type`` is a dataclass whose first fields are the grid
    coordinates (``key_columns``); :func:`~._driver.compute_chunks` returns instances of
    it, and a resumed sweep reads the stored rows back into the same type (floats
    round-trip exactly).
    A point may give several rows (a training run: one row per epoch); they are stored
    together when the point is finished, and a resumed sweep skips the point.

    Opening a sweep takes the directory's lock (unless ``lock=False``: read only) and
    checks what is stored (see the module docstring); the driver
    (:func:`~._driver.compute_chunks`) writes the CSV and JSON (:meth:`export`) and
    releases the lock when it ends, :meth:`close` (or leaving a ``with`` block)
    otherwise. The store keeps the records, their digests and the lock; the loop that
    fills it is the driver's.

    Parameters
    ----------
    out
        Output directory (created if missing).
    name
        File stem of the CSV, the JSON and (by convention) the figure; the sweep's name
        in the directory's store.
    params
        Every parameter that changes the results, JSON-serializable; compared with the
        stored ones on reopening (except the ``grid`` ones).
    row_type
        The dataclass of a row.
    key_columns
        The row fields that identify a grid point (e.g. ``("d", "beta")``).
    grid
        The names in ``params`` that list grid axes: they may change between runs (the
        points still on the grid are kept, new ones computed).
    echo
        Constant columns appended to every CSV row (the scalar parameters, so that a CSV
        read alone says how it was made); not part of the typed rows.
    chunk_size
        Trajectories per chunk (see the module docstring); part of the identity.
    overwrite
        Replace a stored sweep whose parameters differ, or that fails its check, instead
        of refusing (a stored sweep with the same parameters is resumed).
    meta
        Further metadata for ``NAME.json`` (library versions, say); not part of the
        resume identity.
    expect
        Row fields with the value every stored row must have (e.g. the trajectories
        behind a point's fractions).
    lock
        Take the directory's lock (:class:`StoreLocked` if another process holds it)
        to write; without it the sweep is read, and nothing is written.
    wait
        Wait for another writer to finish instead of refusing.
    """

    def __init__(
        self,
        out: str | os.PathLike,
        name: str,
        params: dict[str, Any],
        row_type: type[R],
        key_columns: Sequence[str],
        *,
        grid: Sequence[str] = (),
        echo: dict[str, Any] | None = None,
        chunk_size: int | None = None,
        overwrite: bool = False,
        meta: dict[str, Any] | None = None,
        expect: dict[str, Any] | None = None,
        lock: bool = True,
        wait: bool = False,
    ):
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.csv_path = self.out / f"{name}.csv"
        self.meta_path = self.out / f"{name}.json"
        # what earlier versions kept beside these two: read once, then removed
        self.legacy_chunks_path = self.out / f"{name}.chunks.json"
        self.legacy_lock_path = self.out / f"{name}.lock"
        self.params = _normalized(params)
        self.grid = tuple(grid)
        self.row_type = row_type
        hints = typing.get_type_hints(row_type)
        self.readers = {f.name: _reader(hints[f.name]) for f in dataclasses.fields(row_type)}
        self.echo = {k: _spell(v) for k, v in (echo or {}).items() if k not in self.readers}
        self.expect = dict(expect or {})
        self.columns = [*self.readers, *self.echo]
        self.key_columns = list(key_columns)
        self.rows: dict[tuple[str, ...], list[R]] = {}
        self.cache = ChunkCache()
        self.meta: dict[str, Any] = {
            "sweep": name,
            "package": PACKAGE,
            "version": _version(),
            "params": self.params,
            "seed": self.params.get("seed"),
            "columns": self.columns,
            "chunk_size": chunk_size,
            "runs": [],
            **(meta or {}),
        }
        self._record: dict[str, Any] | None = None
        self._lock = WriterLock(self.out, name, wait=wait) if lock else None
        self._db: Database | None = None
        try:
            if lock or (self.out / STORE).exists():
                self._db = Database(self.out, write=lock)
            self._open(overwrite)
        except BaseException:
            self.close()
            raise
        if not lock:  # everything is read: let go of the database at once
            self.close()

    def close(self) -> None:
        """Close the store and release the lock (the records are already stored);
        idempotent."""
        if self._db is not None:
            db, self._db = self._db, None
            db.close()
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __enter__(self) -> Sweep[R]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ reading

    def _open(self, overwrite: bool) -> None:
        in_store = self._db is not None and self._db.meta(self.name) is not None
        try:
            stored = self._stored_meta() if in_store else self._load_meta()
        except CorruptStore:
            if not overwrite:
                raise
            stored = None
        if stored is None:
            if self.csv_path.exists() and not in_store and not overwrite:
                raise ParameterMismatch(
                    f"{self.csv_path} exists without its metadata {self.meta_path.name}; "
                    "pass `overwrite=True` to replace it"
                )
            self._discard()
            return
        same = (self._identity(stored["params"]) == self._identity(self.params)
                and self._same_columns(stored["columns"])
                and stored.get("chunk_size") == self.meta["chunk_size"]
                and stored.get("streams") == self.meta.get("streams"))
        if not same:
            if not overwrite:
                raise ParameterMismatch(self._mismatch_message(stored))
            self._discard()
            return
        try:
            if in_store:
                self._load_points(stored["columns"])
            else:
                self._load_rows(stored["columns"], stored.get("digests"))
        except CorruptStore:
            if not overwrite:
                raise
            self._discard()
            return
        self.meta["runs"] = stored["runs"]
        if in_store:
            self._load_chunks()
        elif self.legacy_chunks_path.exists():
            self._warn(self.legacy_chunks_path, "a chunk cache written before chunks had "
                       "digests cannot be checked; it is discarded and its chunks are "
                       "computed again")
        if self._lock is not None and (not in_store or stored["columns"] != self.columns):
            self._adopt(in_store)

    def _adopt(self, in_store: bool) -> None:
        """Move the sweep of files written before the store into it (its metadata, runs
        and points, spelled in today's columns, with their digests), or spell its points
        again in today's columns (a defaulted column was added since)."""
        with self._db.transaction() as db:
            db.put_meta(self.name, self._meta_text())
            if not in_store:
                for number, record in enumerate(self.meta["runs"]):
                    db.put_run(self.name, number, json.dumps(record))
            db.put_points(self.name, ((_key_text(k), self._lines_text(k)) for k in self.rows))
        self.legacy_chunks_path.unlink(missing_ok=True)
        self.legacy_lock_path.unlink(missing_ok=True)

    def _discard(self) -> None:
        """Start afresh: the old files and records go, so that a crash before the first
        run is stored leaves no table of other parameters beside new metadata (the
        metadata is stored with the first run, :meth:`start_run`)."""
        self.rows = {}
        if self._lock is None:  # read only: nothing stored, nothing removed
            return
        for path in (self.csv_path, self.meta_path, self.legacy_chunks_path,
                     self.legacy_lock_path):
            path.unlink(missing_ok=True)
        with self._db.transaction() as db:
            db.forget(self.name)

    def _refuse(self, path: Path, what: str) -> CorruptStore:
        """A file of this sweep fails its check: ``what`` is wrong with it."""
        return CorruptStore(f"{path}: {what}; restore the file, or pass `overwrite=True` to "
                            "compute the sweep afresh")

    def _refuse_record(self, what: str) -> CorruptStore:
        """A record of this sweep in the store fails its check: ``what`` is wrong with it
        (its text follows the sweep's name)."""
        return CorruptStore(f"{self._db.path}: the sweep '{self.name}'{what}; pass "
                            "`overwrite=True` to compute it afresh")

    def _identity(self, params: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in params.items() if k not in self.grid}

    def _same_columns(self, stored: list[str]) -> bool:
        """The stored columns are ours, or ours without row fields that have a default (a
        column added later: older sweeps still load, the field at its default)."""
        defaulted = {f.name for f in dataclasses.fields(self.row_type)
                     if f.default is not dataclasses.MISSING}
        return stored in (self.columns, [c for c in self.columns if c not in defaulted])

    def _stored_meta(self) -> dict[str, Any]:
        """The sweep's metadata and runs as the store holds them."""
        try:
            stored = json.loads(self._db.meta(self.name))
            runs = [json.loads(record) for record in self._db.runs(self.name)]
        except ValueError as err:
            raise self._refuse_record(f" has metadata that is not valid JSON ({err})") from None
        if not isinstance(stored, dict) or not all(isinstance(r, dict) for r in runs):
            raise self._refuse_record(" has metadata that is not a sweep's")
        return self._checked_meta({**stored, "runs": runs},
                                  lambda what: self._refuse_record(f"'s metadata: {what}"))

    def _load_meta(self) -> dict[str, Any] | None:
        """The metadata of ``NAME.json`` (None if there is none)."""
        if not self.meta_path.exists():
            return None
        try:
            stored = json.loads(self.meta_path.read_text())
        except ValueError as err:  # not UTF-8 (a UnicodeError) or not JSON
            raise self._refuse(self.meta_path, f"not valid JSON ({err})") from None
        if not isinstance(stored, dict):
            raise self._refuse(self.meta_path, f"a JSON {type(stored).__name__}, not the "
                                               "metadata of a sweep")
        digests = stored.get("digests")
        if digests is not None and not (
                isinstance(digests, dict) and all(isinstance(v, str) for v in digests.values())):
            raise self._refuse(self.meta_path, "'digests' is not an object of digests")
        return self._checked_meta(stored, lambda what: self._refuse(self.meta_path, what))

    @staticmethod
    def _checked_meta(stored: dict[str, Any],
                      refuse: Callable[[str], CorruptStore]) -> dict[str, Any]:
        for key, kind in (("params", dict), ("runs", list), ("columns", list)):
            if not isinstance(stored.get(key), kind):
                raise refuse(f"'{key}' is missing or not a JSON "
                             f"{'object' if kind is dict else 'list'}")
        return stored

    def _mismatch_message(self, stored_meta: dict[str, Any]) -> str:
        stored = {**self._identity(stored_meta.get("params") or {}),
                  "chunk_size": stored_meta.get("chunk_size"),
                  "streams": stored_meta.get("streams")}
        now = {**self._identity(self.params), "chunk_size": self.meta["chunk_size"],
               "streams": self.meta.get("streams")}
        changed = sorted(k for k in set(stored) | set(now) if stored.get(k) != now.get(k))
        details = ", ".join(
            f"{k}: stored {json.dumps(stored.get(k))} vs now {json.dumps(now.get(k))}"
            for k in changed
        )
        return (
            f"{self.out} already holds a '{self.name}' sweep made with other parameters "
            f"({details or 'different columns'}); use another `out` or pass `overwrite=True`"
        )

    def _row(self, columns: list[str], values: list[str],
             refuse: Callable[[str], CorruptStore]) -> tuple[tuple[str, ...], R]:
        """The key and typed row of one stored line (its fields as text, in the stored
        ``columns``), checked (see the module docstring); ``refuse(what)`` puts the line's
        place before ``what``."""
        if len(values) != len(columns):
            raise refuse(f" has {len(values)} fields, not {len(columns)}")
        text = dict(zip(columns, values, strict=True))
        fields = {}
        for column, read in self.readers.items():
            if column not in text:  # a defaulted column added after this sweep
                continue
            try:
                fields[column] = read(text[column])
            except (TypeError, ValueError):
                raise refuse(f": {column} = {text[column]!r} does not parse") from None
        for column, value in self.echo.items():
            if text[column] != value:
                raise refuse(f": {column} = {text[column]!r}, but the sweep's is {value!r}")
        for column, value in self.expect.items():
            if fields[column] != value:
                raise refuse(f": {column} = {text[column]!r}, but the sweep's is "
                             f"{format_value(value)!r}")
        return self.key(fields), self.row_type(**fields)

    def _load_rows(self, columns: list[str], digests: dict[str, str] | None) -> None:
        """Read the rows of ``NAME.csv``, checking each (see the module docstring);
        ``columns`` are the stored ones (:meth:`_same_columns`)."""
        if not self.csv_path.exists():
            return
        path = self.csv_path
        lines: dict[tuple[str, ...], list[list[str]]] = {}
        try:
            with path.open(newline="") as f:
                table = list(csv.reader(f))
        except (UnicodeError, csv.Error) as err:
            raise self._refuse(path, f"not a CSV table ({err})") from None
        if not table or table[0] != columns:
            raise self._refuse(path, f"the header is not the sweep's columns "
                                     f"{','.join(columns)}")
        previous = None
        for number, values in enumerate(table[1:], start=2):
            where = f"row {number}"
            key, row = self._row(columns, values,
                                 lambda what, where=where: self._refuse(path, where + what))
            if key in lines and (key != previous or values in lines[key]):
                raise self._refuse(path, f"{where} repeats the point "
                                         f"{self._describe(key)}")
            lines.setdefault(key, []).append(values)
            self.rows.setdefault(key, []).append(row)
            previous = key
        if digests is None:  # a sweep stored before digests existed
            return
        for key, values in lines.items():
            digest_of_key = digests.get("|".join(key))
            if digest_of_key is None:
                raise self._refuse(path, f"the point {self._describe(key)} is not recorded "
                                         f"in {self.meta_path.name}")
            if digest_of_key != _digest(values):
                raise self._refuse(path, f"the rows of {self._describe(key)} do not match "
                                         f"their digest in {self.meta_path.name}")

    def _load_points(self, columns: list[str]) -> None:
        """Read the finished points from the store, each checked against its digest and
        row by row (see the module docstring)."""
        for key_text, lines_text, stored_digest in self._db.points(self.name):
            key = _key(key_text)
            where = (f", point {self._describe(key)}" if len(key) == len(self.key_columns)
                     else f", point {key_text!r}")

            def refuse(what: str, where: str = where) -> CorruptStore:
                return self._refuse_record(where + what)

            if digest(lines_text) != stored_digest:
                raise refuse(": its rows do not match their digest")
            try:
                lines = json.loads(lines_text)
            except ValueError:
                lines = None
            if not (isinstance(lines, list) and lines and all(
                    isinstance(v, list) and all(isinstance(t, str) for t in v) for v in lines)):
                raise refuse(": its rows are not lists of fields")
            for values in lines:
                row_key, row = self._row(columns, values, refuse)
                if row_key != key:
                    raise refuse(f" has a row of {self._describe(row_key)}")
                self.rows.setdefault(key, []).append(row)

    def _load_chunks(self) -> None:
        """Read the stored chunks, each checked against its digest; a chunk that fails
        discards them all (:meth:`_drop_chunks`)."""
        for key, k, counts_text, stored_digest in self._db.chunks(self.name):
            if digest(counts_text) != stored_digest:
                self._drop_chunks(f"point {key}, chunk {k}: the counts do not match their "
                                  "digest")
                return
            try:
                counts = json.loads(counts_text)
            except ValueError:
                counts = None
            if not isinstance(counts, dict):
                self._drop_chunks(f"point {key}, chunk {k}: the counts are not an object")
                return
            self.cache.add(key, k, counts)

    def _warn(self, path: Path, what: str) -> None:
        warnings.warn(StoreWarning(f"{path}: {what}"), stacklevel=5)

    def _drop_chunks(self, why: str) -> None:
        """Discard every stored chunk of this sweep, saying ``why`` (one
        :class:`StoreWarning`): they are computed again."""
        self._warn(self._db.path, f"a damaged chunk cache of the sweep '{self.name}' "
                                  f"({why}) is discarded; its chunks are computed again")
        if self._lock is not None:
            with self._db.transaction() as db:
                db.drop_chunks(self.name)
        self.cache.points = {}

    def key(self, point: dict[str, Any]) -> tuple[str, ...]:
        return tuple(format_value(point[c]) for c in self.key_columns)

    def _describe(self, key: tuple[str, ...]) -> str:
        return " ".join(f"{c}={v}" for c, v in zip(self.key_columns, key, strict=True))

    def outside(self, points: Sequence[dict[str, Any]]) -> list[str]:
        """The stored points that are not among ``points``, described (``d=3 beta=0.5``)."""
        on_grid = {self.key(p) for p in points}
        return [self._describe(k) for k in self.rows if k not in on_grid]

    def is_done(self, point: dict[str, Any]) -> bool:
        """Whether ``point`` has a stored row."""
        return self.key(point) in self.rows

    def stored_chunks(self, point: dict[str, Any]) -> dict[int, Counts]:
        """The finished chunks of an unfinished ``point``: chunk index -> counts."""
        return self.cache.stored(_key_text(self.key(point)))

    def rows_in(self, order: Iterable[tuple[str, ...]]) -> list[R]:
        """Every row, the points in ``order``."""
        return [row for k in order for row in self.rows[k]]

    # ------------------------------------------------------------------ writing

    def _meta_text(self) -> str:
        """The sweep's metadata as the store keeps it (its runs are records of their own)."""
        return json.dumps({k: v for k, v in self.meta.items()
                           if k not in ("runs", "digests", "wall_time_s")}, sort_keys=True)

    def _lines(self, key: tuple[str, ...]) -> list[list[str]]:
        """The CSV lines of the point ``key``: its fields as text, the echoed ones last."""
        return [[_spell(row[c]) for c in self.readers] + list(self.echo.values())
                for row in map(dataclasses.asdict, self.rows[key])]

    def _lines_text(self, key: tuple[str, ...]) -> str:
        return json.dumps(self._lines(key))

    def keep_only(self, points: Sequence[dict[str, Any]], *,
                  prune: bool) -> list[tuple[str, ...]]:
        """Drop the stored rows outside ``points`` (pruned, if any) and the chunks of
        finished points (none unless a store of an earlier version left them); off the
        grid, unfinished points keep their chunks unless pruned. The grid's keys, in
        order."""
        order = [self.key(p) for p in points]
        on_grid = set(order)
        dropped = [k for k in self.rows if k not in on_grid]
        chunks = [k for k in self.cache.points if _key(k) in self.rows
                  or (prune and _key(k) not in on_grid)]
        if dropped or chunks:
            with self._db.transaction() as db:
                db.drop_points(self.name, map(_key_text, dropped))
                db.drop_chunks(self.name, chunks)
        for k in dropped:
            del self.rows[k]
        for k in chunks:
            del self.cache.points[k]
        return order

    def check_chunks(self, needed: dict[tuple[str, ...], int],
                     check: Callable[[dict[str, Any], int, Counts], str | None] | None,
                     points: dict[tuple[str, ...], dict[str, Any]]) -> None:
        """Check the cached chunks of the pending points (by key: their chunk counts and
        the points themselves); any failure discards them all (see
        :meth:`~._chunks.ChunkCache.problem`)."""
        why = self.cache.problem({_key_text(k): n for k, n in needed.items()}, check,
                                 {_key_text(k): p for k, p in points.items()})
        if why is not None:
            self._drop_chunks(why)

    def start_run(self, points_total: int, executor: str) -> dict[str, Any]:
        """A new record of this run, stored now with the sweep's metadata (this
        version's); the driver fills it in, and the store records it again with every
        point and chunk it stores."""
        record: dict[str, Any] = {
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "points_total": points_total,
            "points_computed": 0,
            "chunks_computed": 0,
            "executor": executor,
            "wall_time_s": 0.0,
            "finished": False,
        }
        self.meta["runs"].append(record)
        self._record = record
        with self._db.transaction() as db:
            db.put_meta(self.name, self._meta_text())
            self._put_record(db)
        return record

    def _put_record(self, db: Database) -> None:
        db.put_run(self.name, len(self.meta["runs"]) - 1, json.dumps(self._record))

    def keep(self, point: dict[str, Any], made: R | list[R]) -> None:
        """Store the rows of the finished ``point`` (checked: of the row type, of this
        point), counted in this run's record, and forget its chunks: one transaction."""
        self.store([(point, made)], [])

    def save_chunk(self, point: dict[str, Any], k: int, counts: Counts) -> None:
        """Store chunk ``k`` of the unfinished ``point`` (with this run's record)."""
        self.store([], [(point, k, counts)])

    def store(self, finished: Sequence[tuple[dict[str, Any], R | list[R]]],
              chunks: Sequence[tuple[dict[str, Any], int, Counts]]) -> None:
        """Store what one task computed in one transaction: the rows of each finished
        point (checked as :meth:`keep` says, each counted in this run's record, its chunks
        forgotten) and each chunk ``(point, k, counts)`` of an unfinished point. All of it
        is stored or, if the transaction fails, none of it (nor kept in memory)."""
        kept = {}
        for point, made in finished:
            key = self.key(point)
            rows = made if isinstance(made, list) else [made]
            if not rows:
                raise ValueError(f"compute({point}) returned no row")
            for row in rows:
                if not isinstance(row, self.row_type):
                    raise TypeError(f"compute() must return a {self.row_type.__name__} "
                                    f"or a list of them, got {type(row).__name__}")
                if self.key(dataclasses.asdict(row)) != key:
                    raise ValueError(f"compute({point}) returned the row of another point")
            kept[key] = rows
        self._record["points_computed"] += len(kept)
        self.rows.update(kept)
        try:
            with self._db.transaction() as db:
                db.put_points(self.name, [(_key_text(key), self._lines_text(key))
                                          for key in kept])
                db.drop_chunks(self.name, [_key_text(key) for key in kept])
                for point, k, counts in chunks:
                    db.put_chunk(self.name, _key_text(self.key(point)), k,
                                 json.dumps(counts, sort_keys=True))
                self._put_record(db)
        except BaseException:  # not stored: not kept either
            for key in kept:
                del self.rows[key]
            self._record["points_computed"] -= len(kept)
            raise
        for key in kept:
            self.cache.points.pop(_key_text(key), None)
        for point, k, counts in chunks:
            self.cache.add(_key_text(self.key(point)), k, counts)

    def export(self, order: Iterable[tuple[str, ...]], *, finished: bool = False) -> None:
        """Store this run's record, then write ``NAME.json`` and ``NAME.csv`` from the
        store, the points in ``order``, each file in one step; finished even when Ctrl-C
        lands in the middle (then re-raised), unless this is the run's normal end."""
        order = list(order)
        if finished:
            self._export(order)
            return
        try:
            self._export(order)
        except KeyboardInterrupt:
            self._export(order)
            raise

    def _export(self, order: list[tuple[str, ...]]) -> None:
        with self._db.transaction() as db:
            self._put_record(db)
        stored = {key: json.loads(lines) for key, lines, _ in self._db.points(self.name)}
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(self.columns)
        digests = {}
        for key in map(_key_text, order):
            if key in stored:
                writer.writerows(stored[key])
                digests[key] = _digest(stored[key])
        self.meta["wall_time_s"] = round(sum(r["wall_time_s"] for r in self.meta["runs"]), 3)
        self.meta["digests"] = digests
        # the metadata first: a crash before the table leaves a digest of a point that
        # the table lacks (then read from the store, or computed again), never a row
        # without its digest
        atomic_write_text(self.meta_path, json.dumps(self.meta, indent=2, sort_keys=True) + "\n")
        atomic_write_text(self.csv_path, buf.getvalue())


def _key_text(key: tuple[str, ...]) -> str:
    """A point's key as the store and ``NAME.json`` spell it: its coordinates joined by ``|``."""
    return "|".join(key)


def _key(text: str) -> tuple[str, ...]:
    return tuple(text.split("|"))


def _digest(lines: list[list[str]]) -> str:
    """The digest of a point's CSV lines in ``NAME.json``: :func:`~._database.digest` of
    the lines, fields joined by commas."""
    return digest("\n".join(",".join(v) for v in lines))


def open_store(spec: Any, out: str | os.PathLike, name: str, options: Any,
               **extra: Any) -> Sweep:
    """The store of ``spec``'s run ``name`` in ``out`` as ``options`` (a
    :class:`~._driver.RunOptions`) opens it: key columns the coordinates of the points,
    resume identity and metadata ``spec.params()`` (its grid axes, the tuple fields, may
    change), echoed columns ``spec.echo()``, the chunk size of a chunked spec."""
    grid = [f.name for f in spec.spec_fields() if f.kind.is_tuple]
    chunk_size = options.chunk_size if spec.runs_in_chunks else None
    streams = spec.stream_revision()
    if streams is not None:  # absent otherwise, so stores made before the field resume
        extra["meta"] = {**extra.get("meta", {}), "streams": streams}
    return Sweep(out, name, spec.params(), spec.row_type, tuple(spec.points()[0]), grid=grid,
                 echo=spec.echo(), chunk_size=chunk_size, overwrite=options.overwrite,
                 wait=options.wait, **extra)
