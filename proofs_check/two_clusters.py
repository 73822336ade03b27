r"""Tight clusters of a two-cluster configuration stay tight: a supermartingale
:math:`u^p` for every within-cluster pair, uniform in where the two clusters are.

A configuration of :math:`n` tokens in two clusters (:math:`m` tokens in one, :math:`m'`
in the other) is, up to the spread inside the clusters, the two-cluster *formation* of
:mod:`proofs_check.formation`: its inter-cluster :math:`\rho` is a 1-D chain whose law
at any depth is computed exactly (:mod:`spheresde.transformer._formation_finish`). What
that needs is that the clusters stay tight for the rest of the depth, wherever the
clusters move relative to each other. This module derives that certificate.

**Exact identities** (residuals in :func:`pair_identity_residuals`). For one pair
:math:`i, j` with :math:`u = 1 - \rho_{ij}`, :math:`t = X_i - X_j`,
:math:`\Delta A = A_i - A_j` and *any* attention vectors (generic span of four tokens: the
pair, and two others that the attention may use), the derived limit SDE gives

.. math::

    \mathcal L u = -\varepsilon^2 Q u(d-2-\rho) + \tfrac{\varepsilon^2}{2}|\Delta A|^2
        (d-2+\rho^2) + \mu\, t\cdot\Delta A - \mu u (X_i\cdot A_i + X_j\cdot A_j),

    \Gamma(u) = \varepsilon^2\big[2u(1-u)|\Delta A|^2
        + u^2(|A_i|^2 + |A_j|^2 + 2\rho\,A_i\cdot A_j)\big],

:math:`Q = (|A_i|^2 + |A_j|^2)/2` (the noise of :math:`u` is
:math:`\langle dW, t\,\Delta A^\top - u(X_iA_i^\top + X_jA_j^\top)\rangle_F`, whose two
parts are orthogonal up to :math:`u^2|\Delta A|^2`).

**Bounds on the domain** :math:`D_v`: every within-cluster pair (of both clusters) has
:math:`u < v`; :math:`d \ge 3`, softmax attention, :math:`\mu \ge 0`. Write
:math:`x = \beta(1 - \rho_{ib})` for a token :math:`b` of the other cluster
(:math:`0 \le x \le 2\beta`; every cross inner product is within :math:`\sqrt{2v}` of
:math:`\rho_{ib}`). The other cluster's weight relative to the own one, along the
segment from :math:`X_j` to :math:`X_i`, is at most
:math:`\hat y(x) = \frac{m'}{m} e^{-x + \beta(v + 3\sqrt{2v})}`.

- :math:`\Delta A = \int_0^1 \beta\,\mathrm{Cov}_{w(s)}(X)\,t\,ds` (softmax along the
  segment). The covariance splits into the two clusters' own (trace :math:`\le 2v` each)
  and the between part :math:`W_oW_c\,\delta\delta^\top`, :math:`\delta` the difference of
  the clusters' weighted means: :math:`|\delta| \le \sqrt{2x/\beta} + 2\sqrt{2v}`,
  :math:`|\delta\cdot t| \le |t|(\sqrt{1-\rho_{ib}^2} + 3\sqrt{2v})` (:math:`t` is nearly
  tangent at :math:`X_i`), :math:`W_oW_c \le F(\min(\hat y, 1))`, :math:`F(y) = y/(1+y)^2`.
  So :math:`|\Delta A| \le K|t|`, :math:`|\Delta A|^2 \le 2K^2u`, with
  :math:`K = \sup_x \beta[2v + F\,(\sqrt{2x/\beta} + 2\sqrt{2v})(\sqrt{1-\rho^2} +
  3\sqrt{2v})]`: bounded in :math:`\beta` (:math:`x e^{-x} \le 1/e`), about 0.35 for
  :math:`m = m'` and smaller for a smaller other cluster.
- :math:`|A_i| \ge X_i\cdot A_i \ge a = \inf_x [1 - v - \frac{\hat y}{1+\hat y}
  (x/\beta - v + \sqrt{2v})]`.

Then :math:`\mathcal L u \le u\,h` and :math:`\varepsilon^2u^2 g^2 \le \Gamma(u) \le
\varepsilon^2 u^2 G^2` with

.. math::

    h = -\varepsilon^2(d-3)a^2 - 2\mu a + \varepsilon^2(d-1)K^2 + 2\mu K, \qquad
    g^2 = (2a - \sqrt{2v})^2 - 2v, \qquad G^2 = 4 + 4K^2

(:math:`|A_i|^2+|A_j|^2+2\rho A_i\cdot A_j = |A_i+A_j|^2 - 2uA_i\cdot A_j` and
:math:`|A_i + A_j| \ge (A_i+A_j)\cdot X_i \ge 2a - \sqrt{2v}`). The suprema over
:math:`x` are taken on cells of a grid, each factor at the end of its cell where it is
largest (:math:`F(\min(\hat y,1))` decreases in :math:`x`, the lengths increase,
:math:`\sqrt{1-\rho^2}` peaks at :math:`x = \beta`): an upper bound, not a sample.

**Certificate.** :math:`\mathcal L u^p \le p u^p B_p` with :math:`B_p = h + \frac{p-1}{2}
\varepsilon^2 g^2` (:math:`p < 1`) or :math:`h + \frac{p-1}{2}\varepsilon^2 G^2`
(:math:`p \ge 1`), linear in :math:`p`: the largest certified exponent is
:math:`p = 1 - 2h/(\varepsilon^2 g^2)` where :math:`h > 0` (needs :math:`g^2 > 0`) and
:math:`1 - 2h/(\varepsilon^2G^2)` where :math:`h \le 0`. Every within-cluster
:math:`u_{ij}^{p}` stopped on leaving :math:`D_v` is a non-negative supermartingale, so
(optional stopping, union over the pairs) the clusters ever reach spread :math:`v` with
probability at most :math:`\sum_{\text{pairs}} (u_{ij}/v)^{p_c}` (:math:`p_c` of the
pair's cluster). At :math:`K = 0`, :math:`a = 1`, :math:`v = 0` the bounds are the
two-token linearization at :math:`\rho = 1` (:func:`linearization_residuals`).

**The error of finishing by the formation** (stated, partly argued by hand). On the event
that the spread stays below :math:`v \le \mathrm{tol}` (probability :math:`\ge 1-\delta`),
every within pair stays classified together and every cross inner product is within
:math:`2\sqrt{2v}` of any other, so the class at the horizon is that of one cross inner
product :math:`\rho_{ab}` unless it ends within :math:`2\sqrt{2v}` of :math:`\pm(1-\mathrm{tol})`.
:math:`\rho_{ab}` moves by the two-token step with attention vectors within
:math:`\Delta A_{\max} = (e^{2\beta\sqrt{2v}} - 1) + \sqrt{2v}` of the formation's
(:func:`attention_perturbation`): the outcome probabilities of the formation started at the
measured :math:`\rho` differ from the trajectory's by at most :math:`\delta` plus the
formation's mass in those bands plus the effect of that perturbation over the remaining
depth. The last term is *not* bounded here: it is first order in
:math:`\Delta A_{\max}` times the derivatives of the formation's value function, and the
spread (hence :math:`\Delta A`) keeps shrinking while the certificate holds. The numerics
finish only below a spread where :math:`\Delta A_{\max}` is small, and the agreement tests
(with and without the finish, at matched seeds) are its witness.
"""

