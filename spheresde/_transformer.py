r"""The deep stochastic Transformer: weight models, its SDE limit and the discrete network.

Conventions (``MODEL.md`` sections 1--2, stated once here and in the docs):

- One layer maps every token by :math:`Y_i = X_i + L^{-1/2} V_k A_i`,
  :math:`X_i' = Y_i / |Y_i|`, with :math:`A_i = \sum_j \operatorname{softmax}_j
  (\beta \langle Q X_i, K X_j\rangle) X_j` and ONE matrix :math:`V_k` shared by all
  tokens of layer :math:`k`. Layer :math:`k` stands at depth-time :math:`t = k/L`;
  a horizon :math:`T` is :math:`\operatorname{round}(T L)` layers (the paper's
  Figure 3: :math:`L = 100`, :math:`T = 500`).
- As :math:`L \to \infty` (the paper's Theorem 1) this becomes the Ito SDE

  .. math:: dX_i = \varepsilon P_i\,(dW A_i) + \mu P_i A_i\,dt
            - \tfrac{\varepsilon^2 (d-1)}{2} |A_i|^2 X_i\,dt,
            \qquad P_i = I - X_i X_i^\top,

  driven by one :math:`d \times d` matrix Brownian motion :math:`W`, with
  :math:`(\mu, \varepsilon) = (0, \sigma)` for pure noise and the hybrid's own
  :math:`(\mu, \varepsilon)`. The normal drift coefficient is
  ``proofs_check.export.limit_coefficients().normal_drift`` (derived, not retyped).
- Span trick: :math:`A_i = \sum_j w_{ij} X_j` lies in the span of the tokens, so
  :math:`dW A_i = (dW X^\top) w_i`, and the rows of :math:`dW X^\top` (``d x n``) are
  iid :math:`N(0, G\,dt)` with :math:`G = X X^\top`. Hence
  :math:`dW X^\top \overset{law}{=} Z G^{1/2}` with :math:`Z` a ``d x n`` matrix of iid
  :math:`N(0, dt)`: ``d n`` normals instead of ``d^2``. The identity holds in law
  for one increment at a frozen configuration, so it is exact for the discrete
  network and for one-evaluation (Ito, Euler-type) schemes, but it is not a pathwise
  identity: never use it with a Stratonovich (Heun, midpoint) scheme or for strong
  errors. :math:`G^{1/2}` is the symmetric square root (closed form for ``n = 2``,
  otherwise ``eigh`` with eigenvalues clipped at 0, which stays exact when tokens
  cluster and :math:`G` becomes singular, where a Cholesky factor would fail).
"""

from __future__ import annotations

import itertools
from typing import Literal, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._attention import attention, attention_weights
from ._geometry import project_tangent, retract
from ._sde import SphereSDE
from ._small import inner, small_matmul
from ._typing import Array, PRNGKeyArray

Noise = Literal["full", "span"]


# --------------------------------------------------------------------------- weights


class AbstractWeights(eqx.Module):
    r"""How the value matrices :math:`V_k` are drawn, layer after layer.

    Every model is :math:`V_k = \mu L^{-1/2} I + \varepsilon G_k` in law (``G_k`` iid
    standard normal entries); :meth:`layer_steps` gives the resulting per-layer drift
    and noise steps, :meth:`limit` the :math:`(\mu, \varepsilon)` of the SDE limit.
    """

    def layer_steps(self, layers: int) -> tuple[float, float]:
        r"""``(drift_step, noise_step)`` with :math:`Y = X + \text{drift\_step}\,A
        + \text{noise\_step}\,G A`."""
        mu, eps = self.limit()
        return mu / layers, eps / np.sqrt(layers)

    def limit(self) -> tuple[float, float]:
        r""":math:`(\mu, \varepsilon)` of the limit: drift :math:`\mu P_i A_i`, noise scale
        :math:`\varepsilon`."""
        raise NotImplementedError


