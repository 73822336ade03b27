"""Reductions over the short axes of this package, written as sums of slices.

The axes reduced here are a point's coordinates (``d``) and the tokens (``n``), a
handful of entries each. XLA on CPU compiles a reduction over such an axis, inside a
batch of thousands of paths, into a slow loop (about 5x the cost of a whole
Transformer-SDE step in ``tests/benchmarks/bench_solvers.py``); the sum of the slices
``x[..., 0] + x[..., 1] + ...`` is instead elementwise work over the batch, which XLA
vectorizes and fuses with its neighbours. Axes longer than :data:`UNROLL_MAX` use
``jnp.sum`` as usual. The results equal ``jnp.sum`` up to the order of summation.
"""

from __future__ import annotations

import functools
import operator

import jax
import jax.numpy as jnp

from ._typing import Array, ArrayLike

UNROLL_MAX = 16
"""Longest axis summed slice by slice; longer axes use ``jnp.sum``."""


def _fold(op, x: Array, axis: int, keepdims: bool, fallback) -> Array:
    axis = axis % x.ndim
    size = x.shape[axis]
    if size == 0 or size > UNROLL_MAX:
        return fallback(x, axis=axis, keepdims=keepdims)
    parts = [jax.lax.index_in_dim(x, i, axis, keepdims=keepdims) for i in range(size)]
    return functools.reduce(op, parts)


def small_sum(x: Array, axis: int = -1, keepdims: bool = False) -> Array:
    """``jnp.sum(x, axis)`` for a short ``axis``, as a sum of its slices."""
    return _fold(operator.add, x, axis, keepdims, jnp.sum)


def small_max(x: Array, axis: int = -1, keepdims: bool = False) -> Array:
    """``jnp.max(x, axis)`` for a short ``axis``, as a maximum of its slices."""
    return _fold(jnp.maximum, x, axis, keepdims, jnp.max)


def inner(a: ArrayLike, b: ArrayLike) -> ArrayLike:
    """``<a, b>`` over the last axis, kept as an axis of length 1 (broadcasts against ``a``)."""
    size = a.shape[-1]
    if size > UNROLL_MAX:
        return jnp.sum(a * b, axis=-1, keepdims=True)
    # Products of slices, not slices of the product: the product would be materialized.
    return functools.reduce(operator.add, [a[..., k:k + 1] * b[..., k:k + 1]
                                           for k in range(size)])


def norm(v: ArrayLike) -> ArrayLike:
    """``|v|`` over the last axis, kept as an axis of length 1."""
    return jnp.sqrt(inner(v, v))


def small_matmul(a: ArrayLike, b: ArrayLike) -> ArrayLike:
    """``a @ b`` (batched over leading axes) as a broadcast multiply and sum of slices.

    Under ``jax.vmap`` over paths, ``@`` of these tiny blocks becomes a batched matrix
    product that XLA runs slowly on CPU; this form is elementwise work over the batch.
    The shared axis is sliced before multiplying, so no ``(..., m, k, p)`` product is
    ever materialized.
    """
    size = a.shape[-1]
    if size > UNROLL_MAX:
        return a @ b
    return functools.reduce(operator.add, [a[..., :, k:k + 1] * b[..., k:k + 1, :]
                                           for k in range(size)])


def small_softmax(logits: Array, axis: int = -1) -> Array:
    """``jax.nn.softmax`` over a short ``axis`` (max-shifted, so it cannot overflow)."""
    e = jnp.exp(logits - jax.lax.stop_gradient(small_max(logits, axis, keepdims=True)))
    return e / small_sum(e, axis, keepdims=True)
