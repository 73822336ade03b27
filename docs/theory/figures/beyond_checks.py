"""Monte Carlo checks of docs/theory/beyond.rst: prints the tables of that page.

Run with ``python docs/theory/figures/beyond_checks.py [moments|outcomes|heads|mlp|all]``
(CPU, a few minutes); ``outcomes [trajectories] [float32|float64]`` sets the size and the
precision of the LayerNorm table (default 40000, float64). Every derived value comes
from :mod:`proofs_check.layers`
(lambdified from the engine), every simulated one from
:mod:`spheresde.transformer._beyond` and :func:`spheresde.transformer.simulate_network`.
"""

import sys

import jax
import numpy as np
import sympy as sp

jax.config.update("jax_enable_x64", True)

from proofs_check.layers import beta1, beta2, gamma, two_token  # noqa: E402
from proofs_check.symbols import beta, d, eps, mu, rho  # noqa: E402
from spheresde.transformer._beyond import PairLayer, one_layer_moments  # noqa: E402

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


def outcomes(trajectories: int = 40_000, dtype: str = "float64") -> None:
    """LayerNorm network: P(antipodal) at T against the derived law (RMS at d - 1)."""
    import jax.numpy as jnp

    from spheresde import two_token as tt
    from spheresde.experiments._simulate import simulate_counts
    from spheresde.transformer import PureNoise

    horizon, layers, tol = 20.0, 20, 1e-2
    print(f"LayerNorm network, two uniform tokens, L = {layers}, T = {horizon:g}, "
          f"{trajectories} trajectories, tol = {tol}, {dtype}")
    print("| d | beta | LN network (se) | RMS network at d-1 (se) | z | limit law at d-1 | z "
          "| RMS limit law at d |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")

    def network(seed, dim, b, norm):
        c = simulate_counts("discrete", jax.random.PRNGKey(seed), tokens=2, beta=b, d=dim,
                            weights=PureNoise(),
                            trajectories=trajectories, layers=layers, horizon=horizon,
                            tol=tol, absorb=0.0 if norm == "layer" else 1e-6, norm=norm,
                            dtype=jnp.dtype(dtype))
        p = c["outcomes"][1] / trajectories
        return p, max(np.sqrt(p * (1 - p) / trajectories), 1 / trajectories)

    for dim in (5, 7):
        for b in (0.5, 1.0, 1.5, 3.0):
            p, se = network(dim * 100 + int(10 * b), dim, b, "layer")
            p_rms, se_rms = network(dim * 100 + int(10 * b) + 1, dim - 1, b, "rms")
            law = float(tt.outcome_probabilities(b, dim - 1, horizon=horizon, tol=tol)
                        .antipodal)
            rms = float(tt.outcome_probabilities(b, dim, horizon=horizon, tol=tol).antipodal)
            print(f"| {dim} | {b} | {p:.4f} ({se:.4f}) | {p_rms:.4f} ({se_rms:.4f}) | "
                  f"{(p - p_rms) / np.hypot(se, se_rms):+.2f} | {law:.4f} | "
                  f"{(p - law) / se:+.2f} | {rms:.4f} |")


def _fractions(rho_t, tol):
    """P(antipodal), P(single) and the binomial standard error of the first."""
    anti, single = np.mean(rho_t < -1 + tol), np.mean(rho_t > 1 - tol)
    return anti, single, max(np.sqrt(anti * (1 - anti) / rho_t.size), 1 / rho_t.size)


def heads_and_mlp(kinds=("rms", "heads", "mlp")) -> None:
    """Two heads across the boundary and the MLP block: network against the derived SDE."""
    from proofs_check.engine import canonical
    from spheresde.transformer._beyond import simulate_pair, simulate_rho_sde

    trajectories, tol, dt = 2000, 1e-2, 1e-3
    print(f"network: {trajectories} trajectories; derived SDE in z = artanh(rho): Euler "
          f"dt = {dt}, {5 * trajectories} paths; tol = {tol}; "
          "z = (network - SDE) / combined se")
    print("| layer | L | T | point | network P(anti) (se) | SDE P(anti) (se) | z |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    from spheresde import two_token as tt

    law = float(tt.outcome_probabilities(1.5, 6, horizon=5.0, tol=tol).antipodal)
    cases = [("rms", dict(betas=(1.5,)), {d: 6, beta: 1.5, eps: 1.0, mu: 0.0},
              f"one head, beta = 1.5 (Kolmogorov law {law:.4f})", 100, 5.0)]
    cases += [("heads", dict(betas=(b1, b2)), {d: 6, beta1: b1, beta2: b2, eps: 1.0},
              f"beta = ({b1}, {b2}): sech^2 sum {1 / np.cosh(b1) ** 2 + 1 / np.cosh(b2) ** 2:.3f}"
              " (boundary 0.8)", 100, 5.0)
             for b1, b2 in ((0.3, 3.0), (0.5, 1.0), (1.5, 1.5), (1.0, 3.0))]
    cases += [("mlp", dict(betas=(3.0,), gamma=g), {d: 6, beta: 3.0, eps: 1.0, gamma: g},
               f"beta = 3, gamma = {g}", layers, horizon)
              for g in (0.0, 0.1, 0.3) for layers, horizon in ((100, 5.0), (20, 20.0), (20, 40.0))]
    key = jax.random.PRNGKey(2025)
    for kind, params, values, label, layers, horizon in cases:
        if kind not in kinds:
            continue
        sde = two_token(kind)
        m = sp.lambdify(rho, canonical(sde.drift / (1 - rho**2)).subs(values), "jax")
        v = sp.lambdify(rho, canonical(sde.variance / (1 - rho**2) ** 2).subs(values), "jax")
        key, k1, k2 = jax.random.split(key, 3)
        net = simulate_pair(k1, PairLayer(6, eps=1.0, **params), layers=layers,
                            horizon=horizon, trajectories=trajectories)
        ref = simulate_rho_sde(k2, m, v, d=6, dt=dt, horizon=horizon,
                               trajectories=5 * trajectories)
        (pn, _, sn), (pr, _, sr) = _fractions(net, tol), _fractions(ref, tol)
        print(f"| {kind} | {layers} | {horizon:g} | {label} | {pn:.4f} ({sn:.4f}) | "
              f"{pr:.4f} ({sr:.4f}) | {(pn - pr) / np.hypot(sn, sr):+.2f} |", flush=True)


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "all"
    if what in ("moments", "all"):
        moments()
    if what in ("outcomes", "all"):
        outcomes(*([int(sys.argv[2])] if len(sys.argv) > 2 else []),
                 *(sys.argv[3:4] if what == "outcomes" else []))
    kinds = {"heads": ("rms", "heads"), "mlp": ("mlp",), "all": ("rms", "heads", "mlp")}
    if what in kinds:
        heads_and_mlp(kinds[what])
