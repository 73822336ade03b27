"""Resumable parameter sweeps: one CSV row per grid point (or several), written atomically.

A sweep lives in an output directory as ``NAME.csv`` (the results, one typed row per
grid point, or several such as the epochs of a training run, see :class:`Sweep`) and ``NAME.json``
(metadata: package version, every parameter, the seed, and one record per run with its
wall time and how many grid points it computed). Each finished grid point rewrites the
whole CSV through a temporary file and :func:`os.replace`, so an interrupted sweep
(Ctrl-C, a killed process, a power cut) leaves either the old or the new file, never a
torn one. Re-running with the same parameters computes only the missing points; with
different parameters it refuses (:class:`ParameterMismatch`) unless told to overwrite.

Every grid point draws its randomness from :func:`point_seed` of the sweep seed and the
point's own coordinates, so a resumed sweep gives the same numbers as an uninterrupted
one, whatever order the points are computed in.
"""

from __future__ import annotations

import csv
import dataclasses
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


class Sweep(Generic[R]):
    """A grid of points computed one by one into ``out/NAME.csv`` with metadata ``out/NAME.json``.

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
        stored ones on reopening.
    row_type
        The dataclass of a row.
    key_columns
        The row fields that identify a grid point (e.g. ``("d", "beta")``).
    echo
        Constant columns appended to every CSV row (the scalar parameters, so that a CSV
        read alone says how it was made); not part of the typed rows.
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
        echo: dict[str, Any] | None = None,
        overwrite: bool = False,
        meta: dict[str, Any] | None = None,
    ):
        from .. import __version__

        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.csv_path = self.out / f"{name}.csv"
        self.meta_path = self.out / f"{name}.json"
        self.params = _normalized(params)
        self.row_type = row_type
        hints = typing.get_type_hints(row_type)
        self.readers = {f.name: _reader(hints[f.name]) for f in dataclasses.fields(row_type)}
        self.echo = {k: _spell(v) for k, v in (echo or {}).items() if k not in self.readers}
        self.columns = [*self.readers, *self.echo]
        self.key_columns = list(key_columns)
        self.rows: dict[tuple[str, ...], list[R]] = {}
        self.meta: dict[str, Any] = {
            "sweep": name,
            "package": "spheresde",
            "version": __version__,
            "params": self.params,
            "seed": self.params.get("seed"),
            "columns": self.columns,
            "runs": [],
            **(meta or {}),
        }
        stored = self._load_meta()
        if stored is not None and not overwrite:
            if stored.get("params") != self.params or stored.get("columns") != self.columns:
                raise ParameterMismatch(self._mismatch_message(stored.get("params") or {}))
            self.meta["runs"] = stored.get("runs", [])
            self._load_rows()
        elif stored is None and self.csv_path.exists() and not overwrite:
            raise ParameterMismatch(
                f"{self.csv_path} exists without its metadata {self.meta_path.name}; "
                "pass --overwrite to replace it"
            )

    def _load_meta(self) -> dict[str, Any] | None:
        if not self.meta_path.exists():
            return None
        try:
            return json.loads(self.meta_path.read_text())
        except json.JSONDecodeError as err:
            raise ParameterMismatch(
                f"{self.meta_path} is not valid JSON ({err}); pass --overwrite to start afresh"
            ) from err

    def _mismatch_message(self, stored: dict[str, Any]) -> str:
        changed = sorted(
            k for k in set(stored) | set(self.params) if stored.get(k) != self.params.get(k)
        )
        details = ", ".join(
            f"{k}: stored {json.dumps(stored.get(k))} vs now {json.dumps(self.params.get(k))}"
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
                row = self.row_type(**{k: read(text[k]) for k, read in self.readers.items()})
                self.rows.setdefault(self._key(dataclasses.asdict(row)), []).append(row)

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

    def _save(self, order: list[tuple[str, ...]]) -> None:
        """:meth:`_write`, finished even when Ctrl-C lands in the middle (then re-raised).

        The CSV and the JSON are two files: an interrupt between them would leave the run
        record one point behind the table.
        """
        try:
            self._write(order)
        except KeyboardInterrupt:
            self._write(order)
            raise

    def _stamp(self, record: dict[str, Any], start: float) -> None:
        record["wall_time_s"] = round(time.perf_counter() - start, 3)
        self.meta["wall_time_s"] = round(sum(r["wall_time_s"] for r in self.meta["runs"]), 3)

    def is_done(self, point: dict[str, Any]) -> bool:
        """Whether ``point`` has a stored row."""
        return self._key(point) in self.rows

    def run(
        self,
        points: Sequence[dict[str, Any]],
        compute: Callable[[dict[str, Any]], R | list[R]],
        *,
        quiet: bool = False,
        desc: str | None = None,
    ) -> list[R]:
        """Compute every missing point, saving after each; return all rows in grid order.

        ``compute(point)`` returns the row (an instance of ``row_type`` whose key fields
        are the point's coordinates), or a non-empty list of such rows.
        """
        order = [self._key(p) for p in points]
        pending = [p for p in points if not self.is_done(p)]
        record: dict[str, Any] = {
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "points_total": len(points),
            "points_computed": 0,
            "wall_time_s": 0.0,
            "finished": False,
        }
        self.meta["runs"].append(record)
        start = time.perf_counter()
        with tqdm(
            total=len(points),
            initial=len(points) - len(pending),
            desc=desc or self.name,
            disable=quiet,
            unit="pt",
            dynamic_ncols=True,
        ) as bar:
            for point in pending:
                computed = compute(point)
                rows = computed if isinstance(computed, list) else [computed]
                for row in rows:
                    if not isinstance(row, self.row_type):
                        raise TypeError(f"compute() must return a {self.row_type.__name__} "
                                        f"or a list of them, got {type(row).__name__}")
                    if self._key(dataclasses.asdict(row)) != self._key(point):
                        raise ValueError(f"compute({point}) returned the row of another point")
                if not rows:
                    raise ValueError(f"compute({point}) returned no row")
                self.rows[self._key(point)] = rows
                record["points_computed"] += 1
                self._stamp(record, start)
                self._save(order)
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


def run_sweep(spec: Any, out: str | os.PathLike, row_type: type[R],
              compute: Callable[[Any, dict[str, Any]], R | list[R]],
              plot: Callable[[list[R], Any, Path], Path], *, name: str, desc: str,
              quiet: bool = False, overwrite: bool = False,
              meta: dict[str, Any] | None = None) -> SweepResult[R]:
    """What every experiment's sweep does: open the store, compute the missing points of
    ``spec.points()`` with ``compute(spec, point)``, draw ``plot(rows, spec, path)``.

    The key columns are the coordinates of the points; the resume identity and metadata
    are ``spec.params()``, the echoed columns ``spec.echo()``; ``meta`` goes into the
    JSON beside them.
    """
    points = spec.points()
    sweep = Sweep(out, name, spec.params(), row_type, tuple(points[0]), echo=spec.echo(),
                  overwrite=overwrite, meta=meta)
    rows = sweep.run(points, lambda point: compute(spec, point), quiet=quiet, desc=desc)
    png = plot(rows, spec, Path(out) / f"{name}.png")
    return SweepResult(spec, rows, sweep.csv_path, sweep.meta_path, png)
