"""Benchmark: the two-token Transformer SDE (MODEL.md section 2) with three integrators.

n = 2 tokens on S^3 (d = 4), beta = 2, sigma = 1 (pure noise, full d x d noise),
horizon T = 40, dt = 0.01 (4,000 steps), 4,000 independent paths from independent
uniform tokens:

(a) ``spheresde.solve_batch`` with the default Ito solver (GeodesicEuler): ONE
    ``diffeqsolve`` on the stacked state (paths, n, d), one Brownian path of shape
    (paths, d, d); (a-span) the same on the ``noise="span"`` form of the SDE (d x n
    normals per step instead of d x d: the same law for one-evaluation Ito steps,
    DESIGN "span trick"). With ``--variants`` also ``Retracted(diffrax.Euler())`` and
    the per-path form ``solve_batch(..., stacked=False)`` (jax.vmap of ``solve``);
(b) ``diffrax.Euler`` on the same stacked SDE (``diffrax.diffeqsolve`` with
    ConstantStepSize, UnsafeBrownianPath), normalized only at the end;
(c) a straightforward NumPy loop: per step, Euler--Maruyama then normalization,
    vectorized over paths (float64, NumPy's default generator).

Two more rows bound what is possible: the time to draw the same normals alone, one
(paths, d, d) array per step, in JAX (inside one jitted ``fori_loop``) and in NumPy.
Wall times exclude compilation (ahead of time, ``jax.jit(...).lower(...).compile()``),
which is reported separately. (Inside ``jax.jit`` the starts are tracers, so
``solve_batch`` skips its value checks there; they are shape checks only.)
Run explicitly (it is not a test)::

    python tests/benchmarks/bench_solvers.py [--paths 4000] [--float64] [--variants]
        [--key-impl unsafe_rbg]

One run on the development machine (CPU, 2 idle cores, float32, threefry keys;
2026-11-29 22:10 UTC), after the attention contractions became fused multiply-sums
(``spheresde._attention.small_matmul``)::

    variant                               wall s  compile s  max norm err  antipodal
    (a)      default (GeodesicEuler)        22.2       2.6      3.6e-07   0.290 +- 0.007
    (a-span) default, span noise            17.3       1.8      3.6e-07   0.277 +- 0.007
    (b)      diffrax.Euler + final norm.    18.4       2.1      1.8e-07   0.281 +- 0.007
    JAX normals alone (256 M, float32)       6.2       1.0
    NumPy normals alone (256 M, float64)     4.4
    (c)      NumPy loop (float64)           26.3         -      6.0e-08   0.281 +- 0.007
    (a)/(b) = 1.21; (c)/(a) = 1.2x, (c)/(a-span) = 1.5x.

The same idle machine before that change: (a) 35.7 s, (a-span) 12.7 s, (b) 34.0 s,
(c) 26.5 s. The change made (a) 1.6x faster and (a-span) 1.36x slower (not understood;
the span noise keeps ``@``). The 20x target over NumPy is out of reach on this CPU:
drawing (a)'s normals alone in JAX takes a quarter of NumPy's whole loop, so no JAX
scheme with these draws can beat (c) by more than ~4x; the remaining gap is per-step
work of Diffrax's loop on tiny (2 x 4) blocks. Stacking the paths (one diffeqsolve on
the (paths, n, d) state) instead of ``jax.vmap`` of one-path solves also helped.
A second run at T = 10 (same machine, minutes later): (a) 10.4 s, (a-span) 4.1 s,
(b) 9.7 s, JAX normals 3.1 s, NumPy normals 1.1 s, (c) 6.9 s: (a)/(b) = 1.06,
(c)/(a) = 0.7x, (c)/(a-span) = 1.7x, bound 2.2x.

Also tried at T = 10 (one process each, 1,000 steps, 4,000 paths): keys
``unsafe_rbg`` 11.4 s vs threefry 10.0 s (no gain; ``rbg`` draws slower still);
a GeodesicEuler step with fewer reductions, and ``Retracted(Euler())``, within 1% of
GeodesicEuler (the step is not the cost); the attention and ``dW A_i`` of
``transformer_sde`` written as broadcast-multiply-sums instead of ``@`` (which, once
vmapped over paths, becomes XLA batched matmuls of 2x2 and 2x4 blocks): 7.3 s vs
10.0 s, the one change that helped, in ``spheresde/_transformer.py`` (not done here).
Diffrax's loop cannot be unrolled from outside ``diffeqsolve``.
"""

from __future__ import annotations

import argparse
import os
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
from spheresde._outcomes import ANTIPODAL, classify  # noqa: E402
from spheresde._solve import _paths_sharding, stack_sde  # noqa: E402
from spheresde._transformer import PureNoise, transformer_sde  # noqa: E402

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


if __name__ == "__main__":
    main()
