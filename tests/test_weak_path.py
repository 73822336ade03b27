"""The two-point driver ``WeakBrownianPath`` (``brownian="weak"``): its increments and
the weak order of the Ito schemes driven by it."""

import diffrax
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest
from helpers import brownian_motion_sde, loglog_slope

import spheresde
from spheresde import WeakBrownianPath


def test_increments_are_fair_independent_signs():
    # 2,000 increments of shape (25, 20): N = 10^6 signs. Each of the 32 bit positions
    # of the random words carries N/32 of them; every mean is within 4 standard errors
    # (0.5/sqrt(count) for a fair coin) of 1/2, and neighbouring entries and successive
    # steps are uncorrelated within 4/sqrt(N).
    dt = 0.01
    path = WeakBrownianPath(jax.ShapeDtypeStruct((25, 20), jnp.float64), jr.key(3))
    steps = jnp.arange(2000) * dt
    w = np.asarray(jax.vmap(lambda t: path.evaluate(t, t + dt))(steps))
    assert w.shape == (2000, 25, 20)
    assert w.dtype == np.float64
    root = np.sqrt((np.asarray(steps) + dt) - np.asarray(steps))[:, None, None]
    np.testing.assert_array_equal(np.abs(w), np.broadcast_to(root, w.shape))  # +-sqrt(t1-t0)
    xi = (w / root).reshape(2000, -1)
    n = xi.size
    assert abs(np.mean(xi > 0) - 0.5) < 4 * 0.5 / np.sqrt(n)
    by_bit = (xi > 0).reshape(-1, 32).mean(axis=0)  # 500 signs per step = 15 words + 20
    assert np.all(np.abs(by_bit - 0.5) < 4 * 0.5 / np.sqrt(xi.size // 32))
    assert abs(np.mean(xi[:, :-1] * xi[:, 1:])) < 4 / np.sqrt(n)
    assert abs(np.mean(xi[:-1] * xi[1:])) < 4 / np.sqrt(n)


def test_same_interval_same_draw_and_bad_use():
    path = WeakBrownianPath((3, 4), jr.key(0))
    a, b = path.evaluate(0.5, 0.6), path.evaluate(0.5, 0.6)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, path.evaluate(0.6, 0.7))
    assert not np.array_equal(a, WeakBrownianPath((3, 4), jr.key(1)).evaluate(0.5, 0.6))
    with pytest.raises(ValueError, match="no Levy area"):
        path.evaluate(0.5, 0.6, use_levy=True)
    with pytest.raises(ValueError, match="floating dtype"):
        WeakBrownianPath(jax.ShapeDtypeStruct((3,), jnp.int32), jr.key(0))
    with pytest.raises(TypeError, match="tuple of ints"):
        WeakBrownianPath([3, 4], jr.key(0))


@pytest.mark.slow
def test_solve_batch_weak_is_reproducible_and_on_the_sphere(getkey):
    sde = spheresde.transformer.transformer_sde(2.0, d=4)
    y0 = spheresde.sample_uniform(getkey(), (64, 2), 4)
    key = getkey()
    ys = [spheresde.solve_batch(sde, y0, 0.0, 1.0, 0.01, key=key, brownian="weak").ys[:, -1]
          for _ in range(2)]
    np.testing.assert_array_equal(ys[0], ys[1])
    assert float(spheresde.norm_error(ys[0])) < 1e-12
    moved = spheresde.geodesic_distance(y0, ys[0])
    assert float(jnp.min(moved)) > 0


@pytest.mark.slow
@pytest.mark.parametrize(
    "solver", [spheresde.GeodesicEuler(), spheresde.Retracted(diffrax.Euler())],
    ids=["GeodesicEuler", "Retracted(Euler)"],
)
def test_weak_order_one_with_two_point_increments(solver):
    # Brownian motion on S^9, E<X_t, X_0> = exp(-(d-1) t/2) at (d-1) t/2 = 0.8;
    # dt = t/4 ... t/32, 200,000 independent paths per dt (no common random numbers:
    # two-point increments of dt/2 do not sum to one of dt). The error at every dt is
    # resolved (> 4 standard errors, about 4 x 0.0004) and halves with dt: the
    # log-log slope is within 0.3 of 1.
    d, paths = 10, 200_000
    t1 = 1.6 / (d - 1)
    sde = brownian_motion_sde(d, "ito")
    y0 = jnp.broadcast_to(jnp.zeros(d).at[0].set(1.0), (paths, d))
    exact = np.exp(-(d - 1) * t1 / 2)
    dts = [t1 / 4, t1 / 8, t1 / 16, t1 / 32]
    errors, ses = [], []
    for j, dt in enumerate(dts):
        ys = spheresde.solve_batch(sde, y0, 0.0, t1, dt, key=jr.key(j), solver=solver,
                                   brownian="weak").ys[:, -1]
        f = np.asarray(ys[:, 0])
        errors.append(f.mean() - exact)
        ses.append(f.std() / np.sqrt(paths))
    errors, ses = np.array(errors), np.array(ses)
    print(f"errors {errors}, standard errors {ses}")
    assert np.all(np.abs(errors) > 4 * ses)
    slope = loglog_slope(dts, np.abs(errors))
    print(f"weak slope {slope:.2f}")
    assert abs(slope - 1.0) < 0.3
