"""The paper's experiments as typed specs, resumable sweeps, figures and a report.

Each experiment is a frozen spec (:class:`PhaseSpec`, :class:`HybridSpec`,
:class:`DominanceSpec`, :class:`TokensSpec`, :class:`TrainSpec`, :class:`FieldSpec`,
:class:`ReproduceSpec`); :func:`run` runs any of them into an output directory and
:func:`plan` says what it would compute. A sweep's spec implements one declared interface
(:class:`AbstractSweepSpec`: its points, its chunks or whole points, its figure, its
section of the report), and runs itself (``spec.run``, ``spec.plan``: :func:`run` and
:func:`plan` ask the spec). The generic engine (specs, store, driver, executors,
planning) is :mod:`spheresde.experiments.engine`, which knows nothing of the paper. The
``spheresde`` command line is derived from the specs (:data:`SPECS`). Every sweep can be
re-run to resume; its rows come back typed (:class:`PhaseRow`, :class:`HybridRow`,
:class:`DominanceRow`, :class:`TokensRow`, :class:`TrainRow`) in an
:class:`AbstractResult`. Importing this package imports the simulators' dependencies
(JAX) through :mod:`spheresde`; the simulations themselves start only when a sweep runs.
"""

from __future__ import annotations

from ._dominance import DominanceRow, DominanceSpec
from ._edges import EdgeRow, FitRow, dominance_edges
from ._field import FieldResult, FieldSpec, run_field
from ._hybrid import HybridRow, HybridSpec
from ._monte_carlo import (
    AbstractFixedHorizonSpec,
    AbstractMonteCarloSpec,
    AbstractScaledHorizonSpec,
    Simulation,
)
from ._phase import PhaseRow, PhaseSpec
from ._reproduce import ReproduceResult, ReproduceSpec, reproduce
from ._scales import FULL, PAPER, QUICK, SCALES, SMOKE
from ._tokens import TokensRow, TokensSpec
from ._train import (
    Convergence,
    PairedDifference,
    TrainRow,
    TrainSpec,
    convergence,
    paired_differences,
)
from .engine import (
    AbstractChunkedSpec,
    AbstractPointSpec,
    AbstractResult,
    AbstractSweepSpec,
    AbstractVar,
    BadParameters,
    CorruptStore,
    ExperimentSpec,
    ParameterMismatch,
    Plan,
    RunOptions,
    StoreLocked,
    StoreWarning,
    Sweep,
    SweepResult,
    at_least,
    atomic_write_text,
    between,
    chunk_seed,
    compute_chunks,
    compute_points,
    estimate_sweep,
    format_value,
    greater_than,
    param,
    plan,
    plan_sweep,
    point_seed,
    run,
    run_sweep,
)
from .registry import SPECS, register

__all__ = [
    "FULL",
    "PAPER",
    "QUICK",
    "SCALES",
    "SMOKE",
    "SPECS",
    "AbstractChunkedSpec",
    "AbstractFixedHorizonSpec",
    "AbstractMonteCarloSpec",
    "AbstractPointSpec",
    "AbstractResult",
    "AbstractScaledHorizonSpec",
    "AbstractSweepSpec",
    "AbstractVar",
    "BadParameters",
    "Convergence",
    "CorruptStore",
    "DominanceRow",
    "DominanceSpec",
    "EdgeRow",
    "ExperimentSpec",
    "FieldResult",
    "FieldSpec",
    "FitRow",
    "HybridRow",
    "HybridSpec",
    "PairedDifference",
    "ParameterMismatch",
    "PhaseRow",
    "PhaseSpec",
    "Plan",
    "ReproduceResult",
    "ReproduceSpec",
    "RunOptions",
    "Simulation",
    "StoreLocked",
    "StoreWarning",
    "Sweep",
    "SweepResult",
    "TokensRow",
    "TokensSpec",
    "TrainRow",
    "TrainSpec",
    "at_least",
    "atomic_write_text",
    "between",
    "chunk_seed",
    "compute_chunks",
    "compute_points",
    "convergence",
    "dominance_edges",
    "estimate_sweep",
    "format_value",
    "greater_than",
    "paired_differences",
    "param",
    "plan",
    "plan_sweep",
    "point_seed",
    "register",
    "reproduce",
    "run",
    "run_field",
    "run_sweep",
]
