"""The ``spheresde`` command line, driven in subprocesses as a user would."""

import csv
import json
import os
import signal
import subprocess
import sys
import time

import pytest

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


def test_console_script_is_installed():
    script = os.path.join(os.path.dirname(sys.executable), "spheresde")
    proc = subprocess.run([script, "--help"], capture_output=True, text=True, env=ENV)
    assert proc.returncode == 0
    for command in ("phase", "hybrid", "tokens", "field", "reproduce"):
        assert command in proc.stdout


BAD_INPUTS = [
    (("phase", "--dims", "1"), "--dims"),
    (("phase", "--betas", "abc"), "--betas"),
    (("phase", "--trajectories", "0"), "--trajectories"),
    (("phase", "--horizon", "-1"), "--horizon"),
    (("hybrid", "--eps", "0.5:0.1:3"), "--eps"),
    (("tokens", "--tokens", "1,3"), "--tokens"),
    (("hybrid", "--tokens", "3", "--method", "exact"), "two tokens"),
]


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


def test_csv_metadata_and_refusal_of_other_parameters(tmp_path):
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

    # the same command with another parameter refuses, and mixes nothing in
    before = (tmp_path / "tokens.csv").read_text()
    proc = spheresde(*TOKENS, "--trajectories", "32", "--out", tmp_path, "--quiet", check=False)
    assert proc.returncode == 2
    assert "trajectories: stored 64 vs now 32" in proc.stderr
    assert "--overwrite" in proc.stderr
    assert (tmp_path / "tokens.csv").read_text() == before  # nothing mixed in
    spheresde(*TOKENS, "--trajectories", "32", "--out", tmp_path, "--quiet", "--overwrite")
    assert {r["trajectories"] for r in rows(tmp_path / "tokens.csv")} == {"32"}


def test_ctrl_c_then_resume_gives_the_uninterrupted_csv(tmp_path):
    # 12 points of ~0.1-0.3 s each after one compilation: time to interrupt mid-sweep
    sweep = ("tokens", "--tokens", "3", "--betas", "0.5:3:12", "--dim", "3",
             "--trajectories", "2000", "--layers", "10", "--horizon", "10", "--quiet")
    spheresde(*sweep, "--out", tmp_path / "whole")

    cut = tmp_path / "cut"
    proc = subprocess.Popen([*CLI, *sweep, "--out", str(cut)], env=ENV, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if (cut / "tokens.csv").exists() and len(rows(cut / "tokens.csv")) >= 2:
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
    spheresde("field", "--out", tmp_path)
    table = rows(tmp_path / "field.csv")
    # the projection removes the normal part: <x, P_x A> = 0 at every query x
    for r in table:
        normal = float(r["x"]) * float(r["PA_x"]) + float(r["y"]) * float(r["PA_y"])
        assert abs(normal) < 1e-5
    assert max(abs(float(r["A_normal"])) for r in table) > 0.1
    assert (tmp_path / "field.png").stat().st_size > 0