class PureNoise(AbstractWeights):
    r"""The paper's model: :math:`V_k` iid with :math:`N(0, \sigma^2)` entries."""

    sigma: float = 1.0

    def limit(self) -> tuple[float, float]:
        return 0.0, self.sigma


class Hybrid(AbstractWeights):
    r"""The paper's Figure 4: :math:`V_k = (\mu/\sqrt{L})\, I + \varepsilon G_k`.

    A layer is :math:`Y_i = X_i + (\mu/L) A_i + (\varepsilon/\sqrt L) G_k A_i`; the limit
    has the extra Ito drift :math:`\mu P_i A_i` and noise scale :math:`\varepsilon`.
    """

    mu: float = 1.0
    eps: float = 1.0

    def limit(self) -> tuple[float, float]:
        return self.mu, self.eps


class ConstantWeights(AbstractWeights):
    r"""Deterministic :math:`V_k = I` for every layer (the model of the earlier theory).

    Taken literally (``MODEL.md``), a layer is :math:`Y_i = X_i + L^{-1/2} A_i`: a step
    :math:`1/\sqrt L` of the ODE :math:`\dot X_i = P_i A_i`. So its limit lives on the
    time :math:`s = k/\sqrt L` (not :math:`t = k/L`): :func:`transformer_sde` returns
    that ODE (:math:`\mu = 1`, :math:`\varepsilon = 0`), and ``horizon`` ``T`` in
    :func:`simulate_network` means ODE time :math:`T\sqrt L`.
    """

    def layer_steps(self, layers: int) -> tuple[float, float]:
        return 1.0 / np.sqrt(layers), 0.0

    def limit(self) -> tuple[float, float]:
        return 1.0, 0.0


# --------------------------------------------------------------------------- noise


def gram_sqrt(gram: Array) -> Array:
    r"""Symmetric square root of a positive semidefinite ``(n, n)`` Gram matrix.

    For ``n = 2``, :math:`\sqrt{G} = (G + s I)/\sqrt{\operatorname{tr} G + 2 s}` with
    :math:`s = \sqrt{\det G}` (Cayley--Hamilton), cheap inside a fused loop; otherwise
    ``eigh`` with eigenvalues clipped at 0.
    """
    n = gram.shape[-1]
    if n == 1:
        return jnp.sqrt(jnp.maximum(gram, 0.0))
    if n == 2:
        g00, g01, g10, g11 = gram[..., 0, 0], gram[..., 0, 1], gram[..., 1, 0], gram[..., 1, 1]
        det = jnp.maximum(g00 * g11 - g01 * g10, 0.0)
        s = jnp.sqrt(det)[..., None, None]
        tr = (g00 + g11)[..., None, None]
        return (gram + s * jnp.eye(2, dtype=gram.dtype)) / jnp.sqrt(tr + 2 * s)
    lam, vec = jnp.linalg.eigh(gram)
    return (vec * jnp.sqrt(jnp.maximum(lam, 0.0))[..., None, :]) @ jnp.swapaxes(vec, -1, -2)


def _noise_on_attention(tokens, weights, z, noise: Noise):
    r"""The rows :math:`(\Xi A_i)^\top`, ``(n, d)``, for a standard ``z``.

    ``full``: ``z`` is ``(d, d)`` and plays :math:`\Xi`. ``span``: ``z`` is ``(d, n)``
    and :math:`\Xi X^\top = z G^{1/2}` (in law), so the rows are :math:`w G^{1/2} z^\top`.
    """
    if noise == "full":
        return small_matmul(small_matmul(weights, tokens), z.T)
    root = gram_sqrt(small_matmul(tokens, tokens.T))
    return small_matmul(small_matmul(weights, root), z.T)


def _noise_shape(noise: Noise, d: int, n: int | None) -> tuple[int, int]:
    if noise == "full":
        return (d, d)
    if noise == "span":
        if n is None:
            raise ValueError("noise='span' needs the number of tokens n (the noise is d x n)")
        return (d, n)
    raise ValueError(f"noise must be 'full' or 'span', got {noise!r}")


