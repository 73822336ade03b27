"""Theorem 1 and the sphere-supported lemma: derived == stated, exactly."""

import pytest
import sympy as sp

from proofs_check.limit import (
    derive_limit_components,
    derive_limit_span,
    gaussian_expectation,
    generic_span,
    isserlis_weight,
    limit_components_residuals,
    normalization_series,
    softmax_attention,
    sphere_supported_drift,
    stated_limit_span,
)
from proofs_check.span import TokenSpan
from proofs_check.symbols import beta, d, eps, mu, rho


@pytest.mark.parametrize("n", [1, 2, 3])
def test_span_derivation_equals_closed_form(n):
    span, att = generic_span(n)
    derived, stated = derive_limit_span(span, att), stated_limit_span(span, att)
    for i in range(n):
        assert (derived.drift[i] - stated.drift[i]).is_zero()
    for key in derived.covariance:
        assert (derived.covariance[key] - stated.covariance[key]).is_zero()


def test_span_derivation_with_softmax_attention():
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
    assert f1 == -xi
    assert sp.expand(f2 - (sp.Rational(3, 2) * xi**2 - q / 2 - mu * c)) == 0


def test_gaussian_expectation_known_moments():
    g1, g2 = sp.symbols("g1 g2", real=True)
    assert gaussian_expectation(g1**4 * g2**2, [g1, g2]) == 3
    assert gaussian_expectation(g1**6, [g1, g2]) == 15
    assert gaussian_expectation(g1 * g2 + g1**3, [g1, g2]) == 0


@pytest.mark.parametrize("dim", [2, 3, 4, 5, pytest.param(6, marks=pytest.mark.slow)])
def test_components_for_every_dimension(dim):
    assert derive_limit_components(dim) == {
        "drift": True,
        "covariance_same_token": True,
        "covariance_cross": True,
        "mean_first_order": True,
    }


def test_components_reject_a_wrong_drift_coefficient():
    # -d/2 instead of -(d-1)/2: the explicit derivation must say no, and say what is left.
    assert derive_limit_components(3, normal_drift=sp.Rational(-3, 2))["drift"] is False
    residual = limit_components_residuals(3, normal_drift=sp.Rational(-3, 2))["drift"]
    x = sp.symbols("x_0:3")
    a2 = sum(sp.Symbol(f"a_{k}") ** 2 for k in range(3))
    # derived - stated = (-(d-1)/2 + d/2) eps^2 |A|^2 X = eps^2 |A|^2 X / 2.
    eps_ = sp.Symbol("epsilon")
    assert sp.expand(residual - sp.Matrix(x) * eps_**2 * a2 / 2) == sp.zeros(3, 1)


def test_components_residuals_are_zero_matrices():
    res = limit_components_residuals(3)
    assert res["drift"] == sp.zeros(3, 1)
    assert res["mean_first_order"] == sp.zeros(3, 1)
    assert res["covariance_same_token"] == sp.zeros(3, 3)
    assert res["covariance_cross"] == sp.zeros(3, 3)


def test_one_isserlis_for_both_representations():
    from sympy.polys.rings import ring

    assert [isserlis_weight(p) for p in ([0], [2], [4], [6], [2, 2], [3], [1, 1])] == [
        1, 1, 3, 15, 1, 0, 0
    ]
    _, g1, g2, y = ring("g1, g2, y", sp.QQ)
    p = (y * g1 + g2) ** 2 + g1**4 + g1 * g2**3
    e1, e2, ys = sp.symbols("g1 g2 y")
    assert gaussian_expectation(p, [g1, g2]).as_expr() == gaussian_expectation(
        p.as_expr(), [e1, e2]
    ) == ys**2 + 4
    assert eps.is_positive
    assert mu.is_nonnegative
