"""Five answers to one question: how often do two uniform tokens end antipodal?

The exact scale-function probability, the reduced SDE of rho (Monte Carlo in
z = artanh rho), the particle SDE on (S^{d-1})^2 (spheresde.solve_batch, geodesic Euler,
with Gaussian and with two-point increments) and the discrete network must agree, on
both sides of beta_c(d). Every Monte Carlo estimate may differ from the exact value by
4 binomial standard errors plus its undecided fraction (paths not yet within tol = 1e-2
of rho = +-1 at the horizon).
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from spheresde import sample_uniform, solve_batch, two_token
from spheresde.transformer import outcome_fractions, simulate_network, transformer_sde

LAYERS = 100  # network: L = 100; SDEs: dt = 1/L, as in the paper's Figure 3
HORIZON = 30.0


def _check(name, fractions, exact):
    bound = 4 * fractions.antipodal_se + fractions.undecided
    print(f"{name:>9}: antipodal {fractions.antipodal:.4f} +- {fractions.antipodal_se:.4f}, "
          f"undecided {fractions.undecided:.4f}, exact {exact:.4f}")
    assert abs(fractions.antipodal - exact) <= bound + 1e-12, name


@pytest.mark.slow
@pytest.mark.parametrize(("d", "beta"), [(4, 0.4), (4, 2.0), (7, 2.5)])
def test_exact_reduced_particles_network_agree(d, beta):
    # beta_c(4) = 0.66, beta_c(7) = 1.15: one point below (exact answer 0), two above.
    exact = float(two_token.antipodal_probability(beta, d))
    assert (exact > 0) == (beta > two_token.critical_beta(d))
    key = jax.random.key(100 * d + int(10 * beta))
    k_rho, k_start, k_sde, k_net, k_weak = jax.random.split(key, 5)

    # 8000 reduced paths: standard error <= 0.0056
    rho = two_token.simulate_rho(k_rho, beta, d, trajectories=8000, dt=1 / LAYERS,
                                 horizon=HORIZON, block=8)
    _check("reduced", two_token.rho_fractions(rho), exact)

    # 1500 particle paths (twice) and 1500 network runs: standard error <= 0.013
    runs = 1500
    tokens0 = sample_uniform(k_start, (runs, 2), d)
    sde = transformer_sde(beta, d=d, noise="span", n=2)
    ys = solve_batch(sde, tokens0, 0.0, HORIZON, 1 / LAYERS, key=k_sde).ys[:, -1]
    _check("particles", outcome_fractions(ys), exact)
    # The same with two-point increments (brownian="weak", weak order 1: the law only).
    ys = solve_batch(sde, tokens0, 0.0, HORIZON, 1 / LAYERS, key=k_weak, brownian="weak").ys[:, -1]
    _check("weak", outcome_fractions(ys), exact)

    net = simulate_network(k_net, tokens0, beta, layers=LAYERS, horizon=HORIZON,
                           trajectories=runs)
    _check("network", outcome_fractions(net.tokens), exact)
    assert jnp.all(jnp.isfinite(net.tokens))
    assert np.isfinite(exact)


# The rule every REPORT.md section judges a Monte Carlo point by (experiments/_agreement).


def _row(cls, **given):
    """A row of ``cls`` with the given fields, the defaulted ones at their default (a
    Figure 3 row without ``p_network`` is judged against ``p_finite``) and 0 elsewhere."""
    return cls(**{f.name: given.get(f.name, 0 if f.default is dataclasses.MISSING else f.default)
                  for f in dataclasses.fields(cls)})


def test_the_error_bar_is_the_larger_of_the_estimate_and_the_reference():
    from spheresde.experiments import PhaseRow
    from spheresde.experiments._agreement import agreement_band, mc_agreement, z_score

    # no antipodal sample in N = 400 against p = 0.1: judged by sqrt(0.1 * 0.9 / 400) = 0.015
    miss = _row(PhaseRow, p_antipodal=0.0, p_finite=0.1, trajectories=400)
    assert z_score(miss, 0.1) == pytest.approx(-0.1 / 0.015)
    assert agreement_band(miss) == pytest.approx(4 * 0.015)
    # p = 0.5 in N = 400 against p = 0.45: the estimate's sqrt(0.25 / 400) = 0.025 is larger
    near = _row(PhaseRow, p_antipodal=0.5, p_finite=0.45, trajectories=400)
    assert z_score(near, 0.45) == pytest.approx(0.05 / 0.025)
    assert mc_agreement([miss, near])[:2] == (1, 2)
    # no error bar at all: 0 for an exact match, infinite otherwise
    sure = _row(PhaseRow, p_antipodal=0.0, trajectories=400)
    assert (z_score(sure, 0.0), z_score(sure, 1.0)) == (0.0, -np.inf)


def test_dominance_rows_follow_the_same_rule_as_figure_3():
    from spheresde.experiments import DominanceRow, PhaseRow
    from spheresde.experiments._agreement import mc_agreement, z_score

    # 1 antipodal sample in N = 100 where the exact finite-horizon value is 0: the
    # estimate's error bar sqrt(0.01 * 0.99 / 100) = 0.00995 gives z = 1.005, within 4
    # (the dominance section's old rule, the reference's error bar alone, gave 1e10)
    phase = _row(PhaseRow, p_antipodal=0.01, p_finite=0.0, trajectories=100)
    two = _row(DominanceRow, tokens=2, p_antipodal=0.01, p_exact_horizon=0.0, trajectories=100)
    assert z_score(two, 0.0) == z_score(phase, 0.0) == pytest.approx(0.01 / 0.00995, rel=1e-4)
    assert mc_agreement([two]) == mc_agreement([phase])
    assert mc_agreement([two])[:2] == (1, 1)
