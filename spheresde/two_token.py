r"""Two tokens: the inner product :math:`\rho = \langle X_1, X_2\rangle` as a 1-D diffusion.

For ``n = 2`` the law of the shared noise is invariant under rotations, so
:math:`\rho_t` is itself an Ito diffusion on :math:`[-1, 1]`,

.. math:: d\rho = (1-\rho^2)\big[2\mu b + \varepsilon^2\big(2(d-2)ab - (a^2+b^2)\rho\big)\big]dt
          + \varepsilon\sqrt{2(a^2+b^2)}\,(1-\rho^2)\,dB,

:math:`a = 1/(1+r)`, :math:`b = r/(1+r)`, :math:`r = e^{-\beta(1-\rho)}` (pure noise:
:math:`\mu = 0`, :math:`\varepsilon = \sigma`). Every coefficient used here (drift,
diffusion, the scale-function integrand :math:`g`, the coefficients in
:math:`z = \operatorname{artanh}\rho`, the Lyapunov exponents, the hybrid threshold)
is lambdified from the SymPy derivation in :mod:`proofs_check.export`; none is retyped.

Both ends are equilibria; :math:`\rho = +1` (one cluster) always attracts, and
:math:`\rho = -1` (antipodal pair) attracts with positive probability iff
:math:`\beta > \beta_c(d) = \tfrac12\operatorname{arccosh}(d-2)` (pure noise).

Exact probabilities
-------------------
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

Monte Carlo
-----------
:func:`simulate_rho` integrates the SDE of :math:`z = \operatorname{artanh}\rho`
(Euler--Maruyama, Ito), which sends :math:`\rho = \pm1` to :math:`\pm\infty`: no
clipping, so no boundary bias. By default its increments are two-point,
:math:`\Delta B = \pm\sqrt{\Delta t}` with probability 1/2 (the simplified weak Euler
scheme of Kloeden & Platen, *Numerical Solution of SDEs*, section 14.1: weak order 1,
the same as with Gaussian increments), 32 steps per random ``uint32``; ``increments=
"gaussian"`` gives the plain Euler--Maruyama scheme.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from scipy import special

from ._outcomes import DEFAULT_TOL, OutcomeFractions, classify_rho, fractions_from_codes

__all__ = [
    "antipodal_probability",
    "critical_beta",
    "diffusion",
    "drift",
    "hybrid_threshold",
    "lyapunov_minus",
    "paper_hybrid_threshold",
    "rho_fractions",
    "scale_g",
    "simulate_rho",
]


def _rc(backend: str = "numpy"):
    from proofs_check.export import rho_coefficients

    return rho_coefficients(backend)


def _eps(sigma, eps):
    return sigma if eps is None else eps


def critical_beta(d):
    r""":math:`\beta_c(d) = \tfrac12\operatorname{arccosh}(d-2)` (0 for ``d <= 3``): pure noise
    makes the antipodal pair attracting iff :math:`\beta > \beta_c(d)`."""
    return np.asarray(_rc().critical_beta(np.asarray(d, float)), float)


def drift(rho, beta, d, sigma=1.0, *, mu=0.0, eps=None):
    r"""Ito drift of :math:`\rho = \langle X_1, X_2\rangle` (pure noise :math:`\sigma`, or
    hybrid :math:`(\mu, \varepsilon)`)."""
    return _rc().drift(rho, beta, d, _eps(sigma, eps), mu)


def diffusion(rho, beta, d, sigma=1.0, *, mu=0.0, eps=None):
    r"""Diffusion coefficient :math:`s \ge 0` of :math:`\rho`.

    :math:`d\rho = m\,dt + s\,dB` in the Ito sense."""
    return _rc().diffusion(rho, beta, d, _eps(sigma, eps), mu)


def scale_g(rho, beta, d, sigma=1.0, *, mu=0.0, eps=None):
    r""":math:`g(\rho)` with :math:`2m/s^2 = g/(1-\rho^2)`, the scale-function integrand."""
    return _rc().scale_g(rho, beta, d, _eps(sigma, eps), mu)


def lyapunov_minus(beta, d, sigma=1.0, *, mu=0.0, eps=None):
    r"""Lyapunov exponent of :math:`1+\rho` at :math:`\rho = -1` (attracting iff negative)."""
    return _rc().lyapunov_minus(beta, d, _eps(sigma, eps), mu)


def hybrid_threshold(beta, d, mu=1.0):
    r"""Exact :math:`\varepsilon` above which the hybrid's antipodal pair attracts.

    From the linearization at :math:`\rho = -1` (``proofs_check``): :math:`\varepsilon^2 =
    2\mu b_- / (1 - 2(d-1)a_- b_-)`, about :math:`2\mu e^{-2\beta}` for large
    :math:`\beta`; ``inf`` for :math:`\beta \le \beta_c(d)` (no :math:`\varepsilon` works).
    Compare :func:`paper_hybrid_threshold`.
    """
    return np.sqrt(np.asarray(_rc().hybrid_threshold_eps2(beta, d, mu), float))


def paper_hybrid_threshold(beta):
    r"""The paper's Figure 4 curve :math:`\varepsilon = \sqrt{2 e^{-\beta}}` (its Proposition 1).

    It equals the large-:math:`\beta` form of :func:`hybrid_threshold` with
    :math:`\beta` halved (logits scaled by 1/2), a convention the rest of the paper does
    not use; both are reported, neither is forced onto the other.
    """
    return np.sqrt(2 * np.exp(-np.asarray(beta, float)))


# --------------------------------------------------------------------------- exact


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


def antipodal_probability(beta, d, *, rho0=None, sigma=1.0, mu=0.0, eps=None, nodes: int = 16,
                          grading: int = 30, middle: int = 8):
    r"""Exact probability that two tokens end antipodal, :math:`P(\rho_t \to -1)`.

    From the scale function of the :math:`\rho`-diffusion (module docstring); exactly 0
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
    if not 1 <= grading <= 40:
        raise ValueError("grading must be in 1..40 (finer end panels round to the endpoint)")
    e = _eps(sigma, eps)
    arrays = np.broadcast_arrays(*(np.asarray(v, float) for v in (beta, d, e, mu)),
                                 np.asarray(0.0 if rho0 is None else rho0, float))
    shape = arrays[0].shape
    beta, d, e, mu, r0 = (a.reshape(-1, 1, 1) for a in arrays)
    if np.any(e <= 0):
        raise ValueError("the noise scale must be positive (eps = 0 is deterministic)")
    if np.any(d < 2):
        raise ValueError("d must be >= 2")
    rc = _rc()

    def g(x):
        return rc.scale_g(x, beta, d, e, mu)

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


