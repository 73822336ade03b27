"""Outcome classification of token configurations, as specified in the docs page
/theory/discrete_model, section "Outcomes" (label ``outcomes``)."""

import jax.numpy as jnp
import numpy as np
import pytest

from spheresde.transformer import (
    ANTIPODAL,
    SINGLE,
    UNDECIDED,
    classify,
    cluster_sizes,
    outcome_fractions,
)


def _tilted(angle):
    """A unit vector at ``angle`` from e1 in the (e1, e2) plane of R^3."""
    return jnp.array([np.cos(angle), np.sin(angle), 0.0])


def test_three_outcomes():
    e1, e2 = jnp.eye(3)[0], jnp.eye(3)[1]
    configs = jnp.stack([
        jnp.stack([e1, _tilted(0.05), e1]),      # 1 - cos(0.05) = 1.2e-3 < tol
        jnp.stack([e1, -e1, _tilted(0.05)]),     # both signs, all |<.,.>| near 1
        jnp.stack([e1, e2, e1]),                 # orthogonal pair
        jnp.stack([e1, -_tilted(0.3), e1]),      # 1 - cos(0.3) = 0.045 > tol
    ])
    assert classify(configs).tolist() == [SINGLE, ANTIPODAL, UNDECIDED, UNDECIDED]


@pytest.mark.parametrize(("gap", "expected"), [(0.5e-2, SINGLE), (2e-2, UNDECIDED)])
def test_tolerance_is_on_one_minus_inner_product(gap, expected):
    angle = np.arccos(1 - gap)
    tokens = jnp.stack([_tilted(0.0), _tilted(angle)])
    assert int(classify(tokens, tol=1e-2)) == expected
    assert int(classify(-tokens[::-1] * jnp.array([[1.0], [-1.0]]), tol=1e-2)) == (
        ANTIPODAL if expected == SINGLE else UNDECIDED)


def test_any_radius():
    tokens = jnp.stack([jnp.eye(4)[0], -jnp.eye(4)[0]])
    assert int(classify(2.0 * tokens)) == ANTIPODAL


def test_fractions_and_standard_errors():
    e1 = jnp.eye(2)[0]
    single, antipodal, undecided = jnp.stack([e1, e1]), jnp.stack([e1, -e1]), jnp.eye(2)
    batch = jnp.stack([single] * 6 + [antipodal] * 3 + [undecided])
    f = outcome_fractions(batch)
    assert (f.single, f.antipodal, f.undecided, f.count) == (0.6, 0.3, 0.1, 10)
    assert f.antipodal_se == pytest.approx(np.sqrt(0.3 * 0.7 / 10))


def test_cluster_sizes():
    e1 = jnp.eye(3)[0]
    tokens = jnp.stack([jnp.stack([e1, -e1, e1, e1]), jnp.stack([-e1, e1, e1, -e1])])
    assert cluster_sizes(tokens).tolist() == [[3, 1], [2, 2]]


def test_fractions_from_counts_is_what_codes_give_and_refuses_uneven_totals():
    from spheresde.transformer._outcomes import fractions_from_codes, fractions_from_counts

    codes = np.array([[SINGLE, SINGLE, ANTIPODAL, UNDECIDED, SINGLE],
                      [ANTIPODAL, ANTIPODAL, ANTIPODAL, SINGLE, UNDECIDED]])
    from_codes = fractions_from_codes(codes)
    from_counts = fractions_from_counts([3, 1], [1, 3], [1, 1])
    for name in ("single", "antipodal", "undecided"):
        np.testing.assert_array_equal(getattr(from_codes, name), getattr(from_counts, name))
    assert from_counts.count == from_codes.count == 5
    np.testing.assert_allclose(from_counts.antipodal_se, np.sqrt([0.2 * 0.8 / 5, 0.6 * 0.4 / 5]))
    with pytest.raises(ValueError, match="one positive total"):
        fractions_from_counts([3, 1], [1, 3], [1, 2])
    with pytest.raises(ValueError, match="one positive total"):
        fractions_from_counts(0, 0, 0)
