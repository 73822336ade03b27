"""The typed experiment specs: validation, and everything derived from them (CLI, presets,
metadata, command lines), checked in-process and with Hypothesis round trips."""

import dataclasses
import shlex
from typing import ClassVar

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from spheresde.cli import build_parser
from spheresde.experiments import (
    SCALES,
    SPECS,
    BadParameters,
    ExperimentSpec,
    HybridSpec,
    PhaseSpec,
    TokensSpec,
    TrainSpec,
    point_seed,
)
from spheresde.experiments.engine import FieldKind, at_least, param, problem


def parse_spec(argv):
    """What the CLI makes of ``argv``: the spec class called with the parsed options."""
    args = build_parser().parse_args(argv)
    return args.spec_cls(**{f.name: getattr(args, f.name) for f in args.spec_cls.spec_fields()})


def test_every_spec_field_is_a_cli_option_with_its_default():
    parser = build_parser()
    for command, spec_cls in SPECS.items():
        defaults = vars(parser.parse_args([command]))
        for f in spec_cls.spec_fields():
            assert defaults[f.name] == f.default, (command, f.name)
            assert f.help, (command, f.name)
        assert parse_spec([command]) == spec_cls()


@pytest.mark.parametrize("scale", sorted(SCALES))
def test_every_preset_command_line_rebuilds_its_spec(scale):
    for name, spec in SCALES[scale].items():
        if spec is None:
            continue
        argv = shlex.split(spec.command_line())
        assert argv[0] == "spheresde"
        assert parse_spec(argv[1:]) == spec, name


def test_full_is_the_paper_and_the_studies_beyond_it():
    """``full`` run into a finished ``paper`` directory must compute only what ``paper``
    did not: every sweep they share has the same identity (the stores refuse another
    value of a non-grid parameter), and the only grid that grows is Figure 2's depths."""
    paper, full = SCALES["paper"], SCALES["full"]
    assert set(full) - set(paper) == {"dominance", "tokens_constant"}
    assert set(paper) <= set(full)
    assert paper["train"].layers == (16,)  # the paper's depth
    assert full["train"].layers[0] == 16
    assert len(full["train"].layers) > 1
    assert dataclasses.replace(full["train"], layers=(16,)) == paper["train"]
    for name in set(paper) - {"train"}:
        assert full[name] == paper[name], name


def test_quick_is_the_default_of_each_command():
    quick = SCALES["quick"]
    assert quick["phase"] == PhaseSpec()
    assert quick["hybrid"] == HybridSpec()
    assert quick["tokens"] == TokensSpec()
    assert quick["tokens_constant"] == TokensSpec(weights="constant")
    assert quick["train"] == TrainSpec()


def test_values_are_coerced_to_the_declared_types():
    spec = PhaseSpec(dims=[4, 6], betas=[1, 2], horizon=10)
    assert spec.dims == (4, 6)
    assert spec.betas == (1.0, 2.0)
    assert spec.horizon == 10.0
    assert isinstance(spec.betas[0], float)
    # the same grid point, hence the same random numbers, whatever the user typed
    assert spec == PhaseSpec(dims=(4, 6), betas=(1.0, 2.0), horizon=10.0)
    assert point_seed(0, spec.points()[0]) == point_seed(0, {"d": 4, "beta": 1.0})


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"dims": (1,)}, "`dims`: '1' must be >= 2"),
        ({"dims": ()}, "`dims`: the list is empty"),
        ({"betas": (1.0, 1.0)}, "repeats a value"),
        ({"trajectories": 0}, "`trajectories`: '0' must be > 0"),
        ({"horizon": -1.0}, "`horizon`: '-1.0' must be > 0"),
        ({"horizon": float("nan")}, "`horizon`"),
        ({"tol": 1.0}, "`tol`: '1.0' must be in [1.1e-16, 1)"),
        ({"method": "magic"}, "'magic' is not one of exact, reduced, particles, discrete"),
        ({"trajectories": 2.5}, "`trajectories`: expected an integer"),
        ({"dims": 4}, "`dims`: expected a sequence"),
    ],
)
def test_bad_values_say_which_parameter_and_why(kwargs, says):
    with pytest.raises(BadParameters) as info:
        PhaseSpec(**kwargs)
    assert says in str(info.value)


def test_a_rule_over_several_fields():
    with pytest.raises(BadParameters, match="two tokens only"):
        HybridSpec(tokens=3, method="reduced")
    assert HybridSpec(tokens=2, method="reduced").tokens == 2


def test_parameters_a_method_ignores_stay_out_of_the_identity():
    exact = PhaseSpec(method="exact").params()
    assert "trajectories" not in exact
    assert "horizon" not in exact
    assert PhaseSpec(method="exact", trajectories=7).params() == exact
    assert PhaseSpec(method="reduced").params()["trajectories"] == 4000
    assert "seed" not in PhaseSpec().echo()
    assert "dims" not in PhaseSpec().echo()


@dataclasses.dataclass(frozen=True)
class _Extended(ExperimentSpec):
    """A spec with one parameter more: what a contributor adds, and all they add."""

    command: ClassVar[str] = "extended"
    summary: ClassVar[str] = "a test spec"

    betas: tuple[float, ...] = param((1.0,), "inverse temperatures", check=at_least(0.0))
    damping: float = param(0.5, "a new parameter", check=at_least(0.0))

    # the experiment interface, which this test does not run
    def run(self, out, options=None, *, name=None):
        raise NotImplementedError

    def plan(self, out, options=None, *, name=None):
        raise NotImplementedError

    @classmethod
    def report_section(cls, results, notes):
        return None


