"""Antipodal formations of n > 2 tokens: outcome fractions and the sizes of the two clusters."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from ..transformer._outcomes import DEFAULT_TOL
from ..transformer._weights import ConstantWeights, PureNoise
from ._common import ABSORB, BETAS, HORIZON, LAYER, LAYERS, NORM, SAMPLES, SEED, SIGMA, TOL
from ._monte_carlo import (
    NETWORK_STREAMS,
    AbstractFixedHorizonSpec,
    Simulation,
    depth_in_range,
    layer_rule,
)
from ._report import pm, table
from .engine import Section, at_least, param


@dataclass(frozen=True)
class TokensRow:
    """One grid point: outcome fractions and the sizes of the two clusters."""

    tokens: int
    beta: float
    p_single: float
    p_antipodal: float
    p_undecided: float
    stderr: float  # standard error of p_antipodal (binomial where no trajectory is finished)
    minority_mean: float  # mean size of the smaller cluster over antipodal samples (nan: none)
    # number of antipodal samples whose smaller cluster has k tokens, for k = 1..n//2 (a
    # trajectory finished by the formation law adds its antipodal probability)
    minority_counts: tuple[float, ...]
    trajectories: int
    finished: int = 0  # trajectories finished by the formation law (stored before it: 0)


@dataclass(frozen=True)
class TokensSpec(AbstractFixedHorizonSpec):
    """Antipodal formations of n > 2 tokens over numbers of tokens x betas.

    The defaults are the ``quick`` sizes (the discrete network in d = 3).
    """

    command: ClassVar[str] = "tokens"
    formations: ClassVar[bool] = True
    streams: ClassVar = {"method": {"discrete": NETWORK_STREAMS}}
    summary: ClassVar[str] = "antipodal formations of n > 2 tokens"
    rules: ClassVar[tuple] = (depth_in_range, layer_rule)
    row_type: ClassVar[type] = TokensRow
    label: ClassVar[str] = "{name} ({method})"
    axes: ClassVar[dict[str, str]] = {"tokens": "tokens", "beta": "betas"}
    report_rank: ClassVar[int] = 60

    tokens: tuple[int, ...] = param((3, 4, 6), "numbers of tokens n, e.g. 3,4,8",
                                    check=at_least(2))
    betas: tuple[float, ...] = param((0.5, 1.0, 2.0, 3.0, 4.0), **BETAS)
    dim: int = param(3, "token dimension d", check=at_least(2))
    sigma: float = param(1.0, **SIGMA)
    trajectories: int = param(400, **SAMPLES)
    layers: int = param(20, **LAYERS)
    horizon: float = param(30.0, **HORIZON)
    tol: float = param(DEFAULT_TOL, **TOL)
    absorb: float = param(1e-6, **ABSORB)
    method: Literal["particles", "discrete"] = param(
        "discrete", "particles: the SDE on the sphere; discrete: the network")
    weights: Literal["noise", "constant"] = param(
        "noise", "noise: iid N(0, sigma^2) value matrices; constant: V = Id in every layer, "
        "the deterministic model (horizon in its own time T sqrt(L), see "
        "spheresde.transformer.ConstantWeights)")
    seed: int = param(0, **SEED)
    layer: str = param("paper", **LAYER)
    norm: str = param("rms", **NORM)

    def simulation(self, point: dict[str, Any]) -> Simulation:
        """``tokens`` tokens in dimension ``dim`` at ``beta``, noise or constant weights."""
        weights = ConstantWeights() if self.weights == "constant" else PureNoise(self.sigma)
        return Simulation(self.method, point["tokens"], point["beta"], self.dim, weights,
                          self.horizon, norm=self.norm, layer=self.layer)

    def finish(self, point: dict[str, Any], counts: list[dict]) -> TokensRow:
        """The row of ``point``: outcome fractions and the sizes of the two clusters."""
        from ._simulate import add_counts, fractions_of_counts

        total = add_counts(counts)
        fractions = fractions_of_counts(total)
        by_size = np.asarray(total["minority"], float)
        if "finish_minority" in total:
            by_size = by_size + np.asarray(total["finish_minority"])
        antipodal = float(by_size.sum())
        return TokensRow(
            tokens=point["tokens"], beta=point["beta"], p_single=float(fractions.single),
            p_antipodal=float(fractions.antipodal), p_undecided=float(fractions.undecided),
            stderr=float(fractions.antipodal_se),
            minority_mean=float(by_size @ np.arange(by_size.size) / antipodal) if antipodal
            else float("nan"),
            # whole counts as integers (every count but where the finish adds probabilities)
            minority_counts=tuple(int(c) if float(c).is_integer() else float(c)
                                  for c in by_size[1:]), trajectories=fractions.count,
            finished=int(total.get("finished", 0)),
        )

    def plot(self, rows: list[TokensRow], path: Path) -> Path:
        """Left: outcome fractions against beta per n; right: smaller-cluster sizes at top beta."""
        from ._plotting import colors, save, subplots

        ns = sorted({r.tokens for r in rows})
        palette = colors("plasma", 0.0, 0.8, len(ns))
        fig, (ax, bx) = subplots(1, 2, figsize=(11, 4.4))
        for n, color in zip(ns, palette, strict=True):
            mine = sorted((r for r in rows if r.tokens == n), key=lambda r: r.beta)
            b = np.array([r.beta for r in mine])
            pa = np.array([r.p_antipodal for r in mine])
            ax.errorbar(b, pa, yerr=2 * np.array([r.stderr for r in mine]), color=color,
                        marker="o", ms=4, capsize=2, label=f"n={n} antipodal")
            ax.plot(b, [r.p_single for r in mine], color=color, ls="--", marker="s", ms=3,
                    label=f"n={n} single")
            ax.plot(b, [r.p_undecided for r in mine], color=color, ls=":", lw=1)
        ax.set_xlabel(r"inverse temperature $\beta$")
        ax.set_ylabel("fraction of trajectories")
        ax.set_ylim(-0.02, 1.02)
        model = "V = Id (constant)" if self.weights == "constant" else f"sigma={self.sigma:g}"
        ax.set_title(f"{self.method}, {model}, d={self.dim}, {self.trajectories} trajectories, "
                     f"L={self.layers}, T={self.horizon:g}\n"
                     "solid: antipodal (+-2 s.e.), dashed: single, dotted: undecided", fontsize=9)
        ax.legend(fontsize=7, ncol=2)

        top = max(r.beta for r in rows)
        width = 0.1 / len(ns)  # narrow bars side by side: k/n of different n can be close
        for k, (n, color) in enumerate(zip(ns, palette, strict=True)):
            r = next(r for r in rows if r.tokens == n and r.beta == top)
            counts = np.array(r.minority_counts, float)
            total = float(counts.sum())  # finished trajectories add probabilities
            if total == 0:
                continue
            sizes = np.arange(1, counts.size + 1)
            bx.bar(sizes / n + (k - (len(ns) - 1) / 2) * width, counts / total, width=width,
                   color=color,
                   label=f"n={n} ({total:.0f} antipodal)")
        bx.set_xlabel("size of the smaller cluster / n")
        bx.set_ylabel("share of antipodal trajectories")
        bx.set_title(f"cluster sizes of antipodal formations at beta={top:g}", fontsize=9)
        bx.set_xlim(0, 0.6)
        if bx.get_legend_handles_labels()[0]:  # no antipodal sample at all: no bars
            bx.legend(fontsize=8)
        return save(fig, path)

    @classmethod
    def report_section(cls, results: Mapping[str, Any], notes: Mapping[str, str]) -> Section:
        """Antipodal formations for n > 2 (:func:`tokens_section`)."""
        return tokens_section(results)


def tokens_section(results: Mapping[str, Any]) -> Section:
    """The section of antipodal formations of n > 2 tokens: ``tokens`` and its contrast
    ``tokens_constant`` (constant weights)."""
    spec, rows = results["tokens"].spec, results["tokens"].rows
    ns = sorted({r.tokens for r in rows})
    betas = sorted({r.beta for r in rows})
    cell = {(r.tokens, r.beta): r for r in rows}
    body = [[str(n)] + [f"{pm(cell[n, b])} (und. {cell[n, b].p_undecided:.2f})"
                        for b in betas] for n in ns]
    top = betas[-1]
    sizes = []
    for n in ns:
        counts = cell[n, top].minority_counts
        total = sum(counts)
        share = ", ".join(f"{k}+{n - k}: {c / total:.2f}"
                          for k, c in enumerate(counts, start=1)) if total \
            else "no antipodal samples"
        sizes.append(f"n = {n}: {share}")
    best = max(rows, key=lambda r: r.p_antipodal)
    text = [
        "## Antipodal formations for more than two tokens",
        "",
        "**Paper.** Numerical experiments reveal that antipodal formations persist for "
        "more than two tokens.",
        "",
        f"**Ours** (`{spec.method}`, d = {spec.dim}, sigma = {spec.sigma:g}, "
        f"{spec.sizes_label()}). "
        "P(antipodal) ± standard error, with the undecided fraction:",
        "",
        table(["n"] + [f"beta={b:g}" for b in betas], body),
        "",
        f"Sizes of the two clusters of antipodal formations at beta = {top:g} "
        "(smaller+larger: share of antipodal samples): " + "; ".join(sizes) + ".",
        "",
        f"{sum(r.finished for r in rows)} of {sum(r.trajectories for r in rows)} trajectories "
        "were finished by the exact law of their two-cluster formation once both clusters "
        "were certified tight (absorb = the bound of that certificate; they count by their "
        "outcome probabilities).",
        "",
        "![antipodal formations](tokens.png)",
        "",
        f"Command: `{spec.command_line()}`",
        "",
    ]
    status = []
    if "tokens_constant" in results:
        cspec, crows = results["tokens_constant"].spec, results["tokens_constant"].rows
        ccell = {(r.tokens, r.beta): r for r in crows}
        body = [[str(n)] + [
            f"{ccell[n, b].p_single:.2f} / {ccell[n, b].p_antipodal:.2f} / "
            f"{ccell[n, b].p_undecided:.2f}" for b in betas] for n in ns]
        most = max(crows, key=lambda r: r.p_antipodal)
        text += [
            "**Contrast: constant weights V = Id** (the deterministic model of earlier theory, "
            "same starts and grid; the horizon is in that model's own time, see "
            "`spheresde.transformer.ConstantWeights`). Earlier theory predicts a single "
            "cluster here; "
            "single / antipodal / undecided fractions at the horizon (undecided: still "
            "several clusters, which the deterministic flow leaves only slowly at large beta):",
            "",
            table(["n"] + [f"beta={b:g}" for b in betas], body),
            "",
            "![constant weights](tokens_constant.png)",
            "",
            f"Command: `{cspec.command_line()}`",
            "",
        ]
        status.append(("Constant weights V = Id (deterministic model)",
                       f"antipodal at most {most.p_antipodal:.2f} "
                       f"(n = {most.tokens}, beta = {most.beta:g})"))
    status.insert(0, ("Antipodal formations for n > 2",
                      f"up to {best.p_antipodal:.2f} ± {best.stderr:.2f} "
                      f"(n = {best.tokens}, beta = {best.beta:g})"))
    return "\n".join(text), status
