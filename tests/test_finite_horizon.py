"""two_token.outcome_probabilities: the law of the outcomes at a finite horizon.

References that do not come from the code under test: the exact law of rho_0 at T = 0
(regularized incomplete beta function), the d = 2 exit probability arccos(rho_0) / pi in
closed form, the scale-function quadrature antipodal_probability for T -> infinity, a
finer grid, and a Monte Carlo of the rho-SDE with stated error bars.
"""

import jax
import numpy as np
import pytest
from scipy import special

from spheresde import two_token
from spheresde.transformer.two_token import _finite_horizon as fh


def _all(p):
    return np.array([p.antipodal, p.single, p.undecided], dtype=float)


def test_horizon_zero_is_the_law_of_the_uniform_start():
    # rho_0 = 2B - 1, B ~ Beta((d-1)/2, (d-1)/2): P(rho_0 < -(1 - tol)) = I_{tol/2}(a, a)
    d = np.array([2, 3, 4, 7, 10])
    a, tol = (d - 1) / 2, 0.05
    p = two_token.outcome_probabilities(1.3, d, horizon=0.0, tol=tol)
    tail = special.betainc(a, a, tol / 2)
    np.testing.assert_allclose(_all(p), [tail, tail, 1 - 2 * tail], atol=1e-13)


def test_large_horizon_reproduces_the_scale_function():
    # away from beta_c the undecided mass is gone by T = 3000; the quadrature is exact to 1e-10
    beta = np.array([2.0, 2.0, 3.0, 1.0])
    d = np.array([4, 6, 9, 3])
    p, error = two_token.outcome_probabilities(beta, d, horizon=3000.0, return_error=True)
    limit = two_token.antipodal_probability(beta, d)
    np.testing.assert_allclose(p.antipodal, limit, atol=1e-5)
    assert np.all(p.undecided < 1e-8)
    assert np.all(error < 1e-4)
    hybrid = two_token.outcome_probabilities(3.0, 4, horizon=3000.0, mu=1.0, eps=0.7, rho0=0.2)
    assert float(hybrid.antipodal) == pytest.approx(
        float(two_token.antipodal_probability(3.0, 4, mu=1.0, eps=0.7, rho0=0.2)), abs=1e-5)


def test_infinite_horizon_is_the_scale_function_and_nothing_is_undecided():
    p = two_token.outcome_probabilities([1.0, 2.0], 5, horizon=np.inf, sigma=0.7)
    limit = two_token.antipodal_probability([1.0, 2.0], 5, sigma=0.7)
    np.testing.assert_allclose(p.antipodal, limit, rtol=1e-14)
    np.testing.assert_array_equal(p.undecided, 0.0)
    np.testing.assert_allclose(_all(p).sum(axis=0), 1.0, atol=1e-15)


def test_d2_exit_probability_closed_form():
    # d = 2, pure noise: scale density (1 - rho^2)^(-1/2), so P(rho -> -1) = arccos(rho_0)/pi
    # for every beta; T = 400 is long enough (both ends attract at rate >= 1)
    rho0 = np.array([-0.6, 0.3, 0.9])
    p = two_token.outcome_probabilities(np.array([[0.5], [2.5]]), 2, horizon=400.0, rho0=rho0)
    np.testing.assert_allclose(p.antipodal, np.broadcast_to(np.arccos(rho0) / np.pi, (2, 3)),
                               atol=1e-5)
    np.testing.assert_allclose(p.undecided, 0.0, atol=1e-9)


def test_equilibria_stay_put():
    p = two_token.outcome_probabilities(1.0, 4, horizon=10.0, rho0=[-1.0, 1.0])
    np.testing.assert_array_equal(_all(p), [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])


