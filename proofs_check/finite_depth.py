r"""Finite depth: one layer of the two-token network to second order in :math:`h = 1/L`.

The network is not its limit. One layer moves :math:`\rho = \langle X_1, X_2\rangle` by
:math:`\Delta\rho`, and for a smooth test function

.. math::

    E[\phi(\rho_{k+1}) \mid \rho_k = \rho]
    = \phi + h\,\mathcal L\phi + h^2\big(\tfrac12\mathcal L^2 + \mathcal L_1\big)\phi + O(h^3),

with :math:`\mathcal L = m\,\partial + \tfrac12 s^2\partial^2` the generator of the limit
:math:`\rho`-SDE (:mod:`proofs_check.two_token`) and :math:`\mathcal L_1 =
\sum_{k=1}^4 c_k\,\partial^k` a differential operator of order at most four. If
:math:`E[\Delta\rho^k] = h\,m_k + h^2 n_k + O(h^3)`, Taylor's formula gives
:math:`h^2`-part :math:`\sum_k n_k\,\phi^{(k)}/k!`, and :math:`\mathcal L_1` is that minus
:math:`\tfrac12\mathcal L^2` (:func:`correction_operator`). Talay and Tubaro's
expansion then gives the law of the chain after :math:`TL` layers as
:math:`P + hC + O(h^2)` with :math:`(\partial_t + \mathcal L)C = -\mathcal L_1 P`,
:math:`C(T) = 0` (solved in :mod:`spheresde.two_token`).

**The moments** (:func:`network_rho_moments`). In the orthonormal basis
:math:`e_\pm = (X_1 \pm X_2)/|X_1 \pm X_2|` the tokens are :math:`(c, \pm s)`,
:math:`c^2 = (1+\rho)/2`, :math:`s^2 = (1-\rho)/2`, and the attention vectors
:math:`(c, \pm\kappa s)`, :math:`\kappa = a - b = (1-r)/(1+r)`. The shared matrix maps
:math:`e_+, e_-` to two independent standard Gaussian vectors of :math:`\mathbb R^d`; their
two components in the plane are four standard normals (moments by Isserlis,
:func:`proofs_check.limit.gaussian_expectation`), and the other :math:`d-2` components enter
only through the :math:`2\times2` Wishart matrix of their inner products, whose moments up
to degree two follow from the same Isserlis weights with :math:`d` symbolic
(:func:`wishart_expectation`). :math:`\rho' = \langle Y_1, Y_2\rangle/(|Y_1||Y_2|)` is
expanded to :math:`O(s^4)` in :math:`s = h^{1/2}` (pure noise :math:`\mu = 0,
\varepsilon = \sigma`; hybrid :math:`Y_i = X_i + s\varepsilon GA_i + s^2\mu A_i`).
:func:`network_moments_components` repeats the expectation with the :math:`d^2` explicit
entries of ``G`` at a rational point, the independent witness.

In :math:`z = \operatorname{artanh}\rho` (the coordinate of the finite-horizon solver)
the moments of :math:`\Delta z = \sum_j z^{(j)}(\rho)\,\Delta\rho^j/j!` follow from those of
:math:`\Delta\rho` (:func:`z_moments`), and so does :math:`\mathcal L_1` in ``z``
(:func:`network_z_operator`). The reduced chain of the Monte Carlo (``reduced``: Euler in
``z`` with two-point increments :math:`\pm1`) has the moments of
:func:`euler_moments` and the operator :func:`reduced_z_operator`, whose closed form
(:func:`stated_euler_operator`) is the classical one of the Euler scheme.
"""

from __future__ import annotations

import functools

import sympy as sp

from .limit import gaussian_expectation
from .symbols import beta, d, eps, mu, r, rho, s
from .two_token import derive_rho_sde

#: Orders of the moments E[increment^k] that enter at h^2 (the others are O(h^3)).
ORDERS = (1, 2, 3, 4)


