"""Matplotlib set-up shared by the figures: headless backend, one palette, atomic saves."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # figures are files; never ask for a display

import matplotlib.pyplot as plt

from ._sweep import atomic_write_text

# The paper's colours: magenta for a single cluster, violet for antipodal pairs.
SINGLE = "#d62fa0"
ANTIPODAL = "#6a3fb5"
UNDECIDED = "#9a9a9a"


def save(fig, path: str | os.PathLike) -> Path:
    """Save ``fig`` to ``path`` through a temporary file, then close it."""
    path = Path(path)
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    fig.savefig(tmp, dpi=130, bbox_inches="tight")
    plt.close(fig)
    os.replace(tmp, path)
    return path


__all__ = ["ANTIPODAL", "SINGLE", "UNDECIDED", "atomic_write_text", "plt", "save"]
