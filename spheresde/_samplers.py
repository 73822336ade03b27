r"""Exact samplers on :math:`S^{d-1}`: the von Mises--Fisher law and Brownian motion at time t.

Both return points of the unit sphere, vectorized over ``shape`` and over the leading
axes of the mean direction (start). They serve as references for the solvers (a
solver's law at time t against :func:`sample_brownian_motion`) and as starts.
"""

from __future__ import annotations

import decimal
import functools
import math

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np

from ._geometry import project_tangent, retract
from ._typing import Array, PRNGKeyArray, SpherePoint

TABLE_MIN_TIME = 0.01
r"""Smallest time at which :func:`sample_brownian_motion` tabulates the law of the number of
lineages exactly; below it the law is Griffiths' normal approximation (0.5 s to tabulate at
this time, 3 s at half of it, growing like :math:`t^{-2.5}`)."""


def _as_direction(mu, name: str) -> Array:
    mu = jnp.asarray(mu)
    if not jnp.issubdtype(mu.dtype, jnp.floating):
        mu = mu.astype(jnp.result_type(float))
    if mu.ndim < 1 or mu.shape[-1] < 2:
        raise ValueError(f"{name} must have shape (..., d) with d >= 2 (points of S^(d-1)), "
                         f"got shape {mu.shape}")
    return retract(mu)


def _tangent_directions(key: PRNGKeyArray, y: SpherePoint) -> SpherePoint:
    """Uniform unit vectors of the tangent spaces at the rows of ``y``: ``P_y g / |P_y g|``
    for a standard normal ``g`` drawn independently of ``y``, so a smooth function of
    ``y`` (the reparametrization through which gradients in ``y`` flow)."""
    v = project_tangent(y, jr.normal(key, y.shape, y.dtype))
    return retract(v)


def sample_von_mises_fisher(key: PRNGKeyArray, mu, kappa, shape: tuple[int, ...] = ()
                            ) -> SpherePoint:
    r"""Independent von Mises--Fisher points, density :math:`\propto e^{\kappa x^\top\mu}`.

    Wood's algorithm (Wood, 1994, *Simulation of the von Mises Fisher distribution*):
    the cosine :math:`w = \langle x, \mu\rangle` by rejection from the law of
    :math:`(1 - (1+b)z)/(1 - (1-b)z)`, :math:`z \sim \mathrm{Beta}(\tfrac{d-1}{2},
    \tfrac{d-1}{2})`, with :math:`b = (d-1)/(2\kappa + \sqrt{4\kappa^2 + (d-1)^2})`
    (acceptance rate above 0.66 for every :math:`\kappa` and :math:`d`), then
    :math:`x = w\mu + \sqrt{1 - w^2}\, v` with :math:`v` uniform among the unit tangent
    vectors at :math:`\mu`. :math:`1 - w^2` is formed from :math:`z` and :math:`1 - z`
    (two chi-square variates), so that it keeps its relative precision at large
    :math:`\kappa`. Any dimension :math:`d \ge 2`.

    Parameters
    ----------
    key
        PRNG key.
    mu
        Mean direction, shape ``(..., d)`` (normalized here); each row its own law.
    kappa
        Concentration :math:`\kappa \ge 0` (0 is the uniform law), broadcast against
        ``mu.shape[:-1]``.
    shape
        Leading shape of the independent draws.

    Returns
    -------
    Array of shape ``(*shape, *mu.shape)``. Differentiable in ``mu`` (the cosine and the
    tangent direction do not depend on it), not in ``kappa`` (the rejection loop).
    """
    mu = _as_direction(mu, "mu")
    return _von_mises_fisher(key, mu, jnp.asarray(kappa, mu.dtype), tuple(shape))


