"""Image data sets for the Figure 2 training, read locally: nothing is ever downloaded.

- ``"digits"``: scikit-learn's 8 x 8 handwritten digits (1797 images, shipped inside
  scikit-learn), split into training and validation sets by a seed.
- ``"cifar10"``: CIFAR-10 from the official "python version" batches in a local folder
  (``data_batch_1`` ... ``data_batch_5`` and ``test_batch``, each a pickled dict with
  ``b"data"``, ``uint8`` of shape ``(N, 3072)``, channel-major 32 x 32 images, and
  ``b"labels"``); the official test batch is the validation set.

Images come out as ``float32`` arrays ``(N, H, W, C)``, standardized per channel with
the statistics of the training set, and :func:`patchify` cuts them into tokens.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import NamedTuple

import numpy as np

CIFAR10_URL = "https://www.cs.toronto.edu/~kriz/cifar.html"
CIFAR10_FILES = (*(f"data_batch_{k}" for k in range(1, 6)), "test_batch")


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
            f"--data-dir {data_dir}: no such folder; expected the CIFAR-10 python-version "
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


def load_dataset(name: str, *, seed: int, data_dir: str | Path | None = None) -> ImageData:
    """``"digits"`` (split by ``seed``) or ``"cifar10"`` (read from ``data_dir``)."""
    if name == "digits":
        return load_digits(seed)
    if name == "cifar10":
        if not data_dir:
            raise DatasetError(f"--dataset cifar10 needs --data-dir DIR, a folder with the "
                               f"python-version batches from {CIFAR10_URL}")
        return load_cifar10(data_dir)
    raise DatasetError(f"--dataset {name}: unknown data set; use digits or cifar10")


def patchify(images: np.ndarray, patch: int) -> np.ndarray:
    """Cut ``(N, H, W, C)`` images into ``(N, (H/patch) (W/patch), patch^2 C)`` tokens."""
    n, h, w, c = images.shape
    if h % patch or w % patch:
        raise DatasetError(f"--patch {patch} does not divide the {h} x {w} images")
    x = images.reshape(n, h // patch, patch, w // patch, patch, c).transpose(0, 1, 3, 2, 4, 5)
    return x.reshape(n, (h // patch) * (w // patch), patch * patch * c)


__all__ = ["CIFAR10_FILES", "CIFAR10_URL", "DatasetError", "ImageData", "load_cifar10",
           "load_dataset", "load_digits", "patchify"]
