"""Resumable parameter sweeps: one CSV row per grid point (or several), written atomically.

A sweep lives in an output directory as ``NAME.csv`` (the results, one typed row per
grid point, see :class:`Sweep`) and ``NAME.json``
(metadata: package version, every parameter, the seed, and one record per run with its
wall time and how many grid points it computed). Each finished grid point rewrites the
whole CSV through a temporary file and :func:`os.replace`, so an interrupted sweep
(Ctrl-C, a killed process, a power cut) leaves either the old or the new file, never a
torn one. Re-running with the same parameters computes only the missing points.

The identity of a sweep is every parameter except its grid axes: the same command with
one more beta computes only the new points (finished points still on the grid are
kept, points no longer on it leave the CSV); another value of a non-grid parameter (the
horizon, the seed, ...) refuses (:class:`ParameterMismatch`) unless told to overwrite.

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
chunks in flight. The submitting process is the only writer of all three files.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import functools
import io
import json
import os
import tempfile
import time
import typing
import zlib
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Generic, TypeVar

from tqdm.auto import tqdm


class ParameterMismatch(Exception):
    """The output directory holds a sweep made with other parameters."""


def format_value(value: Any) -> str:
    """The CSV spelling of a value: ``repr`` for floats (round-trips exactly), ``str`` else."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float) or type(value).__name__.startswith("float"):
        return repr(float(value))
    if type(value).__name__.startswith("int"):
        return str(int(value))
    return str(value)


def point_seed(seed: int, point: dict[str, Any]) -> int:
    """A 32-bit seed for one grid point, from the sweep seed and the point's coordinates.

    Only the point's own values enter (not its position in the grid), so adding, removing
    or reordering other points never changes its numbers.
    """
    text = ";".join(f"{k}={format_value(v)}" for k, v in sorted(point.items()))
    return zlib.crc32(f"{int(seed)}|{text}".encode())


def chunk_seed(seed: int, point: dict[str, Any], chunk: int) -> int:
    """A 32-bit seed for chunk ``chunk`` of a grid point: :func:`point_seed` with the chunk
    index appended, so a chunk's trajectories depend on (seed, point, chunk) only."""
    text = ";".join(f"{k}={format_value(v)}" for k, v in sorted(point.items()))
    return zlib.crc32(f"{int(seed)}|{text}|chunk={int(chunk)}".encode())


def chunk_sizes(samples: int, chunk_size: int) -> list[int]:
    """The sizes of the chunks of ``samples`` trajectories: ``chunk_size`` each, the last
    one the rest (no chunk at all for 0 samples, e.g. an exact method)."""
    if chunk_size < 1:
        raise ValueError(f"chunk size must be >= 1, got {chunk_size}")
    return [min(chunk_size, samples - start) for start in range(0, samples, chunk_size)]


