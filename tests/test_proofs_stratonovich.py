"""The one-token Stratonovich case is derived, not asserted, and it can fail.

For n = 1 the (softmax) attention of a single token is the token itself, A_1 = X_1: the
attention-derivative terms -eps^2/2 P_1 P_1 (dA_1/dX_1)^T A_1 = -eps^2/2 P_1 X_1 vanish,
so the Stratonovich drift with and without them agree (both are 0: Brownian motion on the
sphere). The residual is computed from the general conversion.
"""

import pytest
import sympy as sp

import proofs_check.stratonovich as strat
from proofs_check.report import FAIL, PASS, Check
from proofs_check.symbols import eps, mu


@pytest.mark.parametrize("dim", [2, 3])
def test_one_token_attention_terms_vanish(dim):
    res = strat.stratonovich_residuals(dim, 1, attention="softmax")
    assert res["attention_terms"] == sp.zeros(dim, 1)
    assert res["attention_terms_at_point"] == sp.zeros(dim, 1)
    assert res["closed_form"] == sp.zeros(dim, 1)
    assert res["tangent"] == sp.zeros(1, 1)
    row = Check.from_residuals("one token", "0", "b^S", {"with - without": res["attention_terms"]})
    assert row.status == PASS


def test_one_token_case_can_fail(monkeypatch):
    # An attention that is not the token (A = D X, D = diag(1, 2)) has dA/dX = D != I:
    # the attention-derivative terms no longer vanish, and the residual says so.
    def not_itself(tokens):
        (x,) = tokens
        return [sp.diag(*range(1, len(x) + 1)) * x]

    monkeypatch.setattr(strat, "softmax_attention_coordinates", not_itself)
    res = strat.stratonovich_residuals(2, 1, attention="softmax")
    assert not res["attention_terms"].is_zero_matrix
    assert not res["attention_terms_at_point"].is_zero_matrix
    assert res["closed_form"] == sp.zeros(2, 1)  # the closed form still holds
    row = Check.from_residuals("one token", "0", "b^S", {"with - without": res["attention_terms"]})
    assert row.status == FAIL
    assert "epsilon" in row.failures()[0][1]
    assert strat.check_stratonovich(2, 1, attention="softmax")["attention_terms_matter"] is True


def test_a_conversion_without_the_correction_fails(monkeypatch):
    # Forgetting the Ito-Stratonovich correction leaves the Ito drift: non-zero residuals.
    monkeypatch.setattr(strat, "ito_to_stratonovich", lambda state, drift, diffusion:
                        sp.Matrix(drift))
    res = strat.stratonovich_residuals(2, 1, attention="softmax")
    assert not res["closed_form"].is_zero_matrix
    x = strat.token_coordinates(2, 1)[0]
    # Ito drift of one token with A = X: -eps^2 (d-1)/2 X (mu P X = 0), d = 2.
    expected = (-(eps**2) / 2 * x).applyfunc(lambda e: strat.on_spheres(e, [x]))
    assert sp.expand(res["closed_form"] - expected) == sp.zeros(2, 1)
    assert mu not in res["closed_form"].free_symbols


def test_frozen_attention_is_mu_p_a_on_the_spheres():
    tokens = strat.token_coordinates(2, 2)
    att = strat.affine_attention_coordinates(tokens)
    frozen = strat.frozen_attention_stratonovich(tokens, att)
    expected = sp.Matrix([e for x, a in zip(tokens, att, strict=True)
                          for e in mu * (sp.eye(2) - x * x.T) * a])
    assert (frozen - expected).applyfunc(lambda e: strat.on_spheres(e, tokens)) == sp.zeros(4, 1)


def test_rho_stratonovich_drift_keeps_r_of_rho():
    # Issue 14: the Stratonovich drift of the rho-SDE at rho = 0.3, beta = 1, d = 4,
    # eps = 1, mu = 0 is 1.02074; holding r fixed gives the wrong 0.95898. Second witness:
    # m - s s'/2 with s' a central difference (h = 1e-5, error ~1e-10) of s(rho) in rho.
    from proofs_check.symbols import beta, d, rho
    from proofs_check.two_token import derive_rho_sde

    sde = derive_rho_sde()
    values = {beta: 1, d: 4, eps: 1, mu: 0}
    drift = sde.stratonovich_drift
    assert drift.free_symbols <= {rho, beta, d, eps, mu}
    assert float(drift.subs({**values, rho: 0.3})) == pytest.approx(1.02074, abs=1e-5)
    m = sp.lambdify(rho, sde.in_rho(sde.drift).subs(values))
    s = sp.lambdify(rho, sde.in_rho(sde.diffusion).subs(values))
    for x in (-0.7, 0.3, 0.9):
        slope = (s(x + 1e-5) - s(x - 1e-5)) / 2e-5
        assert float(drift.subs({**values, rho: x})) == pytest.approx(m(x) - s(x) * slope / 2,
                                                                       abs=1e-8)


@pytest.mark.parametrize(
    ("args", "error", "words"),
    [
        ((["x", "y"], [0, 0], "cols"), TypeError, "state must hold SymPy symbols"),
        (("x y", [0, 0], "cols"), TypeError, "state must be a list of SymPy symbols"),
        (("xy", ["0", 0], "cols"), TypeError, "drift must hold SymPy expressions"),
        (("xy", [0], "cols"), ValueError, r"drift must have one entry per state variable \(2\)"),
        (("xy", [0, 0], "scalar"), ValueError, r"diffusion must have shape \(N, \*noise_shape\)"),
        (("xy", [0, 0], "flat"), ValueError, r"got shape \(2,\)"),
    ],
)
@pytest.mark.parametrize("convert", ["ito_to_stratonovich", "stratonovich_to_ito"])
def test_conversions_reject_bad_input(convert, args, error, words):
    # Before issue 14: string names silently returned [0, 0]; a wrong length or a scalar
    # diffusion raised SymPy's raw ShapeError / IndexError.
    import proofs_check.ito as ito

    x, y = sp.symbols("x y", real=True)
    state, drift, diffusion = args
    state = [x, y] if state == "xy" else state
    diffusion = {"cols": [[-y], [x]], "scalar": x, "flat": [-y, x]}[diffusion]
    with pytest.raises(error, match=words):
        getattr(ito, convert)(state, drift, diffusion)


def test_conversion_refuses_r_held_fixed():
    import proofs_check.ito as ito
    from proofs_check.symbols import rho
    from proofs_check.two_token import derive_rho_sde

    sde = derive_rho_sde()
    with pytest.raises(ValueError, match=r"substitute it first with RhoSDE\.in_rho"):
        ito.ito_to_stratonovich([rho], [sde.drift], [[sde.diffusion]])
