"""The resumable sweep store behind the CLI, driven in-process with a toy computation."""

import contextlib
import csv
import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
from dataclasses import dataclass

import pytest

from spheresde.experiments import (
    ParameterMismatch,
    Sweep,
    chunk_seed,
    compute_chunks,
    compute_points,
    point_seed,
)
from spheresde.experiments.engine import chunk_sizes

COLUMNS = ("a", "b", "value", "counts")


@dataclass(frozen=True)
class Toy:
    a: int
    b: float
    value: float
    counts: tuple[int, ...]


def toy(point):
    # deterministic in the point only, like every real experiment (seeded by point_seed)
    seed = point_seed(7, point)
    return Toy(point["a"], point["b"], seed / 2**32, (seed % 5, point["a"]))


def sweep(out, params, **kwargs):
    return Sweep(out, "toy", params, Toy, ("a", "b"), **kwargs)


def grid():
    return [{"a": a, "b": b} for a in (1, 2, 3) for b in (0.5, 1.5)]


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def stored_chunks(out):
    """The chunks that the store of ``out`` holds: (point key, chunk index) -> counts."""
    with contextlib.closing(sqlite3.connect(out / ".spheresde.sqlite")) as db:
        return {(key, k): json.loads(counts)
                for key, k, counts in db.execute("SELECT key, k, counts FROM chunks")}


def test_rows_metadata_and_order(tmp_path):
    rows = compute_points(sweep(tmp_path, {"seed": 7, "x": [1, 2]}, echo={"x": 2.5}), grid(), toy,
                          quiet=True)
    assert rows == [toy(p) for p in grid()]  # typed rows, in grid order
    table = read(tmp_path / "toy.csv")
    assert [(r["a"], r["b"]) for r in table] == [(str(p["a"]), repr(p["b"])) for p in grid()]
    assert [float(r["value"]) for r in table] == [r.value for r in rows]  # exact round trip
    assert {r["x"] for r in table} == {"2.5"}  # the echoed parameter, on every row
    meta = json.loads((tmp_path / "toy.json").read_text())
    assert meta["params"] == {"seed": 7, "x": [1, 2]}
    assert meta["seed"] == 7
    assert meta["version"]
    assert meta["columns"] == [*COLUMNS, "x"]
    assert [r["points_computed"] for r in meta["runs"]] == [6]
    assert meta["runs"][0]["finished"] is True
    # beside them only the directory's store and lock: no temporary file, no SQLite log left
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == [
        ".spheresde.lock", ".spheresde.sqlite"]


def test_interrupted_sweep_resumes_to_the_same_csv(tmp_path):
    expected = compute_points(sweep(tmp_path / "whole", {"seed": 7}), grid(), toy, quiet=True)

    calls = []

    def dies_at_third(point):
        calls.append(point)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return toy(point)

    with pytest.raises(KeyboardInterrupt):
        compute_points(sweep(tmp_path / "cut", {"seed": 7}), grid(), dies_at_third, quiet=True)
    assert len(read(tmp_path / "cut" / "toy.csv")) == 2

    resumed = []
    rows = compute_points(sweep(tmp_path / "cut", {"seed": 7}),
        grid(), lambda p: resumed.append(p) or toy(p), quiet=True)
    assert len(resumed) == 4  # the two finished points are not recomputed
    assert rows == expected  # the stored rows read back into the same typed values
    cut, whole = (tmp_path / "cut" / "toy.csv"), (tmp_path / "whole" / "toy.csv")
    assert cut.read_text() == whole.read_text()
    runs = json.loads((tmp_path / "cut" / "toy.json").read_text())["runs"]
    assert [r["points_computed"] for r in runs] == [2, 4]
    assert [r["finished"] for r in runs] == [False, True]


def test_the_csv_and_json_are_written_once_a_run_not_once_a_point(tmp_path, monkeypatch):
    # each finished point is one transaction of the store, whatever the grid's size; the
    # CSV and JSON, which grow with the grid, are written when the run ends
    from spheresde.experiments.engine import _store

    written, write = [], _store.atomic_write_text
    monkeypatch.setattr(_store, "atomic_write_text",
                        lambda path, text: written.append(path.name) or write(path, text))
    compute_points(sweep(tmp_path, {"seed": 7}), grid(), toy, quiet=True)
    assert written == ["toy.json", "toy.csv"]


