r"""A diffusion-limit engine: the Ito limit of any residual layer with random weights.

A layer moves every token by a random increment and normalizes,

.. math::

    Y_i = X_i + \delta_i, \qquad \delta_i = s\,Z_i + s^2 m_i + O(s^3), \qquad
    X_i' = N(Y_i), \qquad s = L^{-1/2},

where :math:`Z_i` is centred noise (random matrices with a declared law applied to
vectors of the layer, see :class:`GaussianMatrix` and :class:`ReLUMLP`) and :math:`m_i`
the deterministic part. The user writes :math:`\delta_i` as a SymPy map of the tokens
(a function returning :class:`RandomVector` objects, ``s`` explicit); the engine

1. expands :math:`N(X_i + \delta_i)` in ``s`` to second order (:func:`sympy.series` of
   the normalization's radial factor, :func:`proofs_check.limit.normalization_series`);
2. takes the expectations by Isserlis' theorem: at order :math:`h = s^2` only pairs of
   noise terms enter, :math:`E[\xi_a \xi_b^\top] = k(a, b)\,I` with the source's kernel
   :math:`k` (:math:`\langle u, v\rangle` for a Gaussian matrix applied to ``u`` and
   ``v``, the arc-cosine kernel for a ReLU MLP), odd moments vanish;
3. returns the Ito drift :math:`b_i = E[\text{coefficient of } s^2]` and the covariance
   :math:`\Sigma_{ij} = E[F_i F_j^\top]` of the first-order coefficients :math:`F_i`,
   in the token span with ``d`` symbolic (:mod:`proofs_check.span`), with the residuals
   that the limit stays on the normalization's manifold.

Normalizations are small classes with the abstract base :class:`AbstractNormalization`,
named in one registry (:func:`normalization`): :class:`RMSNorm`, ``"rms"``
(:math:`N(y) = y/|y|`, the unit sphere), :class:`LayerNorm`, ``"layer"`` (LayerNorm at
unit scale: :math:`N(y) = Py/|Py|` with :math:`P = I - uu^\top`, :math:`u = \mathbf
1/\sqrt d`; the tokens live on the unit sphere of the hyperplane :math:`u^\perp`, a
sphere of dimension :math:`d-2`), :class:`NoNormalization`, ``"none"`` (:math:`N(y) =
y`). Noise sources likewise (:class:`AbstractNoiseSource`: :class:`GaussianMatrix`,
:class:`ReLUMLP`): a new one is one class with its kernel. The registry of names is one
for the engine and the numerics (:mod:`proofs_check.normalizations`): a numeric
normalization (:class:`spheresde.transformer.AbstractNormalization`) registered there is
the same name here, derived through its ``symbolic()`` counterpart.

:func:`rho_sde` reduces a two-token layer to the SDE of :math:`\rho = \langle X_1,
X_2\rangle`; :func:`lyapunov_at` linearizes it at :math:`\rho = \pm1`.
:func:`spheresde.transformer.to_sphere_sde` turns a limit into a
:class:`spheresde.SphereSDE` (lambdified, nothing retyped).

Examples
--------
The paper's layer, :math:`Y_i = X_i + s V A_i`, :math:`V = \mu s I + \varepsilon G`:

>>> from proofs_check.symbols import beta, eps, mu, s
>>> V = GaussianMatrix("V", std=eps, mean=mu * s)
>>> limit = diffusion_limit(lambda x: [s * (V @ a) for a in softmax(x, beta)], 1)
>>> sp.factor(limit.drift[0].coeffs[0])
-epsilon**2*(d - 1)/2
"""

from __future__ import annotations

import abc
import functools
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import sympy as sp

from . import normalizations as _registry
from .limit import LimitSDE, normalization_series
from .span import SpanMatrix, SpanVector, TokenSpan
from .symbols import d, mu, rho, s


class AbstractNoiseSource(abc.ABC):
    r"""A source of centred noise vectors :math:`\xi` (one :class:`NoiseTerm` each),
    fresh for every layer: all the engine needs of it is the kernel :math:`k` with
    :math:`E[\xi_a \xi_b^\top] = k(a, b)\,I` (Isserlis at order :math:`h`). Two
    different sources are independent."""

    @abc.abstractmethod
    def kernel(self, a: NoiseTerm, b: NoiseTerm) -> sp.Expr:
        r""":math:`k` with :math:`E[\xi_a \xi_b^\top] = k\,I` for two of its terms."""


