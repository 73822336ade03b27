r"""Two tokens of the discrete network, carried by their sum and difference.

For :math:`n = 2` tokens of unit norm the attention weights are symmetric: with
:math:`\rho = \langle X_1, X_2\rangle`, token :math:`i` gives weight
:math:`a = e^{\beta}/(e^{\beta} + e^{\beta\rho})` to itself and :math:`b = 1 - a` to the
other. So the attention vectors satisfy

.. math:: A_1 + A_2 = X_1 + X_2, \qquad A_1 - A_2 = \kappa\,(X_1 - X_2),
   \qquad \kappa = a - b = \tanh\!\big(\beta (1-\rho)/2\big),

and one layer :math:`Y_i = X_i + \delta A_i + \eta\, \Xi A_i` (``drift_step`` :math:`\delta`,
``noise_step`` :math:`\eta`, :math:`\Xi` the layer's standard matrix) maps
:math:`s = X_1 + X_2` and :math:`m = X_1 - X_2` to

.. math:: S = Y_1 + Y_2 = (1+\delta)\, s + \eta\, \Xi s, \qquad
   M = Y_1 - Y_2 = (1 + \delta\kappa)\, m + \eta\kappa\, \Xi m .

The normalization :math:`X_i' = Y_i/|Y_i|` is then written without subtracting nearly
equal numbers: with :math:`r_i = |Y_i|` and
:math:`r_1 - r_2 = \langle S, M\rangle / (r_1 + r_2)`,

.. math:: s' = \frac{S}{r_1} + Y_2\,\frac{r_1 - r_2}{r_1 r_2}, \qquad
   m' = \frac{M}{r_1} - Y_2\,\frac{r_1 - r_2}{r_1 r_2} .

Each term is proportional to :math:`|s|` (or :math:`|m|`), so :math:`1 + \rho = |s|^2/2`
and :math:`1 - \rho = |m|^2/2` keep their *relative* precision however small they get,
where :math:`|X_1 + X_2|` computed from float32 tokens carries their rounding (about
:math:`10^{-7}` per layer, so :math:`1+\rho` of the token network hovers at
:math:`10^{-14}`-:math:`10^{-13}` at best, and higher if the noise itself is computed
with cancellation; :mod:`spheresde._noise`).
This is what lets certified absorption (:mod:`spheresde._absorption`) reach the levels
the scale function asks for at large :math:`\beta`.

The noise: :math:`s \perp m` (the tokens have equal norms), so :math:`\Xi s` and
:math:`\Xi m` are independent with laws :math:`N(0, |s|^2 I)` and :math:`N(0, |m|^2 I)`:
:math:`2d` standard normals per layer, the same count as the span trick of
:mod:`spheresde._noise`, and exact in law for the network (not pathwise; the tests check
the pathwise identity of :func:`pair_layer` with a given :math:`\Xi`).

LayerNorm (``norm="layer"``): the tokens lie in the hyperplane :math:`P = I -
\mathbf 1\mathbf 1^\top/d` projects onto, the normalization is :math:`PY_i/|PY_i|`, and
:math:`P` is linear, so the same formulas hold with :math:`S, M` replaced by
:math:`PS, PM` (the drift terms are already in the hyperplane). The noise
:math:`P\Xi s` then has the law :math:`|s|\,P Z_1`: the layer is the LayerNorm network
itself, in law, not the RMS network it is derived to match.
"""

from __future__ import annotations

import jax.numpy as jnp

from ._normalization import NormalizationLike, normalization
from ._small import inner
from ._typing import Array, Float


def pair_layer(s: Float[Array, "*batch d"], m: Float[Array, "*batch d"],
               xi_s: Float[Array, "*batch d"], xi_m: Float[Array, "*batch d"], beta,
               drift_step, noise_step, norm: NormalizationLike = "rms",
               ) -> tuple[Float[Array, "*batch d"], Float[Array, "*batch d"]]:
    r"""One layer of the two-token network in sum/difference coordinates.

    ``s``, ``m``: :math:`X_1 \pm X_2`; ``xi_s``, ``xi_m``: the layer's matrix applied to
    them, :math:`\Xi s` and :math:`\Xi m`. Returns :math:`(s', m')` after the residual
    update and the normalization (module docstring); identity :math:`Q = K`, unit radius.
    ``norm="layer"``: LayerNorm (centre :math:`S` and :math:`M` before normalizing: the
    normalization's projection :math:`P`, linear, applied to both).
    """
    gap_minus = inner(m, m) / 2  # 1 - rho, accurate near rho = 1 (a length-1 axis)
    kappa = jnp.tanh(beta * gap_minus / 2)
    S = (1 + drift_step) * s + noise_step * xi_s
    M = (1 + drift_step * kappa) * m + (noise_step * kappa) * xi_m
    norm = normalization(norm)
    S, M = norm.project(S), norm.project(M)
    y2 = (S - M) / 2
    r1 = jnp.sqrt(inner(S + M, S + M)) / 2
    r2 = jnp.sqrt(inner(y2, y2))
    # r1 - r2 = <S, M> / (r1 + r2), so the correction keeps the scale of s (or m)
    c = inner(S, M) / ((r1 + r2) * r1 * r2)
    return S / r1 + c * y2, M / r1 - c * y2


def pair_noise(s: Float[Array, "*batch d"], m: Float[Array, "*batch d"],
               z: Float[Array, "*batch 2 d"]) -> tuple[Float[Array, "*batch d"],
                                                      Float[Array, "*batch d"]]:
    r""":math:`(\Xi s, \Xi m)` in law from standard normals ``z``: ``|s| z[0]``, ``|m| z[1]``."""
    return jnp.sqrt(inner(s, s)) * z[..., 0, :], jnp.sqrt(inner(m, m)) * z[..., 1, :]


__all__ = ["pair_layer", "pair_noise"]
