"""``SphereSDE.to_stratonovich`` / ``to_ito`` against the SymPy conversion of proofs_check,
and Ito SDEs under adaptive steps (converted by ``solve``)."""

import diffrax
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest
import sympy as sp

import spheresde
from proofs_check.ito import ito_to_stratonovich, stratonovich_to_ito

X = sp.symbols("x0:3", real=True)


def _random_field(rng, degree: int = 2) -> sp.Matrix:
    """A vector field on R^3 with random integer coefficients, monomials up to ``degree``."""
    monomials = [sp.Integer(1), *X, *[a * b for i, a in enumerate(X) for b in X[i:]]][
        : 1 + 3 + (6 if degree >= 2 else 0)]
    return sp.Matrix([sum(int(c) * m for c, m in zip(rng.integers(-3, 4, len(monomials)),
                                                      monomials, strict=True))
                      for _ in range(3)])


def _tangent(v: sp.Matrix) -> sp.Matrix:
    """The symbolic ``spheresde.project_tangent(x, v)``."""
    x = sp.Matrix(X)
    return v - (x.dot(v) / x.dot(x)) * x


def _polynomial_sde(seed: int, noise_shape: tuple[int, ...], convention: str):
    """``(sde, drift, diffusion)``: a random SDE on S^2 as SymPy expressions (the drift of
    ``convention``, tangent diffusion columns ``P_x p_k(x)``) and as a SphereSDE whose
    fields are those expressions lambdified into JAX."""
    rng = np.random.default_rng(seed)
    size = int(np.prod(noise_shape))
    columns = [_tangent(_random_field(rng)) for _ in range(size)]
    diffusion = sp.Array([[columns[k][a] for k in range(size)] for a in range(3)]).reshape(
        3, *noise_shape)
    drift = _random_field(rng)
    if convention == "stratonovich":
        drift = _tangent(drift)
    drift_fn = sp.lambdify([X], list(drift), modules="jax")
    matrix_fn = sp.lambdify([X], sp.Matrix(3, size, lambda a, k: columns[k][a]), modules="jax")
    sde = spheresde.SphereSDE(
        lambda t, y, args: jnp.stack(drift_fn(y)),
        lambda t, y, args, dw: jnp.asarray(matrix_fn(y), y.dtype) @ dw.reshape(-1),
        noise_shape, convention)
    return sde, drift, diffusion


def _points(seed: int, count: int = 5):
    return spheresde.sample_uniform(jr.key(seed), (count,), 3)


def _drift_at(sde, points):
    """``sde.drift`` at each of ``points`` (one compilation: the lambdified expressions
    run op by op would take seconds)."""
    return np.asarray(jax.jit(jax.vmap(lambda y: sde.drift(0.0, y, None)))(points))


@pytest.mark.parametrize(("seed", "noise_shape"), [
    (0, (2,)),
    # the others compile larger lambdified fields (several seconds each)
    pytest.param(1, (2,), marks=pytest.mark.slow),
    pytest.param(0, (2, 2), marks=pytest.mark.slow),
    pytest.param(1, (2, 2), marks=pytest.mark.slow),
])
def test_conversions_equal_the_sympy_conversion(seed, noise_shape):
    # The symbolic side is the reference: proofs_check.ito's drift correction
    # -/+ 1/2 sum_k (D sigma_k) sigma_k of the same expressions, evaluated at 5 points
    # of S^2 (the Stratonovich drift projected on the tangent space, as documented).
    ito, drift, diffusion = _polynomial_sde(seed, noise_shape, "ito")
    reference = sp.lambdify([X], list(_tangent(ito_to_stratonovich(list(X), drift, diffusion))))
    converted = ito.to_stratonovich()
    assert converted.convention == "stratonovich"
    points = _points(seed)
    np.testing.assert_allclose(_drift_at(converted, points),
                               [reference(y) for y in np.asarray(points)], rtol=1e-12,
                               atol=1e-12)

    strat, drift, diffusion = _polynomial_sde(seed + 10, noise_shape, "stratonovich")
    reference = sp.lambdify([X], list(stratonovich_to_ito(list(X), drift, diffusion)))
    converted = strat.to_ito()
    assert converted.convention == "ito"
    points = _points(seed + 10)
    np.testing.assert_allclose(_drift_at(converted, points),
                               [reference(y) for y in np.asarray(points)], rtol=1e-12,
                               atol=1e-12)
    # and back: the Stratonovich drift again (it was tangent)
    np.testing.assert_allclose(_drift_at(converted.to_stratonovich(), points),
                               _drift_at(strat, points), atol=1e-12)
    assert strat.to_stratonovich() is strat


