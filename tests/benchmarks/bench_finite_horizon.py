"""Speed of two_token.outcome_probabilities (run explicitly; not a pytest test).

    .venv/bin/python tests/benchmarks/bench_finite_horizon.py [--betas 200]

Prints, from one run: the wall and CPU seconds of the finite-horizon curves of the
paper-scale Figure 3 (d = 4..10 x 200 betas, T = 500, tol = 0.01), against the t -> inf
curves of antipodal_probability on the same grid (the baseline ratio); and, at a few
points, one level of the eigendecomposition scheme against Crank--Nicolson time steps on
the same spatial operator (per point, and the difference in P(undecided), which the
eigendecomposition has exactly in time).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from scipy import linalg

from spheresde import two_token
from spheresde.transformer.two_token import _finite_horizon as fh


def timed(fn):
    """(result, wall seconds, CPU seconds) of one call."""
    start, cpu = time.perf_counter(), os.times()
    out = fn()
    wall, end = time.perf_counter() - start, os.times()
    return out, wall, (end.user - cpu.user) + (end.system - cpu.system)


def undecided_one_level(beta, d, horizon, tol=0.01, dt=None):
    """P(undecided) at T on the coarse grid: exactly in time (dt None) or by Crank--Nicolson."""
    coefficients = fh.rc()
    args = (beta, d, 1.0, 0.0)
    z_star = np.arctanh(1 - tol)
    extents = []
    for side in (-1.0, 1.0):
        c = float(coefficients.z_drift(side * fh.FAR, *args))
        v2 = float(coefficients.z_diffusion(side * fh.FAR, *args)) ** 2
        extents.append(max(fh._far_extent(c, v2, horizon), 5.0))
    faces = fh._grid(z_star, fh.CELLS, *extents)
    diagonal, off, _, log_weight, centres = fh._operator(faces, coefficients, args)
    start = fh._start_weights(faces, centres, d, None)
    scale = np.exp((log_weight - np.max(log_weight)) / 2)
    a = start / scale
    b = np.where(np.abs(centres) <= z_star, scale, 0.0)
    if dt is None:
        lam, q = linalg.eigh_tridiagonal(diagonal, off)
        return float((a @ q) * np.exp(horizon * np.minimum(lam, 0)) @ (q.T @ b))
    steps = round(horizon / dt)
    n = diagonal.size
    lhs = np.zeros((3, n))  # banded I - dt/2 S
    lhs[0, 1:], lhs[1], lhs[2, :-1] = -dt / 2 * off, 1 - dt / 2 * diagonal, -dt / 2 * off
    u = b.copy()
    for _ in range(steps):
        rhs = (1 + dt / 2 * diagonal) * u
        rhs[:-1] += dt / 2 * off * u[1:]
        rhs[1:] += dt / 2 * off * u[:-1]
        u = linalg.solve_banded((1, 1), lhs, rhs)
    return float(a @ u)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--betas", type=int, default=200)
    args = parser.parse_args()
    dims = np.arange(4, 11)[:, None]
    betas = np.linspace(0.0, 3.75, args.betas)[None, :]
    two_token.outcome_probabilities(1.0, 4, horizon=1.0)  # coefficients lambdified once
    two_token.antipodal_probability(1.0, 4)
    p, wall, cpu = timed(lambda: two_token.outcome_probabilities(betas, dims, horizon=500.0,
                                                                 return_error=True))
    _, base_wall, base_cpu = timed(lambda: two_token.antipodal_probability(betas, dims))
    points = dims.size * betas.size
    print(f"finite horizon, {dims.size} dims x {betas.size} betas, T = 500: {wall:.1f} s wall, "
          f"{cpu:.1f} s CPU ({1e3 * cpu / points:.1f} ms CPU per point); "
          f"largest Richardson error estimate {np.max(p[1]):.1e}")
    print(f"t -> inf (antipodal_probability), same grid: {base_wall:.2f} s wall, "
          f"{base_cpu:.2f} s CPU; ratio finite / inf = {cpu / max(base_cpu, 1e-9):.0f} (CPU)")
    for beta, d in ((1.0, 6), (1.25, 8), (2.0, 4)):
        exact, e_wall, _ = timed(lambda b=beta, dd=d: undecided_one_level(b, dd, 500.0))
        for dt in (0.1, 0.02):
            cn, c_wall, _ = timed(
                lambda b=beta, dd=d, s=dt: undecided_one_level(b, dd, 500.0, dt=s))
            print(f"d={d} beta={beta}: P(undecided) eigen {exact:.3e} in {1e3 * e_wall:.1f} ms; "
                  f"Crank-Nicolson dt={dt}: {cn:.3e} (diff {abs(cn - exact):.1e}) in "
                  f"{1e3 * c_wall:.0f} ms, ratio {c_wall / e_wall:.0f}x")


if __name__ == "__main__":
    main()
