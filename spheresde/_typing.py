"""Array type aliases shared across the package (jaxtyping)."""

from __future__ import annotations

from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

Token = Float[Array, " d"]
Tokens = Float[Array, "n d"]
SpherePoint = Float[Array, "*batch d"]
Scalar = Float[ArrayLike, ""]

__all__ = [
    "Array", "ArrayLike", "Float", "PRNGKeyArray", "Scalar", "SpherePoint", "Token", "Tokens"
]