def test_ito_normal_drift_comes_out_of_to_ito():
    # Brownian motion on S^2: Stratonovich drift 0 -> Ito drift -(d-1)/2 y exactly (the
    # normal part of the correction), whether or not the Ito drift carried it.
    strat = spheresde.SphereSDE(lambda t, y, a: jnp.zeros_like(y),
                                lambda t, y, a, dw: spheresde.project_tangent(y, dw),
                                (3,), "stratonovich")
    y = _points(3)
    np.testing.assert_allclose(_drift_at(strat.to_ito(), y), -y, atol=1e-14)
    bare_ito = spheresde.SphereSDE(strat.drift, strat.diffusion, (3,), "ito")
    np.testing.assert_allclose(_drift_at(bare_ito.to_stratonovich(), y), 0.0, atol=1e-14)


def _speed_sde():
    r"""Ito SDE on S^2 with a state-dependent diffusion: :math:`dX = s(X)\,P_X dW` plus
    the normal Ito drift, speed :math:`s = 1 + \langle X, e_3\rangle/2`. Its Stratonovich
    form has the tangent noise-induced drift :math:`-\tfrac14 s^2 P_X e_3`."""
    def diffusion(t, y, args, dw):
        return (1 + y[..., 2:] / 2) * spheresde.project_tangent(y, dw)

    def drift(t, y, args):
        return -(1 + y[..., 2:] / 2) ** 2 * y

    return spheresde.SphereSDE(drift, diffusion, (3,), "ito")


@pytest.mark.slow
def test_ito_sde_under_pid_steps_agrees_with_fixed_steps():
    # 4,000 paths from e_1 to T = 1, f = <X_T, e_3>: solve converts the Ito SDE (stats
    # say so) and GeodesicMidpoint under PIDController(atol=1e-2) agrees with
    # GeodesicEuler at dt = 0.005 (bias O(dt)) within 4 combined standard errors; the
    # same SDE taken as Stratonovich without the conversion (the noise-induced drift
    # dropped) is more than 6 standard errors away, so the agreement is a real check.
    sde, paths = _speed_sde(), 4000
    y0 = jnp.broadcast_to(jnp.array([1.0, 0.0, 0.0]), (paths, 3))
    adaptive = spheresde.solve_batch(
        sde, y0, 0.0, 1.0, 0.05, key=jr.key(1),
        stepsize_controller=diffrax.PIDController(rtol=0, atol=1e-2))
    assert adaptive.stats["converted"] == "ito->stratonovich"
    fixed = spheresde.solve_batch(sde, y0, 0.0, 1.0, 0.005, key=jr.key(2))
    wrong = spheresde.solve_batch(
        spheresde.SphereSDE(lambda t, y, a: jnp.zeros_like(y), sde.diffusion, (3,),
                            "stratonovich"), y0, 0.0, 1.0, 0.005, key=jr.key(3))
    f = [np.asarray(s.ys[:, -1, 2]) for s in (adaptive, fixed, wrong)]
    mean = [np.mean(v) for v in f]
    se = [np.std(v) / np.sqrt(paths) for v in f]
    steps = np.asarray(adaptive.stats["num_accepted_steps"])
    rejected = np.asarray(adaptive.stats["num_rejected_steps"])
    print(f"PID: E f = {mean[0]:.4f} +- {se[0]:.4f}, steps per path {steps.mean():.1f} "
          f"(+{rejected.mean():.1f} rejected); fixed dt=0.005: {mean[1]:.4f} +- {se[1]:.4f}, "
          f"200 steps; unconverted: {mean[2]:.4f} +- {se[2]:.4f}")
    assert abs(mean[0] - mean[1]) < 4 * np.hypot(se[0], se[1])
    assert abs(mean[2] - mean[1]) > 6 * np.hypot(se[2], se[1])
    assert np.all(np.abs(np.linalg.norm(adaptive.ys[:, -1], axis=-1) - 1) < 1e-12)