from __future__ import annotations

import functools
import itertools

import sympy as sp

from .limit import derive_limit_span, generic_span
from .symbols import beta, d, eps, mu

#: Symbols of the bounds: the spread level, the attention-Lipschitz bound, the
#: attention-length bound, the exponent, the cluster sizes and the cell ends in x.
level = sp.Symbol("v", positive=True)
lipschitz = sp.Symbol("K", nonnegative=True)
alignment = sp.Symbol("a", positive=True)
p_exponent = sp.Symbol("p", positive=True)
own, other = sp.symbols("m m_o", positive=True, integer=True)
x_f, x_g, x_s = sp.symbols("x_f x_g x_s", nonnegative=True)


@functools.cache
def pair_generator(n: int = 4) -> tuple[sp.Expr, sp.Expr]:
    r"""Ito drift :math:`\mathcal L u` and carre du champ :math:`\Gamma(u)` of
    :math:`u = 1 - \rho_{01}` for the pair of tokens 0, 1 among ``n`` unit tokens with a
    generic Gram matrix and generic attention (:func:`proofs_check.limit.generic_span`),
    from the derived limit SDE."""
    span, att = generic_span(n)
    sde = derive_limit_span(span, att)
    xs = span.tokens()
    drift = -(xs[1].dot(sde.drift[0]) + xs[0].dot(sde.drift[1]) + sde.covariance[0, 1].trace())
    carre = sp.Integer(0)
    terms = [(0, 1), (1, 0)]  # d rho_01 = X_1 . dX_0 + X_0 . dX_1
    for (a, pa), (b, pb) in itertools.product(terms, repeat=2):
        carre += sde.covariance[a, b].quadratic(xs[pa], xs[pb])
    return sp.expand(drift), sp.expand(carre)