@functools.partial(jax.jit, static_argnums=3)
def _von_mises_fisher(key, mu, kappa, shape):
    d = mu.shape[-1]
    out_shape = (*shape, *mu.shape)
    kappa = jnp.broadcast_to(kappa, out_shape[:-1])
    key_w, key_v = jr.split(key)

    def cosine(key, kappa):
        b = (d - 1) / (2 * kappa + jnp.sqrt(4 * kappa**2 + (d - 1) ** 2))
        x0 = (1 - b) / (1 + b)
        c = kappa * x0 + (d - 1) * jnp.log1p(-x0**2)

        def draw(state):
            key, _, _, _ = state
            key, k1, k2 = jr.split(key, 3)
            # Beta((d-1)/2, (d-1)/2) as a ratio of two chi-square(d-1) variates, sums of
            # squared normals (cheaper to compile and run than gamma variates).
            g = jr.normal(k1, (2, d - 1), mu.dtype)
            g1, g2 = jnp.sum(g[0] ** 2), jnp.sum(g[1] ** 2)
            z, one_minus_z = g1 / (g1 + g2), g2 / (g1 + g2)
            den = 1 - (1 - b) * z
            w = (1 - (1 + b) * z) / den
            sine_sq = 4 * b * z * one_minus_z / den**2
            accept = kappa * w + (d - 1) * jnp.log1p(-x0 * w) - c >= jnp.log(
                jr.uniform(k2, dtype=mu.dtype))
            return key, w, sine_sq, accept

        init = (key, jnp.zeros((), mu.dtype), jnp.zeros((), mu.dtype), jnp.array(False))
        _, w, sine_sq, _ = jax.lax.while_loop(lambda s: ~s[3], draw, init)
        return w, sine_sq

    keys = jr.split(key_w, math.prod(out_shape[:-1]))
    w, sine_sq = jax.vmap(cosine)(keys, kappa.reshape(-1))
    w, sine_sq = w.reshape(out_shape[:-1]), sine_sq.reshape(out_shape[:-1])
    mu = jnp.broadcast_to(mu, out_shape)
    return w[..., None] * mu + jnp.sqrt(sine_sq)[..., None] * _tangent_directions(key_v, mu)


