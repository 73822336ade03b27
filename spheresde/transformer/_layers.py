r"""A Transformer layer written once, read by the symbolic engine and run as a network.

A layer is the increment :math:`\delta_i = Y_i - X_i` of the residual update
:math:`X_i' = N(X_i + \delta_i)`, written with the primitives of
:mod:`proofs_check.engine` as its users already write it: the tokens, ``softmax(tokens,
beta)``, random matrices (:class:`~proofs_check.engine.GaussianMatrix`, shared or per
token, :class:`~proofs_check.engine.ReLUMLP`), the step ``s`` and the symbols of
:mod:`proofs_check.symbols`. A :class:`Layer` holds that function, and everything the
package knows is asked of it:

- **symbolically**, :meth:`Layer.rho_sde` is the engine's two-token SDE of
  :math:`\rho = \langle X_1, X_2\rangle` (:func:`proofs_check.engine.rho_sde`);
- **numerically**, :meth:`Layer.simulate` runs the discrete network. The function is read
  once by the engine on ``n`` tokens with a generic Gram matrix: every increment is a
  combination of span vectors (the tokens and the normalization's fixed directions) and
  of noise terms (a random matrix applied to such a combination), with coefficients
  that are SymPy expressions of the Gram entries, ``s`` and the parameters. Those
  coefficients are lambdified (nothing retyped) and a layer draws the matrices: a
  ``d x d`` Gaussian per shared matrix (per token for a per-token one), :math:`W_1`,
  :math:`W_2` per ReLU block (:attr:`Layer.width` wide), fresh per layer. The
  coefficients keep their full dependence on ``s = L^{-1/2}``, so this is the discrete
  layer at any depth, not its limit;
- **its exact law**: :meth:`Layer.antipodal_probability` (the :math:`t \to \infty` law
  of two uniform tokens from the scale function of the derived :math:`\rho`-SDE) and
  :meth:`Layer.critical_beta` (the root of its Lyapunov exponent at :math:`\rho = -1`),
  where :math:`\rho = \pm 1` are equilibria of that SDE (:meth:`Layer.equilibria`).

Layers are named in one registry (:func:`layer`, :func:`register_layer`): ``"paper"``
(:math:`\delta_i = s V A_i`, :math:`V = \mu s I + \varepsilon G`), ``"two_heads"``,
``"mlp"`` and ``"per_token"``; ``"MODULE:FUNCTION"`` names a function of the tokens
importable from the working directory. The parameters bind by symbol: ``beta``, ``eps``
(:math:`\varepsilon`, named ``epsilon``), ``mu``, ``d`` and ``s``; a layer may fix other
symbols of its own (:attr:`Layer.constants`).
"""

from __future__ import annotations

import functools
import importlib
import math
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from .. import _checks
from ._normalization import NormalizationLike, normalization
from ._weights import residual_step

#: The symbols of :mod:`proofs_check.symbols` the parameters of a layer bind to, by name
#: (:meth:`Layer.bind`; ``epsilon`` is ``eps``).
PARAMETERS = ("beta", "epsilon", "mu", "d", "s")


class LayerError(ValueError):
    """A layer the engine cannot read, or parameters it cannot be run with."""


