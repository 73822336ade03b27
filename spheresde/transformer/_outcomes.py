r"""What a configuration of tokens has become after the horizon.

The classification (stated in :doc:`/theory/discrete_model`, section *Outcomes*):

- single cluster: every pairwise :math:`\langle X_i, X_j\rangle > 1 - \mathrm{tol}`;
- antipodal: every :math:`|\langle X_i, X_j\rangle| > 1 - \mathrm{tol}`, both signs present;
- undecided: anything else. Its fraction is always reported, never dropped.

Every Monte Carlo result of the package ends as outcome codes, or as counts of them
summed over the chunks of a sweep; :func:`fractions_from_counts` is the one place that
turns counts into fractions with their binomial standard errors
(:func:`binomial_stderr`), and :func:`fractions_from_codes` counts codes for it.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .. import _checks
from .._typing import Array

SINGLE = 0
ANTIPODAL = 1
UNDECIDED = 2
OUTCOME_NAMES = ("single", "antipodal", "undecided")

DEFAULT_TOL = 1e-2
"""Default outcome tolerance on :math:`1 - |\\langle X_i, X_j\\rangle|` (used everywhere)."""


def binomial_stderr(p, count: int | None):
    r"""Standard error :math:`\sqrt{p(1-p)/N}` of a fraction ``p`` of ``count`` samples.

    ``count=None`` marks an exact probability (no sampling): the error is 0.
    """
    p = np.asarray(p, dtype=float)
    if count is None:
        return np.zeros_like(p)
    return np.asarray(np.sqrt(p * (1 - p) / count))


def _gram(tokens: Array) -> Array:
    unit = tokens / jnp.linalg.norm(tokens, axis=-1, keepdims=True)
    return jnp.einsum("...id,...jd->...ij", unit, unit)


def classify_gram(gram: Array, tol: float = DEFAULT_TOL) -> Array:
    """Outcome codes from Gram matrices ``(..., n, n)`` of unit tokens (see :func:`classify`)."""
    return _classify_gram(gram, tol)


@jax.jit
def _classify_gram(gram, tol):
    # one compiled program per shape: eager, its ten operations compiled one by one for
    # every batch width that early absorption leaves (most of a quick sweep's compiling)
    n = gram.shape[-1]
    off = ~jnp.eye(n, dtype=bool)
    single = jnp.all(jnp.where(off, gram > 1 - tol, True), axis=(-2, -1))
    aligned = jnp.all(jnp.where(off, jnp.abs(gram) > 1 - tol, True), axis=(-2, -1))
    opposite = jnp.any(jnp.where(off, gram < 0, False), axis=(-2, -1))
    return jnp.where(single, SINGLE, jnp.where(aligned & opposite, ANTIPODAL, UNDECIDED))


def classify_rho(rho, tol: float = DEFAULT_TOL) -> np.ndarray:
    r"""Outcome codes of two tokens from their inner products :math:`\rho` (any shape).

    The same rule as :func:`classify` for ``n = 2``: single if :math:`\rho > 1 - \mathrm{tol}`,
    antipodal if :math:`\rho < -(1 - \mathrm{tol})`, undecided otherwise.
    """
    rho = np.asarray(rho)
    return np.where(rho > 1 - tol, SINGLE, np.where(rho < -(1 - tol), ANTIPODAL, UNDECIDED))


def classify(tokens: Array, tol: float = DEFAULT_TOL) -> Array:
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
    _checks.tokens("tokens", tokens)
    _checks.real("tol", tol, at_least=0.0)
    return _classify_tokens(tokens, tol)


@jax.jit
def _classify_tokens(tokens, tol):
    return _classify_gram(_gram(tokens), tol)


@dataclass(frozen=True)
class OutcomeFractions:
    r"""Fractions of the three outcomes, with binomial standard errors.

    Built by :func:`fractions_from_codes` (or :meth:`exact` for limit probabilities). The
    fractions are NumPy arrays over the leading (grid) axes of the codes: 0-d for one
    batch, so ``float(f.antipodal)`` works; ``count`` is the number of samples behind
    each fraction, ``None`` for exact probabilities (standard errors 0).

    ``squares``: where some samples are probabilities in [0, 1] rather than 0/1 outcomes
    (trajectories finished by a law, :mod:`spheresde.transformer._formation_finish`), the
    mean squares of the per-sample values of (single, antipodal, undecided); the standard
    errors are then :math:`\sqrt{(\overline{v^2} - p^2)/N}`, the sample standard deviation
    over :math:`\sqrt N` (the binomial one where every value is 0 or 1). ``None``: all 0/1.
    """

    single: np.ndarray
    antipodal: np.ndarray
    undecided: np.ndarray
    count: int | None
    squares: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    @classmethod
    def exact(cls, antipodal) -> OutcomeFractions:
        """Limit probabilities of two tokens: every path ends single or antipodal."""
        p = np.asarray(antipodal, dtype=float)
        return cls(np.asarray(1.0 - p), p, np.zeros_like(p), None)

    def _stderr(self, which: int) -> np.ndarray:
        p = (self.single, self.antipodal, self.undecided)[which]
        if self.squares is None or self.count is None:
            return binomial_stderr(p, self.count)
        return np.asarray(np.sqrt(np.maximum(self.squares[which] - p * p, 0.0) / self.count))

    @property
    def single_se(self) -> np.ndarray:
        """Standard error of :attr:`single`."""
        return self._stderr(0)

    @property
    def antipodal_se(self) -> np.ndarray:
        """Standard error of :attr:`antipodal`."""
        return self._stderr(1)

    @property
    def undecided_se(self) -> np.ndarray:
        """Standard error of :attr:`undecided`."""
        return self._stderr(2)

    def dominant(self) -> np.ndarray:
        """Name of the most frequent outcome (ties: the first of single, antipodal,
        undecided), an array of strings over the grid axes."""
        stacked = np.stack([self.single, self.antipodal, self.undecided])
        return np.asarray(np.asarray(OUTCOME_NAMES)[np.argmax(stacked, axis=0)])


def fractions_from_counts(single, antipodal, undecided) -> OutcomeFractions:
    """:class:`OutcomeFractions` of the numbers of single, antipodal and undecided samples
    (integers or integer arrays of one shape, with the same positive total everywhere)."""
    counts = [np.asarray(c) for c in (single, antipodal, undecided)]
    total = counts[0] + counts[1] + counts[2]
    count = int(np.max(total, initial=0))
    if count == 0 or np.any(total != count):
        raise ValueError(f"outcome counts need one positive total, got totals {total}")
    # np.asarray: a 0-d division gives a NumPy scalar, not a 0-d array
    return OutcomeFractions(*(np.asarray(c / count) for c in counts), count)


def fractions_from_values(outcomes, finished: int, sums, squares) -> OutcomeFractions:
    """:class:`OutcomeFractions` of a mix of samples: ``outcomes`` (the numbers of single,
    antipodal and undecided 0/1 samples) and ``finished`` samples that are probabilities,
    with the sums ``sums`` and sums of squares ``squares`` of their (single, antipodal,
    undecided) values. Without finished samples, :func:`fractions_from_counts`."""
    if not finished:
        return fractions_from_counts(*outcomes)
    count = int(sum(outcomes)) + int(finished)
    means = [np.asarray((c + v) / count) for c, v in zip(outcomes, sums, strict=True)]
    second = tuple(np.asarray((c + v) / count) for c, v in zip(outcomes, squares, strict=True))
    return OutcomeFractions(*means, count, second)


def fractions_from_codes(codes) -> OutcomeFractions:
    """:class:`OutcomeFractions` of outcome codes; the last axis holds the samples."""
    codes = np.asarray(codes)
    if codes.ndim == 0 or codes.shape[-1] == 0:
        raise ValueError("fractions_from_codes needs at least one sample on the last axis")
    return fractions_from_counts(*(np.sum(codes == c, axis=-1)
                                   for c in (SINGLE, ANTIPODAL, UNDECIDED)))


def outcome_fractions(tokens: Array, tol: float = DEFAULT_TOL) -> OutcomeFractions:
    """Fractions of single / antipodal / undecided configurations in a batch ``(..., N, n, d)``."""
    return fractions_from_codes(classify(tokens, tol))


def cluster_sizes(tokens: Array) -> Array:
    r"""Sizes of the two poles of each configuration, ``(..., 2)``, larger first.

    Tokens are grouped by the sign of :math:`\langle X_1, X_i\rangle`; for an antipodal
    configuration these are its two clusters, for a single cluster ``(n, 0)``. Only
    meaningful where :func:`classify` is not :data:`UNDECIDED`.
    """
    _checks.tokens("tokens", tokens)
    return _cluster_sizes(tokens)


@jax.jit
def _cluster_sizes(tokens):
    gram = _gram(tokens)
    with_first = jnp.sum(gram[..., 0, :] > 0, axis=-1)
    n = gram.shape[-1]
    other = n - with_first
    return jnp.stack([jnp.maximum(with_first, other), jnp.minimum(with_first, other)], axis=-1)


__all__ = [
    "ANTIPODAL",
    "DEFAULT_TOL",
    "OUTCOME_NAMES",
    "SINGLE",
    "UNDECIDED",
    "OutcomeFractions",
    "binomial_stderr",
    "classify",
    "classify_gram",
    "classify_rho",
    "cluster_sizes",
    "fractions_from_codes",
    "fractions_from_counts",
    "fractions_from_values",
    "outcome_fractions",
]
