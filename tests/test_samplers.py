r"""The exact samplers against closed forms, and as references for the solvers.

Brownian motion on :math:`S^{d-1}` (generator :math:`\tfrac12\Delta`): the cosine
:math:`Y = \langle X_t, y_0\rangle` has generator
:math:`L = \tfrac12(1 - y^2)\partial_y^2 - \tfrac{d-1}{2} y\,\partial_y`, so
:math:`L y = -\tfrac{d-1}{2} y` and :math:`L y^2 = 1 - d y^2` give
:math:`E Y = e^{-(d-1)t/2}` and :math:`E Y^2 = 1/d + (1 - 1/d) e^{-dt}` (the Gegenbauer
eigenvalues :math:`l(l+d-2)/2` at :math:`l = 1, 2`). On :math:`S^2` the heat kernel is
:math:`\sum_l \tfrac{2l+1}{2} e^{-l(l+1)t/2} P_l(c)` in :math:`c`.
"""

import math
import threading

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest
from helpers import brownian_motion_sde
from scipy import special, stats

import spheresde
from spheresde._samplers import TABLE_MIN_TIME, griffiths_moments, lineage_probabilities

PATHS = 20_000
# One below TABLE_MIN_TIME (normal approximation), two above (exact table): the same
# times in every test, so that the jitted sampler compiles once per kind and dimension.
SAMPLED_TIMES = (0.004, 0.05, 1.0)


def _z(samples, exact):
    return (np.mean(samples) - exact) / (np.std(samples) / math.sqrt(samples.size))


def _heat_kernel_cdf_s2(c, t, terms=200):
    r"""CDF of the cosine on :math:`S^2`: :math:`\int_{-1}^c P_l = (P_{l+1} - P_{l-1})/(2l+1)`."""
    c = np.asarray(c)
    total = (c + 1) / 2
    for deg in range(1, terms):
        total = total + 0.5 * math.exp(-deg * (deg + 1) * t / 2) * (
            special.eval_legendre(deg + 1, c) - special.eval_legendre(deg - 1, c))
    return total


@pytest.mark.parametrize("theta", [1, 2, 5])
@pytest.mark.parametrize("t", [TABLE_MIN_TIME, 0.05, 0.3, 3.0])
def test_lineage_table_gives_the_exact_moments(t, theta):
    # Given A, W = (1 + Y)/2 ~ Beta(theta/2 + A, theta/2): with its first two moments,
    # the mixtures over the table of E[Y | A] and E[Y^2 | A] must equal the closed forms
    # of the sphere of d = theta + 1, deterministically, to rounding.
    lo, q = lineage_probabilities(t, theta)
    m = lo + np.arange(q.size)
    a, b = theta / 2 + m, theta / 2
    mean_w, mean_w2 = a / (a + b), a * (a + 1) / ((a + b) * (a + b + 1))
    d = theta + 1
    assert abs(q.sum() - 1) < 1e-14
    assert abs(np.sum(q * (2 * mean_w - 1)) - math.exp(-(d - 1) * t / 2)) < 1e-14
    second = np.sum(q * (4 * mean_w2 - 4 * mean_w + 1))
    assert abs(second - (1 / d + (1 - 1 / d) * math.exp(-d * t))) < 1e-14


def test_small_time_normal_approximation_is_close_in_total_variation():
    # The one approximate step (t < TABLE_MIN_TIME), measured where the exact table
    # exists: at t = 0.01 its distance is the 0.0031 the docstring states, at t = 0.04
    # twice that (it grows like sqrt(t), so below 0.01 it is smaller).
    def distance(t, theta):
        lo, q = lineage_probabilities(t, theta)
        m = lo + np.arange(q.size)
        mean, var = griffiths_moments(t, theta)
        normal = stats.norm(mean - 1 / 6, math.sqrt(var))
        return 0.5 * np.sum(np.abs(normal.cdf(m + 0.5) - normal.cdf(m - 0.5) - q))

    for theta in (2, 5):
        assert distance(0.01, theta) < 0.0032
        assert 1.8 < distance(0.04, theta) / distance(0.01, theta) < 2.2


