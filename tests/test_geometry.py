import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spheresde as sd


def test_projection_is_idempotent_and_tangent(getkey):
    y = sd.sample_uniform(getkey(), (5,), 7)
    v = jax.random.normal(getkey(), (5, 7))
    pv = sd.project_tangent(y, v)
    np.testing.assert_allclose(sd.project_tangent(y, pv), pv, atol=1e-14)
    np.testing.assert_allclose(jnp.sum(pv * y, axis=-1), 0.0, atol=1e-14)


def test_exp_map_stays_on_sphere_and_travels_the_geodesic(getkey):
    y = sd.sample_uniform(getkey(), (4,), 5)
    v = sd.project_tangent(y, 0.7 * jax.random.normal(getkey(), (4, 5)))
    z = sd.exp_map(y, v)
    assert sd.norm_error(z) < 1e-14
    # the distance travelled equals |v| while |v| < pi
    travelled = jnp.minimum(jnp.linalg.norm(v, axis=-1), np.pi)
    np.testing.assert_allclose(sd.geodesic_distance(y, z), travelled, atol=1e-12)
    np.testing.assert_allclose(sd.log_map(y, z), v, atol=1e-12)


def test_exp_map_of_zero_is_identity(getkey):
    y = sd.sample_uniform(getkey(), (3,), 4)
    np.testing.assert_array_equal(sd.exp_map(y, jnp.zeros_like(y)), y)


def test_uniform_samples_have_the_known_inner_product_law(getkey):
    # <X, e_1> for X uniform on S^{d-1}: mean 0, variance 1/d. n = 20000 samples, so the
    # standard error of the variance estimate is about sqrt(2/n)/d; we allow 5 of them.
    d, n = 6, 20000
    x = sd.sample_uniform(getkey(), (n,), d)[:, 0]
    assert abs(float(jnp.mean(x))) < 5 * np.sqrt(1 / d / n)
    assert abs(float(jnp.var(x)) - 1 / d) < 5 * np.sqrt(2 / n) / d


def test_sample_uniform_rejects_low_dimension(getkey):
    with pytest.raises(ValueError, match="d >= 2"):
        sd.sample_uniform(getkey(), (2,), 1)
