"""Figure 2: the classifier made of the paper's layer, its data and the train sweep."""

import dataclasses
import json
import pickle
import re
import shutil
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from spheresde.data._classifier import (
    TransformerClassifier,
    classifier_loss,
    classifier_optimizer,
    init_values,
    train_epoch,
)
from spheresde.data._datasets import (
    CIFAR10_FILES,
    DatasetError,
    load_cifar10,
    load_dataset,
    load_fashion_mnist,
    patchify,
    read_idx,
)
from spheresde.experiments import RunOptions, Sweep, compute_points, run_sweep
from spheresde.experiments._train import TrainRow, TrainSpec, convergence, paired_differences

DATA = Path(__file__).parent / "data"


def model(key, weights, *, layers=3, d=6, patches=5, patch_size=4, sigma=1.0):
    return TransformerClassifier.create(key, patches=patches, patch_size=patch_size, classes=3,
                                        d=d, layers=layers, weights=weights, sigma=sigma,
                                        beta=2.0, dtype=jnp.float64)


@pytest.mark.slow
@pytest.mark.parametrize("weights", ["constant", "random", "identity"])
def test_tokens_stay_on_the_sphere_at_every_layer(getkey, weights):
    net = model(getkey(), weights, layers=6, sigma=3.0)  # large noise: big steps off the sphere
    patches = 5.0 * jax.random.normal(getkey(), (5, 4))
    history = net.tokens(patches, every_layer=True)
    assert history.shape == (7, 5, 6)
    assert np.max(np.abs(np.linalg.norm(history, axis=-1) - 1)) < 1e-12
    assert not np.allclose(history[-1], history[0])  # the layers moved the tokens


@pytest.mark.slow
def test_constant_ties_v_across_layers_and_identity_does_not(getkey):
    key, patches = getkey(), jax.random.normal(getkey(), (4, 5, 4))
    labels = jnp.array([0, 1, 2, 1])
    tied, untied = model(key, "constant"), model(key, "identity")
    # one pytree structure for both (one compiled epoch); only `tied` tells them apart
    assert tied.values.shape == untied.values.shape == (3, 6, 6)
    assert bool(tied.tied)
    assert not bool(untied.tied)
    # same network at initialization: only the tying differs
    assert jnp.allclose(jax.vmap(tied)(patches), jax.vmap(untied)(patches), atol=1e-12)
    g_tied = eqx.filter_grad(classifier_loss)(tied, patches, labels).values
    g_untied = eqx.filter_grad(classifier_loss)(untied, patches, labels).values
    # one shared matrix receives the sum of the per-layer gradients
    assert jnp.allclose(g_tied[0], g_untied.sum(axis=0), atol=1e-12)
    assert not jnp.any(g_tied[1:])  # the unused copies get no gradient
    assert not jnp.allclose(g_untied[0], g_untied[1])


@pytest.mark.slow  # compiling the draw costs seconds under load: over the fast budget
def test_random_draws_independent_layers_with_entry_variance_sigma2_over_d(getkey):
    sigma, d, layers = 1.5, 16, 64
    values = np.asarray(init_values(getkey(), "random", layers, d, sigma, jnp.float64))
    assert values.shape == (layers, d, d)
    entries = values.ravel()  # N = 16384 entries: the variance is known to ~1.1% (1 s.e.)
    se = np.sqrt(2 / entries.size)
    assert abs(entries.var() / (sigma**2 / d) - 1) < 4 * se
    # independence across layers: correlation of consecutive layers' entries ~ N(0, 1/256)
    corr = [np.corrcoef(values[k].ravel(), values[k + 1].ravel())[0, 1] for k in range(63)]
    assert abs(np.mean(corr)) < 4 / np.sqrt(d * d * 63)
    assert not np.allclose(values[0], values[1])


@pytest.mark.slow
def test_gradients_are_finite_at_depth_64(getkey):
    patches, labels = jax.random.normal(getkey(), (3, 5, 4)), jnp.array([0, 2, 1])
    for weights in ("constant", "random"):
        grads = eqx.filter_grad(classifier_loss)(model(getkey(), weights, layers=64), patches,
                                                 labels)
        leaves = jax.tree_util.tree_leaves(eqx.filter(grads, eqx.is_inexact_array))
        assert all(bool(jnp.all(jnp.isfinite(g))) for g in leaves), weights
        assert float(jnp.abs(grads.values).max()) > 0, weights  # V does get trained


