"""Monte Carlo checks of docs/theory/beyond.rst: prints the tables of that page.

Run with ``python docs/theory/figures/beyond_checks.py [moments|outcomes|all]``
(CPU, a few minutes). Every derived value comes from :mod:`proofs_check.layers`
(lambdified from the engine), every simulated one from
:mod:`spheresde.experiments._beyond` and :func:`spheresde.simulate_network`.
"""

import sys

import jax
import numpy as np
import sympy as sp

jax.config.update("jax_enable_x64", True)

from proofs_check.layers import beta1, beta2, gamma, two_token  # noqa: E402
from proofs_check.symbols import beta, d, eps, mu, rho  # noqa: E402
from spheresde.experiments._beyond import PairLayer, one_layer_moments  # noqa: E402

#: (label, kind of proofs_check.layers.two_token, layer, parameter values)
CASES = (
    ("LayerNorm d=5, beta=1.5", "layer", PairLayer(5, (1.5,), norm="layer"),
     {d: 5, beta: 1.5, eps: 1.0, mu: 0.0}),
    ("2 heads d=5, beta=(0.5, 2.5)", "heads", PairLayer(5, (0.5, 2.5)),
     {d: 5, beta1: 0.5, beta2: 2.5, eps: 1.0}),
    ("MLP d=5, beta=1.5, gamma=0.7", "mlp", PairLayer(5, (1.5,), gamma=0.7),
     {d: 5, beta: 1.5, eps: 1.0, gamma: 0.7}),
)
RHOS = (-0.95, -0.5, 0.2, 0.8)
LAYERS, SAMPLES = 10_000, 200_000


def moments() -> None:
    """One layer at L = 10^4 against the derived drift m(rho) and variance s^2(rho)."""
    print(f"one layer, L = {LAYERS}, {SAMPLES} draws per point; z = (MC - derived) / se")
    print("| layer | rho | m derived | m MC (se) | z | s^2 derived | s^2 MC (se) | z |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    key = jax.random.PRNGKey(25)
    for label, kind, layer, values in CASES:
        sde = two_token(kind)
        m = sp.lambdify(rho, sde.drift.subs(values), "numpy")
        v = sp.lambdify(rho, sde.variance.subs(values), "numpy")
        for r in RHOS:
            key, sub = jax.random.split(key)
            mc = one_layer_moments(sub, r, layer, layers=LAYERS, samples=SAMPLES)
            zm = (mc["drift"] - m(r)) / mc["drift_se"]
            zv = (mc["variance"] - v(r)) / mc["variance_se"]
            print(f"| {label} | {r} | {m(r):.4f} | {mc['drift']:.4f} ({mc['drift_se']:.4f}) | "
                  f"{zm:+.2f} | {v(r):.4f} | {mc['variance']:.4f} ({mc['variance_se']:.4f}) | "
                  f"{zv:+.2f} |")


def outcomes() -> None:
    """LayerNorm network: P(antipodal) at T against the derived law (RMS at d - 1)."""
    from spheresde import two_token as tt
    from spheresde.experiments._simulate import simulate_counts

    horizon, layers, trajectories, tol = 20.0, 20, 4000, 1e-2
    print(f"LayerNorm network, two uniform tokens, L = {layers}, T = {horizon:g}, "
          f"{trajectories} trajectories, tol = {tol}")
    print("| d | beta | network P(anti) (se) | law at d-1 | z | RMS law at d |")
    print("| --- | --- | --- | --- | --- | --- |")
    for dim in (5, 7):
        for b in (0.5, 1.0, 1.5, 3.0):
            c = simulate_counts("discrete", jax.random.PRNGKey(dim * 100 + int(10 * b)),
                                tokens=2, beta=b, d=dim, trajectories=trajectories,
                                layers=layers, horizon=horizon, tol=tol, absorb=0.0,
                                norm="layer")
            p = c["outcomes"][1] / trajectories
            se = max(np.sqrt(p * (1 - p) / trajectories), 1 / trajectories)
            law = float(tt.outcome_probabilities(b, dim - 1, horizon=horizon, tol=tol)
                        .antipodal)
            rms = float(tt.outcome_probabilities(b, dim, horizon=horizon, tol=tol).antipodal)
            print(f"| {dim} | {b} | {p:.4f} ({se:.4f}) | {law:.4f} | {(p - law) / se:+.2f} | "
                  f"{rms:.4f} |")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "all"
    if what in ("moments", "all"):
        moments()
    if what in ("outcomes", "all"):
        outcomes()
