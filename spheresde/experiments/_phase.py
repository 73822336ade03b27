"""Figure 3: probability that two uniform tokens converge to an antipodal pair."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from .._outcomes import DEFAULT_TOL
from .._weights import PureNoise
from ._spec import (
    ABSORB,
    BETAS,
    HORIZON,
    LAYERS,
    SAMPLES,
    SEED,
    SIGMA,
    TOL,
    ExperimentSpec,
    at_least,
    at_least_one_layer,
    param,
)
from ._store import chunk_seed
from ._sweep import RunOptions, SweepResult, run_options, run_sweep

METHODS = ("exact", "reduced", "particles", "discrete")
Method = Literal["exact", "reduced", "particles", "discrete"]
SAMPLING = ("trajectories", "layers", "horizon", "tol", "absorb")  # what a Monte Carlo method needs
#: The methods whose chain has a derived first-order law (two_token.outcome_probabilities'
#: ``chain``): the network itself and the Euler chain of the reduced SDE.
CHAIN = {"discrete": "network", "reduced": "reduced"}


FINITE_HORIZON_BETA_MAX = 350.0
"""The largest beta of a Monte Carlo phase sweep: its finite-horizon law
(:func:`spheresde.two_token.outcome_probabilities`) overflows float64 from about
beta = 352 (d = 100) to 354 (d = 3) on."""


def _finite_horizon_betas(spec: PhaseSpec) -> str | None:
    if spec.method != "exact" and max(spec.betas) > FINITE_HORIZON_BETA_MAX:
        return (f"--betas {max(spec.betas):g}: a Monte Carlo method's finite-horizon law "
                f"overflows float64 beyond beta = {FINITE_HORIZON_BETA_MAX:g}; use smaller "
                "betas, or --method exact (no limit)")


def _layer_norm_methods(spec) -> str | None:
    if spec.norm == "layer" and spec.method == "particles":
        return ("--norm layer needs --method exact, reduced or discrete (the particle SDE is "
                "the RMS one)")
    return None


@dataclass(frozen=True)
class PhaseSpec(ExperimentSpec):
    """Figure 3: P(two uniform tokens end antipodal) on a grid of dimensions x betas.

    The defaults are the ``quick`` sizes: the reduced 1-D SDE of rho instead of the
    network, fewer trajectories, a coarser step and a shorter horizon than the paper's.
    """

    command: ClassVar[str] = "phase"
    summary: ClassVar[str] = "Figure 3: two-token antipodal probability against beta"
    unused: ClassVar[dict[str, tuple[str, ...]]] = {"exact": SAMPLING}
    rules: ClassVar[tuple] = (at_least_one_layer, _finite_horizon_betas, _layer_norm_methods)

    dims: tuple[int, ...] = param((4, 5, 6, 7, 8, 9, 10), "token dimensions d, e.g. 4,5,6",
                                  check=at_least(2))
    betas: tuple[float, ...] = param(
        (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0), **BETAS)
    trajectories: int = param(4000, **SAMPLES)
    layers: int = param(20, **LAYERS)
    horizon: float = param(100.0, **HORIZON)
    tol: float = param(DEFAULT_TOL, **TOL)
    sigma: float = param(1.0, **SIGMA)
    absorb: float = param(1e-6, **ABSORB)
    method: Method = param(
        "reduced", "exact: scale-function quadrature (t -> infinity); reduced: Monte Carlo of "
        "the 1-D SDE of rho; particles: the SDE on the sphere; discrete: the L-layer network")
    seed: int = param(0, **SEED)
    norm: Literal["rms", "layer"] = param(
        "rms", "normalization: rms (the paper's Y/|Y|) or layer (LayerNorm: centre, then "
        "normalize; exact and reduced use the derived law, the RMS one at d - 1)", added=True)

    def points(self) -> list[dict[str, Any]]:
        """The grid, dimension-major: ``{"d": d, "beta": beta}``."""
        return [{"d": d, "beta": b} for d in self.dims for b in self.betas]


@dataclass(frozen=True)
class PhaseRow:
    """One grid point of Figure 3: outcome fractions, the error bar and the exact limit."""

    d: int
    beta: float
    p_antipodal: float
    p_single: float
    p_undecided: float
    stderr: float  # binomial standard error of p_antipodal (0 for the exact method)
    p_exact: float  # P(antipodal) of the limit t -> infinity (scale function)
    # P(antipodal) of the limit SDE at this run's horizon T and tol (Kolmogorov equation;
    # p_exact for the exact method): the reference a Monte Carlo point must match
    p_finite: float
    beta_c: float
    trajectories: int  # samples behind the fractions (0 for the exact method)
    # P(antipodal) of the simulated chain itself at its own L, T and tol, to first order in
    # 1/L (Talay-Tubaro: two_token.outcome_probabilities(..., layers=L)): the network for
    # discrete, the Euler chain for reduced; NaN where no correction is derived (exact,
    # particles) and in sweeps stored before the column existed
    p_network: float = math.nan


def _chunk(spec: PhaseSpec, point: dict, k: int, size: int) -> dict:
    """Counts of chunk ``k`` (``size`` trajectories) of ``point``; nothing for the exact method."""
    import jax

    from ._simulate import simulate_counts

    if spec.method == "exact":
        return {}
    return simulate_counts(
        spec.method, jax.random.PRNGKey(chunk_seed(spec.seed, point, k)), tokens=2,
        beta=point["beta"], d=point["d"], weights=PureNoise(spec.sigma), trajectories=size,
        layers=spec.layers, horizon=spec.horizon, tol=spec.tol, absorb=spec.absorb,
        norm=spec.norm)


def _finish(spec: PhaseSpec, point: dict, counts: list[dict]) -> PhaseRow:
    from .. import two_token
    from .._outcomes import fractions_from_counts
    from ._simulate import add_counts, exact_two_tokens, two_token_dimension

    d, beta = point["d"], point["beta"]
    law_d = two_token_dimension(d, spec.norm)  # the two-token law of this normalization
    exact = exact_two_tokens(beta, law_d, sigma=spec.sigma)
    network = math.nan
    if spec.method == "exact":
        fractions = finite = exact
    else:
        fractions = fractions_from_counts(*add_counts(counts)["outcomes"])
        finite = two_token.outcome_probabilities(beta, law_d, horizon=spec.horizon,
                                                 tol=spec.tol, sigma=spec.sigma)
        if spec.method in CHAIN and spec.norm == "rms":  # L_1 is derived for RMS chains
            network = float(two_token.outcome_probabilities(
                beta, d, horizon=spec.horizon, tol=spec.tol, sigma=spec.sigma,
                layers=spec.layers, chain=CHAIN[spec.method]).antipodal)
    return PhaseRow(
        d=d, beta=beta, p_antipodal=float(fractions.antipodal), p_single=float(fractions.single),
        p_undecided=float(fractions.undecided), stderr=float(fractions.antipodal_se),
        p_exact=float(exact.antipodal), p_finite=float(finite.antipodal),
        beta_c=float(two_token.critical_beta(law_d)) if law_d >= 3 else 0.0,
        trajectories=fractions.count or 0, p_network=network,
    )


def run_phase(spec: PhaseSpec, out: str | os.PathLike, *, quiet: bool = False,
              overwrite: bool = False, name: str = "phase",
              options: RunOptions | None = None) -> SweepResult[PhaseRow] | list[str]:
    """Sweep ``spec.dims x spec.betas`` into ``out/NAME.csv`` and draw ``NAME.png``
    (``options``: chunks, executor, dry run; :class:`RunOptions`)."""
    return run_sweep(spec, out, PhaseRow, _chunk, _finish, plot_phase, name=name,
                     desc=f"{name} ({spec.method})",
                     options=run_options(options, quiet=quiet, overwrite=overwrite))


def plot_phase(rows: list[PhaseRow], spec: PhaseSpec, path: Path) -> Path:
    """Monte Carlo points with error bars (+-2 stderr) against the limit SDE's law at the
    run's own T and tol (solid), the simulated chain's own first-order law at its L
    (dash-dot, ``p_network``), the t -> inf curves (dotted) and dashed beta_c(d)."""
    from .. import two_token
    from ._plotting import colors, save, subplots
    from ._simulate import two_token_dimension

    dims = sorted({r.d for r in rows})
    betas = sorted({r.beta for r in rows})
    method, sigma = spec.method, spec.sigma
    fine = np.linspace(min([*betas, 0.0]), max(betas), 120)
    # the finite-horizon law costs milliseconds a point, the t -> inf one microseconds
    coarse = np.linspace(fine[0], fine[-1], 40)
    palette = colors("viridis", 0.0, 0.9, len(dims))
    fig, ax = subplots(figsize=(7.5, 4.8))
    top = 0.0
    for d, color in zip(dims, palette, strict=True):
        law_d = two_token_dimension(d, spec.norm)
        curve = two_token.antipodal_probability(fine, law_d, sigma=sigma)
        if method == "exact":
            ax.plot(fine, curve, color=color, lw=1.6, label=f"d={d}")
        else:
            finite = two_token.outcome_probabilities(coarse, law_d, horizon=spec.horizon,
                                                     tol=spec.tol, sigma=sigma).antipodal
            ax.plot(coarse, finite, color=color, lw=1.6, label=f"d={d}")
            ax.plot(fine, curve, color=color, lw=1, ls=":")
            top = max(top, float(np.max(finite)))
        top = max(top, float(np.max(curve)))
        if law_d >= 3:
            ax.axvline(float(two_token.critical_beta(law_d)), color=color, ls="--", lw=1)
        if method != "exact":
            mine = [r for r in rows if r.d == d]
            x = np.array([r.beta for r in mine])
            y = np.array([r.p_antipodal for r in mine])
            err = 2 * np.array([r.stderr for r in mine])
            und = np.array([r.p_undecided for r in mine])
            ax.errorbar(x, y, yerr=err, fmt="o", ms=4, color=color, capsize=2)
            if method in CHAIN and spec.norm == "rms":  # the chain's own law at its L
                ax.plot(x, [r.p_network for r in mine], color=color, lw=1, ls="-.")
            # the undecided mass could still go either way: show it as an upward band
            ax.vlines(x, y, y + und, color=color, lw=4, alpha=0.25)
            top = max(top, float(np.max(y + np.maximum(und, err))))
    ax.set_xlabel(r"inverse temperature $\beta$")
    ax.set_ylabel("P(antipodal)")
    ax.set_ylim(-0.02, min(1.02, 1.15 * top + 0.02))
    what = "exact limit (scale function)" if method == "exact" else (
        f"{method} Monte Carlo, {spec.trajectories} trajectories, L={spec.layers}, "
        f"T={spec.horizon:g}\n(points +-2 s.e., shaded: undecided; solid: limit SDE at "
        f"T={spec.horizon:g}, tol={spec.tol:g}; "
        + (f"dash-dot: the simulated chain's own law at L={spec.layers}; " if method in CHAIN
           and spec.norm == "rms" else "") + "dotted: t -> inf)")
    threshold = (r"$\beta_c(d)=\frac{1}{2}\cosh^{-1}(d-2)$" if spec.norm == "rms" else
                 r"LayerNorm: $\beta_c(d-1)=\frac{1}{2}\cosh^{-1}(d-3)$")
    ax.set_title(f"Two tokens, sigma={sigma:g}: {what}\ndashed: {threshold}", fontsize=9)
    ax.legend(fontsize=8, ncol=2)
    return save(fig, path)
