r"""The token-wise normalization of the Transformer, one object per normalization.

A layer moves every token to :math:`Y_i` and normalizes it, :math:`X_i' = N(Y_i)
= PY_i/|PY_i|` with :math:`P` an orthogonal projection that every token of the
normalization's manifold is fixed by: :class:`RMSNorm` (the paper's, :math:`P = I`: the
unit sphere) and :class:`LayerNorm` (at unit scale, :math:`P = I - \mathbf 1\mathbf
1^\top/d`: the tokens live on the unit sphere of the hyperplane orthogonal to
:math:`(1, \dots, 1)`, a sphere of dimension :math:`d - 2`).

The network, the two-token chain, the experiments and the code generation ask the object
(:meth:`~AbstractNormalization.normalize`, :meth:`~AbstractNormalization.two_token_dimension`,
...) instead of comparing strings; the strings of the command line and of specs
(``"rms"``, ``"layer"``) name the objects in one registry (:func:`normalization`,
:func:`register_normalization`), the one :mod:`proofs_check.engine` reads too
(:mod:`proofs_check.normalizations`). The symbolic counterpart that derives a
normalization's limit is a class of :mod:`proofs_check.engine` named by the same
:attr:`~AbstractNormalization.name` (:meth:`~AbstractNormalization.symbolic`); this module
imports neither SymPy nor :mod:`proofs_check` until a derived number is asked for.
"""

from __future__ import annotations

import abc
import functools
from dataclasses import dataclass
from typing import ClassVar

import jax.numpy as jnp

from proofs_check.normalizations import names, register_normalization, registered

from .._geometry import retract


class AbstractNormalization(abc.ABC):
    r"""A token-wise normalization :math:`N(y) = Py/|Py|` (module docstring).

    A subclass sets :attr:`name` and implements :meth:`project`; one whose kernel of
    :math:`P` is not empty also sets :attr:`directions` and implements
    :meth:`fixed_directions`. Register an instance with :func:`register_normalization`
    for its name to be accepted wherever ``norm="rms"`` is (``docs/contributing.rst``,
    "A new normalization").
    """

    #: The name the command line, specs and ``norm=`` arguments use.
    name: ClassVar[str]
    #: The number of unit vectors, orthogonal to every token, that :math:`P` removes.
    directions: ClassVar[int] = 0
    #: Whether the paper's laws (:func:`spheresde.transformer.transformer_sde`, the
    #: finite-depth laws of :mod:`spheresde.two_token`, the absorption certificate) are
    #: this normalization's own, rather than derived for it.
    paper: ClassVar[bool] = False

    @abc.abstractmethod
    def project(self, y):
        """:math:`Py`, token-wise (the last axis); NumPy or JAX arrays."""

    def normalize(self, y):
        """:math:`Py/|Py|`, token-wise: the layer's normalization onto the unit sphere of
        the normalization's manifold."""
        return retract(self.project(y))

    def start(self, tokens, radius: float = 1.0):
        """Tokens on this normalization's manifold from tokens of the sphere of
        ``radius``: normalized (and scaled back to ``radius``)."""
        return radius * self.normalize(tokens)

    def fixed_directions(self, d: int, dtype) -> jnp.ndarray:
        r"""The :attr:`directions` unit vectors :math:`P` removes, rows of a
        ``(directions, d)`` array: the span vectors beyond the tokens of the symbolic
        limit (:class:`proofs_check.engine.AbstractNormalization`)."""
        return jnp.zeros((0, d), dtype)

    def span_basis(self, tokens):
        """The vectors the symbolic span's coefficients multiply: the tokens, then
        :meth:`fixed_directions`."""
        fixed = self.fixed_directions(tokens.shape[-1], tokens.dtype)
        return tokens if fixed.shape[0] == 0 else jnp.concatenate([tokens, fixed])

    def symbolic(self):
        """The :mod:`proofs_check.engine` normalization that derives this one's limit:
        :func:`proofs_check.engine.projected_sphere` of its name and :attr:`directions`
        (the engine's class of that name, or the generic one; imports SymPy)."""
        from proofs_check.engine import projected_sphere

        return projected_sphere(self.name, self.directions)

    def two_token_dimension(self, d: int) -> int:
        """The ``d`` of the paper's (RMS) two-token law that is this normalization's at
        ``d``, as :func:`proofs_check.layers.rms_dimension` derives it (lambdified, not
        retyped; LayerNorm's ``d - 1``)."""
        return _derived_dimension(self)(d)


@functools.cache
def _derived_dimension(norm: AbstractNormalization):
    import sympy as sp

    from proofs_check.layers import rms_dimension
    from proofs_check.symbols import d as d_symbol

    dimension = sp.lambdify(d_symbol, rms_dimension(norm.symbolic()))
    return lambda d: int(dimension(d))


@dataclass(frozen=True)
class RMSNorm(AbstractNormalization):
    """The paper's normalization :math:`N(y) = y/|y|` onto the unit sphere."""

    name: ClassVar[str] = "rms"
    paper: ClassVar[bool] = True

    def project(self, y):
        """:math:`y` itself (:math:`P = I`)."""
        return y

    def start(self, tokens, radius: float = 1.0):
        """The tokens as given: the sphere of ``radius`` is RMS's manifold."""
        return tokens

    def two_token_dimension(self, d: int) -> int:
        """``d``: the two-token law is the paper's own."""
        return d


@dataclass(frozen=True)
class LayerNorm(AbstractNormalization):
    r"""LayerNorm at unit scale: centre, then normalize, :math:`N(y) = Py/|Py|` with
    :math:`P = I - \mathbf 1\mathbf 1^\top/d` (:doc:`/theory/beyond`)."""

    name: ClassVar[str] = "layer"
    directions: ClassVar[int] = 1

    def project(self, y):
        """:math:`y` minus its mean over the token's coordinates."""
        return y - y.mean(axis=-1, keepdims=True)

    def fixed_directions(self, d: int, dtype) -> jnp.ndarray:
        r""":math:`u = \mathbf 1/\sqrt d`."""
        return jnp.full((1, d), 1.0 / jnp.sqrt(d), dtype)


for _norm in (RMSNorm(), LayerNorm()):
    register_normalization(_norm)


def normalization(norm: str | AbstractNormalization) -> AbstractNormalization:
    """The normalization a ``norm=`` argument names: a registered name (``"rms"``,
    ``"layer"``, ...) or an :class:`AbstractNormalization` itself.

    Raises
    ------
    ValueError
        For a name that is not registered, or registered with a symbolic side only.
    """
    if isinstance(norm, AbstractNormalization):
        return norm
    entry = registered(norm) if isinstance(norm, str) else None
    if not isinstance(entry, AbstractNormalization):
        known = ", ".join(repr(n) for n in names(numeric=True))
        why = (f"{norm!r} is registered for the engine only (no numeric side)"
               if entry is not None else f"got {norm!r}")
        raise ValueError(f"norm must be one of {known} or an AbstractNormalization (a new one "
                         f"is registered with register_normalization), {why}")
    return entry


#: What a ``norm=`` argument may be.
NormalizationLike = str | AbstractNormalization

__all__ = [
    "AbstractNormalization",
    "LayerNorm",
    "NormalizationLike",
    "RMSNorm",
    "normalization",
    "register_normalization",
]
