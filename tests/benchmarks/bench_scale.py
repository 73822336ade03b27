"""The paper's sizes: absorption speed-up, Dask overhead, paper-scale Figure 3 (run explicitly).

    .venv/bin/python tests/benchmarks/bench_scale.py [--only absorption,network,layers,reduced,dask]

``absorption``  wall time with and without certified early absorption (same seed, same
                trajectories) of the reduced SDE (4,000 trajectories, dt = 0.01, T = 500)
                and of the discrete network (1,000 trajectories, L = 100, T = 500), near
                beta_c(d) and far from it; the ratio is the speed-up.
``network``     the paper-scale Figure 3 through the discrete network (d = 4..10,
                15 betas in [0.2, 3], 40,000 trajectories, L = 100, T = 500), measured
                on a subset (d = 4, 7, 10 x 3 betas, one chunk of 10,000 trajectories
                at the full horizon, with absorption, compiled beforehand) and
                extrapolated. The full run is the command in docs/theory/scaling.rst.
``layers``      accuracy, not speed: the network's P(antipodal) at d = 9, beta = 2 (40,000
                trajectories, T = 500, absorption on) for L = 25, 50, 100, 200 against
                the exact limit: the gap is the network's own O(1/L) distance to it.
``reduced``     the same Figure 3 through the reduced SDE, run in full (one chunk of
                40,000 trajectories per point), with its wall time.
``dask``        ``spheresde reproduce --scale quick`` serial vs ``--workers 2`` (two
                subprocesses, separate output directories); the ratio is the overhead.

Timings exclude compilation where a program is reused (each simulator runs once before
it is timed); the network extrapolation includes nothing for compilation. float32.
"""

from __future__ import annotations

import argparse
import functools
import os
import subprocess
import sys
import tempfile
import time

import jax
import numpy as np

from spheresde import two_token
from spheresde.transformer import PureNoise
from spheresde.transformer._absorption import absorbing_network, absorbing_rho, absorption_levels

BOUND = 1e-6
TOL = 1e-2


def timed(fn):
    """(wall seconds, result) of ``fn()`` after one warm-up call."""
    fn()
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def near_and_far(d):
    beta_c = float(two_token.critical_beta(d))
    return [round(beta_c + 0.05, 3), 1.5 * max(beta_c, 1.0), 3.0]


def compare(label, simulate, trajectories, **sizes):
    """Time ``simulate`` with absorption off and on (same seed) and print the speed-up."""
    runs = {}
    for bound in (0.0, BOUND):
        runs[bound] = timed(functools.partial(simulate, jax.random.key(1), bound=bound,
                                              trajectories=trajectories, tol=TOL, **sizes))
    (off, (c_off, w_off)), (on, (c_on, w_on)) = runs[0.0], runs[BOUND]
    print(f"  {label} d={sizes['d']:2d} beta={sizes['beta']:5.3f}: off {off:6.2f} s, "
          f"on {on:6.2f} s, speed-up {off / on:5.1f}x, steps simulated {w_on / w_off:6.1%}, "
          f"classes changed {int(np.sum(c_off != c_on))}/{trajectories}")


def absorption():
    print("absorption speed-up (same seed, same trajectories; bound 1e-6)")
    for d in (4, 10):
        for beta in near_and_far(d):
            compare("reduced", absorbing_rho, 4000, beta=beta, d=d, eps=1.0, mu=0.0, layers=100,
                    steps=50_000)
    for d in (4, 10):
        for beta in near_and_far(d)[::2]:
            compare("network", absorbing_network, 1000, beta=beta, d=d, weights=PureNoise(),
                    layers=100, steps=50_000)


