"""The ``spheresde`` command line, driven in subprocesses as a user would."""

import csv
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from helpers import stored_records

CLI = [sys.executable, "-m", "spheresde.cli"]
ENV = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONWARNINGS": "ignore"}


def spheresde(*args, check=True):
    proc = subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, env=ENV,
                          timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# one small network sweep: 6 grid points, a few seconds after one compilation
TOKENS = ("tokens", "--tokens", "3", "--betas", "1:3:6", "--dim", "3", "--trajectories", "64",
          "--layers", "5", "--horizon", "4")


@pytest.mark.slow  # a subprocess: an interpreter and JAX start
def test_console_script_is_installed():
    script = os.path.join(os.path.dirname(sys.executable), "spheresde")
    proc = subprocess.run([script, "--help"], capture_output=True, text=True, env=ENV)
    assert proc.returncode == 0
    for command in ("phase", "hybrid", "dominance", "tokens", "field", "reproduce"):
        assert command in proc.stdout


BAD_INPUTS = [
    (("phase", "--dims", "1"), "--dims"),
    (("phase", "--betas", "abc"), "--betas"),
    (("phase", "--trajectories", "0"), "--trajectories"),
    (("phase", "--horizon", "-1"), "--horizon"),
    (("hybrid", "--eps", "0.5:0.1:3"), "--eps"),
    (("tokens", "--tokens", "1,3"), "--tokens"),
    (("hybrid", "--tokens", "3", "--method", "exact"), "two tokens"),
    (("hybrid", "--horizon-scale", "-1"), "--horizon-scale"),
    (("dominance", "--tokens", "1,3"), "--tokens"),
    (("dominance", "--dims", "3,3"), "repeats"),
    (("dominance", "--horizon", "20", "--max-horizon", "10"), "--max-horizon"),
]


@pytest.mark.slow
def test_bad_input_in_a_process_is_one_line_and_exit_2(tmp_path):
    proc = spheresde("phase", "--dims", "1", "--out", tmp_path, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "spheresde phase: error: argument --dims: '1' must be >= 2 "
        "(see 'spheresde phase --help')"
    ]


