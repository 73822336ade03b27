"""What the store refuses and warns of."""

from __future__ import annotations


class ParameterMismatch(Exception):
    """The output directory holds a sweep made with other parameters (or other points)."""


class StoreLocked(ParameterMismatch):
    """Another process is writing into the same output directory; the message names it
    and its sweep."""


class CorruptStore(ParameterMismatch):
    """The directory's store, or a stored CSV or JSON, fails its check; the message names
    the file, the row or point and what to do."""


class StoreWarning(UserWarning):
    """A damaged chunk cache, or one without digests, was discarded (its chunks are
    computed again)."""