@pytest.mark.slow
def test_von_mises_fisher_shapes_and_gradient():
    mu = jnp.array([[0.0, 0.0, 1.0], [0.6, 0.8, 0.0]])
    x = spheresde.sample_von_mises_fisher(jr.key(0), mu, jnp.array([1.0, 50.0]), (7,))
    assert x.shape == (7, 2, 3)
    np.testing.assert_allclose(np.linalg.norm(x, axis=-1), 1.0, atol=1e-15)

    # Reparametrized in mu: the same key gives a smooth map mu -> x, whose derivative is
    # a finite difference of it.
    def f(mu):
        return jnp.sum(spheresde.sample_von_mises_fisher(jr.key(1), mu, 5.0, (4,))[..., 0])

    # mu must be a unit vector: a tangent step keeps mu0 +- 1e-6 step on it to 1e-13.
    mu0 = jnp.array([0.3, -0.2, 0.9]) / math.sqrt(0.94)
    step = spheresde.project_tangent(mu0, jnp.array([0.1, 0.4, -0.2]))
    fd = (f(mu0 + 1e-6 * step) - f(mu0 - 1e-6 * step)) / 2e-6
    np.testing.assert_allclose(jax.grad(f)(mu0) @ step, fd, rtol=1e-6)
    with pytest.raises(ValueError, match=r"shape \(\.\.\., d\) with d >= 2"):
        spheresde.sample_von_mises_fisher(jr.key(0), jnp.ones(1), 1.0)


@pytest.mark.slow
@pytest.mark.parametrize("d", [2, 3, 6])
def test_von_mises_fisher_mean_resultant_length(d):
    # 20,000 draws per kappa: the mean cosine is within 4 standard errors of
    # A_d(kappa) = I_{d/2}(kappa) / I_{d/2-1}(kappa), the tangent part of the mean within
    # 4 standard errors of 0; on S^2 the cosine's law (density e^{kappa w} on [-1, 1])
    # passes a Kolmogorov-Smirnov test.
    kappas = np.array([0.0, 1.0, 10.0, 300.0])
    mu = jnp.asarray(np.linalg.qr(np.random.default_rng(d).normal(size=(d, d)))[0][:4, :d])
    mu = jnp.broadcast_to(mu[:1], (4, d)) if d < 4 else mu
    x = np.asarray(spheresde.sample_von_mises_fisher(jr.key(d), mu, kappas, (PATHS,)))
    mu = np.asarray(mu)
    for j, kappa in enumerate(kappas):
        w = x[:, j] @ mu[j]
        exact = special.ive(d / 2, kappa) / special.ive(d / 2 - 1, kappa) if kappa else 0.0
        z = _z(w, exact)
        tangent = x[:, j] - w[:, None] * mu[j]
        z_tangent = np.mean(tangent, axis=0) / (np.std(tangent, axis=0) / math.sqrt(PATHS))
        print(f"d={d} kappa={kappa}: mean cosine {np.mean(w):.5f} exact {exact:.5f} z={z:.2f}, "
              f"tangent |z| <= {np.max(np.abs(z_tangent)):.2f}")
        assert abs(z) < 4
        assert np.all(np.abs(z_tangent) < 4)
        if d == 3:
            def cdf(c, kappa=kappa):
                return (np.exp(kappa * (c - 1)) - np.exp(-2 * kappa)) / (1 - np.exp(-2 * kappa)) \
                    if kappa else (c + 1) / 2
            assert stats.kstest(w, cdf).pvalue > 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("d", [3, 6])
def test_brownian_motion_moments(d):
    # 20,000 draws at each t, small (the normal approximation of the number of lineages
    # below 0.01; the exact table at and above) and large: E Y and E Y^2 within 4
    # standard errors of the closed forms of the module docstring.
    y0 = jnp.asarray(np.linalg.qr(np.random.default_rng(d).normal(size=(d, d)))[0][0])
    for t in SAMPLED_TIMES:
        y = np.asarray(spheresde.sample_brownian_motion(jr.key(int(1e4 * t)), y0, t, (PATHS,)))
        assert y.shape == (PATHS, d)
        np.testing.assert_allclose(np.linalg.norm(y, axis=-1), 1.0, atol=1e-15)
        c = y @ np.asarray(y0)
        z1 = _z(c, math.exp(-(d - 1) * t / 2))
        z2 = _z(c**2, 1 / d + (1 - 1 / d) * math.exp(-d * t))
        print(f"d={d} t={t}: E Y {np.mean(c):.6f} z={z1:.2f}, E Y^2 {np.mean(c**2):.6f} "
              f"z={z2:.2f}")
        assert abs(z1) < 4
        assert abs(z2) < 4


