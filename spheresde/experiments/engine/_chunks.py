"""Chunks: a grid point's trajectories in chunks of ``chunk_size`` (the last one
shorter), chunk ``k`` of a point drawing its randomness from :func:`chunk_seed` of the
sweep seed, the point's own coordinates and ``k`` only, and returning integer
:data:`Counts` (see :mod:`~._store` for how finished chunks are kept)."""

from __future__ import annotations

import zlib
from typing import Any

from ._spelling import format_value

Counts = dict[str, Any]
"""What a chunk returns: JSON-ready integer counts."""


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
    one the rest (no chunk at all for 0 samples, e.g. an exact method)."""
    if chunk_size < 1:
        raise ValueError(f"chunk size must be >= 1, got {chunk_size}")
    return [min(chunk_size, samples - start) for start in range(0, samples, chunk_size)]
