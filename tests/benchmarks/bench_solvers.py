"""Benchmark: the two-token Transformer SDE (docs: theory pages) with three integrators.

n = 2 tokens on S^3 (d = 4), beta = 2, sigma = 1 (pure noise, full d x d noise),
horizon T = 40, dt = 0.01 (4,000 steps), 4,000 independent paths from independent
uniform tokens:

(a) ``spheresde.solve_batch`` with the default Ito solver (GeodesicEuler): ONE
    ``diffeqsolve`` on the stacked state (paths, n, d), one Brownian path of shape
    (paths, d, d); (a-span) the same on the ``noise="span"`` form of the SDE (d x n
    normals per step instead of d x d: the same law for one-evaluation Ito steps,
    DESIGN "span trick"); (a-weak), (a-span-weak) the same with ``brownian="weak"``
    (two-point increments, one random bit per entry: weak order 1, the law only). With
    ``--variants`` also ``Retracted(diffrax.Euler())`` and the per-path form
    ``solve_batch(..., stacked=False)`` (jax.vmap of ``solve``);
(b) ``diffrax.Euler`` on the same stacked SDE (``diffrax.diffeqsolve`` with
    ConstantStepSize, UnsafeBrownianPath), normalized only at the end; (b-weak) the
    same driven by ``spheresde.WeakBrownianPath``;
(c) a straightforward NumPy loop: per step, Euler--Maruyama then normalization,
    vectorized over paths (float64, NumPy's default generator, one core).

Two more rows bound what is possible: the time to draw the same normals alone, one
(paths, d, d) array per step, in JAX (inside one jitted ``fori_loop``) and in NumPy.
Wall times exclude compilation (ahead of time, ``jax.jit(...).lower(...).compile()``),
which is reported separately; every JAX variant runs ``--repeats`` times in interleaved
rounds and the median is reported (single runs on the development machine varied by
up to 30%). JAX sees ``--cpu-devices`` devices (default: every core), and
``solve_batch`` (and, for a fair comparison, (b)) split the paths over them. (Inside
``jax.jit`` the starts are tracers, so ``solve_batch`` skips its value checks there;
they are shape checks only.) Run explicitly (it is not a test)::

    python tests/benchmarks/bench_solvers.py [--paths 4000] [--float64] [--variants]
        [--key-impl unsafe_rbg] [--cpu-devices 1] [--repeats 3]

The development machine (2 idle cores, float32, threefry keys, 2026-11-29 23:50 UTC),
default ``--cpu-devices 2``; wall seconds, median of 3 (min-max)::

    (a)           default (GeodesicEuler)        6.43  (6.37-6.60)   norm err 1.8e-7
    (a-span)      span noise                     5.52  (5.48-5.77)   norm err 1.8e-7
    (a-weak)      two-point increments           1.26  (1.26-1.28)   norm err 1.8e-7
    (a-span-weak) span + two-point               1.44  (1.41-1.47)   norm err 1.8e-7
    (b)           diffrax.Euler + final norm.    8.84  (8.79-9.24)
    (b-weak)      the same, two-point            1.13  (1.13-1.21)
    JAX normals alone (256 M)                    5.38
    NumPy normals alone (256 M, float64)         4.30
    (c)           NumPy loop (one run)          26.16
    (a)/(b) = 0.73, (a-weak)/(b-weak) = 1.12; (c)/(a) = 4.1x, (c)/(a-span) = 4.7x,
    (c)/(a-weak) = 20.7x, (c)/(a-span-weak) = 18.2x; bound (c)/(JAX normals) = 4.9x.
    Antipodal fractions 0.277-0.290, +- 0.007 each (exact: 0.2811).

``--cpu-devices 1``, minutes later (the one-device runs were the noisy ones): (a) 10.65
(7.74-12.37), (a-span) 7.38, (a-weak) 2.84 (2.15-3.36), (a-span-weak) 2.50, (b) 10.41
(10.15-15.53), (b-weak) 1.89, JAX normals 8.62, (c) 26.98: (a)/(b) = 1.02,
(c)/(a-weak) = 9.5x.

How the time came down (the previous record, 2026-11-29 22:10, one device: (a) 22.2 s,
(b) 18.4 s, (c) 26.3 s): sums over the axes of length d and n written as sums of
slices (``spheresde._small``), which XLA on CPU vectorizes over the paths where it
compiled ``jnp.sum`` and ``@`` on 2 x 4 blocks into slow loops; the geodesic step
without the division of ``project_tangent`` (a Newton factor for 1/|y| keeps rounding
from accumulating instead); two-point increments (drawing normals is most of the cost
with Gaussian noise: JAX's normals alone take 5.4 s of (a)'s 6.4 s); and the split over
the two cores. The 20x target over NumPy is reached with two-point increments only:
with Gaussian draws no JAX scheme can beat (c) by more than the bound (c)/(JAX normals),
5x here. Tried without gain: ``unsafe_rbg``/``rbg`` keys; XLA flags (fast math, vector
width, fusion emitters); vmapping the SDE over a last paths axis (JAX's batching rules
move the batch axis back to the front); the normals drawn as (d, d, paths) and
transposed were faster alone (1.0 s vs 1.5 s per 1,000 steps) but are not Diffrax's
path. Diffrax's own loop costs about 10 us a step (4,000 steps of 8 paths: 0.04 s).

``--stratonovich`` (Brownian motion on S^2, 20,000 paths x 600 steps, float32, one
device: ``--stratonovich --paths 20000 --horizon 1 --dt 0.0016666666666666668
--cpu-devices 1``), 2026-12-01 10:27 UTC, a loaded machine, ratios to
Retracted(diffrax.Heun()) measured in the same rounds; all three have the same weak
error on E<X_T, X_0>^2 (+0.0026 to +0.0029 +- 0.0022)::

    before (45a9de6)  Midpoint 2.67 s (3.52x)  Heun 2.97 s (3.91x)  Retracted(Heun) 0.76 s
    now               Midpoint 0.87 s (1.34x)  Heun 0.90 s (1.38x)  Retracted(Heun) 0.65 s

The gain: no second projection of the (tangent) Stratonovich increments, whose sums
over coordinates XLA on CPU fused into every consumer, recomputing the vector fields.
The rest of the gap is not the trigonometry of the exponential map: a trig-free Cayley
retraction in its place was 5x slower, not faster (the same fusion effect, through
its own sums over coordinates); it stays open.

``--brownian`` (Brownian motion on S^2, ``--brownian --paths 20000 --horizon 1 --dt 0.001
--cpu-devices 1 [--float64]``): the default schemes against Diffrax's own steps with a
normalization after every step (what a careful user writes), ratios in the same
rounds. 2026-12-01 22:00-22:15 UTC, a machine loaded to 10-20x its two cores (so
seconds are inflated; the ratios are what counts), the geodesic schemes with the
trigonometry-free exponential map and the two-stage schemes' evaluations in one
``lax.scan`` (commit 87c39a3)::

                                   float64: wall  ratio   float32: wall  ratio
    diffrax.Euler + normalize            11.72 s  1.00              4.43 s  1.00
    GeodesicEuler (Ito default)          12.75 s  1.09              0.75 s  0.17
    diffrax.Heun + normalize              5.10 s  0.43              0.93 s  0.21
    GeodesicMidpoint (Strat. default)    10.46 s  0.89              1.09 s  0.25
    GeodesicHeun                          8.73 s  0.75              2.07 s  0.47

Before (6c7ce3e, float64, same loaded machine): GeodesicEuler 1.27x and
GeodesicMidpoint 1.95x diffrax.Euler + normalize. ``diffrax.Euler`` + normalize is
slower than Heun + normalize because XLA on CPU fuses the drawing of the Gaussian
increments into each of their consumers and recomputes it there (4 copies of the
inverse-erf in its compiled loop, 1 in Heun's, whose stages run in a scan). The
geodesic schemes now draw the increment inside a ``lax.cond`` (one copy; replaces the
scan), measured only in a smaller form under the same load (10,000 paths x 500 steps,
float64, each solver's ``step`` in a ``fori_loop`` with ``UnsafeBrownianPath``, best of
three, two runs)::

                        before (6c7ce3e)   lax.cond (this version)
    Heun + normalize         1.52 s         0.78 s, 1.29 s
    Euler + normalize        1.49 s         0.88 s, 1.26 s
    GeodesicEuler            1.84 s         0.65 s, 0.89 s
    GeodesicMidpoint         5.46 s         0.83 s, 1.25 s
    GeodesicHeun             4.71 s         0.82 s, 1.59 s

With the increments given (no drawing), the same loop: Heun + normalize 0.21 s,
GeodesicEuler 0.07 s, GeodesicMidpoint 0.28 s (1.3x Heun + normalize, the cost of two
exponential maps and a transport). The float64 cos and sin were calls into the C
library element by element; :func:`spheresde._geometry.cos_sinc` (series in the squared
norm) replaced them, with about 10% gain on GeodesicEuler.

``--accuracy`` (about 2 minutes: ``--accuracy --paths 20000 --cpu-devices 1``) weighs
that against accuracy: all three have weak order 1, so the cost at equal accuracy is
(time per step) x |C| for a weak error C dt, with C measured on common random numbers.
2026-12-01 10:47 UTC, a loaded machine, C at the finer step pair +- one standard error,
cost relative to Retracted(Heun) (at the coarser pair in brackets)::

    Brownian motion on S^4, <X_T, X_0>, T = 0.4, dt = T/16
      C: Midpoint 0.28 +- 0.01, Heun 0.81 +- 0.01, Retracted(Heun) 1.00 +- 0.02
      time per step 1.96x, 1.91x (1.35x-1.96x over four runs)
      cost: Midpoint 0.54 +- 0.03 (0.63), Heun 1.55 (1.75)
    (1 + <X, e_3>/2) P_X o dW on S^2, <X_T, e_3>, T = 1, dt = T/16
      C: 0.36 +- 0.02, 0.86 +- 0.02, 0.71 +- 0.02;  time per step 1.37x, 1.42x
      cost: Midpoint 0.70 +- 0.04 (0.95), Heun 1.72 (2.00)
    two-token Transformer (Stratonovich form), <x_1, x_2>^2, T = 1, dt = T/8
      C: -0.13 +- 0.02, -0.37 +- 0.02, -0.08 +- 0.02;  time per step 0.99x, 1.02x
      cost: Midpoint 1.7 +- 0.6 (1.6 +- 0.2), Heun 4.7 (2.8)

``--accuracy`` ends with (and ``--extrapolation`` runs alone) the weak order 2 of
``spheresde.extrapolated_expectation`` (Talay--Tubaro) against the weak order 1 schemes
it extrapolates, on Brownian motion on S^5: the cost of reaching an error eps, relative
to the cheapest plain scheme (``main_extrapolation``; docs/theory/schemes.rst).

So GeodesicMidpoint stays the default Stratonovich solver: on noise of the form
scalar x P_X o dW it reaches a given accuracy at 0.5-0.7x the cost of Retracted(Heun);
on the Transformer's matrix noise Retracted(Heun) is the cheaper (docs: theory/schemes).

Where the time per step goes (``--stratonovich`` as above, one device, 2026-12-01
10:48-10:50 UTC): the exponential map's cos, sinc and square root are about 30% of a
GeodesicMidpoint step on P_X o dW (replaced, for profiling only, by the first two
Taylor terms: 0.91 -> 0.66 s, ratio 1.83 -> 1.27). A float32-exact Taylor series of
cos and sinc in the squared norm (6 terms, valid for |v| <= 1, with the trigonometric
form chosen by ``jax.lax.cond`` on the largest |v| of the batch otherwise) gave 0.75 s
(ratio 1.39) on one device but nothing on two (0.87 vs 0.86 s: the maximum over the
paths becomes a cross-device reduction in every stage), and under ``jax.vmap`` a cond
evaluates both branches; not adopted. Computing sinc as sin(t)/t instead of
``jnp.sinc(t / pi)``: no change (0.92 s).
"""

