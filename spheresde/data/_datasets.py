"""Image data sets for the Figure 2 training, read locally: nothing is ever downloaded.

- ``"digits"``: scikit-learn's 8 x 8 handwritten digits (1797 images, shipped inside
  scikit-learn), split into training and validation sets by a seed.
- ``"fashion-mnist"``: Fashion-MNIST (Zalando's 28 x 28 grey images of clothes, 60,000
  training and 10,000 test images, 10 classes) from the four official IDX files in a
  local folder, by default where Debian's package ``dataset-fashion-mnist`` installs them
  (:data:`FASHION_MNIST_DIR`; ``apt-get install dataset-fashion-mnist`` is the whole
  set-up); gzip-compressed (``*.gz``, as shipped) or plain; the official test set is the
  validation set.
- ``"cifar10"``: CIFAR-10 from the official "python version" batches in a local folder
  (``data_batch_1`` ... ``data_batch_5`` and ``test_batch``, each a pickled dict with
  ``b"data"``, ``uint8`` of shape ``(N, 3072)``, channel-major 32 x 32 images, and
  ``b"labels"``); the official test batch is the validation set.

Images come out as ``float32`` arrays ``(N, H, W, C)``, standardized per channel with
the statistics of the training set, and :func:`patchify` cuts them into tokens.
"""

from __future__ import annotations

import gzip
import pickle
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .. import _checks

CIFAR10_URL = "https://www.cs.toronto.edu/~kriz/cifar.html"
CIFAR10_FILES = (*(f"data_batch_{k}" for k in range(1, 6)), "test_batch")
FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"
FASHION_MNIST_FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                       "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
DATASETS = ("digits", "fashion-mnist", "cifar10")
SIDE = {"digits": 8, "fashion-mnist": 28, "cifar10": 32}
"""The side in pixels of each data set's square images."""
PATCH = {"digits": 2, "fashion-mnist": 7, "cifar10": 4}
"""The patch side of each data set when none is asked for: 16 tokens of the 8 x 8 digits
and of the 28 x 28 Fashion-MNIST images (a layer costs ~ n^2 d + n d^2 an image: 2 x 2
patches of Fashion-MNIST, 196 tokens, would be ~60 times slower), 64 of the 32 x 32
CIFAR-10 images."""


class DatasetError(ValueError):
    """A data set that cannot be read; the message says what was expected and where."""


class ImageData(NamedTuple):
    """Training and validation images ``(N, H, W, C)`` with integer labels, and the classes."""

    train_images: np.ndarray
    train_labels: np.ndarray
    val_images: np.ndarray
    val_labels: np.ndarray
    classes: int


