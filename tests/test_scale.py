"""The paper's sizes: early absorption, chunked sweeps on Dask, --dry-run, run options."""

import json
import math
import os
import re
import signal
import threading
import time

import jax
import numpy as np
import pytest
from helpers import stored_records

from spheresde import two_token
from spheresde.transformer import PureNoise
from spheresde.transformer._absorption import absorbing_network, absorbing_rho, absorption_levels
from spheresde.transformer._outcomes import ANTIPODAL, SINGLE

TOL = 1e-2


# ------------------------------------------------------------------ the absorption levels


@pytest.mark.parametrize(("beta", "d", "bound"), [(1.5, 4, 1e-6), (3.0, 10, 1e-4)])
def test_single_level_matches_the_exact_return_probability(beta, d, bound):
    # P(back to 1 - tol | rho) = P(rho -> -1 | rho) / P(rho -> -1 | 1 - tol) by the scale
    # function; the exact side is two_token's independent quadrature (product rules in rho)
    _, z_hi = absorption_levels(beta, d, 1.0, 0.0, TOL, bound)
    ratio = (two_token.antipodal_probability(beta, d, rho0=math.tanh(z_hi))
             / two_token.antipodal_probability(beta, d, rho0=1 - TOL))
    assert 0.99 * bound < ratio <= bound * (1 + 1e-6)  # at the level, rounded outward


def test_antipodal_level_matches_the_exact_return_probability():
    beta, d, bound = 3.0, 4, 1e-2
    z_lo, _ = absorption_levels(beta, d, 1.0, 0.0, TOL, bound)
    single = lambda rho: 1 - two_token.antipodal_probability(beta, d, rho0=rho)  # noqa: E731
    ratio = single(math.tanh(z_lo)) / single(-(1 - TOL))
    assert 0.99 * bound < ratio <= bound * (1 + 1e-6)


def test_no_level_where_nothing_is_certified():
    assert absorption_levels(1.0, 4, 1.0, 0.0, TOL, 0.0) == (-math.inf, math.inf)
    below = two_token.critical_beta(6) - 0.1  # the antipodal pair repels: never absorb there
    z_lo, z_hi = absorption_levels(float(below), 6, 1.0, 0.0, TOL, 1e-6)
    assert z_lo == -math.inf
    assert math.isfinite(z_hi)


# ------------------------------------------------------------------ absorption on and off


# near beta_c(4) = 0.658 and beta_c(10) = 1.384, and far from it
@pytest.mark.slow
@pytest.mark.parametrize(("beta", "d"), [(0.7, 4), (3.0, 4), (1.45, 10)])
def test_reduced_with_and_without_absorption_agree(beta, d):
    # Same seed, so the same trajectories until absorption: every trajectory whose class
    # differs was absorbed and then (in the full run) came back, which the level bounds
    # by `bound` per trajectory. n = 4000, bound 1e-3: expected < 4 changes; allow 12
    # (Poisson(4) exceeds 12 with probability 1e-3). The fractions then agree far inside
    # their Monte Carlo error, sqrt(p(1-p)/n) <= 0.008.
    n, bound = 4000, 1e-3
    key = jax.random.PRNGKey(11)
    sizes = dict(beta=beta, d=d, eps=1.0, mu=0.0, trajectories=n, layers=50, steps=3000,
                 tol=TOL)
    full, full_work = absorbing_rho(key, bound=0.0, **sizes)
    cut, cut_work = absorbing_rho(key, bound=bound, **sizes)
    assert full_work == n * 3000
    assert cut_work < 0.8 * full_work  # the saving is real
    assert np.sum(full != cut) <= 12
    for code in (SINGLE, ANTIPODAL):
        diff = abs(np.mean(full == code) - np.mean(cut == code))
        assert diff <= 2 * math.sqrt(0.25 / n)


