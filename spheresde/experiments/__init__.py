"""The paper's experiments as resumable sweeps, their figures and the reproduction report.

Used by the ``spheresde`` command line (:mod:`spheresde.cli`); every function here
writes into an output directory and can be re-run to resume. Importing this package is
cheap (JAX is imported only when a sweep runs), so argument errors are reported fast.
"""

from __future__ import annotations

from ._scales import PAPER, QUICK, SCALES, SMOKE
from ._sweep import ParameterMismatch, Sweep, atomic_write_text, format_value, point_seed


class BadParameters(ValueError):
    """A combination of parameters that no method can serve (e.g. exact with n > 2)."""


def command_params(args) -> dict:
    """The parameters of a parsed sub-command that determine its results (resume identity)."""
    return {
        k: v
        for k, v in vars(args).items()
        if k not in ("command", "parser", "out", "quiet", "overwrite")
    }


def run_command(args, out) -> list[str]:
    """Run the sub-command parsed into ``args`` into directory ``out``; return summary lines."""
    params = command_params(args)
    if args.command == "field":
        from ._field import run_field

        info = run_field(out, **params)
        return [f"wrote {info['png']} and {info['csv']}"]
    if args.command == "reproduce":
        from ._reproduce import reproduce

        return reproduce(out, args.scale, seed=args.seed, quiet=args.quiet,
                         overwrite=args.overwrite)
    from . import _hybrid, _phase, _tokens

    run = {"phase": _phase.run_phase, "hybrid": _hybrid.run_hybrid,
           "tokens": _tokens.run_tokens}[args.command]
    info = run(out, params, quiet=args.quiet, overwrite=args.overwrite)
    return [f"wrote {info['csv']}, {info['json']} and {info['png']}"]


__all__ = [
    "PAPER",
    "QUICK",
    "SCALES",
    "SMOKE",
    "BadParameters",
    "ParameterMismatch",
    "Sweep",
    "atomic_write_text",
    "command_params",
    "format_value",
    "point_seed",
    "run_command",
]
