"""One adapter from a method name to the simulators of :mod:`spheresde`.

Methods
-------
``exact``      scale-function quadrature of the 1-D diffusion of rho (the t -> infinity law).
``reduced``    Monte Carlo of that 1-D SDE (in z = artanh rho), round(T L) steps of 1/L.
``particles``  the Ito SDE on (S^{d-1})^n of all tokens, round(T L) steps of 1/L.
``discrete``   the L-layer network itself: round(T L) layers with fresh V per layer.

Every Monte Carlo method takes the same ``round(T L)`` steps
(:func:`~spheresde.transformer._network.network_depth`, counted once by :func:`simulate_counts`), so
all of them reach the depth-time ``round(T L) / L``: T itself whenever T L is a whole
number, the depth-time at which their laws are compared.

All Monte Carlo methods start from independent uniform tokens and classify the state at
the horizon as single cluster, antipodal or undecided with tolerance ``tol``.

:func:`simulate_counts` is what a chunk of a sweep runs: integer counts (outcomes,
cluster sizes, trajectory-steps simulated), with certified early absorption
(:mod:`spheresde.transformer._absorption`) for two tokens under the reduced SDE and the discrete
network, and for more tokens near the single cluster under the discrete network; on request
(``formations``, the ``tokens`` and ``hybrid`` sweeps) also the sums of the outcome
probabilities of trajectories finished by their two-cluster formation's exact law
(:mod:`spheresde.transformer._formation_finish`). :func:`fractions_of_counts` turns the
summed counts of a point's chunks into fractions.
"""

from __future__ import annotations

import functools

import numpy as np

from ..transformer._network import network_depth
from ..transformer._normalization import AbstractNormalization
from ..transformer._outcomes import (
    ANTIPODAL,
    SINGLE,
    UNDECIDED,
    OutcomeFractions,
    classify,
    cluster_sizes,
)
from ..transformer._weights import AbstractWeights, ConstantWeights


@functools.cache
def _compiled(method: str, norm: str | AbstractNormalization = "rms"):
    """``(key, tokens0, beta, weights, layers, steps) -> final tokens``, jitted once.

    Both methods take ``steps`` steps of ``1/layers``, to the depth-time
    ``steps / layers``: the network ``steps`` layers, the particle SDE a step grid that
    :func:`~spheresde.solve` makes of exactly that many steps (a whole number of steps of
    ``dt``), so that at ``T L = 2.5`` it takes the network's 2 steps, not 3 (2 and a
    sliver of half a step). ``beta`` is traced, so a sweep over inverse temperatures
    compiles once per shape and weight model instead of once per grid point
    (compilation dominates at quick sizes).
    """
    import jax

    from .. import solve_batch
    from ..transformer._limit import transformer_sde
    from ..transformer._network import simulate_network

    def run(key, tokens0, beta, weights, layers, steps):
        trajectories, n, d = tokens0.shape
        if method == "discrete":
            return simulate_network(key, tokens0, beta, weights, layers=layers,
                                    horizon=steps / layers, trajectories=trajectories,
                                    norm=norm).tokens
        # span noise (d x n normals) is exact in law for the Ito Euler-type default solver
        sde = transformer_sde(beta, weights, d=d, noise="span" if n < d else "full", n=n)
        return solve_batch(sde, tokens0, 0.0, steps / layers, 1.0 / layers, key=key).ys[:, -1]

    return jax.jit(run, static_argnames=("weights", "layers", "steps"))


def _final_tokens(method: str, key, *, tokens: int, beta: float, d: int,
                  weights: AbstractWeights, trajectories: int, layers: int, steps: int,
                  norm: str | AbstractNormalization = "rms", layer: str = "paper",
                  dtype=None):
    """Tokens at the horizon, ``(trajectories, n, d)``, from independent uniform starts
    (LayerNorm: uniform on the sphere of the hyperplane, the uniform start normalized).
    A ``layer`` other than the paper's runs as :meth:`spheresde.transformer.Layer.simulate`
    reads it (``weights`` give its ``mu`` and ``eps``)."""
    import jax

    from .. import sample_uniform

    start_key, path_key = jax.random.split(key)
    tokens0 = sample_uniform(start_key, (trajectories, tokens), d, dtype)
    if layer != "paper":
        from ..transformer._layers import layer as get_layer

        mu, eps = weights.limit()
        return get_layer(layer).simulate(path_key, tokens0, beta=beta, eps=eps, mu=mu,
                                         layers=layers, steps=steps, norm=norm)
    return _compiled(method, norm)(path_key, tokens0, beta, weights=weights, layers=layers,
                                   steps=steps)


