"""Property tests (Hypothesis) of the outcome classification, as specified in the docs page
/theory/discrete_model, section "Outcomes": the code of a configuration depends only on
its pairwise inner products, so it is invariant under rotations (any orthogonal map) and
under relabelling the tokens; ``cluster_sizes`` splits the n tokens into two groups.

The configurations are drawn clearly inside one class, far from the tolerance boundary
(pairwise ``1 - |<X_i, X_j>|`` below ``tol / 3`` or above ``4 tol``), so that rounding
cannot move them across. The configurations come in three fixed shapes and the functions
are jitted once per shape (run op by op, every new shape costs seconds of compilation).
"""

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spheresde.transformer import ANTIPODAL, SINGLE, UNDECIDED, classify, cluster_sizes

TOL = 1e-2
# Per-token angle to the common axis: pairwise angles below 2 * 0.04, so
# 1 - |<X_i, X_j>| <= 1 - cos(0.08) = 3.2e-3 < TOL / 3.
SPREAD = 0.04
# An undecided pair: angle in [0.3, pi - 0.3], so 1 - |<X_0, X_1>| >= 1 - cos(0.3) = 0.045.
FAR = 0.3

KINDS = {"single": SINGLE, "antipodal": ANTIPODAL, "undecided": UNDECIDED}
SHAPES = [(2, 3), (3, 2), (5, 4)]  # (n, d): a pair, S^1, and more tokens than dimensions

_classify = jax.jit(classify, static_argnames="tol")
_cluster_sizes = jax.jit(cluster_sizes)


def _unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def _near(rng, axis, n):
    """``n`` unit vectors within angle SPREAD of the unit vector ``axis``."""
    d = axis.shape[0]
    tangent = rng.normal(size=(n, d))
    tangent -= np.outer(tangent @ axis, axis)
    tangent = _unit(tangent)
    angles = rng.uniform(0.0, SPREAD, size=(n, 1))
    return np.cos(angles) * axis + np.sin(angles) * tangent


def configuration(kind: str, n: int, d: int, seed: int) -> np.ndarray:
    """An ``(n, d)`` configuration that is clearly of the given ``kind``."""
    rng = np.random.default_rng(seed)
    axis = _unit(rng.normal(size=d))
    if kind == "single":
        return _near(rng, axis, n)
    if kind == "antipodal":
        signs = rng.choice([-1.0, 1.0], size=n)
        signs[rng.choice(n, size=2, replace=False)] = [1.0, -1.0]  # both signs present
        return signs[:, None] * _near(rng, axis, n)
    # undecided: tokens 0 and 1 at an angle in [FAR, pi - FAR]; the others anywhere.
    tokens = _unit(rng.normal(size=(n, d)))
    other = rng.normal(size=d)
    other = _unit(other - (other @ axis) * axis)
    angle = rng.uniform(FAR, np.pi - FAR)
    tokens[0], tokens[1] = axis, np.cos(angle) * axis + np.sin(angle) * other
    return tokens[rng.permutation(n)]


def random_orthogonal(rng, d: int) -> np.ndarray:
    """A Haar-distributed orthogonal ``d x d`` matrix (rotations and reflections)."""
    q, r = np.linalg.qr(rng.normal(size=(d, d)))
    return q * np.sign(np.diag(r))


configurations = st.builds(
    lambda kind, shape, seed: (kind, *shape, seed),
    st.sampled_from(sorted(KINDS)), st.sampled_from(SHAPES), st.integers(0, 2**32 - 1),
)


def _code(tokens) -> int:
    return int(_classify(np.asarray(tokens), tol=TOL))


@settings(max_examples=40, deadline=None)
@given(config=configurations, radius=st.floats(0.5, 4.0))
def test_classify_invariant_under_orthogonal_maps(config, radius):
    kind, n, d, seed = config
    tokens = configuration(kind, n, d, seed)
    assert _code(tokens) == KINDS[kind]
    rotation = random_orthogonal(np.random.default_rng(seed + 1), d)
    np.testing.assert_allclose(rotation @ rotation.T, np.eye(d), atol=1e-12)
    # any radius: the classification normalizes
    assert _code(radius * tokens @ rotation.T) == KINDS[kind]


@settings(max_examples=40, deadline=None)
@given(config=configurations)
def test_classify_invariant_under_permutations(config):
    kind, n, d, seed = config
    tokens = configuration(kind, n, d, seed)
    permutation = np.random.default_rng(seed + 2).permutation(n)
    assert _code(tokens[permutation]) == _code(tokens) == KINDS[kind]


@settings(max_examples=40, deadline=None)
@given(config=configurations)
def test_cluster_sizes_split_the_tokens(config):
    kind, n, d, seed = config
    tokens = configuration(kind, n, d, seed)
    rng = np.random.default_rng(seed + 3)
    sizes = np.asarray(_cluster_sizes(tokens))
    assert sizes.shape == (2,)
    assert sizes.sum() == n
    assert sizes[0] >= sizes[1] >= 0
    if kind == "single":
        assert sizes.tolist() == [n, 0]
    if kind == "antipodal":
        assert sizes[1] >= 1
    if kind != "undecided":
        # a decided configuration's clusters do not depend on labels or orientation
        moved = tokens[rng.permutation(n)] @ random_orthogonal(rng, d).T
        assert np.asarray(_cluster_sizes(moved)).tolist() == sizes.tolist()


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_batches_classify_row_by_row(kind):
    # One call on a stacked batch gives the codes of the rows one by one.
    batch = np.stack([configuration(kind, 5, 4, seed) for seed in range(8)])
    codes = np.asarray(_classify(batch, tol=TOL))
    assert codes.shape == (8,)
    assert codes.tolist() == [_code(c) for c in batch] == [KINDS[kind]] * 8
    sizes = np.asarray(_cluster_sizes(batch))
    assert sizes.shape == (8, 2)
    assert np.all(sizes.sum(axis=-1) == 5)
