"""Fault injection: concurrent writers, shrunk grids, interrupted overwrites, damaged files,
bad data, a full disk, a dying Dask worker, domain limits and options a command ignores.

Each case gives one line (exit 2 for what the user must change, 1 for a fault, 130 for
Ctrl-C) and keeps or refuses stored results, never loses or accepts them silently. The
fast cases use the ``exact`` phase method (quadrature, no JIT); the Monte Carlo ones are
marked slow.
"""

import contextlib
import csv
import errno
import json
import os
import pickle
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
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


def test_one_writer_per_directory_whatever_the_sweep(tmp_path, capsys):
    # the sweeps of a directory share its store, so its lock is the directory's: a run of
    # another sweep into the same --out waits or is refused, naming the sweep it waits for
    with Sweep(tmp_path, "hybrid", {}, Toy, ("a",)):
        err = refused(capsys, *EXACT, "--betas", "1", "--out", tmp_path)
    assert err.startswith(f"spheresde phase: error: {tmp_path} is being written by pid "
                          f"{os.getpid()} on ")
    assert "(its sweep 'hybrid'), started" in err
    # one hidden lock for the directory, none per sweep beside the figures
    assert exact(tmp_path, "1") == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".spheresde.lock", ".spheresde.sqlite", "phase.csv", "phase.json", "phase.png"]


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


def files_only(out):
    """Leave only the sweeps' CSV and JSON in ``out``, as a version before the store wrote
    them (or a copy to another directory would): the store is moved away."""
    (out / ".spheresde.sqlite").rename(out.parent / f"{out.name}.sqlite")


def edit_store(out, sql, *args):
    """Change the store of ``out`` behind its back (as a damaged disk or a hand edit)."""
    with contextlib.closing(sqlite3.connect(out / ".spheresde.sqlite")) as db, db:
        db.execute(sql, args)


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
    files_only(tmp_path)  # the CSV and JSON are what a store not holding the sweep reads
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
    files_only(tmp_path)
    path = tmp_path / "toy.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ParameterMismatch, match=f"^{path}: {says}.*pass `overwrite=True`"):
        store(tmp_path)


def test_a_damaged_store_through_the_cli_is_one_line_exit_2(tmp_path, capsys):
    assert exact(tmp_path) == 0
    path = tmp_path / "phase.csv"
    path.write_text(path.read_text().replace(",0,nan,1.0,exact", ",,nan,1.0,exact", 1))
    files_only(tmp_path)
    err = refused(capsys, *EXACT, "--betas", "0.5,1,2", "--out", tmp_path)
    assert err == (f"spheresde phase: error: {path}: row 2: trajectories = '' does not parse; "
                   "restore the file, or pass --overwrite to compute the sweep afresh (see "
                   "'spheresde phase --help')")


def test_a_point_edited_in_the_store_is_refused(tmp_path, capsys):
    assert exact(tmp_path) == 0
    # the echoed method of beta = 1 changed: well-formed, not what was stored
    edit_store(tmp_path, "UPDATE points SET lines = replace(lines, '\"exact\"', '\"exakt\"') "
                         "WHERE key = '3|1.0'")
    err = refused(capsys, *EXACT, "--betas", "0.5,1,2", "--out", tmp_path)
    assert err == (f"spheresde phase: error: {tmp_path / '.spheresde.sqlite'}: the sweep "
                   "'phase', point d=3 beta=1.0: its rows do not match their digest; pass "
                   "--overwrite to compute it afresh (see 'spheresde phase --help')")
    assert exact(tmp_path, "0.5,1,2", "--overwrite") == 0