from __future__ import annotations

import argparse
import functools
import itertools
import os
import sys
import time

import jax

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--paths", type=int, default=4000)
parser.add_argument("--horizon", type=float, default=40.0)
parser.add_argument("--dt", type=float, default=0.01)
parser.add_argument("--float64", action="store_true", help="double precision (default float32)")
parser.add_argument("--skip-numpy", action="store_true")
parser.add_argument("--repeats", type=int, default=3,
                    help="timed runs of every JAX variant, in rounds; the median is reported")
parser.add_argument("--variants", action="store_true",
                    help="also time Retracted(Euler()) and the per-path (stacked=False) form")
parser.add_argument("--key-impl", default="threefry2x32",
                    help="jax.random key implementation: threefry2x32, rbg or unsafe_rbg")
parser.add_argument("--stratonovich", action="store_true",
                    help="instead: the Stratonovich solvers on Brownian motion on S^2 "
                         "(GeodesicMidpoint, GeodesicHeun against Retracted(diffrax.Heun()))")
parser.add_argument("--brownian", action="store_true",
                    help="instead: the default schemes against diffrax.Euler / diffrax.Heun "
                         "with a normalization after every step, Brownian motion on S^2 "
                         "(use --paths 20000 --horizon 1 --dt 0.001)")
parser.add_argument("--accuracy", action="store_true",
                    help="instead: cost at equal accuracy of the Stratonovich solvers (time per "
                         "step x weak error constant) against Retracted(diffrax.Heun())")
