"""Benchmark: the default solver against a hand-written ``lax.scan`` Euler step.

Brownian motion on S^2 (Ito: dX = P_X dW - X dt), 10,000 independent paths from the
north pole, 1,000 steps of dt = 0.001, in float64 and float32, three ways:

(scan)   ten lines: per step a (paths, 3) array of normals (one key per step from
         ``jax.random.split``), the Euler step ``y - y dt + P_y dW`` and a
         renormalization, in one jitted ``lax.scan``;
(solve)  ``spheresde.solve_batch(sde, y0, 0, 1, 0.001, key=key)`` with every default
         (GeodesicEuler, UnsafeBrownianPath, the stacked form), jitted;
(weak)   the same with ``brownian="weak"`` (two-point increments), for reference.

Wall times exclude compilation (``jax.jit(f).lower(...).compile()``); each variant runs
``--repeats`` times in interleaved rounds and the best is reported, with the ratio
solve / scan (the target: at most 1.2 in float64 and 1.0 in float32). Run explicitly,
it is not a test::

    python tests/benchmarks/bench_solver_speed.py [--paths 10000] [--steps 1000]
        [--repeats 5] [--precisions float64 float32]

``--no-x64`` runs with ``jax_enable_x64`` off (float32 only), for comparing with code
that computed a float32 ``y0`` in float64 when x64 was on.

Also timed: (scan-T) the scan with the coordinates first, ``(3, paths)``; (vmap)
``jax.vmap`` of ``spheresde.solve`` over keys; (normals) the same normals drawn and
summed, no step: a lower bound.

The development machine (2 cores shared with other jobs, load 5 to 8, float64 and
float32, 2026-12-02 14:05 UTC); best of 5 wall seconds::

    float64 scan 4.31  scan-T 5.10  solve 3.06  vmap 8.16  weak 0.34  normals 2.35
            solve/scan = 0.71, vmap/scan = 1.89, normals/scan = 0.55
    float32 scan 0.91  scan-T 2.31  solve 0.73  vmap 2.09  weak 0.22  normals 0.47
            solve/scan = 0.81, vmap/scan = 2.29, normals/scan = 0.52

Four other runs that day gave solve/scan 0.78 to 0.94 (float64) and 0.66 to 0.72
(float32). The default solver's time is mostly the normals' (solve/normals 1.0 to 1.6);
the Diffrax loop (``StepTo``, ``SaveAt(t1=True)``, ``ForwardMode``) costs no more than
a plain ``diffeqsolve`` with ``ConstantStepSize``. ``jax.vmap`` of ``solve`` is 2 to 3
times slower because every path hashes its own key three times a step (Diffrax's
``UnsafeBrownianPath`` folds in both times and splits) for three normals, where the
stacked solve hashes three times a step for all paths; that is the price of draws
reproducible path by path. (Before the dtype fix, a float32 ``y0`` with x64 on was
solved in float64: the "float32" solve row then timed a float64 state.)
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--precisions", nargs="+", default=["float64", "float32"])
    parser.add_argument("--no-x64", action="store_true")
    opts = parser.parse_args()

    import jax

    jax.config.update("jax_enable_x64", not opts.no_x64)
    import jax.numpy as jnp
    import jax.random as jr

    import spheresde

    sde = spheresde.SphereSDE(lambda t, y, args: -y,
                              lambda t, y, args, dw: spheresde.project_tangent(y, dw), (3,))
    dt = 1.0 / opts.steps
    print(f"{opts.paths} paths x {opts.steps} steps, Brownian motion on S^2, "
          f"best of {opts.repeats}; JAX {jax.__version__} on {jax.devices()[0].platform}, "
          f"x64 {'off' if opts.no_x64 else 'on'}")

    for name in opts.precisions:
        dtype = jnp.dtype(name)

        def scan_euler(y0, key, dtype=dtype):
            def step(y, k):
                dw = jnp.sqrt(jnp.asarray(dt, dtype)) * jr.normal(k, y.shape, dtype)
                y = y - y * dt + dw - jnp.sum(y * dw, -1, keepdims=True) * y
                return y / jnp.linalg.norm(y, axis=-1, keepdims=True), None

            return jax.lax.scan(step, y0, jr.split(key, opts.steps))[0]

        def scan_columns(y0, key, dtype=dtype):
            # the same with the coordinates first, (3, paths): XLA on CPU vectorizes the
            # sums over the 3 coordinates across paths (the faster hand-written layout)
            def step(y, k):
                dw = jnp.sqrt(jnp.asarray(dt, dtype)) * jr.normal(k, y.shape, dtype)
                y = y - y * dt + dw - (y[0] * dw[0] + y[1] * dw[1] + y[2] * dw[2]) * y
                return y / jnp.sqrt(y[0] ** 2 + y[1] ** 2 + y[2] ** 2), None

            return jax.lax.scan(step, y0.T, jr.split(key, opts.steps))[0].T

        def vmapped(y0, key):
            # jax.vmap of solve over keys and starts: one path per call, batched
            def one(y, k):
                return spheresde.solve(sde, y, 0.0, 1.0, dt, key=k).ys[-1]

            return jax.vmap(one)(y0, jr.split(key, y0.shape[0]))

        def normals(y0, key, dtype=dtype):
            # a lower bound: the same normals drawn and summed, no step
            def step(acc, k):
                return acc + jr.normal(k, y0.shape, dtype), None

            return jax.lax.scan(step, y0, jr.split(key, opts.steps))[0]

        def solve(y0, key):
            return spheresde.solve_batch(sde, y0, 0.0, 1.0, dt, key=key).ys[:, -1]

        def weak(y0, key):
            return spheresde.solve_batch(sde, y0, 0.0, 1.0, dt, key=key,
                                         brownian="weak").ys[:, -1]

        y0 = jnp.zeros((opts.paths, 3), dtype).at[:, 2].set(1)
        key = jr.key(0)
        runs = {}
        variants = (("scan", scan_euler), ("scan-T", scan_columns), ("solve", solve),
                    ("vmap", vmapped), ("weak", weak), ("normals", normals))
        for label, fn in variants:
            start = time.perf_counter()
            runs[label] = jax.jit(fn).lower(y0, key).compile()
            print(f"  {name} {label:7s} compile {time.perf_counter() - start:6.2f} s")
        best = {label: float("inf") for label in runs}
        for r in range(opts.repeats):
            for label, fn in runs.items():
                run_key = jr.fold_in(key, r)
                start = time.perf_counter()
                out = jax.block_until_ready(fn(y0, run_key))
                best[label] = min(best[label], time.perf_counter() - start)
                if out.dtype != dtype:
                    print(f"  {name} {label}: the result is {out.dtype}, not {name}")
        for label, out in ((label, runs[label](y0, key)) for label in runs):
            if label == "normals":
                print(f"  {name} {label:7s} {best[label]:7.3f} s   (the normals alone)")
                continue
            # E[z] = exp(-t (d-1)/2) = exp(-1) at t = 1 from the pole: a check of the law
            z = float(jnp.mean(out[:, 2]))
            se = float(jnp.std(out[:, 2])) / opts.paths ** 0.5
            print(f"  {name} {label:7s} {best[label]:7.3f} s   E[z] = {z:.4f} +- {se:.4f} "
                  f"(exp(-1) = 0.3679)")
        scan = min(best["scan"], best["scan-T"])
        print(f"  {name} ratio solve/scan = {best['solve'] / scan:.2f} (against the faster "
              f"scan; {best['solve'] / best['scan']:.2f} against rows-first), "
              f"vmap/scan = {best['vmap'] / scan:.2f}, "
              f"weak/scan = {best['weak'] / scan:.2f}, normals/scan = "
              f"{best['normals'] / scan:.2f}")


if __name__ == "__main__":
    main()
