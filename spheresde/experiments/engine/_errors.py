"""What the store refuses and warns of."""

from __future__ import annotations


class ParameterMismatch(Exception):
    """The output directory holds a sweep made with other parameters (or other points)."""


class StoreLocked(ParameterMismatch):
    """Another process is writing the same sweep; the message names it."""


class CorruptStore(ParameterMismatch):
    """A stored CSV or JSON fails its check; the message names the file, the row and what
    to do."""


class StoreWarning(UserWarning):
    """A damaged chunk cache was discarded (its chunks are computed again)."""