@dataclass(frozen=True, eq=False)
class GaussianMatrix(AbstractNoiseSource):
    r"""A ``d x d`` random matrix :math:`M = \text{mean}\cdot I + \text{std}\cdot G`,
    :math:`G` with iid :math:`N(0, 1)` entries, drawn afresh for every layer.

    Parameters
    ----------
    name : str
        For printing.
    std : sympy.Expr
        Scale of the Gaussian part.
    mean : sympy.Expr
        Multiple of the identity; may contain ``s`` (the hybrid model's
        :math:`V = (\mu/\sqrt L) I + \varepsilon G` is ``mean = mu * s``).
    shared : bool
        One draw shared by all tokens of a layer (the paper's value matrix), or an
        independent draw per token (``M[i] @ v`` for token ``i``).

    Notes
    -----
    Isserlis: :math:`E[(G u)(G v)^\top] = \langle u, v\rangle I`.
    """

    name: str
    std: sp.Expr = sp.S.One
    mean: sp.Expr = sp.S.Zero
    shared: bool = True

    def __matmul__(self, vector: SpanVector) -> RandomVector:
        if not self.shared:
            raise ValueError(f"{self.name} is drawn per token: write {self.name}[i] @ v for "
                             f"token i")
        return self._apply(vector, None)

    def __getitem__(self, token: int) -> _PerToken:
        if self.shared:
            raise ValueError(f"{self.name} is shared by the tokens: write {self.name} @ v")
        return _PerToken(self, token)

    def _apply(self, vector: SpanVector, owner: int | None) -> RandomVector:
        _check_vector(vector)
        det = ((sp.sympify(self.mean), vector),) if self.mean != 0 else ()
        return RandomVector(det, ((sp.sympify(self.std), NoiseTerm(self, owner, vector)),))

    def kernel(self, a: NoiseTerm, b: NoiseTerm) -> sp.Expr:
        r""":math:`k` with :math:`E[\xi_a \xi_b^\top] = k\,I` for two of its terms."""
        if self.shared or a.owner == b.owner:
            return a.vector.dot(b.vector)
        return sp.Integer(0)


@dataclass(frozen=True)
class _PerToken:
    matrix: GaussianMatrix
    token: int

    def __matmul__(self, vector: SpanVector) -> RandomVector:
        return self.matrix._apply(vector, self.token)


@dataclass(frozen=True, eq=False)
class ReLUMLP(AbstractNoiseSource):
    r"""The noise of a ReLU MLP at initialization, :math:`W_2\,\mathrm{relu}(W_1 x)`.

    :math:`W_1` (``m x d``) with iid :math:`N(0, \sigma_1^2)` entries and :math:`W_2`
    (``d x m``) with iid :math:`N(0, \sigma_2^2/m)` entries, fresh for every layer and
    shared by the tokens. Given :math:`W_1` the output is centred Gaussian with covariance
    :math:`\frac{\sigma_2^2}{m}\langle \mathrm{relu}(W_1x), \mathrm{relu}(W_1y)\rangle I`,
    whose mean over :math:`W_1` is :math:`\gamma^2 |x||y|\,\kappa(\cos\theta)\,I`,
    :math:`\gamma = \sigma_1\sigma_2`, for every width ``m`` (:func:`relu_kernel`).
    Only second moments enter at order ``h``, so the limit holds at any width.

    Parameters
    ----------
    name : str
    scale : sympy.Expr
        :math:`\gamma = \sigma_1 \sigma_2` (only the product enters).
    """

    name: str
    scale: sp.Expr = sp.S.One

    def __call__(self, vector: SpanVector) -> RandomVector:
        _check_vector(vector)
        return RandomVector((), ((sp.sympify(self.scale), NoiseTerm(self, None, vector)),))

    def kernel(self, a: NoiseTerm, b: NoiseTerm) -> sp.Expr:
        r""":math:`|x||y|\,\kappa(\langle x, y\rangle/(|x||y|))`."""
        norms = sp.sqrt(a.vector.dot(a.vector)) * sp.sqrt(b.vector.dot(b.vector))
        return norms * relu_kernel().subs(rho, a.vector.dot(b.vector) / norms)


@dataclass(frozen=True, eq=False)
class NoiseTerm:
    """One centred noise vector :math:`\\xi`: a source applied to ``vector``."""

    source: AbstractNoiseSource
    owner: int | None
    vector: SpanVector


def _kernel(a: NoiseTerm, b: NoiseTerm) -> sp.Expr:
    """Independent sources are uncorrelated; one source's kernel otherwise."""
    return a.source.kernel(a, b) if a.source is b.source else sp.Integer(0)


def _check_vector(vector) -> None:
    if not isinstance(vector, SpanVector):
        raise TypeError(f"random matrices act on span vectors (the tokens and their "
                        f"combinations), got {type(vector).__name__}")


