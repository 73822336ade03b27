"""The sweep driver: run an experiment's grid into its store, on the executor asked for.

:func:`run_sweep` runs any sweep spec (:class:`~._spec.AbstractSweepSpec`): it opens its
:class:`~._store.Sweep` (its CSV, JSON and chunk cache, see
:mod:`spheresde.experiments._store`), computes the missing points (the chunks of an
:class:`~._spec.AbstractChunkedSpec` on the executor that :class:`RunOptions` asks for,
:mod:`spheresde.experiments._executors`; the points of an
:class:`~._spec.AbstractPointSpec` in this process) and draws the figure.
:func:`plan_sweep` says what it would compute instead
(:mod:`spheresde.experiments._plan`). Every run returns an :class:`AbstractResult`.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import os
from pathlib import Path
from typing import Any, Generic

from ._executors import executor_for
from ._planning import plan_estimate
from ._specs import (
    AbstractChunkedSpec,
    AbstractPointSpec,
    AbstractSweepSpec,
    BadParameters,
    Plan,
)
from ._store import ParameterMismatch, R, Sweep, chunk_sizes


class AbstractResult(abc.ABC):
    """What a run of a spec wrote and found: ``spec`` and the result's own fields (each
    final result is a frozen dataclass)."""

    spec: Any

    @abc.abstractmethod
    def summary(self) -> list[str]:
        """The lines that say what the run wrote (the command line prints them)."""


@dataclasses.dataclass(frozen=True)
class SweepResult(AbstractResult, Generic[R]):
    """A finished sweep: its spec, its typed rows and the files it wrote."""

    spec: Any
    rows: list[R]
    csv: Path
    json: Path
    png: Path

    def summary(self) -> list[str]:
        """``wrote NAME.csv, NAME.json and NAME.png``."""
        return [f"wrote {self.csv}, {self.json} and {self.png}"]


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """How to run a sweep (never what: none of it changes a number except ``chunk_size``,
    which is part of the identity of the stored sweep).

    ``chunk_size``: trajectories per chunk; ``workers``: run the chunks on a
    ``dask.distributed`` LocalCluster of that many worker processes (0: in this
    process); ``scheduler``: the address of an existing Dask scheduler instead;
    ``wait``: wait for another process writing the same sweep instead of refusing;
    ``prune``: drop the stored points outside the requested grid instead of refusing.
    The planner (``--dry-run``) reads the same options.
    """

    quiet: bool = False
    overwrite: bool = False
    chunk_size: int = 10_000
    workers: int = 0
    scheduler: str | None = None
    wait: bool = False
    prune: bool = False

    def __post_init__(self):
        if self.workers and self.scheduler is not None:
            raise BadParameters("`workers` starts a local Dask cluster and `scheduler` uses "
                                "an existing one: give one of them")


def _store(spec: AbstractSweepSpec, out: str | os.PathLike, name: str, options: RunOptions,
           **extra: Any) -> Sweep:
    """The store of ``spec``'s run ``name``: key columns the coordinates of the points,
    resume identity and metadata ``spec.params()`` (its grid axes, the tuple fields,
    may change), echoed columns ``spec.echo()``."""
    grid = [f.name for f in spec.spec_fields() if f.kind.is_tuple]
    return Sweep(out, name, spec.params(), spec.row_type, tuple(spec.points()[0]), grid=grid,
                 echo=spec.echo(), overwrite=options.overwrite, wait=options.wait, **extra)


def run_sweep(spec: AbstractSweepSpec, out: str | os.PathLike,
              options: RunOptions | None = None, *, name: str | None = None) -> SweepResult:
    """Run the sweep ``spec`` into ``out/NAME.csv`` (``name``: the file stem, by default
    the spec's command) and draw ``NAME.png``; re-running resumes.

    A chunked spec's points are computed chunk by chunk (``spec.chunk``, checked when
    read back by ``spec.check``) on the executor of ``options`` and made rows by
    ``spec.finish``; a point spec's by ``spec.compute`` in this process.
    """
    options = RunOptions() if options is None else options
    name = spec.command if name is None else name
    points = spec.points()
    if isinstance(spec, AbstractChunkedSpec):
        samples = spec.samples()
        sizes = tuple(chunk_sizes(samples, options.chunk_size) or [0])
        names = {f.name for f in dataclasses.fields(spec.row_type)}
        sweep = _store(spec, out, name, options, chunk_size=options.chunk_size,
                       expect={"trajectories": samples} if "trajectories" in names else {})
        with sweep, executor_for(options) as running:
            rows = sweep.run_chunked(
                points, lambda point: len(sizes), functools.partial(_chunk_task, spec, sizes),
                spec.finish, executor=running, quiet=options.quiet, desc=spec.progress(name),
                check=lambda point, k, counts: spec.check(counts, sizes[k]),
                prune=options.prune)
    elif isinstance(spec, AbstractPointSpec):
        sweep = _store(spec, out, name, options, meta=spec.prepare())
        rows = sweep.run(points, _in_batches(spec, sweep, points, options.quiet),
                         quiet=options.quiet, desc=spec.progress(name), prune=options.prune)
    else:
        raise TypeError(f"{type(spec).__name__} is neither a chunked nor a point sweep")
    png = spec.plot(rows, Path(out) / f"{name}.png")
    return SweepResult(spec, rows, sweep.csv_path, sweep.meta_path, png)


def plan_sweep(spec: AbstractSweepSpec, out: str | os.PathLike,
               options: RunOptions | None = None, *, name: str | None = None) -> list[str]:
    """The lines ``--dry-run`` prints for the sweep ``spec`` (see
    :mod:`spheresde.experiments._plan`); nothing is written."""
    return estimate_sweep(spec, out, options, name=name).lines


def estimate_sweep(spec: AbstractSweepSpec, out: str | os.PathLike,
                   options: RunOptions | None = None, *, name: str | None = None) -> Plan:
    """:func:`plan_sweep`'s lines and the estimated wall time in seconds (a
    :class:`~spheresde.experiments.Plan`)."""
    options = RunOptions() if options is None else options
    name = spec.command if name is None else name
    if isinstance(spec, AbstractPointSpec):
        return _point_plan(spec, Path(out), name, options)
    return plan_estimate(spec, Path(out), name, options)


def _in_batches(spec: AbstractPointSpec, sweep: Sweep, points: list[dict], quiet: bool):
    """``compute(point)`` for :meth:`Sweep.run`: the first pending point of a batch
    (``spec.together``) computes every pending point of that batch in one call of
    ``spec.compute``; the store then takes their rows one point at a time, saving each."""
    computed: dict[tuple, list] = {}

    def compute(point: dict) -> list:
        key = tuple(sorted(point.items()))
        if key not in computed:
            batch = [p for p in points
                     if spec.together(p) == spec.together(point) and not sweep.is_done(p)]
            rows = spec.compute(batch, quiet=quiet)
            computed.update(zip((tuple(sorted(p.items())) for p in batch), rows, strict=True))
        return computed.pop(key)

    return compute


def _point_plan(spec: AbstractPointSpec, out: Path, name: str, options: RunOptions) -> Plan:
    """``spec.plan`` of the points not stored in ``out`` (all of them with ``overwrite``),
    or the refusal a run would meet."""
    points = spec.points()
    stored = [out / f"{name}.{ext}" for ext in ("json", "csv")]
    if options.overwrite or not any(path.exists() for path in stored):  # opening would mkdir
        return spec.plan(name, points)
    try:
        with _store(spec, out, name, options, lock=False) as sweep:
            outside = sweep.outside(points)
            pending = [p for p in points if not sweep.is_done(p)]
    except ParameterMismatch as err:
        return Plan([f"{name}: {spec.command_line()}", f"  would refuse: {err}"], None)
    if outside and not options.prune:
        return Plan([f"{name}: {spec.command_line()}",
                     f"  would refuse: {sweep.csv_path} holds {len(outside)} finished "
                     "point(s) outside the requested grid; pass `prune=True` to drop them"],
                    None)
    return spec.plan(name, pending)


def _chunk_task(spec, sizes, point, k):
    """One chunk as a picklable task: ``spec.chunk(point, k, sizes[k])``."""
    return spec.chunk(point, k, sizes[k])
