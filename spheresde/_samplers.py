r"""Exact samplers on :math:`S^{d-1}`: the von Mises--Fisher law and Brownian motion at time t.

Both return points of the unit sphere, vectorized over ``shape`` and over the leading
axes of the mean direction (start). They serve as references for the solvers (a
solver's law at time t against :func:`sample_brownian_motion`) and as starts.
"""

from __future__ import annotations

import decimal
import functools
import itertools
import math

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np

from . import _checks
from ._geometry import cos_sinc, project_tangent, retract
from ._small import small_sum
from ._typing import Array, PRNGKeyArray, SpherePoint

TABLE_MIN_TIME = 0.01
r"""Smallest time at which :func:`sample_brownian_motion` tabulates the law of the number of
lineages exactly; below it the law is Griffiths' normal approximation (0.5 s to tabulate at
this time, 3 s at half of it, growing like :math:`t^{-2.5}`)."""


MU_TOLERANCE = 1e-4
r"""Largest :math:`\big||\mu| - 1\big|` that :func:`sample_von_mises_fisher` (``mu``) and
:func:`sample_brownian_motion` (``y0``) accept, normalizing such rows; a row farther from
the unit sphere is refused (its length is no concentration: that is ``kappa``)."""

#: Candidates per round of the rejection loop of :func:`sample_von_mises_fisher` after
#: its first, full round: rounds of the first size while that many draws wait, then of
#: the next (fewer rounds than small rounds alone, less waste than large ones).
VMF_ROUNDS = (65536, 8192, 1024)

#: Wood's acceptance probability is above 0.65 for every dimension and concentration
#: (its infimum, at large kappa, is 0.66 on the circle and grows with d).
_VMF_MIN_ACCEPTANCE = 0.65


def _radius(radius) -> float:
    """``radius`` as a positive finite float, or a ``ValueError`` that says so."""
    if not (isinstance(radius, (int, float)) and math.isfinite(radius) and radius > 0):
        raise ValueError(f"radius must be a positive finite number (the sphere's), got "
                         f"{radius!r}")
    return float(radius)


def _as_direction(mu, name: str, radius: float = 1.0) -> Array:
    """The rows of ``mu`` as unit directions, after checking that they lie on the sphere
    of ``radius`` (to within :data:`MU_TOLERANCE` relative)."""
    _checks.real(name, mu)
    mu = jnp.asarray(mu)
    if not jnp.issubdtype(mu.dtype, jnp.floating):
        mu = mu.astype(jnp.result_type(float))
    if mu.ndim < 1 or mu.shape[-1] < 2:
        raise ValueError(f"{name} must have shape (..., d) with d >= 2 (points of S^(d-1)), "
                         f"got shape {mu.shape}")
    if not isinstance(mu, jax.core.Tracer):
        values = np.asarray(mu, dtype=np.float64)
        lengths = np.linalg.norm(values, axis=-1) / radius
        off = np.abs(lengths - 1)
        if np.any(off > MU_TOLERANCE):
            row = np.unravel_index(int(np.argmax(off)), off.shape)
            if radius != 1:
                raise ValueError(
                    f"{name} must lie on the sphere of radius {radius:g} (|{name}| = {radius:g} "
                    f"to within {MU_TOLERANCE:g} relative), got |{name}| = "
                    f"{float(lengths[row]) * radius:.6g} at index "
                    f"{tuple(int(i) for i in row)}; pass {radius:g} {name} / |{name}|")
            raise ValueError(
                f"{name} must hold unit vectors (|{name}| = 1 to within {MU_TOLERANCE:g}), got "
                f"|{name}| = {float(lengths[row]):.6g} at index {tuple(int(i) for i in row)}; "
                f"pass {name} / |{name}| (the concentration of a von Mises-Fisher law is kappa, "
                f"not the length of mu)")
    return retract(mu)