@dataclass(frozen=True)
class RandomVector:
    r"""A random vector :math:`\sum c_k v_k + \sum c'_l \xi_l`: deterministic span vectors
    and centred noise terms, with coefficients that may contain ``s``."""

    det: tuple[tuple[sp.Expr, SpanVector], ...] = ()
    noisy: tuple[tuple[sp.Expr, NoiseTerm], ...] = ()

    def __add__(self, other):
        if isinstance(other, SpanVector):
            other = RandomVector(((sp.Integer(1), other),))
        if not isinstance(other, RandomVector):
            return NotImplemented
        return RandomVector(self.det + other.det, self.noisy + other.noisy)

    __radd__ = __add__

    def __mul__(self, scalar) -> RandomVector:
        scalar = sp.sympify(scalar)
        return RandomVector(tuple((c * scalar, v) for c, v in self.det),
                            tuple((c * scalar, t) for c, t in self.noisy))

    __rmul__ = __mul__


def softmax(tokens: Sequence[SpanVector], beta: sp.Expr) -> list[SpanVector]:
    r"""Softmax attention :math:`A_i = \sum_j \operatorname{softmax}_j(\beta\langle X_i,
    X_j\rangle) X_j` over the tokens (``Q = K = Id``)."""
    out = []
    for x in tokens:
        logits = [sp.exp(beta * x.dot(y)) for y in tokens]
        total = sum(logits)
        out.append(sum((y * (w / total) for y, w in zip(tokens, logits, strict=True)),
                       tokens[0] * 0))
    return out


class AbstractNormalization(abc.ABC):
    r"""A normalization :math:`N` of the layer :math:`X_i' = N(X_i + \delta_i)`.

    :attr:`directions` fixed unit vectors orthogonal to the tokens (LayerNorm's
    :math:`u`) join the span as its last basis vectors; :meth:`projection` is what acts
    on the increments before :meth:`limit` expands :math:`N`.
    """

    #: The name the registry (:func:`normalization`) and the numerics know it by.
    name: ClassVar[str]
    #: The number of fixed unit vectors orthogonal to the tokens.
    directions: ClassVar[int] = 0
    #: Whether the limit lives on a manifold (a sphere) that :meth:`manifold_residuals`
    #: describes.
    manifold: ClassVar[bool] = True

    def span_gram(self, gram: sp.Matrix) -> sp.Matrix:
        """The span's Gram matrix: the tokens', then the identity of the fixed vectors."""
        return sp.diag(gram, *[sp.Integer(1)] * self.directions)

    def fixed(self, span: TokenSpan) -> list[SpanVector]:
        """The fixed unit vectors (the span's last :attr:`directions` vectors)."""
        return span.tokens()[span.n - self.directions:] if self.directions else []

    def projection(self, span: TokenSpan) -> SpanMatrix:
        r""":math:`P = I - \sum_u uu^\top` over :meth:`fixed`, applied to the increments
        before normalizing."""
        left = span.identity()
        for u in self.fixed(span):
            left = left - span.outer(u, u)
        return left

    @abc.abstractmethod
    def limit(self, span: TokenSpan, tokens: list[SpanVector], mean: list[SpanVector],
              first_noise: list, cov: Callable) -> tuple[list[SpanVector], list]:
        r"""The drift :math:`b_i` and the first-order noise :math:`F_i` (lists of
        ``(coefficient, matrix, term)``) from the projected increments: ``mean[i]`` of
        order :math:`s^2`, ``first_noise[i]`` of order :math:`s`, ``cov(a, b)`` the
        covariance of two such lists."""

    def manifold_residuals(self, limit: DiffusionLimit) -> dict[str, list[sp.Expr]]:
        """Ito drift and variance of the constraints of the manifold (none by default)."""
        return {}