@pytest.mark.slow
def test_brownian_motion_cosine_law_is_the_heat_kernel_on_s2():
    # Kolmogorov-Smirnov against the CDF of the heat-kernel series (200 terms, converged
    # to 1e-15 at these t), 20,000 draws, at a time of each kind.
    y0 = jnp.array([0.0, 0.0, 1.0])
    for t in SAMPLED_TIMES:
        c = np.asarray(spheresde.sample_brownian_motion(jr.key(5), y0, t, (PATHS,)))[:, 2]
        result = stats.kstest(c, lambda x, t=t: _heat_kernel_cdf_s2(x, t))
        print(f"t={t}: KS statistic {result.statistic:.4f}, p={result.pvalue:.3f}")
        assert result.pvalue > 1e-3


@pytest.mark.slow
def test_solver_law_at_time_t_matches_the_exact_sampler():
    # A reference for the solvers: GeodesicMidpoint on Brownian motion on S^2 (dt = 0.01,
    # bias O(dt)) and 4,000 exact draws, two-sample Kolmogorov-Smirnov on the cosine.
    y0 = jnp.array([1.0, 0.0, 0.0])
    sde = brownian_motion_sde(3, "stratonovich")
    sol = spheresde.solve_batch(sde, jnp.broadcast_to(y0, (4000, 3)), 0.0, 0.5, 0.01,
                                key=jr.key(6))
    solved = np.asarray(sol.ys[:, -1] @ y0)
    exact = np.asarray(spheresde.sample_brownian_motion(jr.key(7), y0, 0.5, (4000,)) @ y0)
    assert stats.ks_2samp(solved, exact).pvalue > 1e-3


def test_brownian_motion_refuses_bad_times():
    with pytest.raises(ValueError, match="positive finite time"):
        spheresde.sample_brownian_motion(jr.key(0), jnp.array([1.0, 0.0, 0.0]), 0.0)
    with pytest.raises(TypeError, match="concrete scalar"):
        jax.jit(lambda t: spheresde.sample_brownian_motion(jr.key(0), jnp.array([1.0, 0, 0]),
                                                           t))(0.5)
    with pytest.raises(ValueError, match=r"y0 must hold unit vectors .* \|y0\| = 1\.73205"):
        spheresde.sample_brownian_motion(jr.key(0), jnp.ones(3), 0.5)


# --------------------------------------------------------------- von Mises-Fisher vs SciPy

VMF_DRAWS = 20_000


def _mean_cosine(d, kappa):
    r""":math:`E\langle x, \mu\rangle = A_d(\kappa) = I_{d/2}(\kappa)/I_{d/2-1}(\kappa)`."""
    return special.ive(d / 2, kappa) / special.ive(d / 2 - 1, kappa)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
@pytest.mark.parametrize("d", [3, 7, 20])
def test_von_mises_fisher_law_matches_scipy_and_bessel_ratios(d, dtype):
    # 20,000 draws per (d, kappa, dtype), the nine cells of the benchmark: the cosine
    # w = <x, mu> against 20,000 draws of scipy.stats.vonmises_fisher (two-sample
    # Kolmogorov-Smirnov, p > 1e-3: it sees a change of the CDF of 0.02), and its mean
    # within 4 standard errors of A_d(kappa). One call with a kappa per row (the
    # per-draw kappa of the rejection queue), one with a scalar kappa.
    kappas = np.array([0.5, 5.0, 50.0])
    mu = np.zeros((3, d))
    mu[0, 0], mu[1, 1], mu[2, -1] = 1.0, -1.0, 1.0
    rows = np.asarray(spheresde.sample_von_mises_fisher(
        jr.key(d), jnp.asarray(mu, dtype), jnp.asarray(kappas, dtype), (VMF_DRAWS,)))
    scalar = np.asarray(spheresde.sample_von_mises_fisher(
        jr.key(d + 1), jnp.asarray(mu[2], dtype), 50.0, (VMF_DRAWS,)))
    assert rows.dtype == scalar.dtype == dtype
    atol = 10 * np.finfo(dtype).eps
    np.testing.assert_allclose(np.linalg.norm(rows, axis=-1), 1.0, atol=atol)
    for j, kappa, x in [(0, 0.5, rows[:, 0]), (1, 5.0, rows[:, 1]), (2, 50.0, rows[:, 2]),
                        (2, 50.0, scalar)]:
        w = x.astype(np.float64) @ mu[j]
        theirs = stats.vonmises_fisher(mu[j], kappa).rvs(VMF_DRAWS, random_state=d) @ mu[j]
        ks = stats.ks_2samp(w, theirs)
        z = _z(w, _mean_cosine(d, kappa))
        print(f"d={d} kappa={kappa} {jnp.dtype(dtype).name}: KS {ks.statistic:.4f} "
              f"p={ks.pvalue:.3f}, mean cosine z={z:.2f}")
        assert ks.pvalue > 1e-3
        assert abs(z) < 4


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_uniforms_split_into_independent_halves(dtype):
    # The samplers' uniforms (_uniforms): 1 full and 3 coarse per element, 2^18 elements;
    # in float64 the coarse ones are the two 32-bit halves of 64-bit words (coarse 0 and
    # 2 share a word). Each is uniform (Kolmogorov-Smirnov, p > 1e-3: it sees a change of
    # the CDF of 0.004), of its resolution (coarse: multiples of 2^-32, all 32 bits used:
    # its low 8 bits uniform over 256 cells; full: 52 bits, a multiple of 2^-32 with
    # chance 2^-20), and the pairs sharing a word, or not, are independent (chi-square
    # on 16 x 16 cells, 1,024 expected per cell, p > 1e-3): a wrong split or shift fails.
    from spheresde._samplers import _uniforms

    size = 2**18
    full, coarse = _uniforms(jr.key(4), 1, 3, (size,), dtype)
    assert full.shape == (1, size)
    assert coarse.shape == (3, size)
    assert full.dtype == coarse.dtype == dtype
    u = np.concatenate([np.asarray(full), np.asarray(coarse)]).astype(np.float64)
    assert np.all((u >= 0) & (u < 1))
    for row in u:
        assert stats.kstest(row, "uniform").pvalue > 1e-3
    bits = min(np.finfo(dtype).nmant, 32)  # float32: 23 bits, as jax.random.uniform
    cells = u[1:] * 2.0**bits
    np.testing.assert_array_equal(cells, np.floor(cells))
    low = np.mod(cells, 256).astype(int).ravel()
    assert stats.chisquare(np.bincount(low, minlength=256)).pvalue > 1e-3
    if dtype == jnp.float64:
        assert np.sum(u[0] * 2.0**32 == np.floor(u[0] * 2.0**32)) <= 4
    for a, b in [(1, 3), (1, 2), (0, 1)]:
        table = np.histogram2d(u[a], u[b], bins=16, range=[[0, 1], [0, 1]])[0]
        assert stats.chisquare(table.ravel()).pvalue > 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
