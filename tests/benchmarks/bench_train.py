"""Figure 2 training: throughput, the quick run's wall time and its accuracy (run explicitly).

    .venv/bin/python tests/benchmarks/bench_train.py [--skip-quick]

Prints, from one run:

- training throughput in images per second for Fashion-MNIST-sized inputs (6,000 random
  28 x 28 images, 7 x 7 patches: 16 tokens of 49 pixels, batch 64, d = 32, ``random``
  weights) at depth L = 8, 16, 32, 64, with the ratio to L = 8 measured in the same
  process (the baseline), after a warm-up epoch (compilation excluded);
- whether the compiled epoch recompiles across seeds or initializations: at L = 16, one
  epoch for each of 2 seeds x 3 initializations, counting the compilations of
  ``train_epoch`` that JAX logs (it must be 1);
- training runs per second of the quick runs (digits, 3 initializations x 5 seeds, 2
  epochs) at L = 16 and 64, trained one at a time (a batch of one each, the path before
  the runs of a depth were trained together) and all 15 together as one vmapped program,
  compilation excluded (each program runs once before it is timed), and their ratio;
- the wall time and CPU time of the ``quick`` Figure 2 (``TrainSpec()``: 3
  initializations x 5 seeds x 30 epochs), compilation included, as ``reproduce`` pays it,
  beside the ``--dry-run`` estimate made just before in this process (its calibration
  excluded from the measured time);
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
from spheresde.experiments import RunOptions, TrainSpec, run_sweep
from spheresde.experiments._train import final_accuracy, train_estimate, train_runs


def cpu_now() -> float:
    t = os.times()
    return t.user + t.system


def fashion_sized(count: int = 6000):
    """Random images of Fashion-MNIST's size, cut into 7 x 7 patches, and labels."""
    rng = np.random.default_rng(0)
    images = rng.normal(size=(count, 28, 28, 1)).astype(np.float32)
    return (jax.numpy.asarray(spheresde.data.patchify(images, 7)),
            jax.numpy.asarray(rng.integers(0, 10, count).astype(np.int32)))


def epoch_setup(x, y, layers: int, weights: str = "random", seed: int = 0, lr: float = 1e-2):
    """A model, its optimizer and state, and one epoch's batch order; ``lr`` only serves
    to get a new optimizer object, hence a new compilation."""
    batch = 64
    steps = len(y) // batch
    model = spheresde.data.TransformerClassifier.create(
        jax.random.key(seed), patches=x.shape[1], patch_size=x.shape[2], classes=10, d=32,
        layers=layers, weights=weights)
    optim = spheresde.data.classifier_optimizer(lr, 1e-4, 10 * steps)
    state = optim.init(eqx.filter(model, eqx.is_inexact_array))
    order = jax.random.permutation(jax.random.key(seed + 1), len(y))[:steps * batch]
    return model, optim, state, order.reshape(steps, batch)


def throughput(layers: int, x, y, lr: float = 1e-2) -> tuple[float, float]:
    """Images per wall second and per CPU second of one training epoch at depth ``layers``."""
    model, optim, state, order = epoch_setup(x, y, layers, lr=lr)
    model, state, loss = spheresde.data.train_epoch(model, state, optim, x, y, order)  # compile
    jax.block_until_ready(loss)
    walls, cpus = [], []
    for _ in range(3):
        start, cpu = time.perf_counter(), cpu_now()
        model, state, loss = spheresde.data.train_epoch(model, state, optim, x, y, order)
        jax.block_until_ready(loss)
        walls.append(time.perf_counter() - start)
        cpus.append(cpu_now() - cpu)
    images = order.size
    return images / min(walls), images / min(cpus)


def compilations_across_runs(x, y, layers: int = 16) -> int:
    """How many times ``train_epoch`` compiles for 2 seeds x 3 initializations."""
    import logging

    messages = []

    class Keep(logging.Handler):
        def emit(self, record):
            messages.append(record.getMessage())

    handler = Keep(level=logging.WARNING)
    logging.getLogger("jax").addHandler(handler)
    jax.config.update("jax_log_compiles", True)
    try:
        for seed in (0, 1):
            for weights in ("constant", "random", "identity"):
                model, optim, state, order = epoch_setup(x, y, layers, weights, seed, lr=2e-2)
                _, _, loss = spheresde.data.train_epoch(model, state, optim, x, y, order)
                jax.block_until_ready(loss)
    finally:
        jax.config.update("jax_log_compiles", False)
        logging.getLogger("jax").removeHandler(handler)
    return sum("XLA compilation of jit(train_epoch)" in m for m in messages)


def timed(work) -> tuple[float, float]:
    """Wall and CPU seconds of ``work()``."""
    start, cpu = time.perf_counter(), cpu_now()
    work()
    return time.perf_counter() - start, cpu_now() - cpu