@pytest.mark.slow
@pytest.mark.parametrize(("beta", "d"), [(0.75, 4), (3.0, 4)])
def test_network_with_and_without_absorption_agree(beta, d):
    # as above for the discrete network, n = 1000, L = 10, T = 40, bound 1e-3: the
    # certificate is for the limit diffusion, so allow 8 changes (expected < 1 + O(1/L))
    n, bound = 1000, 1e-3
    key = jax.random.PRNGKey(5)
    sizes = dict(beta=beta, d=d, weights=PureNoise(), trajectories=n, layers=10,
                 steps=400, tol=TOL)
    full, full_work = absorbing_network(key, bound=0.0, **sizes)
    cut, cut_work = absorbing_network(key, bound=bound, **sizes)
    assert cut_work < full_work
    assert np.sum(full != cut) <= 8


# ------------------------------------------------------------------ run options, Dask


@pytest.mark.parametrize(("args", "says"), [
    (["--workers", "0"], "argument --workers: 0 must be >= 1"),
    (["--chunk-size", "0"], "argument --chunk-size: 0 must be >= 1"),
    (["--workers", "2", "--scheduler", "tcp://127.0.0.1:1"], "give one"),
])
def test_bad_run_options_are_one_line_and_exit_2(tmp_path, capsys, args, says):
    from spheresde.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["phase", "--method", "exact", *args, "--out", str(tmp_path / "o"), "--quiet"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert says in err
    assert not (tmp_path / "o").exists()


def test_dry_run_prints_the_plan_skips_stored_points_and_writes_nothing(tmp_path, capsys):
    from spheresde.cli import main

    exact = ["phase", "--method", "exact", "--dims", "4,5", "--out", str(tmp_path / "o")]
    assert main([*exact, "--betas", "1,2,3", "--dry-run"]) == 0
    assert "points: 6 to compute of 6 (0 stored)" in capsys.readouterr().out
    assert not (tmp_path / "o").exists()
    assert main([*exact, "--betas", "1", "--quiet"]) == 0  # two points stored
    before = {p.name: p.read_bytes() for p in (tmp_path / "o").iterdir()}
    assert main([*exact, "--betas", "1,2,3", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "points: 4 to compute of 6 (2 stored)" in out
    assert "estimated wall time: " in out
    assert "(no sampling)" in out
    assert {p.name: p.read_bytes() for p in (tmp_path / "o").iterdir()} == before


@pytest.mark.slow
def test_dry_run_counts_trajectory_steps_and_calibrates(tmp_path, capsys):
    from spheresde.cli import main

    assert main(["phase", "--dims", "4", "--betas", "1,2", "--trajectories", "300",
                 "--layers", "5", "--horizon", "100", "--chunk-size", "100", "--dry-run",
                 "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "chunks: 6 to compute, 3 per point of 100 trajectories" in out
    assert "trajectory-steps: 3.000e+05 (600 trajectories x 500 steps)" in out
    assert "trajectory-steps/s in this process" in out
    assert "estimated wall time" in out
    # the probes run the full horizon with absorption: by T = 100 nearly every pair has
    # settled (the exact finite-horizon undecided share is far below 1% here)
    share = re.search(r"probes: 2 point\(s\) over the grid, 100 trajectories each over the "
                      r"full horizon; early absorption: ([0-9.]+)% of the steps simulated", out)
    assert share, out
    assert float(share.group(1)) < 50
    assert "finishing (the laws of a row)" in out
    assert re.search(r"estimated wall time: .* \(1 process: stepping .*, compiling .*, "
                     r"finishing .*\)", out), out
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_dry_run_share_of_a_varying_horizon_is_of_its_own_steps(tmp_path):
    """Dominance's horizons grow as eps shrinks: the share simulated by the probes is
    taken of the probe points' own steps, never of the grid's average (which put it at
    133% at quick scale)."""
    from spheresde.experiments import DominanceSpec, RunOptions, estimate_sweep

    spec = DominanceSpec(tokens=(2,), betas=(1.0, 6.0), eps=(0.1, 1.5), trajectories=64,
                         layers=5, horizon=4.0, horizon_scale=2.0, max_horizon=100.0)
    plan = estimate_sweep(spec, tmp_path / "o", RunOptions(quiet=True))
    text = "\n".join(plan.lines)
    share = re.search(r"early absorption: ([0-9.]+)% of the steps simulated", text)
    assert share, text
    assert 0 < float(share.group(1)) <= 100
    steps = [spec.point_steps(p) for p in spec.points()]
    assert len(set(steps)) == 2  # eps = 0.1 runs to 100, eps = 1.5 to 4
    assert f"x {round(np.mean(steps))} steps on average" in text
    assert plan.seconds > 0


@pytest.mark.slow
def test_dry_run_prices_the_grid_where_it_costs_not_at_its_first_point(tmp_path):
    """A grid whose first point is its cheapest (3 tokens, then 48: a layer costs about
    n^2 d) is priced by probes over the grid, not at the first point's speed: the
    priced cost of a trajectory-step is well above the first point's (half the steps
    are at n = 48, each far dearer than one at n = 3). ``absorb=0``: nothing is
    absorbed, so only the cost per step differs."""
    from spheresde.experiments import RunOptions, TokensSpec, estimate_sweep

    spec = TokensSpec(tokens=(3, 48), betas=(1.0,), trajectories=256, layers=5, horizon=8.0,
                      weights="constant", absorb=0.0)
    text = "\n".join(estimate_sweep(spec, tmp_path / "o", RunOptions(quiet=True)).lines)
    priced = re.search(r"probes: 2 point\(s\) over the grid, 256 trajectories each over the "
                       r"full horizon(?:; early absorption: 100.0% of the steps simulated)?; "
                       r"priced at ([0-9]+) ns a trajectory-step \(the first "
                       r"point, every step: ([0-9]+) ns\)", text)
    assert priced, text
    assert int(priced.group(1)) > 3 * int(priced.group(2)), text


@pytest.mark.parametrize("dearest", [2.0, 30.0])
def test_dry_run_prices_a_chunk_at_its_own_width_not_per_trajectory_of_a_probe(
        monkeypatch, dearest):
    """A chunk costs a part fixed whatever its width (the last live trajectories of an
    absorbed batch, a formation's law) and a part per trajectory. Probes of 256
    trajectories priced per trajectory read the fixed part 10,000 / 256 times over; the
    plan measures the probes again at the chunk's width, dearest first, while its budget
    lasts, and scales the others by the ratio those showed. A fake clock: no timing in a
    unit test."""
    from types import SimpleNamespace

    from spheresde.experiments.engine import _planning

    clock, call, per = [0.0], 0.01, 1e-4  # seconds: a chunk's own, and a trajectory's
    fixed = [dearest, 1.0, 0.5]

    class Spec:
        def chunk(self, point, k, size):
            clock[0] += call + fixed[point["i"]] + per * size

        def clear_point_caches(self):
            pass

        def shortened(self, steps):
            return SimpleNamespace(chunk=lambda point, k, size: clock.__setitem__(
                0, clock[0] + call), clear_point_caches=lambda: None)

    monkeypatch.setattr(_planning, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    monkeypatch.setattr(_planning, "PROBE_BUDGET", 10.0)
    points = [{"i": i} for i in range(3)]
    narrow, wide = 256, 10_000
    bare = [f + per * narrow for f in fixed]  # the narrow probes, less a chunk's own cost
    probe = _planning.Probes(3, [b + call for b in bare], 3 * narrow * 100, 1.0, [{}] * 3,
                             points, 0, 0.0)
    net, widened = _planning._widen(Spec(), probe, narrow, wide, call, bare)
    true = [(f + per * wide) * narrow / wide for f in fixed]  # a chunk of 10,000, per 256
    if dearest == 2.0:  # the three chunks fit the budget: each measured at its width
        assert widened == 3
        assert net == pytest.approx(true, rel=1e-9)
    else:  # the dearest first, then the budget is spent: the others scaled by its ratio
        assert widened == 1
        assert net[0] == pytest.approx(true[0], rel=1e-9)
        ratio = (fixed[0] + per * wide) / bare[0]
        assert net[1:] == pytest.approx([b * ratio * narrow / wide for b in bare[1:]],
                                        rel=1e-9)
    # per trajectory of the narrow probes, the sweep would have read many times dearer
    assert sum(bare) / sum(net) > 5
    monkeypatch.setattr(_planning, "PROBE_BUDGET", 0.0)  # no budget: as measured narrow
    assert _planning._widen(Spec(), probe, narrow, wide, call, bare) == (bare, 0)


def test_dry_run_prices_a_chunk_from_cold_caches_once_a_point_and_process(monkeypatch):
    """A point's laws (absorption levels, formation laws) are computed by its first chunk
    in a process and cached for the later ones: a chunk costs ``cold`` then, ``warm``
    after. The plan measures both (a fake clock: no timing in a unit test) and prices
    ``cold`` only for a point's first chunk in each process that runs one."""
    from types import SimpleNamespace

    from spheresde.experiments.engine import _planning

    clock, cached = [0.0], set()
    cold, warm = 0.030, 0.012

    def chunk(point, k, size):
        clock[0] += warm if point["i"] in cached else cold
        cached.add(point["i"])

    short = SimpleNamespace(chunk=chunk, clear_point_caches=cached.clear)
    spec = SimpleNamespace(shortened=lambda steps: short)
    monkeypatch.setattr(_planning, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    monkeypatch.setattr(_planning, "_compile_seconds", lambda: 0.0)
    points = [{"i": i} for i in range(7)]
    assert _planning._call_seconds(spec, points, 10_000) == pytest.approx((cold, warm))
    # 4 chunks a point over 2 workers: 2 cold; 1 chunk left: 1; serial: 1
    assert _planning._first_chunks([4, 4, 1], parallel=2) == 5
    assert _planning._first_chunks([4, 4, 1], parallel=1) == 3


@pytest.mark.slow
def test_dry_run_counts_the_programs_a_sweep_compiles():
    """The network's shapes follow d (a program per dimension); the 1-D rho SDE takes d as a
    number (one program for every d)."""
    from spheresde.experiments import PhaseSpec
    from spheresde.experiments.engine._planning import _programs

    kind = dict(dims=(4, 5, 6), betas=(1.0, 2.0), trajectories=32, layers=5, horizon=2.0)
    network = PhaseSpec(**kind, method="discrete")
    reduced = PhaseSpec(**kind, method="reduced")
    assert _programs(network, network.points())[0] == 3
    assert _programs(reduced, reduced.points())[0] == 1


@pytest.mark.slow
def test_unreachable_scheduler_is_one_line_and_exit_2(tmp_path, capsys):
    from spheresde.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["phase", "--method", "exact", "--scheduler", "tcp://127.0.0.1:9",
              "--out", str(tmp_path), "--quiet"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "--scheduler tcp://127.0.0.1:9: cannot connect" in err


@pytest.mark.slow
def test_local_workers_keep_the_malloc_threshold_dynamic_and_blas_single_threaded():
    """Dask's ``MALLOC_TRIM_THRESHOLD_`` (it turns off glibc's dynamic mmap threshold:
    NumPy temporaries mapped afresh every time, chunks 1.5 to 2 times slower) is not in
    the local workers' environment; its one-thread BLAS and OpenMP are, and Dask's
    configuration is as it was once the cluster is gone."""
    import dask.config
    import distributed  # noqa: F401  (loads Dask's distributed configuration)

    from spheresde.experiments import RunOptions
    from spheresde.experiments.engine._executors import executor_for

    before = dask.config.get("distributed.nanny.pre-spawn-environ")
    assert "MALLOC_TRIM_THRESHOLD_" in before  # what the test guards against
    names = ("MALLOC_TRIM_THRESHOLD_", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")
    with executor_for(RunOptions(workers=1, quiet=True)) as executor:
        seen = executor.client.run(lambda: [os.environ.get(n) for n in names])
    assert list(seen.values()) == [[None, "1", "1"]]
    assert dask.config.get("distributed.nanny.pre-spawn-environ") == before


# two points x 4 chunks of the discrete network (the compact two-token path), smoke sizes
SMOKE = ["phase", "--dims", "4", "--betas", "1,3", "--trajectories", "160", "--layers", "5",
         "--horizon", "20", "--method", "discrete", "--chunk-size", "40", "--quiet"]


def worker_processes():
    """The live Dask worker processes below this one (a child that has exited, a zombie
    not yet reaped or one gone meanwhile, is not a worker to kill)."""
    import psutil

    workers = []
    for p in psutil.Process().children(recursive=True):
        try:
            if "spawn_main" in " ".join(p.cmdline()):
                workers.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied):  # ZombieProcess is one
            continue
    return workers


@pytest.mark.slow
def test_workers_give_the_serial_csv_byte_for_byte_even_when_one_dies(tmp_path):
    # serial, then --workers 2 with one worker killed (SIGKILL) once the first chunk is
    # stored: its chunks are recomputed elsewhere and the CSV is the serial one
    from spheresde.cli import main

    assert main([*SMOKE, "--out", str(tmp_path / "serial")]) == 0
    out = tmp_path / "workers"
    killed = []

    def kill_when_a_chunk_is_stored():
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not killed:
            workers = worker_processes()
            if stored_records(out, "chunks") and workers:
                os.kill(workers[0].pid, signal.SIGKILL)
                killed.append(workers[0].pid)
            time.sleep(0.02)

    watcher = threading.Thread(target=kill_when_a_chunk_is_stored)
    watcher.start()
    try:
        assert main([*SMOKE, "--workers", "2", "--out", str(out)]) == 0
    finally:
        killed.append(None)  # stops the watcher if the run ended first
        watcher.join()
    assert killed[0] is not None  # a worker did die mid-sweep
    assert (out / "phase.csv").read_bytes() == (tmp_path / "serial" / "phase.csv").read_bytes()
    runs = json.loads((out / "phase.json").read_text())["runs"]
    assert runs[0]["executor"] == "dask LocalCluster, 2 workers"


def test_report_states_the_networks_mean_signed_z_against_its_limit():
    # two points at p = 0.5 with 10,000 trajectories (se 0.005): offsets -0.01 and -0.02
    # are z = -2 and -4, mean -3.00; a point with p = 0 (no error bar) is left out, and so
    # is one whose law 1e-20 no sample of 10,000 can see (it would add z = 0 to the mean)
    from spheresde.experiments._phase import PhaseRow, _network_offset

    def row(p_mc, p, own=float("nan")):
        return PhaseRow(d=4, beta=1.0, p_antipodal=p_mc, p_single=1 - p_mc, p_undecided=0.0,
                        stderr=0.005, p_exact=p, p_finite=p, beta_c=0.5, trajectories=10_000,
                        p_network=own)

    text = _network_offset([row(0.49, 0.5), row(0.48, 0.5), row(0.0, 0.0),
                            row(0.0, 1e-20)], 100)
    assert "over the 2 points" in text
    assert "mean signed z is -3.00" in text
    # N p (1 - p) = 1 is resolved: 10,000 trajectories at p = 1.001e-4, none antipodal
    text = _network_offset([row(0.49, 0.5), row(0.48, 0.5), row(0.0, 1.001e-4)], 100)
    assert "over the 3 points" in text
    assert "p_network" not in text  # no chain law stored: nothing claimed about it
    # against its own law (0.48 for both: z = +2 and 0)
    text = _network_offset([row(0.49, 0.5, 0.48), row(0.48, 0.5, 0.48)], 100)
    assert "mean signed z is -3.00" in text
    assert "2/2 within 4 standard errors, largest |z| 2.00, mean signed z +1.00" in text
    assert text.startswith("The network with L = 100")
    # the reduced method's chain is the Euler chain of the reduced SDE, not the network
    text = _network_offset([row(0.49, 0.5, 0.48)], 10, "reduced")
    assert text.startswith("The reduced SDE's Euler chain with L = 10 is not its limit")


@pytest.mark.slow
def test_dry_run_counts_the_programs_that_absorption_compiles(tmp_path):
    """Early absorption narrows a batch to new widths, and each width compiles programs of
    its own (the stepping and the classification at the horizon) that the one-field tries
    never meet. From empty caches both times, the programs the plan counts must be those
    the run then compiles (seen by jax.monitoring), within 30 %: the tries alone counted
    2 of the run's 11 or so (constant weights at beta = 3: about a third of the
    trajectories absorbed at each of several segment boundaries)."""
    import jax
    import jax.monitoring

    from spheresde.experiments import RunOptions, TokensSpec, estimate_sweep

    spec = TokensSpec(tokens=(3, 4), betas=(3.0,), trajectories=256, layers=5, horizon=60.0,
                      weights="constant")
    jax.clear_caches()
    text = "\n".join(estimate_sweep(spec, tmp_path / "plan", RunOptions(quiet=True)).lines)
    more = re.search(r"for each of ([0-9]+) more program\(s\)", text)
    assert more, text
    counted = int(more.group(1)) + 1
    compiled = []
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, seconds, **kw: compiled.append(event)
        if event.endswith("backend_compile_duration") else None)
    jax.clear_caches()
    spec.run(tmp_path / "run", RunOptions(quiet=True), name="tokens")
    assert 0.7 * len(compiled) <= counted <= 1.3 * len(compiled), (counted, len(compiled))


@pytest.mark.slow
def test_dry_run_times_what_the_figure_needs(tmp_path):
    """dominance's figure derives the formation thresholds (seconds of SymPy): the plan
    calls the spec's figure_needs and prices them, and says when the figure itself could
    not be drawn from the few rows it has."""
    from spheresde.experiments import DominanceSpec, RunOptions, estimate_sweep

    called = []
    spec = DominanceSpec(tokens=(2,), dims=(3,), betas=(1.0, 4.0), eps=(0.5, 1.0),
                         trajectories=16, layers=5, horizon=4.0, horizon_scale=1.0)
    original = type(spec).figure_needs
    try:
        type(spec).figure_needs = (lambda: called.append(True),)
        text = "\n".join(estimate_sweep(spec, tmp_path / "o", RunOptions(quiet=True)).lines)
    finally:
        type(spec).figure_needs = original
    assert called == [True]
    assert re.search(r"; the figure [0-9.]+ s", text), text


def test_the_plan_times_a_chunk_from_cold_point_caches():
    """What a chunk computes once for its point (absorption levels, a formation's law)
    is forgotten before the plan times a chunk: a probe at a point already probed must
    pay it again, as the run's chunk of that point does."""
    from spheresde.experiments import HybridSpec, TokensSpec
    from spheresde.transformer import _absorption, _formation_finish

    _absorption.absorption_levels(2.0, 3.0, 1.0, 0.0, 0.01, 1e-6)
    _formation_finish.tightness_exponents(2, 1, 2.0, 3, 1.0, 0.0, 0.01)
    assert _absorption.absorption_levels.cache_info().currsize > 0
    for spec in (TokensSpec(), HybridSpec()):
        assert "spheresde.transformer._formation_finish:formation_values" in spec.point_caches
    TokensSpec().clear_point_caches()
    for cached in (_absorption.absorption_levels, _absorption.cluster_absorption_level,
                   _formation_finish.formation_values, _formation_finish.tightness_exponents):
        assert cached.cache_info().currsize == 0


class _HoldsTheLock:
    """A chunk of pure Python: it holds the interpreter lock, one core busy."""

    def shortened(self, steps):
        return self

    def chunk(self, point, k, size):
        sum(i * i for i in range(3_000_000))


class _UsesEveryCore(_HoldsTheLock):
    """A chunk that keeps every core busy (hashing releases the lock), as a program of
    the n-token network keeps two: four threads a core, each hashing 20 MB, so that it
    still takes most of the cores when the suite's other worker runs beside it. One
    thread a core read 1.41 there (alone it shared the cores with that worker about
    evenly, together it took more of them); four a core read 1.15 to 1.18 beside a busy
    loop, 1.06 idle."""

    def chunk(self, point, k, size):
        import hashlib

        data = bytes(20_000_000)
        threads = [threading.Thread(target=hashlib.sha256, args=(data,))
                   for _ in range(4 * (os.cpu_count() or 1))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


@pytest.mark.slow
def test_dry_run_measures_what_parallel_chunks_gain_instead_of_dividing_by_workers():
    # Two chunks at once in two processes, as the workers run them: a chunk that keeps
    # one core busy runs about twice as fast two at once on two free cores (threads, which
    # share the interpreter lock, read 1.0 for it: an absorbing chunk's host loop holds
    # the lock); a chunk that keeps every core busy gains nothing. Dividing by the workers
    # would have said 2 for both. Best of three: under the suite's other worker the lone
    # timing can be slowed by the load alone (one busy core of two: 1.33 for the first).
    from spheresde.experiments.engine._planning import _speedup

    # Counted over seconds, the speedup sees the suite's other worker: beside it the
    # lock-bound chunk read 1.18 at best of three (1.87 to 2.09 idle). Threads read 1.0.
    lock = max(_speedup(_HoldsTheLock(), {}, 10, 16, 2) for _ in range(3))
    every = min(_speedup(_UsesEveryCore(), {}, 10, 16, 2) for _ in range(3))
    assert lock > 1.1
    assert every < 1.3
    assert lock > every


def test_a_failing_chunk_timed_in_processes_is_one_error_not_a_hang():
    from spheresde.experiments.engine._planning import _speedup

    with pytest.raises(RuntimeError, match="timing 2 chunks at once failed: ZeroDivisionError"):
        _speedup(_Fails(), {}, 10, 16, 2)


class _Fails(_HoldsTheLock):
    def chunk(self, point, k, size):
        return 1 / 0


@pytest.mark.slow
def test_dry_run_prices_the_figure_of_the_whole_grid_and_says_in_words_what_it_cannot(
        tmp_path, monkeypatch):
    """The figures of hybrid and tokens need the whole grid (a few finished rows raised
    KeyError and StopIteration, which the plan printed): the plan draws them from rows
    copied over the grid. A figure that cannot be drawn even so is said in words, never
    by an exception's name."""
    from spheresde.experiments import SCALES, RunOptions, TokensSpec, estimate_sweep

    def plan(name):
        return "\n".join(estimate_sweep(SCALES["smoke"][name], tmp_path / name,
                                        RunOptions(quiet=True), name=name).lines)

    exception = re.compile(r"Error|Exception|StopIteration")
    for name in ("hybrid", "tokens"):
        text = plan(name)
        assert "drawn from their rows copied over the grid" in text, text
        assert not exception.search(text), text

    def fails(self, rows, path):
        raise KeyError((1.5, 0.25))

    monkeypatch.setattr(TokensSpec, "plot", fails)
    text = plan("tokens")
    assert "the drawing itself not priced (it could not be drawn" in text, text
    assert not exception.search(text), text
