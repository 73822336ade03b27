"""Chunks: a grid point's trajectories in chunks of ``chunk_size`` (the last one
shorter), chunk ``k`` of a point drawing its randomness from :func:`chunk_seed` of the
sweep seed, the point's own coordinates and ``k`` only, and returning integer
:data:`Counts`; the finished chunks of unfinished points are kept in a
:class:`ChunkCache` (and in the store's database, see :mod:`~._store`)."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ._params import BadParameters
from ._spelling import format_value

Counts = dict[str, Any]
"""What a chunk returns: JSON-ready integer counts."""

MOST_CHUNKS = 10**6
"""The most chunks a grid point may have (see :func:`chunk_sizes`)."""


def _spelled(point: dict[str, Any]) -> str:
    return ";".join(f"{k}={format_value(v)}" for k, v in sorted(point.items()))


def point_seed(seed: int, point: dict[str, Any]) -> int:
    """A 32-bit seed for one grid point, from the sweep seed and the point's coordinates.

    Only the point's own values enter (not its position in the grid), so adding, removing
    or reordering other points never changes its numbers.
    """
    return zlib.crc32(f"{int(seed)}|{_spelled(point)}".encode())


def chunk_seed(seed: int, point: dict[str, Any], chunk: int) -> int:
    """A 32-bit seed for chunk ``chunk`` of a grid point: :func:`point_seed` with the chunk
    index appended, so a chunk's trajectories depend on (seed, point, chunk) only."""
    return zlib.crc32(f"{int(seed)}|{_spelled(point)}|chunk={int(chunk)}".encode())


def chunk_sizes(samples: int, chunk_size: int) -> list[int]:
    """The sizes of the chunks of ``samples`` trajectories: ``chunk_size`` each, the last
    one the rest (no chunk at all for 0 samples, e.g. an exact method).

    Raises :class:`~._params.BadParameters` past :data:`MOST_CHUNKS` chunks: the list, the
    tasks and the plan of a point are as long as its chunks, so a mistyped size would
    fill the memory before anything runs."""
    if chunk_size < 1:
        raise ValueError(f"chunk size must be >= 1, got {chunk_size}")
    if samples > MOST_CHUNKS * chunk_size:
        raise BadParameters(
            f"{samples} trajectories a point in chunks of `chunk_size={chunk_size}` are "
            f"{-(-samples // chunk_size):.3g} chunks, more than {MOST_CHUNKS:.0e}; give "
            "fewer trajectories or a larger `chunk_size`")
    return [min(chunk_size, samples - start) for start in range(0, samples, chunk_size)]


T = TypeVar("T")


def task_groups(tasks: Sequence[T], work: Callable[[T], float], target: float) -> list[list[T]]:
    """``tasks`` gathered, in their order, into groups of consecutive tasks, each group
    closed once its summed ``work`` reaches ``target`` (the last one may fall short;
    ``target`` 0 or less: one task a group).

    A group is what one Dask task runs and one store transaction writes: a point of a few
    trajectories of a few steps costs less than the task and the write themselves (the
    1,620 one-point chunks of ``dominance`` at the paper's size took 15 min where their
    stepping took 4.5), so small points run together. Grouping changes no number: each
    chunk of a group still draws from its own :func:`chunk_seed`.
    """
    groups: list[list[T]] = []
    total = 0.0
    for task in tasks:
        if not groups or total >= target:
            groups.append([])
            total = 0.0
        groups[-1].append(task)
        total += work(task)
    return groups


class ChunkCache:
    """The finished chunks of unfinished points, in memory: ``points`` maps a point's
    key to ``{chunk index: counts}``. The store (:mod:`~._store`) reads them from its
    database, where each chunk is kept with its digest, and writes each new one there."""

    def __init__(self):
        self.points: dict[str, dict[int, Counts]] = {}

    def add(self, key: str, k: int, counts: Counts) -> None:
        self.points.setdefault(key, {})[k] = counts

    def problem(self, needed: dict[str, int],
                check: Callable[[dict[str, Any], int, Counts], str | None] | None,
                points: dict[str, dict[str, Any]]) -> str | None:
        """What is wrong with the cached chunks of the pending points (``needed``: a
        point's key -> its number of chunks), None if nothing: a chunk index the point
        does not have, or counts that ``check(point, k, counts)`` refuses."""
        for key, chunks in self.points.items():
            if key not in needed:
                continue
            for index, counts in chunks.items():
                if not 0 <= index < needed[key]:
                    return f"point {key} has no chunk {index}"
                if check is not None and (problem := check(points[key], index, counts)):
                    return f"point {key}, chunk {index}: {problem}"
        return None

    def stored(self, key: str) -> dict[int, Counts]:
        """The finished chunks of the point ``key``: chunk index -> counts."""
        return dict(self.points.get(key, {}))
