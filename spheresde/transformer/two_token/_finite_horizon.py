r"""Outcome probabilities of two tokens at a finite depth-time, from the Kolmogorov equation.

At the horizon :math:`T` the pair is classified by :func:`spheresde.classify_rho`:
antipodal if :math:`\rho_T < -(1-\mathrm{tol})`, single if :math:`\rho_T > 1-\mathrm{tol}`,
undecided otherwise. In :math:`z = \operatorname{artanh}\rho` (:func:`proofs_check.two_token.
derive_z_sde`) the SDE :math:`dz = b\,dt + v\,dB` has bounded coefficients that tend to
constants as :math:`z\to\pm\infty`, the thresholds are :math:`\pm z_*`,
:math:`z_* = \operatorname{artanh}(1-\mathrm{tol})`, and the probability of an outcome
:math:`O` from :math:`z_0` is :math:`u(T, z_0)` with :math:`\partial_t u = \mathcal L u`,
:math:`u(0) = 1_O`. The generator is self-adjoint for the speed measure:

.. math:: \mathcal L u = \frac{1}{m(z)}\big(e^{\psi} u'\big)', \qquad
          \psi' = \frac{2b}{v^2}, \quad m = \frac{2e^{\psi}}{v^2}

(``z_scale_rate`` of :mod:`proofs_check.export` is :math:`\psi'`).

**Scheme.** Cell-centred finite volumes with exponentially fitted (Scharfetter--Gummel)
fluxes: between two centres :math:`e^\psi u'` is taken constant, so the flux is
:math:`(u_{i+1}-u_i)/\int_{z_i}^{z_{i+1}} e^{-\psi}` (exact for Brownian motion with
drift, which is what the far field is); cell weights :math:`\int_{\text{cell}} m`. Both
integrals use :math:`\psi` piecewise linear through centres and faces, itself integrated
from :math:`\psi'` by Gauss--Legendre. Zero flux at the outer faces, so mass is conserved.
The matrix is :math:`A = W^{-1}F` with :math:`F` symmetric tridiagonal: :math:`S =
W^{-1/2}FW^{-1/2}` has an orthonormal eigenbasis (``scipy.linalg.eigh_tridiagonal``)
and :math:`u(T) = W^{-1/2}Q e^{T\Lambda}Q^\top W^{1/2}u(0)` is exact in time, for any
horizon. All in log space: :math:`\psi` only enters through differences.

If :math:`\psi` varies by more than the floating-point range between the start and an
outcome (small hybrid noise), the rounding bound of the eigenbasis sums exceeds
``ROUNDING`` and :math:`e^{TA}` is taken densely (``scipy.linalg.expm``, slower, stable:
a stochastic matrix).

**Grid and accuracy.** Cells are uniform (:math:`h = z_*/N`) on :math:`[-z_*, z_*]` (the
thresholds are faces, so :math:`1_O` is exact) and grow geometrically outside (a smooth
map of a uniform grid, so the error expands in :math:`h^2`); the result is the
Richardson extrapolation :math:`(4p_{h/2} - p_h)/3`. :math:`|p_{h/2} - p_h|/3`, the
error of the finer level, is a conservative bound on the extrapolated value's (measured
10 to 100 times larger; ``return_error`` reports it); while it exceeds ``REFINE`` the grids
are halved again (sharp layers of small hybrid noise). The start is averaged against
the exact cell masses of the uniform law (:math:`\rho_0 = 2B-1`,
:math:`B\sim\mathrm{Beta}(\tfrac{d-1}2,\tfrac{d-1}2)`), or a cubic interpolation at
:math:`z_0`. **Truncation.** Beyond :math:`\pm(z_* + D)` the boundary reflects; a path
it changes must cross the far field (a Brownian motion with drift :math:`c`, variance
:math:`v^2`) out and back within :math:`T`: :math:`D` is the smaller of
:math:`\frac{v^2}{2|c|}\log\frac{1+2c^2T/v^2}{\delta}` (the return against the drift, at
most :math:`1 + 2c^2T/v^2` attempts) and :math:`v\sqrt T\,\bar\Phi^{-1}(\delta/4)`
(driftless spread), :math:`\delta = 10^{-9}`. The tests check the stated accuracy,
:math:`10^{-5}` absolute, against refined grids, Monte Carlo, the :math:`T\to\infty`
scale-function values and the exact law at :math:`T = 0`.

**Finite depth** (``layers=L``). The chain with :math:`L` steps per unit time has the law
:math:`P + C/L + O(L^{-2})` (Talay--Tubaro), :math:`C = \int_0^T E[(\mathcal L_1
P(t,\cdot))(z_t)]\,dt` with :math:`\mathcal L_1 = \sum_{k\le4} c_k\partial_z^k` from
:func:`proofs_check.export.finite_depth_coefficients` (the network, or the reduced Euler
chain). On each grid level :math:`\mathcal L_1` is a matrix of five-point stencils on the
centres (the derivatives of the quartic through the five nearest), and the time integral
is exact: :math:`\int_0^T e^{tA}\mathcal L_1 e^{(T-t)A}dt` is the upper-right block of
the exponential of :math:`T[\begin{smallmatrix}A & \mathcal L_1\\ 0 & A
\end{smallmatrix}]` (Van Loan), by scaling and squaring of the block-triangular form.
:math:`C` is extrapolated like :math:`P` on the same two grids (which follow the error of
:math:`P`; the error of :math:`C/L` is reported in ``return_error``). Dense matrices: a
point costs about a second instead of milliseconds.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
from scipy import linalg, special

from proofs_check.export import CHAINS, finite_depth_coefficients

from ... import _checks
from ..._typing import RealGrid
from .._outcomes import DEFAULT_TOL, OutcomeFractions
from .._rho import outcome_threshold
from ._coefficients import noise_scale, rc
from ._exact import antipodal_probability
from ._extent import far_extent

#: Uniform cells per threshold half-width z_* on the coarse level (the fine level doubles).
CELLS = 24
#: Grids are halved again while the error estimate of the finer level exceeds this ...
REFINE = 1e-4
#: ... up to this many coarse cells per half-width.
MAX_CELLS = 192
#: Length scale (in z) over which the cells outside the thresholds double in size (roughly).
STRETCH = 3.0
#: Rounding allowed in the eigenbasis before the dense propagator is used instead.
ROUNDING = 1e-8
#: Beyond this |z| the coefficients are their limits to rounding (they converge like e^{-2|z|}).
FAR = 20.0
#: The first-order law warns where |C/L| exceeds this fraction of min(P, 1 - P) of an outcome.
FIRST_ORDER_LIMIT = 0.25
#: The two laws of a finite depth ``layers=L``.
LAWS = ("first-order", "exact")


class FirstOrderWarning(UserWarning):
    """The first-order law P + C/L is not accurate here: its correction is not small
    against P (or it was clipped into [0, 1]); ``law="exact"`` gives the chain's law."""


