"""Test configuration: float64 everywhere (norm checks at 1e-12 need it), compiled
programs kept on disk between runs, and PRNG keys."""

import itertools
import os
import tempfile

import jax
import pytest

jax.config.update("jax_enable_x64", True)

# JAX's persistent compilation cache, in the system's temporary folder: a program compiled
# once (by either xdist worker, or by a subprocess the tests start: the CLI, the Sphinx
# gallery, Dask workers, which inherit the variables) is loaded, not compiled, the next
# time. Measured, `pytest -n 2 -m "not slow"` on 2 cores: 141 s without it, 133 s from an
# empty cache, 90 s from a warm one. Entries are keyed by the program and the jax
# version, so a change to the code compiles afresh. JAX reports a program loaded from it
# as compiled (the event wraps both), so the tests that count compilations count the same.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR",
                      os.path.join(tempfile.gettempdir(), "spheresde-tests-jax-cache"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
if jax.config.jax_compilation_cache_dir is None:  # jax was imported before this file
    jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)


@pytest.fixture
def getkey():
    """Return a function giving a fresh, deterministic PRNG key on every call."""
    counter = itertools.count()
    base = jax.random.key(20260129)

    def _getkey():
        return jax.random.fold_in(base, next(counter))

    return _getkey
