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

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..transformer._outcomes import DEFAULT_TOL
from ..transformer._weights import Hybrid
from ._agreement import BAND, mc_agreement, z_score
from ._common import ABSORB, BETAS, HORIZON, LAYER, LAYERS, NORM, SAMPLES, SEED, TOL
from ._monte_carlo import (
    HORIZON_SCALE,
    MAX_HORIZON,
    NETWORK_STREAMS,
    AbstractScaledHorizonSpec,
    Simulation,
    cap_above_horizon,
    depth_in_range,
    layer_rule,
)
from ._report import sweep_meta, table
from .engine import Section, at_least, atomic_write_text, greater_than, param


def _two_eps_at_least(spec: DominanceSpec) -> str | None:
    if len(spec.eps) < 2:
        return (f"`eps={spec.eps[0]:g}`: the edge eps*(beta) lies between two noise levels; "
                "give at least two, e.g. `eps='0.1,0.25,0.6,1.5'`")
    return None


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

    def reference(self) -> tuple[float, float]:
        """The probability this cell must match and its slack
        (:func:`~._agreement.reference`)."""
        return self.p_exact_horizon, 0.0


def _formation_laws() -> dict:
    """The formation thresholds the figure's edges are fitted against (derived once)."""
    from proofs_check.export import formation_coefficients

    return formation_coefficients("numpy")


@dataclass(frozen=True)
class DominanceSpec(AbstractScaledHorizonSpec):
    """Figure 4 for several n and d: the dominant outcome of the hybrid network and its edge.

    The defaults are the ``quick`` sizes; the paper-scale sweep is in ``reproduce --scale
    paper`` (``spheresde/experiments/_scales.py``).
    """

    command: ClassVar[str] = "dominance"
    streams: ClassVar = {"*": {"*": NETWORK_STREAMS}}
    summary: ClassVar[str] = "Figure 4 over n and d: where antipodal formations dominate"
    rules: ClassVar[tuple] = (cap_above_horizon, depth_in_range, _two_eps_at_least,
                              layer_rule)
    row_type: ClassVar[type] = DominanceRow
    figure_needs: ClassVar = (_formation_laws,)  # the edges' linear thresholds
    axes: ClassVar[dict[str, str]] = {"tokens": "tokens", "dim": "dims", "beta": "betas",
                                      "eps": "eps"}
    report_rank: ClassVar[int] = 50
    label: ClassVar[str] = "{name} (n={tokens})"

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
    layer: str = param("paper", **LAYER)
    norm: str = param("rms", **NORM)

    def simulation(self, point: dict[str, Any]) -> Simulation:
        """The discrete network of ``tokens`` tokens in dimension ``dim`` at ``beta``, hybrid
        weights of noise ``eps``, the horizon of ``eps``."""
        return Simulation("discrete", point["tokens"], point["beta"], point["dim"],
                          Hybrid(mu=self.mu, eps=point["eps"]), self.point_horizon(point["eps"]),
                          norm=self.norm, layer=self.layer)

    def finish(self, point: dict[str, Any], counts: list[dict]) -> DominanceRow:
        """The row of ``point``: outcome counts and, for two tokens, the exact laws (of
        the paper's layer, or of another layer's derived rho-SDE: NaN where +-1 are not
        its equilibria)."""
        from ..transformer import two_token
        from ..transformer._layers import layer
        from ..transformer._outcomes import fractions_from_counts
        from ._simulate import add_counts, exact_two_tokens

        n, d, beta, eps = point["tokens"], point["dim"], point["beta"], point["eps"]
        horizon = self.point_horizon(eps)
        single, antipodal, undecided = add_counts(counts)["outcomes"]
        fractions = fractions_from_counts(single, antipodal, undecided)
        exact = exact_horizon = float("nan")
        if n == 2 and (self.layer != "paper" or self.norm != "rms"):
            exact = float(exact_two_tokens(beta, d, mu=self.mu, eps=eps, layer=self.layer,
                                           norm=self.norm).antipodal)
            chosen = layer(self.layer)
            if chosen.equilibria(self.norm):
                exact_horizon = float(chosen.outcome_probabilities(
                    beta, d, horizon=horizon, tol=self.tol, eps=eps, mu=self.mu,
                    norm=self.norm).antipodal)
        elif n == 2:
            exact = float(two_token.antipodal_probability(beta, d, mu=self.mu, eps=eps))
            # the finite-horizon solver overflows at small eps and long horizons (nan then,
            # with numpy's warnings): the row keeps nan, the infinite-horizon value decides
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                exact_horizon = float(two_token.outcome_probabilities(
                    beta, d, horizon=horizon, tol=self.tol, mu=self.mu, eps=eps).antipodal)
        return DominanceRow(
            tokens=n, dim=d, beta=beta, eps=eps, single=single, antipodal=antipodal,
            undecided=undecided, p_single=float(fractions.single),
            p_antipodal=float(fractions.antipodal), p_undecided=float(fractions.undecided),
            dominant=str(fractions.dominant()), p_exact=exact, p_exact_horizon=exact_horizon,
            horizon=horizon, trajectories=fractions.count or 0)

    def plot(self, rows: list[DominanceRow], path: Path) -> Path:
        """Write the edges and their fits (:func:`~._edges.dominance_edges`) beside
        ``path`` as ``NAME_edges.csv`` and ``NAME_fits.csv``; draw one panel per d: the
        edge eps*(beta) of every n with its bootstrap band, the paper's curve and the
        linear thresholds."""
        from ._edges import dominance_edges, linear_thresholds, write_rows
        from ._plotting import colors, save, subplots

        edges, fits = dominance_edges(rows, self)
        write_rows(path.with_name(f"{path.stem}_edges.csv"), edges, atomic_write_text)
        write_rows(path.with_name(f"{path.stem}_fits.csv"), fits, atomic_write_text)
        dims = sorted({r.dim for r in rows})
        tokens = sorted({r.tokens for r in rows})
        betas = np.array(sorted({r.beta for r in rows}))
        eps = sorted({r.eps for r in rows})
        palette = dict(zip(tokens, colors("viridis", 0.0, 0.85, len(tokens)), strict=True))
        fig, axes = subplots(1, len(dims), figsize=(4.6 * len(dims) + 1.8, 4.6))
        axes = np.atleast_1d(axes)
        fine = np.linspace(max(betas.min(), 1e-3), betas.max(), 200)
        for ax, d in zip(axes, dims, strict=True):
            curves = linear_thresholds(fine, d, self.mu, tokens)
            paper = self.layer == "paper" and self.norm == "rms"  # the paper's thresholds
            if paper:
                ax.plot(fine, curves["paper"], "k--", lw=1.6,
                        label=r"paper $\sqrt{2e^{-\beta}}$")
                ax.plot(fine, curves["two_token"], "k-", lw=1.4,
                        label="linear, two tokens (= balanced formation)")
            for i, n in enumerate(tokens):
                if n > 3 and paper:
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
            f"Hybrid network (mu={self.mu:g}, L={self.layers}): edge where the antipodal outcome "
            f"overtakes the single cluster\n{self.trajectories} trajectories per cell, "
            f"{self.horizon_label()}; bands: 95% bootstrap", fontsize=9, y=1.03)
        return save(fig, path)

    @classmethod
    def report_section(cls, results: Mapping[str, Any], notes: Mapping[str, str]) -> Section:
        """Figure 4 over n and d (:func:`dominance_section`)."""
        return dominance_section(results)


