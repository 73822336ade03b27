r"""Monte Carlo of the :math:`\rho`-diffusion of two tokens, and its outcome fractions.

:func:`simulate_rho` integrates the SDE of :math:`z = \operatorname{artanh}\rho`
(Euler--Maruyama, Ito), which sends :math:`\rho = \pm1` to :math:`\pm\infty`: no
clipping, so no boundary bias. By default its increments are two-point,
:math:`\Delta B = \pm\sqrt{\Delta t}` with probability 1/2 (the simplified weak Euler
scheme of Kloeden & Platen, *Numerical Solution of SDEs*, section 14.1: weak order 1,
the same as with Gaussian increments), 32 steps per random ``uint32``; ``increments=
"gaussian"`` gives the plain Euler--Maruyama scheme. :func:`rho_fractions` turns the
final :math:`\rho` into outcome fractions.
"""

from __future__ import annotations

import functools
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import DTypeLike
from jaxtyping import Float

from ... import _checks
from ..._brownian import bit_signs
from ..._devices import leading_axis_sharding
from ..._typing import ArrayLike, FloatArray, PRNGKeyArray, RealGrid, RealScalar
from .._network import horizon_steps
from .._outcomes import DEFAULT_TOL, OutcomeFractions, classify_rho, fractions_from_codes
from .._rho import euler_step
from ._coefficients import noise_scale

_BITS = 32


@functools.cache
def _z_coefficients():
    r"""``(R, T, beta, d, eps, mu) -> (z_drift, z_diffusion)`` for JAX, with
    :math:`T = \tanh z` and :math:`R = e^{-\beta(1-T)}`.

    The exported z-coefficients, with every :math:`e^{-k\beta(1-\tanh z)}` rewritten as
    :math:`R^k` (an identity, checked by substitution here and numerically in the
    tests): one exponential per step instead of two, and a common-subexpression-
    eliminated kernel.
    """
    import sympy as sp

    from proofs_check.export import rho_expressions

    exprs = rho_expressions()
    (z, beta, d, eps, mu), z_drift = exprs["z_drift"]
    z_diffusion = exprs["z_diffusion"][1]
    R, T = sp.symbols("R T", positive=True)
    base = -beta * (1 - sp.tanh(z))

    def power_of_r(arg):
        k = sp.simplify(arg / base)
        if not k.is_integer:
            raise ValueError(f"unexpected exponential exp({arg}) in the z coefficients")
        return R**k

    rewritten = [e.replace(sp.exp, power_of_r).subs(sp.tanh(z), T) for e in (z_drift, z_diffusion)]
    for new, old in zip(rewritten, (z_drift, z_diffusion), strict=True):
        back = new.subs({R: sp.exp(base), T: sp.tanh(z)})
        if sp.simplify(back - old) != 0:
            raise ValueError("rewriting the z coefficients in R changed them")
    return sp.lambdify((R, T, beta, d, eps, mu), rewritten, modules="jax", cse=True)


