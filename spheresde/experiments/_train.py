"""Figure 2: train the deep stochastic Transformer, value matrices initialized three ways.

One grid point is one training run, ``(weights, seed, layers)``; it gives one row per
epoch (epoch 0 is the network at initialization). The runs of one depth are trained
together, as compiled programs vmapped over the runs (one per CPU core, at most two, each
on its own thread: :func:`train_runs`), and saved when they finish, so an interrupted
``spheresde train`` resumes without redoing the depths already trained. Within a seed the
three initializations share the data split, the embedding, the head and the order of the
batches: only the value matrices differ.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from ..data._classifier import EVALUATION_CHUNK
from ..data._datasets import PATCH, SIDE
from ..transformer._outcomes import DEFAULT_TOL
from ._common import NORM, SEED, TOL
from ._report import table
from .engine import AbstractPointSpec, BadParameters, Plan, Section, at_least, greater_than, param


def _cifar_needs_a_folder(spec: TrainSpec) -> str | None:
    if spec.dataset == "cifar10" and not spec.data_dir:
        return ("`dataset='cifar10'` needs `data_dir`, a folder with the CIFAR-10 "
                "python-version batches (https://www.cs.toronto.edu/~kriz/cifar.html); "
                "nothing is downloaded")
    return None


def _digits_take_no_folder(spec: TrainSpec) -> str | None:
    if spec.dataset == "digits" and spec.data_dir:
        return ("`data_dir` is not used by `dataset='digits'` (scikit-learn ships them); "
                "drop it, or pass `dataset` fashion-mnist or cifar10")
    return None


def _subset_is_for_fashion(spec: TrainSpec) -> str | None:
    if spec.subset and spec.dataset != "fashion-mnist":
        return (f"`subset` is used by `dataset='fashion-mnist'` only (`dataset='{spec.dataset}'` "
                "trains on all its images); drop it")
    return None


@dataclass(frozen=True)
class TrainRow:
    """One epoch of one training run (epoch 0: at initialization).

    ``token_cosine`` is the mean :math:`\\langle X_i, X_j\\rangle` (``i != j``) of the output
    tokens over the validation images (1: collapsed to one point); ``p_single``,
    ``p_antipodal``, ``p_undecided``: fractions of validation images whose output tokens
    are one cluster, an antipodal pair of clusters, or neither
    (:func:`spheresde.transformer.classify`).
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


