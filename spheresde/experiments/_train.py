"""Figure 2: train the deep stochastic Transformer, value matrices initialized three ways.

One grid point is one training run, ``(weights, seed)``; it gives one row per epoch
(epoch 0 is the network at initialization), saved when the run finishes, so an
interrupted ``spheresde train`` resumes without redoing finished runs. Within a seed the
three initializations share the data split, the embedding, the head and the order of
the batches: only the value matrices differ.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from .._outcomes import DEFAULT_TOL
from ._spec import SEED, TOL, BadParameters, ExperimentSpec, at_least, greater_than, param
from ._sweep import RunOptions, SweepResult, run_options, run_point_sweep


def _cifar_needs_a_folder(spec: TrainSpec) -> str | None:
    if spec.dataset == "cifar10" and not spec.data_dir:
        return ("--dataset cifar10 needs --data-dir DIR, a folder with the CIFAR-10 "
                "python-version batches (https://www.cs.toronto.edu/~kriz/cifar.html); "
                "nothing is downloaded")
    return None


def _digits_take_no_folder(spec: TrainSpec) -> str | None:
    if spec.dataset == "digits" and spec.data_dir:
        return ("--data-dir is not used by --dataset digits (scikit-learn ships them); "
                "drop it, or pass --dataset cifar10")
    return None


@dataclass(frozen=True)
class TrainSpec(ExperimentSpec):
    """Figure 2: validation accuracy per epoch of the Transformer classifier, per
    initialization of its value matrices, over several seeds; and the clustering of its
    output tokens. The defaults are the ``quick`` sizes (digits, a few minutes on a CPU).
    """

    command: ClassVar[str] = "train"
    summary: ClassVar[str] = "Figure 2: train the Transformer, V constant vs random vs identity"
    rules: ClassVar = (_cifar_needs_a_folder, _digits_take_no_folder)

    weights: tuple[Literal["constant", "random", "identity"], ...] = param(
        ("constant", "random", "identity"),
        "initializations of the value matrices, a list: constant (one V = Id tied across "
        "layers), random (independent V_k with iid N(0, sigma^2/d) entries), identity "
        "(independent V_k = Id)", metavar="INIT,...")
    dataset: Literal["digits", "cifar10"] = param(
        "digits", "digits: scikit-learn's 8x8 digits, split by seed; cifar10: read from "
        "--data-dir (nothing is downloaded)")
    data_dir: str = param("", "folder with CIFAR-10's python-version batches data_batch_1..5 "
                          "and test_batch", metavar="DIR")
    seeds: int = param(5, "training runs per initialization (seeds seed, seed+1, ...)",
                       check=greater_than(0))
    epochs: int = param(12, "passes over the training set", check=greater_than(0))
    layers: int = param(16, "depth L: layers of the network, residual step 1/sqrt(L)",
                        check=greater_than(0), metavar="L")
    dim: int = param(16, "token dimension d", check=at_least(2))
    patch: int = param(2, "patch side in pixels: an H x W image gives (H/patch)(W/patch) "
                       "tokens", check=greater_than(0))
    beta: float = param(1.0, "inverse temperature of the attention at initialization "
                        "(Q = K = Id, both trainable)", check=at_least(0.0))
    sigma: float = param(1.0, "random weights: entries N(0, sigma^2/d)", check=greater_than(0.0))
    lr: float = param(1e-2, "peak learning rate of AdamW (warm-up, then cosine decay)",
                      check=greater_than(0.0))
    weight_decay: float = param(1e-4, "AdamW weight decay", check=at_least(0.0))
    batch: int = param(64, "images per optimization step", check=greater_than(0))
    tol: float = param(DEFAULT_TOL, **TOL)
    seed: int = param(0, **SEED)

    def points(self) -> list[dict[str, Any]]:
        """One training run per initialization and seed: ``{"weights": w, "seed": s}``."""
        return [{"weights": w, "seed": self.seed + k} for w in self.weights
                for k in range(self.seeds)]


@dataclass(frozen=True)
class TrainRow:
    """One epoch of one training run (epoch 0: at initialization).

    ``token_cosine`` is the mean :math:`\\langle X_i, X_j\\rangle` (``i != j``) of the output
    tokens over the validation images (1: collapsed to one point); ``p_single``,
    ``p_antipodal``, ``p_undecided``: fractions of validation images whose output tokens
    are one cluster, an antipodal pair of clusters, or neither (:func:`spheresde.classify`).
    """

    weights: str
    seed: int
    epoch: int
    train_loss: float  # mean over the epoch's steps; at epoch 0 the loss at initialization
    val_loss: float
    val_accuracy: float
    token_cosine: float
    p_single: float
    p_antipodal: float
    p_undecided: float


@functools.lru_cache(maxsize=8)
def _data(dataset: str, seed: int, data_dir: str, patch: int):
    """Patch tokens of the training and validation sets (cached: CIFAR-10 is read once)."""
    from .._datasets import load_dataset, patchify

    data = load_dataset(dataset, seed=seed, data_dir=data_dir)
    return (patchify(data.train_images, patch), data.train_labels,
            patchify(data.val_images, patch), data.val_labels, data.classes)


def load_data(spec: TrainSpec, seed: int):
    """The data of the run with ``seed``; a bad data set raises :class:`BadParameters`."""
    from .._datasets import DatasetError

    try:  # CIFAR-10 has one official split; the digits are split by the run's seed
        return _data(spec.dataset, seed if spec.dataset == "digits" else 0, spec.data_dir,
                     spec.patch)
    except DatasetError as err:
        raise BadParameters(str(err)) from None


def _run(spec: TrainSpec, point: dict, *, quiet: bool) -> list[TrainRow]:
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    from tqdm.auto import tqdm

    from .._classifier import (
        TransformerClassifier,
        classifier_optimizer,
        evaluate_classifier,
        train_epoch,
    )

    weights, seed = point["weights"], point["seed"]
    x_train, y_train, x_val, y_val, classes = load_data(spec, seed)
    x_train, y_train = jnp.asarray(x_train), jnp.asarray(y_train)
    x_val, y_val = jnp.asarray(x_val), jnp.asarray(y_val)
    batch = min(spec.batch, len(y_train))
    steps = len(y_train) // batch
    # one key per seed, not per point: the initializations of a seed differ only in V
    key_model, key_order = jax.random.split(jax.random.key(seed))
    model = TransformerClassifier.create(
        key_model, patches=x_train.shape[1], patch_size=x_train.shape[2], classes=classes,
        d=spec.dim, layers=spec.layers, weights=weights, sigma=spec.sigma, beta=spec.beta)
    optim = classifier_optimizer(spec.lr, spec.weight_decay, steps * spec.epochs)
    opt_state = optim.init(eqx.filter(model, eqx.is_inexact_array))

    def row(epoch: int, train_loss: float) -> TrainRow:
        ev = evaluate_classifier(model, x_val, y_val, tol=spec.tol)
        return TrainRow(weights, seed, epoch, float(train_loss), float(ev.loss),
                        float(ev.accuracy), float(ev.token_cosine), *map(float, ev.outcomes))

    rows = [row(0, evaluate_classifier(model, x_train, y_train, tol=spec.tol).loss)]
    for epoch in tqdm(range(1, spec.epochs + 1), desc=f"{weights} seed {seed}", unit="epoch",
                      leave=False, disable=quiet, dynamic_ncols=True):
        order = jax.random.permutation(jax.random.fold_in(key_order, epoch), len(y_train))
        model, opt_state, loss = train_epoch(model, opt_state, optim, x_train, y_train,
                                             order[:steps * batch].reshape(steps, batch))
        rows.append(row(epoch, loss))
    return rows


def run_train(spec: TrainSpec, out: str | os.PathLike, *, quiet: bool = False,
              overwrite: bool = False, name: str = "train",
              options: RunOptions | None = None) -> SweepResult[TrainRow] | list[str]:
    """Train every ``(weights, seed)`` run into ``out/NAME.csv`` and draw ``NAME.png``.

    ``options`` as for the other sweeps; the runs are trained in this process (no chunks,
    no Dask), and a dry run prints the plan.
    """
    options = run_options(options, quiet=quiet, overwrite=overwrite)
    quiet, overwrite = options.quiet, options.overwrite
    if options.dry_run:
        runs = len(spec.points())
        return [f"{name}: {spec.command_line()}",
                f"  {runs} training runs x {spec.epochs} epochs ({spec.dataset}), in this "
                "process, not calibrated (the quick size, 15 runs of 12 epochs, takes about 1.5 "
                "minutes on 2 CPU cores)"]
    load_data(spec, spec.seed)  # a missing or malformed data set fails before any run
    import equinox
    import jax
    import optax
    import sklearn

    meta = {"versions": {"jax": jax.__version__, "equinox": equinox.__version__,
                         "optax": optax.__version__, "scikit-learn": sklearn.__version__},
            "seeds": [spec.seed + k for k in range(spec.seeds)]}
    return run_point_sweep(spec, out, TrainRow, lambda s, p: _run(s, p, quiet=quiet),
                           plot_train, name=name, desc=f"{name} ({spec.dataset})",
                           options=options, meta=meta)


COLORS = {"constant": "#d62fa0", "random": "#6a3fb5", "identity": "#2a9d8f"}


def curves(rows: list[TrainRow], weights: str, column: str) -> tuple[np.ndarray, np.ndarray]:
    """Epochs and the values of ``column`` per seed, ``(seeds, epochs)``, for one init."""
    mine = [r for r in rows if r.weights == weights]
    epochs = np.array(sorted({r.epoch for r in mine}))
    seeds = sorted({r.seed for r in mine})
    cell = {(r.seed, r.epoch): getattr(r, column) for r in mine}
    return epochs, np.array([[cell[s, e] for e in epochs] for s in seeds])


def final_accuracy(rows: list[TrainRow]) -> dict[str, tuple[float, float, float]]:
    """Validation accuracy after the last epoch per initialization: (mean, min, max)."""
    out = {}
    for w in dict.fromkeys(r.weights for r in rows):
        _, acc = curves(rows, w, "val_accuracy")
        out[w] = (float(acc[:, -1].mean()), float(acc[:, -1].min()), float(acc[:, -1].max()))
    return out


def plot_train(rows: list[TrainRow], spec: TrainSpec, path: Path) -> Path:
    """Left: validation accuracy per epoch (mean over seeds, min-max band), the paper's
    Figure 2; right: mean cosine between output tokens, the clustering the theory predicts."""
    from matplotlib.ticker import MaxNLocator

    from ._plotting import save, subplots

    fig, (ax, bx) = subplots(1, 2, figsize=(11, 4.2))
    for w in spec.weights:
        color = COLORS[w]
        for axis, column in ((ax, "val_accuracy"), (bx, "token_cosine")):
            epochs, values = curves(rows, w, column)
            axis.plot(epochs, values.mean(axis=0), color=color, marker="o", ms=3,
                      label=f"{w} weights")
            axis.fill_between(epochs, values.min(axis=0), values.max(axis=0), color=color,
                              alpha=0.2, lw=0)
    sizes = (f"{spec.dataset}, L={spec.layers}, d={spec.dim}, beta={spec.beta:g}, "
             f"{spec.seeds} seeds (mean, min-max band)")
    ax.set_xlabel("epoch")
    ax.set_ylabel("validation accuracy")
    ax.set_title(f"Figure 2: {sizes}", fontsize=9)
    ax.legend(fontsize=8)
    bx.set_xlabel("epoch (0: at initialization)")
    bx.set_ylabel(r"mean $\langle X_i, X_j\rangle$ of the output tokens")
    bx.set_ylim(min(-0.05, bx.get_ylim()[0]), 1.02)
    bx.axhline(1.0, color="#9a9a9a", lw=0.8, ls=":")
    bx.set_title("clustering of the output tokens (1: a single point), validation set",
                 fontsize=9)
    bx.legend(fontsize=8)
    for axis in (ax, bx):
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
    return save(fig, path)


__all__ = ["TrainRow", "TrainSpec", "final_accuracy", "plot_train", "run_train"]
