"""``--dry-run``: what a sweep would compute, and about how long it would take here.

The plan counts the points and chunks still to compute (those already stored in the
output directory are skipped, as a real run would skip them) and their
trajectory-steps, and prices them by measurements made now, in this process:

- **stepping**: one small chunk with a short horizon run twice (the first call compiles),
  its throughput in trajectory-steps per second applied to what is left;
- **compiling**: the first call's extra time, then the time of each further program
  the sweep compiles. Which grid fields compile a program of their own is found by
  trying: a tiny chunk of the real horizon is run at the first point with one field
  changed at a time, and a field whose change compiles (seen by :mod:`jax.monitoring`) multiplies
  the count of programs by its number of values (the tries' mean time prices one);
- **finishing**: ``spec.finish`` (the laws a row is compared with) timed at up to
  :data:`FINISH_POINTS` points spread over the grid, per point left (its cost varies
  over the grid: the finite-depth law of a phase point takes 0.3 s to 5 s), and the
  figure drawn from those rows copied over the whole grid (a figure needs the grid's
  shape: hybrid's table of every (beta, eps), dominance's edges over eps), after its
  ``figure_needs`` (``dominance``'s edges derive the formation thresholds);
- **probes**: up to :data:`PROBES` points over the grid (:func:`_design`: its opposite
  corners, then a Latin hypercube over the axes, so that every axis is probed at both
  ends, the corner where nothing is absorbed and long horizons included) run a chunk of
  :data:`PROBE_TRAJECTORIES` trajectories over their full horizon (with early absorption
  when the sweep absorbs), timed; the stepping is priced by their seconds per nominal
  trajectory-step (a ratio over the probes: points with long horizons weigh more), less
  what each probe chunk costs beyond its steps (below), so that a grid whose points
  differ in cost (more tokens, a larger d, trajectories that are absorbed early or
  never) is priced where it costs and not at its first point. The probes run again at
  the real chunk's width, dearest first, for up to :data:`PROBE_BUDGET` seconds more
  (:func:`_widen`: a chunk's cost is not proportional to its width), the others scaled
  by the ratio those measured. As many probes run as fit in :data:`PROBE_BUDGET` seconds
  at the calibrated speed (every step counted); with fewer than two, the first point's
  speed prices every step. The programs the probes compile (early absorption narrows a batch
  to widths that compile programs of their own, which the tries above never reach) are
  counted, and each family of points that compiles its own is priced at what a probed
  family compiled;
- **around the steps**: what every chunk costs however few its steps (drawing the starts,
  its point's absorption levels, dispatching, classifying: :func:`_call_seconds`, a chunk
  of one layer timed at :data:`CALL_POINTS` points), once a chunk: from cold point caches
  for a point's first chunk in each process that runs one, cached for the others (a
  point's absorption levels and formation laws are computed once a process); and what
  every task costs (:func:`~._driver.grouped` gathers small points into tasks): a store
  transaction, timed in a scratch store beside the output directory, and with Dask a
  task's own :data:`DASK_TASK_SECONDS` (``dominance`` at the paper's size: 1,620 chunks of 9 to 25
  ms each, in 61 tasks).

``dominance`` at the paper's size shows why the probes cover every axis: at d = 2 no
certificate absorbs (every step is simulated, 8 s a point of 16 tokens at eps = 0.05 on
loaded cores), at d >= 3 a small eps simulates 5% of its steps; probes spread along the
grid's order saw 14.5% of the steps simulated, the corners and the hypercube 36%.

With ``--workers N`` the stepping is divided by the speedup N chunks reach together on
this machine's cores, measured (:func:`_speedup`: the calibration chunk's throughput
alone, then with N copies at once, over a few seconds), not by N: one process of an
n-token network already keeps two cores busy, and two workers on two cores then run it
about 1.5 to 1.7 times as fast as one, where two tokens reach 1.7 to 1.8. Compiling is
divided by N (each worker compiles what it runs, so compiling is divided only as far as
there are programs to share); what a chunk costs around its steps is divided by the same
speedup, a task's is not; finishing runs in this process. Nothing is written (the
figure is drawn, and store transactions are timed, in scratch directories, removed).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, NamedTuple

from ._chunks import chunk_sizes
from ._database import STORE
from ._driver import grouped
from ._store import ParameterMismatch, open_store

CALIBRATION_TRAJECTORIES = 2048  # wide enough for a vectorized kernel to reach its speed
CALIBRATION_STEPS = 400
PROBE_TRAJECTORIES = 256
PROBES = 12  # points probed over the full horizon, at most
CALL_POINTS = 5  # points at which a chunk of one layer is timed (what a chunk costs beyond steps)
STORE_COMMITS = 20  # store transactions timed, in a scratch store beside the output directory
DASK_TASK_SECONDS = 0.005
"""What a Dask task costs beyond its chunks, on a local cluster (submitting, scheduling,
pickling the spec and the counts): ``tests/benchmarks/bench_chunk_overhead.py`` measured
4.7 to 5.0 ms a task, a store transaction included, with 2 workers on 2 idle cores, in
three runs (the plan starts no cluster to measure it). It was 20 ms, a figure no
measurement on record supported: 480 tasks of ``hybrid_two_tokens`` at the paper's size
were priced 10 s, a fifth of the sweep."""
PROBE_BUDGET = 60.0  # seconds, for all probes together, at the calibrated speed
SPEEDUP_SECONDS = 1.0  # chunks run alone, then together, for this long each round
SPEEDUP_ROUNDS = 3  # rounds of the two, alternated so that a slow spell weighs on both
SPEEDUP_TIMEOUT = 600.0  # seconds a process timing chunks at once may take
PROGRAM_TRAJECTORIES = 16  # a chunk just wide enough to compile the real program
FINISH_POINTS = 6  # points spread over the grid at which finishing a row is timed


class Plan(NamedTuple):
    """What ``--dry-run`` says of one run: the lines it prints, and the estimated wall
    time in seconds (None when the run would refuse)."""

    lines: list[str]
    seconds: float | None


def stored_points(spec: Any, out: Path, name: str, points: list[dict],
                  options: Any) -> tuple[set[int], dict[int, int], str | None]:
    """Indices of the points stored in ``out``, stored chunk counts of the others, and the
    refusal a run would meet (None: none), read without the lock; nothing is stored with
    ``overwrite`` (and nothing is created when nothing is stored)."""
    if options.overwrite or not any(path.exists() for path in (
            out / STORE, out / f"{name}.json", out / f"{name}.csv")):
        return set(), {}, None
    try:
        sweep = open_store(spec, out, name, options, lock=False)
    except ParameterMismatch as err:
        return set(), {}, str(err)
    outside = sweep.outside(points)
    if outside and not options.prune:
        return set(), {}, (f"{sweep.csv_path} holds {len(outside)} finished point(s) outside "
                           "the requested grid; pass `prune=True` to drop them")
    done = {i for i, p in enumerate(points) if sweep.is_done(p)}
    partial = {i: len(sweep.stored_chunks(p)) for i, p in enumerate(points) if i not in done}
    return done, partial, None


def plan_points(spec: Any, out: Path, name: str, options: Any) -> Plan:
    """``spec.estimate`` (an :class:`~._specs.AbstractPointSpec`) of the points not stored
    in ``out``, or the refusal a run would meet."""
    points = spec.points()
    done, _, refusal = stored_points(spec, out, name, points, options)
    if refusal:
        return Plan([f"{name}: {spec.command_line()}", f"  would refuse: {refusal}"], None)
    return spec.estimate(name, [p for i, p in enumerate(points) if i not in done])


def _calibrate(spec: Any, point: dict, steps: int,
               size: int) -> tuple[float, float, float]:
    """(first-call seconds, trajectory-steps per second, the part of the first call's
    excess that JAX spent compiling) of a chunk of ``size`` at ``point`` with a short
    horizon."""
    short_steps = min(steps, CALIBRATION_STEPS)
    short = spec.shortened(short_steps)
    start, compiled = time.perf_counter(), _compile_seconds()
    short.chunk(point, 0, size)
    first, compiled = time.perf_counter() - start, _compile_seconds() - compiled
    start = time.perf_counter()
    short.chunk(point, 0, size)
    second = time.perf_counter() - start
    return max(first - second, 0.0), size * short_steps / max(second, 1e-9), compiled


def _speedup(spec: Any, point: dict, steps: int, size: int, parallel: int) -> float:
    """How many times one chunk's throughput ``parallel`` chunks reach when they run at
    once on this machine: the calibration chunk run over and over, alone and as
    ``parallel`` copies at once, :data:`SPEEDUP_ROUNDS` rounds of
    :data:`SPEEDUP_SECONDS` each, alternated; each copy in a process of its own as the
    workers run them (spawned; each compiles first, untimed); chunks done per second
    compared. A program that already uses every core alone gains little.

    Threads, which this measured first, share one interpreter lock: a chunk whose host
    loop holds it (an absorbing chunk checks its trajectories between segments) read 0.99
    for ``hybrid_two_tokens`` at the paper's size. Then the best of three timings of one
    chunk each read 1.22 to 1.82 for it on one idle machine, where its chunks take
    milliseconds; its paper-size run priced at 1.36 took 0.75 of the estimate. Chunks
    counted over alternated rounds read 1.63 to 1.69."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    short = spec.shortened(min(steps, CALIBRATION_STEPS))
    barrier, results = context.Barrier(parallel), context.Queue()
    processes = [context.Process(target=_copies_timed,
                                 args=(short, point, size, rank, barrier, results))
                 for rank in range(parallel)]
    for process in processes:
        process.start()
    try:
        got = [results.get(timeout=SPEEDUP_TIMEOUT) for _ in processes]
    finally:
        for process in processes:
            process.join(timeout=SPEEDUP_TIMEOUT)
            if process.is_alive():
                process.kill()
    failed = [text for _, text, _ in got if isinstance(text, str)]
    if failed:
        raise RuntimeError(f"timing {parallel} chunks at once failed: {failed[0]}")
    alone = next(rates for rank, rates, _ in got if rank == 0)
    together = [sum(rates[r] for _, _, rates in got) for r in range(SPEEDUP_ROUNDS)]
    return sum(together) / max(sum(alone), 1e-12)