def test_scheme_conserves_mass_and_the_dense_propagator_agrees():
    # rows of A = W^{-1} F sum to 0, i.e. S W^{1/2} 1 = 0 for S = W^{-1/2} F W^{-1/2}
    args = (1.1, 6, 1.0, 0.0)
    faces = fh._grid(np.arctanh(0.99), 12, 30.0, 8.0)
    diagonal, off, log_resistance, log_weight, centres = fh._operator(faces, fh.rc(), args)
    root = np.exp((log_weight - log_weight.max()) / 2)
    s_root = diagonal * root
    s_root[:-1] += off * root[1:]
    s_root[1:] += off * root[:-1]
    assert np.max(np.abs(s_root)) < 1e-12 * np.max(np.abs(diagonal * root))
    # each outcome on its own through expm(T A): they sum to 1 (mass is conserved)
    start = fh._start_weights(faces, centres, 6, None)
    z_star = np.arctanh(0.99)
    outcomes = (centres < -z_star, np.abs(centres) <= z_star, centres > z_star)
    dense = fh._dense_propagator(log_resistance, log_weight, start, 20.0, outcomes)
    assert dense.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(dense > 0)


def test_inputs_are_checked():
    with pytest.raises(ValueError, match="tol must be in"):
        two_token.outcome_probabilities(1.0, 4, horizon=1.0, tol=1.0)
    with pytest.raises(ValueError, match="horizon must be >= 0"):
        two_token.outcome_probabilities(1.0, 4, horizon=-1.0)
    with pytest.raises(ValueError, match="rho0 must lie in"):
        two_token.outcome_probabilities(1.0, 4, horizon=1.0, rho0=1.5)
    with pytest.raises(ValueError, match="d must be >= 2"):
        two_token.outcome_probabilities(1.0, 1, horizon=1.0)
    with pytest.raises(ValueError, match="noise scale must be positive"):
        two_token.outcome_probabilities(1.0, 4, horizon=1.0, eps=0.0)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("beta", "d", "horizon", "extra"),
    [(1.0, 6, 500.0, {}), (0.3, 4, 5.0, {}), (3.75, 10, 5.0, {}),
     (1.0, 5, 20.0, {"rho0": -0.9})],
)
def test_grid_refinement_shows_the_stated_accuracy(monkeypatch, beta, d, horizon, extra):
    p, error = two_token.outcome_probabilities(beta, d, horizon=horizon, return_error=True,
                                               **extra)
    monkeypatch.setattr(fh, "CELLS", 4 * fh.CELLS)  # 4x finer, Richardson again
    monkeypatch.setattr(fh, "REFINE", np.inf)
    fine = two_token.outcome_probabilities(beta, d, horizon=horizon, **extra)
    gap = np.max(np.abs(_all(p) - _all(fine)))
    assert gap < 1e-5
    assert gap < float(error)  # the reported estimate is a bound


@pytest.mark.slow
def test_small_eps_hybrid_leaves_the_eigenbasis_for_the_dense_propagator(monkeypatch):
    # eps = 0.2: psi' reaches 55 between the thresholds, its range exceeds the float range
    args = {"mu": 1.0, "eps": 0.2, "horizon": 100.0}
    p = two_token.outcome_probabilities(4.0, 6, **args)
    assert 0.0 < float(p.undecided) < 0.05
    assert float(p.antipodal) == pytest.approx(0.16677, abs=1e-4)  # a finer grid: 0.166768
    monkeypatch.setattr(fh, "ROUNDING", np.inf)  # the eigenbasis regardless: garbage
    forced = fh._solve(4.0, 6, 0.2, 1.0, 0.01, 100.0, None, fh.CELLS)
    assert abs(forced[2] - float(p.undecided)) > 1e-3


@pytest.mark.slow
@pytest.mark.parametrize(
    ("beta", "d", "horizon", "rho0"),
    [(1.0, 6, 5.0, None), (1.0, 5, 1.0, -0.9)],
)
def test_small_horizons_match_monte_carlo(beta, d, horizon, rho0):
    """Every outcome within 4 binomial standard errors (N = 20,000: s.e. <= 0.0036) of the
    Monte Carlo of the rho-SDE (Euler in z, Gaussian steps dt = 1/200)."""
    n = 20_000
    rho = two_token.simulate_rho(jax.random.PRNGKey(13), beta, d, trajectories=n,
                                 dt=1 / 200, horizon=horizon, rho0=rho0,
                                 increments="gaussian")
    mc = two_token.rho_fractions(rho, 0.01)
    exact = two_token.outcome_probabilities(beta, d, horizon=horizon, rho0=rho0)
    for name in ("antipodal", "single", "undecided"):
        p = float(getattr(exact, name))
        se = max(np.sqrt(p * (1 - p) / n), 1 / n)
        assert abs(float(getattr(mc, name)) - p) < 4 * se, (name, float(getattr(mc, name)), p)


