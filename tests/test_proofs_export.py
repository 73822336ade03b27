"""The lambdified exports: equal to the derivations, to independent formulas, across backends."""

import subprocess
import sys

import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
import sympy as sp

from proofs_check.export import (
    limit_coefficients,
    limit_expressions,
    rho_coefficients,
    rho_expressions,
)
from proofs_check.limit import d, eps
from proofs_check.stability import critical_beta, hybrid_threshold, in_beta, lyapunov_exponent
from proofs_check.two_token import derive_rho_sde, derive_z_sde, r, r_of_rho

RNG = np.random.default_rng(20260129)
POINTS = [
    (
        float(RNG.uniform(-0.99, 0.99)),
        float(RNG.uniform(0, 4)),
        int(RNG.integers(2, 11)),
        float(RNG.uniform(0.2, 2)),
        float(RNG.uniform(0, 2)),
    )
    for _ in range(8)
]


def _design_formulas(x, b_, dim, e, m):
    """The rho-SDE as written in the design notes, typed independently, in mpmath."""
    x, b_, e, m = (mpmath.mpf(v) for v in (x, b_, e, m))
    rr = mpmath.exp(-b_ * (1 - x))
    a, b = 1 / (1 + rr), rr / (1 + rr)
    tilde_m = 2 * m * b + e**2 * (2 * (dim - 2) * a * b - (a**2 + b**2) * x)
    v = e * mpmath.sqrt(2 * (a**2 + b**2))
    g = 2 * m * b / (e**2 * (a**2 + b**2)) + (dim - 2) / mpmath.cosh(b_ * (1 - x)) - x
    return {
        "drift": (1 - x**2) * tilde_m,
        "diffusion": (1 - x**2) * v,
        "z_drift": tilde_m + x * v**2,
        "z_diffusion": v,
        "z_scale_rate": 2 * (tilde_m + x * v**2) / v**2,
        "scale_g": g,
    }


def test_exported_expressions_are_the_derived_ones():
    sde = derive_rho_sde()
    z_drift, z_diffusion = derive_z_sde()
    exprs = {name: expr for name, (_, expr) in rho_expressions().items()}
    assert sp.simplify(exprs["drift"] - sde.drift.subs(r, r_of_rho())) == 0
    assert sp.simplify(exprs["diffusion"] ** 2 - sde.variance.subs(r, r_of_rho())) == 0
    assert exprs["lyapunov_plus"] == lyapunov_exponent(1)
    assert exprs["lyapunov_minus"] == in_beta(lyapunov_exponent(-1))
    assert exprs["critical_beta"].subs(d, 7) == critical_beta().subs(d, 7)
    eps2, _ = hybrid_threshold()
    assert exprs["hybrid_threshold_eps2"].args[0][0] == in_beta(eps2)
    assert exprs["z_drift"] == z_drift
    assert exprs["z_diffusion"] == z_diffusion
    assert sp.simplify(exprs["z_scale_rate"] - 2 * z_drift / z_diffusion**2) == 0
    (_, c), (_, k) = (
        limit_expressions()["normal_drift"],
        limit_expressions()["covariance_coefficient"],
    )
    assert sp.expand(c + eps**2 * (d - 1) / 2) == 0
    assert k == eps**2


@pytest.mark.parametrize("point", POINTS)
def test_numpy_matches_independent_formulas(point):
    rc = rho_coefficients("numpy")
    x, b_, dim, e, m = point
    expected = _design_formulas(x, b_, dim, e, m)
    zz = float(mpmath.atanh(x))
    got = {
        "drift": rc.drift(x, b_, dim, e, m),
        "diffusion": rc.diffusion(x, b_, dim, e, m),
        "z_drift": rc.z_drift(zz, b_, dim, e, m),
        "z_diffusion": rc.z_diffusion(zz, b_, dim, e, m),
        "z_scale_rate": rc.z_scale_rate(zz, b_, dim, e, m),
        "scale_g": rc.scale_g(x, b_, dim, e, m),
    }
    for name, value in got.items():
        assert float(value) == pytest.approx(float(expected[name]), rel=1e-12, abs=1e-13), name