@pytest.mark.parametrize("damage", [
    lambda data: os.urandom(4096),  # not a database at all
    lambda data: data[:100] + os.urandom(len(data) - 100),  # its pages overwritten
])
def test_a_store_that_sqlite_cannot_read_is_refused(tmp_path, capsys, damage):
    assert exact(tmp_path) == 0
    table = (tmp_path / "phase.csv").read_text()
    path = tmp_path / ".spheresde.sqlite"
    path.write_bytes(damage(path.read_bytes()))
    err = refused(capsys, *EXACT, "--betas", "0.5,1,2", "--out", tmp_path)
    assert err.startswith(f"spheresde phase: error: {path}: ")
    assert err.endswith(f"move it away, and the sweeps of {tmp_path} resume from their CSV and "
                        "JSON files as they were last written (see 'spheresde phase --help')")
    # as the line says: moved away, the sweep resumes from its files, nothing recomputed
    path.rename(tmp_path.parent / "damaged.sqlite")
    assert exact(tmp_path, "0.5,1,2,4") == 0
    assert (tmp_path / "phase.csv").read_text().startswith(table)
    runs = json.loads((tmp_path / "phase.json").read_text())["runs"]
    assert [r["points_computed"] for r in runs] == [3, 1]


def test_a_store_left_without_its_tables_reads_as_empty(tmp_path, capsys):
    # what a writer killed between creating the file and its tables leaves
    (tmp_path / ".spheresde.sqlite").touch()
    assert main([*EXACT, "--betas", "1", "--out", str(tmp_path), "--dry-run"]) == 0
    assert "points: 1 to compute of 1 (0 stored)" in capsys.readouterr().out
    assert exact(tmp_path, "1") == 0
    assert len(rows(tmp_path / "phase.csv")) == 1


def test_the_store_holds_the_sweep_and_rewrites_an_edited_csv(tmp_path):
    # the CSV and JSON are written from the store at the end of each run: an edited or
    # deleted CSV beside a store that holds the sweep is written again, not trusted
    assert exact(tmp_path) == 0
    path = tmp_path / "phase.csv"
    table = path.read_text()
    path.write_text(table.replace(",0,nan,1.0,exact", ",2,nan,1.0,exact", 1))
    assert exact(tmp_path) == 0
    assert path.read_text() == table
    path.unlink()
    (tmp_path / "phase.json").unlink()
    assert exact(tmp_path) == 0
    assert path.read_text() == table


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


def put_chunk(out, key, k, counts, digest_of=None):
    """A chunk record in the store of ``out``, with the digest of ``digest_of`` (by
    default of its own text, as the store computes it)."""
    from spheresde.experiments.engine._database import digest

    text = counts if isinstance(counts, str) else json.dumps(counts, sort_keys=True)
    edit_store(out, "INSERT OR REPLACE INTO chunks VALUES ('toy', ?, ?, ?, ?)", key, k, text,
               digest(text if digest_of is None else digest_of))


EDITED = {**COUNTS, "outcomes": [2, 1, 1]}  # the same total, other counts


@pytest.mark.parametrize(("chunk", "says"), [
    # the counts edited or damaged behind the store's back: their digest is not theirs
    ((EDITED, json.dumps(COUNTS, sort_keys=True)), "the counts do not match their digest"),
    (("\x89garbage", "{}"), "the counts do not match their digest"),
    # records whose digest is right but whose counts the experiment's check refuses
    (({**COUNTS, "outcomes": [1, 2, 500]}, None), "sum to 4"),  # forged
    (({**COUNTS, "outcomes": [3, -1, 2]}, None), "non-negative"),  # negative
    (({**COUNTS, "minority": [0, 9]}, None), "antipodal samples"),
    (("[1, 2, 1]", None), "the counts are not an object"),
])
def test_a_damaged_chunk_is_discarded_and_recomputed(tmp_path, chunk, says):
    whole = counts_sweep(tmp_path / "whole", [])
    # a store with no finished point yet, and chunk 0 of the first point not as computed
    compute_chunks(Sweep(tmp_path / "cut", "toy", {"seed": 0}, Toy, ("a",), chunk_size=4),
                   [], lambda p: 3, counts_chunk, None, quiet=True)
    put_chunk(tmp_path / "cut", "2", 1, COUNTS)  # intact, but discarded with the rest
    put_chunk(tmp_path / "cut", "9", 0, COUNTS)  # of a point off the grid: discarded too
    put_chunk(tmp_path / "cut", "1", 0, *chunk)
    calls = []
    with pytest.warns(UserWarning, match=rf"\.spheresde\.sqlite: a damaged chunk cache of the "
                                         rf"sweep 'toy' \(point 1, chunk 0: .*{says}"):
        rows_again = counts_sweep(tmp_path / "cut", calls)
    assert len(calls) == 6  # every chunk computed again, none of the damaged ones summed
    assert rows_again == whole
    with contextlib.closing(sqlite3.connect(tmp_path / "cut" / ".spheresde.sqlite")) as db:
        assert db.execute("SELECT count(*) FROM chunks").fetchone() == (0,)