@functools.cache
def _gauss(nodes: int = 4):
    x, w = np.polynomial.legendre.leggauss(nodes)
    return (x + 1) / 2, w / 2


def _grid(z_star, cells, far_minus, far_plus):
    """Faces: uniform (z_* / cells) on [-z_*, z_*], then z = z_* + s (e^{x/s} - 1) beyond."""
    h = z_star / cells

    def outer(extent):
        x_end = STRETCH * np.log1p(extent / STRETCH)
        x = h * np.arange(1, int(np.ceil(x_end / h)) + 1)
        return z_star + STRETCH * np.expm1(x / STRETCH)

    middle = np.linspace(-z_star, z_star, 2 * cells + 1)
    return np.concatenate([-outer(far_minus)[::-1], middle, outer(far_plus)])


def _log_segment(length, a, b):
    r"""log of :math:`\int` over a segment of ``length`` of :math:`e^{\ell}`, :math:`\ell`
    linear from ``a`` to ``b``: ``length e^a (e^{b-a} - 1)/(b-a)``, overflow-free."""
    y = b - a
    small = np.abs(y) < 1e-8
    safe = np.where(small, 1.0, y)
    ratio = np.where(y > 0, safe + np.log(-np.expm1(-safe) / safe), np.log(np.expm1(safe) / safe))
    return np.log(length) + a + np.where(small, y / 2, ratio)


