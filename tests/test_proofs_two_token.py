"""Two tokens: rho-SDE, equilibria, Lyapunov exponents, beta_c, Feller, Proposition 1."""

import pytest
import sympy as sp

from proofs_check.stability import (
    critical_beta,
    hybrid_threshold,
    in_beta,
    lyapunov_exponent,
    pure_noise_lyapunov_minus_cosh_form,
    q,
    same,
    scale_exponent_at,
    stated_lyapunov_minus,
)
from proofs_check.stratonovich import check_rho_in_coordinates, check_stratonovich
from proofs_check.symbols import d, eps, mu
from proofs_check.two_token import (
    a_of_r,
    b_of_r,
    beta,
    derive_rho_sde,
    derive_z_sde,
    in_z,
    r,
    rho,
    scale_g,
    stated_rho_sde,
    z,
    z_sde_residuals,
)


def test_rho_sde_equals_closed_form():
    sde = derive_rho_sde()
    drift, variance = stated_rho_sde()
    assert sp.simplify(sde.drift - drift) == 0
    assert sp.simplify(sde.variance - variance) == 0
    # Only (rho, r(beta, rho), d, eps, mu) appear: rho is a 1-D diffusion.
    assert sde.drift.free_symbols <= {rho, r, d, eps, mu}
    assert sde.variance.free_symbols <= {rho, r, eps}


def test_rho_sde_identities_of_the_design_notes():
    a, b = a_of_r, b_of_r
    x = sp.Symbol("x", real=True)
    ab_ratio = (a * b / (a**2 + b**2)).subs(r, sp.exp(-x))
    assert sp.simplify((ab_ratio - 1 / (2 * sp.cosh(x))).rewrite(sp.exp)) == 0
    assert sp.simplify(b / (a**2 + b**2) - r * (1 + r) / (1 + r**2)) == 0


