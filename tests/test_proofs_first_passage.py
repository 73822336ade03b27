"""proofs_check.first_passage: the generator of the height, the mean exit times it gives, and
the lambdified closed forms the first-passage tests use."""

import math

import pytest
import sympy as sp

from proofs_check import first_passage as fp


def test_generator_of_the_height():
    assert fp.ito_generator_residual() == 0
    assert fp.laplacian_generator_residual(3) == 0
    # the generator acts on z^2 as 1 - d z^2 (E|<Y, e>|^2 relaxes to 1/d)
    assert sp.expand(fp.height_generator(4, fp.z**2) - (1 - 4 * fp.z**2)) == 0


@pytest.mark.parametrize("d", [2, 3, pytest.param(5, marks=pytest.mark.slow)])
def test_profiles_solve_the_boundary_value_problems(d):
    cap, band = fp.cap_profile(d), fp.band_profile(d)
    assert sp.simplify(fp.height_generator(d, cap) + 1) == 0
    assert sp.simplify(cap.subs(fp.z, fp.c)) == 0
    assert sp.simplify(fp.height_generator(d, band) + 1) == 0
    assert sp.simplify(band.subs(fp.z, fp.h)) == 0
    assert sp.simplify(sp.diff(band, fp.z).subs(fp.z, 0)) == 0


@pytest.mark.slow
def test_stated_closed_forms_and_a_wrong_one():
    for d, stated in fp.STATED_CAP.items():
        assert fp._zero(fp.cap_exit_time_expr(d) - stated) == 0, d
    assert fp._zero(fp.band_exit_time_expr(3) - fp.STATED_BAND[3]) == 0
    # the S^2 formula is not the S^4 one: the residual can fail
    assert fp._zero(fp.cap_exit_time_expr(5) - fp.STATED_CAP[3]) != 0


def test_lambdified_values():
    # independent numbers: S^2 hemisphere 2 ln 2; circle: alpha^2; band on S^2 -ln(1 - h^2)
    assert float(fp.mean_exit_time(3, math.pi / 2)) == pytest.approx(2 * math.log(2), 1e-12)
    assert float(fp.mean_exit_time(2, 0.7)) == pytest.approx(0.49, 1e-12)
    assert float(fp.band_exit_time(3, 0.5)) == pytest.approx(-math.log(0.75), 1e-12)
    # S^4 from the pole, small cap: E tau ~ alpha^2 / (d - 1) (flat 4-dim Brownian motion)
    assert float(fp.mean_exit_time(5, 1e-3)) == pytest.approx(1e-6 / 4, 1e-4)
    # larger caps take longer
    assert float(fp.mean_exit_time(5, 1.0)) > float(fp.mean_exit_time(5, 0.5))


@pytest.mark.parametrize(("call", "message"), [
    (lambda: fp.mean_exit_time(4, 1.0), "odd d"),
    (lambda: fp.mean_exit_time(3, 4.0), r"angle must lie in \(0, pi\)"),
    (lambda: fp.band_exit_time(3, 1.0), r"height must lie in \(0, 1\)"),
])
def test_bad_inputs(call, message):
    with pytest.raises(ValueError, match=message):
        call()
