"""Figure 4: dominant outcome of the hybrid dynamics V = (mu/sqrt L) Id + eps G."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..transformer._outcomes import DEFAULT_TOL
from ..transformer._weights import Hybrid
from ._agreement import BAND, mc_agreement
from ._common import ABSORB, BETAS, HORIZON, LAYER, LAYERS, NORM, SAMPLES, SEED, TOL
from ._monte_carlo import (
    HORIZON_SCALE,
    MAX_HORIZON,
    NETWORK_STREAMS,
    SAMPLING,
    AbstractScaledHorizonSpec,
    Method,
    Simulation,
    cap_above_horizon,
    depth_in_range,
    layer_rule,
)
from ._report import table
from .engine import Section, at_least, greater_than, param


def _two_tokens_only(spec: HybridSpec) -> str | None:
    if spec.method in ("exact", "reduced") and spec.tokens != 2:
        return (f"`method='{spec.method}'` describes two tokens only (got "
                f"`tokens={spec.tokens}`); use `method` particles or discrete")
    return None


@dataclass(frozen=True)
class HybridRow:
    """One cell of Figure 4: outcome fractions, the dominant one, the two-token exact value."""

    beta: float
    eps: float
    p_single: float
    p_antipodal: float
    p_undecided: float
    dominant: str  # "single", "antipodal" or "undecided"
    stderr: float  # standard error of p_antipodal (binomial where no trajectory is finished)
    p_exact: float  # exact two-token P(antipodal), nan for more tokens
    trajectories: int
    horizon: float  # depth-time simulated at this eps (nan for the exact method)
    finished: int = 0  # trajectories finished by the formation law (stored before it: 0)

    def reference(self) -> tuple[float, float]:
        """The probability this cell must match and its slack
        (:func:`~._agreement.reference`)."""
        return self.p_exact, self.p_undecided


@dataclass(frozen=True)
class HybridSpec(AbstractScaledHorizonSpec):
    """Figure 4: the dominant outcome of V = (mu/sqrt L) Id + eps G over betas x eps.

    The defaults are the ``quick`` sizes (three tokens in d = 3, the discrete network).
    """

    command: ClassVar[str] = "hybrid"
    formations: ClassVar[bool] = True
    streams: ClassVar = {"method": {"discrete": NETWORK_STREAMS}}
    summary: ClassVar[str] = "Figure 4: dominant outcome of the hybrid dynamics"
    rules: ClassVar[tuple] = (_two_tokens_only, cap_above_horizon, depth_in_range,
                              layer_rule)
    unused: ClassVar = {"method": {"exact": (*SAMPLING, "horizon_scale", "max_horizon")}}
    law_only: ClassVar = {"method": "exact"}
    label: ClassVar[str] = "{name} ({method}, n={tokens})"
    row_type: ClassVar[type] = HybridRow
    axes: ClassVar[dict[str, str]] = {"beta": "betas", "eps": "eps"}
    report_rank: ClassVar[int] = 40

    betas: tuple[float, ...] = param((1.0, 2.0, 3.0, 4.0, 5.0, 6.0), **BETAS)
    eps: tuple[float, ...] = param((0.25, 0.5, 1.0, 1.5, 2.0),
                                   "noise levels eps: a list or start:stop:num",
                                   check=greater_than(0.0))
    tokens: int = param(3, "number of tokens n", check=at_least(2))
    dim: int = param(3, "token dimension d", check=at_least(2))
    mu: float = param(1.0, "deterministic part of V = (mu/sqrt L) Id + eps G",
                      check=at_least(0.0))
    trajectories: int = param(400, **SAMPLES)
    layers: int = param(10, **LAYERS)
    horizon: float = param(50.0, **HORIZON)
    horizon_scale: float = param(0.0, **HORIZON_SCALE)
    max_horizon: float = param(0.0, **MAX_HORIZON)
    tol: float = param(DEFAULT_TOL, **TOL)
    absorb: float = param(1e-6, **ABSORB)
    method: Method = param("discrete", "as for phase; exact and reduced need --tokens 2")
    seed: int = param(0, **SEED)
    layer: str = param("paper", **LAYER)
    norm: str = param("rms", **NORM)

    def simulation(self, point: dict[str, Any]) -> Simulation:
        """``tokens`` tokens in dimension ``dim`` at ``beta``, hybrid weights of noise
        ``eps``, the horizon of ``eps``."""
        return Simulation(self.method, self.tokens, point["beta"], self.dim,
                          Hybrid(mu=self.mu, eps=point["eps"]), self.point_horizon(point["eps"]),
                          norm=self.norm, layer=self.layer)

    def finish(self, point: dict[str, Any], counts: list[dict]) -> HybridRow:
        """The row of ``point``: fractions, the dominant outcome, the exact two-token value."""
        from ._simulate import add_counts, exact_two_tokens, fractions_of_counts

        beta, eps, n, d, mu = point["beta"], point["eps"], self.tokens, self.dim, self.mu
        exact = (exact_two_tokens(beta, d, mu=mu, eps=eps, layer=self.layer, norm=self.norm)
                 if n == 2 else None)
        total = add_counts(counts) if self.method != "exact" else {}
        fractions = exact if self.method == "exact" else fractions_of_counts(total)
        return HybridRow(
            beta=beta, eps=eps, p_single=float(fractions.single),
            p_antipodal=float(fractions.antipodal), p_undecided=float(fractions.undecided),
            dominant=str(fractions.dominant()), stderr=float(fractions.antipodal_se),
            p_exact=float(exact.antipodal) if exact is not None else float("nan"),
            trajectories=fractions.count or 0,
            horizon=float("nan") if self.method == "exact" else self.point_horizon(eps),
            finished=int(total.get("finished", 0)),
        )

    def plot(self, rows: list[HybridRow], path: Path) -> Path:
        """Cells coloured by the dominant outcome (shade = its fraction) with three boundaries."""
        from matplotlib.colors import to_rgb
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch

        from ._plotting import ANTIPODAL, SINGLE, UNDECIDED, save, subplots

        d, mu = self.dim, self.mu
        betas = sorted({r.beta for r in rows})
        eps = sorted({r.eps for r in rows})
        cell = {(r.beta, r.eps): r for r in rows}
        colour = {"single": SINGLE, "antipodal": ANTIPODAL, "undecided": UNDECIDED}
        image = np.ones((len(eps), len(betas), 3))
        for i, e in enumerate(eps):
            for j, b in enumerate(betas):
                r = cell[(b, e)]
                share = getattr(r, f"p_{r.dominant}")
                # white at share 1/3 (no majority), full colour at share 1
                w = np.clip((share - 1 / 3) / (2 / 3), 0, 1)
                image[i, j] = (1 - w) * np.ones(3) + w * np.array(to_rgb(colour[r.dominant]))

        def edges(v):
            v = np.asarray(v)
            if len(v) == 1:
                return np.array([v[0] - 0.5, v[0] + 0.5])
            mid = (v[1:] + v[:-1]) / 2
            return np.concatenate([[2 * v[0] - mid[0]], mid, [2 * v[-1] - mid[-1]]])

        fig, ax = subplots(figsize=(10, 5.2))
        ax.pcolormesh(edges(betas), edges(eps), image, shading="flat")
        fine = np.linspace(max(min(betas), 1e-3), max(betas), 200)
        handles = [Patch(color=SINGLE, label="single cluster dominant"),
                   Patch(color=ANTIPODAL, label="antipodal dominant")]
        if self.layer == "paper" and self.norm == "rms":  # the paper's thresholds
            th = thresholds(fine, d, mu)
            ax.plot(fine, th["paper"], "k--", lw=1.8)
            handles.append(Line2D([], [], color="k", ls="--",
                                  label=r"paper: $\varepsilon=\sqrt{2e^{-\beta}}$"))
            ax.plot(fine, th["linear"], color="k", lw=1.8)
            handles.append(Line2D([], [], color="k", label=r"antipodal pair attracts above "
                                  "(linearization, proofs_check)"))
        n = self.tokens
        gb = np.linspace(min(betas), max(betas), 48)
        ge = np.linspace(min(eps), max(eps), 48)
        exact = exact_map(gb, ge, d, mu, self.layer, self.norm)
        if exact.max() > 0.5:
            ax.contour(gb, ge, exact, levels=[0.5], colors="orange", linewidths=1.8)
            handles.append(Line2D([], [], color="orange",
                                  label=r"exact $P(\mathrm{antipodal})=1/2$, two uniform tokens"))
        elif n == 2:
            handles.append(Line2D([], [], color="none", label="exact: "
                                  rf"$P(\mathrm{{antipodal}})\leq{exact.max():.2f}$ on this plane"))
        ax.set_xlim(edges(betas)[0], edges(betas)[-1])
        ax.set_ylim(edges(eps)[0], edges(eps)[-1])
        ax.set_xlabel(r"inverse temperature $\beta$")
        ax.set_ylabel(r"noise $\varepsilon$")
        ax.set_title(
            f"Hybrid dynamics, n={n}, d={d}, mu={mu:g}"
            + ("" if self.layer == "paper" else f", layer {self.layer}")
            + ("" if self.norm == "rms" else f", {self.norm} norm") + f": {self.method}"
            + ("" if self.method == "exact" else
               f", {self.trajectories} trajectories, L={self.layers}, {self.horizon_label()}")
            + "\nshade: fraction of the dominant outcome (white = no majority)", fontsize=9)
        ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        return save(fig, path)

    @classmethod
    def report_section(cls, results: Mapping[str, Any], notes: Mapping[str, str]) -> Section:
        """Proposition 1 and Figure 4 (:func:`hybrid_section`)."""
        return hybrid_section(results)


def thresholds(betas, d: int, mu: float) -> dict[str, np.ndarray]:
    """The paper's eps = sqrt(2 e^-beta) and the exact linearized threshold.

    ``linear`` is where the antipodal pair of two tokens starts to attract (linearization at
    rho = -1, derived in proofs_check); ``inf`` below beta_c(d).
    """
    import warnings

    from ..transformer import two_token

    betas = np.asarray(betas, dtype=float)
    with warnings.catch_warnings(), np.errstate(all="ignore"):  # inf marks "no threshold"
        warnings.simplefilter("ignore", RuntimeWarning)
        return {
            "paper": np.asarray(two_token.paper_hybrid_threshold(betas), dtype=float),
            "linear": np.asarray(two_token.hybrid_threshold(betas, d, mu=mu), dtype=float),
        }


def exact_map(betas, eps, d: int, mu: float, layer: str = "paper",
              norm: str = "rms") -> np.ndarray:
    """Exact P(antipodal) of two uniform tokens on the grid ``eps x betas`` (the paper's
    in one call; another layer's from its derived law, NaN where it has none)."""
    from ..transformer import two_token
    from ._simulate import exact_two_tokens

    b, e = np.meshgrid(np.asarray(betas, float), np.asarray(eps, float))
    if layer == "paper" and norm == "rms":
        return np.asarray(two_token.antipodal_probability(b, d, mu=mu, eps=e), dtype=float)
    return np.vectorize(lambda bb, ee: float(exact_two_tokens(
        bb, d, mu=mu, eps=ee, layer=layer, norm=norm).antipodal))(b, e)


def _follows(rows: list[HybridRow], curve) -> tuple[int, int]:
    """Cells whose decided dominant outcome is antipodal exactly when eps > curve(beta)."""
    agree = total = 0
    for r in rows:
        if r.dominant == "undecided":
            continue
        threshold = curve(r.beta)
        predicted = "antipodal" if np.isfinite(threshold) and r.eps > threshold else "single"
        agree += predicted == r.dominant
        total += 1
    return agree, total


def hybrid_section(results: Mapping[str, Any]) -> Section:
    """The section of Proposition 1 and Figure 4: the two thresholds, and the dominant
    outcomes of ``hybrid`` (and ``hybrid_two_tokens``) against them."""
    from ..transformer._formation import formation_threshold


    text = [
        "## Proposition 1 and Figure 4: the hybrid dynamics",
        "",
        "**Paper.** With V = (mu/sqrt L) Id + eps G, Figure 4 shows the dominant outcome "
        "(single cluster or antipodal) of the discrete hybrid dynamics in the (beta, eps) "
        "plane, with the threshold eps = sqrt(2 e^-beta) of Proposition 1 dashed. The "
        "number of tokens and the dimension behind Figure 4 are not stated in the material "
        "we have; our choices are given with each panel below.",
        "",
    ]
    status = []
    some = results.get("hybrid") or results.get("hybrid_two_tokens")
    d, mu = some.spec.dim, some.spec.mu
    grid = [1.0, 2.0, 3.0, 4.0, 6.0, 8.0]
    th = thresholds(grid, d, mu)
    body = [[f"{b:g}", f"{p:.4f}", f"{e:.4f}", f"{p / e:.2f}" if np.isfinite(e) else "-"]
            for b, p, e in zip(grid, th["paper"], th["linear"], strict=True)]
    text += [
        f"**Ours, thresholds (d = {d}, mu = {mu:g}).** Linearizing the exact rho-SDE at "
        "rho = -1 (`proofs_check`), the antipodal pair attracts iff "
        "eps^2 > 2 mu b_- / (1 - 2(d-1) a_- b_-), which behaves like 2 mu e^(-2 beta) for "
        "large beta, so eps ~ sqrt(2 mu) e^(-beta). The paper's curve sqrt(2 e^-beta) is "
        "this large-beta form with beta halved (attention logits scaled by 1/2); but that "
        "same rescaling would turn beta_c(d) into arccosh(d - 2), which is not what the "
        "paper's Theorem 2 states. **The two thresholds differ**; we report both and do not "
        "force agreement.",
        "",
        table(["beta", "paper sqrt(2e^-beta)", "exact linearization", "ratio"], body),
        "",
    ]
    plane_b = np.linspace(0.25, 8.0, 32)
    plane_e = np.geomspace(0.05, 4.0, 32)
    top = float(exact_map(plane_b, plane_e, d, mu).max())
    if top < 0.5:
        text += [
            "For two uniform tokens the exact probability of ending antipodal "
            f"(`two_token.antipodal_probability`) is at most {top:.3f} on beta in [0.25, 8], "
            "eps in [0.05, 4]: the single cluster dominates everywhere for n = 2, so an "
            "antipodal-dominant region in Figure 4 must come from more tokens (or other "
            "starts).",
            "",
        ]
    for name, label in (("hybrid", "network"), ("hybrid_two_tokens", "two tokens")):
        if name not in results:
            continue
        spec, rows = results[name].spec, results[name].rows
        doms = {k: sum(r.dominant == k for r in rows) for k in
                ("single", "antipodal", "undecided")}
        text += [
            f"**{label.capitalize()}** (`{spec.method}`, n = {spec.tokens}, d = {spec.dim}, "
            + ("limit t -> infinity" if spec.method == "exact" else spec.sizes_label())
            + f"): dominant outcome single in {doms['single']}, "
            f"antipodal in {doms['antipodal']}, undecided in {doms['undecided']} of "
            f"{len(rows)} cells.",
        ]
        if spec.tokens == 2:
            if spec.method != "exact":
                ok, total, _ = mc_agreement(rows)
                text.append(f"Against the exact two-token probability: {ok}/{total} cells "
                            f"within {BAND} standard errors plus the undecided fraction.")
                status.append(("Figure 4, two tokens (MC vs exact)",
                               f"{ok}/{total} cells agree; antipodal dominant in "
                               f"{doms['antipodal']} cells"))
        else:
            def curve(kind):
                return lambda b: float(thresholds([b], d, mu)[kind][0])

            paper_ok, linear_ok = _follows(rows, curve("paper")), _follows(rows, curve("linear"))
            text += [
                "\"Antipodal dominant iff eps lies above the curve\" holds in "
                f"{paper_ok[0]}/{paper_ok[1]} decided cells for the paper's curve and in "
                f"{linear_ok[0]}/{linear_ok[1]} for the exact two-token linearization; "
                "per inverse temperature (S single, A antipodal, U undecided, eps ascending):",
                "",
            ]
            eps = sorted({r.eps for r in rows})
            cell = {(r.beta, r.eps): r for r in rows}
            body = []
            for beta in sorted({r.beta for r in rows}):
                marks = " ".join(cell[beta, e].dominant[0].upper() for e in eps)
                first = next((e for e in eps if cell[beta, e].dominant == "antipodal"), None)
                th = thresholds([beta], d, mu)
                lone = float(formation_threshold(beta, d, tokens=spec.tokens, cluster=1, mu=mu))
                body.append([f"{beta:g}", marks, "-" if first is None else f"{first:g}",
                             f"{th['paper'][0]:.3f}", f"{th['linear'][0]:.3f}",
                             f"{lone:.3f}"])
            text += [
                table(["beta", "dominant at eps = " + ", ".join(f"{e:g}" for e in eps),
                        "first antipodal eps", "paper curve", "linearization",
                        f"formation 1 vs {spec.tokens - 1}"], body),
                "",
                f"The last column is the linear threshold of the most unbalanced antipodal "
                f"formation of {spec.tokens} tokens (one token against the other "
                f"{spec.tokens - 1}, `spheresde.transformer.formation_threshold`, derived in "
                "`proofs_check.formation`): above it such a formation, once formed, attracts. "
                "It is a stability threshold, not the edge where antipodal outcomes become "
                "the more probable ones, which only simulation gives (docs: the hybrid "
                "model, *Formations of many tokens*).",
                "",
            ]
            status.append((f"Figure 4, {label}: which threshold the cells follow",
                           f"paper {paper_ok[0]}/{paper_ok[1]}, "
                           f"linearization {linear_ok[0]}/{linear_ok[1]} cells"))
        text += ["", f"![Figure 4, {label}]({name}.png)", "",
                 f"Command: `{spec.command_line()}`", ""]
    status.insert(0, ("Proposition 1: threshold eps = sqrt(2 e^-beta)",
                      "differs from the exact linearization (factor 2 in beta); both reported"))
    return "\n".join(text), status
