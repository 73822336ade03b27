"""Finite depth: the one-layer expansion to O(h^2) and the operator L_1 (Talay-Tubaro)."""

import pytest
import sympy as sp

from proofs_check import finite_depth as fd
from proofs_check.limit import gaussian_expectation
from proofs_check.symbols import d, eps, mu, r, rho

X = sp.Symbol("x", real=True)
B, V = sp.Function("b")(X), sp.Function("v")(X)


def _euler(fourth):
    moments = {k: m[1] for k, m in fd.euler_moments(B, V**2, fourth).items()}
    return fd.correction_operator(moments, B, V**2, lambda f: f.diff(X))


def test_euler_operator_is_the_classical_one_and_the_fourth_moment_matters():
    for fourth in (1, 3):
        derived = _euler(fourth)
        stated = fd.stated_euler_operator(B, V, X, fourth)
        assert [sp.expand(a - b) for a, b in zip(derived, stated, strict=True)] == [0] * 4
    # +-1 increments leave a fourth-order term, Gaussian ones do not: a wrong E xi^4 is seen
    assert sp.expand(_euler(1)[3] + V**4 / 12) == 0
    assert _euler(3)[3] == 0
    wrong = fd.stated_euler_operator(B, V, X, 3)
    assert sp.expand(_euler(1)[3] - wrong[3]) != 0


def test_wishart_moments_match_explicit_components():
    # dof = 3: nine explicit normals w_k (k = 1..3, two coordinates each)
    w = sp.symbols("a1:4 b1:4", real=True)
    pairs = list(zip(w[:3], w[3:], strict=True))
    entries = [sum(x * x for x, _ in pairs), sum(x * y for x, y in pairs),
               sum(y * y for _, y in pairs)]
    ws = sp.symbols("W11 W12 W22", real=True)
    for poly in (ws[0] ** 2, ws[1] ** 2, ws[0] * ws[2], ws[0] * ws[1], 3 * ws[0] - ws[2] + 1):
        explicit = gaussian_expectation(poly.subs(dict(zip(ws, entries, strict=True))), list(w))
        assert fd.wishart_expectation(poly, ws, 3) == explicit, poly
    with pytest.raises(NotImplementedError, match="degree > 2"):
        fd.wishart_expectation(ws[0] ** 3, ws, 3)


def test_operator_of_a_known_expansion_and_refusals():
    # E[phi(x + h b)] = phi + h b phi' + h^2 b^2/2 phi'': L = b d/dx, L^2/2 = (b b' phi' +
    # b^2 phi'')/2, so L_1 = -b b'/2 d/dx
    moments = {1: 0, 2: B**2, 3: 0, 4: 0}
    out = fd.correction_operator(moments, B, sp.Integer(0), lambda f: f.diff(X))
    assert sp.expand(out[0] + B * B.diff(X) / 2) == 0
    assert out[1:] == (0, 0, 0)
    with pytest.raises(ValueError, match=r"order 1\.\.4"):
        fd.correction_operator({1: 0, 2: 0, 3: 0, 4: sp.Symbol("D0")}, B, 0, lambda f: f.diff(X))


@pytest.mark.slow
def test_network_moments_witness_fails_for_a_wrong_point():
    # the d = 4 witness is exact: at another rho it differs from the symbolic moments
    moments = fd.network_rho_moments()
    point = {rho: sp.Rational(3, 5), r: sp.Rational(1, 2)}
    witness = fd.network_moments_components(4, {rho: sp.Rational(4, 5), r: sp.Rational(1, 2)})
    values = {**point, d: 4}
    assert sp.expand(moments[2][1].subs(values) - witness[2][1]) != 0
    # and the h^2 fourth moment is 3 (h variance)^2: the first-order increment is Gaussian
    assert sp.simplify(moments[4][1] - 3 * moments[2][0] ** 2) == 0
    # the hybrid drift enters the h^2 mean (mu is kept in the moments)
    assert moments[1][1].has(mu)
    assert moments[1][1].has(eps)


def test_one_layer_series_is_the_layer_to_order_h2():
    # the series behind every moment (_layer_products, then _series), pathwise: for one
    # fixed rational G, rho' - rho as a polynomial in s = h^(1/2) against the layer computed
    # directly (Y_i = X_i + s eps G A_i + s^2 mu A_i, then rho' = <Y_1, Y_2>/(|Y_1||Y_2|));
    # the difference is O(s^5), so halving s divides it by about 32
    import numpy as np
    from sympy.polys.rings import ring

    dim, rho0, a, eps0, mu0 = 3, sp.Rational(3, 5), sp.Rational(2, 3), 1, sp.Rational(1, 2)
    x1 = [1, 0, 0]
    x2 = [rho0, sp.sqrt(1 - rho0**2), 0]  # 4/5: rational
    a1 = [a * u + (1 - a) * v for u, v in zip(x1, x2, strict=True)]
    a2 = [(1 - a) * u + a * v for u, v in zip(x1, x2, strict=True)]
    rng = np.random.default_rng(3)
    g = [[sp.Rational(int(v), 64) for v in row] for row in rng.integers(-128, 128, (dim, dim))]
    poly_ring, s_ = ring([sp.Symbol("s")], sp.QQ)
    vec = [[poly_ring(sp.nsimplify(c)) for c in v] for v in (x1, x2, a1, a2)]
    ga = [[sum((poly_ring(g[i][j]) * v[j] for j in range(dim)), poly_ring.zero)
           for i in range(dim)] for v in vec[2:]]

    def dot_noise(i, j):
        return sum((u * v for u, v in zip(ga[i], ga[j], strict=True)), poly_ring.zero)

    series = fd._series(fd._layer_products(*vec, *ga, dot_noise, s_, poly_ring(eps0),
                                           poly_ring(mu0)))
    as_float = [np.array([float(c) for c in v]) for v in (x1, x2, a1, a2)]
    gm = np.array([[float(c) for c in row] for row in g])

    def gap(step):
        y1, y2 = (x + step * eps0 * gm @ att + step**2 * float(mu0) * att
                  for x, att in zip(as_float[:2], as_float[2:], strict=True))
        exact = y1 @ y2 / np.sqrt((y1 @ y1) * (y2 @ y2)) - float(rho0)
        return exact - float(series.as_expr().subs("s", step))

    errors = [abs(gap(step)) for step in (1e-2, 5e-3)]
    assert 20 < errors[0] / errors[1] < 45, errors
    assert errors[0] < 1e-7  # and the series is not trivially off (its s^1..s^4 terms)
    assert abs(float(series.as_expr().subs("s", 1e-2))) > 1e-3
