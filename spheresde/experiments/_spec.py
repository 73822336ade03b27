"""Typed experiment specs: one frozen dataclass per experiment, everything else derived.

A spec's fields are the experiment's parameters, each declared once with :func:`param`
(type annotation, default, help text, validity check). From the spec class come the
command-line options (:mod:`spheresde.cli`), and from a spec instance the presets'
sizes, the resume identity and JSON metadata (:meth:`ExperimentSpec.params`), the CSV
columns that echo the parameters (:meth:`ExperimentSpec.echo`) and the command line
printed in reports (:meth:`ExperimentSpec.command_line`). Adding a parameter means adding
one field to a spec and using it where it matters; the recipe is in the docs
(:doc:`/contributing`).

Supported field types: ``int``, ``float``, ``bool``, ``str`` (a path, say), a ``Literal``
of strings (choices), ``tuple[int, ...]`` (a list ``4,5,6``), ``tuple[float, ...]`` (a
list ``0.5,1,2`` or a range ``start:stop:num``) and a tuple of a ``Literal`` (several
choices, ``a,b``). Values are coerced to the declared type on construction, so
``PhaseSpec(betas=(1, 2))`` and ``PhaseSpec(betas=(1.0, 2.0))`` are the same spec (and
seed the same random numbers).
"""

from __future__ import annotations

import abc
import dataclasses
import itertools
import math
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from ._store import Counts, format_value

Check = Callable[[Any], "str | None"]
Section = tuple[str, list[tuple[str, str]]]
"""A section of ``REPORT.md``: its Markdown text and its rows of the summary table
(claim, our result)."""


class BadParameters(ValueError):
    """Parameters that no experiment can serve; the message says which and why."""


# ---------------------------------------------------------------------------- checks
# A check takes one value (one element of a tuple field) and returns None when it is
# valid, or the end of a sentence saying what it must be.


def greater_than(low: float | int) -> Check:
    """Values must be ``> low``."""
    return lambda v: None if v > low else f"must be > {low:g}"


def at_least(low: float | int) -> Check:
    """Values must be ``>= low``."""
    return lambda v: None if v >= low else f"must be >= {low:g}"


def between(low: float | int, high: float | int) -> Check:
    """Values must lie in the open interval ``(low, high)``."""
    return lambda v: None if low < v < high else f"must be in ({low:g}, {high:g})"


def param(default: Any, help: str, *, check: Check | None = None,
          metavar: str | None = None, added: bool = False) -> Any:
    """A spec field: its default, its help text and its validity check.

    ``help`` is the sentence shown by ``spheresde COMMAND --help`` (the default is
    appended there); ``check`` applies to the value, or to each element of a tuple field.
    ``added``: a parameter added after sweeps were stored; at its default it is left out
    of the resume identity, the CSV columns and the command line, so that those sweeps,
    which ran with that default, still resume.
    """
    return dataclasses.field(default=default,
                             metadata={"help": help, "check": check, "metavar": metavar,
                                       "added": added})


# The parameters several experiments share: keyword arguments of :func:`param`, so that
# their help text and check are written once (``trajectories: int = param(400, **SAMPLES)``).
BETAS = {"help": "inverse temperatures beta: a list 0.5,1,2 or start:stop:num",
         "check": at_least(0.0)}
SAMPLES = {"help": "Monte Carlo samples per grid point", "check": greater_than(0)}
LAYERS = {"help": "layers per unit of depth-time; step dt = 1/L", "check": greater_than(0),
          "metavar": "L"}
HORIZON = {"help": "depth-time horizon; round(T*L) layers in all", "check": greater_than(0.0),
           "metavar": "T"}
TOL_MIN = 2.0**-53  # below it 1 - tol rounds to 1 in float64: artanh(1 - tol) is infinite
TOL = {"help": "outcome tolerance on inner products",
       "check": lambda v: None if TOL_MIN <= v < 1 else
       f"must be in [{TOL_MIN:.2g}, 1) (below, 1 - tol is 1 in float64 and the outcome "
       "threshold artanh(1 - tol) is infinite)"}
SIGMA = {"help": "noise level sigma of the value matrices", "check": greater_than(0.0)}
SEED = {"help": "PRNG seed; every grid point derives its key from it", "check": at_least(0)}
ABSORB = {"help": "early absorption bound: a trajectory (two tokens; n tokens near the single "
                  "cluster) stops once its chance of returning to the classification "
                  "boundary is below this (0: off; see the scaling docs)",
          "check": lambda v: None if 0 <= v < 1 else "must be in [0, 1)"}


# ---------------------------------------------------------------------------- field types


