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

import sympy as sp

from .ito import ito_to_stratonovich
from .symbols import beta, d, eps, mu, r, rho


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


def on_spheres(expr: sp.Expr, tokens) -> sp.Expr:
    r"""The residual ``expr`` reduced on the spheres: 0 iff ``expr`` vanishes there.

    Exponentials are frozen as symbols (parameters of the polynomial identity); the
    numerator, taken in a sparse rational-function field (far faster than ``together`` and
    ``expand``), is reduced modulo :math:`|X_i|^2 - 1`. These relations are a Groebner basis
    (their leading monomials are coprime), so the remainder is a normal form: it is 0
    exactly when the numerator vanishes on the spheres.

    Parameters
    ----------
    expr : sympy.Expr
        A rational expression in the coordinates (and exponentials of them).
    tokens : list of sympy.Matrix
        The token coordinate columns of :func:`token_coordinates`.

    Returns
    -------
    sympy.Expr
        The reduced numerator (exponentials restored), ``0`` when ``expr`` vanishes on the
        spheres.

    Examples
    --------
    >>> (x,) = token_coordinates(2, 1)
    >>> on_spheres(x[0] ** 2 + x[1] ** 2 - 1, [x]), on_spheres(x[0] ** 2 + x[1] ** 2, [x])
    (0, 1)
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
    if not numer:
        return sp.Integer(0)
    relations = [fracs.ring.from_expr((x.T * x)[0] - 1) for x in tokens]
    thawed = {v: k for k, v in frozen.items()}
    return numer.rem(relations).as_expr().xreplace(thawed)


def _zero_on_spheres(expr: sp.Expr, tokens) -> bool:
    """Whether :func:`on_spheres` reduces ``expr`` to 0."""
    return on_spheres(expr, tokens) == 0


def frozen_attention_stratonovich(tokens, attention) -> sp.Matrix:
    r"""The Stratonovich drift obtained when the attention is held constant.

    The general conversion :func:`proofs_check.ito.ito_to_stratonovich` is run with every
    :math:`A_i` replaced by fresh constants, which are substituted back afterwards: the
    correction then differentiates only the projections :math:`P_i`, never the attention
    (the "attention-derivative terms" :math:`\partial A_i/\partial X_j` are dropped).

    Parameters
    ----------
    tokens, attention : list of sympy.Matrix
        Token coordinates and attention vectors (functions of the coordinates).

    Returns
    -------
    sympy.Matrix
        ``n*d x 1``; on the spheres it equals :math:`\mu P_i A_i`.
    """
    dim = tokens[0].shape[0]
    constants = [
        sp.Matrix([sp.Symbol(f"frozen_{i}_{k}", real=True) for k in range(dim)])
        for i in range(len(tokens))
    ]
    state = [c for x in tokens for c in x]
    drift, _ = ito_coefficients(tokens, attention)
    _, frozen_diffusion = ito_coefficients(tokens, constants)
    back = {
        c: v for cs, a in zip(constants, attention, strict=True) for c, v in zip(cs, a, strict=True)
    }
    return ito_to_stratonovich(state, drift, frozen_diffusion).xreplace(back)


def _attention(tokens, attention: str) -> list[sp.Matrix]:
    if attention == "affine":
        return affine_attention_coordinates(tokens)
    if attention == "softmax":
        return softmax_attention_coordinates(tokens)
    raise ValueError(f"attention must be 'affine' or 'softmax', got {attention!r}")


def stratonovich_residuals(dim: int, n: int, attention: str = "affine") -> dict[str, sp.Matrix]:
    r"""Derive the Stratonovich drift with the general conversion: the residuals.

    Parameters
    ----------
    dim, n : int
        Dimension and number of tokens (small: the Jacobians are explicit).
    attention : {"affine", "softmax"}
        Generic affine attention (proves the identities for every smooth attention, fast) or
        the softmax attention itself (slower: exponentials). For ``n = 1`` the softmax
        attention of the single token is the token itself, :math:`A_1 = X_1`.

    Returns
    -------
    dict of sympy.Matrix
        Each reduced on the spheres with :func:`on_spheres`:

        - ``"closed_form"`` (``n*d x 1``): derived :math:`b^S` - :func:`closed_form_stratonovich`,
          zero when the closed form holds;
        - ``"tangent"`` (``n x 1``): :math:`\langle X_i, b^S_i\rangle`, zero when tangent;
        - ``"attention_terms"`` (``d x 1``, the first token: one non-zero entry is enough to
          show that they matter, and for ``n = 1`` it is every token): derived
          :math:`b^S` - the drift of :func:`frozen_attention_stratonovich`, i.e. the
          attention-derivative terms
          :math:`-\tfrac{\varepsilon^2}{2} P_i\sum_j P_j J_{ij}^\top A_j`. Non-zero when they
          matter (several tokens, or a generic attention); zero for one token with
          :math:`A_1 = X_1` (then :math:`J = I` and :math:`P_1 X_1 = 0`);
        - ``"attention_terms_at_point"`` (``n*d x 1``): the same difference evaluated
          exactly at a rational point of the spheres, with rational parameters (a numerical
          spot check, second witness to ``"attention_terms"``).

    Examples
    --------
    >>> res = stratonovich_residuals(2, 1, attention="softmax")
    >>> res["closed_form"].T, res["attention_terms"].T
    (Matrix([[0, 0]]), Matrix([[0, 0]]))
    """
    tokens = token_coordinates(dim, n)
    attention = _attention(tokens, attention)
    state = [c for x in tokens for c in x]
    drift, diffusion = ito_coefficients(tokens, attention)
    strat = ito_to_stratonovich(state, drift, diffusion)
    stated = closed_form_stratonovich(tokens, attention)
    frozen = frozen_attention_stratonovich(tokens, attention)
    gap = strat - frozen
    values = {beta: 1, eps: 1, mu: 0}
    params = sorted(strat.free_symbols - set(state) - {beta, eps, mu}, key=sp.default_sort_key)
    values.update({v: sp.Rational(k % 5 - 2, 3) for k, v in enumerate(params)})
    values.update(_random_sphere_point(dim, n))
    return {
        "closed_form": (strat - stated).applyfunc(lambda e: on_spheres(e, tokens)),
        "tangent": sp.Matrix(
            [on_spheres((x.T * strat[i * dim : (i + 1) * dim, 0])[0], tokens)
             for i, x in enumerate(tokens)]
        ),
        "attention_terms": gap[:dim, 0].applyfunc(lambda e: on_spheres(e, tokens)),
        "attention_terms_at_point": gap.xreplace(values).applyfunc(sp.simplify),
    }


def check_stratonovich(dim: int, n: int, attention: str = "affine") -> dict[str, bool]:
    r"""Derive the Stratonovich drift with the general conversion and test it.

    Parameters
    ----------
    dim, n : int
        Dimension and number of tokens.
    attention : {"affine", "softmax"}
        See :func:`stratonovich_residuals`.

    Returns
    -------
    dict
        ``"closed_form"``: :math:`b^S` equals :func:`closed_form_stratonovich` on the spheres;
        ``"tangent"``: :math:`\langle X_i, b^S_i\rangle = 0` on the spheres;
        ``"attention_terms_matter"``: dropping :math:`\partial A/\partial X` (treating the
        attention as frozen) gives a different drift, computed symbolically on the spheres
        for every ``n`` (False for one token with softmax attention, :math:`A_1 = X_1`);
        ``"witness_agrees"``: the exact value at a rational point of the spheres agrees
        (zero when the symbolic difference is zero; non-zero, at this point, otherwise).

    Examples
    --------
    >>> check_stratonovich(2, 1)
    {'closed_form': True, 'tangent': True, 'attention_terms_matter': True, 'witness_agrees': True}
    >>> check_stratonovich(2, 1, attention="softmax")["attention_terms_matter"]
    False
    """
    res = stratonovich_residuals(dim, n, attention)
    matter = not res["attention_terms"].is_zero_matrix
    at_point = not res["attention_terms_at_point"].is_zero_matrix
    return {
        "closed_form": res["closed_form"].is_zero_matrix is True,
        "tangent": res["tangent"].is_zero_matrix is True,
        "attention_terms_matter": matter,
        "witness_agrees": matter == at_point,
    }


def _random_sphere_point(dim: int, n: int) -> dict:
    """A fixed pseudo-random **rational** point on the spheres (inverse stereographic
    projection of a rational point of ``R^(dim-1)``), so spot values are exact."""
    import random

    rng = random.Random(1234 + 17 * dim + n)
    out = {}
    for x in token_coordinates(dim, n):
        u = [sp.Rational(rng.randint(-9, 9), 7) for _ in range(dim - 1)]
        norm2 = sum(c**2 for c in u)
        v = [2 * c / (norm2 + 1) for c in u] + [(norm2 - 1) / (norm2 + 1)]
        out.update(dict(zip(x, v, strict=True)))
    return out


def rho_in_coordinates_residuals(dim: int) -> dict[str, sp.Expr]:
    r"""Ito's lemma on :math:`\rho = \langle X_1, X_2\rangle` in explicit coordinates.

    Applies the general :func:`proofs_check.ito.ito_lemma` to the coordinate SDE of two
    tokens in :math:`\mathbb{R}^{\text{dim}}` (softmax attention, ``dim^2`` noise columns)
    and compares with the rho-SDE of :func:`proofs_check.two_token.derive_rho_sde`, which was
    derived in the token span: equal at every point of the spheres, so the drift and
    diffusion of :math:`\rho` depend on the tokens only through :math:`\rho` (rotation
    invariance), independently of the span bookkeeping.

    Parameters
    ----------
    dim : int
        The dimension.

    Returns
    -------
    dict of sympy.Expr
        ``{"drift", "variance"}``: coordinates - span, reduced on the spheres by
        :func:`on_spheres` (0 when they agree).

    Examples
    --------
    >>> rho_in_coordinates_residuals(2)
    {'drift': 0, 'variance': 0}
    """
    from .ito import ito_lemma
    from .two_token import derive_rho_sde

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
        "drift": on_spheres(rho_drift.xreplace(on_sphere) - sde.drift.xreplace(in_coords), tokens),
        "variance": on_spheres(
            rho_variance.xreplace(on_sphere) - sde.variance.xreplace(in_coords), tokens
        ),
    }


def check_rho_in_coordinates(dim: int) -> dict[str, bool]:
    r"""Whether the residuals of :func:`rho_in_coordinates_residuals` vanish.

    Parameters
    ----------
    dim : int
        The dimension.

    Returns
    -------
    dict
        ``{"drift": bool, "variance": bool}``.
    """
    return {key: value == 0 for key, value in rho_in_coordinates_residuals(dim).items()}
