"""Figure 4 over n and d: the horizon rule, the edge estimator and its bootstrap, the
dominance spec and its sweep."""

import csv
import json

import numpy as np
import pytest

from spheresde import two_token
from spheresde.experiments import SCALES, BadParameters, DominanceRow, DominanceSpec, HybridSpec
from spheresde.experiments._edges import bootstrap_edges, dominance_edges, edge
from spheresde.experiments._monte_carlo import scaled_horizon

# ---------------------------------------------------------------------------- horizon rule


def test_horizon_is_max_of_base_and_scaled_and_capped():
    assert scaled_horizon(50.0, 0.0, 0.0, 0.01, 10) == 50.0  # no scaling: the fixed T
    assert scaled_horizon(50.0, 8.0, 0.0, 0.2, 10) == 200.0  # 8 / 0.04
    assert scaled_horizon(50.0, 8.0, 0.0, 1.0, 10) == 50.0  # never below T
    assert scaled_horizon(50.0, 8.0, 120.0, 0.2, 10) == 120.0  # the cap
    assert scaled_horizon(1.0, 1.0, 0.0, 0.3, 4) == 11.0  # 11.11 rounded to whole layers
    assert scaled_horizon(1.0, 1.0, 0.0, 0.3, 100) == 11.11


def test_default_hybrid_horizon_is_unchanged_at_every_eps():
    spec = HybridSpec()
    assert spec.horizon_scale == 0
    assert {spec.point_horizon(e) for e in (0.01, 0.25, 2.0)} == {spec.horizon}


def test_a_cap_below_the_base_horizon_is_refused():
    with pytest.raises(BadParameters, match="`max_horizon=10` is below `horizon=20`"):
        DominanceSpec(horizon=20.0, max_horizon=10.0)
    with pytest.raises(BadParameters, match="`horizon_scale`"):
        HybridSpec(horizon_scale=-1.0)


# ---------------------------------------------------------------------------- the edge


def test_edge_interpolates_in_log_eps():
    eps = np.geomspace(0.05, 2.0, 12)
    star = 0.3
    diff = 0.2 * np.log(eps / star)  # linear in log eps: interpolation is exact
    found, status, changes = edge(eps, diff)
    assert (status, changes) == ("edge", 1)
    assert found == pytest.approx(star, rel=1e-12)


@pytest.mark.parametrize(("diff", "status", "changes"), [
    ([-0.9, -0.5, -0.1, -0.2], "never", 0),
    ([0.0, 0.3, 0.5, 0.9], "always", 0),
    ([0.4, 0.1, -0.3, -0.6], "inverted", 1),
    ([-0.4, 0.1, -0.3, 0.6], "several", 3),
])
def test_edge_status(diff, status, changes):
    star, found, count = edge([0.1, 0.2, 0.4, 0.8], diff)
    assert (found, count) == (status, changes)
    if status == "several":  # the first upward crossing, between 0.1 and 0.2
        assert 0.1 < star < 0.2
    elif status != "edge":
        assert np.isnan(star)


def test_edge_refuses_an_unsorted_grid():
    with pytest.raises(ValueError, match="increasing"):
        edge([0.2, 0.1, 0.4], [-1.0, 0.0, 1.0])


def synthetic_counts(eps, star, trajectories, rng, undecided=0.1):
    """Counts with P(antipodal) - P(single) = 0.25 log(eps / star) (clipped), P(undecided)
    fixed: the edge is ``star`` exactly."""
    gap = np.clip(0.25 * np.log(eps / star), -(1 - undecided), 1 - undecided)
    p = np.stack([(1 - undecided - gap) / 2, (1 - undecided + gap) / 2,
                  np.full(eps.shape, undecided)], axis=1)
    return np.array([rng.multinomial(trajectories, q) for q in p])