def correction_operator(moments: dict, drift: sp.Expr, variance: sp.Expr,
                        derivative) -> tuple[sp.Expr, ...]:
    r"""Coefficients :math:`(c_1, \dots, c_4)` of :math:`\mathcal L_1 = \sum_k c_k \partial^k`.

    Parameters
    ----------
    moments : dict
        ``k -> n_k``: the :math:`h^2` coefficient of :math:`E[(\Delta x)^k]`, ``k = 1..4``.
    drift, variance : sympy.Expr
        The limit generator :math:`\mathcal L = m\partial + \tfrac12 s^2\partial^2`.
    derivative : callable
        :math:`\partial` applied to a coefficient (an expression): e.g.
        ``lambda f: f.diff(x)``, or, for coefficients in ``rho`` and ``r`` with the state
        ``z``, :math:`(1-\rho^2)(\partial_\rho + \beta r\,\partial_r)` (no coefficient
        is ever written through ``tanh``).

    Returns
    -------
    tuple of sympy.Expr
        :math:`c_1, \dots, c_4` with
        :math:`\sum_k n_k\phi^{(k)}/k! = \tfrac12\mathcal L^2\phi + \mathcal L_1\phi`.

    Examples
    --------
    >>> x, b, v = sp.symbols("x b v", real=True)
    >>> moments = {1: 0, 2: b**2, 3: 3 * b * v**2, 4: v**4}
    >>> correction_operator(moments, b, v**2, lambda f: f.diff(x))
    (0, 0, 0, -v**4/12)
    """
    phi = sp.symbols("D0:7")  # phi and its derivatives

    def diff(f):
        return derivative(f) + sum(f.diff(phi[k]) * phi[k + 1] for k in range(len(phi) - 1))

    def generator(f):
        return drift * diff(f) + variance / 2 * diff(diff(f))

    one_step = sum(moments[k] * phi[k] / sp.factorial(k) for k in ORDERS)
    # linear in phi and its derivatives: each coefficient is a partial derivative, so the
    # (large) expression is never expanded; the residual checks simplify, the numerics not
    residual = one_step - generator(generator(phi[0])) / 2
    if any(residual.diff(phi[k]) != 0 for k in (0, 5, 6)):
        raise ValueError("the one-step expansion is not a differential operator of order 1..4")
    return tuple(residual.diff(phi[k]) for k in ORDERS)


def d_rho(f: sp.Expr) -> sp.Expr:
    r""":math:`d/d\rho` of an expression in ``rho`` and ``r = exp(-beta (1 - rho))``."""
    return f.diff(rho) + beta * r * f.diff(r)


def d_z(f: sp.Expr) -> sp.Expr:
    r""":math:`d/dz = (1-\rho^2)\,d/d\rho` of an expression in ``rho`` and ``r``."""
    return (1 - rho**2) * d_rho(f)


# ------------------------------------------------------------------- Gaussian moments


def wishart_expectation(poly, entries, dof):
    r"""Expectation over the Wishart matrix :math:`W = \sum_{k=1}^{\text{dof}} w_k w_k^\top`
    (:math:`w_k` iid standard Gaussian in :math:`\mathbb R^2`) of a polynomial of degree
    at most two in its entries.

    With :math:`W_{ab} W_{ce} = \sum_{k,l} w_{ka}w_{kb}w_{lc}w_{le}`, the terms ``k = l``
    give :math:`\text{dof}\,E[w_aw_bw_cw_e]` and the others
    :math:`\text{dof}(\text{dof}-1)E[w_aw_b]E[w_cw_e]`; both by Isserlis
    (:func:`proofs_check.limit.gaussian_expectation`), so ``dof`` may be symbolic.

    Parameters
    ----------
    poly : sympy.Expr or sympy.polys.rings.PolyElement
    entries : tuple
        ``(W11, W12, W22)``: symbols, or generators of ``poly``'s ring.
    dof : sympy.Expr or PolyElement
        Degrees of freedom (here :math:`d - 2`), in the representation of ``poly``.

    Examples
    --------
    >>> w11, w12, w22, m = sp.symbols("W11 W12 W22 m")
    >>> sp.factor(wishart_expectation(w11**2 + w12**2, (w11, w12, w22), m))
    m*(m + 3)
    """
    from sympy.polys.rings import PolyElement

    g = sp.symbols("w1 w2", real=True)
    pairs = ((0, 0), (0, 1), (1, 1))

    def gauss(*indices):
        return gaussian_expectation(sp.Mul(*(g[i] for i in indices)), list(g))

    def moment(factors):
        if not factors:
            return 1
        if len(factors) == 1:
            return dof * gauss(*factors[0])
        if len(factors) == 2:
            (a, b), (c, e) = factors
            return dof * gauss(a, b, c, e) + dof * (dof - 1) * gauss(a, b) * gauss(c, e)
        raise NotImplementedError("Wishart moments of degree > 2 do not enter at h^2")

    if isinstance(poly, PolyElement):
        ring_ = poly.ring
        index = [ring_.gens.index(v) for v in entries]
        total = ring_.zero
        for monom, coeff in poly.terms():
            factors = [pairs[j] for j, k in enumerate(index) for _ in range(monom[k])]
            rest = list(monom)
            for k in index:
                rest[k] = 0
            total += ring_.from_dict({tuple(rest): coeff}) * moment(factors)
        return total
    total = sp.Integer(0)
    for monom, coeff in sp.Poly(sp.expand(poly), *entries).terms():
        factors = [pairs[j] for j, p in enumerate(monom) for _ in range(p)]
        total += coeff * moment(factors)
    return sp.expand(total)


