"""The experiments by sub-command: their spec classes and the functions that run them.

The ``spheresde`` command line (:mod:`spheresde.cli`) is built from :data:`SPECS`; a
program runs an experiment with :func:`run` (or the experiment's own ``run_*``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ._field import FieldSpec, run_field
from ._hybrid import HybridSpec, run_hybrid
from ._phase import PhaseSpec, run_phase
from ._reproduce import ReproduceSpec, reproduce
from ._spec import ExperimentSpec
from ._tokens import TokensSpec, run_tokens
from ._train import TrainSpec, run_train

SPECS: dict[str, type[ExperimentSpec]] = {
    spec.command: spec for spec in (PhaseSpec, HybridSpec, TokensSpec, TrainSpec, FieldSpec,
                                 ReproduceSpec)
}
"""Sub-command name -> spec class, in the order ``spheresde --help`` lists them."""

RUNNERS: dict[str, Callable[..., Any]] = {
    "phase": run_phase, "hybrid": run_hybrid, "tokens": run_tokens, "train": run_train,
}
"""The resumable sweeps: sub-command name -> ``run(spec, out, *, quiet, overwrite, name)``."""


def run(spec: ExperimentSpec, out: str | os.PathLike, *, quiet: bool = False,
        overwrite: bool = False) -> list[str]:
    """Run ``spec`` into the directory ``out``; return the lines that summarize what it wrote."""
    if isinstance(spec, ReproduceSpec):
        return reproduce(spec, out, quiet=quiet, overwrite=overwrite)
    if isinstance(spec, FieldSpec):
        info = run_field(spec, out)
        return [f"wrote {info['png']} and {info['csv']}"]
    result = RUNNERS[spec.command](spec, out, quiet=quiet, overwrite=overwrite)
    return [f"wrote {result.csv}, {result.json} and {result.png}"]


__all__ = ["RUNNERS", "SPECS", "run"]