@pytest.mark.parametrize("dim", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_rho_sde_in_coordinates_matches_span(dim):
    assert check_rho_in_coordinates(dim) == {"drift": True, "variance": True}


def test_z_sde():
    drift, diffusion = derive_z_sde()
    sde = derive_rho_sde()
    assert (drift.free_symbols | diffusion.free_symbols) <= {z, beta, d, eps, mu}
    expected = in_z(sde.reduced_drift + rho * sde.reduced_variance)
    assert sp.simplify(drift - expected) == 0
    assert sp.simplify(diffusion**2 - in_z(sde.reduced_variance)) == 0


@pytest.mark.slow
def test_z_sde_residuals_catch_a_missing_ito_term():
    # (that they vanish for the derived SDE is test_proofs_residuals' check_z_sde)
    drift, diffusion = derive_z_sde()
    # The chain rule alone (no Ito term rho v^2) is told apart, and so is a factor 2 in v.
    without_ito = drift - in_z(rho * derive_rho_sde().reduced_variance)
    assert z_sde_residuals(drift=without_ito)["drift"] != 0
    assert z_sde_residuals(diffusion=2 * diffusion)["diffusion"] != 0


def test_equilibria():
    sde = derive_rho_sde()
    for point in (1, -1):
        assert sp.simplify(sde.drift.subs(rho, point)) == 0
        assert sp.simplify(sde.variance.subs(rho, point)) == 0


def test_lyapunov_exponents():
    assert sp.expand(lyapunov_exponent(1) - (-2 * mu - eps**2 * (d - 1))) == 0
    lam = in_beta(lyapunov_exponent(-1))
    assert same(lam, stated_lyapunov_minus())
    assert same(lam.subs(mu, 0), pure_noise_lyapunov_minus_cosh_form())
    # A wrong exponent (the deterministic part alone) is told apart.
    assert not same(lam, 4 * mu / (1 + sp.exp(2 * beta)))


def test_critical_beta_and_its_sign():
    assert critical_beta() == sp.acosh(d - 2) / 2
    lam = in_beta(lyapunov_exponent(-1)).subs(mu, 0)
    for dim in (4, 7, 10):
        bc = float(sp.acosh(dim - 2) / 2)
        assert float(lam.subs({d: dim, eps: 1, beta: bc})) == pytest.approx(0, abs=1e-12)
        assert float(lam.subs({d: dim, eps: 1, beta: bc + 0.1})) < 0
        assert float(lam.subs({d: dim, eps: 1, beta: bc - 0.1})) > 0


@pytest.mark.parametrize(
    ("dim", "expected"),
    [(2, -sp.cosh(2 * beta)), (3, 1 - sp.cosh(2 * beta))],
)
def test_low_dimensions(dim, expected):
    lam = in_beta(lyapunov_exponent(-1)).subs({mu: 0, d: dim})
    assert same(lam, eps**2 * expected / sp.cosh(beta) ** 2)


def test_feller_agrees_with_linearization():
    g = scale_g()
    sde = derive_rho_sde()
    g_m, v2_m = (e.subs({rho: -1, r: q}) for e in (g, sde.reduced_variance))
    assert sp.simplify(lyapunov_exponent(-1) - v2_m * (g_m - 2)) == 0
    assert sp.simplify(scale_exponent_at(-1) - in_beta(g_m) / 2) == 0
    g_m_pure = in_beta(g_m).subs(mu, 0)
    assert same(g_m_pure, 1 + (d - 2) / sp.cosh(2 * beta))


def test_hybrid_threshold_and_asymptotic():
    eps2, denominator = hybrid_threshold()
    b_minus = 1 / (1 + sp.exp(2 * beta))
    ab_minus = 1 / (4 * sp.cosh(beta) ** 2)
    assert same(in_beta(eps2), 2 * mu * b_minus / (1 - 2 * (d - 1) * ab_minus))
    assert sp.limit(eps2 / q, q, 0) == 2 * mu
    # The paper's eps^2 = 2 e^{-beta} decays more slowly: the ratio goes to 0.
    assert sp.limit(in_beta(eps2) / (2 * sp.exp(-beta)), beta, sp.oo) == 0
    # With logits scaled by 1/2 (beta -> beta/2) the asymptotic is 2 mu e^{-beta} ...
    assert sp.limit(in_beta(eps2).subs(beta, beta / 2) * sp.exp(beta), beta, sp.oo) == 2 * mu
    # ... and Theorem 2 would read cosh(beta) = d - 2, i.e. beta_c = arccosh(d - 2).
    lam_half = in_beta(lyapunov_exponent(-1)).subs({mu: 0, beta: beta / 2})
    assert float(lam_half.subs({d: 6, eps: 1, beta: sp.acosh(4)})) == pytest.approx(0, abs=1e-12)
    assert sp.simplify(denominator + lyapunov_exponent(-1).subs(mu, 0) / (2 * eps**2)) == 0


@pytest.mark.parametrize(
    ("dim", "n"), [(2, 1), (2, 2), (3, 1), pytest.param(3, 2, marks=pytest.mark.slow)]
)
def test_stratonovich_form_generic_attention(dim, n):
    assert check_stratonovich(dim, n) == {
        "closed_form": True,
        "tangent": True,
        "attention_terms_matter": True,
        "witness_agrees": True,
    }


def test_stratonovich_form_softmax_one_token():
    # One token attends to itself (A = X): the attention-derivative terms vanish, computed.
    assert check_stratonovich(3, 1, attention="softmax") == {
        "closed_form": True,
        "tangent": True,
        "attention_terms_matter": False,
        "witness_agrees": True,
    }


@pytest.mark.slow
def test_stratonovich_form_softmax_two_tokens():
    # ~30 s: explicit softmax exponentials instead of the generic affine attention.
    assert check_stratonovich(2, 2, attention="softmax") == {
        "closed_form": True,
        "tangent": True,
        "attention_terms_matter": True,
        "witness_agrees": True,
    }


def test_stratonovich_check_rejects_frozen_attention(monkeypatch):
    # Without the dA/dX terms (attention treated as constant) the closed form is wrong.
    import proofs_check.stratonovich as strat

    def frozen(tokens, attention):
        out = []
        for x, a in zip(tokens, attention, strict=True):
            out.extend(mu * (sp.eye(len(x)) - x * x.T) * a)
        return sp.Matrix(out)

    monkeypatch.setattr(strat, "closed_form_stratonovich", frozen)
    assert strat.check_stratonovich(2, 2)["closed_form"] is False
