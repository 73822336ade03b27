"""Array type aliases shared across the package (jaxtyping).

The annotations are checked at test time by jaxtyping's pytest hook with beartype (as
Diffrax does), not at run time: they document shapes and may be trusted by readers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, PRNGKeyArray, PyTree, Real, UInt32

Token = Float[Array, " d"]
Tokens = Float[Array, "n d"]
SpherePoint = Float[ArrayLike, "*#batch d"]
"""Points of S^{d-1} (or vectors at them) on the last axis; leading axes broadcast."""
State = PyTree[Float[ArrayLike, "..."]]
"""A state of an SDE: one array (rows on a sphere), or a pytree of sphere and vector leaves."""
Scalar = Float[ArrayLike, ""]
RealScalar = Real[ArrayLike, ""]
"""A real number: a Python ``int`` or ``float``, or a 0-d array (``beta``, ``sigma``)."""
RealGrid = Real[ArrayLike, "..."] | Sequence[Real[ArrayLike, ""]]
"""Real numbers that broadcast against each other (the grid arguments of ``two_token``)."""
FloatGrid = Float[ArrayLike, "..."]
"""Values over such a grid: a NumPy array, or a scalar for scalar arguments."""
FloatNumpy = Float[np.ndarray, "..."]
"""A NumPy array of floats, any shape (results computed on the host)."""
FloatArray = Float[Array, "..."]
"""A JAX array of floats, any shape."""
Words = UInt32[Array, "..."]
"""Random ``uint32`` words, any shape."""
Matrix = Float[ArrayLike, "d d"]
"""A ``(d, d)`` matrix such as the query and key matrices ``Q`` and ``K``."""

__all__ = [
    "Array", "ArrayLike", "Bool", "Float", "FloatArray", "FloatGrid", "FloatNumpy", "Matrix",
    "PRNGKeyArray", "Real", "RealGrid", "RealScalar", "Scalar", "SpherePoint", "State", "Token",
    "Tokens",
    "UInt32", "Words",
]
