"""The exit-time table: Brownian motion on S^(d-1) leaving a polar cap, plain vs corrected.

For each dt: E[tau] of the plain (discretely monitored) and the Brownian-bridge corrected
estimators of ``spheresde.first_passage``, each with its standard error, the closed form
of ``proofs_check.first_passage`` and the z-scores; then the convergence slopes of the
biases (log |bias| against log dt, least squares over the points whose bias exceeds 2
standard errors) and the Richardson extrapolation of the corrected estimator at the finest
dt. Column ``s``: seconds for the two runs of that dt.

Run: ``python tests/benchmarks/bench_first_passage.py [--d 3] [--angle 1.5708]
[--paths 40000] [--dts 0.08,0.04,0.02,0.01,0.005] [--x64]``.
"""

from __future__ import annotations

import argparse
import math
import time

import jax


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--d", type=int, default=3)
    parser.add_argument("--angle", type=float, default=math.pi / 2)
    parser.add_argument("--paths", type=int, default=40_000)
    parser.add_argument("--dts", default="0.08,0.04,0.02,0.01,0.005")
    parser.add_argument("--t1", type=float, default=30.0)
    parser.add_argument("--x64", action="store_true")
    opts = parser.parse_args()
    jax.config.update("jax_enable_x64", opts.x64)

    import jax.numpy as jnp
    import jax.random as jr
    import numpy as np

    import spheresde
    from proofs_check.first_passage import mean_exit_time

    d, angle, paths = opts.d, opts.angle, opts.paths
    dts = [float(x) for x in opts.dts.split(",")]
    dtype = jnp.float64 if opts.x64 else jnp.float32
    sde = spheresde.SphereSDE(lambda t, y, a: jnp.zeros_like(y),
                              lambda t, y, a, dw: spheresde.project_tangent(y, dw),
                              noise_shape=(d,), convention="stratonovich")
    pole = jnp.zeros(d, dtype).at[-1].set(1)
    cap = spheresde.ExitRegion.cap(pole, angle)
    exact = float(mean_exit_time(d, angle))
    print(f"S^{d - 1}, cap of angle {angle:.4f} from the pole, {paths} paths per run, "
          f"{jnp.dtype(dtype).name}; closed form E tau = {exact:.4f}")
    print(f"{'dt':>7} {'plain':>16} {'z':>6} {'bias/sqrt(dt)':>13} {'corrected':>16} "
          f"{'z':>6} {'bias/dt':>8} {'exact':>7} {'s':>5}")
    rows = []
    for i, dt in enumerate(dts):
        start = time.perf_counter()
        out = []
        for correction in (False, True):
            fp = spheresde.first_passage(sde, cap, pole, opts.t1, dt, paths=paths,
                                         key=jr.fold_in(jr.key(2026), 2 * i + correction),
                                         correction=correction)
            out.append((float(fp.mean), float(fp.standard_error)))
        (pm, ps), (cm, cs) = out
        rows.append((dt, pm, ps, cm, cs))
        print(f"{dt:7.4f} {pm:9.4f} ± {ps:.4f} {(pm - exact) / ps:+6.1f} "
              f"{(pm - exact) / math.sqrt(dt):13.2f} {cm:9.4f} ± {cs:.4f} "
              f"{(cm - exact) / cs:+6.1f} {(cm - exact) / dt:8.2f} {exact:7.4f} "
              f"{time.perf_counter() - start:5.1f}")
    rows = np.array(rows)

    def slope(means, ses):
        bias = np.abs(means - exact)
        weights = bias / np.maximum(ses, 1e-12)  # trust the biases that stand out of the noise
        keep = weights > 2
        if keep.sum() < 2:
            return float("nan"), int(keep.sum())
        fit = np.polyfit(np.log(rows[keep, 0]), np.log(bias[keep]), 1)
        return float(fit[0]), int(keep.sum())

    (sp_, np_), (sc, nc) = slope(rows[:, 1], rows[:, 2]), slope(rows[:, 3], rows[:, 4])
    print(f"convergence slope of |bias| in dt: plain {sp_:.2f} ({np_} points with |z| > 2), "
          f"corrected {sc:.2f} ({nc} points with |z| > 2; nan: too few biases above the noise)")
    fine = min(dts)
    ext = spheresde.extrapolated_exit_time(sde, cap, pole, opts.t1, fine, paths=paths,
                                           key=jr.key(7))
    value, se = float(ext.value), float(ext.standard_error)
    print(f"Richardson (corrected, dt = {fine:g} and {2 * fine:g}): {value:.4f} ± {se:.4f}, "
          f"z = {(value - exact) / se:+.1f}")


if __name__ == "__main__":
    main()
