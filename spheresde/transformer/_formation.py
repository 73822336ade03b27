r"""Two-cluster formations of ``n`` tokens: the threshold of their inter-cluster mode.

A formation puts ``cluster`` tokens at ``x`` and the other ``tokens - cluster`` at ``y``;
it stays a formation under the dynamics (coincident tokens get the same update), so
:math:`\rho = \langle x, y\rangle` is a 1-D diffusion, derived in
:mod:`proofs_check.formation` and lambdified here (nothing is retyped). See the docs'
page on the hybrid model for the difference between this *linear stability* threshold
and the edge where the antipodal outcome *dominates*.
"""

from __future__ import annotations

import numpy as np

from .. import _checks
from .._typing import FloatGrid, RealGrid


def _coefficients() -> dict:
    from proofs_check.export import formation_coefficients

    return formation_coefficients("numpy")


def _check_sizes(tokens, cluster) -> tuple[np.ndarray, np.ndarray]:
    n = np.asarray(tokens)
    k = np.asarray(cluster)
    if not (np.issubdtype(n.dtype, np.integer) and np.issubdtype(k.dtype, np.integer)):
        raise TypeError(f"tokens and cluster must be integers, got {tokens!r} and {cluster!r}")
    if np.any(n < 2) or np.any(k < 1) or np.any(k >= n):
        raise ValueError(
            f"need tokens >= 2 and 1 <= cluster <= tokens - 1, got tokens={tokens!r}, "
            f"cluster={cluster!r}")
    return n.astype(float), k.astype(float)


def formation_lyapunov_minus(beta: RealGrid, d: RealGrid, *, tokens, cluster,
                             eps: RealGrid = 1.0, mu: RealGrid = 1.0) -> FloatGrid:
    r"""Lyapunov exponent of the inter-cluster mode of a formation at :math:`\rho = -1`.

    Hybrid weights :math:`V = (\mu/\sqrt L)\,\mathrm{Id} + \varepsilon G`; pure noise is
    ``mu=0, eps=sigma``. Negative: the antipodal formation attracts with positive
    probability. For an unbalanced formation (``2 cluster != tokens``) :math:`\rho = -1` is
    not an exact equilibrium (the clusters' attention vectors differ in length, so the
    common noise moves them by different amounts), and the exponent is that of the
    multiplicative part of the linearization; see :mod:`proofs_check.formation`.
    """
    _checks.two_tokens(beta, d, eps=eps, mu=mu)
    n, k = _check_sizes(tokens, cluster)
    args = (np.asarray(a, float) for a in (beta, d, n, k, eps, mu))
    return np.asarray(_coefficients()["lyapunov_minus"](*args), float)


def formation_threshold(beta: RealGrid, d: RealGrid, *, tokens, cluster,
                        mu: RealGrid = 1.0) -> FloatGrid:
    r"""The :math:`\varepsilon` above which an antipodal formation of ``tokens`` tokens,
    ``cluster`` of them on one side, attracts (hybrid dynamics, inter-cluster mode).

    ``inf`` where the mode repels for every :math:`\varepsilon`. With ``tokens=2,
    cluster=1`` (and any balanced formation, ``2 cluster == tokens``) it is
    :func:`spheresde.two_token.hybrid_threshold`. Large :math:`\beta`:
    :math:`\varepsilon^2 \approx \mu\,\frac{n^2 - 2k(n-k)}{k(n-k)}\,e^{-2\beta}`.

    Parameters
    ----------
    beta, d : array_like
        Inverse temperature and dimension (broadcast).
    tokens, cluster : int or array of int
        ``n`` and ``k``, with ``1 <= k <= n - 1``.
    mu : array_like
        Deterministic part of the value matrix.

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> import numpy as np
    >>> from spheresde import two_token
    >>> bool(np.isclose(formation_threshold(3.0, 3, tokens=4, cluster=2),
    ...                 two_token.hybrid_threshold(3.0, 3)))
    True
    """
    _checks.two_tokens(beta, d, mu=mu)
    n, k = _check_sizes(tokens, cluster)
    args = (np.asarray(a, float) for a in (beta, d, n, k, mu))
    return np.sqrt(np.asarray(_coefficients()["threshold_eps2"](*args), float))


__all__ = ["formation_lyapunov_minus", "formation_threshold"]
