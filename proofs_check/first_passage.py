r"""Mean exit times of Brownian motion on :math:`S^{d-1}` from caps and bands, from the generator.

Brownian motion on :math:`S^{d-1}` here has generator :math:`\tfrac12\Delta_{S^{d-1}}` (the
process of ``spheresde.sample_brownian_motion``, the Stratonovich SDE
:math:`dY = P_Y \circ dW` with :math:`W` standard in :math:`\mathbb{R}^d`). The height
:math:`z = \langle Y, e\rangle` along a unit vector :math:`e` is then a diffusion of its own:
for :math:`f(y) = \varphi(\langle y, e\rangle)`,

.. math:: \tfrac12\Delta_{S^{d-1}} f = \mathcal{L}_d\varphi, \qquad
          \mathcal{L}_d\varphi(z)
          = \tfrac12\big((1 - z^2)\,\varphi''(z) - (d-1)\,z\,\varphi'(z)\big)

(:func:`height_generator`, derived from the Laplacian of the degree-0 extension
:math:`\varphi(y_d/|y|)` in explicit coordinates, and from Ito's lemma on the Ito form
:math:`dY = -\tfrac{d-1}2 Y\,dt + P_Y\,dW`). In the colatitude :math:`\theta` (:math:`z =
\cos\theta`) this is :math:`\tfrac12(u'' + (d-2)\cot\theta\,u')`.

By Dynkin's formula the mean exit time :math:`u(z) = \mathbb{E}_z\tau` of a region
:math:`\{z \in I\}` solves :math:`\mathcal{L}_d u = -1` in :math:`I`, :math:`u = 0` on its
boundary, bounded where :math:`I` reaches a pole. With the integrating factor
:math:`(1 - z^2)^{(d-1)/2}`,

.. math:: \big((1-z^2)^{(d-1)/2} u'\big)' = -2\,(1-z^2)^{(d-3)/2}.

- **Cap** :math:`\{z > \cos\alpha\}` (colatitude below :math:`\alpha`): boundedness at
  :math:`z = 1` fixes :math:`(1-z^2)^{(d-1)/2}u'(z) = 2\int_z^1 (1-s^2)^{(d-3)/2}\,ds`, and
  :math:`u(\cos\alpha) = 0`; from the pole :math:`\mathbb{E}\tau = \int_{\cos\alpha}^1 u'`
  (:func:`cap_exit_time_expr`).
- **Band** :math:`\{|z| < h\}`: symmetry fixes :math:`u'(0) = 0`, so
  :math:`(1-z^2)^{(d-1)/2}u'(z) = -2\int_0^z (1-s^2)^{(d-3)/2}\,ds`; from the equator
  :math:`\mathbb{E}\tau = -\int_0^h u'` (:func:`band_exit_time_expr`).

For odd :math:`d` (and :math:`d = 2`) SymPy integrates both in closed form;
:func:`exit_time_residuals` checks the ODE, the boundary values and boundedness on the
derived :math:`u(z)`, and the closed forms stated in the documentation. The numerics use
:func:`mean_exit_time` and :func:`band_exit_time`, :func:`sympy.lambdify` of these
expressions (nothing retyped).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import sympy as sp

z, s = sp.symbols("z s", real=True)
#: Colatitude of the cap's boundary, and the band's half-height.
alpha, h = sp.symbols("alpha h", positive=True)
#: Cosine of the cap's angle.
c = sp.Symbol("c", real=True)

#: Dimensions ``d`` (of the ambient space; the sphere is :math:`S^{d-1}`) with closed forms.
DIMENSIONS = (2, 3, 5, 7)


def _check_d(d: int) -> int:
    if not isinstance(d, int) or isinstance(d, bool) or d not in DIMENSIONS:
        raise ValueError(f"closed-form exit times are derived for d in {DIMENSIONS} (S^1, S^2, "
                         f"S^4, S^6: odd d, where the integrals are elementary), got d={d!r}")
    return d


def height_generator(d, phi: sp.Expr) -> sp.Expr:
    r""":math:`\mathcal{L}_d\varphi` in the height ``z``: the generator :math:`\tfrac12\Delta` of
    Brownian motion on :math:`S^{d-1}` acting on a function of :math:`z = \langle y, e\rangle`.

    Parameters
    ----------
    d
        Integer or SymPy symbol.
    phi
        An expression in :data:`z`.

    Examples
    --------
    >>> height_generator(3, z**2)
    1 - 3*z**2
    """
    return sp.expand((1 - z**2) * sp.diff(phi, z, 2) / 2 - (d - 1) * z * sp.diff(phi, z) / 2)


def laplacian_generator_residual(d: int) -> sp.Expr:
    r""":math:`\tfrac12\Delta_{\mathbb{R}^d}\,\varphi(y_d/|y|)` at :math:`|y| = 1` minus
    :func:`height_generator` (zero): on the unit sphere the Laplacian of a degree-0
    homogeneous extension is the sphere's Laplacian."""
    ys = sp.symbols(f"y1:{d + 1}", real=True)
    phi = sp.Function("phi")
    radius = sp.sqrt(sum(y**2 for y in ys))
    ext = phi(ys[-1] / radius)
    lap = sum(sp.diff(ext, y, 2) for y in ys) / 2
    # at a point of the unit sphere with height z: y_d = z, the other squares sum to 1 - z^2
    point = {ys[0]: sp.sqrt(1 - z**2), **{y: 0 for y in ys[1:-1]}, ys[-1]: z}
    lap = sp.simplify(lap.subs(point).doit())
    u = sp.Function("u")
    stated = height_generator(d, u(z)).subs(u, phi)
    return sp.simplify(lap - stated)


