"""Benchmark: ``spheresde.sample_von_mises_fisher`` against ``scipy.stats.vonmises_fisher``.

10^6 draws (``--draws``) for each d in {3, 7, 20} and kappa in {0.5, 5, 50}, mu = the last
basis vector. Ours: jitted (compiled before timing), ``block_until_ready``; SciPy:
``vonmises_fisher(mu, kappa).rvs(n, random_state=Generator)`` (float64, NumPy's PCG64,
one core). Each cell is timed ``--repeats`` times in interleaved rounds (ours, SciPy,
ours, ...), the median reported; speedup = time_scipy / time_ours (> 1: ours faster).
``--float64`` runs ours in float64 (default float32, JAX's default). Run explicitly (it is
not a test)::

    python tests/benchmarks/bench_samplers.py [--draws 1000000] [--repeats 5] [--float64]

The development machine (2 cores shared with other jobs, load average 6 to 13: the
times are inflated and noisy, the interleaved ratios are what counts), 2026-12-02
14:20 UTC, threefry keys, median of 5::

    float32                                      float64
      d  kappa  ours [s]  scipy [s]  speedup       ours [s]  scipy [s]  speedup
      3    0.5    0.289     0.310     1.07          0.275     0.169     0.61
      3    5.0    0.243     0.280     1.15          0.313     0.221     0.71
      3   50.0    0.234     0.268     1.14          0.241     0.160     0.66
      7    0.5    1.133     0.931     0.82          1.329     0.699     0.53
      7    5.0    0.888     0.827     0.93          1.599     1.080     0.68
      7   50.0    1.167     1.035     0.89          1.588     0.834     0.53
     20    0.5    1.833     3.294     1.80          1.543     2.139     1.39
     20    5.0    1.985     4.074     2.05          1.718     2.262     1.32
     20   50.0    1.322     2.276     1.72          1.339     1.126     0.84

The old sampler (a vmapped per-draw while loop with a key split per draw) was 10 to 90
times slower than SciPy. Where the time goes now (d = 7, float32, kappa = 5, one
interleaved run): the cosine (Wood's rejection, first round plus queue) about 0.3 s,
the tangent direction (7 normals per draw, most of it generating them) 0.35 to 0.55 s.
In float64 every uniform costs two 32-bit words of threefry, hence the lower ratios.
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