@dataclass(frozen=True)
class Layer:
    r"""A residual layer :math:`X_i' = N(X_i + \delta_i)` (module docstring).

    Parameters
    ----------
    name : str
        The name the registry and the command line (``--layer``) know it by.
    increment : callable
        ``increment(tokens)``: one :class:`proofs_check.engine.RandomVector` per token.
    summary : str
        One line for ``--help`` and the figures.
    constants : mapping of str to float
        Values of the layer's own symbols (other than :data:`PARAMETERS`).
    width : int
        The hidden width of a ReLU block in the network (its limit holds at any width).
    """

    name: str
    increment: Callable
    summary: str = ""
    constants: Mapping[str, float] = field(default_factory=dict, compare=False, hash=False)
    width: int = 8

    def bind(self, *, beta: float, eps: float = 1.0, mu: float = 0.0, d: int,
             layers: int | None = None) -> dict[str, float]:
        """The numbers every symbol of the layer takes: the parameters and
        :attr:`constants` (``s = layers ** -1/2`` when ``layers`` is given)."""
        _checks.real("beta", beta)
        _checks.real("eps", eps, at_least=0.0)
        _checks.real("mu", mu)
        _checks.dimension("d", d)
        if layers is not None:
            _checks.whole("layers", layers)
        values = {"beta": float(beta), "epsilon": float(eps), "mu": float(mu), "d": float(d),
                  **{k: float(v) for k, v in self.constants.items()}}
        if layers is not None:
            values["s"] = float(residual_step(layers))
        return values

    # -- the symbolic side -------------------------------------------------------------

    def rho_sde(self, norm: NormalizationLike = "rms"):
        r"""The derived Ito SDE of :math:`\rho` for two tokens
        (:func:`proofs_check.engine.rho_sde`; imports SymPy)."""
        return _rho_sde(self, normalization(norm).name)

    def equilibria(self, norm: NormalizationLike = "rms") -> bool:
        r"""Whether :math:`\rho = \pm 1` are equilibria of the derived :math:`\rho`-SDE with a
        geometric (second-order) noise there: the condition of its exact outcome law, of
        :meth:`critical_beta` and of certified absorption."""
        return _two_token_law(self, normalization(norm).name) is not None

    def critical_beta(self, d: int, *, eps: float = 1.0, mu: float = 0.0,
                      norm: NormalizationLike = "rms", beta_max: float = 50.0) -> float:
        r"""The inverse temperature above which the antipodal pair attracts: the root in
        :math:`\beta` of the derived Lyapunov exponent :math:`\lambda_-` at
        :math:`\rho = -1` (:func:`proofs_check.engine.lyapunov_at`). NaN when it does not
        change sign on :math:`[0, \beta_{max}]`, or without :meth:`equilibria`."""
        from scipy.optimize import brentq

        law = _two_token_law(self, normalization(norm).name)
        if law is None:
            return math.nan
        values = self.bind(beta=0.0, eps=eps, mu=mu, d=d)

        def lam(b):
            return float(law.lyapunov_minus(**{**values, "beta": b}))

        grid = np.linspace(0.0, beta_max, 501)
        signs = np.sign([lam(b) for b in grid])
        change = np.flatnonzero(signs[:-1] * signs[1:] < 0)
        if not change.size:
            return 0.0 if signs[0] < 0 else math.nan
        k = int(change[0])
        return float(brentq(lam, grid[k], grid[k + 1], xtol=1e-14, rtol=1e-14))

    def antipodal_probability(self, beta: float, d: int, *, eps: float = 1.0,
                              mu: float = 0.0, norm: NormalizationLike = "rms") -> float:
        r""":math:`P(\rho_t \to -1)` for two independent uniform tokens under the derived
        :math:`\rho`-SDE, from its scale function (:func:`scale_function_probability`).

        Raises
        ------
        LayerError
            Without :meth:`equilibria` (the law of the outcome is not of this form).
        """
        norm = normalization(norm)
        law = _two_token_law(self, norm.name)
        if law is None:
            raise LayerError(f"rho = +-1 are not equilibria of layer {self.name!r}'s "
                             f"rho-SDE ({norm.name}): it has no exact outcome law")
        values = self.bind(beta=beta, eps=eps, mu=mu, d=d)
        return scale_function_probability(lambda r: law.phi(r, **values),
                                          d - norm.directions)

    def outcome_probabilities(self, beta: float, d: int, *, horizon: float, tol: float,
                              eps: float = 1.0, mu: float = 0.0,
                              norm: NormalizationLike = "rms"):
        r"""(antipodal, single, undecided) of two uniform tokens at depth-time ``horizon``
        under the derived :math:`\rho`-SDE, classified with ``tol``: its Kolmogorov
        equation in :math:`z`, solved by the scheme of
        :func:`spheresde.two_token.outcome_probabilities` (the generator of this layer's
        SDE in place of the paper's); ``horizon=inf`` is :meth:`antipodal_probability`.

        Raises
        ------
        LayerError
            Without :meth:`equilibria`.
        """
        from ._outcomes import OutcomeFractions
        from .two_token._finite_horizon import refined_law

        if horizon != math.inf:  # inf: the t -> inf law
            _checks.real("horizon", horizon, at_least=0.0)
        if not 0 < tol < 1:
            raise ValueError(f"tol must be in (0, 1), got {tol!r}; pass e.g. tol=0.01")
        norm = normalization(norm)
        if math.isinf(horizon):
            return OutcomeFractions.exact(self.antipodal_probability(beta, d, eps=eps, mu=mu,
                                                                     norm=norm))
        law = _two_token_law(self, norm.name)
        if law is None:
            raise LayerError(f"rho = +-1 are not equilibria of layer {self.name!r}'s "
                             f"rho-SDE ({norm.name}): it has no exact outcome law")
        values = self.bind(beta=beta, eps=eps, mu=mu, d=d)
        rows, _ = refined_law((beta, d, eps, mu), tol, horizon, coefficients=law.z_sde(values),
                              sphere=d - norm.directions)
        antipodal, single, undecided = np.clip(rows.sum(axis=0), 0.0, 1.0)
        return OutcomeFractions(np.asarray(single), np.asarray(antipodal),
                                np.asarray(undecided), None)

    # -- the numeric side ----------------------------------------------------------------

    def step(self, n: int, norm: NormalizationLike = "rms"):
        """``step(key, x, values) -> x'``: one discrete layer for one trajectory's
        ``(n, d)`` tokens with the symbol values of :meth:`bind` (``s`` included)."""
        return _numeric_layer(self, n, normalization(norm).name)

    def delta(self, n: int, norm: NormalizationLike = "rms"):
        """``delta(key, x, values) -> Y - X``: the increment of :meth:`step` before
        normalizing (the same draws from the same ``key``)."""
        return _numeric_increment(self, n, normalization(norm).name)

    def simulate(self, key, tokens0, *, beta: float, eps: float = 1.0, mu: float = 0.0,
                 layers: int, steps: int, norm: NormalizationLike = "rms"):
        """The discrete network: ``steps`` layers of step ``s = layers ** -1/2`` from
        ``tokens0`` ``(trajectories, n, d)`` (put on the normalization's manifold first);
        the final tokens. Trajectory ``i`` draws the matrices of layer ``k`` from
        ``fold_in(fold_in(key, i), k)``: its path does not depend on the other
        trajectories, so :func:`absorbing_layer` stops some early without changing the
        rest."""
        _checks.tokens("tokens0", tokens0)
        if np.ndim(tokens0) != 3:
            raise ValueError(f"tokens0 has shape {np.shape(tokens0)}; pass the start of every "
                             "trajectory, an array of shape (trajectories, n, d)")
        _checks.whole("steps", steps)
        _checks.step_count(f"steps={steps}", steps, "pass fewer steps")
        tokens0 = jnp.asarray(tokens0)
        _, n, d = tokens0.shape
        norm = normalization(norm)
        values = {k: jnp.asarray(v, tokens0.dtype)
                  for k, v in self.bind(beta=beta, eps=eps, mu=mu, d=d, layers=layers).items()}
        return _advance(self.step(n, norm), norm.start(tokens0), _lane_keys(key, tokens0.shape[0]),
                        0, steps, values)

    def absorption_levels(self, beta: float, d: int, *, eps: float = 1.0, mu: float = 0.0,
                          tol: float, bound: float,
                          norm: NormalizationLike = "rms") -> tuple[float, float]:
        r"""The levels :math:`(z_-, z_+)` in :math:`z = \operatorname{artanh}\rho` beyond which
        two tokens come back to the classification boundary with probability at most
        ``bound``: :func:`spheresde.transformer._absorption.absorption_levels` with this
        layer's derived :math:`\rho`-SDE and its scale function in place of the paper's.
        :math:`(-\infty, \infty)` (never absorb) without :meth:`equilibria`, without noise
        (``eps = 0``) or with ``bound = 0``."""
        from ._rho import outcome_threshold

        _checks.real("bound", bound, at_least=0.0)
        if not 0 < tol < 1:
            raise ValueError(f"tol must be in (0, 1), got {tol!r}; pass e.g. tol=0.01")
        values = self.bind(beta=beta, eps=eps, mu=mu, d=d)
        return _levels(self, normalization(norm).name, tuple(sorted(values.items())),
                       outcome_threshold(tol), float(bound))


