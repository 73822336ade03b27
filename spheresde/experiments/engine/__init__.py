"""The generic sweep engine, which knows nothing of the paper's experiments.

- :mod:`._params`: a spec's fields (:func:`param`, their types, checks and spelling);
- :mod:`._specs`: the abstract specs and equinox's rule for them, :func:`run` and
  :func:`plan` (which ask the spec);
- :mod:`._store`: a sweep's records (its points and chunks, with digests) and its CSV
  and JSON, :mod:`._database` (the output directory's SQLite store), :mod:`._lock` (one
  writer per directory), :mod:`._chunks` (chunk sizes and seeds, the cache of finished
  chunks), :mod:`._files` (atomic writes);
- :mod:`._driver`: the loop that fills a store, with its progress bar, and the run
  options; :mod:`._executors`: where chunks run (this process, Dask);
- :mod:`._planning`: ``--dry-run``, what a run would compute and how long it would take.

Nothing here imports :mod:`spheresde.experiments`' own modules, nor the Transformer
model of the core (``tests/test_layers.py`` checks both).
"""

from __future__ import annotations

from ._chunks import ChunkCache, Counts, chunk_seed, chunk_sizes, point_seed
from ._driver import (
    AbstractResult,
    RunOptions,
    SweepResult,
    compute_chunks,
    compute_points,
)
from ._errors import CorruptStore, ParameterMismatch, StoreLocked, StoreWarning
from ._files import atomic_write_text, oserror_for
from ._params import (
    BadParameters,
    FieldKind,
    Section,
    SpecField,
    at_least,
    between,
    field_kind,
    greater_than,
    param,
    problem,
)
from ._planning import Plan, duration
from ._specs import (
    AbstractChunkedSpec,
    AbstractPointSpec,
    AbstractSweepSpec,
    AbstractVar,
    ExperimentSpec,
    estimate_sweep,
    plan,
    plan_sweep,
    run,
    run_sweep,
)
from ._spelling import format_value
from ._store import Sweep

__all__ = [
    "AbstractChunkedSpec",
    "AbstractPointSpec",
    "AbstractResult",
    "AbstractSweepSpec",
    "AbstractVar",
    "BadParameters",
    "ChunkCache",
    "CorruptStore",
    "Counts",
    "ExperimentSpec",
    "FieldKind",
    "ParameterMismatch",
    "Plan",
    "RunOptions",
    "Section",
    "SpecField",
    "StoreLocked",
    "StoreWarning",
    "Sweep",
    "SweepResult",
    "at_least",
    "atomic_write_text",
    "between",
    "chunk_seed",
    "chunk_sizes",
    "compute_chunks",
    "compute_points",
    "duration",
    "estimate_sweep",
    "field_kind",
    "format_value",
    "greater_than",
    "oserror_for",
    "param",
    "plan",
    "plan_sweep",
    "point_seed",
    "problem",
    "run",
    "run_sweep",
]
