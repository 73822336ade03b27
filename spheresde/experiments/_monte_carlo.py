"""The base of the Monte Carlo sweeps: a chunk is :func:`~._simulate.simulate_counts` of a
point, from independent uniform tokens to the outcome at the horizon.

A final spec (``phase``, ``hybrid``, ``tokens``, ``dominance``) declares the fields
``trajectories``, ``layers``, ``horizon``, ``tol``, ``absorb`` and ``seed`` (checked when
its class is created), and says
what one point simulates (:meth:`AbstractMonteCarloSpec.simulation`); the key of a
chunk, its counts, their check, the trajectories and steps of the plan and the rule of
at least one layer are the same for all of them and live here.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import logging
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from ..transformer._network import network_depth, reached_horizon
from ..transformer._weights import AbstractWeights
from ._simulate import counts_problem, simulate_counts
from .engine import AbstractChunkedSpec, AbstractVar, Counts, at_least, chunk_seed

Method = Literal["exact", "reduced", "particles", "discrete"]
SAMPLING = ("trajectories", "layers", "horizon", "tol", "absorb")  # what Monte Carlo needs
NETWORK_STREAMS = "network-2"
"""The revision of the discrete network's random streams (a spec's ``streams``): 2 since
the two-token Gram chain and the n-token network's per-trajectory keys, which draw other
numbers for the same seed; stores of revision 1 (no revision recorded) do not resume."""


@dataclasses.dataclass(frozen=True)
class Simulation:
    """What one grid point simulates: the model (``method``: ``reduced``, ``particles`` or
    ``discrete``; ``norm``; ``layer``, a name of :func:`spheresde.transformer.layer`), the
    tokens and their dimension, the inverse temperature ``beta``, the value weights and the
    depth-time horizon."""

    method: str
    tokens: int
    beta: float
    d: int
    weights: AbstractWeights
    horizon: float
    norm: str = "rms"
    layer: str = "paper"


def layer_rule(spec) -> str | None:
    """A rule of the sweeps with ``layer`` and ``norm`` fields: a normalization other than
    the paper's has no particle SDE; a layer other than the paper's is one the engine reads
    (:func:`spheresde.transformer.layer`), runs ``exact`` (its derived law, which needs
    rho = +-1 as equilibria) or ``discrete`` (its network) with random weights; where +-1
    are not equilibria its network runs without absorption, said in one line."""
    method = getattr(spec, "method", "discrete")
    norm = getattr(spec, "norm", "rms")
    if norm != "rms" and method == "particles":
        return (f"`norm={norm!r}` needs `method` exact, reduced or discrete (the particle "
                "SDE is the RMS one)")
    if spec.layer == "paper":
        return None
    from ..transformer._layers import LayerError, layer

    if method not in ("exact", "discrete"):
        return (f"`layer={spec.layer!r}` needs `method` exact (its derived law) or discrete "
                "(its network); reduced and particles are the paper's layer")
    if getattr(spec, "weights", "noise") == "constant":
        return f"`layer={spec.layer!r}` runs with random weights (`weights='noise'`)"
    try:
        chosen = layer(spec.layer)
        chosen.step(2, norm)  # read by the engine: refused here, not in a chunk
        if not chosen.equilibria(norm):
            if method == "exact":
                return (f"`layer={spec.layer!r}`: rho = +-1 are not equilibria of its derived "
                        f"rho-SDE ({norm}), so it has no exact outcome law; use "
                        "`method='discrete'` (its network, no absorption)")
            _say_no_equilibria(spec.layer, norm)
    except LayerError as error:
        return f"`layer={spec.layer!r}`: {error}"
    return None


@functools.cache  # once a run, however often the rules are asked
def _say_no_equilibria(name: str, norm: str) -> None:
    logging.getLogger(__name__).warning(
        "layer %s: rho = +-1 are not equilibria of its derived rho-SDE (%s): no exact law, "
        "no absorption; the fractions are those its network reaches at the horizon",
        name, norm)


MOST_LAYERS = 10**7
"""The most layers (steps) a trajectory may take: ``round(T L)`` above it is refused
before any work (a horizon of 1e308 would overflow the count)."""


def depth_in_range(spec: AbstractMonteCarloSpec) -> str | None:
    """A rule of the Monte Carlo specs: the horizon is at least one layer,
    ``round(T L) >= 1``, and the longest point's horizon at most :data:`MOST_LAYERS`
    layers (a spec without Monte Carlo does not use them, so they are unchecked)."""
    if not spec.monte_carlo():
        return None
    depth = spec.longest_horizon() * spec.layers
    if not depth <= MOST_LAYERS:  # inf too
        return (f"{spec.horizon_label()} with `layers={spec.layers}` is {depth:.3g} layers a "
                f"trajectory, more than {MOST_LAYERS:.0e}; give a shorter horizon or fewer "
                "`layers`")
    try:
        network_depth(spec.horizon, spec.layers)
    except ValueError:
        return (f"`horizon={spec.horizon:g}` with `layers={spec.layers}` is round(T*L) = 0 "
                f"layers; give `horizon` >= {1 / spec.layers:g} (one layer)")
    return None


class AbstractMonteCarloSpec(AbstractChunkedSpec):
    """A sweep of two-token or many-token Monte Carlo (see the module docstring).

    The fields are declared by each final spec, in its own order (the CSV columns and
    the resume identity follow that order). ``law_only``: ``{field: value}`` of the
    choice that computes the rows from the law alone (``{"method": "exact"}``: its
    chunks are empty, nothing is sampled). Its horizon is either fixed
    (:class:`AbstractFixedHorizonSpec`) or a rule of the point
    (:class:`AbstractScaledHorizonSpec`): each implements
    :meth:`~spheresde.experiments.AbstractChunkedSpec.shortened` and
    :meth:`horizon_label`.
    """

    trajectories: AbstractVar[int]
    layers: AbstractVar[int]
    horizon: AbstractVar[float]
    tol: AbstractVar[float]
    absorb: AbstractVar[float]
    seed: AbstractVar[int]
    absorbing: ClassVar[str | None] = "absorb"
    #: Whether chunks finish tight two-cluster trajectories by the formation's law
    #: (``simulate_counts(formations=True)``; the rows then read the counts with
    #: :func:`~._simulate.fractions_of_counts`): the sweeps of more than two tokens under
    #: noise (``tokens``, ``hybrid``), where a formation's law at the remaining depth costs
    #: less than simulating its trajectories (docs: scaling, "Two tight clusters").
    formations: ClassVar[bool] = False
    law_only: ClassVar[Mapping[str, str]] = {}
    # a chunk computes these once for its point, and the plan's probes must pay them as
    # that chunk does: a probe run again at the chunk's width after a narrow one at the
    # same point found its formation laws computed, and priced them at nothing
    point_caches: ClassVar[tuple[str, ...]] = (
        "spheresde.transformer._absorption:absorption_levels",
        "spheresde.transformer._absorption:cluster_absorption_level",
        "spheresde.transformer._formation_finish:formation_values",
        "spheresde.transformer._formation_finish:tightness_exponents",
    )

    @abc.abstractmethod
    def simulation(self, point: dict[str, Any]) -> Simulation:
        """What ``point`` simulates (asked only when :meth:`monte_carlo` is true)."""

    @abc.abstractmethod
    def horizon_label(self) -> str:
        """The horizon as reports print it, ``T = 50``."""

    @abc.abstractmethod
    def longest_horizon(self) -> float:
        """The longest depth-time horizon of the points, before rounding to whole layers
        (inf if it overflows)."""

    def monte_carlo(self) -> bool:
        """Whether the points are simulated (not when a field has its :attr:`law_only`
        value: the rows come from the law itself and the chunks are empty)."""
        return not any(getattr(self, field) == value for field, value in self.law_only.items())

    def chunk(self, point: dict[str, Any], k: int, size: int) -> Counts:
        """Counts of chunk ``k`` (``size`` trajectories) of ``point``; nothing without
        Monte Carlo."""
        import jax

        if not self.monte_carlo():
            return {}
        run = self.simulation(point)
        return simulate_counts(
            run.method, jax.random.PRNGKey(chunk_seed(self.seed, point, k)), tokens=run.tokens,
            beta=run.beta, d=run.d, weights=run.weights, trajectories=size,
            layers=self.layers, horizon=run.horizon, tol=self.tol, absorb=self.absorb,
            norm=run.norm, layer=run.layer, formations=self.formations)

    def check(self, counts: Counts, size: int) -> str | None:
        """:func:`~._simulate.counts_problem`: the format of :func:`simulate_counts`."""
        return counts_problem(counts, size)

    def samples(self) -> int:
        """``trajectories``, or 0 without Monte Carlo."""
        return self.trajectories if self.monte_carlo() else 0

    def point_steps(self, point: dict[str, Any]) -> int:
        """``network_depth`` of the point's horizon, the steps every method takes; 0
        without Monte Carlo."""
        if not self.monte_carlo():
            return 0
        return network_depth(self.simulation(point).horizon, self.layers)

    def sizes_label(self) -> str:
        """The Monte Carlo sizes as reports print them: trajectories, L, T and tol."""
        return (f"{self.trajectories} trajectories, L = {self.layers}, "
                f"{self.horizon_label()}, tol = {self.tol:g}")


class AbstractFixedHorizonSpec(AbstractMonteCarloSpec):
    """A Monte Carlo sweep whose points all run to the one horizon ``T`` (``phase``,
    ``tokens``): ``round(T L)`` steps of ``1/L``, to the depth-time :meth:`reached`."""

    def reached(self) -> float:
        """The depth-time every method's trajectories reach, where the laws are compared:
        :func:`~spheresde.transformer._network.reached_horizon` of ``horizon`` and ``layers``."""
        return reached_horizon(self.horizon, self.layers)

    def shortened(self, steps: int) -> AbstractFixedHorizonSpec:
        """The spec with the horizon of ``steps`` layers."""
        return dataclasses.replace(self, horizon=steps / self.layers)

    def horizon_label(self) -> str:
        """``T = 50``."""
        return f"T = {self.horizon:g}"

    def longest_horizon(self) -> float:
        """``horizon``, every point's."""
        return self.horizon


