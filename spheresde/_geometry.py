"""Geometry of the unit sphere S^{d-1} embedded in R^d, and the manifolds of a state.

Every function acts on the last axis and is vectorized over leading axes, so a
configuration of n tokens is an array of shape ``(n, d)``. :class:`Sphere` (any radius)
and :class:`Euclidean` declare, leaf for leaf, where the parts of a state live
(``SphereSDE(..., manifold=...)``); the solvers step each leaf with its methods.
"""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from . import _checks
from ._small import inner, norm
from ._typing import Array, PRNGKeyArray, SpherePoint


def project_tangent(y: SpherePoint, v: SpherePoint) -> SpherePoint:
    r"""Orthogonal projection of ``v`` onto the tangent space at ``y``.

    :math:`P_y v = v - \langle y, v\rangle\, y / |y|^2`. Dividing by :math:`|y|^2`
    makes the projection exact (and idempotent) also for points slightly off the
    sphere, as met inside the stages of a Runge--Kutta step.
    """
    return v - (inner(y, v) / inner(y, y)) * y


def retract(y: SpherePoint) -> SpherePoint:
    """Retraction by normalization, ``y / |y|`` (the Transformer's RMS normalization)."""
    return y / norm(y)


def _series(x2: Array, terms: int, first: int) -> Array:
    """``sum_k (-1)^k x^(2k) / (2k + first)!`` for ``k < terms``, by Horner's rule in ``x2``."""
    out = jnp.asarray(1.0, x2.dtype) * ((-1) ** (terms - 1) / math.factorial(2 * terms - 2 + first))
    for k in range(terms - 2, -1, -1):
        out = out * x2 + (-1) ** k / math.factorial(2 * k + first)
    return out


def cos_sinc(theta2: Array) -> tuple[Array, Array]:
    r""":math:`(\cos\theta, \sin\theta / \theta)` from :math:`\theta^2`, without trigonometry.

    The exponential map needs both at the norm of every step. In float64 on CPU
    ``jnp.cos`` and ``jnp.sin`` are calls into the C library, one element at a time
    (about 10% of a GeodesicEuler step on Brownian motion on S^2,
    ``tests/benchmarks/bench_solvers.py --brownian``); this is arithmetic that XLA
    vectorizes. :math:`\theta` is reduced to :math:`r \in [-\pi, \pi]` (only when
    :math:`\theta > \pi`, never for a step of a convergent scheme), the Taylor series
    of :math:`\cos` and :math:`\sin x / x` at :math:`x = r/4` are summed to rounding
    (9 terms in float64, 5 in float32) and doubled twice, :math:`\cos 2x = 1 - 2x^2
    (\sin x/x)^2`, :math:`\sin 2x / 2x = (\sin x / x) \cos x`. Written in
    :math:`\theta^2`, so no square root is taken at :math:`\theta = 0` and gradients
    there are finite.
    """
    terms = 9 if jnp.finfo(theta2.dtype).eps < 1e-10 else 5
    big = theta2 > np.pi**2
    theta = jnp.sqrt(jnp.where(big, theta2, np.pi**2))
    r = theta - 2 * np.pi * jnp.round(theta / (2 * np.pi))
    x2 = jnp.where(big, r * r, theta2) / 16
    sinc4, cos4 = _series(x2, terms, 1), _series(x2, terms, 0)
    sinc2, cos2 = sinc4 * cos4, 1 - 2 * x2 * sinc4 * sinc4
    sinc1, cos1 = sinc2 * cos2, 1 - 8 * x2 * sinc2 * sinc2
    return cos1, sinc1 * jnp.where(big, r / theta, 1.0)


def exp_map(y: SpherePoint, v: SpherePoint) -> SpherePoint:
    r"""Riemannian exponential map: follow the great circle from ``y`` along tangent ``v``.

    :math:`\exp_y(v) = \cos(|v|)\, y + \operatorname{sinc}(|v|)\, v` with
    :math:`\operatorname{sinc} t = \sin t / t` (:func:`cos_sinc`), so that ``v = 0``
    needs no special case. ``v`` must be tangent at ``y``.
    """
    cos, sinc = cos_sinc(inner(v, v))
    return cos * y + sinc * v


def log_map(y: SpherePoint, z: SpherePoint) -> SpherePoint:
    """Inverse of :func:`exp_map`: the tangent vector at ``y`` pointing to ``z`` (not antipodal)."""
    w = project_tangent(y, z)
    norm_w = norm(w)
    theta = geodesic_distance(y, z)[..., None]
    return jnp.where(norm_w > 0, theta / jnp.where(norm_w > 0, norm_w, 1.0), 0.0) * w