def exact_two_tokens(beta: float, d: int, *, sigma: float = 1.0, mu: float = 0.0,
                     eps: float | None = None, layer: str = "paper",
                     norm: str = "rms") -> OutcomeFractions:
    """Limit probabilities for two uniform tokens (every path ends at rho = +-1): the
    paper's law, or that of the derived rho-SDE of another ``layer`` or ``norm``
    (:meth:`spheresde.transformer.Layer.antipodal_probability`; NaN where +-1 are not its
    equilibria)."""
    from ..transformer import two_token

    if layer != "paper" or norm != "rms":
        from ..transformer._layers import layer as get_layer

        chosen = get_layer(layer)
        noise = sigma if eps is None else eps
        return OutcomeFractions.exact(
            chosen.antipodal_probability(beta, d, eps=noise, mu=mu, norm=norm)
            if chosen.equilibria(norm) else float("nan"))
    if eps is None:
        p = two_token.antipodal_probability(beta, d, sigma=sigma)
    else:
        p = two_token.antipodal_probability(beta, d, mu=mu, eps=eps)
    return OutcomeFractions.exact(p)


def _token_outcomes(method: str, key, *, tokens: int, beta: float, d: int,
                    weights: AbstractWeights, trajectories: int, layers: int, steps: int,
                    tol: float, norm: str | AbstractNormalization = "rms",
                    layer: str = "paper", dtype=None) -> tuple[np.ndarray, np.ndarray]:
    """Outcome codes at the horizon, and the smaller cluster's size of each antipodal one."""
    if method not in ("particles", "discrete"):
        raise ValueError(f"no Monte Carlo method {method!r}")
    if layer != "paper" and (method != "discrete" or isinstance(weights, ConstantWeights)):
        raise ValueError(f"layer {layer!r} runs as the discrete network with random weights "
                         "only (method 'discrete'; the exact law is method 'exact')")
    final = _final_tokens(method, key, tokens=tokens, beta=beta, d=d, weights=weights,
                          trajectories=trajectories, layers=layers, steps=steps, norm=norm,
                          layer=layer, dtype=dtype)
    codes = np.asarray(classify(final, tol))
    return codes, np.asarray(cluster_sizes(final))[codes == ANTIPODAL, 1]