def _truncate(poly, order: int = 4, reduce=None):
    """Drop the terms of ``poly`` (a ring element, ``s`` its first generator) above
    ``s^order``, then apply ``reduce`` (e.g. a remainder modulo relations) if given."""
    out = poly.ring.from_dict({m: c for m, c in poly.terms() if m[0] <= order})
    return out if reduce is None or not out else reduce(out)


def _series(products: dict, reduce=None, order: int = 4):
    r""":math:`\rho' - \rho` to :math:`O(s^{\text{order}})` from the inner products of the layer.

    ``products`` gives, as ring polynomials in ``s`` (the ring's first generator),
    :math:`N = \langle Y_1, Y_2\rangle` and :math:`u_i = |Y_i|^2 - 1`;
    :math:`\rho' = N (1+u_1)^{-1/2}(1+u_2)^{-1/2}`, the binomial series truncated (and
    ``reduce`` applied after every product, which keeps the sizes small).
    """
    def inv_norm(u_i):
        out, power = u_i.ring.one, u_i.ring.one
        for k in range(1, order + 1):
            power = _truncate(power * u_i, order, reduce)
            out += power * sp.binomial(sp.Rational(-1, 2), k)
        return out

    n_12 = products["N"]
    out = _truncate(_truncate(n_12 * inv_norm(products["u1"]), order, reduce)
                    * inv_norm(products["u2"]), order, reduce)
    return out - _truncate(n_12, 0, reduce)


def _moments(increment, expect, reduce=None) -> dict:
    r"""``k -> (h coefficient, h^2 coefficient)`` of :math:`E[\text{increment}^k]` (a ring
    element, ``s`` its first generator), and a check that odd powers of ``s`` vanish."""
    out, power = {}, increment.ring.one
    for k in ORDERS:
        power = _truncate(power * increment, 4, reduce)
        coefficient = {m: {} for m in range(5)}
        for monom, c in power.terms():
            coefficient[monom[0]][(0, *monom[1:])] = c
        series = {m: expect(power.ring.from_dict(v)) for m, v in coefficient.items()}
        odd = [series[m] for m in (1, 3)]
        if any(sp.simplify(v) != 0 for v in odd):
            raise AssertionError(f"E[increment^{k}] has odd powers of h^(1/2): {odd}")
        out[k] = (series[2], series[4])
    return out


def _layer_products(x1, x2, a1, a2, ga1, ga2, dot_noise, s_, eps_, mu_):
    r"""The inner products of :math:`Y_i = X_i + s\varepsilon GA_i + s^2\mu A_i` as
    polynomials in ``s``; ``dot_noise(i, j)`` is :math:`\langle GA_i, GA_j\rangle`."""
    def dot(u, v):
        return sum((ui * vi for ui, vi in zip(u, v, strict=True)), s_.ring.zero)

    x, a, g = (x1, x2), (a1, a2), (ga1, ga2)

    def y_dot(i, j):
        return (dot(x[i], x[j])
                + s_ * eps_ * (dot(x[i], g[j]) + dot(g[i], x[j]))
                + s_**2 * (eps_**2 * dot_noise(i, j) + mu_ * (dot(x[i], a[j]) + dot(a[i], x[j])))
                + s_**3 * eps_ * mu_ * (dot(a[i], g[j]) + dot(g[i], a[j]))
                + s_**4 * mu_**2 * dot(a[i], a[j]))

    return {"N": y_dot(0, 1), "u1": y_dot(0, 0) - 1, "u2": y_dot(1, 1) - 1}