def _operator(faces, coefficients, args):
    """Symmetric tridiagonal S (diagonal, off-diagonal), the log resistances 1/K between
    neighbouring centres, the log cell weights and the centres."""
    centres = (faces[:-1] + faces[1:]) / 2
    points = np.empty(2 * centres.size + 1)  # face, centre, face, ..., face
    points[0::2], points[1::2] = faces, centres
    t, w = _gauss()
    nodes = points[:-1, None] + np.diff(points)[:, None] * t
    rate = coefficients.z_scale_rate(np.clip(nodes, -FAR, FAR), *args)
    psi = np.concatenate([[0.0], np.cumsum(np.diff(points) * (rate @ w))])
    v2 = coefficients.z_diffusion(np.clip(centres, -FAR, FAR), *args) ** 2
    psi_f, psi_c = psi[0::2], psi[1::2]
    half_l, half_r = centres - faces[:-1], faces[1:] - centres
    log_weight = np.log(2 / v2) + np.logaddexp(_log_segment(half_l, psi_f[:-1], psi_c),
                                               _log_segment(half_r, psi_c, psi_f[1:]))
    # 1 / flux coefficient = int of e^{-psi} between neighbouring centres
    log_conductance = -np.logaddexp(_log_segment(half_r[:-1], -psi_c[:-1], -psi_f[1:-1]),
                                    _log_segment(half_l[1:], -psi_f[1:-1], -psi_c[1:]))
    off = np.exp(log_conductance - (log_weight[:-1] + log_weight[1:]) / 2)
    out_right = np.exp(log_conductance - log_weight[:-1])
    out_left = np.exp(log_conductance - log_weight[1:])
    diagonal = -np.concatenate([out_right, [0.0]]) - np.concatenate([[0.0], out_left])
    return diagonal, off, -log_conductance, log_weight, centres


def _start_weights(faces, centres, d, z0):
    """Weights a with sum_i a_i u_i = E u(z_0): exact cell masses of the uniform start, or
    cubic Lagrange interpolation at z0 in the cell index (a smooth map of the grid)."""
    if z0 is None:
        half = (d - 1) / 2
        cdf = special.betainc(half, half, (1 + np.tanh(faces)) / 2)
        cdf[0], cdf[-1] = 0.0, 1.0  # the mass beyond the walls stays at the walls
        return np.diff(cdf)
    k = int(np.clip(np.searchsorted(centres, z0) - 2, 0, centres.size - 4))
    local = centres[k:k + 4]
    weights = np.zeros(centres.size)
    for j in range(4):
        others = np.delete(local, j)
        weights[k + j] = np.prod((z0 - others) / (local[j] - others))
    return weights