def ito_generator_residual() -> sp.Expr:
    r"""Ito's lemma on :math:`z = \langle Y, e\rangle` for :math:`dY = -\tfrac{d-1}2 Y\,dt +
    P_Y\,dW`, ``d`` symbolic: drift :math:`-\tfrac{d-1}2 z`, variance
    :math:`e^\top P_Y e = 1 - z^2`; the generator minus :func:`height_generator` (zero)."""
    d = sp.Symbol("d", positive=True, integer=True)
    u = sp.Function("u")
    drift = -(d - 1) * z / 2  # <e, -(d-1)/2 Y>
    variance = 1 - z**2  # |P_Y e|^2 = 1 - <Y, e>^2
    derived = drift * sp.diff(u(z), z) + variance * sp.diff(u(z), z, 2) / 2
    return sp.simplify(derived - height_generator(d, u(z)))


@functools.cache
def cap_profile(d: int) -> sp.Expr:
    r""":math:`u(z) = \mathbb{E}_z\tau` for the cap :math:`\{z > c\}`, in :data:`z`, :data:`c`."""
    _check_d(d)
    flux = 2 * sp.integrate((1 - s**2) ** sp.Rational(d - 3, 2), (s, z, 1))
    slope = sp.simplify(flux / (1 - z**2) ** sp.Rational(d - 1, 2))
    if d == 2:  # arccos(z) / sqrt(1 - z^2): its antiderivative is -arccos(z)^2 / 2
        return sp.acos(c) ** 2 - sp.acos(z) ** 2
    antiderivative = sp.integrate(sp.apart(sp.cancel(slope), z), z)
    return sp.simplify(antiderivative - antiderivative.subs(z, c))


@functools.cache
def band_profile(d: int) -> sp.Expr:
    r""":math:`u(z) = \mathbb{E}_z\tau` for the band :math:`\{|z| < h\}` (:data:`z`, :data:`h`)."""
    _check_d(d)
    flux = -2 * sp.integrate((1 - s**2) ** sp.Rational(d - 3, 2), (s, 0, z))
    slope = sp.simplify(flux / (1 - z**2) ** sp.Rational(d - 1, 2))
    if d == 2:  # -2 arcsin(z) / sqrt(1 - z^2)
        return sp.asin(h) ** 2 - sp.asin(z) ** 2
    antiderivative = sp.integrate(sp.apart(sp.cancel(slope), z), z)
    # SymPy's log(z - 1) is log(1 - z) + i pi on |z| < 1: the constant drops out below
    antiderivative = antiderivative.replace(
        lambda e: isinstance(e, sp.log) and bool(e.args[0].subs(z, 0).is_negative),
        lambda e: sp.log(sp.expand(-e.args[0])))
    return sp.simplify(antiderivative - antiderivative.subs(z, h))


@functools.cache
def cap_exit_time_expr(d: int) -> sp.Expr:
    r""":math:`\mathbb{E}\tau` from the pole for the cap of angle :data:`alpha` on :math:`S^{d-1}`.

    Examples
    --------
    >>> sp.simplify(cap_exit_time_expr(3).subs(alpha, sp.pi / 2) - 2 * sp.log(2))
    0
    """
    u = sp.limit(cap_profile(d), z, 1, "-")
    # arccos(cos alpha) = alpha for alpha in (0, pi), the caps considered
    return sp.simplify(u.subs(c, sp.cos(alpha)).subs(sp.acos(sp.cos(alpha)), alpha))


@functools.cache
def band_exit_time_expr(d: int) -> sp.Expr:
    r""":math:`\mathbb{E}\tau` from the equator, band :math:`\{|z| < h\}` on :math:`S^{d-1}`."""
    return sp.simplify(band_profile(d).subs(z, 0))


