"""The experiments by sub-command, as data: their spec classes and the sweeps' runners.

The ``spheresde`` command line (:mod:`spheresde.cli`) is built from :data:`SPECS`;
``reproduce`` and :func:`~spheresde.experiments.run` (above this module) look the sweeps up
in :data:`RUNNERS`. Nothing here runs an experiment.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._dominance import DominanceSpec, run_dominance
from ._field import FieldSpec
from ._hybrid import HybridSpec, run_hybrid
from ._phase import PhaseSpec, run_phase
from ._scales import ReproduceSpec
from ._spec import ExperimentSpec
from ._tokens import TokensSpec, run_tokens
from ._train import TrainSpec, run_train

SPECS: dict[str, type[ExperimentSpec]] = {
    spec.command: spec for spec in (PhaseSpec, HybridSpec, DominanceSpec, TokensSpec, TrainSpec,
                                 FieldSpec, ReproduceSpec)
}
"""Sub-command name -> spec class, in the order ``spheresde --help`` lists them."""

RUNNERS: dict[str, Callable[..., Any]] = {
    "phase": run_phase, "hybrid": run_hybrid, "dominance": run_dominance, "tokens": run_tokens,
    "train": run_train,
}
"""The resumable sweeps: sub-command name -> ``run(spec, out, *, name, options)``."""

CHUNKED: tuple[str, ...] = ("phase", "hybrid", "dominance", "tokens", "reproduce")
"""The sub-commands whose sweeps run in chunks: they take a chunk size and an executor
(``--chunk-size``, ``--workers``, ``--scheduler``); ``train`` runs whole training runs in
this process and ``field`` is one figure."""

STORED: tuple[str, ...] = (*CHUNKED, "train")
"""The sub-commands that write a resumable store (``--overwrite``, ``--prune``, ``--wait``)."""


__all__ = ["CHUNKED", "RUNNERS", "SPECS", "STORED"]