def test_layers_inputs_are_checked():
    with pytest.raises(ValueError, match="layers must be a positive integer"):
        two_token.outcome_probabilities(1.0, 4, horizon=1.0, layers=0)
    with pytest.raises(ValueError, match="layers must be a positive integer"):
        two_token.outcome_probabilities(1.0, 4, horizon=1.0, layers=-3)
    with pytest.raises(ValueError, match="chain must be one of"):
        two_token.outcome_probabilities(1.0, 4, horizon=1.0, layers=5, chain="particles")
    with pytest.raises(ValueError, match="needs a finite horizon"):
        two_token.outcome_probabilities(1.0, 4, horizon=np.inf, layers=5)
    with pytest.raises(ValueError, match="pure noise"):
        two_token.outcome_probabilities(1.0, 4, horizon=1.0, layers=5, mu=1.0, eps=0.5)


@pytest.mark.slow
def test_the_network_follows_its_own_law_not_its_limit():
    """The network at L = 20, T = 10, d = 4, beta = 1: N = 200,000 runs (fixed key,
    certified absorption at 1e-6), s.e. about 0.0007. The limit's P = 0.1229 and the
    first-order law P + C/L = 0.1152 (C = -0.155) are 11 s.e. apart: the Monte Carlo must
    lie within 4 s.e. of P + C/L and more than 8 s.e. below P. (The benchmark
    ``bench_finite_depth.py`` measured 0.1146 +- 0.0002 with 2,000,000 runs: the remainder,
    -0.0006, is 0.8 s.e. of this test.)"""
    from spheresde.transformer import PureNoise
    from spheresde.transformer._absorption import absorbing_network
    from spheresde.transformer._network import network_depth

    n = 200_000
    codes, _ = absorbing_network(jax.random.key(24), beta=1.0, d=4, weights=PureNoise(),
                                 trajectories=n, layers=20, steps=network_depth(10.0, 20),
                                 tol=0.01,
                                 bound=1e-6)
    mc = float(np.mean(codes == 1))
    limit = float(two_token.outcome_probabilities(1.0, 4, horizon=10.0).antipodal)
    own = float(two_token.outcome_probabilities(1.0, 4, horizon=10.0, layers=20).antipodal)
    se = np.sqrt(mc * (1 - mc) / n)
    assert limit - own > 10 * se  # the test can tell the two laws apart
    assert abs(mc - own) < 4 * se, (mc, own, se)
    assert limit - mc > 8 * se, (mc, limit, se)


@pytest.mark.slow
def test_finite_depth_correction_is_grid_converged():
    # C on three nested grids: the differences shrink like h^2 (ratio about 4)
    values = [fh._solve(1.0, 4, 1.0, 0.0, 0.01, 10.0, None, cells, "network")[1, 0]
              for cells in (12, 24, 48)]
    ratio = (values[0] - values[1]) / (values[1] - values[2])
    assert 3.0 < ratio < 5.5, values
    assert values[2] < -0.1  # the network ends antipodal less often than its limit


# --- the exact law of the network at a finite depth (law="exact") -----------------------


def _network_mc(rho0, beta, d, layers, steps, n, seed, chunk=100_000):
    """``steps`` layers of the two-token network with the full d x d matrix V (float64, no
    rotation reduction): the final inner products of n independent runs from rho0."""
    rng = np.random.default_rng(seed)
    out = []
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        x = np.zeros((m, 2, d))
        x[:, 0, 0], x[:, 1, 0], x[:, 1, 1] = 1.0, rho0, np.sqrt(1 - rho0**2)
        for _ in range(steps):
            logits = beta * np.einsum("nid,njd->nij", x, x)
            w = np.exp(logits - logits.max(axis=-1, keepdims=True))
            a = np.einsum("nij,njd->nid", w / w.sum(axis=-1, keepdims=True), x)
            v = rng.standard_normal((m, d, d))
            y = x + np.einsum("nij,nkj->nki", v, a) / np.sqrt(layers)
            x = y / np.linalg.norm(y, axis=-1, keepdims=True)
        out.append(np.einsum("nd,nd->n", x[:, 0], x[:, 1]))
    return np.concatenate(out)