@functools.cache
def _levels(lay: Layer, norm_name: str, values: tuple, edge: float,
            bound: float) -> tuple[float, float]:
    from ._absorption import scale_levels

    law = _two_token_law(lay, norm_name)
    values = dict(values)
    if law is None or bound <= 0 or values["epsilon"] <= 0:
        return -math.inf, math.inf
    return scale_levels(law.z_sde(values), (values["beta"], values["d"], values["epsilon"],
                                            values["mu"]), edge, bound)


def _lane_keys(key, trajectories: int):
    """One key per trajectory, ``fold_in(key, i)``: its layers draw from it alone."""
    return jax.vmap(lambda i: jax.random.fold_in(key, i))(jnp.arange(trajectories))


@functools.partial(jax.jit, static_argnums=(0,), static_argnames=("block",))
def _advance(step, x, keys, start, count, values, *, blocks=1, block=None):
    """``count`` layers from layer ``start`` (both traced: one program for every segment
    and batch of a shape), trajectory ``i``'s layer ``k`` from ``fold_in(keys[i], k)``;
    only the first ``blocks`` (traced) blocks of ``block`` lanes
    (:func:`spheresde.transformer._absorption.run_in_segments`; ``None``: every lane)."""
    from ._absorption import _over_lanes

    one = jax.vmap(step, in_axes=(0, 0, None))

    def run(lanes):
        x, keys = lanes

        def layer_k(k, x):
            return one(jax.vmap(lambda lane: jax.random.fold_in(lane, start + k))(keys), x,
                       values)

        return jax.lax.fori_loop(0, count, layer_k, x), keys

    return _over_lanes(run, (x, keys), blocks, block)[0]