parser.add_argument("--extrapolation", action="store_true",
                    help="instead: only the Talay-Tubaro section of --accuracy (weak order 2 "
                         "by extrapolation against the weak order 1 schemes)")
parser.add_argument("--cpu-devices", type=int, default=os.cpu_count(),
                    help="CPU cores JAX runs as separate devices (default: all); solve_batch "
                         "and (b) split the paths over them, NumPy uses one core")
cli = parser.parse_args()
jax.config.update("jax_enable_x64", cli.float64)
jax.config.update("jax_num_cpu_devices", cli.cpu_devices)

import diffrax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import jax.random as jr  # noqa: E402
import numpy as np  # noqa: E402

import spheresde  # noqa: E402
from spheresde import WeakBrownianPath  # noqa: E402
from spheresde._solve import _paths_sharding, stack_sde  # noqa: E402
from spheresde.transformer import PureNoise, transformer_sde  # noqa: E402
from spheresde.transformer._outcomes import ANTIPODAL, classify  # noqa: E402

D, N, BETA, SIGMA = 4, 2, 2.0, 1.0
DTYPE = jnp.float64 if cli.float64 else jnp.float32
SDE = transformer_sde(BETA, PureNoise(SIGMA), d=D)
SPAN_SDE = transformer_sde(BETA, PureNoise(SIGMA), d=D, noise="span", n=N)


def compiled(fn, *args):
    """(compile seconds, the ahead-of-time compiled ``fn``) for these arguments."""
    start = time.perf_counter()
    out = jax.jit(fn).lower(*args).compile()
    return time.perf_counter() - start, out


def run_once(fn, *args):
    """(wall seconds, result) of one call."""
    start = time.perf_counter()
    out = jax.block_until_ready(fn(*args))
    return time.perf_counter() - start, out