def atomic_write_text(path: Path, text: str) -> None:
    """Replace ``path`` by ``text`` in one step (temporary file, fsync, :func:`os.replace`)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide results from other users
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
Counts = dict[str, Any]  # what a chunk returns: JSON-ready integer counts


class Sweep(Generic[R]):
    """A grid of points computed into ``out/NAME.csv`` with metadata ``out/NAME.json``.

    Rows are typed: ``row_type`` is a dataclass whose first fields are the grid
    coordinates (``key_columns``); :meth:`run` returns instances of it, and a resumed
    sweep reads the stored rows back into the same type (floats round-trip exactly).
    A point may give several rows (a training run: one row per epoch); they are saved
    together when the point is finished, and a resumed sweep skips the point.

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
        Discard a stored sweep with different parameters instead of refusing.
    meta
        Further metadata for ``NAME.json`` (library versions, say); not part of the
        resume identity.
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
    ):
        from .. import __version__

        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.csv_path = self.out / f"{name}.csv"
        self.meta_path = self.out / f"{name}.json"
        self.chunks_path = self.out / f"{name}.chunks.json"
        self.params = _normalized(params)
        self.grid = tuple(grid)
        self.row_type = row_type
        hints = typing.get_type_hints(row_type)
        self.readers = {f.name: _reader(hints[f.name]) for f in dataclasses.fields(row_type)}
        self.echo = {k: _spell(v) for k, v in (echo or {}).items() if k not in self.readers}
        self.columns = [*self.readers, *self.echo]
        self.key_columns = list(key_columns)
        self.rows: dict[tuple[str, ...], list[R]] = {}
        self.partial: dict[str, dict[str, Counts]] = {}  # point key -> chunk index -> counts
        self.meta: dict[str, Any] = {
            "sweep": name,
            "package": "spheresde",
            "version": __version__,
            "params": self.params,
            "seed": self.params.get("seed"),
            "columns": self.columns,
            "chunk_size": chunk_size,
            "runs": [],
            **(meta or {}),
        }
        stored = self._load_meta()
        if stored is not None and not overwrite:
            if (self._identity(stored.get("params") or {}) != self._identity(self.params)
                    or not self._same_columns(stored.get("columns"))
                    or stored.get("chunk_size") != chunk_size):
                raise ParameterMismatch(self._mismatch_message(stored))
            self.meta["runs"] = stored.get("runs", [])
            self._load_rows()
            self._load_partial()
        elif stored is None and self.csv_path.exists() and not overwrite:
            raise ParameterMismatch(
                f"{self.csv_path} exists without its metadata {self.meta_path.name}; "
                "pass --overwrite to replace it"
            )

    def _same_columns(self, stored: list[str] | None) -> bool:
        """The stored columns are ours, or ours without trailing row fields that have a
        default (a column added later: older sweeps still load, the field at its default)."""
        defaulted = {f.name for f in dataclasses.fields(self.row_type)
                     if f.default is not dataclasses.MISSING}
        return stored == self.columns or stored == [c for c in self.columns
                                                    if c not in defaulted]

    def _identity(self, params: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in params.items() if k not in self.grid}

    def _load_meta(self) -> dict[str, Any] | None:
        if not self.meta_path.exists():
            return None
        try:
            return json.loads(self.meta_path.read_text())
        except json.JSONDecodeError as err:
            raise ParameterMismatch(
                f"{self.meta_path} is not valid JSON ({err}); pass --overwrite to start afresh"
            ) from err

    def _mismatch_message(self, stored_meta: dict[str, Any]) -> str:
        stored = {**self._identity(stored_meta.get("params") or {}),
                  "chunk_size": stored_meta.get("chunk_size")}
        now = {**self._identity(self.params), "chunk_size": self.meta["chunk_size"]}
        changed = sorted(k for k in set(stored) | set(now) if stored.get(k) != now.get(k))
        details = ", ".join(
            f"{k}: stored {json.dumps(stored.get(k))} vs now {json.dumps(now.get(k))}"
            for k in changed
        )
        return (
            f"{self.out} already holds a '{self.name}' sweep made with other parameters "
            f"({details or 'different columns'}); use another --out or pass --overwrite"
        )

    def _load_rows(self) -> None:
        if not self.csv_path.exists():
            return
        with self.csv_path.open(newline="") as f:
            for text in csv.DictReader(f):
                row = self.row_type(**{k: read(text[k]) for k, read in self.readers.items()
                                       if k in text})
                self.rows.setdefault(self._key(dataclasses.asdict(row)), []).append(row)

    def _load_partial(self) -> None:
        if not self.chunks_path.exists():
            return
        try:
            self.partial = json.loads(self.chunks_path.read_text())["points"]
        except (json.JSONDecodeError, KeyError):
            self.partial = {}  # only a cache of finished chunks: recompute them

    def _key(self, point: dict[str, Any]) -> tuple[str, ...]:
        return tuple(format_value(point[c]) for c in self.key_columns)

    def _write(self, order: Iterable[tuple[str, ...]]) -> None:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(self.columns)
        for key in order:
            for typed in self.rows.get(key, ()):
                row = dataclasses.asdict(typed)
                writer.writerow([_spell(row[c]) for c in self.readers] + list(self.echo.values()))
        atomic_write_text(self.csv_path, buf.getvalue())
        atomic_write_text(self.meta_path, json.dumps(self.meta, indent=2, sort_keys=True) + "\n")
        self._write_partial()

    def _write_partial(self) -> None:
        if self.partial:
            atomic_write_text(self.chunks_path, json.dumps({"points": self.partial}) + "\n")
        else:
            self.chunks_path.unlink(missing_ok=True)

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

    def _stamp(self, record: dict[str, Any], start: float) -> None:
        record["wall_time_s"] = round(time.perf_counter() - start, 3)
        self.meta["wall_time_s"] = round(sum(r["wall_time_s"] for r in self.meta["runs"]), 3)

    def is_done(self, point: dict[str, Any]) -> bool:
        """Whether ``point`` has a stored row."""
        return self._key(point) in self.rows

    def stored_chunks(self, point: dict[str, Any]) -> dict[int, Counts]:
        """The finished chunks of an unfinished ``point``: chunk index -> counts."""
        return {int(k): v for k, v in self.partial.get("|".join(self._key(point)), {}).items()}

    def run(
        self,
        points: Sequence[dict[str, Any]],
        compute: Callable[[dict[str, Any]], R | list[R]],
        *,
        quiet: bool = False,
        desc: str | None = None,
    ) -> list[R]:
        """Compute every missing point in one piece each, saving after each; return all
        rows in grid order. ``compute(point)`` returns the row (an instance of
        ``row_type`` whose key fields are the point's coordinates), or a non-empty list
        of such rows."""
        return self.run_chunked(points, lambda point: 1, lambda point, k: compute(point),
                                lambda point, pieces: pieces[0], quiet=quiet, desc=desc)

    def run_chunked(
        self,
        points: Sequence[dict[str, Any]],
        chunks: Callable[[dict[str, Any]], int],
        chunk: Callable[[dict[str, Any], int], Any],
        finish: Callable[[dict[str, Any], list[Any]], R | list[R]],
        *,
        executor: Any = None,
        quiet: bool = False,
        desc: str | None = None,
    ) -> list[R]:
        """Compute every missing chunk of every missing point; return all rows in grid order.

        ``chunks(point)`` is the number of chunks of a point, ``chunk(point, k)`` computes
        chunk ``k`` (JSON-ready counts when a point has more than one chunk: they are
        stored until the point is complete) and ``finish(point, results)`` makes the row
        from the results of all its chunks, in chunk order. ``executor`` (see
        :mod:`spheresde.experiments._executors`; in this process by default) runs the
        chunks, in any order and anywhere; this process alone writes the files.
        """
        from ._executors import SerialExecutor

        executor = SerialExecutor() if executor is None else executor
        order = [self._key(p) for p in points]
        # points no longer on the grid leave the table and the chunk store
        on_grid = set(order)
        self.rows = {k: v for k, v in self.rows.items() if k in on_grid}
        self.partial = {k: v for k, v in self.partial.items()
                        if tuple(k.split("|")) in on_grid}
        pending = [p for p in points if not self.is_done(p)]
        needed = {self._key(p): chunks(p) for p in pending}
        results: dict[tuple[str, ...], dict[int, Any]] = {
            self._key(p): self.stored_chunks(p) for p in pending}
        tasks = [(p, k) for p in pending for k in range(needed[self._key(p)])
                 if k not in results[self._key(p)]]
        total = sum(needed.values())
        record: dict[str, Any] = {
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "points_total": len(points),
            "points_computed": 0,
            "chunks_computed": 0,
            "executor": executor.describe(),
            "wall_time_s": 0.0,
            "finished": False,
        }
        self.meta["runs"].append(record)
        start = time.perf_counter()

        def complete(point: dict[str, Any]) -> None:
            key = self._key(point)
            pieces = results.pop(key)
            made = finish(point, [pieces[k] for k in range(needed[key])])
            rows = made if isinstance(made, list) else [made]
            if not rows:
                raise ValueError(f"compute({point}) returned no row")
            for row in rows:
                if not isinstance(row, self.row_type):
                    raise TypeError(f"compute() must return a {self.row_type.__name__} "
                                    f"or a list of them, got {type(row).__name__}")
                if self._key(dataclasses.asdict(row)) != key:
                    raise ValueError(f"compute({point}) returned the row of another point")
            self.rows[key] = rows
            self.partial.pop("|".join(key), None)
            record["points_computed"] += 1

        with tqdm(total=total, initial=total - len(tasks), desc=desc or self.name,
                  disable=quiet, unit="chunk", dynamic_ncols=True) as bar:
            for point in pending:  # every chunk already stored (or none needed)
                if len(results[self._key(point)]) == needed[self._key(point)]:
                    complete(point)
            self._stamp(record, start)
            self._save(lambda: self._write(order))
            for (point, k), value in executor.map_unordered(chunk, tasks):
                key = self._key(point)
                results[key][k] = value
                record["chunks_computed"] += 1
                self._stamp(record, start)
                if len(results[key]) == needed[key]:
                    complete(point)
                    self._save(lambda: self._write(order))
                else:
                    self.partial.setdefault("|".join(key), {})[str(k)] = value
                    self._save(self._write_partial)
                bar.update()
        self._stamp(record, start)
        record["finished"] = True
        self._write(order)
        return [row for k in order for row in self.rows[k]]


