"""Benchmark: the two-token Transformer SDE (MODEL.md section 2) with three integrators.

n = 2 tokens on S^3 (d = 4), beta = 2, sigma = 1 (pure noise, full d x d noise),
horizon T = 40, dt = 0.01 (4,000 steps), 4,000 independent paths from independent
uniform tokens:

(a) ``spheresde.solve_batch`` with the default Ito solver (GeodesicEuler), and
    ``Retracted(diffrax.Euler())`` for comparison; also (a'') GeodesicEuler on the
    ``noise="span"`` form of the SDE (d x n normals per step instead of d x d: the same
    law for one-evaluation Ito steps, MODEL.md / DESIGN "span trick");
(b) ``diffrax.Euler`` on the same SDE (``diffrax.diffeqsolve`` with ConstantStepSize,
    UnsafeBrownianPath, vmapped and jitted the same way), normalized only at the end;
(c) a straightforward NumPy loop: per step, Euler--Maruyama then normalization,
    vectorized over paths.

Wall times exclude compilation (ahead of time, ``jax.jit(...).lower(...).compile()``),
which is reported separately. (Inside ``jax.jit`` the starts are tracers, so
``solve_batch`` skips its value checks there; they are shape checks only.)
Run explicitly (it is not a test)::

    python tests/benchmarks/bench_solvers.py [--paths 4000] [--float64] [--variants]

One run on the development machine (CPU, 2 cores shared with other jobs, load ~6;
float32; 2026-11-29)::

    variant                               wall s  compile s  max norm err  antipodal
    (a)   default (GeodesicEuler)           96.5      14.0      3.6e-07   0.272 +- 0.007
    (a')  Retracted(diffrax.Euler())       100.8      15.0      1.8e-07   0.274 +- 0.007
    (a'') default, span noise (d x n)       51.2      19.6      3.6e-07   0.286 +- 0.007
    (b)   diffrax.Euler + final normalize  134.6      18.6      1.2e-07   0.278 +- 0.007
    (c)   NumPy loop (float64)             112.2         -      6.0e-08   0.281 +- 0.007
    (a)/(b) = 0.72; (c)/(a) = 1.2x (target 20x missed on CPU: JAX's counter-based normals
    cost more than NumPy's ziggurat and they dominate; the span form halves them: 2.2x).
"""

from __future__ import annotations

import argparse
import time

import jax

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--paths", type=int, default=4000)
parser.add_argument("--horizon", type=float, default=40.0)
parser.add_argument("--dt", type=float, default=0.01)
parser.add_argument("--float64", action="store_true", help="double precision (default float32)")
parser.add_argument("--skip-numpy", action="store_true")
parser.add_argument("--variants", action="store_true",
                    help="also time Retracted(Euler()) and the span-noise form")
cli = parser.parse_args()
jax.config.update("jax_enable_x64", cli.float64)

import diffrax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import jax.random as jr  # noqa: E402
import numpy as np  # noqa: E402

import spheresde  # noqa: E402
from spheresde._outcomes import ANTIPODAL, classify  # noqa: E402
from spheresde._transformer import PureNoise, transformer_sde  # noqa: E402

D, N, BETA, SIGMA = 4, 2, 2.0, 1.0
DTYPE = jnp.float64 if cli.float64 else jnp.float32
SDE = transformer_sde(BETA, PureNoise(SIGMA), d=D)
SPAN_SDE = transformer_sde(BETA, PureNoise(SIGMA), d=D, noise="span", n=N)


def timed(fn, *args):
    """(compile seconds, run seconds, result): ahead-of-time compile, then one run."""
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    out = jax.block_until_ready(compiled(*args))
    return compile_s, time.perf_counter() - start, out


def run_solve_batch(solver, sde=SDE):
    def fn(y0, key):
        return spheresde.solve_batch(sde, y0, 0.0, cli.horizon, cli.dt, key=key,
                                     solver=solver).ys[:, -1]
    return fn


def run_diffrax_euler(y0, key):
    def one(y, k):
        path = diffrax.UnsafeBrownianPath(jax.ShapeDtypeStruct(SDE.noise_shape, y.dtype), k)
        sol = diffrax.diffeqsolve(
            SDE.terms(path), diffrax.Euler(), 0.0, cli.horizon, cli.dt, y,
            saveat=diffrax.SaveAt(t1=True), adjoint=diffrax.ForwardMode(),
            max_steps=int(np.ceil(cli.horizon / cli.dt)) + 16,
        )
        return sol.ys[-1]

    y1 = jax.vmap(one)(y0, jr.split(key, y0.shape[0]))
    return y1 / jnp.linalg.norm(y1, axis=-1, keepdims=True)


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


def summary(name, compile_s, wall, y1):
    y1 = jnp.asarray(y1)
    antipodal = float(jnp.mean(classify(y1) == ANTIPODAL))
    se = np.sqrt(antipodal * (1 - antipodal) / y1.shape[0])
    compile_s = f"{compile_s:7.2f}" if compile_s is not None else "      -"
    print(f"{name:34s} wall {wall:7.2f} s  compile {compile_s} s  "
          f"max norm error {float(spheresde.norm_error(y1)):.1e}  "
          f"antipodal {antipodal:.3f} +- {se:.3f}")
    return wall


def main():
    key_y0, key_w = jr.split(jr.key(20260129))
    y0 = spheresde.sample_uniform(key_y0, (cli.paths, N), D, dtype=DTYPE)
    print(f"n={N} d={D} beta={BETA} sigma={SIGMA} T={cli.horizon} dt={cli.dt} "
          f"paths={cli.paths} dtype={jnp.dtype(DTYPE).name} backend={jax.default_backend()}")
    walls = {}
    walls["a"] = summary("(a) default (GeodesicEuler)",
                         *timed(run_solve_batch(None), y0, key_w))
    if cli.variants:
        summary("(a') Retracted(diffrax.Euler())",
                *timed(run_solve_batch(spheresde.Retracted(diffrax.Euler())), y0, key_w))
        summary("(a'') default, span noise (d x n)",
                *timed(run_solve_batch(None, SPAN_SDE), y0, key_w))
    walls["b"] = summary("(b) diffrax.Euler + final normalize",
                         *timed(run_diffrax_euler, y0, key_w))
    if not cli.skip_numpy:
        start = time.perf_counter()
        y_np = run_numpy(np.asarray(y0), 0)
        walls["c"] = summary("(c) NumPy loop (float64)", None, time.perf_counter() - start, y_np)
    print(f"ratio wall (a)/(b) = {walls['a'] / walls['b']:.2f}")
    if "c" in walls:
        print(f"speed-up (c)/(a) = {walls['c'] / walls['a']:.1f}x")


if __name__ == "__main__":
    main()