# --------------------------------------------------------------------------- Monte Carlo

_BITS = 32


@functools.cache
def _z_coefficients():
    r"""``(R, T, beta, d, eps, mu) -> (z_drift, z_diffusion)`` for JAX, with
    :math:`T = \tanh z` and :math:`R = e^{-\beta(1-T)}`.

    The exported z-coefficients, with every :math:`e^{-k\beta(1-\tanh z)}` rewritten as
    :math:`R^k` (an identity, checked by substitution here and numerically in the
    tests): one exponential per step instead of two, and a common-subexpression-
    eliminated kernel.
    """
    import sympy as sp

    from proofs_check.export import rho_expressions

    exprs = rho_expressions()
    (z, beta, d, eps, mu), z_drift = exprs["z_drift"]
    z_diffusion = exprs["z_diffusion"][1]
    R, T = sp.symbols("R T", positive=True)
    base = -beta * (1 - sp.tanh(z))

    def power_of_r(arg):
        k = sp.simplify(arg / base)
        if not k.is_integer:
            raise ValueError(f"unexpected exponential exp({arg}) in the z coefficients")
        return R**k

    rewritten = [e.replace(sp.exp, power_of_r).subs(sp.tanh(z), T) for e in (z_drift, z_diffusion)]
    for new, old in zip(rewritten, (z_drift, z_diffusion), strict=True):
        back = new.subs({R: sp.exp(base), T: sp.tanh(z)})
        if sp.simplify(back - old) != 0:
            raise ValueError("rewriting the z coefficients in R changed them")
    return sp.lambdify((R, T, beta, d, eps, mu), rewritten, modules="jax", cse=True)


def _lane_sharding(lanes: int):
    """Split the lanes over the devices when there are several (for example two CPU
    devices from ``XLA_FLAGS=--xla_force_host_platform_device_count=2``): the kernel is
    elementwise, so each device can run its share on its own core. (On the shared
    2-core machine of the benchmarks that speed-up could not be confirmed; the results
    do not depend on the split.)"""
    devices = jax.devices()
    if len(devices) < 2 or lanes % len(devices):
        return None
    mesh = jax.sharding.Mesh(np.array(devices), ("lanes",))
    return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("lanes"))