def simulate_counts(method: str, key, *, tokens: int, beta: float, d: int,
                    weights: AbstractWeights, trajectories: int, layers: int, horizon: float,
                    tol: float, absorb: float, norm: str | AbstractNormalization = "rms",
                    layer: str = "paper", dtype=None, formations: bool = False) -> dict:
    """Counts of one chunk of ``trajectories``: ``outcomes`` (single, antipodal,
    undecided), ``minority`` (antipodal samples by the size 0..n//2 of their smaller
    cluster) and ``steps`` (trajectory-steps actually simulated).

    ``formations``: more than two tokens under ``discrete`` (noise, ``absorb > 0``) also
    finish the trajectories whose two clusters are certified tight by the formation's exact
    law (:mod:`spheresde.transformer._formation_finish`), and the counts gain the keys of
    :func:`~spheresde.transformer._formation_finish.finish_counts`: ``finished`` (how many:
    they are not in ``outcomes`` or ``minority``), ``finish_sums`` and ``finish_squares``
    (sums and sums of squares of their single, antipodal, undecided probabilities) and
    ``finish_minority`` (their antipodal probability by the smaller cluster's size); every
    chunk then has those keys, 0 where nothing was finished.
    :func:`fractions_of_counts` reads either form.

    ``absorb`` is the bound of :mod:`spheresde.transformer._absorption` (0: simulate every step).
    Two tokens under ``reduced`` or ``discrete`` use the absorbing simulators, more tokens
    under ``discrete`` the one that absorbs near the single cluster
    (:func:`spheresde.transformer._absorption.absorbing_tokens`; antipodal formations are never
    absorbed, only finished with ``formations``; under
    :class:`~spheresde.transformer.ConstantWeights`, no noise, the single cluster is absorbed
    with certainty); the particle SDE and ``reduced`` under constant weights run the full
    horizon.

    ``norm="layer"`` (LayerNorm): ``discrete`` runs the LayerNorm network itself (every
    layer, no absorption; two tokens in the pair coordinates of :mod:`spheresde.transformer._pair`,
    the same network in law), ``reduced`` the derived two-token SDE, which is the RMS one
    at :meth:`~spheresde.transformer.AbstractNormalization.two_token_dimension`;
    ``particles`` is refused (as for every normalization but the paper's).

    ``layer``: a layer of :func:`spheresde.transformer.layer` other than the paper's runs
    under ``discrete`` only, as :meth:`spheresde.transformer.Layer.simulate` interprets it
    (``weights`` give its ``mu`` and ``eps``): two tokens with certified absorption from
    the layer's own scale function where its derived rho-SDE has one
    (:func:`spheresde.transformer._layers.absorbing_layer`), more tokens every layer (the
    n-token certificates are derived for the paper's layer); the paper's layer runs the
    fast paths above, which a test holds to that interpretation in law.

    ``dtype``: the floating type of the simulation (default float: float64 under
    ``JAX_ENABLE_X64``, float32 otherwise).
    """
    from ..transformer._absorption import absorbing_network, absorbing_rho, absorbing_tokens
    from ..transformer._formation_finish import FormationFinish, finish_counts
    from ..transformer._normalization import normalization

    steps = network_depth(horizon, layers)  # the one count, passed to every method
    constant = isinstance(weights, ConstantWeights)
    formation = None
    norm = normalization(norm)
    if not norm.paper and method == "particles":
        raise ValueError(f"norm={norm.name!r} needs method 'reduced' or 'discrete' (the "
                         "particle SDE is the RMS one)")
    if layer != "paper" and tokens == 2 and method == "discrete" and not constant:
        from ..transformer._layers import absorbing_layer
        from ..transformer._layers import layer as get_layer

        mu, eps = weights.limit()
        codes, work = absorbing_layer(key, get_layer(layer), beta=beta, d=d, eps=eps, mu=mu,
                                      trajectories=trajectories, layers=layers, steps=steps,
                                      tol=tol, bound=absorb, norm=norm, dtype=dtype)
        minority = np.ones(int(np.sum(codes == ANTIPODAL)), int)
    elif layer != "paper":
        codes, minority = _token_outcomes(method, key, tokens=tokens, beta=beta, d=d,
                                          weights=weights, trajectories=trajectories,
                                          layers=layers, steps=steps, tol=tol, norm=norm,
                                          layer=layer, dtype=dtype)
        work = trajectories * steps
    elif method == "reduced" and not constant:
        mu, eps = weights.limit()
        codes, work = absorbing_rho(key, beta=beta, d=norm.two_token_dimension(d), eps=eps, mu=mu,
                                    trajectories=trajectories, layers=layers, steps=steps,
                                    tol=tol, bound=absorb, dtype=dtype)
        minority = np.ones(int(np.sum(codes == ANTIPODAL)), int)
    elif method == "discrete" and tokens == 2 and norm.paper:
        codes, work = absorbing_network(key, beta=beta, d=d, weights=weights,
                                        trajectories=trajectories, layers=layers,
                                        steps=steps, tol=tol, bound=absorb, dtype=dtype)
        minority = np.ones(int(np.sum(codes == ANTIPODAL)), int)
    elif method == "discrete" and norm.paper:
        mu, eps = weights.limit()
        formation = (FormationFinish(tokens=tokens, beta=beta, d=d, eps=eps, mu=mu,
                                     layers=layers, tol=tol, bound=absorb)
                     if formations and not constant else None)
        codes, minority, work = absorbing_tokens(key, tokens=tokens, beta=beta, d=d,
                                                 weights=weights, trajectories=trajectories,
                                                 layers=layers, steps=steps, tol=tol,
                                                 bound=absorb, dtype=dtype, formation=formation)
    else:
        codes, minority = _token_outcomes(method, key, tokens=tokens, beta=beta, d=d,
                                          weights=weights, trajectories=trajectories,
                                          layers=layers, steps=steps, tol=tol, norm=norm,
                                          dtype=dtype)
        work = trajectories * steps
    counts = {
        "outcomes": [int(np.sum(codes == c)) for c in (SINGLE, ANTIPODAL, UNDECIDED)],
        "minority": [int(c) for c in np.bincount(minority.astype(int),
                                                 minlength=tokens // 2 + 1)],
        "steps": int(work),
    }
    if formations:
        counts.update(formation.counts(codes) if formation is not None
                      else finish_counts(np.zeros((0, 3)), np.zeros(0, int), tokens))
    return counts


def add_counts(counts: list[dict]) -> dict:
    """The element-wise sum of chunk counts (in the order given: the integer counts sum
    alike in any order; the finished trajectories' float sums of
    :func:`simulate_counts` in this one). A key that only some chunks have (chunks stored
    before the formation finish) counts 0 in the others."""
    total: dict = {}
    for one in counts:
        for name, value in one.items():
            if isinstance(value, list):
                total[name] = [a + b for a, b in zip(total.get(name, [0] * len(value)), value,
                                                     strict=True)]
            else:
                total[name] = total.get(name, 0) + value
    return total




def fractions_of_counts(total: dict):
    """:class:`~spheresde.transformer._outcomes.OutcomeFractions` of summed counts
    (:func:`add_counts`), the finished trajectories' probabilities included where there are
    any (:func:`~spheresde.transformer._outcomes.fractions_from_values`)."""
    from ..transformer._outcomes import fractions_from_values

    return fractions_from_values(total["outcomes"], total.get("finished", 0),
                                 total.get("finish_sums", [0.0] * 3),
                                 total.get("finish_squares", [0.0] * 3))


#: The keys of the formation finish's share of the counts (simulate_counts(formations=True)).
FINISH_KEYS = frozenset({"finished", "finish_sums", "finish_squares", "finish_minority"})


def counts_problem(counts: object, size: int) -> str | None:
    """What is wrong with stored counts of a chunk of ``size`` trajectories, as
    :func:`simulate_counts` makes them (None: nothing; ``{}`` is a chunk of no
    trajectories, the exact method's), with or without the formation finish's keys."""
    if counts == {} and size == 0:
        return None
    basic = {"outcomes", "minority", "steps"}
    if not isinstance(counts, dict) or set(counts) not in (basic, basic | FINISH_KEYS):
        return "not the counts outcomes, minority and steps (and the finish's, or none)"

    def counts_of(value: object) -> bool:
        return isinstance(value, list) and all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)

    def sums_of(value: object, length: int) -> bool:
        return isinstance(value, list) and (length < 0 or len(value) == length) and all(
            isinstance(v, float | int) and not isinstance(v, bool) and v >= 0 for v in value)

    finished = counts.get("finished", 0)
    if "finished" in counts and (not counts_of([finished]) or not all(
            sums_of(counts[name], n) for name, n in
            (("finish_sums", 3), ("finish_squares", 3), ("finish_minority", -1)))):
        return "finish counts are not a count and non-negative sums"
    if finished and (abs(sum(counts["finish_sums"]) - finished) > 1e-6 * finished
                     or abs(sum(counts["finish_minority"]) - counts["finish_sums"][1])
                     > 1e-6 * finished
                     or any(q > v + 1e-9 * finished for q, v in
                            zip(counts["finish_squares"], counts["finish_sums"], strict=True))):
        return (f"finish sums {counts['finish_sums']} do not add up to {finished} "
                "trajectories, or to the antipodal sums by size, or lie below the squares")
    outcomes, minority, steps = counts["outcomes"], counts["minority"], counts["steps"]
    if not counts_of(outcomes) or len(outcomes) != 3 or sum(outcomes) + finished != size:
        return (f"outcomes {outcomes} are not 3 non-negative counts that sum to {size} "
                f"(with {finished} finished)")
    if not counts_of(minority) or sum(minority) != outcomes[1]:
        return (f"minority {minority} are not non-negative counts that sum to the "
                f"{outcomes[1]} antipodal samples")
    if not counts_of([steps]):
        return f"steps {steps!r} is not a non-negative count"
    return None
