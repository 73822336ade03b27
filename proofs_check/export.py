r"""NumPy / JAX callables lambdified from the SymPy derivations (the numerics' source of truth).

Nothing here is typed by hand: every callable is :func:`sympy.lambdify` of an expression that
:mod:`proofs_check.two_token`, :mod:`proofs_check.stability` or :mod:`proofs_check.limit`
derives. Importing this module is cheap; the derivation runs on the first call of
:func:`rho_coefficients` / :func:`limit_coefficients` (a few seconds) and is cached.

Numerical form: the softmax weight ratio :math:`r = e^{-\beta(1-\rho)} \in (0, 1]` and
:math:`q = e^{-2\beta}` are the only exponentials, so nothing overflows for large
:math:`\beta` or :math:`|z|`. All functions broadcast their arguments; SDEs are **Ito**.

Examples
--------
>>> rc = rho_coefficients("numpy")
>>> round(float(rc.drift(0.3, 1.0, 4, 1.0, 0.0)), 6)
0.65509
>>> round(float(rc.critical_beta(10)), 6)  # arccosh(8) / 2
1.38433
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["LimitCoefficients", "RhoCoefficients", "cluster_certificate",
           "finite_depth_coefficients", "formation_coefficients",
           "limit_coefficients", "rho_coefficients", "tightness_certificate"]


@dataclass(frozen=True)
class RhoCoefficients:
    r"""Lambdified coefficients of the two-token inner product :math:`\rho` (Ito).

    Pure noise is ``mu = 0``, ``eps = sigma``. Signatures:

    - ``drift(rho, beta, d, eps, mu)``, ``diffusion(rho, beta, d, eps, mu)`` (>= 0):
      :math:`d\rho = m\,dt + s\,dB`.
    - ``z_drift(z, beta, d, eps, mu)``, ``z_diffusion(z, beta, d, eps, mu)``: the SDE of
      :math:`z = \operatorname{artanh}\rho`, written through :math:`\rho = \tanh z`.
    - ``z_scale_rate(z, beta, d, eps, mu)``: :math:`\psi' = 2\,\text{z-drift}/\text{z-diffusion}^2`,
      the log-derivative of the speed density times the squared diffusion (scale density
      :math:`e^{-\psi}`); used by the finite-horizon Kolmogorov solver.
    - ``scale_g(rho, beta, d, eps, mu)``: :math:`g` with :math:`2m/s^2 = g/(1-\rho^2)`
      (needs ``eps > 0``).
    - ``lyapunov_plus(beta, d, eps, mu)``, ``lyapunov_minus(beta, d, eps, mu)``: exponents at
      :math:`\rho = +1` and :math:`-1`.
    - ``hybrid_threshold_eps2(beta, d, mu)``: :math:`\varepsilon^2` where
      ``lyapunov_minus = 0``; ``inf`` when :math:`\beta \le \beta_c(d)` (no threshold: the
      antipodal pair is then repelling for every :math:`\varepsilon`).
    - ``critical_beta(d)``: :math:`\tfrac12\operatorname{arccosh}(d-2)` for ``d >= 3``, 0 below.
    """

    drift: Callable
    diffusion: Callable
    z_drift: Callable
    z_diffusion: Callable
    z_scale_rate: Callable
    scale_g: Callable
    lyapunov_plus: Callable
    lyapunov_minus: Callable
    hybrid_threshold_eps2: Callable
    critical_beta: Callable


@dataclass(frozen=True)
class LimitCoefficients:
    r"""Lambdified coefficients of the token SDE (Theorem 1, Ito).

    - ``normal_drift(d, sigma)``: the coefficient ``c`` in the Ito drift
      :math:`b_i = c\,|A_i|^2 X_i + \mu P_i A_i` (:math:`c = -\sigma^2 (d-1)/2`).
    - ``covariance_coefficient(sigma)``: ``k`` in the diffusion covariance
      :math:`E[dX_i\,dX_j^\top] = k \langle A_i, A_j\rangle P_i P_j\,dt`
      (:math:`k = \sigma^2`; it does not depend on ``d``).
    """

    normal_drift: Callable
    covariance_coefficient: Callable


def _module(backend: str):
    if backend == "numpy":
        return "numpy"
    if backend == "jax":
        return "jax"
    raise ValueError(f"backend must be 'numpy' or 'jax', got {backend!r}")


def _lambdify_all(expressions: dict, backend: str) -> dict:
    """``{name: (args, expr)}`` to ``{name: callable}`` by :func:`sympy.lambdify`."""
    import sympy as sp

    modules = _module(backend)
    return {name: sp.lambdify(args, expr, modules=modules)
            for name, (args, expr) in expressions.items()}


@functools.cache
def rho_expressions() -> dict:
    """The SymPy expressions behind :func:`rho_coefficients` (keyed like its fields).

    Returns
    -------
    dict
        ``name -> (arguments, expression)``.
    """
    import sympy as sp

    from .stability import critical_beta, hybrid_threshold, in_beta, lyapunov_exponent
    from .symbols import beta, d, eps, mu, rho, z
    from .two_token import derive_rho_sde, derive_z_sde, scale_g, z_scale_rate

    sde = derive_rho_sde()
    z_drift, z_diffusion = derive_z_sde()
    eps2, denominator = hybrid_threshold()
    threshold = sp.Piecewise((in_beta(eps2), in_beta(denominator) > 0), (sp.oo, True))
    args = (rho, beta, d, eps, mu)
    zargs = (z, beta, d, eps, mu)
    return {
        "drift": (args, sde.in_rho(sde.drift)),
        "diffusion": (args, sde.in_rho(sde.diffusion)),
        "z_drift": (zargs, z_drift),
        "z_diffusion": (zargs, z_diffusion),
        "z_scale_rate": (zargs, z_scale_rate()),
        "scale_g": (args, sde.in_rho(scale_g())),
        "lyapunov_plus": ((beta, d, eps, mu), lyapunov_exponent(1)),
        "lyapunov_minus": ((beta, d, eps, mu), in_beta(lyapunov_exponent(-1))),
        "hybrid_threshold_eps2": ((beta, d, mu), threshold),
        # Max(d - 2, 1): 0 for d <= 3 (antipodal attracting for every beta > 0), and no
        # arccosh of a value below 1 evaluated in the unused branch of a Piecewise.
        "critical_beta": ((d,), critical_beta().subs(d - 2, sp.Max(d - 2, 1))),
    }


@functools.cache
def rho_coefficients(backend: str = "numpy") -> RhoCoefficients:
    """Lambdified two-token coefficients (see :class:`RhoCoefficients`), cached per backend.

    Parameters
    ----------
    backend : {"numpy", "jax"}

    Returns
    -------
    RhoCoefficients

    Examples
    --------
    >>> rc = rho_coefficients("numpy")
    >>> float(rc.lyapunov_plus(1.0, 4, 1.0, 0.0))
    -3.0
    """
    return RhoCoefficients(**_lambdify_all(rho_expressions(), backend))


@functools.cache
def limit_expressions() -> dict:
    """The SymPy expressions behind :func:`limit_coefficients`."""
    import sympy as sp

    from .limit import derive_limit_span
    from .span import TokenSpan
    from .symbols import d, eps, mu

    # One token and A = w X: the drift is (c w^2 + mu (w - w)) X, so c = coefficient / w^2,
    # and the covariance is k w^2 P = k w^2 (I - X X^T), so k = (identity part) / w^2.
    span = TokenSpan(sp.Matrix([[1]]), d)
    w = sp.Symbol("w", positive=True)
    (x,) = span.tokens()
    sde = derive_limit_span(span, [x * w])
    c = sp.factor(sp.cancel(sde.drift[0].coeffs[0].subs(mu, 0) / w**2))
    k = sp.factor(sp.cancel(sde.covariance[0, 0].scalar / w**2))
    return {"normal_drift": ((d, eps), c), "covariance_coefficient": ((eps,), k)}


@functools.cache
def limit_coefficients(backend: str = "numpy") -> LimitCoefficients:
    """Lambdified Theorem-1 coefficients (see :class:`LimitCoefficients`).

    Examples
    --------
    >>> float(limit_coefficients("numpy").normal_drift(3, 2.0))
    -4.0
    """
    return LimitCoefficients(**_lambdify_all(limit_expressions(), backend))


@functools.cache
def formation_expressions() -> dict:
    """The SymPy expressions behind :func:`formation_coefficients`."""
    import sympy as sp

    from .formation import formation_lyapunov_minus, formation_threshold
    from .stability import in_beta
    from .symbols import beta, d, eps, k_cluster, mu, n_tokens

    eps2, denominator = formation_threshold()
    threshold = sp.Piecewise((in_beta(eps2), in_beta(denominator) > 0), (sp.oo, True))
    args = (beta, d, n_tokens, k_cluster)
    return {
        "lyapunov_minus": ((*args, eps, mu), in_beta(formation_lyapunov_minus())),
        "threshold_eps2": ((*args, mu), threshold),
    }


@functools.cache
def formation_coefficients(backend: str = "numpy") -> dict:
    r"""Lambdified formation quantities of :mod:`proofs_check.formation`:
    ``lyapunov_minus(beta, d, n, k, eps, mu)`` and ``threshold_eps2(beta, d, n, k, mu)``
    (``inf`` where the inter-cluster mode repels for every :math:`\varepsilon`). The
    derivation runs on the first call (a few seconds) and is cached.
    """
    return _lambdify_all(formation_expressions(), backend)


@functools.cache
def cluster_certificate_expressions() -> dict:
    """The SymPy expressions behind :func:`cluster_certificate`."""
    from .cluster import certificate_bounds, gap, n_tokens, p_exponent
    from .symbols import beta, d, eps, mu

    bounds = certificate_bounds()
    args = (gap, p_exponent, n_tokens, beta, d, eps, mu)
    return {
        "below_one": (args, bounds["B_low"]),
        "from_one": (args, bounds["B_high"]),
        "g": ((gap, n_tokens, beta), bounds["g"]),
        "p_max": ((d, eps, mu), bounds["p_max"]),
    }


@functools.cache
def cluster_certificate(backend: str = "numpy") -> dict:
    r"""Lambdified certificate of :mod:`proofs_check.cluster`: ``below_one(V, p, n, beta, d,
    eps, mu)`` and ``from_one(...)``, the bound :math:`B_p(V)` on
    :math:`\mathcal L V^p / (p V^p)` for :math:`p < 1` (valid where ``g(V, n, beta) > 0``)
    and :math:`p \ge 1`; ``p_max(d, eps, mu)``, the linear bound on the exponent. A
    certificate :math:`(v_1, p)` holds when :math:`B_p(v_1) \le 0` (:math:`B_p` increases in
    :math:`V`).

    Examples
    --------
    >>> float(cluster_certificate()["p_max"](3, 1.0, 1.0))
    2.0
    """
    return _lambdify_all(cluster_certificate_expressions(), backend)


@functools.cache
def tightness_certificate_expressions() -> dict:
    """The SymPy expressions behind :func:`tightness_certificate`."""
    from .symbols import beta, d, eps, mu
    from .two_clusters import (
        alignment,
        attention_bounds,
        attention_perturbation,
        certificate_bounds,
        level,
        lipschitz,
        other,
        own,
        x_f,
        x_g,
        x_s,
    )

    bounds = certificate_bounds()
    attention = attention_bounds()
    args = (lipschitz, alignment, level, d, eps, mu)
    return {
        "h": (args, bounds["h"]),
        "g2": (args, bounds["g2"]),
        "G2": (args, bounds["G2"]),
        "K": ((x_f, x_g, x_s, level, beta, own, other), attention["K"]),
        "a": ((x_f, x_g, level, beta, own, other), attention["a"]),
        "attention_perturbation": ((level, beta), attention_perturbation()),
    }


@functools.cache
def tightness_certificate(backend: str = "numpy") -> dict:
    r"""Lambdified certificate of :mod:`proofs_check.two_clusters`: ``h``, ``g2``, ``G2``
    of ``(K, a, v, d, eps, mu)`` (:math:`B_p = h + \frac{p-1}{2}\varepsilon^2 g^2` for
    :math:`p < 1`, with ``G2`` for :math:`p \ge 1`); the cell bounds ``K(x_f, x_g, x_s, v,
    beta, m, m_o)`` and ``a(x_f, x_g, v, beta, m, m_o)`` of the attention; and
    ``attention_perturbation(v, beta)``.

    Examples
    --------
    >>> c = tightness_certificate()
    >>> float(c["h"](0.0, 1.0, 0.0, 3, 1.0, 0.0))
    0.0
    """
    return _lambdify_all(tightness_certificate_expressions(), backend)


#: The chains whose one-layer expansion :mod:`proofs_check.finite_depth` derives.
CHAINS = ("network", "reduced")


@functools.cache
def finite_depth_expressions() -> dict:
    r"""The SymPy expressions behind :func:`finite_depth_coefficients`: for each chain,
    ``(arguments, [c_1, c_2, c_3, c_4])`` of :math:`\mathcal L_1 = \sum_k c_k\partial_z^k`
    in :math:`z = \operatorname{artanh}\rho`, written through ``rho = tanh z`` and
    ``r = exp(-beta (1 - rho))``."""
    import sympy as sp

    from .finite_depth import network_z_operator, reduced_z_operator
    from .symbols import beta, d, eps, mu, r, rho, z
    from .two_token import r_of_rho

    def in_z(expr):
        return expr.subs(r, r_of_rho()).subs(rho, sp.tanh(z))

    zargs = (z, beta, d, eps, mu)
    return {name: (zargs, [in_z(c) for c in operator()])
            for name, operator in zip(CHAINS, (network_z_operator, reduced_z_operator),
                                      strict=True)}


@functools.cache
def finite_depth_coefficients(backend: str = "numpy") -> dict:
    r"""Lambdified :math:`\mathcal L_1` of one layer (:mod:`proofs_check.finite_depth`), in
    ``z``: ``{"network": f, "reduced": f}``, ``f(z, beta, d, eps, mu)`` the list
    :math:`[c_1, c_2, c_3, c_4]` (a coefficient that vanishes identically is the scalar 0).
    The chain after :math:`TL` layers has the law :math:`P + C/L + O(L^{-2})`,
    :math:`(\partial_t + \mathcal L)C = -\mathcal L_1 P`, :math:`C(T) = 0`. The derivation
    runs on the first call and is cached.
    """
    return _lambdify_all(finite_depth_expressions(), backend)
