"""The general symbolic Ito tools of proofs_check.ito on SDEs with known answers."""

import pytest
import sympy as sp

from proofs_check.ito import (
    generator,
    ito_lemma,
    ito_lemma_1d,
    ito_to_stratonovich,
    stratonovich_correction,
    stratonovich_to_ito,
)

x, y, z = sp.symbols("x y z", real=True)
sigma, a = sp.symbols("sigma a", positive=True)


def test_round_trip_is_identity_for_matrix_noise():
    # A 3-d state driven by 2 x 2 noise (4 columns), with state-dependent coefficients.
    state = [x, y, z]
    drift = [x * y, sp.sin(z), x**2]
    diffusion = [[[x, y], [z, 1]], [[y * z, 0], [x, x * y]], [[1, z], [sp.cos(x), y]]]
    back = stratonovich_to_ito(state, ito_to_stratonovich(state, drift, diffusion), diffusion)
    assert sp.simplify(back - sp.Matrix(drift)) == sp.zeros(3, 1)


def test_correction_of_linear_noise_matches_hand_computation():
    # dX = B X o dW (one noise, B constant): correction 1/2 B^2 X.
    b = sp.Matrix([[0, -1], [1, 0]]) * a
    column = b * sp.Matrix([x, y])
    correction = stratonovich_correction([x, y], [[column[0]], [column[1]]])
    assert sp.simplify(correction - (b * b * sp.Matrix([x, y])) / 2) == sp.zeros(2, 1)


def test_circle_brownian_motion_is_sphere_preserving():
    # Ito: dX = -X/2 dt + J X dW keeps |X|^2 = 1 exactly (drift and noise of |X|^2 vanish).
    drift, row = ito_lemma(x**2 + y**2, [x, y], [-x / 2, -y / 2], [[-y], [x]])
    assert sp.simplify(drift) == 0
    assert sp.simplify(row[0, 0]) == 0
    # Without the Ito drift the norm grows: the check can fail.
    drift_bad, _ = ito_lemma(x**2 + y**2, [x, y], [0, 0], [[-y], [x]])
    assert sp.simplify(drift_bad - (x**2 + y**2)) == 0


def test_generator_of_ornstein_uhlenbeck():
    # dX = -a X dt + sigma dW: L x^2 = -2 a x^2 + sigma^2.
    assert sp.expand(generator(x**2, [x], [-a * x], [[sigma]])) == -2 * a * x**2 + sigma**2


def test_ito_lemma_1d_log_of_gbm():
    # dX = a X dt + sigma X dB: d log X = (a - sigma^2/2) dt + sigma dB.
    drift, diffusion = ito_lemma_1d(sp.log(x), x, a * x, sigma * x)
    assert sp.simplify(drift - (a - sigma**2 / 2)) == 0
    assert sp.simplify(diffusion - sigma) == 0


def test_shape_mismatch_is_rejected():
    with pytest.raises(ValueError, match=r"N = 2 state variables, got shape \(1, 1\)"):
        stratonovich_correction([x, y], [[x]])
