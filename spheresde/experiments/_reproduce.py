"""``spheresde reproduce``: every experiment at one scale, the proofs_check report, REPORT.md."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar, Literal

from ._scales import SCALES
from ._spec import SEED, ExperimentSpec, param
from ._store import atomic_write_text
from ._sweep import RunOptions, run_options


def _data_dir_is_for_paper(spec: ReproduceSpec) -> str | None:
    if spec.data_dir and spec.scale != "paper":
        return ("--data-dir is used by --scale paper only (quick and smoke train Figure 2 on "
                "the digits)")
    return None


@dataclass(frozen=True)
class ReproduceSpec(ExperimentSpec):
    """Every experiment of one scale, the ``proofs_check`` report and ``REPORT.md``."""

    command: ClassVar[str] = "reproduce"
    summary: ClassVar[str] = "every figure, the proofs_check report and REPORT.md"
    rules: ClassVar = (_data_dir_is_for_paper,)

    scale: Literal["quick", "paper", "smoke"] = param(
        "quick", "quick: about 2 minutes on 2 CPU cores, plus 1-2 for Figure 2's training; "
        "paper: the paper's sizes (a day or more on 2 CPU cores: use a GPU or Dask, and "
        "--dry-run for an estimate); smoke: toy sizes in seconds, to check the pipeline")
    data_dir: str = param(
        "", "paper scale: folder with CIFAR-10's python-version batches for Figure 2 (without "
        "it Figure 2 trains on the digits)", metavar="DIR")
    seed: int = param(0, **SEED)


def proofs_check_report(out: Path, *, overwrite: bool = False) -> dict:
    """Run ``python -m proofs_check`` once, keep its output in ``out/proofs_check.txt``."""
    path = out / "proofs_check.txt"
    if path.exists() and not overwrite:
        text = path.read_text()
        return {"path": path, "text": text, "ok": True, "seconds": None,
                "tally": _tally(text)}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "proofs_check"], capture_output=True, text=True,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"})
    seconds = time.perf_counter() - start
    text = proc.stdout + (f"\n[stderr]\n{proc.stderr}" if proc.returncode else "")
    ok = proc.returncode == 0
    if ok:  # a failed run is not cached: the next reproduce tries again
        atomic_write_text(path, text)
    return {"path": path if ok else None, "text": text, "ok": ok, "seconds": seconds,
            "returncode": proc.returncode, "tally": _tally(text)}


def _tally(text: str) -> str:
    """The report's closing count, e.g. ``PASS: 13, FAIL: 0, MISMATCH: 1``."""
    found = re.findall(r"^PASS: \d+.*$", text, flags=re.MULTILINE)
    return found[-1].strip() if found else "no summary line"


def reproduce(spec: ReproduceSpec, out: str | os.PathLike, *, quiet: bool = False,
              overwrite: bool = False, options: RunOptions | None = None) -> list[str]:
    """Run every experiment of ``spec.scale`` into ``out`` (resumable), then write
    ``REPORT.md``; with ``options.dry_run``, return the plan of every sweep instead."""
    from ._field import FieldSpec, run_field
    from ._report import write_report
    from ._train import load_data
    from .registry import RUNNERS

    options = run_options(options, quiet=quiet, overwrite=overwrite)
    quiet, overwrite = options.quiet, options.overwrite
    out = Path(out)
    sweeps = {name: replace(preset, seed=spec.seed)
              for name, preset in SCALES[spec.scale].items() if preset is not None}
    if "train" in sweeps and spec.data_dir:  # the paper's data set, when it is at hand
        sweeps["train"] = replace(sweeps["train"], dataset="cifar10", data_dir=spec.data_dir,
                                  patch=4)
        load_data(sweeps["train"], spec.seed)  # a bad folder fails before the first sweep
    if options.dry_run:
        return [line for name, sweep in sweeps.items()
                for line in RUNNERS[sweep.command](sweep, out, name=name, options=options)]
    start = time.perf_counter()
    field = FieldSpec()
    results: dict = {"field": run_field(field, out)}
    for name, sweep in sweeps.items():
        results[name] = RUNNERS[sweep.command](sweep, out, name=name, options=options)
    if not quiet:
        print("running python -m proofs_check ...", file=sys.stderr)
    proofs = proofs_check_report(out, overwrite=overwrite)
    wall = time.perf_counter() - start
    report = write_report(out, spec=spec, results=results, proofs=proofs, wall=wall)
    lines = [f"wrote {report}"]
    lines += [f"  {p}" for p in sorted(out.glob("*.png"))]
    lines.append(f"wall time {wall:.0f} s")
    return lines
