"""float32 against float64 for every Monte Carlo path of the sweeps, before and after
the span factor of :mod:`spheresde.transformer._noise` (issue 30.1).

Run: ``PYTHONPATH=. python tests/benchmarks/bench_precision.py [trajectories] [d beta L T]
[path,...]`` (default 40000 trajectories, d = 3, beta = 0.8, L = 5, T = 50, every path; a
path is named by the start of its row label, e.g. ``span``; two uniform tokens, tol 1e-2).
"before" is the old noise (the symmetric square root of the Gram matrix X X^T:
closed form for n = 2, eigh otherwise; kept here as the reference), the old routing
of LayerNorm (the token network) and the old float32 default of the reduced SDE;
"after" is the code as it is. Prints, per path: P(antipodal) in float32 and float64
(binomial s.e.), z = (p32 - p64)/se of the difference, the float32/float64 wall-time
ratio (compilation included, a few seconds), and the percentiles of log10(1 + rho) of
the float32 antipodal states (token paths, from X_1 + X_2).

Measured (2-core shared CPU, 2026-12): the issue's case, ``40000 4 0.8 20 50 span``:
span n=2 before 0.0447 (0.0010) float32 against 0.0548 (0.0011) float64, z = -6.6,
log10(1+rho) of the float32 antipodal states min / 10% / 50% = -9.7 / -7.8 / -6.2; after
0.0534 (0.0011) against 0.0542 (0.0011), z = -0.5, -300 / -13.8 / -10.8. The default
case at 20000: before/after z = -0.70/+0.60 (span), +0.12/+0.12 (full), +0.87/-0.10
(particles), -1.00/-1.00 (pair), -3.00/+0.35 (LayerNorm), -0.93/-0.99 (reduced, where
"before" ran float32 when float64 was asked).
"""

import sys
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import spheresde.transformer._noise as noise_module  # noqa: E402
from spheresde import sample_uniform  # noqa: E402
from spheresde.experiments import _simulate  # noqa: E402
from spheresde.transformer import PureNoise, simulate_network  # noqa: E402
from spheresde.transformer._absorption import absorbing_network, absorbing_rho  # noqa: E402
from spheresde.transformer._network import network_depth  # noqa: E402
from spheresde.transformer._outcomes import ANTIPODAL  # noqa: E402

NEW_FACTOR = noise_module.span_factor


def old_factor(tokens):
    """The old span noise: the symmetric square root of the Gram matrix (the factor is
    symmetric, so F F^T = G with F = G^{1/2})."""
    gram = tokens @ jnp.swapaxes(tokens, -1, -2)
    if gram.shape[-1] == 2:
        g00, g01, g10, g11 = gram[..., 0, 0], gram[..., 0, 1], gram[..., 1, 0], gram[..., 1, 1]
        s = jnp.sqrt(jnp.maximum(g00 * g11 - g01 * g10, 0.0))[..., None, None]
        tr = (g00 + g11)[..., None, None]
        return (gram + s * jnp.eye(2, dtype=gram.dtype)) / jnp.sqrt(tr + 2 * s)
    lam, vec = jnp.linalg.eigh(gram)
    return (vec * jnp.sqrt(jnp.maximum(lam, 0.0))[..., None, :]) @ jnp.swapaxes(vec, -1, -2)


def use(factor):
    noise_module.span_factor = factor
    _simulate._compiled.cache_clear()
    jax.clear_caches()


