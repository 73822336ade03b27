r"""The dominance edge :math:`\varepsilon^*(\beta)` and its fit against the threshold curves.

Along the noise grid of one :math:`(n, d, \beta)` the edge is where
:math:`P(\text{antipodal}) - P(\text{single})` changes sign from negative (the single
cluster wins at small :math:`\varepsilon`) to non-negative, interpolated linearly in
:math:`\log\varepsilon` between the two grid points around it (:func:`edge`). Its 95 %
interval comes from a parametric bootstrap of the counts: every grid point's three
outcome counts are redrawn multinomially with their observed fractions, the edge is
found again, and the 2.5 and 97.5 percentiles of the replicates that have one are the
interval (:func:`bootstrap_edges`; the share of replicates that have one is reported).
A point whose counts are all in one outcome is redrawn identically, so the band is only
as wide as the two bracketing points allow: a coarse grid is a floor on the uncertainty
that the bootstrap does not see.

:func:`dominance_edges` makes the edge table (one :class:`EdgeRow` per ``(n, d, beta)``)
and the fit table (one :class:`FitRow` per ``(n, d)``): the mean and largest log-distance
:math:`|\log(\varepsilon^*/\varepsilon_{\rm ref})|` to the paper's curve
:math:`\sqrt{2e^{-\beta}}`, to the two-token linear threshold and to the linear thresholds
of the balanced and of the most unbalanced formation
(:func:`spheresde.transformer.formation_threshold`), and the slope of
:math:`\log\varepsilon^*` against :math:`\beta` with its bootstrap interval (the paper's
curve has slope :math:`-1/2`, the two-token linearization about :math:`-1`).
"""

from __future__ import annotations

import csv
import dataclasses
import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .engine import format_value

BOOTSTRAP_REPLICATES = 1000
LEVEL = 0.95
REFERENCES = ("paper", "two_token", "balanced", "unbalanced")


