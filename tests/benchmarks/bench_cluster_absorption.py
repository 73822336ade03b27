"""Certified absorption near the single cluster of n > 2 tokens: steps and wall time (run
explicitly).

    .venv/bin/python tests/benchmarks/bench_cluster_absorption.py

The points of the quick ``tokens`` sweep (n = 3, 4, 6, d = 3, sigma = 1, betas 0.5..4,
400 trajectories, L = 20, T = 30) and a small hybrid case (n = 3, d = 3, mu = 1,
eps = 0.5 and 1, betas 2 and 4, 400 trajectories, L = 10, T = 50), each through
:func:`spheresde.transformer._absorption.absorbing_tokens` with ``bound`` 0 and 1e-6 at the same
seed: trajectory-steps simulated, wall time after one warm-up call of each (compilation
excluded), and the number of trajectories whose class differs. float32.
"""

from __future__ import annotations

import time

import jax
import numpy as np

from spheresde.transformer import Hybrid, PureNoise
from spheresde.transformer._absorption import absorbing_tokens, cluster_absorption_level

TOL = 1e-2
BOUND = 1e-6


def timed(fn):
    """(wall seconds, result) of ``fn()`` after one warm-up call."""
    fn()
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def compare(label, **sizes):
    """One point with absorption off and on: steps, seconds, changed classifications."""
    key = jax.random.key(0)
    off_s, (off, _, off_work) = timed(lambda: absorbing_tokens(key, bound=0.0, **sizes))
    on_s, (on, _, on_work) = timed(lambda: absorbing_tokens(key, bound=BOUND, **sizes))
    mu, eps = sizes["weights"].limit()
    level = cluster_absorption_level(sizes["tokens"], sizes["beta"], sizes["d"], eps, mu, TOL,
                                     BOUND)
    print(f"{label:32s} v_abs {level:8.2e}  steps {on_work / off_work:6.1%}  "
          f"wall {off_s:6.2f} s -> {on_s:6.2f} s  changed {int(np.sum(on != off))}")
    return off_work, on_work, off_s, on_s


def main():
    totals = np.zeros(4)
    for n in (3, 4, 6):
        for beta in (0.5, 1.0, 2.0, 3.0, 4.0):
            totals += compare(f"tokens n={n} beta={beta:g}", tokens=n, beta=beta, d=3,
                              weights=PureNoise(), trajectories=400, layers=20, steps=600,
                              tol=TOL)
    print(f"tokens total: steps {totals[1] / totals[0]:.1%}, wall {totals[2]:.1f} s -> "
          f"{totals[3]:.1f} s")
    totals = np.zeros(4)
    for eps in (0.5, 1.0):
        for beta in (2.0, 4.0):
            totals += compare(f"hybrid n=3 eps={eps:g} beta={beta:g}", tokens=3, beta=beta, d=3,
                              weights=Hybrid(mu=1.0, eps=eps), trajectories=400, layers=10,
                              steps=500, tol=TOL)
    print(f"hybrid total: steps {totals[1] / totals[0]:.1%}, wall {totals[2]:.1f} s -> "
          f"{totals[3]:.1f} s")


if __name__ == "__main__":
    main()