@pytest.mark.slow
@pytest.mark.parametrize(("rho0", "d", "layers", "steps", "tol"),
                         [(-0.9, 4, 5, 1, 0.05), (0.3, 7, 5, 1, 0.5), (0.9, 10, 20, 4, 0.02)])
def test_exact_law_matches_the_full_matrix_network(rho0, d, layers, steps, tol):
    """A few layers (T = steps/L) from rho0: the exact law's three outcome masses against
    1,000,000 runs of the network with a full Gaussian V (no rotation reduction, float64),
    4 standard errors (at most 0.002). (One layer at L = 20 is narrower than the grid
    resolves from a point start, hence four layers there.)"""
    beta, n = 1.5, 1_000_000
    rho = _network_mc(rho0, beta, d, layers, steps, n, seed=layers * d)
    mc = np.array([np.mean(rho < -(1 - tol)), np.mean(rho > 1 - tol)])
    mc = np.append(mc, 1 - mc.sum())
    p = two_token.outcome_probabilities(beta, d, horizon=steps / layers, tol=tol, rho0=rho0,
                                        layers=layers, law="exact")
    exact = _all(p)
    se = np.sqrt(np.maximum(mc * (1 - mc), 1 / n) / n)
    assert np.all(np.abs(exact - mc) < 4 * se), (exact, mc, se)


@pytest.mark.slow
def test_exact_law_matches_the_network_where_the_first_order_law_is_clipped():
    """d = 9, beta = 1.5, L = 10, T = 50: P + C/L is clipped to 0 (the next test), the
    network (40,000 runs, pair coordinates, certified absorption at 1e-6, s.e. about
    0.0005) ends antipodal about 1% of the time (more than 10 s.e. above 0): the exact law
    within 4 s.e. of it."""
    from spheresde.transformer import PureNoise
    from spheresde.transformer._absorption import absorbing_network
    from spheresde.transformer._network import network_depth

    n = 40_000
    codes, _ = absorbing_network(jax.random.key(9), beta=1.5, d=9, weights=PureNoise(),
                                 trajectories=n, layers=10, steps=network_depth(50.0, 10),
                                 tol=0.01,
                                 bound=1e-6)
    mc = float(np.mean(codes == 1))
    se = np.sqrt(mc * (1 - mc) / n)
    exact = float(two_token.outcome_probabilities(1.5, 9, horizon=50.0, layers=10,
                                                  law="exact").antipodal)
    assert abs(exact - mc) < 4 * se, (exact, mc, se)
    assert mc > 10 * se, (mc, se)


@pytest.mark.slow
def test_exact_law_tends_to_the_first_order_law_at_large_depth():
    """d = 4, beta = 1, T = 10, L = 160: C/L is about -1e-3; the exact law is within a
    tenth of C/L of P + C/L (the remainder is O(1/L^2)) and more than half of C/L from P."""
    layers = 160
    p = float(two_token.outcome_probabilities(1.0, 4, horizon=10.0).antipodal)
    first = float(two_token.outcome_probabilities(1.0, 4, horizon=10.0,
                                                  layers=layers).antipodal)
    exact = float(two_token.outcome_probabilities(1.0, 4, horizon=10.0, layers=layers,
                                                  law="exact").antipodal)
    correction = first - p
    assert abs(correction) > 5e-4
    assert abs(exact - first) < 0.1 * abs(correction), (exact, first, p)
    assert abs(exact - p) > 0.5 * abs(correction), (exact, first, p)


@pytest.mark.slow
def test_exact_law_is_a_probability_law():
    # a short horizon, small d and L: the coarsest kernel; masses in [0, 1] summing to 1
    p = two_token.outcome_probabilities([0.5, 3.0], 3, horizon=1.0, tol=0.1, layers=4,
                                        law="exact")
    values = _all(p)
    assert np.all((values >= 0) & (values <= 1))
    np.testing.assert_allclose(values.sum(axis=0), 1.0, atol=1e-12)


