"""The two-token network: the vector chain in R^d vs the Gram chain (run explicitly).

    .venv/bin/python tests/benchmarks/bench_gram_chain.py [--dims 4,7,10] [--lanes 4096]
        [--layers 512] [--x64] [--chunk]

``profile``  where a layer of the vector chain (``_advance_pair``: pure noise, no
             absorption) spends its time, ns per trajectory-layer: the whole chain; the
             2d normals alone (drawn per lane and block as the chain draws them, reduced
             to one number so that nothing else is stored); the layer arithmetic alone
             on a stored block of normals; and ``jax.random.gamma`` for the Gram
             chain's two chi-squares instead of summing the squares of d - 2 + d - 3 of
             those normals.
``chains``   ns per trajectory-layer of the vector chain and of the Gram chain
             (``_advance_gram``, the same normals) and their ratio, same process, same
             lanes, best of 5 after a compiled warm-up.
``--chunk``  also one chunk of the quick phase sweep through ``absorbing_network`` (4,000
             trajectories, L = 20, T = 100, beta = 1, tol 1e-2, absorption at 1e-6),
             ``chain="vectors"`` vs ``"gram"``, seconds after a warm-up run (absorption
             compiles a program per batch size), and the ratio.

Measured: three runs on 2 CPU cores shared with other work (load 8-10, so each number
moves by tens of percent between runs; float32, 4,096 lanes, 512 layers, ns per
trajectory-layer)::

      d  vectors  normals    arith 2 gammas     gram  vectors/gram
      4      510       91       49     2188      251          2.03
      7     1112      242      175     2260      499          2.23
     10     1580      360      122     2265      793          1.99

      4      860      221      101     2308      182          4.73
      7     1256      393      110     2019      749          1.68
     10     1390      497      144     1561      978          1.42

      4      705      177       89     2369      308          2.29
      7     1072      331      190     2616      397          2.70
     10     1936      412      187     1173      580          3.34

    quick phase chunk (4,000 trajectories, L = 20, T = 100, beta = 1), seconds
      4 vectors    1.37  gram    0.92  ratio  1.49
      7 vectors    1.54  gram    0.56  ratio  2.72
     10 vectors    1.98  gram    0.86  ratio  2.30

(A first profile at load about 3: vectors 566 / 1064, normals 95 / 343 at d = 4 / 10.)
The 2d normals alone are a fifth to a third of the vector chain and its arithmetic on
stored normals less; the rest is the normals' trip through the layer loop (stored as a
(block, lanes, 2, d) array and sliced per layer). The Gram chain draws the same normals
and reduces them to the 7 numbers of a layer as they are drawn: 1.4x to 4.7x, about 2x
typically, per trajectory-layer and per absorbing chunk. Its cost still
grows with d through the normals (``gammas``: two ``jax.random.gamma`` draws per layer,
a rejection sampler looping over the batch, cost more than all 2d normals at d <= 10,
so the chi-squares are sums of squares).
"""

from __future__ import annotations

import argparse
import time

import jax


def best_of(fn, reps=5):
    """Seconds of the fastest of ``reps`` calls of ``fn`` after one warm-up call."""
    jax.block_until_ready(fn())
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - start)
    return min(times)


