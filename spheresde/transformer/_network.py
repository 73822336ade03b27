r"""The discrete deep stochastic Transformer: many trajectories of ``L``-layer networks.

One layer maps every token by :math:`Y_i = X_i + L^{-1/2} V_k A_i`,
:math:`X_i' = Y_i / |Y_i|`, with :math:`A_i = \sum_j \operatorname{softmax}_j
(\beta \langle Q X_i, K X_j\rangle) X_j` and ONE matrix :math:`V_k` shared by all
tokens of layer :math:`k`. Layer :math:`k` stands at depth-time :math:`t = k/L`; a
horizon :math:`T` is :math:`\operatorname{round}(T L)` layers (the paper's Figure 3:
:math:`L = 100`, :math:`T = 500`). These are the conventions of
:doc:`/theory/discrete_model`.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .. import _checks
from .._small import small_matmul
from .._typing import Array, ArrayLike, Float, Matrix, PRNGKeyArray, RealScalar
from ._attention import attention_weights
from ._noise import Noise, noise_on_attention, noise_shape
from ._normalization import NormalizationLike, normalization
from ._weights import AbstractWeights, PureNoise


class NetworkResult(NamedTuple):
    """Output of :func:`simulate_network`.

    ``tokens``: final tokens ``(trajectories, n, d)`` (at the requested radius);
    ``times``: depth-times of the saved Gram matrices ``(n_saves,)`` or ``None``;
    ``gram``: :math:`\\langle X_i, X_j\\rangle` of unit tokens,
    ``(trajectories, n_saves, n, n)``, or ``None``.
    """

    tokens: Float[Array, "trajectories n d"]
    times: Float[Array, " saves"] | None
    gram: Float[Array, "trajectories saves n n"] | None


Norm = NormalizationLike


def normalize(y, norm: Norm = "rms"):
    r"""Token-wise normalization onto the unit sphere of ``norm``'s manifold
    (:meth:`spheresde.transformer.AbstractNormalization.normalize`): ``"rms"``
    :math:`y/|y|`; ``"layer"`` (LayerNorm at unit scale) :math:`Py/|Py|`,
    :math:`P = I - \mathbf 1 \mathbf 1^\top/d`."""
    return normalization(norm).normalize(y)


def layer(x, z, beta_eff, Q, K, drift_step, noise_step, noise: Noise, radius,
          norm: Norm = "rms"):
    """One Transformer layer for one trajectory: residual update, then normalization.

    ``z`` is the layer's standard noise (``noise_shape(noise, d, n)``), ``beta_eff`` the
    inverse temperature of the logits at this radius, ``norm`` the normalization
    (:func:`normalize`).
    """
    w = attention_weights(x, beta_eff, Q, K)
    y = x + drift_step * small_matmul(w, x) + noise_step * noise_on_attention(x, w, z, noise)
    return radius * normalize(y, norm)


def network_depth(horizon: RealScalar, layers: int) -> int:
    r"""The number of layers of a network with ``layers`` per unit depth-time run to
    depth-time ``horizon``: :math:`\operatorname{round}(T L)`, the one rule for depth.

    Raises
    ------
    ValueError
        If that is fewer than one layer (``T L <= 1/2``).
    """
    return _whole_steps(horizon, layers)


def _whole_steps(horizon, per_unit) -> int:
    steps = round(horizon * per_unit)
    if steps < 1:
        raise ValueError(
            f"a horizon T = {float(horizon):g} with L = {per_unit:g} layers per unit depth-time "
            f"is round(T L) = {steps} layers; pass T > 1/(2L) = {0.5 / per_unit:g} or more "
            "layers")
    return steps


def reached_horizon(horizon: RealScalar, layers: int) -> float:
    """The depth-time that :func:`network_depth` steps of ``1/layers`` reach,
    ``round(T L) / L``: ``horizon`` itself whenever ``T L`` is a whole number, else the
    nearest whole number of layers (the depth-time at which a run's laws are compared)."""
    return network_depth(horizon, layers) / layers


def horizon_steps(horizon: RealScalar, dt: RealScalar) -> int:
    r"""The number of steps of size ``dt`` to depth-time ``horizon``: a step ``dt`` is
    :math:`L = 1/dt` layers per unit depth-time, so this is :func:`network_depth` of
    ``(horizon, 1 / dt)``, the same rule and not a second one (at :math:`T = 0.35`,
    :math:`dt = 0.1` the float quotient ``0.35 / 0.1`` is just below 3.5 and would
    round to 3 steps, where :math:`T L` rounds to 4).

    Raises
    ------
    ValueError
        If that is fewer than one step (``T <= dt/2``).
    """
    return _whole_steps(horizon, 1.0 / float(dt))


def simulate_network(
    key: PRNGKeyArray,
    tokens0: Float[ArrayLike, "*trajectories n d"],
    beta: RealScalar,
    weights: AbstractWeights | None = None,
    *,
    layers: int,
    horizon: RealScalar,
    trajectories: int,
    Q: Matrix | None = None,
    K: Matrix | None = None,
    radius: Literal["unit", "sqrt_d"] = "unit",
    save_every: int | None = None,
    noise: Noise | None = None,
    norm: Norm = "rms",
) -> NetworkResult:
    r"""Run the discrete deep network: ``round(horizon * layers)`` layers (:func:`network_depth`),
    many trajectories.

    A ``jax.lax.scan`` over layers of a layer ``vmap``-ped over trajectories (one
    compiled program, no host synchronization). The matrix :math:`V_k` is fresh for
    every layer and trajectory and shared by the tokens.

    Parameters
    ----------
    key
        PRNG key.
    tokens0
        Initial tokens, ``(n, d)`` (common start) or ``(trajectories, n, d)``, at the
        chosen radius.
    beta
        Inverse temperature. With ``radius="sqrt_d"`` (token-wise RMS normalization:
        tokens of norm :math:`\sqrt d`) the logits are :math:`\beta\langle Q x, K y\rangle / d`
        and the normalization is :math:`\sqrt d\, Y/|Y|`, so the run is exactly the unit
        sphere run scaled by :math:`\sqrt d` (same :math:`\beta`, same law).
    weights
        :class:`PureNoise` (default), :class:`Hybrid` or :class:`ConstantWeights`.
    layers
        :math:`L`, layers per unit of depth-time (step :math:`1/L`).
    horizon
        :math:`T`, depth-time.
    trajectories
        Independent runs.
    Q, K
        Query and key matrices (identity by default).
    radius
        ``"unit"`` or ``"sqrt_d"``.
    save_every
        Save the Gram matrix of the (unit) tokens every this many layers (must divide
        the number of layers); ``None`` saves nothing.
    noise
        ``"span"`` draws only :math:`V X^\top` (``d x n`` normals, exact in law: the span
        trick of :doc:`/theory/limit_sde`); ``"full"`` draws all of :math:`V`
        (``d x d``). Default: ``"span"`` when ``n < d``.
    norm
        ``"rms"`` (the paper's: :math:`Y/|Y|`), ``"layer"`` (LayerNorm: centre, then
        normalize; the start ``tokens0`` is centred and normalized first, and the tokens
        stay on the sphere of dimension :math:`d-2` orthogonal to :math:`(1,\dots,1)`;
        :doc:`/theory/beyond`), or any registered
        :class:`~spheresde.transformer.AbstractNormalization` (its name or itself).

    Returns
    -------
    NetworkResult
    """
    _checks.network(tokens0, beta, weights, layers=layers, horizon=horizon,
                    trajectories=trajectories)
    weights = PureNoise() if weights is None else weights
    tokens0 = jnp.asarray(tokens0)
    n, d = tokens0.shape[-2:]
    noise = ("span" if n < d else "full") if noise is None else noise
    noise_shape(noise, d, n)
    norm = normalization(norm)
    tokens0 = norm.start(tokens0, {"unit": 1.0, "sqrt_d": float(np.sqrt(d))}[radius])
    steps = network_depth(horizon, layers)
    if save_every is not None and steps % save_every:
        raise ValueError(f"save_every={save_every} must divide the number of layers {steps}")
    drift_step, noise_step = (float(s) for s in weights.layer_steps(layers))
    return _run_network(
        key, jnp.broadcast_to(tokens0, (trajectories, n, d)), jnp.asarray(beta, tokens0.dtype),
        Q, K, steps=steps, layers=layers, drift_step=drift_step, noise_step=noise_step,
        noise=noise, radius={"unit": 1.0, "sqrt_d": float(np.sqrt(d))}[radius],
        save_every=save_every, norm=norm,
    )


@eqx.filter_jit
def _run_network(key, x0, beta, Q, K, *, steps, layers, drift_step, noise_step, noise, radius,
                 save_every, norm):
    trajectories, n, d = x0.shape
    z_shape = noise_shape(noise, d, n)
    one_layer = jax.vmap(
        lambda x, z: layer(x, z, beta / radius**2, Q, K, drift_step, noise_step, noise, radius,
                           norm)
    )

    def one(x, k):
        if noise_step == 0.0:  # deterministic weights: no draws at all
            z = jnp.zeros((trajectories, *z_shape), x.dtype)
        else:
            z = jax.random.normal(jax.random.fold_in(key, k), (trajectories, *z_shape), x.dtype)
        return one_layer(x, z), None

    if save_every is None:
        x, _ = jax.lax.scan(one, x0, jnp.arange(steps))
        return NetworkResult(x, None, None)

    def block(x, b):
        x, _ = jax.lax.scan(one, x, b * save_every + jnp.arange(save_every))
        return x, jnp.einsum("tid,tjd->tij", x, x) / radius**2

    x, gram = jax.lax.scan(block, x0, jnp.arange(steps // save_every))
    times = jnp.arange(1, steps // save_every + 1) * save_every / layers
    return NetworkResult(x, times, jnp.swapaxes(gram, 0, 1))


__all__ = ["NetworkResult", "Norm", "layer", "normalize", "simulate_network"]