@pytest.mark.slow
def test_a_few_steps_on_a_fixed_batch_lower_the_loss(getkey):
    net = model(getkey(), "random")
    images, labels = jax.random.normal(getkey(), (8, 5, 4)), jnp.array([0, 1, 2, 0, 1, 2, 0, 1])
    optim = classifier_optimizer(3e-2, 0.0, 30)
    before = float(classifier_loss(net, images, labels))
    order = jnp.tile(jnp.arange(8), (30, 1))  # the same batch of 8, 30 steps
    net, _, _ = train_epoch(net, optim.init(eqx.filter(net, eqx.is_inexact_array)), optim,
                            images, labels, order)
    after = float(classifier_loss(net, images, labels))
    assert after < 0.5 * before, (before, after)


def test_a_padded_last_chunk_counts_only_its_own_images(getkey, caplog):
    """Evaluated in chunks of 7, the last of 20 images padded with copies of the 20th,
    two models' sums are those of one chunk of all 20: the padding is not counted (it
    would move the mean loss and cosine). A set of 9 images in chunks of 7 then runs the
    same compiled program: one per chunk size, whatever the set's size."""
    import logging

    from spheresde.data._classifier import evaluate_classifiers, stack_runs

    nets = stack_runs([model(getkey(), w) for w in ("random", "identity")])
    images = jax.random.normal(getkey(), (1, 20, 5, 4))
    labels = jax.random.randint(getkey(), (1, 20), 0, 3)
    datasets = jnp.zeros(2, int)
    whole = evaluate_classifiers(nets, images, labels, datasets, tol=0.1, chunk=20)
    chunked = evaluate_classifiers(nets, images, labels, datasets, tol=0.1, chunk=7)
    for one, by_chunks in zip(whole, chunked, strict=True):
        assert by_chunks.accuracy == one.accuracy  # counts over the 20 images
        assert by_chunks.outcomes == one.outcomes
        assert by_chunks.loss == pytest.approx(one.loss, rel=1e-12, abs=0)
        assert by_chunks.token_cosine == pytest.approx(one.token_cosine, rel=1e-12, abs=0)
    jax.config.update("jax_log_compiles", True)
    try:
        with caplog.at_level(logging.WARNING):
            evaluate_classifiers(nets, images[:, :9], labels[:, :9], datasets, tol=0.1,
                                 chunk=7)
    finally:
        jax.config.update("jax_log_compiles", False)
    compiled = [r.getMessage() for r in caplog.records if "XLA compilation of" in r.getMessage()]
    assert not [m for m in compiled if "_evaluate_chunks" in m], compiled


def write_cifar(folder, *, per_batch=3, bad=None):
    """Batches in the official python-version format; image 0 of data_batch_1 is black
    except the red channel of pixel (row 1, column 2)."""
    folder.mkdir(exist_ok=True)
    for k, name in enumerate(CIFAR10_FILES):
        data = np.zeros((per_batch, 3072), np.uint8)
        if k == 0:
            data[0, 0 * 1024 + 1 * 32 + 2] = 255  # channel-major: (channel, row, column)
        else:
            data[:, :] = 40
        batch = {b"batch_label": name.encode(), b"data": data,
                 b"labels": [(k + i) % 10 for i in range(per_batch)],
                 b"filenames": [f"{name}_{i}.png".encode() for i in range(per_batch)]}
        if name == bad:
            batch[b"data"] = data[:, :100]
        with (folder / name).open("wb") as f:
            pickle.dump(batch, f)


def test_cifar_reader_reads_the_official_format(tmp_path):
    write_cifar(tmp_path / "cifar")
    data = load_cifar10(tmp_path / "cifar")
    assert data.train_images.shape == (15, 32, 32, 3)
    assert data.val_images.shape == (3, 32, 32, 3)
    assert data.train_labels.tolist() == [(k + i) % 10 for k in range(5) for i in range(3)]
    assert data.val_labels.tolist() == [5, 6, 7]
    # the one bright value lands at image 0, row 1, column 2, red
    assert np.unravel_index(np.argmax(data.train_images), data.train_images.shape) == (0, 1, 2, 0)
    assert patchify(data.train_images, 4).shape == (15, 64, 48)


def test_cifar_reader_says_what_is_wrong(tmp_path):
    with pytest.raises(DatasetError, match=r"no such folder.*cifar\.html"):
        load_cifar10(tmp_path / "nowhere")
    write_cifar(tmp_path / "bad", bad="data_batch_3")
    with pytest.raises(DatasetError, match=r"data_batch_3 has b'data' uint8 \(3, 100\)"):
        load_cifar10(tmp_path / "bad")
    (tmp_path / "bad" / "test_batch").write_bytes(b"not a pickle")
    write_cifar(tmp_path / "bad")  # repaired, then one batch removed
    (tmp_path / "bad" / "data_batch_5").unlink()
    with pytest.raises(DatasetError, match="data_batch_5 is missing"):
        load_cifar10(tmp_path / "bad")