@dataclasses.dataclass(frozen=True)
class SweepResult(Generic[R]):
    """A finished sweep: its spec, its typed rows and the files it wrote."""

    spec: Any
    rows: list[R]
    csv: Path
    json: Path
    png: Path


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """How to run a sweep (never what: none of it changes a number except ``chunk_size``,
    which is part of the identity of the stored sweep).

    ``chunk_size``: trajectories per chunk; ``workers``: run the chunks on a
    ``dask.distributed`` LocalCluster of that many worker processes (0: in this
    process); ``scheduler``: the address of an existing Dask scheduler instead;
    ``dry_run``: print the plan and a wall-time estimate, write nothing.
    """

    quiet: bool = False
    overwrite: bool = False
    chunk_size: int = 10_000
    workers: int = 0
    scheduler: str | None = None
    dry_run: bool = False


def run_options(options: RunOptions | None, *, quiet: bool = False,
                overwrite: bool = False) -> RunOptions:
    """``options`` (default :class:`RunOptions`) with ``quiet`` / ``overwrite`` also set
    when asked for by the keyword arguments the ``run_*`` functions keep."""
    base = RunOptions() if options is None else options
    return dataclasses.replace(base, quiet=base.quiet or quiet,
                               overwrite=base.overwrite or overwrite)