def _copies_timed(spec: Any, point: dict, size: int, rank: int, barrier: Any,
                  results: Any) -> None:
    """One process of :func:`_speedup`: compile, then :data:`SPEEDUP_ROUNDS` rounds of
    chunks per second alone (rank 0 only, the others waiting) and together with the
    others, each start at a barrier; puts ``(rank, [chunks per second alone] or None,
    [chunks per second together])``, or the error's text in place of the first."""
    try:
        spec.chunk(point, 0, size)  # compiles
        alone, together = [], []
        for _ in range(SPEEDUP_ROUNDS):
            barrier.wait()
            if rank == 0:
                alone.append(_chunks_per_second(spec, point, size))
            barrier.wait()
            together.append(_chunks_per_second(spec, point, size))
        results.put((rank, alone if rank == 0 else None, together))
    except BaseException as error:  # the parent reports it instead of waiting for nothing
        barrier.abort()
        results.put((rank, f"{type(error).__name__}: {error}", []))


def _chunks_per_second(spec: Any, point: dict, size: int) -> float:
    """Chunks finished per second, run one after another for :data:`SPEEDUP_SECONDS` (at
    least one)."""
    start, done = time.perf_counter(), 0
    while True:
        spec.chunk(point, 0, size)
        done += 1
        elapsed = time.perf_counter() - start
        if elapsed >= SPEEDUP_SECONDS:
            return done / elapsed


