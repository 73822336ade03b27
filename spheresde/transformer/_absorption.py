r"""Certified early absorption: stop simulating a trajectory that will not change class.

Two tokens have an inner product :math:`\rho` that is itself a diffusion
(:mod:`spheresde.two_token`), with a scale function :math:`S`. Started at
:math:`\rho > b_+ = 1 - \mathrm{tol}` (classified single), the probability that it ever
comes back to the classification boundary :math:`b_+` is

.. math:: P_+(\rho) = \frac{S(1) - S(\rho)}{S(1) - S(b_+)}

(finite since :math:`\rho = 1` always attracts), and the probability of returning before
the horizon is smaller still. :func:`absorption_levels` finds the level
:math:`\rho_+` where :math:`P_+ = \delta` (the *bound*, a spec parameter): a trajectory
beyond it is counted as single and no longer simulated, and the probability that this
changes its class at the horizon is at most :math:`\delta`. So every outcome fraction
moves by at most :math:`\delta` in expectation. The antipodal side is the mirror image,
with :math:`\rho_-` where :math:`P_-(\rho) = \frac{S(\rho)-S(-1)}{S(b_-)-S(-1)} = \delta`,
:math:`b_- = -(1-\mathrm{tol})`, and only where :math:`\rho = -1` attracts
(:math:`S(-1)` finite; otherwise a trajectory there always leaves, and none is absorbed).

The scale function is computed in :math:`z = \operatorname{artanh}\rho` from the
lambdified ``z_drift`` / ``z_diffusion`` of :mod:`proofs_check.export` (nothing retyped):
:math:`\log S'(z) = -\int 2\,\mathrm{drift}/\mathrm{diffusion}^2\,dz`, trapezoid rule with
step :math:`10^{-3}` (relative error far below :math:`10^{-6}`), the tail beyond
:math:`|z| = 60` in closed form from the limit of the integrand, and the level rounded
outward to the grid (conservative).

The certificate is for the diffusion: the Euler scheme of the reduced SDE and the
discrete network with :math:`L` layers per unit time follow it up to :math:`O(1/L)`;
the tests check that results with and without absorption agree within Monte Carlo
error. For more than two tokens no pair's inner product is an autonomous diffusion (it
depends on the other tokens), so no scale function certifies anything; near the single
cluster the certificate is instead a supermartingale :math:`V^p` of the gap
:math:`V = \sum_{i<j}(1-\rho_{ij})` (:mod:`proofs_check.cluster`,
:func:`cluster_absorption_level`, :func:`absorbing_tokens`); antipodal formations of more
than two tokens have none, and are never absorbed, but once both of their clusters are
certified tight :func:`absorbing_tokens` can hand them to the exact law of their
two-cluster formation (its ``formation`` hook, :mod:`spheresde.transformer._formation_finish`).

Another layer (:class:`spheresde.transformer.Layer`) has its own certificate where its
derived :math:`\rho`-SDE has :math:`\pm1` as equilibria: :func:`scale_levels` is this
quadrature for any z-SDE, :meth:`~spheresde.transformer.Layer.absorption_levels` asks it
of the layer's, and :func:`spheresde.transformer._layers.absorbing_layer` runs the
layer's two-token network with it (the n-token certificates are the paper's layer's).

:func:`run_in_segments` makes the saving real without compiling anything per live count:
the batch keeps one shape, cut on a CPU into blocks of lanes; a segment advances only the
blocks that hold live trajectories (their number is traced, as are the step counts), and
the absorbed ones are moved behind the live ones by a gather on the device when that
frees a block. The n-token status is computed on the device too, conservatively
(:func:`_device_threshold`), and the segment lengths follow measured costs; a run too
short to win back its first check runs in one call.
Each trajectory draws its randomness from its own key
(folded with the step), so a trajectory's path does not depend on which others are
still running: with and without absorption, the same seed gives the same trajectories.

The two-token network runs in the sum/difference coordinates of :mod:`spheresde.transformer._pair`,
where :math:`1 \pm \rho` keep their relative precision: in float32 the tokens
themselves cannot resolve :math:`1 + \rho` below about :math:`10^{-14}`, above the
antipodal levels at large :math:`\beta`. By default only the lengths :math:`|s|, |m|` are
carried (the Gram chain of :mod:`spheresde.transformer._pair`: the same law, the same normals, the
layer's arithmetic in :math:`\mathbb R^4` whatever :math:`d`).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from .._brownian import bit_signs
from .._small import inner
from ._normalization import NormalizationLike, normalization
from ._outcomes import ANTIPODAL, SINGLE, classify_rho
from ._rho import euler_step, outcome_threshold

_Z_STEP = 1e-3
_Z_SPAN = 60.0
_CPU_LANES = 256  # most lanes per block on a CPU (tests/benchmarks/bench_absorber.py)
_CPU_SPLIT = 8  # a batch of a few blocks' lanes or fewer is cut in this many blocks ...
_CPU_MIN_LANES = 32  # ... of at least this many lanes
_TAIL_LANES = 8  # lanes per block once at most _TAIL_LIVE trajectories live ...
_TAIL_LIVE = 64
_TAIL_WORK = 4_000_000  # ... where that saves at least this many lane-steps (_tail_block)
_OVERHEAD = 0.02  # a status check may cost this fraction of its segment
_WORTH = 0.25  # seconds: a run predicted cheaper than this is not split (a first check compiles)
LIVE = -1


@functools.cache
def absorption_levels(beta: float, d: float, eps: float, mu: float, tol: float,
                      bound: float) -> tuple[float, float]:
    r"""The levels :math:`(z_-, z_+)` in :math:`z = \operatorname{artanh}\rho` beyond which a
    two-token trajectory returns to the classification boundary with probability at most
    ``bound`` (see the module docstring); :math:`\mp\infty` where no level exists
    (``bound = 0``, or :math:`\rho = -1` not attracting, or the level beyond
    :math:`|z| = 60`). ``eps`` is the noise scale (:math:`\sigma` for pure noise)."""
    if bound <= 0:
        return -math.inf, math.inf
    from proofs_check.export import rho_coefficients

    return scale_levels(rho_coefficients("numpy"), (beta, d, eps, mu), outcome_threshold(tol),
                        bound)


def scale_levels(rc, args: tuple, edge: float, bound: float) -> tuple[float, float]:
    """:func:`absorption_levels` for any z-SDE: ``rc.z_drift(z, *args)`` and
    ``rc.z_diffusion(z, *args)`` (the paper's, or a layer's
    :meth:`~spheresde.transformer.Layer.absorption_levels`), boundary ``edge`` in z."""
    out = []
    for sign in (-1.0, 1.0):
        z = sign * (edge + np.arange(0.0, _Z_SPAN, _Z_STEP))
        # outward drift rate: 2 drift / diffusion^2 with z measured away from the boundary
        q = np.broadcast_to(np.asarray(
            sign * 2 * rc.z_drift(z, *args) / rc.z_diffusion(z, *args) ** 2, float), z.shape)
        # log S'(u), u = |z - boundary|: S' = exp(-int 2 drift / diffusion^2)
        log_density = -np.concatenate([[0.0], np.cumsum((q[1:] + q[:-1]) / 2 * _Z_STEP)])
        if not q[-1] > 0:  # S' does not decay outward: that end does not attract
            out.append(sign * math.inf)
            continue
        density = np.exp(log_density)
        pieces = (density[1:] + density[:-1]) / 2 * _Z_STEP
        tail = density[-1] / q[-1]  # int_end^inf exp(-q_inf u) S'(end)
        beyond = np.concatenate([np.cumsum(pieces[::-1])[::-1], [0.0]]) + tail
        chance = beyond / beyond[0]  # P(ever back to the boundary | z)
        hits = np.nonzero(chance <= bound)[0]
        out.append(sign * (edge + hits[0] * _Z_STEP) if hits.size else sign * math.inf)
    return out[0], out[1]


def _lane_block(lanes: int) -> int:
    """Lanes per block of the advance programs for a batch of ``lanes``.

    On a CPU a step of n tokens costs about the same per lane from 256 lanes up (a block
    of 256 is no slower per lane than one of 2048, and keeps its state in cache), so the
    batch is cut into blocks of at most :data:`_CPU_LANES` and a segment advances only the
    blocks that still hold live trajectories: the work follows the live count without a
    new program for each count. Each block pays the fixed cost of a step's operations;
    the two-token chains, a few flops a lane, feel it most (a block costs them 15-25 %
    more per lane than one batch while every lane lives). An accelerator's step of a few
    thousand lanes costs what one of a few hundred does (launch-bound), so there the batch
    is one block.

    A batch of fewer than :data:`_CPU_SPLIT` full blocks is cut into :data:`_CPU_SPLIT`
    blocks of at least :data:`_CPU_MIN_LANES` lanes: a chunk of 240 trajectories in one
    block ran every lane to the horizon for its last live one (a ``dominance`` point of 16
    tokens at d = 3: 1.85 s in one block, 0.62 s in blocks of 30, the same codes), at
    the price of about 20 % more per lane while all of them live.
    """
    if jax.default_backend() != "cpu":
        return lanes
    target = min(_CPU_LANES, max(_CPU_MIN_LANES, -(-lanes // _CPU_SPLIT)))
    return -(-lanes // -(-lanes // target))


def _over_lanes(run: Callable, lanes, blocks, block: int | None):
    """``run`` on the first ``blocks`` blocks of ``block`` lanes of the pytree ``lanes``
    (trajectory axis first; ``blocks`` traced, so one program serves every live count),
    the lanes after them left as they are; ``block=None``: ``run`` on all lanes at once."""
    if block is None:
        return run(lanes)

    def one(b, lanes):
        part = run(jax.tree.map(lambda a: jax.lax.dynamic_slice_in_dim(a, b * block, block),
                                lanes))
        return jax.tree.map(lambda a, p: jax.lax.dynamic_update_slice_in_dim(a, p, b * block, 0),
                            lanes, part)

    return jax.lax.fori_loop(0, blocks, one, lanes)


def _tail_block(block: int, used: int, live: int, left: int, lanes: int) -> int:
    """The block size for the ``live`` trajectories left with ``left`` steps to go, in a
    batch of ``lanes`` lanes of which the first ``used`` were advanced in blocks of
    ``block`` so far.

    The last few live trajectories of a chunk (near the critical beta, a handful of 10,000
    that neither certificate reaches for tens of thousands of layers) kept a block of 256
    lanes running: two thirds of a two-token chunk's time at the paper's sizes
    (``phase``, d = 10, beta = 1.4: 2.9 of 4.4 s). On a CPU a step of a block of 8 lanes
    costs a twelfth of one of 256 (6 against 71 microseconds, the two-token chain at
    d = 10), so at most :data:`_TAIL_LIVE` live ones go on in blocks of
    :data:`_TAIL_LANES`. That is one more program per batch shape, so it is done only where
    it saves at least :data:`_TAIL_WORK` lane-steps (about a second of a block of 256,
    about what compiling costs; a short run never pays for it). The rule counts lanes and
    steps, so which runs switch depends on the seed and the sizes, not on the machine;
    and each lane's path is its own (its key, its layers), so the switch changes no
    trajectory.
    """
    if jax.default_backend() != "cpu" or block <= _TAIL_LANES or live > _TAIL_LIVE:
        return block
    tail = -(-live // _TAIL_LANES) * _TAIL_LANES
    if tail <= lanes and left * (used - tail) >= _TAIL_WORK:
        return _TAIL_LANES
    return block


@jax.jit
def _take_lanes(state: tuple, index) -> tuple:
    """The lanes ``index`` of every array of ``state``, on the device (one program per
    shape of ``state`` and ``index``: padding at the start, then every compaction)."""
    return tuple(jnp.take(a, index, axis=0) for a in state)


def run_in_segments(advance: Callable, state: tuple, status: Callable | None,
                    finish: Callable, *, steps: int, segment: int | None = None,
                    unit: int = 16) -> tuple[np.ndarray, int]:
    """Advance a batch of trajectories a segment at a time, leaving absorbed ones behind.

    ``state`` is a tuple of device arrays with the trajectory axis first. It is padded
    once to whole blocks of :func:`_lane_block` lanes and keeps that shape: absorbed
    trajectories are moved behind the live ones (a gather on the device) only when that
    frees a whole block, and ``advance(state, start, count, blocks=k, block=b)`` moves
    the first ``k`` blocks of ``b`` lanes by ``count`` steps from step ``start`` (both
    traced by the caller's programs, so no live count compiles anything). ``status(state, live)``
    gives, per lane, an outcome code once it is absorbed and :data:`LIVE` otherwise (only
    the ``live`` lanes' codes are read)
    (``None``: nothing can be absorbed, and the whole horizon is one call of one block);
    ``finish(state, live)`` the outcome codes at the horizon of every lane (``live``: the
    lanes whose codes are used). Returns the outcome codes in the original order and the
    trajectory-steps actually simulated (padding and absorbed lanes not counted).

    ``segment``: steps between status checks, a multiple of ``unit`` (the caller's
    steps per random draw). ``None``: measured. The first two segments of about
    ``steps / 16`` time a step (the first may compile); a run predicted to cost less than
    :data:`_WORTH` seconds then ends in one call (the first check compiles its programs,
    which such a run cannot win back); after that each segment is the shortest multiple
    of ``unit`` whose predicted cost makes the last check's cost at most
    :data:`_OVERHEAD` of it, and at most ``steps / 8``. The work then depends on timings
    (the codes only where a certificate changes a class, probability at most its bound).
    """
    full = state[0].shape[0]
    codes = np.full(full, LIVE, dtype=np.int64)
    if status is None:
        return np.asarray(finish(advance(state, 0, steps, blocks=1, block=None),
                                 np.ones(full, bool))), full * steps
    block = _lane_block(full)
    blocks = -(-full // block)
    order = np.arange(blocks * block)  # the trajectory at each lane
    live = order < full
    if blocks * block > full:  # padding: copies of the first lanes, never counted
        state = _take_lanes(state, jnp.asarray((order % full).astype(np.int32)))
    order[~live] = -1
    longest = max(unit, steps // 8 // unit * unit)
    opening = max(unit, steps // 16 // unit * unit)
    rate = check = 0.0  # seconds: per block-step, and of the last check
    work = done = timed = 0
    while done < steps:
        if segment is not None:
            count = segment
        elif timed < 2:
            count = opening
        else:
            count = -(-check / (_OVERHEAD * rate * blocks) // unit) * unit
            count = int(min(max(count, unit), longest))
        count = min(count, steps - done)
        started = time.perf_counter()
        state = jax.block_until_ready(advance(state, done, count, blocks=blocks, block=block))
        if segment is None:
            timed += 1
            rate = (time.perf_counter() - started) / (count * blocks)
        work += int(np.sum(live)) * count
        done += count
        if done == steps:
            break
        if segment is None and timed < 2:
            continue  # no check yet: the second segment times a step without compiling
        if segment is None and timed == 2 and (steps - done) * blocks * rate < _WORTH:
            segment = steps - done
            continue
        started = time.perf_counter()
        now = np.asarray(status(state, live))
        absorbed = live & (now != LIVE)
        codes[order[absorbed]] = now[absorbed]
        live &= ~absorbed
        if not live.any():
            break
        used, count_live = blocks * block, int(np.sum(live))
        block = _tail_block(block, used, count_live, steps - done, order.size)
        needed = -(-count_live // block)
        if needed * block < used:
            # live lanes first, in their order: the blocks behind them are never advanced
            pick = np.argsort(~live, kind="stable")
            state = _take_lanes(state, jnp.asarray(pick.astype(np.int32)))
            order, live, blocks = order[pick], live[pick], needed
        check = time.perf_counter() - started
    if live.any():
        codes[order[live]] = np.asarray(finish(state, live))[live]
    return codes, work


# --------------------------------------------------------------- the reduced SDE of rho

_BITS = 32


@functools.partial(jax.jit, static_argnames=("block",))
def _advance_rho(z, keys, start, count, beta, d, eps, mu, dt, *, blocks=1, block=None):
    """``count`` Euler steps in z from step ``start`` (a multiple of 32): one random word
    per lane per 32 steps. Both are traced, so one program serves every segment; so is
    ``blocks``, the leading blocks of ``block`` lanes advanced (:func:`_over_lanes`)."""
    from .two_token._monte_carlo import _z_coefficients

    coefficients = _z_coefficients()
    sqrt_dt = jnp.sqrt(dt)

    def run(lanes):
        z, keys = lanes

        def word(w, z):
            bits = jax.vmap(lambda k: jax.random.bits(
                jax.random.fold_in(k, start // _BITS + w), (), jnp.uint32))(keys)

            def step(i, z):
                t = jnp.tanh(z)
                drift, diffusion = coefficients(jnp.exp(-beta * (1 - t)), t, beta, d, eps, mu)
                return euler_step(z, drift, diffusion, dt,
                                  sqrt_dt * bit_signs(bits, i, z.dtype))

            return jax.lax.fori_loop(0, jnp.minimum(_BITS, count - w * _BITS), step, z)

        return jax.lax.fori_loop(0, (count + _BITS - 1) // _BITS, word, z), keys

    return _over_lanes(run, (z, keys), blocks, block)[0]


def absorbing_rho(key, *, beta: float, d: int, eps: float, mu: float, trajectories: int,
                  layers: int, steps: int, tol: float, bound: float,
                  segment: int = 1024, dtype=None) -> tuple[np.ndarray, int]:
    r"""Outcome codes of ``trajectories`` two-token pairs under the reduced SDE of
    :math:`\rho` (Ito Euler in :math:`z`, two-point increments as
    :func:`spheresde.two_token.simulate_rho`), with early absorption at ``bound``.

    ``steps`` steps of ``dt = 1/layers`` (the caller's ``network_depth``
    of its horizon, the count every method of a run takes). Starts: two independent
    uniform tokens. Trajectory ``i`` takes its increments from
    its own key (``fold_in(key, i)``), 32 steps per random word. Returns the codes and
    the trajectory-steps simulated. ``dtype``: default float (float64 under
    ``JAX_ENABLE_X64``, float32 otherwise).
    """
    dtype = dtype or jnp.result_type(float)
    dt = 1.0 / layers
    # segments start on a random word: a multiple of 32 steps, about 8 per horizon or more
    segment = max(_BITS, min(segment, steps // 8) // _BITS * _BITS)
    z_lo, z_hi = absorption_levels(float(beta), float(d), float(eps), float(mu), float(tol),
                                   float(bound))
    start_key, path_key = jax.random.split(key)
    half = (d - 1) / 2
    u = jax.random.beta(start_key, half, half, (trajectories,), dtype=dtype)
    z0 = 0.5 * (jnp.log(u) - jnp.log1p(-u))
    keys = jax.vmap(lambda i: jax.random.fold_in(path_key, i))(jnp.arange(trajectories))
    scalars = [jnp.asarray(v, dtype) for v in (beta, d, eps, mu, dt)]

    def advance(state, start, count, **lanes):
        z, lane_keys = state
        return _advance_rho(z, lane_keys, start, count, *scalars, **lanes), lane_keys

    def status(state, live):
        z = np.asarray(state[0], float)
        return np.where(z >= z_hi, SINGLE, np.where(z <= z_lo, ANTIPODAL, LIVE))

    def finish(state, live):
        return classify_rho(np.tanh(np.asarray(state[0], float)), tol)

    certified = math.isfinite(z_lo) or math.isfinite(z_hi)  # else the horizon is one call
    return run_in_segments(advance, (z0, keys), status if certified else None, finish,
                           steps=steps, segment=segment)


# --------------------------------------------------------------- the discrete network, n = 2

_BLOCK = 16  # layers per random draw of a lane (one fold_in per block)


def _blocks(layer, state, keys, start, count, shape, dtype, noisy, columns=lambda z: z, *,
            blocks=1, block=None):
    """``count`` layers from layer ``start`` (a multiple of the block): ``layer(state, z)``
    with ``z`` the layer's ``(trajectories, *shape)`` standard normals, drawn a block at a
    time from each lane's key folded with the block's index, as ``columns`` maps them
    (over the whole block, before the loop over its layers); only on the first ``blocks``
    blocks of ``block`` lanes (:func:`_over_lanes`)."""

    def run(lanes):
        state, keys = lanes
        size = keys.shape[0]

        def draw(b, state):
            first = start // _BLOCK + b
            if noisy:
                # one flat draw per lane: several times faster on CPU than a (block, *shape)
                z = jax.vmap(lambda key: jax.random.normal(
                    jax.random.fold_in(key, first), (_BLOCK * math.prod(shape),), dtype))(keys)
                z = z.reshape(size, _BLOCK, *shape)
            else:
                z = jnp.zeros((size, _BLOCK, *shape), dtype)
            z = jnp.moveaxis(columns(z), 1, 0)
            return jax.lax.fori_loop(0, jnp.minimum(_BLOCK, count - b * _BLOCK),
                                     lambda i, state: layer(state, z[i]), state)

        return jax.lax.fori_loop(0, (count + _BLOCK - 1) // _BLOCK, draw, state), keys

    return _over_lanes(run, (state, keys), blocks, block)[0]


@functools.partial(jax.jit, static_argnames=("noisy", "norm", "block"))
def _advance_pair(s, m, keys, start, count, beta, drift_step, noise_step, *, noisy, norm="rms",
                  blocks=1, block=None):
    """``count`` layers from layer ``start`` (a multiple of the block; both traced: one
    program per batch shape) of the two-token network in pair coordinates, on the first
    ``blocks`` blocks of ``block`` lanes (:func:`_over_lanes`)."""
    from ._pair import pair_layer, pair_noise

    def one(sm, z):
        xi_s, xi_m = pair_noise(*sm, z)
        return pair_layer(*sm, xi_s, xi_m, beta, drift_step, noise_step, norm)

    return _blocks(one, (s, m), keys, start, count, (2, s.shape[-1]), s.dtype, noisy,
                   blocks=blocks, block=block)


@functools.partial(jax.jit, static_argnames=("noisy", "width", "block"))
def _advance_gram(a, b, keys, start, count, beta, drift_step, noise_step, *, noisy, width,
                  blocks=1, block=None):
    """As :func:`_advance_pair` on the lengths ``a = |s|``, ``b = |m|`` (``(lanes, 1)``) of
    the Gram chain of :mod:`spheresde.transformer._pair` in dimension ``width``: the same normals a
    layer, reduced to the Bartlett factor where they are drawn."""
    from ._pair import gram_columns, gram_pair_layer

    def one(ab, g):
        return gram_pair_layer(*ab, g, beta, drift_step, noise_step)

    return _blocks(one, (a, b), keys, start, count, (2, width), a.dtype, noisy,
                   gram_columns, blocks=blocks, block=block)


def absorbing_network(key, *, beta: float, d: int, weights, trajectories: int, layers: int,
                      steps: int, tol: float, bound: float,
                      segment: int = 256, norm: NormalizationLike = "rms", chain: str = "gram",
                      dtype=None) -> tuple[np.ndarray, int]:
    r"""Outcome codes of ``trajectories`` runs of the discrete network with two uniform
    tokens (:func:`spheresde.transformer.simulate_network`'s layer, unit radius, identity Q and K),
    with early absorption at ``bound`` (0: none), for ``steps`` layers (the caller's
    ``network_depth`` of its horizon). Without noise (constant weights) only the single
    cluster is absorbed, with certainty, at :func:`cone_absorption_level`.

    The pair is carried by :math:`s = X_1 + X_2` and :math:`m = X_1 - X_2`
    (:mod:`spheresde.transformer._pair`: the same layer, exact in law, with :math:`1 \pm \rho`
    kept to relative precision), so the antipodal level of the scale function is
    reachable in float32. Trajectory ``i`` draws the noise of layers
    ``16 j .. 16 j + 15`` from ``fold_in(fold_in(key, i), j)``, so its path does not
    depend on the others or on when they are absorbed.

    ``norm="layer"``: the LayerNorm network (:func:`~spheresde.transformer._pair.pair_layer`;
    the start is the uniform one centred and normalized, as
    :func:`spheresde.transformer.simulate_network`'s), with no absorption: its certificate
    would need the derived two-token law that the LayerNorm runs are there to check.
    ``dtype``: of the tokens (default float).

    ``chain="gram"`` (the default: ``tests/benchmarks/bench_gram_chain.py``) carries only
    :math:`|s|, |m|` with the Gram chain of :mod:`spheresde.transformer._pair`, the same law
    from the same normals with arithmetic that does not grow with :math:`d`; LayerNorm as that
    chain in dimension :math:`d - 1`, except at :math:`d = 2`, where the hyperplane is a
    line and the vector chain runs. ``chain="vectors"``: :math:`s, m` in
    :math:`\mathbb R^d` (:func:`spheresde.transformer._pair.pair_layer`).

    ``segment``: layers between status checks. Most pairs are certified within a few
    hundred layers; at the paper's Figure 3 sizes (10,000 pairs, 50,000 layers, d = 7 and
    10) checks every 512 layers simulated 1.3 to 1.6 times the trajectory-layers of checks
    every 256, and took 1.3 to 1.4 times as long (128: 2 to 6 % less than 256).
    """
    from .._geometry import sample_uniform
    from ._network import normalize

    norm = normalization(norm)
    if not norm.paper:  # the certificate is the paper's two-token law
        bound = 0.0
    if chain not in ("gram", "vectors"):
        raise ValueError(f"chain must be 'gram' or 'vectors', got {chain!r}")
    # the dimension the pair moves in: LayerNorm's hyperplane has d - 1
    width = d - norm.directions
    gram = chain == "gram" and width >= 2

    segment = max(_BLOCK, min(segment, steps // 8) // _BLOCK * _BLOCK)
    mu, eps = weights.limit()
    drift_step, noise_step = (float(v) for v in weights.layer_steps(layers))
    noisy = noise_step != 0.0
    z_lo, z_hi = absorption_levels(float(beta), float(d), float(eps), float(mu), float(tol),
                                   float(bound) if noisy else 0.0)
    gap_single = 2 / (1 + math.exp(2 * z_hi)) if math.isfinite(z_hi) else -1.0  # 1 - rho_+
    if not noisy:  # certain: rho never decreases without noise (proofs_check.cone)
        gap_single = cone_absorption_level(float(tol), float(bound)) or -1.0
    gap_anti = 2 / (1 + math.exp(-2 * z_lo)) if math.isfinite(z_lo) else -1.0  # 1 + rho_-
    start_key, path_key = jax.random.split(key)
    x0 = normalize(sample_uniform(start_key, (trajectories, 2), d, dtype), norm)
    keys = jax.vmap(lambda i: jax.random.fold_in(path_key, i))(jnp.arange(trajectories))
    scalars = [jnp.asarray(v, x0.dtype) for v in (beta, drift_step, noise_step)]

    def advance(state, start, count, **lanes):
        s, m, lane_keys = state
        if gram:
            return (*_advance_gram(s, m, lane_keys, start, count, *scalars, noisy=noisy,
                                   width=width, **lanes), lane_keys)
        return (*_advance_pair(s, m, lane_keys, start, count, *scalars, noisy=noisy,
                               norm=norm, **lanes), lane_keys)

    def gaps(state):  # (1 - rho, 1 + rho), each to relative precision
        s, m = (np.asarray(a, float) for a in state[:2])
        return np.sum(m * m, axis=-1) / 2, np.sum(s * s, axis=-1) / 2

    def status(state, live):
        minus, plus = gaps(state)
        return np.where(minus < gap_single, SINGLE, np.where(plus < gap_anti, ANTIPODAL, LIVE))

    def finish(state, live):
        minus, plus = gaps(state)
        return classify_rho(np.where(minus < plus, 1 - minus, plus - 1), tol)

    s, m = x0[:, 0] + x0[:, 1], x0[:, 0] - x0[:, 1]
    if gram:  # the lengths carry the state (gaps() reads |m|^2/2, |s|^2/2 as before)
        s, m = (jnp.sqrt(inner(v, v)) for v in (s, m))
    certified = gap_single > 0 or gap_anti > 0  # else the horizon is one call
    return run_in_segments(advance, (s, m, keys), status if certified else None, finish,
                           steps=steps, segment=segment)


# --------------------------------------------------------------- n tokens near the cluster

_LEVELS = np.ldexp(1.0, -np.arange(48))  # v_1 / tol tried: 1, 1/2, ..., 2^-47
_EXPONENTS = 128  # exponents p tried: p_max * j / 128, j = 1 .. 127


@functools.cache
def cluster_absorption_level(tokens: int, beta: float, d: int, eps: float, mu: float,
                             tol: float, bound: float) -> float:
    r"""The gap level :math:`v_{\mathrm{abs}}` below which ``tokens`` tokens are absorbed as a
    single cluster: from :math:`V = \sum_{i<j}(1-\rho_{ij}) < v_{\mathrm{abs}}` the limit SDE
    ever reaches :math:`V = v_1 \le \mathrm{tol}` (the only way to leave the class *single*)
    with probability at most ``bound``.

    The certificate of :mod:`proofs_check.cluster` (lambdified, nothing retyped): for
    :math:`(v_1, p)` with :math:`B_p(v_1) \le 0`, :math:`V^p` is a supermartingale on
    :math:`\{V < v_1\}` and :math:`v_{\mathrm{abs}} = v_1\,\delta^{1/p}`. The pairs tried
    are :math:`v_1 = \mathrm{tol}\,2^{-k}` (:math:`k < 48`) and
    :math:`p = p_{\max} j/128`; the largest certified level is returned. ``eps`` is the
    noise scale (:math:`\sigma` for pure noise), ``mu`` the hybrid drift.

    Returns 0.0, *no certificate* (never absorb), when ``bound`` is 0, without noise
    (``eps = 0``: nothing is random to bound), for ``d < 3`` (the bounds assume it) or
    when no pair tried passes.
    """
    if bound <= 0 or eps <= 0 or d < 3 or tokens < 2:
        return 0.0
    from proofs_check.export import cluster_certificate

    cert = cluster_certificate("numpy")
    p = float(cert["p_max"](d, eps, mu)) * np.arange(1, _EXPONENTS) / _EXPONENTS
    v1 = tol * _LEVELS
    grid_v, grid_p = np.meshgrid(v1, p, indexing="ij")
    args = (tokens, beta, d, eps, mu)
    below = np.where(cert["g"](grid_v, tokens, beta) > 0,
                     cert["below_one"](grid_v, grid_p, *args), np.inf)
    sign = np.where(grid_p < 1, below, cert["from_one"](grid_v, grid_p, *args))
    # a margin far above rounding: a pair on the edge is not certified
    certified = sign <= -1e-9 * eps**2
    if not certified.any():
        return 0.0
    return float(np.max(np.where(certified, grid_v * bound ** (1 / grid_p), 0.0)))


@functools.partial(jax.jit, static_argnames=("noisy", "block"))
def _advance_tokens(x, keys, start, count, beta, drift_step, noise_step, *, noisy=True,
                    blocks=1, block=None):
    """``count`` layers from layer ``start`` (a multiple of the block; both traced) of the
    network with ``full`` noise, one flat normal draw per lane and block of 16 layers
    (``noisy=False``: no draws, the noiseless network), on the first ``blocks`` (traced)
    blocks of ``block`` lanes (:func:`_over_lanes`; ``None``: all lanes)."""
    from ._network import layer

    d = x.shape[-1]
    one_layer = jax.vmap(lambda x, z: layer(x, z, beta, None, None, drift_step, noise_step,
                                            "full", 1.0))
    return _blocks(one_layer, x, keys, start, count, (d, d), x.dtype, noisy, blocks=blocks,
                   block=block)


def cone_absorption_level(tol: float, bound: float) -> float:
    r"""The spread :math:`\max_{i<j}(1 - \rho_{ij})` below which tokens of the *noiseless*
    network (constant weights :math:`V = I`) are absorbed as a single cluster:
    ``tol / 2``, or 0.0 (never absorb) when ``bound`` is 0.

    Certain, not probable: each noiseless layer makes every token a non-negative
    combination of the tokens, so :math:`\min \rho_{ij}` never decreases
    (:mod:`proofs_check.cone`, a row of the report) and a spread below ``tol`` stays below
    it to the horizon, whatever ``bound``. The factor 1/2 is a margin against rounding.
    """
    return tol / 2 if bound > 0 else 0.0


def _distances(x, xp=np):
    r""":math:`|X_i - X_j|^2` of tokens ``(..., n, d)``, ``(..., n, n)``, from the
    differences (which keep their relative precision where :math:`1 - \rho` would round
    to 0), with ``xp`` (NumPy or :mod:`jax.numpy`)."""
    diff = x[..., :, None, :] - x[..., None, :, :]
    return xp.sum(diff * diff, axis=-1)


def _spread(x, xp=np):
    return xp.max(_distances(x, xp), axis=(-2, -1)) / 2


def _gap(x, xp=np):
    return xp.sum(_distances(x, xp), axis=(-2, -1)) / 4


def token_spread(x) -> np.ndarray:
    r""":math:`\max_{i<j}(1 - \rho_{ij}) = \max_{i<j}\tfrac12|X_i - X_j|^2` of unit tokens
    ``(..., n, d)``, in float64 from the differences (as :func:`token_gap`)."""
    return _spread(np.asarray(x, float))


def token_gap(x) -> np.ndarray:
    r""":math:`V = \sum_{i<j}(1 - \rho_{ij}) = \tfrac12\sum_{i<j}|X_i - X_j|^2` of unit tokens
    ``(..., n, d)``, in float64 from the differences (which keep their relative precision
    where :math:`1 - \rho` would round to 0)."""
    return _gap(np.asarray(x, float))


def _device_threshold(level: float, tokens: int, d: int, dtype) -> float:
    r"""The threshold that :func:`_cluster_status` compares its gap (or spread) with, in
    ``dtype``: absorbing below it certifies :math:`V < ` ``level`` for the stored tokens.

    The gap of :func:`token_gap` is a sum of :math:`m = n^2 d` squares of differences of
    the stored tokens, each difference rounded once (exact where the coordinates are
    within a factor 2, Sterbenz), each square once and the sum at most :math:`m - 1`
    times, all of non-negative terms: in ``dtype`` with unit roundoff :math:`u` the
    computed value is at least :math:`(1 - (m + 2)u)` times the exact one (with room:
    :math:`(m + 2)\,\epsilon = 2(m + 2)u` is taken off). The spread (a maximum of such
    sums) obeys the same bound. So the level is lowered by that factor and rounded down
    to ``dtype``; below the smallest normal number (flushed to zero, so no margin holds)
    nothing is absorbed. The decision is then conservative against the float64 one of
    :func:`token_gap`: it may wait a segment longer near the level, never absorb earlier.
    """
    info = np.finfo(dtype)
    shrunk = np.asarray(level * (1 - (tokens * tokens * d + 2) * float(info.eps)), dtype)
    if shrunk > level:
        shrunk = np.nextafter(shrunk, np.asarray(0, dtype))
    return float(shrunk) if shrunk >= info.tiny else 0.0


@functools.partial(jax.jit, static_argnames=("spread",))
def _cluster_status(x, threshold, *, spread):
    """:data:`SINGLE` where the gap (``spread``: the spread) of the tokens ``x`` is below
    ``threshold`` (:func:`_device_threshold`), :data:`LIVE` elsewhere: on the device, one
    program per batch shape."""
    size = (_spread if spread else _gap)(x, jnp)
    return jnp.where(size < threshold, SINGLE, LIVE).astype(jnp.int8)


def absorbing_tokens(key, *, tokens: int, beta: float, d: int, weights, trajectories: int,
                     layers: int, steps: int, tol: float, bound: float,
                     segment: int | None = None, dtype=None,
                     formation=None) -> tuple[np.ndarray, np.ndarray, int]:
    r"""Outcome codes of ``trajectories`` runs of the discrete network with ``tokens``
    independent uniform tokens (:func:`spheresde.transformer.simulate_network`'s layer, unit radius,
    identity Q and K, ``full`` noise) for ``steps`` layers (the caller's ``network_depth``
    of its horizon), absorbed as single once the gap
    :math:`V = \sum_{i<j}(1-\rho_{ij})` is below :func:`cluster_absorption_level` at a segment
    boundary (``bound = 0``: never). Constant weights (no noise) are absorbed, with
    certainty, once :func:`token_spread` is below :func:`cone_absorption_level`, and draw
    no normals. The gap is compared on the device, conservatively
    (:func:`_device_threshold`).

    Trajectory ``i`` draws the noise of layers ``16 j .. 16 j + 15`` from
    ``fold_in(fold_in(key, i), j)``, so its path does not depend on the others or on when
    they are absorbed: with and without absorption the same seed gives the same paths, and
    a classification changes only where an absorbed trajectory would have left the cluster
    (probability at most ``bound`` each). Classification at the horizon:
    :func:`spheresde.transformer._outcomes.classify`.

    ``formation``: a :class:`~spheresde.transformer._formation_finish.FormationFinish` (or
    None): live trajectories whose two clusters it certifies tight at a segment boundary get
    the code :data:`~spheresde.transformer._formation_finish.FINISHED`, and it keeps their
    outcome probabilities under the formation's law for the remaining layers.

    ``segment``: layers between checks, a multiple of 16 (default: chosen from measured
    costs by :func:`run_in_segments`, or 512 with a ``formation``, which reads the depths
    left at fixed boundaries); where nothing can be absorbed the horizon is one call.

    Returns the codes, the smaller cluster's size of each antipodal sample (in trajectory
    order) and the trajectory-steps simulated.
    """
    from .._geometry import sample_uniform
    from ._outcomes import classify, cluster_sizes

    mu, eps = weights.limit()
    drift_step, noise_step = (float(v) for v in weights.layer_steps(layers))
    noisy = noise_step != 0.0
    if noisy:
        level = cluster_absorption_level(tokens, float(beta), d, float(eps), float(mu),
                                         float(tol), float(bound))
    else:
        level = cone_absorption_level(float(tol), float(bound))
    start_key, path_key = jax.random.split(key)
    x0 = sample_uniform(start_key, (trajectories, tokens), d, dtype)
    keys = jax.vmap(lambda i: jax.random.fold_in(path_key, i))(jnp.arange(trajectories))
    scalars = [jnp.asarray(v, x0.dtype) for v in (beta, drift_step, noise_step)]
    threshold = jnp.asarray(_device_threshold(level, tokens, d, x0.dtype), x0.dtype)
    minority = np.zeros(trajectories, np.int64)
    layers_done = [0]  # formation finish: the layers behind the next status
    if formation is not None and segment is None:
        segment = 512
    if segment is not None:
        segment = max(_BLOCK, min(segment, steps // 8) // _BLOCK * _BLOCK)
    if formation is not None:  # formation finish
        formation.begin(trajectories, steps, segment)

    def advance(state, start, count, **lanes):
        x, lane_keys, order = state
        layers_done[0] = start + count  # formation finish
        return (_advance_tokens(x, lane_keys, start, count, *scalars, noisy=noisy, **lanes),
                lane_keys, order)

    def status(state, live):
        codes = _cluster_status(state[0], threshold, spread=not noisy)
        if formation is None:
            return codes
        # formation finish: only live lanes are candidates (the others hold absorbed,
        # finished or padding copies of trajectories)
        codes = np.where(live, np.asarray(codes), SINGLE)
        return formation.status(state[0], state[2], codes, layers_done[0])

    def finish(state, live):
        x, _, order = state
        minority[np.asarray(order)[live]] = np.asarray(cluster_sizes(x))[live, 1]
        return np.asarray(classify(x, tol))

    checked = threshold > 0 or formation is not None  # else the horizon is one call
    codes, work = run_in_segments(advance, (x0, keys, jnp.arange(trajectories)),
                                  status if checked else None, finish, steps=steps,
                                  segment=segment, unit=_BLOCK)
    return codes, minority[codes == ANTIPODAL], work


__all__ = ["LIVE", "absorbing_network", "absorbing_rho", "absorbing_tokens",
           "absorption_levels", "cluster_absorption_level", "cone_absorption_level",
           "run_in_segments", "scale_levels", "token_gap", "token_spread"]