def test_a_chunk_of_a_point_the_sweep_does_not_have_is_discarded(tmp_path):
    compute_chunks(Sweep(tmp_path, "toy", {"seed": 0}, Toy, ("a",), chunk_size=4),
                   [], lambda p: 3, counts_chunk, None, quiet=True)
    put_chunk(tmp_path, "1", 7, COUNTS)
    with pytest.warns(UserWarning, match=r"\(point 1 has no chunk 7\)"):
        counts_sweep(tmp_path, [])


def test_a_chunk_cache_of_the_files_before_the_store_is_recomputed(tmp_path):
    # NAME.chunks.json, as versions before the store wrote it, carries no digest: an
    # edited chunk could not be told from a genuine one, so none is kept
    whole = counts_sweep(tmp_path / "whole", [])
    out = tmp_path / "cut"
    compute_chunks(Sweep(out, "toy", {"seed": 0}, Toy, ("a",), chunk_size=4),
                   [], lambda p: 3, counts_chunk, None, quiet=True)
    files_only(out)
    (out / "toy.chunks.json").write_text(json.dumps({"points": {"1": {"0": EDITED}}}))
    calls = []
    with pytest.warns(UserWarning, match=r"toy\.chunks\.json: a chunk cache written before "
                                         r"chunks had digests cannot be checked"):
        assert counts_sweep(out, calls) == whole
    assert len(calls) == 6
    assert not (out / "toy.chunks.json").exists()  # moved into the store, then finished


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


def full_store(monkeypatch, pages):
    """SQLite reports a full disk (SQLITE_FULL) once the store would grow past ``pages``
    pages (its own limit, ``max_page_count``, fails as a full disk does)."""
    real = sqlite3.connect

    def connect(*args, **kwargs):
        db = real(*args, **kwargs)
        db.execute(f"PRAGMA max_page_count = {pages}")
        return db

    monkeypatch.setattr(sqlite3, "connect", connect)


@pytest.mark.parametrize("where", ["store", "files"])  # the store at its start, the CSV/JSON
def test_a_full_disk_is_one_line_exit_1_and_the_sweep_resumes(tmp_path, monkeypatch, capsys,
                                                               where):
    if where == "store":
        full_store(monkeypatch, 1)
        path, reason = tmp_path / ".spheresde.sqlite", "No space left on device (database or "
    else:
        full_disk(monkeypatch, 0)
        path, reason = tmp_path / "phase.json", "No space left on device"
    assert exact(tmp_path) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith(f"spheresde phase: {path}: {reason}")
    assert err.endswith(f"(free some space); finished grid points are saved in {tmp_path}, "
                        "re-run the same command to resume")
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    monkeypatch.undo()
    assert exact(tmp_path) == 0
    runs = json.loads((tmp_path / "phase.json").read_text())["runs"]
    assert sum(r["points_computed"] for r in runs) == 3


@dataclass(frozen=True)
class Wide:
    a: int
    text: str  # a row of a few kB, so that each point takes pages of its own