@dataclasses.dataclass(frozen=True)
class FieldKind:
    """How one spec field is typed: its element type, whether it is a tuple, its choices."""

    element: type
    is_tuple: bool = False
    choices: tuple[str, ...] | None = None

    def coerce(self, value: Any) -> Any:
        """``value`` in the declared type (tuples of elements, numbers as int or float)."""
        if self.is_tuple:
            if isinstance(value, str | bytes) or not hasattr(value, "__iter__"):
                raise TypeError(f"expected a sequence, got {value!r}")
            return tuple(self._one(v) for v in value)
        return self._one(value)

    def _one(self, value: Any) -> Any:
        if self.choices is not None or self.element is str:
            return str(value)
        if self.element is bool:
            if not isinstance(value, bool):
                raise TypeError(f"expected True or False, got {value!r}")
            return value
        if self.element is int:
            if isinstance(value, bool) or int(value) != value:
                raise TypeError(f"expected an integer, got {value!r}")
            return int(value)
        return float(value)

    def parse(self, text: str) -> Any:
        """Parse command-line text: a number, a choice, or a list / range for tuples."""
        text = text.strip()
        if not self.is_tuple:
            return self._parse_one(text)
        if ":" in text and self.element is float:
            parts = text.split(":")
            if len(parts) != 3:
                raise ValueError(f"{text!r}: a range is start:stop:num")
            start, stop = (self._parse_one(p) for p in parts[:2])
            num = FieldKind(int)._parse_one(parts[2])
            if num < 1:
                raise ValueError(f"{text!r}: num must be >= 1")
            if stop < start:
                raise ValueError(f"{text!r}: stop must be >= start")
            step = (stop - start) / (num - 1) if num > 1 else 0.0
            # 12 significant digits: grid keys stay the numbers a user would type
            return tuple(float(f"{start + k * step:.12g}") for k in range(num))
        parts = text.split(",")
        if any(not p.strip() for p in parts):
            raise ValueError(f"{text!r}: an empty entry in the list (two commas, or a comma "
                             f"at an end)")
        return tuple(self._parse_one(p) for p in parts)

    def _parse_one(self, text: str) -> Any:
        text = text.strip()
        if self.choices is not None or self.element is str:
            return text
        if self.element is int:
            try:
                return int(text)
            except ValueError:
                raise ValueError(f"{text!r} is not an integer") from None
        try:
            return float(text)  # finiteness is one of the checks of problem()
        except ValueError:
            raise ValueError(f"{text!r} is not a number") from None

    def spell(self, value: Any) -> str:
        """The command-line text of ``value`` (the inverse of :meth:`parse`)."""
        if self.is_tuple:
            return ",".join(format_value(v) for v in value)
        return format_value(value)


def field_kind(annotation: Any) -> FieldKind:
    """The :class:`FieldKind` of a resolved type annotation."""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return FieldKind(str, choices=tuple(typing.get_args(annotation)))
    if origin is tuple:
        element, ellipsis = typing.get_args(annotation)
        if ellipsis is Ellipsis and typing.get_origin(element) is typing.Literal:
            return FieldKind(str, is_tuple=True, choices=tuple(typing.get_args(element)))
        if ellipsis is not Ellipsis or element not in (int, float):
            raise TypeError(f"unsupported spec field type {annotation!r}")
        return FieldKind(element, is_tuple=True)
    if annotation in (int, float, bool, str):
        return FieldKind(annotation)
    raise TypeError(f"unsupported spec field type {annotation!r}")


def problem(kind: FieldKind, check: Check | None, value: Any) -> str | None:
    """What is wrong with an already typed ``value`` (None when it is valid)."""
    values = value if kind.is_tuple else (value,)
    if kind.is_tuple:
        if not values:
            return "the list is empty"
        if len(set(values)) != len(values):
            return f"{kind.spell(value)!r} repeats a value"
    for v in values:
        if kind.choices is not None and v not in kind.choices:
            return f"{v!r} is not one of {', '.join(kind.choices)}"
        if isinstance(v, float) and not math.isfinite(v):
            return f"{v!r} is not a finite number"
        message = check(v) if check is not None else None
        if message:
            return f"{format_value(v)!r} {message}"
    return None


# ---------------------------------------------------------------------------- specs


@dataclasses.dataclass(frozen=True)
class SpecField:
    """One parameter of a spec, as the CLI and the docs see it."""

    name: str
    kind: FieldKind
    default: Any
    help: str
    check: Check | None
    metavar: str | None
    added: bool = False

    @property
    def flag(self) -> str:
        """The command-line option, ``--name`` (underscores become hyphens)."""
        return "--" + self.name.replace("_", "-")