HORIZON_SCALE = {
    "help": "c in the horizon T(eps) = max(T, c / eps^2) of a point: the relaxation time "
            "grows like 1/eps^2 (0: the fixed horizon T)",
    "check": at_least(0.0)}
MAX_HORIZON = {"help": "cap on c / eps^2 in T(eps) (0: no cap; never below T)",
               "check": at_least(0.0)}


def scaled_horizon(horizon: float, scale: float, cap: float, eps: float, layers: int) -> float:
    """The depth-time horizon of a point at noise ``eps``: ``max(T, min(c / eps^2, cap))``
    (``cap`` 0: none), rounded to whole layers (``round(T L) / L``, what is simulated).

    With ``scale`` 0 it is the fixed ``horizon`` (rounded as the simulators round it).
    """
    return reached_horizon(_wanted_horizon(horizon, scale, cap, eps), layers)


def _wanted_horizon(horizon: float, scale: float, cap: float, eps: float) -> float:
    """:func:`scaled_horizon` before the rounding to whole layers (inf if c / eps^2
    overflows)."""
    wanted = scale / eps / eps if scale > 0 else 0.0  # eps**2 would underflow to 0
    if cap > 0:
        wanted = min(wanted, cap)
    return max(horizon, wanted)


class AbstractScaledHorizonSpec(AbstractMonteCarloSpec):
    """The horizon rule of the hybrid sweeps (``hybrid``, ``dominance``): a point at noise
    ``eps`` runs to :func:`scaled_horizon`, for a spec with the fields ``horizon``,
    ``horizon_scale``, ``max_horizon`` and ``layers`` (declared by each final spec, in its
    own order: the CSV columns and the resume identity follow that order), and ``eps``."""

    horizon_scale: AbstractVar[float]
    max_horizon: AbstractVar[float]
    eps: AbstractVar[tuple[float, ...]]

    def point_horizon(self, eps: float) -> float:
        """The horizon simulated at noise ``eps`` (:func:`scaled_horizon`)."""
        return scaled_horizon(self.horizon, self.horizon_scale, self.max_horizon, eps,
                              self.layers)

    def longest_horizon(self) -> float:
        """The horizon at the smallest ``eps``, before rounding."""
        return _wanted_horizon(self.horizon, self.horizon_scale, self.max_horizon,
                               min(self.eps))

    def shortened(self, steps: int) -> AbstractScaledHorizonSpec:
        """The spec with the fixed horizon of ``steps`` layers (``horizon_scale`` 0)."""
        return dataclasses.replace(self, horizon=steps / self.layers, horizon_scale=0.0)

    def horizon_label(self) -> str:
        """``T = 50``, or the rule ``T = max(50, 4/eps^2) <= 800`` when the horizon scales."""
        if self.horizon_scale == 0:
            return f"T = {self.horizon:g}"
        cap = f" <= {self.max_horizon:g}" if self.max_horizon > 0 else ""
        return f"T = max({self.horizon:g}, {self.horizon_scale:g}/eps^2){cap}"


def cap_above_horizon(spec) -> str | None:
    if 0 < spec.max_horizon < spec.horizon:
        return (f"`max_horizon={spec.max_horizon:g}` is below `horizon={spec.horizon:g}`; "
                "raise it or pass 0 (no cap)")
    return None


__all__ = [
    "HORIZON_SCALE",
    "MAX_HORIZON",
    "MOST_LAYERS",
    "SAMPLING",
    "AbstractFixedHorizonSpec",
    "AbstractMonteCarloSpec",
    "AbstractScaledHorizonSpec",
    "Method",
    "Simulation",
    "cap_above_horizon",
    "depth_in_range",
    "layer_rule",
    "scaled_horizon",
]
