r"""The one registry of named normalizations, shared by the symbolic and the numeric side.

A normalization is one object per name. The symbolic side (:mod:`proofs_check.engine`)
derives the limit of the layer :math:`X_i' = N(X_i + \delta_i)` for it; the numeric side
(:class:`spheresde.transformer.AbstractNormalization`) runs it in the network, and names
its symbolic counterpart with ``symbolic()``. Both register here, under one
:func:`register_normalization`, and both look names up here: a name means the same
normalization everywhere, and a normalization registered once (by the recipe of the
contributing docs) is known to the engine, the network, every sweep and the tests.

When both sides know a normalization, the registry keeps the numeric object (it carries
the symbolic one through ``symbolic()``): registering a numeric normalization whose
counterpart is the symbolic one already registered under its name completes that entry,
and registering that symbolic one again does nothing. Any other second object under a
taken name is refused.

This module imports neither SymPy nor JAX, so that both sides may import it at once.
"""

from __future__ import annotations

_REGISTRY: dict[str, object] = {}


def _symbolic(norm):
    """The symbolic counterpart of ``norm`` (itself when it has none)."""
    counterpart = getattr(norm, "symbolic", None)
    return counterpart() if callable(counterpart) else norm


def _is_numeric(norm) -> bool:
    return callable(getattr(norm, "normalize", None))


def register_normalization(norm):
    """Make ``norm`` known by its ``name`` to the engine, the network and every sweep
    (registering the same normalization again does nothing).

    Parameters
    ----------
    norm
        A :class:`proofs_check.engine.AbstractNormalization` (the symbolic side only) or a
        :class:`spheresde.transformer.AbstractNormalization` (both sides).

    Returns
    -------
    The registered object (the numeric one where both sides are known).

    Raises
    ------
    TypeError
        If ``norm`` has no string ``name``.
    ValueError
        If another normalization has that name.
    """
    name = getattr(norm, "name", None)
    if not isinstance(name, str) or isinstance(norm, type):
        raise TypeError(f"register an instance of a subclass of AbstractNormalization, got "
                        f"{norm!r}")
    known = _REGISTRY.get(name)
    if known is None or known == norm:
        _REGISTRY[name] = known if known is not None else norm
        return _REGISTRY[name]
    if _is_numeric(norm) and not _is_numeric(known) and _symbolic(norm) == known:
        _REGISTRY[name] = norm  # the numeric side of a normalization the engine knew
        return norm
    if not _is_numeric(norm) and _is_numeric(known) and _symbolic(known) == norm:
        return known
    raise ValueError(f"the name {name!r} is taken by {known!r}: give "
                     f"{type(norm).__name__} another name")


def registered(name: str):
    """The normalization registered under ``name``, or None."""
    return _REGISTRY.get(name)


def names(*, numeric: bool = False) -> tuple[str, ...]:
    """The registered names (``numeric``: those the network can run)."""
    return tuple(n for n, v in _REGISTRY.items() if not numeric or _is_numeric(v))


__all__ = ["names", "register_normalization", "registered"]