def test_a_disk_full_mid_run_keeps_the_stored_points(tmp_path, monkeypatch):
    grid = [{"a": a} for a in range(12)]

    def wide(p):
        calls.append(p["a"])
        return Wide(p["a"], str(p["a"]) * 3000)

    calls = []
    whole = compute_points(Sweep(tmp_path / "whole", "toy", {}, Wide, ("a",)), grid, wide,
                           quiet=True)
    full_store(monkeypatch, 12)
    calls.clear()
    with pytest.raises(OSError, match="No space left on device") as fault:
        compute_points(Sweep(tmp_path / "cut", "toy", {}, Wide, ("a",)), grid, wide,
                       quiet=True)
    assert fault.value.errno == errno.ENOSPC
    assert fault.value.filename == str(tmp_path / "cut" / ".spheresde.sqlite")
    kept = len(calls) - 1  # the point in flight when the disk filled is lost, no other
    assert 0 < kept < len(grid)
    monkeypatch.undo()
    calls.clear()
    rows = compute_points(Sweep(tmp_path / "cut", "toy", {}, Wide, ("a",)), grid, wide,
                          quiet=True)
    assert calls == list(range(kept, len(grid)))
    assert rows == whole
    assert ((tmp_path / "cut" / "toy.csv").read_text()
            == (tmp_path / "whole" / "toy.csv").read_text())


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
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".spheresde.lock", ".spheresde.sqlite", "phase.csv", "phase.json"]


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
    # numbers that would overflow, or fill the memory, downstream
    (["phase", "--horizon", "1e308"], "T = 1e+308 with --layers 20 is inf layers a "
                                      "trajectory, more than 1e+07; give a shorter horizon"),
    (["phase", "--layers", "1000000"], "is 1e+08 layers a trajectory, more than 1e+07"),
    (["hybrid", "--eps", "1e-200,1", "--horizon-scale", "1"],
     "T = max(50, 1/eps^2) with --layers 10 is inf layers a trajectory"),
    (["train", "--epochs", "1" + "0" * 30], f"argument --epochs: 1{'0' * 30} is too large "
                                            "(at most 2^53 = 9007199254740992)"),
    (["phase", "--trajectories", "1" + "0" * 23, "--dry-run"], "is too large (at most 2^53"),
    (["phase", "--trajectories", "1" + "0" * 13, "--dry-run"],
     "10000000000000 trajectories a point in chunks of --chunk-size 10000 are 1e+09 chunks, "
     "more than 1e+06; give fewer trajectories or a larger --chunk-size"),
    (["phase", "--trajectories", "1" + "0" * 13], "1e+09 chunks"),  # before any work
    (["phase", "--chunk-size", "1" + "0" * 20], "--chunk-size 1" + "0" * 20 + " must be in "
                                                "[1, 2^53]"),
    (["phase", "--workers", "100000"], "--workers 100000 must be in [0, 1024]"),
])
def test_values_outside_the_numerics_are_refused_up_front(tmp_path, capsys, argv, says):
    err = refused(capsys, *argv, "--out", tmp_path, "--quiet")
    assert says in err
    assert not list(tmp_path.iterdir())  # nothing computed, nothing written


def test_minus_zero_is_stored_as_zero(tmp_path):
    # -0.0 equals 0.0: the same sweep, stored, keyed and seeded as 0.0, not refused as
    # another one
    assert exact(tmp_path, "-0,1") == 0
    assert [r["beta"] for r in rows(tmp_path / "phase.csv")] == ["0.0", "1.0"]
    assert exact(tmp_path, "0,1") == 0
    assert json.loads((tmp_path / "phase.json").read_text())["params"]["betas"] == [0.0, 1.0]
    assert PhaseSpec(absorb=-0.0) == PhaseSpec(absorb=0.0)
    assert PhaseSpec(absorb=-0.0).echo()["absorb"] == 0.0
    assert str(PhaseSpec(absorb=-0.0).echo()["absorb"]) == "0.0"  # the CSV's spelling


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
def test_a_partial_sweep_of_the_files_before_the_store_resumes(tmp_path, capsys):
    # tests/data/sweep_v0_partial: the sweep of tests/data/sweep_v0 for d = 3, interrupted
    # with the point beta = 0.5 finished and chunk 0 of 2 of beta = 1 in the chunk cache
    # (phase.chunks.json, without digests: it is computed again, see
    # test_a_chunk_cache_of_the_files_before_the_store_is_recomputed)
    finished = rows(DATA / "sweep_v0" / "phase.csv")[:2]
    out = tmp_path / "partial"
    shutil.copytree(DATA / "sweep_v0_partial", out)
    assert main([*PARTIAL, "--out", str(out)]) == 0
    # as if never cut, in the stored columns; p_network (added since, defaulted) is NaN
    # for the point finished before and computed for the one finished now
    table = rows(out / "phase.csv")
    assert_same_rows(without_network(table), finished)
    assert table[0]["p_network"] == "nan"
    assert 0 < float(table[1]["p_network"]) < 1
    runs = json.loads((out / "phase.json").read_text())["runs"]
    assert runs[-1]["points_computed"] == 1  # the finished point is read, not recomputed
    assert runs[-1]["chunks_computed"] == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"spheresde phase: warning: {out / 'phase.chunks.json'}: a chunk "
                             "cache written before chunks had digests cannot be checked")


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


