r"""Monte Carlo checks of the layers beyond the paper's (:doc:`/theory/beyond`).

One discrete layer of two tokens, with any of the extensions derived in
:mod:`proofs_check.layers` (LayerNorm, several heads, a residual ReLU MLP block):

.. math::

    Y_i = X_i + L^{-1/2}\Big(\varepsilon\sum_h G_h A_{\beta_h, i}
          + \gamma\, W_2\,\mathrm{relu}(W_1 X_i)\Big), \qquad X_i' = N(Y_i),

:math:`G_h` iid :math:`N(0, 1)` entries, :math:`W_1` (``width x d``) iid
:math:`N(0, 1)`, :math:`W_2` (``d x width``) iid :math:`N(0, 1/\text{width})`, all fresh
per layer and shared by the tokens; :math:`N` the normalization ``norm``. The layer is
not written here: :meth:`PairLayer.layer` is the definition of :mod:`proofs_check.layers`
(:func:`~proofs_check.layers.paper_layer`, :func:`~proofs_check.layers.heads_layer`,
:func:`~proofs_check.layers.mlp_layer`) as a :class:`~spheresde.transformer.Layer`, run
by its generic numeric reading.

:func:`one_layer_moments` estimates the drift and variance per unit depth-time of
:math:`\rho = \langle X_1, X_2\rangle` after one layer, which the derived two-token SDE
predicts: :math:`E[\Delta\rho] = h\,m(\rho) + O(h^2)`, :math:`E[\Delta\rho^2] =
h\,s(\rho)^2 + O(h^2)`. The mean uses the first-order term :math:`F` of
:math:`\Delta\rho` (linear in the noise, mean exactly 0) as a control variate, so its
standard error is :math:`O(1)/\sqrt N` instead of :math:`O(h^{-1/2})/\sqrt N`.
:func:`simulate_pair` runs many layers (outcomes at a horizon).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ._layers import Layer
from ._network import Norm, horizon_steps, normalize
from ._normalization import normalization
from ._rho import euler_step


@dataclass(frozen=True)
class PairLayer:
    """Parameters of the two-token layer of the module docstring: one head at ``betas[0]``
    (with an MLP block of scale ``gamma`` > 0), or several heads without one."""

    d: int
    betas: tuple[float, ...] = (1.0,)
    eps: float = 1.0
    gamma: float = 0.0
    width: int = 8
    norm: Norm = "rms"

    def layer(self) -> Layer:
        """The layer of :mod:`proofs_check.layers` these parameters take."""
        if self.gamma and len(self.betas) != 1:
            raise ValueError("an MLP block is derived with one head: pass one beta")
        return _engine_layer(len(self.betas), bool(self.gamma), self.width)

    def values(self, layers: int) -> dict[str, float]:
        """The numbers of the layer's symbols at ``layers`` per unit depth-time."""
        own = {f"beta_{h + 1}": b for h, b in enumerate(self.betas)} if len(self.betas) > 1 \
            else {}
        values = self.layer().bind(beta=self.betas[0], eps=self.eps, d=self.d, layers=layers)
        return {**values, **own, "gamma": float(self.gamma)}


@functools.cache
def _engine_layer(heads: int, mlp: bool, width: int) -> Layer:
    def increment(tokens):
        import sympy as sp

        from proofs_check.layers import heads_layer, mlp_layer, paper_layer

        if mlp:
            return mlp_layer()(tokens)
        if heads == 1:
            return paper_layer()(tokens)
        return heads_layer(sp.symbols(f"beta_1:{heads + 1}"))(tokens)

    own = {f"beta_{h + 1}": 0.0 for h in range(heads)} if heads > 1 else {}
    return Layer(f"pair_{heads}_heads" + ("_mlp" if mlp else ""), increment,
                 constants={**own, "gamma": 0.0}, width=width)


def _step(key, x, layer: PairLayer, values):
    """The layer from ``x`` and its increment ``Y - X``."""
    delta = layer.layer().delta(2, layer.norm)(key, x, values)
    return normalize(x + delta, layer.norm), delta


def start_pair(rho: float, layer: PairLayer, dtype=jnp.float64):
    """Two unit tokens with inner product ``rho`` (orthogonal to ``(1, ..., 1)``)."""
    basis = np.eye(layer.d)
    norm = normalization(layer.norm)
    if norm.directions:  # orthonormal rows in the range of P (LayerNorm's hyperplane)
        basis = np.linalg.qr(norm.project(basis)[:, :-norm.directions])[0].T
    x = np.stack([basis[0], rho * basis[0] + np.sqrt(1 - rho**2) * basis[1]])
    return jnp.asarray(x, dtype)


