r"""The Stratonovich form of the limit SDE, in explicit coordinates of :math:`(\mathbb{R}^d)^n`.

The Ito SDE of Theorem 1 has diffusion columns indexed by the entries :math:`(l, m)` of the
matrix Brownian motion: :math:`\sigma^{(lm)}_i = \varepsilon (A_i)_m P_i e_l`. Because the
noise is shared, the Stratonovich correction :math:`\tfrac12\sum_{lm}(D\sigma^{(lm)})
\sigma^{(lm)}` differentiates :math:`\sigma_i` with respect to **every** token (through
the attention :math:`A_i`). Carried out by hand, it gives the closed form

.. math::

    b^{S}_i = \mu P_i A_i - \frac{\varepsilon^2}{2}\, P_i \sum_j P_j\,
              \Big(\frac{\partial A_i}{\partial X_j}\Big)^{\!\top} A_j ,

(the projection derivative contributes exactly :math:`-\varepsilon^2\frac{d-1}{2}|A_i|^2 X_i`,
cancelling the Ito drift), which is tangent to the sphere. :func:`check_stratonovich`
derives :math:`b^S` with the general tool :func:`proofs_check.ito.ito_to_stratonovich`
on explicit coordinates and compares.
"""

from __future__ import annotations

import itertools

import sympy as sp

from .ito import ito_to_stratonovich
from .limit import d, eps, mu
from .two_token import beta


def token_coordinates(dim: int, n: int) -> list[sp.Matrix]:
    """Coordinate symbols ``x_{i}_{k}`` of ``n`` tokens in ``R^dim`` (columns)."""
    return [sp.Matrix([sp.Symbol(f"x_{i}_{k}", real=True) for k in range(dim)]) for i in range(n)]


def softmax_attention_coordinates(tokens: list[sp.Matrix]) -> list[sp.Matrix]:
    r""":math:`A_i = \sum_j e^{\beta\langle X_i, X_j\rangle} X_j / \sum_j e^{\beta\langle X_i,
    X_j\rangle}` in coordinates (``Q = K = Id``)."""
    out = []
    for xi in tokens:
        logits = [sp.exp(beta * (xi.T * xj)[0]) for xj in tokens]
        total = sum(logits)
        out.append(
            sum((w * xj for w, xj in zip(logits, tokens, strict=True)), sp.zeros(*xi.shape)) / total
        )
    return out


def affine_attention_coordinates(tokens: list[sp.Matrix]) -> list[sp.Matrix]:
    r"""A generic affine attention :math:`A_i = c_i + \sum_j M_{ij} X_j` with free symbols.

    The Stratonovich correction only involves :math:`A` and its first derivatives at the
    point, and a generic affine map has arbitrary values and first derivatives there; so an
    identity that holds for it holds for every smooth attention, softmax included.
    """
    dim = tokens[0].shape[0]
    out = []
    for i in range(len(tokens)):
        acc = sp.Matrix([sp.Symbol(f"c_{i}_{k}", real=True) for k in range(dim)])
        for j, xj in enumerate(tokens):
            m = sp.Matrix(
                dim, dim, lambda k, ell, i=i, j=j: sp.Symbol(f"M_{i}{j}_{k}{ell}", real=True)
            )
            acc += m * xj
        out.append(acc)
    return out


def ito_coefficients(tokens, attention):
    r"""Ito drift (``n*d`` vector) and diffusion (``(n*d, d, d)`` array) of Theorem 1.

    Returns
    -------
    drift : sympy.Matrix
    diffusion : sympy.Array
        ``diffusion[(i, k), l, m] = eps (P_i)_{kl} (A_i)_m``.
    """
    dim = tokens[0].shape[0]
    drift, rows = [], []
    for xi, ai in zip(tokens, attention, strict=True):
        proj = sp.eye(dim) - xi * xi.T
        drift.extend(-(eps**2) * sp.Rational(dim - 1, 2) * (ai.T * ai)[0] * xi + mu * proj * ai)
        for k in range(dim):
            rows.append([[eps * proj[k, ell] * ai[m] for m in range(dim)] for ell in range(dim)])
    return sp.Matrix(drift), sp.Array(rows)


