r"""Two-cluster formations of :math:`n` tokens: a 1-D diffusion, and the threshold of its
inter-cluster mode.

A *formation* puts :math:`k` tokens at :math:`x` and the other :math:`n-k` at :math:`y`.
Coincident tokens have the same attention vector (it depends on the tokens through their
inner products only) and are pushed by the same value matrix, so they receive the same
update and stay coincident: a formation stays a formation, in the network at every layer
and in the limit SDE. It is therefore two tokens :math:`x, y` whose attention counts the
other cluster with multiplicity,

.. math::

    A_x = \frac{k\,e^{\beta} x + (n-k)\,e^{\beta\rho} y}{k\,e^{\beta} + (n-k)\,e^{\beta\rho}},
    \qquad
    A_y = \frac{k\,e^{\beta\rho} x + (n-k)\,e^{\beta} y}{k\,e^{\beta\rho} + (n-k)\,e^{\beta}},

and :math:`\rho = \langle x, y\rangle` is a 1-D diffusion, derived exactly as the
two-token one (:func:`proofs_check.two_token.derive_rho_sde`: the limit SDE for generic
attention weights, Ito's lemma, then the weights). For :math:`n = 2`, :math:`k = 1` it is
that SDE. Its linearization at :math:`\rho = -1` (the two clusters antipodal) gives the
Lyapunov exponent :math:`\lambda_-(\beta, d, n, k, \varepsilon, \mu)` of the inter-cluster
mode, and :math:`\lambda_- = 0` the threshold :math:`\varepsilon_c` above which the
antipodal formation attracts with positive probability (for :math:`\mu > 0`).

This is a statement about the formation's own mode only: a perturbation that splits a
cluster (an intra-cluster mode) is not a formation and is not covered.
"""

from __future__ import annotations

import functools

import sympy as sp

from .limit import derive_limit_span
from .span import TokenSpan
from .symbols import beta, d, eps, eps2, k_cluster, n_tokens, q, r, rho
from .two_token import RhoSDE, inner_product_sde


def formation_weights(n: sp.Expr = n_tokens, k: sp.Expr = k_cluster) -> tuple[sp.Expr, ...]:
    r"""Attention weights ``(w_xx, w_xy, w_yx, w_yy)`` of a formation, in
    :math:`r = e^{-\beta(1-\rho)}`: :math:`A_x = w_{xx} x + w_{xy} y`,
    :math:`A_y = w_{yx} x + w_{yy} y`.

    Examples
    --------
    >>> from proofs_check.symbols import r
    >>> formation_weights(2, 1)
    (1/(r + 1), r/(r + 1), r/(r + 1), 1/(r + 1))
    """
    m = n - k
    return (k / (k + m * r), m * r / (k + m * r), k * r / (k * r + m), m / (k * r + m))


@functools.cache
def derive_formation_sde() -> RhoSDE:
    r"""Ito SDE of :math:`\rho = \langle x, y\rangle` for a formation of ``n`` tokens, ``k``
    at ``x`` (hybrid; pure noise is :math:`\mu = 0`).

    Returns
    -------
    RhoSDE
        Rational in ``rho``, ``r``, ``n``, ``k``.

    Examples
    --------
    >>> from proofs_check.two_token import derive_rho_sde
    >>> sde = derive_formation_sde()
    >>> sp.simplify(sde.drift.subs({n_tokens: 2, k_cluster: 1}) - derive_rho_sde().drift)
    0
    """
    span = TokenSpan(sp.Matrix([[1, rho], [rho, 1]]), d)
    w = sp.symbols("w_00 w_01 w_10 w_11", real=True)
    generic = [span.vector([w[0], w[1]]), span.vector([w[2], w[3]])]
    drift, variance = inner_product_sde(span, derive_limit_span(span, generic), 0, 1)
    weights = dict(zip(w, formation_weights(), strict=True))
    drift = sp.factor(sp.cancel(drift.subs(weights)))
    variance = sp.factor(sp.cancel(variance.subs(weights)))
    return RhoSDE(
        drift=drift,
        variance=variance,
        reduced_drift=sp.factor(sp.cancel(drift / (1 - rho**2))),
        reduced_variance=sp.factor(sp.cancel(variance / (1 - rho**2) ** 2)),
    )


def _at_minus_one(expr: sp.Expr) -> sp.Expr:
    """``expr`` (rational in ``rho`` and ``r``) at ``rho = -1``, where ``r = q``."""
    return sp.factor(sp.cancel(expr.subs({rho: -1, r: q})))


def _d_rho(expr: sp.Expr) -> sp.Expr:
    r"""Total derivative in :math:`\rho` of an expression in ``rho`` and
    :math:`r = e^{-\beta(1-\rho)}` (chain rule :math:`\partial_\rho r = \beta r`), kept
    rational in ``rho`` and ``r``."""
    return sp.diff(expr, rho) + beta * r * sp.diff(expr, r)


