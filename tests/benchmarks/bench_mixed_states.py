"""Benchmark: a mixed-state ``solve_batch`` against a hand-written ``lax.scan`` of the same
scheme, and the unit sphere likewise (the baseline that an older checkout can run too).

(mixed)  Active Brownian particles in 3-D, Ito form: position ``x`` in R^3 (Euclidean
         leaf), heading ``e`` on S^2 (sphere leaf); ``dx = v e dt + sqrt(2 D) dW``,
         ``de = -2 D_r e dt + sqrt(2 D_r) P_e dB``. ``spheresde.solve_batch`` with every
         default (GeodesicEuler, Gaussian increments, the stacked form) against a jitted
         ``lax.scan`` of geodesic Euler written out: per step the normals of both leaves,
         ``x + v e dt + sqrt(2D) dW`` and ``exp_e(P_e(sqrt(2 D_r) dB))``.
(unit)   Brownian motion on the unit S^2 (Ito), ``solve_batch`` against the same scan
         with the heading alone.

Wall times exclude compilation; each variant runs ``--repeats`` times in interleaved
rounds and the best is reported with the ratios solve / scan in this one process. The
unit-sphere rows use only the API of earlier versions, so that
``PYTHONPATH=<an older checkout> python tests/benchmarks/bench_mixed_states.py`` times
the old code on the same machine (the mixed rows are then skipped). Run explicitly, it
is not a test::

    python tests/benchmarks/bench_mixed_states.py [--paths 10000] [--steps 1000]
        [--repeats 3] [--precisions float64 float32]

The development machine (2 cores shared with three other developers' jobs: the same
variant moves by up to 2x between runs, so compare ratios within a run), 2026-12-06,
best of 3 wall seconds, 10,000 paths x 1,000 steps; two runs of this branch and, between
them, one of the code before pytree states (commit cd95338, unit sphere only)::

    float64     unit scan  unit solve  mixed scan  mixed solve  mixed weak
    this, 1st   1.31       1.17        3.27        2.08         0.38
    cd95338     1.77       1.67        -           -            -
    this, 2nd   3.33       3.13        4.77        5.25         0.34
    float32
    this, 1st   0.58       0.37        0.90        0.83         0.22
    cd95338     0.71       0.47        -           -            -
    this, 2nd   0.57       0.48        1.94        1.52         0.45

Ratios solve / scan: unit sphere 0.89 and 0.94 (float64), 0.65 and 0.83 (float32) on
this branch against 0.94 and 0.67 before; mixed state 0.63 and 1.10 (float64), 0.92 and
0.79 (float32); the two-point increments (``brownian="weak"``) 0.07 to 0.25 of the scan.
"""

from __future__ import annotations