@functools.cache
def network_rho_moments() -> dict:
    r"""Moments of one layer's :math:`\Delta\rho`, ``d`` symbolic (module docstring).

    Returns
    -------
    dict
        ``k -> (m_k, n_k)``, ``k = 1..4``: :math:`E[\Delta\rho^k] = h m_k + h^2 n_k +
        O(h^3)`, rational in ``rho`` and ``r`` (and ``d``, ``eps``, ``mu``).

    Examples
    --------
    >>> moments = network_rho_moments()
    >>> moments[3][0], moments[4][0]
    (0, 0)
    """
    from sympy.polys.rings import ring

    c, sn, kappa = sp.symbols("c s_ kappa", positive=True)
    gauss = sp.symbols("g1 g2 k1 k2", real=True)  # G e_+ and G e_- in the plane
    wishart = sp.symbols("W11 W12 W22", real=True)  # <.,.> of their other d - 2 components
    _, s_, c_, sn_, kappa_, eps_, mu_, rho_, d_, *rest = ring(
        [s, c, sn, kappa, eps, mu, rho, d, *gauss, *wishart], sp.QQ)
    gp, gm, w = rest[:2], rest[2:4], rest[4:]
    x1, x2 = (c_, sn_), (c_, -sn_)
    a1, a2 = (c_, kappa_ * sn_), (c_, -kappa_ * sn_)
    # G A_i = c G e_+ +- kappa s G e_-: its components in the plane, and the coefficients
    # of its complement part on (G e_+, G e_-)
    ga = [tuple(c_ * gp[k] + sign * kappa_ * sn_ * gm[k] for k in range(2)) for sign in (1, -1)]
    out_of_plane = [(c_, kappa_ * sn_), (c_, -kappa_ * sn_)]

    def dot_noise(i, j):
        (p, q), (p2, q2) = out_of_plane[i], out_of_plane[j]
        complement = p * p2 * w[0] + (p * q2 + q * p2) * w[1] + q * q2 * w[2]
        return ga[i][0] * ga[j][0] + ga[i][1] * ga[j][1] + complement

    # c^2 = (1 + rho)/2, s^2 = (1 - rho)/2: the remainder is linear in c and in s
    relations = [c_**2 - (1 + rho_) / 2, sn_**2 - (1 - rho_) / 2]

    def reduce(poly):
        return poly.rem(relations)

    increment = _series(_layer_products(x1, x2, a1, a2, *ga, dot_noise, s_, eps_, mu_), reduce)

    def expect(poly):
        value = wishart_expectation(gaussian_expectation(poly, [*gp, *gm]), w, d_ - 2)
        value = value.rem(relations) if value else value
        if any(m[1] or m[2] for m in value.monoms()):
            raise AssertionError("odd powers of c or s survived the expectation")
        return sp.factor(sp.cancel(value.as_expr().subs(kappa, (1 - r) / (1 + r))))

    return _moments(increment, expect, reduce)


def network_moments_components(dim: int, point: dict) -> dict:
    r"""The same moments with the :math:`\text{dim}^2` explicit entries of ``G`` (a witness).

    Tokens :math:`X_1 = e_1`, :math:`X_2 = \rho e_1 + \sqrt{1-\rho^2} e_2` in coordinates,
    attention :math:`A_1 = aX_1 + bX_2`, :math:`A_2 = bX_1 + aX_2`; the expectation over
    every entry of ``G`` is exact (:func:`proofs_check.limit.gaussian_expectation`).

    Parameters
    ----------
    dim : int
        The dimension ``d``.
    point : dict
        Rational values of ``rho`` (with :math:`\sqrt{1-\rho^2}` rational) and ``r``.

    Returns
    -------
    dict
        ``k -> (m_k, n_k)`` as :func:`network_rho_moments`, in ``eps`` and ``mu``.
    """
    rho0, r0 = point[rho], point[r]
    a0, b0 = 1 / (1 + r0), r0 / (1 + r0)
    root = sp.sqrt(1 - rho0**2)
    if not root.is_Rational:
        raise ValueError(f"sqrt(1 - rho^2) must be rational, got {root}")
    x1 = [sp.Integer(1)] + [sp.Integer(0)] * (dim - 1)
    x2 = [rho0, root] + [sp.Integer(0)] * (dim - 2)
    a1 = [a0 * u + b0 * v for u, v in zip(x1, x2, strict=True)]
    a2 = [b0 * u + a0 * v for u, v in zip(x1, x2, strict=True)]
    from sympy.polys.rings import ring

    names = [sp.Symbol(f"G_{i}{j}", real=True) for i in range(dim) for j in range(dim)]
    poly_ring, s_, eps_, mu_, *entries = ring([s, eps, mu, *names], sp.QQ)
    g = [entries[i * dim:(i + 1) * dim] for i in range(dim)]
    x1, x2, a1, a2 = ([poly_ring(v) for v in vec] for vec in (x1, x2, a1, a2))
    ga = tuple([sum((row[j] * att[j] for j in range(dim)), poly_ring.zero) for row in g]
               for att in (a1, a2))

    def dot_noise(i, j):
        return sum((u * v for u, v in zip(ga[i], ga[j], strict=True)), poly_ring.zero)

    increment = _series(_layer_products(x1, x2, a1, a2, *ga, dot_noise, s_, eps_, mu_))
    return _moments(increment, lambda poly: gaussian_expectation(poly, entries).as_expr())