_COMPILED = {"seconds": 0.0, "programs": 0, "listening": False}


def _compile_seconds() -> float:
    """Seconds JAX has spent tracing, lowering and compiling in this process since the
    first call (a :mod:`jax.monitoring` listener, registered once)."""
    return _compiled()[0]


def _compiled() -> tuple[float, int]:
    """(seconds, programs) JAX has compiled in this process since the first call."""
    if not _COMPILED["listening"]:
        import jax.monitoring

        def heard(event: str, seconds: float, **kwargs) -> None:
            # tracing and lowering count too: for the layer loops they cost about as much
            # as XLA's compile itself
            if event.startswith("/jax/core/compile/"):
                _COMPILED["seconds"] += seconds
            if event.endswith("backend_compile_duration"):
                _COMPILED["programs"] += 1

        jax.monitoring.register_event_duration_secs_listener(heard)
        _COMPILED["listening"] = True
    return _COMPILED["seconds"], _COMPILED["programs"]


def _programs(spec: Any, points: list[dict]) -> tuple[int, float, tuple[str, ...]]:
    """How many programs the sweep over ``points`` compiles, the seconds one more
    program costs and the fields that compile: the product of the counts of values of the
    grid fields whose change alone compiles a new program (tried with a tiny chunk of the
    real horizon at the first point: a horizon that follows a field, as the hybrid sweeps'
    eps, compiles a program per value), and the mean time of those tries."""
    first = points[0]
    spec.chunk(first, 0, PROGRAM_TRAJECTORIES)  # this size's program at the first point
    programs, tries, fields = 1, [], []
    for field in first:
        values = {p[field] for p in points}
        if len(values) < 2:
            continue
        other = next(p for p in points if p[field] != first[field])
        start, compiled = time.perf_counter(), _compile_seconds()
        spec.chunk({**first, field: other[field]}, 0, PROGRAM_TRAJECTORIES)
        if _compile_seconds() > compiled:
            programs *= len(values)
            tries.append(time.perf_counter() - start)
            fields.append(field)
    return (min(programs, len(points)), (sum(tries) / len(tries) if tries else 0.0),
            tuple(fields))