import argparse
import math
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--precisions", nargs="+", default=["float64", "float32"])
    opts = parser.parse_args()

    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import jax.random as jr

    import spheresde

    mixed_api = hasattr(spheresde, "Sphere")
    speed, D, D_r, d = 1.0, 0.1, 0.5, 3
    dt = 1.0 / opts.steps
    unit = spheresde.SphereSDE(lambda t, y, a: -D_r * (d - 1) * y,
                               lambda t, y, a, dw: math.sqrt(2 * D_r)
                               * spheresde.project_tangent(y, dw), (d,))
    print(f"{opts.paths} paths x {opts.steps} steps, best of {opts.repeats}; JAX "
          f"{jax.__version__} on {jax.devices()[0].platform}; spheresde from "
          f"{spheresde.__file__}")

    def geodesic(e, v):
        """exp_e(P_e v) at a unit e, written out."""
        v = v - jnp.sum(e * v, -1, keepdims=True) * e
        norm = jnp.sqrt(jnp.sum(v * v, -1, keepdims=True))
        safe = jnp.where(norm > 0, norm, 1.0)
        return jnp.cos(norm) * e + jnp.where(norm > 0, jnp.sin(safe) / safe, 1.0) * v

    root = math.sqrt(dt)
    if mixed_api:
        abp = spheresde.SphereSDE(
            lambda t, y, a: (speed * y[1], -D_r * (d - 1) * y[1]),
            lambda t, y, a, dw: (math.sqrt(2 * D) * dw[0], math.sqrt(2 * D_r)
                                 * spheresde.project_tangent(y[1], dw[1])),
            ((d,), (d,)), manifold=(spheresde.Euclidean(), spheresde.Sphere()))
    for name in opts.precisions:
        dtype = jnp.dtype(name)

        def scan_unit(e0, key, dtype=dtype):
            def step(e, k):
                db = root * jr.normal(k, e.shape, dtype)
                return geodesic(e, math.sqrt(2 * D_r) * db), None

            return jax.lax.scan(step, e0, jr.split(key, opts.steps))[0]

        def solve_unit(e0, key):
            return spheresde.solve_batch(unit, e0, 0.0, 1.0, dt, key=key).ys[:, -1]

        e0 = jnp.zeros((opts.paths, d), dtype).at[:, 2].set(1)
        variants = {"unit scan": (scan_unit, (e0,)), "unit solve": (solve_unit, (e0,))}
        if mixed_api:
            def scan_mixed(x0, e0, key, dtype=dtype):
                def step(y, k):
                    x, e = y
                    kx, ke = jr.split(k)
                    dw = root * jr.normal(kx, x.shape, dtype)
                    db = root * jr.normal(ke, e.shape, dtype)
                    x = x + speed * e * dt + math.sqrt(2 * D) * dw
                    return (x, geodesic(e, math.sqrt(2 * D_r) * db)), None

                return jax.lax.scan(step, (x0, e0), jr.split(key, opts.steps))[0]

            def solve_mixed(x0, e0, key):
                sol = spheresde.solve_batch(abp, (x0, e0), 0.0, 1.0, dt, key=key)
                return tuple(leaf[:, -1] for leaf in sol.ys)

            def weak_mixed(x0, e0, key):
                sol = spheresde.solve_batch(abp, (x0, e0), 0.0, 1.0, dt, key=key,
                                            brownian="weak")
                return tuple(leaf[:, -1] for leaf in sol.ys)

            x0 = jnp.zeros((opts.paths, d), dtype)
            variants |= {"mixed scan": (scan_mixed, (x0, e0)),
                         "mixed solve": (solve_mixed, (x0, e0)),
                         "mixed weak": (weak_mixed, (x0, e0))}
        key = jr.key(0)
        runs = {}
        for label, (fn, inputs) in variants.items():
            start = time.perf_counter()
            runs[label] = (jax.jit(fn).lower(*inputs, key).compile(), inputs)
            print(f"  {name} {label:11s} compile {time.perf_counter() - start:6.2f} s")
        best = dict.fromkeys(runs, float("inf"))
        for r in range(opts.repeats):
            for label, (fn, inputs) in runs.items():
                start = time.perf_counter()
                out = jax.block_until_ready(fn(*inputs, jr.fold_in(key, r)))
                best[label] = min(best[label], time.perf_counter() - start)
                # a check of the law: E<e_1, e_0> = exp(-(d-1) D_r t) at t = 1
                heading = out[-1] if isinstance(out, tuple) else out
                z = float(jnp.mean(heading[:, 2]))
                if r == 0:
                    print(f"  {name} {label:11s} E<e_1, e_0> = {z:.4f} (exact "
                          f"{math.exp(-(d - 1) * D_r):.4f})")
        for label in runs:
            print(f"  {name} {label:11s} {best[label]:7.3f} s")
        line = f"  {name} unit solve/scan = {best['unit solve'] / best['unit scan']:.2f}"
        if mixed_api:
            line += (f", mixed solve/scan = {best['mixed solve'] / best['mixed scan']:.2f}, "
                     f"mixed weak/scan = {best['mixed weak'] / best['mixed scan']:.2f}")
        print(line)


if __name__ == "__main__":
    main()