# ------------------------------------------------------------------- the operators


def pure_noise(moments: dict) -> dict:
    """The moments with ``mu = 0`` (the operators below are those of pure noise)."""
    return {k: tuple(v.subs(mu, 0) for v in pair) for k, pair in moments.items()}


@functools.cache
def network_rho_operator() -> tuple[sp.Expr, ...]:
    r""":math:`\mathcal L_1` of the pure-noise network in :math:`\rho`: :math:`(c_1, \dots,
    c_4)`, rational in ``rho`` and ``r`` (and ``beta``, ``d``, ``eps``)."""
    sde = derive_rho_sde()
    moments = {k: v[1] for k, v in pure_noise(network_rho_moments()).items()}
    return correction_operator(moments, sde.drift.subs(mu, 0), sde.variance, d_rho)


def z_moments(moments: dict) -> dict:
    r"""Moments of :math:`\Delta z`, :math:`z = \operatorname{artanh}\rho`, from those of
    :math:`\Delta\rho`: ``k -> (h coefficient, h^2 coefficient)``, in ``rho`` and ``r``.

    :math:`\Delta z = \sum_{j\le4} z^{(j)}(\rho)\Delta\rho^j/j!`; a product of
    :math:`\Delta\rho` powers of total degree above four is :math:`O(h^3)`. Written with
    :math:`\Delta\rho = (1-\rho^2)\delta`: :math:`z^{(j)}(1-\rho^2)^j` is a polynomial
    and :math:`E[\Delta\rho^p]` carries the factor :math:`(1-\rho^2)^p` (the ends are
    fixed), so nothing is divided by :math:`1-\rho^2` (finite at :math:`|z| \to \infty`).
    """
    delta = sp.Symbol("delta")
    expansion = sum(sp.cancel(sp.diff(sp.atanh(rho), rho, j) * (1 - rho**2) ** j)
                    / sp.factorial(j) * delta**j for j in range(1, 5))
    scaled = {p: tuple(sp.factor(m) / ((rho - 1) * (rho + 1)) ** p * (-1) ** p for m in pair)
              for p, pair in moments.items()}
    if any(sp.denom(sp.together(m)).has(rho) for pair in scaled.values() for m in pair):
        raise AssertionError("a moment E[drho^p] lacks the factor (1 - rho^2)^p")
    out = {}
    for k in ORDERS:
        poly = sp.Poly(sp.expand(expansion**k), delta)
        out[k] = tuple(sum(c * scaled[p][j] for (p,), c in poly.terms() if p <= 4)
                       for j in (0, 1))
    return out


def _z_sde():
    """Drift and squared diffusion of the pure-noise z-SDE, rational in ``rho`` and ``r``."""
    sde = derive_rho_sde()
    return (sde.reduced_drift + rho * sde.reduced_variance).subs(mu, 0), sde.reduced_variance


@functools.cache
def network_z_operator() -> tuple[sp.Expr, ...]:
    r""":math:`\mathcal L_1` of the pure-noise network in ``z``: :math:`(c_1, \dots, c_4)`,
    rational in ``rho = tanh z`` and ``r`` (bounded; constants as :math:`z \to \pm\infty`)."""
    moments = {k: v[1] for k, v in z_moments(pure_noise(network_rho_moments())).items()}
    return correction_operator(moments, *_z_sde(), d_z)