@functools.partial(jax.jit, static_argnames=("steps", "block", "gaussian"))
def _rho_paths(key, z0, beta, d, eps, mu, dt, *, steps: int, block: int, gaussian: bool):
    """Euler--Maruyama in z for every lane; ``block`` steps are unrolled into one fused loop."""
    coefficients = _z_coefficients()
    sqrt_dt = jnp.sqrt(dt)

    def step(z, dw):
        t = jnp.tanh(z)
        z_drift, z_diffusion = coefficients(jnp.exp(-beta * (1 - t)), t, beta, d, eps, mu)
        return euler_step(z, z_drift, z_diffusion, dt, dw)

    def run(z, k, count):
        sub = jax.random.fold_in(key, k)
        if gaussian:
            normals = jax.random.normal(sub, (count, *z.shape), z.dtype)
            for i in range(count):
                z = step(z, sqrt_dt * normals[i])
        else:
            bits = jax.random.bits(sub, z.shape, jnp.uint32)
            for i in range(count):
                z = step(z, sqrt_dt * bit_signs(bits, i, z.dtype))
        return z

    z, _ = jax.lax.scan(lambda z, k: (run(z, k, block), None), z0, jnp.arange(steps // block))
    if steps % block:
        z = run(z, steps // block, steps % block)
    return jnp.tanh(z)


def simulate_rho(key: PRNGKeyArray, beta: RealGrid, d: RealGrid, *, trajectories: int,
                 dt: RealScalar, horizon: RealScalar, rho0: RealGrid | None = None,
                 sigma: RealGrid = 1.0, mu: RealGrid = 0.0, eps: RealGrid | None = None,
                 increments: Literal["two_point", "gaussian"] = "two_point",
                 dtype: DTypeLike = jnp.float32, block: int = _BITS) -> FloatArray:
    r"""Monte Carlo of the reduced SDE of two tokens; :math:`\rho_T` per trajectory.

    Euler--Maruyama (Ito) in :math:`z = \operatorname{artanh}\rho` with the lambdified
    ``z_drift`` / ``z_diffusion``, ``horizon_steps(horizon, dt)`` steps (the rule of depth,
    ``round(T / dt)``). ``beta``, ``d``, ``sigma``
    / ``eps`` and ``mu`` broadcast to a grid, and every grid point gets ``trajectories``
    lanes of one compiled kernel (one kernel serves a whole Figure 3).

    Parameters
    ----------
    key
        PRNG key.
    beta, d
        Inverse temperature and dimension (arrays broadcast).
    trajectories
        Trajectories per grid point.
    dt, horizon
        Step and final time (the paper: ``dt = 1/L = 0.01``, ``T = 500``).
    rho0
        Start (broadcast with the grid); ``None``: two independent uniform tokens.
    sigma, mu, eps
        Pure noise :math:`\sigma`, or hybrid :math:`(\mu, \varepsilon)`.
    increments
        ``"two_point"`` (default): :math:`\pm\sqrt{\Delta t}`, 32 steps per random word
        (simplified weak Euler, weak order 1); ``"gaussian"``: normal increments.
    dtype
        ``float32`` by default (speed); ``float64`` needs x64 enabled.
    block
        Steps fused per loop iteration (at most 32 for two-point increments).

    Returns
    -------
    jax.Array
        :math:`\rho_T` of shape ``grid_shape + (trajectories,)`` (:math:`\pm1` exactly
        once :math:`|z|` is large: the pair has merged or become antipodal).
    """
    _checks.rho_paths(beta, d, trajectories=trajectories, dt=dt, horizon=horizon, sigma=sigma,
                      mu=mu, eps=eps, rho0=rho0)
    if increments not in ("two_point", "gaussian"):
        raise ValueError(f"increments must be 'two_point' or 'gaussian', got {increments!r}")
    if increments == "two_point" and not 1 <= block <= _BITS:
        raise ValueError(f"block must be in 1..{_BITS} with two-point increments")
    e = noise_scale(sigma, eps)
    arrays = np.broadcast_arrays(*(np.asarray(v, float) for v in (beta, d, e, mu)))
    grid = arrays[0].shape
    lanes = (*grid, trajectories)
    beta, d, e, mu = (jnp.asarray(np.broadcast_to(a[..., None], lanes).ravel(), dtype)
                      for a in arrays)
    start_key, path_key = jax.random.split(key)
    if rho0 is None:
        half = (d - 1) / 2
        u = jax.random.beta(start_key, half, half, dtype=dtype)
        z0 = 0.5 * (jnp.log(u) - jnp.log1p(-u))  # artanh(2u - 1) without cancellation
    else:
        r0 = jnp.asarray(np.broadcast_to(np.asarray(rho0, float)[..., None], lanes).ravel(), dtype)
        z0 = jnp.arctanh(r0)
    steps = horizon_steps(horizon, dt)
    sharding = leading_axis_sharding(z0.size, "lanes")
    if sharding is not None:
        z0, beta, d, e, mu = (jax.device_put(a, sharding) for a in (z0, beta, d, e, mu))
    rho = _rho_paths(path_key, z0, beta, d, e, mu, jnp.asarray(dt, dtype), steps=steps,
                     block=block, gaussian=increments == "gaussian")
    return rho.reshape(lanes)


def rho_fractions(rho: Float[ArrayLike, "*grid trajectories"],
                  tol: float = DEFAULT_TOL) -> OutcomeFractions:
    r"""Outcome fractions of final inner products ``rho`` (last axis: trajectories).

    Single: :math:`\rho > 1 - \mathrm{tol}`; antipodal: :math:`\rho < -(1 - \mathrm{tol})`;
    undecided otherwise (:func:`spheresde.transformer.classify` for two tokens). Fields are arrays
    over the leading (grid) axes, with binomial standard errors.
    """
    _checks.inner_product("rho", rho)
    _checks.real("tol", tol, at_least=0.0)
    return fractions_from_codes(classify_rho(rho, tol))


__all__ = ["rho_fractions", "simulate_rho"]