def _solve(beta, d, e, mu, tol, horizon, z0, cells, chain=None, coefficients=None,
           sphere=None):
    """(antipodal, single, undecided) on one grid level; with a ``chain``, two rows: that
    and the first-order correction ``C`` of the chain's law (module docstring).

    ``coefficients``: the z-SDE (``z_drift``, ``z_diffusion``, ``z_scale_rate`` of
    ``(z, beta, d, e, mu)``), the paper's (:func:`rc`) by default; ``sphere``: the
    dimension ``k`` of the sphere :math:`S^{k-1}` the uniform start lives on (``d``)."""
    coefficients = rc() if coefficients is None else coefficients
    args = (beta, d, e, mu)
    z_star = outcome_threshold(tol)
    extents = []
    for side in (-1.0, 1.0):
        c = float(coefficients.z_drift(side * FAR, *args))
        v2 = float(coefficients.z_diffusion(side * FAR, *args)) ** 2
        extent = far_extent(c, v2, horizon)
        if z0 is not None:
            extent = max(extent, side * z0 - z_star + 5.0)
        extents.append(max(extent, 5.0))
    faces = _grid(z_star, cells, *extents)
    diagonal, off, log_resistance, log_weight, centres = _operator(faces, coefficients, args)
    start = _start_weights(faces, centres, d if sphere is None else sphere, z0)
    eigenvalues, vectors = linalg.eigh_tridiagonal(diagonal, off)
    eigenvalues = np.minimum(eigenvalues, 0.0)  # the zero mode may round above 0
    # u(T) = W^{-1/2} Q e^{T Lambda} Q^T W^{1/2} u(0); the start side of it:
    shift = np.max(log_weight)
    start_scaled = start * np.exp((shift - log_weight) / 2)
    left = start_scaled @ vectors
    rounding = []

    def evolve(log_values, sign, horizon_function):
        """start . (horizon_function(A) values), values = sign * exp(log_values)."""
        scaled = sign * np.exp(log_values + (log_weight - shift) / 2)
        # |sum_k a_k f(lambda_k) b_k| <= |a| |b| max f: its rounding is eps times that
        rounding.append(np.linalg.norm(start_scaled) * np.linalg.norm(scaled)
                        * np.max(horizon_function(eigenvalues)))
        return float((left * horizon_function(eigenvalues)) @ (vectors.T @ scaled))

    def at_horizon(lam):
        return np.exp(horizon * lam)

    def integrated(lam):  # int_0^T e^{s lam} ds
        small = lam * horizon > -1e-12
        return np.where(small, horizon, np.expm1(horizon * lam) / np.where(small, -1.0, lam))

    antipodal = centres < -z_star
    middle = ~antipodal & (centres <= z_star)
    undecided = evolve(np.where(middle, 0.0, -np.inf), 1.0, at_horizon)
    # 1_antipodal is ~1 deep in the left end, where the weights W are exponentially large
    # (the speed measure of an attracting end): taken directly through the eigenbasis its
    # rounding errors grow like W^{1/2}. Write it as h + (1 - h) 1_antipodal - h 1_other
    # with h = P(reach the left wall first), the discrete harmonic function: h is ~1 where
    # W is large on the left and ~W^{-1} on the right, so every vector that goes through
    # the eigenbasis is O(W^{-1/2}) at the ends. E h(z_T) = h(z_0) + E int_0^T (A h)(z_s) ds,
    # and A h vanishes except in the two wall cells.
    log_total = np.logaddexp.reduce(log_resistance)
    tail = np.logaddexp.accumulate(log_resistance[::-1])[::-1] - log_total
    head = np.logaddexp.accumulate(log_resistance) - log_total
    log_h = np.concatenate([tail, [-np.inf]])  # h = 1 at the left wall, 0 at the right
    log_one_minus_h = np.concatenate([[-np.inf], head])
    wall = np.full(centres.size, -np.inf)
    wall[0], wall[-1] = -log_total - log_weight[0], -log_total - log_weight[-1]
    wall_sign = np.zeros(centres.size)
    wall_sign[0], wall_sign[-1] = -1.0, 1.0
    antipodal_p = (float(start @ np.exp(log_h))
                   + evolve(wall, wall_sign, integrated)
                   + evolve(np.where(antipodal, log_one_minus_h, log_h),
                            np.where(antipodal, 1.0, -1.0), at_horizon))
    if np.finfo(float).eps * centres.size * sum(rounding) > ROUNDING:
        # psi varies by far more than the float range between where the start and an
        # outcome sit (small hybrid noise): the eigenbasis cannot carry it, the
        # (stochastic, non-negative) propagator itself can.
        law = _dense_propagator(log_resistance, log_weight, start, horizon,
                                (antipodal, middle, centres > z_star))
    else:
        law = np.array([antipodal_p, 1.0 - antipodal_p - undecided, undecided])
    if chain is None:
        return law
    # in the order of the returned probabilities: antipodal, single, undecided
    indicators = np.stack([antipodal, centres > z_star, middle], axis=1).astype(float)
    sandwich = _sandwich(_rates(log_resistance, log_weight),
                         _correction_operator(centres, chain, args), horizon)
    return np.stack([law, start @ (sandwich @ indicators)])


def _dense_propagator(log_resistance, log_weight, start, horizon, outcomes):
    """The same scheme through expm(T A), A = W^{-1} F (rates, no similarity transform)."""
    indicators = np.stack(outcomes, axis=1).astype(float)
    rates = _rates(log_resistance, log_weight)
    antipodal, undecided, single = start @ (linalg.expm(horizon * rates) @ indicators)
    return np.array([antipodal, single, undecided])