def network():
    print("paper-scale Figure 3 through the discrete network (estimate from a subset)")
    betas = np.linspace(0.2, 3.0, 15)
    sample, measured, chunk = betas[[0, 7, 14]], {}, 10_000
    for d in (4, 7, 10):
        costs = []
        # compile the chunk-size shapes once (a real sweep compiles them once per process)
        absorbing_network(jax.random.key(9), beta=1.0, d=d, weights=PureNoise(),
                          trajectories=chunk, layers=100, steps=500, tol=TOL, bound=BOUND)
        for beta in sample:
            start = time.perf_counter()
            codes, work = absorbing_network(jax.random.key(2), beta=float(beta), d=d,
                                            weights=PureNoise(), trajectories=chunk,
                                            layers=100, steps=50_000, tol=TOL, bound=BOUND)
            costs.append(time.perf_counter() - start)
            exact = float(two_token.antipodal_probability(beta, d))
            print(f"  d={d:2d} beta={beta:4.2f}: {costs[-1]:6.2f} s per chunk of {chunk}, "
                  f"steps simulated {work / (chunk * 50_000):6.2%}, P(antipodal) "
                  f"{np.mean(codes == 1):.4f} (exact limit {exact:.4f})")
        measured[d] = np.mean(costs) * 4 * len(betas)  # 40,000 trajectories, 15 betas
    total = sum(np.interp(d, list(measured), list(measured.values())) for d in range(4, 11))
    print(f"  full run in one process (d = 4..10 interpolated from d = 4, 7, 10; each beta "
          f"costing the mean of its d): {total / 60:.0f} min")
    z_lo, z_hi = absorption_levels(3.0, 10.0, 1.0, 0.0, TOL, BOUND)
    print(f"  absorption bound {BOUND:g} (e.g. d=10 beta=3: 1 - rho_+ = "
          f"{1 - np.tanh(z_hi):.2e}, 1 + rho_- = {1 + np.tanh(z_lo):.2e})")


def layers():
    print("network vs its limit as L grows (d = 9, beta = 2, 40,000 trajectories, T = 500)")
    d, beta, n = 9, 2.0, 40_000
    p = float(two_token.antipodal_probability(beta, d))
    se = np.sqrt(p * (1 - p) / n)
    for L in (25, 50, 100, 200):
        codes = np.concatenate([absorbing_network(
            jax.random.key(100 + k), beta=beta, d=d, weights=PureNoise(), trajectories=n // 4,
            layers=L, steps=500 * L, tol=TOL, bound=BOUND)[0] for k in range(4)])
        gap = np.mean(codes == 1) - p
        print(f"  L={L:3d}: P(antipodal) - exact {gap:+.5f} ({gap / se:+.1f} s.e.), "
              f"L x gap {L * gap:+.2f}")


def reduced():
    print("paper-scale Figure 3 through the reduced SDE (full run, absorption on)")
    betas = np.linspace(0.2, 3.0, 15)
    worst, start = (0.0, None), time.perf_counter()
    absorbing_rho(jax.random.key(0), beta=1.0, d=4, eps=1.0, mu=0.0, trajectories=40_000,
                  layers=100, steps=200, tol=TOL, bound=BOUND)  # compile the full-size shapes
    compile_s, start = time.perf_counter() - start, time.perf_counter()
    for d in range(4, 11):
        exact = two_token.antipodal_probability(betas, d)
        for beta, p in zip(betas, exact, strict=True):
            codes, _ = absorbing_rho(jax.random.key(int(beta * 1000) + d), beta=float(beta),
                                     d=d, eps=1.0, mu=0.0, trajectories=40_000, layers=100,
                                     steps=50_000, tol=TOL, bound=BOUND)
            gap = abs(np.mean(codes == 1) - p)
            if gap > worst[0]:
                worst = (gap, (d, float(beta), float(p), float(np.mean(codes == 1)),
                               float(np.mean(codes == 2))))
    wall = time.perf_counter() - start
    d, beta, p, mc, undecided = worst[1]
    print(f"  wall {wall:.0f} s (+ {compile_s:.0f} s warm-up); largest |MC - exact| "
          f"{worst[0]:.4f} at d={d} beta={beta:.1f} (exact {p:.4f}, MC {mc:.4f}, "
          f"s.e. {np.sqrt(max(mc * (1 - mc), 1e-12) / 40_000):.4f}, undecided {undecided:.4f})")


def dask():
    print("reproduce --scale quick: serial vs --workers 2")
    walls = {}
    for label, extra in (("serial", []), ("--workers 2", ["--workers", "2"])):
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "spheresde.cli", "reproduce", "--out", out,
                            "--quiet", *extra], check=True,
                           env={**os.environ, "JAX_PLATFORMS": "cpu"})
            walls[label] = time.perf_counter() - start
        print(f"  {label}: {walls[label]:.0f} s")
    print(f"  ratio --workers 2 / serial: {walls['--workers 2'] / walls['serial']:.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="absorption,network,layers,reduced,dask")
    for name in parser.parse_args().only.split(","):
        {"absorption": absorption, "network": network, "layers": layers, "reduced": reduced,
         "dask": dask}[name]()


if __name__ == "__main__":
    main()
