"""Soak: a small sweep interrupted at a random instant (seeded) by SIGINT or SIGKILL, in
this process's executor or on ``--workers 2``, then resumed; the command driven in a
subprocess, as a user's shell would.

Each trial checks the exit status (130 for Ctrl-C, killed for SIGKILL, 0 when the sweep
finished first), stderr (Ctrl-C: the one line and nothing else; never a traceback, a
"Segmentation fault" or a "Fatal Python error"), that no process of the run outlives
it, and that the resumed CSV has the bytes of an uninterrupted run.
"""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "spheresde.cli"]
# 2 points of 4 chunks each: about 7 s serial and 12 s on two workers on a busy 2-core
# machine, most of it the interpreter, JAX and the cluster starting
SWEEP = ["tokens", "--tokens", "3", "--betas", "1,2", "--dim", "3", "--trajectories", "200",
         "--layers", "5", "--horizon", "4", "--chunk-size", "50", "--quiet"]
CRASHES = ("Traceback", "Segmentation fault", "Fatal Python error")


def environment(cache: Path) -> dict[str, str]:
    # one persistent compilation cache for every run of the soak, so that a trial's time
    # goes to the run and not to compiling the same program again
    return {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONWARNINGS": "ignore",
            "JAX_COMPILATION_CACHE_DIR": str(cache),
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}


def start(out: Path, env: dict[str, str], *extra: str) -> subprocess.Popen:
    """The sweep into ``out`` in a session of its own (its Dask workers with it), as a
    terminal's foreground job is a process group of its own."""
    # A test run started in the background by a shell without job control inherits
    # SIGINT ignored, which would stay ignored in the child (see test_cli.py): start it
    # under Python's own handler, which the child gets back as the default.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen([*CLI, *SWEEP, "--out", str(out), *extra], env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
    finally:
        signal.signal(signal.SIGINT, previous)


def made_its_folder(proc: subprocess.Popen, out: Path) -> None:
    """Wait until the command has made ``out`` (its imports and argument checks done),
    or has ended."""
    while not out.exists() and proc.poll() is None:
        time.sleep(0.01)


def run(out: Path, env: dict[str, str]) -> float:
    """Run the sweep to its end; return the seconds from its folder's making to its end."""
    proc = start(out, env)
    made_its_folder(proc, out)
    began = time.monotonic()
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert not err.strip(), err
    return time.monotonic() - began


def group_gone(pgid: int, timeout: float = 20.0) -> bool:
    """Whether every process of the group ``pgid`` has exited (within ``timeout``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def interrupt_and_resume(out: Path, env: dict[str, str], *, workers: bool, how: signal.Signals,
                         delay: float, whole: bytes, compiling: bool = False) -> str:
    """One trial: start the sweep, send ``how`` ``delay`` seconds after the command has
    made its output folder (its imports and argument checks done), to the whole
    process group with ``workers``, to the process without; check the outcome, resume
    serially and compare the CSV with ``whole``. ``compiling``: the interrupted run
    compiles its programs (no persistent cache), so that the signal can land in an XLA
    compilation, where Ctrl-C once ended in a segfault. Returns the outcome:
    ``"interrupted"``, ``"killed"`` or ``"finished first"``."""
    extra = ("--workers", "2") if workers else ()
    cold = {k: v for k, v in env.items() if not k.startswith(("JAX_COMPILATION_CACHE",
                                                              "JAX_PERSISTENT_CACHE"))}
    proc = start(out, cold if compiling else env, *extra)
    made_its_folder(proc, out)
    time.sleep(delay)
    try:
        if workers:
            os.killpg(proc.pid, how)
        else:
            proc.send_signal(how)
    except ProcessLookupError:  # finished and reaped: nothing left to signal
        pass
    _, err = proc.communicate(timeout=120)
    assert group_gone(proc.pid), "a process of the run outlived it"
    assert not any(crash in err for crash in CRASHES), err
    if proc.returncode == 0:
        outcome = "finished first"
        assert not err.strip(), err
    elif how == signal.SIGINT:
        outcome = "interrupted"
        assert proc.returncode == 130, (proc.returncode, err)
        assert err.strip().splitlines() == [
            f"spheresde tokens: interrupted; finished grid points are saved in {out}, re-run "
            f"the same command to resume"], err
    else:
        outcome = "killed"
        assert proc.returncode == -signal.SIGKILL, (proc.returncode, err)
    run(out, env)
    assert (out / "tokens.csv").read_bytes() == whole
    return outcome


@pytest.mark.slow  # six sweeps, four interrupted, and four resumptions in subprocesses
def test_interrupted_sweeps_end_cleanly_and_resume_to_the_same_bytes(tmp_path):
    env = environment(tmp_path / "jax-cache")
    run(tmp_path / "whole", env)  # compiles into the cache
    whole = (tmp_path / "whole" / "tokens.csv").read_bytes()
    took = run(tmp_path / "again", env)  # as the trials run: compiled programs loaded
    assert (tmp_path / "again" / "tokens.csv").read_bytes() == whole
    draw = random.Random(46)
    outcomes = []
    for trial, (workers, how, compiling) in enumerate([
            (False, signal.SIGINT, True), (False, signal.SIGKILL, False),
            (True, signal.SIGINT, False), (True, signal.SIGKILL, False)]):
        # an instant within the work of a warm serial sweep: a compiling run and the
        # workers' runs are longer, so for them it falls in the compilation, the
        # cluster's start or the first chunks
        outcomes.append(interrupt_and_resume(
            tmp_path / f"trial{trial}", env, workers=workers, how=how,
            delay=draw.uniform(0, took), whole=whole, compiling=compiling))
    # the soak is about interruptions: most trials must have been cut, not finished first
    assert sum(outcome != "finished first" for outcome in outcomes) >= 3, outcomes