def _rates(log_resistance, log_weight):
    """The dense generator A = W^{-1} F of the scheme (rates, no similarity transform)."""
    up = np.exp(-log_resistance - log_weight[:-1])  # rate i -> i + 1
    down = np.exp(-log_resistance - log_weight[1:])  # rate i + 1 -> i
    rates = np.diag(up, 1) + np.diag(down, -1)
    return rates - np.diag(rates.sum(axis=1))


def _derivative_weights(centres):
    """Weights of d^k/dz^k (k = 1..4) at each centre on its five nearest centres: the
    derivatives of the quartic through them (exact for quartics on any spacing).
    Returns the stencil indices (n, 5) and the weights (4, n, 5)."""
    n = centres.size
    index = np.clip(np.arange(n) - 2, 0, n - 5)[:, None] + np.arange(5)
    offsets = centres[index] - centres[:, None]
    powers = np.arange(5)
    # V[i, j, m] = offset_m^j / j!: V w = e_k gives the weights of the k-th derivative
    vandermonde = offsets[:, None, :] ** powers[None, :, None] / special.factorial(powers)[
        None, :, None]
    inverse = np.linalg.inv(vandermonde)
    return index, np.moveaxis(inverse[:, :, 1:], 2, 0)


def _correction_operator(centres, chain, args):
    r"""The dense matrix of :math:`\mathcal L_1 = \sum_k c_k(z)\partial_z^k` on the centres."""
    coefficients = finite_depth_coefficients("numpy")[chain](np.clip(centres, -FAR, FAR), *args)
    index, weights = _derivative_weights(centres)
    rows = np.zeros((centres.size, 5))
    for c, w in zip(coefficients, weights, strict=True):
        rows += np.broadcast_to(np.asarray(c, float), centres.shape)[:, None] * w
    out = np.zeros((centres.size, centres.size))
    np.add.at(out, (np.arange(centres.size)[:, None], index), rows)
    return out


def _sandwich(rates, source, horizon):
    r""":math:`\int_0^T e^{tA} B e^{(T-t)A}\,dt`, the upper-right block of
    :math:`\exp(T[\begin{smallmatrix}A & B\\ 0 & A\end{smallmatrix}])` (Van Loan):
    the exponential at :math:`T/2^k`, then :math:`k` squarings of the block-triangular
    form, :math:`(E, F) \to (E^2, EF + FE)`."""
    n = rates.shape[0]
    block = np.block([[rates, source], [np.zeros_like(rates), rates]])
    squarings = max(0, int(np.ceil(np.log2(max(horizon * np.abs(block).sum(axis=1).max(),
                                                   1.0)))))
    small = linalg.expm(horizon / 2**squarings * block)
    e, f = small[:n, :n], small[:n, n:]
    for _ in range(squarings):
        e, f = e @ e, e @ f + f @ e
    return f


def _check_first_order(law, correction, total, beta, d, layers, horizon):
    """Warn (:class:`FirstOrderWarning`) where P + C/L is not a small correction of P."""
    small = np.maximum(FIRST_ORDER_LIMIT * np.minimum(law, 1 - law), 1e-5)
    clipped = np.any((total < 0) | (total > 1))
    if np.any(np.abs(correction) > small) or clipped:
        warnings.warn(
            f"the first-order law P + C/L at beta = {beta:g}, d = {d:g}, L = {layers}, "
            f"T = {horizon:g}: C/L = {np.round(correction, 5)} is not small against P = "
            f"{np.round(law, 5)} (antipodal, single, undecided)"
            f"{'; it was clipped into [0, 1]' if clipped else ''}. "
            "Pass law='exact' for the network's own law at this depth.",
            FirstOrderWarning, stacklevel=3)


