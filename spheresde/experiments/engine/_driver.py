"""The sweep driver: run a sweep's grid into its store, on the executor asked for.

:func:`run_chunked` runs a chunked spec (:class:`~._specs.AbstractChunkedSpec`): it opens
its :class:`~._store.Sweep`, computes the missing chunks on the executor that
:class:`RunOptions` asks for (:mod:`~._executors`) and draws the figure;
:func:`run_points` does the same for the whole points of an
:class:`~._specs.AbstractPointSpec`, in this process. Both run one loop,
:func:`compute_chunks`: the pending points and chunks, the progress bar, each finished
point or chunk stored at once, and the CSV and JSON written when the loop ends or
stops. Every run returns an :class:`AbstractResult`. The specs call these functions
(their ``run``); nothing here asks which class a spec is.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Generic

from tqdm.auto import tqdm

from ._chunks import Counts, chunk_sizes, task_groups
from ._executors import executor_for
from ._params import LARGEST_INT, BadParameters
from ._store import ParameterMismatch, R, Sweep, open_store


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


MOST_WORKERS = 1024
"""The most worker processes of a local Dask cluster (more would not start in time)."""

TASK_STEPS = 20_000_000
"""The trajectory-steps a task gathers at least (:attr:`RunOptions.task_steps`): about a
second of a many-token network's stepping, 40 ms of the two-token chain's, where a Dask
task and a store transaction cost a few milliseconds each."""

TASKS_PER_WORKER = 4
"""A sweep is cut into at least this many tasks a worker (fewer only when it has fewer
chunks), so that grouping small points never leaves a worker idle at the end."""


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """How to run a sweep (never what: none of it changes a number except ``chunk_size``,
    which is part of the identity of the stored sweep).

    ``chunk_size``: trajectories per chunk; ``workers``: run the chunks on a
    ``dask.distributed`` LocalCluster of that many worker processes (0: in this
    process); ``scheduler``: the address of an existing Dask scheduler instead;
    ``wait``: wait for another process writing into the same directory instead of
    refusing; ``prune``: drop the stored points outside the requested grid instead of
    refusing; ``task_steps``: the nominal trajectory-steps that one Dask task and one
    store transaction gather at least, chunks of consecutive points run together up to
    it (0: one chunk a task; see :func:`grouped`; not offered on the command line: it
    changes no number, only the cost around the chunks). The planner (``--dry-run``)
    reads the same options. The command line builds these options, so that their checks
    (``workers`` with ``scheduler``, the ranges of ``chunk_size`` and ``workers``) are
    this class's only.
    """

    quiet: bool = False
    overwrite: bool = False
    chunk_size: int = 10_000
    workers: int = 0
    scheduler: str | None = None
    wait: bool = False
    prune: bool = False
    task_steps: int = TASK_STEPS

    def __post_init__(self):
        if not 1 <= self.chunk_size <= LARGEST_INT:
            raise BadParameters(f"`chunk_size={self.chunk_size}` must be in [1, 2^53]")
        if not 0 <= self.workers <= MOST_WORKERS:
            raise BadParameters(f"`workers={self.workers}` must be in [0, {MOST_WORKERS}] "
                                "(a local cluster of one process a worker)")
        if self.workers and self.scheduler is not None:
            raise BadParameters("`workers` starts a local Dask cluster and `scheduler` uses "
                                "an existing one: give one of them")
        if not 0 <= self.task_steps <= LARGEST_INT:
            raise BadParameters(f"`task_steps={self.task_steps}` must be in [0, 2^53]")


def run_chunked(spec: Any, out: str | os.PathLike, options: RunOptions | None = None, *,
                name: str) -> SweepResult:
    """Run the chunked sweep ``spec`` into ``out/NAME.csv`` and draw ``NAME.png``;
    re-running resumes. Its chunks (``spec.chunk``, checked when read back by
    ``spec.check``) run on the executor of ``options`` and become rows by
    ``spec.finish``."""
    options = RunOptions() if options is None else options
    samples = spec.samples()
    sizes = tuple(chunk_sizes(samples, options.chunk_size) or [0])
    names = {f.name for f in dataclasses.fields(spec.row_type)}
    sweep = open_store(spec, out, name, options,
                       expect={"trajectories": samples} if "trajectories" in names else {})
    with sweep, executor_for(options) as running:
        rows = compute_chunks(
            sweep, spec.points(), lambda point: len(sizes),
            functools.partial(_chunk_task, spec, sizes), spec.finish, executor=running,
            quiet=options.quiet, desc=spec.progress(name),
            check=lambda point, k, counts: spec.check(counts, sizes[k]), prune=options.prune,
            group=functools.partial(grouped, spec, sizes, options.task_steps,
                                    running.workers))
    png = spec.plot(rows, Path(out) / f"{name}.png")
    return SweepResult(spec, rows, sweep.csv_path, sweep.meta_path, png)


def run_points(spec: Any, out: str | os.PathLike, options: RunOptions | None = None, *,
               name: str) -> SweepResult:
    """Run the point sweep ``spec`` into ``out/NAME.csv``, its points computed in this
    process by ``spec.compute`` in batches (``spec.together``), and draw ``NAME.png``."""
    options = RunOptions() if options is None else options
    points = spec.points()
    sweep = open_store(spec, out, name, options, meta=spec.prepare())
    rows = compute_points(sweep, points, _in_batches(spec, sweep, points, options.quiet),
                          quiet=options.quiet, desc=spec.progress(name), prune=options.prune)
    png = spec.plot(rows, Path(out) / f"{name}.png")
    return SweepResult(spec, rows, sweep.csv_path, sweep.meta_path, png)


def _in_batches(spec: Any, sweep: Sweep, points: list[dict], quiet: bool):
    """``compute(point)`` for :func:`compute_points`: the first pending point of a batch
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


