"""The jaxtyping annotations of the numerical core are checked at test time (pyproject's
``--jaxtyping-packages``): a call with mismatched shapes fails in the checker."""

import jax.numpy as jnp
import jaxtyping
import numpy as np
import pytest

from spheresde import project_tangent
from spheresde.transformer._noise import span_factor


def test_mismatched_shapes_are_refused_by_the_checker():
    with pytest.raises(jaxtyping.TypeCheckError):
        span_factor(jnp.ones(3))  # tokens are a (n, d) matrix, not a vector
    with pytest.raises(jaxtyping.TypeCheckError):
        project_tangent(jnp.ones((4, 3)), jnp.ones((4, 2)))  # tokens of dimension 3 vs 2


def test_matching_shapes_pass():
    y = np.array([[1.0, 0.0, 0.0]])
    assert np.allclose(project_tangent(y, np.array([[1.0, 2.0, 3.0]])), [[0.0, 2.0, 3.0]])