def absorbing_layer(key, lay: Layer, *, beta: float, d: int, eps: float, mu: float,
                    trajectories: int, layers: int, steps: int, tol: float, bound: float,
                    norm: NormalizationLike = "rms", segment: int = 512,
                    dtype=None) -> tuple[np.ndarray, int]:
    r"""Outcome codes of ``trajectories`` runs of ``lay``'s network with two uniform tokens
    for ``steps`` layers, with certified early absorption from the layer's own scale
    function (:meth:`Layer.absorption_levels`; none where it has no certificate); the
    codes and the trajectory-steps simulated.

    The paper's certificate, read off another :math:`\rho`-SDE: a pair beyond
    :math:`z_\pm` comes back to the classification boundary with probability at most
    ``bound``, so each fraction moves by at most ``bound`` in expectation (for the
    diffusion; the network follows it up to :math:`O(1/L)`). The inner product is read in
    float64 from the normalized tokens' difference and sum, :math:`1 \mp \rho =
    |u_1 \mp u_2|^2/2`, which keep their relative precision near :math:`\pm 1`. The same
    ``key`` gives the same paths as :meth:`Layer.simulate` (per-trajectory keys), so
    with and without absorption only a class the certificate bounds can change.
    """
    from .._geometry import sample_uniform
    from ._absorption import LIVE, run_in_segments
    from ._outcomes import ANTIPODAL, SINGLE, classify

    norm = normalization(norm)
    z_lo, z_hi = lay.absorption_levels(beta, d, eps=eps, mu=mu, tol=tol, bound=bound,
                                       norm=norm)
    gap_single = 2 / (1 + math.exp(2 * z_hi)) if math.isfinite(z_hi) else -1.0  # 1 - rho_+
    gap_anti = 2 / (1 + math.exp(-2 * z_lo)) if math.isfinite(z_lo) else -1.0  # 1 + rho_-
    start_key, path_key = jax.random.split(key)
    x0 = norm.start(sample_uniform(start_key, (trajectories, 2), d, dtype))
    values = {k: jnp.asarray(v, x0.dtype)
              for k, v in lay.bind(beta=beta, eps=eps, mu=mu, d=d, layers=layers).items()}
    step = lay.step(2, norm)
    segment = max(1, min(segment, steps // 8))

    def advance(state, start, count, **lanes):
        x, lane_keys = state
        return _advance(step, x, lane_keys, start, count, values, **lanes), lane_keys

    def status(state, live):
        x = np.asarray(state[0], float)
        u = x / np.linalg.norm(x, axis=-1, keepdims=True)
        minus = np.sum((u[:, 0] - u[:, 1]) ** 2, axis=-1) / 2
        plus = np.sum((u[:, 0] + u[:, 1]) ** 2, axis=-1) / 2
        return np.where(minus < gap_single, SINGLE, np.where(plus < gap_anti, ANTIPODAL, LIVE))

    def finish(state, live):
        return np.asarray(classify(state[0], tol))

    certified = gap_single > 0 or gap_anti > 0  # else the horizon is one call
    return run_in_segments(advance, (x0, _lane_keys(path_key, trajectories)),
                           status if certified else None, finish,
                           steps=steps, segment=segment)


@dataclass(frozen=True)
class _Program:
    """The engine's reading of a layer on ``n`` tokens, lambdified."""

    coefficients: Callable  # (gram entries, values) -> (det, gaussian..., relu c..., relu v...)
    gaussian: int  # number of independent d x d Gaussian draws per layer
    relu: tuple[tuple[int, int], ...]  # (block, token) of each ReLU term
    blocks: int  # number of ReLU blocks (W_1, W_2 pairs)


def _read(lay: Layer, n: int, norm_name: str) -> _Program:
    """Read ``lay`` on ``n`` tokens with the engine and lambdify its coefficients."""
    import sympy as sp

    from proofs_check.engine import GaussianMatrix, RandomVector, ReLUMLP, token_span
    from proofs_check.engine import normalization as symbolic

    span, tokens = token_span(n, symbolic(norm_name))
    try:
        increments = list(lay.increment(list(tokens)))
    except Exception as error:  # the user's function: say which layer and what it raised
        raise LayerError(f"layer {lay.name!r} cannot be read by the engine: "
                         f"{type(error).__name__}: {error} (write it with the primitives "
                         "of proofs_check.engine: softmax, GaussianMatrix, ReLUMLP, s)"
                         ) from None
    if len(increments) != n or not all(isinstance(v, RandomVector) for v in increments):
        kinds = sorted({type(v).__name__ for v in increments})
        raise LayerError(f"layer {lay.name!r} must return one RandomVector per token ({n}), "
                         f"got {len(increments)} of {', '.join(kinds) or 'nothing'}")
    size = span.n  # the tokens, then the normalization's fixed directions
    det = sp.zeros(n, size)
    gaussian: dict = {}
    relu, relu_terms, blocks = [], [], {}
    for i, inc in enumerate(increments):
        for c, v in inc.det:
            det[i, :] += c * v.coeffs.T
        for c, term in inc.noisy:
            if isinstance(term.source, GaussianMatrix):
                key = (term.source, term.owner)
                gaussian.setdefault(key, sp.zeros(n, size))[i, :] += c * term.vector.coeffs.T
            elif isinstance(term.source, ReLUMLP):
                block = blocks.setdefault(term.source, len(blocks))
                relu.append((block, i))
                relu_terms.append((c, term.vector.coeffs.T))
            else:
                raise LayerError(f"layer {lay.name!r}: no numeric draw for the noise source "
                                 f"{type(term.source).__name__}")
    gram = [sp.Symbol(f"g_{i}{j}", real=True) for i in range(n) for j in range(i + 1, n)]
    exprs = [det, *gaussian.values(), *[c for c, _ in relu_terms],
             *[v for _, v in relu_terms]]
    free = set().union(*(sp.sympify(e).free_symbols for e in exprs)) - set(gram)
    known = {*PARAMETERS, *lay.constants}
    unknown = sorted(str(x) for x in free if str(x) not in known)
    if unknown:
        raise LayerError(f"layer {lay.name!r} has symbols with no value: {', '.join(unknown)} "
                         f"(the parameters are {', '.join(PARAMETERS)}; give others a value "
                         "in Layer(constants=...))")
    names = sorted(known)
    symbols = [sp.Symbol(x) for x in names]
    # the engine's symbols carry assumptions: substitute them by plain ones of that name
    plain = {x: sp.Symbol(str(x)) for x in free}
    function = sp.lambdify([gram, symbols], [sp.sympify(e).subs(plain) for e in exprs],
                           modules="jax")

    def coefficients(entries, values):
        return function(entries, [values[x] for x in names])

    return _Program(coefficients, len(gaussian), tuple(relu), len(blocks))


@functools.cache
def _numeric_layer(lay: Layer, n: int, norm_name: str):
    norm = normalization(norm_name)
    delta = _numeric_increment(lay, n, norm_name)

    def step(key, x, values):
        return norm.normalize(x + delta(key, x, values))

    return step


@functools.cache
def _numeric_increment(lay: Layer, n: int, norm_name: str):
    program = _read(lay, n, norm_name)
    norm = normalization(norm_name)
    upper = np.triu_indices(n, 1)
    width = lay.width

    def increment(key, x, values):
        d = x.shape[-1]
        basis = norm.span_basis(x)
        out = program.coefficients((x @ x.T)[upper], values)
        det = jnp.broadcast_to(jnp.asarray(out[0], x.dtype), (n, basis.shape[0]))
        delta = det @ basis
        keys = jax.random.split(key, program.gaussian + 2 * program.blocks)
        for q in range(program.gaussian):
            g = jax.random.normal(keys[q], (d, d), x.dtype)
            delta = delta + (jnp.asarray(out[1 + q], x.dtype) @ basis) @ g.T
        offset = 1 + program.gaussian
        terms = len(program.relu)
        for t, (block, i) in enumerate(program.relu):
            k1, k2 = keys[program.gaussian + 2 * block: program.gaussian + 2 * block + 2]
            w1 = jax.random.normal(k1, (width, d), x.dtype)
            w2 = jax.random.normal(k2, (d, width), x.dtype) / np.sqrt(width)
            v = jnp.asarray(out[offset + terms + t], x.dtype).reshape(-1) @ basis
            delta = delta.at[i].add(out[offset + t] * (w2 @ jax.nn.relu(w1 @ v)))
        return delta

    return increment


@dataclass(frozen=True)
class _TwoTokenLaw:
    r"""The derived rho-SDE where +-1 are geometric equilibria, lambdified:
    :math:`\tilde m`, :math:`\tilde v` of ``(rho, **values)`` and :math:`\lambda_-` of
    ``(**values)``."""

    m_tilde: Callable
    v_tilde: Callable
    lyapunov_minus: Callable

    def phi(self, r, **values):
        r""":math:`2 b_z / a_z` in :math:`z = \operatorname{artanh}\rho`: the scale rate."""
        v = self.v_tilde(r, **values)
        return 2 * (self.m_tilde(r, **values) + r * v) / v

    def z_sde(self, values: Mapping[str, float]):
        """The z-SDE as :mod:`spheresde.transformer.two_token`'s Kolmogorov solver asks it:
        ``z_drift``, ``z_diffusion``, ``z_scale_rate`` of ``(z, beta, d, e, mu)``."""
        law = self

        def bound(beta, d, e, mu):
            return {**values, "beta": beta, "d": d, "epsilon": e, "mu": mu}

        class _ZSDE:
            @staticmethod
            def z_drift(z, *args):
                r = np.tanh(z)
                v = bound(*args)
                return law.m_tilde(r, **v) + r * law.v_tilde(r, **v)

            @staticmethod
            def z_diffusion(z, *args):
                return np.sqrt(law.v_tilde(np.tanh(z), **bound(*args)))

            @staticmethod
            def z_scale_rate(z, *args):
                return law.phi(np.tanh(z), **bound(*args))

        return _ZSDE()


@functools.cache
def _rho_sde(lay: Layer, norm_name: str):
    from proofs_check.engine import rho_sde

    try:
        return rho_sde(lay.increment, norm_name)
    except LayerError:
        raise
    except Exception as error:
        raise LayerError(f"layer {lay.name!r} cannot be read by the engine: "
                         f"{type(error).__name__}: {error}") from None


@functools.cache
def _two_token_law(lay: Layer, norm_name: str) -> _TwoTokenLaw | None:
    r"""Lambdified from the derived rho-SDE: :math:`m = (1-\rho^2)\tilde m`,
    :math:`v = (1-\rho^2)^2 \tilde v`, so that in :math:`z = \operatorname{artanh}\rho`
    :math:`2 b_z / a_z = 2(\tilde m + \rho\tilde v)/\tilde v` (no cancellation near
    :math:`\rho = \pm 1`). None unless :math:`\tilde m` and :math:`\tilde v` are finite
    at :math:`\pm 1` with :math:`\tilde v > 0` there."""
    import sympy as sp

    from proofs_check.engine import canonical, lyapunov_at, value_at
    from proofs_check.symbols import rho

    sde = _rho_sde(lay, norm_name)
    m_t = canonical(sde.drift / (1 - rho**2))
    v_t = canonical(sde.variance / (1 - rho**2) ** 2)
    for end in (1, -1):
        for expr in (m_t, v_t):
            if value_at(expr, end).has(sp.zoo, sp.oo, sp.nan):
                return None
    try:
        lam = lyapunov_at(sde, -1)
    except ValueError:
        return None
    free = sorted({str(x) for x in (m_t + v_t + lam).free_symbols} - {"rho"})
    plain = {x: sp.Symbol(str(x)) for x in (m_t + v_t + lam).free_symbols}
    r = sp.Symbol("rho")
    args = [sp.Symbol(x) for x in free]

    def numeric(expr, *leading):
        f = sp.lambdify([*leading, *args], expr.subs(plain), modules="numpy")
        return lambda *first, **v: f(*first, *[v[x] for x in free]) + 0 * sum(first, 0.0)

    return _TwoTokenLaw(numeric(m_t, r), numeric(v_t, r), numeric(lam))


def scale_function_probability(phi: Callable, sphere: int, *, half_width: float = 20.0,
                               points: int = 40001) -> float:
    r""":math:`P(\rho_t \to -1)` for a diffusion of :math:`z = \operatorname{artanh}\rho`
    with :math:`2 b_z/a_z = \varphi(\rho)`, from :math:`\rho_0` of two independent
    uniform points of a sphere :math:`S^{k-1}` (``sphere`` = k: density
    :math:`\propto (1-\rho^2)^{(k-3)/2}`, in z :math:`\operatorname{sech}^{k-1} z`).

    The scale density is :math:`S'(z) = e^{-\Phi(z)}`, :math:`\Phi' = \varphi`, and
    :math:`P(\to -1 \mid z_0) = (S(\infty) - S(z_0))/(S(\infty) - S(-\infty))`. On
    :math:`|z| \le` ``half_width`` by the trapezoid rule; beyond, :math:`\varphi` is its
    limit to :math:`e^{-2\,\text{half\_width}}` and the tails are exponentials
    (:math:`S(\pm\infty)` infinite where they do not decay: the end is never reached).
    """
    z = np.linspace(-half_width, half_width, points)
    h = z[1] - z[0]
    f = np.broadcast_to(np.asarray(phi(np.tanh(z)), float), z.shape)
    Phi = np.concatenate([[0.0], np.cumsum((f[1:] + f[:-1]) * h / 2)])
    Phi -= Phi[points // 2]
    a = -Phi
    top = a.max()
    s_prime = np.exp(a - top)
    S = np.concatenate([[0.0], np.cumsum((s_prime[1:] + s_prime[:-1]) * h / 2)])
    phi_plus, phi_minus = f[-1], f[0]
    # tails: S' = S'(Z) exp(-phi_+ (z - Z)) beyond Z, S'(-Z) exp(phi_- (-Z - z)) before -Z
    upper = s_prime[-1] / phi_plus if phi_plus > 0 else math.inf
    lower = -s_prime[0] / phi_minus if phi_minus < 0 else math.inf
    density = np.cosh(z) ** -(sphere - 1.0)
    density /= np.sum((density[1:] + density[:-1]) * h / 2)
    if math.isinf(upper) and math.isinf(lower):
        return math.nan
    if math.isinf(upper):
        return 1.0
    if math.isinf(lower):
        return 0.0
    s_top = S[-1] + upper  # S(+inf) with S(-Z) = 0
    p = (s_top - S) / (s_top + lower)
    return float(np.clip(np.sum((density * p)[1:] + (density * p)[:-1]) * h / 2, 0.0, 1.0))


# -- the registry ----------------------------------------------------------------------


def _paper(tokens):
    from proofs_check.layers import paper_layer

    return paper_layer()(tokens)


def _two_heads(tokens):
    from proofs_check.layers import heads_layer
    from proofs_check.symbols import beta

    return heads_layer([beta, beta / 2])(tokens)


def _mlp(tokens):
    from proofs_check.layers import mlp_layer

    return mlp_layer()(tokens)


def _per_token(tokens):
    from proofs_check.engine import GaussianMatrix, softmax
    from proofs_check.symbols import beta, eps, s

    V = GaussianMatrix("V", std=eps)
    U = GaussianMatrix("U", std=eps / 2, shared=False)
    return [s * (V @ a) + s * (U[i] @ a) for i, a in enumerate(softmax(tokens, beta))]


_REGISTRY: dict[str, Layer] = {}


def register_layer(lay: Layer) -> Layer:
    """Make ``lay`` known by its name to :func:`layer` and every ``--layer`` (registering
    the same layer again does nothing).

    Raises
    ------
    ValueError
        If another layer has that name, or the name has a colon (``MODULE:FUNCTION``).
    """
    if not isinstance(lay, Layer):
        raise TypeError(f"register a spheresde.transformer.Layer, got {lay!r}")
    if ":" in lay.name:
        raise ValueError(f"a registered layer's name has no colon, got {lay.name!r}")
    known = _REGISTRY.setdefault(lay.name, lay)
    if known is not lay and known.increment is not lay.increment:
        raise ValueError(f"the layer name {lay.name!r} is taken: give yours another name")
    return known


for _layer in (
    Layer("paper", _paper, "the paper's: s V A_i, V = mu s I + eps G"),
    Layer("two_heads", _two_heads, "two heads at beta and beta/2, independent V_h"),
    Layer("mlp", _mlp, "the paper's plus a ReLU MLP block of scale gamma = 1",
          {"gamma": 1.0}),
    Layer("per_token", _per_token, "the paper's plus a value matrix per token (eps/2)"),
):
    register_layer(_layer)


def layers() -> tuple[str, ...]:
    """The registered layer names."""
    return tuple(_REGISTRY)


def layer(spec: str | Layer) -> Layer:
    """The layer ``spec`` names: a registered name, ``"MODULE:FUNCTION"`` (a function of
    the tokens importable from the working directory, as
    ``examples/plot_custom_layer.py`` writes one) or a :class:`Layer` itself.

    Raises
    ------
    LayerError
        For a name that is not registered or a function that cannot be imported.
    """
    if isinstance(spec, Layer):
        return spec
    if not isinstance(spec, str):
        raise LayerError(f"a layer is a registered name or MODULE:FUNCTION, got {spec!r}")
    if spec in _REGISTRY:
        return _REGISTRY[spec]
    module, colon, function = spec.partition(":")
    if not colon:
        raise LayerError(f"no layer {spec!r}: pass one of {', '.join(_REGISTRY)} or "
                         "MODULE:FUNCTION (a function of the tokens written with "
                         "proofs_check.engine)")
    if os.getcwd() not in sys.path:  # importable from the working directory, as documented
        sys.path.insert(0, os.getcwd())
    try:
        found = getattr(importlib.import_module(module), function)
    except (ImportError, AttributeError) as error:
        raise LayerError(f"cannot import layer {spec!r}: {error}") from None
    if not callable(found):
        raise LayerError(f"layer {spec!r} is not a function of the tokens")
    return Layer(spec, found, f"{function} of {module}")


__all__ = ["Layer", "LayerError", "absorbing_layer", "layer", "layers", "register_layer",
           "scale_function_probability"]