def _largest_exact(rows) -> dict[int, float]:
    """Largest exact two-token P(antipodal) of each d."""
    top: dict[int, float] = {}
    for r in rows:
        if r.tokens == 2:
            top[r.dim] = max(top.get(r.dim, 0.0), r.p_exact)
    return dict(sorted(top.items()))


def _log_gap(value: float) -> str:
    return "-" if not np.isfinite(value) else f"{value:+.2f}"


def dominance_section(results: Mapping[str, Any]) -> Section:
    """Figure 4 over n and d: the edges, their fits, and what they say (from the numbers)."""
    from ._edges import LEVEL, dominance_edges

    result = results["dominance"]
    spec, rows = result.spec, result.rows
    edges, fits = dominance_edges(rows, spec)
    wall = sweep_meta(result).get("wall_time_s", 0.0)
    text = [
        "### Figure 4 over n and d: where the antipodal outcome dominates",
        "",
        f"**Ours, the edge.** The discrete network ({spec.sizes_label()}) from "
        f"independent uniform tokens, n in {{{', '.join(map(str, spec.tokens))}}}, "
        f"d in {{{', '.join(map(str, spec.dims))}}}, {len(spec.betas)} betas, "
        f"{len(spec.eps)} eps from {min(spec.eps):g} to {max(spec.eps):g} "
        f"({len(rows)} cells, {wall / 60:.1f} min of wall time in all runs). The horizon grows "
        "like 1/eps^2, the relaxation time of the noise. The edge eps*(beta) is where "
        "P(antipodal) = P(single), interpolated in log eps between grid points, with a "
        f"{LEVEL:.0%} interval from multinomial redraws of every cell's counts (1000 "
        "replicates, seeded); for n = 2 the exact infinite-horizon P(antipodal) of the "
        "limit (scale function) gives it without Monte Carlo.",
        "",
    ]
    status = []
    undecided = [r for r in rows if r.tokens > 2 and r.p_undecided > 0.1]
    worst = max((r for r in rows if r.tokens > 2), key=lambda r: r.p_undecided, default=None)
    if worst is not None:
        text += [
            f"Undecided: {len(undecided)} of {sum(r.tokens > 2 for r in rows)} Monte Carlo "
            f"cells (n > 2) end with more than 10% undecided; the largest share is "
            f"{worst.p_undecided:.2f} (n = {worst.tokens}, d = {worst.dim}, beta = "
            f"{worst.beta:g}, eps = {worst.eps:g}, T = {worst.horizon:g}). The edge table "
            "gives the undecided share beside every edge.",
            "",
        ]
    two = [r for r in rows if r.tokens == 2 and np.isfinite(r.p_exact_horizon)]
    if two:
        within, _, _ = mc_agreement(two)
        z = max(abs(z_score(r, r.p_exact_horizon)) for r in two)
        text += [
            f"Two tokens, confirmation: the network's Monte Carlo against the exact "
            f"finite-horizon probability of the limit SDE at the same T: {within}/{len(two)} "
            f"cells within {BAND} standard errors (largest |z| {z:.1f}; "
            f"{sum(r.tokens == 2 for r in rows) - len(two)} cells without a finite-horizon "
            "value, where that solver overflows at small eps). Largest exact "
            f"P(antipodal) on the grid: "
            + ", ".join(f"d = {d}: {top:.3f}" for d, top in _largest_exact(rows).items())
            + (": below 1/2, so two uniform tokens have no edge, the single cluster is the "
               "more probable end everywhere on the grid."
               if max(_largest_exact(rows).values()) < 0.5 else "."),
            "",
        ]
        status.append(("Figure 4, two tokens (network vs exact, finite T)",
                       f"{within}/{len(two)} cells within {BAND} s.e."))
    body = []
    for f in fits:
        body.append([
            str(f.tokens), str(f.dim), str(f.edges),
            "-" if not f.edges else f"{f.beta_min:g}-{f.beta_max:g}",
            "-" if not np.isfinite(f.slope) else
            f"{f.slope:.2f} [{f.slope_low:.2f}, {f.slope_high:.2f}]",
            _log_gap(f.paper_mean), _log_gap(f.paper_max),
            _log_gap(f.two_token_mean), _log_gap(f.balanced_mean), _log_gap(f.unbalanced_mean),
            f.paper_inside])
    text += [
        "Fits per (n, d) over the betas with an edge: the slope of log eps* against beta "
        "(paper's curve: -0.5; two-token linearization: about -1 at large beta) and the "
        "mean signed log-distance log(eps*/eps_ref) to each curve (largest |.| for the "
        "paper's), and the betas where the paper's curve lies inside the edge's interval:",
        "",
        table(["n", "d", "edges", "beta range", f"slope [{LEVEL:.0%}]", "vs paper",
                "max vs paper", "vs two-token linear", "vs balanced formation",
                "vs 1 against n-1", "paper inside interval at beta"], body),
        "",
    ]
    matches = [f for f in fits if f.paper_inside != "none"]
    flat = [f for f in fits if f.edges >= 2 and f.slope_low <= -0.5 <= f.slope_high]
    steep = [f for f in fits if f.edges >= 2 and f.slope_low <= -1.0 <= f.slope_high]
    several = [e for e in edges if e.status in ("several", "inverted")]

    def cases(chosen):
        return ", ".join(f"(n={f.tokens}, d={f.dim})" for f in chosen) or "none"

    text += [
        "**Conclusion (from the table).** The paper's curve lies inside the edge's "
        f"{LEVEL:.0%} interval for: "
        + ("; ".join(f"n = {f.tokens}, d = {f.dim} at beta = {f.paper_inside}"
                     for f in matches) or "no (n, d) at any beta")
        + f". Slopes whose interval holds the paper's -1/2: {cases(flat)}; -1: "
        f"{cases(steep)}. Without an edge: antipodal never dominates on the grid in "
        f"{sum(e.status == 'never' for e in edges)} of {len(edges)} (n, d, beta) columns, "
        f"dominates already at the smallest eps in {sum(e.status == 'always' for e in edges)}"
        + (f"; {len(several)} columns cross more than once or downwards "
           + ", ".join(f"(n={e.tokens}, d={e.dim}, beta={e.beta:g})" for e in several[:8])
           if several else "; every edge is a single upward crossing")
        + ". A linear threshold says where a formation, once formed, attracts; the edge "
        "says where it is the more probable end from uniform tokens: the two need not "
        "coincide, and the table says by how much they do not.",
        "",
        "![Figure 4, edges per n and d](dominance.png)",
        "",
        f"Tables: `dominance.csv` (counts per cell), `dominance_edges.csv`, "
        f"`dominance_fits.csv`. Command: `{spec.command_line()}`",
        "",
    ]
    status.append(("Figure 4 over n and d: paper's curve inside the edge's interval",
                   "; ".join(f"n={f.tokens}, d={f.dim}: beta {f.paper_inside}"
                             for f in matches) or "nowhere"))
    return "\n".join(text), status


__all__ = ["DominanceRow", "DominanceSpec", "dominance_section"]