def stated_pair_generator(n: int = 4) -> tuple[sp.Expr, sp.Expr]:
    """The closed forms of the module docstring for the pair 0, 1 of ``n`` generic tokens."""
    span, att = generic_span(n)
    xs = span.tokens()
    g = span.gram[0, 1]
    u = 1 - g
    diff_a, diff_x = att[0] - att[1], xs[0] - xs[1]
    q = (att[0].dot(att[0]) + att[1].dot(att[1])) / 2
    drift = (-eps**2 * q * u * (d - 2 - g) + eps**2 * diff_a.dot(diff_a) * (d - 2 + g**2) / 2
             + mu * diff_x.dot(diff_a) - mu * u * (xs[0].dot(att[0]) + xs[1].dot(att[1])))
    carre = eps**2 * (2 * u * (1 - u) * diff_a.dot(diff_a)
                      + u**2 * (att[0].dot(att[0]) + att[1].dot(att[1])
                                + 2 * g * att[0].dot(att[1])))
    return sp.expand(drift), sp.expand(carre)


def pair_identity_residuals(n: int = 4) -> dict[str, sp.Expr]:
    r"""Residuals (each 0) of the exact identities of one pair among ``n`` generic tokens.

    Examples
    --------
    >>> from proofs_check.engine import is_zero
    >>> is_zero(pair_identity_residuals(2))
    True
    """
    span, att = generic_span(n)
    g = span.gram[0, 1]
    drift, carre = pair_generator(n)
    stated_drift, stated_carre = stated_pair_generator(n)
    total = att[0] + att[1]
    return {
        f"L u_01 - pair form (n = {n})": sp.expand(drift - stated_drift),
        f"Gamma(u_01) - pair form (n = {n})": sp.expand(carre - stated_carre),
        "|A_0|^2 + |A_1|^2 + 2 rho A_0.A_1 - (|A_0 + A_1|^2 - 2u A_0.A_1)": sp.expand(
            att[0].dot(att[0]) + att[1].dot(att[1]) + 2 * g * att[0].dot(att[1])
            - total.dot(total) + 2 * (1 - g) * att[0].dot(att[1])),
    }


def certificate_bounds() -> dict[str, sp.Expr]:
    r"""``h``, ``g2``, ``G2`` in :math:`K, a, v, d, \varepsilon, \mu`; ``B_low``/``B_high``
    (:math:`B_p` for :math:`p < 1` / :math:`p \ge 1`) and the largest certified exponents
    ``p_low`` (where :math:`h > 0`) and ``p_high`` (where :math:`h \le 0`).

    Examples
    --------
    >>> b = certificate_bounds()
    >>> sp.expand(b["h"].subs({lipschitz: 0, alignment: 1}))
    -d*epsilon**2 + 3*epsilon**2 - 2*mu
    """
    h = (-eps**2 * (d - 3) * alignment**2 - 2 * mu * alignment
         + eps**2 * (d - 1) * lipschitz**2 + 2 * mu * lipschitz)
    g2 = (2 * alignment - sp.sqrt(2 * level))**2 - 2 * level
    big2 = 4 + 4 * lipschitz**2
    return {
        "h": h, "g2": g2, "G2": big2,
        "B_low": h + (p_exponent - 1) / 2 * eps**2 * g2,
        "B_high": h + (p_exponent - 1) / 2 * eps**2 * big2,
        "p_low": 1 - 2 * h / (eps**2 * g2),
        "p_high": 1 - 2 * h / (eps**2 * big2),
    }


def attention_bounds() -> dict[str, sp.Expr]:
    r"""The cell bounds of :math:`K` and :math:`a` (module docstring) as expressions in the
    cell ends: ``K(x_f, x_g, x_s, v, beta, m, m_o)`` with the weight factor at ``x_f``, the
    mean-difference length at ``x_g`` and :math:`\sqrt{1-\rho^2}` at ``x_s``;
    ``a(x_f, x_g, v, beta, m, m_o)`` with the weight at ``x_f`` and the angle at ``x_g``."""
    slack = sp.exp(beta * (level + 3 * sp.sqrt(2 * level)))
    y_f = other / own * sp.exp(-x_f) * slack
    weight = sp.Min(y_f, 1)
    between = weight / (1 + weight)**2
    sine = sp.sqrt(x_s / beta * (2 - x_s / beta))
    lip = beta * (2 * level + between * (sp.sqrt(2 * x_g / beta) + 2 * sp.sqrt(2 * level))
                  * (sine + 3 * sp.sqrt(2 * level)))
    align = 1 - level - y_f / (1 + y_f) * (x_g / beta - level + sp.sqrt(2 * level))
    return {"K": lip, "a": align}


