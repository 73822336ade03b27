"""Two tokens: thresholds, the exact antipodal probability and the reduced Monte Carlo."""

import time

import jax
import numpy as np
import pytest
from scipy import integrate, special

from spheresde import two_token


def test_critical_beta():
    assert two_token.critical_beta(10) == pytest.approx(0.5 * np.arccosh(8), abs=1e-14)
    assert two_token.critical_beta(3) == 0.0


def _quad_probability(beta, d, rho0=None, eps=1.0, mu=0.0):
    """Reference by adaptive quadrature: QUADPACK's algebraic weight (qawse) for the
    endpoint powers, and an inner quad for F. Independent of the product rule."""
    g = lambda x: float(two_token.scale_g(x, beta, d, mu=mu, eps=eps))  # noqa: E731
    g_plus, g_minus = g(1.0), g(-1.0)
    if g_minus >= 2:
        return 0.0

    def f(x):
        h = lambda y: (g(y) - g_plus * (1 + y) / 2 - g_minus * (1 - y) / 2) / (1 - y * y)  # noqa: E731
        return np.exp(-integrate.quad(h, 0, x, epsabs=1e-14, epsrel=1e-13)[0])

    opts = dict(weight="alg", epsabs=1e-14, epsrel=1e-12, limit=200)
    total = integrate.quad(f, -1, 1, wvar=(-g_minus / 2, g_plus / 2), **opts)[0]
    if rho0 is None:
        a = (d - 1) / 2
        part = integrate.quad(lambda x: f(x) * special.betainc(a, a, (1 + x) / 2), -1, 1,
                              wvar=(-g_minus / 2, g_plus / 2), **opts)[0]
    else:
        part = integrate.quad(lambda x: f(x) * (1 + x) ** (-g_minus / 2), rho0, 1,
                              wvar=(0.0, g_plus / 2), **opts)[0]
    return part / total


CASES = [  # beta, d, rho0, eps, mu
    (2.0, 4, None, 1.0, 0.0), (0.7, 4, None, 1.0, 0.0), (3.0, 10, None, 1.0, 0.0),
    (10.0, 5, None, 1.0, 0.0), (2.0, 3, None, 1.0, 0.0), (2.0, 4, 0.3, 1.0, 0.0),
    (2.0, 4, -0.6, 1.0, 0.0), (2.0, 4, None, 0.3, 1.0), (3.0, 6, -0.2, 0.4, 1.0),
]


@pytest.mark.parametrize(("beta", "d", "rho0", "eps", "mu"), CASES)
def test_exact_probability_against_adaptive_quadrature(beta, d, rho0, eps, mu):
    # The claim is 1e-4; both methods agree to ~1e-13, so 1e-9 leaves room only for
    # the reference's own tolerance.
    exact = two_token.antipodal_probability(beta, d, rho0=rho0, mu=mu, eps=eps)
    assert exact == pytest.approx(_quad_probability(beta, d, rho0, eps, mu), abs=1e-9)


def test_exact_probability_converged():
    # default rule against more nodes per panel and a finer, longer graded mesh
    finer = dict(nodes=24, grading=40, middle=16)
    betas, dims = np.linspace(0.05, 12.0, 40), np.arange(3, 11)[:, None]
    coarse = two_token.antipodal_probability(betas, dims)
    assert np.max(np.abs(coarse - two_token.antipodal_probability(betas, dims, **finer))) < 1e-8
    # hybrid down to small noise, where the scale density has sharp boundary layers
    eps = np.array([0.02, 0.05, 0.15, 1.5])[:, None]
    coarse = two_token.antipodal_probability(betas, 4, mu=1.0, eps=eps)
    fine = two_token.antipodal_probability(betas, 4, mu=1.0, eps=eps, **finer)
    assert np.max(np.abs(coarse - fine)) < 1e-8
    assert np.all(np.isfinite(coarse))


def test_circle_closed_form():
    # d = 2: g(rho) = -rho for every beta, S' = (1 - x^2)^(-1/2), P = arccos(rho0) / pi.
    rho0 = np.linspace(-0.95, 0.95, 9)
    p = two_token.antipodal_probability(1.7, 2, rho0=rho0)
    assert np.allclose(p, np.arccos(rho0) / np.pi, atol=1e-12)
    assert two_token.antipodal_probability(0.4, 2) == pytest.approx(0.5, abs=1e-12)


def test_zero_exactly_where_antipodal_repels():
    for d in (4, 7, 10):
        bc = two_token.critical_beta(d)
        below = two_token.antipodal_probability([0.5 * bc, bc - 1e-6], d)
        above = two_token.antipodal_probability(bc + 1e-3, d)
        assert np.all(below == 0.0)
        assert above > 0.0
    betas = np.linspace(0.05, 4, 80)
    p = two_token.antipodal_probability(betas, 6)
    assert np.array_equal(p > 0, two_token.lyapunov_minus(betas, 6) < 0)