def refined_law(args, tol, horizon, z0=None, layers=None, chain=None, coefficients=None,
                sphere=None):
    """The Kolmogorov law (antipodal, single, undecided) of one point, the grids halved
    until the Richardson error estimate is below ``REFINE``, extrapolated: rows the law
    and, with ``layers`` and a ``chain``, its correction ``C / L``; and the error estimate.
    ``args`` are ``(beta, d, e, mu)`` of ``coefficients`` (:func:`_solve`)."""
    cells = CELLS
    # rows: the limit's law, then (with layers) the correction C, which enters / L
    scale = np.array([1.0, 1.0 if layers is None else 1.0 / layers])[:, None]
    coarse = np.atleast_2d(_solve(*args, tol, horizon, z0, cells, chain, coefficients, sphere))
    while True:
        fine = np.atleast_2d(_solve(*args, tol, horizon, z0, 2 * cells, chain, coefficients,
                                    sphere))
        errors = np.abs(fine - coarse) * scale[:len(fine)] / 3
        # the grids follow the law's error; the correction's (far below 1/L at the
        # accuracy asked of the law) is reported, not refined
        if np.max(errors[0]) <= REFINE or cells >= MAX_CELLS:
            break
        cells, coarse = 2 * cells, fine
    return (4 * fine - coarse) / 3 * scale[:len(fine)], float(np.max(errors))


