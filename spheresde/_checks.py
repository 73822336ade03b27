"""The checks of the public API's inputs, worded once: what is wrong and what to pass.

:func:`spheresde.solve` is the model (:mod:`._solve`): a value is checked eagerly when it
is concrete, and left to the caller inside someone else's ``jax.jit``, where it is traced.
The public functions of :mod:`spheresde.transformer`, :mod:`spheresde.two_token`,
:mod:`spheresde.data` and the samplers call these checks on their first line, so that a
NaN, a size of zero or a count of 2.5 is refused before any work instead of ending in a
silent NaN, a ``ZeroDivisionError`` or an error of XLA.
"""

from __future__ import annotations

import math

import jax
import numpy as np

#: The dtypes nothing here computes in: they round a step of 0.01 or a normalization at
#: about 1e-3.
HALF_PRECISION = ("float16", "bfloat16")

#: The most steps (layers, Euler steps) one call computes: a fixed grid of 10^7 steps
#: is already 80 MB of float64 times and hours of work at the paper's sizes, so more is
#: a unit mistake (``dt=1e-9``) rather than a plan, and is refused before any work.
MAX_STEPS = 10**7


def concrete(x) -> bool:
    """Whether ``x`` has a value now (it is not traced inside ``jax.jit``)."""
    return not isinstance(x, jax.core.Tracer)


def whole(name: str, value, *, at_least: int = 1) -> int:
    """``value`` as an ``int`` if it is a whole number ``>= at_least``; else ValueError."""
    kind = np.asarray(value).dtype.kind if concrete(value) else ""
    number = float(value) if kind in ("i", "u", "f") and np.ndim(value) == 0 else math.nan
    if not (math.isfinite(number) and number == int(number) and number >= at_least):
        example = max(at_least, int(number)) if math.isfinite(number) else at_least
        raise ValueError(f"{name} must be a whole number >= {at_least}, got {value!r}; pass "
                         f"e.g. {name}={example}")
    return int(number)


def real(name: str, value, *, at_least: float | None = None) -> None:
    """``value`` (a number or an array of them) is real, not half precision, finite and
    ``>= at_least`` in every entry; checked where it is concrete."""
    array = np.asarray(value) if concrete(value) else None
    dtype = getattr(value, "dtype", None) if array is None else array.dtype
    if dtype is not None and np.dtype(dtype).name in HALF_PRECISION:
        raise ValueError(f"{name} has dtype {np.dtype(dtype).name}, which is not computed in "
                         f"(half precision rounds at about 1e-3): pass float32 or float64")
    if array is None:
        return
    if array.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be a real number or array of them, got {value!r}; "
                         f"pass floats")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite, not NaN or infinite: got {_shown(array)}; "
                         f"pass finite values")
    if at_least is not None and np.any(array < at_least):
        raise ValueError(f"{name} must be >= {at_least:g}, got {float(np.min(array)):g}; pass "
                         f"values >= {at_least:g}")


def fraction(name: str, value) -> None:
    """A share strictly between 0 and 1."""
    real(name, value)
    if not 0 < float(value) < 1:
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {value!r}; pass e.g. "
                         f"{name}=0.2")


def dimension(name: str, d) -> int:
    """The dimension ``d`` of the space around the sphere :math:`S^{d-1}`: whole, ``>= 2``."""
    try:
        return whole(name, d, at_least=2)
    except ValueError:
        raise ValueError(f"the sphere S^(d-1) needs a whole {name} >= 2, got {name}={d!r}; "
                         f"pass e.g. {name}=3") from None


def sizes(name: str, shape) -> tuple[int, ...]:
    """A shape of draws: a tuple of whole numbers ``>= 1``."""
    try:
        return tuple(whole(name, entry) for entry in shape)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a tuple of whole sizes >= 1, got {shape!r}; pass "
                         f"e.g. {name}=(10,)") from None


def tokens(name: str, value) -> None:
    """Tokens ``(..., n, d)``: at least one token, ``d >= 2``, real, not half precision,
    finite, and no zero token (it has no direction on the sphere)."""
    shape = np.shape(value)
    if len(shape) < 2:
        raise ValueError(f"{name} has shape {shape}; pass n tokens of dimension d, an array "
                         f"of shape (n, d) or (trajectories, n, d)")
    if shape[-2] < 1:
        raise ValueError(f"{name} holds no token (shape {shape}); pass at least one")
    if shape[-1] < 2:
        raise ValueError(f"{name} holds tokens of d={shape[-1]} coordinates (shape {shape}); "
                         f"the sphere S^(d-1) needs d >= 2: pass tokens of 2 or more "
                         f"coordinates")
    real(name, value)
    if concrete(value):
        norms = np.linalg.norm(np.asarray(value, dtype=np.float64), axis=-1)
        if np.any(norms == 0):
            raise ValueError(f"{name} has a zero token, which has no direction on the "
                             f"sphere; pass tokens of length 1")