class Probes(NamedTuple):
    """What the probes measured: their number, each one's seconds (compiling excluded)
    and their nominal trajectory-steps (of the points' own horizons), the share of those steps
    simulated, the counts of each probe chunk, the probe points, and the programs they
    compiled with the seconds that took (the batches that early absorption narrows
    compile programs of their own, which the tries of :func:`_programs` never see)."""

    points: int
    seconds: list[float]
    nominal: int
    share: float
    counts: list[dict]
    chosen: list[dict]
    programs: int
    compile_seconds: float


def _probe(spec: Any, points: list[dict], size: int, rate: float) -> Probes | None:
    """Probe chunks of ``size`` trajectories at as many points of :func:`_design` over
    ``points`` (at most :data:`PROBES`) as fit in :data:`PROBE_BUDGET` seconds at ``rate``
    with every step counted; None when fewer than two fit (or there is one point and it
    does not)."""
    for count in range(min(PROBES, len(points)), min(2, len(points)) - 1, -1):
        chosen = _design(points, count)
        if size * sum(map(spec.point_steps, chosen)) / rate <= PROBE_BUDGET:
            break
    else:
        return None
    import jax

    took, nominal, simulated, counts = [], 0, 0, []
    # from empty caches, so that the probes compile all that their points compile in a run
    # of their own (the calibration and the tries have compiled some of it already)
    jax.clear_caches()
    compile_before = _compiled()
    for point in chosen:
        seconds, compiling, chunk_counts = _cold_chunk(spec, point, size)
        counts.append(chunk_counts)
        took.append(max(seconds - compiling, 0.0))
        steps = size * spec.point_steps(point)
        nominal += steps
        simulated += counts[-1].get("steps", steps)
    compile_after = _compiled()
    return Probes(len(chosen), took, nominal, simulated / max(nominal, 1), counts,
                  chosen, compile_after[1] - compile_before[1],
                  compile_after[0] - compile_before[0])


