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


@pytest.mark.parametrize(("dtype", "tol"), [(jnp.float64, 2e-15), (jnp.float32, 1e-6)])
def test_cos_sinc_without_trigonometry_matches_numpy(dtype, tol):
    # The series with range reduction replaces jnp.cos and jnp.sinc in the exponential map;
    # checked on 0 <= theta <= 20 (steps longer than pi only through the reduction) and
    # on tiny angles, against NumPy's float64 cos and sin of the same (rounded) angle.
    from spheresde._geometry import cos_sinc

    theta2 = jnp.asarray(np.concatenate([np.linspace(0.0, 20.0, 20_001),
                                         np.logspace(-12, 0, 200)]) ** 2, dtype)
    cos, sinc = cos_sinc(theta2)
    theta = np.sqrt(np.asarray(theta2, np.float64))  # the angle as rounded to dtype
    # Beyond pi the reduction theta - 2 pi n adds the rounding of 2 pi n: tol per pi of angle.
    bound = tol * np.maximum(1.0, theta / np.pi)
    cos, sinc = np.asarray(cos, np.float64), np.asarray(sinc, np.float64)
    assert np.all(np.abs(cos - np.cos(theta)) <= bound)
    assert np.all(np.abs(sinc * theta - np.sin(theta)) <= bound)
    assert np.all(np.abs(sinc - np.sinc(theta / np.pi)) <= bound)


def test_exp_map_gradient_is_finite_at_zero():
    # Written in |v|^2, the map has no square root at v = 0: d exp_y(v) / dv = identity
    # there (the derivative of cos |v| vanishes, that of sinc |v| v is the identity).
    y = jnp.array([0.0, 0.0, 1.0])
    jac = jax.jacfwd(lambda v: sd.exp_map(y, v))(jnp.zeros(3))
    np.testing.assert_allclose(jac, np.eye(3), atol=1e-15)
