"""The proofs_check report: statuses, formats and the exit code of ``python -m proofs_check``."""

import doctest
import importlib
import re

import pytest
import sympy as sp

import proofs_check.__main__ as cli
from proofs_check.report import (
    FAIL,
    MISMATCH,
    PASS,
    Check,
    exit_code,
    format_report,
    is_zero,
    run_checks,
)

MODULES = [
    "proofs_check.span",
    "proofs_check.ito",
    "proofs_check.limit",
    "proofs_check.two_token",
    "proofs_check.stability",
    "proofs_check.stratonovich",
    "proofs_check.export",
    "proofs_check.report",
    "proofs_check.symbols",
]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


@pytest.mark.slow
def test_full_report():
    # ~40 s on 2 cores: every derivation of the report, once.
    rows = run_checks()
    status = {row.claim: row.status for row in rows}
    for row in rows:
        assert row.residuals, row.claim
        assert is_zero(row.residuals), (row.claim, row.failures())
    assert status.pop("Proposition 1: hybrid threshold (two tokens)") == MISMATCH
    assert set(status.values()) == {PASS}, status
    # 14 rows of the paper's layer, 3 of absorption (the noisy cluster, two tight clusters,
    # constant weights), 5 of the diffusion-limit engine, 1 of finite depth, 1 of first
    # passage
    assert len(rows) == 24
    assert exit_code(rows) == 0
    table = format_report(rows, fmt="markdown")
    assert table.count("\n") == len(rows) + 1
    text = format_report(rows)
    assert "beta_c(d) = acosh(d - 2)" in text
    assert re.findall(r"^PASS: \d+.*$", text, flags=re.MULTILINE) == [
        "PASS: 23, FAIL: 0, MISMATCH: 1"
    ]
    assert [line.split("  ")[0] for line in text.splitlines() if "MISMATCH  " in line] == [
        "Proposition 1: hybrid threshold (two tokens)"
    ]


def test_exit_code_and_cli(monkeypatch, capsys):
    rows = [Check("a", "x", "x", PASS), Check("b", "y", "z", MISMATCH)]
    monkeypatch.setattr(cli, "run_checks", lambda: rows)
    assert cli.main([]) == 0
    assert "MISMATCH: 1" in capsys.readouterr().out
    rows.append(Check("c", "u", "v", FAIL))
    assert cli.main(["--markdown"]) == 1
    assert "| c | u | v | FAIL |" in capsys.readouterr().out
    rows.append(Check.from_residuals("d", "0", "x", {"derived - stated": sp.Symbol("x")}))
    assert cli.main([]) == 1
    out = capsys.readouterr().out
    assert "    residual[derived - stated] = x" in out
    assert out.rstrip().splitlines()[-1] == "PASS: 1, FAIL: 2, MISMATCH: 1"


def test_unknown_format():
    with pytest.raises(ValueError, match="fmt"):
        format_report([Check("a", "x", "x", PASS)], fmt="html")