def _widen(spec: Any, probe: Probes, narrow: int, wide: int, wide_call: float,
           bare: list[float]) -> tuple[list[float], int]:
    """The probes' seconds at the real chunk's width ``wide``, each scaled to ``narrow``
    trajectories (so that a ratio over the probes' nominal steps prices a step), and how
    many were measured there.

    ``bare`` holds each probe's seconds at ``narrow`` trajectories less what a chunk costs
    beyond its steps, ``wide_call`` that cost at ``wide`` (:func:`_call_seconds`, cold).
    The probes run again with ``wide`` trajectories, the dearest first
    (they weigh most in the price), until :data:`PROBE_BUDGET` seconds are spent (so at
    most one real chunk beyond it); the others are scaled from ``narrow`` to ``wide`` by
    the ratio of the widened ones' seconds, pooled. A ratio pooled over cheap probes does
    not fit a dear one: at n = 8, beta = 5 a chunk's formation laws cost as much at 256
    trajectories as at 4,000 (17 s and 21 s), where at n = 3, beta = 1 the wide chunk
    costs ten times the narrow one. Skipping a dear probe whose wide run was predicted
    at that ratio to overrun the budget priced ``tokens`` at 43 s a chunk there.

    A chunk's cost is not proportional to its width: early absorption leaves a few
    trajectories of a chunk running to the horizon in a block of lanes whatever the width,
    and a formation's law is computed once a chunk however many trajectories it finishes.
    Priced per trajectory at a narrower width, those costs read several times too high:
    two tokens' chunks of 10,000 at 2,048 trajectories, twice the measured 42 s; n-token
    chunks of 4,000 at 2,048, 1.46 times."""
    if wide <= narrow:
        return list(bare), 0
    spent, measured = 0.0, {}
    for i in sorted(range(probe.points), key=lambda i: -bare[i]):
        if spent >= PROBE_BUDGET:
            break
        took, compiling, _ = _cold_chunk(spec, probe.chosen[i], wide)
        spent += took
        measured[i] = max(took - compiling - wide_call, 0.0)
    seen = sum(bare[j] for j in measured)
    ratio = sum(measured.values()) / seen if seen > 0 else wide / narrow
    at_wide = [measured.get(i, bare[i] * ratio) for i in range(probe.points)]
    return [t * narrow / wide for t in at_wide], len(measured)


def _cold_chunk(spec: Any, point: dict, size: int) -> tuple[float, float, Any]:
    """Chunk 0 of ``size`` trajectories at ``point`` from cold point caches
    (:meth:`~._specs.AbstractChunkedSpec.clear_point_caches`: it pays what its point's
    chunk pays in a run): its seconds, the part of them JAX spent compiling, its counts."""
    spec.clear_point_caches()
    return _timed_chunk(spec, point, size)


def _timed_chunk(spec: Any, point: dict, size: int) -> tuple[float, float, Any]:
    """Chunk 0 of ``size`` trajectories at ``point`` as the caches are: its seconds, the
    part of them JAX spent compiling, its counts."""
    start, compiled = time.perf_counter(), _compile_seconds()
    counts = spec.chunk(point, 0, size)
    return time.perf_counter() - start, _compile_seconds() - compiled, counts


def _design(points: list[dict], count: int) -> list[dict]:
    """``count`` of ``points`` (a grid: dicts of the same coordinates) spread over every
    axis of the grid: its two opposite corners (every coordinate at its first value, then
    at its last), then a Latin hypercube of the rest over the axes' values (each axis'
    values visited evenly, each axis in an order of its own, fixed), each the nearest
    point of the grid not chosen yet (in the axes' ranks, scaled to [0, 1]).

    Points spread along the grid's order alone (its first axis) leave whole ranges of
    the other axes unprobed: the corner where nothing is absorbed (long horizons, many
    tokens) was priced by points absorbed early."""
    import numpy as np

    if len(points) <= count:
        return list(points)
    axes = {c: sorted({p[c] for p in points}) for c in points[0]}
    rank = {c: {v: i / max(len(values) - 1, 1) for i, v in enumerate(values)}
            for c, values in axes.items()}
    where = np.array([[rank[c][p[c]] for c in axes] for p in points])
    rest = count - 2
    levels = np.linspace(0.0, 1.0, rest) if rest > 1 else np.full(rest, 0.5)
    generator = np.random.default_rng(0)
    cube = np.array([generator.permutation(levels) for _ in axes]).T.reshape(rest, len(axes))
    chosen: list[int] = []
    for target in [np.zeros(len(axes)), np.ones(len(axes)), *cube]:
        distance = np.sum((where - target) ** 2, axis=1)
        distance[chosen] = np.inf
        chosen.append(int(np.argmin(distance)))
    return [points[i] for i in chosen]