class AbstractSphereNormalization(AbstractNormalization):
    r""":math:`N(y) = Py/|Py|`: the unit sphere of the range of :meth:`projection`."""

    def limit(self, span, tokens, mean, first_noise, cov):
        """Expands :math:`|PY_i|^{-1}` to second order (:func:`diffusion_limit`, Notes)."""
        f2 = normalization_series()[1].subs(mu, 1)  # |Y|^{-1} = 1 - s xi + s^2 f2
        sym_xi, sym_q, sym_c = sp.symbols("xi q c", real=True)
        drift, noise = [], []
        for i, x in enumerate(tokens):
            c_ii = cov(first_noise[i], first_noise[i])
            # Isserlis at order 2: E[xi^2] = x^T C x, E[q] = tr C, E[xi] = 0, E[xi Z] = C x.
            moments = {sym_xi**2: c_ii.quadratic(x, x), sym_q: c_ii.trace(), sym_xi: 0}
            e_f2 = sp.Integer(0)
            for monom, coeff in sp.Poly(f2, sym_xi, sym_q).terms():
                key = sym_xi ** monom[0] * sym_q ** monom[1]
                e_f2 += coeff.subs(sym_c, x.dot(mean[i])) * (1 if key == 1 else moments[key])
            # f1 = -xi: E[f1 Z] = -E[xi Z] = -C x
            drift.append(mean[i] - c_ii @ x + x * sp.expand(e_f2))
            # F_i = Z_i - xi_i x = P_i Z_i
            proj = span.projection(x)
            noise.append([(c, proj @ la, t) for c, la, t in first_noise[i]])
        return drift, noise

    def manifold_residuals(self, limit):
        r""":math:`|X_i|^2` (drift :math:`2\langle X_i, b_i\rangle +
        \operatorname{tr}\Sigma_{ii}`, variance :math:`4X_i^\top\Sigma_{ii}X_i`) and, for
        every fixed vector :math:`u`, :math:`\langle u, X_i\rangle` (drift
        :math:`\langle u, b_i\rangle`, variance :math:`u^\top\Sigma_{ii}u`)."""
        out = {}
        fixed = self.fixed(limit.span)
        for i, x in enumerate(limit.tokens):
            b, sigma = limit.drift[i], limit.covariance[i, i]
            out[f"|X_{i}|^2"] = [sp.simplify(2 * x.dot(b) + sigma.trace()),
                                 sp.simplify(4 * sigma.quadratic(x, x))]
            for k, u in enumerate(fixed):
                label = "u" if len(fixed) == 1 else f"u_{k}"
                out[f"<{label}, X_{i}>"] = [sp.simplify(u.dot(b)),
                                            sp.simplify(sigma.quadratic(u, u))]
        return out


@dataclass(frozen=True)
class RMSNorm(AbstractSphereNormalization):
    """:math:`N(y) = y/|y|`, the paper's: the unit sphere."""

    name: ClassVar[str] = "rms"


@dataclass(frozen=True)
class LayerNorm(AbstractSphereNormalization):
    r"""LayerNorm at unit scale, :math:`N(y) = Py/|Py|`, :math:`P = I - uu^\top`,
    :math:`u = \mathbf 1/\sqrt d`: the unit sphere of :math:`u^\perp`."""

    name: ClassVar[str] = "layer"
    directions: ClassVar[int] = 1


@dataclass(frozen=True)
class ProjectedSphere(AbstractSphereNormalization):
    r""":math:`N(y) = Py/|Py|` with :math:`P` removing ``directions`` fixed unit vectors
    orthogonal to the tokens, under any ``name``: the limit of every normalization of that
    form (:func:`projected_sphere`), since the engine needs of the fixed vectors only that
    they are orthonormal and orthogonal to the tokens."""

    name: str
    directions: int


@dataclass(frozen=True)
class NoNormalization(AbstractNormalization):
    """:math:`N(y) = y`: no manifold, the increments' own limit."""

    name: ClassVar[str] = "none"
    manifold: ClassVar[bool] = False

    def limit(self, span, tokens, mean, first_noise, cov):
        """The order-:math:`s^2` mean and the order-:math:`s` noise as they are."""
        return mean, first_noise


#: The engine's own classes by name: the limit of a registered numeric normalization of
#: that name (:func:`projected_sphere`).
_CLASSES: dict[str, AbstractNormalization] = {
    n.name: n for n in (RMSNorm(), LayerNorm(), NoNormalization())}


def projected_sphere(name: str, directions: int) -> AbstractSphereNormalization:
    """The normalization onto the unit sphere orthogonal to ``directions`` fixed unit
    vectors: the registered one of that ``name`` (``"rms"``: 0, ``"layer"``: 1), else a
    :class:`ProjectedSphere`.

    Raises
    ------
    ValueError
        If the registered one of that name removes another number of directions.

    Examples
    --------
    >>> projected_sphere("layer", 1), projected_sphere("mine", 2)
    (LayerNorm(), ProjectedSphere(name='mine', directions=2))
    """
    entry = _registry.registered(name)
    known = entry if isinstance(entry, AbstractNormalization) else _CLASSES.get(name)
    if known is None:
        return ProjectedSphere(name, directions)
    if not isinstance(known, AbstractSphereNormalization) or known.directions != directions:
        raise ValueError(f"{name!r} is {known!r}, not the sphere orthogonal to {directions} "
                         "fixed directions: give the new normalization another name")
    return known


def normalization(norm) -> AbstractNormalization:
    """The normalization ``norm`` names (``"rms"``, ``"layer"``, ``"none"``, or a
    :func:`register_normalization`-ed name), ``norm`` itself, or the symbolic counterpart
    of a numerical one (an object with a ``symbolic()`` method, such as
    :class:`spheresde.transformer.LayerNorm`).

    Examples
    --------
    >>> normalization("layer").directions
    1
    """
    if isinstance(norm, AbstractNormalization):
        return norm
    if callable(getattr(norm, "symbolic", None)):
        return normalization(norm.symbolic())
    entry = _registry.registered(norm) if isinstance(norm, str) else None
    if entry is None:
        raise ValueError(f"normalization must be one of {_registry.names()} or an "
                         f"AbstractNormalization, got {norm!r}")
    return normalization(entry)


