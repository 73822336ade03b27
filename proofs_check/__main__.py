"""``python -m proofs_check [--markdown]``: print the report; exit 1 if a derivation fails."""

import sys

from .report import exit_code, format_report, run_checks


def main(argv: list[str] | None = None) -> int:
    """Run the checks and print the report (``--markdown`` for a Markdown table)."""
    argv = sys.argv[1:] if argv is None else argv
    rows = run_checks()
    print(format_report(rows, fmt="markdown" if "--markdown" in argv else "text"))
    return exit_code(rows)


if __name__ == "__main__":
    sys.exit(main())