def euler_moments(drift: sp.Expr, variance: sp.Expr, fourth: int = 1) -> dict:
    r"""Moments of one Euler step :math:`\Delta = b h + v\sqrt h\,\xi`: ``k -> (h, h^2)``
    coefficients, with :math:`E\xi = E\xi^3 = 0`, :math:`E\xi^2 = 1`, :math:`E\xi^4 =`
    ``fourth`` (1: the two-point increments of the reduced chain; 3: Gaussian).

    Examples
    --------
    >>> b, v2 = sp.symbols("b v2", positive=True)
    >>> euler_moments(b, v2)[4]
    (0, v2**2)
    """
    from sympy.polys.rings import ring

    xi = sp.Symbol("xi", real=True)
    weights = {0: 1, 1: 0, 2: 1, 3: 0, 4: fourth}
    poly_ring, s_, xi_ = ring([s, xi], sp.EX)
    step = poly_ring(drift) * s_**2 + poly_ring(sp.sqrt(variance)) * s_ * xi_
    to_sympy = poly_ring.domain.to_sympy

    def expect(poly):
        return sp.expand(sum((to_sympy(c) * weights[m[1]] for m, c in poly.terms()),
                             sp.Integer(0)))

    return _moments(step, expect)


@functools.cache
def reduced_z_operator() -> tuple[sp.Expr, ...]:
    r""":math:`\mathcal L_1` of the reduced chain (Euler in ``z``, increments :math:`\pm1`),
    rational in ``rho = tanh z`` and ``r``."""
    drift, variance = _z_sde()
    moments = {k: v[1] for k, v in euler_moments(drift, variance).items()}
    return correction_operator(moments, drift, variance, d_z)


def stated_euler_operator(drift: sp.Expr, diffusion: sp.Expr, x: sp.Symbol,
                          fourth: int = 1) -> tuple[sp.Expr, ...]:
    r"""The classical :math:`\mathcal L_1` of the Euler scheme, written out
    (:math:`b` drift, :math:`v` diffusion, :math:`' = d/dx`):

    .. math::

        c_1 = -\tfrac12\big(bb' + \tfrac12 v^2 b''\big), \quad
        c_2 = -\tfrac12\big(bvv' + v^2 b' + \tfrac12 v^2(v'^2 + vv'')\big), \quad
        c_3 = -\tfrac12 v^3 v', \quad c_4 = \big(\tfrac{E\xi^4}{24} - \tfrac18\big)v^4 .
    """
    b, v = drift, diffusion
    b1, b2, v1, v2 = b.diff(x), b.diff(x, 2), v.diff(x), v.diff(x, 2)
    return (-(b * b1 + v**2 * b2 / 2) / 2,
            -(b * v * v1 + v**2 * b1 + v**2 * (v1**2 + v * v2) / 2) / 2,
            -(v**3 * v1) / 2,
            (sp.Rational(fourth, 24) - sp.Rational(1, 8)) * v**4)


def rho_to_z(coefficients: tuple[sp.Expr, ...]) -> tuple[sp.Expr, ...]:
    r"""An operator :math:`\sum_k c_k\partial_\rho^k` written as :math:`\sum_k
    \tilde c_k\partial_z^k` (chain rule, :math:`\partial_\rho\psi^{(k)}(z) =
    \psi^{(k+1)}(z)/(1-\rho^2)`), coefficients in ``rho`` and ``r``, unsimplified.

    The result is linear in :math:`\psi` and its derivatives, so each
    :math:`\tilde c_k` is a partial derivative in :math:`\psi^{(k)}`: nothing is
    expanded (expanding the network's coefficients takes minutes).
    """
    psi = sp.symbols("E0:6")

    def diff(f):
        return d_rho(f) + sum(f.diff(psi[k]) * psi[k + 1] for k in range(len(psi) - 1)) / (
            1 - rho**2)

    applied, power = sp.Integer(0), psi[0]
    for c in coefficients:
        power = diff(power)
        applied += c * power
    if applied.diff(psi[0]) != 0 or applied.diff(psi[5]) != 0:
        raise AssertionError("the chain rule gave a term of order 0 or above 4")
    return tuple(applied.diff(psi[k]) for k in ORDERS)