def closed_form_stratonovich(tokens, attention) -> sp.Matrix:
    r"""The closed form :math:`b^S_i = \mu P_i A_i - \tfrac{\varepsilon^2}{2} P_i \sum_j P_j
    J_{ij}^\top A_j`, :math:`J_{ij} = \partial A_i/\partial X_j`."""
    dim = tokens[0].shape[0]
    out = []
    for xi, ai in zip(tokens, attention, strict=True):
        pi = sp.eye(dim) - xi * xi.T
        acc = sp.zeros(dim, 1)
        for xj, aj in zip(tokens, attention, strict=True):
            pj = sp.eye(dim) - xj * xj.T
            acc += pj * ai.jacobian(list(xj)).T * aj
        out.extend(mu * pi * ai - eps**2 / 2 * pi * acc)
    return sp.Matrix(out)


def _zero_on_spheres(expr: sp.Expr, tokens) -> bool:
    """Whether a rational expression in coordinates and exponentials vanishes on the spheres.

    Exponentials are frozen as symbols (parameters of the polynomial identity); the
    numerator, taken in a sparse rational-function field (far faster than ``together`` and
    ``expand``), is reduced modulo :math:`|X_i|^2 - 1`.
    """
    from sympy.polys.fields import field

    exps = sorted(expr.atoms(sp.exp), key=sp.default_sort_key)
    frozen = {e: sp.Symbol(f"E{k}", positive=True) for k, e in enumerate(exps)}
    expr = expr.xreplace(frozen)
    coords = [c for x in tokens for c in x]
    others = sorted(expr.free_symbols - set(coords), key=sp.default_sort_key)
    fracs = field(coords + others, sp.QQ)[0]
    try:  # polynomial (e.g. affine attention): the ring skips the gcds of the field
        numer = fracs.ring.from_expr(expr)
    except ValueError:
        numer = fracs.from_expr(expr).numer
    relations = [fracs.ring.from_expr((x.T * x)[0] - 1) for x in tokens]
    return numer == 0 or numer.rem(relations) == 0


def check_stratonovich(dim: int, n: int, attention: str = "affine") -> dict[str, bool]:
    r"""Derive the Stratonovich drift with the general conversion and test it.

    Parameters
    ----------
    dim, n : int
        Dimension and number of tokens (small: the Jacobians are explicit).
    attention : {"affine", "softmax"}
        Generic affine attention (proves the identity for every smooth attention, fast) or
        the softmax attention itself (slower: exponentials).

    Returns
    -------
    dict
        ``"closed_form"``: :math:`b^S` equals :func:`closed_form_stratonovich` on the spheres;
        ``"tangent"``: :math:`\langle X_i, b^S_i\rangle = 0` on the spheres;
        ``"attention_terms_matter"``: dropping :math:`\partial A/\partial X` (treating the
        attention as frozen) gives a different drift (at a random point).

    Examples
    --------
    >>> check_stratonovich(2, 1)
    {'closed_form': True, 'tangent': True, 'attention_terms_matter': True}
    """
    tokens = token_coordinates(dim, n)
    if attention == "affine":
        attention = affine_attention_coordinates(tokens)
    elif attention == "softmax":
        attention = softmax_attention_coordinates(tokens)
    else:
        raise ValueError(f"attention must be 'affine' or 'softmax', got {attention!r}")
    state = [c for x in tokens for c in x]
    drift, diffusion = ito_coefficients(tokens, attention)
    strat = ito_to_stratonovich(state, drift, diffusion)
    stated = closed_form_stratonovich(tokens, attention)
    closed = all(_zero_on_spheres(e, tokens) for e in strat - stated)
    tangent = all(
        _zero_on_spheres((x.T * strat[i * dim : (i + 1) * dim, 0])[0], tokens)
        for i, x in enumerate(tokens)
    )
    # Frozen attention: the naive conversion would leave only mu P_i A_i.
    frozen = sp.Matrix(
        list(
            itertools.chain.from_iterable(
                mu * (sp.eye(dim) - x * x.T) * a for x, a in zip(tokens, attention, strict=True)
            )
        )
    )
    point = _random_sphere_point(dim, n)
    values = {beta: 1, eps: 1, mu: 0}
    values.update(
        {
            v: sp.Rational(k % 5 - 2, 3)
            for k, v in enumerate(
                sorted(strat.free_symbols - set(state) - {beta, eps, mu}, key=sp.default_sort_key)
            )
        }
    )
    values.update(point)
    gap = (strat - frozen).xreplace(values).evalf()
    return {
        "closed_form": closed,
        "tangent": tangent,
        "attention_terms_matter": bool(max(abs(v) for v in gap) > 1e-6) if n > 1 else True,
    }