_lookup = normalization  # for the functions whose argument of that name hides it


#: The one registration of a normalization, shared with the numerics
#: (:mod:`proofs_check.normalizations`).
register_normalization = _registry.register_normalization
for _norm in _CLASSES.values():
    register_normalization(_norm)


def token_span(n: int, normalization: str | AbstractNormalization = "rms",
               gram: sp.Matrix | None = None) -> tuple[TokenSpan, list[SpanVector]]:
    r"""The span the limit is derived in: ``n`` unit tokens (generic Gram ``g_ij`` unless
    ``gram`` is given) and the normalization's fixed unit vectors orthogonal to them (the
    last basis vectors; for LayerNorm :math:`u = \mathbf 1/\sqrt d`).

    Returns
    -------
    span : TokenSpan
    tokens : list of SpanVector
        The ``n`` tokens (not ``u``).

    Examples
    --------
    >>> span, tokens = token_span(2, "layer")
    >>> span.gram
    Matrix([
    [   1, g_01, 0],
    [g_01,    1, 0],
    [   0,    0, 1]])
    """
    norm = _lookup(normalization)
    if gram is None:
        gram = sp.eye(n)
        for i, j in itertools.combinations(range(n), 2):
            gram[i, j] = gram[j, i] = sp.Symbol(f"g_{i}{j}", real=True)
    span = TokenSpan(sp.Matrix(norm.span_gram(gram)), d)
    return span, span.tokens()[:n]


def ones_direction(span: TokenSpan) -> SpanVector:
    r"""The unit vector :math:`u = \mathbf 1/\sqrt d` of a LayerNorm span (its last vector)."""
    return span.tokens()[-1]


@dataclass(frozen=True)
class DiffusionLimit:
    r"""The Ito limit of a layer, and the first-order noise it comes from.

    Attributes
    ----------
    span : TokenSpan
    tokens : list of SpanVector
    normalization : AbstractNormalization
    sde : LimitSDE
        Ito drift :math:`b_i` and covariance :math:`\Sigma_{ij}` per unit depth-time.
    noise : list of list of (sympy.Expr, SpanMatrix, NoiseTerm)
        ``noise[i]``: the first-order coefficient
        :math:`F_i = \sum c\,M\,\xi` of token ``i`` (:math:`M` the normalization's
        differential: :math:`P_i` for RMS, :math:`P_i P` for LayerNorm); the diffusion
        of the limit replaces every :math:`\xi` by its Brownian increment.
    """

    span: TokenSpan
    tokens: list[SpanVector]
    normalization: AbstractNormalization
    sde: LimitSDE
    noise: list[list[tuple[sp.Expr, SpanMatrix, NoiseTerm]]] = field(repr=False)

    @property
    def drift(self) -> list[SpanVector]:
        """The Ito drift :math:`b_i`."""
        return self.sde.drift

    @property
    def covariance(self) -> dict[tuple[int, int], SpanMatrix]:
        r""":math:`\Sigma_{ij}` with :math:`E[dX_i\,dX_j^\top] = \Sigma_{ij}\,dt`."""
        return self.sde.covariance


def _orders(increment: RandomVector, i: int) -> tuple[list, list]:
    """Split an increment into its order-s noise and order-s^2 deterministic parts."""
    if not isinstance(increment, RandomVector):
        raise TypeError(f"the layer must return one RandomVector per token (the increment "
                        f"Y_i - X_i, e.g. s * (V @ a)), got {type(increment).__name__} for "
                        f"token {i}")
    noise, mean = [], []
    for c, term in increment.noisy:
        p = sp.Poly(sp.expand(c), s)
        if p.coeff_monomial(1) != 0:
            raise ValueError(f"token {i}: noise at order s^0 ({c}); the increment must be "
                             f"of order s = L^(-1/2)")
        if p.coeff_monomial(s) != 0:
            noise.append((p.coeff_monomial(s), term))
        # noise at order s^2 and beyond is centred and enters at order h^(3/2) only
    for c, vec in increment.det:
        p = sp.Poly(sp.expand(c), s)
        for k in (1, s):
            if p.coeff_monomial(k) != 0:
                raise ValueError(f"token {i}: a deterministic term of order below s^2 ({c}) "
                                 f"has no diffusion limit (it would dominate the noise)")
        if p.coeff_monomial(s**2) != 0:
            mean.append((p.coeff_monomial(s**2), vec))
    return noise, mean


