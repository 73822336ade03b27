"""Benchmark: ``spheresde.sample_von_mises_fisher`` against ``scipy.stats.vonmises_fisher``.

10^6 draws (``--draws``) for each d in {3, 7, 20} and kappa in {0.5, 5, 50}, mu = the last
basis vector. Ours: jitted (compiled before timing), ``block_until_ready``; SciPy:
``vonmises_fisher(mu, kappa).rvs(n, random_state=Generator)`` (float64, NumPy's PCG64,
one core). Each cell is timed ``--repeats`` times in interleaved rounds (ours, SciPy,
ours, ...), the median reported; speedup = time_scipy / time_ours (> 1: ours faster).
``--float64`` runs ours in float64 (default float32, JAX's default). Run explicitly (it is
not a test)::

    python tests/benchmarks/bench_samplers.py [--draws 1000000] [--repeats 5] [--float64]

The development machine (2 cores shared with a background job of 2 Dask workers, load
average 5 to 6: the times are inflated and noisy, the interleaved ratios are what counts;
cpu is the process's time, all threads together), 2026-12-03, threefry keys, median of 5,
speedup wall / cpu. Before: the code of 10:00 UTC, measured again at 12:58 UTC; after:
13:53 UTC (same session)::

                 float32                          float64
      d  kappa   before        after          before        after
      3    0.5   1.49 / 1.62   2.33 / 1.87    0.82 / 0.90   1.82 / 1.30
      3    5.0   1.48 / 1.50   2.01 / 1.88    0.50 / 0.54   1.47 / 1.33
      3   50.0   1.70 / 1.74   1.59 / 1.71    0.91 / 1.00   1.31 / 1.32
      7    0.5   1.23 / 1.21   1.26 / 1.26    0.72 / 0.97   1.23 / 1.14
      7    5.0   1.43 / 1.25   1.44 / 1.37    1.00 / 0.98   1.13 / 1.16
      7   50.0   1.27 / 1.31   1.29 / 1.25    0.70 / 0.72   0.99 / 1.00
     20    0.5   2.16 / 2.33   2.09 / 2.03    1.24 / 1.24   1.14 / 1.06
     20    5.0   2.45 / 2.38   2.02 / 2.16    1.06 / 1.25   1.48 / 1.57
     20   50.0   2.13 / 2.22   2.28 / 2.18    0.85 / 0.94   1.39 / 1.38

A second run after, float64, median of 7 (13:57 UTC): d = 3 1.55 to 1.62 / 1.40 to
1.56; d = 7 1.38 / 1.21 (kappa 0.5), 1.16 / 1.14 (5), 1.08 / 1.08 (50); d = 20 1.23 to
1.70 / 1.30 to 1.45. The weakest cell is d = 7, kappa = 50 in float64, at 0.99 to 1.14
over three runs of the new code: not clear of 1 by more than the noise here.

The old and the new sampler in one process, interleaved (median of 5, cpu time
old / new, the same machine): float64 1.40 to 1.76 at d = 3, 1.35 to 1.55 at d = 7,
1.12 to 1.19 at d = 20; float32 (x64 off) 1.15 to 1.55 at d = 3, 1.01 to 1.10 at
d = 7 and 20 (never slower).

What changed (the cost on CPU is threefry: each element of random bits, 32-bit or
64-bit, costs one 64-bit block, 16 to 20 ns here, more than the arithmetic of a float64
uniform): with x64 on, a block gives one full uniform or two 32-bit ones (angles,
heights, Wood's acceptance test; the law error this brings is stated in
``sample_von_mises_fisher``'s docstring); for 4 <= d <= 8 the tangent direction comes
from uniform spacings and angles (7 uniforms of 32 bits, 4 blocks at d = 7, no
logarithm) instead of 8 Box-Muller uniforms (8 blocks); up to d = 8 the tangent step is
formed coordinates first (on S^2 1.3 times faster). Where the time goes now (d = 7,
float64, kappa = 50, cpu): the tangent direction and the output 0.18 s (its 4 blocks
about 0.07 s), the cosine 0.14 s (first round 0.09 s, 2 blocks a candidate; the
rejection queue 0.05 s, a third of the draws at this kappa).
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
