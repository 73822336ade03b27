"""Chunks: a grid point's trajectories in chunks of ``chunk_size`` (the last one
shorter), chunk ``k`` of a point drawing its randomness from :func:`chunk_seed` of the
sweep seed, the point's own coordinates and ``k`` only, and returning integer
:data:`Counts`; the finished chunks of unfinished points are kept in a
:class:`ChunkCache` (``NAME.chunks.json``; see :mod:`~._store`)."""

from __future__ import annotations

import json
import warnings
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._errors import StoreWarning
from ._files import atomic_write_text
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


class ChunkCache:
    """The finished chunks of unfinished points, kept in ``path`` (JSON,
    ``{"points": {point key: {chunk index: counts}}}``, written atomically). A cache that
    is damaged is only a cache: it is discarded with one :class:`StoreWarning` and its
    chunks are computed again."""

    def __init__(self, path: Path, key_length: int):
        self.path = Path(path)
        self.key_length = key_length
        self.points: dict[str, dict[str, Counts]] = {}

    def load(self) -> None:
        """Read the cache; one that is not a cache of these points is discarded."""
        if not self.path.exists():
            return
        try:
            stored = json.loads(self.path.read_text())
        except ValueError as err:  # not UTF-8 (a UnicodeError) or not JSON
            self.drop(f"not valid JSON: {err}")
            return
        points = stored.get("points") if isinstance(stored, dict) else None
        if not (isinstance(points, dict) and all(
                isinstance(chunks, dict) and all(isinstance(c, dict) for c in chunks.values())
                and len(key.split("|")) == self.key_length
                for key, chunks in points.items())):
            self.drop("not an object of points, chunks and counts")
            return
        self.points = points

    def drop(self, why: str) -> None:
        """Discard the whole cache, saying ``why`` (a :class:`StoreWarning`)."""
        warnings.warn(StoreWarning(
            f"{self.path}: a damaged chunk cache ({why}) is discarded; its chunks are "
            "computed again"), stacklevel=4)
        self.points = {}

    def check(self, needed: dict[str, int],
              check: Callable[[dict[str, Any], int, Counts], str | None] | None,
              points: dict[str, dict[str, Any]]) -> None:
        """Check every cached chunk of a pending point (``needed``: its key -> its number
        of chunks): a chunk index it has, counts that ``check(point, k, counts)`` accepts;
        any failure discards the whole cache."""
        for key, chunks in self.points.items():
            if key not in needed:
                continue
            for index, counts in chunks.items():
                if not index.isdigit() or int(index) >= needed[key]:
                    why = f"point {key} has no chunk {index!r}"
                elif check is not None and (problem := check(points[key], int(index), counts)):
                    why = f"point {key}, chunk {index}: {problem}"
                else:
                    continue
                self.drop(why)
                return

    def stored(self, key: str) -> dict[int, Counts]:
        """The finished chunks of the point ``key``: chunk index -> counts."""
        return {int(k): v for k, v in self.points.get(key, {}).items()}

    def write(self) -> None:
        """Save the cache (none left: the file is removed)."""
        if self.points:
            atomic_write_text(self.path, json.dumps({"points": self.points}) + "\n")
        else:
            self.path.unlink(missing_ok=True)