def attention_perturbation() -> sp.Expr:
    r""":math:`\Delta A_{\max} = (e^{2\beta\sqrt{2v}} - 1) + \sqrt{2v}`: how far a token's
    attention vector is from the formation's when every within-cluster spread is below
    :math:`v` (softmax ratios within :math:`e^{\pm 2\beta\sqrt{2v}}`, tokens within
    :math:`\sqrt{2v}`)."""
    return sp.exp(2 * beta * sp.sqrt(2 * level)) - 1 + sp.sqrt(2 * level)


def linearization_residuals() -> dict[str, sp.Expr]:
    r"""Residuals (0): without attention differences (:math:`K = 0`), aligned attention
    (:math:`a = 1`) and no spread (:math:`v = 0`) the bounds are the two-token linearization
    at :math:`\rho = 1`; the exponents put :math:`B_p` at 0; at :math:`v \to 0`, :math:`m' =
    0` (no other cluster) the attention bounds give :math:`K = 0`, :math:`a = 1`.

    Examples
    --------
    >>> all(v == 0 for v in linearization_residuals().values())
    True
    """
    from .cluster import two_token_linearization

    b = certificate_bounds()
    att = attention_bounds()
    a_lin, s2 = two_token_linearization()
    bare = {lipschitz: 0, alignment: 1}
    none_other = {other: 0, level: 0}
    return {
        "h(K=0, a=1) - a (two tokens)": sp.simplify(b["h"].subs(bare) - a_lin),
        "eps^2 g^2(a=1, v=0) - s^2 (two tokens)": sp.simplify(
            eps**2 * b["g2"].subs(bare).subs(level, 0) - s2),
        "eps^2 G^2(K=0) - s^2 (two tokens)": sp.simplify(eps**2 * b["G2"].subs(bare) - s2),
        "B_low(p_low)": sp.simplify(b["B_low"].subs(p_exponent, b["p_low"])),
        "B_high(p_high)": sp.simplify(b["B_high"].subs(p_exponent, b["p_high"])),
        "K(m_o = 0, v = 0)": sp.simplify(att["K"].subs(none_other)),
        "a(m_o = 0, v = 0) - 1": sp.simplify(att["a"].subs(none_other) - 1),
    }


def bound_signs() -> dict[str, bool]:
    r"""Sign checks (each True): :math:`g^2 \le` its value at :math:`v = 0` and
    :math:`G^2 \ge 4` (the spread only weakens the bounds); :math:`\partial_p B_p \ge 0`
    (so the largest certified exponent is the root); :math:`\Delta A_{\max} \ge 0`.

    Examples
    --------
    >>> all(bound_signs().values())
    True
    """
    b = certificate_bounds()
    w = sp.Symbol("w", positive=True)  # sqrt(2 v)
    loss = sp.expand((b["g2"].subs(level, 0) - b["g2"]).subs(level, w**2 / 2))
    return {
        "g^2(0) - g^2(v) >= 0 (a >= sqrt(2v)/2)": bool(sp.expand(
            loss.subs(alignment, w / 2 + sp.Symbol("c", nonnegative=True))).is_nonnegative),
        "G^2 - 4 >= 0": bool(sp.expand(b["G2"] - 4).is_nonnegative),
        "dB_high/dp >= 0": bool(sp.diff(b["B_high"], p_exponent).is_nonnegative),
        "Delta A_max >= 0": bool(attention_perturbation().subs(
            sp.exp(2 * beta * sp.sqrt(2 * level)), 1 + sp.Symbol("k", nonnegative=True)
        ).is_nonnegative),
    }


__all__ = ["alignment", "attention_bounds", "attention_perturbation", "bound_signs",
           "certificate_bounds", "level", "linearization_residuals", "lipschitz", "other",
           "own", "p_exponent", "pair_generator", "pair_identity_residuals",
           "stated_pair_generator", "x_f", "x_g", "x_s"]
