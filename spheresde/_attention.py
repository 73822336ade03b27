"""Self-attention on the sphere: A_beta(x, X) = sum_j softmax_j(beta <Q x, K X_j>) X_j."""

from __future__ import annotations

from ._small import small_matmul, small_softmax
from ._typing import Array, Tokens


def attention_weights(
    tokens: Tokens,
    beta,
    Q: Array | None = None,
    K: Array | None = None,
    *,
    queries: Array | None = None,
) -> Array:
    """Row-stochastic weights ``w[i, j] = softmax_j(beta <Q x_i, K X_j>)``.

    ``x_i`` are the ``queries`` (default: the tokens themselves, giving an ``(n, n)``
    matrix). ``Q`` and ``K`` default to the identity, the paper's choice, so the logits
    are plain inner products.
    """
    x = tokens if queries is None else queries
    x = x if Q is None else small_matmul(x, Q.T)
    keys = tokens if K is None else small_matmul(tokens, K.T)
    return small_softmax(beta * small_matmul(x, keys.T), axis=-1)


def attention(
    tokens: Tokens,
    beta,
    Q: Array | None = None,
    K: Array | None = None,
    *,
    queries: Array | None = None,
) -> Array:
    """Attention vectors ``A_beta(x_i, X)``; for every token by default, shape ``(n, d)``.

    With ``queries`` (shape ``(..., d)``) it is the unnormalized field
    ``A^U_beta(x, X)`` of the paper's Figure 1. Each vector is a convex combination of
    the tokens, so it lies in their span: the fact behind the reduced noise of the
    Transformer SDE.
    """
    return small_matmul(attention_weights(tokens, beta, Q, K, queries=queries), tokens)


__all__ = ["attention", "attention_weights"]
