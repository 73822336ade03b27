"""The stochastic Transformer: weight models, SDE limit (full and span noise), discrete network."""

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import spheresde
from spheresde import GeodesicHeun, sample_uniform, solve, solve_batch
from spheresde.transformer import (
    ConstantWeights,
    Hybrid,
    PureNoise,
    attention,
    simulate_network,
    transformer_sde,
)
from spheresde.transformer._network import layer, network_depth
from spheresde.transformer._noise import span_factor


def _tokens(key, n, d):
    return sample_uniform(key, (n,), d)


@pytest.mark.parametrize("n", [2, 4])
def test_span_factor(getkey, n):
    x = _tokens(getkey(), n, 6)
    for tokens in (x, 2.0 * x, jnp.ones((n, 6)) / jnp.sqrt(6.0)):  # generic, radius 2, rank one
        factor = span_factor(tokens)
        assert factor.shape == (n, n)
        assert jnp.all(jnp.isfinite(factor))
        assert jnp.allclose(factor @ factor.T, tokens @ tokens.T, atol=1e-12)


@pytest.mark.parametrize("n", [2, 3])
def test_span_factor_keeps_one_plus_rho_near_antipodal_in_float32(n):
    # X_1 = -X_2 + a small s: the noise on X_1 + X_2 has variance |F^T (1, 1, 0..)|^2, which
    # must be |s|^2 to relative precision (n = 2) or to the rounding of the tokens (QR, n > 2).
    # The old closed-form / eigh square roots of X X^T got it wrong by ~1e-4 absolute.
    d, gap = 6, 1e-8  # 1 + rho = |s|^2 / 2
    e = np.eye(d)
    x1 = np.sqrt(1 - gap / 2) * e[0] + np.sqrt(gap / 2) * e[1]  # <x1, x2> = -1 + gap
    x2 = -np.sqrt(1 - gap / 2) * e[0] + np.sqrt(gap / 2) * e[1]
    tokens = np.stack([x1, x2, e[2]][:n]).astype(np.float32)
    pair = np.zeros(n, np.float32)
    pair[:2] = 1
    s = tokens[0].astype(float) + tokens[1]
    got = float(jnp.linalg.norm(span_factor(jnp.asarray(tokens)).T @ pair))
    assert got == pytest.approx(np.linalg.norm(s), rel=1e-5 if n == 2 else 1e-2)


def _increment_covariance(sde, y):
    """Covariance of the diffusion increment g(y)[dW] for dW with iid N(0, 1) entries,
    from the images of the basis matrices (shape (n*d, n*d))."""
    size = int(np.prod(sde.noise_shape))
    basis = jnp.eye(size).reshape(size, *sde.noise_shape)
    images = jax.jit(jax.vmap(lambda e: sde.diffusion(0.0, y, None, e).ravel()))(basis)
    return images.T @ images


@pytest.mark.parametrize(("n", "d"), [(2, 5), (3, 4)])
def test_span_noise_has_the_same_covariance(getkey, n, d):
    # The increments are Gaussian and linear in dW, so equal covariances mean equal laws.
    y = _tokens(getkey(), n, d)
    q = jax.random.normal(getkey(), (d, d))
    for Q in (None, q):
        full = transformer_sde(1.3, PureNoise(0.7), d=d, Q=Q, noise="full")
        span = transformer_sde(1.3, PureNoise(0.7), d=d, Q=Q, noise="span", n=n)
        assert span.noise_shape == (d, n)
        assert jnp.allclose(_increment_covariance(full, y), _increment_covariance(span, y),
                            atol=1e-12)


def test_covariance_is_the_shared_noise_formula(getkey):
    # d<X_i, X_j>-type covariance: Cov((P_i dW A_i), (P_j dW A_j)) = sigma^2 (A_i.A_j) P_i P_j.
    n, d, sigma = 3, 4, 0.8
    y = _tokens(getkey(), n, d)
    cov = _increment_covariance(transformer_sde(0.9, PureNoise(sigma), d=d), y)
    a = attention(y, 0.9)
    p = jnp.eye(d) - y[:, :, None] * y[:, None, :]
    expected = sigma**2 * jnp.einsum("ik,jk,iab,jbc->iajc", a, a, p, p).reshape(n * d, n * d)
    assert jnp.allclose(cov, expected, atol=1e-12)


