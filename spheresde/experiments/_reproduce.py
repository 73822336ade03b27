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
from ._spec import SEED, BadParameters, ExperimentSpec, param
from ._store import atomic_write_text
from ._sweep import RunOptions, run_options


def _data_dir_is_for_paper(spec: ReproduceSpec) -> str | None:
    if spec.data_dir and spec.scale != "paper":
        return ("--data-dir is used by --scale paper only (quick and smoke train Figure 2 on "
                "the digits)")
    return None


# Fashion-MNIST: 7 x 7 patches (16 tokens, as the digits' 2 x 2), and 15 epochs of its
# 60,000 images (937 steps each) where the digits take 30 of 22 steps
FASHION = {"patch": 7, "epochs": 15}


def training_data(spec: ReproduceSpec) -> tuple[dict, str]:
    """Which data set Figure 2 trains on at ``spec.scale``, and why, in one sentence.

    The paper scale takes CIFAR-10 when ``--data-dir`` holds its batches, else
    Fashion-MNIST from ``--data-dir`` or from where Debian's ``dataset-fashion-mnist``
    installs it, else the digits; the other scales take the digits. Returns the fields
    of the train spec to replace and the sentence. Raises :class:`BadParameters` when
    ``--data-dir`` holds neither data set, before anything is computed.
    """
    from .._datasets import CIFAR10_FILES, FASHION_MNIST_DIR, FASHION_MNIST_FILES

    def has(folder: str, files, gz: bool = False) -> bool:
        return all((Path(folder) / f).is_file() or
                   (gz and (Path(folder) / f.removesuffix(".gz")).is_file()) for f in files)

    if spec.scale != "paper":
        return {}, (f"At `{spec.scale}` scale Figure 2 trains on the digits, a much easier "
                    "task than the paper's CIFAR-10, to stay within minutes.")
    if spec.data_dir:
        if has(spec.data_dir, CIFAR10_FILES):
            return ({"dataset": "cifar10", "data_dir": spec.data_dir, "patch": 4},
                    f"`--data-dir {spec.data_dir}` holds CIFAR-10, the paper's data set.")
        if has(spec.data_dir, FASHION_MNIST_FILES, gz=True):
            return ({"dataset": "fashion-mnist", "data_dir": spec.data_dir, **FASHION},
                    f"`--data-dir {spec.data_dir}` holds Fashion-MNIST, not CIFAR-10: the "
                    "real-benchmark stand-in.")
        found = "holds neither" if Path(spec.data_dir).is_dir() else "no such folder; expected"
        raise BadParameters(
            f"--data-dir {spec.data_dir}: {found} CIFAR-10's python-version batches "
            f"({', '.join(CIFAR10_FILES)}) nor Fashion-MNIST's IDX files "
            f"({', '.join(FASHION_MNIST_FILES)}); unpack one of them there, or drop "
            "--data-dir to use Fashion-MNIST from `apt-get install dataset-fashion-mnist`")
    if has(FASHION_MNIST_DIR, FASHION_MNIST_FILES, gz=True):
        return ({"dataset": "fashion-mnist", **FASHION},
                f"No `--data-dir` with CIFAR-10 was given, so Figure 2 trains on Fashion-MNIST "
                f"from {FASHION_MNIST_DIR} (Debian's dataset-fashion-mnist), the "
                "real-benchmark stand-in.")
    return {}, ("Neither CIFAR-10 (`--data-dir`) nor Fashion-MNIST (`apt-get install "
                "dataset-fashion-mnist`) is at hand, so Figure 2 trains on the digits, a much "
                "easier task than the paper's.")


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
        "", "paper scale: folder with CIFAR-10's python-version batches (or Fashion-MNIST's "
        "IDX files) for Figure 2; without it Figure 2 trains on Fashion-MNIST when `apt-get "
        "install dataset-fashion-mnist` has installed it, else on the digits", metavar="DIR")
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
