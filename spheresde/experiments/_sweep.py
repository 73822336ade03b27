"""Resumable parameter sweeps: one CSV row per grid point, written atomically.

A sweep lives in an output directory as ``NAME.csv`` (the results) and ``NAME.json``
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
import io
import json
import os
import tempfile
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

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


class Sweep:
    """A grid of points computed one by one into ``out/NAME.csv`` with metadata ``out/NAME.json``.

    Parameters
    ----------
    out
        Output directory (created if missing).
    name
        File stem of the CSV, the JSON and (by convention) the figure.
    params
        Every parameter that changes the results, JSON-serializable; compared with the
        stored ones on reopening.
    columns
        CSV columns, in order.
    key_columns
        The columns that identify a grid point (e.g. ``("d", "beta")``).
    overwrite
        Discard a stored sweep with different parameters instead of refusing.
    """

    def __init__(
        self,
        out: str | os.PathLike,
        name: str,
        params: dict[str, Any],
        columns: Sequence[str],
        key_columns: Sequence[str],
        *,
        overwrite: bool = False,
    ):
        from .. import __version__

        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.csv_path = self.out / f"{name}.csv"
        self.meta_path = self.out / f"{name}.json"
        self.params = _normalized(params)
        self.columns = list(columns)
        self.key_columns = list(key_columns)
        self.rows: dict[tuple[str, ...], dict[str, str]] = {}
        self.meta: dict[str, Any] = {
            "sweep": name,
            "package": "spheresde",
            "version": __version__,
            "params": self.params,
            "seed": self.params.get("seed"),
            "columns": self.columns,
            "runs": [],
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
            for row in csv.DictReader(f):
                self.rows[self._key(row)] = row

    def _key(self, row: dict[str, Any]) -> tuple[str, ...]:
        return tuple(format_value(row[c]) for c in self.key_columns)

    def _write(self, order: Iterable[tuple[str, ...]]) -> None:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=self.columns, lineterminator="\n")
        writer.writeheader()
        for key in order:
            if key in self.rows:
                writer.writerow(self.rows[key])
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
        compute: Callable[[dict[str, Any]], dict[str, Any]],
        *,
        quiet: bool = False,
        desc: str | None = None,
    ) -> list[dict[str, str]]:
        """Compute every missing point, saving after each; return all rows in grid order.

        ``compute(point)`` returns the row's values (the key columns may be omitted: they
        are taken from ``point``). Rows come back as the CSV strings.
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
                values = {**point, **compute(point)}
                missing = set(self.columns) - set(values)
                if missing:
                    raise KeyError(f"compute() gave no value for columns {sorted(missing)}")
                self.rows[self._key(point)] = {c: format_value(values[c]) for c in self.columns}
                record["points_computed"] += 1
                self._stamp(record, start)
                self._save(order)
                bar.update()
        self._stamp(record, start)
        record["finished"] = True
        self._write(order)
        return [self.rows[k] for k in order]
