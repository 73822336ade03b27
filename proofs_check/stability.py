r"""Theorem 2 and Proposition 1: stability of the two-token equilibria :math:`\rho = \pm 1`.

Near an equilibrium :math:`\rho_*` where drift and diffusion vanish, the Ito SDE
:math:`d\rho = m\,dt + s\,dB` linearizes to a geometric Brownian motion for
:math:`u = \rho - \rho_*`: :math:`du = m'(\rho_*)\,u\,dt + s'(\rho_*)\,u\,dB`, whose
almost-sure Lyapunov exponent is

.. math::  \lambda = m'(\rho_*) - \tfrac12 s'(\rho_*)^2 .

:math:`\lambda < 0` means the equilibrium attracts with positive probability. The scale
function gives the same answer exactly (Feller): with :math:`2m/s^2 = g/(1-\rho^2)`
(:func:`proofs_check.two_token.scale_g`),
:math:`S'(\rho) \sim (1+\rho)^{-g(-1)/2}` at :math:`-1`, integrable iff :math:`g(-1) < 2`,
and :math:`\lambda_- = v(-1)^2\,(g(-1) - 2)`.
"""

from __future__ import annotations

import functools

import sympy as sp

from .symbols import beta, d, eps, eps2, mu, q, r, rho
from .two_token import derive_rho_sde, r_of_rho


@functools.cache
def lyapunov_exponent(rho_star: int) -> sp.Expr:
    r"""Lyapunov exponent :math:`m'(\rho_*) - s'(\rho_*)^2/2` at :math:`\rho_* = \pm 1`.

    The weight ratio is kept as an unknown function :math:`r = R(\rho)` while
    differentiating (the chain-rule terms carry a factor :math:`1-\rho^2` and vanish at
    :math:`\rho_*`), then :math:`R(1) = 1`, :math:`R(-1) = q = e^{-2\beta}`.

    Parameters
    ----------
    rho_star : {1, -1}

    Returns
    -------
    sympy.Expr
        Rational in ``q = exp(-2 beta)`` (at -1), ``d``, ``epsilon``, ``mu``.

    Examples
    --------
    >>> sp.factor(lyapunov_exponent(1))
    -d*epsilon**2 + epsilon**2 - 2*mu
    """
    sde = derive_rho_sde()
    big_r = sp.Function("R")(rho)
    m = sde.drift.subs(r, big_r)
    s = ((1 - rho**2) * sp.sqrt(sde.reduced_variance)).subs(r, big_r)
    r_star = 1 if rho_star == 1 else q
    m1 = sp.diff(m, rho).subs(rho, rho_star).subs(big_r.subs(rho, rho_star), r_star)
    s1 = sp.diff(s, rho).subs(rho, rho_star).subs(big_r.subs(rho, rho_star), r_star)
    return sp.factor(sp.cancel(sp.expand(m1 - s1**2 / 2)))


def in_beta(expr: sp.Expr) -> sp.Expr:
    r"""Substitute :math:`q = e^{-2\beta}`."""
    return expr.subs(q, sp.exp(-2 * beta))


def stated_lyapunov_minus() -> sp.Expr:
    r"""Design-notes form :math:`\lambda_- = 4\mu b_- + 2\varepsilon^2(2(d-1)a_-b_- - 1)`,
    :math:`a_-b_- = 1/(4\cosh^2\beta)`, :math:`b_- = 1/(1+e^{2\beta})`."""
    ab = 1 / (4 * sp.cosh(beta) ** 2)
    b = 1 / (1 + sp.exp(2 * beta))
    return 4 * mu * b + 2 * eps**2 * (2 * (d - 1) * ab - 1)


def pure_noise_lyapunov_minus_cosh_form() -> sp.Expr:
    r""":math:`\lambda_-|_{\mu=0} = \varepsilon^2\,(d - 2 - \cosh 2\beta)/\cosh^2\beta`: its sign
    is that of :math:`d - 2 - \cosh 2\beta` (the form from which Theorem 2 is read off)."""
    return eps**2 * (d - 2 - sp.cosh(2 * beta)) / sp.cosh(beta) ** 2


def difference(x: sp.Expr, y: sp.Expr) -> sp.Expr:
    """The residual ``x - y``, simplified with exponentials rewritten first.

    Parameters
    ----------
    x, y : sympy.Expr

    Returns
    -------
    sympy.Expr
        0 when ``x`` and ``y`` are the same function.

    Examples
    --------
    >>> difference(sp.cosh(beta), (sp.exp(beta) + sp.exp(-beta)) / 2)
    0
    """
    diff = sp.simplify((x - y).rewrite(sp.exp))
    return diff if diff == 0 else sp.simplify(sp.expand(diff))


def same(x: sp.Expr, y: sp.Expr) -> bool:
    """Whether :func:`difference` of ``x`` and ``y`` is 0.

    Parameters
    ----------
    x, y : sympy.Expr

    Returns
    -------
    bool
    """
    return difference(x, y) == 0


