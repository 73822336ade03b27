"""Theorem 1 and the sphere-supported lemma: derived == stated, exactly."""

import pytest
import sympy as sp

from proofs_check.limit import (
    d,
    derive_limit_components,
    derive_limit_span,
    gaussian_expectation,
    generic_span,
    normalization_series,
    softmax_attention,
    sphere_supported_drift,
    stated_limit_span,
)
from proofs_check.span import TokenSpan


@pytest.mark.parametrize("n", [1, 2, 3])
def test_span_derivation_equals_closed_form(n):
    span, att = generic_span(n)
    derived, stated = derive_limit_span(span, att), stated_limit_span(span, att)
    for i in range(n):
        assert (derived.drift[i] - stated.drift[i]).is_zero()
    for key in derived.covariance:
        assert (derived.covariance[key] - stated.covariance[key]).is_zero()


def test_span_derivation_with_softmax_attention():
    rho, beta = sp.symbols("rho beta", real=True)
    span = TokenSpan(sp.Matrix([[1, rho], [rho, 1]]), d)
    att = softmax_attention(span, beta)
    derived, stated = derive_limit_span(span, att), stated_limit_span(span, att)
    assert all((derived.drift[i] - stated.drift[i]).is_zero() for i in range(2))


def test_a_wrong_closed_form_is_detected():
    span, att = generic_span(2)
    derived = derive_limit_span(span, att)
    (x0, _) = span.tokens()
    # The drift without the normalization term (-(d-1)/2 ...) is not what is derived.
    wrong = span.projection(x0) @ att[0]
    assert not (derived.drift[0] - wrong).is_zero()


@pytest.mark.parametrize("n", [1, 2, 3])
def test_sphere_supported_lemma(n):
    span, att = generic_span(n)
    assert sphere_supported_drift(derive_limit_span(span, att), span) == [0] * (2 * n)


def test_normalization_series():
    f1, f2 = normalization_series()
    xi, q, c = sp.symbols("xi q c", real=True)
    mu = sp.Symbol("mu", nonnegative=True)
    assert f1 == -xi
    assert sp.expand(f2 - (sp.Rational(3, 2) * xi**2 - q / 2 - mu * c)) == 0


def test_gaussian_expectation_known_moments():
    g1, g2 = sp.symbols("g1 g2", real=True)
    assert gaussian_expectation(g1**4 * g2**2, [g1, g2]) == 3
    assert gaussian_expectation(g1**6, [g1, g2]) == 15
    assert gaussian_expectation(g1 * g2 + g1**3, [g1, g2]) == 0


@pytest.mark.parametrize("dim", [2, 3, 4, 5, 6])
def test_components_for_every_dimension(dim):
    assert derive_limit_components(dim) == {
        "drift": True,
        "covariance_same_token": True,
        "covariance_cross": True,
        "mean_first_order": True,
    }


def test_components_reject_a_wrong_drift_coefficient():
    # -d/2 instead of -(d-1)/2: the explicit derivation must say no.
    assert derive_limit_components(3, normal_drift=sp.Rational(-3, 2))["drift"] is False