KILLED_AT_FOURTH_POINT = textwrap.dedent("""
    import os, signal, sys
    from dataclasses import dataclass
    from spheresde.experiments import Sweep, compute_points

    @dataclass(frozen=True)
    class Toy:
        a: int
        b: float
        value: float
        counts: tuple[int, ...]

    calls = []

    def compute(p):
        calls.append(p)
        if len(calls) == 4:
            os.kill(os.getpid(), signal.SIGKILL)
        return Toy(p["a"], p["b"], p["a"] + p["b"], (1, 2))

    points = [{"a": a, "b": b} for a in (1, 2, 3) for b in (0.5, 1.5)]
    compute_points(Sweep(sys.argv[1], "toy", {"seed": 7}, Toy, ("a", "b")), points, compute,
                   quiet=True)
""")


@pytest.mark.slow
def test_a_killed_run_loses_only_the_point_in_flight(tmp_path):
    def compute(p):
        calls.append(p)
        return Toy(p["a"], p["b"], p["a"] + p["b"], (1, 2))

    calls = []
    whole = compute_points(sweep(tmp_path / "whole", {"seed": 7}), grid(), compute, quiet=True)
    out = tmp_path / "killed"
    killed = subprocess.run([sys.executable, "-c", KILLED_AT_FOURTH_POINT, str(out)],
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert not (out / "toy.csv").exists()  # killed before its run could write the CSV
    calls.clear()
    assert compute_points(sweep(out, {"seed": 7}), grid(), compute, quiet=True) == whole
    assert calls == grid()[3:]  # the three points stored before the kill are not recomputed
    assert (out / "toy.csv").read_text() == (tmp_path / "whole" / "toy.csv").read_text()
    runs = json.loads((out / "toy.json").read_text())["runs"]
    assert [(r["points_computed"], r["finished"]) for r in runs] == [(3, False), (3, True)]


def test_other_parameters_refuse_unless_overwrite(tmp_path):
    compute_points(sweep(tmp_path, {"seed": 7, "n": 1}), grid(), toy, quiet=True)
    with pytest.raises(ParameterMismatch, match=r"n: stored 1 vs now 2"):
        sweep(tmp_path, {"seed": 7, "n": 2})
    fresh = sweep(tmp_path, {"seed": 7, "n": 2}, overwrite=True)
    assert not fresh.rows
    compute_points(fresh, grid()[:1], toy, quiet=True)
    assert len(read(tmp_path / "toy.csv")) == 1


def test_csv_without_metadata_is_not_adopted(tmp_path):
    (tmp_path / "toy.csv").write_text("a,b,value,counts\n1,0.5,3,1 2\n")
    with pytest.raises(ParameterMismatch, match="without its metadata"):
        sweep(tmp_path, {"seed": 7})


def test_compute_must_return_the_row_of_its_point(tmp_path):
    with pytest.raises(ValueError, match="another point"):
        compute_points(sweep(tmp_path, {"seed": 7}), grid(), lambda p: toy({**p, "a": p["a"] + 1}),
                                          quiet=True)
    with pytest.raises(TypeError, match="must return a Toy"):
        compute_points(sweep(tmp_path / "dict", {"seed": 7}), grid(), lambda p: {"value": 1.0},
                       quiet=True)


def test_point_seed_depends_on_seed_and_point_only():
    assert point_seed(0, {"d": 4, "beta": 1.0}) == point_seed(0, {"beta": 1.0, "d": 4})
    assert point_seed(0, {"d": 4, "beta": 1.0}) != point_seed(1, {"d": 4, "beta": 1.0})
    assert point_seed(0, {"d": 4, "beta": 1.0}) != point_seed(0, {"d": 5, "beta": 1.0})


# ------------------------------------------------------------------ chunks and grids


def chunk_counts(point, k):
    # integer counts that depend on (point, chunk) only, as a real chunk's do
    seed = chunk_seed(7, point, k)
    return {"outcomes": [seed % 11, seed % 13], "steps": k}


def finish(point, counts):
    outcomes = [sum(c["outcomes"][i] for c in counts) for i in range(2)]
    return Toy(point["a"], point["b"], outcomes[0] / (1 + outcomes[1]),
               tuple(c["steps"] for c in counts))


def chunked(out, points, **kwargs):
    store = sweep(out, {"seed": 7, "as": sorted({p["a"] for p in points})}, grid=("as",),
                  chunk_size=10)
    return compute_chunks(store, points, lambda p: 3, chunk_counts, finish, quiet=True,
                          **kwargs)


class Reversed:
    """An executor that returns the chunks in the opposite order (as a cluster may)."""

    def map_unordered(self, fn, tasks):
        for task in reversed(list(tasks)):
            yield task, fn(*task)

    def describe(self):
        return "reversed"


def test_chunk_order_and_executor_do_not_change_the_csv(tmp_path):
    rows = chunked(tmp_path / "serial", grid())
    assert rows[0].counts == (0, 1, 2)  # the row sees its chunks in chunk order
    chunked(tmp_path / "reversed", grid(), executor=Reversed())
    assert ((tmp_path / "serial" / "toy.csv").read_text()
            == (tmp_path / "reversed" / "toy.csv").read_text())


def dies_at(n: int, calls: list):
    """A chunk function that computes :func:`chunk_counts`, appends ``(a, b, k)`` to
    ``calls`` and is interrupted (Ctrl-C) at its ``n``-th call."""

    def chunk(point, k):
        calls.append((point["a"], point["b"], k))
        if len(calls) == n:
            raise KeyboardInterrupt
        return chunk_counts(point, k)

    return chunk


def test_killed_sweep_keeps_its_finished_chunks(tmp_path):
    chunked(tmp_path / "whole", grid())
    calls = []
    store = sweep(tmp_path / "cut", {"seed": 7, "as": [1, 2, 3]}, grid=("as",), chunk_size=10)
    with pytest.raises(KeyboardInterrupt):
        compute_chunks(store, grid(), lambda p: 3, dies_at(5, calls), finish, quiet=True)
    assert len(read(tmp_path / "cut" / "toy.csv")) == 1  # one point of 3 chunks done
    assert stored_chunks(tmp_path / "cut") == {("1|1.5", 0): chunk_counts({"a": 1, "b": 1.5}, 0)}

    calls.clear()
    again = sweep(tmp_path / "cut", {"seed": 7, "as": [1, 2, 3]}, grid=("as",), chunk_size=10)
    compute_chunks(again, grid(), lambda p: 3,
                      lambda p, k: calls.append((p["a"], p["b"], k)) or chunk_counts(p, k),
                      finish, quiet=True)
    assert len(calls) == 6 * 3 - 4  # the four finished chunks are not recomputed
    assert (1, 1.5, 0) not in calls
    assert ((tmp_path / "cut" / "toy.csv").read_text()
            == (tmp_path / "whole" / "toy.csv").read_text())
    assert stored_chunks(tmp_path / "cut") == {}  # nothing left partial


def test_a_grid_extended_by_new_points_computes_only_those(tmp_path):
    small = [p for p in grid() if p["a"] < 3]
    chunked(tmp_path, small)
    calls = []
    store = sweep(tmp_path, {"seed": 7, "as": [1, 2, 3]}, grid=("as",), chunk_size=10)
    rows = compute_chunks(store, grid(), lambda p: 3,
                             lambda p, k: calls.append(p) or chunk_counts(p, k), finish,
                             quiet=True)
    assert {p["a"] for p in calls} == {3}  # only the new points
    assert len(calls) == 2 * 3
    assert rows == chunked(tmp_path / "fresh", grid())
    # a grid without some stored points refuses and names them; pruned, they leave the
    # table and the rest are kept, not recomputed
    calls.clear()
    smaller = [p for p in grid() if p["a"] > 1]
    with pytest.raises(ParameterMismatch, match=r"2 finished point\(s\) outside .*a=1 b=0.5"
                                                r".*`prune=True`"):
        compute_chunks(sweep(tmp_path, {"seed": 7, "as": [2, 3]}, grid=("as",), chunk_size=10),
            smaller, lambda p: 3, chunk_counts, finish, quiet=True)
    assert {r["a"] for r in read(tmp_path / "toy.csv")} == {"1", "2", "3"}
    compute_chunks(sweep(tmp_path, {"seed": 7, "as": [2, 3]}, grid=("as",), chunk_size=10),
        smaller, lambda p: 3, lambda p, k: calls.append(p) or chunk_counts(p, k), finish,
        quiet=True, prune=True)
    assert not calls
    assert {r["a"] for r in read(tmp_path / "toy.csv")} == {"2", "3"}


def test_other_non_grid_parameters_or_chunk_size_refuse(tmp_path):
    chunked(tmp_path, grid())
    with pytest.raises(ParameterMismatch, match=r"seed: stored 7 vs now 8"):
        sweep(tmp_path, {"seed": 8, "as": [1, 2, 3]}, grid=("as",), chunk_size=10)
    with pytest.raises(ParameterMismatch, match=r"chunk_size: stored 10 vs now 20"):
        sweep(tmp_path, {"seed": 7, "as": [1, 2, 3]}, grid=("as",), chunk_size=20)


def test_chunk_seed_and_sizes():
    point = {"d": 4, "beta": 1.0}
    seeds = {chunk_seed(0, point, k) for k in range(100)}
    assert len(seeds) == 100
    assert chunk_seed(0, point, 3) == chunk_seed(0, {"beta": 1.0, "d": 4}, 3)
    assert chunk_seed(0, point, 3) != chunk_seed(1, point, 3)
    assert chunk_sizes(2500, 1000) == [1000, 1000, 500]
    assert chunk_sizes(0, 1000) == []
    with pytest.raises(ValueError, match="chunk size must be >= 1"):
        chunk_sizes(10, 0)


@dataclass(frozen=True)
class ToyWithNewColumn:
    a: int
    b: float
    value: float
    counts: tuple[int, ...]
    added: float = -1.0  # a column a later version appended, with a default


@dataclass(frozen=True)
class ToyWithRequiredColumn:
    a: int
    b: float
    value: float
    counts: tuple[int, ...]
    other: float


def test_a_sweep_stored_before_a_defaulted_column_still_loads(tmp_path):
    old = compute_points(sweep(tmp_path, {"seed": 7}), grid(), toy, quiet=True)
    calls = []

    def compute(point):
        calls.append(point)
        return ToyWithNewColumn(*toy(point).__dict__.values(), added=0.5)

    rows = compute_points(Sweep(tmp_path, "toy", {"seed": 7}, ToyWithNewColumn, ("a", "b")),
        grid(), compute, quiet=True)
    assert calls == []  # every stored point was read back, none recomputed
    assert [r.value for r in rows] == [r.value for r in old]
    assert {r.added for r in rows} == {-1.0}  # the stored rows carry the default
    # a table whose columns differ otherwise (a new column without a default) is refused
    with pytest.raises(ParameterMismatch):
        Sweep(tmp_path, "toy", {"seed": 7}, ToyWithRequiredColumn, ("a", "b"))


def test_a_store_of_other_random_streams_refuses(tmp_path):
    # stored before stream revisions (no "streams" in its metadata): a sampler that now
    # draws other numbers for the same seed must not add its chunks to those
    chunked(tmp_path, grid())
    with pytest.raises(ParameterMismatch, match=r'streams: stored null vs now "network-2"'):
        sweep(tmp_path, {"seed": 7, "as": [1, 2, 3]}, grid=("as",), chunk_size=10,
              meta={"streams": "network-2"})
    # the same revision resumes
    sweep(tmp_path / "new", {"seed": 7}, meta={"streams": "network-2"}).close()
    sweep(tmp_path / "new", {"seed": 7}, meta={"streams": "network-2"}).close()


def test_the_network_sweeps_name_their_stream_revision():
    from spheresde.experiments import DominanceSpec, HybridSpec, PhaseSpec, TokensSpec

    assert PhaseSpec(method="discrete").stream_revision() == "network-2"
    assert PhaseSpec(method="reduced").stream_revision() is None  # its streams are as before
    assert PhaseSpec(method="exact").stream_revision() is None
    assert HybridSpec(method="discrete").stream_revision() == "network-2"
    assert TokensSpec(method="particles").stream_revision() is None
    assert DominanceSpec().stream_revision() == "network-2"  # always the network


# ------------------------------------------------------------------ chunks gathered into tasks


def in_groups_of(size):
    """A group rule of compute_chunks: consecutive chunks, ``size`` a task."""
    from spheresde.experiments.engine._chunks import task_groups

    return lambda tasks: task_groups(tasks, lambda task: 1, size)


def test_task_groups_gather_consecutive_tasks_up_to_their_work():
    from spheresde.experiments.engine._chunks import task_groups

    assert task_groups(list(range(7)), lambda t: 1, 3) == [[0, 1, 2], [3, 4, 5], [6]]
    assert task_groups([5, 1, 1, 9, 1], lambda t: t, 2) == [[5], [1, 1], [9], [1]]
    assert task_groups([1, 2, 3], lambda t: t, 0) == [[1], [2], [3]]  # one a task
    assert task_groups([], lambda t: t, 10) == []


def test_grouped_chunks_give_the_csv_of_one_chunk_a_task(tmp_path):
    # groups of 4 chunks cut across points (3 chunks a point): each chunk keeps its own seed
    alone = chunked(tmp_path / "alone", grid())
    for size in (2, 4, 100):
        assert chunked(tmp_path / f"g{size}", grid(), group=in_groups_of(size)) == alone
        assert ((tmp_path / f"g{size}" / "toy.csv").read_text()
                == (tmp_path / "alone" / "toy.csv").read_text())
    assert chunked(tmp_path / "reversed", grid(), group=in_groups_of(4),
                   executor=Reversed()) == alone


def test_an_interrupted_grouped_sweep_resumes_without_recomputing_finished_points(tmp_path):
    # tasks of 4 chunks (3 a point): the 10th chunk dies in the third task; the first two
    # tasks (8 chunks: points 1 and 2 whole, 2 chunks of point 3) are stored, the third
    # task's finished chunk is not (a task is one transaction)
    whole = chunked(tmp_path / "whole", grid())
    calls = []
    store = sweep(tmp_path / "cut", {"seed": 7, "as": [1, 2, 3]}, grid=("as",), chunk_size=10)
    with pytest.raises(KeyboardInterrupt):
        compute_chunks(store, grid(), lambda p: 3, dies_at(10, calls), finish, quiet=True,
                       group=in_groups_of(4))
    assert len(read(tmp_path / "cut" / "toy.csv")) == 2
    assert set(stored_chunks(tmp_path / "cut")) == {("2|0.5", 0), ("2|0.5", 1)}

    calls.clear()
    again = sweep(tmp_path / "cut", {"seed": 7, "as": [1, 2, 3]}, grid=("as",), chunk_size=10)
    rows = compute_chunks(again, grid(), lambda p: 3,
                          lambda p, k: calls.append((p["a"], p["b"], k)) or chunk_counts(p, k),
                          finish, quiet=True, group=in_groups_of(4))
    assert len(calls) == 6 * 3 - 8  # nothing stored is computed again
    assert not {(1, 0.5), (1, 1.5)} & {(a, b) for a, b, _ in calls}
    assert not {(2, 0.5, 0), (2, 0.5, 1)} & set(calls)
    assert rows == whole
    assert ((tmp_path / "cut" / "toy.csv").read_text()
            == (tmp_path / "whole" / "toy.csv").read_text())
    assert stored_chunks(tmp_path / "cut") == {}


def test_a_store_of_one_chunk_a_task_resumes_in_groups(tmp_path):
    # a store written one chunk a task (as every store before grouping was) and cut off
    # resumes in groups: the layout of the store is the same
    whole = chunked(tmp_path / "whole", grid())
    calls = []

    def dies_at_fifth(point, k):
        calls.append(k)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return chunk_counts(point, k)

    store = sweep(tmp_path / "cut", {"seed": 7, "as": [1, 2, 3]}, grid=("as",), chunk_size=10)
    with pytest.raises(KeyboardInterrupt):
        compute_chunks(store, grid(), lambda p: 3, dies_at(5, calls), finish, quiet=True)
    calls.clear()
    again = sweep(tmp_path / "cut", {"seed": 7, "as": [1, 2, 3]}, grid=("as",), chunk_size=10)
    rows = compute_chunks(again, grid(), lambda p: 3,
                          lambda p, k: calls.append(k) or chunk_counts(p, k), finish,
                          quiet=True, group=in_groups_of(5))
    assert len(calls) == 6 * 3 - 4
    assert rows == whole