def sample_brownian_motion(key: PRNGKeyArray, y0, t, shape: tuple[int, ...] = ()) -> SpherePoint:
    r"""Brownian motion on :math:`S^{d-1}` (generator :math:`\tfrac12\Delta`) at time ``t``
    from ``y0``, drawn in one go.

    The method of Mijatović, Mramor and Uribe (2020, *A note on the exact simulation of
    spherical Brownian motion*, Statist. Probab. Lett. 165). The cosine
    :math:`Y_t = \langle X_t, y_0\rangle` solves
    :math:`dY = -\tfrac{d-1}{2} Y\,dt + \sqrt{1 - Y^2}\,dB`, so :math:`(1 + Y_t)/2` is
    the Wright--Fisher diffusion with generator
    :math:`\tfrac12 x(1-x)\partial_x^2 + \tfrac12(\theta_1(1-x) - \theta_2 x)\partial_x`,
    mutation rates :math:`\theta_1 = \theta_2 = \tfrac{d-1}{2}`, on the same clock,
    started at 1. Its law at time :math:`t` (Griffiths 1979, Tavaré 1984) is the mixture

    .. math::
        \frac{1 + Y_t}{2} \sim \mathrm{Beta}\big(\tfrac{d-1}{2} + A,\ \tfrac{d-1}{2}\big),
        \qquad P(A = m) = q_m(t) = \sum_{k \ge m} (-1)^{k-m}
        \frac{(\theta + 2k - 1)(\theta + m)_{(k-1)}}{m!\,(k-m)!}\, e^{-k(k+\theta-1)t/2},

    :math:`\theta = d - 1`, with :math:`A` the number of lineages at time :math:`t` of
    Kingman's coalescent with mutation started from infinitely many (its rates
    :math:`k(k+\theta-1)/2` are the eigenvalues :math:`l(l+d-2)/2` of
    :math:`-\tfrac12\Delta` on :math:`S^{d-1}`). Then
    :math:`X_t = Y_t\, y_0 + \sqrt{1 - Y_t^2}\, v` with :math:`v` uniform among the unit
    tangent vectors at :math:`y_0`.

    The alternating series for :math:`q_m` has terms up to :math:`e^{1.5/t}`, hopeless
    in floating point below :math:`t \approx 0.1`, so it is summed here once per
    ``(t, d)``, in exact integer fixed point with enough bits for the cancellation, and
    :math:`A` is drawn from the table by inversion: exact to the rounding of the table
    (1e-16) for ``t >=`` :data:`TABLE_MIN_TIME` (0.01). Below it, where the table's cost
    grows like :math:`t^{-2.5}`, :math:`A` is drawn from Griffiths' (1984) normal
    approximation, as Jenkins and Spanò (2017) do for small times, with its mean
    lowered by 1/6 and rounded to an integer: the one approximate step. Its total
    variation distance to the exact law of :math:`A` is 0.0031 at :math:`t = 0.01`
    (d = 3 to 6) and falls like :math:`\sqrt t`; the law of the cosine, a Beta mixture
    that moves by :math:`O(1/A)` per unit of :math:`A`, is closer still
    (``tests/test_samplers.py`` measures both).

    Parameters
    ----------
    key
        PRNG key.
    y0
        Start, shape ``(..., d)`` (normalized here); every row its own start.
    t
        Time, a concrete number ``> 0`` (the table of :math:`q_m(t)` is built for it).
    shape
        Leading shape of the independent draws.

    Returns
    -------
    Array of shape ``(*shape, *y0.shape)``. Differentiable in ``y0`` as
    :func:`sample_von_mises_fisher` is in ``mu``.
    """
    y0 = _as_direction(y0, "y0")
    if isinstance(t, jax.core.Tracer) or np.ndim(t) != 0:
        raise TypeError(f"t must be a concrete scalar (the law of the number of lineages is "
                        f"tabulated for it), got {t!r}")
    t = float(t)
    if not (math.isfinite(t) and t > 0):
        raise ValueError(f"t must be a positive finite time, got t={t}")
    if t < TABLE_MIN_TIME:
        mean, var = griffiths_moments(t, y0.shape[-1] - 1)
        # -1/6: the next term of the mean, measured on the exact tables (t = 0.01 to
        # 0.05, d = 3 to 6: -0.1667 to -0.1671); it cuts the distance from 0.0099 to 0.0031.
        law = (jnp.asarray(mean - 1 / 6), jnp.asarray(math.sqrt(var)))
    else:
        lo, q = lineage_probabilities(t, y0.shape[-1] - 1)
        # Padded with ones (never below a uniform draw) to a power of two: one compilation
        # serves many times t.
        cdf = np.ones(1 << (len(q) - 1).bit_length())
        cdf[:len(q) - 1] = np.cumsum(q[:-1])
        law = (jnp.asarray(lo), jnp.asarray(cdf))
    return _brownian_motion(key, y0, law, tuple(shape))


@functools.partial(jax.jit, static_argnums=3)
def _brownian_motion(key, y0, law, shape):
    d = y0.shape[-1]
    out_shape = (*shape, *y0.shape)
    key_a, key_1, key_2, key_v = jr.split(key, 4)
    if law[1].ndim == 0:  # normal approximation: (mean, standard deviation)
        draw = law[0] + law[1] * jr.normal(key_a, out_shape[:-1])
        lineages = jnp.maximum(jnp.round(draw), 0.0)
    else:  # exact: (lo, cumulative probabilities of lo, lo + 1, ...)
        u = jr.uniform(key_a, out_shape[:-1], law[1].dtype)
        lineages = law[0] + jnp.searchsorted(law[1], u, side="right")
    half = (d - 1) / 2
    g1 = jr.gamma(key_1, half + lineages.astype(y0.dtype), dtype=y0.dtype)
    g2 = jr.gamma(key_2, jnp.full(out_shape[:-1], half, y0.dtype), dtype=y0.dtype)
    # Y = (g1 - g2)/(g1 + g2) and sqrt(1 - Y^2) from g1, g2: no cancellation at small t.
    cosine = (g1 - g2) / (g1 + g2)
    sine = 2 * jnp.sqrt(g1 * g2) / (g1 + g2)
    y0 = jnp.broadcast_to(y0, out_shape)
    return cosine[..., None] * y0 + sine[..., None] * _tangent_directions(key_v, y0)