def test_law_inputs_are_checked():
    with pytest.raises(ValueError, match="law must be one of"):
        two_token.outcome_probabilities(1.0, 4, horizon=1.0, layers=5, law="second-order")
    with pytest.raises(ValueError, match="chain must be one of"):
        two_token.outcome_probabilities(1.0, 4, horizon=1.0, layers=5, chain="euler",
                                        law="exact")


# --- the exact law of the reduced Euler chain (chain="reduced", law="exact") -------------

#: (d, beta): near beta_c(d) (0.66, 1.15) and far beyond it.
REDUCED_POINTS = ((4, 1.0), (7, 1.2), (4, 3.0), (7, 3.0))


@pytest.mark.slow
@pytest.mark.parametrize("layers", [5, 10, 20])
def test_reduced_exact_law_matches_the_reduced_monte_carlo(layers):
    """T = 10, tol = 0.01: the reduced chain's own simulator (simulate_rho, step 1/L,
    two-point increments, float64), 250,000 trajectories a point (s.e. at most 0.0009):
    all three outcome masses of the exact law within 4 standard errors. The test sees the
    chain's offset from its limit: at L = 5, d = 7, beta = 3 the limit law is about 15
    s.e. away (asserted)."""
    import jax.numpy as jnp

    n, horizon, tol = 250_000, 10.0, 0.01
    d = np.array([p[0] for p in REDUCED_POINTS], float)
    beta = np.array([p[1] for p in REDUCED_POINTS])
    rho = two_token.simulate_rho(jax.random.key(30 + layers), beta, d, trajectories=n,
                                 dt=1.0 / layers, horizon=horizon, dtype=jnp.float64)
    mc = _all(two_token.rho_fractions(rho, tol))
    se = np.sqrt(np.maximum(mc * (1 - mc), 1 / n) / n)
    exact = _all(two_token.outcome_probabilities(beta, d, horizon=horizon, tol=tol,
                                                 layers=layers, chain="reduced", law="exact"))
    assert np.all(np.abs(exact - mc) < 4 * se), (exact, mc, se)
    if layers == 5:
        limit = float(two_token.outcome_probabilities(3.0, 7, horizon=horizon,
                                                      tol=tol).antipodal)
        assert abs(limit - mc[0, 3]) > 8 * se[0, 3], (limit, mc, se)


@pytest.mark.slow
def test_reduced_exact_law_tends_to_its_first_order_law():
    """d = 7, beta = 3, T = 10 (C = 0.080, the reduced chain's own first-order constant):
    L (P_L - P) of the exact law tends to C, its gap to C shrinking like 1/L (by more than
    2 from L = 20 to 80; measured 4.1e-3 and 1.3e-3)."""
    import warnings

    beta, d, horizon = 3.0, 7, 10.0
    p = float(two_token.outcome_probabilities(beta, d, horizon=horizon).antipodal)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", two_token.FirstOrderWarning)
        first = float(two_token.outcome_probabilities(beta, d, horizon=horizon, layers=20,
                                                      chain="reduced").antipodal)
    c = 20 * (first - p)  # P + C/L: C does not depend on L
    gaps = []
    for layers in (20, 80):
        exact = float(two_token.outcome_probabilities(beta, d, horizon=horizon, layers=layers,
                                                      chain="reduced", law="exact").antipodal)
        gaps.append(layers * (exact - p) - c)
    assert c > 0.05, c
    assert abs(gaps[1]) < 0.5 * abs(gaps[0]), (gaps, c)
    assert abs(gaps[1]) < 0.025 * c, (gaps, c)
    assert abs(gaps[0]) > 0.02 * c, (gaps, c)  # the O(1/L^2) remainder is seen


@pytest.mark.slow
def test_first_order_law_warns_where_its_correction_is_not_small():
    # d = 9, beta = 1.5, L = 10, T = 50: C/L = -0.027 against P = 0.025 (clipped to 0)
    with pytest.warns(two_token.FirstOrderWarning, match="clipped.*law='exact'"):
        p = two_token.outcome_probabilities(1.5, 9, horizon=50.0, layers=10)
    assert float(p.antipodal) == 0.0


@pytest.mark.slow
def test_first_order_law_is_quiet_where_its_correction_is_small():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", two_token.FirstOrderWarning)
        two_token.outcome_probabilities(1.0, 4, horizon=2.0, layers=200)