def _standardized(train: np.ndarray, val: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = train.mean(axis=(0, 1, 2))
    std = train.std(axis=(0, 1, 2)) + 1e-6
    return (((train - mean) / std).astype(np.float32), ((val - mean) / std).astype(np.float32))


def load_digits(seed: int, val_fraction: float = 0.2) -> ImageData:
    """scikit-learn's digits, stratified split into training and validation by ``seed``."""
    _checks.fraction("val_fraction", val_fraction)
    from sklearn.datasets import load_digits as sklearn_digits
    from sklearn.model_selection import train_test_split

    digits = sklearn_digits()
    images = digits.images[..., None].astype(np.float64)
    x_train, x_val, y_train, y_val = train_test_split(
        images, digits.target, test_size=val_fraction, random_state=seed,
        stratify=digits.target)
    x_train, x_val = _standardized(x_train, x_val)
    return ImageData(x_train, y_train.astype(np.int32), x_val, y_val.astype(np.int32), 10)


def _read_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    expected = (f"expected the CIFAR-10 python-version batch {path.name} (a pickled dict with "
                f"b'data' uint8 (N, 3072) and b'labels'; get cifar-10-python.tar.gz from "
                f"{CIFAR10_URL} and unpack it)")
    try:
        with path.open("rb") as f:
            batch = pickle.load(f, encoding="bytes")
        data, labels = np.asarray(batch[b"data"]), np.asarray(batch[b"labels"])
    except FileNotFoundError:
        raise DatasetError(f"{path} is missing: {expected}") from None
    except (OSError, pickle.UnpicklingError, EOFError, TypeError, KeyError, ValueError,
            AttributeError, IndexError) as err:
        raise DatasetError(f"{path} cannot be read ({type(err).__name__}): {expected}") from None
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072 \
            or labels.shape != (data.shape[0],):
        raise DatasetError(f"{path} has b'data' {data.dtype} {data.shape} and "
                           f"{labels.shape[0] if labels.ndim else 0} labels: {expected}")
    images = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return images, labels.astype(np.int32)


def validate_images(images: np.ndarray, labels: np.ndarray, classes: int, source: str | Path,
                    *, shape: tuple[int, ...] | None = None) -> None:
    """Check a set of images ``(N, H, W, C)`` and its labels as read from ``source``.

    Raises :class:`DatasetError` (one line naming ``source``) unless there are as many
    labels as images, every label is an integer in ``0 .. classes - 1`` and every image
    has the pixel ``shape`` ``(H, W, C)`` of its format (when given).
    """
    images, labels = np.asarray(images), np.asarray(labels)
    if images.ndim != 4 or (shape is not None and images.shape[1:] != tuple(shape)):
        wanted = f"(N, {', '.join(map(str, shape))})" if shape else "(N, H, W, C)"
        raise DatasetError(f"{source}: images of shape {images.shape}, expected {wanted}")
    if labels.shape != (images.shape[0],):
        raise DatasetError(f"{source}: {images.shape[0]} images but labels of shape "
                           f"{labels.shape}; expected one label per image")
    if not np.issubdtype(labels.dtype, np.integer):
        raise DatasetError(f"{source}: labels of type {labels.dtype}, expected integers")
    outside = (labels < 0) | (labels >= classes)
    if outside.any():
        first = int(np.argmax(outside))
        raise DatasetError(f"{source}: {int(outside.sum())} labels outside 0..{classes - 1} "
                           f"(the first: image {first}, label {int(labels[first])}); the file "
                           "is damaged or of another data set")


def load_cifar10(data_dir: str | Path) -> ImageData:
    """CIFAR-10 from the official python-version batches in ``data_dir`` (no download).

    Raises :class:`DatasetError` (one line: what was expected and where to get it) when
    the folder or a batch is missing or malformed.
    """
    folder = Path(data_dir)
    if not folder.is_dir():
        raise DatasetError(
            f"`data_dir='{data_dir}'`: no such folder; expected the CIFAR-10 python-version "
            f"files {', '.join(CIFAR10_FILES)} there (download cifar-10-python.tar.gz from "
            f"{CIFAR10_URL} and unpack it; nothing is downloaded for you)")
    batches = [_read_batch(folder / name) for name in CIFAR10_FILES]
    for name, (images, labels) in zip(CIFAR10_FILES, batches, strict=True):
        validate_images(images, labels, 10, folder / name, shape=(32, 32, 3))
    x_train = np.concatenate([b[0] for b in batches[:5]]).astype(np.float64) / 255
    y_train = np.concatenate([b[1] for b in batches[:5]])
    x_val, y_val = batches[5]
    x_train, x_val = _standardized(x_train, x_val.astype(np.float64) / 255)
    return ImageData(x_train, y_train, x_val, y_val, 10)


def _fashion_expected(folder: Path) -> str:
    return (f"expected the Fashion-MNIST IDX files {', '.join(FASHION_MNIST_FILES)} (gzip, "
            f"or plain without .gz) in {folder}; on Debian or Ubuntu `apt-get install "
            f"dataset-fashion-mnist` puts them in {FASHION_MNIST_DIR}, or pass `data_dir`")


def read_idx(path: str | Path, ndim: int) -> np.ndarray:
    """One IDX file of unsigned bytes (``*.gz`` or plain): ``ndim`` 1 for labels, 3 for images.

    The format: a big-endian magic number ``0x0000 08 ndim`` (``08``: unsigned byte), then
    ``ndim`` big-endian ``int32`` sizes, then the bytes. Raises :class:`DatasetError` on a
    wrong magic number, a wrong number of dimensions or a file shorter or longer than its
    sizes say.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except (OSError, EOFError) as err:
        raise DatasetError(f"{path} cannot be read ({type(err).__name__}: {err})") from None
    magic = int.from_bytes(raw[:4], "big") if len(raw) >= 4 else None
    if magic != 0x0800 + ndim:
        found = "a file shorter than 4 bytes" if magic is None else f"magic number {magic:#010x}"
        raise DatasetError(f"{path} is not an IDX file of {ndim}-d unsigned bytes ({found}, "
                           f"expected {0x0800 + ndim:#010x})")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise DatasetError(f"{path} is truncated: its header needs {header} bytes, it has "
                           f"{len(raw)}")
    shape = tuple(int.from_bytes(raw[4 + 4 * k:8 + 4 * k], "big") for k in range(ndim))
    size = int(np.prod(shape))
    if len(raw) - header != size:
        raise DatasetError(f"{path} has {len(raw) - header} data bytes, but its header says "
                           f"{' x '.join(map(str, shape))} = {size}: the file is "
                           f"{'truncated' if len(raw) - header < size else 'too long'}")
    return np.frombuffer(raw, np.uint8, offset=header).reshape(shape)


def _idx_candidate(folder: Path, name: str) -> Path | None:
    """``folder/name``, or its plain form without ``.gz``, whichever is a file."""
    for candidate in (folder / name, folder / name.removesuffix(".gz")):
        if candidate.is_file():
            return candidate
    return None


def _idx_file(folder: Path, name: str) -> Path:
    found = _idx_candidate(folder, name)
    if found is None:
        raise DatasetError(f"{folder / name} is missing: {_fashion_expected(folder)}")
    return found


def holds(folder: str | Path, dataset: str) -> bool:
    """Whether ``folder`` has every file of ``"fashion-mnist"`` (gzip or plain) or of
    ``"cifar10"``; their contents are checked when they are loaded."""
    folder = Path(folder)
    if dataset == "fashion-mnist":
        return all(_idx_candidate(folder, name) for name in FASHION_MNIST_FILES)
    if dataset == "cifar10":
        return all((folder / name).is_file() for name in CIFAR10_FILES)
    raise DatasetError(f"`dataset='{dataset}'`: no files to look for; use fashion-mnist or "
                       "cifar10")


def _fashion_split(folder: Path, images: str, labels: str) -> tuple[np.ndarray, np.ndarray]:
    x = read_idx(_idx_file(folder, images), 3)
    y = read_idx(_idx_file(folder, labels), 1)
    if len(x) != len(y):
        raise DatasetError(f"{folder}: {images} has {len(x)} images but {labels} has "
                           f"{len(y)} labels; {_fashion_expected(folder)}")
    validate_images(x[..., None], y, 10, f"{folder / images} and {labels}", shape=(28, 28, 1))
    return x, y.astype(np.int32)


def load_fashion_mnist(data_dir: str | Path = FASHION_MNIST_DIR, *, subset: int = 0,
                       seed: int = 0) -> ImageData:
    """Fashion-MNIST from its four official IDX files in ``data_dir`` (no download).

    The official 10,000 test images are the validation set. ``subset`` > 0 keeps that
    many training and ``subset // 6`` validation images (at least one), chosen by
    ``seed``, for quick looks. Raises :class:`DatasetError` (one line: which file, what
    was expected, how to get it) when the folder or a file is missing or malformed.
    """
    _checks.whole("subset", subset, at_least=0)
    folder = Path(data_dir)
    if not folder.is_dir():
        raise DatasetError(f"`data_dir='{data_dir}'`: no such folder; "
                           f"{_fashion_expected(folder)}")
    x_train, y_train = _fashion_split(folder, *FASHION_MNIST_FILES[:2])
    x_val, y_val = _fashion_split(folder, *FASHION_MNIST_FILES[2:])
    if subset:
        rng = np.random.default_rng(seed)
        keep = rng.permutation(len(y_train))[:subset]
        keep_val = rng.permutation(len(y_val))[:max(1, subset // 6)]
        x_train, y_train = x_train[np.sort(keep)], y_train[np.sort(keep)]
        x_val, y_val = x_val[np.sort(keep_val)], y_val[np.sort(keep_val)]
    x_train, x_val = _standardized(x_train[..., None] / 255.0, x_val[..., None] / 255.0)
    return ImageData(x_train, y_train, x_val, y_val, 10)


def load_dataset(name: str, *, seed: int, data_dir: str | Path | None = None,
                 subset: int = 0) -> ImageData:
    """``"digits"`` (split by ``seed``), ``"fashion-mnist"`` (from ``data_dir``, default
    :data:`FASHION_MNIST_DIR`; ``subset`` images chosen by ``seed`` when > 0) or
    ``"cifar10"`` (from ``data_dir``)."""
    if name == "digits":
        return load_digits(seed)
    if name == "fashion-mnist":
        return load_fashion_mnist(data_dir or FASHION_MNIST_DIR, subset=subset, seed=seed)
    if name == "cifar10":
        if not data_dir:
            raise DatasetError(f"`dataset='cifar10'` needs `data_dir`, a folder with the "
                               f"python-version batches from {CIFAR10_URL}")
        return load_cifar10(data_dir)
    raise DatasetError(f"`dataset='{name}'`: unknown data set; use one of "
                       f"{', '.join(DATASETS)}")


def patchify(images: np.ndarray, patch: int) -> np.ndarray:
    """Cut ``(N, H, W, C)`` images into ``(N, (H/patch) (W/patch), patch^2 C)`` tokens."""
    _checks.whole("patch", patch)
    _checks.real("images", images)
    n, h, w, c = images.shape
    if h % patch or w % patch:
        raise DatasetError(f"`patch={patch}` does not divide the {h} x {w} images")
    x = images.reshape(n, h // patch, patch, w // patch, patch, c).transpose(0, 1, 3, 2, 4, 5)
    return x.reshape(n, (h // patch) * (w // patch), patch * patch * c)


__all__ = ["CIFAR10_FILES", "CIFAR10_URL", "DATASETS", "FASHION_MNIST_DIR", "FASHION_MNIST_FILES",
           "PATCH", "SIDE", "DatasetError", "ImageData", "load_cifar10", "load_dataset",
           "load_digits", "load_fashion_mnist", "patchify", "read_idx"]
