"""The sweep driver: run an experiment's grid into its store, on the executor asked for.

:func:`run_sweep` opens the :class:`~._store.Sweep` of an experiment (its CSV, JSON and
chunk cache, see :mod:`spheresde.experiments._store`), runs the missing chunks on the
executor that :class:`RunOptions` asks for (:mod:`spheresde.experiments._executors`),
or prints the plan (:mod:`spheresde.experiments._plan`) with ``--dry-run``, and draws
the figure; :func:`run_point_sweep` does the same for sweeps without chunks.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic

from ._executors import executor_for
from ._plan import plan_lines
from ._simulate import counts_problem
from ._spec import BadParameters
from ._store import Counts, R, Sweep, chunk_sizes


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
    ``dry_run``: print the plan and a wall-time estimate, write nothing; ``wait``: wait
    for another process writing the same sweep instead of refusing; ``prune``: drop the
    stored points outside the requested grid instead of refusing.
    """

    quiet: bool = False
    overwrite: bool = False
    chunk_size: int = 10_000
    workers: int = 0
    scheduler: str | None = None
    dry_run: bool = False
    wait: bool = False
    prune: bool = False

    def __post_init__(self):
        if self.workers and self.scheduler is not None:
            raise BadParameters("workers starts a local Dask cluster and scheduler uses an "
                                "existing one: give one of them")


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
                  echo=spec.echo(), chunk_size=options.chunk_size, overwrite=options.overwrite,
                  expect=_expected(row_type, samples), wait=options.wait)
    task = functools.partial(_chunk_task, chunk, spec, tuple(sizes))
    with sweep, executor_for(options) if executor is None else _borrowed(executor) as running:
        rows = sweep.run_chunked(points, lambda point: len(sizes), task,
                                 lambda point, counts: finish(spec, point, counts),
                                 executor=running, quiet=options.quiet, desc=desc,
                                 check=lambda point, k, counts: counts_problem(counts, sizes[k]),
                                 prune=options.prune)
    png = plot(rows, spec, Path(out) / f"{name}.png")
    return SweepResult(spec, rows, sweep.csv_path, sweep.meta_path, png)


def run_point_sweep(spec: Any, out: str | os.PathLike, row_type: type[R],
                    compute: Callable[[Any, dict[str, Any]], R | list[R]],
                    plot: Callable[[list[R], Any, Path], Path], *, name: str, desc: str,
                    options: RunOptions | None = None,
                    meta: dict[str, Any] | None = None) -> SweepResult[R]:
    """A sweep whose points are not Monte Carlo (no chunks, run in this process): open
    the store, compute each missing point of ``spec.points()`` with
    ``compute(spec, point)`` (a row or a list of rows), draw ``plot(rows, spec, path)``.

    The resume identity is ``spec.params()`` (its grid axes, the tuple fields, may
    change), the echoed columns ``spec.echo()``; ``meta`` goes into the JSON beside them.
    ``options``: quiet, overwrite, wait and prune (the others are for chunked sweeps).
    """
    options = RunOptions() if options is None else options
    points = spec.points()
    grid = [f.name for f in spec.spec_fields() if f.kind.is_tuple]
    sweep = Sweep(out, name, spec.params(), row_type, tuple(points[0]), grid=grid,
                  echo=spec.echo(), overwrite=options.overwrite, meta=meta, wait=options.wait)
    rows = sweep.run(points, lambda point: compute(spec, point), quiet=options.quiet,
                     desc=desc, prune=options.prune)
    png = plot(rows, spec, Path(out) / f"{name}.png")
    return SweepResult(spec, rows, sweep.csv_path, sweep.meta_path, png)


def _expected(row_type: type, samples: int) -> dict[str, int]:
    """The row fields every stored row of a Monte Carlo sweep must have: its trajectories."""
    names = {f.name for f in dataclasses.fields(row_type)}
    return {"trajectories": samples} if "trajectories" in names else {}


def _chunk_task(chunk, spec, sizes, point, k):
    """One chunk as a picklable task: ``chunk(spec, point, k, sizes[k])``."""
    return chunk(spec, point, k, sizes[k])


@contextlib.contextmanager
def _borrowed(executor):
    yield executor