def measure(d: int, n: int, count: int, dtype) -> dict[str, float]:
    """Seconds for ``count`` layers of ``n`` lanes at dimension ``d``: the two chains and
    the profile of the vector chain (module docstring)."""
    import jax.numpy as jnp

    from spheresde import sample_uniform
    from spheresde._small import inner
    from spheresde.transformer._absorption import _BLOCK, _advance_gram, _advance_pair
    from spheresde.transformer._pair import pair_layer, pair_noise

    steps = tuple(jnp.asarray(v, dtype) for v in (2.0, 0.0, 0.1))  # beta, drift, noise
    key = jax.random.PRNGKey(d)
    x = sample_uniform(key, (n, 2), d, dtype)
    s, m = x[:, 0] + x[:, 1], x[:, 0] - x[:, 1]
    a, b = jnp.sqrt(inner(s, s)), jnp.sqrt(inner(m, m))
    keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(jnp.arange(n))
    stored = jax.random.normal(key, (_BLOCK, n, 2, d), dtype)

    @jax.jit
    def draws(keys):
        def block(j, total):
            z = jax.vmap(lambda k: jax.random.normal(
                jax.random.fold_in(k, j), (_BLOCK * 2 * d,), dtype))(keys)
            return total + jnp.sum(z)
        return jax.lax.fori_loop(0, count // _BLOCK, block, jnp.zeros((), dtype))

    @jax.jit
    def gammas(keys):
        def block(j, total):
            g = jax.vmap(lambda k: jax.random.gamma(
                jax.random.fold_in(k, j), max(d - 3, 1) / 2, (_BLOCK * 2,), dtype))(keys)
            return total + jnp.sum(g)
        return jax.lax.fori_loop(0, count // _BLOCK, block, jnp.zeros((), dtype))

    @jax.jit
    def arithmetic(s, m, stored):
        def block(j, sm):
            z = stored * (1 + j * 1e-6)  # not loop-invariant: a new block each time

            def one(i, sm):
                return pair_layer(*sm, *pair_noise(*sm, z[i]), *steps)
            return jax.lax.fori_loop(0, _BLOCK, one, sm)
        return jax.lax.fori_loop(0, count // _BLOCK, block, (s, m))

    return {
        "vectors": best_of(lambda: _advance_pair(s, m, keys, 0, count, *steps, noisy=True)),
        "normals": best_of(lambda: draws(keys)),
        "arith": best_of(lambda: arithmetic(s, m, stored)),
        "2 gammas": best_of(lambda: gammas(keys)),
        "gram": best_of(lambda: _advance_gram(a, b, keys, 0, count, *steps, noisy=True,
                                              width=d)),
    }


def chunk_seconds(d: int, chain: str, dtype) -> float:
    """Seconds of one quick phase chunk at ``d`` (module docstring), after a warm-up."""
    from spheresde import PureNoise
    from spheresde.transformer._absorption import absorbing_network

    def run():
        return absorbing_network(jax.random.PRNGKey(d), beta=1.0, d=d, weights=PureNoise(),
                                 trajectories=4000, layers=20, steps=2000, tol=1e-2,
                                 bound=1e-6, chain=chain, dtype=dtype)

    run()
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dims", default="4,7,10")
    parser.add_argument("--lanes", type=int, default=4096)
    parser.add_argument("--layers", type=int, default=512)
    parser.add_argument("--x64", action="store_true")
    parser.add_argument("--chunk", action="store_true")
    opts = parser.parse_args()
    jax.config.update("jax_enable_x64", opts.x64)

    import jax.numpy as jnp

    from spheresde.transformer._absorption import _BLOCK

    dtype = jnp.float64 if opts.x64 else jnp.float32
    n, count = opts.lanes, opts.layers // _BLOCK * _BLOCK
    per = 1e9 / (n * count)
    print(f"ns per trajectory-layer, {n} lanes, {count} layers, {jnp.dtype(dtype).name}")
    names = ("vectors", "normals", "arith", "2 gammas", "gram")
    print(f"{'d':>3} " + " ".join(f"{name:>8}" for name in names) + "  vectors/gram")
    for d in (int(v) for v in opts.dims.split(",")):
        t = measure(d, n, count, dtype)
        print(f"{d:>3} " + " ".join(f"{t[name] * per:8.0f}" for name in names)
              + f"  {t['vectors'] / t['gram']:12.2f}")
    if opts.chunk:
        print("quick phase chunk (4,000 trajectories, L = 20, T = 100, beta = 1), seconds")
        for d in (int(v) for v in opts.dims.split(",")):
            vectors, gram = (chunk_seconds(d, chain, dtype) for chain in ("vectors", "gram"))
            print(f"{d:>3} vectors {vectors:7.2f}  gram {gram:7.2f}  ratio {vectors / gram:5.2f}")


if __name__ == "__main__":
    main()
