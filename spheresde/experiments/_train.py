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
                "drop it, or pass --dataset fashion-mnist or cifar10")
    return None


def _subset_is_for_fashion(spec: TrainSpec) -> str | None:
    if spec.subset and spec.dataset != "fashion-mnist":
        return (f"--subset is used by --dataset fashion-mnist only (--dataset {spec.dataset} "
                "trains on all its images); drop it")
    return None


@dataclass(frozen=True)
class TrainSpec(ExperimentSpec):
    """Figure 2: validation accuracy per epoch of the Transformer classifier, per
    initialization of its value matrices, over several seeds; and the clustering of its
    output tokens. The defaults are the ``quick`` sizes (digits, a few minutes on a CPU).
    """

    command: ClassVar[str] = "train"
    summary: ClassVar[str] = "Figure 2: train the Transformer, V constant vs random vs identity"
    rules: ClassVar = (_cifar_needs_a_folder, _digits_take_no_folder, _subset_is_for_fashion)

    weights: tuple[Literal["constant", "random", "identity"], ...] = param(
        ("constant", "random", "identity"),
        "initializations of the value matrices, a list: constant (one V = Id tied across "
        "layers), random (independent V_k with iid N(0, sigma^2/d) entries), identity "
        "(independent V_k = Id)", metavar="INIT,...")
    dataset: Literal["digits", "fashion-mnist", "cifar10"] = param(
        "digits", "digits: scikit-learn's 8x8 digits, split by seed; fashion-mnist: the four "
        "official IDX files in --data-dir (default /usr/share/datasets/fashion-mnist, where "
        "`apt-get install dataset-fashion-mnist` puts them), validated on the official test "
        "set; cifar10: read from --data-dir (nothing is downloaded)")
    data_dir: str = param("", "fashion-mnist: folder with train-images-idx3-ubyte.gz, "
                          "train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz and "
                          "t10k-labels-idx1-ubyte.gz; cifar10: folder with the python-version "
                          "batches data_batch_1..5 and test_batch", metavar="DIR")
    subset: int = param(0, "fashion-mnist only: train on this many images and validate on "
                        "subset/6, chosen by --seed, for quick looks (0: all 60,000 and the "
                        "10,000 test images)", check=at_least(0), metavar="N")
    seeds: int = param(5, "training runs per initialization (seeds seed, seed+1, ...)",
                       check=greater_than(0))
    epochs: int = param(30, "passes over the training set", check=greater_than(0))
    layers: tuple[int, ...] = param(
        (16,), "depths L: layers of the network, residual step 1/sqrt(L); a list 4,8,16,32,64 "
        "trains every initialization and seed at each depth and draws NAME_depth.png",
        check=greater_than(0), metavar="L,...")
    dim: int = param(32, "token dimension d", check=at_least(2))
    patch: int = param(2, "patch side in pixels: an H x W image gives (H/patch)(W/patch) "
                       "tokens", check=greater_than(0))
    beta: float = param(1.0, "inverse temperature of the attention at initialization "
                        "(Q = K = Id, both trainable)", check=at_least(0.0))
    sigma: float = param(1.0, "random weights: entries N(0, sigma^2/d)", check=greater_than(0.0))
    lr: float = param(5e-3, "peak learning rate of AdamW (warm-up, then cosine decay)",
                      check=greater_than(0.0))
    weight_decay: float = param(1e-4, "AdamW weight decay", check=at_least(0.0))
    batch: int = param(64, "images per optimization step", check=greater_than(0))
    tol: float = param(DEFAULT_TOL, **TOL)
    seed: int = param(0, **SEED)

    def points(self) -> list[dict[str, Any]]:
        """One training run per depth, seed and initialization:
        ``{"weights": w, "seed": s, "layers": L}``, the initializations of one seed and
        depth one after the other."""
        return [{"weights": w, "seed": self.seed + k, "layers": L} for L in self.layers
                for k in range(self.seeds) for w in self.weights]


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
    layers: int
    epoch: int
    train_loss: float  # mean over the epoch's steps; at epoch 0 the loss at initialization
    val_loss: float
    val_accuracy: float
    token_cosine: float
    p_single: float
    p_antipodal: float
    p_undecided: float


