"""float32 against float64 for every Monte Carlo path the sweeps use.

Near-critical antipodal pairs sit at :math:`1 + \\rho` far below the float32 rounding
unit for most of a long horizon; a path that computes :math:`1 + \\rho` (or the noise
that moves it) by cancellation lets them escape, and its antipodal fraction comes out
low in float32 only. Each test runs one path in both precisions from independent seeds
and compares the antipodal fractions.

Sizes (binomial standard errors): two tokens, d = 3, beta = 0.8 (p ~ 0.18), L = 5,
T = 50 (250 layers or steps). The difference of two independent fractions of N
trajectories has standard error sqrt(2 p (1 - p) / N): at N = 40,000 that is 0.0027, and a
5% relative bias (0.009) is 3.3 standard errors; the tests allow 3. The reduced SDE is
cheap: N = 100,000 (a 5% bias is 5 standard errors). LayerNorm runs at d = 4 (its tokens
live on the sphere of dimension 2, the RMS law at d = 3). Slow: 20-40 s per path on one
core, about 3.5 min for the file.

What these sizes cannot do: nearer the critical point (d = 4, beta = 0.8, where the old
span noise was 11-15% low) p is 0.02-0.05, and a 5% bias there needs ~500,000
trajectories per precision, beyond a unit test's budget on CPU
(tests/benchmarks/bench_precision.py runs that case). At d = 3 the old span noise was
only ~2% low (not seen at this size); what the old code failed here is the histogram.

The histogram checks: in float32 the antipodal trajectories' log10(1 + rho) must reach
below -12 (the dynamics go far lower: the reduced SDE and the pair coordinates reach
-20 and beyond); the old span noise piled them up at -7 to -9 (median), failing the
n = 2 span and LayerNorm token paths and the n = 3 network.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from spheresde.experiments._simulate import _final_tokens, simulate_counts
from spheresde.transformer import PureNoise, simulate_network
from spheresde.transformer._absorption import absorbing_network, absorbing_rho
from spheresde.transformer._network import network_depth
from spheresde.transformer._outcomes import ANTIPODAL

pytestmark = pytest.mark.slow

BETA, LAYERS, HORIZON, TOL = 0.8, 5, 50.0, 1e-2
DTYPES = (jnp.float32, jnp.float64)


def _close(p32: float, p64: float, n32: int, n64: int, k: float = 3.0) -> None:
    p = (p32 * n32 + p64 * n64) / (n32 + n64)
    se = np.sqrt(p * (1 - p) * (1 / n32 + 1 / n64))
    assert abs(p32 - p64) < k * se, (p32, p64, se)


def _antipodal_gaps(tokens) -> tuple[float, np.ndarray]:
    """The antipodal fraction of two-token final states and their log10(1 + rho), from
    X_1 + X_2 (in float64 after the run: the tokens' own precision, no cancellation)."""
    x = np.asarray(tokens, float)
    rho = np.sum(x[:, 0] * x[:, 1], axis=-1)
    s = x[:, 0] + x[:, 1]
    plus = np.sum(s * s, axis=-1) / 2
    antipodal = rho < -(1 - TOL)
    return float(np.mean(antipodal)), np.log10(np.maximum(plus[antipodal], 1e-300))


def _token_path(kind: str, dtype, n: int, d: int, norm: str = "rms"):
    key = jax.random.PRNGKey(7 if dtype == jnp.float32 else 8)
    if kind == "full":
        from spheresde import sample_uniform

        start, path = jax.random.split(key)
        x0 = sample_uniform(start, (N_TOKEN_PATHS, n), d, dtype)
        return simulate_network(path, x0, BETA, PureNoise(), layers=LAYERS, horizon=HORIZON,
                                trajectories=N_TOKEN_PATHS, noise="full", norm=norm).tokens
    return _final_tokens(kind, key, tokens=n, beta=BETA, d=d, weights=PureNoise(),
                         trajectories=N_TOKEN_PATHS, layers=LAYERS,
                         steps=network_depth(HORIZON, LAYERS),
                         norm=norm, dtype=dtype)


N_TOKEN_PATHS = 40_000


@pytest.mark.parametrize(("kind", "norm", "d"), [
    ("discrete", "rms", 3),  # span noise, n = 2 (the closed form that failed)
    ("full", "rms", 3),  # d x d noise
    ("particles", "rms", 3),  # the Ito SDE with span noise
    ("discrete", "layer", 4),  # the LayerNorm token network, span noise
])
def test_token_paths_agree_in_float32_and_float64(kind, norm, d):
    runs = [_antipodal_gaps(_token_path(kind, dtype, 2, d, norm)) for dtype in DTYPES]
    (p32, gaps32), (p64, _) = runs
    _close(p32, p64, N_TOKEN_PATHS, N_TOKEN_PATHS)
    # where the dynamics go (the float64 run's antipodal states are far below), float32
    # tokens must follow below 1e-12: the 10th percentile of the antipodal states (~700
    # of them) is a robust summary (the old span noise: -8.6, its minimum -11.8)
    assert np.percentile(gaps32, 10) < -12, np.percentile(gaps32, [0, 10, 50])


@pytest.mark.parametrize("norm", ["rms", "layer"])
def test_pair_coordinates_agree_in_float32_and_float64(norm):
    # the sweeps' two-token discrete path (absorbing_network), here with no absorption
    n, d = 40_000, {"rms": 3, "layer": 4}[norm]
    p = []
    for i, dtype in enumerate(DTYPES):
        codes, _ = absorbing_network(jax.random.PRNGKey(11 + i), beta=BETA, d=d,
                                     weights=PureNoise(), trajectories=n, layers=LAYERS,
                                     steps=network_depth(HORIZON, LAYERS), tol=TOL, bound=0.0,
                                     norm=norm,
                                     dtype=dtype)
        p.append(float(np.mean(codes == ANTIPODAL)))
    _close(*p, n, n)


def test_reduced_agrees_in_float32_and_float64_and_honours_x64():
    n = 100_000
    p = []
    for i, dtype in enumerate(DTYPES):
        codes, _ = absorbing_rho(jax.random.PRNGKey(21 + i), beta=BETA, d=3, eps=1.0, mu=0.0,
                                 trajectories=n, layers=LAYERS,
                                 steps=network_depth(HORIZON, LAYERS), tol=TOL,
                                 bound=0.0, dtype=dtype)
        p.append(float(np.mean(codes == ANTIPODAL)))
    _close(*p, n, n)
    # the default follows JAX_ENABLE_X64 (on in the tests): float64, the same stream as
    # dtype=float64, so the same codes
    default, _ = absorbing_rho(jax.random.PRNGKey(22), beta=BETA, d=3, eps=1.0, mu=0.0,
                               trajectories=2000, layers=LAYERS,
                               steps=network_depth(5.0, LAYERS), tol=TOL, bound=0.0)
    explicit, _ = absorbing_rho(jax.random.PRNGKey(22), beta=BETA, d=3, eps=1.0, mu=0.0,
                                trajectories=2000, layers=LAYERS,
                                steps=network_depth(5.0, LAYERS), tol=TOL, bound=0.0,
                                dtype=jnp.float64)
    assert np.array_equal(default, explicit)


def test_sweep_counts_thread_the_dtype():
    # simulate_counts passes dtype to every path: float32 and float64 runs of the same
    # seed differ (different streams), each is reproducible
    args = dict(tokens=2, beta=BETA, d=3, weights=PureNoise(), trajectories=200, layers=5,
                horizon=1.0, tol=TOL, absorb=0.0)
    for method in ("reduced", "discrete"):
        one = [simulate_counts(method, jax.random.PRNGKey(3), dtype=dt, **args)
               for dt in (jnp.float32, jnp.float64, jnp.float64)]
        assert one[1] == one[2]
        assert one[0]["outcomes"] != one[1]["outcomes"], method


@pytest.mark.parametrize("kind", ["discrete", "particles"])
def test_more_tokens_reach_deep_antipodal_levels_in_float32(kind):
    # n = 3 < d = 5 (the QR branch of the span noise): start at X_3 = X_1 = -X_2 with
    # beta = 10, where the noise on X_1 + X_2 is of order e^{-2 beta} and the pair stays
    # antipodal; after T = 10 its 1 + rho must be below 1e-12 in a tenth of 1,000 runs
    # at least (the 10th percentile: a robust summary). The old eigh square root of the
    # Gram matrix held the network at a median of 1e-7. The particle SDE, now solved in
    # float32 throughout (solve used to turn a float32 y0 into float64 under x64), ends
    # at a median of 1.4e-12 and a 10th percentile of 4e-14.
    from spheresde import sample_uniform, solve_batch
    from spheresde.transformer import transformer_sde

    n, d, runs, beta = 3, 5, 1000, 10.0
    x = np.array(sample_uniform(jax.random.PRNGKey(5), (runs, n), d, jnp.float64))
    x[:, 1] = -x[:, 0]
    x[:, 2] = x[:, 0]
    x0 = jnp.asarray(x, jnp.float32)
    if kind == "discrete":
        final = simulate_network(jax.random.PRNGKey(6), x0, beta, PureNoise(), layers=LAYERS,
                                 horizon=10.0, trajectories=runs).tokens
    else:
        sde = transformer_sde(beta, PureNoise(), d=d, noise="span", n=n)
        final = solve_batch(sde, x0, 0.0, 10.0, 1 / LAYERS, key=jax.random.PRNGKey(6)).ys[:, -1]
    _, gaps = _antipodal_gaps(final[:, :2])
    assert gaps.size > runs // 2
    assert np.percentile(gaps, 10) < -12, np.percentile(gaps, [0, 10, 50, 90])
