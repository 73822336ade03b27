"""Figure 4 over n and d: where the antipodal outcome dominates the hybrid dynamics.

One sweep over ``tokens x dims x betas x eps`` of the discrete network with hybrid weights
:math:`V = (\\mu/\\sqrt L)\\,I + \\varepsilon G` (the machinery of ``spheresde hybrid``: its
chunks, its horizon rule :math:`T(\\varepsilon) = \\max(T, c/\\varepsilon^2)`), followed by
the edge :math:`\\varepsilon^*(\\beta)` where :math:`P(\\text{antipodal}) = P(\\text{single})`
per ``(n, d)`` with a bootstrap interval (:mod:`spheresde.experiments._edges`) and its fit
against the paper's curve and the linear thresholds.

Two tokens need no Monte Carlo for the edge: the exact :math:`P(\\text{antipodal})` of the
limit (scale function, infinite horizon) decides it, and the rows carry the Monte Carlo
of the network beside it (with the exact finite-horizon value at the row's horizon) as a
confirmation.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from .._outcomes import DEFAULT_TOL
from .._weights import Hybrid
from ._hybrid import (
    HORIZON_SCALE,
    MAX_HORIZON,
    ScaledHorizon,
    _cap_above_horizon,
    horizon_label,
)
from ._spec import (
    ABSORB,
    BETAS,
    HORIZON,
    LAYERS,
    SAMPLES,
    SEED,
    TOL,
    ExperimentSpec,
    at_least,
    at_least_one_layer,
    greater_than,
    param,
)
from ._store import atomic_write_text, chunk_seed
from ._sweep import RunOptions, SweepResult, run_options, run_sweep


def _two_eps_at_least(spec: DominanceSpec) -> str | None:
    if len(spec.eps) < 2:
        return (f"--eps {spec.eps[0]:g}: the edge eps*(beta) lies between two noise levels; "
                "give at least two, e.g. --eps 0.1,0.25,0.6,1.5")
    return None


@dataclass(frozen=True)
class DominanceSpec(ScaledHorizon, ExperimentSpec):
    """Figure 4 for several n and d: the dominant outcome of the hybrid network and its edge.

    The defaults are the ``quick`` sizes; the paper-scale sweep is in ``reproduce --scale
    paper`` (``spheresde/experiments/_scales.py``).
    """

    command: ClassVar[str] = "dominance"
    summary: ClassVar[str] = "Figure 4 over n and d: where antipodal formations dominate"
    rules: ClassVar[tuple] = (_cap_above_horizon, at_least_one_layer, _two_eps_at_least)

    tokens: tuple[int, ...] = param((2, 8), "numbers of tokens n (2: exact edge)",
                                    check=at_least(2))
    dims: tuple[int, ...] = param((3,), "token dimensions d", check=at_least(2))
    betas: tuple[float, ...] = param((1.0, 2.0, 3.0, 4.0, 5.0, 6.0), **BETAS)
    eps: tuple[float, ...] = param((0.1, 0.25, 0.6, 1.5),
                                   "noise levels eps: a list or start:stop:num",
                                   check=greater_than(0.0))
    mu: float = param(1.0, "deterministic part of V = (mu/sqrt L) Id + eps G",
                      check=at_least(0.0))
    trajectories: int = param(64, **SAMPLES)
    layers: int = param(10, **LAYERS)
    horizon: float = param(10.0, **HORIZON)
    horizon_scale: float = param(2.0, **HORIZON_SCALE)
    max_horizon: float = param(100.0, **MAX_HORIZON)
    tol: float = param(DEFAULT_TOL, **TOL)
    absorb: float = param(1e-6, **ABSORB)
    seed: int = param(0, **SEED)

    def points(self) -> list[dict[str, Any]]:
        """The grid, n-major then d, beta, eps: ``{"tokens", "dim", "beta", "eps"}``."""
        return [{"tokens": n, "dim": d, "beta": b, "eps": e}
                for n in self.tokens for d in self.dims for b in self.betas for e in self.eps]


@dataclass(frozen=True)
class DominanceRow:
    """One (n, d, beta, eps) cell: outcome counts of the network and, for two tokens, the
    exact probabilities."""

    tokens: int
    dim: int
    beta: float
    eps: float
    single: int  # trajectories ending in each outcome
    antipodal: int
    undecided: int
    p_single: float
    p_antipodal: float
    p_undecided: float
    dominant: str  # of the Monte Carlo: "single", "antipodal" or "undecided"
    p_exact: float  # two tokens: exact P(antipodal) of the limit, t -> infinity; else nan
    p_exact_horizon: float  # two tokens: exact P(antipodal) of the limit at the horizon
    horizon: float  # depth-time simulated at this eps
    trajectories: int


def _chunk(spec: DominanceSpec, point: dict, k: int, size: int) -> dict:
    """Counts of chunk ``k`` (``size`` trajectories of the discrete network) of ``point``."""
    import jax

    from ._simulate import simulate_counts

    return simulate_counts(
        "discrete", jax.random.PRNGKey(chunk_seed(spec.seed, point, k)),
        tokens=point["tokens"], beta=point["beta"], d=point["dim"],
        weights=Hybrid(mu=spec.mu, eps=point["eps"]), trajectories=size, layers=spec.layers,
        horizon=spec.point_horizon(point["eps"]), tol=spec.tol, absorb=spec.absorb)


def _finish(spec: DominanceSpec, point: dict, counts: list[dict]) -> DominanceRow:
    from .. import two_token
    from .._outcomes import fractions_from_counts
    from ._simulate import add_counts

    n, d, beta, eps = point["tokens"], point["dim"], point["beta"], point["eps"]
    horizon = spec.point_horizon(eps)
    single, antipodal, undecided = add_counts(counts)["outcomes"]
    fractions = fractions_from_counts(single, antipodal, undecided)
    exact = exact_horizon = float("nan")
    if n == 2:
        exact = float(two_token.antipodal_probability(beta, d, mu=spec.mu, eps=eps))
        # the finite-horizon solver overflows at small eps and long horizons (nan then,
        # with numpy's warnings): the row keeps nan, the infinite-horizon value decides
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            exact_horizon = float(two_token.outcome_probabilities(
                beta, d, horizon=horizon, tol=spec.tol, mu=spec.mu, eps=eps).antipodal)
    return DominanceRow(
        tokens=n, dim=d, beta=beta, eps=eps, single=single, antipodal=antipodal,
        undecided=undecided, p_single=float(fractions.single),
        p_antipodal=float(fractions.antipodal), p_undecided=float(fractions.undecided),
        dominant=str(fractions.dominant()), p_exact=exact, p_exact_horizon=exact_horizon,
        horizon=horizon, trajectories=fractions.count or 0)


def run_dominance(spec: DominanceSpec, out: str | os.PathLike, *, quiet: bool = False,
                  overwrite: bool = False, name: str = "dominance",
                  options: RunOptions | None = None) -> SweepResult[DominanceRow] | list[str]:
    """Sweep ``tokens x dims x betas x eps`` into ``out/NAME.csv``, the edges and their fits
    into ``out/NAME_edges.csv`` and ``out/NAME_fits.csv``, and draw ``NAME.png``
    (``options``: chunks, executor, dry run; :class:`RunOptions`)."""
    from ._edges import dominance_edges, write_rows

    result = run_sweep(spec, out, DominanceRow, _chunk, _finish, plot_dominance, name=name,
                       desc=f"{name} (n={','.join(map(str, spec.tokens))})",
                       steps=spec.mean_steps(spec.points()),
                       options=run_options(options, quiet=quiet, overwrite=overwrite))
    if isinstance(result, list):
        return result
    edges, fits = dominance_edges(result.rows, spec)
    write_rows(Path(out) / f"{name}_edges.csv", edges, atomic_write_text)
    write_rows(Path(out) / f"{name}_fits.csv", fits, atomic_write_text)
    return result


def plot_dominance(rows: list[DominanceRow], spec: DominanceSpec, path: Path) -> Path:
    """One panel per d: the edge eps*(beta) of every n with its bootstrap band, the paper's
    curve and the linear thresholds."""
    from ._edges import dominance_edges, linear_thresholds
    from ._plotting import colors, save, subplots

    edges, _ = dominance_edges(rows, spec)
    dims = sorted({r.dim for r in rows})
    tokens = sorted({r.tokens for r in rows})
    betas = np.array(sorted({r.beta for r in rows}))
    eps = sorted({r.eps for r in rows})
    palette = dict(zip(tokens, colors("viridis", 0.0, 0.85, len(tokens)), strict=True))
    fig, axes = subplots(1, len(dims), figsize=(4.6 * len(dims) + 1.8, 4.6))
    axes = np.atleast_1d(axes)
    fine = np.linspace(max(betas.min(), 1e-3), betas.max(), 200)
    for ax, d in zip(axes, dims, strict=True):
        curves = linear_thresholds(fine, d, spec.mu, tokens)
        ax.plot(fine, curves["paper"], "k--", lw=1.6, label=r"paper $\sqrt{2e^{-\beta}}$")
        ax.plot(fine, curves["two_token"], "k-", lw=1.4,
                label="linear, two tokens (= balanced formation)")
        for i, n in enumerate(tokens):
            if n > 3:
                ax.plot(fine, curves[f"unbalanced_{n}"], ls=":", lw=1.2, color=palette[n])
            mine = [e for e in edges if e.dim == d and e.tokens == n]
            b = np.array([e.beta for e in mine])
            star = np.array([e.eps_star for e in mine])
            lo = np.array([e.low for e in mine])
            hi = np.array([e.high for e in mine])
            label = f"n={n}" + (" (exact)" if n == 2 else "")
            ax.plot(b, star, "o-", color=palette[n], ms=4, lw=1.5, label=label)
            if n != 2:
                ax.fill_between(b, lo, hi, color=palette[n], alpha=0.2, lw=0)
            # outside the grid: never antipodal-dominant (top), already at the smallest eps
            # (bottom); staggered by n so that the markers of several n stay visible
            stagger = 1.04 ** (i - (len(tokens) - 1) / 2)
            for status, y, marker in (("never", eps[-1] * 1.14 * stagger, "v"),
                                      ("always", eps[0] / 1.14 * stagger, "^")):
                at = np.array([e.beta for e in mine if e.status == status])
                ax.plot(at, np.full(at.shape, y), marker, color=palette[n], ms=5, ls="none")
        ax.set_yscale("log")
        ax.set_ylim(eps[0] / 1.3, eps[-1] * 1.3)
        ax.axhspan(eps[-1], eps[-1] * 1.3, color="0.92", zorder=0)
        ax.axhspan(eps[0] / 1.3, eps[0], color="0.92", zorder=0)
        ax.set_xlabel(r"inverse temperature $\beta$")
        ax.set_title(f"d = {d}", fontsize=10)
    axes[0].set_ylabel(r"edge $\varepsilon^*$: $P(\mathrm{antipodal}) = P(\mathrm{single})$")
    handles, labels = axes[0].get_legend_handles_labels()
    from matplotlib.lines import Line2D

    handles += [Line2D([], [], color="0.4", ls=":"),
                Line2D([], [], color="0.4", ls="none", marker="v")]
    handles.append(Line2D([], [], color="0.4", ls="none", marker="^"))
    labels += ["linear, one token against n-1 (colour of n)",
               "antipodal never dominates on the grid",
               "antipodal dominates at the smallest eps"]
    axes[-1].legend(handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.suptitle(
        f"Hybrid network (mu={spec.mu:g}, L={spec.layers}): edge where the antipodal outcome "
        f"overtakes the single cluster\n{spec.trajectories} trajectories per cell, "
        f"{horizon_label(spec)}; bands: 95% bootstrap", fontsize=9, y=1.03)
    return save(fig, path)


__all__ = ["DominanceRow", "DominanceSpec", "plot_dominance", "run_dominance"]
