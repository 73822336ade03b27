r"""Exact probability that two tokens end antipodal, by quadrature of the scale function.

With :math:`2m/s^2 = g(\rho)/(1-\rho^2)`, the scale density is
:math:`S'(x) = (1-x)^{g(1)/2}(1+x)^{-g(-1)/2}e^{-F(x)}` with :math:`F` smooth, and
:math:`P(\rho_t \to -1 \mid \rho_0) = \int_{\rho_0}^1 S' / \int_{-1}^1 S'` when
:math:`g(-1) < 2`, else 0 (:math:`S(-1) = -\infty`: the antipodal state is never
reached). The integral is a composite Gauss--Legendre rule on panels graded
geometrically toward both ends (where small noise or large :math:`\beta` put sharp
boundary layers), evaluated in log space; on the two end panels the endpoint powers
are integrated exactly by *product integration*:
:math:`\int_0^1 t^s f(t)\,dt \approx \sum_k c_k m_k(s)`, with :math:`c_k` the
shifted-Legendre coefficients of the smooth factor and the exact moments
:math:`m_k(s) = \int_0^1 t^s \tilde P_k = \frac{s(s-1)\cdots(s-k+1)}{(s+1)\cdots(s+k+1)}`
(a Gauss--Jacobi rule with the same exponents would need new nodes for every
parameter; these nodes are shared, so a whole grid is a few array operations).
:math:`F` is the running integral of its smooth integrand, panel by panel. The tests
check the result against ``scipy.integrate.quad`` with ``weight="alg"`` at tight
tolerances (agreement ~1e-12) and against refined rules (changes below 1e-8 down to
hybrid noise :math:`\varepsilon = 0.02`): far inside the 1e-4 asked for.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import special

from ... import _checks
from ..._typing import FloatNumpy, RealGrid
from ._coefficients import noise_scale, rc


@functools.cache
def _rule(nodes: int):
    """Gauss--Legendre on [0, 1]: nodes ``t``, weights ``w``, ``P_k(2t-1)`` as ``(k, node)``
    and the matrix ``I`` with ``int_0^{t_j} f = sum_k I[j, k] f(t_k)`` (exact for degree < m)."""
    x, w = np.polynomial.legendre.leggauss(nodes)
    legendre = np.polynomial.legendre.legvander(x, nodes).T  # degrees 0..m at the nodes
    k = np.arange(nodes)[:, None]
    # int_{-1}^{x} P_k = (P_{k+1} - P_{k-1}) / (2k+1), and x + 1 for k = 0; halved for [0, 1]
    antiderivative = np.vstack([legendre[1] + 1,
                                (legendre[2:] - legendre[:-2]) / (2 * k[1:] + 1)]) / 2
    transform = (2 * k + 1) / 2 * legendre[:-1] * w  # f -> Legendre coefficients
    return (x + 1) / 2, w / 2, legendre[:-1], antiderivative.T @ transform


def _product_weights(s, nodes: int):
    r"""Weights ``W(s)`` with :math:`\int_0^1 t^s f(t)\,dt \approx \sum_j W_j f(t_j)`, exact
    for polynomial ``f`` of degree < ``nodes``; ``s`` any array with ``s > -1``."""
    _, w, legendre, _ = _rule(nodes)
    s = np.asarray(s, float)[..., None]
    k = np.arange(1, nodes)
    ratios = (s - k + 1) / (s + k + 1)
    moments = np.concatenate([1 / (s + 1), (1 / (s + 1)) * np.cumprod(ratios, axis=-1)], axis=-1)
    return ((2 * np.arange(nodes) + 1) * moments) @ legendre * w


@functools.cache
def _breakpoints(grading: int, middle: int) -> np.ndarray:
    """Panel ends on [-1, 1]: geometric toward both ends (the solution's boundary layers
    and the endpoint powers), uniform in the middle."""
    ends = 1 - 0.5 ** np.arange(1, grading + 1)
    return np.unique(np.concatenate([-ends, np.linspace(-0.5, 0.5, middle + 1), ends, [-1, 1]]))


def antipodal_probability(beta: RealGrid, d: RealGrid, *, rho0: RealGrid | None = None,
                          sigma: RealGrid = 1.0, mu: RealGrid = 0.0, eps: RealGrid | None = None,
                          nodes: int = 16, grading: int = 30,
                          middle: int = 8) -> FloatNumpy:
    r"""Exact probability that two tokens end antipodal, :math:`P(\rho_t \to -1)`.

    From the scale function of the :math:`\rho`-diffusion (the method below); exactly 0
    where :math:`g(-1) \ge 2`, i.e. where the antipodal state does not attract (pure
    noise: :math:`\beta \le \beta_c(d)`). All arguments broadcast, so a whole
    :math:`(d, \beta)` grid is one call.

    Parameters
    ----------
    beta, d
        Inverse temperature and dimension (``d >= 2``).
    rho0
        Initial inner product; ``None`` averages over two independent uniform tokens,
        :math:`\rho_0 = 2B - 1`, :math:`B \sim \mathrm{Beta}(\tfrac{d-1}{2}, \tfrac{d-1}{2})`.
    sigma
        Pure-noise scale (used when ``eps`` is None).
    mu, eps
        Hybrid model :math:`V = (\mu/\sqrt L) I + \varepsilon G` (``eps > 0``).
    nodes, grading, middle
        Gauss--Legendre nodes per panel; number of geometric panels toward each end
        (the end panels, of width :math:`2^{-\text{grading}}`, carry the exact endpoint
        powers); uniform panels on :math:`[-1/2, 1/2]`.

    Returns
    -------
    numpy.ndarray
        Probabilities, broadcast shape of the arguments.
    """
    _checks.two_tokens(beta, d, sigma=sigma, mu=mu, eps=eps, rho0=rho0)
    if not 1 <= grading <= 40:
        raise ValueError("grading must be in 1..40 (finer end panels round to the endpoint)")
    e = noise_scale(sigma, eps)
    arrays = np.broadcast_arrays(*(np.asarray(v, float) for v in (beta, d, e, mu)),
                                 np.asarray(0.0 if rho0 is None else rho0, float))
    shape = arrays[0].shape
    beta, d, e, mu, r0 = (a.reshape(-1, 1, 1) for a in arrays)
    if np.any(e <= 0):
        raise ValueError("the noise scale must be positive (eps = 0 is deterministic)")
    if np.any(d < 2):
        raise ValueError("d must be >= 2")
    coefficients = rc()

    def g(x):
        return coefficients.scale_g(x, beta, d, e, mu)

    g_plus, g_minus = g(1.0), g(-1.0)
    alpha, b = g_plus / 2, -g_minus / 2  # S' = (1 - x)^alpha (1 + x)^b exp(-F)
    attracting = g_minus < 2
    b = np.where(attracting, b, 0.0)  # placeholder where the answer is 0 anyway
    uniform = rho0 is None
    # rho0 = +-1 are equilibria (answered at the end); 0 stands in as a harmless cut.
    start = np.where(np.abs(r0) < 1, r0, 0.0)

    # Panels (batch, P, 1): the fixed breakpoints plus rho0, so that the tail integral
    # from rho0 is a sum over whole panels.
    base = _breakpoints(grading, middle)
    cuts = np.sort(np.concatenate([np.broadcast_to(base, (start.shape[0], base.size)),
                                   start[:, :, 0]], axis=1), axis=1)[..., None]
    left, width = cuts[:, :-1], np.diff(cuts, axis=1)
    t, w, _, integrate = _rule(nodes)
    x = left + width * t  # (batch, P, m)

    # F (up to a constant) from the smooth integrand: panel sums plus partial integrals.
    h = (g(x) - g_plus * (1 + x) / 2 - g_minus * (1 - x) / 2) / ((1 - x) * (1 + x))
    panel = width[..., 0] * (h @ w)
    F = (np.cumsum(panel, axis=1) - panel)[..., None] + width * (h @ integrate.T)

    # log of S' split by panel kind; the first / last panel integrate the endpoint
    # power exactly (product weights) and keep only the smooth factor here.
    log_lo, log_hi = np.log1p(x), np.log1p(-x)
    log_s = alpha * log_hi + b * log_lo - F
    # and the end panel's width^(power + 1), so that the rescaling below sees true sizes
    log_s[:, 0] += b[:, 0] * (np.log(width[:, 0]) - log_lo[:, 0]) + np.log(width[:, 0])
    log_s[:, -1] += alpha[:, 0] * (np.log(width[:, -1]) - log_hi[:, -1]) + np.log(width[:, -1])
    log_s -= np.max(log_s, axis=(1, 2), keepdims=True)  # the scale cancels in the ratio
    smooth = np.exp(log_s)

    def end_weights(s, which):
        # int over an end panel of |x -+ 1|^s f = width^(s+1) sum_j W_j(s) f(t_j from the
        # end); width^(power + 1) of S' is already in `smooth`, the rest (>= 0) is here
        power = b if which == 0 else alpha
        wid = width[:, which]
        weights = wid ** (s[:, 0] - power[:, 0]) * _product_weights(s[:, 0, 0], nodes)
        return weights if which == 0 else weights[:, ::-1]

    weights = width * w  # (batch, P, m); the end panels' width is in `smooth`
    weights[:, 0] = end_weights(b, 0)
    weights[:, -1] = end_weights(alpha, -1)
    pieces = smooth * weights
    total = pieces.sum(axis=(1, 2))
    if uniform:
        a = (d[:, 0, 0] - 1) / 2

        def reduced_cdf(y):  # CDF(y) / (1 + y)^a, smooth near y = -1
            return special.betainc(a[:, None], a[:, None], (1 + y) / 2) / (1 + y) ** a[:, None]

        cdf = special.betainc(a[:, None, None], a[:, None, None], (1 + x) / 2)
        inner = (pieces[:, 1:-1] * cdf[:, 1:-1]).sum(axis=(1, 2))
        a3 = a[:, None, None]
        lower = (end_weights(b + a3, 0) * smooth[:, 0] * reduced_cdf(x[:, 0])).sum(axis=1)
        upper = pieces[:, -1].sum(axis=1) - (
            end_weights(alpha + a3, -1) * smooth[:, -1] * reduced_cdf(-x[:, -1])).sum(axis=1)
        p = (inner + lower + upper) / total
    else:
        p = np.where(left >= start, pieces, 0.0).sum(axis=(1, 2)) / total
        p = np.where(r0[:, 0, 0] <= -1, 1.0, np.where(r0[:, 0, 0] >= 1, 0.0, p))
    p = np.where(attracting[:, 0, 0], np.clip(p, 0.0, 1.0), 0.0)
    return p.reshape(shape)


__all__ = ["antipodal_probability"]
