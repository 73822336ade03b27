"""Throughput of the Transformer model's simulators (run explicitly; not a pytest test).

    .venv/bin/python tests/benchmarks/bench_model.py [--fraction 200]
    XLA_FLAGS=--xla_force_host_platform_device_count=2 .venv/bin/python ...   # 2 CPU devices

Prints, from one run: trajectory-steps per second of the discrete network, the particle
SDE (spheresde.solve_batch, geodesic Euler) and the reduced SDE (two_token.simulate_rho)
at d = 4 and d = 10; the span-noise network against a plain lax.scan drawing the full
d x d matrix every layer (d = 10, n = 2); the wall time of the exact curves (7 dims x 200
betas); and the paper-scale Figure 3 by the reduced SDE (7 dims x 15 betas x 40,000
trajectories x 50,000 steps), extrapolated from a run 1/fraction of its size.
Timings exclude compilation (each program runs once before it is timed). float32 (JAX's
default) throughout: x64 is not enabled here. On a shared machine wall time overstates
the cost, so rates are also given per CPU-second of this process (user + system time),
and the Figure 3 estimate for 2 dedicated cores divides by two such CPU-seconds
(assuming the lanes split over 2 devices, see above, each on its own core).
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import numpy as np

from spheresde import sample_uniform, solve_batch, two_token
from spheresde.transformer import simulate_network, transformer_sde

CPU_SECONDS = {}


def timed(fn):
    """Wall seconds of one call of ``fn`` after a warm-up call (compilation excluded);
    the CPU seconds of the same call are kept in ``CPU_SECONDS[wall]``."""
    jax.block_until_ready(fn(0))
    start, cpu = time.perf_counter(), os.times()
    jax.block_until_ready(fn(1))
    wall, end = time.perf_counter() - start, os.times()
    CPU_SECONDS[wall] = (end.user - cpu.user) + (end.system - cpu.system)
    return wall


def per_cpu(rate):
    """A wall-clock rate turned into a rate per CPU-second of the last timed call."""
    wall = list(CPU_SECONDS)[-1]
    return rate * wall / CPU_SECONDS[wall]


def network_rate(d, noise, runs=4000, layers=100, horizon=2.0):
    x0 = sample_uniform(jax.random.key(0), (runs, 2), d)
    seconds = timed(lambda s: simulate_network(jax.random.key(s), x0, 2.0, layers=layers,
                                               horizon=horizon, trajectories=runs,
                                               noise=noise).tokens)
    return runs * layers * horizon / seconds


def particle_rate(d, paths=2000, steps=200, dt=0.01):
    y0 = sample_uniform(jax.random.key(0), (paths, 2), d)
    sde = transformer_sde(2.0, d=d, noise="span", n=2)
    seconds = timed(lambda s: solve_batch(sde, y0, 0.0, steps * dt, dt,
                                          key=jax.random.key(s)).ys)
    return paths * steps / seconds


def reduced_rate(d, trajectories=200_000, steps=2000, dt=0.01, increments="two_point"):
    seconds = timed(lambda s: two_token.simulate_rho(
        jax.random.key(s), 2.0, d, trajectories=trajectories, dt=dt, horizon=steps * dt,
        increments=increments))
    return trajectories * steps / seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fraction", type=int, default=200,
                        help="Figure 3 run is 1/fraction of the paper's size (default 200: "
                             "1/20 of the trajectories and 1/10 of the horizon)")
    args = parser.parse_args()
    print(f"devices: {jax.devices()}")
    rates, cpu_rates = {}, {}
    for d in (4, 10):
        for what, fn, kwargs in (("network", network_rate, {"noise": "span"}),
                                 ("particles", particle_rate, {}),
                                 ("reduced", reduced_rate, {}),
                                 ("reduced-gauss", reduced_rate,
                                  {"trajectories": 50_000, "increments": "gaussian"})):
            rates[what, d] = fn(d, **kwargs)
            cpu_rates[what, d] = per_cpu(rates[what, d])
    print("\ntrajectory-steps per second (wall) and per CPU-second")
    for (what, d), rate in rates.items():
        print(f"  {what:>14} d={d:<3} {rate:10.3g} {cpu_rates[what, d]:10.3g}")

    full = network_rate(10, "full")
    print(f"\nnetwork d=10 n=2: span {rates['network', 10]:.3g}/s, full d x d {full:.3g}/s, "
          f"ratio {rates['network', 10] / full:.2f}x (target >= 2)")
    print(f"reduced SDE d=10: two-point / Gaussian increments "
          f"{rates['reduced', 10] / rates['reduced-gauss', 10]:.2f}x")

    betas, dims = np.linspace(0.05, 6.0, 200), np.arange(4, 11)[:, None]
    two_token.antipodal_probability(1.0, 4)  # build the lambdified coefficients once
    start = time.perf_counter()
    two_token.antipodal_probability(betas, dims)
    print(f"\nexact curves 7 dims x 200 betas: {time.perf_counter() - start:.2f} s (target < 10)")

    # Figure 3: one kernel for the whole (d, beta) grid.
    fig_betas, fig_dims = np.linspace(0.2, 4.0, 15), np.arange(4, 11)[:, None]
    traj, steps = 40_000, 50_000
    small_traj, small_T = traj // 20, 500.0 * 20 / args.fraction
    seconds = timed(lambda s: two_token.simulate_rho(
        jax.random.key(s), fig_betas, fig_dims, trajectories=small_traj, dt=0.01,
        horizon=small_T))
    done = 7 * 15 * small_traj * round(small_T / 0.01)
    total = 7 * 15 * traj * steps
    per_cpu_second = per_cpu(done / seconds)
    print(f"\nFigure 3 at 1/{args.fraction} size: {seconds:.1f} s, {done / seconds:.3g} steps/s "
          f"({per_cpu_second:.3g} per CPU-second); paper scale ({total:.2g} steps) extrapolated: "
          f"{seconds * total / done / 60:.1f} min at this run's wall rate, "
          f"{total / (2 * per_cpu_second) / 60:.1f} min on 2 dedicated cores (target < 15)")


if __name__ == "__main__":
    main()
