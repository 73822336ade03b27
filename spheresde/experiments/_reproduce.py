"""``spheresde reproduce``: every experiment at one scale, the proofs_check report and
REPORT.md; :class:`ReproduceSpec` names the scale (:mod:`._scales`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar, Literal

from ..data import _datasets
from ._common import SEED
from ._field import FieldSpec, run_field
from ._report import write_report
from ._scales import SCALES
from ._train import load_data
from .engine import (
    AbstractResult,
    AbstractSweepSpec,
    BadParameters,
    ExperimentSpec,
    Plan,
    RunOptions,
    Section,
    atomic_write_text,
    duration,
    param,
)

#: The scales at the paper's sizes, whose Figure 2 trains on the paper's data set or the
#: best stand-in at hand.
PAPER_SIZED = ("paper", "full")


def _data_dir_is_for_paper(spec: ReproduceSpec) -> str | None:
    if spec.data_dir and spec.scale not in PAPER_SIZED:
        return ("`data_dir` is used by `scale='paper'` and `scale='full'` only (quick and "
                "smoke train Figure 2 on the digits)")
    return None


@dataclass(frozen=True)
class ReproduceSpec(ExperimentSpec):
    """Every experiment of one scale, the ``proofs_check`` report and ``REPORT.md``."""

    command: ClassVar[str] = "reproduce"
    summary: ClassVar[str] = "every figure, the proofs_check report and REPORT.md"
    stores: ClassVar[bool] = True
    runs_in_chunks: ClassVar[bool] = True
    rules: ClassVar = (_data_dir_is_for_paper,)

    scale: Literal["quick", "paper", "full", "smoke"] = param(
        "quick", "quick: about 3 minutes on 2 CPU cores, more than half of it Figure 2's "
        "training; paper: what the paper shows, at its sizes (about 21 minutes on 2 CPU "
        "cores with --workers 2 and Figure 2 on the digits; --dry-run for an estimate); "
        "full: paper and, at the same sizes, the studies beyond it (Figure 4 over n and d, "
        "constant weights for n > 2, Figure 2 at depths 4 to 64: under 25 minutes more; "
        "into a paper run's --out it computes only those); smoke: toy sizes in seconds, to "
        "check the pipeline")
    data_dir: str = param(
        "", "paper scale: folder with CIFAR-10's python-version batches (or Fashion-MNIST's "
        "IDX files) for Figure 2; without it Figure 2 trains on Fashion-MNIST when `apt-get "
        "install dataset-fashion-mnist` has installed it, else on the digits", metavar="DIR")
    seed: int = param(0, **SEED)

    def run(self, out: str | os.PathLike, options: RunOptions | None = None, *,
            name: str | None = None) -> ReproduceResult:
        """:func:`reproduce` (``name`` is not used: every run has its own)."""
        return reproduce(self, out, options)

    def plan(self, out: str | os.PathLike, options: RunOptions | None = None, *,
             name: str | None = None) -> Plan:
        """Every sweep's plan, and the total of their estimates."""
        return _plan(self, out, options)

    @classmethod
    def report_section(cls, results: Mapping[str, Any],
                       notes: Mapping[str, str]) -> Section | None:
        """None: ``REPORT.md`` is the report of the sweeps that ``reproduce`` runs."""
        return None


# Fashion-MNIST: 15 epochs of its 60,000 images (937 steps each) where the digits take 30
# of 22 steps; the patches are each data set's own (spheresde.data._datasets.PATCH)
FASHION = {"epochs": 15}