# --------------------------------------------------------------------------- SDE limit


def transformer_sde(
    beta,
    weights: AbstractWeights | None = None,
    *,
    d: int,
    Q: Array | None = None,
    K: Array | None = None,
    noise: Noise = "full",
    n: int | None = None,
) -> SphereSDE:
    r"""The Ito SDE limit of the deep stochastic Transformer (the paper's Theorem 1).

    .. math:: dX_i = \varepsilon P_i\,(dW A_i) + \mu P_i A_i\,dt + c\,|A_i|^2 X_i\,dt,
              \qquad c = -\tfrac{\varepsilon^2 (d-1)}{2},

    with one :math:`d\times d` Brownian matrix :math:`W` shared by all tokens (state
    ``(n, d)``). :math:`c` is the normal drift derived in ``proofs_check``; the diffusion
    is applied to the increment as ``eps * P_i (A @ dW.T)_i``, never as a tensor.

    Parameters
    ----------
    beta
        Inverse temperature of the attention.
    weights
        :class:`PureNoise` (default, :math:`\sigma = 1`), :class:`Hybrid` or
        :class:`ConstantWeights` (an ODE in its own time, see there).
    d
        Dimension of the ambient space (tokens on :math:`S^{d-1}`).
    Q, K
        Query and key matrices (identity by default).
    noise
        ``"full"``: ``dW`` is ``(d, d)``, the SDE itself (pathwise). ``"span"``: ``dW`` is
        ``(d, n)`` and :math:`dW X^\top` is drawn as :math:`Z G^{1/2}` (module docstring):
        the same law for Ito Euler-type steps only; not for Stratonovich / Heun solvers.
    n
        Number of tokens, needed for ``noise="span"``.

    Returns
    -------
    SphereSDE
        In Ito convention.
    """
    from proofs_check.export import limit_coefficients

    weights = PureNoise() if weights is None else weights
    mu, eps = weights.limit()
    c = limit_coefficients("jax").normal_drift(d, eps)
    noise_shape = _noise_shape(noise, d, n)

    def drift(t, y, args):
        a = attention(y, beta, Q, K)
        normal = c * inner(a, a) * y
        return normal if mu == 0 else mu * project_tangent(y, a) + normal

    def diffusion(t, y, args, dw):
        w = attention_weights(y, beta, Q, K)
        return eps * project_tangent(y, _noise_on_attention(y, w, dw, noise))

    return SphereSDE(drift, diffusion, noise_shape, "ito")


# --------------------------------------------------------------------------- network


class NetworkResult(NamedTuple):
    """Output of :func:`simulate_network`.

    ``tokens``: final tokens ``(trajectories, n, d)`` (at the requested radius);
    ``times``: depth-times of the saved Gram matrices ``(n_saves,)`` or ``None``;
    ``gram``: :math:`\\langle X_i, X_j\\rangle` of unit tokens,
    ``(trajectories, n_saves, n, n)``, or ``None``.
    """

    tokens: Array
    times: Array | None
    gram: Array | None


def _layer(x, z, beta_eff, Q, K, drift_step, noise_step, noise: Noise, radius):
    """One Transformer layer for one trajectory: residual update, then normalization."""
    w = attention_weights(x, beta_eff, Q, K)
    y = x + drift_step * small_matmul(w, x) + noise_step * _noise_on_attention(x, w, z, noise)
    return radius * retract(y)