@pytest.mark.parametrize("weights", [PureNoise(1.3), Hybrid(mu=0.7, eps=0.4)])
def test_ito_drift_keeps_the_norm(getkey, weights):
    # Ito: d|X_i|^2 = 2 <X_i, drift_i> + tr Cov_i must vanish on the sphere.
    n, d = 3, 5
    y = _tokens(getkey(), n, d)
    sde = transformer_sde(1.1, weights, d=d)
    cov = _increment_covariance(sde, y).reshape(n, d, n, d)
    trace = jnp.einsum("iaia->i", cov)
    drift = sde.drift(0.0, y, None)
    assert jnp.allclose(2 * jnp.sum(y * drift, axis=-1) + trace, 0.0, atol=1e-12)


def test_hybrid_drift_tangent_part(getkey):
    y = _tokens(getkey(), 3, 4)
    drift = transformer_sde(1.0, Hybrid(mu=0.6, eps=0.3), d=4).drift(0.0, y, None)
    a = attention(y, 1.0)
    tangent = drift - jnp.sum(drift * y, axis=-1, keepdims=True) * y
    assert jnp.allclose(tangent, 0.6 * (a - jnp.sum(a * y, axis=-1, keepdims=True) * y), atol=1e-12)


def test_span_noise_refused_by_stratonovich_solver(getkey):
    sde = transformer_sde(1.0, d=4, noise="span", n=2)
    with pytest.raises(ValueError, match="the SDE is written in Ito form"):
        solve(sde, _tokens(getkey(), 2, 4), 0.0, 0.1, 0.01, key=getkey(), solver=GeodesicHeun())


def _inner_products(tokens):
    return np.asarray(jnp.sum(tokens[:, 0] * tokens[:, 1], axis=-1))


@pytest.mark.slow
def test_span_and_full_noise_same_law_sde():
    # KS test on <X_1, X_2> at T = 1 (geodesic Euler, dt = 0.02), 2000 paths each,
    # independent keys: a p-value below 1e-3 would reject equal laws.
    d, paths = 4, 2000
    y0 = jnp.broadcast_to(jnp.eye(d)[:2], (paths, 2, d))
    saveat = diffrax.SaveAt(ts=[0.7, 1.0])
    samples = {}
    for noise, seed in (("full", 1), ("span", 2)):
        sde = transformer_sde(1.5, d=d, noise=noise, n=2)
        ys = solve_batch(sde, y0, 0.0, 1.0, 0.02, key=jax.random.key(seed), saveat=saveat).ys
        samples[noise] = [_inner_products(ys[:, k]) for k in range(2)]
    assert stats.ks_2samp(samples["full"][1], samples["span"][1]).pvalue > 1e-3
    # the test has power at this size: T = 0.7 against T = 1 is rejected
    assert stats.ks_2samp(samples["full"][1], samples["span"][0]).pvalue < 1e-3


@pytest.mark.slow
def test_span_and_full_noise_same_law_network():
    # KS test on <X_1, X_2> after T = 2 at L = 20 (40 layers), 4000 runs each.
    d = 6
    x0 = jnp.eye(d)[:2]
    rho = [
        _inner_products(simulate_network(jax.random.key(seed), x0, 2.0, layers=20, horizon=2,
                                         trajectories=4000, noise=noise).tokens)
        for noise, seed in (("full", 4), ("span", 5))
    ]
    assert stats.ks_2samp(*rho).pvalue > 1e-3


