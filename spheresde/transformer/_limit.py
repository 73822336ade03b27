r"""The SDE limit of the deep stochastic Transformer (the paper's Theorem 1).

As the number of layers per unit depth-time :math:`L \to \infty` (layer :math:`k` at
:math:`t = k/L`, :doc:`/theory/discrete_model`), the network becomes the Ito SDE

.. math:: dX_i = \varepsilon P_i\,(dW A_i) + \mu P_i A_i\,dt
          - \tfrac{\varepsilon^2 (d-1)}{2} |A_i|^2 X_i\,dt,
          \qquad P_i = I - X_i X_i^\top,

driven by one :math:`d \times d` matrix Brownian motion :math:`W`, with
:math:`(\mu, \varepsilon) = (0, \sigma)` for pure noise and the hybrid's own
:math:`(\mu, \varepsilon)`. The normal drift coefficient is
``proofs_check.export.limit_coefficients().normal_drift`` (derived, not retyped).
"""

from __future__ import annotations

from .. import _checks
from .._geometry import project_tangent
from .._sde import SphereSDE
from .._small import inner
from .._typing import Matrix, RealScalar
from ._attention import attention, attention_weights
from ._noise import Noise, noise_on_attention, noise_shape
from ._weights import AbstractWeights, PureNoise


def transformer_sde(
    beta: RealScalar,
    weights: AbstractWeights | None = None,
    *,
    d: int,
    Q: Matrix | None = None,
    K: Matrix | None = None,
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
        ``(d, n)`` and :math:`dW X^\top` is drawn as :math:`Z G^{1/2}` (the span trick of
        :doc:`/theory/limit_sde`): the same law for Ito Euler-type steps only; not for
        Stratonovich / Heun solvers.
    n
        Number of tokens, needed for ``noise="span"``.

    Returns
    -------
    SphereSDE
        In Ito convention.
    """
    from proofs_check.export import limit_coefficients

    _checks.limit(beta, weights, d=d, n=n)
    weights = PureNoise() if weights is None else weights
    mu, eps = weights.limit()
    c = limit_coefficients("jax").normal_drift(d, eps)
    shape = noise_shape(noise, d, n)

    def drift(t, y, args):
        a = attention(y, beta, Q, K)
        normal = c * inner(a, a) * y
        return normal if mu == 0 else mu * project_tangent(y, a) + normal

    def diffusion(t, y, args, dw):
        w = attention_weights(y, beta, Q, K)
        return eps * project_tangent(y, noise_on_attention(y, w, dw, noise))

    return SphereSDE(drift, diffusion, shape, "ito", shared_noise=True)


__all__ = ["transformer_sde"]
