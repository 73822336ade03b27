"""Figure 4: dominant outcome of the hybrid dynamics V = (mu/sqrt L) Id + eps G."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from .._network import network_depth
from .._outcomes import DEFAULT_TOL
from .._weights import Hybrid
from ._phase import SAMPLING, Method
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
from ._store import chunk_seed
from ._sweep import RunOptions, SweepResult, run_options, run_sweep

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
    wanted = scale / eps**2 if scale > 0 else 0.0
    if cap > 0:
        wanted = min(wanted, cap)
    return network_depth(max(horizon, wanted), layers) / layers


class ScaledHorizon:
    """The horizon rule of the hybrid sweeps (``hybrid``, ``dominance``), for a spec with the
    fields ``horizon``, ``horizon_scale``, ``max_horizon`` and ``layers``.

    A mixin without fields, so that each final spec keeps its own fields in its own order
    (the CSV columns and the resume identity follow that order).
    """

    horizon: float
    horizon_scale: float
    max_horizon: float
    layers: int

    def point_horizon(self, eps: float) -> float:
        """The horizon simulated at noise ``eps`` (:func:`scaled_horizon`)."""
        return scaled_horizon(self.horizon, self.horizon_scale, self.max_horizon, eps,
                              self.layers)

    def mean_steps(self, points: list[dict]) -> int:
        """Layers per trajectory, averaged over ``points`` (their horizons depend on eps),
        for the ``--dry-run`` plan."""
        return round(np.mean([network_depth(self.point_horizon(p["eps"]), self.layers)
                              for p in points]))


def _cap_above_horizon(spec) -> str | None:
    if 0 < spec.max_horizon < spec.horizon:
        return (f"--max-horizon {spec.max_horizon:g} is below --horizon {spec.horizon:g}; "
                "raise it or pass 0 (no cap)")
    return None


def _two_tokens_only(spec: HybridSpec) -> str | None:
    if spec.method in ("exact", "reduced") and spec.tokens != 2:
        return (f"--method {spec.method} describes two tokens only (got --tokens "
                f"{spec.tokens}); use --method particles or discrete")
    return None


@dataclass(frozen=True)
class HybridSpec(ScaledHorizon, ExperimentSpec):
    """Figure 4: the dominant outcome of V = (mu/sqrt L) Id + eps G over betas x eps.

    The defaults are the ``quick`` sizes (three tokens in d = 3, the discrete network).
    """

    command: ClassVar[str] = "hybrid"
    summary: ClassVar[str] = "Figure 4: dominant outcome of the hybrid dynamics"
    rules: ClassVar[tuple] = (_two_tokens_only, _cap_above_horizon, at_least_one_layer)
    unused: ClassVar[dict[str, tuple[str, ...]]] = {
        "exact": (*SAMPLING, "horizon_scale", "max_horizon")}

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

    def points(self) -> list[dict[str, Any]]:
        """The grid, beta-major: ``{"beta": beta, "eps": eps}``."""
        return [{"beta": b, "eps": e} for b in self.betas for e in self.eps]


@dataclass(frozen=True)
class HybridRow:
    """One cell of Figure 4: outcome fractions, the dominant one, the two-token exact value."""

    beta: float
    eps: float
    p_single: float
    p_antipodal: float
    p_undecided: float
    dominant: str  # "single", "antipodal" or "undecided"
    stderr: float  # binomial standard error of p_antipodal
    p_exact: float  # exact two-token P(antipodal), nan for more tokens
    trajectories: int
    horizon: float  # depth-time simulated at this eps (nan for the exact method)


def _chunk(spec: HybridSpec, point: dict, k: int, size: int) -> dict:
    """Counts of chunk ``k`` (``size`` trajectories) of ``point``; nothing for the exact method."""
    import jax

    from ._simulate import simulate_counts

    if spec.method == "exact":
        return {}
    return simulate_counts(
        spec.method, jax.random.PRNGKey(chunk_seed(spec.seed, point, k)), tokens=spec.tokens,
        beta=point["beta"], d=spec.dim, weights=Hybrid(mu=spec.mu, eps=point["eps"]),
        trajectories=size, layers=spec.layers, horizon=spec.point_horizon(point["eps"]),
        tol=spec.tol, absorb=spec.absorb)


def _finish(spec: HybridSpec, point: dict, counts: list[dict]) -> HybridRow:
    from .._outcomes import fractions_from_counts
    from ._simulate import add_counts, exact_two_tokens

    beta, eps, n, d, mu = point["beta"], point["eps"], spec.tokens, spec.dim, spec.mu
    exact = exact_two_tokens(beta, d, mu=mu, eps=eps) if n == 2 else None
    fractions = (exact if spec.method == "exact"
                 else fractions_from_counts(*add_counts(counts)["outcomes"]))
    return HybridRow(
        beta=beta, eps=eps, p_single=float(fractions.single),
        p_antipodal=float(fractions.antipodal), p_undecided=float(fractions.undecided),
        dominant=str(fractions.dominant()), stderr=float(fractions.antipodal_se),
        p_exact=float(exact.antipodal) if exact is not None else float("nan"),
        trajectories=fractions.count or 0,
        horizon=float("nan") if spec.method == "exact" else spec.point_horizon(eps),
    )


def run_hybrid(spec: HybridSpec, out: str | os.PathLike, *, quiet: bool = False,
               overwrite: bool = False, name: str = "hybrid",
               options: RunOptions | None = None) -> SweepResult[HybridRow] | list[str]:
    """Sweep ``betas x eps`` into ``out/NAME.csv`` and draw ``NAME.png``
    (``options``: chunks, executor, dry run; :class:`RunOptions`)."""
    return run_sweep(spec, out, HybridRow, _chunk, _finish, plot_hybrid, name=name,
                     desc=f"{name} ({spec.method}, n={spec.tokens})",
                     steps=0 if spec.method == "exact" else spec.mean_steps(spec.points()),
                     options=run_options(options, quiet=quiet, overwrite=overwrite))


def horizon_label(spec) -> str:
    """``T = 50``, or the rule ``T = max(50, 4/eps^2) <= 800`` when the horizon scales."""
    if spec.horizon_scale == 0:
        return f"T = {spec.horizon:g}"
    cap = f" <= {spec.max_horizon:g}" if spec.max_horizon > 0 else ""
    return f"T = max({spec.horizon:g}, {spec.horizon_scale:g}/eps^2){cap}"


def thresholds(betas, d: int, mu: float) -> dict[str, np.ndarray]:
    """The paper's eps = sqrt(2 e^-beta) and the exact linearized threshold.

    ``linear`` is where the antipodal pair of two tokens starts to attract (linearization at
    rho = -1, derived in proofs_check); ``inf`` below beta_c(d).
    """
    import warnings

    from .. import two_token

    betas = np.asarray(betas, dtype=float)
    with warnings.catch_warnings(), np.errstate(all="ignore"):  # inf marks "no threshold"
        warnings.simplefilter("ignore", RuntimeWarning)
        return {
            "paper": np.asarray(two_token.paper_hybrid_threshold(betas), dtype=float),
            "linear": np.asarray(two_token.hybrid_threshold(betas, d, mu=mu), dtype=float),
        }


def exact_map(betas, eps, d: int, mu: float) -> np.ndarray:
    """Exact P(antipodal) of two uniform tokens on the grid ``eps x betas`` (one call)."""
    from .. import two_token

    b, e = np.meshgrid(np.asarray(betas, float), np.asarray(eps, float))
    return np.asarray(two_token.antipodal_probability(b, d, mu=mu, eps=e), dtype=float)


def plot_hybrid(rows: list[HybridRow], spec: HybridSpec, path: Path) -> Path:
    """Cells coloured by the dominant outcome (shade = its fraction) with three boundaries."""
    from matplotlib.colors import to_rgb
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from ._plotting import ANTIPODAL, SINGLE, UNDECIDED, save, subplots

    d, mu = spec.dim, spec.mu
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
    th = thresholds(fine, d, mu)
    handles = [Patch(color=SINGLE, label="single cluster dominant"),
               Patch(color=ANTIPODAL, label="antipodal dominant")]
    ax.plot(fine, th["paper"], "k--", lw=1.8)
    handles.append(Line2D([], [], color="k", ls="--",
                          label=r"paper: $\varepsilon=\sqrt{2e^{-\beta}}$"))
    ax.plot(fine, th["linear"], color="k", lw=1.8)
    handles.append(Line2D([], [], color="k",
                          label=r"antipodal pair attracts above (linearization, proofs_check)"))
    n = spec.tokens
    gb = np.linspace(min(betas), max(betas), 48)
    ge = np.linspace(min(eps), max(eps), 48)
    exact = exact_map(gb, ge, d, mu)
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
        f"Hybrid dynamics, n={n}, d={d}, mu={mu:g}: {spec.method}"
        + ("" if spec.method == "exact" else
           f", {spec.trajectories} trajectories, L={spec.layers}, {horizon_label(spec)}")
        + "\nshade: fraction of the dominant outcome (white = no majority)", fontsize=9)
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return save(fig, path)
