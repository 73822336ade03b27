"""How far beyond the classification thresholds the z grids of the two-token laws reach
(shared by :mod:`._finite_horizon` and :mod:`._chain_law`)."""

from __future__ import annotations

import numpy as np
from scipy import special

#: Probability allowed to leak through each truncated end.
TRUNCATION = 1e-9


def far_extent(c, v2, horizon):
    """Width D beyond a threshold after which a reflecting wall changes < TRUNCATION."""
    spread = np.sqrt(v2 * horizon) * special.ndtri(1 - TRUNCATION / 4)
    if abs(c) < 1e-12:
        return spread
    against = v2 / (2 * abs(c)) * np.log((1 + 2 * c * c * horizon / v2) / TRUNCATION)
    return min(spread, against)