@dataclasses.dataclass(frozen=True)
class ExperimentSpec(abc.ABC):
    """Base of the experiment specs (each a frozen dataclass, see the module docstring).

    Class attributes of every spec: ``command`` (the ``spheresde`` sub-command),
    ``summary`` (one line of help), ``rules`` (checks that involve several fields, each
    ``spec -> message or None``) and ``unused`` (per value of the spec's ``method`` field,
    the fields that method ignores: they are left out of the resume identity, the
    metadata and the CSV). ``report_rank`` orders the sections of ``REPORT.md`` (the
    paper's order; a new experiment's section comes after the paper's). ``stores``: the
    runs write resumable stores (they take ``overwrite``, ``prune`` and ``wait``);
    ``runs_in_chunks``: their Monte Carlo runs in chunks (they take ``chunk_size``,
    ``workers`` and ``scheduler``).
    """

    command: ClassVar[str]
    summary: ClassVar[str]
    rules: ClassVar[tuple[Callable[[Any], str | None], ...]] = ()
    unused: ClassVar[dict[str, tuple[str, ...]]] = {}
    report_rank: ClassVar[int] = 100
    stores: ClassVar[bool] = False
    runs_in_chunks: ClassVar[bool] = False

    @classmethod
    def report_section(cls, results: Mapping[str, Any],
                       notes: Mapping[str, str]) -> Section | None:
        """The section of ``REPORT.md`` from the results of this experiment's runs (by
        run name), or None for no section; ``notes`` are sentences of the whole run
        by run name (for example, which data set a training run used and why)."""
        return None

    def __post_init__(self):
        for spec_field in self.spec_fields():
            value = getattr(self, spec_field.name)
            try:
                typed = spec_field.kind.coerce(value)
            except (TypeError, ValueError) as err:
                raise BadParameters(f"`{spec_field.name}`: {err}") from None
            object.__setattr__(self, spec_field.name, typed)
            message = problem(spec_field.kind, spec_field.check, typed)
            if message:
                raise BadParameters(f"`{spec_field.name}`: {message}")
        for rule in self.rules:
            message = rule(self)
            if message:
                raise BadParameters(message)

    @classmethod
    def spec_fields(cls) -> tuple[SpecField, ...]:
        """Every parameter of the spec, in declaration order."""
        hints = typing.get_type_hints(cls)
        return tuple(
            SpecField(f.name, field_kind(hints[f.name]), f.default, f.metadata["help"],
                      f.metadata["check"], f.metadata["metavar"], f.metadata["added"])
            for f in dataclasses.fields(cls)
        )

    def _used(self) -> list[SpecField]:
        skip = self.unused.get(self.method, ()) if self.unused else ()
        return [f for f in self.spec_fields() if f.name not in skip
                and not (f.added and getattr(self, f.name) == f.default)]

    def params(self) -> dict[str, Any]:
        """The parameters that determine the results, JSON-ready (tuples as lists).

        This is the resume identity of a sweep and its metadata; fields the chosen
        ``method`` ignores are left out.
        """
        return {f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v
                for f in self._used()}

    def echo(self) -> dict[str, Any]:
        """The scalar parameters (not the grids, not the seed), repeated in every CSV row."""
        return {f.name: getattr(self, f.name) for f in self._used()
                if not f.kind.is_tuple and f.name != "seed"}

    def argv(self) -> list[str]:
        """The ``spheresde`` arguments that rebuild this spec (every field, explicitly,
        except an empty text field such as an unset path: its default)."""
        argv = [self.command]
        for f in self._used():
            value = getattr(self, f.name)
            if value == "" and f.kind.element is str and f.kind.choices is None:
                continue
            if f.kind.element is bool:
                argv += [f.flag] if value else []
            else:
                argv += [f.flag, f.kind.spell(value)]
        return argv

    def command_line(self) -> str:
        """What a user types to run this spec: ``spheresde COMMAND --flag value ...``."""
        return "spheresde " + " ".join(self.argv())

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> ExperimentSpec:
        """A spec from a dict such as :meth:`params` wrote (unknown keys are an error)."""
        known = {f.name for f in cls.spec_fields()}
        extra = sorted(set(values) - known)
        if extra:
            raise BadParameters(f"{cls.command}: unknown parameters {extra}")
        return cls(**values)