def diffusion_limit(layer: Callable[[list[SpanVector]], Sequence[RandomVector]], n: int,
                    normalization: str | AbstractNormalization = "rms",
                    gram: sp.Matrix | None = None) -> DiffusionLimit:
    r"""Derive the Ito limit of the layer :math:`X_i' = N(X_i + \delta_i)`.

    Parameters
    ----------
    layer : callable
        ``layer(tokens)`` returns the increments :math:`\delta_i = Y_i - X_i`, one
        :class:`RandomVector` per token, built from the tokens (:class:`SpanVector`), the
        random sources (:class:`GaussianMatrix`, :class:`ReLUMLP`) and ``s``.
    n : int
        Number of tokens.
    normalization : str or AbstractNormalization
        ``"rms"``, ``"layer"``, ``"none"`` (:func:`normalization`) or an instance.
    gram : sympy.Matrix, optional
        The tokens' Gram matrix (unit diagonal); generic symbols ``g_ij`` by default.

    Returns
    -------
    DiffusionLimit

    Notes
    -----
    With :math:`|X_i| = 1`, :math:`\xi_i = \langle X_i, Z_i\rangle`, :math:`q_i = |Z_i|^2`,
    :math:`c_i = \langle X_i, m_i\rangle`: :math:`|Y_i|^{-1} = 1 + s f_1 + s^2 f_2`, so
    :math:`X_i' - X_i = s (Z_i + f_1 X_i) + s^2 (m_i + f_1 Z_i + f_2 X_i) + O(s^3)`
    (LayerNorm: first :math:`Z_i \to P Z_i`, :math:`m_i \to P m_i`, since :math:`PX_i =
    X_i`). The expectation of every product of two noise vectors is a pair contraction
    :math:`E[\xi_a\xi_b^\top] = k(a, b) I`.
    """
    norm = _lookup(normalization)
    span, tokens = token_span(n, norm, gram)
    increments = list(layer(list(tokens)))
    if len(increments) != n:
        raise ValueError(f"the layer must return one increment per token ({n}), got "
                         f"{len(increments)}")
    identity = span.identity()
    left = norm.projection(span)  # LayerNorm centres first: P = I - u u^T
    first_noise, mean = [], []
    for i, inc in enumerate(increments):
        noise_i, mean_i = _orders(inc, i)
        first_noise.append([(c, left, t) for c, t in noise_i])
        mean.append(sum((left @ v * c for c, v in mean_i), span.vector([0] * span.n)))

    def cov(a, b) -> SpanMatrix:
        """E[Z_a Z_b^T] for two lists of (coefficient, left matrix, term)."""
        out = identity * 0
        for (ca, la, ta), (cb, lb, tb) in itertools.product(a, b):
            k = _kernel(ta, tb)
            if k != 0:
                out = out + (la @ lb.T) * (ca * cb * k)
        return out

    drift, noise = norm.limit(span, tokens, mean, first_noise, cov)
    covariance = {(i, j): cov(noise[i], noise[j]) for i in range(n) for j in range(n)}
    return DiffusionLimit(span, tokens, norm, LimitSDE(drift, covariance), noise)


def manifold_residuals(limit: DiffusionLimit) -> dict[str, list[sp.Expr]]:
    r"""Ito drift and variance of the constraints that define the normalization's manifold.

    RMS and LayerNorm: :math:`|X_i|^2` (drift :math:`2\langle X_i, b_i\rangle +
    \operatorname{tr}\Sigma_{ii}`, variance :math:`4X_i^\top\Sigma_{ii}X_i`); LayerNorm also
    :math:`\langle u, X_i\rangle` (drift :math:`\langle u, b_i\rangle`, variance
    :math:`u^\top\Sigma_{ii}u`) (:meth:`AbstractNormalization.manifold_residuals`). All
    vanish when the limit lives on the manifold.

    Examples
    --------
    >>> from proofs_check.symbols import eps
    >>> V = GaussianMatrix("V", std=eps)
    >>> lim = diffusion_limit(lambda x: [s * (V @ x[0])], 1, "layer")
    >>> manifold_residuals(lim)
    {'|X_0|^2': [0, 0], '<u, X_0>': [0, 0]}
    """
    return limit.normalization.manifold_residuals(limit)


@dataclass(frozen=True)
class TwoTokenSDE:
    r"""Ito SDE :math:`d\rho = m\,dt + s\,dB` of :math:`\rho = \langle X_1, X_2\rangle`,
    in ``rho`` (exponentials of ``beta * rho`` kept as they are)."""

    drift: sp.Expr
    variance: sp.Expr