def test_one_new_field_reaches_the_cli_the_metadata_and_the_command_line(monkeypatch):
    monkeypatch.setitem(SPECS, "extended", _Extended)
    args = build_parser().parse_args(["extended", "--damping", "2"])
    assert args.damping == 2.0
    spec = _Extended(damping=2.0)
    assert spec.params() == {"betas": [1.0], "damping": 2.0}
    assert spec.echo() == {"damping": 2.0}
    assert spec.command_line() == "spheresde extended --betas 1.0 --damping 2.0"
    with pytest.raises(BadParameters, match=r"`damping`: .-1\.0. must be >= 0"):
        _Extended(damping=-1.0)


# ---------------------------------------------------------------------------- abstract or final


def phase_like(name, *, without):
    """A final Monte Carlo spec made of PhaseSpec's parts, ``without`` one of them."""
    from spheresde.experiments import AbstractFixedHorizonSpec

    fields = {k: f.type for k, f in PhaseSpec.__dataclass_fields__.items() if k != without}
    namespace = {k: vars(PhaseSpec)[k] for k in (
        "command", "summary", "row_type", "axes", "law_only", "unused", "simulation",
        "finish", "plot", "report_section") if k != without}
    return type(name, (AbstractFixedHorizonSpec,), {"__annotations__": fields, **namespace})


def test_a_final_spec_is_checked_when_its_class_is_created():
    """Every field an abstract spec uses is declared abstract there, and a final spec
    that does not declare it fails when its class is created, naming it (it used to
    build, then raise AttributeError in ``absorbs()``); so does one that leaves an
    abstract method unimplemented or a class attribute without a value."""
    assert phase_like("Whole", without=None).absorbing == "absorb"
    with pytest.raises(TypeError, match=r"NoAbsorb must declare the field `absorb` \(declared "
                                        r"abstract by AbstractMonteCarloSpec"):
        phase_like("NoAbsorb", without="absorb")
    with pytest.raises(TypeError, match=r"NoPlot is final but does not implement plot"):
        phase_like("NoPlot", without="plot")
    with pytest.raises(TypeError, match=r"NoAxes must set the class attribute `axes`"):
        phase_like("NoAxes", without="axes")


def test_no_spec_overrides_a_concrete_method():
    """A choice is data (``label``: the progress bar's text), not an override: overriding
    a concrete method of a base fails when the class is created."""
    with pytest.raises(TypeError, match=r"Labelled.progress overrides ExperimentSpec.progress"):
        type("Labelled", (PhaseSpec,), {"progress": lambda self, name: name})
    assert PhaseSpec(method="exact").progress("phase") == "phase (exact)"


# ---------------------------------------------------------------------------- Hypothesis

finite = st.floats(min_value=0.0, max_value=1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(
    dims=st.lists(st.integers(2, 64), min_size=1, max_size=5, unique=True),
    # within the numerics' range: betas <= 350, at least one layer (round(T L) >= 1)
    betas=st.lists(st.floats(0.0, 350.0), min_size=1, max_size=6, unique=True),
    trajectories=st.integers(1, 10**6),
    layers=st.integers(1, 1000),
    horizon=st.floats(min_value=1e-3, max_value=1e4, allow_nan=False),
    tol=st.floats(min_value=1e-6, max_value=0.999),
    method=st.sampled_from(["exact", "reduced", "particles", "discrete"]),
    seed=st.integers(0, 2**31),
)
def test_phase_spec_round_trips_through_its_command_line(dims, betas, trajectories, layers,
                                                         horizon, tol, method, seed):
    assume(method == "exact" or round(horizon * layers) >= 1)
    spec = PhaseSpec(dims=dims, betas=betas, trajectories=trajectories, layers=layers,
                     horizon=horizon, tol=tol, method=method, seed=seed)
    again = parse_spec(shlex.split(spec.command_line())[1:])
    assert again.params() == spec.params()
    assert type(again).from_dict(again.params()).params() == spec.params()


@settings(max_examples=100, deadline=None)
@given(start=st.floats(0, 100), width=st.floats(0, 100), num=st.integers(1, 50))
def test_a_range_is_num_points_from_start_to_stop(start, width, num):
    stop = start + width
    kind = FieldKind(float, is_tuple=True)
    values = kind.parse(f"{start!r}:{stop!r}:{num}")
    if len(set(values)) < num:  # rounding to 12 digits merged close points: never silently
        assert "repeats a value" in problem(kind, None, values)
        return
    assert len(values) == num
    assert values[0] == pytest.approx(start, rel=1e-11, abs=1e-11)
    assert values[-1] == pytest.approx(stop if num > 1 else start, rel=1e-11, abs=1e-11)
    assert list(values) == sorted(values)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-1e9, 1e9, allow_nan=False), min_size=1, max_size=8))
def test_a_float_list_spells_and_parses_back_exactly(values):
    kind = FieldKind(float, is_tuple=True)
    assert kind.parse(kind.spell(tuple(values))) == tuple(values)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.sampled_from(["d", "beta", "eps", "tokens"]),
                       st.one_of(st.integers(0, 100), finite), min_size=1),
       st.integers(0, 2**32 - 1))
def test_point_seed_ignores_key_order(point, seed):
    reordered = dict(reversed(list(point.items())))
    assert point_seed(seed, point) == point_seed(seed, reordered)
    assert 0 <= point_seed(seed, point) < 2**32
