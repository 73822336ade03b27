"""The object a user writes: an SDE on a product of spheres, in Ito or Stratonovich sense."""

from __future__ import annotations

import functools as ft
import math
from collections.abc import Callable
from typing import Literal

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np

from ._geometry import Sphere, is_manifold, project_tangent
from ._typing import Array

Convention = Literal["ito", "stratonovich"]
_CONVENTIONS = ("ito", "stratonovich")


def _is_shape(x) -> bool:
    """Whether ``x`` is one shape, a tuple of ints (``()`` included)."""
    return isinstance(x, tuple) and all(isinstance(i, int) for i in x)


class SphereSDE(eqx.Module):
    r"""An SDE whose state lives on spheres, or on spheres and flat spaces.

    .. math:: dy = f(t, y)\,dt + g(t, y)\,[dW]

    in the sense named by ``convention``. The state ``y`` is one array, of shape ``(d,)``
    or ``(n, d)`` with rows on the unit sphere :math:`S^{d-1}` (no ``manifold``, or one
    :class:`~spheresde.Sphere` of another radius), or a pytree (a tuple, list or dict),
    for example a position in :math:`\mathbb{R}^3` and an orientation on :math:`S^2`,
    whose leaves ``manifold`` declares one by one.

    Parameters
    ----------
    drift
        ``drift(t, y, args)``, shaped like ``y`` (a pytree of the same structure). On a
        sphere leaf, in Stratonovich form it is tangent to the sphere. In Ito form its
        normal part is fixed by the diffusion (Ito's lemma on ``|y_i|^2 = r^2`` gives
        ``-1/2 tr(g g^T) y_i / r^2``); the solvers of this package use only its tangent
        part and produce the normal part from the geometry, so a drift written without
        it is also accepted.
    diffusion
        ``diffusion(t, y, args, dw)``, the increment ``g(t, y)[dw]`` shaped like ``y``,
        linear in ``dw`` and tangent on every sphere leaf. It acts on the increment
        directly, so no ``(n, d, *noise_shape)`` tensor is ever built. For a pytree
        state it receives ``dw`` of the structure of ``noise_shape`` and returns a pytree
        of the structure of ``y``.
    noise_shape
        Shape of the Brownian increment ``dw``, for example ``(d,)`` or ``(d, d)``; or a
        pytree of shapes, ``((2,), (2,))`` or ``{"x": (3,), "e": (3,)}``, for increments
        that are pytrees.
    convention
        ``"ito"`` or ``"stratonovich"``.
    shared_noise
        For a state of several rows ``(n, d)``: ``True`` declares that the rows are
        driven by noise they share (in whole or in part), as the Transformer's tokens
        are by one matrix Brownian motion (:func:`transformer_sde` sets it). Left
        ``False``, :func:`solve` checks that the rows have noise of their own (the
        increments of two rows uncorrelated) and refuses a diffusion that couples them,
        saying how to get independent paths (:func:`solve_batch`) or to declare the
        shared noise. A state of one row, or a pytree state, is not checked.
    manifold
        Where the state lives: ``None`` (the default) for the unit sphere,
        ``spheresde.Sphere(radius=r)`` for a plain array state on the sphere of radius
        ``r``, or a pytree of :class:`~spheresde.Sphere` and
        :class:`~spheresde.Euclidean` of the structure of ``y``, such as ``(Euclidean(),
        Sphere())`` for an active Brownian particle. Every scheme keeps each sphere leaf
        on its sphere and steps each Euclidean leaf as the flat scheme would.

    Examples
    --------
    An active Brownian particle in the plane: position ``x``, heading ``e`` on
    :math:`S^1`, speed ``v``, translational and rotational diffusion ``D``, ``D_r``
    (Stratonovich)::

        abp = SphereSDE(
            lambda t, y, a: (v * y[1], jnp.zeros(2)),
            lambda t, y, a, dw: (jnp.sqrt(2 * D) * dw[0],
                                 jnp.sqrt(2 * D_r) * project_tangent(y[1], dw[1])),
            noise_shape=((2,), (2,)), convention="stratonovich",
            manifold=(Euclidean(), Sphere()))
    """

    drift: Callable[..., Array]
    diffusion: Callable[..., Array]
    manifold: object
    noise_def: tuple = eqx.field(static=True)
    convention: Convention = eqx.field(static=True)
    shared_noise: bool = eqx.field(static=True)

    def __init__(self, drift, diffusion, noise_shape, convention: Convention = "ito", *,
                 shared_noise: bool = False, manifold=None):
        self.drift = drift
        self.diffusion = diffusion
        leaves, treedef = jax.tree.flatten(noise_shape, is_leaf=_is_shape)
        if not leaves or not all(_is_shape(leaf) and all(s > 0 for s in leaf)
                                 for leaf in leaves):
            raise ValueError(f"noise_shape must be a tuple of positive ints, or a pytree of "
                             f"them (((2,), (3,)) or {{'x': (3,), 'e': (3,)}}), got "
                             f"{noise_shape!r}")
        # (structure, shapes): a dict of shapes is no hashable static field
        self.noise_def = (treedef, tuple(leaves))
        self.convention = convention
        self.shared_noise = shared_noise
        self.manifold = Sphere() if manifold is None else manifold

    def __check_init__(self):
        if self.convention not in _CONVENTIONS:
            raise ValueError(
                f"convention must be 'ito' or 'stratonovich', got {self.convention!r}"
            )
        if not callable(self.drift) or not callable(self.diffusion):
            raise TypeError("drift and diffusion must be callables: drift(t, y, args), "
                            "diffusion(t, y, args, dw)")
        if not isinstance(self.shared_noise, bool):
            raise TypeError(f"shared_noise must be True or False, got {self.shared_noise!r}")
        leaves = jax.tree.leaves(self.manifold, is_leaf=is_manifold)
        if not leaves or not all(is_manifold(leaf) for leaf in leaves):
            raise TypeError(f"manifold must be spheresde.Sphere(radius=...), "
                            f"spheresde.Euclidean() or a pytree of them (one per leaf of "
                            f"the state), got {self.manifold!r}")

    @property
    def noise_shape(self):
        """The shape of ``dw``: a tuple of ints, or a pytree of them."""
        treedef, shapes = self.noise_def
        return jax.tree.unflatten(treedef, shapes)

    def noise(self, dtype) -> object:
        """``jax.ShapeDtypeStruct`` of ``dw`` (a pytree of them for pytree noise)."""
        treedef, shapes = self.noise_def
        return jax.tree.unflatten(treedef, [jax.ShapeDtypeStruct(s, dtype) for s in shapes])

    @property
    def tree_state(self) -> bool:
        """Whether the state is a pytree (a manifold per leaf), not one array."""
        return not is_manifold(self.manifold)

    def replace(self, drift=None, diffusion=None, noise_shape=None, convention=None
                ) -> SphereSDE:
        """This SDE with some of its parts replaced (``shared_noise`` and ``manifold``
        kept)."""
        return SphereSDE(self.drift if drift is None else drift,
                         self.diffusion if diffusion is None else diffusion,
                         self.noise_shape if noise_shape is None else noise_shape,
                         self.convention if convention is None else convention,
                         shared_noise=self.shared_noise, manifold=self.manifold)

    def to_stratonovich(self) -> SphereSDE:
        r"""The same SDE in Stratonovich form (``self`` if it is one already).

        Drift :math:`P_y\big(f - \tfrac12\sum_k (D g_k)\, g_k\big)`, diffusion
        unchanged, with :math:`g_k = g(t, y)[E_k]` for the unit increments :math:`E_k` of
        ``noise_shape``. Each :math:`(D g_k)\, g_k` is one ``jax.jvp`` of
        :math:`z \mapsto g(t, z)[E_k]` at ``y`` along :math:`g_k` (all ``k`` at once under
        ``jax.vmap``), so the derivative of the diffusion is never formed. The
        projection :math:`P_y` (row by row) makes the drift tangent, as the Stratonovich
        solvers require: :math:`f - c` is tangent when the Ito drift carries its normal
        part :math:`-\tfrac12 \sum_k |g_k|^2 y` (the normal part of :math:`c`, see
        :meth:`to_ito`), and the projection drops what is left where the drift was
        written without it (accepted too, see the class docstring).
        """
        if self.convention == "stratonovich":
            return self
        drift = _ConvertedDrift(self.drift, self.diffusion, self.manifold, self.noise_def,
                                -1.0)
        return self.replace(drift=drift, convention="stratonovich")

    def to_ito(self) -> SphereSDE:
        r"""The same SDE in Ito form (``self`` if it is one already).

        Drift :math:`f + \tfrac12\sum_k (D g_k)\, g_k`, computed as in
        :meth:`to_stratonovich`. For a tangent diffusion the correction's normal part is
        :math:`-\tfrac12 \sum_k |g_k|^2 y` (differentiate :math:`\langle y, g_k(y)\rangle
        = 0` along :math:`g_k`), the normal drift that Ito's lemma on :math:`|y|^2 = 1`
        demands, so the Ito drift comes out whole.
        """
        if self.convention == "ito":
            return self
        drift = _ConvertedDrift(self.drift, self.diffusion, self.manifold, self.noise_def,
                                1.0)
        return self.replace(drift=drift, convention="ito")

    def terms(self, brownian: diffrax.AbstractPath) -> diffrax.MultiTerm:
        """Diffrax terms ``(drift dt, diffusion dW)`` driven by the path ``brownian``."""
        diffusion = DiffusionTerm(self.diffusion, brownian, self.manifold, self.noise_def)
        return diffrax.MultiTerm(diffrax.ODETerm(self.drift), diffusion)