class AbstractSweepSpec(ExperimentSpec):
    """A resumable sweep: a grid of points, typed rows, a figure and a report section.

    A final spec sets ``row_type`` (the row dataclass, whose fields are the CSV columns
    before the echoed parameters) and ``axes`` (point coordinate -> grid field, outermost
    first: :meth:`points` is their product), implements :meth:`plot` and
    :meth:`report_section`, and runs its points either in chunks
    (:class:`AbstractChunkedSpec`) or whole (:class:`AbstractPointSpec`);
    :func:`~spheresde.experiments.run_sweep` runs any of them.
    """

    row_type: ClassVar[type]
    axes: ClassVar[dict[str, str]]
    stores: ClassVar[bool] = True

    def points(self) -> list[dict[str, Any]]:
        """The grid: every combination of the :attr:`axes` fields' values, the first axis
        outermost, as ``{coordinate: value}``."""
        names = list(self.axes)
        grids = (getattr(self, field) for field in self.axes.values())
        return [dict(zip(names, values, strict=True)) for values in itertools.product(*grids)]

    def progress(self, name: str) -> str:
        """The label of the progress bar of the run ``name``."""
        return name

    @abc.abstractmethod
    def plot(self, rows: list[Any], path: Path) -> Path:
        """Draw the figure of ``rows`` into ``path``; return it."""

    @classmethod
    @abc.abstractmethod
    def report_section(cls, results: Mapping[str, Any],
                       notes: Mapping[str, str]) -> Section | None:
        """The section of ``REPORT.md`` (see :meth:`ExperimentSpec.report_section`)."""


class AbstractChunkedSpec(AbstractSweepSpec):
    """A sweep whose points are Monte Carlo in chunks: :meth:`samples` trajectories a
    point, split into chunks of the run's chunk size, each a pure function of the seed,
    the point and the chunk index (so that it may run on any worker, in any order).
    """

    runs_in_chunks: ClassVar[bool] = True

    @abc.abstractmethod
    def chunk(self, point: dict[str, Any], k: int, size: int) -> Counts:
        """Integer counts of chunk ``k`` (``size`` trajectories) of ``point``, keyed by
        :func:`~spheresde.experiments.chunk_seed` of the seed, the point and ``k``."""

    @abc.abstractmethod
    def finish(self, point: dict[str, Any], counts: list[Counts]) -> Any:
        """The row of ``point`` from the counts of all its chunks, in chunk order."""

    @abc.abstractmethod
    def samples(self) -> int:
        """Trajectories per point (0: no Monte Carlo, one chunk of no trajectories)."""

    @abc.abstractmethod
    def steps(self) -> int:
        """Steps of one trajectory (averaged over the points when they differ), for the
        ``--dry-run`` plan."""

    def check(self, counts: Counts, size: int) -> str | None:
        """What is wrong with stored counts of a chunk of ``size`` (None: nothing); a
        chunk that fails is computed again. By default nothing is checked."""
        return None

    def shortened(self, steps: int) -> AbstractChunkedSpec:
        """The spec with trajectories of ``steps`` steps, for the plan's calibration (by
        default the spec itself)."""
        return self

    def point_steps(self, point: dict[str, Any]) -> int:
        """Steps of one trajectory at ``point``, for the plan (by default :meth:`steps`)."""
        return self.steps()

    def varying_steps(self) -> bool:
        """Whether the points' trajectories have different numbers of steps."""
        return False

    def absorbs(self) -> bool:
        """Whether trajectories stop early (the plan then probes what share is run)."""
        return False


class Plan(NamedTuple):
    """What ``--dry-run`` says of one sweep: the lines it prints, and the estimated wall
    time in seconds (None when the run would refuse)."""

    lines: list[str]
    seconds: float | None


class AbstractPointSpec(AbstractSweepSpec):
    """A sweep whose points are computed whole in this process (no chunks, no Dask), each
    giving one row or several. Points with the same :meth:`together` are computed together,
    by one call of :meth:`compute` (one compiled program, say), and stored one by one as
    soon as that call returns: an interrupted batch is computed again, a finished one
    is kept."""

    def together(self, point: dict[str, Any]) -> Any:
        """The points that share this value (hashable) are computed together; by default
        each point alone."""
        return tuple(sorted(point.items()))

    @abc.abstractmethod
    def prepare(self) -> dict[str, Any]:
        """Check what the points need before any is computed (raise
        :class:`BadParameters`); return the metadata stored beside the parameters."""

    @abc.abstractmethod
    def compute(self, points: list[dict[str, Any]], *, quiet: bool) -> list[list[Any]]:
        """The rows of each of ``points`` (points of one :meth:`together`), in their order."""

    @abc.abstractmethod
    def plan(self, name: str, pending: list[dict[str, Any]]) -> Plan:
        """What ``--dry-run`` prints for the run ``name`` whose ``pending`` points are not
        stored yet, and its estimate of their wall time, priced by a calibration in
        this process (a :class:`Plan`)."""


__all__ = [
    "AbstractChunkedSpec",
    "AbstractPointSpec",
    "AbstractSweepSpec",
    "BadParameters",
    "ExperimentSpec",
    "FieldKind",
    "Plan",
    "Section",
    "SpecField",
    "at_least",
    "between",
    "field_kind",
    "greater_than",
    "param",
    "problem",
]
