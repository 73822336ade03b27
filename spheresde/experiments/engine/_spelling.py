"""How a value is spelled in a CSV field, a point's key and its seed."""

from __future__ import annotations

from typing import Any


def format_value(value: Any) -> str:
    """The CSV spelling of a value: ``repr`` for floats (round-trips exactly), ``str`` else."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float) or type(value).__name__.startswith("float"):
        return repr(float(value))
    if type(value).__name__.startswith("int"):
        return str(int(value))
    return str(value)
