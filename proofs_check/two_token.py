r"""Two tokens: the inner product :math:`\rho = \langle X_1, X_2 \rangle` is a 1-D diffusion.

Ito's lemma applied to :math:`\rho` with the limit SDE of :mod:`proofs_check.limit`:

.. math::

    d\rho = \big(\langle X_2, b_1\rangle + \langle X_1, b_2\rangle
            + \operatorname{tr}\Sigma_{12}\big)\,dt + dM_t, \qquad
    d\langle M\rangle_t = \big(X_2^\top\Sigma_{11}X_2 + 2X_2^\top\Sigma_{12}X_1
            + X_1^\top\Sigma_{22}X_1\big)\,dt .

The span algebra only ever evaluates inner products of the tokens, so the result is a
function of the Gram matrix alone (rotation invariance): for two unit tokens, of
:math:`\rho`, :math:`\beta`, :math:`d` and the noise parameters. With softmax attention
:math:`A_1 = a X_1 + b X_2`, :math:`A_2 = b X_1 + a X_2`, :math:`a = 1/(1+r)`,
:math:`b = r/(1+r)`, :math:`r = e^{-\beta(1-\rho)}`, the derivation gives (Ito)

.. math::

    d\rho = (1-\rho^2)\big[2\mu b + \varepsilon^2(2(d-2)ab - (a^2+b^2)\rho)\big]dt
            + \varepsilon\sqrt{2(a^2+b^2)}\,(1-\rho^2)\,dB_t .

Expressions are kept rational in ``r`` (with ``0 < r <= 1`` on ``[-1, 1]`` for
``beta >= 0``), which is also the numerically stable form used by :mod:`proofs_check.export`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import sympy as sp

from .ito import ito_to_stratonovich
from .limit import derive_limit_span, softmax_attention
from .span import TokenSpan
from .symbols import beta, d, eps, mu, r, rho
from .symbols import z as z  # re-exported: the artanh variable of derive_z_sde

#: The softmax weights in terms of ``r``: ``a = 1/(1+r)``, ``b = r/(1+r)``.
a_of_r = 1 / (1 + r)
b_of_r = r / (1 + r)


def r_of_rho(x: sp.Expr = rho) -> sp.Expr:
    r"""The weight ratio :math:`r = e^{-\beta (1 - \rho)}` as a function of :math:`\rho`."""
    return sp.exp(-beta * (1 - x))


def _to_r(expr: sp.Expr) -> sp.Expr:
    """Rewrite exp(beta*rho) as r*exp(beta) and cancel: a rational function of r."""
    return sp.factor(sp.cancel(sp.expand(expr).subs(sp.exp(beta * rho), r * sp.exp(beta))))


@dataclass(frozen=True)
class RhoSDE:
    r"""Ito SDE :math:`d\rho = m\,dt + s\,dB` of the two-token inner product.

    Attributes
    ----------
    drift : sympy.Expr
        :math:`m(\rho)`, rational in ``rho`` and ``r``.
    variance : sympy.Expr
        :math:`s(\rho)^2`.
    reduced_drift : sympy.Expr
        :math:`\tilde m = m / (1-\rho^2)`.
    reduced_variance : sympy.Expr
        :math:`v^2 = s^2 / (1-\rho^2)^2`.
    """

    drift: sp.Expr
    variance: sp.Expr
    reduced_drift: sp.Expr
    reduced_variance: sp.Expr

    @property
    def diffusion(self) -> sp.Expr:
        r""":math:`s = (1-\rho^2)\,v \ge 0` on :math:`[-1, 1]`."""
        return (1 - rho**2) * sp.sqrt(self.reduced_variance)

    def in_rho(self, expr: sp.Expr) -> sp.Expr:
        """Substitute ``r = exp(-beta (1 - rho))``: a function of ``rho`` alone."""
        return expr.subs(r, r_of_rho())

    @property
    def stratonovich_drift(self) -> sp.Expr:
        r"""The drift of the same SDE in Stratonovich form: in rho, beta, d, eps and mu.

        :math:`m - \tfrac12 s\,\frac{ds}{d\rho}`, derived by
        :func:`proofs_check.ito.ito_to_stratonovich` from :attr:`drift` and
        :attr:`diffusion` written in ``rho`` alone (:meth:`in_rho`): the derivative then
        includes that of the weight ratio :math:`r(\rho)`, which holding ``r`` fixed
        would drop (1.02074 against a wrong 0.95898 at rho = 0.3, beta = 1, d = 4,
        eps = 1, mu = 0).

        Examples
        --------
        >>> values = {rho: sp.Rational(3, 10), beta: 1, d: 4, eps: 1, mu: 0}
        >>> round(float(derive_rho_sde().stratonovich_drift.subs(values)), 5)
        1.02074
        """
        drift, diffusion = self.in_rho(self.drift), self.in_rho(self.diffusion)
        return ito_to_stratonovich([rho], [drift], [[diffusion]])[0]


def inner_product_sde(span: TokenSpan, sde, i: int, j: int) -> tuple[sp.Expr, sp.Expr]:
    r"""Ito's lemma for :math:`\langle X_i, X_j\rangle` (``i != j``) under a token SDE.

    Parameters
    ----------
    span : TokenSpan
    sde : LimitSDE
        Ito drift and covariance of the tokens.
    i, j : int
        Two distinct token indices.

    Returns
    -------
    drift, variance : sympy.Expr
        Ito drift and squared diffusion of :math:`\langle X_i, X_j\rangle`; functions of the
        Gram matrix only.

    Examples
    --------
    >>> from proofs_check.limit import generic_span
    >>> span, att = generic_span(2)
    >>> drift, var = inner_product_sde(span, derive_limit_span(span, att), 0, 1)
    >>> sorted(map(str, drift.free_symbols))
    ['d', 'epsilon', 'g_01', 'mu', 'w_00', 'w_01', 'w_10', 'w_11']
    """
    xs = span.tokens()
    xi, xj = xs[i], xs[j]
    drift = xj.dot(sde.drift[i]) + xi.dot(sde.drift[j]) + sde.covariance[i, j].trace()
    variance = (
        sde.covariance[i, i].quadratic(xj, xj)
        + 2 * sde.covariance[i, j].quadratic(xj, xi)
        + sde.covariance[j, j].quadratic(xi, xi)
    )
    return sp.expand(drift), sp.expand(variance)


@functools.cache
def derive_rho_sde() -> RhoSDE:
    r"""Derive the Ito SDE of :math:`\rho = \langle X_1, X_2 \rangle` (hybrid; pure noise is
    :math:`\mu = 0`, :math:`\varepsilon = \sigma`).

    The limit SDE is derived for generic attention weights, Ito's lemma is applied, and only
    then are the softmax weights substituted (cheaper than carrying exponentials through).

    Returns
    -------
    RhoSDE

    Examples
    --------
    >>> sde = derive_rho_sde()
    >>> sp.factor(sde.reduced_variance)
    2*epsilon**2*(r**2 + 1)/(r + 1)**2
    """
    span = TokenSpan(sp.Matrix([[1, rho], [rho, 1]]), d)
    w = sp.symbols("w_00 w_01 w_10 w_11", real=True)
    generic = [span.vector([w[0], w[1]]), span.vector([w[2], w[3]])]
    drift, variance = inner_product_sde(span, derive_limit_span(span, generic), 0, 1)
    softmax = softmax_attention(span, beta)
    weights = dict(zip(w, [*softmax[0].coeffs, *softmax[1].coeffs], strict=True))
    drift = _to_r(drift.subs(weights))
    variance = _to_r(variance.subs(weights))
    return RhoSDE(
        drift=drift,
        variance=variance,
        reduced_drift=sp.factor(sp.cancel(drift / (1 - rho**2))),
        reduced_variance=sp.factor(sp.cancel(variance / (1 - rho**2) ** 2)),
    )


def stated_rho_sde() -> tuple[sp.Expr, sp.Expr]:
    r"""The closed form of the rho-SDE as written in the design notes (drift, variance)."""
    a, b = a_of_r, b_of_r
    drift = (1 - rho**2) * (2 * mu * b + eps**2 * (2 * (d - 2) * a * b - (a**2 + b**2) * rho))
    variance = eps**2 * 2 * (a**2 + b**2) * (1 - rho**2) ** 2
    return drift, variance


@functools.cache
def scale_g() -> sp.Expr:
    r""":math:`g = 2\tilde m / v^2` with :math:`2m/s^2 = g/(1-\rho^2)` (rational in ``r``).

    Examples
    --------
    >>> sp.simplify(scale_g().subs({r: 1, rho: 1, mu: 0}))  # g(1), pure noise
    d - 3
    """
    sde = derive_rho_sde()
    return sp.factor(sp.cancel(2 * sde.reduced_drift / sde.reduced_variance))


def in_z(expr: sp.Expr) -> sp.Expr:
    r"""Substitute :math:`\rho = \tanh z` and :math:`r = e^{-\beta(1-\tanh z)}`: a function of
    ``z`` (and the parameters) alone."""
    return expr.subs(r, r_of_rho(sp.tanh(z))).subs(rho, sp.tanh(z))


@functools.cache
def derive_z_sde() -> tuple[sp.Expr, sp.Expr]:
    r"""Ito SDE of :math:`z = \operatorname{artanh}\rho` (sends the equilibria to infinity).

    Ito's lemma with :math:`z'(\rho) = 1/(1-\rho^2)`, :math:`z''(\rho) = 2\rho/(1-\rho^2)^2`:
    :math:`dz = (m z' + \tfrac12 s^2 z'')\,dt + s z'\,dB = (\tilde m + \rho v^2)\,dt + v\,dB`,
    then :math:`\rho = \tanh z`. Both coefficients are bounded in ``z`` and tend to
    constants as :math:`z \to \pm\infty` (a Brownian motion with drift far from the
    origin). :func:`z_sde_residuals` maps the result back with :math:`\rho = \tanh z`.

    Returns
    -------
    drift, diffusion : sympy.Expr
        Functions of ``z``, ``beta``, ``d``, ``eps`` and ``mu`` only (diffusion >= 0).

    Examples
    --------
    >>> drift, diffusion = derive_z_sde()
    >>> sorted(map(str, (drift.free_symbols | diffusion.free_symbols)))
    ['beta', 'd', 'epsilon', 'mu', 'z']
    >>> sp.simplify(diffusion**2 - in_z(derive_rho_sde().reduced_variance))
    0
    """
    from .ito import ito_lemma

    sde = derive_rho_sde()
    drift, row = ito_lemma(sp.atanh(rho), [rho], [sde.drift], [[sde.diffusion]])
    return in_z(sp.factor(sp.cancel(drift))), in_z(sp.factor(sp.cancel(row[0, 0])))


def z_scale_rate() -> sp.Expr:
    r""":math:`\psi'(z) = 2 b_z / v_z^2` of the z-SDE :math:`dz = b_z\,dt + v_z\,dB`.

    The generator is :math:`\mathcal L u = \tfrac12 v_z^2 e^{-\psi}(e^{\psi}u')'`: the
    scale density is :math:`e^{-\psi}`, the speed density :math:`2e^{\psi}/v_z^2`. It equals
    :math:`g(\tanh z) + 2\tanh z`, with ``g`` the scale integrand of
    :func:`scale_g` (checked in :func:`z_sde_residuals`).
    """
    drift, diffusion = derive_z_sde()
    return sp.factor(sp.cancel(2 * drift / diffusion**2))


def z_sde_residuals(drift: sp.Expr | None = None,
                    diffusion: sp.Expr | None = None) -> dict[str, sp.Expr]:
    r"""Residuals of a z-SDE (by default :func:`derive_z_sde`'s), each zero when it is right.

    - ``drift``, ``diffusion``: Ito's lemma for :math:`\rho = \tanh z` under the z-SDE,
      minus the rho-SDE at :math:`\rho = \tanh z` (the inverse map, not the derivation's);
    - ``scale rate``: :math:`2b_z/v_z^2 - (g(\tanh z) + 2\tanh z)`;
    - ``other symbols``: the symbols besides ``(z, beta, d, eps, mu)`` (none).

    Parameters
    ----------
    drift, diffusion : sympy.Expr, optional
        Candidate coefficients in ``z`` (default: the derived ones).

    Examples
    --------
    >>> all(v == 0 or v == [] for v in z_sde_residuals().values())
    True
    """
    from .ito import ito_lemma

    derived = derive_z_sde()
    drift = derived[0] if drift is None else drift
    diffusion = derived[1] if diffusion is None else diffusion
    sde = derive_rho_sde()
    back_drift, back_row = ito_lemma(sp.tanh(z), [z], [drift], [[diffusion]])
    t = sp.Symbol("t", real=True)  # tanh z, so that simplify sees rational functions

    def rational(expr):
        return sp.simplify(expr.rewrite(sp.tanh).subs(sp.tanh(z), t))

    extra = (drift.free_symbols | diffusion.free_symbols) - {z, beta, d, eps, mu}
    return {
        "drift": rational(back_drift - in_z(sde.drift)),
        "diffusion": rational(back_row[0, 0] ** 2 - in_z(sde.variance)),
        "scale rate": rational(2 * drift / diffusion**2 - in_z(scale_g()) - 2 * sp.tanh(z)),
        "other symbols": sorted(extra, key=sp.default_sort_key),
    }