def geodesic_distance(y: SpherePoint, z: SpherePoint) -> Array:
    """Great-circle distance, computed with ``arctan2`` so it is accurate near 0 and pi."""
    cosine = inner(y, z)
    return jnp.arctan2(norm(y - cosine * z), cosine)[..., 0]


def sample_uniform(key: PRNGKeyArray, shape: tuple[int, ...], d: int, dtype=None) -> SpherePoint:
    """Independent uniform points on S^{d-1}, an array of shape ``shape + (d,)``."""
    shape, d = _checks.sizes("shape", shape), _checks.dimension("d", d)
    _checks.real("dtype", np.zeros(0, dtype or jnp.result_type(float)))
    g = jax.random.normal(key, (*shape, d), dtype=dtype or jnp.result_type(float))
    return retract(g)


def norm_error(y: SpherePoint) -> Array:
    """Largest deviation ``max | |y_i| - 1 |`` over all points: the drift off the sphere."""
    return jnp.max(jnp.abs(norm(y) - 1.0))


class Sphere(eqx.Module):
    r"""The sphere :math:`\{y \in \mathbb{R}^d : |y| = r\}` of radius ``radius``, for a leaf
    of a state: its rows (shape ``(d,)`` or ``(n, d)``) lie on it.

    The methods are the steps of the solvers on such a leaf, on the last axis: the
    projection on the tangent space, the exponential map (with a Newton step on the
    norm, so that rounding does not accumulate), parallel transport along a great
    circle, the retraction and the great-circle interpolation. ``radius`` is static, and
    at ``radius=1.0`` each is the unit-sphere formula of this module, operation for
    operation (no multiplication by 1).
    """

    radius: float = eqx.field(static=True, default=1.0)

    def __check_init__(self):
        if not (isinstance(self.radius, (int, float)) and math.isfinite(self.radius)
                and self.radius > 0):
            raise ValueError(f"Sphere(radius=...) takes a positive finite number, got "
                             f"{self.radius!r}")

    def _scale(self, x):
        """``x / r^2``, left alone on the unit sphere."""
        return x if self.radius == 1 else x / self.radius**2

    def tangent(self, y, u):
        r""":math:`u - \langle y, u\rangle y / r^2` at a point ``y`` of the sphere."""
        return u - self._scale(inner(y, u)) * y

    def exp(self, y, v):
        r""":math:`\exp_y(v) = \cos\theta\,\tfrac{3 - |y|^2/r^2}{2}\,y +
        \operatorname{sinc}\theta\,v` with :math:`\theta = |v|/r`, for ``y`` on the
        sphere up to rounding and a tangent ``v`` (the factor is one Newton step for
        :math:`r/|y|`)."""
        cos, sinc = cos_sinc(self._scale(inner(v, v)))
        return cos * (1.5 - 0.5 * self._scale(inner(y, y))) * y + sinc * v

    def transport(self, x, y, u):
        r"""Parallel transport of ``u`` from ``x`` to ``y`` along the great circle,
        :math:`u - \frac{\langle y, u\rangle}{r^2 + \langle x, y\rangle}(x + y)`."""
        return u - inner(y, u) / (self.radius**2 + inner(x, y)) * (x + y)

    def retract(self, y):
        r""":math:`r\,y / |y|`."""
        return retract(y) if self.radius == 1 else self.radius * retract(y)

    def interpolate(self, y0, y1, s):
        """The point at fraction ``s`` of the great circle from ``y0`` to ``y1``."""
        if self.radius == 1:
            return exp_map(y0, s * log_map(y0, y1))
        r = self.radius
        return r * exp_map(y0 / r, s * log_map(y0 / r, y1 / r))


class Euclidean(eqx.Module):
    r"""Flat space :math:`\mathbb{R}^{\dots}` for a leaf of a state (any shape): the
    solvers step it as the flat scheme (Euler, Heun, midpoint) would."""

    def tangent(self, y, u):
        return u

    def exp(self, y, v):
        return y + v

    def transport(self, x, y, u):
        return u

    def retract(self, y):
        return y

    def interpolate(self, y0, y1, s):
        return y0 + s * (y1 - y0)


def is_manifold(x) -> bool:
    """Whether ``x`` is a :class:`Sphere` or :class:`Euclidean` (a leaf of a manifold tree)."""
    return isinstance(x, (Sphere, Euclidean))


def leafwise(method: str, manifold, *trees):
    """``manifold.<method>(*leaves)`` leaf for leaf over a state pytree and its
    ``manifold`` tree (of the same structure, :class:`Sphere` or :class:`Euclidean` at
    each leaf); one array state and one manifold are the tree of one leaf."""
    return jax.tree.map(lambda m, *leaves: getattr(m, method)(*leaves), manifold, *trees,
                        is_leaf=is_manifold)
