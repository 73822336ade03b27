"""What a chunk costs beyond its stepping, with one chunk a task against grouped tasks.

    .venv/bin/python tests/benchmarks/bench_chunk_overhead.py [--workers 0,1,2] [--points 96]

A ``dominance`` grid of many small points (a few trajectories of a few layers each, so
that the costs around a chunk dominate), run in one process, for each executor (0: this
process; N: a local Dask cluster of N workers, started once and warmed by a first run of
the grid, so that compiling is out of the timings):

- ``compute``: each chunk and its row (``finish``) one after the other in this process, no
  store, no task (JAX dispatch, absorption levels, classification: the cost that stays);
- ``one a task``: the sweep with one chunk a Dask task and a store transaction
  (``task_steps=0``, the behaviour before grouping);
- ``grouped``: the sweep with the default :data:`~spheresde.experiments.engine._driver.TASK_STEPS`.

Each into a fresh directory, best of ``--repeats``. The per-task cost (a Dask task and a
store transaction) is ``(one a task - grouped) / (tasks saved)``; the last lines price it
at the paper's ``dominance`` (1,620 points) against its measured 4.5 min of stepping.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

# the smaller of the two times of issue 47 (idle: 4.5 min; 15 min as 1,620 one-point
# chunks): the stricter denominator for the share of tasks and writes
PAPER_DOMINANCE_S = 4.5 * 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="0,1,2", help="comma-separated; 0: this process")
    parser.add_argument("--points", type=int, default=96, help="grid points (tokens 3 and 4)")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()

    import functools

    from spheresde.experiments import DominanceSpec
    from spheresde.experiments._scales import FULL
    from spheresde.experiments.engine._chunks import chunk_sizes
    from spheresde.experiments.engine._driver import (
        TASK_STEPS,
        RunOptions,
        _chunk_task,
        compute_chunks,
        grouped,
    )
    from spheresde.experiments.engine._executors import executor_for
    from spheresde.experiments.engine._store import open_store

    betas = args.points // (2 * 4)
    # n > 2: no exact two-token law to finish a row with, whose seconds would blur the rest
    spec = DominanceSpec(tokens=(3, 4), dims=(3,),
                         betas=tuple(0.5 + 0.25 * i for i in range(betas)),
                         eps=(0.8, 1.0, 1.5, 2.0), trajectories=16, layers=4, horizon=2.0,
                         horizon_scale=0.0, max_horizon=0.0)
    points = spec.points()
    sizes = tuple(chunk_sizes(spec.samples(), 10_000))

    def sweep(out: Path, executor, task_steps: int) -> tuple[float, int]:
        options = RunOptions(quiet=True, task_steps=task_steps)
        store = open_store(spec, out, "dominance", options)
        tasks = []
        group = functools.partial(grouped, spec, sizes, task_steps, executor.workers)

        def counted(chunks):
            tasks.extend(group(chunks))
            return tasks

        start = time.perf_counter()
        compute_chunks(store, points, lambda p: len(sizes),
                       functools.partial(_chunk_task, spec, sizes), spec.finish,
                       executor=executor, quiet=True, group=counted)
        return time.perf_counter() - start, len(tasks)

    for point in points:  # compile every program of the grid in this process
        spec.chunk(point, 0, sizes[0])
    start = time.perf_counter()
    for point in points:
        spec.finish(point, [spec.chunk(point, 0, sizes[0])])
    compute = time.perf_counter() - start
    print(f"{len(points)} points of {sizes[0]} trajectories x {spec.point_steps(points[0])} "
          f"layers; compute alone {compute:.2f} s ({1e3 * compute / len(points):.1f} ms a "
          "chunk and its row); timings on a shared machine, best of "
          f"{args.repeats}")
    print(f"{'executor':<12} {'one a task s':>13} {'tasks':>6} {'grouped s':>10} {'tasks':>6} "
          f"{'ratio':>6} {'ms a task':>10} {'ms a chunk over compute':>24}")
    per_task = {}
    with tempfile.TemporaryDirectory() as scratch:
        for workers in (int(w) for w in args.workers.split(",")):
            with executor_for(RunOptions(workers=workers)) as executor:
                sweep(Path(scratch) / f"warm{workers}", executor, 0)  # the workers compile
                runs = {}
                for steps in (0, TASK_STEPS):
                    runs[steps] = min(
                        sweep(Path(scratch) / f"w{workers}-s{steps}-r{r}", executor, steps)
                        for r in range(args.repeats))
            (single, single_tasks), (group, group_tasks) = runs[0], runs[TASK_STEPS]
            per_task[workers] = max(single - group, 0.0) / max(single_tasks - group_tasks, 1)
            label = "this process" if workers == 0 else f"{workers} worker(s)"
            print(f"{label:<12} {single:>13.2f} {single_tasks:>6} {group:>10.2f} "
                  f"{group_tasks:>6} {single / group:>6.2f} {1e3 * per_task[workers]:>10.2f} "
                  f"{1e3 * (single - compute) / len(points):>24.2f}", flush=True)

    paper = FULL["dominance"]
    paper_points = paper.points()
    paper_sizes = tuple(chunk_sizes(paper.samples(), 10_000))
    chunks = [(p, 0) for p in paper_points]
    for workers, cost in per_task.items():
        tasks = len(grouped(paper, paper_sizes, TASK_STEPS, max(workers, 1), chunks))
        before = len(chunks) * cost
        after = tasks * cost
        label = "this process" if workers == 0 else f"{workers} worker(s)"
        print(f"paper dominance, {label}: {len(chunks)} tasks -> {tasks}; "
              f"tasks and writes {before:.1f} s -> {after:.1f} s, "
              f"{before / PAPER_DOMINANCE_S:.1%} -> {after / PAPER_DOMINANCE_S:.1%} of its "
              f"{PAPER_DOMINANCE_S / 60:.1f} min")


if __name__ == "__main__":
    main()