# the same parser and error path in-process: one interpreter start instead of one per case
@pytest.mark.parametrize(("args", "says"), BAD_INPUTS)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, says):
    from spheresde.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main([*args, "--out", str(tmp_path), "--quiet"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert says in err
    assert not list(tmp_path.iterdir())  # nothing written


def test_unwritable_out_is_one_line_and_exit_2(tmp_path, capsys):
    from spheresde.cli import main

    blocker = tmp_path / "a_file"
    blocker.write_text("")  # a directory cannot be made below a file, even by root
    with pytest.raises(SystemExit) as exit_info:
        main(["field", "--out", str(blocker / "sub")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "--out" in err


@pytest.mark.slow
def test_csv_columns_and_metadata(tmp_path):
    spheresde(*TOKENS, "--out", tmp_path, "--seed", 3, "--quiet")
    table = rows(tmp_path / "tokens.csv")
    assert len(table) == 6
    for column in ("tokens", "beta", "p_single", "p_antipodal", "p_undecided", "stderr",
                   "minority_counts", "trajectories"):
        assert column in table[0]
    for r in table:
        total = float(r["p_single"]) + float(r["p_antipodal"]) + float(r["p_undecided"])
        assert total == pytest.approx(1.0)
    meta = json.loads((tmp_path / "tokens.json").read_text())
    assert meta["version"] == __import__("spheresde").__version__
    assert meta["seed"] == 3
    assert meta["params"]["betas"] == [1.0, 1.4, 1.8, 2.2, 2.6, 3.0]
    for name in ("tokens", "dim", "sigma", "trajectories", "layers", "horizon", "tol", "method"):
        assert name in meta["params"]
    assert meta["wall_time_s"] > 0
    assert (tmp_path / "tokens.png").stat().st_size > 0


@pytest.mark.slow
def test_ctrl_c_then_resume_gives_the_uninterrupted_csv(tmp_path):
    # 12 points of ~0.1-0.3 s each after one compilation: time to interrupt mid-sweep
    sweep = ("tokens", "--tokens", "3", "--betas", "0.5:3:12", "--dim", "3",
             "--trajectories", "2000", "--layers", "10", "--horizon", "10", "--quiet")
    spheresde(*sweep, "--out", tmp_path / "whole")

    cut = tmp_path / "cut"
    # A test run started in the background by a shell without job control inherits SIGINT
    # ignored, and an ignored SIGINT stays ignored across exec: the child would never raise
    # KeyboardInterrupt (the sweep would just finish, rc 0). A handler, unlike SIG_IGN,
    # becomes SIG_DFL in the child, so install Python's own while starting it. (Not a
    # preexec_fn: that forces a fork of this multithreaded, JAX-importing process.)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = subprocess.Popen([*CLI, *sweep, "--out", str(cut)], env=ENV, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    finally:
        signal.signal(signal.SIGINT, previous)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if stored_records(cut, "points") >= 2:  # the CSV is written when the run stops
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert "Traceback" not in err
    done = len(rows(cut / "tokens.csv"))
    assert 2 <= done < 12

    spheresde(*sweep, "--out", cut)
    assert (cut / "tokens.csv").read_text() == (tmp_path / "whole" / "tokens.csv").read_text()
    runs = json.loads((cut / "tokens.json").read_text())["runs"]
    assert [r["points_computed"] for r in runs] == [done, 12 - done]


def test_field_figure(tmp_path):
    from spheresde.cli import main

    assert main(["field", "--out", str(tmp_path), "--quiet"]) == 0
    table = rows(tmp_path / "field.csv")
    # the projection removes the normal part: <x, P_x A> = 0 at every query x
    for r in table:
        normal = float(r["x"]) * float(r["PA_x"]) + float(r["y"]) * float(r["PA_y"])
        assert abs(normal) < 1e-5
    assert max(abs(float(r["A_normal"])) for r in table) > 0.1
    assert (tmp_path / "field.png").stat().st_size > 0


PHASE_GRID = ("--dims", "4,6", "--betas", "0.5,1,2,3")


@pytest.mark.slow
def test_phase_columns_metadata_and_refusal_of_other_parameters(tmp_path):
    spheresde("phase", *PHASE_GRID, "--method", "exact", "--out", tmp_path, "--quiet")
    table = rows(tmp_path / "phase.csv")
    assert list(table[0]) == ["d", "beta", "p_antipodal", "p_single", "p_undecided", "stderr",
                              "p_exact", "p_finite", "beta_c", "trajectories", "p_network",
                              "sigma", "method"]
    assert {r["p_network"] for r in table} == {"nan"}  # exact: no chain, no finite-L law
    assert [(r["d"], r["beta"]) for r in table] == [
        (d, b) for d in ("4", "6") for b in ("0.5", "1.0", "2.0", "3.0")]
    assert {r["method"] for r in table} == {"exact"}
    meta = json.loads((tmp_path / "phase.json").read_text())
    assert meta["params"]["dims"] == [4, 6]
    assert meta["params"]["sigma"] == 1.0
    assert (tmp_path / "phase.png").stat().st_size > 0

    # the same command with another parameter refuses, and mixes nothing in
    before = (tmp_path / "phase.csv").read_text()
    proc = spheresde("phase", *PHASE_GRID, "--method", "exact", "--sigma", "2", "--out",
                     tmp_path, "--quiet", check=False)
    assert proc.returncode == 2
    assert "sigma: stored 1.0 vs now 2.0" in proc.stderr
    assert "--overwrite" in proc.stderr
    assert (tmp_path / "phase.csv").read_text() == before
    spheresde("phase", *PHASE_GRID, "--method", "exact", "--sigma", "2", "--out", tmp_path,
              "--quiet", "--overwrite")
    meta = json.loads((tmp_path / "phase.json").read_text())
    assert meta["params"]["sigma"] == 2.0
    assert [r["points_computed"] for r in meta["runs"]] == [8]  # a fresh sweep
    # pure noise: sigma only rescales depth-time, so the t -> infinity law is the same
    assert (tmp_path / "phase.csv").read_text() == before.replace(",1.0,exact\n", ",2.0,exact\n")


@pytest.mark.slow
@pytest.mark.parametrize(
    "sizes",
    [
        # quick-like sizes (quick itself: 4000 trajectories, T = 100): 2000, dt = 1/20, T = 50
        {"method": "reduced", "trajectories": 2000, "layers": 20, "horizon": 50.0},
        # the network itself, smaller: 400 trajectories, L = 20, T = 20
        {"method": "discrete", "trajectories": 400, "layers": 20, "horizon": 20.0},
    ],
)
def test_monte_carlo_agrees_with_exact(tmp_path, sizes):
    """|P_MC - P_L| <= 4 s.e. at every point (s.e. <= 0.025 at N = 400), P_L the simulated
    chain's own law at the run's L, T and tol (the limit SDE's P_T plus its O(1/L) term).

    s.e. is the larger of the estimate's and the reference's binomial one
    sqrt(p (1-p) / N), so that a point with no antipodal sample is still judged against
    its exact error bar.
    """
    from spheresde.experiments import PhaseSpec, RunOptions, run_sweep
    from spheresde.experiments._agreement import agreement_band

    grid = {"dims": (4, 6), "betas": (0.5, 1.0, 2.0, 3.0)}
    quiet = RunOptions(quiet=True)
    exact = run_sweep(PhaseSpec(**grid, method="exact"), tmp_path / "exact", quiet).rows
    mc = run_sweep(PhaseSpec(**grid, **sizes), tmp_path / "mc", quiet).rows
    assert len(mc) == len(exact) == 8
    for e, m in zip(exact, mc, strict=True):
        assert (e.d, e.beta) == (m.d, m.beta)
        assert m.p_exact == e.p_antipodal
        # the band is 4 s.e. around the chain's own law at the run's L, T and tol
        assert agreement_band(m) == pytest.approx(
            4 * max(m.stderr, np.sqrt(m.p_network * (1 - m.p_network) / m.trajectories)))
        assert abs(m.p_antipodal - m.p_network) <= agreement_band(m), (m, e)
        assert 0 <= m.p_network <= 1


@pytest.mark.slow
def test_reproduce_writes_every_figure_and_the_report(tmp_path):
    proc = spheresde("reproduce", "--scale", "smoke", "--out", tmp_path)
    for name in ("field", "phase", "phase_discrete", "hybrid", "hybrid_two_tokens", "dominance",
                 "tokens", "tokens_constant", "train"):
        assert (tmp_path / f"{name}.png").stat().st_size > 0
    report = (tmp_path / "REPORT.md").read_text()
    for heading in ("Theorem 1", "Figure 1", "Figure 2", "Theorem 2 and Figure 3",
                    "Proposition 1 and Figure 4", "Figure 4 over n and d", "more than two tokens",
                    "Figure 5"):
        assert heading in report
    assert "out of scope" in report
    assert "Paired differences of final accuracy" in report
    assert "| random - constant | 4 |" in report  # smoke: 2 seeds, L = 4
    assert "At `smoke` scale Figure 2 trains on the digits" in report
    assert "2 x 2 patches as tokens (16 tokens an image)" in report  # the digits' own
    assert "wrote" in proc.stdout


def test_hybrid_exact_columns(tmp_path):
    from spheresde.cli import main

    main(["hybrid", "--method", "exact", "--tokens", "2", "--betas", "1,4", "--eps", "0.5,2",
          "--out", str(tmp_path), "--quiet"])
    table = rows(tmp_path / "hybrid.csv")
    assert list(table[0])[:6] == ["beta", "eps", "p_single", "p_antipodal", "p_undecided",
                                  "dominant"]
    assert {r["tokens"] for r in table} == {"2"}
    assert len(table) == 4
    for r in table:
        fractions = {k: float(r[f"p_{k}"]) for k in ("single", "antipodal", "undecided")}
        assert r["dominant"] == max(fractions, key=fractions.get)
    assert (tmp_path / "hybrid.png").stat().st_size > 0


# Issue 14: inputs the parser used to misread, each refused with the real reason.
@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("phase", "--betas", "-1,2"), "argument --betas: '-1.0' must be >= 0"),
        (("phase", "--betas", "-2:1:3"), "argument --betas: '-2.0' must be >= 0"),
        (("phase", "--betas", "1,,2"), "an empty entry in the list"),
        (("phase", "--betas", "1,2,"), "an empty entry in the list"),
        (("phase", "--bogus"), "unrecognized arguments: --bogus (see 'spheresde phase --help')"),
    ],
)
def test_misread_input_is_refused_with_its_reason(tmp_path, capsys, args, says):
    test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, says)