def outcome_probabilities(beta: RealGrid, d: RealGrid, *, horizon: RealGrid,
                          tol: float = DEFAULT_TOL, sigma: RealGrid = 1.0, mu: RealGrid = 0.0,
                          eps: RealGrid | None = None, rho0: RealGrid | None = None,
                          layers: int | None = None, chain: str = "network",
                          law: str = "first-order", return_error: bool = False):
    r"""Probabilities that two tokens are antipodal, single or undecided at depth-time ``horizon``.

    The law of the limit :math:`\rho`-SDE (Ito; pure noise :math:`\sigma`, or the hybrid
    :math:`(\mu, \varepsilon)`), classified at :math:`T` as :func:`spheresde.classify_rho`
    does. ``horizon=inf`` gives :func:`antipodal_probability` (nothing is undecided). The
    Kolmogorov equation is solved exactly in time and to about :math:`10^{-6}` absolute in
    space (the module docstring gives the method; the stated accuracy is :math:`10^{-5}`).
    All arguments but ``tol`` broadcast; each point costs two tridiagonal
    eigendecompositions of a few hundred cells (milliseconds).

    Parameters
    ----------
    beta, d
        Inverse temperature and dimension (``d >= 2``).
    horizon
        Depth-time :math:`T \ge 0` (``numpy.inf``: the limit).
    tol
        Outcome tolerance on :math:`1 - |\rho|`, in ``(0, 1)``.
    sigma
        Pure-noise scale (used when ``eps`` is None).
    mu, eps
        Hybrid model :math:`V = (\mu/\sqrt L) I + \varepsilon G` (``eps > 0``).
    rho0
        Initial inner product in ``[-1, 1]``; ``None`` averages over two independent
        uniform tokens.
    layers
        ``None``: the limit SDE's law. An integer :math:`L`: the law of the chain with
        :math:`L` layers per unit of depth-time (:math:`TL` steps of :math:`h = 1/L`) to
        first order, :math:`P + C/L` (Talay--Tubaro; the remainder is :math:`O(L^{-2})`).
    chain
        Which chain ``layers`` means: ``"network"``, the two-token network itself, or
        ``"reduced"``, the Euler chain of the z-SDE with :math:`\pm1` increments (the
        ``reduced`` Monte Carlo, step :math:`1/L`); the first-order law of both is derived for
        pure noise (``mu = 0``), the exact law of both also covers the hybrid.
    law
        With ``layers``: ``"first-order"`` (default; about a second a point), :math:`P +
        C/L`, which warns (:class:`FirstOrderWarning`) where :math:`|C/L|` exceeds
        ``FIRST_ORDER_LIMIT`` :math:`\min(P, 1-P)` of an outcome (or is clipped into
        :math:`[0, 1]`); or ``"exact"``, the law of the chain's own one-step kernel
        iterated :math:`\operatorname{round}(TL)` times (:mod:`._chain_law`; also for the
        hybrid): for ``chain="network"`` a few seconds a point, for ``chain="reduced"``
        (two atoms a step) a tenth of a second at :math:`TL = 200` to a few seconds at
        :math:`TL = 50{,}000`. The default stays the first-order law so that code that
        uses it keeps its numbers.
    return_error
        Also return the error estimate: the largest over the three outcomes of
        :math:`|p_{h/2} - p_h|/3`, a conservative bound (the finer level's error); for
        ``law="exact"`` the same of its two z grids (the quadrature's error is not in it:
        :mod:`._chain_law`).

    Returns
    -------
    OutcomeFractions
        ``antipodal``, ``single``, ``undecided`` arrays of the broadcast shape, ``count``
        None (exact values, standard errors 0); with ``return_error``, a tuple
        ``(fractions, error)``.

    Examples
    --------
    >>> p = outcome_probabilities(1.0, 6, horizon=500.0)
    >>> round(float(p.antipodal), 4), round(float(p.undecided), 4)
    (0.0008, 0.0)
    """
    _checks.two_tokens(beta, d, sigma=sigma, mu=mu, eps=eps, rho0=rho0)
    if not 0 < tol < 1:
        raise ValueError(f"tol must be in (0, 1), got {tol}")
    e = noise_scale(sigma, eps)
    arrays = np.broadcast_arrays(*(np.asarray(v, float) for v in (beta, d, e, mu, horizon)),
                                 np.asarray(np.nan if rho0 is None else rho0, float))
    shape = arrays[0].shape
    beta, d, e, mu, horizon, r0 = (a.ravel() for a in arrays)
    if np.any(~np.isfinite(beta)) or np.any(beta < 0):
        raise ValueError("beta must be finite and >= 0")
    if np.any(d < 2):
        raise ValueError("d must be >= 2")
    if np.any(e <= 0):
        raise ValueError("the noise scale must be positive (eps = 0 is deterministic)")
    if np.any(np.isnan(horizon)) or np.any(horizon < 0):
        raise ValueError("horizon must be >= 0 (numpy.inf for the limit t -> infinity)")
    if rho0 is not None and not np.all(np.abs(r0) <= 1):
        raise ValueError("rho0 must lie in [-1, 1]")
    if layers is not None:
        if isinstance(layers, bool) or not isinstance(layers, int | np.integer) or layers < 1:
            raise ValueError(f"layers must be a positive integer or None (the limit), "
                             f"got {layers!r}")
        if chain not in CHAINS:
            raise ValueError(f"chain must be one of {CHAINS}, got {chain!r}")
        if law not in LAWS:
            raise ValueError(f"law must be one of {LAWS}, got {law!r}")
        if np.any(np.isinf(horizon)):
            raise ValueError("layers needs a finite horizon (the correction is at depth-time T)")
        if law == "first-order" and np.any(mu != 0):
            raise ValueError("layers is derived for pure noise (mu = 0): pass sigma, not a "
                             "hybrid (mu, eps)")
    result = np.zeros((3, beta.size))
    error = np.zeros(beta.size)
    for i in range(beta.size):
        b_, d_, e_, mu_, t_, r_ = beta[i], d[i], e[i], mu[i], horizon[i], r0[i]
        if abs(r_) == 1:  # an equilibrium: it stays where it is
            result[:, i] = (1.0, 0.0, 0.0) if r_ < 0 else (0.0, 1.0, 0.0)
        elif layers is not None and law == "exact":
            from ._chain_law import chain_law

            z0 = None if rho0 is None else float(np.arctanh(r_))
            values, error[i] = chain_law(b_, d_, e_, mu_, tol, t_, layers, z0, chain)
            result[:, i] = np.clip(values, 0.0, 1.0)
        elif np.isinf(t_):
            p = float(antipodal_probability(b_, d_, mu=mu_, eps=e_,
                                            rho0=None if rho0 is None else r_))
            result[:, i] = (p, 1 - p, 0.0)
        else:
            z0 = None if rho0 is None else float(np.arctanh(r_))
            which = None if layers is None else chain
            extrapolated, error[i] = refined_law((b_, d_, e_, mu_), tol, t_, z0, layers, which)
            total = extrapolated.sum(axis=0)
            if layers is not None:
                _check_first_order(*extrapolated, total, b_, d_, layers, t_)
            result[:, i] = np.clip(total, 0.0, 1.0)
    antipodal, single, undecided = (r.reshape(shape) for r in result)
    fractions = OutcomeFractions(single, antipodal, undecided, None)
    return (fractions, error.reshape(shape)) if return_error else fractions


__all__ = ["FirstOrderWarning", "outcome_probabilities"]
