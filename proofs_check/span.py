r"""Exact linear algebra in the span of the tokens, with the dimension ``d`` symbolic.

Every quantity of the Transformer SDE is built from the tokens :math:`X_1, \dots, X_n`
and the identity: attention vectors are combinations :math:`A_i = \sum_j w_{ij} X_j`,
projections are :math:`P_i = I - X_i X_i^\top`. So vectors are stored as coefficient
columns :math:`c` (meaning :math:`X c`, with :math:`X = [X_1 \dots X_n]` a ``d x n``
matrix) and matrices as pairs :math:`(c_0, C)` meaning :math:`c_0 I + X C X^\top`.
Inner products only need the Gram matrix :math:`G = X^\top X`, and the one place where
``d`` enters is :math:`\operatorname{tr} I = d`. This lets the derivations hold for every
dimension at once, instead of one explicit ``d`` at a time.

Examples
--------
>>> import sympy as sp
>>> rho = sp.Symbol("rho", real=True)
>>> d = sp.Symbol("d", integer=True, positive=True)
>>> span = TokenSpan(sp.Matrix([[1, rho], [rho, 1]]), d)
>>> x1, x2 = span.tokens()
>>> p1, p2 = span.projection(x1), span.projection(x2)
>>> sp.expand((p1 @ p2).trace())
d + rho**2 - 2
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp


@dataclass(frozen=True)
class TokenSpan:
    r"""The span of ``n`` tokens in :math:`\mathbb{R}^d`, known through its Gram matrix.

    Parameters
    ----------
    gram : sympy.Matrix
        ``n x n`` Gram matrix :math:`G_{ij} = \langle X_i, X_j \rangle`.
    dim : sympy.Expr
        The ambient dimension ``d`` (usually a positive integer symbol).

    Examples
    --------
    >>> import sympy as sp
    >>> span = TokenSpan(sp.eye(2), sp.Symbol("d", positive=True, integer=True))
    >>> x1, x2 = span.tokens()
    >>> (x1 + x2).dot(x1 + x2)
    2
    """

    gram: sp.Matrix
    dim: sp.Expr

    @property
    def n(self) -> int:
        """Number of tokens."""
        return self.gram.shape[0]

    def vector(self, coeffs) -> SpanVector:
        """The vector :math:`\\sum_j c_j X_j`."""
        return SpanVector(self, sp.Matrix(coeffs).reshape(self.n, 1))

    def tokens(self) -> list[SpanVector]:
        """The tokens :math:`X_1, \\dots, X_n` themselves."""
        return [self.vector(sp.eye(self.n)[:, j]) for j in range(self.n)]

    def identity(self) -> SpanMatrix:
        """The ``d x d`` identity."""
        return SpanMatrix(self, sp.Integer(1), sp.zeros(self.n, self.n))

    def outer(self, u: SpanVector, v: SpanVector) -> SpanMatrix:
        r"""The rank-one matrix :math:`u v^\top`."""
        return SpanMatrix(self, sp.Integer(0), u.coeffs * v.coeffs.T)

    def projection(self, x: SpanVector) -> SpanMatrix:
        r"""The tangent projection :math:`P_x = I - x x^\top` (for a unit ``x``)."""
        return self.identity() - self.outer(x, x)


@dataclass(frozen=True)
class SpanVector:
    """A vector :math:`X c` of the token span (see :class:`TokenSpan`)."""

    space: TokenSpan
    coeffs: sp.Matrix

    def dot(self, other: SpanVector) -> sp.Expr:
        r"""Euclidean inner product :math:`c^\top G c'`."""
        return sp.expand((self.coeffs.T * self.space.gram * other.coeffs)[0, 0])

    def __add__(self, other: SpanVector) -> SpanVector:
        if not isinstance(other, SpanVector):  # e.g. a random vector of proofs_check.engine
            return NotImplemented
        return SpanVector(self.space, self.coeffs + other.coeffs)

    def __sub__(self, other: SpanVector) -> SpanVector:
        return SpanVector(self.space, self.coeffs - other.coeffs)

    def __mul__(self, scalar) -> SpanVector:
        return SpanVector(self.space, self.coeffs * scalar)

    __rmul__ = __mul__

    def __neg__(self) -> SpanVector:
        return self * -1

    def simplify(self) -> SpanVector:
        """Simplify every coefficient."""
        return SpanVector(self.space, self.coeffs.applyfunc(sp.simplify))

    def is_zero(self) -> bool:
        r"""Whether :math:`|X c|^2 = c^\top G c` simplifies to 0."""
        return sp.simplify(self.dot(self)) == 0

    def residual(self) -> sp.Matrix:
        r"""The coefficients :math:`c`, simplified: the zero column iff :math:`X c = 0`.

        (For linearly independent tokens, e.g. a generic symbolic Gram matrix.)

        Returns
        -------
        sympy.Matrix
            ``n x 1``.
        """
        return self.coeffs.applyfunc(sp.simplify)


@dataclass(frozen=True)
class SpanMatrix:
    r"""A ``d x d`` matrix :math:`c_0 I + X C X^\top` (see :class:`TokenSpan`)."""

    space: TokenSpan
    scalar: sp.Expr
    coeffs: sp.Matrix

    def __add__(self, other: SpanMatrix) -> SpanMatrix:
        return SpanMatrix(self.space, self.scalar + other.scalar, self.coeffs + other.coeffs)

    def __sub__(self, other: SpanMatrix) -> SpanMatrix:
        return self + other * -1

    def __mul__(self, scalar) -> SpanMatrix:
        return SpanMatrix(self.space, self.scalar * scalar, self.coeffs * scalar)

    __rmul__ = __mul__

    def __matmul__(self, other):
        g = self.space.gram
        if isinstance(other, SpanVector):
            return SpanVector(
                self.space, self.scalar * other.coeffs + self.coeffs * g * other.coeffs
            )
        return SpanMatrix(
            self.space,
            self.scalar * other.scalar,
            self.scalar * other.coeffs
            + other.scalar * self.coeffs
            + self.coeffs * g * other.coeffs,
        )

    @property
    def T(self) -> SpanMatrix:
        """Transpose."""
        return SpanMatrix(self.space, self.scalar, self.coeffs.T)

    def trace(self) -> sp.Expr:
        r""":math:`c_0 d + \operatorname{tr}(C G)`."""
        return sp.expand(self.scalar * self.space.dim + (self.coeffs * self.space.gram).trace())

    def quadratic(self, u: SpanVector, v: SpanVector) -> sp.Expr:
        r""":math:`u^\top M v`."""
        return u.dot(self @ v)

    def residual(self) -> list:
        r"""The parts :math:`c_0` and :math:`G C G`, simplified: all zero iff the matrix is.

        (:math:`X C X^\top = 0` iff :math:`G C G = 0` for linearly independent tokens.)

        Returns
        -------
        list
            ``[c_0, G C G]`` (a scalar and an ``n x n`` matrix).
        """
        g = self.space.gram
        return [sp.simplify(self.scalar), (g * self.coeffs * g).applyfunc(sp.simplify)]

    def is_zero(self) -> bool:
        r"""Whether the matrix vanishes (:math:`c_0 = 0` and :math:`G C G = 0`).

        :math:`X C X^\top = 0` is tested through :math:`X^\top (X C X^\top) X = G C G`,
        which is equivalent when the tokens are linearly independent (generic Gram).
        """
        g = self.space.gram
        residual = (g * self.coeffs * g).applyfunc(sp.simplify)
        return sp.simplify(self.scalar) == 0 and residual == sp.zeros(self.space.n, self.space.n)
