r"""Monte Carlo checks of the layers beyond the paper's (:doc:`/theory/beyond`).

One discrete layer of two tokens, with any of the extensions derived in
:mod:`proofs_check.layers` (LayerNorm, several heads, a residual ReLU MLP block):

.. math::

    Y_i = X_i + L^{-1/2}\Big(\varepsilon\sum_h G_h A_{\beta_h, i}
          + \gamma\, W_2\,\mathrm{relu}(W_1 X_i)\Big), \qquad X_i' = N(Y_i),

:math:`G_h` iid :math:`N(0, 1)` entries, :math:`W_1` (``width x d``) iid
:math:`N(0, 1)`, :math:`W_2` (``d x width``) iid :math:`N(0, 1/\text{width})`, all fresh
per layer and shared by the tokens; :math:`N` is :func:`spheresde.transformer._network.normalize`.

:func:`one_layer_moments` estimates the drift and variance per unit depth-time of
:math:`\rho = \langle X_1, X_2\rangle` after one layer, which the derived two-token SDE
predicts: :math:`E[\Delta\rho] = h\,m(\rho) + O(h^2)`, :math:`E[\Delta\rho^2] =
h\,s(\rho)^2 + O(h^2)`. The mean uses the first-order term :math:`F` of
:math:`\Delta\rho` (linear in the noise, mean exactly 0) as a control variate, so its
standard error is :math:`O(1)/\sqrt N` instead of :math:`O(h^{-1/2})/\sqrt N`.
:func:`simulate_pair` runs many layers (outcomes at a horizon).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ._network import Norm, horizon_steps, normalize
from ._normalization import normalization


@dataclass(frozen=True)
class PairLayer:
    """Parameters of the two-token layer of the module docstring."""

    d: int
    betas: tuple[float, ...] = (1.0,)
    eps: float = 1.0
    gamma: float = 0.0
    width: int = 8
    norm: Norm = "rms"


def _noise(key, x, layer: PairLayer):
    """The centred increments :math:`Z_i` (before the step :math:`L^{-1/2}`), ``(2, d)``."""
    keys = jax.random.split(key, len(layer.betas) + 2)
    z = jnp.zeros_like(x)
    for k, b in zip(keys, layer.betas, strict=False):
        w = jax.nn.softmax(b * (x @ x.T), axis=-1)
        g = jax.random.normal(k, (layer.d, layer.d), x.dtype)
        z = z + layer.eps * (w @ x) @ g.T
    if layer.gamma:
        w1 = jax.random.normal(keys[-2], (layer.width, layer.d), x.dtype)
        w2 = jax.random.normal(keys[-1], (layer.d, layer.width), x.dtype) / np.sqrt(layer.width)
        z = z + layer.gamma * jax.nn.relu(x @ w1.T) @ w2.T
    return z


def _step(key, x, layer: PairLayer, h: float):
    z = _noise(key, x, layer)
    return normalize(x + np.sqrt(h) * z, layer.norm), z


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

    def one(k):
        y, z = _step(k, x, layer, h)
        delta = y[0] @ y[1] - x[0] @ x[1]
        first = np.sqrt(h) * (x[1] @ z[0] + x[0] @ z[1] - rho * (x[0] @ z[0] + x[1] @ z[1]))
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
    h = 1.0 / layers

    def run(k, x):
        def body(x, kk):
            return _step(kk, x, layer, h)[0], None

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
        step = z + (reduced_drift(r) + r * v2) * dt + jnp.sqrt(v2) * dw
        # absorbed at 1 -+ rho < 1e-12: tanh would round to +-1 and the coefficients to 0/0
        return jnp.where(jnp.abs(z) > _Z_ABSORBED, z, step), None

    keys = jax.random.split(path_key, horizon_steps(horizon, dt))
    return np.asarray(jnp.tanh(jax.jit(lambda z: jax.lax.scan(body, z, keys)[0])(z0)))


__all__ = ["PairLayer", "one_layer_moments", "simulate_pair", "simulate_rho_sde", "start_pair"]
