"""The store's cost per grid point, against the full rewrite it replaced (run explicitly).

    .venv/bin/python tests/benchmarks/bench_store.py [--sizes 300,3000] [--rewrite-up-to 3000]

The same grid is stored twice in this process, with the same rows, made up cheaply
(no numerics: only the store is timed):

- **store**: the engine's :class:`~spheresde.experiments.Sweep` as a run opens it (one
  SQLite transaction a finished point, the CSV and JSON written once at the end);
- **rewrite** (the baseline, simulated): what the store did up to commit cd95338, after
  every finished point the whole CSV and the JSON with every point's digest written
  again through ``atomic_write_text`` (temporary file, fsync, rename), the same bytes
  the store writes once at the end.

Grids: ``phase --method exact`` over ``--sizes`` betas (``--dims 4``), and the
paper-size ``dominance`` (1,620 points, its rows and echoed parameters). Printed per
grid: the seconds of each, their ratio, and the milliseconds a point costs in the first
and last tenth of the grid (equal for a cost that does not grow with the grid). The
rewrite of grids above ``--rewrite-up-to`` points is not run (it is quadratic).

A shared disk's fsync varies from run to run: compare the two columns of one run.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import io
import itertools
import json
import tempfile
import time
import typing
from pathlib import Path

from spheresde.experiments import DominanceSpec, PhaseSpec, RunOptions, compute_points
from spheresde.experiments._scales import SCALES
from spheresde.experiments.engine import atomic_write_text
from spheresde.experiments.engine._store import _digest, open_store


def made_up_row(row_type: type, point: dict, k: int):
    """A row of ``row_type`` at ``point``: its coordinates, then values of each field's
    type as wide as real ones (a float of 17 digits, a word)."""
    hints = typing.get_type_hints(row_type)
    values = {}
    for field in dataclasses.fields(row_type):
        kind = hints[field.name]
        if field.name in point:
            values[field.name] = point[field.name]
        elif kind is float:
            values[field.name] = (k + 1) / 7.0
        elif kind is int:
            values[field.name] = 1000 + k
        elif kind is str:
            values[field.name] = "antipodal"
        else:
            values[field.name] = (k, k + 1)
    return row_type(**values)


def per_point_ms(stamps: list[float]) -> tuple[float, float]:
    """Milliseconds between consecutive points, averaged over the first and the last
    tenth of the grid."""
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    tenth = max(len(gaps) // 10, 1)
    return 1e3 * sum(gaps[:tenth]) / tenth, 1e3 * sum(gaps[-tenth:]) / tenth


def store(spec, out: Path, name: str) -> tuple[float, list[float]]:
    """Seconds to store every point of ``spec`` in ``out`` through the engine, and the
    time at which each point was handed over."""
    points = spec.points()
    stamps: list[float] = []

    def compute(point):
        stamps.append(time.perf_counter())
        return made_up_row(spec.row_type, point, len(stamps))

    start = time.perf_counter()
    sweep = open_store(spec, out, name, RunOptions(quiet=True))
    compute_points(sweep, points, compute, quiet=True)
    return time.perf_counter() - start, stamps


def rewrite(out: Path, name: str) -> tuple[float, list[float]]:
    """Seconds to write the CSV and JSON that the store wrote in ``out`` as the store
    before cd95338 did: all of both after every point."""
    with (out / f"{name}.csv").open(newline="") as f:
        header, *lines = list(csv.reader(f))
    meta = json.loads((out / f"{name}.json").read_text())
    keys = list(meta["digests"])
    assert len(keys) == len(lines), "one row a point (phase, dominance)"
    target = out / "rewrite"
    target.mkdir()
    stamps = []
    start = time.perf_counter()
    for k in range(1, len(lines) + 1):
        stamps.append(time.perf_counter())
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(lines[:k])
        meta["digests"] = {key: _digest([line]) for key, line in zip(keys, lines[:k],
                                                                        strict=False)}
        atomic_write_text(target / f"{name}.json", json.dumps(meta, indent=2, sort_keys=True))
        atomic_write_text(target / f"{name}.csv", buf.getvalue())
    return time.perf_counter() - start, stamps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="300,3000", help="phase grid sizes, comma-separated")
    parser.add_argument("--rewrite-up-to", type=int, default=3000,
                        help="run the rewrite baseline only for grids up to this many points")
    args = parser.parse_args()
    grids = [(f"phase exact, {n} betas", "phase",
              PhaseSpec(method="exact", dims=(4,), betas=tuple(0.01 + 10 * k / n
                                                               for k in range(n))))
             for n in map(int, args.sizes.split(","))]
    paper = SCALES["full"]["dominance"]
    assert isinstance(paper, DominanceSpec)
    grids.append(("dominance, paper size", "dominance", paper))
    print(f"{'grid':<28}{'points':>8}{'store s':>10}{'rewrite s':>11}{'ratio':>8}"
          f"{'store ms/pt first, last':>26}{'rewrite ms/pt first, last':>28}")
    for label, name, spec in grids:
        with tempfile.TemporaryDirectory() as folder:
            out = Path(folder)
            seconds, stamps = store(spec, out, name)
            first, last = per_point_ms(stamps)
            line = (f"{label:<28}{len(stamps):>8}{seconds:>10.2f}")
            if len(stamps) <= args.rewrite_up_to:
                old, old_stamps = rewrite(out, name)
                old_first, old_last = per_point_ms(old_stamps)
                line += (f"{old:>11.2f}{old / seconds:>8.1f}{first:>13.2f},{last:>7.2f}"
                         f"{old_first:>19.2f},{old_last:>7.2f}")
            else:
                line += f"{'-':>11}{'-':>8}{first:>13.2f},{last:>7.2f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
