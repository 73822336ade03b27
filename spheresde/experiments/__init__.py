"""The paper's experiments as typed specs, resumable sweeps, figures and a report.

Each experiment is a frozen spec (:class:`PhaseSpec`, :class:`HybridSpec`,
:class:`DominanceSpec`, :class:`TokensSpec`, :class:`TrainSpec`, :class:`FieldSpec`,
:class:`ReproduceSpec`) and one function that runs it into an output directory
(:func:`run_phase`, ...; :func:`run` dispatches). The ``spheresde`` command line is derived
from the specs. Every sweep can be re-run to resume; its rows come back typed
(:class:`PhaseRow`, :class:`HybridRow`, :class:`DominanceRow`, :class:`TokensRow`,
:class:`TrainRow`). Importing this package imports the simulators' dependencies (JAX)
through :mod:`spheresde`; the simulations themselves start only when a sweep runs.
"""

from __future__ import annotations

from ._dominance import DominanceRow, DominanceSpec, run_dominance
from ._edges import EdgeRow, FitRow, dominance_edges
from ._field import FieldSpec, run_field
from ._hybrid import HybridRow, HybridSpec, run_hybrid
from ._phase import PhaseRow, PhaseSpec, run_phase
from ._reproduce import reproduce, run
from ._scales import PAPER, QUICK, SCALES, SMOKE, ReproduceSpec
from ._spec import BadParameters, ExperimentSpec, at_least, between, greater_than, param
from ._store import (
    CorruptStore,
    ParameterMismatch,
    StoreLocked,
    StoreWarning,
    Sweep,
    atomic_write_text,
    chunk_seed,
    format_value,
    point_seed,
)
from ._sweep import RunOptions, SweepResult
from ._tokens import TokensRow, TokensSpec, run_tokens
from ._train import (
    Convergence,
    PairedDifference,
    TrainRow,
    TrainSpec,
    convergence,
    paired_differences,
    run_train,
)
from .registry import RUNNERS, SPECS

__all__ = [
    "PAPER",
    "QUICK",
    "RUNNERS",
    "SCALES",
    "SMOKE",
    "SPECS",
    "BadParameters",
    "Convergence",
    "CorruptStore",
    "DominanceRow",
    "DominanceSpec",
    "EdgeRow",
    "ExperimentSpec",
    "FieldSpec",
    "FitRow",
    "HybridRow",
    "HybridSpec",
    "PairedDifference",
    "ParameterMismatch",
    "PhaseRow",
    "PhaseSpec",
    "ReproduceSpec",
    "RunOptions",
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
    "convergence",
    "dominance_edges",
    "format_value",
    "greater_than",
    "paired_differences",
    "param",
    "point_seed",
    "reproduce",
    "run",
    "run_dominance",
    "run_field",
    "run_hybrid",
    "run_phase",
    "run_tokens",
    "run_train",
]
