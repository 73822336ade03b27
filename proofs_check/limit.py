r"""Theorem 1: the SDE limit of the normalized stochastic Transformer, derived with SymPy.

One layer of the discrete network (the theory pages of the docs,
``docs/theory/discrete_model.rst``) moves token :math:`X_i` to

.. math::

    Y_i = X_i + s\,\varepsilon G A_i + s^2 \mu A_i, \qquad X_i' = Y_i / |Y_i|,
    \qquad s = h^{1/2} = L^{-1/2},

with :math:`G` a ``d x d`` matrix of iid :math:`N(0, 1)` entries shared by all tokens
(pure noise: :math:`\mu = 0`, :math:`\varepsilon = \sigma`; hybrid: ``V = (mu/sqrt L) I + eps G``).
Expanding :math:`X_i'` in ``s`` to second order and taking Gaussian expectations with
Isserlis' theorem gives, per unit of depth-time :math:`h`, the **Ito** drift and the
diffusion covariance of the limit

.. math::

    b_i = -\tfrac{\varepsilon^2 (d-1)}{2} |A_i|^2 X_i + \mu P_i A_i, \qquad
    \Sigma_{ij} = \varepsilon^2 \langle A_i, A_j \rangle P_i P_j .

Two derivations are given: :func:`derive_limit_span` works in the token span with ``d``
symbolic (every dimension at once, any attention vector), and
:func:`derive_limit_components` expands explicit components of :math:`G` for one given
``d`` (an independent second witness, no span bookkeeping).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import sympy as sp

from .span import SpanMatrix, SpanVector, TokenSpan
from .symbols import d, eps, mu, s


@functools.cache
def normalization_series() -> tuple[sp.Expr, sp.Expr]:
    r"""Taylor coefficients of :math:`|Y|^{-1}` in ``s``.

    With :math:`|X| = 1`, :math:`\xi = X^\top \varepsilon G A`,
    :math:`q = |\varepsilon G A|^2` and :math:`c = \langle X, A \rangle`,
    :math:`|Y|^2 = 1 + 2 s \xi + s^2 (q + 2 \mu c) + O(s^3)`.

    Returns
    -------
    f1, f2 : sympy.Expr
        :math:`|Y|^{-1} = 1 + f_1 s + f_2 s^2 + O(s^3)`, polynomials in ``xi``, ``q``, ``c``.

    Examples
    --------
    >>> f1, f2 = normalization_series()
    >>> f1
    -xi
    >>> f2
    -c*mu - q/2 + 3*xi**2/2
    """
    xi, q, c = sp.symbols("xi q c", real=True)
    norm2 = 1 + 2 * s * xi + s**2 * (q + 2 * mu * c)
    series = sp.series(norm2 ** sp.Rational(-1, 2), s, 0, 3).removeO()
    return sp.expand(series.coeff(s, 1)), sp.expand(series.coeff(s, 2))


@dataclass(frozen=True)
class _RandomVector:
    """Sum of ``poly * vec`` (deterministic) and ``poly * (eps G vec)`` terms."""

    det: tuple[tuple[sp.Expr, SpanVector], ...]
    noisy: tuple[tuple[sp.Expr, SpanVector], ...]


def _pair_scalar(key1, key2, tokens, attention, span):
    """Isserlis pair E[f g] for the scalar Gaussian forms xi_i and q_i (over eps^2)."""
    (kind1, i), (kind2, j) = key1, key2
    if kind1 == kind2 == "xi":
        return tokens[i].dot(tokens[j]) * attention[i].dot(attention[j])
    raise NotImplementedError


def _expect_scalar(poly, xis, qs, tokens, attention, span):
    r"""E of a polynomial of degree <= 2 in the Gaussian entries (xi has degree 1, q degree 2).

    Uses :math:`E[\xi_i \xi_j] = \varepsilon^2 \langle X_i, X_j\rangle \langle A_i, A_j\rangle`
    and :math:`E[q_i] = \varepsilon^2 d |A_i|^2` (Isserlis with
    :math:`E[G_{ab} G_{ce}] = \delta_{ac}\delta_{be}`).
    """
    gens = list(xis) + list(qs)
    total = sp.Integer(0)
    for monom, coeff in sp.Poly(poly, *gens).terms():
        xi_pows, q_pows = monom[: len(xis)], monom[len(xis) :]
        degree = sum(xi_pows) + 2 * sum(q_pows)
        if degree == 0:
            total += coeff
        elif degree == 1:
            continue
        elif degree == 2 and sum(q_pows) == 1:
            i = q_pows.index(1)
            total += coeff * eps**2 * span.dim * attention[i].dot(attention[i])
        elif degree == 2:
            idx = [k for k, p in enumerate(xi_pows) for _ in range(p)]
            total += (
                coeff
                * eps**2
                * _pair_scalar(("xi", idx[0]), ("xi", idx[1]), tokens, attention, span)
            )
        else:
            raise NotImplementedError("only moments of order <= 2 enter at order h")
    return total


def _expect_xi_times_noise(poly, xis, qs, w, tokens, attention, span) -> SpanVector:
    r"""E[poly * eps G w] for poly of degree <= 1: :math:`E[\xi_i\,\varepsilon G w] =
    \varepsilon^2 \langle A_i, w\rangle X_i` and :math:`E[\varepsilon G w] = 0`."""
    out = span.vector([0] * span.n)
    for monom, coeff in sp.Poly(poly, *xis, *qs).terms():
        degree = sum(monom[: len(xis)]) + 2 * sum(monom[len(xis) :])
        if degree == 0:
            continue
        if degree != 1:
            raise NotImplementedError("only moments of order <= 2 enter at order h")
        i = monom.index(1)
        out = out + tokens[i] * (coeff * eps**2 * attention[i].dot(w))
    return out


@dataclass(frozen=True)
class LimitSDE:
    r"""Ito coefficients of the token SDE, as span objects.

    Attributes
    ----------
    drift : list of SpanVector
        :math:`b_i`, the **Ito** drift of token ``i`` per unit depth-time.
    covariance : dict
        ``covariance[i, j]`` is the ``d x d`` matrix :math:`\Sigma_{ij}` with
        :math:`E[dX_i\, dX_j^\top] = \Sigma_{ij}\, dt`.
    """

    drift: list[SpanVector]
    covariance: dict[tuple[int, int], SpanMatrix]


def derive_limit_span(span: TokenSpan, attention: list[SpanVector]) -> LimitSDE:
    r"""Derive the Ito limit of the normalized update, symbolically in ``d``.

    Expands :math:`X_i' - X_i = s\,(X_i f_1 + Z_i) + s^2 (X_i f_2 + f_1 Z_i + \mu A_i)
    + O(s^3)` with :math:`Z_i = \varepsilon G A_i` and takes expectations: the drift is
    :math:`E[\text{coefficient of } s^2]` (the ``s`` term is centred) and the covariance is
    :math:`E[(\text{coefficient of } s)_i (\text{coefficient of } s)_j^\top]`.

    Parameters
    ----------
    span : TokenSpan
        Tokens (unit: the Gram matrix has ones on its diagonal) and dimension.
    attention : list of SpanVector
        The attention vectors :math:`A_i` (any vectors of the span).

    Returns
    -------
    LimitSDE
        Ito drift and covariance per unit depth-time.

    Examples
    --------
    >>> import sympy as sp
    >>> span = TokenSpan(sp.Matrix([[1]]), d)
    >>> (x,) = span.tokens()
    >>> sde = derive_limit_span(span, [x])
    >>> sp.factor(sde.drift[0].coeffs[0])
    -epsilon**2*(d - 1)/2
    """
    f1, f2 = normalization_series()
    sym_xi, sym_q, sym_c = sp.symbols("xi q c", real=True)
    n = span.n
    tokens = span.tokens()
    xis = sp.symbols(f"xi_0:{n}", real=True)
    qs = sp.symbols(f"q_0:{n}", real=True)
    first, second = [], []
    for i in range(n):
        sub = {sym_xi: xis[i], sym_q: qs[i], sym_c: tokens[i].dot(attention[i])}
        f1i, f2i = f1.subs(sub), f2.subs(sub)
        first.append(_RandomVector(((f1i, tokens[i]),), ((sp.Integer(1), attention[i]),)))
        second.append(_RandomVector(((f2i, tokens[i]), (mu, attention[i])), ((f1i, attention[i]),)))

    def expect(rv: _RandomVector) -> SpanVector:
        out = span.vector([0] * n)
        for poly, vec in rv.det:
            out = out + vec * _expect_scalar(poly, xis, qs, tokens, attention, span)
        for poly, vec in rv.noisy:
            out = out + _expect_xi_times_noise(poly, xis, qs, vec, tokens, attention, span)
        return out

    def expect_outer(u: _RandomVector, v: _RandomVector) -> SpanMatrix:
        out = span.identity() * 0
        for (pu, vu), (pv, vv) in itertools.product(u.det, v.det):
            e = _expect_scalar(sp.expand(pu * pv), xis, qs, tokens, attention, span)
            out = out + span.outer(vu, vv) * e
        for (pu, vu), (pv, wv) in itertools.product(u.det, v.noisy):
            out = out + span.outer(
                vu, _expect_xi_times_noise(sp.expand(pu * pv), xis, qs, wv, tokens, attention, span)
            )
        for (pu, wu), (pv, vv) in itertools.product(u.noisy, v.det):
            out = out + span.outer(
                _expect_xi_times_noise(sp.expand(pu * pv), xis, qs, wu, tokens, attention, span), vv
            )
        for (pu, wu), (pv, wv) in itertools.product(u.noisy, v.noisy):
            # E[(eps G w)(eps G w')^T] = eps^2 <w, w'> I; the polynomial factors are
            # constants here (degree 0), higher ones would be of order > h.
            if sp.Poly(pu * pv, *xis, *qs).total_degree() > 0:
                raise NotImplementedError("only moments of order <= 2 enter at order h")
            out = out + span.identity() * (pu * pv * eps**2 * wu.dot(wv))
        return out

    drift = [expect(second[i]) for i in range(n)]
    cov = {(i, j): expect_outer(first[i], first[j]) for i in range(n) for j in range(n)}
    return LimitSDE(drift, cov)


def stated_limit_span(span: TokenSpan, attention: list[SpanVector]) -> LimitSDE:
    r"""The closed form of the limit (Ito), written from the formula as stated.

    :math:`b_i = -\varepsilon^2 \frac{d-1}{2}|A_i|^2 X_i + \mu P_i A_i`,
    :math:`\Sigma_{ij} = \varepsilon^2 \langle A_i, A_j\rangle P_i P_j`.

    Examples
    --------
    >>> import sympy as sp
    >>> span = TokenSpan(sp.Matrix([[1]]), d)
    >>> (x,) = span.tokens()
    >>> stated_limit_span(span, [x]).covariance[0, 0].trace()
    d*epsilon**2 - epsilon**2
    """
    tokens = span.tokens()
    proj = [span.projection(x) for x in tokens]
    drift = [
        x * (-(eps**2) * (span.dim - 1) / 2 * a.dot(a)) + (p @ a) * mu
        for x, a, p in zip(tokens, attention, proj, strict=True)
    ]
    cov = {
        (i, j): (proj[i] @ proj[j]) * (eps**2 * attention[i].dot(attention[j]))
        for i in range(span.n)
        for j in range(span.n)
    }
    return LimitSDE(drift, cov)


def generic_span(n: int) -> tuple[TokenSpan, list[SpanVector]]:
    r"""Unit tokens with a generic symbolic Gram matrix and generic attention vectors.

    Returns
    -------
    span : TokenSpan
        Gram matrix with unit diagonal and symbols ``g_ij`` off it, dimension ``d``.
    attention : list of SpanVector
        :math:`A_i = \sum_j w_{ij} X_j` with free symbols ``w_ij`` (any attention rule).

    Examples
    --------
    >>> span, att = generic_span(2)
    >>> span.gram
    Matrix([
    [   1, g_01],
    [g_01,    1]])
    """
    gram = sp.eye(n)
    for i, j in itertools.combinations(range(n), 2):
        gram[i, j] = gram[j, i] = sp.Symbol(f"g_{i}{j}", real=True)
    span = TokenSpan(gram, d)
    weights = [[sp.Symbol(f"w_{i}{j}", real=True) for j in range(n)] for i in range(n)]
    return span, [span.vector(row) for row in weights]


def softmax_attention(span: TokenSpan, beta: sp.Expr) -> list[SpanVector]:
    r"""Softmax attention :math:`A_i = \sum_j \operatorname{softmax}_j(\beta G_{ij}) X_j`
    (``Q = K = Id``).

    Examples
    --------
    >>> import sympy as sp
    >>> rho, beta = sp.symbols("rho beta", real=True)
    >>> span = TokenSpan(sp.Matrix([[1, rho], [rho, 1]]), d)
    >>> softmax_attention(span, beta)[0].coeffs.T
    Matrix([[exp(beta)/(exp(beta) + exp(beta*rho)), exp(beta*rho)/(exp(beta) + exp(beta*rho))]])
    """
    out = []
    for i in range(span.n):
        logits = [sp.exp(beta * span.gram[i, j]) for j in range(span.n)]
        total = sum(logits)
        out.append(span.vector([w / total for w in logits]))
    return out


def sphere_supported_drift(sde: LimitSDE, span: TokenSpan) -> list[sp.Expr]:
    r"""Ito drift and variance of :math:`|X_i|^2` (the sphere-supported lemma).

    Drift :math:`2\langle X_i, b_i\rangle + \operatorname{tr}\Sigma_{ii}`.

    It vanishes identically (the paper's sphere-supported lemma); the diffusion of
    :math:`|X_i|^2` is :math:`4 X_i^\top \Sigma_{ii} X_i`, also 0.

    Returns
    -------
    list of sympy.Expr
        ``[drift of |X_i|^2, diffusion variance of |X_i|^2]`` for each ``i``, flattened.

    Examples
    --------
    >>> span, att = generic_span(1)
    >>> sphere_supported_drift(derive_limit_span(span, att), span)
    [0, 0]
    """
    out = []
    for i, x in enumerate(span.tokens()):
        out.append(sp.simplify(2 * x.dot(sde.drift[i]) + sde.covariance[i, i].trace()))
        out.append(sp.simplify(4 * sde.covariance[i, i].quadratic(x, x)))
    return out


def isserlis_weight(powers) -> int:
    r""":math:`E[\prod_k g_k^{p_k}]` for independent standard normals :math:`g_k`.

    Isserlis' (Wick's) theorem specialised to a diagonal covariance:
    :math:`\prod_k (p_k - 1)!!` when every :math:`p_k` is even, else 0.

    Parameters
    ----------
    powers : iterable of int
        The exponents :math:`p_k`.

    Returns
    -------
    int

    Examples
    --------
    >>> isserlis_weight([4, 2, 0]), isserlis_weight([1, 1])
    (3, 0)
    """
    weight = 1
    for p in powers:
        if p % 2:
            return 0
        weight *= int(sp.factorial2(p - 1)) if p else 1
    return weight


def gaussian_expectation(poly, entries):
    r"""Expectation over iid :math:`N(0, 1)` ``entries`` of a polynomial (Isserlis / Wick).

    The single implementation of the Gaussian moments: monomial by monomial, the entries'
    powers are replaced by :func:`isserlis_weight`; every other symbol is a constant.

    Parameters
    ----------
    poly : sympy.Expr or sympy.polys.rings.PolyElement
        A polynomial in ``entries`` (coefficients may involve other symbols), either as a
        SymPy expression or as an element of a sparse polynomial ring (the fast form used
        by :func:`limit_components_residuals`).
    entries : list
        The Gaussian entries: SymPy symbols, or generators of ``poly``'s ring.

    Returns
    -------
    sympy.Expr or PolyElement
        Same representation as ``poly``.

    Examples
    --------
    >>> g1, g2, x = sp.symbols("g1 g2 x", real=True)
    >>> gaussian_expectation((x * g1 + g2) ** 2 + g1**4, [g1, g2])
    x**2 + 4
    >>> from sympy.polys.rings import ring
    >>> R, g, y = ring("g, y", sp.QQ)
    >>> gaussian_expectation(g**2 * y + g * y, [g])
    y
    """
    from sympy.polys.rings import PolyElement

    if isinstance(poly, PolyElement):
        ring_ = poly.ring
        index = [ring_.gens.index(v) for v in entries]
        out: dict = {}
        for monom, coeff in poly.terms():
            weight = isserlis_weight(monom[k] for k in index)
            if weight:
                rest = list(monom)
                for k in index:
                    rest[k] = 0
                key = tuple(rest)
                out[key] = out.get(key, ring_.domain.zero) + coeff * weight
        return ring_.from_dict({k: v for k, v in out.items() if v})
    total = sp.Integer(0)
    for monom, coeff in sp.Poly(sp.expand(poly), *entries).terms():
        total += coeff * isserlis_weight(monom)
    return sp.expand(total)


def limit_components_residuals(dim: int, normal_drift: sp.Expr | None = None) -> dict:
    r"""Theorem 1 with explicit components of ``G`` for one dimension ``dim``: residuals.

    Two unit tokens :math:`X, X'` with generic coordinates and generic attention vectors
    :math:`A, A'` (any attention rule, any number of tokens: each pair is checked).
    :math:`|Y|^{-1} = (1+u)^{-1/2}`, :math:`u = s u_1 + s^2 u_2` with
    :math:`u_1 = 2\xi`, :math:`u_2 = q + 2\mu\langle X, A\rangle`, is expanded to
    :math:`O(s^2)` (the scalar series comes from SymPy); the expectation over the
    :math:`\text{dim}^2` Gaussian entries is exact (:func:`gaussian_expectation`), and each
    residual derived - stated is reduced modulo :math:`|X|^2 = |X'|^2 = 1` (a Groebner basis:
    the leading monomials are coprime, so the remainder is 0 iff the identity holds on the
    spheres). Arithmetic runs in a sparse polynomial ring over :math:`\mathbb{Q}`
    (``sympy.polys.rings``), far faster than ``expand`` here.

    Parameters
    ----------
    dim : int
        The dimension ``d``.
    normal_drift : sympy.Expr, optional
        The coefficient ``c`` of the stated drift :math:`c\,\varepsilon^2 |A|^2 X + \mu P A`
        to test; default :math:`-(d-1)/2` (Theorem 1). A wrong value leaves a residual.

    Returns
    -------
    dict of sympy.Matrix
        ``"drift"`` (``dim x 1``), ``"covariance_same_token"`` and ``"covariance_cross"``
        (``dim x dim``): derived - stated on the spheres; ``"mean_first_order"``
        (``dim x 1``): the mean of the :math:`O(s)` term. All zero when Theorem 1 holds.

    Examples
    --------
    >>> limit_components_residuals(2)["drift"]
    Matrix([
    [0],
    [0]])
    >>> limit_components_residuals(2, normal_drift=-1)["drift"].T
    Matrix([[a_0**2*epsilon**2*x_0/2 + a_1**2*epsilon**2*x_0/2, ...]])
    """
    from sympy.polys.rings import ring

    g_names = [f"G_{i}{j}" for i in range(dim) for j in range(dim)]
    names = (
        [f"x_{i}" for i in range(dim)]
        + [f"y_{i}" for i in range(dim)]
        + [f"a_{i}" for i in range(dim)]
        + [f"b_{i}" for i in range(dim)]
        + g_names
        + ["epsilon", "mu"]
    )
    poly_ring, *gens = ring(",".join(names), sp.QQ)
    x, y, a, b = (gens[k * dim : (k + 1) * dim] for k in range(4))
    gmat = [gens[4 * dim + i * dim : 4 * dim + (i + 1) * dim] for i in range(dim)]
    g_gens = gens[4 * dim : 4 * dim + dim * dim]
    e_, m_ = gens[-2:]

    def expect(p):
        return gaussian_expectation(p, g_gens)

    def dot(u, v):
        return sum((ui * vi for ui, vi in zip(u, v, strict=True)), poly_ring.zero)

    u1_s, u2_s, u_s = sp.symbols("u1 u2 u", real=True)
    series = sp.series((1 + u_s) ** sp.Rational(-1, 2), u_s, 0, 3).removeO()
    series_s = sp.expand(series.subs(u_s, s * u1_s + s**2 * u2_s))
    c1 = sp.Poly(series_s.coeff(s, 1), u1_s, u2_s)
    c2 = sp.Poly(series_s.coeff(s, 2), u1_s, u2_s)

    def update_coefficients(tok, att):
        z = [e_ * dot(row, att) for row in gmat]
        u1, u2 = 2 * dot(tok, z), dot(z, z) + 2 * m_ * dot(tok, att)
        f1, f2 = (
            sum((poly_ring(c) * u1**i * u2**j for (i, j), c in cn.terms()), poly_ring.zero)
            for cn in (c1, c2)
        )
        first = [t * f1 + zk for t, zk in zip(tok, z, strict=True)]
        second = [t * f2 + zk * f1 + m_ * ak for t, zk, ak in zip(tok, z, att, strict=True)]
        return first, second

    relations = [dot(x, x) - 1, dot(y, y) - 1]

    def on_spheres(p) -> sp.Expr:
        return p.rem(relations).as_expr() if p else sp.Integer(0)

    first_x, second_x = update_coefficients(x, a)
    first_y, _ = update_coefficients(y, b)

    def proj(tok, k, ell):
        return (1 if k == ell else 0) - tok[k] * tok[ell]

    c = sp.Rational(-(dim - 1), 2) if normal_drift is None else normal_drift
    drift = sp.Matrix(
        [
            on_spheres(
                expect(second_x[k])
                - (
                    poly_ring(c) * e_**2 * dot(a, a) * x[k]
                    + m_ * sum((proj(x, k, j) * a[j] for j in range(dim)), poly_ring.zero)
                )
            )
            for k in range(dim)
        ]
    )

    def covariance(first_u, first_v, tok_u, tok_v, att_u, att_v) -> sp.Matrix:
        def entry(k, ell):
            pp = sum((proj(tok_u, k, j) * proj(tok_v, j, ell) for j in range(dim)), poly_ring.zero)
            return on_spheres(expect(first_u[k] * first_v[ell]) - e_**2 * dot(att_u, att_v) * pp)

        return sp.Matrix(dim, dim, entry)

    return {
        "drift": drift,
        "covariance_same_token": covariance(first_x, first_x, x, x, a, a),
        "covariance_cross": covariance(first_x, first_y, x, y, a, b),
        "mean_first_order": sp.Matrix([on_spheres(expect(p)) for p in first_x]),
    }


def derive_limit_components(dim: int, normal_drift: sp.Expr | None = None) -> dict[str, bool]:
    r"""Theorem 1 with explicit components of ``G``: whether each residual vanishes.

    Parameters
    ----------
    dim : int
        The dimension ``d``.
    normal_drift : sympy.Expr, optional
        See :func:`limit_components_residuals`.

    Returns
    -------
    dict
        ``{"drift", "covariance_same_token", "covariance_cross", "mean_first_order"}``,
        each True when the residual of :func:`limit_components_residuals` is zero.

    Examples
    --------
    >>> derive_limit_components(2)["drift"]
    True
    """
    return {
        key: value.is_zero_matrix is True
        for key, value in limit_components_residuals(dim, normal_drift).items()
    }