def simulate_network(
    key: PRNGKeyArray,
    tokens0: Array,
    beta,
    weights: AbstractWeights | None = None,
    *,
    layers: int,
    horizon: float,
    trajectories: int,
    Q: Array | None = None,
    K: Array | None = None,
    radius: Literal["unit", "sqrt_d"] = "unit",
    save_every: int | None = None,
    noise: Noise | None = None,
) -> NetworkResult:
    r"""Run the discrete deep network: ``round(horizon * layers)`` layers, many trajectories.

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
        ``"span"`` draws only :math:`V X^\top` (``d x n`` normals, exact in law, module
        docstring); ``"full"`` draws all of :math:`V` (``d x d``). Default: ``"span"``
        when ``n < d``.

    Returns
    -------
    NetworkResult
    """
    weights = PureNoise() if weights is None else weights
    tokens0 = jnp.asarray(tokens0)
    n, d = tokens0.shape[-2:]
    noise = ("span" if n < d else "full") if noise is None else noise
    _noise_shape(noise, d, n)
    steps = round(horizon * layers)
    if save_every is not None and steps % save_every:
        raise ValueError(f"save_every={save_every} must divide the number of layers {steps}")
    drift_step, noise_step = (float(s) for s in weights.layer_steps(layers))
    return _run_network(
        key, jnp.broadcast_to(tokens0, (trajectories, n, d)), jnp.asarray(beta, tokens0.dtype),
        Q, K, steps=steps, layers=layers, drift_step=drift_step, noise_step=noise_step,
        noise=noise, radius={"unit": 1.0, "sqrt_d": float(np.sqrt(d))}[radius],
        save_every=save_every,
    )


