"""LayerNorm networks and the Monte Carlo of the layers beyond the paper's."""

import jax
import jax.numpy as jnp
import jaxtyping
import numpy as np
import pytest
import sympy as sp

import spheresde
from proofs_check.layers import beta1, beta2, gamma, two_token
from proofs_check.symbols import beta, d, eps, mu, rho
from spheresde.experiments import BadParameters
from spheresde.experiments._phase import PhaseSpec
from spheresde.transformer._beyond import PairLayer, one_layer_moments, simulate_pair


@pytest.mark.slow
def test_layernorm_network_stays_on_the_hyperplane_sphere(getkey):
    x0 = spheresde.sample_uniform(getkey(), (3,), 5)
    out = spheresde.transformer.simulate_network(getkey(), x0, 1.0, layers=10, horizon=1.0,
                                     trajectories=4, norm="layer").tokens
    assert jnp.max(jnp.abs(jnp.linalg.norm(out, axis=-1) - 1)) < 1e-12
    assert jnp.max(jnp.abs(out.sum(axis=-1))) < 1e-12


def test_layernorm_inputs_are_checked():
    # the run-time type check (tests) or the function's own check (users) refuses it
    with pytest.raises((ValueError, jaxtyping.TypeCheckError), match="norm"):
        spheresde.transformer.simulate_network(jax.random.key(0), jnp.eye(2, 3), 1.0, layers=2,
                                   horizon=1.0, trajectories=1, norm="batch")
    with pytest.raises(ValueError, match="norm must be one of 'rms', 'layer'"):
        spheresde.transformer.normalization("batch")
    with pytest.raises(BadParameters, match="`norm='layer'` needs"):
        PhaseSpec(norm="layer", method="particles")
    assert PhaseSpec(norm="layer", method="discrete").norm == "layer"


@pytest.mark.slow
def test_layernorm_law_is_the_rms_law_one_dimension_down():
    assert spheresde.transformer.LayerNorm().two_token_dimension(5) == 4
    assert spheresde.transformer.RMSNorm().two_token_dimension(5) == 5


@pytest.mark.parametrize("norm", ["rms", "layer"])
def test_start_pair_has_the_inner_product(norm):
    x = np.asarray(_start(norm))
    np.testing.assert_allclose(x @ x.T, [[1, -0.3], [-0.3, 1]], atol=1e-14)
    if norm == "layer":
        np.testing.assert_allclose(x.sum(axis=1), 0, atol=1e-14)


def _start(norm):
    from spheresde.transformer._beyond import start_pair

    return start_pair(-0.3, PairLayer(4, norm=norm))


# One layer at L = 10^4, 40,000 draws: |z| < 4 for drift and variance, z = (MC - derived)
# / standard error; the bias of the one-layer estimate is O(1/L) = 1e-4 (relative).
MOMENT_CASES = [
    ("layer", PairLayer(5, (1.5,), norm="layer"), {d: 5, beta: 1.5, eps: 1.0, mu: 0.0}, 0.2),
    ("heads", PairLayer(5, (0.5, 2.5)), {d: 5, beta1: 0.5, beta2: 2.5, eps: 1.0}, -0.5),
    ("mlp", PairLayer(5, (1.5,), gamma=0.7), {d: 5, beta: 1.5, eps: 1.0, gamma: 0.7}, -0.95),
]


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "layer", "values", "rho0"), MOMENT_CASES)
def test_one_layer_moments_match_the_derived_rho_sde(kind, layer, values, rho0):
    sde = two_token(kind)
    mc = one_layer_moments(jax.random.key(11), rho0, layer, layers=10_000, samples=40_000)
    m = float(sde.drift.subs(values).subs(rho, rho0))
    v = float(sde.variance.subs(values).subs(rho, rho0))
    assert abs(mc["drift"] - m) < 4 * mc["drift_se"]
    assert abs(mc["variance"] - v) < 4 * mc["variance_se"]


@pytest.mark.slow
def test_a_wrong_law_is_rejected_by_the_moment_check():
    # The RMS law at d = 5 is not LayerNorm's at d = 5: the same Monte Carlo sees it.
    layer = PairLayer(5, (1.5,), norm="layer")
    mc = one_layer_moments(jax.random.key(3), 0.2, layer, layers=10_000, samples=4000)
    wrong = float(two_token("rms").drift.subs({d: 5, beta: 1.5, eps: 1.0, mu: 0.0, rho: 0.2}))
    assert abs(mc["drift"] - wrong) > 4 * mc["drift_se"]


@pytest.mark.slow
def test_simulate_pair_keeps_unit_tokens():
    out = simulate_pair(jax.random.key(0), PairLayer(4, (1.0,), gamma=0.5), layers=10,
                        horizon=1.0, trajectories=8)
    assert out.shape == (8,)
    assert np.all(np.abs(out) <= 1 + 1e-12)


@pytest.mark.slow
def test_reduced_simulation_of_a_derived_sde_matches_the_kolmogorov_law():
    # The paper's two-token SDE from the engine, simulated in z: 4000 paths at d = 6,
    # beta = 1.5, T = 5, against the finite-horizon law; |z| < 4 with the binomial se.
    from proofs_check.engine import canonical
    from spheresde.transformer._beyond import simulate_rho_sde

    values = {d: 6, beta: 1.5, eps: 1.0, mu: 0.0}
    sde = two_token("rms")
    m = sp.lambdify(rho, canonical(sde.drift / (1 - rho**2)).subs(values), "jax")
    v = sp.lambdify(rho, canonical(sde.variance / (1 - rho**2) ** 2).subs(values), "jax")
    rho_t = simulate_rho_sde(jax.random.key(5), m, v, d=6, dt=2e-3, horizon=5.0,
                             trajectories=4000)
    p = np.mean(rho_t < -0.99)
    law = float(spheresde.two_token.outcome_probabilities(1.5, 6, horizon=5.0, tol=1e-2)
                .antipodal)
    assert abs(p - law) < 4 * np.sqrt(law * (1 - law) / 4000)
