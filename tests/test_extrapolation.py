r"""Weak order 2 of ``extrapolated_expectation`` (Talay--Tubaro) on Brownian motion on S^5.

GeodesicEuler with Gaussian increments on Brownian motion on :math:`S^{d-1}` is
isotropic: one step is :math:`X' = \cos|v|\,X + \sin|v|\,\hat v` with :math:`v = P_X\Delta W`,
:math:`|v| = \sqrt{\Delta t}\,\chi_{d-1}` and :math:`\hat v` symmetric, so
:math:`E[\langle X', e\rangle \mid X] = m(\Delta t)\,\langle X, e\rangle` with
:math:`m(h) = E\cos(\sqrt h\,\chi_{d-1}) = {}_1F_1(\tfrac{d-1}{2}; \tfrac12; -\tfrac h2)`,
and the scheme's own expectation after :math:`n` steps is exactly
:math:`m(T/n)^n \langle X_0, e\rangle`. That gives the weak errors of the scheme and of
its extrapolation without Monte Carlo error, against
:math:`E\langle X_T, X_0\rangle = e^{-(d-1)T/2}`; the Monte Carlo runs then check that
``extrapolated_expectation`` computes that extrapolation.

Why not the slope from Monte Carlo alone: the extrapolated errors here are 1.8e-3,
4.0e-4, 9.6e-5, 2.3e-5 at dt = T/8 ... T/64 (T = 0.5), and the standard error of
``2 f - f`` is 0.8/sqrt(paths) on independent paths (about 0.2/sqrt(paths) for the
path-wise differences on common ones, the scheme having strong order 1/2): resolving
4e-4 to 10% would take some 10^8 paths.
"""

import math

import jax.numpy as jnp
import jax.random as jr
import pytest
from helpers import brownian_motion_sde, loglog_slope
from scipy import special

import spheresde

D, T = 6, 0.5


def _scheme_mean(h: float, steps: int) -> float:
    """GeodesicEuler's exact E<X_T, X_0> on S^(D-1) after ``steps`` Gaussian steps ``h``."""
    return float(special.hyp1f1((D - 1) / 2, 0.5, -h / 2)) ** steps


def test_extrapolation_of_the_exact_scheme_mean_has_weak_order_two():
    # Plain GeodesicEuler: errors 1.6e-2 ... 1.9e-3, slope 1.0; extrapolated: 1.8e-3 ...
    # 2.3e-5, slope 2.1 (dt = T/8 ... T/64).
    exact = math.exp(-(D - 1) * T / 2)
    dts = [T / 8, T / 16, T / 32, T / 64]
    plain = [abs(_scheme_mean(h, round(T / h)) - exact) for h in dts]
    extrapolated = [abs(2 * _scheme_mean(h, round(T / h)) - _scheme_mean(2 * h, round(T / (2 * h)))
                        - exact) for h in dts]
    print(f"plain errors {plain}, extrapolated {extrapolated}")
    assert abs(loglog_slope(dts, plain) - 1) < 0.3
    assert abs(loglog_slope(dts, extrapolated) - 2) < 0.3


@pytest.mark.slow
def test_extrapolated_expectation_computes_the_extrapolation():
    # 100,000 paths at dt = T/8 (Gaussian increments, so the formula above holds): the
    # estimate is within 4 standard errors (0.0025) of 2 m(dt)^8 - m(2 dt)^4 (error
    # 0.0018; measured 0.2898 against 0.2883, z = 0.6), and so are its fine and coarse
    # parts of m(dt)^8 and m(2 dt)^4 (their own standard errors are smaller: this one
    # bounds them), whose errors 0.016 and 0.033 are 6 and 13 of these standard errors.
    paths, dt = 100_000, T / 8
    sde = brownian_motion_sde(D, "ito")
    y0 = jnp.zeros(D).at[0].set(1.0)
    result = spheresde.extrapolated_expectation(
        sde, lambda y: y[0], jnp.broadcast_to(y0, (paths, D)), 0.0, T, dt, key=jr.key(4),
        brownian="unsafe")
    fine, coarse = _scheme_mean(dt, 8), _scheme_mean(2 * dt, 4)
    print(f"extrapolated {float(result.value):.5f} +- {float(result.standard_error):.5f}, "
          f"scheme {2 * fine - coarse:.5f}, exact {math.exp(-(D - 1) * T / 2):.5f}")
    assert abs(float(result.value) - (2 * fine - coarse)) < 4 * float(result.standard_error)
    assert abs(float(result.fine) - fine) < 4 * float(result.standard_error)
    assert abs(float(result.coarse) - coarse) < 4 * float(result.standard_error)
    assert result.samples.shape == (paths,)


def test_extrapolated_expectation_refuses_what_breaks_the_expansion():
    sde = brownian_motion_sde(3, "ito")
    y0 = jnp.broadcast_to(jnp.array([1.0, 0.0, 0.0]), (4, 3))
    with pytest.raises(ValueError, match=r"\(t1 - t0\) / \(2 dt\) must be a positive integer"):
        spheresde.extrapolated_expectation(sde, lambda y: y[0], y0, 0.0, 1.0, 0.3,
                                           key=jr.key(0))
    with pytest.raises(ValueError, match="needs fixed steps"):
        spheresde.extrapolated_expectation(sde, lambda y: y[0], y0, 0.0, 1.0, 0.25,
                                           key=jr.key(0), stepsize_controller=object())