@pytest.mark.slow
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


def test_ctrl_c_while_the_command_loads_is_one_line_and_130(tmp_path):
    # the console script, interrupted 0.3 s in: Python is importing JAX and the package,
    # before any line of the command runs (a traceback before, or a Ctrl-C lost in JAX's
    # gc callback); 0.3 s is after the interpreter's own start (tens of milliseconds)
    script = Path(sys.executable).with_name("spheresde")
    run = subprocess.Popen([str(script), "phase", "--method", "exact", "--dims", "4",
                            "--out", str(tmp_path / "out"), "--quiet"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    run.send_signal(signal.SIGINT)
    _, err = run.communicate(timeout=120)
    assert run.returncode == 130, err
    assert err.strip() == "spheresde: interrupted while starting; nothing was computed"


def test_importing_the_package_leaves_ctrl_c_alone():
    # only the command installs its handler: a script or notebook that imports spheresde
    # keeps Python's KeyboardInterrupt
    # Python's own handler set first, as a terminal gives it: a shell that runs the suite
    # in the background hands the child SIGINT ignored, which Python keeps
    code = ("import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "import spheresde; "
            "assert signal.getsignal(signal.SIGINT) is signal.default_int_handler")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.skipif(not hasattr(os, "nice"), reason="process priorities are POSIX")
def test_proofs_check_runs_at_a_lower_priority_than_the_sweeps(tmp_path, monkeypatch):
    """``python -m proofs_check`` runs beside the sweeps on a core they would use: at
    ``nice`` 10 above this process it takes what they leave idle. The check is started
    by :func:`beside_command`, which runs a module that prints its own priority at 10
    below this process's (at most 19)."""
    from types import SimpleNamespace

    from spheresde.experiments import _reproduce

    started = []
    monkeypatch.setattr(_reproduce.subprocess, "Popen",
                        lambda args, **kwargs: started.append(args) or SimpleNamespace())
    _reproduce.ProofsCheck(tmp_path, overwrite=True)
    monkeypatch.undo()  # the patched Popen is the subprocess module's own
    assert started == [_reproduce.beside_command("proofs_check")]
    (tmp_path / "priority.py").write_text("import os\nprint(os.nice(0))\n")
    shown = subprocess.run(_reproduce.beside_command("priority"), capture_output=True,
                           text=True, check=True, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert int(shown.stdout) == min(os.nice(0) + 10, 19)


def test_reproduce_says_it_waits_for_proofs_check_only_while_it_runs(tmp_path, monkeypatch):
    """The line ``waiting for python -m proofs_check ...`` came at the end of every run,
    though the check (47 s alone) had mostly finished long before the sweeps."""
    from spheresde.experiments import _reproduce

    popen = subprocess.Popen

    def started(command):  # stand-ins for ``python -m proofs_check``
        monkeypatch.setattr(_reproduce.subprocess, "Popen", lambda *args, **kwargs:
                            popen([sys.executable, "-c", command], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True))
        return _reproduce.ProofsCheck(tmp_path, overwrite=True)

    slow = started("import time; time.sleep(60)")
    try:
        assert slow.running()
    finally:
        slow.stop()
    assert not slow.running()
    done = started("print('PASS: 1')")
    done.process.wait()
    assert not done.running()
    assert done.report()["tally"] == "PASS: 1"
    (tmp_path / "proofs_check.txt").write_text("PASS: 2\n")
    kept = _reproduce.ProofsCheck(tmp_path)  # read from disk: nothing runs
    assert not kept.running()