def run_solve_batch(solver, sde=SDE, stacked=True, brownian="unsafe"):
    def fn(y0, key):
        return spheresde.solve_batch(sde, y0, 0.0, cli.horizon, cli.dt, key=key,
                                     solver=solver, stacked=stacked, brownian=brownian).ys[:, -1]
    return fn


def split_paths(x):
    """``x`` split over the devices along its first (paths) axis, as solve_batch does."""
    sharding = _paths_sharding(x.shape[0], None)
    return x if sharding is None else jax.lax.with_sharding_constraint(x, sharding)


def run_diffrax_euler(y0, key, path_cls=diffrax.UnsafeBrownianPath):
    y0 = split_paths(y0)
    stacked = stack_sde(SDE, y0.shape[0])
    path = path_cls(jax.ShapeDtypeStruct(stacked.noise_shape, y0.dtype), key)
    sol = diffrax.diffeqsolve(
        stacked.terms(path), diffrax.Euler(), 0.0, cli.horizon, cli.dt, y0,
        saveat=diffrax.SaveAt(t1=True), adjoint=diffrax.ForwardMode(),
        max_steps=int(np.ceil(cli.horizon / cli.dt)) + 16,
    )
    y1 = sol.ys[-1]
    return y1 / jnp.linalg.norm(y1, axis=-1, keepdims=True)


def jax_normals(key, paths):
    """Only the normals of (a): one (paths, d, d) array per step, summed so none is dropped."""
    steps = round(cli.horizon / cli.dt)

    def body(i, acc):
        return acc + jr.normal(jr.fold_in(key, i), (paths, D, D), DTYPE)

    return jax.lax.fori_loop(0, steps, body, split_paths(jnp.zeros((paths, D, D), DTYPE)))


def numpy_normals(paths, seed):
    rng = np.random.default_rng(seed)
    for _ in range(round(cli.horizon / cli.dt)):
        rng.standard_normal((paths, D, D))


def run_numpy(y0, seed):
    """Euler--Maruyama + normalization per step, the plain way (float64 NumPy)."""
    rng = np.random.default_rng(seed)
    x = np.array(y0, dtype=np.float64)
    c = -(SIGMA**2) * (D - 1) / 2
    steps = round(cli.horizon / cli.dt)
    sqdt = np.sqrt(cli.dt)
    for _ in range(steps):
        logits = BETA * np.einsum("pid,pjd->pij", x, x)
        w = np.exp(logits - logits.max(axis=-1, keepdims=True))
        w /= w.sum(axis=-1, keepdims=True)
        a = np.einsum("pij,pjd->pid", w, x)
        dw = rng.standard_normal((x.shape[0], D, D)) * sqdt
        noise = SIGMA * np.einsum("pid,ped->pie", a, dw)  # rows (dW A_i)^T
        noise -= np.sum(noise * x, axis=-1, keepdims=True) * x
        x = x + c * np.sum(a * a, axis=-1, keepdims=True) * x * cli.dt + noise
        x /= np.linalg.norm(x, axis=-1, keepdims=True)
    return x


def summary(name, compile_s, walls, y1):
    """Print one row: the median and the spread of the wall times, and the outcome."""
    y1 = jnp.asarray(y1)
    antipodal = float(jnp.mean(classify(y1) == ANTIPODAL))
    se = np.sqrt(antipodal * (1 - antipodal) / y1.shape[0])
    compile_s = f"{compile_s:6.2f}" if compile_s is not None else "     -"
    wall = float(np.median(walls))
    spread = f"{min(walls):6.2f}-{max(walls):6.2f}" if len(walls) > 1 else " " * 13
    print(f"{name:36s} wall {wall:6.2f} s ({spread})  compile {compile_s} s  "
          f"norm err {float(spheresde.norm_error(y1)):.1e}  antipodal {antipodal:.3f} +- {se:.3f}")
    return wall


