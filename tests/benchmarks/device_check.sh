#!/usr/bin/env bash
# A paper-scale subset on the accelerator JAX sees (run explicitly; not a test).
#
#   tests/benchmarks/device_check.sh                  # GPU machine: paper sizes
#   TRAJECTORIES=200 HORIZON=5 tests/benchmarks/device_check.sh   # a quick look on a CPU
#
# Prints the devices, then for the discrete network (two tokens, L = 100) at d = 4 and
# d = 10, near beta_c and far from it: trajectories x layers, wall time (after one
# compiling run at the same size), trajectory-steps per second and the share of steps
# that early absorption left to simulate; then one full point of the reduced SDE.
# Expected on a GPU: the paper's 40,000 trajectories at T = 500 per point in seconds.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python}
export TRAJECTORIES=${TRAJECTORIES:-40000} HORIZON=${HORIZON:-500} LAYERS=${LAYERS:-100}

"$PYTHON" - <<'PY'
import os
import time

import jax
import numpy as np

from spheresde import PureNoise, two_token
from spheresde.transformer._absorption import absorbing_network, absorbing_rho

n, horizon, layers = (int(os.environ["TRAJECTORIES"]), float(os.environ["HORIZON"]),
                      int(os.environ["LAYERS"]))
steps = round(horizon * layers)
print("devices:", jax.devices(), "| x64:", jax.config.jax_enable_x64)
print(f"trajectories {n}, L = {layers}, T = {horizon:g} ({steps} layers), bound 1e-6")


def timed(fn):
    start = time.perf_counter()
    fn()
    first = time.perf_counter() - start
    start = time.perf_counter()
    result = fn()
    return first, time.perf_counter() - start, result


for d in (4, 10):
    for beta in (round(float(two_token.critical_beta(d)) + 0.05, 3), 3.0):
        first, wall, (codes, work) = timed(lambda d=d, beta=beta: absorbing_network(
            jax.random.key(0), beta=beta, d=d, weights=PureNoise(), trajectories=n,
            layers=layers, horizon=horizon, tol=1e-2, bound=1e-6))
        p = np.bincount(codes, minlength=3) / n
        print(f"network d={d:2d} beta={beta:5.3f}: {wall:7.2f} s (first run {first:6.2f} s), "
              f"{n * steps / wall:.3e} trajectory-steps/s counted in full, steps simulated "
              f"{work / (n * steps):6.1%}, P(single, antipodal, undecided) = "
              f"{p.round(4).tolist()}, exact antipodal "
              f"{float(two_token.antipodal_probability(beta, d)):.4f}")

first, wall, (codes, work) = timed(lambda: absorbing_rho(
    jax.random.key(0), beta=1.5, d=4, eps=1.0, mu=0.0, trajectories=n, dt=1 / layers,
    horizon=horizon, tol=1e-2, bound=1e-6))
print(f"reduced d= 4 beta=1.500: {wall:7.2f} s (first run {first:6.2f} s), steps simulated "
      f"{work / (n * steps):6.1%}")
PY
