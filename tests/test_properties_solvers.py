"""Property tests (Hypothesis): every scheme keeps every token on the sphere; tangency."""

import functools

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest
from helpers import (
    SCHEMES,
    coefficient_sde,
    random_coefficients,
    random_tangent_sde,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import spheresde
from spheresde.transformer import PureNoise, transformer_sde


@eqx.filter_jit
def _run_steps(solver, sde, args, y0, key, steps, dt):
    """``steps`` calls of ``solver.step`` in a scan: the solver alone, cheap to compile.

    Coefficients passed in ``args`` (not closed over) keep one compilation per shape."""
    shape = jax.ShapeDtypeStruct(sde.noise_shape, y0.dtype)
    terms = sde.terms(diffrax.UnsafeBrownianPath(shape, key))

    def body(carry, i):
        y, state = carry
        t0 = i * dt
        y1, _, _, state, _ = solver.step(terms, t0, t0 + dt, y, args, state, False)
        return (y1, state), None

    state = solver.init(terms, 0.0, dt, y0, args)
    return jax.lax.scan(body, (y0, state), jnp.arange(steps))[0][0]


@pytest.mark.parametrize("solver", SCHEMES)
@settings(max_examples=5, deadline=None)  # one shape: the scan compiles once per scheme
@given(seed=st.integers(0, 2**16), scale=st.floats(0.1, 3.0))
def test_norm_preserved_1000_steps_random_fields(solver, seed, scale):
    # Fast tier: 3 tokens on S^3, 2 noises, random coefficients and noise scale.
    n, d, m = 3, 4, 2
    sde = coefficient_sde(m, spheresde.solver_convention(solver))
    args = random_coefficients(seed, d, m, noise_scale=scale)
    y0 = spheresde.sample_uniform(jr.key(seed), (n,), d)
    y = _run_steps(solver, sde, args, y0, jr.key(seed + 1), 1000, 0.01)
    assert y.shape == (n, d)
    assert float(spheresde.norm_error(y)) < 1e-12


@pytest.mark.slow
@pytest.mark.parametrize("solver", SCHEMES)
@settings(max_examples=3, deadline=None)  # each example compiles a 1,000-step scan
@given(d=st.integers(2, 12), n=st.integers(1, 6), m=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_norm_preserved_1000_steps(solver, d, n, m, seed):
    sde = random_tangent_sde(seed, d, n, m, spheresde.solver_convention(solver))
    y0 = spheresde.sample_uniform(jr.key(seed), (n,), d)
    y = _run_steps(solver, sde, None, y0, jr.key(seed + 1), 1000, 0.01)
    assert y.shape == (n, d)
    assert float(spheresde.norm_error(y)) < 1e-12


@jax.jit
def _projections(y, v):
    p = spheresde.project_tangent(y, v)
    return p, spheresde.project_tangent(y, p)


@settings(max_examples=10, deadline=None)  # three shapes, each compiled once
@given(shape=st.sampled_from([(1, 2), (3, 5), (6, 12)]), seed=st.integers(0, 2**16),
       scale=st.floats(0.5, 2.0))
def test_projection_idempotent_and_tangent(shape, seed, scale):
    # Also off the sphere (scale != 1), as met inside Runge--Kutta stages.
    n, d = shape
    rng = np.random.default_rng(seed)
    y = rng.normal(size=(n, d))
    y *= scale / np.linalg.norm(y, axis=-1, keepdims=True)
    v = rng.normal(size=(n, d))
    p, pp = (np.asarray(a) for a in _projections(y, v))
    np.testing.assert_allclose(pp, p, atol=1e-14)
    assert float(np.max(np.abs(np.sum(p * y, axis=-1)))) < 1e-13


@functools.partial(jax.jit, static_argnums=0)
def _transformer_fields(d, beta, y, dw):
    sde = transformer_sde(beta, PureNoise(1.0), d=d)
    basis = jnp.eye(d * d).reshape(d * d, d, d)
    g_basis = jax.vmap(lambda e: sde.diffusion(0.0, y, None, e))(basis)
    return (sde.diffusion(0.0, y, None, dw), jnp.sum(g_basis**2, axis=(0, -1)),
            sde.drift(0.0, y, None), sde.to_stratonovich().drift(0.0, y, None),
            sde.to_stratonovich().to_ito().drift(0.0, y, None))


@pytest.mark.slow
@settings(max_examples=6, deadline=None)  # three shapes, each compiled once (beta is traced)
@given(shape=st.sampled_from([(1, 2), (3, 3), (4, 6)]), seed=st.integers(0, 2**16),
       beta=st.floats(0.0, 4.0))
def test_transformer_fields_tangent(shape, seed, beta):
    # Diffusion: tangent for every increment. Ito drift: its normal part is
    # -1/2 sum_k |g(E_k)|^2 y (Ito's lemma on |y|^2 = 1), checked with the d^2 unit
    # increments E_k. Stratonovich drift (AD correction, projected): tangent; converted
    # back, the Ito drift again, normal part included (the correction's normal part is
    # the Ito normal drift, so nothing was lost to the projection).
    n, d = shape
    ky, kw = jr.split(jr.key(seed))
    y = spheresde.sample_uniform(ky, (n,), d)
    g, trace, ito_drift, strat_drift, back = _transformer_fields(d, beta, y,
                                                                 jr.normal(kw, (d, d)))
    assert float(jnp.max(jnp.abs(jnp.sum(g * y, axis=-1)))) < 1e-13
    np.testing.assert_allclose(jnp.sum(ito_drift * y, axis=-1), -0.5 * trace, atol=1e-12)
    assert float(jnp.max(jnp.abs(jnp.sum(strat_drift * y, axis=-1)))) < 1e-12
    np.testing.assert_allclose(back, ito_drift, atol=1e-12)