def main_stratonovich():
    """GeodesicMidpoint and GeodesicHeun (the Stratonovich defaults) against
    Retracted(diffrax.Heun()): the same two evaluations per step, the same SDE
    (Brownian motion on S^2, dX = P_X o dW, uniform starts), wall times as ratios to
    Retracted(Heun) measured in the same rounds, and the accuracy of each on
    E<X_T, X_0>^2 = 1/3 + 2/3 exp(-3T) (weak error +- one standard error)."""
    sde = spheresde.SphereSDE(lambda t, y, a: jnp.zeros_like(y),
                              lambda t, y, a, dw: spheresde.project_tangent(y, dw), (3,),
                              "stratonovich")
    key_y0, key_w = jr.split(jr.key(20260129, impl=cli.key_impl))
    y0 = spheresde.sample_uniform(key_y0, (cli.paths,), 3, dtype=DTYPE)
    steps = round(cli.horizon / cli.dt)
    print(f"Brownian motion on S^2, Stratonovich: paths={cli.paths} steps={steps} "
          f"T={cli.horizon} dtype={jnp.dtype(DTYPE).name} devices={len(jax.devices())} "
          f"repeats={cli.repeats} (median)")
    solvers = {"GeodesicMidpoint": spheresde.GeodesicMidpoint(),
               "GeodesicHeun": spheresde.GeodesicHeun(),
               "Retracted(Heun())": spheresde.Retracted(diffrax.Heun())}
    programs = {}
    for name, solver in solvers.items():
        def fn(y, k, solver=solver):
            return spheresde.solve_batch(sde, y, 0.0, cli.horizon, cli.dt, key=k,
                                         solver=solver).ys[:, -1]
        programs[name] = compiled(fn, y0, key_w)[1]
    times = {name: [] for name in solvers}
    ends = {}
    for _ in range(cli.repeats):
        for name, program in programs.items():
            wall, ends[name] = run_once(program, y0, key_w)
            times[name].append(wall)
    exact = 1 / 3 + 2 / 3 * np.exp(-3 * cli.horizon)
    base = float(np.median(times["Retracted(Heun())"]))
    for name in solvers:
        cos2 = np.asarray(jnp.sum(ends[name] * y0, axis=-1)) ** 2
        wall = float(np.median(times[name]))
        print(f"{name:20s} wall {wall:6.2f} s  ratio to Retracted(Heun) {wall / base:5.2f}  "
              f"weak error {cos2.mean() - exact:+.4f} +- {cos2.std() / np.sqrt(cos2.size):.4f}"
              f"  norm err {float(spheresde.norm_error(ends[name])):.1e}")


def renormalized_loop(solver, sde, steps):
    """``solver``'s own step on the stacked ``sde``, then ``y / |y|``, in a ``fori_loop``:
    what a careful user writes without this package (Diffrax's Euler or Heun keeps the
    state near the sphere only if it is normalized after every step). The increments
    come from ``diffrax.UnsafeBrownianPath``, as in ``solve_batch``'s default."""
    def fn(y0, key):
        stacked = stack_sde(sde, y0.shape[0])
        path = diffrax.UnsafeBrownianPath(jax.ShapeDtypeStruct(stacked.noise_shape, y0.dtype),
                                          key)
        terms = stacked.terms(path)

        def body(i, y):
            t0 = i * cli.dt
            y1 = solver.step(terms, t0, t0 + cli.dt, y, None, None, False)[0]
            return y1 / jnp.linalg.norm(y1, axis=-1, keepdims=True)

        return jax.lax.fori_loop(0, steps, body, split_paths(y0))
    return fn


def main_brownian():
    """Brownian motion on S^2 (Ito: GeodesicEuler, the Ito default; Stratonovich:
    GeodesicMidpoint, the Stratonovich default, and GeodesicHeun) against Diffrax's
    Euler and Heun with a normalization after every step (:func:`renormalized_loop`),
    wall times as ratios to diffrax.Euler + normalization, all in the same rounds."""
    from helpers import brownian_motion_sde

    steps = round(cli.horizon / cli.dt)
    ito, strat = brownian_motion_sde(3, "ito"), brownian_motion_sde(3, "stratonovich")
    key_y0, key_w = jr.split(jr.key(20260129, impl=cli.key_impl))
    y0 = spheresde.sample_uniform(key_y0, (cli.paths,), 3, dtype=DTYPE)
    print(f"Brownian motion on S^2: paths={cli.paths} steps={steps} "
          f"dtype={jnp.dtype(DTYPE).name} devices={len(jax.devices())} "
          f"repeats={cli.repeats} (median)")

    def ours(solver, sde):
        def fn(y, k):
            return spheresde.solve_batch(sde, y, 0.0, cli.horizon, cli.dt, key=k,
                                         solver=solver).ys[:, -1]
        return fn

    variants = {"diffrax.Euler + normalize": renormalized_loop(diffrax.Euler(), ito, steps),
                "GeodesicEuler (Ito default)": ours(spheresde.GeodesicEuler(), ito),
                "diffrax.Heun + normalize": renormalized_loop(diffrax.Heun(), strat, steps),
                "GeodesicMidpoint (Strat. default)": ours(spheresde.GeodesicMidpoint(), strat),
                "GeodesicHeun": ours(spheresde.GeodesicHeun(), strat)}
    programs = {name: compiled(fn, y0, key_w)[1] for name, fn in variants.items()}
    times = {name: [] for name in programs}
    ends = {}
    for _ in range(cli.repeats):
        for name, program in programs.items():
            wall, ends[name] = run_once(program, y0, key_w)
            times[name].append(wall)
    base = float(np.median(times["diffrax.Euler + normalize"]))
    heun = float(np.median(times["diffrax.Heun + normalize"]))
    for name in programs:
        wall = float(np.median(times[name]))
        print(f"{name:34s} wall {wall:6.2f} s  ratio to Euler + normalize {wall / base:5.2f}  "
              f"to Heun + normalize {wall / heun:5.2f}  "
              f"norm err {float(spheresde.norm_error(ends[name])):.1e}")


