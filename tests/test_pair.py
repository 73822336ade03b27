"""The two-token network in sum/difference coordinates (spheresde._pair)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from spheresde import sample_uniform
from spheresde._absorption import _advance_pair, absorbing_network
from spheresde._network import layer, network_depth, simulate_network
from spheresde._outcomes import ANTIPODAL
from spheresde._pair import pair_layer
from spheresde.transformer import PureNoise

TOL = 1e-2


def _pair_near(d, sign, gap, seed):
    """Two unit tokens (float64: the tests run with x64) with 1 - sign * rho about ``gap``."""
    key1, key2 = jax.random.split(jax.random.PRNGKey(seed))
    x1 = sample_uniform(key1, (), d).astype(jnp.float64)
    u = jax.random.normal(key2, (d,), jnp.float64)
    u = u - jnp.dot(u, x1) * x1
    x2 = sign * x1 + np.sqrt(2 * gap) * u / jnp.linalg.norm(u)
    return jnp.stack([x1, x2 / jnp.linalg.norm(x2)])


@pytest.mark.parametrize("d", [2, 5])
@pytest.mark.parametrize(("sign", "gap"), [(1.0, 1.0), (-1.0, 1e-6), (1.0, 1e-6)])
@pytest.mark.parametrize(("beta", "drift_step", "noise_step"), [(2.0, 0.0, 0.1),
                                                                (4.0, 0.01, 0.3)])
def test_pair_layer_is_the_network_layer_pathwise(d, sign, gap, beta, drift_step, noise_step):
    # given the same matrix Xi, the pair layer maps X1 +- X2 exactly as the network's
    # layer maps the tokens (float64, agreement to rounding)
    x = _pair_near(d, sign, gap, seed=d)
    xi = jax.random.normal(jax.random.PRNGKey(100 + d), (d, d), jnp.float64)
    y = layer(x, xi, beta, None, None, drift_step, noise_step, "full", 1.0)
    s, m = x[0] + x[1], x[0] - x[1]
    s1, m1 = pair_layer(s, m, xi @ s, xi @ m, beta, drift_step, noise_step)
    np.testing.assert_allclose(s1, y[0] + y[1], rtol=0, atol=1e-14)
    np.testing.assert_allclose(m1, y[0] - y[1], rtol=0, atol=1e-14)


@pytest.mark.parametrize(("sign", "gap"), [(1.0, 1.0), (-1.0, 1e-6), (1.0, 1e-6)])
def test_layernorm_pair_layer_is_the_layernorm_network_layer_pathwise(sign, gap):
    # LayerNorm: tokens centred first (on the sphere of the hyperplane), the same matrix Xi;
    # the pair layer with norm="layer" maps X1 +- X2 as the LayerNorm layer maps the tokens
    d, beta, drift_step, noise_step = 5, 2.0, 0.01, 0.3
    x = _pair_near(d, sign, gap, seed=3)
    x = x - jnp.mean(x, axis=-1, keepdims=True)
    x = x / jnp.linalg.norm(x, axis=-1, keepdims=True)
    xi = jax.random.normal(jax.random.PRNGKey(7), (d, d), jnp.float64)
    y = layer(x, xi, beta, None, None, drift_step, noise_step, "full", 1.0, norm="layer")
    s, m = x[0] + x[1], x[0] - x[1]
    s1, m1 = pair_layer(s, m, xi @ s, xi @ m, beta, drift_step, noise_step, norm="layer")
    np.testing.assert_allclose(s1, y[0] + y[1], rtol=0, atol=1e-14)
    np.testing.assert_allclose(m1, y[0] - y[1], rtol=0, atol=1e-14)
    assert abs(float(jnp.sum(s1))) < 1e-14  # still in the hyperplane


@pytest.mark.slow
def test_pair_layer_keeps_relative_precision_near_antipodal():
    # 1 + rho = 1e-20. Reference: the network's layer on float64 tokens, where
    # |X1 + X2| ~ 1.4e-10 carries rounding of ~1e-16, so ~1e-6 relative. The float32 pair
    # layer matches it to 1e-4 relative; the float32 token layer cannot: rounded to float32
    # the tokens are exactly opposite, and s is lost.
    d, beta, drift_step, noise_step = 4, 3.0, 0.0, 0.1
    x1 = sample_uniform(jax.random.PRNGKey(3), (), d).astype(jnp.float64)
    u = jax.random.normal(jax.random.PRNGKey(4), (d,), jnp.float64)
    u = u - jnp.dot(u, x1) * x1
    x = jnp.stack([x1, np.sqrt(2e-20) * u / jnp.linalg.norm(u) - x1])
    x = x / jnp.linalg.norm(x, axis=-1, keepdims=True)
    xi = jax.random.normal(jax.random.PRNGKey(5), (d, d), jnp.float64)
    s, m = x[0] + x[1], x[0] - x[1]
    assert 0.5e-20 < float(jnp.dot(s, s)) / 2 < 2e-20
    y64 = layer(x, xi, beta, None, None, drift_step, noise_step, "full", 1.0)
    reference = np.asarray(y64[0] + y64[1])
    f32 = [jnp.asarray(v, jnp.float32) for v in (s, m, xi @ s, xi @ m)]
    s32, _ = pair_layer(*f32, jnp.float32(beta), drift_step, noise_step)
    np.testing.assert_allclose(np.asarray(s32, float), reference, rtol=1e-4, atol=0)
    y32 = layer(x.astype(jnp.float32), xi.astype(jnp.float32), jnp.float32(beta), None, None,
                drift_step, noise_step, "full", 1.0)
    token_error = np.abs(np.asarray(y32[0] + y32[1], float) - reference).max()
    assert token_error > 0.5 * np.abs(reference).max()


@pytest.mark.slow
@pytest.mark.parametrize(("d", "beta", "rho0"), [(3, 1.0, 0.2), (5, 2.5, -0.6)])
def test_pair_chain_has_the_law_of_the_network(d, beta, rho0):
    # rho after 20 layers (L = 10) from a common start: the pair chain vs the network with
    # full d x d noise, 3,000 trajectories each, two-sample Kolmogorov-Smirnov test at
    # level 1e-3 (distinct seeds; the test fails when the laws differ by a KS distance of
    # about 0.05 or more)
    n, layers, steps = 3000, 10, 20
    x = np.zeros((2, d), np.float32)
    x[0, 0] = 1.0
    x[1, 0], x[1, 1] = rho0, np.sqrt(1 - rho0**2)
    net = simulate_network(jax.random.PRNGKey(0), x, beta, PureNoise(), layers=layers,
                           horizon=steps / layers, trajectories=n, noise="full").tokens
    rho_net = np.sum(np.asarray(net[:, 0] * net[:, 1], float), axis=-1)
    s = jnp.broadcast_to(jnp.asarray(x[0] + x[1]), (n, d))
    m = jnp.broadcast_to(jnp.asarray(x[0] - x[1]), (n, d))
    keys = jax.vmap(lambda i: jax.random.fold_in(jax.random.PRNGKey(1), i))(jnp.arange(n))
    s, m = _advance_pair(s, m, keys, 0, steps, jnp.float32(beta), jnp.float32(0.0),
                         jnp.float32(1 / np.sqrt(layers)), noisy=True)
    s, m = np.asarray(s, float), np.asarray(m, float)
    rho_pair = (np.sum(s * s, -1) - np.sum(m * m, -1)) / 4
    assert stats.ks_2samp(rho_net, rho_pair).pvalue > 1e-3


@pytest.mark.slow
def test_antipodal_trajectories_are_absorbed_too():
    # d = 3, beta = 3: most pairs end antipodal. If only single-cluster trajectories could
    # stop early (the float32 floor of the token representation), the steps simulated
    # would be at least (antipodal count) x (all steps); the pair coordinates absorb both.
    n, layers, horizon = 256, 10, 200.0
    codes, work = absorbing_network(jax.random.PRNGKey(2), beta=3.0, d=3, weights=PureNoise(),
                                    trajectories=n, layers=layers,
                                    steps=network_depth(horizon, layers), tol=TOL,
                                    bound=1e-6)
    antipodal = int(np.sum(codes == ANTIPODAL))
    assert antipodal > n // 4
    assert work < 0.5 * antipodal * round(horizon * layers)