@pytest.mark.parametrize("d", [3, 7, 20])
def test_von_mises_fisher_tangent_direction_is_uniform(d, dtype):
    # v = (x - w mu)/|x - w mu| is uniform on the unit sphere S^(d-2) of the tangent
    # space at mu, so for a unit tangent vector a, (1 + <v, a>)/2 ~ Beta((d-2)/2, (d-2)/2).
    # 20,000 draws, Kolmogorov-Smirnov p > 1e-3 (it sees a change of the CDF of 0.015),
    # along a coordinate axis and along a direction mixing every coordinate (the pairs of
    # Box-Muller normals, the odd one out), with mu off the axes.
    mu = np.arange(1.0, d + 1) / np.linalg.norm(np.arange(1.0, d + 1))
    x = np.asarray(spheresde.sample_von_mises_fisher(
        jr.key(10 + d), jnp.asarray(mu, dtype), 5.0, (VMF_DRAWS,))).astype(np.float64)
    tangent = x - (x @ mu)[:, None] * mu
    v = tangent / np.linalg.norm(tangent, axis=-1, keepdims=True)
    beta = stats.beta((d - 2) / 2, (d - 2) / 2)
    for a in (np.eye(d)[0], (-1.0) ** np.arange(d)):
        a = a - (a @ mu) * mu
        a /= np.linalg.norm(a)
        ks = stats.kstest((1 + v @ a) / 2, beta.cdf)
        print(f"d={d} {jnp.dtype(dtype).name}: KS {ks.statistic:.4f} p={ks.pvalue:.3f}")
        assert ks.pvalue > 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
@pytest.mark.parametrize("d", [2, 3, 7])
def test_von_mises_fisher_is_accurate_at_large_kappa(d, dtype):
    # kappa = 1e6: 1 - w is about (d-1)/(2 kappa), below float32's resolution of w near 1
    # for d = 2; read from the tangent part, 1 - w = |x - w mu|^2/(1 + w), its mean is
    # within 4 standard errors (20,000 draws) of 1 - A_d(kappa), where a cancelling
    # form of Wood's b or of the acceptance test would be off by orders of magnitude.
    kappa = 1e6
    mu = np.zeros(d)
    mu[0] = 1.0
    x = np.asarray(spheresde.sample_von_mises_fisher(jr.key(3), jnp.asarray(mu, dtype), kappa,
                                                     (VMF_DRAWS,))).astype(np.float64)
    tangent_sq = np.sum(x[:, 1:] ** 2, axis=-1)
    one_minus_w = tangent_sq / (1 + x[:, 0])
    exact = 1 - _mean_cosine(d, kappa)
    z = _z(one_minus_w, exact)
    print(f"d={d} {jnp.dtype(dtype).name}: E[1 - w] = {np.mean(one_minus_w):.4e}, "
          f"exact {exact:.4e}, z={z:.2f}")
    assert abs(z) < 4