def main():
    key_y0, key_w = jr.split(jr.key(20260129, impl=cli.key_impl))
    y0 = spheresde.sample_uniform(key_y0, (cli.paths, N), D, dtype=DTYPE)
    print(f"n={N} d={D} beta={BETA} sigma={SIGMA} T={cli.horizon} dt={cli.dt} "
          f"paths={cli.paths} dtype={jnp.dtype(DTYPE).name} key={cli.key_impl} "
          f"backend={jax.default_backend()} devices={len(jax.devices())} "
          f"repeats={cli.repeats} (median, min-max)")
    variants = {
        "a": ("(a) default (GeodesicEuler)", run_solve_batch(None)),
        "span": ("(a-span) default, span noise", run_solve_batch(None, SPAN_SDE)),
        "weak": ("(a-weak) default, two-point incr.", run_solve_batch(None, brownian="weak")),
        "span_weak": ("(a-span-weak) span + two-point",
                      run_solve_batch(None, SPAN_SDE, brownian="weak")),
        "b": ("(b) diffrax.Euler + final normalize", run_diffrax_euler),
        "b_weak": ("(b-weak) the same, two-point incr.",
                   lambda y, k: run_diffrax_euler(y, k, WeakBrownianPath)),
    }
    if cli.variants:
        variants["retracted"] = ("(a') Retracted(diffrax.Euler())",
                                 run_solve_batch(spheresde.Retracted(diffrax.Euler())))
        variants["vmap"] = ("(a-vmap) default, stacked=False",
                            run_solve_batch(None, stacked=False))
    programs = {k: compiled(fn, y0, key_w) for k, (_, fn) in variants.items()}
    rng_compile, rng_program = compiled(lambda k: jax_normals(k, cli.paths), key_w)
    # Rounds over all variants, so that a slow spell of the machine hits them alike.
    times = {k: [] for k in [*variants, "rng_jax"]}
    results = {}
    for _ in range(cli.repeats):
        for k, (_, program) in programs.items():
            wall, results[k] = run_once(program, y0, key_w)
            times[k].append(wall)
        times["rng_jax"].append(run_once(rng_program, key_w)[0])
    walls = {k: summary(name, programs[k][0], times[k], results[k])
             for k, (name, _) in variants.items()}
    walls["rng_jax"] = float(np.median(times["rng_jax"]))
    print(f"{'JAX normals alone':36s} wall {walls['rng_jax']:6.2f} s "
          f"({min(times['rng_jax']):6.2f}-{max(times['rng_jax']):6.2f})  "
          f"compile {rng_compile:6.2f} s")
    if not cli.skip_numpy:
        start = time.perf_counter()
        numpy_normals(cli.paths, 1)
        walls["rng_np"] = time.perf_counter() - start
        print(f"{'NumPy normals alone (float64)':36s} wall {walls['rng_np']:6.2f} s")
        start = time.perf_counter()
        y_np = run_numpy(np.asarray(y0), 0)
        walls["c"] = summary("(c) NumPy loop (float64, one run)", None,
                             [time.perf_counter() - start], y_np)
    print(f"ratio wall (a)/(b) = {walls['a'] / walls['b']:.2f}, "
          f"(a-weak)/(b-weak) = {walls['weak'] / walls['b_weak']:.2f}")
    if "c" in walls:
        print(f"speed-up (c)/(a) = {walls['c'] / walls['a']:.1f}x, "
              f"(c)/(a-span) = {walls['c'] / walls['span']:.1f}x, "
              f"(c)/(a-weak) = {walls['c'] / walls['weak']:.1f}x, "
              f"(c)/(a-span-weak) = {walls['c'] / walls['span_weak']:.1f}x; "
              f"bound for Gaussian draws (c)/(JAX normals) = "
              f"{walls['c'] / walls['rng_jax']:.1f}x")


ACCURACY_SOLVERS = {"GeodesicMidpoint": spheresde.GeodesicMidpoint(),
                    "GeodesicHeun": spheresde.GeodesicHeun(),
                    "Retracted(Heun())": spheresde.Retracted(diffrax.Heun())}


def accuracy_problems():
    """(name, Stratonovich SDE, starts, f(y_T, y_0), horizon T, exact E f or None,
    coarsest steps per T, steps timed).

    Brownian motion on S^4 (noise P_X o dW, E<X_T, X_0> = e^{-2T}); the same on S^2 at
    the position-dependent speed 1 + <X, e_3>/2 (a noise-induced drift in Ito form);
    the two-token Transformer SDE on S^2 (beta = 2, sigma = 1, full 3 x 3 noise dW A_i,
    non-constant and non-commuting; Stratonovich form by automatic differentiation,
    SphereSDE.to_stratonovich), f = <x_1, x_2>^2 at T (the weak errors of <x_1, x_2>
    itself, |C| < 0.1 for all three, were not resolved with 20,000 paths)."""
    from helpers import brownian_motion_sde

    bm = brownian_motion_sde(5, "stratonovich")
    bm_y0 = jnp.zeros((cli.paths, 5), DTYPE).at[:, 0].set(1.0)
    mu = jnp.array([0.0, 0.0, 1.0], DTYPE)

    def speed_diffusion(t, y, args, dw):
        return (1 + 0.5 * (y @ mu))[..., None] * spheresde.project_tangent(y, dw)

    sp = spheresde.SphereSDE(lambda t, y, a: jnp.zeros_like(y), speed_diffusion, (3,),
                             "stratonovich")
    sp_y0 = jnp.broadcast_to(jnp.array([0.6, 0.0, 0.8], DTYPE), (cli.paths, 3))
    tf = transformer_sde(2.0, PureNoise(1.0), d=3).to_stratonovich()
    tf_y0 = spheresde.sample_uniform(jr.key(8), (cli.paths, 2), 3, dtype=DTYPE)
    return [
        ("Brownian motion on S^4, f = <X_T, X_0>", bm, bm_y0,
         lambda y, y0: jnp.sum(y * y0, axis=-1), 0.4, float(np.exp(-2 * 0.4)), 8, 128),
        ("(1 + <X, e_3>/2) P_X o dW on S^2 from (0.6, 0, 0.8), f = <X_T, e_3>", sp, sp_y0,
         lambda y, y0: y @ mu, 1.0, None, 8, 128),
        ("two-token Transformer on S^2, f = <x_1, x_2>^2", tf, tf_y0,
         lambda y, y0: jnp.sum(y[:, 0] * y[:, 1], axis=-1) ** 2, 1.0, None, 4, 32),
    ]


