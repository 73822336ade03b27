"""Numerical witness: one layer of the discrete network against the lambdified limit.

For L = 10^4 (h = 1/L) one normalized update Y_i = X_i + h mu A_i + sqrt(h) eps G A_i,
X_i' = Y_i/|Y_i| is sampled N = 2 * 10^5 times (10^5 antithetic pairs G, -G: the O(sqrt h)
noise cancels in the pair mean, which leaves a standard error of order 1/sqrt(N) for
E[X' - X]/h instead of 1/sqrt(N h)). The sample moments are compared with the exported
Ito drift and diffusion within 4 standard errors (SE estimated from the same pairs) plus
the O(h) bias of one-step moments (terms of order s^4 / h = h; bounded here by 20 h = 2e-3,
the second-order moments being O(d^2 eps^4 |A|^4) <= ~20).
"""

import numpy as np
import pytest

from proofs_check.export import limit_coefficients, rho_coefficients

L = 10_000
H = 1.0 / L
PAIRS = 100_000
BIAS = 20 * H


def _tokens(rng, n, d):
    x = rng.standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _attention(x, beta):
    logits = beta * x @ x.T
    w = np.exp(logits - logits.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    return w @ x


def _one_layer(x, beta, eps, mu, g):
    """X' for every Gaussian matrix in g (shape (N, d, d)): shape (N, n, d)."""
    a = _attention(x, beta)
    noise = np.einsum("kab,ib->kia", g, a)
    y = x[None] + H * mu * a[None] + np.sqrt(H) * eps * noise
    return y / np.linalg.norm(y, axis=2, keepdims=True)


def _antithetic(x, beta, eps, mu, seed):
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((PAIRS, x.shape[1], x.shape[1]))
    return _one_layer(x, beta, eps, mu, g) - x, _one_layer(x, beta, eps, mu, -g) - x


@pytest.mark.parametrize(("eps", "mu"), [(1.0, 0.0), (0.6, 1.0)])
def test_limit_drift_and_covariance_match_one_layer(eps, mu):
    n, d, beta = 3, 4, 1.5
    x = _tokens(np.random.default_rng(7), n, d)
    plus, minus = _antithetic(x, beta, eps, mu, seed=11)
    lc = limit_coefficients("numpy")
    a = _attention(x, beta)
    proj = np.eye(d)[None] - np.einsum("ia,ib->iab", x, x)

    drift = lc.normal_drift(d, eps) * np.sum(a**2, axis=1)[:, None] * x
    drift += mu * np.einsum("iab,ib->ia", proj, a)
    pair_mean = (plus + minus) / (2 * H)
    est = pair_mean.mean(axis=0)
    se = pair_mean.std(axis=0, ddof=1) / np.sqrt(PAIRS)
    assert np.all(np.abs(est - drift) <= 4 * se + BIAS), np.max(np.abs(est - drift) / se)

    cov = lc.covariance_coefficient(eps) * np.einsum("ij,iab,jbc->ijac", a @ a.T, proj, proj)
    pair_outer = (
        np.einsum("kia,kjb->kijab", plus, plus) + np.einsum("kia,kjb->kijab", minus, minus)
    ) / (2 * H)
    est = pair_outer.mean(axis=0)
    se = pair_outer.std(axis=0, ddof=1) / np.sqrt(PAIRS)
    assert np.all(np.abs(est - cov) <= 4 * se + BIAS)
    # The witness has power: the drift without the normalization term is far outside.
    wrong = mu * np.einsum("iab,ib->ia", proj, a)
    assert np.max(np.abs(pair_mean.mean(axis=0) - wrong)) > 100 * se.max()


@pytest.mark.parametrize(("d", "beta", "eps", "mu"), [(4, 1.0, 1.0, 0.0), (6, 2.5, 0.5, 1.0)])
def test_rho_sde_matches_one_layer(d, beta, eps, mu):
    x = _tokens(np.random.default_rng(3), 2, d)
    rho = float(x[0] @ x[1])
    plus, minus = _antithetic(x, beta, eps, mu, seed=5)
    rc = rho_coefficients("numpy")

    def drho(delta):
        new = x[None] + delta
        return np.einsum("ka,ka->k", new[:, 0], new[:, 1]) - rho

    dp, dm = drho(plus), drho(minus)
    pair_mean = (dp + dm) / (2 * H)
    se = pair_mean.std(ddof=1) / np.sqrt(PAIRS)
    assert abs(pair_mean.mean() - rc.drift(rho, beta, d, eps, mu)) <= 4 * se + BIAS

    pair_sq = (dp**2 + dm**2) / (2 * H)
    se = pair_sq.std(ddof=1) / np.sqrt(PAIRS)
    assert abs(pair_sq.mean() - rc.diffusion(rho, beta, d, eps, mu) ** 2) <= 4 * se + BIAS
