"""Typed experiment specs: one frozen dataclass per experiment, everything else derived.

A spec's fields are the experiment's parameters, each declared once with
:func:`~._params.param`. From the spec class come the command-line options
(:mod:`spheresde.cli`), and from a spec instance the presets' sizes, the resume identity
and JSON metadata (:meth:`ExperimentSpec.params`), the CSV columns that echo the
parameters (:meth:`ExperimentSpec.echo`) and the command line printed in reports
(:meth:`ExperimentSpec.command_line`). A spec runs itself (:meth:`ExperimentSpec.run`)
and says what it would compute (:meth:`ExperimentSpec.plan`): :func:`run` and
:func:`plan` ask the spec, whatever its class.

**Abstract or final** (equinox's rule, checked when a class is created, so that a
mistake fails at import with the name of what is wrong, not in the middle of a run):

- a class whose name starts with ``Abstract`` is abstract; every other spec is final;
- no class overrides a concrete method of a base: an abstract class declares abstract
  methods, and the one class that implements one is the last word on it. A choice that
  differs between specs is a class attribute (data), not an override: ``label`` (the
  progress bar's text), ``unused``, ``absorbing``, ``together_by``...;
- a final class implements every abstract method, gives a value to every class
  attribute declared without one (``command``, ``summary``, ``row_type``, ``axes``),
  and declares every field an abstract class declares with :class:`AbstractVar`
  (``trajectories: AbstractVar[int]``: the base uses it, the final spec declares it
  with its default and help, in its own order, which is the order of the CSV columns).

Dunder methods (``__post_init__``) are outside the rule: a final spec may resolve a
default before the checks and then call the base's.
"""

from __future__ import annotations

import abc
import dataclasses
import inspect
import itertools
import os
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from . import _driver, _planning
from ._chunks import Counts
from ._params import BadParameters, Section, SpecField, field_kind, problem
from ._planning import Plan

T = TypeVar("T")


class AbstractVar(Generic[T]):
    """The annotation of a field that an abstract spec uses and every final spec must
    declare (``trajectories: AbstractVar[int]``): a final spec without it is refused
    when its class is created, with the field's name."""


def _is_abstract(cls: type) -> bool:
    return cls.__name__.startswith("Abstract") or cls is ExperimentSpec


def _annotations(cls: type) -> dict[str, str]:
    """The class's own annotations as text (``from __future__ import annotations``)."""
    return {name: str(value) for name, value in vars(cls).get("__annotations__", {}).items()}


def _is_method(value: Any) -> bool:
    return inspect.isfunction(value) or isinstance(value, classmethod | staticmethod | property)


def _check_class(cls: type) -> None:
    """Equinox's rule (see the module docstring) for a new spec class ``cls``."""
    for name, value in vars(cls).items():
        if not _is_method(value) or (name.startswith("__") and name.endswith("__")):
            continue
        for base in cls.__mro__[1:]:
            if name in vars(base):
                if not getattr(vars(base)[name], "__isabstractmethod__", False):
                    raise TypeError(
                        f"{cls.__name__}.{name} overrides {base.__name__}.{name}, a concrete "
                        "method: a spec implements abstract methods only; make the choice a "
                        f"class attribute, or declare {base.__name__}.{name} abstract")
                break
    if _is_abstract(cls):
        return
    missing = sorted(name for name in dir(cls)
                     if getattr(getattr(cls, name, None), "__isabstractmethod__", False))
    if missing:
        raise TypeError(f"{cls.__name__} is final but does not implement "
                        f"{', '.join(missing)} (abstract in its bases)")
    declared = {name for klass in cls.__mro__ for name, text in _annotations(klass).items()
                if not text.startswith(("AbstractVar", "ClassVar"))}
    for klass in reversed(cls.__mro__):
        for name, text in _annotations(klass).items():
            if text.startswith("ClassVar") and not any(name in vars(k) for k in cls.__mro__):
                raise TypeError(f"{cls.__name__} must set the class attribute `{name}` "
                                f"(declared by {klass.__name__})")
            if text.startswith("AbstractVar") and name not in declared:
                raise TypeError(f"{cls.__name__} must declare the field `{name}` (declared "
                                f"abstract by {klass.__name__}, which uses it), e.g. "
                                f"`{name}: {text[12:-1]} = param(...)`")
    for field in cls.unused:
        if field not in declared:
            raise TypeError(f"{cls.__name__}.unused names `{field}`, which is not a field")


def _checked_out(out: str | os.PathLike) -> None:
    if not os.fspath(out).strip():
        raise BadParameters("the output directory is empty; give one, e.g. 'results' "
                            "('.' for the current directory)")