def _uniforms(key: PRNGKeyArray, full: int, coarse: int, shape: tuple[int, ...], dtype
              ) -> tuple[Array, Array]:
    r"""``(u_full, u_coarse)``: ``full`` and ``coarse`` independent uniforms on [0, 1) of
    ``shape`` each, stacked along a leading axis; the first at ``dtype``'s resolution,
    the second at most 32 bits'.

    JAX's threefry (partitionable, the default) computes one block of 64 bits for every
    element of an array of random bits, 32-bit or 64-bit alike, and that block is most of
    the cost of a uniform on CPU (16 to 20 ns a block on the loaded development machine,
    where turning it into a float64 uniform adds about 1 ns). So with 64-bit integers
    (``jax_enable_x64``), one block gives one float64 uniform of 52 bits
    (``jax.random.uniform``'s: multiples of :math:`2^{-52}`), or two *coarse* uniforms,
    its two 32-bit halves (multiples of :math:`2^{-32}`), or two float32 uniforms of 23
    bits (float32's full resolution: in float32 every uniform is coarse). Without 64-bit
    integers (x64 off, then ``dtype`` is float32), every uniform is a block of its own,
    ``jax.random.uniform``'s 23 bits.

    A coarse uniform is an exact uniform rounded down to a multiple of :math:`2^{-32}`,
    so the law of any monotone function of it is within Kolmogorov distance
    :math:`2^{-32}` of the exact law (float32's uniforms are within :math:`2^{-23}`).
    It serves where 32 bits are plenty: an angle, a height, an acceptance test; the
    logarithms whose tails depend on the bits near 0 or 1 (a Box--Muller radius,
    Wood's radius, the inverse CDF on :math:`S^2`) take full uniforms.
    """
    dtype = jnp.dtype(dtype)
    if jax.dtypes.canonicalize_dtype(jnp.uint64) != jnp.uint64:
        u = jr.uniform(key, (full + coarse, *shape), dtype)
        return u[:full], u[full:]
    if dtype == jnp.float32:  # the top 23 bits of each half as float32's mantissa
        words = jr.bits(key, (-(-(full + coarse) // 2), *shape), jnp.uint64)
        halves = jnp.concatenate([words >> 32, words & 0xFFFFFFFF])[:full + coarse]
        mantissa = (halves >> 9).astype(jnp.uint32) | np.uint32(0x3F800000)
        u = jax.lax.bitcast_convert_type(mantissa, jnp.float32) - 1
        return u[:full], u[full:]
    words = jr.bits(key, (full + -(-coarse // 2), *shape), jnp.uint64)
    halves = jnp.concatenate([words[full:] >> 32, words[full:] & 0xFFFFFFFF])[:coarse]
    one = np.uint64(0x3FF0000000000000)  # 1.0: mantissa | one is 1 + mantissa / 2^52
    u_full = jax.lax.bitcast_convert_type((words[:full] >> 12) | one, dtype) - 1
    u_coarse = jax.lax.bitcast_convert_type((halves << 20) | one, dtype) - 1
    return u_full, u_coarse


def _circle(u: Array) -> tuple[Array, Array]:
    """``(cos, sin)`` of the angle ``pi (2u - 1)``, uniform on the circle for ``u`` uniform
    on [0, 1): by :func:`cos_sinc`'s polynomial, which XLA vectorizes (``jnp.cos`` and
    ``jnp.sin`` in float64 on CPU are calls into the C library, one element at a time)."""
    angle = math.pi * (2 * u - 1)
    cos, sinc = cos_sinc(angle * angle)
    return cos, angle * sinc


def _normals(key: PRNGKeyArray, shape: tuple[int, ...], dtype) -> Array:
    """Standard normals of ``shape`` by Box--Muller, two from each pair of uniforms, split
    along the first axis: in float64 a logarithm and :func:`_circle` per pair cost less
    than ``jax.random.normal``'s inverse error function per normal. The radius takes a
    full uniform (its tail is the bits near 1), the angle a coarse one
    (:func:`_uniforms`)."""
    pairs = -(-shape[0] // 2)
    u_radius, u_angle = _uniforms(key, pairs, pairs, shape[1:], dtype)
    radius = jnp.sqrt(-2 * jnp.log1p(-u_radius))  # u_radius < 1: finite
    cos, sin = _circle(u_angle)
    return jnp.concatenate([radius * cos, radius * sin])[:shape[0]]


#: Largest dimension whose rotation-invariant vectors :func:`_around` draws
#: from uniform spacings (Dirichlet weights, no logarithm, all uniforms coarse) instead of
#: Box--Muller normals: up to 3 sorted uniforms, by a 3-comparator network.
SPACINGS_MAX_DIM = 8


def _isotropic(key: PRNGKeyArray, d: int, batch: tuple[int, ...], dtype) -> Array:
    r"""A rotation-invariant, almost surely nonzero vector of :math:`\mathbb R^d` per element
    of ``batch``, coordinates first (shape ``(d, *batch)``), for ``d >= 4``.

    Up to :data:`SPACINGS_MAX_DIM`: the first ``d`` coordinates of a uniform point of
    :math:`S^{2m-1} \subset \mathbb C^m`, :math:`m = \lceil d/2\rceil`,
    :math:`z_j = \sqrt{D_j}\, e^{i\theta_j}` with :math:`D` the spacings of :math:`m - 1`
    sorted uniforms (Dirichlet(1, ..., 1): the law of :math:`|z_j|^2`) and independent
    uniform angles; :math:`2m - 1` coarse uniforms of :func:`_uniforms`, 4 threefry
    blocks at ``d = 7`` against Box--Muller's 6, and no logarithm. Above it, standard
    normals (:func:`_normals`)."""
    if d > SPACINGS_MAX_DIM:
        return _normals(key, (d, *batch), dtype)
    m = -(-d // 2)
    _, u = _uniforms(key, 0, 2 * m - 1, batch, dtype)
    cuts = list(u[m:])
    for i, j in ((0, 1), (1, 2), (0, 1))[:{1: 0, 2: 1, 3: 3}[m - 1]]:
        cuts[i], cuts[j] = jnp.minimum(cuts[i], cuts[j]), jnp.maximum(cuts[i], cuts[j])
    edges = [0, *cuts, 1]
    radius = jnp.sqrt(jnp.stack([hi - lo for lo, hi in itertools.pairwise(edges)]))
    cos, sin = _circle(u[:m])
    return jnp.concatenate([radius * cos, radius * sin])[:d]


def _around(key: PRNGKeyArray, y: SpherePoint, cosine: Array, sine: Array) -> SpherePoint:
    """``cosine y + sine v`` for ``v`` uniform among the unit tangent vectors at the rows of
    ``y``: ``v = P_y g / |P_y g|`` for a rotation-invariant ``g`` drawn independently of
    ``y`` (:func:`_isotropic`), so a smooth function of ``y`` (the reparametrization
    through which gradients in ``y`` flow); on :math:`S^2` ``g`` is a uniform point of
    :math:`S^2` (Archimedes: height and angle uniform, two coarse uniforms of
    :func:`_uniforms`). On the circle, ``v = ±(-y_1, y_0)`` with a random sign: the same
    law, exactly orthogonal to ``y`` (there ``P_y g`` is often nearly zero, and the
    rounding of its normalization would show).

    Up to :data:`SPACINGS_MAX_DIM` it is formed coordinates first and transposed once:
    the projection and the normalization are then elementwise work over the batch, which
    XLA vectorizes (at d = 3 the sampler is 1.3 times faster than with coordinates
    last); above it, with coordinates last, as :func:`project_tangent` and
    :func:`retract` (coordinates first is 1.4 times slower at d = 20).
    """
    d, batch = y.shape[-1], y.shape[:-1]
    if d > SPACINGS_MAX_DIM:
        g = jnp.moveaxis(_isotropic(key, d, batch, y.dtype), 0, -1)
        v = retract(project_tangent(y, g))
        return cosine[..., None] * y + sine[..., None] * v
    y = jnp.moveaxis(y, -1, 0)
    if d == 2:
        sign = jnp.where(jr.bernoulli(key, 0.5, batch), 1, -1).astype(y.dtype)
        v = sign * jnp.stack([-y[1], y[0]])
    else:
        if d == 3:
            _, (u_height, u_angle) = _uniforms(key, 0, 2, batch, y.dtype)
            height = 2 * u_height - 1
            cos, sin = _circle(u_angle)
            ring = jnp.sqrt((1 - height) * (1 + height))
            g = jnp.stack([ring * cos, ring * sin, height])
        else:
            g = _isotropic(key, d, batch, y.dtype)
        # project_tangent and retract, coordinates first.
        g = g - (small_sum(y * g, axis=0) / small_sum(y * y, axis=0)) * y
        v = g / jnp.sqrt(small_sum(g * g, axis=0))
    return jnp.moveaxis(cosine * y + sine * v, 0, -1)


def sample_von_mises_fisher(key: PRNGKeyArray, mu, kappa, shape: tuple[int, ...] = (), *,
                            radius: float = 1.0) -> SpherePoint:
    r"""Independent von Mises--Fisher points, density :math:`\propto e^{\kappa x^\top\mu}`
    (:math:`\propto e^{\kappa x^\top\mu / r}` on the sphere of radius :math:`r`: ``radius``
    times the unit-sphere points).

    The cosine :math:`w = \langle x, \mu\rangle` has density
    :math:`\propto e^{\kappa w}(1 - w^2)^{(d-3)/2}` on :math:`[-1, 1]`; then
    :math:`x = w\mu + \sqrt{1 - w^2}\, v` with :math:`v` uniform among the unit tangent
    vectors at :math:`\mu` (a rotation-invariant vector projected orthogonally to
    :math:`\mu` and normalized: for :math:`4 \le d \le 8` the first :math:`d` coordinates
    of a uniform point of :math:`S^{2\lceil d/2\rceil - 1}` from uniform spacings and
    angles, for larger :math:`d` standard normal by Box--Muller, on :math:`S^2` a uniform
    point of :math:`S^2`; on the circle a random sign). The cosine is drawn

    - on :math:`S^2` (``d = 3``) by inverting its CDF
      :math:`(e^{\kappa(w+1)} - 1)/(e^{2\kappa} - 1)`, no rejection:
      :math:`1 - w = -\log(1 + u\,(e^{-2\kappa} - 1))/\kappa`, :math:`u` uniform;
    - in every other dimension by Wood's (1994) rejection algorithm, in the Möbius form
      :math:`w = (x_0 + s)/(1 + x_0 s)`, :math:`x_0 = (1-b)/(1+b)`,
      :math:`b = (d-1)/(2\kappa + \sqrt{4\kappa^2 + (d-1)^2})`, with :math:`(1 + s)/2
      \sim \mathrm{Beta}(\tfrac{d-1}{2}, \tfrac{d-1}{2})`, accepted when
      :math:`\kappa(1 - x_0^2)\, s/(1 + x_0 s) - (d-1)\log(1 + x_0 s) \ge \log u`. The
      symmetric Beta variate is Ulrich's (1984) polar one,
      :math:`s = \sqrt{1 - u_1^{2/(d-2)}}\cos 2\pi u_2` (:math:`\cos 2\pi u_2` on the
      circle). :math:`1 - x_0^2`, :math:`1 - w^2` and the test are formed so that
      they keep their relative precision at large :math:`\kappa`. The acceptance rate
      is above 0.65 for every :math:`d` and :math:`\kappa` (it tends to 0.66 to 0.71
      as :math:`\kappa \to \infty`, to 1 as :math:`\kappa \to 0`).

    The rejection runs in rounds, one PRNG key per round: a first round of one
    candidate per draw, then rounds of 65,536, 8,192 and finally 1,024 candidates for
    the draws still rejected (a queue), at most a bounded number of rounds (the chance
    of reaching it is below :math:`10^{-40}`; a draw still rejected then would be NaN).
    ``tests/benchmarks/bench_samplers.py`` times it against
    ``scipy.stats.vonmises_fisher``.

    Random bits: each threefry block (64 bits, the main cost on CPU) gives one full
    uniform (52 bits in float64) or two *coarse* ones of 32 bits (with x64 on; in
    float32 every uniform has 23 bits, as ``jax.random.uniform``'s). The logarithms
    whose tails come from the bits near 0 or 1 take full uniforms (the inverse CDF on
    :math:`S^2`, Wood's radius :math:`u_1`, Box--Muller's radius); the angles, the
    spacings, the height on :math:`S^2` and Wood's acceptance uniform take coarse ones.
    A coarse uniform is an exact one rounded down to a multiple of :math:`2^{-32}`: the
    law of each monotone function of it (an angle, a height) is within Kolmogorov
    distance :math:`2^{-32}` of the exact one, and Wood's acceptance probability of
    each candidate is off by less than :math:`2^{-32}` (so, given the candidates, the
    accepted one's law is within total variation :math:`2 \cdot 2^{-32}/0.65 < 2^{-30}`
    of the exact one). Since this change (1.3 to 1.6 times faster in float64 at d = 7)
    the draws for a given key differ from those of earlier versions.

    Parameters
    ----------
    key
        PRNG key.
    mu
        Mean direction, shape ``(..., d)``, unit rows (to within 1e-4; each row is
        normalized); each row its own law.
    kappa
        Concentration :math:`\kappa \ge 0`, broadcast against ``(*shape,
        *mu.shape[:-1])``: 0 is the uniform law, ``inf`` the point mass at ``mu``.
        NaN or a negative value raises ``ValueError``; inside ``jax.jit`` (where it
        cannot be checked) such a draw is NaN. A non-unit, non-finite or wrongly
        shaped ``mu`` raises too (unchecked under ``jit``, where a zero row gives NaN).
    shape
        Leading shape of the independent draws.
    radius
        Radius :math:`r` of the sphere (``mu`` is a unit direction all the same).

    Returns
    -------
    Array of shape ``(*shape, *mu.shape)``, of ``mu``'s dtype (computed in at least
    float32). Differentiable in ``mu`` (the cosine does not depend on it and the
    tangent direction smoothly), not in ``kappa``.
    """
    radius = _radius(radius)
    mu = _as_direction(mu, "mu")
    shape = _checks.sizes("shape", shape)
    batch = (*shape, *mu.shape[:-1])
    kappa = jnp.asarray(kappa)
    if not (jnp.issubdtype(kappa.dtype, jnp.floating) or jnp.issubdtype(kappa.dtype, jnp.integer)):
        raise TypeError(f"kappa must be a real number or array, got dtype {kappa.dtype}")
    try:
        broadcast = np.broadcast_shapes(kappa.shape, batch)
    except ValueError:
        broadcast = None
    if broadcast != batch:
        raise ValueError(f"kappa of shape {kappa.shape} does not broadcast against the draws' "
                         f"shape (*shape, *mu.shape[:-1]) = {batch}")
    if not isinstance(kappa, jax.core.Tracer):
        values = np.asarray(kappa, dtype=np.float64)
        if np.any(np.isnan(values)) or np.any(values < 0):
            bad = "NaN" if np.any(np.isnan(values)) else f"{float(np.min(values)):g}"
            raise ValueError(f"kappa must be >= 0 (0: the uniform law, inf: the point mass at "
                             f"mu), got {bad}")
    dtype = mu.dtype
    work = jnp.promote_types(dtype, jnp.float32)
    unit = _von_mises_fisher(key, mu.astype(work), kappa.astype(work), shape).astype(dtype)
    return unit if radius == 1 else radius * unit


@functools.partial(jax.jit, static_argnums=3)
def _von_mises_fisher(key, mu, kappa, shape):
    d = mu.shape[-1]
    out_shape = (*shape, *mu.shape)
    batch = out_shape[:-1]
    key_w, key_v = jr.split(key)
    if d == 3:
        w, sine_sq = _cosine_s2(key_w, jnp.broadcast_to(kappa, batch))
    else:
        flat = kappa if kappa.ndim == 0 else jnp.broadcast_to(kappa, batch).reshape(-1)
        w, sine_sq = _cosine_wood(key_w, flat, d, math.prod(batch), mu.dtype)
        w, sine_sq = w.reshape(batch), sine_sq.reshape(batch)
    # Negative kappa (only reachable under jit): NaN, as NaN kappa gives by itself.
    w = jnp.where(kappa >= 0, w, jnp.nan)
    return _around(key_v, jnp.broadcast_to(mu, out_shape), w, jnp.sqrt(sine_sq))


def _cosine_s2(key, kappa):
    r"""``(w, 1 - w^2)`` on :math:`S^2` by inversion: ``1 - w`` without cancellation, exact
    at ``kappa = 0`` (uniform) and ``kappa = inf`` (``w = 1``)."""
    (u,), _ = _uniforms(key, 1, 0, kappa.shape, kappa.dtype)
    positive = kappa > 0
    safe = jnp.where(positive, kappa, 1)
    one_minus_w = jnp.where(positive, -jnp.log1p(u * jnp.expm1(-2 * safe)) / safe, 2 * u)
    return 1 - one_minus_w, one_minus_w * (2 - one_minus_w)


def _wood_candidates(key, m, kappa, d, dtype):
    """``m`` of Wood's candidates: ``(w, 1 - w^2, accepted)``. ``kappa`` of shape () or
    (m,); inf, NaN or negative values are accepted at once. Its radius takes a full
    uniform, its angle and acceptance test coarse ones (:func:`_uniforms`)."""
    u_radius, (u_angle, u_accept) = _uniforms(key, int(d > 2), 2, (m,), dtype)
    cos, sin = _circle(u_angle)
    if d == 2:  # Beta(1/2, 1/2): s = cos(2 pi u)
        s, one_minus_s2 = cos, sin**2
    else:
        log_q = (2 / (d - 2)) * jnp.log(u_radius[0])
        radius_sq = -jnp.expm1(log_q)
        s, one_minus_s2 = jnp.sqrt(radius_sq) * cos, jnp.exp(log_q) + radius_sq * sin**2
    b = (d - 1) / (2 * kappa + jnp.sqrt(4 * kappa**2 + (d - 1) ** 2))
    kappa_b = (d - 1) / (2 + jnp.sqrt(4 + ((d - 1) / kappa) ** 2))  # finite at kappa = inf
    x0, one_minus_x0 = (1 - b) / (1 + b), 2 * b / (1 + b)
    one_minus_x0_sq, kappa_one_minus_x0_sq = 4 * b / (1 + b) ** 2, 4 * kappa_b / (1 + b) ** 2
    # 1 + x0 s, also where x0 -> 1 and s -> -1: (1 + s) - (1 - x0) s, both terms >= 0.
    one_plus_s = jnp.where(s < 0, one_minus_s2 / (1 - s), 1 + s)
    den = jnp.where(s < 0, one_plus_s - one_minus_x0 * s, 1 + x0 * s)
    log_accept = kappa_one_minus_x0_sq * s / den - (d - 1) * jnp.log(den)
    point_mass = ~(kappa < jnp.inf)  # inf, and NaN (NaN from here on)
    accepted = (log_accept >= jnp.log(u_accept)) | point_mass | (kappa < 0)
    w = jnp.where(point_mass, jnp.where(kappa > 0, 1, kappa), (x0 + s) / den)
    sine_sq = jnp.where(point_mass, 0, one_minus_x0_sq * one_minus_s2 / den**2)
    return w, sine_sq, accepted


def vmf_max_rounds(n: int, chunk: int) -> int:
    r"""The cap on the rounds after the first of :func:`sample_von_mises_fisher`'s
    rejection loop, for ``n`` draws in rounds of ``chunk``: each round either takes
    ``chunk`` queued draws or every queued draw, so with acceptance :math:`p \ge 0.65`
    the rounds of the second kind number at most the largest count of tries of a draw
    (:math:`P(> 128) \le n\, 0.35^{128} < 10^{-50}` for :math:`n < 10^8`) and those of
    the first kind at most the total rejections over ``chunk`` (mean
    :math:`n(1-p)/p \le 0.54 n`; four times that for :math:`n \ge 10^3`: a Chernoff
    deviation below :math:`10^{-40}`, and below :math:`10^3` draws the 128 rounds take
    every rejection up to 128 tries each)."""
    return 128 + math.ceil(4 * n * (1 - _VMF_MIN_ACCEPTANCE) / _VMF_MIN_ACCEPTANCE / chunk)


def _cosine_wood(key, kappa, d, n, dtype):
    """``(w, 1 - w^2)`` of shape (n,), by rejection in rounds (see the public docstring)."""
    key_first, key_rounds = jr.split(key)
    w, sine_sq, accepted = _wood_candidates(key_first, n, kappa, d, dtype)
    # A circular queue of the rejected draws (never more than n in it), built by a
    # cumulative sum (cheaper than jnp.nonzero), then taken in rounds of decreasing size.
    chunks = [c for c in VMF_ROUNDS if c < n] or [n]
    size = n + chunks[0]
    rejected = ~accepted
    place = jnp.where(rejected, jnp.cumsum(rejected, dtype=jnp.int32) - 1, size)
    queue = jnp.zeros(size, jnp.int32).at[place].set(jnp.arange(n, dtype=jnp.int32),
                                                     mode="drop")
    state = (w, sine_sq, queue, jnp.int32(0), jnp.sum(rejected, dtype=jnp.int32),
             jnp.int32(0))
    max_rounds = vmf_max_rounds(n, chunks[-1])
    for i, chunk in enumerate(chunks):
        last = i == len(chunks) - 1
        lanes = jnp.arange(chunk, dtype=jnp.int32)

        def body(state, chunk=chunk, lanes=lanes):
            w, sine_sq, queue, head, tail, rounds = state
            live = lanes < tail - head
            draws = queue[(head + lanes) % size]
            kap = kappa if kappa.ndim == 0 else kappa[draws]
            cw, cs, ok = _wood_candidates(jr.fold_in(key_rounds, rounds), chunk, kap, d, dtype)
            target = jnp.where(live & ok, draws, n)  # n: dropped
            w = w.at[target].set(cw, mode="drop")
            sine_sq = sine_sq.at[target].set(cs, mode="drop")
            again = live & ~ok
            count = jnp.sum(again, dtype=jnp.int32)
            order = jnp.nonzero(again, size=chunk, fill_value=0)[0]
            where_to = jnp.where(lanes < count, (tail + lanes) % size, size)
            queue = queue.at[where_to].set(draws[order], mode="drop")
            head = head + jnp.minimum(chunk, tail - head)
            return w, sine_sq, queue, head, tail + count, rounds + 1

        def cond(state, need=1 if last else chunk):
            _, _, _, head, tail, rounds = state
            return (tail - head >= need) & (rounds < max_rounds)

        # Bounded by max_rounds, and inf/NaN/negative kappa is accepted at once:
        # docs/contributing.rst, "Loops that must end".
        state = jax.lax.while_loop(cond, body, state)
    w, sine_sq, queue, head, tail, _ = state

    def give_up(w):  # draws still queued at the cap (never seen: chance < 1e-40): NaN
        left = jnp.arange(size, dtype=jnp.int32)
        return w.at[jnp.where(left < tail - head, queue[(head + left) % size], n)].set(
            jnp.nan, mode="drop")

    return jax.lax.cond(head < tail, give_up, lambda w: w, w), sine_sq


def sample_brownian_motion(key: PRNGKeyArray, y0, t, shape: tuple[int, ...] = (), *,
                           radius: float = 1.0) -> SpherePoint:
    r"""Brownian motion on :math:`S^{d-1}` (generator :math:`\tfrac12\Delta`) at time ``t``
    from ``y0``, drawn in one go; on the sphere of radius :math:`r` (``radius``, generator
    :math:`\tfrac12\Delta_r`, the Stratonovich SDE :math:`dY = P_Y \circ dW` there), the
    unit-sphere motion from :math:`y_0 / r` at time :math:`t / r^2`, times :math:`r`.

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
        Start, shape ``(..., d)``, unit rows (to within 1e-4; each row is normalized,
        and a farther row raises); every row its own start.
    t
        Time, a concrete number ``> 0`` (the table of :math:`q_m(t)` is built for it).
    shape
        Leading shape of the independent draws.
    radius
        Radius :math:`r` of the sphere; the rows of ``y0`` have length :math:`r` (to
        within 1e-4 relative).

    Returns
    -------
    Array of shape ``(*shape, *y0.shape)``. Differentiable in ``y0`` as
    :func:`sample_von_mises_fisher` is in ``mu``.
    """
    shape = _checks.sizes("shape", shape)
    radius = _radius(radius)
    y0 = _as_direction(y0, "y0", radius)
    if isinstance(t, jax.core.Tracer) or np.ndim(t) != 0:
        raise TypeError(f"t must be a concrete scalar (the law of the number of lineages is "
                        f"tabulated for it), got {t!r}")
    t = float(t)
    if not (math.isfinite(t) and t > 0):
        raise ValueError(f"t must be a positive finite time, got t={t}")
    if radius != 1:
        return radius * sample_brownian_motion(key, y0, t / radius**2, shape)
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
    return _around(key_v, jnp.broadcast_to(y0, out_shape), cosine, sine)


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
