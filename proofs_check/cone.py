r"""Constant weights: the tokens' cone only shrinks, so a tight cluster stays one.

With the value matrices :math:`V_k = I` and no noise
(:class:`spheresde.transformer.ConstantWeights`) one layer is

.. math::

    Y_i = X_i + h \sum_j w_{ij} X_j, \qquad X_i' = Y_i / |Y_i|,

with softmax weights :math:`w_{ij} > 0` and :math:`h = 1/\sqrt L > 0`: every new token is a
combination of the old ones with non-negative coefficients :math:`\delta_{ij} + h w_{ij}`
(:func:`layer_coefficients`), so the convex cone the tokens span can only shrink, whatever
:math:`\beta`, :math:`h` or the number of layers.

**Lemma.** If every :math:`\rho_{ij} = \langle X_i, X_j\rangle \ge c \ge 0` for unit tokens,
then any two non-zero points :math:`u = \sum_i a_i X_i`, :math:`v = \sum_j b_j X_j`
(:math:`a, b \ge 0`) of their cone have :math:`\cos(u, v) \ge c`. Two identities
(:func:`cone_identity_residuals`),

.. math::

    \langle u, v\rangle - c\,\textstyle\sum_i a_i \sum_j b_j
        = \sum_{i,j} a_i b_j (\rho_{ij} - c), \qquad
    \big(\textstyle\sum_i a_i\big)^2 - |u|^2 = \sum_{i \ne j} a_i a_j (1 - \rho_{ij}),

have non-negative right-hand sides (:func:`cone_signs`; :math:`\rho_{ii} = 1 \ge c`), so
:math:`\langle u, v\rangle \ge c \sum a \sum b \ge c\,|u|\,|v|`.

**Consequence.** :math:`\min_{i<j}\rho_{ij}` never decreases along the noiseless network, and
a configuration with every :math:`1 - \rho_{ij} < \mathrm{tol}` keeps that at every later
layer: it is classified single at the horizon with certainty (no probability to bound). The
numerics (:func:`spheresde.transformer._absorption.absorbing_tokens`) absorb at
:math:`\max_{i<j}(1 - \rho_{ij}) < \mathrm{tol}/2`, a margin of :math:`\mathrm{tol}/2`
against rounding, which the contraction of the cluster keeps far smaller.

The lemma needs no noise: with noise the update is :math:`(I + hW)X + sG\,(WX)` and the
random :math:`G` takes the tokens out of their cone, which is why the noisy networks need
the probabilistic certificate of :mod:`proofs_check.cluster`.
"""

from __future__ import annotations

import itertools

import sympy as sp


def _tokens(n: int, dim: int) -> list[sp.Matrix]:
    return [sp.Matrix(sp.symbols(f"x{i}_0:{dim}", real=True)) for i in range(n)]


def layer_coefficients(n: int = 3) -> sp.Matrix:
    r"""The coefficients :math:`M_{ij}` of :math:`Y_i = \sum_j M_{ij} X_j` for one noiseless
    layer with :math:`V = I`: the layer's update :math:`X_i + h\,V A_i` with softmax attention
    :math:`A_i = \sum_j w_{ij} X_j` on a generic Gram matrix, read off as the coefficients of
    the symbols :math:`X_j`.

    Examples
    --------
    >>> m = layer_coefficients(2)
    >>> all(entry.is_positive for entry in m)
    True
    """
    h, beta = sp.symbols("h beta", positive=True)
    gram = {(i, j): sp.Symbol(f"rho_{min(i, j)}{max(i, j)}", real=True) if i != j else 1
            for i in range(n) for j in range(n)}
    xs = sp.symbols(f"X0:{n}", commutative=True)
    rows = []
    for i in range(n):
        logits = [sp.exp(beta * gram[i, j]) for j in range(n)]
        attention = sum(w * x for w, x in zip(logits, xs, strict=True)) / sum(logits)
        update = sp.expand(xs[i] + h * attention)  # V = I: the value step is the attention
        rows.append([sp.simplify(update.coeff(x)) for x in xs])
    return sp.Matrix(rows)


def cone_identity_residuals(n: int = 3, dim: int = 3) -> dict[str, sp.Expr]:
    r"""Residuals of the lemma's two identities for ``n`` explicit vectors in
    :math:`\mathbb R^{\mathrm{dim}}` (any vectors; unit length is used only by the signs)."""
    xs = _tokens(n, dim)
    a = sp.symbols(f"a0:{n}", nonnegative=True)
    b = sp.symbols(f"b0:{n}", nonnegative=True)
    c = sp.Symbol("c", nonnegative=True)
    u = sum((ai * x for ai, x in zip(a, xs, strict=True)), sp.zeros(dim, 1))
    v = sum((bj * x for bj, x in zip(b, xs, strict=True)), sp.zeros(dim, 1))
    rho = {(i, j): xs[i].dot(xs[j]) for i in range(n) for j in range(n)}
    first = (u.dot(v) - c * sum(a) * sum(b)
             - sum(a[i] * b[j] * (rho[i, j] - c) for i in range(n) for j in range(n)))
    # (sum a)^2 - |u|^2 minus the pairs' sum leaves sum_i a_i^2 (1 - |X_i|^2): zero on the sphere
    second = (sum(a) ** 2 - u.dot(u)
              - sum(a[i] * a[j] * (1 - rho[i, j]) for i in range(n) for j in range(n) if i != j)
              - sum(a[i] ** 2 * (1 - rho[i, i]) for i in range(n)))
    return {f"<u,v> - c sum a sum b, n={n}, d={dim}": sp.expand(first),
            f"(sum a)^2 - |u|^2, n={n}, d={dim}": sp.expand(second)}


def cone_signs(n: int = 3) -> dict[str, bool]:
    r"""Sign checks of the lemma: each term :math:`a_i b_j (\rho_{ij} - c)` and
    :math:`a_i a_j (1 - \rho_{ij})` non-negative where :math:`c \le \rho_{ij} \le 1`,
    written :math:`\rho_{ij} = c + t_{ij} = 1 - s_{ij}` with :math:`t, s \ge 0`, and the
    layer's coefficients :func:`layer_coefficients` non-negative."""
    a = sp.symbols(f"a0:{n}", nonnegative=True)
    b = sp.symbols(f"b0:{n}", nonnegative=True)
    t = sp.symbols(f"t0:{n * n}", nonnegative=True)
    s = sp.symbols(f"s0:{n * n}", nonnegative=True)
    c = sp.Symbol("c", nonnegative=True)
    above = sum(a[i] * b[j] * (c + t[i * n + j] - c) for i, j in itertools.product(range(n),
                                                                                  repeat=2))
    below = sum(a[i] * a[j] * (1 - (1 - s[i * n + j])) for i in range(n) for j in range(n)
                if i != j)
    return {
        f"sum a_i b_j (rho_ij - c) >= 0, n={n}": bool(sp.expand(above).is_nonnegative),
        f"sum a_i a_j (1 - rho_ij) >= 0, n={n}": bool(sp.expand(below).is_nonnegative),
        f"layer coefficients delta_ij + h w_ij > 0, n={n}": all(
            bool(entry.is_positive) for entry in layer_coefficients(n)),
    }


__all__ = ["cone_identity_residuals", "cone_signs", "layer_coefficients"]