def rho_sde(layer, normalization: str | AbstractNormalization = "rms") -> TwoTokenSDE:
    r"""Two tokens: Ito's lemma for :math:`\rho` under the derived limit of ``layer``.

    :math:`d\rho = (\langle X_2, b_1\rangle + \langle X_1, b_2\rangle +
    \operatorname{tr}\Sigma_{12})dt + dM`, :math:`d\langle M\rangle = (X_2^\top\Sigma_{11}
    X_2 + 2X_2^\top\Sigma_{12}X_1 + X_1^\top\Sigma_{22}X_1)dt`
    (:func:`proofs_check.two_token.inner_product_sde`). Only inner products of the span
    enter (a 1-D diffusion when the law of the layer is rotation invariant: the result
    has no symbol of the span besides ``rho``).

    Examples
    --------
    :math:`A_i = X_i` is the paper's two-token SDE with self-weight :math:`a = 1`,
    :math:`b = 0` (:mod:`proofs_check.two_token`): drift :math:`-\varepsilon^2\rho(1 -
    \rho^2)`, variance :math:`2\varepsilon^2(1 - \rho^2)^2`.

    >>> from proofs_check.symbols import eps
    >>> V = GaussianMatrix("V", std=eps)
    >>> sde = rho_sde(lambda x: [s * (V @ v) for v in x])  # A_i = X_i
    >>> sp.factor(sde.drift), sp.factor(sde.variance)
    (epsilon**2*rho*(rho - 1)*(rho + 1), 2*epsilon**2*(rho - 1)**2*(rho + 1)**2)
    """
    from .two_token import inner_product_sde

    gram = sp.Matrix([[1, rho], [rho, 1]])
    limit = diffusion_limit(layer, 2, normalization, gram)
    drift, variance = inner_product_sde(limit.span, limit.sde, 0, 1)
    return TwoTokenSDE(canonical(drift), canonical(variance))


def canonical(expr: sp.Expr) -> sp.Expr:
    r"""``expr`` as one cancelled fraction in its exponentials, :math:`\arccos\rho` and
    :math:`\sqrt{1-\rho^2}`: each ``exp(c_1 m_1 + c_2 m_2 + ...)`` (monomials
    :math:`m_k`, rational :math:`c_k`) is written :math:`\prod_k E_{m_k}^{c_k}` with one
    symbol per monomial, the other transcendental atoms are symbols, and the rational
    function is cancelled (far cheaper than :func:`sympy.simplify`). A result 0 proves
    ``expr = 0``; a non-zero one could still hide a relation between the atoms (such as
    :math:`\sqrt{1-\rho^2}^2 = 1 - \rho^2`), so a residual that must vanish is judged
    by it only one way.

    Examples
    --------
    >>> from proofs_check.symbols import beta
    >>> canonical(sp.exp(2 * beta) / (sp.exp(beta) * sp.exp(beta + beta * rho)))
    exp(-beta*rho)
    """
    expr = sp.sympify(expr).rewrite(sp.exp)
    back, forward = {}, {}

    def symbol(atom):
        if atom not in forward:
            forward[atom] = sp.Dummy(f"E{len(forward)}", positive=True)
            back[forward[atom]] = atom
        return forward[atom]

    def exp_atom(arg):
        out = sp.Integer(1)
        for term in sp.Add.make_args(sp.expand(arg)):
            c, m = term.as_coeff_Mul()
            if not c.is_Rational:
                m, c = term, sp.Integer(1)
            out *= symbol(sp.exp(m)) ** c
        return out

    expr = expr.replace(lambda e: isinstance(e, sp.exp), lambda e: exp_atom(e.args[0]))
    expr = expr.replace(lambda e: isinstance(e, sp.acos), symbol)
    expr = expr.replace(lambda e: e == sp.sqrt(1 - rho**2), symbol)
    return sp.factor(sp.cancel(sp.together(expr))).subs(back)


def lyapunov_at(sde: TwoTokenSDE, rho_star: int) -> sp.Expr:
    r"""Lyapunov exponent :math:`m'(\rho_*) - \tfrac12 s'(\rho_*)^2` at an equilibrium
    :math:`\rho_* = \pm 1` where :math:`s^2 = (1-\rho^2)^2 v^2`: :math:`s'(\rho_*)^2 =
    4 v(\rho_*)^2`. Differentiates in ``rho`` directly (any number of inverse
    temperatures), a second witness of :func:`proofs_check.stability.lyapunov_exponent`.

    Raises
    ------
    ValueError
        When :math:`\rho_*` is not an equilibrium or :math:`s^2` does not vanish to second
        order there (no geometric-Brownian linearization).
    """
    drift_star = canonical(sde.drift.subs(rho, rho_star))
    if drift_star != 0:
        raise ValueError(f"rho = {rho_star} is not an equilibrium: drift {drift_star}")
    v2_star = value_at(sp.cancel(sp.together(sde.variance / (1 - rho**2) ** 2)), rho_star)
    if v2_star.has(sp.zoo, sp.oo, sp.nan):
        raise ValueError(f"the variance does not vanish like (1 - rho^2)^2 at {rho_star}")
    return canonical(value_at(sp.diff(sde.drift, rho), rho_star) - 2 * v2_star)


