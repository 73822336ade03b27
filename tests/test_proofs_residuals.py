"""The checks return residuals (derived - stated) that are exactly zero, and they can fail.

A check's verdict comes from its residuals: a deliberately wrong stated formula must leave
a non-zero residual, a FAIL verdict, and the residual printed in the report.
"""

import pytest
import sympy as sp

import proofs_check.report as report
from proofs_check.report import FAIL, MISMATCH, PASS, Check, format_report, is_zero, verdict
from proofs_check.symbols import beta, d, eps, mu


def _all_zero(residuals: dict) -> None:
    for label, value in residuals.items():
        if isinstance(value, sp.MatrixBase):
            assert value.is_zero_matrix, (label, value)
        elif isinstance(value, list):
            _all_zero({f"{label}[{k}]": v for k, v in enumerate(value)})
        else:
            assert sp.sympify(value) == 0, (label, value)


FAST_CHECKS = [
    report.check_sphere_supported,
    report.check_equilibria,
    report.check_plus_attracting,
    report.check_theorem2,
    report.check_feller,
]
SLOW_CHECKS = [
    report.check_theorem1_drift,
    report.check_theorem1_diffusion,
    report.check_two_token_sde,
    report.check_z_sde,
    report.check_stratonovich,
    report.check_finite_depth,
    report.check_first_passage,
]


@pytest.mark.parametrize(
    "check",
    FAST_CHECKS + [pytest.param(c, marks=pytest.mark.slow) for c in SLOW_CHECKS],
    ids=lambda c: c.__name__,
)
def test_each_check_has_zero_residuals(check):
    row = check()
    assert row.residuals, "a check must return the residuals it judged"
    _all_zero(row.residuals)
    for label, value in row.nonzero.items():
        assert not is_zero(value), label
    assert row.status == PASS
    assert row.failures() == []


def test_low_dimension_residuals():
    rows = report.check_low_dimensions()
    assert [row.claim for row in rows] == ["d = 2 (pure noise)", "d = 3 (pure noise)"]
    for row in rows:
        _all_zero(row.residuals)
        assert row.status == PASS


def test_proposition1_mismatch_is_reported_not_forced():
    row = report.check_proposition1()
    _all_zero(row.residuals)
    _all_zero(row.reconcile)
    # derived / paper -> 0 as beta -> oo, so lim derived/paper - 1 = -1: a MISMATCH.
    assert row.paper == {"lim derived/paper - 1": -1}
    assert row.status == MISMATCH
    text = format_report([row])
    assert "MISMATCH  " in text
    assert "paper[lim derived/paper - 1] = -1" in text


def test_a_wrong_stated_formula_fails_with_its_residual(monkeypatch):
    import proofs_check.stability as stability

    # Theorem 2's lambda_- without its eps^2 part: the residual is that part, exactly.
    def wrong():
        return 4 * mu / (1 + sp.exp(2 * beta))

    monkeypatch.setattr(stability, "stated_lyapunov_minus", wrong)
    row = report.check_theorem2()
    assert row.status == FAIL
    residual = row.residuals["lambda_-"]
    assert residual != 0
    expected = 2 * eps**2 * (2 * (d - 1) / (4 * sp.cosh(beta) ** 2) - 1)
    assert sp.simplify((residual - expected).rewrite(sp.exp)) == 0
    assert report.exit_code([row]) == 1
    text = format_report([row])
    assert "FAIL" in text
    line = next(x for x in text.splitlines() if x.strip().startswith("residual[lambda_-]"))
    assert "epsilon" in line
    assert text.splitlines()[-1] == "PASS: 0, FAIL: 1, MISMATCH: 0"
    assert "residual[lambda_-] = " in format_report([row], fmt="markdown")


def test_a_wrong_plus_exponent_fails(monkeypatch):
    import proofs_check.stability as stability

    monkeypatch.setattr(stability, "lyapunov_exponent", lambda rho_star: -2 * mu)
    row = report.check_plus_attracting()
    assert row.status == FAIL
    assert sp.expand(row.residuals["lambda_+"] - eps**2 * (d - 1)) == 0


def test_huge_residuals_are_truncated():
    x = sp.Symbol("x")
    big = sum(x**k for k in range(300))
    row = Check.from_residuals("big", "0", "big", {"r": big})
    assert row.status == FAIL
    (label, text), = row.failures()
    assert label == "residual[r]"
    assert len(text) < report.MAX_RESIDUAL_CHARS + 60
    assert "more characters" in text


def test_verdict_rules():
    assert verdict({"a": sp.zeros(2, 1), "b": [0, sp.Integer(0)]}) == PASS
    assert verdict({"a": sp.Matrix([0, 1])}) == FAIL
    assert verdict({"a": 0}, nonzero={"n": sp.Matrix([0, 2])}) == PASS
    assert verdict({"a": 0}, nonzero={"n": sp.zeros(2, 1)}) == FAIL
    assert verdict({"a": 0}, paper={"p": 0}) == PASS
    assert verdict({"a": 0}, paper={"p": -1}, reconcile={"r": 0}) == MISMATCH
    # A mismatch nothing explains is a failure.
    assert verdict({"a": 0}, paper={"p": -1}, reconcile={"r": 1}) == FAIL
    # A residual that was not simplified is not judged zero: checks must simplify.
    x = sp.Symbol("x")
    assert verdict({"a": (x + 1) ** 2 - x**2 - 2 * x - 1}) == FAIL