def _up_crossings(log_eps: np.ndarray, diff: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First upward crossing of ``diff`` (``(..., E)``) in log eps, nan where none, and the
    number of sign changes of ``diff >= 0`` along the last axis."""
    ahead = diff >= 0
    up = ~ahead[..., :-1] & ahead[..., 1:]
    changes = np.sum(ahead[..., :-1] != ahead[..., 1:], axis=-1)
    i = np.argmax(up, axis=-1)
    lo = np.take_along_axis(diff, i[..., None], -1)[..., 0]
    hi = np.take_along_axis(diff, i[..., None] + 1, -1)[..., 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        share = -lo / (hi - lo)
    x = log_eps[i] + (log_eps[i + 1] - log_eps[i]) * share
    return np.where(up.any(axis=-1), x, np.nan), changes


def edge(eps, diff) -> tuple[float, str, int]:
    """``(eps*, status, sign changes)`` of ``diff = P(antipodal) - P(single)`` on ``eps``.

    ``eps`` must increase. ``status`` is ``"edge"`` (one upward crossing), ``"never"``
    (the single cluster is ahead everywhere), ``"always"`` (the antipodal outcome is at
    least as likely everywhere), ``"inverted"`` (one downward crossing only) or
    ``"several"`` (more sign changes; ``eps*`` is the first upward crossing).

    Examples
    --------
    >>> star, status, changes = edge([0.1, 0.2, 0.4], [-0.5, -0.1, 0.3])
    >>> round(star, 4), status, changes
    (0.2378, 'edge', 1)
    """
    eps = np.asarray(eps, float)
    diff = np.asarray(diff, float)
    if eps.ndim != 1 or eps.shape != diff.shape or eps.size < 2:
        raise ValueError(f"eps and diff need one shape of at least 2 values, got {eps.shape} "
                         f"and {diff.shape}")
    if np.any(np.diff(eps) <= 0) or np.any(eps <= 0):
        raise ValueError(f"eps must be positive and increasing, got {eps}")
    x, changes = _up_crossings(np.log(eps), diff)
    changes = int(changes)
    star = float(np.exp(x))
    if changes == 0:
        status = "always" if diff[0] >= 0 else "never"
    elif changes == 1:
        status = "edge" if np.isfinite(star) else "inverted"
    else:
        status = "several"
    return star, status, changes


def bootstrap_edges(eps, counts, *, replicates: int = BOOTSTRAP_REPLICATES,
                    rng: np.random.Generator) -> np.ndarray:
    """Edges of ``replicates`` multinomial redraws of ``counts`` (``(E, 3)``: single,
    antipodal, undecided per eps), nan where a replicate has no upward crossing."""
    eps = np.asarray(eps, float)
    counts = np.asarray(counts)
    if counts.shape != (eps.size, 3) or np.any(counts < 0):
        raise ValueError(f"counts must be non-negative, one (single, antipodal, undecided) "
                         f"row per eps: shape {(eps.size, 3)}, got {counts.shape}")
    total = counts.sum(axis=1)
    if np.any(total == 0):
        raise ValueError("every eps needs at least one trajectory")
    draws = np.stack([rng.multinomial(t, c / t, size=replicates)
                      for t, c in zip(total, counts, strict=True)], axis=1)  # (R, E, 3)
    diff = (draws[..., 1] - draws[..., 0]) / total
    x, _ = _up_crossings(np.log(eps), diff)
    return np.exp(x)


def linear_thresholds(betas, d: int, mu: float, tokens) -> dict[str, np.ndarray]:
    """The curves an edge is set against, at ``betas``: ``paper`` (sqrt(2 e^-beta)),
    ``two_token`` (the linearization at rho = -1) and, for every n in ``tokens``,
    ``balanced_N`` (n//2 against the rest) and ``unbalanced_N`` (one against n - 1);
    ``inf`` where the inter-cluster mode repels for every eps."""
    import warnings

    from ..transformer import two_token
    from ..transformer._formation import formation_threshold

    betas = np.asarray(betas, float)
    curves = {"paper": np.asarray(two_token.paper_hybrid_threshold(betas), float)}
    with warnings.catch_warnings(), np.errstate(all="ignore"):  # inf marks "no threshold"
        warnings.simplefilter("ignore", RuntimeWarning)
        curves["two_token"] = np.asarray(two_token.hybrid_threshold(betas, d, mu=mu), float)
        for n in tokens:
            for name, k in (("balanced", n // 2), ("unbalanced", 1)):
                curves[f"{name}_{n}"] = np.asarray(
                    formation_threshold(betas, d, tokens=int(n), cluster=k, mu=mu), float)
    return curves


@dataclass(frozen=True)
class EdgeRow:
    """The edge of one ``(n, d, beta)`` and the reference curves there."""

    tokens: int
    dim: int
    beta: float
    eps_star: float  # nan without an upward crossing
    low: float  # 95 % bootstrap interval (the exact value twice for two tokens)
    high: float
    status: str  # edge, never, always, inverted, several
    changes: int  # sign changes of P(antipodal) - P(single) along eps
    found: float  # share of bootstrap replicates with an edge (1 for two tokens)
    undecided_at_edge: float  # larger undecided fraction of the two bracketing points
    undecided_max: float  # largest undecided fraction along eps
    paper: float
    two_token: float
    balanced: float
    unbalanced: float


@dataclass(frozen=True)
class FitRow:
    """How the edges of one ``(n, d)`` sit against the reference curves."""

    tokens: int
    dim: int
    edges: int  # betas with an edge
    beta_min: float  # range of those betas
    beta_max: float
    slope: float  # of log eps* against beta
    slope_low: float  # 95 % bootstrap interval
    slope_high: float
    paper_mean: float  # mean signed log(eps*/eps_ref)
    paper_abs: float  # mean |log(eps*/eps_ref)|
    paper_max: float  # largest |log(eps*/eps_ref)|
    two_token_mean: float
    two_token_abs: float
    two_token_max: float
    balanced_mean: float
    balanced_abs: float
    balanced_max: float
    unbalanced_mean: float
    unbalanced_abs: float
    unbalanced_max: float
    paper_inside: str  # betas where the paper's curve is inside the 95 % interval


def _slopes(betas: np.ndarray, log_eps: np.ndarray) -> np.ndarray:
    """Least-squares slopes of ``log_eps`` (``(..., B)``, nan = missing) against ``betas``."""
    w = np.isfinite(log_eps)
    y = np.where(w, log_eps, 0.0)
    count = w.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        xm = (w * betas).sum(-1) / count
        ym = y.sum(-1) / count
        dx = np.where(w, betas - xm[..., None], 0.0)
        slope = (dx * (y - ym[..., None])).sum(-1) / (dx**2).sum(-1)
    return np.where(count >= 2, slope, np.nan)


def _distances(star: np.ndarray, ref: np.ndarray) -> tuple[float, float, float]:
    ok = np.isfinite(star) & np.isfinite(ref)
    if not ok.any():
        return (np.nan,) * 3
    gap = np.log(star[ok] / ref[ok])
    return float(gap.mean()), float(np.abs(gap).mean()), float(np.abs(gap).max())


def _spans(values: list[float]) -> str:
    return " ".join(f"{v:g}" for v in values) if values else "none"


def dominance_edges(rows: list[Any], spec: Any) -> tuple[list[EdgeRow], list[FitRow]]:
    """Edge and fit tables of a dominance sweep's rows (two tokens: the exact
    infinite-horizon probability; more tokens: the Monte Carlo counts, bootstrapped with
    a generator seeded from ``spec.seed``, n and d)."""
    edges: list[EdgeRow] = []
    fits: list[FitRow] = []
    half = (1 - LEVEL) / 2 * 100
    for n in sorted({r.tokens for r in rows}):
        for d in sorted({r.dim for r in rows}):
            mine = sorted((r for r in rows if r.tokens == n and r.dim == d),
                          key=lambda r: (r.beta, r.eps))
            if not mine:
                continue
            betas = np.array(sorted({r.beta for r in mine}))
            ref = linear_thresholds(betas, d, spec.mu, [n])
            rng = np.random.default_rng([spec.seed, n, d])
            stars, replicas = [], []
            for j, beta in enumerate(betas):
                column = [r for r in mine if r.beta == beta]
                eps = np.array([r.eps for r in column])
                counts = np.array([[r.single, r.antipodal, r.undecided] for r in column])
                undecided = counts[:, 2] / counts.sum(1)
                if n == 2:
                    diff = 2 * np.array([r.p_exact for r in column]) - 1
                    undecided = np.zeros_like(undecided)  # the exact limit decides every path
                else:
                    diff = (counts[:, 1] - counts[:, 0]) / counts.sum(1)
                star, status, changes = edge(eps, diff)
                boot = (np.full(BOOTSTRAP_REPLICATES, star) if n == 2 else
                        bootstrap_edges(eps, counts, rng=rng))
                found = float(np.mean(np.isfinite(boot)))
                # an interval only around an edge the data have (found says how often
                # the redraws find one anyway)
                low, high = (np.nanpercentile(boot, [half, 100 - half])
                             if found > 0 and np.isfinite(star) else (np.nan, np.nan))
                at = np.searchsorted(eps, star) if np.isfinite(star) else None
                stars.append(star)
                replicas.append(boot)
                edges.append(EdgeRow(
                    tokens=n, dim=d, beta=float(beta), eps_star=star, low=float(low),
                    high=float(high), status=status, changes=changes, found=found,
                    undecided_at_edge=(float(max(undecided[at - 1], undecided[at]))
                                       if at is not None else np.nan),
                    undecided_max=float(undecided.max()),
                    paper=float(ref["paper"][j]), two_token=float(ref["two_token"][j]),
                    balanced=float(ref[f"balanced_{n}"][j]),
                    unbalanced=float(ref[f"unbalanced_{n}"][j])))
            star = np.array(stars)
            ok = np.isfinite(star)
            boot = np.log(np.array(replicas).T)  # (R, B)
            boot[:, ~ok] = np.nan  # the slope's replicas use the betas of the estimate
            slopes = _slopes(betas, boot)
            slope_low, slope_high = (np.nanpercentile(slopes, [half, 100 - half])
                                     if np.isfinite(slopes).any() else (np.nan, np.nan))
            mine_edges = edges[-len(betas):]
            distances = {name: _distances(star, np.array([getattr(e, name) for e in mine_edges]))
                         for name in REFERENCES}
            inside = [e.beta for e in mine_edges if e.low <= e.paper <= e.high]
            fits.append(FitRow(
                tokens=n, dim=d, edges=int(ok.sum()),
                beta_min=float(betas[ok].min()) if ok.any() else np.nan,
                beta_max=float(betas[ok].max()) if ok.any() else np.nan,
                slope=float(_slopes(betas, np.log(star))), slope_low=float(slope_low),
                slope_high=float(slope_high),
                **{f"{name}_{what}": distances[name][i] for name in REFERENCES
                   for i, what in enumerate(("mean", "abs", "max"))},
                paper_inside=_spans(inside)))
    return edges, fits


def write_rows(path: Path, rows: list[Any], write: Callable[[Path, str], None]) -> Path:
    """Write dataclass ``rows`` as a CSV with ``write(path, text)`` (an atomic writer)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    if rows:
        writer.writerow([f.name for f in dataclasses.fields(rows[0])])
        for row in rows:
            writer.writerow([format_value(v) for v in dataclasses.astuple(row)])
    write(path, buf.getvalue())
    return path


__all__ = ["EdgeRow", "FitRow", "bootstrap_edges", "dominance_edges", "edge",
           "linear_thresholds"]