def runs_per_second(layers: int) -> tuple[float, float, float, float]:
    """Training runs per wall second and per CPU second, one at a time and together, of
    the quick runs at depth ``layers`` with 2 epochs (compiled before timing)."""
    spec = TrainSpec(layers=(layers,), epochs=2)
    points = spec.points()
    train_runs(spec, points[:1], quiet=True)  # compiles the program of one run
    train_runs(spec, points, quiet=True)  # and that of all of them
    alone = timed(lambda: [train_runs(spec, [p], quiet=True) for p in points])
    together = timed(lambda: train_runs(spec, points, quiet=True))
    return (len(points) / alone[0], len(points) / alone[1], len(points) / together[0],
            len(points) / together[1])


def logistic_regression(seed: int) -> float:
    from sklearn.linear_model import LogisticRegression

    data = spheresde.data.load_digits(seed)
    fit = LogisticRegression(max_iter=2000).fit(data.train_images.reshape(len(data.train_labels),
                                                                          -1),
                                                data.train_labels)
    return float(fit.score(data.val_images.reshape(len(data.val_labels), -1), data.val_labels))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-quick", action="store_true", help="throughput only")
    args = parser.parse_args()

    x, y = fashion_sized()
    print("training throughput (Fashion-MNIST-sized: 28 x 28 images, 7 x 7 patches = 16 "
          "tokens, batch 64, d = 32, random weights)")
    base = None
    for layers in (8, 16, 32, 64):
        wall, cpu = throughput(layers, x, y)
        base = base or wall
        print(f"  L = {layers:2d}: {wall:8.0f} images/s wall, {cpu:8.0f} images/CPU-s, "
              f"ratio to L = 8: {wall / base:.2f} (depth ratio {8 / layers:.3f})")
    count = compilations_across_runs(x, y)
    print(f"  train_epoch compiled {count} time(s) for 2 seeds x 3 initializations at L = 16 "
          f"({'no recompilation' if count == 1 else 'RECOMPILES'})")
    # The classifier computes attention with jnp.matmul (attention(dense=True)); the
    # sliced sums of spheresde._small, made for vmapped SDE paths, as the alternative.
    from spheresde.data import _classifier
    from spheresde.transformer import _attention

    dense = _classifier.attention
    _classifier.attention = lambda *a, dense, **k: _attention.attention(*a, dense=False, **k)
    sliced, _ = throughput(32, x, y, lr=1.1e-2)
    _classifier.attention = dense
    dense_32, _ = throughput(32, x, y, lr=1.2e-2)
    print(f"  L = 32 with sliced-sum attention: {sliced:8.0f} images/s wall; dense is "
          f"{dense_32 / sliced:.2f}x faster (dense re-measured: {dense_32:.0f} images/s)")
    print("training runs per second, quick runs (digits, 15 runs of 2 epochs; wall, CPU)")
    for layers in (16, 64):
        alone, alone_cpu, together, together_cpu = runs_per_second(layers)
        print(f"  L = {layers:2d}: one at a time {alone:.3f} runs/s ({alone_cpu:.3f}/CPU-s), "
              f"15 together {together:.3f} runs/s ({together_cpu:.3f}/CPU-s): ratio "
              f"{together / alone:.2f} wall, {together_cpu / alone_cpu:.2f} CPU")
    if args.skip_quick:
        return

    spec = TrainSpec()
    # neither may find the other's programs compiled: the real run compiles afresh
    jax.clear_caches()
    start = time.perf_counter()
    lines, parts = train_estimate(spec, spec.points())
    planned = time.perf_counter() - start
    print("the dry run of the quick Figure 2:", *lines, sep="\n")
    jax.clear_caches()
    with tempfile.TemporaryDirectory() as out:
        start, cpu = time.perf_counter(), cpu_now()
        result = run_sweep(spec, out, RunOptions(quiet=True))
        wall, cpu = time.perf_counter() - start, cpu_now() - cpu
    estimate = sum(parts.values())
    print(f"quick Figure 2 ({len(spec.weights)} inits x {spec.seeds} seeds x {spec.epochs} "
          f"epochs, L = {spec.layers}): {wall:.1f} s wall, {cpu:.1f} CPU-s; the dry run "
          f"estimated {estimate:.1f} s (compile {parts['compile']:.1f}, train "
          f"{parts['train']:.1f}, evaluate {parts['evaluate']:.1f}; its calibration took "
          f"{planned:.1f} s): measured / estimated = {wall / estimate:.2f}")
    print("final validation accuracy (mean [min, max] over seeds):")
    for weights, (mean, low, high) in final_accuracy(result.rows).items():
        print(f"  {weights:8s}: {mean:.3f} [{low:.3f}, {high:.3f}]")
    logistic = [logistic_regression(spec.seed + k) for k in range(spec.seeds)]
    print(f"  logistic regression on the same splits: {np.mean(logistic):.3f} "
          f"[{min(logistic):.3f}, {max(logistic):.3f}]")


if __name__ == "__main__":
    main()