def griffiths_moments(t: float, theta: int) -> tuple[float, float]:
    r"""Mean and variance of Griffiths' normal approximation of :math:`A_\infty^\theta(t)`
    for small ``t``: :math:`\mu = 2\eta/t`, :math:`\sigma^2 = \tfrac{2\eta}{t}
    (\eta + \beta)^2 (1 + \tfrac{\eta}{\eta + \beta} - 2\eta)/\beta^2` with
    :math:`\beta = (\theta - 1)t/2` and :math:`\eta = \beta/(e^\beta - 1)`; at
    :math:`\beta = 0`, :math:`2/t` and :math:`2/(3t)`."""
    beta = (theta - 1) * t / 2
    if beta == 0:
        return 2 / t, 2 / (3 * t)
    eta = beta / math.expm1(beta)
    var = 2 * eta / t * (eta + beta) ** 2 * (1 + eta / (eta + beta) - 2 * eta) / beta**2
    return 2 * eta / t, var


@functools.lru_cache(maxsize=64)
def lineage_probabilities(t: float, theta: int) -> tuple[int, np.ndarray]:
    r"""``(lo, q)``: :math:`q_m(t) = P(A_\infty^\theta(t) = m)` for ``m = lo, lo + 1, ...``.

    The probabilities outside the range are below 1e-30. The alternating series is
    summed in integer fixed point: its terms reach :math:`e^{1.5/t}` and their
    binomial factors :math:`4^m`, and the precision covers both, so the sums are exact
    to 1e-30 (their total is checked to be 1).
    """
    mean, var = griffiths_moments(t, theta) if t < 1 else (0.0, 1.0)
    sd = math.sqrt(var) + 1
    lo = max(0, int(mean - 20 * sd))
    m_top = int(mean + 20 * sd) + 20
    bits = int(2 * m_top + (2 / t + 2 * theta) / math.log(2)) + 128
    one = 1 << bits
    ctx = decimal.Context(prec=int(bits * math.log10(2)) + 20)
    time = ctx.create_decimal(repr(t))

    def fixed_exp(x):  # e^{-x t} in fixed point, x an integer or half-integer times 2
        return int(ctx.multiply(ctx.exp(-time * x / 2), decimal.Decimal(one)))

    e_t = fixed_exp(2)
    decay = fixed_exp(lo * (lo + theta - 1))  # e^{-lambda_m t}
    ratio = fixed_exp(2 * lo + theta)  # e^{-(lambda_{m+1} - lambda_m) t}
    q = []
    m = lo
    while True:
        if m == 0:  # the k = 0 term is 1; start the recursion at k = 1
            k, ef = 1, ratio * e_t >> bits
            b = -(theta + 1) * ratio
            log_b = math.log(theta + 1) - theta * t / 2
            total = one + b
        else:
            k, ef = m, ratio
            b = (theta + 2 * m - 1) * math.comb(theta + 2 * m - 2, m) * decay // (theta + m - 1)
            log_b = (math.log(theta + 2 * m - 1) + math.lgamma(theta + 2 * m - 1)
                     - math.lgamma(theta + m) - math.lgamma(m + 1) - m * (m + theta - 1) * t / 2)
            total = b
        while True:
            num, den = (theta + 2 * k + 1) * (theta + m + k - 1), (theta + 2 * k - 1) * (k + 1 - m)
            b = -((b * ef >> bits) * num // den)
            log_b += math.log(num / den) - (2 * k + theta) * t / 2
            ef = ef * e_t >> bits
            k += 1
            total += b
            # The terms decrease from here on (the ratio num/den e^{-(2k+theta)t/2} does).
            if log_b < -80 and num < den * math.exp((2 * k + theta) * t / 2):
                break
        q.append(total / one)
        if m > mean and q[-1] < 1e-30:
            break
        decay = decay * ratio >> bits
        ratio = ratio * e_t >> bits
        m += 1
    q = np.clip(np.array(q), 0.0, None)
    if abs(q.sum() - 1) > 1e-12 or (lo > 0 and q[0] > 1e-30):  # pragma: no cover
        raise RuntimeError(f"the lineage probabilities at t={t}, theta={theta} do not sum to 1 "
                           f"(sum {q.sum()}); please report this")
    return lo, q / q.sum()
