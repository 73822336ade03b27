"""The resumable store of a sweep: one CSV row per grid point (or several), written atomically.

A sweep lives in an output directory as ``NAME.csv`` (the results, one typed row per
grid point, see :class:`Sweep`) and ``NAME.json``
(metadata: package version, every parameter, the seed, and one record per run with its
wall time and how many grid points it computed). Each finished grid point rewrites the
whole CSV through a temporary file and :func:`os.replace`, so an interrupted sweep
(Ctrl-C, a killed process, a power cut) leaves either the old or the new file, never a
torn one. Re-running with the same parameters computes only the missing points.

The identity of a sweep is every parameter except its grid axes: the same command with
one more beta computes only the new points; a grid without some stored points refuses
unless told to prune them (a typo in a grid never deletes finished points); another
value of a non-grid parameter (the horizon, the seed, ...) refuses
(:class:`ParameterMismatch`) unless told to overwrite, and overwriting replaces a store
only when its parameters differ, so an interrupted overwriting run resumes.

**Checks.** Whatever is read back is checked first. ``NAME.json`` records a CRC-32
digest of every point's CSV lines (``digests``; written before the CSV, so that a crash
between the two leaves at most a digest of a point still to compute), and a stored
sweep is refused (:class:`CorruptStore`, one line naming the file, the row and what to
do) when its JSON is not a sweep's metadata or when a CSV row has another header, a
field that does not parse as its type, another value of an echoed parameter or of a
field the sweep fixes (``expect``), a point repeated, or lines that do not match their
digest. A sweep stored before digests existed is read with every check but the last.
Chunk records are checked by the experiment's own rule (lengths, non-negative counts
that sum to the chunk's size); a chunk cache that fails is only a cache: it is
discarded with one :class:`StoreWarning` and its chunks are computed again.

**One writer.** Opening a sweep to write takes an advisory lock (:func:`fcntl.flock`)
on ``NAME.lock`` in the output directory, which records the holder (process id, host,
start time); the operating system releases it when the process ends, however it ends,
so a killed run leaves no stale lock. A second writer of the same sweep is refused
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
streams, so other numbers). Finished chunks of unfinished points are kept in
``NAME.chunks.json`` (atomically, after every chunk), so a killed run loses at most the
chunks in flight. The submitting process is the only writer of all three files; a
chunk cache of a finished point (left by a crash) is ignored.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import typing
import zlib
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Generic, TypeVar

from ._chunks import ChunkCache, Counts
from ._errors import CorruptStore, ParameterMismatch
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
    """A grid of points computed into ``out/NAME.csv`` with metadata ``out/NAME.json``.

    Rows are typed: ``row_type`` is a dataclass whose first fields are the grid
    coordinates (``key_columns``); :func:`~._driver.compute_chunks` returns instances of
    it, and a resumed sweep reads the stored rows back into the same type (floats
    round-trip exactly).
    A point may give several rows (a training run: one row per epoch); they are saved
    together when the point is finished, and a resumed sweep skips the point.

    Opening a sweep takes its lock (unless ``lock=False``: read only) and checks what
    is stored (see the module docstring); the driver (:func:`~._driver.compute_chunks`) releases
    the lock when it ends, :meth:`close` (or leaving a ``with`` block) otherwise. The
    store keeps the files, their digests and the lock; the loop that fills it is the
    driver's.

    Parameters
    ----------
    out
        Output directory (created if missing).
    name
        File stem of the CSV, the JSON and (by convention) the figure.
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
        Take the sweep's lock (:class:`StoreLocked` if another process holds it).
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
        self.chunks_path = self.out / f"{name}.chunks.json"
        self.lock_path = self.out / f"{name}.lock"
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
        self.cache = ChunkCache(self.chunks_path, len(self.key_columns))
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
        self._lock = WriterLock(self.lock_path, self.csv_path, wait=wait) if lock else None
        try:
            self._open(overwrite)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Release the lock (the files are already saved); idempotent."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __enter__(self) -> Sweep[R]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ reading

    def _open(self, overwrite: bool) -> None:
        try:
            stored = self._load_meta()
        except CorruptStore:
            if not overwrite:
                raise
            stored = None
        if stored is None:
            if self.csv_path.exists() and not overwrite:
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
            self._load_rows(stored["columns"], stored.get("digests"))
        except CorruptStore:
            if not overwrite:
                raise
            self.rows = {}
            self._discard()
            return
        self.meta["runs"] = stored["runs"]
        self.cache.load()

    def _discard(self) -> None:
        """Start afresh: the old table and chunks go first, so that a crash before the
        first save leaves no table of other parameters beside new metadata."""
        self.csv_path.unlink(missing_ok=True)
        self.chunks_path.unlink(missing_ok=True)

    def _refuse(self, path: Path, what: str) -> CorruptStore:
        return CorruptStore(f"{path}: {what}; restore the file, or pass `overwrite=True` to "
                            "compute the sweep afresh")

    def _identity(self, params: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in params.items() if k not in self.grid}

    def _same_columns(self, stored: list[str]) -> bool:
        """The stored columns are ours, or ours without row fields that have a default (a
        column added later: older sweeps still load, the field at its default)."""
        defaulted = {f.name for f in dataclasses.fields(self.row_type)
                     if f.default is not dataclasses.MISSING}
        return stored in (self.columns, [c for c in self.columns if c not in defaulted])

    def _load_meta(self) -> dict[str, Any] | None:
        if not self.meta_path.exists():
            return None
        try:
            stored = json.loads(self.meta_path.read_text())
        except ValueError as err:  # not UTF-8 (a UnicodeError) or not JSON
            raise self._refuse(self.meta_path, f"not valid JSON ({err})") from None
        if not isinstance(stored, dict):
            raise self._refuse(self.meta_path, f"a JSON {type(stored).__name__}, not the "
                                               "metadata of a sweep")
        for key, kind in (("params", dict), ("runs", list), ("columns", list)):
            if not isinstance(stored.get(key), kind):
                raise self._refuse(self.meta_path, f"'{key}' is missing or not a JSON "
                                                   f"{'object' if kind is dict else 'list'}")
        digests = stored.get("digests")
        if digests is not None and not (
                isinstance(digests, dict) and all(isinstance(v, str) for v in digests.values())):
            raise self._refuse(self.meta_path, "'digests' is not an object of digests")
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

    def _load_rows(self, columns: list[str], digests: dict[str, str] | None) -> None:
        """Read the stored rows, checking each (see the module docstring); ``columns`` are
        the stored ones (:meth:`_same_columns`)."""
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
            if len(values) != len(columns):
                raise self._refuse(path, f"{where} has {len(values)} fields, not "
                                         f"{len(columns)}")
            text = dict(zip(columns, values, strict=True))
            fields = {}
            for column, read in self.readers.items():
                if column not in text:  # a defaulted column added after this sweep
                    continue
                try:
                    fields[column] = read(text[column])
                except (TypeError, ValueError):
                    raise self._refuse(path, f"{where}: {column} = {text[column]!r} does "
                                             "not parse") from None
            row = self.row_type(**fields)
            for column, value in self.echo.items():
                if text[column] != value:
                    raise self._refuse(path, f"{where}: {column} = {text[column]!r}, but the "
                                             f"sweep's is {value!r}")
            for column, value in self.expect.items():
                if fields[column] != value:
                    raise self._refuse(path, f"{where}: {column} = {text[column]!r}, but the "
                                             f"sweep's is {format_value(value)!r}")
            key = self.key(fields)
            if key in lines and (key != previous or values in lines[key]):
                raise self._refuse(path, f"{where} repeats the point "
                                         f"{self._describe(key)}")
            lines.setdefault(key, []).append(values)
            self.rows.setdefault(key, []).append(row)
            previous = key
        if digests is None:  # a sweep stored before digests existed
            return
        for key, values in lines.items():
            digest = digests.get("|".join(key))
            if digest is None:
                raise self._refuse(path, f"the point {self._describe(key)} is not recorded "
                                         f"in {self.meta_path.name}")
            if digest != _digest(values):
                raise self._refuse(path, f"the rows of {self._describe(key)} do not match "
                                         f"their digest in {self.meta_path.name}")

    def key(self, point: dict[str, Any]) -> tuple[str, ...]:
        return tuple(format_value(point[c]) for c in self.key_columns)

    def _describe(self, key: tuple[str, ...]) -> str:
        return " ".join(f"{c}={v}" for c, v in zip(self.key_columns, key, strict=True))

    def outside(self, points: Sequence[dict[str, Any]]) -> list[str]:
        """The stored points that are not among ``points``, described (``d=3 beta=0.5``)."""
        on_grid = {self.key(p) for p in points}
        return [self._describe(k) for k in self.rows if k not in on_grid]

    # ------------------------------------------------------------------ writing

    def _write(self, order: Iterable[tuple[str, ...]]) -> None:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(self.columns)
        digests = {}
        for key in order:
            values = [[_spell(row[c]) for c in self.readers] + list(self.echo.values())
                      for row in map(dataclasses.asdict, self.rows.get(key, ()))]
            if values:
                writer.writerows(values)
                digests["|".join(key)] = _digest(values)
        self.meta["digests"] = digests
        # the metadata first: a crash before the table leaves a digest of a point still
        # to compute, never a row without its digest
        atomic_write_text(self.meta_path, json.dumps(self.meta, indent=2, sort_keys=True) + "\n")
        atomic_write_text(self.csv_path, buf.getvalue())
        self.cache.write()

    def _save(self, write: Callable[[], None]) -> None:
        """``write()``, finished even when Ctrl-C lands in the middle (then re-raised).

        The CSV, the JSON and the chunk file are three files: an interrupt between them
        would leave the run record one point behind the table.
        """
        try:
            write()
        except KeyboardInterrupt:
            write()
            raise

    def is_done(self, point: dict[str, Any]) -> bool:
        """Whether ``point`` has a stored row."""
        return self.key(point) in self.rows

    def stored_chunks(self, point: dict[str, Any]) -> dict[int, Counts]:
        """The finished chunks of an unfinished ``point``: chunk index -> counts."""
        return self.cache.stored("|".join(self.key(point)))

    # ------------------------------------------------------------------ the driver's steps

    def keep_only(self, points: Sequence[dict[str, Any]], *,
                  prune: bool) -> list[tuple[str, ...]]:
        """Drop the stored rows outside ``points`` (pruned, if any) and the chunks of
        finished points (a crash between the table and the cache); off the grid,
        unfinished points keep their chunks unless pruned. The grid's keys, in order."""
        order = [self.key(p) for p in points]
        on_grid = set(order)
        self.rows = {k: v for k, v in self.rows.items() if k in on_grid}
        self.cache.points = {k: v for k, v in self.cache.points.items()
                             if tuple(k.split("|")) not in self.rows
                             and (not prune or tuple(k.split("|")) in on_grid)}
        return order

    def check_chunks(self, needed: dict[tuple[str, ...], int],
                     check: Callable[[dict[str, Any], int, Counts], str | None] | None,
                     points: dict[tuple[str, ...], dict[str, Any]]) -> None:
        """Check the cached chunks of the pending points (by key: their chunk counts and
        the points themselves); see :meth:`~._chunks.ChunkCache.check`."""
        self.cache.check({"|".join(k): n for k, n in needed.items()}, check,
                         {"|".join(k): p for k, p in points.items()})

    def start_run(self, points_total: int, executor: str) -> dict[str, Any]:
        """A new record of this run in the metadata (the driver fills it in)."""
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
        return record

    def stamp(self) -> None:
        """The sweep's wall time: the sum of its runs'."""
        self.meta["wall_time_s"] = round(sum(r["wall_time_s"] for r in self.meta["runs"]), 3)

    def keep(self, point: dict[str, Any], made: R | list[R]) -> None:
        """Take the rows of the finished ``point`` (checked: of the row type, of this
        point) and forget its chunks; :meth:`save` writes them."""
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
        self.rows[key] = rows
        self.cache.points.pop("|".join(key), None)

    def save(self, order: Iterable[tuple[str, ...]], *, finished: bool = False) -> None:
        """Write the table, the metadata and the chunk cache, the points in ``order``;
        finished even when Ctrl-C lands in the middle (then re-raised), unless this is
        the run's last save."""
        order = list(order)
        if finished:
            self._write(order)
        else:
            self._save(lambda: self._write(order))

    def save_chunk(self, point: dict[str, Any], k: int, counts: Any) -> None:
        """Keep chunk ``k`` of the unfinished ``point`` in the chunk cache, written now."""
        self.cache.points.setdefault("|".join(self.key(point)), {})[str(k)] = counts
        self._save(self.cache.write)

    def rows_in(self, order: Iterable[tuple[str, ...]]) -> list[R]:
        """Every row, the points in ``order``."""
        return [row for k in order for row in self.rows[k]]


def _digest(lines: list[list[str]]) -> str:
    """CRC-32 (8 hex digits) of a point's CSV lines, fields joined by commas."""
    return f"{zlib.crc32(chr(10).join(','.join(v) for v in lines).encode()):08x}"


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