def step_count(name: str, steps: int, remedy: str) -> None:
    """``steps`` (of one call) is at most :data:`MAX_STEPS`."""
    if steps > MAX_STEPS:
        raise ValueError(f"{name} gives {steps:,} steps, more than the {MAX_STEPS:,} one call "
                         f"computes; {remedy}")


def weights(value) -> None:
    r"""The value-matrix model: its limit's :math:`\mu` and noise scale :math:`\varepsilon`
    finite, the noise scale ``>= 0``."""
    mu, eps = value.limit()
    for field, number in (("mu", mu), ("noise scale", eps)):
        real(f"the {field} of {value!r}", number, at_least=0.0 if field != "mu" else None)


def network(tokens0, beta, weights_, *, layers, horizon, trajectories) -> None:
    """The inputs of :func:`spheresde.transformer.simulate_network` and its relatives."""
    tokens("tokens0", tokens0)
    real("beta", beta)
    if weights_ is not None:
        weights(weights_)
    whole("layers", layers)
    real("horizon", horizon, at_least=0.0)
    whole("trajectories", trajectories)
    step_count(f"horizon={horizon} with layers={layers}", round(float(horizon) * layers),
               "pass a shorter horizon or fewer layers")


def two_tokens(beta, d, *, sigma=None, mu=None, eps=None, rho0=None) -> None:
    r"""The parameters of the two-token :math:`\rho`-diffusion (:mod:`spheresde.two_token`):
    finite, ``d >= 2``, noise scales ``>= 0``, :math:`\rho_0` in ``[-1, 1]``."""
    real("beta", beta)
    real("d", d, at_least=2)
    for name, value in (("sigma", sigma), ("eps", eps)):
        if value is not None:
            real(name, value, at_least=0.0)
    if mu is not None:
        real("mu", mu)
    if rho0 is not None:
        inner_product("rho0", rho0)


def inner_product(name: str, value) -> None:
    r"""An inner product :math:`\rho = \langle X_1, X_2\rangle` of two tokens: finite,
    in ``[-1, 1]``."""
    real(name, value)
    if concrete(value) and np.any(np.abs(np.asarray(value)) > 1):
        worst = float(np.asarray(value).flat[np.argmax(np.abs(np.asarray(value)))])
        raise ValueError(f"{name} must lie in [-1, 1] (it is <X1, X2>), got {worst:g}")


def rho_paths(beta, d, *, trajectories, dt, horizon, sigma, mu, eps, rho0) -> None:
    """The inputs of :func:`spheresde.two_token.simulate_rho`."""
    two_tokens(beta, d, sigma=sigma, mu=mu, eps=eps, rho0=rho0)
    whole("trajectories", trajectories)
    real("dt", dt)
    real("horizon", horizon, at_least=0.0)
    if float(dt) <= 0:
        raise ValueError(f"dt must be positive, got dt={dt}")
    step_count(f"horizon={horizon} with dt={dt}", round(float(horizon) / float(dt)),
               f"pass dt >= {float(horizon) / MAX_STEPS:.3g}")


def limit(beta, weights_, *, d, n=None) -> None:
    """The inputs of :func:`spheresde.transformer.transformer_sde`."""
    real("beta", beta)
    if weights_ is not None:
        weights(weights_)
    dimension("d", d)
    if n is not None:
        whole("n", n)


def weak_error(layers, beta, d, *, sigma, horizon, rho0, paths, reference_factor) -> None:
    """The inputs of :func:`spheresde.transformer.weak_error_vs_layers`."""
    try:
        counts = [whole("every entry of layers", entry) for entry in layers]
    except TypeError:
        raise ValueError(f"layers must be a sequence of whole numbers >= 1, got "
                         f"{layers!r}; pass e.g. layers=(10, 20, 40)") from None
    if not counts:
        raise ValueError("layers is empty; pass e.g. layers=(10, 20, 40)")
    two_tokens(beta, d, sigma=sigma, rho0=rho0)
    dimension("d", d)
    real("horizon", horizon, at_least=0.0)
    whole("paths", paths)
    whole("reference_factor", reference_factor)
    step_count(f"horizon={horizon} with layers up to {max(counts)} and "
               f"reference_factor={reference_factor}",
               round(float(horizon) * max(counts) * reference_factor),
               "pass a shorter horizon, fewer layers or a smaller reference_factor")


def classifier(*, layers, d, sigma, dtype, beta=0.0, **counts) -> None:
    """The sizes of the classifier of :mod:`spheresde.data` (``counts``: whole numbers
    such as ``patches`` and ``classes``) and its model's numbers."""
    whole("layers", layers)
    dimension("d", d)
    real("sigma", sigma, at_least=0.0)
    real("beta", beta)
    real("dtype", np.zeros(0, dtype))
    for name, value in counts.items():
        whole(name, value)


def _shown(array: np.ndarray) -> str:
    if array.ndim == 0:
        return repr(array.item())
    bad = ~np.isfinite(array)
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    return (f"{array[first].item()!r} at index {first} ({int(bad.sum())} of {array.size} "
            f"entries not finite)")
