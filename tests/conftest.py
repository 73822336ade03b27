"""Test configuration: float64 everywhere (norm checks at 1e-12 need it) and PRNG keys."""

import itertools

import jax
import pytest

jax.config.update("jax_enable_x64", True)


@pytest.fixture
def getkey():
    """Return a function giving a fresh, deterministic PRNG key on every call."""
    counter = itertools.count()
    base = jax.random.key(20260129)

    def _getkey():
        return jax.random.fold_in(base, next(counter))

    return _getkey
