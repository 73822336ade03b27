"""``spheresde reproduce``: every experiment at one scale, the proofs_check report, REPORT.md."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from ._scales import SCALES
from ._sweep import atomic_write_text

# (file stem, sub-command): the sweeps of a reproduction, in the order they run
SWEEPS = (
    ("phase", "phase"),
    ("phase_discrete", "phase"),
    ("hybrid", "hybrid"),
    ("hybrid_two_tokens", "hybrid"),
    ("tokens", "tokens"),
    ("tokens_constant", "tokens"),
)

_FLAGS = {"dims": "--dims", "betas": "--betas", "eps": "--eps", "tokens": "--tokens",
          "dim": "--dim", "trajectories": "--trajectories", "layers": "--layers",
          "horizon": "--horizon", "method": "--method", "weights": "--weights"}


def sweep_argv(command: str, config: dict, seed: int) -> list[str]:
    """The ``spheresde`` arguments of one sweep of a scale (what a user would type)."""
    argv = [command]
    for key, value in config.items():
        text = ",".join(map(str, value)) if isinstance(value, list) else str(value)
        argv += [_FLAGS[key], text]
    return [*argv, "--seed", str(seed)]


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
    """The report's closing count, e.g. ``PASS: 11, FAIL: 0, MISMATCH: 1``."""
    found = re.findall(r"^PASS: \d+.*$", text, flags=re.MULTILINE)
    return found[-1].strip() if found else "no summary line"


def reproduce(out: str | os.PathLike, scale: str = "quick", *, seed: int = 0,
              quiet: bool = False, overwrite: bool = False) -> list[str]:
    """Run every experiment of ``scale`` into ``out`` (resumable), then write ``REPORT.md``."""
    from ..cli import build_parser
    from . import command_params
    from ._field import run_field
    from ._hybrid import run_hybrid
    from ._phase import run_phase
    from ._report import write_report
    from ._tokens import run_tokens

    out = Path(out)
    start = time.perf_counter()
    parser = build_parser()
    runners = {"phase": run_phase, "hybrid": run_hybrid, "tokens": run_tokens}
    results: dict = {"field": run_field(out)}
    commands: dict[str, str] = {"field": "spheresde field"}
    for name, command in SWEEPS:
        config = SCALES[scale].get(name)
        if config is None:
            continue
        argv = sweep_argv(command, config, seed)
        params = command_params(parser.parse_args(argv))
        results[name] = runners[command](out, params, quiet=quiet, overwrite=overwrite,
                                         name=name)
        commands[name] = "spheresde " + " ".join(argv)
    if not quiet:
        print("running python -m proofs_check ...", file=sys.stderr)
    proofs = proofs_check_report(out, overwrite=overwrite)
    wall = time.perf_counter() - start
    report = write_report(out, scale=scale, seed=seed, results=results, commands=commands,
                          proofs=proofs, wall=wall)
    lines = [f"wrote {report}"]
    lines += [f"  {p}" for p in sorted(out.glob("*.png"))]
    lines.append(f"wall time {wall:.0f} s")
    return lines
