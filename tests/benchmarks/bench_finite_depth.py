"""Finite depth: Monte Carlo of the chains against the limit's law P and their own P_L.

    .venv/bin/python tests/benchmarks/bench_finite_depth.py [--only network,reduced]
        [--trajectories N] [--horizon T] [--layers 5,10,20,100]

Accuracy, not speed. For each (d, beta), near beta_c(d) and beyond it, and each L: the
Monte Carlo P(antipodal) of the chain with L layers per unit depth-time (``network``:
the two-token network, :func:`spheresde._absorption.absorbing_network`; ``reduced``: the
Euler chain of the z-SDE with +-1 increments, :func:`spheresde._absorption.absorbing_rho`),
the limit SDE's law P at the same T and tol, and the first-order law of the chain
P_L = P + C/L (:func:`spheresde.two_token.outcome_probabilities` with ``layers=L``).
z = (MC - reference) / se with se = sqrt(p (1 - p) / N), p the reference (as REPORT.md's
``standard_error``, which takes the larger of that and the estimate's). The column
``L^2 (MC - P_L)`` stays of one size as L grows if the remainder is O(1/L^2); at small L
and small P, P + C/L can fall below 0 (clipped): the first-order term is then as large
as P itself and the expansion is not yet accurate there. Fixed keys, float32, certified
absorption at 1e-6; the wall time of each block is printed.
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np

from spheresde import PureNoise, two_token
from spheresde._absorption import absorbing_network, absorbing_rho

BOUND = 1e-6
TOL = 1e-2
POINTS = ((4, 1.0), (7, 1.2), (10, 2.0))  # beta_c = 0.66, 1.15, 1.38


def monte_carlo(chain: str, key, d: int, beta: float, layers: int, horizon: float,
                trajectories: int) -> float:
    """P(antipodal) of ``trajectories`` runs of the chain."""
    if chain == "network":
        codes, _ = absorbing_network(key, beta=beta, d=d, weights=PureNoise(),
                                     trajectories=trajectories, layers=layers,
                                     horizon=horizon, tol=TOL, bound=BOUND)
    else:
        codes, _ = absorbing_rho(key, beta=beta, d=d, eps=1.0, mu=0.0,
                                 trajectories=trajectories, dt=1.0 / layers, horizon=horizon,
                                 tol=TOL, bound=BOUND)
    return float(np.mean(codes == 1))


def table(chain: str, trajectories: int, horizon: float, layers: tuple[int, ...]) -> None:
    start = time.perf_counter()
    print(f"\n{chain}: {trajectories} trajectories per point, T = {horizon:g}, tol = {TOL:g}")
    print("| d | beta | L | MC | P | z vs P | P_L | z vs P_L | L^2 (MC - P_L) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for d, beta in POINTS:
        p = float(two_token.outcome_probabilities(beta, d, horizon=horizon, tol=TOL).antipodal)
        for k, L in enumerate(layers):
            p_l = float(two_token.outcome_probabilities(
                beta, d, horizon=horizon, tol=TOL, layers=L, chain=chain).antipodal)
            mc = monte_carlo(chain, jax.random.key(1000 * d + k), d, beta, L, horizon,
                             trajectories)

            z_p, z_l = ((mc - ref) / np.sqrt(max(ref * (1 - ref), 1e-12) / trajectories)
                        for ref in (p, p_l))
            print(f"| {d} | {beta:g} | {L} | {mc:.4f} | {p:.4f} | {z_p:+.1f} | {p_l:.4f} | "
                  f"{z_l:+.1f} | {L * L * (mc - p_l):+.2f} |", flush=True)
    print(f"wall {time.perf_counter() - start:.0f} s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="network,reduced")
    parser.add_argument("--trajectories", type=int, default=None,
                        help="per point (default 40,000 network, 400,000 reduced)")
    parser.add_argument("--horizon", type=float, default=10.0)
    parser.add_argument("--layers", default="5,10,20,100")
    args = parser.parse_args()
    layers = tuple(int(v) for v in args.layers.split(","))
    for chain in args.only.split(","):
        n = args.trajectories or (40_000 if chain == "network" else 400_000)
        table(chain, n, args.horizon, layers)


if __name__ == "__main__":
    main()
