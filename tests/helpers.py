"""Shared test helpers: SDEs with known answers, random smooth fields, nested Brownian
paths, a look into a sweep store while it is written."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import diffrax
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest

import spheresde
from spheresde import project_tangent

# Every sphere-preserving scheme the tests hold to its declared orders and norm: each
# geodesic scheme that spheresde.solvers exports (its registration, docs/contributing.rst),
# then the retraction of two Diffrax schemes, one of each sense.
GEODESIC = [value for name, value in vars(spheresde.solvers).items()
            if isinstance(value, type) and issubclass(value, spheresde.AbstractGeodesicSolver)
            and not name.startswith("Abstract")]
SCHEMES = [
    *(pytest.param(scheme(), id=scheme.__name__) for scheme in GEODESIC),
    pytest.param(spheresde.Retracted(diffrax.Euler()), id="Retracted(Euler)"),
    pytest.param(spheresde.Retracted(diffrax.Heun()), id="Retracted(Heun)"),
]


def brownian_motion_sde(d: int, convention: str, *, shared_noise: bool = False
                        ) -> spheresde.SphereSDE:
    r"""Brownian motion on :math:`S^{d-1}` (generator :math:`\tfrac12\Delta`), noise ``(d,)``.

    ``shared_noise=True``: a state of several rows is several points driven by the same
    ``dW`` (declared, as ``solve`` demands).

    Ito: :math:`dX = -\tfrac{d-1}{2} X\,dt + P_X\,dW`; Stratonovich: :math:`dX = P_X \circ dW`.
    """
    def diffusion(t, y, args, dw):
        return project_tangent(y, dw)

    if convention == "ito":
        def drift(t, y, args):
            return -(d - 1) / 2 * y
    else:
        def drift(t, y, args):
            return jnp.zeros_like(y)
    return spheresde.SphereSDE(drift, diffusion, (d,), convention, shared_noise=shared_noise)


def random_tangent_sde(seed: int, d: int, n: int, m: int, convention: str) -> spheresde.SphereSDE:
    r"""Smooth random fields on :math:`(S^{d-1})^n` with noise of shape ``(m,)``.

    Drift :math:`P_y(\tanh(M y) + b)`, diffusion :math:`P_y \sum_k dw_k (C_k y + c_k)`,
    both tangent; the Ito version adds a normal part to the drift, which the solvers
    must not be disturbed by.
    """
    rng = np.random.default_rng(seed)
    M, b = rng.normal(size=(d, d)), rng.normal(size=d)
    C, c = rng.normal(size=(m, d, d)) / np.sqrt(d), rng.normal(size=(m, d))

    def drift(t, y, args):
        out = project_tangent(y, jnp.tanh(y @ M.T) + b)
        return out - 0.5 * m * y if convention == "ito" else out

    def diffusion(t, y, args, dw):
        return project_tangent(y, jnp.einsum("k,kde,...e->...d", dw, C, y) + dw @ c)

    # rows of a product state (n > 1) share the noise on purpose
    return spheresde.SphereSDE(drift, diffusion, (m,), convention, shared_noise=True)


def _coefficient_drift(t, y, args):
    M, b, _, _ = args
    return project_tangent(y, jnp.tanh(y @ M.T) + b)


def _coefficient_ito_drift(t, y, args):
    # the tangent part plus a normal part, which the solvers must not be disturbed by
    return _coefficient_drift(t, y, args) - 0.5 * args[2].shape[0] * y


def _coefficient_diffusion(t, y, args, dw):
    _, _, C, c = args
    return project_tangent(y, jnp.einsum("k,kde,...e->...d", dw, C, y) + dw @ c)


def coefficient_sde(m: int, convention: str) -> spheresde.SphereSDE:
    r"""The fields of :func:`random_tangent_sde` with their coefficients in ``args``.

    ``args = (M, b, C, c)`` (:func:`random_coefficients`): drift
    :math:`P_y(\tanh(My) + b)`, diffusion :math:`P_y\sum_k dw_k (C_k y + c_k)`. The
    functions are the same objects for every draw, so a jitted solve compiles once per
    shape and not once per draw of the coefficients.
    """
    drift = _coefficient_ito_drift if convention == "ito" else _coefficient_drift
    return spheresde.SphereSDE(drift, _coefficient_diffusion, (m,), convention,
                               shared_noise=True)


def random_coefficients(seed: int, d: int, m: int, noise_scale: float = 1.0) -> tuple:
    """``(M, b, C, c)`` for :func:`coefficient_sde`: Gaussian, noise scaled by ``noise_scale``."""
    rng = np.random.default_rng(seed)
    M, b = rng.normal(size=(d, d)), rng.normal(size=d)
    C = noise_scale * rng.normal(size=(m, d, d)) / np.sqrt(d)
    c = noise_scale * rng.normal(size=(m, d))
    return tuple(jnp.asarray(a) for a in (M, b, C, c))


def sampled_brownian(key, paths: int, t1: float, steps: int, noise_shape) -> tuple:
    """``paths`` Brownian paths sampled on ``steps + 1`` equispaced times of ``[0, t1]``.

    Returns ``(ts, W)``; ``diffrax.LinearInterpolation(ts, W[p])`` is path ``p``, exact at
    every grid point, so solving with any step that is a multiple of ``t1 / steps`` uses
    the same Brownian increments (common random numbers across step sizes).
    """
    ts = jnp.linspace(0.0, t1, steps + 1)
    dw = jr.normal(key, (paths, steps, *noise_shape)) * jnp.sqrt(t1 / steps)
    W = jnp.concatenate([jnp.zeros((paths, 1, *noise_shape)), jnp.cumsum(dw, axis=1)], axis=1)
    return ts, W


def solve_on_paths(sde, y0, t1, dt, ts, W, solver):
    """Final states ``(paths, *y0.shape)`` of ``solve`` on each sampled path ``W[p]``."""
    def one(w):
        path = diffrax.LinearInterpolation(ts, w)
        return spheresde.solve(sde, y0, 0.0, t1, dt, brownian=path, solver=solver).ys[-1]

    return jax.jit(jax.vmap(one))(W)


def loglog_slope(x, y) -> float:
    """Least-squares slope of ``log y`` against ``log x``."""
    return float(np.polyfit(np.log(np.asarray(x)), np.log(np.asarray(y)), 1)[0])


def stored_records(out: Path, table: str) -> int:
    """How many records (``points`` or ``chunks``) the store of the output directory
    ``out`` holds, read while a run writes it (0 before it has its tables)."""
    path = Path(out) / ".spheresde.sqlite"
    if not path.exists():
        return 0
    db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        return db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    except sqlite3.OperationalError:  # no tables yet
        return 0
    finally:
        db.close()
