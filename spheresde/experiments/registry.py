"""The experiments by sub-command, as data: their spec classes.

The ``spheresde`` command line (:mod:`spheresde.cli`) is built from :data:`SPECS`, one
sub-command per spec class; everything else about an experiment (how it runs, what it
stores, its figure and its section of ``REPORT.md``) is its spec's interface
(:class:`~.engine.ExperimentSpec`: ``run``, ``plan``,
``report_section``). A new experiment is one module and one
:func:`register` call. Nothing here runs an experiment.
"""

from __future__ import annotations

from ._dominance import DominanceSpec
from ._field import FieldSpec
from ._hybrid import HybridSpec
from ._phase import PhaseSpec
from ._reproduce import ReproduceSpec
from ._tokens import TokensSpec
from ._train import TrainSpec
from .engine import ExperimentSpec

SPECS: dict[str, type[ExperimentSpec]] = {}
"""Sub-command name -> spec class, in the order ``spheresde --help`` lists them."""


def register(spec_cls: type[ExperimentSpec]) -> type[ExperimentSpec]:
    """Add ``spec_cls`` to :data:`SPECS` under its ``command`` (usable as a class
    decorator); a command taken by another class is refused."""
    taken = SPECS.get(spec_cls.command)
    if taken is not None and taken is not spec_cls:
        raise ValueError(f"the command {spec_cls.command!r} is {taken.__name__}'s already")
    SPECS[spec_cls.command] = spec_cls
    return spec_cls


for _spec_cls in (PhaseSpec, HybridSpec, DominanceSpec, TokensSpec, TrainSpec, FieldSpec,
                  ReproduceSpec):
    register(_spec_cls)

__all__ = ["SPECS", "register"]
