r"""The coefficients of the :math:`\rho`-diffusion of two tokens, lambdified, not retyped.

Every coefficient used by :mod:`spheresde.two_token` (drift, diffusion, the
scale-function integrand :math:`g`, the coefficients in :math:`z =
\operatorname{artanh}\rho`, the Lyapunov exponents, the hybrid threshold) is
lambdified from the SymPy derivation in :mod:`proofs_check.export`; none is retyped.
The functions here are thin wrappers that name the arguments and pick the noise scale
(pure noise :math:`\sigma`, or hybrid :math:`(\mu, \varepsilon)`).
"""

from __future__ import annotations

import numpy as np

from ... import _checks
from ..._typing import FloatGrid, RealGrid


def rc(backend: str = "numpy"):
    """The lambdified coefficients of :func:`proofs_check.export.rho_coefficients`."""
    from proofs_check.export import rho_coefficients

    return rho_coefficients(backend)


def noise_scale(sigma, eps):
    """The noise scale: hybrid ``eps`` when given, else the pure-noise ``sigma``."""
    return sigma if eps is None else eps


def critical_beta(d: RealGrid) -> FloatGrid:
    r""":math:`\beta_c(d) = \tfrac12\operatorname{arccosh}(d-2)` (0 for ``d <= 3``): pure noise
    makes the antipodal pair attracting iff :math:`\beta > \beta_c(d)`."""
    _checks.real("d", d, at_least=2)
    return np.asarray(rc().critical_beta(np.asarray(d, float)), float)


def drift(rho: RealGrid, beta: RealGrid, d: RealGrid, sigma: RealGrid = 1.0, *,
          mu: RealGrid = 0.0, eps: RealGrid | None = None) -> FloatGrid:
    r"""Ito drift of :math:`\rho = \langle X_1, X_2\rangle` (pure noise :math:`\sigma`, or
    hybrid :math:`(\mu, \varepsilon)`)."""
    _checks.inner_product("rho", rho)
    _checks.two_tokens(beta, d, sigma=sigma, mu=mu, eps=eps)
    return rc().drift(rho, beta, d, noise_scale(sigma, eps), mu)


def diffusion(rho: RealGrid, beta: RealGrid, d: RealGrid, sigma: RealGrid = 1.0, *,
              mu: RealGrid = 0.0, eps: RealGrid | None = None) -> FloatGrid:
    r"""Diffusion coefficient :math:`s \ge 0` of :math:`\rho`.

    :math:`d\rho = m\,dt + s\,dB` in the Ito sense."""
    _checks.inner_product("rho", rho)
    _checks.two_tokens(beta, d, sigma=sigma, mu=mu, eps=eps)
    return rc().diffusion(rho, beta, d, noise_scale(sigma, eps), mu)


def scale_g(rho: RealGrid, beta: RealGrid, d: RealGrid, sigma: RealGrid = 1.0, *,
            mu: RealGrid = 0.0, eps: RealGrid | None = None) -> FloatGrid:
    r""":math:`g(\rho)` with :math:`2m/s^2 = g/(1-\rho^2)`, the scale-function integrand."""
    _checks.inner_product("rho", rho)
    _checks.two_tokens(beta, d, sigma=sigma, mu=mu, eps=eps)
    return rc().scale_g(rho, beta, d, noise_scale(sigma, eps), mu)


def lyapunov_minus(beta: RealGrid, d: RealGrid, sigma: RealGrid = 1.0, *, mu: RealGrid = 0.0,
                   eps: RealGrid | None = None) -> FloatGrid:
    r"""Lyapunov exponent of :math:`1+\rho` at :math:`\rho = -1` (attracting iff negative)."""
    _checks.two_tokens(beta, d, sigma=sigma, mu=mu, eps=eps)
    return rc().lyapunov_minus(beta, d, noise_scale(sigma, eps), mu)


def hybrid_threshold(beta: RealGrid, d: RealGrid, mu: RealGrid = 1.0) -> FloatGrid:
    r"""Exact :math:`\varepsilon` above which the hybrid's antipodal pair attracts.

    From the linearization at :math:`\rho = -1` (``proofs_check``): :math:`\varepsilon^2 =
    2\mu b_- / (1 - 2(d-1)a_- b_-)`, about :math:`2\mu e^{-2\beta}` for large
    :math:`\beta`; ``inf`` for :math:`\beta \le \beta_c(d)` (no :math:`\varepsilon` works).
    Compare :func:`paper_hybrid_threshold`.
    """
    _checks.two_tokens(beta, d, mu=mu)
    return np.sqrt(np.asarray(rc().hybrid_threshold_eps2(beta, d, mu), float))


def paper_hybrid_threshold(beta: RealGrid) -> FloatGrid:
    r"""The paper's Figure 4 curve :math:`\varepsilon = \sqrt{2 e^{-\beta}}` (its Proposition 1).

    It equals the large-:math:`\beta` form of :func:`hybrid_threshold` with
    :math:`\beta` halved (logits scaled by 1/2), a convention the rest of the paper does
    not use; both are reported, neither is forced onto the other.
    """
    _checks.real("beta", beta)
    return np.sqrt(2 * np.exp(-np.asarray(beta, float)))


__all__ = [
    "critical_beta", "diffusion", "drift", "hybrid_threshold", "lyapunov_minus",
    "noise_scale", "paper_hybrid_threshold", "rc", "scale_g",
]
