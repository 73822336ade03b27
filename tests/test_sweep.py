"""The resumable sweep store behind the CLI, driven in-process with a toy computation."""

import csv
import json

import pytest

from spheresde.experiments import ParameterMismatch, Sweep, point_seed

COLUMNS = ("a", "b", "value")


def toy(point):
    # deterministic in the point only, like every real experiment (seeded by point_seed)
    return {"value": point_seed(7, point) / 2**32}


def grid():
    return [{"a": a, "b": b} for a in (1, 2, 3) for b in (0.5, 1.5)]


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_rows_metadata_and_order(tmp_path):
    sweep = Sweep(tmp_path, "toy", {"seed": 7, "x": [1, 2]}, COLUMNS, ("a", "b"))
    rows = sweep.run(grid(), toy, quiet=True)
    assert [(r["a"], r["b"]) for r in rows] == [(str(p["a"]), repr(p["b"])) for p in grid()]
    assert read(tmp_path / "toy.csv") == rows
    meta = json.loads((tmp_path / "toy.json").read_text())
    assert meta["params"] == {"seed": 7, "x": [1, 2]}
    assert meta["seed"] == 7
    assert meta["version"]
    assert meta["columns"] == list(COLUMNS)
    assert [r["points_computed"] for r in meta["runs"]] == [6]
    assert meta["runs"][0]["finished"] is True
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp files left


def test_interrupted_sweep_resumes_to_the_same_csv(tmp_path):
    whole = Sweep(tmp_path / "whole", "toy", {"seed": 7}, COLUMNS, ("a", "b"))
    whole.run(grid(), toy, quiet=True)

    calls = []

    def dies_at_third(point):
        calls.append(point)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return toy(point)

    first = Sweep(tmp_path / "cut", "toy", {"seed": 7}, COLUMNS, ("a", "b"))
    with pytest.raises(KeyboardInterrupt):
        first.run(grid(), dies_at_third, quiet=True)
    assert len(read(tmp_path / "cut" / "toy.csv")) == 2

    resumed = []
    again = Sweep(tmp_path / "cut", "toy", {"seed": 7}, COLUMNS, ("a", "b"))
    again.run(grid(), lambda p: resumed.append(p) or toy(p), quiet=True)
    assert len(resumed) == 4  # the two finished points are not recomputed
    cut, whole = (tmp_path / "cut" / "toy.csv"), (tmp_path / "whole" / "toy.csv")
    assert cut.read_text() == whole.read_text()
    runs = json.loads((tmp_path / "cut" / "toy.json").read_text())["runs"]
    assert [r["points_computed"] for r in runs] == [2, 4]
    assert [r["finished"] for r in runs] == [False, True]


def test_other_parameters_refuse_unless_overwrite(tmp_path):
    Sweep(tmp_path, "toy", {"seed": 7, "n": 1}, COLUMNS, ("a", "b")).run(grid(), toy, quiet=True)
    with pytest.raises(ParameterMismatch, match=r"n: stored 1 vs now 2"):
        Sweep(tmp_path, "toy", {"seed": 7, "n": 2}, COLUMNS, ("a", "b"))
    fresh = Sweep(tmp_path, "toy", {"seed": 7, "n": 2}, COLUMNS, ("a", "b"), overwrite=True)
    assert not fresh.rows
    fresh.run(grid()[:1], toy, quiet=True)
    assert len(read(tmp_path / "toy.csv")) == 1


def test_csv_without_metadata_is_not_adopted(tmp_path):
    (tmp_path / "toy.csv").write_text("a,b,value\n1,0.5,3\n")
    with pytest.raises(ParameterMismatch, match="without its metadata"):
        Sweep(tmp_path, "toy", {"seed": 7}, COLUMNS, ("a", "b"))


def test_point_seed_depends_on_seed_and_point_only():
    assert point_seed(0, {"d": 4, "beta": 1.0}) == point_seed(0, {"beta": 1.0, "d": 4})
    assert point_seed(0, {"d": 4, "beta": 1.0}) != point_seed(1, {"d": 4, "beta": 1.0})
    assert point_seed(0, {"d": 4, "beta": 1.0}) != point_seed(0, {"d": 5, "beta": 1.0})
