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
with cancellation; :mod:`spheresde.transformer._noise`).
This is what lets certified absorption (:mod:`spheresde.transformer._absorption`) reach the levels
the scale function asks for at large :math:`\beta`.

The noise: :math:`s \perp m` (the tokens have equal norms), so :math:`\Xi s` and
:math:`\Xi m` are independent with laws :math:`N(0, |s|^2 I)` and :math:`N(0, |m|^2 I)`:
:math:`2d` standard normals per layer, the same count as the span trick of
:mod:`spheresde.transformer._noise`, and exact in law for the network (not pathwise; the tests check
the pathwise identity of :func:`pair_layer` with a given :math:`\Xi`).

LayerNorm (``norm="layer"``): the tokens lie in the hyperplane :math:`P = I -
\mathbf 1\mathbf 1^\top/d` projects onto, the normalization is :math:`PY_i/|PY_i|`, and
:math:`P` is linear, so the same formulas hold with :math:`S, M` replaced by
:math:`PS, PM` (the drift terms are already in the hyperplane). The noise
:math:`P\Xi s` then has the law :math:`|s|\,P Z_1`: the layer is the LayerNorm network
itself, in law, not the RMS network it is derived to match.

**The Gram chain** (:func:`gram_pair_layer`): arithmetic per layer that does not grow
with :math:`d`. The law of the next pair depends on :math:`(s, m)` only through
:math:`|s|, |m|` (:math:`\Xi` is rotation invariant and :math:`s \perp m`), so in an
orthonormal frame :math:`e_1 = s/|s|`, :math:`e_2 = m/|m|`, :math:`f_1, \dots` one
needs only the columns :math:`g_1 = \Xi e_1`, :math:`g_2 = \Xi e_2`: iid
:math:`N(0, I_d)`. Their plane coordinates are 4 standard normals; their parts
:math:`q_1, q_2 \in \mathbb R^{d-2}` enter :math:`S, M` and every inner product of
the normalization only through the Gram matrix :math:`(\langle q_i, q_j\rangle)`,
Wishart :math:`W_2(d-2, I_2)`, which the Bartlett decomposition writes as
:math:`C C^\top`, :math:`C = \begin{pmatrix} c_1 & 0\\ n_{21} & c_2\end{pmatrix}`,
:math:`c_1^2 \sim \chi^2_{d-2}`, :math:`c_2^2 \sim \chi^2_{d-3}`, :math:`n_{21} \sim
N(0, 1)`, all independent. So :math:`q_1 = c_1 f_1`, :math:`q_2 = n_{21} f_1 + c_2 f_2`
in law, jointly with the plane normals, and the layer is :func:`pair_layer` in
:math:`\mathbb R^4` on :math:`s = |s| e_1`, :math:`m = |m| e_2` with
:math:`\Xi s = |s|\,(g_{11}, g_{12}, c_1, 0)`, :math:`\Xi m = |m|\,(g_{21}, g_{22},
n_{21}, c_2)`; the new lengths :math:`|s'|, |m'|` are the state: exact in law, and
:math:`1 \pm \rho = |s|^2/2, |m|^2/2` keep their relative precision (each term of
:func:`pair_layer` is still proportional to :math:`|s|` or :math:`|m|`). For
:math:`d \le 3` the complement has at most one dimension and its coordinates are
used as they are (:math:`d = 3`: :math:`q_1, q_2` two normals; :math:`d = 2`: none).
:func:`gram_columns` makes :math:`g_1, g_2` from the :math:`2d` standard normals the
vector chain draws (:math:`c_1 = |z_{1,3:}|`, :math:`n_{21} = z_{2,3}`, :math:`c_2 =
|z_{2,4:}|`), the same random numbers; ``jax.random.gamma`` for the two chi-squares
costs more than those normals at :math:`d \le 10`
(``tests/benchmarks/bench_gram_chain.py``). What the Gram chain saves is the
:math:`d`-vector arithmetic and the traffic of the :math:`2d` normals through the layer
loop: the normals are reduced to 7 numbers where they are drawn. LayerNorm is the RMS
chain in the :math:`d - 1` dimensions of the hyperplane (:math:`P\Xi` restricted to it is
a standard matrix there), so the Gram chain serves it with :math:`d - 1`.
"""

from __future__ import annotations

import jax.numpy as jnp

from .._small import inner
from .._typing import Array, Float
from ._normalization import NormalizationLike, normalization


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


def gram_columns(z: Float[Array, "*batch 2 d"]) -> Float[Array, "*batch 2 k"]:
    r"""The layer's matrix on :math:`e_1, e_2` in the frame of the Gram chain (module
    docstring), in law, from :math:`2d` standard normals ``z``: ``z`` itself for
    :math:`d \le 3`, else :math:`(z_{11}, z_{12}, c_1, 0)` and :math:`(z_{21}, z_{22},
    n_{21}, c_2)` with the Bartlett factor :math:`c_1 = |z_{1, 3:}|`, :math:`n_{21} =
    z_{23}`, :math:`c_2 = |z_{2, 4:}|` (:math:`k = \min(d, 4)`)."""
    if z.shape[-1] <= 3:
        return z
    # built from slices and stacked (XLA on CPU: several times faster than
    # concatenating length-1 axes; tests/benchmarks/bench_gram_chain.py)
    c1 = jnp.sqrt(jnp.sum(z[..., 0, 2:] ** 2, axis=-1))
    c2 = jnp.sqrt(jnp.sum(z[..., 1, 3:] ** 2, axis=-1))
    first = jnp.stack([z[..., 0, 0], z[..., 0, 1], c1, jnp.zeros_like(c1)], axis=-1)
    second = jnp.stack([z[..., 1, 0], z[..., 1, 1], z[..., 1, 2], c2], axis=-1)
    return jnp.stack([first, second], axis=-2)


def gram_pair_layer(a: Float[Array, "*batch 1"], b: Float[Array, "*batch 1"],
                    g: Float[Array, "*batch 2 k"], beta, drift_step, noise_step,
                    ) -> tuple[Float[Array, "*batch 1"], Float[Array, "*batch 1"]]:
    r"""One layer of the two-token network on the lengths :math:`a = |s|`,
    :math:`b = |m|` (:math:`1 \pm \rho = a^2/2, b^2/2`), exact in law: :func:`pair_layer`
    in the frame :math:`e_1 = s/a, e_2 = m/b, f_1, f_2` with the columns ``g`` of
    :func:`gram_columns`. Returns :math:`(|s'|, |m'|)`; RMS normalization (LayerNorm is
    this layer in dimension :math:`d - 1`, module docstring)."""
    frame = jnp.eye(2, g.shape[-1], dtype=g.dtype)
    s, m = pair_layer(a * frame[0], b * frame[1], a * g[..., 0, :], b * g[..., 1, :],
                      beta, drift_step, noise_step)
    return jnp.sqrt(inner(s, s)), jnp.sqrt(inner(m, m))


__all__ = ["gram_columns", "gram_pair_layer", "pair_layer", "pair_noise"]