@functools.cache
def boundary_expansion() -> dict[str, sp.Expr]:
    r"""The formation's :math:`\rho`-SDE near :math:`\rho = -1`, in :math:`u = 1 + \rho`:
    drift :math:`a_0 + a_1 u + O(u^2)`, variance :math:`b_1 u + b_2 u^2 + O(u^3)`.

    For a balanced formation (:math:`2k = n`) :math:`a_0 = b_1 = 0` and :math:`\rho = -1` is
    an equilibrium, as for two tokens. Otherwise it is not: the two clusters' attention
    vectors have different lengths along :math:`x`, the common noise pushes them by
    different amounts, and :math:`a_0, b_1 \propto (n-2k)^2 q^2 \varepsilon^2`. Near
    :math:`u = 0` the process is then a squared Bessel process of dimension
    :math:`4a_0/b_1 = d - 1` (checked by :func:`bessel_dimension_residual`): the gap
    :math:`y + x` performs a Brownian motion in the :math:`d-1` directions orthogonal to
    ``x``, so ``u`` never reaches 0 for :math:`d \ge 3` and hovers at a floor of order
    :math:`q^2`, far below any classification tolerance once :math:`\beta` is large.

    Returns
    -------
    dict
        ``a0, a1, b1, b2``: rational in ``q``, ``beta``, ``d``, ``n``, ``k``, ``epsilon``,
        ``mu``. (:math:`a_1` carries a factor :math:`\beta` from
        :math:`\partial_\rho r = \beta r` where :math:`a_0 \ne 0`.)
    """
    sde = derive_formation_sde()
    m, v = sde.drift, sde.variance
    dv = _d_rho(v)
    return {
        "a0": _at_minus_one(m),
        "a1": _at_minus_one(_d_rho(m)),
        "b1": _at_minus_one(dv),
        "b2": _at_minus_one(_d_rho(dv) / 2),
    }


def bessel_dimension_residual() -> sp.Expr:
    r""":math:`4a_0/b_1 - (d-1)`: 0 when the boundary behaviour is a squared Bessel process
    of dimension :math:`d - 1`.

    Examples
    --------
    >>> bessel_dimension_residual()
    0
    """
    e = boundary_expansion()
    return sp.simplify(sp.cancel(4 * e["a0"] / e["b1"]) - (d - 1))


@functools.cache
def formation_lyapunov_minus() -> sp.Expr:
    r"""Lyapunov exponent :math:`\lambda_- = a_1 - b_2/2` of the inter-cluster mode at
    :math:`\rho = -1` (see :func:`boundary_expansion`).

    It is the exponent of the multiplicative part :math:`du = a_1 u\,dt + \sqrt{b_2}\,u\,dB`
    of the linearization; for two tokens it is
    :func:`proofs_check.stability.lyapunov_exponent` at -1. For an unbalanced formation the
    additive part (:math:`a_0, b_1`) keeps ``u`` off 0 at a floor of order
    :math:`q^2`: :math:`\lambda_- < 0` means ``u`` is pulled back to that floor (the
    formation stays near-antipodal), :math:`\lambda_- > 0` that it leaves it.

    Returns
    -------
    sympy.Expr
        Rational in ``q``, ``beta``, ``d``, ``n``, ``k``, ``epsilon``, ``mu``.
    """
    e = boundary_expansion()
    return sp.cancel(e["a1"] - e["b2"] / 2)


@functools.cache
def formation_threshold() -> tuple[sp.Expr, sp.Expr]:
    r"""The :math:`\varepsilon^2` where :math:`\lambda_- = 0` (inter-cluster mode).

    :math:`\lambda_-` is affine in :math:`\varepsilon^2`,
    :math:`\lambda_- = c_\mu - 2\varepsilon^2 D`, with :math:`c_\mu` the part
    proportional to :math:`\mu`. Where :math:`D > 0` the antipodal formation attracts iff
    :math:`\varepsilon^2 > c_\mu/(2D)`; where :math:`D \le 0` it repels for every
    :math:`\varepsilon`.

    Returns
    -------
    eps2, denominator : sympy.Expr
        :math:`c_\mu/(2D)` and :math:`D`.
    """
    # lambda_- is one fraction (it comes cancelled): its numerator's coefficients in
    # eps^2 over its denominator, free of eps (expanding the whole fraction instead took
    # 2.8 s of the 8 s a process spends deriving the formation laws; same result)
    numerator, common = sp.fraction(formation_lyapunov_minus().subs(eps, sp.sqrt(eps2)))
    affine = sp.Poly(numerator, eps2)
    if common.has(eps2) or affine.degree() > 1:
        raise ValueError("lambda_- is not affine in eps^2; the threshold's derivation "
                         "does not apply")
    denominator = -sp.cancel(affine.coeff_monomial(eps2) / common) / 2
    deterministic = sp.cancel(affine.coeff_monomial(1) / common)
    return sp.cancel(deterministic / (2 * denominator)), sp.cancel(denominator)


__all__ = ["bessel_dimension_residual", "boundary_expansion", "derive_formation_sde",
           "formation_lyapunov_minus", "formation_threshold",
           "formation_weights"]
