"""Convergence orders of every solver, measured against theory.

Weak: Brownian motion on S^{d-1}, :math:`E\\langle X_t, X_0\\rangle = e^{-(d-1)t/2}`.
Strong: the two-token Transformer SDE (docs: /theory/discrete_model and /theory/limit_sde),
non-commuting d x d noise.
"""

import functools

import diffrax
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest
from helpers import (
    SCHEMES,
    brownian_motion_sde,
    loglog_slope,
    sampled_brownian,
    solve_on_paths,
)

import spheresde
from spheresde.transformer import PureNoise, transformer_sde


def _weak_order(solver):
    return solver.weak_order(None)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("solver", "d"),
    [pytest.param(p.values[0], 10 if spheresde.solver_convention(p.values[0]) == "ito" else 5,
                  id=p.id) for p in SCHEMES],
)
def test_weak_order_brownian_motion(solver, d):
    # (d - 1) t / 2 = 0.8, dt = t/8 ... t/64: there every scheme is in its asymptotic
    # regime (one-step analysis: the error constant of Retracted(Heun) still grows by 30%
    # between dt = 0.1 and 0.025 at d = 5). The Ito schemes' errors are small at small d
    # (GeodesicEuler's rate error is -0.17 dt at d = 3, -0.8 dt at d = 6; at d = 5 the
    # finest D of Retracted(Euler) was only 4.5 standard errors), so they run at d = 10.
    # 10,000 paths, common random numbers: every dt uses the same sampled Brownian paths.
    # The order is the log-log slope of D(dt) = E f^dt - E f^(dt/2) (= C (1 - 2^-p) dt^p
    # for an error C dt^p), whose CRN standard error (printed) is <= 10% of |D|: the
    # exact value cancels, so the MC error of E f does not enter the slope.
    t1, paths = 1.6 / (d - 1), 10_000
    sde = brownian_motion_sde(d, spheresde.solver_convention(solver))
    ts, W = sampled_brownian(jr.key(11), paths, t1, 64, (d,))
    y0 = jnp.zeros(d).at[0].set(1.0)
    dts = [t1 / 8, t1 / 16, t1 / 32, t1 / 64]
    f = [np.asarray(solve_on_paths(sde, y0, t1, dt, ts, W, solver) @ y0) for dt in dts]
    diffs = np.diff(np.stack(f), axis=0)  # f^(dt/2) - f^dt, path by path
    D = -np.mean(diffs, axis=1)
    D_se = np.std(diffs, axis=1) / np.sqrt(paths)
    print(f"D = {D}, standard errors {D_se}")
    assert np.all(D_se < 0.1 * np.abs(D))
    slope = loglog_slope(dts[:-1], np.abs(D))
    print(f"weak slope {slope:.2f}")
    assert abs(slope - _weak_order(solver)) < 0.3
    # Converges to the closed form: Richardson's 2 E f^(dt) - E f^(2 dt) (order 1) at the
    # finest dt lies within 4 standard errors (about 4 x 0.004) plus the O(dt^2) remainder
    # (bounded by |D| at the finest pair) of e^{-(d-1) t / 2}.
    richardson = 2 * f[-1] - f[-2]
    exact = np.exp(-(d - 1) * t1 / 2)
    se = np.std(richardson) / np.sqrt(paths)
    assert abs(np.mean(richardson) - exact) < 4 * se + abs(D[-1])


STRONG_DTS = [2.0**-4, 2.0**-5, 2.0**-6, 2.0**-7]
STRONG_T1, STRONG_PATHS, STRONG_FINE = 0.5, 48, 1024


@functools.cache
def _transformer(convention):
    ito = transformer_sde(2.0, PureNoise(1.0), d=3)
    return ito if convention == "ito" else ito.to_stratonovich()


@functools.cache
def _strong_problem():
    # One Brownian path per sample, sampled at the reference step 2^-11 (16 times finer
    # than the finest tested step) and shared by every step size: on these nested fixed
    # grids it is the same object as a VirtualBrownianTree queried at the grid points,
    # without the tree's ~11 PRNG calls per step.
    ts, W = sampled_brownian(jr.key(7), STRONG_PATHS, STRONG_T1, STRONG_FINE, (3, 3))
    return ts, W, spheresde.sample_uniform(jr.key(8), (STRONG_PATHS, 2), 3)


def _final_states(convention, solver, dt):
    ts, W, y0 = _strong_problem()
    sde = _transformer(convention)

    def one(y, w):
        path = diffrax.LinearInterpolation(ts, w)
        return spheresde.solve(sde, y, 0.0, STRONG_T1, dt, brownian=path, solver=solver).ys[-1]

    return jax.jit(jax.vmap(one))(y0, W)


@functools.cache
def _reference(convention):
    solver = spheresde.GeodesicEuler() if convention == "ito" else spheresde.GeodesicMidpoint()
    return _final_states(convention, solver, STRONG_T1 / STRONG_FINE)


def _rms(a, b):
    return float(jnp.sqrt(jnp.mean(jnp.sum((a - b) ** 2, axis=(-1, -2)))))


@pytest.mark.slow
@pytest.mark.parametrize("solver", SCHEMES)
def test_strong_order_transformer(solver):
    # Two tokens on S^2, beta = 2, sigma = 1: noise dW A_i with a shared 3 x 3 Brownian
    # matrix, non-commuting, so every scheme has strong order 0.5. Ito schemes solve the
    # Ito form against a fine GeodesicEuler; Stratonovich schemes solve the Stratonovich
    # form (drift corrected by automatic differentiation, SphereSDE.to_stratonovich)
    # against a fine GeodesicMidpoint (references computed once per sense).
    # Horizon 0.5, dt = 2^-4 ... 2^-7, 48 paths: the RMS
    # error's relative standard error is about 1/sqrt(2 * 48) ~ 10% per dt, strongly
    # correlated across dt (same paths), so about +-0.1 on the slope.
    sense = spheresde.solver_convention(solver)
    rms = np.array([_rms(_final_states(sense, solver, dt), _reference(sense)) for dt in STRONG_DTS])
    slope = loglog_slope(STRONG_DTS, rms)
    print(f"RMS errors {rms}, strong slope {slope:.2f}")
    assert abs(slope - solver.strong_order(None)) < 0.3


@pytest.mark.slow
def test_stratonovich_form_same_paths_as_ito():
    # The Ito and the Stratonovich form (derivatives by AD) are one SDE: solved on the same
    # Brownian paths by schemes of either sense, they agree up to the discretization error
    # (RMS ~ 0.1-0.3 at these steps and decreasing like dt^0.5; a wrong or missing
    # correction term would leave an O(1) drift difference that does not decrease).
    strat = spheresde.GeodesicMidpoint()
    rms = np.array([_rms(_final_states("stratonovich", strat, dt), _reference("ito"))
                    for dt in STRONG_DTS])
    print(f"RMS Stratonovich-vs-Ito {rms}")
    assert abs(loglog_slope(STRONG_DTS, rms) - 0.5) < 0.3
