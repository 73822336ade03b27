r"""What a configuration of tokens has become after the horizon (``MODEL.md`` section 5).

- single cluster: every pairwise :math:`\langle X_i, X_j\rangle > 1 - \mathrm{tol}`;
- antipodal: every :math:`|\langle X_i, X_j\rangle| > 1 - \mathrm{tol}`, both signs present;
- undecided: anything else. Its fraction is always reported, never dropped.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from ._typing import Array

SINGLE = 0
ANTIPODAL = 1
UNDECIDED = 2
OUTCOME_NAMES = ("single", "antipodal", "undecided")


def _gram(tokens: Array) -> Array:
    unit = tokens / jnp.linalg.norm(tokens, axis=-1, keepdims=True)
    return jnp.einsum("...id,...jd->...ij", unit, unit)


def classify_gram(gram: Array, tol: float = 1e-2) -> Array:
    """Outcome codes from Gram matrices ``(..., n, n)`` of unit tokens (see :func:`classify`)."""
    n = gram.shape[-1]
    off = ~jnp.eye(n, dtype=bool)
    single = jnp.all(jnp.where(off, gram > 1 - tol, True), axis=(-2, -1))
    aligned = jnp.all(jnp.where(off, jnp.abs(gram) > 1 - tol, True), axis=(-2, -1))
    opposite = jnp.any(jnp.where(off, gram < 0, False), axis=(-2, -1))
    return jnp.where(single, SINGLE, jnp.where(aligned & opposite, ANTIPODAL, UNDECIDED))


def classify(tokens: Array, tol: float = 1e-2) -> Array:
    r"""Outcome code of each configuration: :data:`SINGLE`, :data:`ANTIPODAL` or :data:`UNDECIDED`.

    Parameters
    ----------
    tokens
        ``(..., n, d)``, any radius (normalized here).
    tol
        Tolerance on :math:`1 - |\langle X_i, X_j\rangle|`.

    Returns
    -------
    Array
        Integer codes of shape ``(...)``.
    """
    return classify_gram(_gram(tokens), tol)


class OutcomeFractions(NamedTuple):
    """Fractions of the three outcomes with binomial standard errors ``sqrt(p(1-p)/N)``."""

    single: float
    antipodal: float
    undecided: float
    single_se: float
    antipodal_se: float
    undecided_se: float
    count: int


def fractions_from_codes(codes) -> OutcomeFractions:
    """:class:`OutcomeFractions` of an array of outcome codes."""
    codes = np.asarray(codes).ravel()
    count = codes.size
    p = np.array([np.mean(codes == c) for c in (SINGLE, ANTIPODAL, UNDECIDED)])
    se = np.sqrt(p * (1 - p) / count)
    return OutcomeFractions(*(float(v) for v in p), *(float(v) for v in se), count)


def outcome_fractions(tokens: Array, tol: float = 1e-2) -> OutcomeFractions:
    """Fractions of single / antipodal / undecided configurations in a batch ``(N, n, d)``."""
    return fractions_from_codes(classify(tokens, tol))


def cluster_sizes(tokens: Array) -> Array:
    r"""Sizes of the two poles of each configuration, ``(..., 2)``, larger first.

    Tokens are grouped by the sign of :math:`\langle X_1, X_i\rangle`; for an antipodal
    configuration these are its two clusters, for a single cluster ``(n, 0)``. Only
    meaningful where :func:`classify` is not :data:`UNDECIDED`.
    """
    gram = _gram(tokens)
    with_first = jnp.sum(gram[..., 0, :] > 0, axis=-1)
    n = gram.shape[-1]
    other = n - with_first
    return jnp.stack([jnp.maximum(with_first, other), jnp.minimum(with_first, other)], axis=-1)


__all__ = [
    "ANTIPODAL",
    "OUTCOME_NAMES",
    "SINGLE",
    "UNDECIDED",
    "OutcomeFractions",
    "classify",
    "classify_gram",
    "cluster_sizes",
    "fractions_from_codes",
    "outcome_fractions",
]
