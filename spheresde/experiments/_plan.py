"""``--dry-run``: what a sweep would compute, and about how long it would take here.

The plan counts the points and chunks still to compute (those already stored in the
output directory are skipped, as a real run would skip them) and their
trajectory-steps. The wall-time estimate comes from a short calibration: one small
chunk with a short horizon run twice (the first call compiles), its throughput in
trajectory-steps per second applied to what is left, plus the compilation. With early
absorption (on by default) a second estimate follows: a few probe chunks (up to three
points spread over the grid, :data:`PROBE_TRAJECTORIES` each, the full horizon) give the
fraction of the steps actually simulated, which scales the first; it is skipped when the
probes would take more than :data:`PROBE_BUDGET` seconds. With ``--workers N`` both
assume N times the throughput of this process. Nothing is written.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ._spec import AbstractChunkedSpec
from ._store import ParameterMismatch, Sweep, chunk_sizes

CALIBRATION_TRAJECTORIES = 2048  # wide enough for a vectorized kernel to reach its speed
CALIBRATION_STEPS = 400
PROBE_TRAJECTORIES = 256
PROBE_BUDGET = 60.0  # seconds, for all probes together, at the calibrated speed


def _stored(spec: AbstractChunkedSpec, out: Path, name: str, points: list[dict],
            options: Any) -> tuple[set[int], dict[int, int], str | None]:
    """Indices of the stored points, stored chunk counts of the others, and a refusal."""
    if options.overwrite or not (out / f"{name}.json").exists():
        return set(), {}, None
    grid = [f.name for f in spec.spec_fields() if f.kind.is_tuple]
    try:
        sweep = Sweep(out, name, spec.params(), spec.row_type, tuple(points[0]),
                      grid=grid, echo=spec.echo(), chunk_size=options.chunk_size, lock=False)
    except ParameterMismatch as err:
        return set(), {}, str(err)
    outside = sweep.outside(points)
    if outside and not options.prune:
        return set(), {}, (f"{sweep.csv_path} holds {len(outside)} finished point(s) outside "
                           "the requested grid; pass `prune=True` to drop them")
    done = {i for i, p in enumerate(points) if sweep.is_done(p)}
    partial = {i: len(sweep.stored_chunks(p)) for i, p in enumerate(points) if i not in done}
    return done, partial, None


def _calibrate(spec: AbstractChunkedSpec, point: dict, steps: int,
               size: int) -> tuple[float, float]:
    """(compile seconds, trajectory-steps per second) of a chunk of ``size`` at ``point``
    with a short horizon."""
    short_steps = min(steps, CALIBRATION_STEPS)
    short = spec.shortened(short_steps)
    start = time.perf_counter()
    short.chunk(point, 0, size)
    first = time.perf_counter() - start
    start = time.perf_counter()
    short.chunk(point, 0, size)
    second = time.perf_counter() - start
    return max(first - second, 0.0), size * short_steps / max(second, 1e-9)


def plan_lines(spec: AbstractChunkedSpec, out: Path, name: str, options: Any) -> list[str]:
    """The lines ``--dry-run`` prints for the chunked sweep ``spec`` run as ``name`` with
    ``options`` (a :class:`~._sweep.RunOptions`; see the module docstring)."""
    points = spec.points()
    sizes = chunk_sizes(spec.samples(), options.chunk_size) or [0]
    steps = spec.steps()
    done, partial, refusal = _stored(spec, out, name, points, options)
    lines = [f"{name}: {spec.command_line()}"]
    if refusal:
        return [*lines, f"  would refuse: {refusal}"]
    left_points = [p for i, p in enumerate(points) if i not in done]
    chunks_left = sum(len(sizes) - partial.get(i, 0)
                      for i in range(len(points)) if i not in done)
    trajectories = sum(sizes) * len(left_points) - sum(
        sum(sizes[:partial[i]]) for i in partial)
    work = trajectories * steps
    lines.append(f"  points: {len(left_points)} to compute of {len(points)} "
                 f"({len(done)} stored)")
    lines.append(f"  chunks: {chunks_left} to compute, {len(sizes)} per point of "
                 f"{sizes[0]} trajectories (`chunk_size={options.chunk_size}`)")
    lines.append(f"  trajectory-steps: {work:.3e} ({trajectories} trajectories x {steps} steps"
                 f"{' on average' if spec.varying_steps() else ''})")
    if work == 0 or not left_points:
        lines.append("  estimated wall time: nothing to simulate")
        return lines
    compile_s, rate = _calibrate(spec, left_points[0], steps,
                                 min(sizes[0], CALIBRATION_TRAJECTORIES))
    parallel = max(1, options.workers)
    estimate = compile_s + work / rate / parallel
    lines.append(f"  calibration: {rate:.3e} trajectory-steps/s in this process "
                 f"(compilation {compile_s:.1f} s)")
    workers = '1 process' if parallel == 1 else f'{parallel} workers'
    lines.append(f"  estimated wall time: {_duration(estimate)} ({workers}, every step counted)")
    probes = left_points[::max(1, -(-len(left_points) // 3))][:3]
    if spec.absorbs() and len(probes) * PROBE_TRAJECTORIES * steps / rate <= PROBE_BUDGET:
        simulated = sum(spec.chunk(p, 0, PROBE_TRAJECTORIES).get("steps", 0) for p in probes)
        share = simulated / (len(probes) * PROBE_TRAJECTORIES * steps)
        lines.append(f"  early absorption: {share:.1%} of the steps simulated in "
                     f"{len(probes)} probe chunk(s) of {PROBE_TRAJECTORIES} trajectories")
        lines.append(f"  estimated wall time with absorption: "
                     f"{_duration(compile_s + share * work / rate / parallel)} ({workers}; "
                     "the share varies over the grid, and small batches run slower)")
    return lines


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


__all__ = ["plan_lines"]
