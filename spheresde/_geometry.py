"""Geometry of the unit sphere S^{d-1} embedded in R^d.

Every function acts on the last axis and is vectorized over leading axes, so a
configuration of n tokens is an array of shape ``(n, d)``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

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


def exp_map(y: SpherePoint, v: SpherePoint) -> SpherePoint:
    r"""Riemannian exponential map: follow the great circle from ``y`` along tangent ``v``.

    :math:`\exp_y(v) = \cos(|v|)\, y + \operatorname{sinc}(|v|)\, v`, written with
    ``sinc`` so that ``v = 0`` needs no special case. ``v`` must be tangent at ``y``.
    """
    theta = norm(v)
    return jnp.cos(theta) * y + jnp.sinc(theta / jnp.pi) * v


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
    if d < 2:
        raise ValueError(f"the sphere S^(d-1) needs d >= 2, got d={d}")
    g = jax.random.normal(key, (*shape, d), dtype=dtype or jnp.result_type(float))
    return retract(g)


def norm_error(y: SpherePoint) -> Array:
    """Largest deviation ``max | |y_i| - 1 |`` over all points: the drift off the sphere."""
    return jnp.max(jnp.abs(norm(y) - 1.0))