@functools.lru_cache(maxsize=8)
def _data(dataset: str, seed: int, data_dir: str, patch: int, subset: int):
    """Patch tokens of the training and validation sets (cached: a file is read once)."""
    from .._datasets import load_dataset, patchify

    data = load_dataset(dataset, seed=seed, data_dir=data_dir, subset=subset)
    return (patchify(data.train_images, patch), data.train_labels,
            patchify(data.val_images, patch), data.val_labels, data.classes)


def load_data(spec: TrainSpec, seed: int):
    """The data of the run with ``seed``; a bad data set raises :class:`BadParameters`."""
    from .._datasets import DatasetError

    # The digits are split by the run's seed; Fashion-MNIST and CIFAR-10 have one official
    # split (a Fashion-MNIST subset is chosen by the spec's seed, the same for every run).
    try:
        return _data(spec.dataset, seed if spec.dataset == "digits" else spec.seed,
                     spec.data_dir, spec.patch, spec.subset)
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

    weights, seed, layers = point["weights"], point["seed"], point["layers"]
    x_train, y_train, x_val, y_val, classes = load_data(spec, seed)
    x_train, y_train = jnp.asarray(x_train), jnp.asarray(y_train)
    x_val, y_val = jnp.asarray(x_val), jnp.asarray(y_val)
    batch = min(spec.batch, len(y_train))
    steps = len(y_train) // batch
    # one key per seed, not per point: the initializations of a seed differ only in V
    key_model, key_order = jax.random.split(jax.random.key(seed))
    model = TransformerClassifier.create(
        key_model, patches=x_train.shape[1], patch_size=x_train.shape[2], classes=classes,
        d=spec.dim, layers=layers, weights=weights, sigma=spec.sigma, beta=spec.beta)
    optim = classifier_optimizer(spec.lr, spec.weight_decay, steps * spec.epochs)
    opt_state = optim.init(eqx.filter(model, eqx.is_inexact_array))

    def row(epoch: int, train_loss: float) -> TrainRow:
        ev = evaluate_classifier(model, x_val, y_val, tol=spec.tol)
        return TrainRow(weights, seed, layers, epoch, float(train_loss), float(ev.loss),
                        float(ev.accuracy), float(ev.token_cosine), *map(float, ev.outcomes))

    rows = [row(0, evaluate_classifier(model, x_train, y_train, tol=spec.tol).loss)]
    for epoch in tqdm(range(1, spec.epochs + 1), desc=f"{weights} seed {seed} L={layers}",
                      unit="epoch", leave=False, disable=quiet, dynamic_ncols=True):
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
        depth = sum(spec.layers) / 16 * len(spec.weights) * spec.seeds
        return [f"{name}: {spec.command_line()}",
                f"  {runs} training runs x {spec.epochs} epochs ({spec.dataset}), in this "
                f"process, worth {depth:.0f} runs at L = 16; the quick size (15 runs of 30 "
                "epochs of the digits at L = 16) takes about 2 minutes on 2 CPU cores, a run of "
                "15 Fashion-MNIST epochs at L = 16 about 4 CPU-minutes"]
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
PAIRS = (("random", "constant"), ("random", "identity"), ("identity", "constant"))
"""The paired comparisons the report makes: (first, second), differences first - second."""