@eqx.filter_jit
def _run_network(key, x0, beta, Q, K, *, steps, layers, drift_step, noise_step, noise, radius,
                 save_every):
    trajectories, n, d = x0.shape
    z_shape = _noise_shape(noise, d, n)
    layer = jax.vmap(
        lambda x, z: _layer(x, z, beta / radius**2, Q, K, drift_step, noise_step, noise, radius)
    )

    def one(x, k):
        if noise_step == 0.0:  # deterministic weights: no draws at all
            z = jnp.zeros((trajectories, *z_shape), x.dtype)
        else:
            z = jax.random.normal(jax.random.fold_in(key, k), (trajectories, *z_shape), x.dtype)
        return layer(x, z), None

    if save_every is None:
        x, _ = jax.lax.scan(one, x0, jnp.arange(steps))
        return NetworkResult(x, None, None)

    def block(x, b):
        x, _ = jax.lax.scan(one, x, b * save_every + jnp.arange(save_every))
        return x, jnp.einsum("tid,tjd->tij", x, x) / radius**2

    x, gram = jax.lax.scan(block, x0, jnp.arange(steps // save_every))
    times = jnp.arange(1, steps // save_every + 1) * save_every / layers
    return NetworkResult(x, times, jnp.swapaxes(gram, 0, 1))


# --------------------------------------------------------------------------- Theorem 1


class WeakErrors(NamedTuple):
    r"""Output of :func:`weak_error_vs_layers`.

    ``layers`` ``(J,)``; ``errors`` and ``standard_errors`` ``(J, 2)``: the estimates of
    :math:`E\varphi(X_T^{L}) - E\varphi(X_T)` and their Monte Carlo standard errors for
    :math:`\varphi = \langle X_1, X_2\rangle` and its square; ``reference`` ``(2,)``: the
    fine SDE means; ``rates`` ``(2,)``: minus the least-squares slope of
    :math:`\log|\text{error}|` against :math:`\log L` (1 means weak order 1).
    """

    layers: np.ndarray
    errors: np.ndarray
    standard_errors: np.ndarray
    reference: np.ndarray
    rates: np.ndarray


def weak_error_vs_layers(
    key: PRNGKeyArray,
    *,
    layers=(10, 20, 40, 80, 160),
    beta: float = 1.0,
    d: int = 2,
    sigma: float = 1.0,
    horizon: float = 1.0,
    rho0: float = 0.0,
    paths: int = 20_000,
    reference_factor: int = 8,
) -> WeakErrors:
    r"""Theorem 1 numerically: weak error of the ``L``-layer network against the SDE limit.

    Two tokens start at :math:`\langle X_1, X_2\rangle = \rho_0` (the same start for
    every path). For each path ONE Brownian matrix path :math:`W` on the grid of step
    ``1 / (layers[-1] * reference_factor)`` drives both the reference, the Ito SDE of
    :func:`transformer_sde` by retracted Euler--Maruyama on that fine grid, and every
    network, whose layer matrices are the increments :math:`V_k/\sqrt L = \sigma
    (W_{(k+1)/L} - W_{k/L})` (exactly the network's law). The error
    :math:`E[\varphi(X^L_T) - \varphi(X_T)]` is then the mean of a small, strongly
    coupled difference: the coupling reduces the variance, not the bias.

    ``layers`` must double from one entry to the next. The reference's own weak error is
    :math:`O(1/(L_{\max}\,\text{reference\_factor}))`. The default ``d = 2`` gives the
    cheapest paths and the clearest signal: the coupled differences have standard
    deviation about :math:`1.7/\sqrt{L}` while the bias is about :math:`0.4/L`, so
    resolving ``L = 160`` takes some ``1e4`` paths. Measured (``paths = 8000``,
    ``reference_factor = 4``): the error of :math:`E\rho^2` falls from 0.044 at ``L = 10``
    to 0.0025 at ``L = 160``; fitted rates 1.07 (:math:`\rho`) and 1.03 (:math:`\rho^2`).
    """
    layers = tuple(int(v) for v in layers)
    if any(b != 2 * a for a, b in itertools.pairwise(layers)):
        raise ValueError(f"layers must double at each entry, got {layers}")
    blocks = round(horizon * layers[0])
    dt_ref = 1.0 / (layers[-1] * reference_factor)
    sde = transformer_sde(beta, PureNoise(sigma), d=d)
    x0 = jnp.zeros((2, d)).at[0, 0].set(1.0).at[1, 0].set(rho0).at[1, 1].set(np.sqrt(1 - rho0**2))
    states0 = [jnp.broadcast_to(x0, (paths, 2, d))] * (len(layers) + 1)

    def reference_step(y, dw):
        return retract(y + sde.drift(0.0, y, None) * dt_ref + sde.diffusion(0.0, y, None, dw))

    network = [
        jax.vmap(lambda x, z, L=L: _layer(x, z * np.sqrt(L), beta, None, None, 0.0,
                                          sigma / np.sqrt(L), "full", 1.0))
        for L in layers
    ]
    fine = len(layers)

    def level(j, states, k):
        if j == fine:
            dw = jnp.sqrt(dt_ref) * jax.random.normal(k, (paths, d, d))
            return [*states[:fine], jax.vmap(reference_step)(states[fine], dw)], dw

        def child(carry, i):
            states, total = carry
            states, dw = level(j + 1, states, jax.random.fold_in(k, i))
            return (states, total + dw), None

        children = 2 if j + 1 < fine else reference_factor
        (states, total), _ = jax.lax.scan(child, (states, jnp.zeros((paths, d, d))),
                                          jnp.arange(children))
        states = list(states)
        states[j] = network[j](states[j], total)
        return states, total

    @jax.jit
    def run(key):
        def top(states, b):
            return level(0, states, jax.random.fold_in(key, b))[0], None

        states, _ = jax.lax.scan(top, states0, jnp.arange(blocks))
        rho = jnp.stack([jnp.sum(x[:, 0] * x[:, 1], axis=-1) for x in states])  # (J+1, paths)
        return jnp.stack([rho, rho**2], axis=-1)

    phi = np.asarray(run(key))
    diff = phi[:-1] - phi[-1]
    errors = diff.mean(axis=1)
    standard_errors = diff.std(axis=1, ddof=1) / np.sqrt(paths)
    slopes = np.polyfit(np.log(layers), np.log(np.abs(errors)), 1)[0]
    return WeakErrors(np.array(layers), errors, standard_errors, phi[-1].mean(axis=0), -slopes)


__all__ = [
    "AbstractWeights",
    "ConstantWeights",
    "Hybrid",
    "NetworkResult",
    "PureNoise",
    "WeakErrors",
    "gram_sqrt",
    "simulate_network",
    "transformer_sde",
    "weak_error_vs_layers",
]