@dataclass(frozen=True)
class TrainSpec(AbstractPointSpec):
    """Figure 2: validation accuracy per epoch of the Transformer classifier, per
    initialization of its value matrices, over several seeds; and the clustering of its
    output tokens. The defaults are the ``quick`` sizes (digits, a few minutes on a CPU).
    """

    command: ClassVar[str] = "train"
    summary: ClassVar[str] = "Figure 2: train the Transformer, V constant vs random vs identity"
    rules: ClassVar = (_cifar_needs_a_folder, _digits_take_no_folder, _subset_is_for_fashion)
    row_type: ClassVar[type] = TrainRow
    label: ClassVar[str] = "{name} ({dataset})"
    together_by: ClassVar[tuple[str, ...]] = ("layers",)  # the runs of one depth
    report_rank: ClassVar[int] = 20

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
    epochs: int = param(15, "passes over the training set", check=greater_than(0))
    layers: tuple[int, ...] = param(
        (16,), "depths L: layers of the network, residual step 1/sqrt(L); a list 4,8,16,32,64 "
        "trains every initialization and seed at each depth and draws NAME_depth.png",
        check=greater_than(0), metavar="L,...")
    dim: int = param(32, "token dimension d", check=at_least(2))
    patch: int = param(0, "patch side in pixels: an H x W image gives (H/patch)(W/patch) "
                       "tokens; 0: the data set's own, 2 for the 8 x 8 digits and 7 for the "
                       "28 x 28 Fashion-MNIST images (16 tokens each), 4 for the 32 x 32 "
                       "CIFAR-10 images (64 tokens)", check=at_least(0))
    beta: float = param(1.0, "inverse temperature of the attention at initialization "
                        "(Q = K = Id, both trainable)", check=at_least(0.0))
    sigma: float = param(1.0, "random weights: entries N(0, sigma^2/d)", check=greater_than(0.0))
    lr: float = param(5e-3, "peak learning rate of AdamW (warm-up, then cosine decay)",
                      check=greater_than(0.0))
    weight_decay: float = param(1e-4, "AdamW weight decay", check=at_least(0.0))
    batch: int = param(64, "images per optimization step", check=greater_than(0))
    tol: float = param(DEFAULT_TOL, **TOL)
    seed: int = param(0, **SEED)
    norm: str = param("rms", **NORM)

    def __post_init__(self):
        if self.patch == 0:  # before the checks: 0 is no patch side, only "the default"
            object.__setattr__(self, "patch", PATCH.get(self.dataset, 0))
        super().__post_init__()

    def points(self) -> list[dict[str, Any]]:
        """One training run per depth, seed and initialization:
        ``{"weights": w, "seed": s, "layers": L}``, the initializations of one seed and
        depth one after the other."""
        return [{"weights": w, "seed": self.seed + k, "layers": L} for L in self.layers
                for k in range(self.seeds) for w in self.weights]

    def prepare(self) -> dict[str, Any]:
        """Read the data set (a missing or malformed one fails before any run); the
        versions of the libraries that train and the seeds, for the metadata."""
        load_data(self, data_seed(self, self.seed))
        import equinox
        import jax
        import optax
        import sklearn

        return {"versions": {"jax": jax.__version__, "equinox": equinox.__version__,
                             "optax": optax.__version__, "scikit-learn": sklearn.__version__},
                "seeds": [self.seed + k for k in range(self.seeds)]}

    def compute(self, points: list[dict[str, Any]], *, quiet: bool) -> list[list[TrainRow]]:
        """The rows of the training runs of one depth, one per epoch and run, trained
        together (:func:`train_runs`)."""
        return train_runs(self, points, quiet=quiet)

    def estimate(self, name: str, pending: list[dict[str, Any]]) -> Plan:
        """The runs left, their work and a wall-time estimate from a calibration of the
        real compiled programs in this process (:func:`train_estimate`)."""
        lines, parts = train_estimate(self, pending)
        return Plan([f"{name}: {self.command_line()}", *lines], sum(parts.values()))

    def plot(self, rows: list[TrainRow], path: Path) -> Path:
        """:func:`plot_train`."""
        return plot_train(rows, self, path)

    @classmethod
    def report_section(cls, results: Mapping[str, Any], notes: Mapping[str, str]) -> Section:
        """Figure 2 (:func:`train_section`)."""
        return train_section(results, notes)


@functools.lru_cache(maxsize=8)
def _data(dataset: str, seed: int, data_dir: str, patch: int, subset: int):
    """Patch tokens of the training and validation sets (cached: a file is read once)."""
    from ..data._datasets import load_dataset, patchify

    data = load_dataset(dataset, seed=seed, data_dir=data_dir, subset=subset)
    return (patchify(data.train_images, patch), data.train_labels,
            patchify(data.val_images, patch), data.val_labels, data.classes)


def data_seed(spec: TrainSpec, seed: int) -> int:
    """The seed that chooses the data of the run with ``seed``: its own for the digits
    (split by the run's seed); the spec's for Fashion-MNIST and CIFAR-10, which have one
    official split (a Fashion-MNIST subset is chosen by the spec's seed, the same for
    every run)."""
    return seed if spec.dataset == "digits" else spec.seed


def load_data(spec: TrainSpec, seed: int):
    """The data chosen by ``seed`` (:func:`data_seed`): patch tokens of the training and
    validation images, their labels and the number of classes; a bad data set raises
    :class:`BadParameters`."""
    from ..data._datasets import DatasetError

    try:
        return _data(spec.dataset, seed, spec.data_dir, spec.patch, spec.subset)
    except DatasetError as err:
        raise BadParameters(str(err)) from None