def test_jax_matches_numpy_and_broadcasts():
    rn, rj = rho_coefficients("numpy"), rho_coefficients("jax")
    x = np.linspace(-1, 1, 7)[:, None]
    b_ = np.array([0.0, 0.5, 3.0])[None, :]
    for name in ("drift", "diffusion", "scale_g"):
        out_n = getattr(rn, name)(x, b_, 5, 1.3, 0.7)
        out_j = getattr(rj, name)(jnp.asarray(x), jnp.asarray(b_), 5, 1.3, 0.7)
        assert out_n.shape == (7, 3)
        np.testing.assert_allclose(np.asarray(out_j), out_n, rtol=1e-12, atol=1e-14)
    betas = np.array([0.0, 1.0, 2.0, 5.0])
    np.testing.assert_allclose(
        np.asarray(rj.lyapunov_minus(jnp.asarray(betas), 6, 1.0, 0.5)),
        rn.lyapunov_minus(betas, 6, 1.0, 0.5),
        rtol=1e-12,
    )


def test_critical_beta_values():
    rc = rho_coefficients("numpy")
    dims = np.arange(2, 12)
    expected = [0.0, 0.0] + [float(mpmath.acosh(k - 2) / 2) for k in range(4, 12)]
    np.testing.assert_allclose(rc.critical_beta(dims), expected, rtol=1e-14)


def test_lyapunov_values():
    rc = rho_coefficients("numpy")
    assert float(rc.lyapunov_plus(1.0, 5, 2.0, 0.5)) == pytest.approx(-2 * 0.5 - 4 * 4)
    # Pure noise at beta_c: zero; independent formula sigma^2 (d-2-cosh 2b)/cosh^2 b.
    for dim, b_ in [(4, 0.3), (7, 1.1), (10, 2.5)]:
        expected = 1.7**2 * (dim - 2 - mpmath.cosh(2 * b_)) / mpmath.cosh(b_) ** 2
        assert float(rc.lyapunov_minus(b_, dim, 1.7, 0.0)) == pytest.approx(
            float(expected), rel=1e-12
        )
        assert float(
            rc.lyapunov_minus(float(rc.critical_beta(dim)), dim, 1.7, 0.0)
        ) == pytest.approx(0, abs=1e-12)


def test_hybrid_threshold_values():
    rc = rho_coefficients("numpy")
    dim = 5
    bc = float(rc.critical_beta(dim))
    betas = np.array([bc - 0.2, bc + 0.3, 3.0, 8.0])
    e2 = rc.hybrid_threshold_eps2(betas, dim, 1.0)
    assert np.isinf(e2[0])
    for b_, value in zip(betas[1:], e2[1:], strict=True):
        assert float(rc.lyapunov_minus(b_, dim, np.sqrt(value), 1.0)) == pytest.approx(0, abs=1e-12)
    # Large beta: eps^2 e^{2 beta} -> 2 mu (relative correction O(d e^{-2 beta})).
    assert e2[-1] * np.exp(2 * 8.0) == pytest.approx(2.0, rel=1e-5)


def test_large_arguments_are_finite_without_warnings():
    rc = rho_coefficients("numpy")
    zs = np.array([-400.0, -50.0, 0.0, 50.0, 400.0])
    assert np.all(np.isfinite(rc.z_drift(zs, 30.0, 8, 1.0, 1.0)))
    assert np.all(np.isfinite(rc.z_diffusion(zs, 30.0, 8, 1.0, 1.0)))
    assert np.all(np.isfinite(rc.lyapunov_minus(np.array([0.0, 50.0, 400.0]), 8, 1.0, 1.0)))


def test_limit_coefficients():
    lc = limit_coefficients("numpy")
    assert float(lc.normal_drift(4, 2.0)) == -6.0
    assert float(lc.covariance_coefficient(0.5)) == 0.25
    lj = limit_coefficients("jax")
    assert float(lj.normal_drift(4, 2.0)) == -6.0


def test_import_is_cheap_and_lazy():
    code = "import sys, proofs_check.export; print('sympy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_unknown_backend():
    with pytest.raises(ValueError, match="backend"):
        rho_coefficients("torch")


def test_z_drift_at_infinity_is_half_the_lyapunov_exponent():
    # z = artanh(rho) ~ log(1 + rho)/2 as rho -> -1 and ~ -log(1 - rho)/2 as rho -> +1, so
    # the z-drift at -oo is lambda_-/2 and at +oo is -lambda_+/2 (an independent route
    # from the Ito change of variable to the linearization).
    rc = rho_coefficients("numpy")
    for dim, beta, e, m in [(4, 1.0, 1.0, 0.0), (7, 2.0, 0.5, 1.0), (3, 0.2, 1.5, 0.3)]:
        assert float(rc.z_drift(-40.0, beta, dim, e, m)) == pytest.approx(
            float(rc.lyapunov_minus(beta, dim, e, m)) / 2, rel=1e-12
        )
        assert float(rc.z_drift(40.0, beta, dim, e, m)) == pytest.approx(
            -float(rc.lyapunov_plus(beta, dim, e, m)) / 2, rel=1e-12
        )
