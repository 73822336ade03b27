"""``spheresde reproduce``: every experiment at one scale, the proofs_check report, REPORT.md;
and :func:`run`, which runs any spec (the top of the experiment layer, below the CLI)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from ._field import FieldSpec, run_field
from ._report import write_report
from ._scales import SCALES, ReproduceSpec, training_data
from ._spec import BadParameters, ExperimentSpec
from ._store import atomic_write_text
from ._sweep import RunOptions, run_options
from ._train import load_data
from .registry import RUNNERS


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
    options = run_options(options, quiet=quiet, overwrite=overwrite)
    quiet, overwrite = options.quiet, options.overwrite
    out = Path(out)
    sweeps = {name: replace(preset, seed=spec.seed)
              for name, preset in SCALES[spec.scale].items() if preset is not None}
    if "train" in sweeps:  # the paper's data set, or the best stand-in at hand
        sweeps["train"] = replace(sweeps["train"], **training_data(spec)[0])
        load_data(sweeps["train"], spec.seed)  # a malformed data set fails before any sweep
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


def run(spec: ExperimentSpec, out: str | os.PathLike, *, quiet: bool = False,
        overwrite: bool = False, options: RunOptions | None = None) -> list[str]:
    """Run ``spec`` into the directory ``out``; return the lines that summarize what it wrote
    (with ``options.dry_run``: the plan, and nothing written)."""
    if not os.fspath(out).strip():
        raise BadParameters("the output directory is empty; give one, e.g. 'results' "
                            "('.' for the current directory)")
    options = run_options(options, quiet=quiet, overwrite=overwrite)
    if isinstance(spec, ReproduceSpec):
        return reproduce(spec, out, options=options)
    if isinstance(spec, FieldSpec):
        if options.dry_run:
            return [f"field: {spec.command_line()}", "  one figure, no sampling: seconds"]
        info = run_field(spec, out)
        return [f"wrote {info['png']} and {info['csv']}"]
    result = RUNNERS[spec.command](spec, out, options=options)
    if options.dry_run:
        return result
    return [f"wrote {result.csv}, {result.json} and {result.png}"]