def gaps_of(tokens, tol=1e-2):
    x = np.asarray(tokens, float)
    s = x[:, 0] + x[:, 1]
    rho = np.sum(x[:, 0] * x[:, 1], axis=-1)
    plus = np.sum(s * s, axis=-1) / 2
    return np.log10(np.maximum(plus[rho < -(1 - tol)], 1e-300))


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 40_000
    d, beta, layers, horizon = ((int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]),
                                 float(sys.argv[5])) if len(sys.argv) > 5 else (3, 0.8, 5, 50.0))
    tol = 1e-2
    w = PureNoise()

    def tokens_path(kind, norm, dim):
        def run(key, dtype):
            if kind == "full":
                k0, k1 = jax.random.split(key)
                x0 = sample_uniform(k0, (n, 2), dim, dtype)
                x = simulate_network(k1, x0, beta, w, layers=layers, horizon=horizon,
                                     trajectories=n, noise="full", norm=norm).tokens
            else:
                x = _simulate._final_tokens(kind, key, tokens=2, beta=beta, d=dim, weights=w,
                                            trajectories=n, layers=layers,
                                            steps=network_depth(horizon, layers),
                                            norm=norm, dtype=dtype)
            x = np.asarray(x, float)
            rho = np.sum(x[:, 0] * x[:, 1], axis=-1)
            return float(np.mean(rho < -(1 - tol))), gaps_of(x, tol)
        return run

    def pair_path(norm, dim):
        def run(key, dtype):
            codes, _ = absorbing_network(key, beta=beta, d=dim, weights=w, trajectories=n,
                                         layers=layers, steps=network_depth(horizon, layers),
                                         tol=tol, bound=0.0, norm=norm, dtype=dtype)
            return float(np.mean(codes == ANTIPODAL)), None
        return run

    def reduced(default_dtype):
        def run(key, dtype):
            codes, _ = absorbing_rho(key, beta=beta, d=d, eps=1.0, mu=0.0, trajectories=n,
                                     layers=layers, steps=network_depth(horizon, layers), tol=tol,
                                     bound=0.0,
                                     dtype=default_dtype if dtype == jnp.float64 else dtype)
            return float(np.mean(codes == ANTIPODAL)), None
        return run

    # (path, run before, run after)
    rows = [
        ("span n=2 (network)", tokens_path("discrete", "rms", d),
         tokens_path("discrete", "rms", d)),
        ("full n=2 (network)", tokens_path("full", "rms", d), tokens_path("full", "rms", d)),
        ("particles n=2 (span)", tokens_path("particles", "rms", d),
         tokens_path("particles", "rms", d)),
        ("pair RMS", pair_path("rms", d), pair_path("rms", d)),
        ("LayerNorm d+1 n=2", tokens_path("discrete", "layer", d + 1), pair_path("layer", d + 1)),
        ("reduced (float64 asked)", reduced(jnp.float32), reduced(None)),
    ]
    print(f"two tokens, d = {d} (LayerNorm d + 1), beta = {beta}, L = {layers}, T = {horizon:g}, "
          f"{n} trajectories per precision, tol {tol}")
    print("| path | version | p float32 (se) | p float64 (se) | z | time f32/f64 "
          "| log10(1+rho) f32 antipodal: min / 10% / 50% |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    only = sys.argv[6].split(",") if len(sys.argv) > 6 else None
    for name, before, after in rows:
        if only is not None and not any(name.startswith(o) for o in only):
            continue
        for version, run, factor in (("before", before, old_factor), ("after", after, NEW_FACTOR)):
            use(factor)
            out, times = [], []
            for i, dtype in enumerate((jnp.float32, jnp.float64)):
                t = time.perf_counter()
                out.append(run(jax.random.PRNGKey(i), dtype))
                times.append(time.perf_counter() - t)
            (p32, g32), (p64, _) = out
            se32, se64 = (np.sqrt(p * (1 - p) / n) for p in (p32, p64))
            z = (p32 - p64) / np.hypot(se32, se64)
            hist = ("-" if g32 is None or g32.size == 0 else
                    " / ".join(f"{v:.1f}" for v in np.percentile(g32, [0, 10, 50])))
            print(f"| {name} | {version} | {p32:.4f} ({se32:.4f}) | {p64:.4f} ({se64:.4f}) | "
                  f"{z:+.2f} | {times[0] / times[1]:.2f} | {hist} |", flush=True)
    use(NEW_FACTOR)


if __name__ == "__main__":
    main()