class DiffusionTerm(diffrax.AbstractTerm):
    """``g(t, y)[dW]`` applied to the increment; the matrix ``g`` is never formed.

    ``vf`` is the linear map ``dw -> g(t, y)[dw]`` as a lineax operator (Diffrax's term
    checks and ``prod`` use it); ``vf_prod`` applies it directly, and
    ``is_vf_expensive`` is True so that Diffrax's Runge--Kutta solvers take that route.
    It carries the state's ``manifold``, which the solvers of this package read from
    the terms (:func:`~spheresde.solvers.manifold_of`).
    """

    diffusion: Callable[..., Array]
    control: diffrax.AbstractPath
    manifold: object
    noise_def: tuple = eqx.field(static=True)

    def vf(self, t, y, args):
        treedef, shapes = self.noise_def
        dtype = jnp.result_type(*jax.tree.leaves(y))
        noise = jax.tree.unflatten(treedef, [jax.ShapeDtypeStruct(s, dtype) for s in shapes])
        return lx.FunctionLinearOperator(ft.partial(self.diffusion, t, y, args), noise)

    def contr(self, t0, t1, **kwargs):
        return self.control.evaluate(t0, t1, **kwargs)

    def prod(self, vf, control):
        return vf.mv(control)

    def vf_prod(self, t, y, args, control):
        return self.diffusion(t, y, args, control)

    def is_vf_expensive(self, t0, t1, y, args) -> bool:
        return True