@dataclasses.dataclass(frozen=True)
class ExperimentSpec(abc.ABC):
    """Base of the experiment specs (each a frozen dataclass, see the module docstring).

    Class attributes of every spec: ``command`` (the ``spheresde`` sub-command),
    ``summary`` (one line of help), ``rules`` (checks that involve several fields, each
    ``spec -> message or None``), ``unused`` (``{field: {value: fields}}``: the fields
    that a value of ``field`` ignores, such as the sampling sizes of an exact
    ``method``; they are left out of the resume identity, the metadata and the CSV) and
    ``label`` (the text of the progress bar, a format string of the run's ``name`` and
    the fields as the command line spells them). ``report_rank`` orders the sections of
    ``REPORT.md`` (the paper's order; a new experiment's section comes after the
    paper's). ``stores``: the runs write resumable stores (they take ``overwrite``,
    ``prune`` and ``wait``); ``runs_in_chunks``: their Monte Carlo runs in chunks (they
    take ``chunk_size``, ``workers`` and ``scheduler``). ``streams``
    (``{field: {value: revision}}``, see :meth:`stream_revision`): a sampler whose random
    numbers changed for the same seed names its revision here, so that no store mixes
    chunks of the old and the new streams.
    """

    command: ClassVar[str]
    summary: ClassVar[str]
    rules: ClassVar[tuple[Callable[[Any], str | None], ...]] = ()
    unused: ClassVar[Mapping[str, Mapping[Any, tuple[str, ...]]]] = {}
    label: ClassVar[str] = "{name}"
    report_rank: ClassVar[int] = 100
    stores: ClassVar[bool] = False
    runs_in_chunks: ClassVar[bool] = False
    streams: ClassVar[Mapping[str, Mapping[Any, str]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _check_class(cls)

    @abc.abstractmethod
    def run(self, out: str | os.PathLike, options: _driver.RunOptions | None = None, *,
            name: str | None = None) -> _driver.AbstractResult:
        """Run the experiment into the directory ``out`` (``name``: the file stem of its
        store, by default the ``command``); its ``summary()`` says what it wrote."""

    @abc.abstractmethod
    def plan(self, out: str | os.PathLike, options: _driver.RunOptions | None = None, *,
             name: str | None = None) -> Plan:
        """What :meth:`run` would compute in ``out`` (the lines ``--dry-run`` prints) and
        about how long it would take, without writing anything."""

    @classmethod
    @abc.abstractmethod
    def report_section(cls, results: Mapping[str, Any],
                       notes: Mapping[str, str]) -> Section | None:
        """The section of ``REPORT.md`` from the results of this experiment's runs (by
        run name), or None for no section; ``notes`` are sentences of the whole run
        by run name (for example, which data set a training run used and why)."""

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
        skip = {name for field, by_value in self.unused.items()
                for name in by_value.get(getattr(self, field), ())}
        return [f for f in self.spec_fields() if f.name not in skip
                and not (f.added and getattr(self, f.name) == f.default)]

    def params(self) -> dict[str, Any]:
        """The parameters that determine the results, JSON-ready (tuples as lists).

        This is the resume identity of a sweep and its metadata; fields that the chosen
        value of another field ignores (:attr:`unused`) are left out.
        """
        return {f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v
                for f in self._used()}

    def stream_revision(self) -> str | None:
        """The revision of the random streams this spec's runs draw, from :attr:`streams`
        (``{field: {value: revision}}``; the field ``"*"`` applies whatever the values),
        or None. A store records it, and one made with another revision (or before
        revisions, None) does not resume: the same seed would mix chunks of two
        different streams, each right in law, together meaningless as a replay."""
        tags = [by_value["*"] if name == "*" else by_value.get(getattr(self, name))
                for name, by_value in self.streams.items()]
        tags = [t for t in tags if t is not None]
        return ",".join(tags) if tags else None

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

    def progress(self, name: str) -> str:
        """The label of the progress bar of the run ``name``: :attr:`label` with the run's
        name and the fields spelled as on the command line."""
        values = {f.name: f.kind.spell(getattr(self, f.name)) for f in self.spec_fields()}
        return self.label.format(name=name, **values)


class AbstractSweepSpec(ExperimentSpec):
    """A resumable sweep: a grid of points, typed rows, a figure and a report section.

    A final spec sets ``row_type`` (the row dataclass, whose fields are the CSV columns
    before the echoed parameters), implements :meth:`plot` and :meth:`report_section`,
    and runs its points either in chunks (:class:`AbstractChunkedSpec`, whose grid is
    its ``axes``) or whole (:class:`AbstractPointSpec`, which lists its points).
    """

    row_type: ClassVar[type]
    stores: ClassVar[bool] = True

    @abc.abstractmethod
    def points(self) -> list[dict[str, Any]]:
        """The grid, as ``{coordinate: value}`` (the coordinates are the first fields of a
        row, the point's key in the store)."""

    @abc.abstractmethod
    def plot(self, rows: list[Any], path: Path) -> Path:
        """Draw the figure of ``rows`` into ``path``; return it."""


class AbstractChunkedSpec(AbstractSweepSpec):
    """A sweep whose points are Monte Carlo in chunks: :meth:`samples` trajectories a
    point, split into chunks of the run's chunk size, each a pure function of the seed,
    the point and the chunk index (so that it may run on any worker, in any order).

    A final spec sets ``axes`` (point coordinate -> grid field, outermost first:
    :meth:`points` is their product) and implements :meth:`chunk`, :meth:`check`,
    :meth:`finish`, :meth:`samples`, :meth:`point_steps` and :meth:`shortened`.
    ``absorbing`` names the field whose positive value lets trajectories stop early
    (None: they never do); the plan then probes what share of the steps is run.
    ``figure_needs``: the callables (cached derivations) that :meth:`plot` needs before it
    draws, which the plan times; ``point_caches``: the caches that the plan clears before
    each chunk it times.
    """

    axes: ClassVar[dict[str, str]]
    absorbing: ClassVar[str | None] = None
    runs_in_chunks: ClassVar[bool] = True
    figure_needs: ClassVar[tuple[Callable[[], Any], ...]] = ()
    #: The cached functions (``"module:function"``, each with ``cache_clear``) in which a
    #: chunk keeps what its point needs once (absorption levels, a law), for
    #: :meth:`clear_point_caches`.
    point_caches: ClassVar[tuple[str, ...]] = ()

    def points(self) -> list[dict[str, Any]]:
        """Every combination of the :attr:`axes` fields' values, the first axis outermost."""
        names = list(self.axes)
        grids = (getattr(self, field) for field in self.axes.values())
        return [dict(zip(names, values, strict=True)) for values in itertools.product(*grids)]

    @abc.abstractmethod
    def chunk(self, point: dict[str, Any], k: int, size: int) -> Counts:
        """Integer counts of chunk ``k`` (``size`` trajectories) of ``point``, keyed by
        :func:`~spheresde.experiments.chunk_seed` of the seed, the point and ``k``."""

    @abc.abstractmethod
    def check(self, counts: Counts, size: int) -> str | None:
        """What is wrong with stored counts of a chunk of ``size`` (None: nothing); a
        chunk that fails is computed again."""

    @abc.abstractmethod
    def finish(self, point: dict[str, Any], counts: list[Counts]) -> Any:
        """The row of ``point`` from the counts of all its chunks, in chunk order."""

    @abc.abstractmethod
    def samples(self) -> int:
        """Trajectories per point (0: no Monte Carlo, one chunk of no trajectories)."""

    @abc.abstractmethod
    def point_steps(self, point: dict[str, Any]) -> int:
        """Steps of one trajectory at ``point``, for the ``--dry-run`` plan."""

    @abc.abstractmethod
    def shortened(self, steps: int) -> AbstractChunkedSpec:
        """The spec with trajectories of ``steps`` steps, for the plan's calibration."""

    def steps(self) -> int:
        """Steps of one trajectory, averaged over the points (the plan's line)."""
        return round(sum(map(self.point_steps, self.points())) / len(self.points()))

    def varying_steps(self) -> bool:
        """Whether the points' trajectories have different numbers of steps."""
        return len(set(map(self.point_steps, self.points()))) > 1

    def absorbs(self) -> bool:
        """Whether trajectories stop early (the field :attr:`absorbing` is positive)."""
        return self.absorbing is not None and getattr(self, self.absorbing) > 0

    def clear_point_caches(self) -> None:
        """Forget what this process keeps of the points it has computed: clear the
        :attr:`point_caches`. The plan calls it before each chunk it times, so that a
        chunk pays there what its point's chunk pays in a run."""
        import importlib

        for name in self.point_caches:
            module, function = name.split(":")
            getattr(importlib.import_module(module), function).cache_clear()

    def run(self, out: str | os.PathLike, options: _driver.RunOptions | None = None, *,
            name: str | None = None) -> _driver.SweepResult:
        """The sweep's missing chunks on the executor of ``options``, into
        ``out/NAME.csv`` (:func:`~._driver.run_chunked`); re-running resumes."""
        return _driver.run_chunked(self, out, options, name=name or self.command)

    def plan(self, out: str | os.PathLike, options: _driver.RunOptions | None = None, *,
             name: str | None = None) -> Plan:
        """The chunks left and their priced wall time (:mod:`~._planning`)."""
        return _planning.plan_chunked(self, Path(out), name or self.command,
                                      options or _driver.RunOptions())


class AbstractPointSpec(AbstractSweepSpec):
    """A sweep whose points are computed whole in this process (no chunks, no Dask), each
    giving one row or several. Points with the same coordinates :attr:`together_by` are
    computed together, by one call of :meth:`compute` (one compiled program, say), and
    stored one by one as soon as that call returns: an interrupted batch is computed
    again, a finished one is kept. A final spec implements :meth:`points`,
    :meth:`prepare`, :meth:`compute` and :meth:`estimate`."""

    together_by: ClassVar[tuple[str, ...]] = ()

    def together(self, point: dict[str, Any]) -> tuple:
        """The points that share this value are computed together: their coordinates
        :attr:`together_by` (none: each point alone)."""
        return tuple(point[c] for c in self.together_by) or tuple(sorted(point.items()))

    @abc.abstractmethod
    def prepare(self) -> dict[str, Any]:
        """Check what the points need before any is computed (raise
        :class:`BadParameters`); return the metadata stored beside the parameters."""

    @abc.abstractmethod
    def compute(self, points: list[dict[str, Any]], *, quiet: bool) -> list[list[Any]]:
        """The rows of each of ``points`` (points of one :meth:`together`), in their order."""

    @abc.abstractmethod
    def estimate(self, name: str, pending: list[dict[str, Any]]) -> Plan:
        """What ``--dry-run`` prints for the run ``name`` whose ``pending`` points are not
        stored yet, and its estimate of their wall time, priced by a calibration in
        this process (a :class:`Plan`)."""

    def run(self, out: str | os.PathLike, options: _driver.RunOptions | None = None, *,
            name: str | None = None) -> _driver.SweepResult:
        """The missing points, computed in this process (:func:`~._driver.run_points`)."""
        return _driver.run_points(self, out, options, name=name or self.command)

    def plan(self, out: str | os.PathLike, options: _driver.RunOptions | None = None, *,
             name: str | None = None) -> Plan:
        """:meth:`estimate` of the points not stored (:func:`~._planning.plan_points`)."""
        return _planning.plan_points(self, Path(out), name or self.command,
                                     options or _driver.RunOptions())


def run(spec: ExperimentSpec, out: str | os.PathLike,
        options: _driver.RunOptions | None = None) -> _driver.AbstractResult:
    """Run ``spec`` into the directory ``out`` (:meth:`ExperimentSpec.run`); its
    ``summary()`` says what it wrote."""
    _checked_out(out)
    return spec.run(out, options)


def plan(spec: ExperimentSpec, out: str | os.PathLike,
         options: _driver.RunOptions | None = None) -> list[str]:
    """What :func:`run` would compute, as the lines ``--dry-run`` prints: the points and
    chunks left, their trajectory-steps and a wall-time estimate. Nothing is written."""
    _checked_out(out)
    return spec.plan(out, options).lines


def run_sweep(spec: AbstractSweepSpec, out: str | os.PathLike,
              options: _driver.RunOptions | None = None, *,
              name: str | None = None) -> _driver.SweepResult:
    """Run the sweep ``spec`` into ``out/NAME.csv`` (``name``: the file stem, by default
    the spec's command) and draw ``NAME.png``; re-running resumes (:meth:`spec.run
    <ExperimentSpec.run>`)."""
    return spec.run(out, options, name=name)


def estimate_sweep(spec: AbstractSweepSpec, out: str | os.PathLike,
                   options: _driver.RunOptions | None = None, *,
                   name: str | None = None) -> Plan:
    """:func:`plan_sweep`'s lines and the estimated wall time in seconds (a
    :class:`~spheresde.experiments.Plan`; :meth:`spec.plan <ExperimentSpec.plan>`)."""
    return spec.plan(out, options, name=name)


def plan_sweep(spec: AbstractSweepSpec, out: str | os.PathLike,
               options: _driver.RunOptions | None = None, *,
               name: str | None = None) -> list[str]:
    """The lines ``--dry-run`` prints for the sweep ``spec``; nothing is written."""
    return estimate_sweep(spec, out, options, name=name).lines


__all__ = [
    "AbstractChunkedSpec",
    "AbstractPointSpec",
    "AbstractSweepSpec",
    "AbstractVar",
    "BadParameters",
    "ExperimentSpec",
    "Plan",
    "estimate_sweep",
    "plan",
    "plan_sweep",
    "run",
    "run_sweep",
]
