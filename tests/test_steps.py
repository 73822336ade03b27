"""One rule for the steps of a horizon: ``network_depth(T, L) = round(T L)`` steps of
``1/L``, counted once per chunk and taken by every method.

At ``T L`` half a layer off a whole number the rules that used to sit side by side
disagreed: ``round(T / dt)`` of the reduced SDE rounds the float quotient
``0.35 / 0.1 = 3.4999...`` to 3 where ``round(0.35 * 10) = 4``, and the particle SDE's
step grid took ``ceil`` (3 steps at ``T L = 2.5``, the last one half a step, where the
network took 2).
"""

import jax
import pytest

from spheresde.transformer import PureNoise
from spheresde.transformer._network import horizon_steps, network_depth, reached_horizon

# T, L and round(T L) (half to even): half a layer each, one where the float quotient
# T / (1/L) falls below the half
AWKWARD = [(0.25, 10, 2), (0.35, 10, 4), (0.15, 10, 2)]


@pytest.mark.slow  # each point compiles three simulators: 4 to 15 s
@pytest.mark.parametrize(("horizon", "layers", "steps"), AWKWARD)
def test_every_method_of_a_run_takes_the_same_steps(monkeypatch, horizon, layers, steps):
    """The steps each method really takes: the reduced SDE's and the network's counted by
    their loops (no absorption: every step), the particle SDE's from the step grid that
    its solve builds (recorded as it is built)."""
    from spheresde import _solve
    from spheresde.experiments import _simulate

    grids = []
    build = _solve._grid

    def recorded(t0, t1, dt):
        grids.append(grid := build(t0, t1, dt))
        return grid

    monkeypatch.setattr(_solve, "_grid", recorded)
    _simulate._compiled.cache_clear()  # a fresh trace, so that the grid is built here
    trajectories = 4
    taken = {}
    for method in ("reduced", "discrete", "particles"):
        counts = _simulate.simulate_counts(
            method, jax.random.PRNGKey(0), tokens=2, beta=1.0, d=3, weights=PureNoise(),
            trajectories=trajectories, layers=layers, horizon=horizon, tol=1e-3, absorb=0.0)
        taken[method] = counts["steps"] / trajectories
    taken["particles"] = len(grids[-1]) - 1
    _simulate._compiled.cache_clear()  # no compiled program holds the recording grid
    assert network_depth(horizon, layers) == steps
    assert taken == {"reduced": steps, "discrete": steps, "particles": steps}


@pytest.mark.parametrize(("horizon", "layers", "steps"), AWKWARD)
def test_a_step_dt_is_the_same_rule(horizon, layers, steps):
    """``horizon_steps(T, dt)`` (the reduced SDE of :func:`spheresde.two_token.simulate_rho`,
    the checks beyond the paper) is ``network_depth(T, 1/dt)``, not ``round(T / dt)``."""
    assert horizon_steps(horizon, 1 / layers) == steps
    assert reached_horizon(horizon, layers) == steps / layers


@pytest.mark.slow  # the finite-horizon law at two horizons: 3 s
def test_the_laws_are_compared_at_the_depth_time_reached():
    """A phase run at T = 0.25, L = 10 simulates 2 layers, depth-time 0.2: its
    finite-horizon law is the one at 0.2, not at 0.25."""
    from spheresde import two_token
    from spheresde.experiments import PhaseSpec

    spec = PhaseSpec(dims=(3,), betas=(1.0,), horizon=0.25, layers=10, trajectories=4)
    assert spec.reached() == 0.2
    counts = {"outcomes": [1, 2, 1], "minority": [0, 2], "steps": 8}  # the law is the test
    row = spec.finish({"d": 3, "beta": 1.0}, [counts])
    at = {t: float(two_token.outcome_probabilities(1.0, 3, horizon=t, tol=spec.tol).antipodal)
          for t in (0.2, 0.25)}
    assert at[0.2] != at[0.25]
    assert row.p_finite == at[0.2]
