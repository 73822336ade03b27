r"""The noise of a layer acting on the attention vectors: full, or only on their span.

A layer's noise moves token :math:`i` by :math:`\Xi A_i` with :math:`\Xi` a
:math:`d \times d` matrix of iid normals (``"full"``: :math:`d^2` normals).

Span trick (``"span"``): :math:`A_i = \sum_j w_{ij} X_j` lies in the span of the
tokens, so :math:`\Xi A_i = (\Xi X^\top) w_i`, and the rows of :math:`\Xi X^\top`
(``d x n``) are iid :math:`N(0, G)` with :math:`G = X X^\top`. Hence
:math:`\Xi X^\top \overset{law}{=} Z G^{1/2}` with :math:`Z` a ``d x n`` matrix of iid
standard normals: ``d n`` normals instead of ``d^2`` (the same for a Brownian
increment, with variance ``dt``). The identity holds in law for one increment at a
frozen configuration, so it is exact for the discrete network and for one-evaluation
(Ito, Euler-type) schemes, but it is not a pathwise identity: never use it with a
Stratonovich (Heun, midpoint) scheme or for strong errors. :math:`G^{1/2}` is the
symmetric square root (closed form for ``n = 2``, otherwise ``eigh`` with eigenvalues
clipped at 0, which stays exact when tokens cluster and :math:`G` becomes singular,
where a Cholesky factor would fail).
"""

from __future__ import annotations

from typing import Literal

import jax.numpy as jnp

from ._small import small_matmul
from ._typing import Array, Float

Noise = Literal["full", "span"]


def gram_sqrt(gram: Float[Array, "*batch n n"]) -> Float[Array, "*batch n n"]:
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


def noise_on_attention(tokens: Float[Array, "n d"], weights: Float[Array, "n n"],
                       z: Float[Array, "d _"], noise: Noise) -> Float[Array, "n d"]:
    r"""The rows :math:`(\Xi A_i)^\top`, ``(n, d)``, for a standard ``z``.

    ``full``: ``z`` is ``(d, d)`` and plays :math:`\Xi`. ``span``: ``z`` is ``(d, n)``
    and :math:`\Xi X^\top = z G^{1/2}` (in law), so the rows are :math:`w G^{1/2} z^\top`.
    """
    if noise == "full":
        return small_matmul(small_matmul(weights, tokens), z.T)
    root = gram_sqrt(small_matmul(tokens, tokens.T))
    return small_matmul(small_matmul(weights, root), z.T)


def noise_shape(noise: Noise, d: int, n: int | None) -> tuple[int, int]:
    """Shape of the standard normals ``z`` that ``noise`` draws per layer or increment."""
    if noise == "full":
        return (d, d)
    if noise == "span":
        if n is None:
            raise ValueError("noise='span' needs the number of tokens n (the noise is d x n)")
        return (d, n)
    raise ValueError(f"noise must be 'full' or 'span', got {noise!r}")


__all__ = ["Noise", "gram_sqrt", "noise_on_attention", "noise_shape"]
