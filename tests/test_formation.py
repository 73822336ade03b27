"""Two-cluster formations: the reduction, the boundary at rho = -1, the threshold, and a
direct Monte Carlo estimate of the inter-cluster Lyapunov exponent in the network."""

from __future__ import annotations

import doctest

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import sympy as sp

from spheresde import two_token
from spheresde.transformer import (
    Hybrid,
    formation_lyapunov_minus,
    formation_threshold,
    simulate_network,
)


def test_bad_sizes_are_refused_before_any_derivation():
    with pytest.raises(ValueError, match="1 <= cluster <= tokens - 1"):
        formation_threshold(1.0, 3, tokens=4, cluster=4)
    with pytest.raises(ValueError, match="tokens >= 2"):
        formation_threshold(1.0, 3, tokens=1, cluster=1)
    with pytest.raises(TypeError, match="integers"):
        formation_threshold(1.0, 3, tokens=4.0, cluster=2)


@pytest.mark.slow
def test_formation_sde_is_the_two_token_sde_for_two_tokens_and_balanced_clusters():
    from proofs_check.formation import derive_formation_sde, formation_lyapunov_minus
    from proofs_check.stability import lyapunov_exponent
    from proofs_check.symbols import k_cluster, n_tokens
    from proofs_check.two_token import derive_rho_sde

    sde, two = derive_formation_sde(), derive_rho_sde()
    def residual(x, y):  # rational functions of rho and r: cancel decides equality
        return sp.cancel(sp.together(x - y))

    for sizes in ({n_tokens: 2, k_cluster: 1}, {n_tokens: 2 * k_cluster}):
        assert residual(sde.drift.subs(sizes), two.drift) == 0
        assert residual(sde.variance.subs(sizes), two.variance) == 0
    lam = formation_lyapunov_minus().subs({n_tokens: 2, k_cluster: 1})
    assert residual(lam, lyapunov_exponent(-1)) == 0


@pytest.mark.slow
def test_unbalanced_formation_boundary_is_a_squared_bessel_process_of_dimension_d_minus_1():
    from proofs_check.formation import bessel_dimension_residual, boundary_expansion
    from proofs_check.symbols import beta, d, eps, k_cluster, mu, n_tokens, q

    assert bessel_dimension_residual() == 0
    e = boundary_expansion()
    point = {n_tokens: 8, k_cluster: 1, d: 3, eps: sp.Rational(1, 2), mu: 1, beta: 2,
             q: sp.exp(-4)}
    assert float(e["a0"].subs(point)) > 0  # unbalanced: rho = -1 is not an equilibrium
    assert e["a0"].subs({n_tokens: 2 * k_cluster}) == 0


@pytest.mark.slow
def test_formation_doctests():
    import proofs_check.formation

    result = doctest.testmod(proofs_check.formation)
    assert result.attempted > 0
    assert result.failed == 0


@pytest.mark.slow
def test_threshold_equals_the_two_token_threshold_for_balanced_formations():
    betas = np.linspace(0.5, 6.0, 12)
    for d in (3, 4, 8):
        expected = two_token.hybrid_threshold(betas, d)
        for n, k in ((2, 1), (4, 2), (16, 8)):
            got = formation_threshold(betas, d, tokens=n, cluster=k)
            np.testing.assert_allclose(got, expected, rtol=1e-12)
    # one token against many needs a larger eps than a balanced pair (beta = 3, d = 3)
    lone = formation_threshold(3.0, 3, tokens=16, cluster=1)
    assert lone > 2 * two_token.hybrid_threshold(3.0, 3)


def _formation(n, k, d, u0):
    """``k`` tokens at e1, ``n - k`` at a point with 1 + <x, y> = u0."""
    x = np.zeros(d)
    x[0] = 1.0
    y = np.zeros(d)
    y[0], y[1] = -(1 - u0), np.sqrt(1 - (1 - u0) ** 2)
    return jnp.asarray(np.array([x] * k + [y] * (n - k)))


@pytest.mark.slow
def test_formations_stay_formations_in_the_network():
    tokens0 = _formation(6, 2, 3, 0.5)
    out = simulate_network(jax.random.key(0), tokens0, 2.0, Hybrid(mu=1.0, eps=0.7),
                           layers=20, horizon=5.0, trajectories=50).tokens
    x = np.asarray(out)
    assert np.max(np.abs(x[:, 1] - x[:, 0])) < 1e-13
    assert np.max(np.abs(x[:, 3:] - x[:, 2:3])) < 1e-13
    assert np.median(np.linalg.norm(x[:, 0] - np.asarray(tokens0)[0], axis=-1)) > 0.1  # moved


@pytest.mark.slow
@pytest.mark.parametrize("eps_factor", [1.0, 4.0])
def test_threshold_matches_a_monte_carlo_lyapunov_exponent(eps_factor):
    # n = 8 tokens, one against seven, d = 3, beta = 4. At eps = eps_c the exponent is
    # 0; at 4 eps_c it is negative. Estimate: E[log(u_T / u_0)] / T for u = 1 + <x, y>
    # = |x + y|^2 / 2, started at u_0 = 1e-2: small enough for the linearization, and
    # u_T stays far above the floor a_0/|lambda| < 1e-5 that the unbalanced formation's
    # additive noise (a_0 ~ n^2 q^2 eps^2, q = e^{-8}) sets. Discrete network with L = 100
    # (bias O(1/L)), 2000 trajectories; the error bar is 4 standard errors plus 0.02 for
    # the discretization and the O(u) terms.
    n, k, d, beta, u0, horizon = 8, 1, 3, 4.0, 1e-2, 5.0
    eps = eps_factor * float(formation_threshold(beta, d, tokens=n, cluster=k))
    exact = float(formation_lyapunov_minus(beta, d, tokens=n, cluster=k, eps=eps))
    out = simulate_network(jax.random.key(7), _formation(n, k, d, u0), beta,
                           Hybrid(mu=1.0, eps=eps), layers=100, horizon=horizon,
                           trajectories=2000).tokens
    x = np.asarray(out)
    u = np.sum((x[:, 0] + x[:, -1]) ** 2, axis=-1) / 2
    samples = np.log(u / u0) / horizon
    estimate, se = samples.mean(), samples.std(ddof=1) / np.sqrt(len(samples))
    assert abs(estimate - exact) < 4 * se + 0.02, (estimate, se, exact)