def training_data(spec: ReproduceSpec) -> tuple[dict, str]:
    """Which data set Figure 2 trains on at ``spec.scale``, and why, in one sentence.

    The paper and full scales take CIFAR-10 when ``--data-dir`` holds its batches, else
    Fashion-MNIST from ``--data-dir`` or from where Debian's ``dataset-fashion-mnist``
    installs it, else the digits; quick and smoke take the digits. Returns the fields
    of the train spec to replace and the sentence. Raises :class:`BadParameters` when
    ``--data-dir`` holds neither data set, before anything is computed.
    """
    # the module's names are read at call time: tests point FASHION_MNIST_DIR elsewhere
    cifar, fashion, fashion_dir = (_datasets.CIFAR10_FILES, _datasets.FASHION_MNIST_FILES,
                                   _datasets.FASHION_MNIST_DIR)

    if spec.scale not in PAPER_SIZED:
        return {}, (f"At `{spec.scale}` scale Figure 2 trains on the digits, a much easier "
                    "task than the paper's CIFAR-10, to stay within minutes.")
    if spec.data_dir:
        if _datasets.holds(spec.data_dir, "cifar10"):
            return ({"dataset": "cifar10", "data_dir": spec.data_dir},
                    f"`--data-dir {spec.data_dir}` holds CIFAR-10, the paper's data set.")
        if _datasets.holds(spec.data_dir, "fashion-mnist"):
            return ({"dataset": "fashion-mnist", "data_dir": spec.data_dir, **FASHION},
                    f"`--data-dir {spec.data_dir}` holds Fashion-MNIST, not CIFAR-10: the "
                    "real-benchmark stand-in.")
        found = "holds neither" if Path(spec.data_dir).is_dir() else "no such folder; expected"
        raise BadParameters(
            f"`data_dir='{spec.data_dir}'`: {found} CIFAR-10's python-version batches "
            f"({', '.join(cifar)}) nor Fashion-MNIST's IDX files "
            f"({', '.join(fashion)}); unpack one of them there, or drop "
            "`data_dir` to use Fashion-MNIST from `apt-get install dataset-fashion-mnist`")
    if _datasets.holds(fashion_dir, "fashion-mnist"):
        return ({"dataset": "fashion-mnist", **FASHION},
                f"No `--data-dir` with CIFAR-10 was given, so Figure 2 trains on Fashion-MNIST "
                f"from {fashion_dir} (Debian's dataset-fashion-mnist), the "
                "real-benchmark stand-in.")
    return {}, ("Neither CIFAR-10 (`--data-dir`) nor Fashion-MNIST (`apt-get install "
                "dataset-fashion-mnist`) is at hand, so Figure 2 trains on the digits, a much "
                "easier task than the paper's.")


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
    """``python -m proofs_check`` in a process of its own (:func:`beside_command`: at a
    lower priority), started at once and collected by :meth:`report`: SymPy works on
    the cores the sweeps leave idle while they run, instead of after them (a minute of
    wall time on a 2-core laptop). Its output is kept in
    ``out/proofs_check.txt``; a kept one is read instead of running again."""

    def __init__(self, out: Path, *, overwrite: bool = False) -> None:
        self.path = out / "proofs_check.txt"
        self.process = None
        if overwrite or not self.path.exists():
            self.start = time.perf_counter()
            self.process = subprocess.Popen(
                beside_command("proofs_check"), stdout=subprocess.PIPE,
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

    def running(self) -> bool:
        """Whether the run is still going (a report read from disk is not)."""
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        """Kill the run if it is still going (the sweeps failed or were interrupted)."""
        if self.running():
            self.process.kill()
            self.process.communicate()


def beside_command(module: str) -> list[str]:
    """``python -m MODULE`` at a scheduling priority 10 below this process's (``nice``,
    where the system has it), so that it takes the cores the sweeps leave idle rather
    than sharing them while they compute. The new process lowers its own priority: a
    ``preexec_fn`` would run Python between fork and exec in a process whose JAX threads
    are running (JAX warns that this may deadlock)."""
    return [sys.executable, "-c",
            "import os, runpy\n"
            "if hasattr(os, 'nice'):\n    os.nice(10)\n"
            f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)"]


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
        # patch 0 is "the data set's own": the preset's patch was resolved for the digits
        sweeps["train"] = replace(sweeps["train"], **({"patch": 0} if fields else {}), **fields)
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
            results[name] = sweep.run(out, options, name=name)
        if not options.quiet and checking.running():
            print("waiting for python -m proofs_check ...", file=sys.stderr)
        proofs = checking.report()
    finally:
        checking.stop()
    wall = time.perf_counter() - start
    report = write_report(out, spec=spec, results=results, proofs=proofs, wall=wall,
                          notes=notes)
    return ReproduceResult(spec, results, report, sorted(out.glob("*.png")), wall)


def _plan(spec: ReproduceSpec, out: str | os.PathLike, options: RunOptions | None) -> Plan:
    """Every sweep's plan and the total of their estimates."""
    options = RunOptions() if options is None else options
    sweeps, _ = _sweeps(spec)
    plans = {name: sweep.plan(out, options, name=name) for name, sweep in sweeps.items()}
    lines = [line for one in plans.values() for line in one.lines]
    refused = [name for name, one in plans.items() if one.seconds is None]
    total = sum(one.seconds or 0.0 for one in plans.values())
    slowest = max(plans, key=lambda name: plans[name].seconds or 0.0)
    lines.append(f"reproduce --scale {spec.scale}: estimated wall time of the sweeps "
                 f"{duration(total)} (the longest: {slowest}, "
                 f"{duration(plans[slowest].seconds or 0.0)})"
                 + (f"; refused: {', '.join(refused)}" if refused else "")
                 + "; Figure 1 and the proofs_check report come on top, not priced "
                 "here")
    return Plan(lines, total)
