"""The two-token network in sum/difference coordinates (spheresde.transformer._pair)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from spheresde import sample_uniform
from spheresde.transformer import Hybrid, PureNoise
from spheresde.transformer._absorption import _advance_gram, _advance_pair, absorbing_network
from spheresde.transformer._network import layer, network_depth, simulate_network
from spheresde.transformer._outcomes import ANTIPODAL, SINGLE
from spheresde.transformer._pair import gram_columns, gram_pair_layer, pair_layer

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


# ------------------------------------------------------------------ the Gram chain


@pytest.mark.parametrize("d", [2, 3, 5])
@pytest.mark.parametrize(("sign", "gap"), [(1.0, 1.0), (-1.0, 1e-6), (1.0, 1e-6)])
def test_gram_layer_is_the_vector_layer_in_the_bartlett_frame(d, sign, gap):
    # pathwise: given Xi, the frame e1 = s/|s|, e2 = m/|m|, f1, f2 (Gram-Schmidt of the
    # complement parts q1, q2 of Xi e1, Xi e2) gives the plane coordinates and the Bartlett
    # factor c1 = |q1|, n21 = <q2, f1>, c2 = |q2 - n21 f1|; the Gram layer on |s|, |m| with
    # them gives the lengths of the vector layer's s', m' (float64, to rounding)
    beta, drift_step, noise_step = 3.0, 0.01, 0.3
    x = _pair_near(d, sign, gap, seed=d)
    xi = jax.random.normal(jax.random.PRNGKey(200 + d), (d, d), jnp.float64)
    s, m = np.asarray(x[0] + x[1]), np.asarray(x[0] - x[1])
    s1, m1 = jax.jit(pair_layer)(s, m, xi @ s, xi @ m, beta, drift_step, noise_step)
    e = np.stack([s / np.linalg.norm(s), m / np.linalg.norm(m)])
    g = np.asarray(xi) @ e.T  # columns Xi e1, Xi e2
    plane = e @ g
    q = g - e.T @ plane  # parts in the complement
    if d <= 3:
        # the complement has one dimension (or none): its coordinate as it is
        f = (np.linalg.svd(np.eye(d) - e.T @ e)[0][:, : d - 2]).T
        columns = np.concatenate([plane, f @ q], axis=0).T
    else:
        c1 = np.linalg.norm(q[:, 0])
        n21 = q[:, 1] @ q[:, 0] / c1
        c2 = np.linalg.norm(q[:, 1] - n21 * q[:, 0] / c1)
        columns = np.array([[plane[0, 0], plane[1, 0], c1, 0.0],
                            [plane[0, 1], plane[1, 1], n21, c2]])
    # jitted: one compilation per d instead of one per operation
    a, b = jax.jit(gram_pair_layer)(np.linalg.norm(s, keepdims=True),
                                    np.linalg.norm(m, keepdims=True), columns, beta,
                                    drift_step, noise_step)
    for new, vector in ((a, s1), (b, m1)):
        np.testing.assert_allclose(float(new[0]), np.linalg.norm(vector), rtol=1e-12, atol=0)


def test_gram_columns_are_the_bartlett_factor_of_the_normals():
    # d = 6: plane normals kept, c1 = |z[0, 2:]| (4 normals), n21 = z[1, 2],
    # c2 = |z[1, 3:]| (3 normals): 12 = 2d normals in, 8 numbers out
    z = np.arange(12.0).reshape(2, 6) - 5
    g = np.asarray(gram_columns(jnp.asarray(z)))
    want = [[z[0, 0], z[0, 1], np.linalg.norm(z[0, 2:]), 0.0],
            [z[1, 0], z[1, 1], z[1, 2], np.linalg.norm(z[1, 3:])]]
    np.testing.assert_allclose(g, want, rtol=1e-15)
    np.testing.assert_array_equal(gram_columns(jnp.asarray(z[:, :3])), z[:, :3])


def test_gram_layer_keeps_relative_precision_near_antipodal():
    # 1 + rho = 1e-20, |s| = sqrt(2e-20): the float32 Gram layer gives |s'| to 1e-5
    # relative against the float64 one (same columns)
    g = np.array(jax.random.normal(jax.random.PRNGKey(8), (2, 4), jnp.float64))
    g[0, 3] = 0.0
    g[:, 2:] = np.abs(g[:, 2:])
    a, b = np.sqrt(2e-20), np.sqrt(4 - 2e-20)
    out = [gram_pair_layer(jnp.array([a], dtype), jnp.array([b], dtype),
                           jnp.asarray(g, dtype), dtype(3.0), 0.0, 0.1)[0]
           for dtype in (jnp.float32, jnp.float64)]
    assert 1e-12 < float(out[1][0]) < 1e-8
    np.testing.assert_allclose(float(out[0][0]), float(out[1][0]), rtol=1e-5)


def _rho_after(chain, d, rho0, dtype, n, steps, seed, drift_step=0.0, noise_step=0.3,
               beta=2.0):
    keys = jax.vmap(lambda i: jax.random.fold_in(jax.random.PRNGKey(seed), i))(jnp.arange(n))
    scalars = [jnp.asarray(v, dtype) for v in (beta, drift_step, noise_step)]
    if chain == "gram":
        a = jnp.full((n, 1), np.sqrt(2 * (1 + rho0)), dtype)
        b = jnp.full((n, 1), np.sqrt(2 * (1 - rho0)), dtype)
        a, b = _advance_gram(a, b, keys, 0, steps, *scalars, noisy=True, width=d)
        plus, minus = np.asarray(a[:, 0], float) ** 2, np.asarray(b[:, 0], float) ** 2
    else:
        x = np.zeros((2, d))
        x[0, 0], x[1, 0], x[1, 1] = 1.0, rho0, np.sqrt(1 - rho0**2)
        s = jnp.broadcast_to(jnp.asarray(x[0] + x[1], dtype), (n, d))
        m = jnp.broadcast_to(jnp.asarray(x[0] - x[1], dtype), (n, d))
        s, m = _advance_pair(s, m, keys, 0, steps, *scalars, noisy=True)
        plus, minus = (np.sum(np.asarray(v, float) ** 2, -1) for v in (s, m))
    # from the smaller gap, as absorbing_network classifies (|s|^2 + |m|^2 = 4 carries
    # float32 rounding of about 4e-7, more than 1 - rho at d = 10, beta = 4)
    return np.where(minus < plus, 1 - minus / 2, plus / 2 - 1)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_gram_chain_has_the_law_of_the_vector_chain(dtype):
    # rho after 20 layers from rho0 = -0.3 at d = 5 with hybrid drift: 3,000 trajectories
    # of each chain (distinct seeds), two-sample Kolmogorov-Smirnov test at level 1e-3
    # (it fails when the laws differ by a KS distance of about 0.05 or more)
    kw = {"d": 5, "rho0": -0.3, "dtype": dtype, "n": 3000, "steps": 20, "drift_step": 0.02}
    gram, vectors = _rho_after("gram", seed=1, **kw), _rho_after("vectors", seed=2, **kw)
    assert stats.ks_2samp(gram, vectors).pvalue > 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
@pytest.mark.parametrize(("d", "rho0", "beta"), [(2, 0.5, 1.0), (3, 0.2, 1.0), (4, -0.6, 2.5),
                                                 (10, 0.9, 4.0)])
def test_gram_chain_has_the_law_of_the_vector_chain_at_edge_dimensions(dtype, d, rho0, beta):
    # as above at d = 2 (no complement), 3 (a one-dimensional one), 4 (chi^2_1 for c2) and
    # 10; 3,000 trajectories each, KS at level 1e-3, and the means within 4 standard
    # errors of their difference
    kw = {"d": d, "rho0": rho0, "dtype": dtype, "n": 3000, "steps": 20, "beta": beta}
    gram, vectors = _rho_after("gram", seed=3, **kw), _rho_after("vectors", seed=4, **kw)
    assert stats.ks_2samp(gram, vectors).pvalue > 1e-3
    se = np.sqrt(gram.var() / gram.size + vectors.var() / vectors.size)
    assert abs(gram.mean() - vectors.mean()) < 4 * se


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
@pytest.mark.parametrize(("d", "norm", "bound", "weights"), [
    (4, "rms", 1e-6, PureNoise()), (3, "layer", 0.0, PureNoise()),
    (5, "layer", 0.0, PureNoise()), (4, "rms", 0.0, Hybrid(mu=1.0, eps=0.8))])
def test_gram_chain_gives_the_outcomes_of_the_vector_chain(dtype, d, norm, bound, weights):
    # a small phase point (beta = 2, L = 10, T = 20, tol 1e-2): the outcome fractions of
    # the two chains (distinct seeds, 4,000 trajectories each) agree within 4 standard
    # errors of their difference, single and antipodal; LayerNorm: the Gram chain in
    # dimension d - 1 (d = 3: the plane alone); hybrid weights: the mu Id drift
    kw = {"beta": 2.0, "d": d, "weights": weights, "trajectories": 4000, "layers": 10,
          "steps": 200, "tol": TOL, "bound": bound, "norm": norm, "dtype": dtype}
    gram, _ = absorbing_network(jax.random.PRNGKey(5), chain="gram", **kw)
    vectors, _ = absorbing_network(jax.random.PRNGKey(6), chain="vectors", **kw)
    for code in (SINGLE, ANTIPODAL):
        p, q = np.mean(gram == code), np.mean(vectors == code)
        se = np.sqrt((p * (1 - p) + q * (1 - q)) / 4000)
        assert 0.05 < q < 0.95
        assert abs(p - q) < 4 * se, (code, p, q, se)


_TINY = {"beta": 1.0, "d": 2, "weights": PureNoise(), "trajectories": 64, "layers": 4,
         "steps": 8, "tol": TOL, "bound": 0.0, "norm": "layer"}


@pytest.mark.slow
def test_gram_chain_leaves_the_one_dimensional_hyperplane_to_the_vector_chain():
    # LayerNorm at d = 2: the hyperplane is a line, no plane for the frame; the vector
    # chain runs (same seed, same codes)
    gram, _ = absorbing_network(jax.random.PRNGKey(7), chain="gram", **_TINY)
    vectors, _ = absorbing_network(jax.random.PRNGKey(7), chain="vectors", **_TINY)
    np.testing.assert_array_equal(gram, vectors)


def test_an_unknown_chain_is_refused():
    with pytest.raises(ValueError, match="chain must be 'gram' or 'vectors'"):
        absorbing_network(jax.random.PRNGKey(7), chain="matrix", **_TINY)
