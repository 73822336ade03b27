"""``--dry-run`` against the run it prices: every sweep of a scale (run explicitly).

    .venv/bin/python tests/benchmarks/bench_dry_run.py [--scale quick] [--only phase,train]

For each sweep of the scale, two fresh processes (so that neither finds the other's
compiled programs in its caches): the first prints the dry-run's estimate of the sweep
into an empty directory, the second runs the sweep there and measures its wall time
(compiling, stepping, finishing the rows, writing the files and the figure). The
table gives estimate, measured time and their ratio (the baseline: the measured run, in
the same machine state as near as two consecutive processes can be). The target is a
ratio within 0.7 to 1.3 for every sweep at quick scale.

On a loaded machine both sides move together only as far as the load stays the same.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ESTIMATE = """
import json, sys
from pathlib import Path
from spheresde.experiments.engine._driver import RunOptions
from spheresde.experiments._reproduce import _sweeps, ReproduceSpec
sweeps, _ = _sweeps(ReproduceSpec(scale=sys.argv[1]))
plan = sweeps[sys.argv[2]].plan(Path(sys.argv[3]), RunOptions(quiet=True), name=sys.argv[2])
print("\\n".join(plan.lines), file=sys.stderr)
print(json.dumps(plan.seconds))
"""

MEASURE = """
import json, sys, time
from pathlib import Path
from spheresde.experiments.engine._driver import RunOptions
from spheresde.experiments._reproduce import _sweeps, ReproduceSpec
sweeps, _ = _sweeps(ReproduceSpec(scale=sys.argv[1]))
start = time.perf_counter()
sweeps[sys.argv[2]].run(Path(sys.argv[3]), RunOptions(quiet=True), name=sys.argv[2])
print(json.dumps(time.perf_counter() - start))
"""


def _seconds(script: str, *args: str) -> float:
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return float(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="quick")
    parser.add_argument("--only", default="", help="comma-separated sweep names")
    args = parser.parse_args()
    from spheresde.experiments._reproduce import ReproduceSpec, _sweeps

    names = list(_sweeps(ReproduceSpec(scale=args.scale))[0])
    if args.only:
        names = [n for n in names if n in args.only.split(",")]
    print(f"{'sweep':<20} {'estimate s':>11} {'measured s':>11} {'ratio':>7}")
    ratios = []
    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            estimate = _seconds(ESTIMATE, args.scale, name, str(Path(tmp) / "plan"))
            measured = _seconds(MEASURE, args.scale, name, str(Path(tmp) / "run"))
        ratios.append(estimate / measured)
        print(f"{name:<20} {estimate:>11.1f} {measured:>11.1f} {ratios[-1]:>7.2f}", flush=True)
    inside = sum(0.7 <= r <= 1.3 for r in ratios)
    print(f"{inside} of {len(ratios)} sweeps estimated within 30% of their measured time")


if __name__ == "__main__":
    main()
