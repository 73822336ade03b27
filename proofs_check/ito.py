r"""Symbolic Ito calculus for SDEs on :math:`\mathbb{R}^N` with noise of any shape.

An SDE is given by a state (a list of ``N`` SymPy symbols), a drift (``N`` expressions)
and a diffusion array of shape ``(N, *noise_shape)``: the noise is
:math:`\sum_k \sigma_{\cdot k}\, dW_k` over all noise indices ``k`` (flattened), with
independent standard Brownian motions :math:`W_k`. Matrix noise (``noise_shape = (d, d)``)
is just ``d*d`` such columns.

- :func:`ito_to_stratonovich` / :func:`stratonovich_to_ito`: the drift correction
  :math:`\mp\tfrac12\sum_k (D\sigma_k)\,\sigma_k`.
- :func:`generator` and :func:`ito_lemma`: Ito's formula for a scalar function.
- :func:`ito_lemma_1d`: the scalar special case used for changes of variable.
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy as sp

from .symbols import r, rho


def _state(state) -> list[sp.Symbol]:
    """``state`` as a list of SymPy symbols, refusing strings (SymPy would make new,
    assumption-free symbols of them, unrelated to those of the expressions)."""
    if isinstance(state, str | sp.Basic) or not isinstance(state, Sequence):
        raise TypeError(f"state must be a list of SymPy symbols such as sympy.symbols('x y', "
                        f"real=True), got {state!r}")
    for x in state:
        if not isinstance(x, sp.Symbol):
            raise TypeError(f"state must hold SymPy symbols, got {x!r} ({type(x).__name__}); "
                            f"make them with sympy.symbols")
    return list(state)


def _no_strings(values, name: str) -> None:
    if isinstance(values, str):
        raise TypeError(f"{name} must hold SymPy expressions, got the string {values!r}")
    if isinstance(values, Sequence) and not isinstance(values, sp.Basic):
        for value in values:
            _no_strings(value, name)


def _hidden_state(state, exprs) -> None:
    """Refuse ``r`` in a diffusion of the state ``rho``: ``r = exp(-beta (1 - rho))``
    depends on ``rho``, and the Stratonovich correction, which differentiates the
    diffusion with ``r`` held fixed, would drop that dependence. (Ito's lemma only
    differentiates the function it is applied to, so coefficients in ``r`` are fine there.)"""
    # By name: a user's own Symbol("rho") (without assumptions) is the same variable.
    if rho.name in {x.name for x in state} and any(
            r.name in {v.name for v in sp.sympify(e).free_symbols} for e in exprs):
        raise ValueError("the expressions depend on r = exp(-beta (1 - rho)), a function of "
                         "the state rho that differentiation would hold fixed: substitute "
                         "it first with RhoSDE.in_rho (or use RhoSDE.stratonovich_drift)")


def _columns(diffusion, n_state: int) -> sp.Matrix:
    """Diffusion as an ``N x K`` matrix whose columns are the noise directions."""
    _no_strings(diffusion, "diffusion")
    try:
        arr = sp.Array(diffusion)
    except (TypeError, ValueError) as err:
        raise ValueError(f"diffusion must be an array of shape (N, *noise_shape), got "
                         f"{diffusion!r}") from err
    if arr.rank() < 2 or arr.shape[0] != n_state:
        raise ValueError(f"diffusion must have shape (N, *noise_shape) with N = {n_state} "
                         f"state variables, got shape {arr.shape} (one noise: [[sigma]] per "
                         f"state variable)")
    k = 1
    for size in arr.shape[1:]:
        k *= size
    return sp.Matrix(arr.reshape(n_state, k).tolist())


def _inputs(state, drift, diffusion) -> tuple[list[sp.Symbol], sp.Matrix, sp.Matrix]:
    """Checked ``(state, drift column, diffusion columns)``: a clear error for strings,
    lengths and shapes that do not fit, instead of SymPy's ShapeError or IndexError."""
    state = _state(state)
    _no_strings(drift, "drift")
    drift = sp.Matrix(drift) if drift is not None else sp.zeros(len(state), 1)
    if drift.shape != (len(state), 1):
        raise ValueError(f"drift must have one entry per state variable ({len(state)}), got "
                         f"shape {drift.shape}")
    return state, drift, _columns(diffusion, len(state))