def _call_seconds(spec: Any, points: list[dict], size: int) -> tuple[float, float]:
    """Seconds a chunk of ``size`` trajectories costs beyond its steps (drawing the
    starts, the absorption levels of its point, dispatching, classifying), as ``(cold,
    warm)``: a chunk of one layer from cold point caches (the first chunk of its point
    in a process) and the same chunk again (a later one, its point's laws cached), the
    medians at up to :data:`CALL_POINTS` of ``points`` spread over the grid, JAX's
    compiling excluded. The probes' seconds include the cold cost once a chunk; a run
    pays it once a point in each process that runs one of its chunks, the warm cost for
    the others, however short."""
    short = spec.shortened(1)
    cold, warm = [], []
    for point in _spread(points, CALL_POINTS):
        for timed, measure in ((cold, _cold_chunk), (warm, _timed_chunk)):
            took, compiling, _ = measure(short, point, size)
            timed.append(max(took - compiling, 0.0))
    return sorted(cold)[len(cold) // 2], sorted(warm)[len(warm) // 2]


def _first_chunks(chunks: list[int], parallel: int) -> int:
    """How many of the points' ``chunks`` (chunks left, a point each) pay their point's laws
    from cold caches: a point's first chunk in each of the ``parallel`` processes that
    runs one of its chunks (the most there can be: the chunks of a point are spread over
    the workers)."""
    return sum(min(count, parallel) for count in chunks)


def _store_seconds(out: Path) -> float:
    """Seconds of one store transaction (a point's rows and the run's record, committed:
    an fsync of the log), the mean of :data:`STORE_COMMITS` in a scratch store made
    beside ``out`` (in its nearest existing parent: most likely its disk) and removed."""
    import tempfile

    from ._database import Database

    near = out.absolute().parent
    while not near.is_dir() and near != near.parent:
        near = near.parent
    with tempfile.TemporaryDirectory(dir=near if near.is_dir() else None) as scratch:
        database = Database(Path(scratch), write=True)
        try:
            start = time.perf_counter()
            for i in range(STORE_COMMITS):
                with database.transaction():
                    database.put_points("plan", [(str(i), '[["0"]]')])
                    database.put_run("plan", 0, "{}")
            return (time.perf_counter() - start) / STORE_COMMITS
        finally:
            database.close()


def _spread(points: list[dict], count: int = 3) -> list[dict]:
    """Up to ``count`` points spread evenly over the grid, the first and the last
    included."""
    if len(points) <= count:
        return list(points)
    return [points[round(i * (len(points) - 1) / (count - 1))] for i in range(count)]


def _finish_seconds(spec: Any, points: list[dict],
                    counts: dict) -> tuple[float, float, list]:
    """(one-time setup seconds, mean seconds per point, the rows) of ``spec.finish`` at
    ``points`` given the same ``counts``: the first call's excess over the later ones is
    setup (caches, lambdified laws)."""
    took, rows = [], []
    for point in points:
        start = time.perf_counter()
        rows.append(spec.finish(point, [counts]))
        took.append(time.perf_counter() - start)
    if len(took) == 1:
        return 0.0, took[0], rows
    per_point = sum(took[1:]) / len(took[1:])
    return max(took[0] - per_point, 0.0), per_point, rows


def _grid_rows(rows: list, points: list[dict]) -> list:
    """A row for every one of ``points``: the finished ``rows`` (a few of the grid's, or
    lists of rows) taken in turn, each with the coordinates of its point, so that the
    figure is drawn from a grid of the real size and shape (its numbers are those of the
    few points finished, which costs a drawing as much as the real ones)."""
    import dataclasses

    made = []
    for i, point in enumerate(points):
        row = rows[i % len(rows)]
        for one in row if isinstance(row, list) else [row]:
            made.append(dataclasses.replace(one, **point))
    return made


def _plot_seconds(spec: Any, rows: list, points: list[dict],
                  name: str) -> tuple[float, bool]:
    """Seconds to draw the figure of ``points`` (from :func:`_grid_rows` of ``rows``, into
    a scratch directory), its ``figure_needs`` first (such as the formation thresholds of
    ``dominance``'s edges, most of its figure's time), and whether it was drawn (a
    figure that cannot be drawn from such rows is priced by its needs alone)."""
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        start = time.perf_counter()
        for need in spec.figure_needs:
            need()
        try:
            spec.plot(_grid_rows(rows, points), Path(scratch) / f"{name}.png")
        except Exception:  # the plan says so in words; the run draws from its own rows
            return time.perf_counter() - start, False
        return time.perf_counter() - start, True


def plan_chunked(spec: Any, out: Path, name: str,
                  options: Any) -> Plan:
    """The lines ``--dry-run`` prints for the chunked sweep ``spec`` (an
    :class:`~._specs.AbstractChunkedSpec`) run as ``name`` with ``options`` (a
    :class:`~._driver.RunOptions`; see the module docstring) and the
    estimated wall time in seconds (None when the run would refuse), as a :class:`Plan`."""
    points = spec.points()
    sizes = chunk_sizes(spec.samples(), options.chunk_size) or [0]
    steps = spec.steps()
    done, partial, refusal = stored_points(spec, out, name, points, options)
    lines = [f"{name}: {spec.command_line()}"]
    if refusal:
        return Plan([*lines, f"  would refuse: {refusal}"], None)
    left_points = [p for i, p in enumerate(points) if i not in done]
    chunks_left = sum(len(sizes) - partial.get(i, 0)
                      for i in range(len(points)) if i not in done)
    trajectories = sum(sizes) * len(left_points) - sum(
        sum(sizes[:partial[i]]) for i in partial)
    left_steps = {i: spec.point_steps(p) for i, p in enumerate(points) if i not in done}
    work = sum(sizes) * sum(left_steps.values()) - sum(
        sum(sizes[:partial[i]]) * left_steps[i] for i in partial)
    average = round(work / trajectories) if trajectories else steps
    lines.append(f"  points: {len(left_points)} to compute of {len(points)} "
                 f"({len(done)} stored)")
    lines.append(f"  chunks: {chunks_left} to compute, {len(sizes)} per point of "
                 f"{sizes[0]} trajectories (`chunk_size={options.chunk_size}`)")
    lines.append(f"  trajectory-steps: {work:.3e} ({trajectories} trajectories x {average} steps"
                 f"{' on average' if spec.varying_steps() else ''})")
    if not left_points:
        lines.append("  estimated wall time: nothing to compute")
        return Plan(lines, 0.0)
    finish_points = _spread(left_points, FINISH_POINTS)
    parallel = max(1, options.workers)
    workers = '1 process' if parallel == 1 else f'{parallel} workers'
    if work == 0:  # no Monte Carlo: the rows are the laws alone
        setup, per_point, rows = _finish_seconds(spec, finish_points, {})
        plotting, _ = _plot_seconds(spec, rows, points, name)
        estimate = setup + per_point * len(left_points) + plotting
        lines.append(f"  finishing (the laws of a row): {per_point:.2f} s a point, measured "
                     f"at {len(finish_points)} point(s)")
        lines.append(f"  estimated wall time: {duration(estimate)} (no sampling)")
        return Plan(lines, estimate)
    compile_s, rate, first_compiled = _calibrate(spec, left_points[0], steps,
                                                 min(sizes[0], CALIBRATION_TRAJECTORIES))
    programs, extra_program, compiling_fields = _programs(spec, left_points)
    narrow = min(sizes[0], PROBE_TRAJECTORIES)
    probe = _probe(spec, left_points, narrow, rate)
    # what a chunk costs beyond its steps, at points the probes did not warm (the
    # absorption levels of a point are computed once, by whichever chunk comes first)
    probed = [] if probe is None else probe.chosen
    unprobed = [p for p in left_points if p not in probed] or left_points
    call, warm_call = _call_seconds(spec, unprobed, sizes[0])
    if probe is None:  # the probes would cost too much: every step at the first point's speed
        seconds_per_step = 1 / rate
        counts = [spec.chunk(left_points[0], 0, PROGRAM_TRAJECTORIES)]  # for finishing
        probe_note = ("every step counted at the first point's speed (probes over the full "
                      f"horizon would take more than {PROBE_BUDGET:.0f} s)")
    else:
        narrow_call = call if narrow == sizes[0] else _call_seconds(spec, unprobed, narrow)[0]
        bare = [max(took - narrow_call, 0.0) for took in probe.seconds]
        net, widened = _widen(spec, probe, narrow, sizes[0], call, bare)
        seconds_per_step = sum(net) / max(probe.nominal, 1)
        counts = probe.counts
        # each family of points that compiles its own programs (one value of the compiling
        # fields) compiles, in the run, about what a probed family compiled from empty
        # caches: its programs, and more for each batch width that absorption leaves
        families = len({tuple(p[f] for f in compiling_fields) for p in probe.chosen})
        if probe.programs:
            scale = programs / families
            compiling_probed = probe.compile_seconds * scale
            programs = max(1, round(probe.programs * scale))
            extra_program = probe.compile_seconds / probe.programs
            # the first call's excess beyond JAX's compiling (lambdified laws, caches) stays
            compile_s = max(compile_s - first_compiled, 0.0) + extra_program
            extra_program = (compiling_probed - extra_program) / max(programs - 1, 1)
        absorbed = (f"; early absorption: {probe.share:.1%} of the steps simulated"
                    if spec.absorbs() else "")
        again = (f", {widened} of them again with {sizes[0]} (the chunk's width; the "
                 "others scaled by their ratio)" if widened else "")
        probe_note = (f"probes: {probe.points} point(s) over the grid, {narrow} trajectories "
                      f"each over the full horizon{again}{absorbed}; priced at "
                      f"{seconds_per_step * 1e9:.0f} ns a trajectory-step (the first point, "
                      f"every step: {1e9 / rate:.0f} ns)")
    setup, per_point, rows = _finish_seconds(spec, finish_points, counts[0])
    plotting, drawn = _plot_seconds(spec, rows, points, name)
    speedup = 1.0
    if parallel > 1:
        speedup = _speedup(spec, left_points[0], steps,
                           min(sizes[0], CALIBRATION_TRAJECTORIES), parallel)
    stepping = seconds_per_step * work / speedup
    compiling = compile_s + extra_program * (programs - 1) / min(parallel, programs)
    finishing = setup + per_point * len(left_points) + plotting
    left_chunks = [(p, k) for i, p in enumerate(points) if i not in done
                   for k in range(partial.get(i, 0), len(sizes))]
    tasks = len(grouped(spec, sizes, options.task_steps, parallel, left_chunks))
    dask = bool(options.workers) or options.scheduler is not None
    per_task = _store_seconds(out) + (DASK_TASK_SECONDS if dask else 0.0)
    cold_chunks = _first_chunks([len(sizes) - partial.get(i, 0)
                                 for i in range(len(points)) if i not in done], parallel)
    around = ((call * cold_chunks + warm_call * (chunks_left - cold_chunks)) / speedup
              + per_task * tasks)
    estimate = stepping + around + compiling + finishing
    lines.append(f"  calibration: {rate:.3e} trajectory-steps/s in this process, "
                 f"compiling {compile_s:.1f} s, then {extra_program:.1f} s for each of "
                 f"{programs - 1} more program(s)")
    lines.append(f"  {probe_note}")
    lines.append(f"  around the steps: {call * 1e3:.1f} ms a chunk, {warm_call * 1e3:.1f} ms "
                 f"with its point's laws cached (a chunk of one layer, at "
                 f"{min(CALL_POINTS, len(unprobed))} point(s)); {chunks_left} chunk(s), "
                 f"{cold_chunks} of them first at their point in a process, in "
                 f"{tasks} task(s) of consecutive chunks, "
                 f"{per_task * 1e3:.1f} ms a task (a store transaction measured here"
                 + (f", a Dask task {DASK_TASK_SECONDS * 1e3:.0f} ms)" if dask else ")"))
    lines.append(f"  finishing (the laws of a row): {per_point:.2f} s a point, measured at "
                 f"{len(finish_points)} point(s); the figure "
                 + (f"{plotting:.1f} s, drawn from their rows copied over the grid" if drawn
                    else f"{plotting:.1f} s for its derivations, the drawing itself not "
                         f"priced (it could not be drawn from rows copied over the grid)"))
    if parallel > 1:
        lines.append(f"  {workers}: {parallel} chunks at once run {speedup:.2f} times as fast "
                     "as one here (measured at the first point)")
    lines.append(f"  estimated wall time: {duration(estimate)} ({workers}: stepping "
                 f"{duration(stepping)}, around the steps {duration(around)}, compiling "
                 f"{duration(compiling)}, finishing {duration(finishing)})")
    return Plan(lines, estimate)


def duration(seconds: float) -> str:
    """``0.4 s``, ``42 s``, ``3.5 min`` or ``2.1 h`` (a tenth of a second below 10 s, so
    that a small estimate does not read as no time at all)."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


__all__ = ["Plan", "duration", "plan_chunked", "plan_points", "stored_points"]
