"""The ``spheresde`` command: reproduce the paper's experiments from the shell.

Subcommands
-----------
``phase``      Figure 3: probability that two tokens end antipodal, against beta, per dimension d.
``hybrid``     Figure 4: dominant outcome of the hybrid dynamics in the (beta, eps) plane.
``tokens``     antipodal formations of n > 2 tokens, and the sizes of the two clusters.
``field``      Figure 1: the attention field on the circle and its tangent projection.
``reproduce``  all of the above, the ``proofs_check`` report and ``REPORT.md``.

Every sweep is resumable: each finished grid point is saved at once, re-running the same
command computes only what is missing, and the same command with other parameters into
the same ``--out`` directory refuses unless ``--overwrite`` is given. Errors in the
arguments print one line and exit with status 2; Ctrl-C exits with status 130 and keeps
every finished point.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

METHODS = ("exact", "reduced", "particles", "discrete")


class _Parser(argparse.ArgumentParser):
    """An argparse parser whose errors are one line (no usage dump), exit status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


# ---------------------------------------------------------------------------- argument types


def _number(text: str, kind, what: str):
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def _bounded(kind, what: str, low=None, *, strict=True, high=None):
    """An argparse type: a number of ``kind`` above ``low`` (and below ``high``)."""

    def parse(text: str):
        value = _number(text.strip(), kind, what)
        if low is not None and (value <= low if strict else value < low):
            raise argparse.ArgumentTypeError(
                f"{text!r} must be {'>' if strict else '>='} {low}"
            )
        if high is not None and value >= high:
            raise argparse.ArgumentTypeError(f"{text!r} must be < {high}")
        return value

    return parse


positive_int = _bounded(int, "an integer", 0)
nonnegative_int = _bounded(int, "an integer", 0, strict=False)
positive_float = _bounded(float, "a number", 0.0)
nonnegative_float = _bounded(float, "a number", 0.0, strict=False)
tolerance = _bounded(float, "a number", 0.0, high=1.0)
dimension = _bounded(int, "an integer", 2, strict=False)
token_count = _bounded(int, "an integer", 2, strict=False)


def _list_of(item, *, ranges: bool):
    """An argparse type for ``"a,b,c"`` or, with ``ranges``, ``"start:stop:num"`` (linspace)."""

    def parse(text: str) -> list:
        text = text.strip()
        if ranges and ":" in text:
            parts = text.split(":")
            if len(parts) != 3:
                raise argparse.ArgumentTypeError(f"{text!r}: a range is start:stop:num")
            start, stop = (item(p) for p in parts[:2])
            num = positive_int(parts[2])
            if stop < start:
                raise argparse.ArgumentTypeError(f"{text!r}: stop must be >= start")
            step = (stop - start) / (num - 1) if num > 1 else 0.0
            # 12 significant digits: grid keys stay the numbers a user would type
            values = [float(f"{start + k * step:.12g}") for k in range(num)]
        else:
            values = [item(p) for p in text.split(",") if p.strip()]
        if not values:
            raise argparse.ArgumentTypeError("the list is empty")
        if len(set(values)) != len(values):
            raise argparse.ArgumentTypeError(f"{text!r} repeats a value")
        return values

    return parse


float_grid = _list_of(nonnegative_float, ranges=True)
positive_grid = _list_of(positive_float, ranges=True)
dimension_list = _list_of(dimension, ranges=False)
token_list = _list_of(token_count, ranges=False)


# ---------------------------------------------------------------------------- parser


def _common(p: argparse.ArgumentParser, *, out_default: str = "results") -> None:
    p.add_argument("--out", default=out_default, metavar="DIR",
                   help=f"output directory (default: {out_default})")
    p.add_argument("--seed", type=nonnegative_int, default=0,
                   help="PRNG seed; every grid point derives its key from it (default 0)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--overwrite", action="store_true",
                   help="replace a stored sweep made with other parameters")


def _simulation(p: argparse.ArgumentParser, *, trajectories: int, layers: int, horizon: float):
    p.add_argument("--trajectories", type=positive_int, default=trajectories,
                   help=f"Monte Carlo samples per grid point (default {trajectories})")
    p.add_argument("--layers", type=positive_int, default=layers, metavar="L",
                   help=f"layers per unit of depth-time; step dt = 1/L (default {layers})")
    p.add_argument("--horizon", type=positive_float, default=horizon, metavar="T",
                   help=f"depth-time horizon; round(T*L) layers in all (default {horizon:g})")
    p.add_argument("--tol", type=tolerance, default=1e-2,
                   help="outcome tolerance on inner products (default 1e-2)")


def _subcommand(sub, name: str, **kwargs) -> argparse.ArgumentParser:
    p = sub.add_parser(name, **kwargs)
    p.set_defaults(parser=p)  # errors found after parsing still name the subcommand
    return p