def _finishes(f, *args, timeout=120):
    """``f(*args)`` computed in a daemon thread: a loop that never ends fails the test
    instead of hanging it (and the daemon thread does not hold up the exit)."""
    out = []
    thread = threading.Thread(target=lambda: out.append(jax.block_until_ready(f(*args))),
                              daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f"no result after {timeout} s: a loop that does not end"
    assert out, "the computation raised (see the thread's traceback above)"
    return np.asarray(out[0])


@pytest.mark.parametrize("d", [3, pytest.param(7, marks=pytest.mark.slow)])
def test_von_mises_fisher_edge_concentrations(d):
    # One compilation per d: the public call and the jitted core share shapes.
    import spheresde._samplers as samplers

    mu = jnp.zeros(d).at[0].set(1.0)
    rows = jnp.broadcast_to(mu, (4, d))
    sample = spheresde.sample_von_mises_fisher
    # Rows of kappa 0 (uniform: 1,000 draws, the mean cosine within 4 standard errors,
    # 4/sqrt(1000 d), of 0), 1, inf (the point mass at mu, exactly) and 1e30: finite
    # unit vectors, and no hang.
    x = _finishes(sample, jr.key(0), rows, jnp.array([0.0, 1.0, jnp.inf, 1e30]), (1000,))
    np.testing.assert_allclose(np.linalg.norm(x, axis=-1), 1.0, atol=1e-12)
    assert abs(np.mean(x[:, 0, 0])) < 4 / math.sqrt(1000 * d)
    np.testing.assert_array_equal(x[:, 2], np.broadcast_to(np.asarray(mu), (1000, d)))
    # NaN or negative: a clear error when concrete; where unchecked (under jit, here
    # the jitted core), NaN draws, the other rows unharmed, and no hang.
    for bad in (np.nan, -1.0):
        with pytest.raises(ValueError, match="kappa must be >= 0"):
            sample(jr.key(3), mu, bad, (5,))
    x = _finishes(samplers._von_mises_fisher, jr.key(1), rows,
                  jnp.array([np.nan, -1.0, 2.0, jnp.inf]), (1000,))
    assert np.all(np.isnan(x[:, :2]))
    assert np.all(np.isfinite(x[:, 2:]))
    if d == 7:  # the public function under jit
        x = _finishes(jax.jit(lambda k: sample(jr.key(3), mu, k, (5,))), np.nan)
        assert np.all(np.isnan(x))


def test_von_mises_fisher_refuses_bad_directions():
    sample = spheresde.sample_von_mises_fisher
    with pytest.raises(ValueError, match=r"mu must hold unit vectors .*\|mu\| = 2 at index"):
        sample(jr.key(0), jnp.array([0.0, 0.0, 2.0]), 1.0)
    with pytest.raises(ValueError, match="NaN or infinite"):
        sample(jr.key(0), jnp.array([0.0, jnp.nan, 1.0]), 1.0)
    with pytest.raises(ValueError, match=r"shape \(\.\.\., d\) with d >= 2"):
        sample(jr.key(0), jnp.ones(1), 1.0)
    with pytest.raises(ValueError, match=r"kappa of shape \(3,\) does not broadcast"):
        sample(jr.key(0), jnp.array([[1.0, 0.0], [0.0, 1.0]]), jnp.ones(3), (4,))


@pytest.mark.slow
def test_von_mises_fisher_rejection_cap_gives_nan_not_a_hang(monkeypatch):
    # The rejection loop's cap (the one while_loop of the package; docs/contributing.rst,
    # "loops that must end"), forced to 0 rounds after the first: the draws the first
    # round rejected (a third of them at kappa = 50) come back NaN, the rest are finite.
    import spheresde._samplers as samplers

    monkeypatch.setattr(samplers, "vmf_max_rounds", lambda n, chunk: 0)
    mu = jnp.zeros(7).at[0].set(1.0)
    x = _finishes(samplers._von_mises_fisher, jr.key(0), mu, jnp.asarray(50.0), (3001,))
    nan = np.isnan(x[:, 0])
    assert 0.2 < np.mean(nan) < 0.45
    assert np.all(np.isfinite(x[~nan]))
