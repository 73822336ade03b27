"""Agreement of a Monte Carlo fraction with a reference probability: one rule for REPORT.md.

A row's ``p_antipodal`` (a fraction of ``trajectories`` samples) is compared with a
reference ``p`` (:func:`reference`: the limit's law at the run's own horizon, or its
t -> inf value). The standard error is the larger of the estimate's and the reference's
binomial :math:`\\sqrt{p(1-p)/N}`, so that a point with no antipodal sample (estimated
error 0) is still judged against its exact error bar; the z-score is the gap in those
units; a point agrees when its gap is at most :data:`BAND` standard errors plus the
reference's slack. Every section of the report counts, and prints z, by these functions.
"""

from __future__ import annotations

import math
from typing import Any

from ..transformer._outcomes import binomial_stderr

Row = Any
"""A Monte Carlo row (``PhaseRow``, ``HybridRow``, ``DominanceRow``): ``p_antipodal``,
``trajectories`` and ``reference()``, the probability it must match and its slack."""

BAND = 4
"""Standard errors allowed: two-sided 6e-5 per point, so a false alarm stays rare over a
whole grid."""


def reference(row: Row) -> tuple[float, float]:
    """The probability a Monte Carlo point must match, and the undecided slack it allows.

    Figure 3 rows carry the law of the simulated chain itself at its own L, T and tol
    (``p_network``: the network for ``discrete``, the Euler chain for ``reduced``), else
    the limit SDE's law at the run's own horizon and tol (``p_finite``), and dominance rows
    of two tokens its value at the row's horizon (``p_exact_horizon``): the same
    classification at the same T, so no slack. Hybrid rows only have the t -> inf value:
    the undecided mass may still end either way, so it widens the band. Each row type says
    which (its ``reference()``), beside its columns.
    """
    return row.reference()


def standard_error(row: Row, p: float) -> float:
    """The larger of the estimate's standard error and the reference ``p``'s
    ``sqrt(p (1-p) / N)``, ``N`` the row's trajectories."""
    return max(float(binomial_stderr(q, row.trajectories)) for q in (row.p_antipodal, p))


def z_score(row: Row, p: float) -> float:
    """Signed ``(p_antipodal - p) / se`` (:func:`standard_error`); 0 for an exact match with
    no error bar, infinite for a mismatch with none."""
    gap, se = row.p_antipodal - p, standard_error(row, p)
    if se > 0:
        return gap / se
    return 0.0 if gap == 0 else math.copysign(math.inf, gap)


def agreement_band(row: Row) -> float:
    """Allowed ``|p_antipodal - reference|`` (:func:`reference`): :data:`BAND` standard
    errors (:func:`standard_error`) plus the slack."""
    p, slack = reference(row)
    return BAND * standard_error(row, p) + slack


def mc_agreement(rows: list[Row]) -> tuple[int, int, float]:
    """Points within :func:`agreement_band` of their :func:`reference`; and the worst excess."""
    ok, worst = 0, -math.inf
    for r in rows:
        excess = abs(r.p_antipodal - reference(r)[0]) - agreement_band(r)
        ok += excess <= 1e-12
        worst = max(worst, excess)
    return ok, len(rows), worst


def largest_z(rows: list[Row]) -> tuple[float, float]:
    """Largest ``|z|`` (:func:`z_score`) over Monte Carlo rows, against their
    :func:`reference` (the chain's own law, else the limit's at T) and against the
    t -> inf limit."""
    return (max(abs(z_score(r, reference(r)[0])) for r in rows),
            max(abs(z_score(r, r.p_exact)) for r in rows))


def resolves(row: Row, p: float) -> bool:
    """Whether the row's sample can see the reference ``p`` at all: ``N p (1 - p) >= 1``
    (the binomial variance of its count at least one sample). A law of 1e-20 is 0 to any
    sample; such points would only add z = 0 to a mean signed z and dilute it."""
    return row.trajectories * p * (1 - p) >= 1


def z_summary(rows: list[Row], column: str) -> tuple[int, int, float, float]:
    """Against the probabilities in ``column`` (``"p_finite"``, ``"p_network"``), over the
    rows whose sample :func:`resolves` it: the points within :data:`BAND` standard errors,
    their number, the largest ``|z|`` and the mean signed ``z`` (:func:`z_score`)."""
    zs = [z_score(r, getattr(r, column)) for r in rows if resolves(r, getattr(r, column))]
    if not zs:
        return 0, 0, 0.0, 0.0
    return (sum(abs(v) <= BAND for v in zs), len(zs), max(map(abs, zs)), sum(zs) / len(zs))


__all__ = ["BAND", "agreement_band", "largest_z", "mc_agreement", "reference",
           "resolves", "standard_error", "z_score", "z_summary"]
