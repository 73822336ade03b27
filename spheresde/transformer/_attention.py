"""Self-attention on the sphere: A_beta(x, X) = sum_j softmax_j(beta <Q x, K X_j>) X_j."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .. import _checks
from .._small import small_matmul, small_softmax
from .._typing import Array, Tokens


def attention_weights(
    tokens: Tokens,
    beta,
    Q: Array | None = None,
    K: Array | None = None,
    *,
    queries: Array | None = None,
    dense: bool = False,
) -> Array:
    """Row-stochastic weights ``w[i, j] = softmax_j(beta <Q x_i, K X_j>)``.

    ``x_i`` are the ``queries`` (default: the tokens themselves, giving an ``(n, n)``
    matrix). ``Q`` and ``K`` default to the identity, the paper's choice, so the logits
    are plain inner products. ``dense=True`` uses ``jnp.matmul`` and ``jax.nn.softmax``
    instead of the sliced sums of :mod:`spheresde._small`: under differentiation (the
    training of :class:`~spheresde.data.TransformerClassifier`) the slices cost about 3x more
    (``tests/benchmarks/bench_train.py``).
    """
    _checks.tokens("tokens", tokens)
    _checks.real("beta", beta)
    matmul, softmax = (jnp.matmul, jax.nn.softmax) if dense else (small_matmul,
                                                                     small_softmax)
    x = tokens if queries is None else queries
    x = x if Q is None else matmul(x, Q.T)
    keys = tokens if K is None else matmul(tokens, K.T)
    return softmax(beta * matmul(x, keys.T), axis=-1)


def attention(
    tokens: Tokens,
    beta,
    Q: Array | None = None,
    K: Array | None = None,
    *,
    queries: Array | None = None,
    dense: bool = False,
) -> Array:
    """Attention vectors ``A_beta(x_i, X)``; for every token by default, shape ``(n, d)``.

    With ``queries`` (shape ``(..., d)``) it is the unnormalized field
    ``A^U_beta(x, X)`` of the paper's Figure 1. Each vector is a convex combination of
    the tokens, so it lies in their span: the fact behind the reduced noise of the
    Transformer SDE. ``dense``: see :func:`attention_weights`.
    """
    weights = attention_weights(tokens, beta, Q, K, queries=queries, dense=dense)
    return (jnp.matmul if dense else small_matmul)(weights, tokens)


__all__ = ["attention", "attention_weights"]
