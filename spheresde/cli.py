"""The ``spheresde`` command: reproduce the paper's experiments from the shell.

One sub-command per experiment of :data:`spheresde.experiments.SPECS` (``spheresde
--help`` lists them with their one-line summaries); the paper's are ``phase`` (Figure 3),
``hybrid`` and ``dominance`` (Figure 4), ``tokens``, ``train`` (Figure 2), ``field`` (Figure 1) and
``reproduce`` (all of them, the ``proofs_check`` report and ``REPORT.md``).

The options of each subcommand are the fields of its spec in
:mod:`spheresde.experiments` (type, default, help and validity check are declared there
once); this module only turns them into argparse options. Every sweep is resumable: each
finished grid point is saved at once, re-running the same command computes only what is
missing, and the same command with other parameters into the same ``--out`` directory
refuses unless ``--overwrite`` is given (a grid extended by new points computes only
those; a grid without some stored points refuses unless ``--prune`` drops them). A
second run writing into the same ``--out`` (whichever sweep) is refused, naming the
first, or waits for it with ``--wait``. Errors in the arguments, and stored files that
fail their check, print one line and exit with status 2; a fault while running (a full
disk, an unreadable file, a failed Dask cluster, also one whose worker died while it
started) prints one line and exits with status 1, Ctrl-C (also to the process group of a
``--workers`` run, whose workers leave it to this process) with status 130, and both keep
every finished point and chunk (``--debug`` shows the traceback).

How to run, never what (no number changes): ``--workers N`` runs the chunks of the
sweep on a local Dask cluster, ``--scheduler ADDRESS`` on an existing one,
``--dry-run`` prints the plan and a wall-time estimate and writes nothing. The chunk
size (``--chunk-size``) is recorded with the sweep: another chunk size is another
random stream, so it refuses like another parameter would. These three are offered by
the sub-commands whose sweeps run in chunks only (not ``train``, not ``field``).
"""

from __future__ import annotations

import _thread
import argparse
import errno
import os
import re
import signal
import sys
import tempfile
import threading
import warnings
from pathlib import Path
from typing import NoReturn

from .experiments import (
    SPECS,
    BadParameters,
    ParameterMismatch,
    RunOptions,
    StoreWarning,
    plan,
    run,
)
from .experiments.engine import SpecField, problem
from .experiments.engine._executors import use_compilation_cache

# how to run, not what: never in a spec
RUN_OPTIONS = ("out", "quiet", "overwrite", "chunk_size", "workers", "scheduler", "dry_run",
               "wait", "prune", "debug")


_PARAMETER = re.compile(r"`(?P<name>[a-z_]+)(?:=(?P<value>[^`]*))?`")


def in_flags(message: str) -> str:
    """A message of the library in the command line's words, the one translation: the
    library names a parameter `name=value` or `name` (backticks), which becomes
    ``--name value`` (a quoted value unquoted; `name=True`, a switch, ``--name``) or
    ``--name``; backticked text that is no parameter of a sub-command stays."""
    names = {f.name for spec_cls in SPECS.values() for f in spec_cls.spec_fields()}
    names |= set(RUN_OPTIONS)

    def spelled(match: re.Match) -> str:
        name, value = match["name"], match["value"]
        if name not in names:
            return match[0]
        flag = "--" + name.replace("_", "-")
        if value is None or value == "True":
            return flag
        return f"{flag} {value.strip(chr(39))}"

    return _PARAMETER.sub(spelled, message)