@functools.cache
def critical_beta_residual() -> sp.Expr:
    r"""Solve :math:`\lambda_-(\beta) = 0` (pure noise) and compare with the stated root.

    Writes :math:`q = e^{-2\beta} \in (0, 1]`, solves the rational equation in ``q`` and
    keeps the root in :math:`(0, 1]`, :math:`q = d-2-\sqrt{(d-2)^2-1}` (for
    :math:`d \ge 3`); with :math:`\beta_c = -\tfrac12\log q`, returns
    :math:`\cosh(2\beta_c) - \cosh(\operatorname{arccosh}(d-2))`. ``cosh`` is injective on
    :math:`[0, \infty)` and both roots are :math:`\ge 0` there, so the residual is 0 iff
    :math:`\beta_c = \tfrac12\operatorname{arccosh}(d-2)`.

    Returns
    -------
    sympy.Expr
        0 when Theorem 2's threshold is the derived root.

    Examples
    --------
    >>> critical_beta_residual()
    0
    """
    lam_q = lyapunov_exponent(-1).subs(mu, 0)
    roots = sp.solve(sp.numer(sp.together(lam_q)), q)
    # The root below 1 (q = e^{-2 beta} <= 1 for beta >= 0): check it numerically at d = 5.
    small = [x for x in roots if x.subs(d, 5).evalf() < 1]
    if len(small) != 1:
        raise AssertionError(f"expected one root in (0, 1), got {roots}")
    derived = -sp.log(small[0]) / 2
    cosh_derived = sp.radsimp(sp.expand(sp.cosh(2 * derived).rewrite(sp.exp)))
    return sp.simplify(cosh_derived - sp.cosh(2 * _STATED_BETA_C))


_STATED_BETA_C = sp.acosh(d - 2) / 2


@functools.cache
def critical_beta() -> sp.Expr:
    r"""Solve :math:`\lambda_-(\beta) = 0` (pure noise) for :math:`\beta`.

    Writes :math:`q = e^{-2\beta} \in (0, 1]`, solves the rational equation in ``q`` and
    keeps the root in :math:`(0, 1]`, :math:`q = d-2-\sqrt{(d-2)^2-1}` (for
    :math:`d \ge 3`), then checks :math:`\cosh(-\log q) = d - 2`, i.e.
    :math:`-\tfrac12\log q = \tfrac12\operatorname{arccosh}(d-2)` (both are :math:`\ge 0`).

    Returns
    -------
    sympy.Expr
        ``acosh(d - 2)/2``, valid for ``d >= 3``.

    Examples
    --------
    >>> critical_beta()
    acosh(d - 2)/2
    """
    residual = critical_beta_residual()
    if residual != 0:
        raise AssertionError(f"derived beta_c differs from {_STATED_BETA_C}: residual {residual}")
    return _STATED_BETA_C


def scale_exponent_at(rho_star: int) -> sp.Expr:
    r"""The exponent ``k`` with :math:`S'(\rho) \sim |\rho - \rho_*|^{-k}` at a boundary.

    :math:`S' = \exp(-\int 2m/s^2)`. Near :math:`-1`, :math:`2m/s^2 \approx k/(1+\rho)` with
    :math:`k = \lim (1+\rho)\,2m/s^2 = g(-1)/2`, so :math:`S' \sim (1+\rho)^{-k}` and
    :math:`S(-1)` is finite iff :math:`k < 1`. Near :math:`+1`,
    :math:`2m/s^2 \approx k'/(1-\rho)` gives :math:`S' \sim (1-\rho)^{k'}`, i.e.
    :math:`k = -k' = -g(1)/2`.

    Parameters
    ----------
    rho_star : {1, -1}

    Returns
    -------
    sympy.Expr

    Examples
    --------
    >>> sp.expand(scale_exponent_at(1).subs(mu, 0))  # -g(1)/2, pure noise
    3/2 - d/2
    """
    sde = derive_rho_sde()
    ratio = 2 * sde.reduced_drift / (sde.reduced_variance * (1 - rho**2))
    factor = (1 + rho) if rho_star == -1 else (1 - rho)
    expr = sp.cancel(factor * ratio).subs(r, r_of_rho())
    k = sp.simplify(expr.subs(rho, rho_star))
    return k if rho_star == -1 else -k


@functools.cache
def hybrid_threshold() -> tuple[sp.Expr, sp.Expr]:
    r"""Solve :math:`\lambda_-(\beta, \varepsilon) = 0` for :math:`\varepsilon^2` (hybrid).

    Returns
    -------
    eps2 : sympy.Expr
        :math:`2\mu b_-/(1 - 2(d-1)a_-b_-)` in ``q = exp(-2 beta)``: antipodal attracting
        iff :math:`\varepsilon^2 >` this, where the denominator is positive
        (:math:`\beta > \beta_c(d)`); for :math:`\beta \le \beta_c` it is repelling for all
        :math:`\varepsilon`.
    denominator : sympy.Expr
        :math:`1 - 2(d-1)a_-b_-`: :math:`\lambda_- = 4\mu b_- - 2\varepsilon^2 \cdot` this.

    Examples
    --------
    >>> e2, _ = hybrid_threshold()
    >>> sp.limit(e2 / q, q, 0)  # large beta: eps^2 ~ 2 mu e^{-2 beta}
    2*mu
    """
    lam = sp.expand(lyapunov_exponent(-1).subs(eps, sp.sqrt(eps2)))
    (sol,) = sp.solve(lam, eps2)
    denominator = -sp.cancel(sp.diff(lam, eps2)) / 2
    return sp.factor(sol), sp.factor(denominator)