def _chunk_task(spec, sizes, point, k):
    """One chunk as a picklable task: ``spec.chunk(point, k, sizes[k])``."""
    return spec.chunk(point, k, sizes[k])


def grouped(spec: Any, sizes: Sequence[int], task_steps: int, workers: int,
            chunks: list[tuple[dict[str, Any], int]]) -> list[list[tuple[dict[str, Any], int]]]:
    """The chunks ``(point, k)`` of a chunked ``spec`` gathered into tasks of at least
    ``task_steps`` nominal trajectory-steps (``sizes[k]`` trajectories of
    ``spec.point_steps(point)`` steps; :func:`~._chunks.task_groups`), but at least
    :data:`TASKS_PER_WORKER` tasks for each of ``workers`` where there are chunks enough."""
    def work(chunk: tuple[dict[str, Any], int]) -> int:
        point, k = chunk
        return sizes[k] * max(spec.point_steps(point), 1)

    total = sum(map(work, chunks))
    return task_groups(chunks, work, min(task_steps, total / (TASKS_PER_WORKER * workers)))


def _group_task(chunk: Callable, group: list[tuple[dict[str, Any], int]]) -> list:
    """The chunks of one task, one after the other: ``[chunk(point, k), ...]``."""
    return [chunk(point, k) for point, k in group]


# ---------------------------------------------------------------------------- the loop


def compute_points(
    sweep: Sweep,
    points: Sequence[dict[str, Any]],
    compute: Callable[[dict[str, Any]], R | list[R]],
    *,
    quiet: bool = False,
    desc: str | None = None,
    prune: bool = False,
) -> list[R]:
    """Compute every missing point of ``sweep`` in one piece each, saving after each;
    return all rows in grid order. ``compute(point)`` returns the row (an instance of
    the sweep's ``row_type`` whose key fields are the point's coordinates), or a
    non-empty list of such rows."""
    return compute_chunks(sweep, points, lambda point: 1, lambda point, k: compute(point),
                          lambda point, pieces: pieces[0], quiet=quiet, desc=desc,
                          prune=prune)