class _Parser(argparse.ArgumentParser):
    """An argparse parser whose errors are one line (no usage dump), exit status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _argument_type(spec_field: SpecField):
    """An argparse ``type``: parse the text, then apply the spec field's own check."""

    def parse(text: str):
        try:
            value = spec_field.kind.parse(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
        message = problem(spec_field.kind, spec_field.check, value)
        if message:
            raise argparse.ArgumentTypeError(message)
        return value

    return parse


def _add_spec_options(parser: argparse.ArgumentParser, spec_cls) -> None:
    for f in spec_cls.spec_fields():
        shown = f.kind.spell(f.default)
        if f.kind.element is bool:
            parser.add_argument(f.flag, dest=f.name, action="store_true", help=f.help)
            continue
        parser.add_argument(
            f.flag, dest=f.name, type=_argument_type(f), default=f.default,
            # a list of choices is checked element by element by the field's own check
            choices=None if f.kind.is_tuple else f.kind.choices,
            metavar=f.metavar if f.kind.choices is None or f.kind.is_tuple else None,
            help=f"{f.help} (default {shown})",
        )


def build_parser() -> argparse.ArgumentParser:
    """The ``spheresde`` parser, one sub-command per spec of :data:`experiments.SPECS`."""
    from . import __version__

    parser = _Parser(prog="spheresde", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"spheresde {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command, spec_cls in SPECS.items():
        p = sub.add_parser(command, help=spec_cls.summary, description=spec_cls.__doc__)
        p.set_defaults(parser=p, spec_cls=spec_cls)  # later errors still name the sub-command
        _add_spec_options(p, spec_cls)
        p.add_argument("--out", default="results", metavar="DIR",
                       help="output directory (default: results)")
        p.add_argument("--quiet", action="store_true", help="no progress bars or summary")
        p.add_argument("--debug", action="store_true",
                       help="on a fault, show the traceback instead of one line")
        if spec_cls.stores:
            p.add_argument("--overwrite", action="store_true",
                           help="replace a stored sweep made with other parameters, or one "
                                "that fails its check (the same parameters resume)")
            p.add_argument("--prune", action="store_true",
                           help="drop stored points that are not on the requested grid "
                                "(without it such a grid refuses)")
            p.add_argument("--wait", action="store_true",
                           help="wait for another run writing into the same --out to finish "
                                "(without it the second run refuses)")
        if spec_cls.runs_in_chunks:
            p.add_argument("--chunk-size", type=_positive("--chunk-size"),
                           default=RunOptions.chunk_size, metavar="N",
                           help="trajectories per chunk, the unit of work, saving and seeding "
                                f"(default {RunOptions.chunk_size}; recorded with the sweep)")
            p.add_argument("--workers", type=_positive("--workers"), default=0, metavar="N",
                           help="run the chunks on a local Dask cluster of N worker processes")
            p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                           help="run the chunks on an existing Dask cluster, e.g. "
                                "tcp://10.0.0.5:8786")
        p.add_argument("--dry-run", action="store_true",
                       help="print the plan (what is left to compute and its work: "
                            "trajectory-steps, or images x layers x tokens^2 for train) and "
                            "a wall-time estimate from a short calibration; write nothing")
    return parser


def _positive(flag: str):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"{value} must be >= 1")
        return value

    parse.__name__ = flag
    return parse