@dataclass(frozen=True)
class _Runs:
    """Training runs of one depth at initialization, stacked for one compiled program."""

    points: list[dict]
    layers: int
    models: Any  # stacked TransformerClassifier
    opt_states: Any
    optim: Any
    x_train: Any  # (S, N, n, p): the S data sets of the runs
    y_train: Any
    x_val: Any
    y_val: Any
    datasets: Any  # (R,): each run's data set
    key_order: Any  # (R,) keys of the batch orders
    batch: int
    steps: int  # per epoch

    def orders(self, epoch: int, steps: int | None = None):
        """The batches ``(R, steps, B)`` of epoch ``epoch``: a permutation of the
        training set drawn from the run's key and the epoch (the first ``steps`` only)."""
        import jax

        steps = self.steps if steps is None else steps
        count = self.y_train.shape[1]
        orders = jax.vmap(lambda k: jax.random.permutation(jax.random.fold_in(k, epoch),
                                                           count))(self.key_order)
        return orders[:, :steps * self.batch].reshape(len(self.points), steps, self.batch)

    def epoch(self, orders) -> tuple[_Runs, Any]:
        """The runs after training on ``orders``, and their mean training losses."""
        from ..data._classifier import train_epochs

        models, opt_states, losses = train_epochs(self.models, self.opt_states, self.optim,
                                                  self.x_train, self.y_train, self.datasets,
                                                  orders)
        return dataclasses.replace(self, models=models, opt_states=opt_states), losses

    def evaluate(self, images, labels, tol: float):
        """:func:`spheresde.data.evaluate_classifiers` of the runs on their sets of
        ``images``, in chunks of :func:`evaluation_chunk` images."""
        from ..data._classifier import evaluate_classifiers

        return evaluate_classifiers(self.models, images, labels, self.datasets, tol=tol,
                                    chunk=evaluation_chunk(self.y_train.shape[1],
                                                           self.y_val.shape[1]))


def evaluation_chunk(train: int, validation: int) -> int:
    """Images a chunk of the evaluation, on the training set and on the validation set
    alike (at most ``EVALUATION_CHUNK``, 1,000): one compiled program
    serves both (a last chunk is padded)."""
    return min(EVALUATION_CHUNK, train, validation)


def _runs(spec: TrainSpec, points: list[dict]) -> _Runs:
    """The runs of ``points`` (one depth) at initialization, with their data."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    from ..data._classifier import TransformerClassifier, classifier_optimizer, stack_runs

    (layers,) = {p["layers"] for p in points}
    data_seeds = [data_seed(spec, p["seed"]) for p in points]
    distinct = sorted(set(data_seeds))
    sets = [load_data(spec, s) for s in distinct]
    x_train, y_train, x_val, y_val = (jnp.asarray(np.stack([d[k] for d in sets]))
                                      for k in range(4))
    count = y_train.shape[1]
    batch = min(spec.batch, count)
    steps = count // batch
    # one key per seed, not per point: the initializations of a seed differ only in V
    keys = [jax.random.split(jax.random.key(p["seed"])) for p in points]
    runs = [TransformerClassifier.create(
        key_model, patches=x_train.shape[2], patch_size=x_train.shape[3], classes=sets[0][4],
        d=spec.dim, layers=layers, weights=p["weights"], sigma=spec.sigma, beta=spec.beta,
        norm=spec.norm)
        for p, (key_model, _) in zip(points, keys, strict=True)]
    models = stack_runs(runs)
    optim = classifier_optimizer(spec.lr, spec.weight_decay, steps * spec.epochs)
    opt_states = stack_runs([optim.init(eqx.filter(m, eqx.is_inexact_array)) for m in runs])
    return _Runs(points, layers, models, opt_states, optim, x_train, y_train, x_val, y_val,
                 jnp.array([distinct.index(s) for s in data_seeds]),
                 jnp.stack([k for _, k in keys]), batch, steps)


TRAIN_THREADS = max(1, min(2, os.cpu_count() or 1))
"""Groups into which the runs of a depth are split, each vmapped into one program and run
on its own thread: XLA keeps about 1.3 of 2 cores busy with one such program, so two
groups at once train more runs per second (1.22 times at the quick depth on idle cores;
the measurement is in ``docs/theory/training.rst``)."""


def _groups(points: list[dict], parts: int = TRAIN_THREADS) -> list[list[dict]]:
    """``points`` in at most ``parts`` consecutive groups whose sizes differ by at most 1."""
    parts = max(1, min(parts, len(points)))
    size, extra = divmod(len(points), parts)
    bounds = np.cumsum([0] + [size + (k < extra) for k in range(parts)])
    return [points[a:b] for a, b in itertools.pairwise(bounds)]


def _on_threads(work: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    """``[work(item) for item in items]``, each on its own thread (the compiled programs
    release the GIL while they run); ``work`` must wait for its results."""
    if len(items) == 1:
        return [work(items[0])]
    with ThreadPoolExecutor(len(items)) as pool:
        return list(pool.map(work, items))


def _train_epoch(epoch: int) -> Callable[[_Runs], tuple[_Runs, np.ndarray]]:
    def work(runs: _Runs) -> tuple[_Runs, np.ndarray]:
        runs, losses = runs.epoch(runs.orders(epoch))
        return runs, np.asarray(losses)  # waits for the program, on this thread
    return work


def train_runs(spec: TrainSpec, points: list[dict], *, quiet: bool) -> list[list[TrainRow]]:
    """Training runs of one depth, ``points = [{"weights", "seed", "layers"}, ...]``,
    trained together: split into :data:`TRAIN_THREADS` groups (:func:`_groups`), each
    group one compiled program (:func:`spheresde.data.train_epochs`) on its own thread.
    For each point a row per epoch, epoch 0 at initialization.

    A run's numbers depend on its own point only, not on the others of its group, to
    float rounding: its key is its seed's, its data its seed's split (the digits) or the
    one split of the data set.
    """
    from tqdm.auto import tqdm

    groups = [_runs(spec, group) for group in _groups(points)]
    layers = groups[0].layers

    def evaluate(images: str, labels: str) -> list:
        found = _on_threads(lambda r: r.evaluate(getattr(r, images), getattr(r, labels),
                                                 spec.tol), groups)
        return [ev for group in found for ev in group]

    def epoch_rows(epoch: int, train_loss) -> list[TrainRow]:
        return [TrainRow(p["weights"], p["seed"], layers, epoch, float(loss),
                         float(ev.loss), float(ev.accuracy), float(ev.token_cosine),
                         *map(float, ev.outcomes))
                for p, loss, ev in zip(points, train_loss, evaluate("x_val", "y_val"),
                                       strict=True)]

    rows = [epoch_rows(0, [ev.loss for ev in evaluate("x_train", "y_train")])]
    for epoch in tqdm(range(1, spec.epochs + 1), desc=f"L={layers}: {len(points)} runs",
                      unit="epoch", leave=False, disable=quiet, dynamic_ncols=True):
        groups, losses = zip(*_on_threads(_train_epoch(epoch), groups), strict=True)
        rows.append(epoch_rows(epoch, np.concatenate(losses)))
    return [list(run) for run in zip(*rows, strict=True)]


CALIBRATION_STEPS = 8  # a short scan pays its call overhead once: 3 steps overstated a step by ~25%
"""Optimization steps of the calibration's timed epoch (``--dry-run``)."""