def _random_sphere_point(dim: int, n: int) -> dict:
    """A fixed pseudo-random rational point on the spheres (for the non-degeneracy check)."""
    import random

    rng = random.Random(1234 + 17 * dim + n)
    out = {}
    for x in token_coordinates(dim, n):
        v = [sp.Rational(rng.randint(-9, 9), 7) for _ in range(dim)]
        norm = sp.sqrt(sum(c**2 for c in v))
        out.update({c: (vi / norm).evalf(30) for c, vi in zip(x, v, strict=True)})
    return out


def check_rho_in_coordinates(dim: int) -> dict[str, bool]:
    r"""Ito's lemma on :math:`\rho = \langle X_1, X_2\rangle` in explicit coordinates.

    Applies the general :func:`proofs_check.ito.ito_lemma` to the coordinate SDE of two
    tokens in :math:`\mathbb{R}^{\text{dim}}` (softmax attention, ``dim^2`` noise columns)
    and compares with the rho-SDE of :func:`proofs_check.two_token.derive_rho_sde`, which was
    derived in the token span: equal at every point of the spheres, so the drift and
    diffusion of :math:`\rho` depend on the tokens only through :math:`\rho` (rotation
    invariance), independently of the span bookkeeping.

    Returns
    -------
    dict
        ``{"drift": bool, "variance": bool}``.

    Examples
    --------
    >>> check_rho_in_coordinates(2)
    {'drift': True, 'variance': True}
    """
    from .ito import ito_lemma
    from .two_token import derive_rho_sde, r, rho

    tokens = token_coordinates(dim, 2)
    attention = softmax_attention_coordinates(tokens)
    state = [c for x in tokens for c in x]
    drift, diffusion = ito_coefficients(tokens, attention)
    inner = (tokens[0].T * tokens[1])[0]
    rho_drift, row = ito_lemma(inner, state, drift, diffusion)
    rho_variance = (row * row.T)[0, 0]
    # On the spheres exp(beta |X_i|^2) = exp(beta); r = exp(beta <X1, X2>) / exp(beta).
    # Both exponentials become symbols first: SymPy would merge exp(a)/exp(b) into exp(a-b).
    e_self, e_cross = sp.symbols("E_self E_cross", positive=True)
    on_sphere = {sp.exp(beta * (x.T * x)[0]): e_self for x in tokens}
    on_sphere[sp.exp(beta * inner)] = e_cross
    sde = derive_rho_sde()
    in_coords = {r: e_cross / e_self, rho: inner, d: dim}
    return {
        "drift": _zero_on_spheres(
            rho_drift.xreplace(on_sphere) - sde.drift.xreplace(in_coords), tokens
        ),
        "variance": _zero_on_spheres(
            rho_variance.xreplace(on_sphere) - sde.variance.xreplace(in_coords), tokens
        ),
    }
