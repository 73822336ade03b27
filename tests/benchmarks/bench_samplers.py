"""Benchmark: ``spheresde.sample_von_mises_fisher`` against ``scipy.stats.vonmises_fisher``.

10^6 draws (``--draws``) for each d in {3, 7, 20} and kappa in {0.5, 5, 50}, mu = the last
basis vector. Ours: jitted (compiled before timing), ``block_until_ready``; SciPy:
``vonmises_fisher(mu, kappa).rvs(n, random_state=Generator)`` (float64, NumPy's PCG64,
one core). Each cell is timed ``--repeats`` times in interleaved rounds (ours, SciPy,
ours, ...), the median reported; speedup = time_scipy / time_ours (> 1: ours faster).
``--float64`` runs ours in float64 (default float32, JAX's default). Run explicitly (it is
not a test)::

    python tests/benchmarks/bench_samplers.py [--draws 1000000] [--repeats 5] [--float64]

The development machine (2 cores shared with other jobs: the times are inflated and
noisy, the interleaved ratios are what counts; cpu is the process's time, all threads
together), 2026-12-03 10:00 UTC, threefry keys, median of 5, speedup wall / cpu::

      d  kappa   float32        float64
      3    0.5   1.40 / 1.54    0.95 / 0.98
      3    5.0   1.55 / 1.55    0.99 / 1.02
      3   50.0   1.79 / 1.79    1.01 / 0.98
      7    0.5   2.00 / 1.10    0.77 / 0.78
      7    5.0   1.25 / 1.20    0.91 / 0.82
      7   50.0   1.70 / 1.09    0.70 / 0.75
     20    0.5   2.34 / 1.34    1.71 / 1.65
     20    5.0   2.10 / 1.14    1.22 / 1.20
     20   50.0   2.01 / 1.14    1.28 / 1.21

Before the tangent normals were drawn by Box-Muller (jax.random.normal's inverse error
function and float64 ``jnp.cos``/``jnp.sin`` are slow on CPU, and so is a normal array of
shape (n, d)), float64 was at 0.46 to 0.58 (d = 7) and 0.58 to 0.90 (d = 3, kappa = 0.5)
against SciPy, and 2 times slower than now in the same process. Where the time goes now
(d = 7, float64, kappa = 5, cpu): the tangent direction 0.32 s, two thirds of it the
threefry bits of its 8 uniforms (each uniform, float32 or float64, costs a threefry block);
the cosine (Wood's rejection, first round plus queue) 0.18 s.
"""

import argparse
import time

import jax
import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=10**6)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--float64", action="store_true")
    args = parser.parse_args()
    if args.float64:
        jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import jax.random as jr
    from scipy import stats

    import spheresde

    dtype = jnp.float64 if args.float64 else jnp.float32
    n = args.draws
    rng = np.random.default_rng(0)
    print(f"{n} draws, ours in {jnp.dtype(dtype).name}, median of {args.repeats}; "
          f"{jax.devices()[0].platform}, {jax.device_count()} device(s)")
    print(f"{'d':>3} {'kappa':>6} {'time_ours [s]':>14} {'time_scipy [s]':>15} "
          f"{'speedup scipy/ours':>19} {'cpu_ours [s]':>13} {'cpu_scipy [s]':>14} "
          f"{'cpu speedup':>12}")
    speedups, cpu_speedups = [], []
    for d in (3, 7, 20):
        mu_np = np.zeros(d)
        mu_np[-1] = 1.0
        mu = jnp.asarray(mu_np, dtype)
        for kappa in (0.5, 5.0, 50.0):
            sample = jax.jit(lambda key, mu=mu, kappa=kappa: spheresde.sample_von_mises_fisher(
                key, mu, kappa, (n,)))
            jax.block_until_ready(sample(jr.key(0)))  # compile
            law = stats.vonmises_fisher(mu_np, kappa)
            ours, theirs = [], []
            for r in range(args.repeats):
                ours.append(_timed(sample, jr.key(r + 1)))
                theirs.append(_timed(law.rvs, n, random_state=rng))
            (t_ours, c_ours), (t_scipy, c_scipy) = np.median(ours, 0), np.median(theirs, 0)
            speedups.append(t_scipy / t_ours)
            cpu_speedups.append(c_scipy / c_ours)
            print(f"{d:>3} {kappa:>6} {t_ours:>14.4f} {t_scipy:>15.4f} {t_scipy / t_ours:>19.2f} "
                  f"{c_ours:>13.4f} {c_scipy:>14.4f} {c_scipy / c_ours:>12.2f}")
    print(f"speedup scipy/ours: min {min(speedups):.2f}, max {max(speedups):.2f}; "
          f"cpu: min {min(cpu_speedups):.2f}, max {max(cpu_speedups):.2f}")


def _timed(f, *args, **kwargs):
    """``(wall, cpu)`` seconds of ``f(*args, **kwargs)`` to its result's readiness; cpu is
    the process's, all threads together (a shared machine inflates wall times, less so
    cpu times)."""
    wall, cpu = time.perf_counter(), time.process_time()
    jax.block_until_ready(f(*args, **kwargs))
    return time.perf_counter() - wall, time.process_time() - cpu


if __name__ == "__main__":
    main()
