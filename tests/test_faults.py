"""Fault injection: concurrent writers, shrunk grids, interrupted overwrites, damaged files,
bad data, a full disk, a dying Dask worker, domain limits and options a command ignores.

Each case gives one line (exit 2 for what the user must change, 1 for a fault, 130 for
Ctrl-C) and keeps or refuses stored results, never loses or accepts them silently. The
fast cases use the ``exact`` phase method (quadrature, no JIT); the Monte Carlo ones are
marked slow.
"""

import csv
import errno
import json
import os
import pickle
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from spheresde.cli import main
from spheresde.experiments import (
    AbstractChunkedSpec,
    BadParameters,
    ParameterMismatch,
    PhaseSpec,
    Sweep,
    compute_chunks,
    compute_points,
    greater_than,
    param,
)

DATA = Path(__file__).parent / "data"
# three points of the t -> infinity law: a quadrature each, no compilation
EXACT = ["phase", "--method", "exact", "--dims", "3", "--quiet"]


def exact(out, betas="0.5,1,2", *extra):
    return main([*EXACT, "--betas", betas, "--out", str(out), *extra])


def refused(capsys, *argv):
    """``main(argv)`` exits 2 with one line on stderr; return that line."""
    with pytest.raises(SystemExit) as exit_info:
        main([str(a) for a in argv])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def without_network(table):
    """CSV rows without the ``p_network`` column (added to Figure 3 rows since the stored
    fixtures were written)."""
    return [{k: v for k, v in r.items() if k != "p_network"} for r in table]


# The limit's laws of a row, computed (not sampled) by SciPy's quadrature and matrix
# exponentials: their last digits follow the SciPy/LAPACK build, not the sweep.
LAW_COLUMNS = ("p_exact", "p_finite")


def assert_same_rows(table, stored):
    """``table`` holds the rows ``stored``: every column to the character, the law columns
    of a row computed now to float rounding (relative 1e-12)."""
    assert [{k: v for k, v in r.items() if k not in LAW_COLUMNS} for r in table] == [
        {k: v for k, v in r.items() if k not in LAW_COLUMNS} for r in stored]
    for row, old in zip(table, stored, strict=True):
        for k in LAW_COLUMNS:
            assert float(row[k]) == pytest.approx(float(old[k]), rel=1e-12, abs=0), (k, row, old)


# ------------------------------------------------------------------ one writer per sweep


@dataclass(frozen=True)
class Toy:
    a: int
    value: float


def test_a_second_writer_is_refused_naming_the_first(tmp_path, capsys):
    with Sweep(tmp_path, "phase", {}, Toy, ("a",)):  # another run holds the sweep
        err = refused(capsys, *EXACT, "--betas", "1", "--out", tmp_path)
    assert f"is being written by pid {os.getpid()} on " in err
    assert "started" in err
    assert "--wait" in err
    assert not (tmp_path / "phase.csv").exists()
    assert exact(tmp_path, "1") == 0  # released: the lock is no stale file


def test_wait_waits_for_the_first_writer(tmp_path):
    holder = Sweep(tmp_path, "phase", {}, Toy, ("a",))
    threading.Timer(0.5, holder.close).start()
    assert exact(tmp_path, "1", "--wait") == 0  # blocked until the holder left, then ran
    assert len(rows(tmp_path / "phase.csv")) == 1


# ------------------------------------------------------------------ no silent deletion


def test_a_smaller_grid_refuses_and_prune_drops(tmp_path, capsys):
    assert exact(tmp_path) == 0
    err = refused(capsys, *EXACT, "--betas", "1", "--out", tmp_path)
    assert "holds 2 finished point(s) outside the requested grid (d=3 beta=0.5, d=3 " in err
    assert "pass --prune to drop them" in err
    assert [r["beta"] for r in rows(tmp_path / "phase.csv")] == ["0.5", "1.0", "2.0"]
    assert exact(tmp_path, "1", "--prune") == 0
    assert [r["beta"] for r in rows(tmp_path / "phase.csv")] == ["1.0"]


