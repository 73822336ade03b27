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


def _columns(diffusion, n_state: int) -> sp.Matrix:
    """Diffusion as an ``N x K`` matrix whose columns are the noise directions."""
    arr = sp.Array(diffusion)
    if arr.shape[0] != n_state:
        raise ValueError(f"diffusion has leading axis {arr.shape[0]}, state has {n_state}")
    k = 1
    for size in arr.shape[1:]:
        k *= size
    return sp.Matrix(arr.reshape(n_state, k).tolist())


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
    cols = _columns(diffusion, len(state))
    jac_cols = [cols[:, k].jacobian(list(state)) * cols[:, k] for k in range(cols.shape[1])]
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
    return sp.Matrix(drift) - stratonovich_correction(state, diffusion)


def stratonovich_to_ito(state, drift, diffusion) -> sp.Matrix:
    r"""Ito drift of the SDE with Stratonovich drift ``drift``.

    :math:`b + \tfrac12\sum_k (D\sigma_k)\sigma_k`.

    Examples
    --------
    >>> x, sigma = sp.symbols("x sigma", positive=True)
    >>> stratonovich_to_ito([x], [0], [[sigma * x]])
    Matrix([[sigma**2*x/2]])
    """
    return sp.Matrix(drift) + stratonovich_correction(state, diffusion)


def generator(f: sp.Expr, state, drift, diffusion) -> sp.Expr:
    r"""The generator of the SDE with Ito drift ``drift``, applied to ``f``.

    :math:`\mathcal{L}f = \nabla f\cdot b + \tfrac12\operatorname{tr}(\sigma\sigma^\top\nabla^2 f)`

    Examples
    --------
    >>> x, sigma = sp.symbols("x sigma", positive=True)
    >>> generator(x**2, [x], [0], [[sigma]])
    sigma**2
    """
    cols = _columns(diffusion, len(state))
    grad = sp.Matrix([f]).jacobian(list(state))
    hess = sp.hessian(f, list(state))
    return (grad * sp.Matrix(drift))[0, 0] + (cols.T * hess * cols).trace() / 2


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
    cols = _columns(diffusion, len(state))
    grad = sp.Matrix([f]).jacobian(list(state))
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