def error_constants(sde, y0, f, t1, n, solver):
    """([C at dt = T/n, T/(2n)], [their standard errors], [f path by path at each dt]):
    C = 2 D(dt) / dt, D(dt) = E f^dt - E f^(dt/2), all dt on the same sampled paths."""
    from helpers import sampled_brownian

    ts, W = sampled_brownian(jr.key(11), cli.paths, t1, 4 * n, sde.noise_shape)
    dts = [t1 / n, t1 / (2 * n), t1 / (4 * n)]

    @functools.partial(jax.jit, static_argnums=2)
    def ends(y0, W, dt):
        def one(y, w):
            path = diffrax.LinearInterpolation(ts, w)
            return spheresde.solve(sde, y, 0.0, t1, dt, brownian=path, solver=solver).ys[-1]
        return jax.vmap(one)(y0, W)

    fs = [np.asarray(f(ends(y0, W.astype(DTYPE), dt), y0), np.float64) for dt in dts]
    diffs = [(a - b, dt) for (a, b), dt in zip(itertools.pairwise(fs), dts, strict=False)]
    return ([2 * dd.mean() / dt for dd, dt in diffs],
            [2 * dd.std() / np.sqrt(dd.size) / dt for dd, dt in diffs], fs)


def time_per_step(sde, y0, dt, steps):
    """{solver name: median wall seconds per step} of solve_batch (default Brownian path)
    over ``steps`` steps, every solver in each of --repeats rounds."""
    key = jr.key(12)
    programs = {}
    for name, solver in ACCURACY_SOLVERS.items():
        def fn(y, k, solver=solver):
            return spheresde.solve_batch(sde, y, 0.0, dt * steps, dt, key=k,
                                         solver=solver).ys[:, -1]
        programs[name] = compiled(fn, y0, key)[1]
    times = {name: [] for name in programs}
    for _ in range(cli.repeats):
        for name, program in programs.items():
            times[name].append(run_once(program, y0, key)[0])
    return {name: float(np.median(t)) / steps for name, t in times.items()}