def build_parser() -> argparse.ArgumentParser:
    from .experiments import QUICK

    parser = _Parser(prog="spheresde", description=__doc__.split("\n\n")[0])
    from . import __version__

    parser.add_argument("--version", action="version", version=f"spheresde {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    q = QUICK["phase"]
    p = _subcommand(sub, "phase", help="Figure 3: two-token antipodal probability against beta")
    p.add_argument("--dims", type=dimension_list, default=q["dims"],
                   help="token dimensions d, e.g. 4,5,6 (default %(default)s)")
    p.add_argument("--betas", type=float_grid, default=q["betas"],
                   help="temperatures: a list 0.5,1,2 or start:stop:num")
    _simulation(p, trajectories=q["trajectories"], layers=q["layers"], horizon=q["horizon"])
    p.add_argument("--sigma", type=positive_float, default=1.0, help="noise level (default 1)")
    p.add_argument("--method", choices=METHODS, default=q["method"],
                   help="exact: scale-function quadrature (t -> infinity); reduced: Monte Carlo "
                        "of the 1-D SDE of rho; particles: the SDE on the sphere; discrete: "
                        f"the L-layer network (default {q['method']})")
    _common(p)

    q = QUICK["hybrid"]
    p = _subcommand(sub, "hybrid", help="Figure 4: dominant outcome of the hybrid dynamics")
    p.add_argument("--betas", type=float_grid, default=q["betas"],
                   help="temperatures: a list or start:stop:num")
    p.add_argument("--eps", type=positive_grid, default=q["eps"],
                   help="noise levels eps: a list or start:stop:num")
    p.add_argument("--tokens", type=token_count, default=q["tokens"], help="number of tokens n")
    p.add_argument("--dim", type=dimension, default=q["dim"], help="token dimension d")
    p.add_argument("--mu", type=nonnegative_float, default=1.0,
                   help="deterministic part of V = (mu/sqrt L) Id + eps G (default 1)")
    _simulation(p, trajectories=q["trajectories"], layers=q["layers"], horizon=q["horizon"])
    p.add_argument("--method", choices=METHODS, default=q["method"],
                   help=f"as for phase; exact and reduced need --tokens 2 (default {q['method']})")
    _common(p)

    q = QUICK["tokens"]
    p = _subcommand(sub, "tokens", help="antipodal formations of n > 2 tokens")
    p.add_argument("--tokens", type=token_list, default=q["tokens"],
                   help="numbers of tokens n, e.g. 3,4,8")
    p.add_argument("--betas", type=float_grid, default=q["betas"],
                   help="temperatures: a list or start:stop:num")
    p.add_argument("--dim", type=dimension, default=q["dim"], help="token dimension d")
    p.add_argument("--sigma", type=positive_float, default=1.0, help="noise level (default 1)")
    _simulation(p, trajectories=q["trajectories"], layers=q["layers"], horizon=q["horizon"])
    p.add_argument("--method", choices=("particles", "discrete"), default=q["method"],
                   help=f"particles: the SDE; discrete: the network (default {q['method']})")
    p.add_argument("--weights", choices=("noise", "constant"), default="noise",
                   help="noise: iid N(0, sigma^2) value matrices (default); constant: V = Id "
                        "in every layer, the deterministic model (horizon in its own time "
                        "T sqrt(L), see spheresde.ConstantWeights)")
    _common(p)

    p = _subcommand(sub, "field", help="Figure 1: the attention field on the circle")
    p.add_argument("--beta", type=nonnegative_float, default=1.0, help="temperature (default 1)")
    p.add_argument("--out", default="results", metavar="DIR", help="output directory")
    p.add_argument("--quiet", action="store_true", help="print nothing")

    p = _subcommand(sub, "reproduce", help="every figure, the proofs_check report and REPORT.md")
    p.add_argument("--scale", choices=("quick", "paper", "smoke"), default="quick",
                   help="quick (default): about 5 minutes on 2 CPU cores; paper: the paper's "
                        "sizes (days on a CPU, use an accelerator); smoke: toy sizes in "
                        "seconds, to check the pipeline")
    _common(p)
    return parser


# ---------------------------------------------------------------------------- entry point


def _check_writable(parser: argparse.ArgumentParser, out: str) -> Path:
    path = Path(out)
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as err:
        parser.error(f"--out {out}: cannot write there ({err.strerror or err})")
    return path


def main(argv: list[str] | None = None) -> int:
    """Run the ``spheresde`` command line; return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    command = f"spheresde {args.command}"
    sub = args.parser
    try:
        out = _check_writable(sub, args.out)
        from . import experiments
        from .experiments import BadParameters, ParameterMismatch

        try:
            result = experiments.run_command(args, out)
        except (ParameterMismatch, BadParameters) as err:
            sub.error(str(err))
    except KeyboardInterrupt:
        print(
            f"\n{command}: interrupted; finished grid points are saved in {args.out}, "
            "re-run the same command to resume",
            file=sys.stderr,
        )
        return 130
    if not getattr(args, "quiet", False):
        for line in result:
            print(line)
    return 0


__all__ = ["build_parser", "main"]

if __name__ == "__main__":
    sys.exit(main())