class _ConvertedDrift(eqx.Module):
    r"""``drift + sign/2 sum_k (D g_k) g_k``, projected on the tangent spaces for
    ``sign < 0`` (the Stratonovich drift); see :meth:`SphereSDE.to_stratonovich`. The
    unit increments :math:`E_k` run over every entry of every leaf of the noise."""

    drift: Callable[..., Array]
    diffusion: Callable[..., Array]
    manifold: object
    noise_def: tuple = eqx.field(static=True)
    sign: float = eqx.field(static=True)

    def __call__(self, t, y, args):
        treedef, shapes = self.noise_def
        dtype = jnp.result_type(*jax.tree.leaves(y))
        sizes = [math.prod(shape) for shape in shapes]
        eye = jnp.eye(sum(sizes), dtype=dtype)
        parts = jnp.split(eye, np.cumsum(sizes)[:-1], axis=1) if len(sizes) > 1 else [eye]
        basis = jax.tree.unflatten(treedef, [part.reshape(-1, *shape)
                                             for part, shape in zip(parts, shapes, strict=True)])

        def along(e):
            def g_e(z):
                return self.diffusion(t, z, args, e)

            return jax.jvp(g_e, (y,), (g_e(y),))[1]

        correction = jax.tree.map(lambda c: 0.5 * jnp.sum(c, axis=0), jax.vmap(along)(basis))
        drift = jax.tree.map(lambda f, c: f + self.sign * c, self.drift(t, y, args),
                             correction)
        return drift if self.sign > 0 else _project(self.manifold, y, drift)


def _project(manifold, y, v):
    """``v`` projected on the tangent spaces at ``y``, exact also off the sphere."""
    return jax.tree.map(
        lambda m, y, v: project_tangent(y, v) if isinstance(m, Sphere) else v,
        manifold, y, v, is_leaf=is_manifold)