def curves(rows: list[TrainRow], weights: str, column: str,
           layers: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Epochs and the values of ``column`` per seed, ``(seeds, epochs)``, for one
    initialization at depth ``layers`` (None: the rows have a single depth)."""
    mine = [r for r in rows if r.weights == weights and layers in (None, r.layers)]
    if len({r.layers for r in mine}) > 1:
        raise ValueError("these rows hold several depths: pass layers=")
    epochs = np.array(sorted({r.epoch for r in mine}))
    seeds = sorted({r.seed for r in mine})
    cell = {(r.seed, r.epoch): getattr(r, column) for r in mine}
    return epochs, np.array([[cell[s, e] for e in epochs] for s in seeds])


def _inits(rows: list[TrainRow]) -> list[str]:
    return list(dict.fromkeys(r.weights for r in rows))


def final_accuracy(rows: list[TrainRow],
                   layers: int | None = None) -> dict[str, tuple[float, float, float]]:
    """Validation accuracy after the last epoch per initialization: (mean, min, max)."""
    out = {}
    for w in _inits(rows):
        _, acc = curves(rows, w, "val_accuracy", layers)
        out[w] = (float(acc[:, -1].mean()), float(acc[:, -1].min()), float(acc[:, -1].max()))
    return out


@dataclass(frozen=True)
class PairedDifference:
    """Final validation accuracy of ``first`` minus ``second``, seed by seed, at one depth.

    Seed by seed the two runs share the data split, the batch order, the embedding and the
    head: only the value matrices differ, so the differences are paired. ``low``, ``high``:
    the 95% Student t interval of their mean (nan with one seed).
    """

    first: str
    second: str
    layers: int
    differences: tuple[float, ...]
    mean: float
    low: float
    high: float

    @property
    def wins(self) -> tuple[int, int, int]:
        """Seeds where ``first`` is ahead, where ``second`` is, and ties."""
        d = np.asarray(self.differences)
        return int(np.sum(d > 0)), int(np.sum(d < 0)), int(np.sum(d == 0))

    @property
    def verdict(self) -> str:
        """``first`` or ``second`` when the interval excludes 0 on its side, else ``"neither"``."""
        if self.low > 0:
            return self.first
        if self.high < 0:
            return self.second
        return "neither"


def paired_differences(rows: list[TrainRow], layers: int | None = None,
                       pairs=PAIRS) -> list[PairedDifference]:
    """:class:`PairedDifference` for each pair of :data:`PAIRS` whose two initializations
    are in ``rows`` (at depth ``layers``; None: the rows have a single depth)."""
    from scipy import stats

    mine = [r for r in rows if layers in (None, r.layers)]
    if len(depth := {r.layers for r in mine}) != 1:
        raise ValueError(f"rows at depths {sorted(depth)}: pass one of them as layers=")
    have, (depth,), last = set(_inits(mine)), depth, max(r.epoch for r in mine)
    # seed by seed; a seed that one initialization lacks (a sweep in progress) is left out
    final = {(r.weights, r.seed): r.val_accuracy for r in mine if r.epoch == last}
    out = []
    for first, second in pairs:
        if not {first, second} <= have:
            continue
        seeds = sorted({s for w, s in final if w == first} & {s for w, s in final if w == second})
        diff = np.array([final[first, s] - final[second, s] for s in seeds])
        n, mean = len(diff), float(diff.mean())
        half = (float(stats.t.ppf(0.975, n - 1) * diff.std(ddof=1) / np.sqrt(n)) if n > 1
                else float("nan"))
        out.append(PairedDifference(first, second, depth, tuple(map(float, diff)), mean,
                                    mean - half, mean + half))
    return out


@dataclass(frozen=True)
class Convergence:
    """Has the validation curve of one initialization flattened? ``change``: how much the
    mean accuracy over seeds moved over the last ``window`` epochs; ``spread``: the
    standard deviation over seeds of the final accuracy (0 with one seed)."""

    weights: str
    layers: int
    window: int
    change: float
    spread: float

    @property
    def flat(self) -> bool:
        """The last epochs moved the mean by less than the seeds differ."""
        return abs(self.change) < max(self.spread, 1e-3)


def convergence(rows: list[TrainRow], layers: int | None = None) -> list[Convergence]:
    """:class:`Convergence` of every initialization, over the last quarter of the epochs
    (at least 2)."""
    out = []
    for w in _inits(rows):
        epochs, acc = curves(rows, w, "val_accuracy", layers)
        window = min(max(2, (len(epochs) - 1) // 4), len(epochs) - 1)
        mean = acc.mean(axis=0)
        out.append(Convergence(w, layers if layers is not None else rows[0].layers, window,
                               float(mean[-1] - mean[-1 - window]),
                               float(acc[:, -1].std(ddof=1)) if len(acc) > 1 else 0.0))
    return out


def depths(rows: list[TrainRow]) -> list[int]:
    """The depths in ``rows``, ascending."""
    return sorted({r.layers for r in rows})


def plot_train(rows: list[TrainRow], spec: TrainSpec, path: Path) -> Path:
    """Figure 2, one row of panels per depth. Left: validation accuracy per epoch (mean
    over seeds, min-max band), the paper's figure; right: mean cosine between output tokens,
    the clustering the theory predicts. With several depths, also ``NAME_depth.png``
    (:func:`plot_depth`)."""
    from matplotlib.ticker import MaxNLocator

    from ._plotting import save, subplots

    grid = [L for L in spec.layers if any(r.layers == L for r in rows)]
    fig, axes = subplots(len(grid), 2, figsize=(11, 4.2 * len(grid)), squeeze=False)
    for (ax, bx), layers in zip(axes, grid, strict=True):
        for w in spec.weights:
            color = COLORS[w]
            for axis, column in ((ax, "val_accuracy"), (bx, "token_cosine")):
                epochs, values = curves(rows, w, column, layers)
                axis.plot(epochs, values.mean(axis=0), color=color, marker="o", ms=3,
                          label=f"{w} weights")
                axis.fill_between(epochs, values.min(axis=0), values.max(axis=0), color=color,
                                  alpha=0.2, lw=0)
        sizes = (f"{spec.dataset}, L={layers}, d={spec.dim}, beta={spec.beta:g}, "
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
    if len(grid) > 1:
        plot_depth(rows, spec, path.with_name(f"{path.stem}_depth.png"))
    return save(fig, path)


def plot_depth(rows: list[TrainRow], spec: TrainSpec, path: Path) -> Path:
    """Against the depth L: left, the paired differences of final accuracy with their 95%
    intervals; right, the mean token cosine at initialization (dashed) and after training
    (solid) per initialization."""
    from ._plotting import save, subplots

    grid = depths(rows)
    fig, (ax, bx) = subplots(1, 2, figsize=(11, 4.2))
    pair_colors = ("#6a3fb5", "#e07a1f", "#2a9d8f")
    for k, (first, second) in enumerate(PAIRS):
        found = [p for L in grid for p in paired_differences(rows, L, ((first, second),))]
        if not found:
            continue
        x = np.array([p.layers for p in found]) * (1 + 0.04 * (k - 1))  # staggered
        mean = np.array([p.mean for p in found])
        err = np.array([[p.mean - p.low for p in found], [p.high - p.mean for p in found]])
        ax.errorbar(x, mean, yerr=np.nan_to_num(err), marker="o", ms=4, capsize=3,
                    color=pair_colors[k], label=f"{first} - {second}")
    ax.axhline(0.0, color="#555555", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xticks(grid, [str(L) for L in grid])
    ax.set_xlabel("depth L (layers)")
    ax.set_ylabel("final validation accuracy difference")
    ax.set_title(f"paired by seed, mean and 95% t interval ({spec.seeds} seeds, "
                 f"{spec.dataset})", fontsize=9)
    ax.legend(fontsize=8)
    for w in spec.weights:
        at_init, trained = [], []
        for L in grid:
            _, cos = curves(rows, w, "token_cosine", L)
            at_init.append(cos[:, 0].mean())
            trained.append(cos[:, -1].mean())
        bx.plot(grid, at_init, ls="--", marker="o", ms=3, color=COLORS[w],
                label=f"{w}, at initialization")
        bx.plot(grid, trained, ls="-", marker="s", ms=3, color=COLORS[w],
                label=f"{w}, after training")
    bx.set_xscale("log", base=2)
    bx.set_xticks(grid, [str(L) for L in grid])
    bx.set_xlabel("depth L (layers)")
    bx.set_ylabel(r"mean $\langle X_i, X_j\rangle$ of the output tokens")
    bx.axhline(1.0, color="#9a9a9a", lw=0.8, ls=":")
    bx.set_title("clustering of the output tokens against depth (validation set)", fontsize=9)
    bx.legend(fontsize=7)
    return save(fig, path)


__all__ = ["PAIRS", "Convergence", "PairedDifference", "TrainRow", "TrainSpec", "convergence",
           "curves", "depths", "final_accuracy", "paired_differences", "plot_depth",
           "plot_train", "run_train"]
