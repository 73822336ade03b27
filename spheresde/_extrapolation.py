r"""Weak order 2 for expectations: Talay--Tubaro extrapolation of a weak order 1 scheme."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import jax.random as jr

from ._sde import SphereSDE
from ._solve import solve_batch
from ._typing import Array, PRNGKeyArray


@dataclasses.dataclass(frozen=True)
class WeakExtrapolation:
    """What :func:`extrapolated_expectation` returns.

    Attributes
    ----------
    value
        The estimate :math:`2\\,\\bar f_{\\Delta t} - \\bar f_{2\\Delta t}` of
        :math:`E f(X_{t_1})`.
    standard_error
        Its Monte Carlo standard error, ``std(samples) / sqrt(paths)``.
    samples
        Path by path, :math:`2 f(X^{\\Delta t}_{t_1}) - f(X^{2\\Delta t}_{t_1})`, shape
        ``(paths,)`` (the two solves of a path on the same Brownian path where
        ``brownian="virtual"``, on independent ones otherwise).
    fine, coarse
        :math:`\\bar f_{\\Delta t}` and :math:`\\bar f_{2\\Delta t}`, the plain weak order 1
        estimates (their difference estimates the leading error
        :math:`C\\Delta t`).
    """

    value: Array
    standard_error: Array
    samples: Array
    fine: Array
    coarse: Array


def extrapolated_expectation(
    sde: SphereSDE,
    f: Callable[[Array], Array],
    y0,
    t0,
    t1,
    dt,
    *,
    key: PRNGKeyArray,
    solver=None,
    brownian: str = "weak",
    brownian_tol=None,
    args=None,
    **solve_kwargs,
) -> WeakExtrapolation:
    r""":math:`E f(X_{t_1})` to weak order 2: Talay--Tubaro extrapolation of a fixed-step solve.

    A scheme of weak order 1 whose error has an expansion
    :math:`E f(X^{\Delta t}_{t_1}) = E f(X_{t_1}) + C\Delta t + O(\Delta t^2)` (every
    scheme of this package, for smooth ``f`` and coefficients; Talay and Tubaro, 1990,
    *Stoch. Anal. Appl.* 8) gives, with the same scheme at two step sizes,

    .. math:: 2\,E f(X^{\Delta t}_{t_1}) - E f(X^{2\Delta t}_{t_1}) = E f(X_{t_1}) + O(\Delta t^2).

    Two :func:`solve_batch` runs, at ``dt`` and ``2 dt``, ``paths = y0.shape[0]`` paths
    each: three times the cost of one solve at ``dt``, for an error of order
    :math:`\Delta t^2` instead of :math:`\Delta t` (``tests/test_extrapolation.py``
    measures the order; ``tests/benchmarks/bench_solvers.py --accuracy`` the cost at
    equal accuracy). The Monte Carlo variance is that of ``2 f - f``: about 5 times that
    of one solve on independent paths, about the same on common ones
    (``brownian="virtual"``: both solves on one ``VirtualBrownianTree``, which costs more
    per step).

    Parameters
    ----------
    sde, y0, t0, t1, solver, args, **solve_kwargs
        As in :func:`solve_batch` (``y0`` of shape ``(paths, ...)``, fixed steps only).
    f
        The function of the final state of one path (shape ``y0.shape[1:]``, or a pytree
        state), returning a scalar; applied under ``jax.vmap``.
    dt
        The finer step; ``(t1 - t0) / (2 dt)`` must be an integer, so that the two grids
        are uniform (a shortened last step would break the error expansion).
    key
        PRNG key.
    brownian
        ``"weak"`` (default: two-point increments, the fastest, weak order 1 kept, and
        their error expansion as well), ``"unsafe"`` (Gaussian increments) or
        ``"virtual"`` (one Brownian tree for both step sizes, tolerance
        ``brownian_tol``, default ``dt / 8``).

    Returns
    -------
    :class:`WeakExtrapolation`
    """
    if solve_kwargs.get("stepsize_controller") is not None:
        raise ValueError("extrapolated_expectation needs fixed steps (the extrapolation "
                         "cancels the error C dt of a uniform grid): drop stepsize_controller")
    if solve_kwargs.get("saveat") is not None:
        raise ValueError("extrapolated_expectation takes f of the final state: drop saveat")
    check_halves(t0, t1, dt)
    if brownian == "virtual":
        keys = (key, key)
        brownian_tol = float(dt) / 8 if brownian_tol is None else brownian_tol
    else:
        keys = tuple(jr.split(key))

    def ends(step, k):
        sol = solve_batch(sde, y0, t0, t1, step, key=k, solver=solver, brownian=brownian,
                          brownian_tol=brownian_tol, args=args, **solve_kwargs)
        return jax.vmap(f)(jax.tree.map(lambda ys: ys[:, -1], sol.ys))

    return richardson(ends(dt, keys[0]), ends(2 * float(dt), keys[1]))


def check_halves(t0, t1, dt) -> int:
    """The number ``m`` of coarse steps, after checking that ``(t1 - t0) / (2 dt)`` is a
    positive integer (uniform grids of steps ``dt`` and ``2 dt``)."""
    halves = (float(t1) - float(t0)) / (2 * float(dt))
    if not (halves >= 1 and abs(halves - round(halves)) <= 1e-9 * halves):
        raise ValueError(f"(t1 - t0) / (2 dt) must be a positive integer (uniform grids of "
                         f"steps dt and 2 dt), got {halves:.6g}; pass dt = (t1 - t0) / (2 m)")
    return round(halves)


def richardson(fine: Array, coarse: Array) -> WeakExtrapolation:
    """:math:`2 f - c` path by path from samples at ``dt`` (``fine``) and ``2 dt``
    (``coarse``), both of shape ``(paths,)``, with its mean and standard error."""
    samples = 2 * fine - coarse
    return WeakExtrapolation(
        value=jnp.mean(samples),
        standard_error=jnp.std(samples) / math.sqrt(samples.shape[0]),
        samples=samples,
        fine=jnp.mean(fine),
        coarse=jnp.mean(coarse),
    )
