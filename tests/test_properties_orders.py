"""Property test (Hypothesis): every scheme reaches its declared strong order on random SDEs.

Random smooth tangent fields on :math:`(S^{d-1})^n` (``helpers.coefficient_sde``: drift
:math:`P_x(\\tanh(Mx) + b)`, diffusion :math:`P_x\\sum_k dW_k (C_k x + c_k)`, Gaussian
coefficients), in Ito form for the Ito schemes and in Stratonovich form for the
Stratonovich ones. Each sample is ONE ``diffrax.VirtualBrownianTree``, solved at nested
steps ``dt = t1/16 ... t1/128`` and at the reference step ``t1/2048`` by the same scheme;
the strong order is the log-log slope of the RMS error against ``dt``, within a
systematic 0.2 plus two bootstrap standard errors of that slope.

The noise has ``m >= 2`` components: its fields then do not commute, and every scheme
here has strong order 1/2 (with one scalar noise the Stratonovich schemes would reach
order 1, which they do not declare).
"""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest
from helpers import SCHEMES, coefficient_sde, loglog_slope, random_coefficients
from hypothesis import given, settings
from hypothesis import strategies as st

import spheresde

T1 = 0.5
COARSEST, LEVELS, REFERENCE = 16, 4, 2048  # dt = T1/16 ... T1/128; reference T1/2048
PATHS = 256


@eqx.filter_jit
def _brownian_values(keys, ts, noise_shape):
    """Each path's ONE ``VirtualBrownianTree`` (tolerance: the reference step), read at ``ts``.

    Every step size below is a multiple of the reference step, so these values are all
    that any of the solves reads from the tree; reading them once, at once, is far
    cheaper than querying the tree step by step inside every solve.
    """
    def one(key):
        tree = diffrax.VirtualBrownianTree(0.0, T1, tol=T1 / REFERENCE,
                                           shape=noise_shape, key=key)
        return jax.vmap(tree.evaluate)(ts)

    return jax.vmap(one)(keys)


@eqx.filter_jit
def _final_states(solver, sde, args, y0, ts, W, every):
    """Final states of the solves with step ``every`` reference steps (traced: compiled once
    per scheme and shape), driven by the paths ``W`` sampled at ``ts``."""
    steps = (ts.shape[0] - 1) // every
    dt = (ts[-1] - ts[0]) / steps

    def one(y, w):
        terms = sde.terms(diffrax.LinearInterpolation(ts, w))

        def body(i, carry):
            y, state = carry
            t0 = i * dt
            y1, _, _, state, _ = solver.step(terms, t0, t0 + dt, y, args, state, False)
            return y1, state

        state = solver.init(terms, 0.0, dt, y, args)
        return jax.lax.fori_loop(0, steps, body, (y, state))[0]

    return jax.vmap(one)(y0, W)


@pytest.mark.slow
@settings(max_examples=3, deadline=None)  # each example compiles every scheme once (~4 s each)
@given(d=st.sampled_from([2, 3, 4]), n=st.sampled_from([1, 2]), m=st.sampled_from([2, 3]),
       seed=st.integers(0, 2**16))
def test_strong_order_on_random_tangent_sdes(d, n, m, seed):
    args = random_coefficients(seed, d, m, noise_scale=0.5)
    ts = jnp.linspace(0.0, T1, REFERENCE + 1)
    W = _brownian_values(jr.split(jr.key(seed), PATHS), ts,
                         jax.ShapeDtypeStruct((m,), jnp.float64))
    y0 = spheresde.sample_uniform(jr.key(seed + 1), (PATHS, n), d)
    dts = [T1 / (COARSEST * 2**k) for k in range(LEVELS)]
    for param in SCHEMES:
        solver = param.values[0]
        sde = coefficient_sde(m, spheresde.solver_convention(solver))

        def final(dt, solver=solver, sde=sde):
            every = jnp.asarray(round(dt * REFERENCE / T1))
            return _final_states(solver, sde, args, y0, ts, W, every)

        reference = final(T1 / REFERENCE)
        # squared error of every path at every level: (levels, paths)
        squared = np.array([np.asarray(jnp.sum((final(dt) - reference) ** 2, axis=(-1, -2)))
                            for dt in dts])
        rms = np.sqrt(squared.mean(axis=1))
        assert float(spheresde.norm_error(reference)) < 1e-12
        slope = loglog_slope(dts, rms)
        # The RMS of 256 paths can hang on one path (at coarse steps a single path has held
        # 47% of the squared error, and moved the slope by 0.3): the margin is a systematic
        # 0.2 plus 2 bootstrap standard errors of the slope (400 resamples of the paths,
        # the same resample at every level).
        resamples = np.random.default_rng(seed).integers(0, PATHS, (400, PATHS))
        boot = [loglog_slope(dts, np.sqrt(squared[:, idx].mean(axis=1))) for idx in resamples]
        margin = 0.2 + 2 * float(np.std(boot))
        print(f"{param.id}: d={d} n={n} m={m} seed={seed} RMS {rms}, slope {slope:.2f}, "
              f"margin {margin:.2f}")
        assert abs(slope - solver.strong_order(None)) < margin, (param.id, rms, slope, margin)