@dataclasses.dataclass(frozen=True)
class Epoch:
    run: int
    epoch: int
    value: float


def test_a_point_with_several_rows_is_saved_whole_and_resumed(tmp_path):
    calls = []

    def compute(point):
        calls.append(point["run"])
        if len(calls) == 2:  # Ctrl-C during the second run
            raise KeyboardInterrupt
        return [Epoch(point["run"], e, point["run"] + e / 10) for e in range(3)]

    points = [{"run": r} for r in range(4)]
    with pytest.raises(KeyboardInterrupt):
        compute_points(Sweep(tmp_path, "toy", {"seed": 0}, Epoch, ("run",)), points, compute,
                       quiet=True)
    assert (tmp_path / "toy.csv").read_text().count("\n") == 1 + 3  # run 0, all 3 epochs
    rows = compute_points(Sweep(tmp_path, "toy", {"seed": 0}, Epoch, ("run",)), points, compute,
                          quiet=True)
    assert calls == [0, 1, 1, 2, 3]  # run 0 was not redone
    assert rows == [Epoch(r, e, r + e / 10) for r in range(4) for e in range(3)]


def test_points_of_a_batch_are_computed_in_one_call_and_stored_one_by_one(tmp_path):
    """The driver of point specs: the pending points of one ``together`` value are one
    ``compute`` call; a batch interrupted is computed again whole, a finished one kept,
    and a point stored before is left out of its batch."""
    from spheresde.experiments.engine._driver import _in_batches

    calls = []

    class Spec:  # the two methods of AbstractPointSpec that the driver calls
        def together(self, point):
            return point["run"] // 3

        def compute(self, points, *, quiet):
            calls.append([p["run"] for p in points])
            if len(calls) == 3:  # Ctrl-C in the second batch of the full grid
                raise KeyboardInterrupt
            return [[Epoch(p["run"], e, p["run"] + e / 10) for e in range(2)] for p in points]

    points = [{"run": r} for r in range(6)]

    def run(points):
        sweep = Sweep(tmp_path, "toy", {"seed": 0}, Epoch, ("run",))
        return compute_points(sweep, points, _in_batches(Spec(), sweep, points, True), quiet=True)

    run(points[4:5])  # run 4 stored before
    with pytest.raises(KeyboardInterrupt):
        run(points)
    assert (tmp_path / "toy.csv").read_text().count("\n") == 1 + 2 * 4  # runs 0-2 and 4
    rows = run(points)
    assert calls == [[4], [0, 1, 2], [3, 5], [3, 5]]
    assert rows == [Epoch(r, e, r + e / 10) for r in range(6) for e in range(2)]