#: Closed forms stated in the documentation (docs/theory/schemes.rst, the gallery): checked
#: against the derivation, never used by the numerics.
STATED_CAP = {
    2: alpha**2,
    3: -4 * sp.log(sp.cos(alpha / 2)),
    5: -sp.Rational(4, 3) * sp.log(sp.cos(alpha / 2)) + sp.tan(alpha / 2) ** 2 / 3,
}
STATED_BAND = {3: -sp.log(1 - h**2)}


def _zero(expr: sp.Expr) -> sp.Expr:
    r"""``expr`` simplified in :math:`C = \cos(\alpha/2) \in (0, 1)` (half-angle forms)."""
    expr = sp.simplify(expr)
    if expr == 0:
        return expr
    half, cos_half = sp.Symbol("w", positive=True), sp.Symbol("C", positive=True)
    expr = sp.expand_trig(expr.subs(alpha, 2 * half))
    sin_half = sp.sqrt(1 - cos_half**2)
    expr = expr.subs({sp.tan(half): sin_half / cos_half, sp.sin(half): sin_half,
                      sp.cos(half): cos_half})
    return sp.simplify(sp.expand_log(sp.simplify(expr), force=True))


def exit_time_residuals() -> dict:
    """Residuals (each must vanish) of the mean-exit-time derivation.

    Returns
    -------
    dict
        ``label -> residual``: the generator two ways (Laplacian at ``d = 3, 4, 5``; Ito's lemma
        with ``d`` symbolic), ``L u + 1`` and the boundary values of the cap and band profiles
        for every ``d`` of :data:`DIMENSIONS`, boundedness at the pole, and the stated closed
        forms minus the derived ones.
    """
    out = {"Ito generator (d symbolic)": ito_generator_residual()}
    for d in (3, 4, 5):
        out[f"Laplacian generator d={d}"] = laplacian_generator_residual(d)
    for d in DIMENSIONS:
        cap, band = cap_profile(d), band_profile(d)
        out[f"cap d={d}: L u + 1"] = sp.simplify(height_generator(d, cap) + 1)
        out[f"cap d={d}: u(c)"] = sp.simplify(cap.subs(z, c))
        # bounded at the pole: the slope has a finite limit there (1-z^2)^{(d-1)/2} u' -> 0
        slope_at_pole = sp.limit(sp.diff(cap, z), z, 1, "-")
        out[f"cap d={d}: u'(1) finite"] = sp.Integer(0) if slope_at_pole.is_finite else sp.oo
        out[f"band d={d}: L u + 1"] = sp.simplify(height_generator(d, band) + 1)
        out[f"band d={d}: u(h)"] = sp.simplify(band.subs(z, h))
        out[f"band d={d}: u'(0)"] = sp.simplify(sp.diff(band, z).subs(z, 0))
    for d, stated in STATED_CAP.items():
        out[f"cap d={d}: derived - stated"] = _zero(cap_exit_time_expr(d) - stated)
    for d, stated in STATED_BAND.items():
        out[f"band d={d}: derived - stated"] = _zero(band_exit_time_expr(d) - stated)
    return out


@functools.cache
def _lambdified(kind: str, d: int) -> Callable:
    expr, symbol = ((cap_exit_time_expr(d), alpha) if kind == "cap"
                    else (band_exit_time_expr(d), h))
    return sp.lambdify(symbol, expr, "numpy")


def mean_exit_time(d: int, angle):
    r"""Mean exit time of Brownian motion on :math:`S^{d-1}` (generator :math:`\tfrac12\Delta`)
    started at the pole, from the cap of angular radius ``angle`` (radians, in
    :math:`(0, \pi)`): :func:`sympy.lambdify` of :func:`cap_exit_time_expr`.

    Examples
    --------
    >>> round(float(mean_exit_time(3, 3.141592653589793 / 2)), 6)  # 2 ln 2
    1.386294
    """
    import numpy as np

    angle = np.asarray(angle, dtype=float)
    if np.any(~(angle > 0)) or np.any(~(angle < np.pi)):
        raise ValueError(f"angle must lie in (0, pi), got {angle!r}")
    return _lambdified("cap", _check_d(d))(angle)


def band_exit_time(d: int, height):
    r"""Mean exit time of Brownian motion on :math:`S^{d-1}` started on the equator from the band
    :math:`|\langle y, e\rangle| < h` (``height`` in :math:`(0, 1)`): lambdified
    :func:`band_exit_time_expr`.

    Examples
    --------
    >>> round(float(band_exit_time(3, 0.5)), 6)  # -ln(3/4)
    0.287682
    """
    import numpy as np

    height = np.asarray(height, dtype=float)
    if np.any(~(height > 0)) or np.any(~(height < 1)):
        raise ValueError(f"height must lie in (0, 1), got {height!r}")
    return _lambdified("band", _check_d(d))(height)
