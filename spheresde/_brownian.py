"""Two-point ("weak") Brownian increments: the law-only driver for fixed-step runs."""

from __future__ import annotations

import math

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr

from ._typing import Array, PRNGKeyArray, State, Words


class WeakBrownianPath(diffrax.AbstractBrownianPath):
    r"""Increments :math:`\pm\sqrt{t_1 - t_0}`, each sign a fair coin, for fixed steps.

    Every entry of every increment is :math:`\sqrt{\Delta t}\,\xi` with
    :math:`P(\xi = 1) = P(\xi = -1) = \tfrac12`, independent over entries and steps.
    These match the Gaussian increments in their first three moments, which is all
    that a scheme of weak order 1 needs: Euler--Maruyama with them is the *simplified
    weak Euler scheme* (Kloeden & Platen, *Numerical Solution of SDEs*, section 14.1),
    of weak order 1, and so is :class:`~spheresde.solvers.GeodesicEuler`
    (``tests/test_weak_path.py`` measures it). Each sign costs one random bit instead
    of the 32 bits and the inverse error function of a normal, so noise is almost free.

    What it is not: a Brownian path. The increments are bounded, only their law at the
    level of expectations of smooth functions is right, and there is no strong
    convergence. Use it for laws (outcome fractions, moments, phase diagrams), never
    for pathwise errors. Like ``diffrax.UnsafeBrownianPath`` it only serves fixed steps:
    an increment is drawn afresh for every ``(t0, t1)`` asked for, with no consistency
    between overlapping intervals. ``spheresde.solve(..., brownian="weak")`` builds it.

    Parameters
    ----------
    shape
        ``jax.ShapeDtypeStruct`` (or a tuple of ints, default float dtype) of one
        increment, or a pytree of them (increments that are pytrees, each leaf with signs
        of its own).
    key
        PRNG key; the increment over ``[t0, t1]`` is drawn from it folded with the bits
        of ``t0`` and ``t1`` (as ``UnsafeBrownianPath`` does), so a run is reproducible.
    """

    shape_def: tuple = eqx.field(static=True)
    key: PRNGKeyArray

    def __init__(self, shape, key: PRNGKeyArray):
        if isinstance(shape, tuple) and all(isinstance(s, int) for s in shape):
            shape = jax.ShapeDtypeStruct(shape, jnp.result_type(float))
        leaves, treedef = jax.tree.flatten(shape)
        if not leaves or not all(isinstance(leaf, jax.ShapeDtypeStruct) for leaf in leaves):
            raise TypeError(f"shape must be a tuple of ints, a jax.ShapeDtypeStruct or a "
                            f"pytree of them, got {shape!r}")
        for leaf in leaves:
            if not jnp.issubdtype(leaf.dtype, jnp.floating):
                raise ValueError(f"WeakBrownianPath needs a real floating dtype, got "
                                 f"{leaf.dtype}")
        # (structure, leaves): a dict of shapes is no hashable static field
        self.shape_def = (treedef, tuple(leaves))
        self.key = key

    @property
    def shape(self):
        """The ``jax.ShapeDtypeStruct`` of one increment (a pytree of them)."""
        return jax.tree.unflatten(*self.shape_def)

    @property
    def levy_area(self):
        """Only the increment: there is no Levy area to give."""
        return diffrax.BrownianIncrement

    @property
    def t0(self):
        return -jnp.inf

    @property
    def t1(self):
        return jnp.inf

    def evaluate(self, t0, t1=None, left: bool = True, use_levy: bool = False) -> State:
        """The increment over ``[t0, t1]`` (over ``[0, t0]`` when ``t1`` is ``None``).

        ``left`` is ignored (a two-point increment has no sides); ``use_levy=True`` is
        an error, there being no Levy area.
        """
        del left
        if use_levy:
            raise ValueError("WeakBrownianPath has no Levy area (solvers that need it, such "
                             "as Diffrax's SRK family, need Gaussian increments)")
        if t1 is None:
            t0, t1 = jnp.zeros_like(t0), t0
        t0, t1 = jnp.asarray(t0), jnp.asarray(t1)
        key = _fold_time(_fold_time(self.key, t0), t1)
        treedef, leaves = self.shape_def
        keys = jr.split(key, len(leaves)) if len(leaves) > 1 else [key]
        return jax.tree.unflatten(treedef, [
            jnp.sqrt(t1 - t0).astype(leaf.dtype) * random_signs(k, leaf.shape, leaf.dtype)
            for k, leaf in zip(keys, leaves, strict=True)])


def _fold_time(key: PRNGKeyArray, t: Array) -> PRNGKeyArray:
    """``key`` folded with every 32-bit word of the floating-point time ``t``."""
    words = jax.lax.bitcast_convert_type(jax.lax.stop_gradient(t), jnp.uint32).reshape(-1)
    for i in range(words.shape[0]):
        key = jr.fold_in(key, words[i])
    return key


def random_signs(key: PRNGKeyArray, shape: tuple[int, ...], dtype=None) -> Array:
    """Independent fair signs :math:`\\pm 1` of ``shape``, 32 of them per random word."""
    size = math.prod(shape)
    words = jr.bits(key, (-(-size // 32),), jnp.uint32)
    signs = bit_signs(words[:, None], jnp.arange(32, dtype=jnp.uint32),
                      dtype or jnp.result_type(float))
    return signs.reshape(-1)[:size].reshape(shape)


def bit_signs(words: Words, bit, dtype) -> Array:
    """The sign :math:`2b - 1` of bit ``bit`` (0 to 31) of every ``uint32`` in ``words``.

    The one bit-to-sign conversion of the package: :func:`random_signs` unpacks whole
    words with it, and the fused two-token kernel (``two_token.simulate_rho``) takes one
    bit of one word per lane at each of 32 steps, so that no array of signs is ever
    materialized there. ``bit`` broadcasts against ``words``.
    """
    return 2 * ((words >> bit) & 1).astype(dtype) - 1
