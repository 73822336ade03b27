"""The n > 2 absorber against no absorption, and against the absorber of another checkout
(run explicitly; not a pytest test).

    .venv/bin/python tests/benchmarks/bench_absorber.py [--repeats 3] [--old REV] [--no-large]

In one process, float32, :func:`spheresde.transformer._absorption.absorbing_tokens` (what
``spheresde tokens --method discrete`` runs for each point) at the sizes of the issue:
n = 3, 4 tokens, beta = 2, 4, d = 3, sigma = 1, 2000 trajectories, L = 20, T = 200
(4000 layers), tol = 1e-2, bound 1e-6 ("absorb") and 0 ("absorb 0"), the same seed.
``--old REV`` (default ``main``) loads ``spheresde/transformer/_absorption.py`` of that
git revision as a module of this package (``git show``, nothing copied) and times its
absorber too; ``--old ''`` skips it.

Each pass runs the four points in sweep order, the variants interleaved point by point.
Pass 1 is cold: each variant's programs compile there, as in a sweep (one process, every
point after the first of its n reusing them). Passes 2.. are warm; the table shows
pass 1 and the best of ``--repeats`` warm passes, with the trajectory-steps simulated
and the ratios absorb / absorb 0 (and new / old). The large case (20,000 trajectories,
n = 3, beta = 2, T = 50) is run once cold and once warm, where absorption should clearly win.
Timings on a shared machine vary by 10-20 %: read the ratios of one run, not one number.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SIZES = dict(d=3, layers=20, tol=1e-2)
BOUND = 1e-6


def load_old(rev: str):
    """``spheresde/transformer/_absorption.py`` of ``rev`` as a module of this package (its
    relative imports resolve to this checkout's other modules)."""
    source = subprocess.run(["git", "-C", str(ROOT), "show",
                             f"{rev}:spheresde/transformer/_absorption.py"],
                            check=True, capture_output=True, text=True).stdout
    name = "spheresde.transformer._absorption_old"
    spec = importlib.util.spec_from_loader(name, loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "spheresde.transformer"
    sys.modules[name] = module
    exec(compile(source, f"{rev}:_absorption.py", "exec"), module.__dict__)
    return module


def timed(run):
    """(seconds, codes, trajectory-steps) of one call."""
    start = time.perf_counter()
    codes, _, work = run()
    return time.perf_counter() - start, codes, work


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="warm passes (best of)")
    parser.add_argument("--old", default="main", help="git revision to compare ('': none)")
    parser.add_argument("--no-large", action="store_true", help="skip the 20,000 case")
    args = parser.parse_args()

    from spheresde.transformer import PureNoise
    from spheresde.transformer import _absorption as new

    modules = {"new": new}
    if args.old:
        modules["old"] = load_old(args.old)
    variants = {f"{label} {name}": (module, bound)
                for label, module in modules.items()
                for name, bound in (("absorb", BOUND), ("absorb 0", 0.0))}
    key = jax.random.key(0)

    def point(module, bound, n, beta, trajectories, steps):
        return lambda: module.absorbing_tokens(key, tokens=n, beta=beta, weights=PureNoise(),
                                               trajectories=trajectories, steps=steps,
                                               bound=bound, **SIZES)

    points = [(n, beta) for n in (3, 4) for beta in (2.0, 4.0)]
    cold, warm, work = {}, {}, {}
    for rep in range(1 + args.repeats):
        for n, beta in points:
            codes = {}
            for name, (module, bound) in variants.items():
                seconds, codes[name], work[name, n, beta] = timed(
                    point(module, bound, n, beta, 2000, 4000))
                if rep == 0:
                    cold[name, n, beta] = seconds
                else:
                    warm[name, n, beta] = min(warm.get((name, n, beta), np.inf), seconds)
            reference = codes["new absorb 0"]
            changed = {name: int(np.sum(c != reference)) for name, c in codes.items()}
            if any(changed.values()):
                print(f"n={n} beta={beta:g} pass {rep}: codes differing from new absorb 0: "
                      f"{changed}")
        print(f"pass {rep} done", flush=True)

    print(f"\n2000 trajectories, L = 20, T = 200, d = 3 ({jax.default_backend()}); "
          f"seconds cold (pass 1) / best of {args.repeats} warm; steps as a fraction of "
          "the full 8e6")
    print(f"{'point':14s}" + "".join(f"{name:>24s}" for name in variants))
    for n, beta in points:
        print(f"n={n} beta={beta:<5g} " + "".join(
            f"{cold[v, n, beta]:7.2f} /{warm[v, n, beta]:6.2f} ({work[v, n, beta] / 8e6:4.0%})"
            for v in variants))
    for label, times in (("cold", cold), ("warm", warm)):
        total = {v: sum(times[v, n, b] for n, b in points) for v in variants}
        print(f"total {label:5s}   " + "".join(f"{total[v]:24.2f}" for v in variants))
        ratios = [f"new absorb / new absorb 0 {total['new absorb'] / total['new absorb 0']:.2f}"]
        if "old" in modules:
            ratios += [f"old absorb / old absorb 0 "
                       f"{total['old absorb'] / total['old absorb 0']:.2f}",
                       f"new absorb / old absorb {total['new absorb'] / total['old absorb']:.2f}",
                       f"new absorb 0 / old absorb 0 "
                       f"{total['new absorb 0'] / total['old absorb 0']:.2f}"]
        print(f"  ratios ({label}): " + ", ".join(ratios))
    for n, beta in points:
        print(f"  n={n} beta={beta:g} new absorb / new absorb 0: cold "
              f"{cold['new absorb', n, beta] / cold['new absorb 0', n, beta]:.2f}, warm "
              f"{warm['new absorb', n, beta] / warm['new absorb 0', n, beta]:.2f}")

    if args.no_large:
        return
    trajectories, steps = 20_000, 1000
    print(f"\n{trajectories} trajectories, n = 3, beta = 2, L = 20, T = 50: seconds cold / warm")
    for name, (module, bound) in variants.items():
        run = point(module, bound, 3, 2.0, trajectories, steps)
        first, _, _ = timed(run)
        second, _, steps_done = timed(run)
        print(f"  {name:14s} {first:7.2f} / {second:6.2f}  steps "
              f"{steps_done / (trajectories * steps):5.1%}", flush=True)


if __name__ == "__main__":
    main()
