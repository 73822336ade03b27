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