def test_an_interrupted_overwrite_resumes(tmp_path, monkeypatch, capsys):
    import spheresde.experiments._phase as phase

    assert exact(tmp_path, "0.5,1,2", "--sigma", "2") == 0  # another sweep, to be replaced
    finish, calls = phase.PhaseSpec.finish, []

    def dies_at_third(spec, point, counts):
        calls.append(point)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return finish(spec, point, counts)

    monkeypatch.setattr(phase.PhaseSpec, "finish", dies_at_third)
    assert exact(tmp_path, "0.5,1,2", "--overwrite") == 130
    assert "interrupted; finished grid points are saved" in capsys.readouterr().err
    monkeypatch.setattr(phase.PhaseSpec, "finish", finish)
    assert exact(tmp_path, "0.5,1,2", "--overwrite") == 0  # the same parameters: resumes
    runs = json.loads((tmp_path / "phase.json").read_text())["runs"]
    assert [r["points_computed"] for r in runs] == [2, 1]
    assert {r["sigma"] for r in rows(tmp_path / "phase.csv")} == {"1.0"}


# ------------------------------------------------------------------ damaged files


@pytest.fixture
def no_fsync(monkeypatch):
    """Skip the fsync of atomic writes: these tests are about what is read back, and a
    shared disk makes each fsync slow."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)


@dataclass(frozen=True)
class Point:
    a: int
    b: float
    value: float
    trajectories: int


def point(p):
    return Point(p["a"], p["b"], p["a"] / 3 + p["b"], 8)


GRID = [{"a": a, "b": b} for a in (1, 2) for b in (0.5, 1.5)]


def store(out, **kwargs):
    """A sweep of 4 points, echoing sigma, each row of 8 trajectories."""
    return Sweep(out, "toy", {"seed": 0, "sigma": 1.0}, Point, ("a", "b"), echo={"sigma": 1.0},
                 expect={"trajectories": 8}, **kwargs)


def stored(out):
    compute_points(store(out), GRID, point, quiet=True)
    return out / "toy.csv"


@pytest.mark.parametrize(("damage", "says"), [
    # a field cut, as a torn copy or a bad edit would; the 2000 -> 20
    (lambda t: t.replace(",8,1.0", ",,1.0", 1), "row 2: trajectories = '' does not parse"),
    (lambda t: t.replace(",8,1.0", ",2,1.0", 1), "row 2: trajectories = '2', but the sweep's "
                                                   "is '8'"),
    (lambda t: t.replace(",8,1.0", ",x,1.0", 1), "row 2: trajectories = 'x' does not parse"),
    (lambda t: t + t.splitlines()[1] + "\n", "row 6 repeats the point a=1 b=0.5"),
    (lambda t: t.replace("\n", "\n" + t.splitlines()[2] + "\n", 1),
     "row 4 repeats the point a=1 b=1.5"),
    (lambda t: t.replace("0.8333333333333333", "0.9", 1),  # well-formed, not what was computed
     "the rows of a=1 b=0.5 do not match their digest in toy.json"),
    (lambda t: t.replace("a,b", "A,b"),
     "the header is not the sweep's columns a,b,value,trajectories,sigma"),
    (lambda t: t.replace(",8,1.0", ",8,2.0", 1), "row 2: sigma = '2.0', but the sweep's is '1.0'"),
    (lambda t: t[:-6], "row 5 has 4 fields, not 5"),
    (lambda t: t.replace("2,0.5,", "3,0.5,", 1), "the point a=3 b=0.5 is not recorded in toy.json"),
])
def test_a_damaged_csv_is_refused_naming_file_row_and_remedy(tmp_path, no_fsync, damage, says):
    path = stored(tmp_path)
    damaged = damage(path.read_text())
    assert damaged != path.read_text()
    path.write_text(damaged)
    with pytest.raises(ParameterMismatch) as refusal:
        store(tmp_path)
    assert str(refusal.value) == (f"{path}: {says}; restore the file, or pass `overwrite=True` to "
                                  "compute the sweep afresh")
    assert path.read_text() == damaged  # refused, nothing rewritten
    rows = compute_points(store(tmp_path, overwrite=True), GRID, point, quiet=True)
    assert rows == [point(p) for p in GRID]


@pytest.mark.parametrize(("content", "says"), [
    ("[1, 2]", "a JSON list, not the metadata of a sweep"),
    ('{"params": {}', "not valid JSON"),
    (b"\x89\xff\x00garbage", "not valid JSON"),
    ('{"params": {}, "runs": {}, "columns": []}', "'runs' is missing or not a JSON list"),
])
def test_a_damaged_json_is_refused(tmp_path, no_fsync, content, says):
    stored(tmp_path)
    path = tmp_path / "toy.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ParameterMismatch, match=f"^{path}: {says}.*pass `overwrite=True`"):
        store(tmp_path)


def test_a_damaged_store_through_the_cli_is_one_line_exit_2(tmp_path, capsys):
    assert exact(tmp_path) == 0
    path = tmp_path / "phase.csv"
    path.write_text(path.read_text().replace(",0,nan,1.0,exact", ",,nan,1.0,exact", 1))
    err = refused(capsys, *EXACT, "--betas", "0.5,1,2", "--out", tmp_path)
    assert err == (f"spheresde phase: error: {path}: row 2: trajectories = '' does not parse; "
                   "restore the file, or pass --overwrite to compute the sweep afresh (see "
                   "'spheresde phase --help')")


COUNTS = {"outcomes": [1, 2, 1], "minority": [0, 2], "steps": 40}  # a chunk of 4


def counts_chunk(point, k):
    return dict(COUNTS)


def counts_sweep(out, calls):
    from spheresde.experiments._simulate import counts_problem

    def chunk(point, k):
        calls.append((point["a"], k))
        return counts_chunk(point, k)

    return compute_chunks(Sweep(out, "toy", {"seed": 0}, Toy, ("a",), chunk_size=4),
        [{"a": 1}, {"a": 2}], lambda p: 3, chunk,
        lambda p, counts: Toy(p["a"], float(sum(c["outcomes"][1] for c in counts))),
        quiet=True, check=lambda point, k, counts: counts_problem(counts, 4))


@pytest.mark.parametrize(("cache", "says"), [
    ({"1": {"0": {**COUNTS, "outcomes": [1, 2, 500]}}}, "sum to 4"),  # forged
    ({"1": {"0": {**COUNTS, "outcomes": [3, -1, 2]}}}, "non-negative"),  # negative
    ({"1": {"0": {**COUNTS, "minority": [0, 9]}}}, "antipodal samples"),
    ({"1": {"7": COUNTS}}, "no chunk '7'"),  # a chunk the point does not have
    ({"1": {"0": [1, 2, 1]}}, "not an object of points"),
    ("random bytes", "not valid JSON"),
    ({"1": {"0": COUNTS}, "2|9": {}}, "not an object of points"),  # a key of two coordinates
])
def test_a_damaged_chunk_cache_is_discarded_and_recomputed(tmp_path, no_fsync, cache, says):
    whole = counts_sweep(tmp_path / "whole", [])
    path = tmp_path / "cut" / "toy.chunks.json"
    path.parent.mkdir()
    # a store with no finished point yet, and a chunk cache that is not what it was
    compute_chunks(Sweep(tmp_path / "cut", "toy", {"seed": 0}, Toy, ("a",), chunk_size=4),
        [], lambda p: 3, counts_chunk, None, quiet=True)
    if isinstance(cache, str):
        path.write_bytes(os.urandom(64) + b"\xff")
    else:
        path.write_text(json.dumps({"points": cache}))
    calls = []
    with pytest.warns(UserWarning, match=rf"toy.chunks.json: a damaged chunk cache \(.*{says}"):
        rows_again = counts_sweep(tmp_path / "cut", calls)
    assert len(calls) == 6  # every chunk computed again, none of the damaged ones summed
    assert rows_again == whole


# ------------------------------------------------------------------ a stored sweep of v0.1


def v0_store(out):
    """The store of the sweep in tests/data/sweep_v0, opened as run_sweep opens it."""
    from spheresde.experiments import PhaseRow

    spec = PhaseSpec(dims=(3, 4), betas=(0.5, 1.0), trajectories=8, layers=2, horizon=1.0)
    return spec, Sweep(out, "phase", spec.params(), PhaseRow, ("d", "beta"),
                       grid=("dims", "betas"), echo=spec.echo(), chunk_size=4,
                       expect={"trajectories": 8})


def test_a_sweep_stored_before_digests_resumes(tmp_path):
    # written by spheresde 0.1.0 before this change (tests/data/sweep_v0):
    # spheresde phase --dims 3,4 --betas 0.5,1 --trajectories 8 --layers 2 --horizon 1
    # --chunk-size 4
    shutil.copytree(DATA / "sweep_v0", tmp_path, dirs_exist_ok=True)
    old = rows(tmp_path / "phase.csv")
    spec, sweep = v0_store(tmp_path)
    result = compute_chunks(sweep, spec.points(), lambda p: 2, None, None, quiet=True)
    assert [(r.d, r.beta, r.trajectories) for r in result] == [
        (3, 0.5, 8), (3, 1.0, 8), (4, 0.5, 8), (4, 1.0, 8)]
    # the stored columns keep their order and values; the column added since (p_network,
    # defaulted) is written for the stored rows at its default, NaN: not computed
    new = rows(tmp_path / "phase.csv")
    assert [c for c in new[0] if c != "p_network"] == list(old[0])
    assert without_network(new) == old
    assert {r["p_network"] for r in new} == {"nan"}
    meta = json.loads((tmp_path / "phase.json").read_text())
    assert [r["points_computed"] for r in meta["runs"]] == [4, 0]
    assert len(meta["digests"]) == 4  # from now on checked by digest too


def test_a_sweep_stored_before_digests_is_still_checked(tmp_path):
    shutil.copytree(DATA / "sweep_v0", tmp_path, dirs_exist_ok=True)
    path = tmp_path / "phase.csv"
    path.write_text(path.read_text().replace(",8,2,1.0,", ",2,2,1.0,", 1))  # 8 cut to 2
    with pytest.raises(ParameterMismatch, match="row 2: trajectories = '2', but the sweep's "
                                                "is '8'"):
        v0_store(tmp_path)


# ------------------------------------------------------------------ bad data


def write_cifar(folder, labels_of_test=None):
    rng = np.random.default_rng(0)
    folder.mkdir()
    for name in (*(f"data_batch_{k}" for k in range(1, 6)), "test_batch"):
        labels = list(rng.integers(0, 10, 4))
        if name == "test_batch" and labels_of_test is not None:
            labels = labels_of_test
        batch = {b"data": rng.integers(0, 256, (4, 3072), dtype=np.uint8), b"labels": labels}
        (folder / name).write_bytes(pickle.dumps(batch))


def test_labels_out_of_range_are_refused(tmp_path):
    from spheresde.data import DatasetError, load_cifar10

    write_cifar(tmp_path / "good")
    assert load_cifar10(tmp_path / "good").classes == 10
    write_cifar(tmp_path / "bad", labels_of_test=[3, 12, 0, -1])
    with pytest.raises(DatasetError, match=r"test_batch: 2 labels outside 0..9 \(the first: "
                                           r"image 1, label 12\)"):
        load_cifar10(tmp_path / "bad")


def test_reproduce_checks_its_data_dir_before_any_sweep(tmp_path, capsys):
    err = refused(capsys, "reproduce", "--scale", "paper", "--data-dir", tmp_path / "none",
                  "--out", tmp_path / "out", "--dry-run")
    assert "no such folder" in err
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ a full disk


def full_disk(monkeypatch, after):
    """Every file write after the first ``after`` fails with ENOSPC (at fsync: the data
    of a full disk is written, but cannot be stored)."""
    real, calls = os.fsync, []

    def fsync(fd):
        calls.append(fd)
        if len(calls) > after:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


@pytest.mark.parametrize("after", [0, 4])  # at the start, mid-run (2 files a point)
def test_a_full_disk_is_one_line_exit_1_and_the_sweep_resumes(tmp_path, monkeypatch, capsys,
                                                               after):
    full_disk(monkeypatch, after)
    assert exact(tmp_path) == 1
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [
        f"spheresde phase: {tmp_path / 'phase.json'}: No space left on device (free some "
        f"space); finished grid points are saved in {tmp_path}, re-run the same command to "
        "resume"]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    monkeypatch.undo()
    assert exact(tmp_path) == 0
    runs = json.loads((tmp_path / "phase.json").read_text())["runs"]
    assert sum(r["points_computed"] for r in runs) == 3


def test_a_full_disk_while_drawing_the_figure(tmp_path, monkeypatch, capsys):
    from matplotlib.figure import Figure

    def no_space(self, path, **kwargs):
        Path(path).write_bytes(b"\x89PNG")  # torn
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(Figure, "savefig", no_space)
    assert exact(tmp_path) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / 'phase.png'}: No space left on device" in err
    assert "Traceback" not in err
    assert len(rows(tmp_path / "phase.csv")) == 3  # the results are stored before the figure
    assert sorted(p.name for p in tmp_path.iterdir()) == ["phase.csv", "phase.json", "phase.lock"]


def test_debug_shows_the_traceback(tmp_path, monkeypatch):
    full_disk(monkeypatch, 0)
    with pytest.raises(OSError, match="No space left"):
        exact(tmp_path, "1", "--debug")


# ------------------------------------------------------------------ domain limits


@pytest.mark.parametrize(("argv", "says"), [
    (["phase", "--betas", "1000"], "overflows float64 beyond beta = 350"),
    (["phase", "--tol", "1e-300"], "must be in [1.1e-16, 1)"),
    (["phase", "--horizon", "1e-9"], "round(T*L) = 0 layers; give --horizon >= 0.05"),
    (["tokens", "--horizon", "1e-9"], "0 layers"),
    (["hybrid", "--horizon", "1e-9"], "0 layers"),
    (["dominance", "--eps", "0.5"], "give at least two"),
    (["field", "--beta", "1e6"], "must be in [0, 5000]"),
    (["field", "--beta", "1e308"], "must be in [0, 5000]"),
])
def test_values_outside_the_numerics_are_refused_up_front(tmp_path, capsys, argv, says):
    err = refused(capsys, *argv, "--out", tmp_path, "--quiet")
    assert says in err
    assert not list(tmp_path.iterdir())  # nothing computed, nothing written


# ------------------------------------------------------------------ options a command ignores


@pytest.mark.parametrize(("argv", "says"), [
    (["train", "--workers", "2"], "unrecognized arguments: --workers"),
    (["train", "--chunk-size", "5"], "unrecognized arguments: --chunk-size"),
    (["field", "--scheduler", "tcp://127.0.0.1:1"], "unrecognized arguments: --scheduler"),
    (["field", "--prune"], "unrecognized arguments: --prune"),
    (["train", "--data-dir", "/tmp"], "--data-dir is not used by --dataset digits"),
])
def test_options_a_command_does_not_use_are_refused(tmp_path, capsys, argv, says):
    assert says in refused(capsys, *argv, "--out", tmp_path)


def test_the_python_api_asks_for_an_output_directory(tmp_path, monkeypatch):
    from spheresde.experiments import FieldSpec, RunOptions, run

    monkeypatch.chdir(tmp_path)
    with pytest.raises(BadParameters, match="output directory is empty"):
        run(FieldSpec(), "")
    assert not list(tmp_path.iterdir())
    with pytest.raises(BadParameters, match="give one of them"):
        RunOptions(workers=2, scheduler="tcp://127.0.0.1:8786")


# ------------------------------------------------------------------ Monte Carlo and Dask


PARTIAL = ["phase", "--dims", "3", "--betas", "0.5,1", "--trajectories", "8", "--layers", "2",
           "--horizon", "1", "--chunk-size", "4", "--quiet"]


@pytest.mark.slow
def test_a_partial_sweep_resumes_its_chunks_and_forged_ones_are_recomputed(tmp_path, capsys):
    # tests/data/sweep_v0_partial: the sweep of tests/data/sweep_v0 for d = 3, interrupted
    # with the point beta = 0.5 finished and chunk 0 of 2 of beta = 1 in the chunk cache
    finished = rows(DATA / "sweep_v0" / "phase.csv")[:2]
    for case in ("as stored", "forged"):
        out = tmp_path / case
        shutil.copytree(DATA / "sweep_v0_partial", out)
        if case == "forged":
            cache = json.loads((out / "phase.chunks.json").read_text())
            cache["points"]["3|1.0"]["0"]["outcomes"] = [0, 500, 4]  # a row of 504 samples
            (out / "phase.chunks.json").write_text(json.dumps(cache))
        assert main([*PARTIAL, "--out", str(out)]) == 0
        # as if never cut, in the stored columns; p_network (added since, defaulted) is NaN
        # for the point finished before and computed for the one finished now
        table = rows(out / "phase.csv")
        assert_same_rows(without_network(table), finished)
        assert table[0]["p_network"] == "nan"
        assert 0 < float(table[1]["p_network"]) < 1
        runs = json.loads((out / "phase.json").read_text())["runs"]
        err = capsys.readouterr().err.strip().splitlines()
        if case == "as stored":
            assert runs[-1]["chunks_computed"] == 1  # the stored chunk is not recomputed
            assert not err
        else:
            assert runs[-1]["chunks_computed"] == 2  # the forged chunk is
            assert len(err) == 1
            assert err[0].startswith("spheresde phase: warning: ")
            assert "outcomes [0, 500, 4] are not 3 non-negative counts that sum to 4" in err[0]


@dataclass(frozen=True)
class Killed:
    x: float
    trajectories: int


@dataclass(frozen=True)
class KillsItsWorker(AbstractChunkedSpec):
    """A sweep whose chunks kill the worker they run on (out of memory, say)."""

    command: ClassVar[str] = "dies"
    summary: ClassVar[str] = "a worker that dies on every chunk"
    row_type: ClassVar[type] = Killed
    axes: ClassVar[dict[str, str]] = {"x": "xs"}

    xs: tuple[float, ...] = param((1.0,), "points")
    trajectories: int = param(8, "samples per point", check=greater_than(0))
    seed: int = param(0, "seed")

    def chunk(self, point, k, size):
        os._exit(1)

    def check(self, counts, size):
        return None

    def finish(self, point, counts):
        raise AssertionError("no chunk comes back")

    def samples(self):
        return self.trajectories

    def point_steps(self, point):
        return 1

    def shortened(self, steps):
        return self

    def plot(self, rows, path):
        return path

    @classmethod
    def report_section(cls, results, notes):
        return None


@pytest.mark.slow
def test_a_dask_worker_that_keeps_dying_is_one_line_exit_1(tmp_path, monkeypatch, capsys):
    pytest.importorskip("distributed")
    import sys

    import cloudpickle
    import dask

    from spheresde.experiments import SPECS

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import it
    monkeypatch.setitem(SPECS, "dies", KillsItsWorker)
    # a chunk is given up after it killed 2 workers (Dask's default: 4)
    monkeypatch.setitem(dask.config.config["distributed"]["scheduler"], "allowed-failures", 1)
    try:
        status = main(["dies", "--workers", "1", "--out", str(tmp_path), "--quiet"])
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert status == 1
    err = capsys.readouterr().err
    assert "spheresde dies: the Dask cluster failed (KilledWorker" in err
    assert "finished grid points are saved" in err
    assert "Traceback" not in err


@pytest.mark.slow
def test_a_worker_lost_while_the_cluster_starts_is_one_line_exit_1(tmp_path, capsys):
    pytest.importorskip("distributed")
    import dask

    dies = tmp_path / "dies_while_starting.py"  # run by each worker process as it starts
    dies.write_text("import os\nos._exit(1)\n")
    with dask.config.set({"distributed.worker.preload": [str(dies)]}):
        status = main([*PARTIAL, "--workers", "1", "--out", str(tmp_path / "out")])
    assert status == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("spheresde phase: the Dask cluster failed (RuntimeError: ")
    assert err[0].endswith("re-run the same command to resume")


def test_ctrl_c_while_starting_is_one_line_exit_130(monkeypatch, capsys):
    import spheresde.cli as cli

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    assert main(["phase", "--betas", "1"]) == 130
    err = capsys.readouterr().err.strip()
    assert err == ("spheresde phase: interrupted; finished grid points are saved in results, "
                   "re-run the same command to resume")


def test_ctrl_c_inside_a_garbage_collection_callback_is_not_lost():
    # Python runs its SIGINT handler inside gc callbacks too (JAX has one), and prints
    # and ignores what they raise: the command's unraisable hook delivers the signal again
    import gc
    import signal
    import sys
    import time

    from spheresde.cli import _interrupt_again

    pending = [True]

    def interrupted_once(phase, info):
        if phase == "start" and pending:
            pending.clear()
            raise KeyboardInterrupt

    hook = sys.unraisablehook
    # under a shell without job control SIGINT is ignored, and then nothing is delivered
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.unraisablehook = _interrupt_again
    gc.callbacks.append(interrupted_once)
    try:
        gc.collect()
        with pytest.raises(KeyboardInterrupt):
            time.sleep(5)  # the signal delivered again ends the sleep
    finally:
        gc.callbacks.remove(interrupted_once)
        sys.unraisablehook = hook
        signal.signal(signal.SIGINT, handler)
    assert not pending  # the callback did raise