def compute_chunks(
    sweep: Sweep,
    points: Sequence[dict[str, Any]],
    chunks: Callable[[dict[str, Any]], int],
    chunk: Callable[[dict[str, Any], int], Any],
    finish: Callable[[dict[str, Any], list[Any]], R | list[R]],
    *,
    executor: Any = None,
    quiet: bool = False,
    desc: str | None = None,
    check: Callable[[dict[str, Any], int, Counts], str | None] | None = None,
    prune: bool = False,
    group: Callable[[list[tuple[dict[str, Any], int]]],
                    list[list[tuple[dict[str, Any], int]]]] | None = None,
) -> list[R]:
    """Compute every missing chunk of every missing point of ``sweep``; return all rows
    in grid order.

    ``chunks(point)`` is the number of chunks of a point, ``chunk(point, k)`` computes
    chunk ``k`` (JSON-ready counts when a point has more than one chunk: they are
    stored until the point is complete) and ``finish(point, results)`` makes the row
    from the results of all its chunks, in chunk order. ``executor`` (see
    :mod:`~._executors`; None: in this process, in task order) runs the chunks, in any
    order and anywhere; this process alone writes the files. ``check(point, k, counts)``
    says what is wrong with stored counts (None: nothing). Stored points outside
    ``points`` refuse (:class:`ParameterMismatch`) unless ``prune`` drops them.
    ``group(chunks)`` gathers the missing chunks ``(point, k)`` into tasks (None: one chunk
    a task, see :func:`grouped`): a task's chunks run one after the other where the
    executor puts it, and what they finish (rows of points, chunks of unfinished points)
    is stored in one transaction, so a killed run loses at most the tasks in flight. The
    sweep's lock is released when this returns or raises.
    """
    try:
        return _compute(sweep, points, chunks, chunk, finish, executor=executor,
                        quiet=quiet, desc=desc, check=check, prune=prune, group=group)
    finally:
        sweep.close()


def _compute(sweep: Sweep, points, chunks, chunk, finish, *, executor, quiet, desc, check,
             prune, group) -> list:
    outside = sweep.outside(points)
    if outside and not prune:
        shown = ", ".join(outside[:3]) + (f" and {len(outside) - 3} more"
                                          if len(outside) > 3 else "")
        raise ParameterMismatch(
            f"{sweep.csv_path} holds {len(outside)} finished point(s) outside the "
            f"requested grid ({shown}); add them to the grid to keep them, or pass "
            "`prune=True` to drop them")
    order = sweep.keep_only(points, prune=prune)
    pending = [p for p in points if not sweep.is_done(p)]
    needed = {sweep.key(p): chunks(p) for p in pending}
    sweep.check_chunks(needed, check, {sweep.key(p): p for p in pending})
    results: dict[tuple[str, ...], dict[int, Any]] = {
        sweep.key(p): sweep.stored_chunks(p) for p in pending}
    tasks = [(p, k) for p in pending for k in range(needed[sweep.key(p)])
             if k not in results[sweep.key(p)]]
    total = sum(needed.values())
    record = sweep.start_run(len(points), "serial" if executor is None else executor.describe())
    start = time.perf_counter()

    def stamp() -> None:
        record["wall_time_s"] = round(time.perf_counter() - start, 3)

    def complete(point: dict[str, Any]) -> None:
        key = sweep.key(point)
        pieces = results.pop(key)
        sweep.keep(point, finish(point, [pieces[k] for k in range(needed[key])]))

    try:
        with tqdm(total=total, initial=total - len(tasks), desc=desc or sweep.name,
                  disable=quiet, unit="chunk", dynamic_ncols=True) as bar:
            for point in pending:  # every chunk already stored (or none needed)
                if len(results[sweep.key(point)]) == needed[sweep.key(point)]:
                    stamp()
                    complete(point)
            groups = [(one,) for one in ([[task] for task in tasks] if group is None
                                         else group(tasks))]
            run_group = functools.partial(_group_task, chunk)
            done = (((one, run_group(*one)) for one in groups) if executor is None
                    else executor.map_unordered(run_group, groups))
            for (one,), values in done:
                finished, unfinished = [], []
                for (point, k), value in zip(one, values, strict=True):
                    key = sweep.key(point)
                    results[key][k] = value
                    if len(results[key]) == needed[key]:
                        pieces = results.pop(key)
                        finished.append((point, finish(point, [pieces[j]
                                                               for j in range(needed[key])])))
                    else:
                        unfinished.append((point, k, value))
                record["chunks_computed"] += len(one)
                stamp()
                # a point finished later in the same task keeps no chunk
                sweep.store(finished, [c for c in unfinished if sweep.key(c[0]) in results])
                bar.update(len(one))
        record["finished"] = True
    finally:  # the CSV and JSON of what is stored, whether the run ended or stopped
        stamp()
        sweep.export(order, finished=record["finished"])
    return sweep.rows_in(order)


__all__ = [
    "AbstractResult",
    "RunOptions",
    "SweepResult",
    "compute_chunks",
    "compute_points",
    "run_chunked",
    "run_points",
]