def main_accuracy():
    """Cost at equal accuracy: all three schemes have weak order 1, so reaching a weak
    error eps takes |C| T / eps steps for an error C dt, and the cost at equal accuracy
    is (time per step) x |C|. C is measured with common random numbers (every scheme and
    every dt on the same sampled Brownian paths, diffrax.LinearInterpolation of a grid
    of step dt_min): D(dt) = E f^dt - E f^(dt/2) = C dt / 2 + O(dt^2), so C = 2 D / dt,
    whose standard error is that of the path-wise differences (the Monte Carlo error of
    E f cancels). The cost at equal accuracy, relative to Retracted(Heun()), is printed
    for C at each dt (its error bar from those of the two C only, as if independent).
    Time per step: solve_batch with its default Brownian path (the production setting),
    the same paths, dt = the finest, median of --repeats rounds, all schemes in the same
    rounds."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    print(f"paths={cli.paths} dtype={jnp.dtype(DTYPE).name} devices={len(jax.devices())} "
          f"repeats={cli.repeats} (median); C from D(dt) = E f^dt - E f^(dt/2), common "
          f"random numbers, +- one standard error")
    ref = "Retracted(Heun())"
    for title, sde, y0, f, t1, exact, n, steps in accuracy_problems():
        print(f"\n{title}, T = {t1}, dt = T/{n}, T/{2 * n}, T/{4 * n}"
              + (f", exact E f = {exact:.5f}" if exact is not None else ""))
        rows = {name: error_constants(sde, y0, f, t1, n, solver)
                for name, solver in ACCURACY_SOLVERS.items()}
        per_step = time_per_step(sde, y0, t1 / (4 * n), steps)
        for name, (C, C_se, fs) in rows.items():
            cs = "  ".join(f"{c:+.4f}+-{s:.4f}" for c, s in zip(C, C_se, strict=True))
            line = (f"  {name:18s} C(dt=T/{n}, T/{2 * n}) = {cs}  time/step "
                    f"{per_step[name] * 1e3:6.3f} ms ({cli.paths} paths, {steps} steps)")
            if exact is not None:
                err = fs[-1] - exact
                line += (f"  E f^(T/{4 * n}) - exact = {err.mean():+.4f}"
                         f"+-{err.std() / np.sqrt(err.size):.4f}")
            print(line)
        for name, (C, C_se, _) in rows.items():
            speed = per_step[name] / per_step[ref]
            costs = []
            for i in range(2):
                c, se, c_ref, se_ref = C[i], C_se[i], rows[ref][0][i], rows[ref][1][i]
                if abs(c) < 2 * se or abs(c_ref) < 2 * se_ref:
                    costs.append("C not resolved (within 2 s.e. of 0)")
                    continue
                ratio = speed * abs(c / c_ref)
                err = ratio * np.hypot(se / c, se_ref / c_ref)
                costs.append(f"|C| ratio {abs(c / c_ref):4.2f}, cost {ratio:4.2f} +- {err:.2f}")
            print(f"  {name:18s} time/step ratio {speed:4.2f};  at T/{n}: {costs[0]};  "
                  f"at T/{2 * n}: {costs[1]}")


def main_extrapolation():
    """Weak order 2 by Talay--Tubaro extrapolation (spheresde.extrapolated_expectation)
    against the weak order 1 schemes it extrapolates, at equal accuracy. Brownian motion
    on S^5 from e_1, f = <X_T, e_1>, T = 0.5, exact e^{-5T/2}; --paths paths with
    two-point increments (brownian="weak"), dt = T/8 and T/16. Plain error C dt (the
    finer solve alone) and extrapolated error C2 dt^2, each +- its standard error. To
    reach an error eps the plain scheme takes |C| T/eps steps, the extrapolation
    1.5 T/sqrt(eps/|C2|) (its two solves); cost = steps x time per step (solve_batch,
    64 steps, median of --repeats), printed relative to the cheapest plain scheme."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from helpers import brownian_motion_sde

    d, t1, paths = 6, 0.5, cli.paths
    exact = float(np.exp(-(d - 1) * t1 / 2))
    y0 = jnp.zeros((paths, d), DTYPE).at[:, 0].set(1.0)
    solvers = {"GeodesicEuler": spheresde.GeodesicEuler(),
               "GeodesicMidpoint": spheresde.GeodesicMidpoint(),
               "Retracted(Heun())": spheresde.Retracted(diffrax.Heun())}
    print(f"\nTalay-Tubaro on Brownian motion on S^5, f = <X_T, e_1>, T = {t1}, exact "
          f"{exact:.5f}, {paths} paths, two-point increments")
    rows = {}
    for name, solver in solvers.items():
        sde = brownian_motion_sde(d, spheresde.solver_convention(solver))
        consts = []
        for n in (8, 16):
            r = spheresde.extrapolated_expectation(sde, lambda y: y[0], y0, 0.0, t1, t1 / n,
                                                   key=jr.key(n), solver=solver)
            se = float(r.standard_error)
            plain, extra = float(r.fine) - exact, float(r.value) - exact
            consts.append((plain / (t1 / n), extra / (t1 / n) ** 2, se))
            print(f"  {name:18s} dt=T/{n:<3d} plain error {plain:+.5f}, extrapolated "
                  f"{extra:+.5f} (+- {se:.5f}; plain +- {se / np.sqrt(5):.5f} or less)")

        def fn(y, k, solver=solver, sde=sde):
            return spheresde.solve_batch(sde, y, 0.0, 64 * t1 / 16, t1 / 16, key=k,
                                         solver=solver, brownian="weak").ys[:, -1]
        program = compiled(fn, y0, jr.key(0))[1]
        per_step = float(np.median([run_once(program, y0, jr.key(0))[0]
                                    for _ in range(cli.repeats)])) / 64
        # C from the finer pair's plain error, C2 from the coarser extrapolation (the
        # finer one is within a few standard errors of 0 at 10^6 paths).
        rows[name] = (abs(consts[1][0]), abs(consts[0][1]), per_step)
    for eps in (1e-2, 1e-3, 1e-4):
        costs = {}
        for name, (c, c2, per_step) in rows.items():
            costs[name] = (abs(c) * t1 / eps * per_step, 1.5 * t1 / np.sqrt(eps / c2) * per_step)
        best = min(plain for plain, _ in costs.values())
        line = "  ".join(f"{name} {plain / best:.2f} / TT {extra / best:.2f}"
                         for name, (plain, extra) in costs.items())
        print(f"  eps = {eps:g}: cost relative to the cheapest plain scheme: {line}")
    for name, (c, c2, per_step) in rows.items():
        print(f"  {name:18s} |C| = {c:.3f}, |C2| = {c2:.3f}, time/step {per_step * 1e3:.3f} ms")


if __name__ == "__main__":
    if cli.brownian:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
        main_brownian()
    elif cli.accuracy:
        main_accuracy()
        main_extrapolation()
    elif cli.extrapolation:
        main_extrapolation()
    elif cli.stratonovich:
        main_stratonovich()
    else:
        main()