def stratonovich_correction(state: Sequence[sp.Symbol], diffusion) -> sp.Matrix:
    r"""The drift correction :math:`c = \tfrac12 \sum_k (D\sigma_k)\,\sigma_k`.

    :math:`(D\sigma_k)_{ab} = \partial \sigma_{ak} / \partial x_b`. Stratonovich drift =
    Ito drift - c; Ito drift = Stratonovich drift + c.

    Parameters
    ----------
    state : sequence of sympy.Symbol
        The ``N`` coordinates.
    diffusion : array-like
        Shape ``(N, *noise_shape)``.

    Returns
    -------
    sympy.Matrix
        ``N x 1`` correction.

    Examples
    --------
    Geometric Brownian motion :math:`dX = \sigma X \circ dW`:

    >>> x, sigma = sp.symbols("x sigma", positive=True)
    >>> stratonovich_correction([x], [[sigma * x]])
    Matrix([[sigma**2*x/2]])
    """
    state, _, cols = _inputs(state, None, diffusion)
    _hidden_state(state, cols)
    jac_cols = [cols[:, k].jacobian(state) * cols[:, k] for k in range(cols.shape[1])]
    total = sp.zeros(len(state), 1)
    for term in jac_cols:
        total += term
    return total / 2


def ito_to_stratonovich(state, drift, diffusion) -> sp.Matrix:
    r"""Stratonovich drift of the SDE with Ito drift ``drift``.

    :math:`b - \tfrac12\sum_k (D\sigma_k)\sigma_k`.

    Examples
    --------
    Brownian motion on the circle, Ito form :math:`dX = -\tfrac12 X\,dt + J X\,dW`:

    >>> x, y = sp.symbols("x y", real=True)
    >>> ito_to_stratonovich([x, y], [-x / 2, -y / 2], [[-y], [x]])
    Matrix([
    [0],
    [0]])
    """
    _, drift, _ = _inputs(state, drift, diffusion)
    return drift - stratonovich_correction(state, diffusion)


def stratonovich_to_ito(state, drift, diffusion) -> sp.Matrix:
    r"""Ito drift of the SDE with Stratonovich drift ``drift``.

    :math:`b + \tfrac12\sum_k (D\sigma_k)\sigma_k`.

    Examples
    --------
    >>> x, sigma = sp.symbols("x sigma", positive=True)
    >>> stratonovich_to_ito([x], [0], [[sigma * x]])
    Matrix([[sigma**2*x/2]])
    """
    _, drift, _ = _inputs(state, drift, diffusion)
    return drift + stratonovich_correction(state, diffusion)


def generator(f: sp.Expr, state, drift, diffusion) -> sp.Expr:
    r"""The generator of the SDE with Ito drift ``drift``, applied to ``f``.

    :math:`\mathcal{L}f = \nabla f\cdot b + \tfrac12\operatorname{tr}(\sigma\sigma^\top\nabla^2 f)`

    Examples
    --------
    >>> x, sigma = sp.symbols("x sigma", positive=True)
    >>> generator(x**2, [x], [0], [[sigma]])
    sigma**2
    """
    state, drift, cols = _inputs(state, drift, diffusion)
    grad = sp.Matrix([f]).jacobian(state)
    hess = sp.hessian(f, state)
    return (grad * drift)[0, 0] + (cols.T * hess * cols).trace() / 2


def ito_lemma(f: sp.Expr, state, drift, diffusion) -> tuple[sp.Expr, sp.Matrix]:
    r"""Ito's formula :math:`df = \mathcal{L}f\,dt + \sum_k (\nabla f\cdot\sigma_k)\,dW_k`.

    Returns
    -------
    drift : sympy.Expr
        :math:`\mathcal{L} f` (Ito).
    diffusion : sympy.Matrix
        ``1 x K`` row, one entry per (flattened) noise index.

    Examples
    --------
    >>> x, y = sp.symbols("x y", real=True)
    >>> drift, diffusion = ito_lemma(x**2 + y**2, [x, y], [-x / 2, -y / 2], [[-y], [x]])
    >>> sp.simplify(drift), sp.simplify(diffusion)
    (0, Matrix([[0]]))
    """
    state, _, cols = _inputs(state, drift, diffusion)
    grad = sp.Matrix([f]).jacobian(state)
    return generator(f, state, drift, diffusion), grad * cols


def ito_lemma_1d(f: sp.Expr, x: sp.Symbol, drift: sp.Expr, diffusion: sp.Expr):
    r"""Scalar Ito's formula: :math:`df(x) = (f' m + \tfrac12 f'' s^2)\,dt + f' s\,dB`.

    Examples
    --------
    >>> x = sp.Symbol("x", positive=True)
    >>> ito_lemma_1d(sp.log(x), x, x, x)
    (1/2, 1)
    """
    drift_f, row = ito_lemma(f, [x], [drift], [[diffusion]])
    return sp.simplify(drift_f), sp.simplify(row[0, 0])