def _calibrate(spec: TrainSpec, points: list[dict]) -> dict[str, float]:
    """Seconds, measured now, of the runs of ``points`` (one depth) trained together, as
    :func:`train_runs` trains them (in groups, on threads): compiling and running
    :data:`CALIBRATION_STEPS` steps of the epoch programs, per step; drawing an epoch's
    batch order, once per epoch; and compiling and running one evaluation chunk, per image.

    The batch order is timed apart from the steps: it permutes the whole training set
    whatever the number of steps, so inside 8 timed steps it was priced as if every step
    paid an eighth of it (on Fashion-MNIST's 60,000 images it doubled a step at L = 4).
    The best of two timed repetitions is kept, after one that compiles.
    """
    import time

    import jax

    groups = [_runs(spec, group) for group in _groups(points)]
    steps = min(CALIBRATION_STEPS, groups[0].steps)
    chunk = evaluation_chunk(groups[0].y_train.shape[1], groups[0].y_val.shape[1])

    def order(runs: _Runs):
        return jax.block_until_ready(runs.orders(1))

    def train(runs: _Runs, orders):
        jax.block_until_ready(runs.epoch(orders[:, :steps])[1])  # the epoch's first steps

    def evaluate(runs: _Runs):
        runs.evaluate(runs.x_val[:, :chunk], runs.y_val[:, :chunk], spec.tol)

    took = []
    for _ in range(3):  # the first call compiles
        start = time.perf_counter()
        orders = _on_threads(order, groups)
        ordered = time.perf_counter()
        _on_threads(lambda pair: train(*pair), list(zip(groups, orders, strict=True)))
        trained = time.perf_counter()
        _on_threads(evaluate, groups)
        took.append((ordered - start, trained - ordered, time.perf_counter() - trained))
    first, *timed = took
    order_s, train_s, evaluate_s = (min(t[k] for t in timed) for k in range(3))
    return {"compile": max(first[0] + first[1] - order_s - train_s, 0.0),
            "step": train_s / steps, "order": order_s,
            "eval_compile": max(first[2] - evaluate_s, 0.0), "image": evaluate_s / chunk}


