"""Benchmark: ``spheresde.sample_von_mises_fisher`` against ``scipy.stats.vonmises_fisher``.

10^6 draws (``--draws``) for each d in {3, 7, 20} and kappa in {0.5, 5, 50}, mu = the last
basis vector. Ours: jitted (compiled before timing), ``block_until_ready``; SciPy:
``vonmises_fisher(mu, kappa).rvs(n, random_state=Generator)`` (float64, NumPy's PCG64,
one core). Each cell is timed ``--repeats`` times in interleaved rounds (ours, SciPy,
ours, ...), the median reported; speedup = time_scipy / time_ours (> 1: ours faster).
``--float64`` runs ours in float64 (default float32, JAX's default). Run explicitly (it is
not a test)::

    python tests/benchmarks/bench_samplers.py [--draws 1000000] [--repeats 5] [--float64]
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
          f"{'speedup scipy/ours':>19}")
    speedups = []
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
                start = time.perf_counter()
                jax.block_until_ready(sample(jr.key(r + 1)))
                ours.append(time.perf_counter() - start)
                start = time.perf_counter()
                law.rvs(n, random_state=rng)
                theirs.append(time.perf_counter() - start)
            t_ours, t_scipy = np.median(ours), np.median(theirs)
            speedups.append(t_scipy / t_ours)
            print(f"{d:>3} {kappa:>6} {t_ours:>14.4f} {t_scipy:>15.4f} {t_scipy / t_ours:>19.2f}")
    print(f"speedup scipy/ours: min {min(speedups):.2f}, max {max(speedups):.2f}")


if __name__ == "__main__":
    main()
