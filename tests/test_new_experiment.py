"""A new experiment is one spec class and one registration: everything else is derived.

:class:`CoinSpec` below is a whole experiment, defined in this file alone: a grid of
coin biases, each point ``trajectories`` flips in chunks, keyed by ``chunk_seed`` as every
sweep's chunks are. Registered by one line, it runs through the command line, plans with
``--dry-run``, runs its chunks on Dask workers, resumes, and writes its section of
``REPORT.md``; no module of the package is edited. The last test reads sweeps stored by
the code before the experiment interface existed (``tests/data/sweep_v1``).
"""

import csv
import io
import json
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from spheresde.cli import main
from spheresde.experiments import (
    SPECS,
    AbstractChunkedSpec,
    ReproduceSpec,
    RunOptions,
    chunk_seed,
    greater_than,
    param,
    run_sweep,
)
from spheresde.experiments._report import write_report

DATA = Path(__file__).parent / "data"


@dataclass(frozen=True)
class CoinRow:
    bias: float
    heads: int
    trajectories: int


@dataclass(frozen=True)
class CoinSpec(AbstractChunkedSpec):
    """Coin flips: the share of heads of coins of several biases."""

    command: ClassVar[str] = "coin"
    summary: ClassVar[str] = "coin flips, a test experiment"
    row_type: ClassVar[type] = CoinRow
    axes: ClassVar[dict[str, str]] = {"bias": "biases"}

    biases: tuple[float, ...] = param((0.25, 0.5), "biases of the coins")
    trajectories: int = param(40, "flips per coin", check=greater_than(0))
    seed: int = param(0, "PRNG seed")

    def chunk(self, point, k, size):
        rng = np.random.default_rng(chunk_seed(self.seed, point, k))
        return {"heads": int((rng.random(size) < point["bias"]).sum())}

    def check(self, counts, size):
        return None if 0 <= counts.get("heads", -1) <= size else f"not heads of {size} flips"

    def finish(self, point, counts):
        return CoinRow(point["bias"], sum(c["heads"] for c in counts), self.trajectories)

    def samples(self):
        return self.trajectories

    def point_steps(self, point):
        return 1

    def shortened(self, steps):
        return self  # a flip is one step

    def plot(self, rows, path):
        path.write_text(" ".join(f"{r.bias:g}:{r.heads}" for r in rows))  # a stand-in figure
        return path

    @classmethod
    def report_section(cls, results: Mapping[str, Any], notes: Mapping[str, str]):
        rows = results["coin"].rows
        text = "## Coin flips\n\n" + ", ".join(f"{r.heads}/{r.trajectories}" for r in rows)
        return text, [("Coins are fair at bias 0.5", f"{rows[-1].heads} heads")]


@pytest.fixture
def coin(monkeypatch):
    monkeypatch.setitem(SPECS, "coin", CoinSpec)  # the one registration


ARGS = ["coin", "--biases", "0.25,0.5", "--trajectories", "40", "--chunk-size", "16"]


def run_coin(out, *extra):
    return main([*ARGS, "--out", str(out), "--quiet", *extra])


def last_run(out):
    return json.loads((out / "coin.json").read_text())["runs"][-1]


def test_the_recipe_is_this_experiment_to_the_letter():
    """The recipe of ``docs/contributing.rst`` shows this file's row and spec, whole: what
    it tells a contributor to write is what these tests run."""
    import inspect
    import textwrap

    recipe = (Path(__file__).parents[1] / "docs" / "contributing.rst").read_text()
    code = inspect.getsource(CoinRow) + "\n\n" + inspect.getsource(CoinSpec)
    assert textwrap.indent(code, "    ", lambda line: line.strip() != "") in recipe


def test_a_new_experiment_plans_runs_resumes_and_reports(coin, tmp_path, capsys):
    out = tmp_path / "o"
    assert main([*ARGS, "--out", str(out), "--dry-run"]) == 0
    plan = capsys.readouterr().out
    assert "coin: spheresde coin --biases 0.25,0.5 --trajectories 40 --seed 0" in plan
    assert "points: 2 to compute of 2 (0 stored)" in plan
    assert "chunks: 6 to compute, 3 per point of 16 trajectories" in plan
    assert not out.exists()

    assert run_coin(out) == 0
    assert last_run(out)["chunks_computed"] == 6
    table = (out / "coin.csv").read_text().splitlines()
    assert table[0] == "bias,heads,trajectories"  # the row's fields, no parameter to echo
    assert [line.split(",")[0] for line in table[1:]] == ["0.25", "0.5"]

    assert run_coin(out) == 0  # resumes: nothing is computed again
    assert (last_run(out)["points_computed"], last_run(out)["chunks_computed"]) == (0, 0)
    assert (out / "coin.csv").read_text().splitlines() == table
    assert main([*ARGS, "--out", str(out), "--dry-run"]) == 0
    assert "points: 0 to compute of 2 (2 stored)" in capsys.readouterr().out

    result = run_sweep(CoinSpec(), out, RunOptions(quiet=True, chunk_size=16))
    heads = [r.heads for r in result.rows]
    proofs = {"text": "PASS: 1", "ok": True, "tally": "PASS: 1"}
    report = write_report(out, spec=ReproduceSpec(scale="smoke"), results={"coin": result},
                          proofs=proofs, wall=0.0, notes={}).read_text()
    assert f"## Coin flips\n\n{heads[0]}/40, {heads[1]}/40" in report
    assert f"| Coins are fair at bias 0.5 | {heads[1]} heads |" in report
    assert "| coin | coin.csv | coin.png | 2 |" in report  # the files and timings table