def one_layer_moments(key, rho: float, layer: PairLayer, *, layers: int,
                      samples: int) -> dict[str, float]:
    r"""Drift and variance per unit depth-time of :math:`\rho` after one layer, by Monte Carlo.

    Parameters
    ----------
    key
        PRNG key.
    rho
        Start :math:`\rho_0`.
    layer
        The layer.
    layers
        :math:`L` (the step is :math:`h = 1/L`).
    samples
        Independent draws of the layer's weights.

    Returns
    -------
    dict
        ``drift``, ``drift_se``: :math:`\overline{\Delta\rho - F}/h` and its standard error;
        ``variance``, ``variance_se``: :math:`\overline{\Delta\rho^2}/h` and its standard
        error.
    """
    h = 1.0 / layers
    x = start_pair(rho, layer)
    values = layer.values(layers)

    def one(k):
        y, z = _step(k, x, layer, values)
        delta = y[0] @ y[1] - x[0] @ x[1]
        first = x[1] @ z[0] + x[0] @ z[1] - rho * (x[0] @ z[0] + x[1] @ z[1])
        return delta - first, delta**2

    centred, squares = jax.jit(jax.vmap(one))(jax.random.split(key, samples))
    centred, squares = np.asarray(centred) / h, np.asarray(squares) / h
    root = np.sqrt(samples)
    return {"drift": float(centred.mean()), "drift_se": float(centred.std(ddof=1) / root),
            "variance": float(squares.mean()), "variance_se": float(squares.std(ddof=1) / root)}


def simulate_pair(key, layer: PairLayer, *, layers: int, horizon: float, trajectories: int,
                  dtype=jnp.float64) -> np.ndarray:
    r""":math:`\rho` at the horizon of ``trajectories`` runs of
    ``network_depth(horizon, layers)`` layers (the one rule for depth) from two
    independent uniform tokens (normalized by ``layer.norm`` first)."""
    from .._geometry import sample_uniform
    from ._network import network_depth

    start_key, path_key = jax.random.split(key)
    x0 = normalize(sample_uniform(start_key, (trajectories, 2), layer.d, dtype=dtype),
                   layer.norm)
    values = layer.values(layers)

    def run(k, x):
        def body(x, kk):
            return _step(kk, x, layer, values)[0], None

        return jax.lax.scan(body, x, jax.random.split(k, network_depth(horizon, layers)))[0]

    keys = jax.random.split(path_key, trajectories)
    final = jax.jit(jax.vmap(run))(keys, x0)
    return np.asarray(jnp.einsum("td,td->t", final[:, 0], final[:, 1]))


_Z_ABSORBED = 14.0  # 1 - |tanh z| ~ 2 e^{-2|z|} ~ 1.4e-12


def simulate_rho_sde(key, reduced_drift, reduced_variance, *, d: int, dt: float,
                     horizon: float, trajectories: int) -> np.ndarray:
    r"""Euler--Maruyama of a derived two-token SDE in :math:`z = \operatorname{artanh}\rho`
    (no boundary to overshoot), from two independent uniform tokens on :math:`S^{d-1}`.

    With :math:`d\rho = m\,dt + s\,dB`, :math:`\tilde m = m/(1-\rho^2)` and
    :math:`v^2 = s^2/(1-\rho^2)^2`, Ito's lemma gives :math:`dz = (\tilde m + \rho v^2)\,dt
    + v\,dB`. ``reduced_drift(rho)`` and ``reduced_variance(rho)`` are :math:`\tilde m` and
    :math:`v^2`, lambdified (JAX) from :mod:`proofs_check.layers`. A path is absorbed once
    :math:`|z| > 14` (:math:`1 \mp \rho < 10^{-12}`, far inside any outcome tolerance).
    Returns :math:`\rho` at the horizon."""
    from .._geometry import sample_uniform

    start_key, path_key = jax.random.split(key)
    x = sample_uniform(start_key, (trajectories, 2), d, dtype=jnp.float64)
    z0 = jnp.arctanh(jnp.clip(jnp.einsum("td,td->t", x[:, 0], x[:, 1]), -1 + 1e-12,
                              1 - 1e-12))

    def body(z, k):
        r = jnp.tanh(z)
        v2 = jnp.maximum(reduced_variance(r), 0.0)
        dw = jax.random.normal(k, z.shape, z.dtype) * np.sqrt(dt)
        step = euler_step(z, reduced_drift(r) + r * v2, jnp.sqrt(v2), dt, dw)
        # absorbed at 1 -+ rho < 1e-12: tanh would round to +-1 and the coefficients to 0/0
        return jnp.where(jnp.abs(z) > _Z_ABSORBED, z, step), None

    keys = jax.random.split(path_key, horizon_steps(horizon, dt))
    return np.asarray(jnp.tanh(jax.jit(lambda z: jax.lax.scan(body, z, keys)[0])(z0)))


__all__ = ["PairLayer", "one_layer_moments", "simulate_pair", "simulate_rho_sde", "start_pair"]