def monte_carlo_size(spec: Any) -> tuple[int, int]:
    """Trajectories per grid point and steps per trajectory of a Monte Carlo spec
    (``trajectories``, ``round(horizon * layers)``); ``(0, 0)`` for ``method="exact"``."""
    if getattr(spec, "method", None) == "exact":
        return 0, 0
    return spec.trajectories, round(spec.horizon * spec.layers)


def run_sweep(spec: Any, out: str | os.PathLike, row_type: type[R],
              chunk: Callable[[Any, dict[str, Any], int, int], Counts],
              finish: Callable[[Any, dict[str, Any], list[Counts]], R],
              plot: Callable[[list[R], Any, Path], Path], *, name: str, desc: str,
              samples: int | None = None, steps: int | None = None,
              options: RunOptions | None = None,
              executor: Any = None) -> SweepResult[R] | list[str]:
    """What every experiment's sweep does: open the store, compute the missing chunks of
    the points of ``spec.points()`` with ``chunk(spec, point, k, size)``, make each row
    with ``finish(spec, point, counts)``, draw ``plot(rows, spec, path)``.

    ``samples`` is the number of trajectories of a point (0: no Monte Carlo, one
    chunk of size 0) and ``steps`` the steps of one trajectory (for the plan); by default
    :func:`monte_carlo_size` of the spec. The key
    columns are the coordinates of the points; the resume identity and metadata are
    ``spec.params()`` (its grid axes, the tuple fields, may change), the echoed columns
    ``spec.echo()``. With ``options.dry_run`` it returns the lines of the plan instead.
    """
    from ._executors import executor_for
    from ._plan import plan_lines

    options = RunOptions() if options is None else options
    default_samples, default_steps = monte_carlo_size(spec)
    samples = default_samples if samples is None else samples
    steps = default_steps if steps is None else steps
    points = spec.points()
    sizes = chunk_sizes(samples, options.chunk_size) or [0]
    grid = [f.name for f in spec.spec_fields() if f.kind.is_tuple]
    if options.dry_run:
        return plan_lines(spec, out, name, row_type, points, sizes, steps, grid, chunk, options)
    sweep = Sweep(out, name, spec.params(), row_type, tuple(points[0]), grid=grid,
                  echo=spec.echo(), chunk_size=options.chunk_size, overwrite=options.overwrite)
    task = functools.partial(_chunk_task, chunk, spec, tuple(sizes))
    with executor_for(options) if executor is None else _borrowed(executor) as running:
        rows = sweep.run_chunked(points, lambda point: len(sizes), task,
                                 lambda point, counts: finish(spec, point, counts),
                                 executor=running, quiet=options.quiet, desc=desc)
    png = plot(rows, spec, Path(out) / f"{name}.png")
    return SweepResult(spec, rows, sweep.csv_path, sweep.meta_path, png)


def run_point_sweep(spec: Any, out: str | os.PathLike, row_type: type[R],
                    compute: Callable[[Any, dict[str, Any]], R | list[R]],
                    plot: Callable[[list[R], Any, Path], Path], *, name: str, desc: str,
                    quiet: bool = False, overwrite: bool = False,
                    meta: dict[str, Any] | None = None) -> SweepResult[R]:
    """A sweep whose points are not Monte Carlo (no chunks, run in this process): open
    the store, compute each missing point of ``spec.points()`` with
    ``compute(spec, point)`` (a row or a list of rows), draw ``plot(rows, spec, path)``.

    The resume identity is ``spec.params()`` (its grid axes, the tuple fields, may
    change), the echoed columns ``spec.echo()``; ``meta`` goes into the JSON beside them.
    """
    points = spec.points()
    grid = [f.name for f in spec.spec_fields() if f.kind.is_tuple]
    sweep = Sweep(out, name, spec.params(), row_type, tuple(points[0]), grid=grid,
                  echo=spec.echo(), overwrite=overwrite, meta=meta)
    rows = sweep.run(points, lambda point: compute(spec, point), quiet=quiet, desc=desc)
    png = plot(rows, spec, Path(out) / f"{name}.png")
    return SweepResult(spec, rows, sweep.csv_path, sweep.meta_path, png)


def _chunk_task(chunk, spec, sizes, point, k):
    """One chunk as a picklable task: ``chunk(spec, point, k, sizes[k])``."""
    return chunk(spec, point, k, sizes[k])


@contextlib.contextmanager
def _borrowed(executor):
    yield executor