def test_monotone_in_the_start():
    rho0 = np.linspace(-0.999, 0.999, 41)
    p = two_token.antipodal_probability(2.5, 5, rho0=rho0)
    assert np.all(np.diff(p) < 0)
    assert np.array_equal(two_token.antipodal_probability(2.5, 5, rho0=[-1.0, 1.0]), [1.0, 0.0])


def test_hybrid_threshold():
    beta, d, mu = 3.0, 5, 1.0
    eps_star = two_token.hybrid_threshold(beta, d, mu)
    assert two_token.antipodal_probability(beta, d, mu=mu, eps=0.99 * eps_star) == 0.0
    assert two_token.antipodal_probability(beta, d, mu=mu, eps=1.01 * eps_star) > 0.0
    assert np.isinf(two_token.hybrid_threshold(0.5 * two_token.critical_beta(d), d, mu))
    assert two_token.paper_hybrid_threshold(2.0) == pytest.approx(np.sqrt(2) * np.exp(-1.0))
    # large beta: eps^2 -> 2 mu e^{-2 beta}, the paper's curve with beta halved
    assert two_token.hybrid_threshold(12.0, d, mu) ** 2 == pytest.approx(
        two_token.paper_hybrid_threshold(24.0) ** 2, rel=1e-3)


def test_antipodal_never_dominant_for_two_uniform_tokens_in_the_hybrid():
    # A finding, kept as a check: with two uniform tokens the single cluster is the more
    # likely outcome everywhere in the hybrid (beta, eps) plane (P -> 1/2 only for d = 2
    # and eps -> infinity), so there the dominant-outcome boundary is where P becomes > 0.
    betas, eps = np.linspace(0.1, 20.0, 50), np.geomspace(0.02, 20.0, 40)[:, None]
    for d in (2, 4, 10):
        assert np.all(two_token.antipodal_probability(betas, d, mu=1.0, eps=eps) < 0.5)


def test_grid_of_exact_curves_is_fast():
    betas, dims = np.linspace(0.05, 6.0, 200), np.arange(4, 11)[:, None]
    two_token.antipodal_probability(1.0, 4)  # the lambdified coefficients are built once
    start = time.perf_counter()
    two_token.antipodal_probability(betas, dims)
    assert time.perf_counter() - start < 10.0


@pytest.mark.parametrize("increments", ["two_point", "gaussian"])
def test_reduced_monte_carlo_matches_exact(increments):
    # 20,000 trajectories per beta, dt = 0.01, T = 30: standard error <= 0.0035; allow
    # 4 standard errors plus the undecided fraction.
    betas = np.array([0.4, 2.0])
    # (8 fused steps instead of the default 32: the same scheme, less compilation time)
    rho = two_token.simulate_rho(jax.random.key(7), betas, 4, trajectories=20_000, dt=0.01,
                                 horizon=30.0, increments=increments, block=8)
    f = two_token.rho_fractions(rho)
    exact = two_token.antipodal_probability(betas, 4)
    assert np.all(np.abs(f.antipodal - exact) <= 4 * f.antipodal_se + f.undecided + 1e-12)
    assert np.all(f.undecided < 0.01)


def test_reduced_monte_carlo_from_a_given_start():
    # 10,000 trajectories from rho0 = -0.5: standard error 0.005, 4 of them allowed.
    rho = two_token.simulate_rho(jax.random.key(8), 3.0, 6, trajectories=10_000, dt=0.01,
                                 horizon=30.0, rho0=-0.5, block=8)
    f = two_token.rho_fractions(rho)
    exact = two_token.antipodal_probability(3.0, 6, rho0=-0.5)
    assert abs(f.antipodal - exact) <= 4 * f.antipodal_se + f.undecided


def test_fast_z_coefficients_equal_the_exported_ones():
    from proofs_check.export import rho_coefficients
    from spheresde.transformer.two_token._monte_carlo import _z_coefficients

    rc = rho_coefficients("numpy")
    z = np.linspace(-30.0, 30.0, 41)[:, None]
    beta, d, eps, mu = np.array([0.3, 2.0, 9.0]), 7.0, 0.6, 1.3
    t = np.tanh(z)
    fast = _z_coefficients()(np.exp(-beta * (1 - t)), t, beta, d, eps, mu)
    assert np.allclose(fast[0], rc.z_drift(z, beta, d, eps, mu), rtol=1e-12, atol=1e-12)
    assert np.allclose(fast[1], rc.z_diffusion(z, beta, d, eps, mu), rtol=1e-12, atol=1e-12)
