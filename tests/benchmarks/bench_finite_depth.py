"""Finite depth: Monte Carlo of the chains against the limit's law P and their own P_L.

    .venv/bin/python tests/benchmarks/bench_finite_depth.py [--only network,reduced,shift]
        [--trajectories N] [--horizon T] [--layers 5,10,20,100]
    .venv/bin/python tests/benchmarks/bench_finite_depth.py --only exact,convergence
        [--trajectories N] [--horizon T] [--layers 5,10,20] [--cache FILE]
    .venv/bin/python tests/benchmarks/bench_finite_depth.py --only reduced-exact
        [--trajectories N] [--horizon T] [--layers 5,10,20]

``exact``: the network's exact law at depth L (``outcome_probabilities(..., law="exact")``)
against a Monte Carlo of the network (pair coordinates, certified absorption), with the
first-order law beside it; the Monte Carlo estimates are cached in ``--cache`` (JSON,
keyed by d, beta, L, T, N and the key), so a rerun only computes the laws; a cached
estimate with more trajectories than asked is used instead (the 2,000,000-trajectory rows
of ``--only network`` at T = 10 are in the committed cache). ``convergence``
(no Monte Carlo): ``L (P_L - P)`` of the exact law against the first-order constant C as L
grows. The wall time of each exact law is printed. ``reduced-exact``: the same for the
reduced Euler chain (``chain="reduced"``) against its own Monte Carlo (absorbing_rho, not
cached), with ``L (P_L - P)`` against its C out to L = 320.

Accuracy, not speed. For each (d, beta), near beta_c(d) and beyond it, and each L: the
Monte Carlo P(antipodal) of the chain with L layers per unit depth-time (``network``:
the two-token network, :func:`spheresde.transformer._absorption.absorbing_network`;
``reduced``: the Euler chain of the z-SDE with +-1 increments,
:func:`spheresde.transformer._absorption.absorbing_rho`),
the limit SDE's law P at the same T and tol, and the first-order law of the chain
P_L = P + C/L (:func:`spheresde.two_token.outcome_probabilities` with ``layers=L``).
z = (MC - reference) / se, se the larger of the estimate's and the reference's binomial
sqrt(p (1 - p) / N) (REPORT.md's rule). ``L (MC - P)`` tends to C, and the column
``L^2 (MC - P_L)`` stays of one size as L grows if the remainder is O(1/L^2); at small L
and small P, P + C/L can fall below 0 (clipped): the first-order term is then as large
as P itself and the expansion is not yet accurate there. Fixed keys, float32, certified
absorption at 1e-6; the wall time of each block is printed.

``shift`` (no Monte Carlo): the apparent critical point of the paper's network (L = 100,
T = 500, tol = 1e-2), the first beta where P_L(antipodal) exceeds 1e-3, against the
limit's at the same T and against beta_c(d), d = 4..10 (bisection to 1e-3 in beta on one
grid level of the solver, whose error there is far below 1e-4).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time
import warnings

import jax
import numpy as np

from spheresde import two_token
from spheresde.transformer import PureNoise
from spheresde.transformer._absorption import absorbing_network, absorbing_rho
from spheresde.transformer._network import network_depth
from spheresde.transformer._outcomes import binomial_stderr

BOUND = 1e-6
TOL = 1e-2
POINTS = ((4, 1.0), (7, 1.2), (10, 2.0))  # beta_c = 0.66, 1.15, 1.38


CHUNK = 200_000  # trajectories per compiled batch (memory)


def monte_carlo(chain: str, key, d: int, beta: float, layers: int, horizon: float,
                trajectories: int) -> float:
    """P(antipodal) of ``trajectories`` runs of the chain, in batches of :data:`CHUNK`
    (batch ``k`` from ``fold_in(key, k)``)."""
    hits = 0
    for k, start in enumerate(range(0, trajectories, CHUNK)):
        n = min(CHUNK, trajectories - start)
        sub = jax.random.fold_in(key, k)
        if chain == "network":
            codes, _ = absorbing_network(sub, beta=beta, d=d, weights=PureNoise(),
                                         trajectories=n, layers=layers,
                                         steps=network_depth(horizon, layers),
                                         tol=TOL, bound=BOUND)
        else:
            codes, _ = absorbing_rho(sub, beta=beta, d=d, eps=1.0, mu=0.0, trajectories=n,
                                     layers=layers, steps=network_depth(horizon, layers), tol=TOL,
                                     bound=BOUND)
        hits += int(np.sum(codes == 1))
    return hits / trajectories


def table(chain: str, trajectories: int, horizon: float, layers: tuple[int, ...],
          points=POINTS) -> None:
    """One row per (d, beta, L). se is the larger of the estimate's and the reference's
    binomial standard error (REPORT.md's rule); ``L (MC - P)`` estimates the first-order
    constant C (its error bar L se), ``L^2 (MC - P_L)`` the second-order one."""
    start = time.perf_counter()
    print(f"\n{chain}: T = {horizon:g}, tol = {TOL:g}, trajectories per row in the table")
    print("| d | beta | L | N | MC +- se | P | z vs P | P_L = P + C/L | z vs P_L | "
          "C | L (MC - P) | L^2 (MC - P_L) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for d, beta in points:
        p = float(two_token.outcome_probabilities(beta, d, horizon=horizon, tol=TOL).antipodal)
        for L in layers:
            p_l = float(two_token.outcome_probabilities(
                beta, d, horizon=horizon, tol=TOL, layers=L, chain=chain).antipodal)
            n = trajectories if L < 100 else trajectories // 2
            mc = monte_carlo(chain, jax.random.key(1000 * d + L), d, beta, L, horizon, n)
            se_mc = float(binomial_stderr(mc, n))

            def z(ref, mc=mc, n=n, se_mc=se_mc):
                return (mc - ref) / max(se_mc, float(binomial_stderr(ref, n)))

            print(f"| {d} | {beta:g} | {L} | {n:,} | {mc:.5f} +- {se_mc:.5f} | {p:.5f} | "
                  f"{z(p):+.1f} | {p_l:.5f} | {z(p_l):+.1f} | {L * (p_l - p):+.4f} | "
                  f"{L * (mc - p):+.4f} +- {L * se_mc:.4f} | "
                  f"{L * L * (mc - p_l):+.3f} +- {L * L * se_mc:.3f} |", flush=True)
    print(f"wall {time.perf_counter() - start:.0f} s")


#: near-critical and large beta for each d (beta_c = 0.66, 1.15, 1.38)
EXACT_POINTS = ((4, 1.0), (4, 2.5), (7, 1.2), (7, 2.5), (10, 2.0), (10, 3.0))
CACHE = pathlib.Path(__file__).with_name("finite_depth_mc.json")


def exact_table(trajectories: int, horizon: float, layers: tuple[int, ...], cache: pathlib.Path,
                points=EXACT_POINTS) -> None:
    """The exact law against cached Monte Carlo; z = (MC - law) / se (the larger binomial se)."""
    store = json.loads(cache.read_text()) if cache.exists() else {}
    print(f"\nexact law of the network: T = {horizon:g}, tol = {TOL:g}")
    print("| d | beta | L | N | MC +- se | exact | z | first-order | z | exact wall s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    zs = []
    for d, beta in points:
        for L in layers:
            stem = f"d={d} beta={beta:g} L={L} T={horizon:g} "
            cached = [int(k[len(stem) + 2:].split()[0]) for k in store if k.startswith(stem)]
            n = max([c for c in cached if c >= trajectories], default=trajectories)
            name = f"{stem}N={n} key={1000 * d + L}"
            if name not in store:
                store[name] = monte_carlo("network", jax.random.key(1000 * d + L), d, beta, L,
                                          horizon, n)
                cache.write_text(json.dumps(store, indent=1, sort_keys=True))
            mc = store[name]
            start = time.perf_counter()
            exact = float(two_token.outcome_probabilities(
                beta, d, horizon=horizon, tol=TOL, layers=L, law="exact").antipodal)
            wall = time.perf_counter() - start
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", two_token.FirstOrderWarning)
                first = float(two_token.outcome_probabilities(
                    beta, d, horizon=horizon, tol=TOL, layers=L).antipodal)
            se_mc = float(binomial_stderr(mc, n))

            def z(ref, mc=mc, se_mc=se_mc, n=n):
                return (mc - ref) / max(se_mc, float(binomial_stderr(ref, n)))

            zs.append(z(exact))
            print(f"| {d} | {beta:g} | {L} | {n:,} | {mc:.5f} +- {se_mc:.5f} | "
                  f"{exact:.5f} | {z(exact):+.1f} | {first:.5f} | {z(first):+.1f} | "
                  f"{wall:.1f} |", flush=True)
    print(f"z of the exact law: max |z| {np.max(np.abs(zs)):.1f}, mean {np.mean(zs):+.2f}")


#: near-critical and large beta for each d, for the reduced chain
REDUCED_POINTS = ((4, 1.0), (4, 3.0), (7, 1.2), (7, 3.0))


def reduced_exact_table(trajectories: int, horizon: float, layers: tuple[int, ...],
                        points=REDUCED_POINTS) -> None:
    """The reduced chain's exact law (``chain="reduced", law="exact"``) against its own Monte
    Carlo (absorbing_rho, not cached: it is cheap) and, without Monte Carlo, L (P_L - P)
    against its first-order C; z as in :func:`exact_table`."""
    print(f"\nexact law of the reduced Euler chain: T = {horizon:g}, tol = {TOL:g}")
    print("| d | beta | L | N | MC +- se | exact | z | first-order | z | L (P_L - P) | C |"
          " exact wall s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    zs = []
    for d, beta in points:
        p = float(two_token.outcome_probabilities(beta, d, horizon=horizon, tol=TOL).antipodal)
        for L in layers:
            mc = monte_carlo("reduced", jax.random.key(2000 * d + L), d, beta, L, horizon,
                             trajectories)
            start = time.perf_counter()
            exact = float(two_token.outcome_probabilities(
                beta, d, horizon=horizon, tol=TOL, layers=L, chain="reduced",
                law="exact").antipodal)
            wall = time.perf_counter() - start
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", two_token.FirstOrderWarning)
                first = float(two_token.outcome_probabilities(
                    beta, d, horizon=horizon, tol=TOL, layers=L, chain="reduced").antipodal)
            se_mc = float(binomial_stderr(mc, trajectories))

            def z(ref, mc=mc, se_mc=se_mc):
                return (mc - ref) / max(se_mc, float(binomial_stderr(ref, trajectories)))

            zs.append(z(exact))
            print(f"| {d} | {beta:g} | {L} | {trajectories:,} | {mc:.5f} +- {se_mc:.5f} | "
                  f"{exact:.5f} | {z(exact):+.1f} | {first:.5f} | {z(first):+.1f} | "
                  f"{L * (exact - p):+.4f} | {L * (first - p):+.4f} | {wall:.2f} |",
                  flush=True)
    print(f"z of the exact law: max |z| {np.max(np.abs(zs)):.1f}, mean {np.mean(zs):+.2f}")
    print("\nL (P_L - P) of the reduced chain's exact law against C (no Monte Carlo)")
    print("| d | beta | L | P_L | L (P_L - P) | C | wall s |")
    print("|---|---|---|---|---|---|---|")
    for d, beta in points:
        p = float(two_token.outcome_probabilities(beta, d, horizon=horizon, tol=TOL).antipodal)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", two_token.FirstOrderWarning)
            c = 20 * (float(two_token.outcome_probabilities(
                beta, d, horizon=horizon, tol=TOL, layers=20, chain="reduced").antipodal) - p)
        for L in (20, 40, 80, 160, 320):
            start = time.perf_counter()
            exact = float(two_token.outcome_probabilities(
                beta, d, horizon=horizon, tol=TOL, layers=L, chain="reduced",
                law="exact").antipodal)
            wall = time.perf_counter() - start
            print(f"| {d} | {beta:g} | {L} | {exact:.6f} | {L * (exact - p):+.5f} | {c:+.5f} | "
                  f"{wall:.2f} |", flush=True)


def convergence(horizon: float, points=POINTS, layers=(5, 10, 20, 40, 80)) -> None:
    """L (P_L - P) of the exact law, against C of the first-order law (no Monte Carlo)."""
    print(f"\nconvergence to P + C/L: T = {horizon:g}, tol = {TOL:g}")
    print("| d | beta | L | P | exact P_L | L (P_L - P) | C |")
    print("|---|---|---|---|---|---|---|")
    for d, beta in points:
        p = float(two_token.outcome_probabilities(beta, d, horizon=horizon, tol=TOL).antipodal)
        for L in layers:
            exact = float(two_token.outcome_probabilities(
                beta, d, horizon=horizon, tol=TOL, layers=L, law="exact").antipodal)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", two_token.FirstOrderWarning)
                first = float(two_token.outcome_probabilities(
                    beta, d, horizon=horizon, tol=TOL, layers=L).antipodal)
            print(f"| {d} | {beta:g} | {L} | {p:.5f} | {exact:.5f} | {L * (exact - p):+.4f} | "
                  f"{L * (first - p):+.4f} |", flush=True)


def _first_above(law, lo: float, hi: float, level: float = 1e-3) -> float:
    """The beta in [lo, hi] where ``law(beta)`` (increasing there) crosses ``level``."""
    while hi - lo > 1e-3:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if law(mid) < level else (lo, mid)
    return (lo + hi) / 2


def shift(layers: int = 100, horizon: float = 500.0) -> None:
    from spheresde.transformer.two_token import _finite_horizon as fh

    start = time.perf_counter()
    print(f"\napparent critical point: first beta with P(antipodal) > 1e-3 at T = {horizon:g}")
    print(f"| d | beta_c(d) | limit at T | network, L = {layers} | shift |")
    print("|---|---|---|---|---|")
    for d in range(4, 11):
        beta_c = float(two_token.critical_beta(d))

        def law(beta, chain, d=d):
            rows = np.atleast_2d(fh._solve(beta, d, 1.0, 0.0, TOL, horizon, None, fh.CELLS,
                                           chain))
            return rows[0, 0] + (rows[1, 0] / layers if chain else 0.0)

        if d == 10:  # the row the paper-scale rerun measured: the predicted offset in s.e.
            for beta in np.linspace(0.2, 3.0, 15)[8:]:
                p, p_l = law(beta, None), law(beta, "network")
                se = np.sqrt(p * (1 - p) / 40_000)
                print(f"|   d=10 beta={beta:.1f}: P {p:.4f}, P_L {p_l:.4f}, "
                      f"(P_L - P)/se(40,000) {(p_l - p) / se:+.1f} |", flush=True)
        limit = _first_above(lambda b: law(b, None), beta_c - 0.5, beta_c + 1.0)
        network = _first_above(lambda b: law(b, "network"), beta_c - 0.5, beta_c + 1.0)
        print(f"| {d} | {beta_c:.3f} | {limit:.3f} | {network:.3f} | {network - limit:+.3f} |",
              flush=True)
    print(f"wall {time.perf_counter() - start:.0f} s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="network,reduced,shift")
    parser.add_argument("--trajectories", type=int, default=None,
                        help="per row, halved at L >= 100 (default 2,000,000)")
    parser.add_argument("--horizon", type=float, default=10.0)
    parser.add_argument("--layers", default=None, help="default 5,10,20,100 (exact: 5,10,20)")
    parser.add_argument("--cache", type=pathlib.Path, default=CACHE)
    args = parser.parse_args()
    for name in args.only.split(","):
        layers = tuple(int(v) for v in (args.layers or (
            "5,10,20" if name == "exact" else "5,10,20,100")).split(","))
        if name == "shift":
            shift()
            continue
        if name == "exact":
            exact_table(args.trajectories or 1_000_000, args.horizon, layers, args.cache)
            continue
        if name == "reduced-exact":
            reduced_exact_table(args.trajectories or 1_000_000, args.horizon,
                                tuple(int(v) for v in (args.layers or "5,10,20").split(",")))
            continue
        if name == "convergence":
            convergence(args.horizon)
            continue
        table(name, args.trajectories or 2_000_000, args.horizon, layers)


if __name__ == "__main__":
    main()