@pytest.mark.parametrize(("args", "says"), [
    (["--dataset", "mnist"], "'mnist' is not one of digits, fashion-mnist, cifar10"),
    (["--dataset", "fashion-mnist", "--data-dir", "/nonexistent/fm"],
     "no such folder; expected the Fashion-MNIST IDX files train-images-idx3-ubyte.gz"),
    (["--data-dir", "/tmp"], "--data-dir is not used by --dataset digits"),
    (["--subset", "100"], "--subset is used by --dataset fashion-mnist only"),
    (["--layers", "4,0"], "must be > 0"),
    (["--dataset", "cifar10"], "needs --data-dir, a folder"),
    (["--dataset", "cifar10", "--data-dir", "/nonexistent/cifar"], "no such folder"),
    (["--epochs", "-1"], "must be > 0"),
    (["--layers", "0"], "must be > 0"),
    (["--weights", "constant,noisy"], "'noisy' is not one of constant, random, identity"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, says):
    from spheresde.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["train", *args, "--out", str(tmp_path), "--quiet"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert says in err
    assert not (tmp_path / "train.csv").exists()


TINY = {"seeds": 2, "epochs": 2, "layers": (2,), "dim": 4, "patch": 4, "batch": 256,
        "weights": ("constant", "random")}


@pytest.mark.slow
def test_interrupted_training_resumes_to_the_uninterrupted_csv(tmp_path, monkeypatch):
    """The runs of a depth are one batch: a batch interrupted is computed again, whole;
    the depths finished before are kept."""
    from spheresde.experiments import _train

    spec = TrainSpec(**{**TINY, "layers": (2, 3)})
    whole = run_sweep(spec, tmp_path / "whole", RunOptions(quiet=True))
    assert len(whole.rows) == 2 * 2 * 2 * 3  # depths x weights x seeds x (init + 2 epochs)

    real, calls = _train.train_runs, []

    def interrupted(spec, points, *, quiet):
        calls.append([(p["weights"], p["seed"], p["layers"]) for p in points])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(spec, points, quiet=quiet)

    monkeypatch.setattr(_train, "train_runs", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, tmp_path / "cut", RunOptions(quiet=True))
    run_sweep(spec, tmp_path / "cut", RunOptions(quiet=True))
    depth_3 = [(w, s, 3) for s in (0, 1) for w in ("constant", "random")]
    # one call per depth, with every run of it; the resumed run redoes only L = 3
    assert calls == [[(w, s, 2) for w, s, _ in depth_3], depth_3, depth_3]
    assert (tmp_path / "cut" / "train.csv").read_text() == \
        (tmp_path / "whole" / "train.csv").read_text()
    meta = json.loads((tmp_path / "cut" / "train.json").read_text())
    assert [r["points_computed"] for r in meta["runs"]] == [4, 4]
    assert meta["seeds"] == [0, 1]
    assert "optax" in meta["versions"]


def assert_same_runs(batched: list[TrainRow], alone: list[TrainRow]) -> None:
    """Rows of the same runs: the same points and epochs, and numbers equal to float32
    rounding. The runs are float32; over the 2 epochs of TINY the two orders of rounding
    (one batched program, programs of one run) were measured to differ by at most
    4e-7 in a loss or a cosine, so 1e-5 is 25 times that and still 1000 times below
    what a run trained on another seed's data or key differs by (~1e-2). A fraction of
    the 360 validation images may move by one image, if a logit sits at a tie."""
    assert [(r.weights, r.seed, r.layers, r.epoch) for r in batched] == \
        [(r.weights, r.seed, r.layers, r.epoch) for r in alone]
    for a, b in zip(batched, alone, strict=True):
        for column in ("train_loss", "val_loss", "token_cosine"):
            assert abs(getattr(a, column) - getattr(b, column)) < 1e-5, (column, a, b)
        for column in ("val_accuracy", "p_single", "p_antipodal", "p_undecided"):
            assert abs(getattr(a, column) - getattr(b, column)) <= 1 / 360 + 1e-12, (column, a, b)


@pytest.mark.parametrize("count", [1, 2, 3, 15, 16])
@pytest.mark.parametrize("parts", [1, 2, 3])
def test_runs_of_a_depth_split_into_groups_of_near_equal_size_in_order(count, parts):
    from spheresde.experiments._train import _groups

    points = [{"seed": k} for k in range(count)]
    groups = _groups(points, parts)
    assert [p for g in groups for p in g] == points  # every run once, in order
    assert len(groups) == min(parts, count)
    assert max(map(len, groups)) - min(map(len, groups)) <= 1


@pytest.mark.slow
def test_runs_trained_together_are_the_runs_trained_alone():
    """Two seeds (two data splits of the digits) x two initializations as one vmapped
    program, against each run as a batch of one."""
    from spheresde.experiments._train import train_runs

    spec = TrainSpec(**TINY)
    points = spec.points()
    together = train_runs(spec, points, quiet=True)
    for point, rows in zip(points, together, strict=True):
        assert_same_runs(rows, train_runs(spec, [point], quiet=True)[0])
    # the runs differ from one another: a mix-up of data or keys would not go unseen
    finals = {r[-1].val_loss for r in together}
    assert len(finals) == 4
    assert max(finals) - min(finals) > 1e-3


@pytest.mark.slow
def test_a_train_sweep_stored_one_run_at_a_time_resumes_and_matches(tmp_path):
    """tests/data/train_v1: TINY written by spheresde before the runs of a depth trained
    together (one compiled program per run). It resumes without a run computed, grows by
    a depth keeping its rows byte for byte, and the batched program recomputes its
    numbers to float rounding."""
    shutil.copytree(DATA / "train_v1", tmp_path / "stored")
    stored = (tmp_path / "stored" / "train.csv").read_text()
    old = run_sweep(TrainSpec(**TINY), tmp_path / "stored", RunOptions(quiet=True))
    meta = json.loads((tmp_path / "stored" / "train.json").read_text())
    assert meta["runs"][-1]["points_computed"] == 0
    assert (tmp_path / "stored" / "train.csv").read_text() == stored
    grown = run_sweep(TrainSpec(**{**TINY, "layers": (2, 3)}), tmp_path / "stored",
                      RunOptions(quiet=True))
    meta = json.loads((tmp_path / "stored" / "train.json").read_text())
    assert meta["runs"][-1]["points_computed"] == 4
    assert [r for r in grown.rows if r.layers == 2] == old.rows
    fresh = run_sweep(TrainSpec(**TINY), tmp_path / "fresh", RunOptions(quiet=True))
    assert_same_runs(fresh.rows, old.rows)


def test_train_spec_round_trips_its_command_line():
    from spheresde.cli import build_parser

    spec = TrainSpec(weights=["random", "constant"], dataset="cifar10", data_dir="/data/c10",
                     seeds=3, patch=4)
    argv = spec.argv()
    assert argv[argv.index("--weights") + 1] == "random,constant"
    args = build_parser().parse_args(argv)
    assert TrainSpec(**{f.name: getattr(args, f.name) for f in TrainSpec.spec_fields()}) == spec
    assert "--data-dir" not in TrainSpec().argv()  # an unset path is the default
    assert [p["seed"] for p in spec.points()] == [0, 0, 1, 1, 2, 2]
    assert [p["weights"] for p in spec.points()[:2]] == ["random", "constant"]
    deep = TrainSpec(layers=(4, 16), seeds=2)
    assert [(p["layers"], p["seed"]) for p in deep.points()][::3] == [(4, 0), (4, 1), (16, 0),
                                                                     (16, 1)]


# ---------------------------------------------------------------------------- Fashion-MNIST


def idx_bytes(array: np.ndarray, *, magic: int | None = None) -> bytes:
    """``array`` (uint8) in the IDX format: magic 0x0000 08 ndim, big-endian int32 sizes."""
    magic = 0x0800 + array.ndim if magic is None else magic
    header = magic.to_bytes(4, "big") + b"".join(n.to_bytes(4, "big") for n in array.shape)
    return header + array.astype(np.uint8).tobytes()


def write_fashion(folder, *, train=12, test=6, gz=True, labels_of=None):
    """The four Fashion-MNIST files; training image k has its pixel (k mod 28, 3) at 255."""
    import gzip

    folder.mkdir(exist_ok=True)
    rng = np.random.default_rng(0)
    arrays = {}
    for split, n in (("train", train), ("t10k", test)):
        images = rng.integers(0, 50, (n, 28, 28)).astype(np.uint8)
        if split == "train":
            images[np.arange(n), np.arange(n) % 28, 3] = 255
        arrays[f"{split}-images-idx3-ubyte.gz"] = images
        arrays[f"{split}-labels-idx1-ubyte.gz"] = (np.arange(n) % 10).astype(np.uint8)
    if labels_of:
        arrays.update(labels_of)
    for name, array in arrays.items():
        raw = idx_bytes(array)
        if gz:
            (folder / name).write_bytes(gzip.compress(raw))
        else:
            (folder / name.removesuffix(".gz")).write_bytes(raw)
    return arrays


@pytest.mark.parametrize("gz", [True, False], ids=["gzip", "plain"])
def test_fashion_mnist_reader_reads_the_official_idx_format(tmp_path, gz):
    arrays = write_fashion(tmp_path / "fm", gz=gz)
    data = load_fashion_mnist(tmp_path / "fm")
    assert data.train_images.shape == (12, 28, 28, 1)
    assert data.val_images.shape == (6, 28, 28, 1)
    assert data.train_labels.tolist() == [k % 10 for k in range(12)]
    assert data.val_labels.tolist() == list(range(6))
    assert data.classes == 10
    # the bright pixel of image k sits at (row k, column 3): rows are the second axis
    bright = data.train_images[:, :, 3, 0].argmax(axis=1)
    assert bright.tolist() == list(range(12))
    # standardized with the training set's statistics
    assert abs(float(data.train_images.mean())) < 1e-5
    raw = arrays["t10k-images-idx3-ubyte.gz"] / 255.0
    train = arrays["train-images-idx3-ubyte.gz"] / 255.0
    expected = (raw - train.mean()) / (train.std() + 1e-6)
    assert np.allclose(data.val_images[..., 0], expected, atol=1e-5)
    assert patchify(data.train_images, 7).shape == (12, 16, 49)


def test_fashion_mnist_subset_is_fixed_by_the_seed(tmp_path):
    write_fashion(tmp_path / "fm", train=30, test=12)
    a = load_dataset("fashion-mnist", seed=3, data_dir=tmp_path / "fm", subset=12)
    b = load_dataset("fashion-mnist", seed=3, data_dir=tmp_path / "fm", subset=12)
    c = load_dataset("fashion-mnist", seed=4, data_dir=tmp_path / "fm", subset=12)
    assert a.train_images.shape == (12, 28, 28, 1)
    assert a.val_images.shape == (2, 28, 28, 1)
    assert np.array_equal(a.train_images, b.train_images)
    assert not np.array_equal(a.train_labels, c.train_labels) or \
        not np.array_equal(a.train_images, c.train_images)


def test_read_idx_refuses_a_truncated_or_foreign_file(tmp_path):
    good = idx_bytes(np.zeros((3, 28, 28), np.uint8))
    (tmp_path / "cut").write_bytes(good[:-5])
    with pytest.raises(DatasetError, match=r"cut has 2347 data bytes, but its header says "
                                           r"3 x 28 x 28 = 2352: the file is truncated"):
        read_idx(tmp_path / "cut", 3)
    (tmp_path / "magic").write_bytes(idx_bytes(np.zeros((3, 28, 28), np.uint8), magic=2051 + 1))
    with pytest.raises(DatasetError, match=r"not an IDX file of 3-d unsigned bytes \(magic "
                                           r"number 0x00000804, expected 0x00000803\)"):
        read_idx(tmp_path / "magic", 3)
    (tmp_path / "tiny").write_bytes(b"\x00\x00")
    with pytest.raises(DatasetError, match="shorter than 4 bytes"):
        read_idx(tmp_path / "tiny", 1)


@pytest.mark.parametrize(("damage", "says"), [
    ("missing", "t10k-labels-idx1-ubyte.gz is missing: expected the Fashion-MNIST IDX files"),
    ("lengths", "train-images-idx3-ubyte.gz has 12 images but train-labels-idx1-ubyte.gz "
                "has 11 labels"),
    ("label", "1 labels outside 0..9 (the first: image 2, label 12)"),
    ("pixels", "images of shape (12, 14, 14, 1), expected (N, 28, 28, 1)"),
])
def test_fashion_mnist_reader_says_what_is_wrong(tmp_path, damage, says):
    folder = tmp_path / "fm"
    bad = {"lengths": {"train-labels-idx1-ubyte.gz": np.zeros(11, np.uint8)},
           "label": {"t10k-labels-idx1-ubyte.gz": np.array([0, 1, 12, 3, 4, 5], np.uint8)},
           "pixels": {"train-images-idx3-ubyte.gz": np.zeros((12, 14, 14), np.uint8)},
           "missing": None}[damage]
    write_fashion(folder, labels_of=bad)
    if damage == "missing":
        (folder / "t10k-labels-idx1-ubyte.gz").unlink()
    with pytest.raises(DatasetError, match=re.escape(says)) as info:
        load_fashion_mnist(folder)
    assert "\n" not in str(info.value)


def test_train_cli_on_a_broken_fashion_folder_is_one_line_and_exit_2(tmp_path, capsys):
    from spheresde.cli import main

    write_fashion(tmp_path / "fm")
    raw = (tmp_path / "fm" / "train-images-idx3-ubyte.gz").read_bytes()
    (tmp_path / "fm" / "train-images-idx3-ubyte.gz").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--dataset", "fashion-mnist", "--data-dir", str(tmp_path / "fm"),
              "--out", str(tmp_path / "out"), "--quiet"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "train-images-idx3-ubyte.gz cannot be read" in err
    assert not (tmp_path / "out" / "train.csv").exists()


# ---------------------------------------------------------------------------- paired statistics


def rows_of(finals: dict[str, list[float]], *, layers=8, epochs=3) -> list[TrainRow]:
    """Rows whose last epoch has the given final accuracies per seed; earlier epochs lower."""
    return [TrainRow(w, s, layers, e, 0.0, 0.0, acc - 0.01 * (epochs - e), 0.5, 0.0, 0.0, 1.0)
            for w, accs in finals.items() for s, acc in enumerate(accs)
            for e in range(epochs + 1)]


def test_paired_differences_are_seed_by_seed_with_a_t_interval():
    finals = {"constant": [0.90, 0.92, 0.91, 0.93, 0.89],
              "random": [0.93, 0.94, 0.92, 0.96, 0.93],
              "identity": [0.90, 0.95, 0.90, 0.93, 0.92]}
    pairs = {(p.first, p.second): p for p in paired_differences(rows_of(finals))}
    assert list(pairs) == [("random", "constant"), ("random", "identity"),
                           ("identity", "constant")]
    rc = pairs["random", "constant"]
    diff = np.subtract(finals["random"], finals["constant"])
    assert np.allclose(rc.differences, diff)
    # t_{0.975, 4} = 2.7764: the 95% half-width of a mean of 5 paired differences
    half = 2.7764451 * diff.std(ddof=1) / np.sqrt(5)
    assert rc.mean == pytest.approx(diff.mean())
    assert rc.low == pytest.approx(diff.mean() - half)
    assert rc.wins == (5, 0, 0)
    assert rc.verdict == "random"
    ic = pairs["identity", "constant"]
    assert ic.wins == (2, 1, 2)
    assert ic.verdict == "neither"
    ri = pairs["random", "identity"]
    assert ri.low < 0 < ri.high
    assert ri.verdict == "neither"
    flipped = paired_differences(rows_of({"random": finals["constant"],
                                          "constant": finals["random"]}))[0]
    assert flipped.verdict == "constant"
    assert flipped.high < 0


def test_convergence_compares_the_last_epochs_with_the_seed_spread():
    rows = rows_of({"random": [0.90, 0.95, 0.93]}, epochs=8)  # +0.01 per epoch, spread 0.025
    (flat,) = convergence(rows)
    assert flat.window == 2
    assert flat.change == pytest.approx(0.02)
    assert flat.spread == pytest.approx(np.std([0.90, 0.95, 0.93], ddof=1))
    assert flat.flat
    (steep,) = convergence(rows_of({"random": [0.90, 0.901, 0.902]}, epochs=8))
    assert not steep.flat


@pytest.mark.slow
def test_the_training_epoch_compiles_once_for_every_seed_and_initialization(caplog):
    """After one batch of runs (random and constant weights, seed 0), a batch of as many
    runs of other seeds and initializations compiles neither the training epoch nor the
    evaluation: all initializations share one pytree structure (the constant network
    is tied by an array, not by a shape)."""
    import logging

    from spheresde.experiments import _train

    spec = TrainSpec(**{**TINY, "weights": ("random", "constant", "identity"), "epochs": 1,
                        "layers": (3,)})
    first = [p for p in spec.points() if p["seed"] == 0][:2]
    others = [p for p in spec.points() if p["seed"] == 1 and p["weights"] != "random"]
    _train.train_runs(spec, first, quiet=True)
    jax.config.update("jax_log_compiles", True)
    try:
        with caplog.at_level(logging.WARNING):
            _train.train_runs(spec, others, quiet=True)
    finally:
        jax.config.update("jax_log_compiles", False)
    compiled = [r.getMessage() for r in caplog.records if "XLA compilation of" in r.getMessage()]
    assert [p["weights"] for p in first] == ["random", "constant"]
    assert [p["weights"] for p in others] == ["constant", "identity"]
    assert not [m for m in compiled if "train_epochs" in m or "_evaluate_chunks" in m], compiled


def test_reproduce_paper_picks_cifar_then_fashion_then_digits(tmp_path, monkeypatch):
    from spheresde.data import _datasets
    from spheresde.experiments import BadParameters, ReproduceSpec
    from spheresde.experiments._reproduce import _sweeps, training_data

    write_cifar(tmp_path / "cifar")
    write_fashion(tmp_path / "fm", gz=False)
    (tmp_path / "empty").mkdir()
    paper = {"scale": "paper"}
    fields, why = training_data(ReproduceSpec(**paper, data_dir=str(tmp_path / "cifar")))
    assert fields["dataset"] == "cifar10"
    assert "holds CIFAR-10" in why
    fields, why = training_data(ReproduceSpec(**paper, data_dir=str(tmp_path / "fm")))
    assert fields["dataset"] == "fashion-mnist"
    assert "not CIFAR-10" in why
    with pytest.raises(BadParameters, match="holds neither CIFAR-10"):
        training_data(ReproduceSpec(**paper, data_dir=str(tmp_path / "empty")))
    monkeypatch.setattr(_datasets, "FASHION_MNIST_DIR", str(tmp_path / "fm"))
    fields, why = training_data(ReproduceSpec(**paper))
    assert fields == {"dataset": "fashion-mnist", "epochs": 15}
    assert TrainSpec(**fields).patch == 7  # the data set's own: 16 tokens
    # and so in the run itself, where the preset's patch was the digits' (2: 196 tokens of
    # a 28 x 28 image, which ran out of memory at L = 64)
    assert _sweeps(ReproduceSpec(**paper))[0]["train"].patch == 7
    assert "Debian's dataset-fashion-mnist" in why
    monkeypatch.setattr(_datasets, "FASHION_MNIST_DIR", str(tmp_path / "empty"))
    fields, why = training_data(ReproduceSpec(**paper))
    assert fields == {}
    assert "apt-get install dataset-fashion-mnist" in why
    assert training_data(ReproduceSpec())[0] == {}  # quick: the digits


# ---------------------------------------------------------------------------- patches, --dry-run


def test_each_data_set_has_its_own_patch_default():
    from spheresde.cli import build_parser

    def spec_of(*argv):
        args = build_parser().parse_args(["train", *argv])
        return TrainSpec(**{f.name: getattr(args, f.name) for f in TrainSpec.spec_fields()})

    assert spec_of().patch == 2  # 8 x 8 digits: 16 tokens
    assert spec_of("--dataset", "fashion-mnist").patch == 7  # 28 x 28: 16 tokens, not 196
    assert spec_of("--dataset", "cifar10", "--data-dir", "/d").patch == 4  # 32 x 32: 64
    assert spec_of("--dataset", "fashion-mnist", "--patch", "2").patch == 2  # asked for
    # resolved before the resume identity, the CSV columns and the command line: a digits
    # sweep stored with the former default (2) is the same sweep
    assert TrainSpec().params()["patch"] == TrainSpec().echo()["patch"] == 2
    argv = TrainSpec(dataset="fashion-mnist").argv()
    assert argv[argv.index("--patch") + 1] == "7"


def dry_run(tmp_path, capsys, out, *argv) -> str:
    from spheresde.cli import main

    tiny = TrainSpec(**TINY).argv()[1:]
    assert main(["train", *tiny, *argv, "--out", str(out), "--dry-run"]) == 0
    return capsys.readouterr().out


def test_dry_run_of_a_stored_sweep_has_nothing_to_compute(tmp_path, capsys):
    shutil.copytree(DATA / "train_v1", tmp_path / "stored")
    out = dry_run(tmp_path, capsys, tmp_path / "stored")
    assert "nothing to compute: the 4 runs are stored" in out
    assert "estimated" not in out


@pytest.mark.slow
def test_dry_run_counts_the_work_left_and_calibrates(tmp_path, capsys):
    shutil.copytree(DATA / "train_v1", tmp_path / "stored")
    before = sorted((p.name, p.stat().st_mtime_ns) for p in (tmp_path / "stored").iterdir())
    out = dry_run(tmp_path, capsys, tmp_path / "stored", "--layers", "2,3")
    assert "runs: 4 to compute of 8 (4 stored), 4 at L = 3" in out
    # TINY on the digits: 1437 training images, 5 steps of 256 an epoch, 2 epochs; 360
    # validation images evaluated 3 times and the training images once; 4 x 4 patches of
    # 8 x 8 images: n = 4 tokens of 16 pixels, d = 4: n^2 d + n d^2 = 128
    assert "tokens: 4 of 16 pixels (digits, 4 x 4 patches), d = 4" in out
    assert "= 128 multiply-adds an image" in out
    assert "work: 12 run-layers x 2,560 images trained (2 epochs of 5 steps of 256)" in out
    assert "x 2,517 images evaluated" in out
    assert f"{12 * (2560 + 2517) * 16:.3e} pair-layers" in out  # x n^2 = 16
    assert "L = 3, 4 runs: compile" in out
    estimate = re.search(r"estimated wall time: ([\d.]+) (s|min)", out)
    assert estimate, out
    assert float(estimate.group(1)) > 0
    after = sorted((p.name, p.stat().st_mtime_ns) for p in (tmp_path / "stored").iterdir())
    assert after == before  # a dry run writes nothing


@pytest.mark.slow
def test_dry_run_prices_the_batch_order_once_an_epoch_not_once_a_step(monkeypatch):
    # The batch order permutes the whole training set however few steps are timed; priced
    # inside the 8 calibration steps it was charged (steps an epoch)/8 times an epoch (on
    # Fashion-MNIST the estimate read 1.6 times the measured wall time). An order made
    # 0.4 s slower a call (the groups' calls run on threads at once) must add about 0.4 s
    # an epoch: 0.8 s over TINY's 2 epochs. At batch 64 the digits' 1,437 training
    # images make 22 steps an epoch, so the old pricing added 22 x 0.4 / 8 = 1.1 s an
    # epoch, 2.2 s in all: outside (0.6, 1.2).
    import time

    from spheresde.experiments import _train

    spec = TrainSpec(**{**TINY, "batch": 64})
    pending = spec.points()
    _, plain = _train.train_estimate(spec, pending)
    orders = _train._Runs.orders

    def slow_orders(self, epoch, steps=None):
        time.sleep(0.4)
        return orders(self, epoch, steps)

    monkeypatch.setattr(_train._Runs, "orders", slow_orders)
    _, slow = _train.train_estimate(spec, pending)
    added = slow["train"] - plain["train"]
    assert 0.6 < added < 1.2, (added, plain, slow)