#: Exact rational points at which the two derivations of the operator in ``z`` are compared
#: (the difference is a rational function of ``rho, r, beta, d, eps``, ``r`` an independent
#: symbol: it vanishes identically iff it vanishes at generic points).
CHAIN_RULE_POINTS = (
    {rho: sp.Rational(3, 7), r: sp.Rational(2, 5), d: 5, beta: sp.Rational(7, 3),
     eps: sp.Rational(3, 2)},
    {rho: sp.Rational(-5, 9), r: sp.Rational(1, 3), d: 11, beta: sp.Rational(1, 2), eps: 1},
    {rho: sp.Rational(1, 8), r: sp.Rational(6, 7), d: sp.Rational(7, 2), beta: 3,
     eps: sp.Rational(2, 3)},
)


def finite_depth_residuals() -> dict:
    r"""Residuals of the finite-depth expansion, each zero when it holds.

    - ``limit m_k``: the :math:`h` parts of the network's moments are the limit
      :math:`\rho`-SDE's (drift, variance, 0, 0), and so in ``z`` (:func:`z_moments`
      against the z-SDE of :func:`proofs_check.two_token.derive_z_sde`);
    - ``witness d=4``: the moments with ``d`` symbolic minus those with the 16 explicit
      entries of ``G`` at :math:`\rho = 3/5`, :math:`r = 1/2`, both orders;
    - ``c_4 network``: the fourth-order coefficient vanishes (the first-order increment is
      Gaussian, :math:`E\Delta^4 = 3(E\Delta^2)^2`);
    - ``ends``: every :math:`c_k(\rho)` vanishes at :math:`\rho = \pm1` (the ends are
      fixed points of the chain);
    - ``z = chain rule``: the operator in ``z`` from the moments of :math:`\Delta z` minus
      the operator in :math:`\rho` transformed by :func:`rho_to_z`, in exact arithmetic at
      the generic rational points :data:`CHAIN_RULE_POINTS` (simplifying the difference
      symbolically takes many minutes);
    - ``Euler``: :func:`correction_operator` of :func:`euler_moments` for any drift
      :math:`b(x)` and diffusion :math:`v(x)` minus :func:`stated_euler_operator`.

    Examples
    --------
    >>> from proofs_check.report import is_zero
    >>> is_zero(finite_depth_residuals())
    True
    """
    moments = network_rho_moments()
    sde = derive_rho_sde()
    z_drift, z_variance = _z_sde()
    zm = z_moments(pure_noise(moments))

    def zero(expr):
        return sp.factor(sp.cancel(expr))

    out = {
        "limit m_k (rho)": [zero(moments[1][0] - sde.drift), zero(moments[2][0] - sde.variance),
                            moments[3][0], moments[4][0]],
        "limit m_k (z)": [zero(zm[1][0] - z_drift), zero(zm[2][0] - z_variance),
                          zm[3][0], zm[4][0]],
    }
    point = {rho: sp.Rational(3, 5), r: sp.Rational(1, 2)}
    witness = network_moments_components(4, point)
    out["witness d=4"] = [sp.expand(moments[k][j].subs(point).subs(d, 4) - witness[k][j])
                          for k in ORDERS for j in (0, 1)]
    rho_op = network_rho_operator()
    out["c_4 network"] = rho_op[3]
    out["ends"] = [zero(c.subs(rho, e)) for c in rho_op for e in (1, -1)]
    out["z = chain rule"] = [(a - b).subs(point) for point in CHAIN_RULE_POINTS
                             for a, b in zip(network_z_operator(), rho_to_z(rho_op),
                                             strict=True)]
    x = sp.Symbol("x", real=True)
    b, v = sp.Function("b")(x), sp.Function("v")(x)
    derived = correction_operator({k: m[1] for k, m in euler_moments(b, v**2).items()},
                                  b, v**2, lambda f: f.diff(x))
    out["Euler"] = [sp.expand(p - q) for p, q in
                    zip(derived, stated_euler_operator(b, v, x), strict=True)]
    return out


__all__ = [
    "CHAIN_RULE_POINTS", "correction_operator", "d_rho", "d_z", "euler_moments",
    "finite_depth_residuals", "network_moments_components", "network_rho_moments",
    "network_rho_operator", "network_z_operator", "pure_noise", "reduced_z_operator",
    "rho_to_z", "stated_euler_operator", "wishart_expectation", "z_moments",
]