def test_a_new_experiment_refuses_other_parameters_by_their_flag(coin, tmp_path, capsys):
    assert run_coin(tmp_path) == 0
    with pytest.raises(SystemExit) as exit_info:
        main(["coin", "--trajectories", "41", "--out", str(tmp_path), "--quiet"])
    assert exit_info.value.code == 2
    assert "--overwrite" in capsys.readouterr().err


@pytest.mark.slow  # starts a Dask cluster of two processes
def test_a_new_experiment_runs_on_dask_workers_to_the_same_numbers(coin, tmp_path):
    pytest.importorskip("distributed")
    import cloudpickle

    assert run_coin(tmp_path / "serial") == 0
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import it
    try:
        assert run_coin(tmp_path / "dask", "--workers", "2") == 0
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert last_run(tmp_path / "dask")["executor"] == "dask LocalCluster, 2 workers"
    assert (tmp_path / "dask" / "coin.csv").read_text() == \
        (tmp_path / "serial" / "coin.csv").read_text()


V1 = {
    # written by main at 06f9f64, before the experiment interface (tests/data/sweep_v1);
    # phase is slow for its figure (the finite-horizon law on a fine grid of betas)
    "phase": ["phase", "--dims", "3,4", "--betas", "0.5,1", "--trajectories", "8",
              "--layers", "2", "--horizon", "1", "--chunk-size", "4", "--method", "discrete"],
    "tokens": ["tokens", "--tokens", "3,4", "--betas", "1", "--trajectories", "6",
               "--layers", "2", "--horizon", "1", "--chunk-size", "4"],
}


def _numbers(text: str) -> list[float] | None:
    try:
        return [float(v) for v in text.split()]
    except ValueError:
        return None


def _same_values(before: str, after: str, added: dict[str, str]) -> bool:
    """Whether the table ``after`` is ``before`` with the columns ``added`` (at their
    values) inserted, its columns in the same order and every value the same number."""
    old, new = (list(csv.DictReader(io.StringIO(text))) for text in (before, after))
    if len(old) != len(new) or [c for c in new[0] if c not in added] != list(old[0]):
        return False
    for a, b in zip(old, new, strict=True):
        if any(b[c] != v for c, v in added.items()):
            return False
        for column, text in a.items():
            x, y = _numbers(text), _numbers(b[column])
            if (text != b[column] if x is None
                    else y is None or not np.array_equal(x, y, equal_nan=True)):
                return False
    return True


@pytest.mark.parametrize("name", [pytest.param("phase", marks=pytest.mark.slow), "tokens"])
def test_a_sweep_stored_before_the_interface_resumes_with_nothing_computed(name, tmp_path):
    shutil.copy(DATA / "sweep_v1" / f"{name}.csv", tmp_path)
    shutil.copy(DATA / "sweep_v1" / f"{name}.json", tmp_path)
    before = (tmp_path / f"{name}.csv").read_text()
    # both are network sweeps, whose random streams have changed since: as stored, they
    # refuse (one line, exit status 2) rather than mix old and new chunks ...
    with pytest.raises(SystemExit) as exit_info:
        main([*V1[name], "--out", str(tmp_path), "--quiet"])
    assert exit_info.value.code == 2
    assert (tmp_path / f"{name}.csv").read_text() == before
    # ... and the format itself still reads: with the revision recorded, they resume
    meta = json.loads((tmp_path / f"{name}.json").read_text())
    (tmp_path / f"{name}.json").write_text(json.dumps({**meta, "streams": "network-2"}))
    assert main([*V1[name], "--out", str(tmp_path), "--quiet"]) == 0
    after = (tmp_path / f"{name}.csv").read_text()
    if name == "tokens":  # since: a defaulted column, and cluster sizes that may be fractional
        assert _same_values(before, after, added={"finished": "0"})
    else:
        assert after == before  # columns, order and values
    runs = json.loads((tmp_path / f"{name}.json").read_text())["runs"]
    assert len(runs) == 2
    assert runs[0]["points_computed"] == len(before.splitlines()) - 1
    assert (runs[-1]["points_computed"], runs[-1]["chunks_computed"]) == (0, 0)
