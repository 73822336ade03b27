"""``spheresde reproduce``: every experiment at one scale, the proofs_check report, REPORT.md;
and :func:`run`, which runs any spec (the top of the experiment layer, below the CLI)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from ._field import FieldSpec, run_field
from ._report import write_report
from ._scales import SCALES, ReproduceSpec, training_data
from ._train import load_data
from .engine._driver import AbstractResult, RunOptions, estimate_sweep, plan_sweep, run_sweep
from .engine._planning import _duration
from .engine._specs import AbstractSweepSpec, BadParameters, ExperimentSpec
from .engine._store import atomic_write_text


@dataclass(frozen=True)
class ReproduceResult(AbstractResult):
    """A finished ``reproduce``: its spec, the result of every run by name (the field and
    the sweeps), ``REPORT.md``, the figures in the output directory and the wall time."""

    spec: ReproduceSpec
    results: dict[str, AbstractResult]
    report: Path
    figures: list[Path]
    wall: float

    def summary(self) -> list[str]:
        """``wrote REPORT.md``, the figures and the wall time."""
        return [f"wrote {self.report}", *(f"  {p}" for p in self.figures),
                f"wall time {self.wall:.0f} s"]


class ProofsCheck:
    """``python -m proofs_check`` in a process of its own, started at once and collected
    by :meth:`report`: SymPy works on one core while the sweeps run, instead of after
    them (a minute of wall time on a 2-core laptop). Its output is kept in
    ``out/proofs_check.txt``; a kept one is read instead of running again."""

    def __init__(self, out: Path, *, overwrite: bool = False) -> None:
        self.path = out / "proofs_check.txt"
        self.process = None
        if overwrite or not self.path.exists():
            self.start = time.perf_counter()
            self.process = subprocess.Popen(
                [sys.executable, "-m", "proofs_check"], stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True, env={**os.environ, "JAX_PLATFORMS": "cpu"})

    def report(self) -> dict:
        """Wait for the run; its text, whether it passed, its seconds and its tally."""
        if self.process is None:
            text = self.path.read_text()
            return {"path": self.path, "text": text, "ok": True, "seconds": None,
                    "tally": _tally(text)}
        stdout, stderr = self.process.communicate()
        seconds = time.perf_counter() - self.start
        returncode = self.process.returncode
        text = stdout + (f"\n[stderr]\n{stderr}" if returncode else "")
        ok = returncode == 0
        if ok:  # a failed run is not cached: the next reproduce tries again
            atomic_write_text(self.path, text)
        return {"path": self.path if ok else None, "text": text, "ok": ok,
                "seconds": seconds, "returncode": returncode, "tally": _tally(text)}

    def stop(self) -> None:
        """Kill the run if it is still going (the sweeps failed or were interrupted)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.communicate()


def proofs_check_report(out: Path, *, overwrite: bool = False) -> dict:
    """Run ``python -m proofs_check`` once (:class:`ProofsCheck`) and wait for it."""
    return ProofsCheck(out, overwrite=overwrite).report()


def _tally(text: str) -> str:
    """The report's closing count, e.g. ``PASS: 13, FAIL: 0, MISMATCH: 1``."""
    found = re.findall(r"^PASS: \d+.*$", text, flags=re.MULTILINE)
    return found[-1].strip() if found else "no summary line"


def _sweeps(spec: ReproduceSpec) -> tuple[dict[str, AbstractSweepSpec], dict[str, str]]:
    """The sweeps of ``spec.scale`` by run name, with ``spec.seed``, and the notes of the
    report (which data set Figure 2 trains on, and why)."""
    sweeps = {name: replace(preset, seed=spec.seed)
              for name, preset in SCALES[spec.scale].items() if preset is not None}
    notes = {}
    if "train" in sweeps:  # the paper's data set, or the best stand-in at hand
        fields, notes["train"] = training_data(spec)
        sweeps["train"] = replace(sweeps["train"], **fields)
        load_data(sweeps["train"], spec.seed)  # a malformed data set fails before any sweep
    return sweeps, notes


def reproduce(spec: ReproduceSpec, out: str | os.PathLike,
              options: RunOptions | None = None) -> ReproduceResult:
    """Run every experiment of ``spec.scale`` into ``out`` (resumable), then write
    ``REPORT.md``."""
    options = RunOptions() if options is None else options
    out = Path(out)
    sweeps, notes = _sweeps(spec)
    start = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    checking = ProofsCheck(out, overwrite=options.overwrite)  # runs beside the sweeps
    try:
        results: dict[str, AbstractResult] = {"field": run_field(FieldSpec(), out)}
        for name, sweep in sweeps.items():
            results[name] = run_sweep(sweep, out, options, name=name)
        if not options.quiet and checking.process is not None:
            print("waiting for python -m proofs_check ...", file=sys.stderr)
        proofs = checking.report()
    finally:
        checking.stop()
    wall = time.perf_counter() - start
    report = write_report(out, spec=spec, results=results, proofs=proofs, wall=wall,
                          notes=notes)
    return ReproduceResult(spec, results, report, sorted(out.glob("*.png")), wall)


def _checked_out(out: str | os.PathLike) -> None:
    if not os.fspath(out).strip():
        raise BadParameters("the output directory is empty; give one, e.g. 'results' "
                            "('.' for the current directory)")


def run(spec: ExperimentSpec, out: str | os.PathLike,
        options: RunOptions | None = None) -> AbstractResult:
    """Run ``spec`` into the directory ``out``: a sweep (:func:`run_sweep`), Figure 1
    (:func:`run_field`) or everything (:func:`reproduce`); its ``summary()`` says what it
    wrote."""
    _checked_out(out)
    if isinstance(spec, ReproduceSpec):
        return reproduce(spec, out, options)
    if isinstance(spec, FieldSpec):
        return run_field(spec, out)
    if isinstance(spec, AbstractSweepSpec):
        return run_sweep(spec, out, options)
    raise TypeError(f"{type(spec).__name__} is not an experiment that runs")


def plan(spec: ExperimentSpec, out: str | os.PathLike,
         options: RunOptions | None = None) -> list[str]:
    """What :func:`run` would compute, as the lines ``--dry-run`` prints: the points and
    chunks left, their trajectory-steps and a wall-time estimate. Nothing is written."""
    _checked_out(out)
    options = RunOptions() if options is None else options
    if isinstance(spec, ReproduceSpec):
        sweeps, _ = _sweeps(spec)
        plans = {name: estimate_sweep(sweep, out, options, name=name)
                 for name, sweep in sweeps.items()}
        lines = [line for one in plans.values() for line in one.lines]
        refused = [name for name, one in plans.items() if one.seconds is None]
        total = sum(one.seconds or 0.0 for one in plans.values())
        slowest = max(plans, key=lambda name: plans[name].seconds or 0.0)
        lines.append(f"reproduce --scale {spec.scale}: estimated wall time of the sweeps "
                     f"{_duration(total)} (the longest: {slowest}, "
                     f"{_duration(plans[slowest].seconds or 0.0)})"
                     + (f"; refused: {', '.join(refused)}" if refused else "")
                     + "; Figure 1 and the proofs_check report come on top, not priced "
                     "here")
        return lines
    if isinstance(spec, FieldSpec):
        return [f"field: {spec.command_line()}", "  one figure, no sampling: seconds"]
    if isinstance(spec, AbstractSweepSpec):
        return plan_sweep(spec, out, options)
    raise TypeError(f"{type(spec).__name__} is not an experiment that runs")
