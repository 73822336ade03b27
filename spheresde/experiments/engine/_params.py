"""The parameters of a spec: :func:`param` declares a field once (type annotation,
default, help text, validity check), :class:`FieldKind` types, parses and spells it,
:func:`problem` says what is wrong with a value.

Supported field types: ``int``, ``float``, ``bool``, ``str`` (a path, say), a ``Literal``
of strings (choices), ``tuple[int, ...]`` (a list ``4,5,6``), ``tuple[float, ...]`` (a
list ``0.5,1,2`` or a range ``start:stop:num``) and a tuple of a ``Literal`` (several
choices, ``a,b``). Values are coerced to the declared type on construction, so
``PhaseSpec(betas=(1, 2))`` and ``PhaseSpec(betas=(1.0, 2.0))`` are the same spec (and
seed the same random numbers); ``-0.0`` is coerced to ``0.0``, which it equals, so that
it is stored, keyed and seeded as ``0.0``.

Every number is checked for range before any work (:func:`problem`): floats are finite,
integers at most :data:`LARGEST_INT` in size, and each field's own check bounds it
further; rules of a spec bound what fields give together (the layers of a trajectory,
the chunks of a point).
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Callable
from typing import Any

from ._spelling import format_value

LARGEST_INT = 2**53
"""The largest integer a field takes: float64, JSON readers and NumPy's int64 keep every
integer up to it exactly (larger ones overflow, or are rounded, somewhere downstream)."""

Check = Callable[[Any], "str | None"]
Section = tuple[str, list[tuple[str, str]]]
"""A section of ``REPORT.md``: its Markdown text and its rows of the summary table
(claim, our result)."""


class BadParameters(ValueError):
    """Parameters that no experiment can serve; the message says which and why."""


# ---------------------------------------------------------------------------- checks
# A check takes one value (one element of a tuple field) and returns None when it is
# valid, or the end of a sentence saying what it must be.


def greater_than(low: float | int) -> Check:
    """Values must be ``> low``."""
    return lambda v: None if v > low else f"must be > {low:g}"


def at_least(low: float | int) -> Check:
    """Values must be ``>= low``."""
    return lambda v: None if v >= low else f"must be >= {low:g}"


def between(low: float | int, high: float | int) -> Check:
    """Values must lie in the open interval ``(low, high)``."""
    return lambda v: None if low < v < high else f"must be in ({low:g}, {high:g})"


def param(default: Any, help: str, *, check: Check | None = None,
          metavar: str | None = None, added: bool = False) -> Any:
    """A spec field: its default, its help text and its validity check.

    ``help`` is the sentence shown by ``spheresde COMMAND --help`` (the default is
    appended there); ``check`` applies to the value, or to each element of a tuple field.
    ``added``: a parameter added after sweeps were stored; at its default it is left out
    of the resume identity, the CSV columns and the command line, so that those sweeps,
    which ran with that default, still resume.
    """
    return dataclasses.field(default=default,
                             metadata={"help": help, "check": check, "metavar": metavar,
                                       "added": added})


# ---------------------------------------------------------------------------- field types


@dataclasses.dataclass(frozen=True)
class FieldKind:
    """How one spec field is typed: its element type, whether it is a tuple, its choices."""

    element: type
    is_tuple: bool = False
    choices: tuple[str, ...] | None = None

    def coerce(self, value: Any) -> Any:
        """``value`` in the declared type (tuples of elements, numbers as int or float)."""
        if self.is_tuple:
            if isinstance(value, str | bytes) or not hasattr(value, "__iter__"):
                raise TypeError(f"expected a sequence, got {value!r}")
            return tuple(self._one(v) for v in value)
        return self._one(value)

    def _one(self, value: Any) -> Any:
        if self.choices is not None or self.element is str:
            return str(value)
        if self.element is bool:
            if not isinstance(value, bool):
                raise TypeError(f"expected True or False, got {value!r}")
            return value
        if self.element is int:
            if isinstance(value, bool) or int(value) != value:
                raise TypeError(f"expected an integer, got {value!r}")
            return int(value)
        return float(value) + 0.0  # -0.0 + 0.0 is 0.0

    def parse(self, text: str) -> Any:
        """Parse command-line text: a number, a choice, or a list / range for tuples."""
        text = text.strip()
        if not self.is_tuple:
            return self._parse_one(text)
        if ":" in text and self.element is float:
            parts = text.split(":")
            if len(parts) != 3:
                raise ValueError(f"{text!r}: a range is start:stop:num")
            start, stop = (self._parse_one(p) for p in parts[:2])
            num = FieldKind(int)._parse_one(parts[2])
            if num < 1:
                raise ValueError(f"{text!r}: num must be >= 1")
            if stop < start:
                raise ValueError(f"{text!r}: stop must be >= start")
            step = (stop - start) / (num - 1) if num > 1 else 0.0
            # 12 significant digits: grid keys stay the numbers a user would type
            return tuple(float(f"{start + k * step:.12g}") for k in range(num))
        parts = text.split(",")
        if any(not p.strip() for p in parts):
            raise ValueError(f"{text!r}: an empty entry in the list (two commas, or a comma "
                             f"at an end)")
        return tuple(self._parse_one(p) for p in parts)

    def _parse_one(self, text: str) -> Any:
        text = text.strip()
        if self.choices is not None or self.element is str:
            return text
        if self.element is int:
            try:
                return int(text)
            except ValueError:
                raise ValueError(f"{text!r} is not an integer") from None
        try:
            return float(text)  # finiteness is one of the checks of problem()
        except ValueError:
            raise ValueError(f"{text!r} is not a number") from None

    def spell(self, value: Any) -> str:
        """The command-line text of ``value`` (the inverse of :meth:`parse`)."""
        if self.is_tuple:
            return ",".join(format_value(v) for v in value)
        return format_value(value)


def field_kind(annotation: Any) -> FieldKind:
    """The :class:`FieldKind` of a resolved type annotation."""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return FieldKind(str, choices=tuple(typing.get_args(annotation)))
    if origin is tuple:
        element, ellipsis = typing.get_args(annotation)
        if ellipsis is Ellipsis and typing.get_origin(element) is typing.Literal:
            return FieldKind(str, is_tuple=True, choices=tuple(typing.get_args(element)))
        if ellipsis is not Ellipsis or element not in (int, float):
            raise TypeError(f"unsupported spec field type {annotation!r}")
        return FieldKind(element, is_tuple=True)
    if annotation in (int, float, bool, str):
        return FieldKind(annotation)
    raise TypeError(f"unsupported spec field type {annotation!r}")


def problem(kind: FieldKind, check: Check | None, value: Any) -> str | None:
    """What is wrong with an already typed ``value`` (None when it is valid)."""
    values = value if kind.is_tuple else (value,)
    if kind.is_tuple:
        if not values:
            return "the list is empty"
        if len(set(values)) != len(values):
            return f"{kind.spell(value)!r} repeats a value"
    for v in values:
        if kind.choices is not None and v not in kind.choices:
            return f"{v!r} is not one of {', '.join(kind.choices)}"
        if isinstance(v, float) and not math.isfinite(v):
            return f"{v!r} is not a finite number"
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) > LARGEST_INT:
            return f"{v} is too large (at most 2^53 = {LARGEST_INT})"
        message = check(v) if check is not None else None
        if message:
            return f"{format_value(v)!r} {message}"
    return None


# ---------------------------------------------------------------------------- specs


@dataclasses.dataclass(frozen=True)
class SpecField:
    """One parameter of a spec, as the CLI and the docs see it."""

    name: str
    kind: FieldKind
    default: Any
    help: str
    check: Check | None
    metavar: str | None
    added: bool = False

    @property
    def flag(self) -> str:
        """The command-line option, ``--name`` (underscores become hyphens)."""
        return "--" + self.name.replace("_", "-")


__all__ = [
    "LARGEST_INT",
    "BadParameters",
    "FieldKind",
    "Section",
    "SpecField",
    "at_least",
    "between",
    "field_kind",
    "greater_than",
    "param",
    "problem",
]