def _numpy_layer(x, v, beta, L):
    logits = beta * x @ x.T
    w = np.exp(logits - logits.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    y = x + (w @ x) @ v.T / np.sqrt(L)
    return y / np.linalg.norm(y, axis=1, keepdims=True)


def test_one_layer_matches_the_definition(getkey):
    # Y_i = X_i + V A_i / sqrt(L), X_i' = Y_i / |Y_i| with V = sigma * z.
    x = _tokens(getkey(), 3, 5)
    z = jax.random.normal(getkey(), (5, 5))
    sigma, L, beta = 0.9, 50, 1.7
    out = layer(x, z, beta, None, None, 0.0, sigma / np.sqrt(L), "full", 1.0)
    assert np.allclose(out, _numpy_layer(np.asarray(x), sigma * np.asarray(z), beta, L), atol=1e-12)


def test_constant_weights_network(getkey):
    # V = Id in every layer: deterministic, and the loop of the definition.
    x0 = _tokens(getkey(), 3, 4)
    runs = [simulate_network(getkey(), x0, 2.0, ConstantWeights(), layers=10, horizon=0.5,
                             trajectories=2).tokens for _ in range(2)]
    assert jnp.array_equal(runs[0], runs[1])
    x = np.asarray(x0)
    for _ in range(5):
        x = _numpy_layer(x, np.eye(4), 2.0, 10)
    assert np.allclose(runs[0][0], x, atol=1e-12)


def test_sqrt_d_radius_is_the_rescaled_unit_system(getkey):
    d = 5
    x0 = _tokens(getkey(), 3, d)
    key = getkey()
    unit = simulate_network(key, x0, 1.5, layers=20, horizon=1, trajectories=3)
    big = simulate_network(key, np.sqrt(d) * x0, 1.5, layers=20, horizon=1, trajectories=3,
                           radius="sqrt_d")
    assert jnp.allclose(jnp.linalg.norm(big.tokens, axis=-1), np.sqrt(d), atol=1e-12)
    assert jnp.allclose(big.tokens / np.sqrt(d), unit.tokens, atol=1e-12)


def test_saved_gram_traces(getkey):
    x0 = _tokens(getkey(), 2, 4)
    out = simulate_network(getkey(), x0, 1.0, layers=10, horizon=3, trajectories=5,
                           save_every=5)
    assert out.gram.shape == (5, 6, 2, 2)
    assert jnp.allclose(out.times, jnp.arange(1, 7) * 0.5)
    assert jnp.allclose(jnp.diagonal(out.gram, axis1=-2, axis2=-1), 1.0, atol=1e-12)
    last = jnp.einsum("tid,tjd->tij", out.tokens, out.tokens)
    assert jnp.allclose(out.gram[:, -1], last, atol=1e-12)
    with pytest.raises(ValueError, match="divide"):
        simulate_network(getkey(), x0, 1.0, layers=10, horizon=3, trajectories=5, save_every=7)


def test_depth_is_round_horizon_times_layers_and_at_least_one_layer(getkey):
    # the paper's Figure 3 (T = 500, L = 100), a horizon rounded up and one rounded down
    assert [network_depth(t, n) for t, n in ((500.0, 100), (0.26, 10), (1.04, 10))] == [
        50_000, 3, 10]
    assert network_depth(0.06, 10) == 1
    x0 = _tokens(getkey(), 2, 3)
    for horizon in (0.05, 0.0):  # T L = 1/2 rounds to no layer
        with pytest.raises(ValueError, match=r"round\(T L\) = 0 layers; pass T > 1/\(2L\)"):
            simulate_network(getkey(), x0, 1.0, layers=10, horizon=horizon, trajectories=2)


@pytest.mark.slow
def test_theorem_1_weak_error_decreases_like_one_over_layers():
    # 8000 coupled paths (network and fine SDE driven by one Brownian path each), d = 2,
    # beta = 1, T = 1, reference step 1/640. Standard errors at L = 10 are ~0.003, the
    # error of E rho^2 there ~0.04; weak order 1 is asserted within +-0.3.
    from spheresde.transformer import weak_error_vs_layers

    out = weak_error_vs_layers(jax.random.key(11), paths=8000, reference_factor=4)
    err, se = out.errors[:, 1], out.standard_errors[:, 1]
    assert err[0] > 5 * se[0]
    assert np.all(np.diff(err) < 2 * se[1:])
    assert err[-1] < err[0] / 5
    assert abs(out.rates[1] - 1.0) < 0.3


def test_abstract_weights_cannot_be_created():
    # Abstract-or-final: AbstractWeights only declares layer_steps and limit.
    from spheresde.transformer import AbstractWeights

    with pytest.raises(TypeError):
        AbstractWeights()


def test_weight_models_steps():
    # The diffusive models scale the drift by 1/L and the noise by 1/sqrt(L); constant
    # weights step the ODE by 1/sqrt(L) in its own time.
    L = 25
    assert PureNoise(0.5).layer_steps(L) == (0.0, 0.5 / 5)
    assert Hybrid(2.0, 0.3).layer_steps(L) == (2.0 / 25, 0.3 / 5)
    assert Hybrid(2.0, 0.3).limit() == (2.0, 0.3)
    assert ConstantWeights().layer_steps(L) == (1 / 5, 0.0)
    assert ConstantWeights().limit() == (1.0, 0.0)


def test_moved_names_warn_and_are_the_new_ones():
    with pytest.warns(DeprecationWarning, match=r"spheresde\.transformer\.simulate_network"):
        old = spheresde.simulate_network
    assert old is simulate_network
    with pytest.warns(DeprecationWarning, match=r"spheresde\.data\.read_idx"):
        assert spheresde.read_idx is spheresde.data.read_idx
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        spheresde.no_such_name  # noqa: B018
