"""Figures for the experiments: one palette, atomic saves, and no global Matplotlib state.

Figures are made with :class:`matplotlib.figure.Figure` directly, not through pyplot:
they render to files with the Agg canvas whatever backend the process uses, and importing
this module changes nothing for the user's own plots (it used to switch the backend of
the whole process).
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure

from .engine import oserror_for

# The paper's colours: magenta for a single cluster, violet for antipodal pairs.
SINGLE = "#d62fa0"
ANTIPODAL = "#6a3fb5"
UNDECIDED = "#9a9a9a"


def subplots(nrows: int = 1, ncols: int = 1, *, figsize: tuple[float, float],
             squeeze: bool = True):
    """A new figure and its axes (as :func:`matplotlib.pyplot.subplots`, without pyplot)."""
    fig = Figure(figsize=figsize)
    return fig, fig.subplots(nrows, ncols, squeeze=squeeze)


def colors(name: str, start: float, stop: float, count: int):
    """``count`` colours from Matplotlib colormap ``name`` between ``start`` and ``stop``."""
    import numpy as np

    return matplotlib.colormaps[name](np.linspace(start, stop, count))


def save(fig: Figure, path: str | os.PathLike) -> Path:
    """Save ``fig`` to ``path`` through a temporary file (an interrupted save leaves none)."""
    path = Path(path)
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    try:
        fig.savefig(tmp, dpi=130, bbox_inches="tight")
        os.replace(tmp, path)
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise oserror_for(err, path) from err
        raise
    return path


__all__ = ["ANTIPODAL", "SINGLE", "UNDECIDED", "colors", "save", "subplots"]