@functools.partial(jax.jit, static_argnames=("steps", "block", "gaussian"))
def _rho_paths(key, z0, beta, d, eps, mu, dt, *, steps: int, block: int, gaussian: bool):
    """Euler--Maruyama in z for every lane; ``block`` steps are unrolled into one fused loop."""
    coefficients = _z_coefficients()
    sqrt_dt = jnp.sqrt(dt)

    def step(z, dw):
        t = jnp.tanh(z)
        z_drift, z_diffusion = coefficients(jnp.exp(-beta * (1 - t)), t, beta, d, eps, mu)
        return z + z_drift * dt + z_diffusion * dw

    def run(z, k, count):
        sub = jax.random.fold_in(key, k)
        if gaussian:
            normals = jax.random.normal(sub, (count, *z.shape), z.dtype)
            for i in range(count):
                z = step(z, sqrt_dt * normals[i])
        else:
            bits = jax.random.bits(sub, z.shape, jnp.uint32)
            for i in range(count):
                sign = ((bits >> i) & 1).astype(z.dtype) * 2 - 1
                z = step(z, sqrt_dt * sign)
        return z

    z, _ = jax.lax.scan(lambda z, k: (run(z, k, block), None), z0, jnp.arange(steps // block))
    if steps % block:
        z = run(z, steps // block, steps % block)
    return jnp.tanh(z)


def simulate_rho(key, beta, d, *, trajectories: int, dt: float, horizon: float, rho0=None,
                 sigma=1.0, mu=0.0, eps=None, increments: str = "two_point",
                 dtype=jnp.float32, block: int = _BITS):
    r"""Monte Carlo of the reduced SDE of two tokens; :math:`\rho_T` per trajectory.

    Euler--Maruyama (Ito) in :math:`z = \operatorname{artanh}\rho` with the lambdified
    ``z_drift`` / ``z_diffusion``, ``round(horizon / dt)`` steps. ``beta``, ``d``, ``sigma``
    / ``eps`` and ``mu`` broadcast to a grid, and every grid point gets ``trajectories``
    lanes of one compiled kernel (one kernel serves a whole Figure 3).

    Parameters
    ----------
    key
        PRNG key.
    beta, d
        Inverse temperature and dimension (arrays broadcast).
    trajectories
        Trajectories per grid point.
    dt, horizon
        Step and final time (the paper: ``dt = 1/L = 0.01``, ``T = 500``).
    rho0
        Start (broadcast with the grid); ``None``: two independent uniform tokens.
    sigma, mu, eps
        Pure noise :math:`\sigma`, or hybrid :math:`(\mu, \varepsilon)`.
    increments
        ``"two_point"`` (default): :math:`\pm\sqrt{\Delta t}`, 32 steps per random word
        (simplified weak Euler, weak order 1); ``"gaussian"``: normal increments.
    dtype
        ``float32`` by default (speed); ``float64`` needs x64 enabled.
    block
        Steps fused per loop iteration (at most 32 for two-point increments).

    Returns
    -------
    jax.Array
        :math:`\rho_T` of shape ``grid_shape + (trajectories,)`` (:math:`\pm1` exactly
        once :math:`|z|` is large: the pair has merged or become antipodal).
    """
    if increments not in ("two_point", "gaussian"):
        raise ValueError(f"increments must be 'two_point' or 'gaussian', got {increments!r}")
    if increments == "two_point" and not 1 <= block <= _BITS:
        raise ValueError(f"block must be in 1..{_BITS} with two-point increments")
    e = _eps(sigma, eps)
    arrays = np.broadcast_arrays(*(np.asarray(v, float) for v in (beta, d, e, mu)))
    grid = arrays[0].shape
    lanes = (*grid, trajectories)
    beta, d, e, mu = (jnp.asarray(np.broadcast_to(a[..., None], lanes).ravel(), dtype)
                      for a in arrays)
    start_key, path_key = jax.random.split(key)
    if rho0 is None:
        half = (d - 1) / 2
        u = jax.random.beta(start_key, half, half, dtype=dtype)
        z0 = 0.5 * (jnp.log(u) - jnp.log1p(-u))  # artanh(2u - 1) without cancellation
    else:
        r0 = jnp.asarray(np.broadcast_to(np.asarray(rho0, float)[..., None], lanes).ravel(), dtype)
        z0 = jnp.arctanh(r0)
    steps = round(horizon / dt)
    sharding = _lane_sharding(z0.size)
    if sharding is not None:
        z0, beta, d, e, mu = (jax.device_put(a, sharding) for a in (z0, beta, d, e, mu))
    rho = _rho_paths(path_key, z0, beta, d, e, mu, jnp.asarray(dt, dtype), steps=steps,
                     block=block, gaussian=increments == "gaussian")
    return rho.reshape(lanes)


def rho_fractions(rho, tol: float = DEFAULT_TOL) -> OutcomeFractions:
    r"""Outcome fractions of final inner products ``rho`` (last axis: trajectories).

    Single: :math:`\rho > 1 - \mathrm{tol}`; antipodal: :math:`\rho < -(1 - \mathrm{tol})`;
    undecided otherwise (:func:`spheresde.classify` for two tokens). Fields are arrays
    over the leading (grid) axes, with binomial standard errors.
    """
    return fractions_from_codes(classify_rho(rho, tol))
