"""The experiments by sub-command: their spec classes and the functions that run them.

The ``spheresde`` command line (:mod:`spheresde.cli`) is built from :data:`SPECS`; a
program runs an experiment with :func:`run` (or the experiment's own ``run_*``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ._dominance import DominanceSpec, run_dominance
from ._field import FieldSpec, run_field
from ._hybrid import HybridSpec, run_hybrid
from ._phase import PhaseSpec, run_phase
from ._reproduce import ReproduceSpec, reproduce
from ._spec import BadParameters, ExperimentSpec
from ._sweep import RunOptions, run_options
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


def run(spec: ExperimentSpec, out: str | os.PathLike, *, quiet: bool = False,
        overwrite: bool = False, options: RunOptions | None = None) -> list[str]:
    """Run ``spec`` into the directory ``out``; return the lines that summarize what it wrote
    (with ``options.dry_run``: the plan, and nothing written)."""
    if not os.fspath(out).strip():
        raise BadParameters("the output directory is empty; give one, e.g. 'results' "
                            "('.' for the current directory)")
    options = run_options(options, quiet=quiet, overwrite=overwrite)
    if isinstance(spec, ReproduceSpec):
        return reproduce(spec, out, options=options)
    if isinstance(spec, FieldSpec):
        if options.dry_run:
            return [f"field: {spec.command_line()}", "  one figure, no sampling: seconds"]
        info = run_field(spec, out)
        return [f"wrote {info['png']} and {info['csv']}"]
    result = RUNNERS[spec.command](spec, out, options=options)
    if options.dry_run:
        return result
    return [f"wrote {result.csv}, {result.json} and {result.png}"]


__all__ = ["CHUNKED", "RUNNERS", "SPECS", "STORED", "run"]