def value_at(expr: sp.Expr, rho_star: int) -> sp.Expr:
    """``expr`` at ``rho_star``: the value, or the one-sided limit from inside [-1, 1]
    where the value is 0/0 (the arc-cosine kernel's sqrt(1 - rho^2)): :math:`\\rho =
    \\pm\\cos\\theta`, :math:`\\theta \\to 0^+`."""
    value = canonical(expr.subs(rho, rho_star))
    if not value.has(sp.zoo, sp.oo, sp.nan):
        return value
    # rho = +-cos(theta), theta -> 0+: acos and sqrt(1 - rho^2) become trigonometric
    theta = sp.Dummy("theta", positive=True)
    angle = theta if rho_star == 1 else sp.pi - theta
    trig = canonical(expr).subs({sp.acos(rho): angle, sp.sqrt(1 - rho**2): sp.sin(theta)})
    return canonical(sp.limit(trig.subs(rho, rho_star * sp.cos(theta)), theta, 0, "+"))


@functools.cache
def relu_kernel() -> sp.Expr:
    r"""The arc-cosine kernel :math:`\kappa(\rho) = E[\mathrm{relu}(g)\,\mathrm{relu}(g')]`
    for standard normals with correlation :math:`\rho`, derived by Gaussian integration.

    Writes :math:`g = r\cos\phi`, :math:`g' = r\cos(\phi - \alpha)`, :math:`\rho =
    \cos\alpha`: :math:`\kappa = \frac1{2\pi}\int_0^\infty r^3 e^{-r^2/2}dr
    \int_{\alpha-\pi/2}^{\pi/2}\cos\phi\cos(\phi-\alpha)\,d\phi` (both factors positive
    on that arc).

    Returns
    -------
    sympy.Expr
        :math:`(\sqrt{1-\rho^2} + (\pi - \arccos\rho)\rho)/(2\pi)` (Cho and Saul's
        degree-1 arc-cosine kernel), in ``rho``.

    Examples
    --------
    >>> relu_kernel().subs(rho, 1), relu_kernel().subs(rho, -1)
    (1/2, 0)
    """
    r_, phi = sp.symbols("r phi", positive=True)
    alpha = sp.Symbol("alpha", positive=True)
    radial = sp.integrate(r_**3 * sp.exp(-(r_**2) / 2), (r_, 0, sp.oo))
    angular = sp.integrate(sp.cos(phi) * sp.cos(phi - alpha), (phi, alpha - sp.pi / 2,
                                                                  sp.pi / 2))
    kappa = sp.simplify(radial * angular / (2 * sp.pi))
    # sin(acos(rho)) = sqrt(1 - rho^2) on [-1, 1]
    return sp.expand(sp.simplify(kappa.subs(alpha, sp.acos(rho))))


__all__ = [
    "AbstractNoiseSource",
    "AbstractNormalization",
    "AbstractSphereNormalization",
    "DiffusionLimit",
    "GaussianMatrix",
    "LayerNorm",
    "NoNormalization",
    "NoiseTerm",
    "ProjectedSphere",
    "RMSNorm",
    "RandomVector",
    "ReLUMLP",
    "TwoTokenSDE",
    "canonical",
    "diffusion_limit",
    "lyapunov_at",
    "manifold_residuals",
    "normalization",
    "ones_direction",
    "projected_sphere",
    "register_normalization",
    "relu_kernel",
    "rho_sde",
    "softmax",
    "token_span",
    "value_at",
]


def is_zero(residual) -> bool:
    """Whether a residual is exactly zero, as given (no simplification here).

    Parameters
    ----------
    residual : sympy.Expr, sympy.MatrixBase, number, list, tuple or dict
        Lists, tuples and dicts (their values) are zero when every element is.

    Returns
    -------
    bool

    Examples
    --------
    >>> is_zero([0, sp.zeros(2, 2), {"a": sp.Integer(0)}]), is_zero(sp.Matrix([0, 1]))
    (True, False)
    """
    if isinstance(residual, dict):
        return all(is_zero(v) for v in residual.values())
    if isinstance(residual, (list, tuple)):
        return all(is_zero(v) for v in residual)
    if isinstance(residual, sp.MatrixBase):
        return all(e == 0 for e in residual)
    return sp.sympify(residual) == 0