def _check_writable(parser: argparse.ArgumentParser, out: str) -> Path:
    if not out.strip():
        parser.error("--out is empty; give the output directory, e.g. --out results")
    path = Path(out)
    try:
        path.mkdir(parents=True, exist_ok=True)
        if not os.access(path, os.W_OK | os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        with tempfile.NamedTemporaryFile(dir=path):
            pass
    except OSError as err:
        reason = err.strerror or str(err)
        if err.errno == errno.ENOENT and path.is_dir():
            # What a pseudo file system such as /proc answers to a new file.
            reason = "its file system does not accept new files"
        elif err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            reason = f"not writable: {reason}"
        parser.error(f"--out {out}: cannot write there ({reason})")
    return path


FLAGS = ("--quiet", "--overwrite", "--dry-run", "--prune", "--wait", "--debug", "--help",
         "--version")  # the options without a value

# A value that starts with a minus sign: a negative number, list or range ("-1,2", "-2:2:5").
_NEGATIVE_VALUE = re.compile(r"-(\d|\.\d)")


def _join_negative_values(argv: list[str]) -> list[str]:
    """``--opt -1,2`` as ``--opt=-1,2``: argparse reads a value starting with ``-`` that is
    not a plain number as an option, and would report the value as missing."""
    out: list[str] = []
    for arg in argv:
        previous = out[-1] if out else ""
        if (_NEGATIVE_VALUE.match(arg) and previous.startswith("--") and "=" not in previous
                and previous not in FLAGS):
            out[-1] = f"{previous}={arg}"
        else:
            out.append(arg)
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the ``spheresde`` command line; return the exit status.

    Without ``argv`` this is the process's own command (``sys.argv``): once its work is
    done, or its fault's line printed, it ends the process itself with that status (see
    :func:`_end_process`).
    """
    own_process = argv is None
    if own_process:
        # from now on a Ctrl-C is a KeyboardInterrupt that the run turns into its one line
        # (while the package loaded, spheresde/__init__.py ended the process itself)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.unraisablehook = _interrupt_again
        use_compilation_cache()  # the command's programs are kept for its next runs
    argv = _join_negative_values(sys.argv[1:] if argv is None else list(argv))
    where = {"command": argv[0] if argv else "", "out": "results"}  # for a fault's line
    try:
        status = _main(argv, where)
    except BaseException as err:  # Ctrl-C at any moment, also while parsing
        if "--debug" in argv or not _is_fault(err):
            raise
        print(_fault_line(where["command"], where["out"], err), file=sys.stderr)
        status = 130 if _interrupted(err) else 1
    if own_process:
        _end_process(status)
    return status


def _interrupt_again(unraisable) -> None:
    """A ``sys.unraisablehook`` that does not lose Ctrl-C.

    Python runs its SIGINT handler wherever the interpreter is, also inside code whose
    exceptions it prints and ignores: a garbage-collection callback (JAX has one), a
    ``__del__``. A KeyboardInterrupt raised there would be a traceback on stderr and a
    sweep that goes on; the signal is delivered to the main thread again instead, to be
    raised where it can stop the run. Delivered a moment later, from another thread: at
    once, it would be raised inside this hook, where it is lost for good.
    """
    if issubclass(unraisable.exc_type, KeyboardInterrupt):
        again = threading.Timer(0.05, _thread.interrupt_main)
        again.daemon = True
        again.start()
    else:
        sys.__unraisablehook__(unraisable)


def _end_process(status: int) -> NoReturn:
    """End this process with ``status`` now, without the interpreter's teardown.

    Ctrl-C can land while JAX waits for XLA to compile a program: jaxlib's wait checks
    for signals and raises at once, but the compilation goes on in a thread of XLA's
    client. The teardown would then destroy that client under the running compilation,
    a segmentation fault (in 5 of 15 interrupted sweeps). And a Ctrl-C during the
    teardown of a finished run (JAX's takes a moment) would kill the process without a
    word. Nothing of the run is left to tear down by now: the store is saved and
    unlocked, a Dask cluster closed (its workers also exit when this process does) and
    the output printed.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def _main(argv: list[str], where: dict[str, str]) -> int:
    args, unknown = build_parser().parse_known_args(argv)
    sub = args.parser
    where.update(command=args.command, out=args.out)
    if unknown:
        # The sub-command's parser, so that the message points to its --help.
        sub.error(f"unrecognized arguments: {' '.join(unknown)}")
    values = {f.name: getattr(args, f.name) for f in args.spec_cls.spec_fields()}
    try:
        spec = args.spec_cls(**values)
    except BadParameters as err:
        sub.error(in_flags(str(err)))
    given = {name: getattr(args, name) for name in RUN_OPTIONS
             if name not in ("out", "debug", "dry_run") and hasattr(args, name)}  # offered
    try:
        options = RunOptions(**given)  # its checks are the options' own (workers, scheduler)
    except BadParameters as err:
        sub.error(in_flags(str(err)))
    out = Path(args.out) if args.dry_run else _check_writable(sub, args.out)
    try:
        with warnings.catch_warnings():
            if args.quiet:
                # NumPy/SciPy floating-point RuntimeWarnings (overflow to inf in a
                # quadrature or a threshold where none exists) are not for the
                # reader of a quiet run; the results mark such points themselves.
                warnings.simplefilter("ignore", RuntimeWarning)
            warnings.simplefilter("always", StoreWarning)  # shown, as one line:
            warnings.showwarning = _one_line(args.command)  # restored on leaving
            lines = (plan(spec, out, options) if args.dry_run
                     else run(spec, out, options).summary())
    except (ParameterMismatch, BadParameters) as err:
        sub.error(in_flags(str(err)))
    if not args.quiet or args.dry_run:
        for line in lines:
            print(in_flags(line))
    return 0


def _one_line(command: str):
    """A ``warnings.showwarning`` that prints the warning's message as one line."""

    def show(message, category, filename, lineno, file=None, line=None):
        print(f"spheresde {command}: warning: {in_flags(str(message))}",
              file=sys.stderr if file is None else file)

    return show


def _interrupted(err: BaseException) -> bool:
    """Whether ``err`` is Ctrl-C, or an error raised while Ctrl-C unwound (a Dask
    cluster closing under a process group that got the signal too, say)."""
    while err is not None:
        if isinstance(err, KeyboardInterrupt):
            return True
        err = err.__context__
    return False


def _dask_failure(err: BaseException) -> bool:
    """Whether ``err`` comes from ``dask.distributed`` (a worker that keeps dying, a
    scheduler lost, a closed connection): by its class, or by the code that raised it
    (a worker process that died while the cluster started raises a plain RuntimeError)."""
    innermost = err.__traceback__
    while innermost is not None and innermost.tb_next is not None:
        innermost = innermost.tb_next
    raised_in = innermost.tb_frame.f_globals.get("__name__", "") if innermost else ""
    return any(name.split(".")[0] in ("distributed", "tornado")
               for name in (raised_in, *(cls.__module__ for cls in type(err).__mro__)))


def _is_fault(err: BaseException) -> bool:
    """A fault of the run, not of the program: reported in one line, no traceback."""
    return _interrupted(err) or _dask_failure(err) or isinstance(err, OSError)


def _fault_line(command: str, out: str, err: BaseException) -> str:
    """The one line that reports a fault: what happened, and that finished points are safe."""
    safe = f"finished grid points are saved in {out}"
    if _interrupted(err):
        return f"\nspheresde {command}: interrupted; {safe}, re-run the same command to resume"
    if _dask_failure(err):
        what = f"the Dask cluster failed ({type(err).__name__}: {err})"
    else:
        where = f"{err.filename}: " if getattr(err, "filename", None) else ""
        what = f"{where}{err.strerror or err}" if isinstance(err, OSError) else str(err)
        if getattr(err, "errno", None) == errno.ENOSPC:
            what += " (free some space)"
    return f"spheresde {command}: {what}; {safe}, re-run the same command to resume"


__all__ = ["build_parser", "in_flags", "main"]

if __name__ == "__main__":
    sys.exit(main())
