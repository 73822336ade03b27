"""One layer, two readings: the paper's fast paths against the generic reading of the same
layer (run explicitly; not a pytest test).

    .venv/bin/python tests/benchmarks/bench_layer.py [--repeats 3] [--paths-only]

In one process, float32, after one warm-up call of each program (compilation excluded),
best of ``--repeats`` wall times:

- the discrete network of the paper's layer, n = 2 and n = 4 tokens, d = 8, 2,000
  trajectories, 200 layers: :func:`spheresde.transformer.simulate_network` (the span
  noise, d x n normals a layer) against ``Layer("paper").simulate`` (the engine's reading,
  a d x d matrix a layer);
- two tokens through the Gram chain (``absorbing_network``, absorption off) against the
  same generic reading;

and prints the ratio generic / fast: what the registered fast paths buy. ``--paths-only``
times the paper's fast paths alone (their rates), to compare two checkouts of the
package (before and after a change) run one after the other on the same machine.
"""

from __future__ import annotations

import argparse
import time

import jax


def best(run, repeats):
    jax.block_until_ready(run())  # compile
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(run())
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--paths-only", action="store_true")
    args = parser.parse_args()

    from spheresde import sample_uniform
    from spheresde.transformer import PureNoise, simulate_network

    try:
        from spheresde.transformer._absorption import absorbing_network
    except ImportError:  # --paths-only on a checkout from before the model's move
        from spheresde._absorption import absorbing_network

    paths, d, layers, steps, beta = 2000, 8, 20, 200, 1.5
    key = jax.random.key(0)
    rows = []
    for n in (2, 4):
        x0 = sample_uniform(key, (paths, n), d)

        def fast(x0=x0):
            return simulate_network(key, x0, beta, layers=layers, horizon=steps / layers,
                                    trajectories=paths).tokens

        rows.append((f"network n={n}", fast, x0))

    def gram():
        return absorbing_network(key, beta=beta, d=d, weights=PureNoise(), trajectories=paths,
                                 layers=layers, steps=steps, tol=1e-2, bound=0.0)[0]

    rows.append(("Gram chain n=2", gram, sample_uniform(key, (paths, 2), d)))
    work = paths * steps
    print(f"{paths} trajectories x {steps} layers, d = {d}, float32; best of {args.repeats}")
    for label, fast, x0 in rows:
        t_fast = best(fast, args.repeats)
        line = f"{label:16s} fast path {t_fast:7.3f} s ({work / t_fast:10.3e} traj-steps/s)"
        if not args.paths_only:
            from spheresde.transformer import layer

            def generic(x0=x0):
                return layer("paper").simulate(key, x0, beta=beta, layers=layers, steps=steps)

            t_generic = best(generic, args.repeats)
            line += f"   generic {t_generic:7.3f} s   generic / fast {t_generic / t_fast:5.2f}"
        print(line)


if __name__ == "__main__":
    main()