def test_bootstrap_interval_covers_the_true_edge():
    # 60 synthetic sweeps of 12 eps x 400 trajectories; the nominal 95 % interval must
    # cover the true edge in at least 48 (binomial: 57 +- 1.7 expected; 48 is 5 s.d. low)
    rng = np.random.default_rng(7)
    eps = np.geomspace(0.05, 2.0, 12)
    star = 0.31
    covered, widths = 0, []
    for _ in range(60):
        counts = synthetic_counts(eps, star, 400, rng)
        boot = bootstrap_edges(eps, counts, replicates=500, rng=rng)
        low, high = np.nanpercentile(boot, [2.5, 97.5])
        covered += low <= star <= high
        widths.append(np.log(high / low))
    assert covered >= 48, covered
    # the width is the delta method's: 2 z sd / slope in log eps, sd = sqrt(0.9 / 400) of
    # P(antipodal) - P(single) at the edge, shrunk by at most 1/sqrt(2) by the two points
    # around it (0.53 to 0.74)
    delta = 2 * 1.96 * np.sqrt(0.9 / 400) / 0.25
    assert 0.6 * delta < np.median(widths) < 1.1 * delta


def test_bootstrap_is_seeded_and_checks_its_counts():
    eps = np.geomspace(0.1, 1.0, 5)
    counts = synthetic_counts(eps, 0.3, 100, np.random.default_rng(1))
    one = bootstrap_edges(eps, counts, replicates=50, rng=np.random.default_rng(3))
    two = bootstrap_edges(eps, counts, replicates=50, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(one, two)
    with pytest.raises(ValueError, match="one \\(single, antipodal, undecided\\) row per eps"):
        bootstrap_edges(eps, counts[:, :2], rng=np.random.default_rng(0))


def rows_with_edges(star_of_beta, *, tokens=8, dim=3, trajectories=200_000, seed=0):
    rng = np.random.default_rng(seed)
    eps = np.geomspace(0.05, 2.0, 12)
    rows = []
    for beta in (2.0, 3.0, 4.0, 5.0):
        counts = synthetic_counts(eps, star_of_beta(beta), trajectories, rng)
        for e, (s, a, u) in zip(eps, counts, strict=True):
            rows.append(DominanceRow(
                tokens=tokens, dim=dim, beta=beta, eps=float(e), single=int(s),
                antipodal=int(a), undecided=int(u), p_single=s / trajectories,
                p_antipodal=a / trajectories, p_undecided=u / trajectories,
                dominant="single", p_exact=np.nan, p_exact_horizon=np.nan, horizon=1.0,
                trajectories=trajectories))
    return rows


# the formation thresholds are derived symbolically on their first use in a process
# (sympy, 10-30 s): the fit tests are slow for that alone
@pytest.mark.slow
def test_fits_recover_the_paper_curve_when_the_edges_follow_it():
    rows = rows_with_edges(lambda b: float(two_token.paper_hybrid_threshold(b)))
    edges, (fit,) = dominance_edges(rows, DominanceSpec())
    assert [e.status for e in edges] == ["edge"] * 4
    assert fit.slope == pytest.approx(-0.5, abs=0.02)
    assert fit.slope_low <= -0.5 <= fit.slope_high
    assert abs(fit.paper_mean) < 0.02
    assert fit.paper_max < 0.03
    assert fit.paper_inside == "2 3 4 5"
    # the two-token linearization is e^-beta steeper: far from these edges at beta = 5
    assert fit.two_token_max > 1.0


@pytest.mark.slow
def test_fits_see_a_steeper_edge():
    rows = rows_with_edges(lambda b: 1.5 * np.exp(-b), tokens=4, dim=4)
    _, (fit,) = dominance_edges(rows, DominanceSpec())
    assert fit.slope == pytest.approx(-1.0, abs=0.03)
    assert not fit.slope_low <= -0.5 <= fit.slope_high
    assert fit.paper_inside == "none"


# ---------------------------------------------------------------------------- the spec


def test_points_are_every_n_d_beta_eps_and_the_horizon_scales():
    spec = DominanceSpec(tokens=(2, 5), dims=(3, 4), betas=(1.0, 2.0), eps=(0.1, 1.0),
                         horizon=10.0, horizon_scale=2.0, max_horizon=150.0)
    points = spec.points()
    assert len(points) == 16
    assert points[0] == {"tokens": 2, "dim": 3, "beta": 1.0, "eps": 0.1}
    assert points[-1] == {"tokens": 5, "dim": 4, "beta": 2.0, "eps": 1.0}
    assert spec.point_horizon(0.1) == 150.0
    assert spec.point_horizon(1.0) == 10.0


def test_full_preset_is_the_documented_sweep():
    spec = SCALES["full"]["dominance"]
    assert spec.tokens == (2, 3, 4, 8, 16)
    assert spec.dims == (2, 3, 4)
    assert len(spec.eps) >= 12
    assert min(spec.eps) == 0.05
    assert max(spec.eps) == 2.0
    assert np.allclose(np.diff(np.log(spec.eps)), np.log(40) / 11, rtol=0.01)


# ---------------------------------------------------------------------------- a sweep


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.slow  # compiles the network for each (n, eps): ~15 s
def test_a_tiny_dominance_sweep_end_to_end(tmp_path):
    from spheresde.experiments import RunOptions, run

    spec = SCALES["smoke"]["dominance"]
    lines = run(spec, tmp_path, RunOptions(quiet=True)).summary()
    assert "dominance.png" in lines[0]
    table = read(tmp_path / "dominance.csv")
    assert len(table) == len(spec.points())
    for r in table:
        assert int(r["single"]) + int(r["antipodal"]) + int(r["undecided"]) == spec.trajectories
        assert float(r["horizon"]) == spec.point_horizon(float(r["eps"]))
        exact = float(r["p_exact"])
        assert np.isnan(exact) == (r["tokens"] != "2")
    # the edges and fits are written beside it, one row per (n, d, beta) and (n, d)
    assert len(read(tmp_path / "dominance_edges.csv")) == 2 * len(spec.betas)
    assert len(read(tmp_path / "dominance_fits.csv")) == 2
    # a rerun resumes: nothing computed again, the same table
    before = (tmp_path / "dominance.csv").read_text()
    run(spec, tmp_path, RunOptions(quiet=True))
    meta = json.loads((tmp_path / "dominance.json").read_text())
    assert meta["runs"][-1]["points_computed"] == 0
    assert (tmp_path / "dominance.csv").read_text() == before


def test_a_hybrid_point_simulates_and_echoes_its_own_horizon(monkeypatch):
    from spheresde.experiments import _monte_carlo

    seen = {}

    def fake_counts(method, key, **sizes):
        seen.update(sizes)
        return {"outcomes": [5, 3, 2], "minority": [0, 3], "steps": 0}

    monkeypatch.setattr(_monte_carlo, "simulate_counts", fake_counts)
    spec = HybridSpec(horizon=10.0, horizon_scale=2.0, max_horizon=500.0, layers=10)
    point = {"beta": 3.0, "eps": 0.1}
    counts = spec.chunk(point, 0, 10)
    assert seen["horizon"] == 200.0
    row = spec.finish(point, [counts])
    assert row.horizon == 200.0
    assert (row.p_single, row.p_antipodal, row.p_undecided) == (0.5, 0.3, 0.2)


@pytest.mark.slow  # two sweeps and their figures: ~20 s
def test_grouped_tasks_give_the_numbers_of_one_chunk_a_task(tmp_path):
    """Small points run together (one task, one store transaction; here 4 tasks of 5 to 7
    chunks that cut across points) draw the same numbers as one chunk a task: each chunk
    keeps the key of its own (seed, point, chunk)."""
    from spheresde.experiments import RunOptions
    from spheresde.experiments.engine._driver import grouped

    spec = DominanceSpec(tokens=(3,), betas=(1.0, 4.0), eps=(0.5, 1.0, 2.0), trajectories=24,
                         layers=5, horizon=2.0, horizon_scale=0.0, max_horizon=0.0)
    chunks = [(p, k) for p in spec.points() for k in range(4)]
    assert [len(g) for g in grouped(spec, (7, 7, 7, 3), 10**9, 1, chunks)] == [6, 7, 6, 5]
    spec.run(tmp_path / "alone", RunOptions(quiet=True, chunk_size=7, task_steps=0))
    spec.run(tmp_path / "grouped", RunOptions(quiet=True, chunk_size=7))
    for name in ("dominance.csv", "dominance_edges.csv"):
        assert ((tmp_path / "grouped" / name).read_bytes()
                == (tmp_path / "alone" / name).read_bytes())