@pytest.mark.parametrize(("out", "says"), [("", "--out is empty"),
                                           ("/proc", "does not accept new files")])
def test_out_that_cannot_hold_results(capsys, out, says):
    from spheresde.cli import main

    if out and not os.path.isdir(out):
        pytest.skip(f"no {out} on this system")
    with pytest.raises(SystemExit) as exit_info:
        main(["field", "--out", out, "--quiet"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert says in err


def test_quiet_silences_numerical_runtime_warnings(tmp_path, monkeypatch):
    # filterwarnings = error: a RuntimeWarning escaping main would fail this test.
    import warnings

    import spheresde.cli as cli

    class Quiet:
        def summary(self):
            return []

    def run(spec, out, options):
        warnings.warn("overflow encountered in betainc", RuntimeWarning, stacklevel=1)
        return Quiet()

    monkeypatch.setattr(cli, "run", run)
    assert cli.main(["field", "--out", str(tmp_path), "--quiet"]) == 0
    with pytest.raises(RuntimeWarning, match="overflow"):
        cli.main(["field", "--out", str(tmp_path)])


def test_beta_is_the_inverse_temperature_in_every_help():
    import re

    from spheresde.cli import build_parser

    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    for command, sub in commands.items():
        text = " ".join(sub.format_help().split())
        assert not re.search(r"(?<!inverse )temperature", text), command


@pytest.mark.parametrize(("library", "cli"), [
    ("`horizon=0.01` with `layers=20` is 0 layers; give `horizon` >= 0.05",
     "--horizon 0.01 with --layers 20 is 0 layers; give --horizon >= 0.05"),
    ("pass `overwrite=True` to replace it, or another `out`",
     "pass --overwrite to replace it, or another --out"),
    ("`data_dir='/x y'`: no such folder; `max_horizon=5` `chunk_size=16`",
     "--data-dir /x y: no such folder; --max-horizon 5 --chunk-size 16"),
    ("`norm='layer'` needs `method` exact; `apt-get install x` stays",
     "--norm layer needs --method exact; `apt-get install x` stays"),
])
def test_library_messages_name_parameters_and_the_cli_spells_them_as_flags(library, cli):
    from spheresde.cli import in_flags

    assert in_flags(library) == cli


def test_a_command_keeps_its_compiled_programs_for_the_next_run(tmp_path):
    """The command line keeps JAX's compiled programs in the persistent compilation cache
    under the temporary folder: a second run of the same sweep into a new folder loads
    its stepping program from there (JAX logs each hit), where the first compiled it."""
    env = {**{k: v for k, v in ENV.items()  # not the tests' own cache (conftest.py)
              if not k.startswith(("JAX_COMPILATION_CACHE", "JAX_PERSISTENT_CACHE"))},
           "TMPDIR": str(tmp_path), "JAX_LOG_COMPILES": "1"}
    sweep = ["phase", "--dims", "3", "--betas", "1.0", "--trajectories", "16", "--layers", "2",
             "--horizon", "1", "--quiet"]

    def loaded(out: str) -> bool:
        proc = subprocess.run([*CLI, *sweep, "--out", str(tmp_path / out)], capture_output=True,
                              text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert "Compiling jit(_advance_rho)" in proc.stderr
        return "cache hit for 'jit__advance_rho'" in proc.stderr

    assert not loaded("first")
    assert list((tmp_path / "spheresde-jax-cache").iterdir())
    assert loaded("second")