def train_estimate(spec: TrainSpec, pending: list[dict]) -> tuple[list[str], dict[str, float]]:
    """The lines of ``spheresde train --dry-run`` after the command, and the estimated seconds of
    compiling, training and evaluating the ``pending`` runs of ``spec`` ({} when none is
    left): the work in image-layers and token pairs, priced by :func:`_calibrate` of
    the real programs at the shallowest and the deepest depth left (linear in the depth
    between them), all measured in this process as it is loaded now.

    Work: a run trains ``epochs x steps x batch`` images through ``L`` layers (forward
    and backward) and evaluates ``(epochs + 1)`` times the validation images and once
    the training images (forward); a layer costs about ``n^2 d + n d^2`` per image
    (attention between the ``n`` tokens, then the ``d x d`` matrices).
    """
    from .engine import duration

    if not pending:
        return [f"  nothing to compute: the {len(spec.points())} runs are stored"], {}
    x_train, _, x_val, _, _ = load_data(spec, data_seed(spec, spec.seed))
    count, tokens, pixels = x_train.shape
    batch = min(spec.batch, count)
    trained = spec.epochs * (count // batch) * batch
    evaluated = (spec.epochs + 1) * len(x_val) + count
    by_depth: dict[int, list[dict]] = {}
    for point in pending:
        by_depth.setdefault(point["layers"], []).append(point)
    run_layers = sum(len(p) * L for L, p in by_depth.items())
    lines = [
        f"  runs: {len(pending)} to compute of {len(spec.points())} "
        f"({len(spec.points()) - len(pending)} stored), "
        + ", ".join(f"{len(p)} at L = {L}" for L, p in sorted(by_depth.items()))
        + f"; the runs of a depth train together, in {TRAIN_THREADS} compiled program(s) on "
        "as many threads, in this process",
        f"  tokens: {tokens} of {pixels} pixels ({spec.dataset}, {spec.patch} x {spec.patch} "
        f"patches), d = {spec.dim}: a layer costs ~ n^2 d + n d^2 = "
        f"{tokens**2 * spec.dim + tokens * spec.dim**2:,} multiply-adds an image",
        f"  work: {run_layers} run-layers x {trained:,} images trained ({spec.epochs} epochs "
        f"of {count // batch} steps of {batch}) = {run_layers * trained:.3e} image-layers "
        f"forward and backward, x {evaluated:,} images evaluated = "
        f"{run_layers * evaluated:.3e} forward; x n^2 = {tokens**2} token pairs: "
        f"{run_layers * (trained + evaluated) * tokens**2:.3e} pair-layers",
    ]
    ends = sorted({min(by_depth), max(by_depth)})
    measured = {L: _calibrate(spec, by_depth[L]) for L in ends}
    lines.append("  calibration, now, in this process (the real programs, best of two after "
                 f"one that compiles: {CALIBRATION_STEPS} steps, a batch order and "
                 f"{evaluation_chunk(count, len(x_val))} images): "
                 + "; ".join(f"L = {L}, {len(by_depth[L])} runs: compile {m['compile']:.1f} s "
                             f"+ {m['eval_compile']:.1f} s, {1e3 * m['step']:.0f} ms a step, "
                             f"{1e3 * m['order']:.0f} ms an epoch's batch order, "
                             f"{1e6 * m['image']:.0f} us an image evaluated"
                             for L, m in measured.items()))
    # steps and images per run (the programs cost in proportion to the runs they train)
    per_run = {L: {**m, **{k: m[k] / len(by_depth[L]) for k in ("step", "order", "image")}}
               for L, m in measured.items()}
    parts = {"compile": 0.0, "train": 0.0, "evaluate": 0.0}
    for L, points in by_depth.items():
        w = 0.0 if len(ends) == 1 else (L - ends[0]) / (ends[1] - ends[0])
        m = {k: (1 - w) * per_run[ends[0]][k] + w * per_run[ends[-1]][k]
             for k in per_run[ends[0]]}
        parts["compile"] += m["compile"] + m["eval_compile"]  # one evaluation program
        parts["train"] += len(points) * ((trained // batch) * m["step"]
                                         + spec.epochs * m["order"])
        parts["evaluate"] += len(points) * evaluated * m["image"]
    lines.append(f"  estimated wall time: {duration(sum(parts.values()))} (compiling "
                 f"{duration(parts['compile'])}, training {duration(parts['train'])}, "
                 f"evaluating {duration(parts['evaluate'])}; as loaded now)")
    return lines, parts


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


def _pct(x: float) -> str:
    return f"{100 * x:+.1f}"


def _paired_table(pairs) -> str:
    body = [[f"{p.first} - {p.second}", str(p.layers),
             ", ".join(_pct(d) for d in p.differences), _pct(p.mean),
             f"[{_pct(p.low)}, {_pct(p.high)}]", "{} / {} / {}".format(*p.wins),
             p.verdict if p.verdict != "neither" else "no difference shown"]
            for p in pairs]
    return table(["pair", "L", "per-seed differences (points)", "mean", "95% t interval",
                   "seeds first / second / tied", "ahead at 95%"], body)


def _pair_sentence(p) -> str:
    span = f"{_pct(p.mean)} points, 95% interval [{_pct(p.low)}, {_pct(p.high)}]"
    first, second, _ = p.wins
    seeds = f"{first} of {len(p.differences)} seeds favour {p.first}, {second} {p.second}"
    if p.verdict == "neither":
        return (f"{p.first} - {p.second}: {span}, which contains 0: this run does not "
                f"separate them ({seeds}).")
    loser = p.second if p.verdict == p.first else p.first
    return f"{p.verdict} ahead of {loser}: {span} ({seeds})."


def train_section(results: Mapping[str, Any], notes: Mapping[str, str]) -> Section:
    """The section of Figure 2: final accuracies, their paired differences and the token
    cosines of ``train`` (and the depth study when it has several depths); ``notes``
    may say, under ``train``, which data set it trained on and why."""
    paper = [
        "## Figure 2: training the deep stochastic Transformer",
        "",
        "**Paper.** Validation accuracy on CIFAR-10 per epoch of a deep Transformer whose "
        "value matrices are initialized as one identity shared by all layers (\"constant "
        "weights\") or as iid Gaussian matrices per layer (\"random weights\"); mean of 5 "
        "runs, min-max band. Claim: suppressing the noise at initialization degrades "
        "accuracy.",
        "",
    ]
    tspec, all_rows = results["train"].spec, results["train"].rows
    grid = depths(all_rows)
    main = tspec.layers[0]  # Figure 2 proper: the first depth asked for
    rows = [r for r in all_rows if r.layers == main]
    finals = final_accuracy(rows)
    body, cosine = [], {}
    for w, (mean, low, high) in finals.items():
        _, cos = curves(rows, w, "token_cosine")
        _, single = curves(rows, w, "p_single")
        cosine[w] = (float(cos[:, 0].mean()), float(cos[:, -1].mean()))
        body.append([w, f"{mean:.3f}", f"{low:.3f}", f"{high:.3f}",
                     f"{cosine[w][0]:.3f}", f"{cosine[w][1]:.3f}",
                     f"{single[:, 0].mean():.2f} / {single[:, -1].mean():.2f}"])
    flat = convergence(rows)
    flat_text = ("; ".join(f"{c.weights} {_pct(c.change)} points over the last {c.window} "
                           f"epochs (seed spread {100 * c.spread:.1f})" for c in flat))
    flat_verdict = ("Every curve has flattened: the last epochs move the mean by less than "
                    "the seeds differ" if all(c.flat for c in flat) else
                    "Not every curve has flattened (" + ", ".join(
                        c.weights for c in flat if not c.flat) + " still moves by more than "
                    "the seeds differ): train longer (--epochs) before reading the comparison")
    pairs = paired_differences(rows)
    data = {"cifar10": "CIFAR-10 (official training and test batches)",
            "fashion-mnist": ("Fashion-MNIST (" + (f"a subset of {tspec.subset} training "
                              "images, validated on a subset of the test set" if tspec.subset
                              else "60,000 training images, validated on the official 10,000 "
                              "test images") + ")"),
            "digits": ("scikit-learn's 8 x 8 digits (1437 training and 360 validation images, "
                       "split by seed)")}[tspec.dataset]
    why = notes.get("train", "")
    constant_random = ""
    if {"constant", "random"} <= set(cosine):
        c, r = cosine["constant"], cosine["random"]
        kept_apart = r[0] < c[0] - 0.1
        constant_random = (
            f" At initialization the mean cosine between output tokens is {c[0]:.3f} for the "
            f"constant network and {r[0]:.3f} for the random one: "
            + ("the noise keeps the tokens apart where the deterministic weights gather them, "
               "as the theory says." if kept_apart else
               "the random network does not keep its tokens further apart here.")
            + f" After training the mean cosines are {c[1]:.3f} (constant) and {r[1]:.3f} "
            "(random)" + ("; training gathers the random network's tokens as well."
                          if kept_apart and r[1] > 0.9 else "."))
    text = [
        *paper,
        f"**Ours.** The classifier of `spheresde.data.TransformerClassifier` (the paper's layer: "
        f"L = {main}, d = {tspec.dim}, beta = {tspec.beta:g} at init, {tspec.patch} x "
        f"{tspec.patch} patches as tokens ({(SIDE[tspec.dataset] // tspec.patch) ** 2} "
        "tokens an image), trainable V, Q, K, linear head on the mean token), "
        f"AdamW (peak learning rate {tspec.lr:g}, warm-up and cosine decay, batch "
        f"{tspec.batch}), {tspec.epochs} epochs, {tspec.seeds} seeds per initialization, on "
        f"{data}. {why} Random weights: iid N(0, sigma^2/d) entries with sigma = "
        f"{tspec.sigma:g}; identity: independent V_k = Id (untied but noiseless). Seed by "
        "seed the initializations share the data split, the batch order, the embedding and "
        "the head: only V differs, so the comparison is paired.",
        "",
        table(["weights", "final val. accuracy (mean)", "min", "max",
                "token cosine at init", "after training", "P(single) init / after"], body),
        "",
        f"**Converged?** {flat_verdict}: {flat_text}.",
        "",
        "**Paired differences of final accuracy** (percentage points, first minus second; "
        "95% Student t interval over the seeds):",
        "",
        _paired_table(pairs),
        "",
        " ".join(_pair_sentence(p) for p in pairs) + constant_random,
        "",
        "![Figure 2](train.png)",
        "",
    ]
    if len(grid) > 1:
        deep = [p for L in grid for p in paired_differences(all_rows, L)]
        trend = []
        for first, second in {(p.first, p.second) for p in deep}:
            mine = [p for p in deep if (p.first, p.second) == (first, second)]
            ahead = [str(p.layers) for p in mine if p.verdict == first]
            behind = [str(p.layers) for p in mine if p.verdict == second]
            trend.append(f"{first} - {second} goes from {_pct(mine[0].mean)} points at "
                         f"L = {mine[0].layers} to {_pct(mine[-1].mean)} at "
                         f"L = {mine[-1].layers}; {first} is ahead at 95% at L = "
                         f"{', '.join(ahead) or 'none'}, behind at L = "
                         f"{', '.join(behind) or 'none'}.")
        text += [
            "### Beyond the paper: depth",
            "",
            "The same comparison at every depth of `--layers` (the deterministic model gathers "
            "the tokens more as the network deepens; the noise keeps them apart):",
            "",
            _paired_table(deep),
            "",
            " ".join(sorted(trend)),
            "",
            "![depth](train_depth.png)",
            "",
        ]
    text += [f"Command: `{tspec.command_line()}`", ""]
    status = [("Figure 2: final validation accuracy (mean [min, max] over seeds)",
               ", ".join(f"{w} {m:.3f} [{lo:.3f}, {hi:.3f}]"
                         for w, (m, lo, hi) in finals.items()) + f" ({tspec.dataset}, L = {main})")]
    status += [(f"Figure 2: {p.first} - {p.second}, paired over {len(p.differences)} seeds",
                f"{_pct(p.mean)} points [{_pct(p.low)}, {_pct(p.high)}]: "
                + (f"{p.verdict} ahead" if p.verdict != "neither" else "no difference shown"))
               for p in pairs]
    if {"constant", "random"} <= set(cosine):
        status.append(("Figure 2, beyond the paper: output tokens at initialization",
                       f"mean cosine constant {cosine['constant'][0]:.3f}, random "
                       f"{cosine['random'][0]:.3f}"))
    return "\n".join(text), status


__all__ = ["PAIRS", "Convergence", "PairedDifference", "TrainRow", "TrainSpec", "convergence",
           "curves", "depths", "final_accuracy", "paired_differences", "plot_depth",
           "plot_train", "train_estimate", "train_runs",
           "train_section"]
