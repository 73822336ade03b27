"""One adapter from a method name to the simulators of :mod:`spheresde`.

Methods
-------
``exact``      scale-function quadrature of the 1-D diffusion of rho (the t -> infinity law).
``reduced``    Monte Carlo of that 1-D SDE (in z = artanh rho), step 1/L, horizon T.
``particles``  the Ito SDE on (S^{d-1})^n of all tokens, step 1/L, horizon T.
``discrete``   the L-layer network itself: round(T L) layers with fresh V per layer.

All Monte Carlo methods start from independent uniform tokens and classify the state at
the horizon as single cluster, antipodal or undecided with tolerance ``tol``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Outcomes:
    """Counts of the three outcomes over ``trajectories`` samples (or exact probabilities)."""

    single: float
    antipodal: float
    undecided: float
    trajectories: int  # 0 for an exact (limit) result
    minority: np.ndarray | None = None  # per antipodal sample: size of the smaller cluster

    def fractions(self) -> dict[str, float]:
        """``p_single``, ``p_antipodal``, ``p_undecided`` (the CSV columns)."""
        n = max(self.trajectories, 1)
        return {
            "p_single": self.single / n,
            "p_antipodal": self.antipodal / n,
            "p_undecided": self.undecided / n,
        }

    def stderr(self, which: str = "p_antipodal") -> float:
        """Binomial standard error of one fraction (0 for an exact result)."""
        if self.trajectories == 0:
            return 0.0
        p = self.fractions()[which]
        return math.sqrt(p * (1 - p) / self.trajectories)

    def dominant(self) -> str:
        """The most frequent outcome: ``"single"``, ``"antipodal"`` or ``"undecided"``."""
        f = self.fractions()
        return max(("single", "antipodal", "undecided"), key=lambda k: f[f"p_{k}"])


def _weights(sigma: float, mu: float, eps: float | None, constant: bool):
    from .._transformer import ConstantWeights, Hybrid, PureNoise

    if constant:
        return ConstantWeights()
    return PureNoise(sigma=sigma) if eps is None else Hybrid(mu=mu, eps=eps)


@functools.cache
def _compiled(method: str):
    """``(key, tokens0, beta, weights, layers, horizon) -> final tokens``, jitted once.

    ``beta`` is traced, so a sweep over temperatures compiles once per shape and weight
    model instead of once per grid point (compilation dominates at quick sizes).
    """
    import jax

    from .. import solve_batch
    from .._transformer import simulate_network, transformer_sde

    def run(key, tokens0, beta, weights, layers, horizon):
        trajectories, n, d = tokens0.shape
        if method == "discrete":
            return simulate_network(key, tokens0, beta, weights, layers=layers,
                                    horizon=horizon, trajectories=trajectories).tokens
        # span noise (d x n normals) is exact in law for the Ito Euler-type default solver
        sde = transformer_sde(beta, weights, d=d, noise="span" if n < d else "full", n=n)
        return solve_batch(sde, tokens0, 0.0, horizon, 1.0 / layers, key=key).ys[:, -1]

    return jax.jit(run, static_argnames=("weights", "layers", "horizon"))


def _final_tokens(method: str, key, *, tokens: int, beta: float, d: int, weights,
                  trajectories: int, layers: int, horizon: float):
    """Tokens at the horizon, ``(trajectories, n, d)``, from independent uniform starts."""
    import jax

    from .. import sample_uniform

    start_key, path_key = jax.random.split(key)
    tokens0 = sample_uniform(start_key, (trajectories, tokens), d)
    return _compiled(method)(path_key, tokens0, beta, weights=weights, layers=layers,
                             horizon=horizon)


def exact_two_tokens(beta: float, d: int, *, sigma: float = 1.0, mu: float = 0.0,
                     eps: float | None = None) -> Outcomes:
    """Limit probabilities for two uniform tokens (every path ends at rho = +-1)."""
    from .. import two_token

    if eps is None:
        p = float(two_token.antipodal_probability(beta, d, sigma=sigma))
    else:
        p = float(two_token.antipodal_probability(beta, d, mu=mu, eps=eps))
    return Outcomes(single=1.0 - p, antipodal=p, undecided=0.0, trajectories=0)


def simulate(method: str, key, *, tokens: int, beta: float, d: int, trajectories: int,
             layers: int, horizon: float, tol: float, sigma: float = 1.0, mu: float = 0.0,
             eps: float | None = None, constant: bool = False) -> Outcomes:
    """Monte Carlo outcomes of ``tokens`` uniform tokens under ``method`` (see module doc).

    Pure noise with ``sigma`` by default; the hybrid model when ``eps`` is given; the
    deterministic ``V = Id`` of earlier theory with ``constant`` (network and particle
    methods only; then ``horizon`` is in that model's own time, see ``ConstantWeights``).
    """
    if method == "reduced" and not constant:
        from .. import two_token

        rho = two_token.simulate_rho(
            key, beta, d, trajectories=trajectories, dt=1.0 / layers, horizon=horizon,
            **({"sigma": sigma} if eps is None else {"mu": mu, "eps": eps}),
        )
        f = two_token.rho_fractions(rho, tol)
        single, antipodal = round(float(f.single) * f.count), round(float(f.antipodal) * f.count)
        return Outcomes(single, antipodal, f.count - single - antipodal, f.count)
    if method not in ("particles", "discrete"):
        raise ValueError(f"no Monte Carlo method {method!r}")
    from .._outcomes import ANTIPODAL, SINGLE, UNDECIDED, classify, cluster_sizes

    final = _final_tokens(method, key, tokens=tokens, beta=beta, d=d,
                          weights=_weights(sigma, mu, eps, constant),
                          trajectories=trajectories,
                          layers=layers, horizon=horizon)
    codes = np.asarray(classify(final, tol))
    minority = np.asarray(cluster_sizes(final))[codes == ANTIPODAL, 1]
    counts = [int(np.sum(codes == c)) for c in (SINGLE, ANTIPODAL, UNDECIDED)]
    return Outcomes(*counts, trajectories, minority)
