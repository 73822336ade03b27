"""Figure 2: the classifier made of the paper's layer, its data and the train sweep."""

import dataclasses
import json
import pickle

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from spheresde._classifier import (
    TransformerClassifier,
    classifier_loss,
    classifier_optimizer,
    init_values,
    train_epoch,
)
from spheresde._datasets import CIFAR10_FILES, DatasetError, load_cifar10, patchify
from spheresde.experiments import Sweep
from spheresde.experiments._train import TrainSpec, run_train


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
    assert tied.values.shape == (1, 6, 6)
    assert untied.values.shape == (3, 6, 6)
    # same network at initialization: only the tying differs
    assert jnp.allclose(jax.vmap(tied)(patches), jax.vmap(untied)(patches), atol=1e-12)
    g_tied = jax.grad(classifier_loss)(tied, patches, labels).values
    g_untied = jax.grad(classifier_loss)(untied, patches, labels).values
    # one shared matrix receives the sum of the per-layer gradients
    assert jnp.allclose(g_tied[0], g_untied.sum(axis=0), atol=1e-12)
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
        grads = jax.grad(classifier_loss)(model(getkey(), weights, layers=64), patches, labels)
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
        Sweep(tmp_path, "toy", {"seed": 0}, Epoch, ("run",)).run(points, compute, quiet=True)
    assert (tmp_path / "toy.csv").read_text().count("\n") == 1 + 3  # run 0, all 3 epochs
    rows = Sweep(tmp_path, "toy", {"seed": 0}, Epoch, ("run",)).run(points, compute, quiet=True)
    assert calls == [0, 1, 1, 2, 3]  # run 0 was not redone
    assert rows == [Epoch(r, e, r + e / 10) for r in range(4) for e in range(3)]


@pytest.mark.parametrize(("args", "says"), [
    (["--dataset", "mnist"], "'mnist' is not one of digits, cifar10"),
    (["--dataset", "cifar10"], "needs --data-dir DIR"),
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


TINY = {"seeds": 2, "epochs": 2, "layers": 2, "dim": 4, "patch": 4, "batch": 256,
        "weights": ("constant", "random")}


@pytest.mark.slow
def test_interrupted_training_resumes_to_the_uninterrupted_csv(tmp_path, monkeypatch):
    from spheresde.experiments import _train

    spec = TrainSpec(**TINY)
    whole = run_train(spec, tmp_path / "whole", quiet=True)
    assert len(whole.rows) == 2 * 2 * 3  # weights x seeds x (init + 2 epochs)

    real, calls = _train._run, []

    def interrupted(spec, point, *, quiet):
        calls.append(point)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(spec, point, quiet=quiet)

    monkeypatch.setattr(_train, "_run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_train(spec, tmp_path / "cut", quiet=True)
    monkeypatch.setattr(_train, "_run", real)
    run_train(spec, tmp_path / "cut", quiet=True)
    assert (tmp_path / "cut" / "train.csv").read_text() == \
        (tmp_path / "whole" / "train.csv").read_text()
    meta = json.loads((tmp_path / "cut" / "train.json").read_text())
    assert [r["points_computed"] for r in meta["runs"]] == [2, 2]
    assert meta["seeds"] == [0, 1]
    assert "optax" in meta["versions"]


def test_train_spec_round_trips_its_command_line():
    from spheresde.cli import build_parser

    spec = TrainSpec(weights=["random", "constant"], dataset="cifar10", data_dir="/data/c10",
                     seeds=3, patch=4)
    argv = spec.argv()
    assert argv[argv.index("--weights") + 1] == "random,constant"
    args = build_parser().parse_args(argv)
    assert TrainSpec(**{f.name: getattr(args, f.name) for f in TrainSpec.spec_fields()}) == spec
    assert "--data-dir" not in TrainSpec().argv()  # an unset path is the default
    assert [p["seed"] for p in spec.points()] == [0, 1, 2, 0, 1, 2]
