r"""The noise of a layer acting on the attention vectors: full, or only on their span.

A layer's noise moves token :math:`i` by :math:`\Xi A_i` with :math:`\Xi` a
:math:`d \times d` matrix of iid normals (``"full"``: :math:`d^2` normals).

Span trick (``"span"``): :math:`A_i = \sum_j w_{ij} X_j` lies in the span of the
tokens, so :math:`\Xi A_i = (\Xi X^\top) w_i`, and the rows of :math:`\Xi X^\top`
(``d x n``) are iid :math:`N(0, G)` with :math:`G = X X^\top`. Hence
:math:`\Xi X^\top \overset{law}{=} Z F^\top` for any factor :math:`F F^\top = G`, with
:math:`Z` a ``d x n`` matrix of iid standard normals: ``d n`` normals instead of ``d^2``
(the same for a Brownian increment, with variance ``dt``). The identity holds in law for
one increment at a frozen configuration, so it is exact for the discrete network
and for one-evaluation (Ito, Euler-type) schemes, but it is not a pathwise identity:
never use it with a Stratonovich (Heun, midpoint) scheme or for strong errors.
The factor (:func:`span_factor`) is computed from the tokens, not from :math:`G`: from
:math:`X_1 \pm X_2` for ``n = 2``, a Householder QR otherwise, so that
:math:`1 + \rho` near an antipodal pair is not lost to rounding of the Gram matrix
(and clustered tokens, where :math:`G` is singular, need no special case).
"""

from __future__ import annotations

from typing import Literal

import jax.numpy as jnp

from .._small import small_matmul
from .._typing import Array, Float

Noise = Literal["full", "span"]


def span_factor(tokens: Float[Array, "*batch n d"]) -> Float[Array, "*batch n n"]:
    r"""A factor :math:`F` (``(n, n)``) of the Gram matrix, :math:`F F^\top = X X^\top`,
    computed from the tokens ``X`` (``(n, d)``, ``n <= d``) without forming :math:`X X^\top`.

    Forming the Gram matrix first and taking its square root loses half the digits of its
    small eigenvalues: for two tokens near :math:`\rho = -1` the determinant
    :math:`1 - \rho^2` comes from a cancellation, and :math:`|X_1 + X_2|` inherits an error
    of about the square root of the rounding unit (:math:`10^{-4}` in float32). Here:

    * ``n = 2``: Gram--Schmidt on :math:`s = X_1 + X_2` and :math:`m = X_1 - X_2`
      themselves (their norms carry :math:`1 \pm \rho` to relative precision):
      :math:`a = |s|`, :math:`c = \langle m, s\rangle / a`,
      :math:`b = (|m|^2 - c^2)^{1/2}` and
      :math:`F = \tfrac12 \begin{pmatrix} a + c & b \\ a - c & -b \end{pmatrix}`, so
      :math:`F^\top (1, 1)^\top = (|s|, 0)` exactly;
    * ``n > 2``: :math:`F = R^\top` from a Householder QR :math:`X^\top = Q R`
      (backward stable: the error is that of rounding the tokens, not its square root).

    Both are exact for rank-deficient configurations (clustered tokens), where a Cholesky
    factor of the Gram matrix would fail.
    """
    n = tokens.shape[-2]
    if n == 1:
        return jnp.sqrt(jnp.sum(tokens * tokens, axis=-1, keepdims=True))
    if n == 2:
        s = tokens[..., 0, :] + tokens[..., 1, :]
        m = tokens[..., 0, :] - tokens[..., 1, :]
        a = jnp.sqrt(jnp.sum(s * s, axis=-1))
        c = jnp.sum(m * s, axis=-1) / jnp.where(a > 0, a, 1.0)
        b = jnp.sqrt(jnp.maximum(jnp.sum(m * m, axis=-1) - c * c, 0.0))
        rows = [jnp.stack([a + c, b], axis=-1), jnp.stack([a - c, -b], axis=-1)]
        return jnp.stack(rows, axis=-2) / 2
    r = jnp.linalg.qr(jnp.swapaxes(tokens, -1, -2), mode="r")
    return jnp.swapaxes(r, -1, -2)


def noise_on_attention(tokens: Float[Array, "n d"], weights: Float[Array, "n n"],
                       z: Float[Array, "d _"], noise: Noise) -> Float[Array, "n d"]:
    r"""The rows :math:`(\Xi A_i)^\top`, ``(n, d)``, for a standard ``z``.

    ``full``: ``z`` is ``(d, d)`` and plays :math:`\Xi`. ``span``: ``z`` is ``(d, n)``
    and :math:`\Xi X^\top = z F^\top` in law for any :math:`F F^\top = G`
    (:func:`span_factor`), so the rows are :math:`w F z^\top`.
    """
    if noise == "full":
        return small_matmul(small_matmul(weights, tokens), z.T)
    return small_matmul(small_matmul(weights, span_factor(tokens)), z.T)


def noise_shape(noise: Noise, d: int, n: int | None) -> tuple[int, int]:
    """Shape of the standard normals ``z`` that ``noise`` draws per layer or increment."""
    if noise == "full":
        return (d, d)
    if noise == "span":
        if n is None:
            raise ValueError("noise='span' needs the number of tokens n (the noise is d x n)")
        return (d, n)
    raise ValueError(f"noise must be 'full' or 'span', got {noise!r}")


__all__ = ["Noise", "noise_on_attention", "noise_shape", "span_factor"]
