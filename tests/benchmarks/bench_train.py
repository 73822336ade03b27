"""Figure 2 training: throughput, the quick run's wall time and its accuracy (run explicitly).

    .venv/bin/python tests/benchmarks/bench_train.py [--skip-quick]

Prints, from one run:

- training throughput in images per second (one epoch of the digits, batch 64,
  d = 16, 16 tokens, ``random`` weights) at depth L = 8, 32, 64, with the ratio to
  L = 8 measured in the same process (the baseline), after a warm-up epoch (compilation
  excluded);
- the wall time and CPU time of the ``quick`` Figure 2 (``TrainSpec()``: 3
  initializations x 5 seeds x 12 epochs), compilation included, as ``reproduce`` pays it;
- its final validation accuracy per initialization (mean, min, max over the seeds) beside a
  plain scikit-learn ``LogisticRegression`` on the same splits, for scale.

On a shared machine wall time overstates the cost; CPU seconds of this process (user +
system) are printed beside it.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import equinox as eqx
import jax
import numpy as np

import spheresde
from spheresde.experiments import TrainSpec, run_train
from spheresde.experiments._train import final_accuracy


def cpu_now() -> float:
    t = os.times()
    return t.user + t.system


def throughput(layers: int, data, lr: float = 1e-2) -> tuple[float, float]:
    """Images per wall second and per CPU second of one training epoch at depth ``layers``.

    ``lr`` only serves to get a new optimizer object, hence a new compilation.
    """
    x = jax.numpy.asarray(spheresde.patchify(data.train_images, 2))
    y = jax.numpy.asarray(data.train_labels)
    batch = 64
    steps = len(y) // batch
    model = spheresde.TransformerClassifier.create(
        jax.random.key(0), patches=x.shape[1], patch_size=x.shape[2], classes=10, d=16,
        layers=layers, weights="random")
    optim = spheresde.classifier_optimizer(lr, 1e-4, 10 * steps)
    state = optim.init(eqx.filter(model, eqx.is_inexact_array))
    order = jax.random.permutation(jax.random.key(1), len(y))[:steps * batch]
    order = order.reshape(steps, batch)
    model, state, loss = spheresde.train_epoch(model, state, optim, x, y, order)  # compile
    jax.block_until_ready(loss)
    walls, cpus = [], []
    for _ in range(3):
        start, cpu = time.perf_counter(), cpu_now()
        model, state, loss = spheresde.train_epoch(model, state, optim, x, y, order)
        jax.block_until_ready(loss)
        walls.append(time.perf_counter() - start)
        cpus.append(cpu_now() - cpu)
    images = steps * batch
    return images / min(walls), images / min(cpus)


def logistic_regression(seed: int) -> float:
    from sklearn.linear_model import LogisticRegression

    data = spheresde.load_digits(seed)
    fit = LogisticRegression(max_iter=2000).fit(data.train_images.reshape(len(data.train_labels),
                                                                          -1),
                                                data.train_labels)
    return float(fit.score(data.val_images.reshape(len(data.val_labels), -1), data.val_labels))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-quick", action="store_true", help="throughput only")
    args = parser.parse_args()

    data = spheresde.load_digits(0)
    print("training throughput (digits, batch 64, d = 16, n = 16 tokens, random weights)")
    base = None
    for layers in (8, 32, 64):
        wall, cpu = throughput(layers, data)
        base = base or wall
        print(f"  L = {layers:2d}: {wall:8.0f} images/s wall, {cpu:8.0f} images/CPU-s, "
              f"ratio to L = 8: {wall / base:.2f} (depth ratio {8 / layers:.3f})")
    # The classifier computes attention with jnp.matmul (attention(dense=True)); the
    # sliced sums of spheresde._small, made for vmapped SDE paths, as the alternative.
    from spheresde import _attention, _classifier

    dense = _classifier.attention
    _classifier.attention = lambda *a, dense, **k: _attention.attention(*a, dense=False, **k)
    sliced, _ = throughput(32, data, lr=1.1e-2)
    _classifier.attention = dense
    dense_32, _ = throughput(32, data, lr=1.2e-2)
    print(f"  L = 32 with sliced-sum attention: {sliced:8.0f} images/s wall; dense is "
          f"{dense_32 / sliced:.2f}x faster (dense re-measured: {dense_32:.0f} images/s)")
    if args.skip_quick:
        return

    spec = TrainSpec()
    with tempfile.TemporaryDirectory() as out:
        start, cpu = time.perf_counter(), cpu_now()
        result = run_train(spec, out, quiet=True)
        wall, cpu = time.perf_counter() - start, cpu_now() - cpu
    print(f"quick Figure 2 ({len(spec.weights)} inits x {spec.seeds} seeds x {spec.epochs} "
          f"epochs, L = {spec.layers}): {wall:.1f} s wall, {cpu:.1f} CPU-s")
    print("final validation accuracy (mean [min, max] over seeds):")
    for weights, (mean, low, high) in final_accuracy(result.rows).items():
        print(f"  {weights:8s}: {mean:.3f} [{low:.3f}, {high:.3f}]")
    logistic = [logistic_regression(spec.seed + k) for k in range(spec.seeds)]
    print(f"  logistic regression on the same splits: {np.mean(logistic):.3f} "
          f"[{min(logistic):.3f}, {max(logistic):.3f}]")


if __name__ == "__main__":
    main()
