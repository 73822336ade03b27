"""Antipodal formations of n > 2 tokens: outcome fractions and the sizes of the two clusters."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ._sweep import Sweep, point_seed

COLUMNS = (
    "tokens", "beta", "p_single", "p_antipodal", "p_undecided", "stderr", "minority_mean",
    "minority_counts", "d", "sigma", "weights", "method", "trajectories", "layers", "horizon",
    "tol",
)


def _point(params: dict, point: dict) -> dict:
    import jax

    from ._simulate import simulate

    n, beta = point["tokens"], point["beta"]
    key = jax.random.PRNGKey(point_seed(params["seed"], point))
    result = simulate(
        params["method"], key, tokens=n, beta=beta, d=params["dim"], sigma=params["sigma"],
        trajectories=params["trajectories"], layers=params["layers"],
        horizon=params["horizon"], tol=params["tol"], constant=params["weights"] == "constant",
    )
    minority = np.asarray(result.minority if result.minority is not None else [], dtype=int)
    counts = np.bincount(minority, minlength=n // 2 + 1)[1:]
    return {
        **result.fractions(),
        "stderr": result.stderr(),
        "minority_mean": float(minority.mean()) if minority.size else float("nan"),
        # sizes of the smaller cluster over the antipodal samples, "k:count" for k = 1..n//2
        "minority_counts": " ".join(f"{k}:{c}" for k, c in enumerate(counts, start=1)),
        "d": params["dim"], "sigma": params["sigma"], "weights": params["weights"],
        "method": params["method"],
        "trajectories": result.trajectories,
        **{k: params[k] for k in ("layers", "horizon", "tol")},
    }


def run_tokens(out: str | os.PathLike, params: dict, *, quiet: bool = False,
               overwrite: bool = False, name: str = "tokens") -> dict:
    """Sweep ``tokens x betas`` into ``out/NAME.csv`` and draw ``NAME.png``."""
    sweep = Sweep(out, name, params, COLUMNS, ("tokens", "beta"), overwrite=overwrite)
    points = [{"tokens": n, "beta": b} for n in params["tokens"] for b in params["betas"]]
    rows = sweep.run(points, lambda p: _point(params, p), quiet=quiet,
                     desc=f"{name} ({params['method']})")
    png = plot_tokens(rows, Path(out) / f"{name}.png")
    return {"csv": sweep.csv_path, "json": sweep.meta_path, "png": png, "rows": rows}


def minority_counts(text: str) -> dict[int, int]:
    """Parse the ``minority_counts`` column."""
    return {int(k): int(c) for k, c in (item.split(":") for item in text.split())}


def plot_tokens(rows: list[dict], path: Path) -> Path:
    """Left: outcome fractions against beta per n; right: smaller-cluster sizes at top beta."""
    from ._plotting import plt, save

    ns = sorted({int(r["tokens"]) for r in rows})
    colors = plt.cm.plasma(np.linspace(0.0, 0.8, len(ns)))
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.4))
    for n, color in zip(ns, colors, strict=True):
        mine = sorted((r for r in rows if int(r["tokens"]) == n), key=lambda r: float(r["beta"]))
        b = np.array([float(r["beta"]) for r in mine])
        pa = np.array([float(r["p_antipodal"]) for r in mine])
        ax.errorbar(b, pa, yerr=2 * np.array([float(r["stderr"]) for r in mine]), color=color,
                    marker="o", ms=4, capsize=2, label=f"n={n} antipodal")
        ax.plot(b, [float(r["p_single"]) for r in mine], color=color, ls="--", marker="s", ms=3,
                label=f"n={n} single")
        ax.plot(b, [float(r["p_undecided"]) for r in mine], color=color, ls=":", lw=1)
    ax.set_xlabel(r"temperature $\beta$")
    ax.set_ylabel("fraction of trajectories")
    ax.set_ylim(-0.02, 1.02)
    r0 = rows[0]
    model = "V = Id (constant)" if r0["weights"] == "constant" else f"sigma={r0['sigma']}"
    ax.set_title(f"{r0['method']}, {model}, d={r0['d']}, {r0['trajectories']} trajectories, "
                 f"L={r0['layers']}, T={float(r0['horizon']):g}\n"
                 "solid: antipodal (+-2 s.e.), dashed: single, dotted: undecided", fontsize=9)
    ax.legend(fontsize=7, ncol=2)

    top = max(float(r["beta"]) for r in rows)
    width = 0.1 / len(ns)  # narrow bars side by side: k/n of different n can be close
    for k, (n, color) in enumerate(zip(ns, colors, strict=True)):
        r = next(r for r in rows if int(r["tokens"]) == n and float(r["beta"]) == top)
        counts = minority_counts(r["minority_counts"])
        total = sum(counts.values())
        if total == 0:
            continue
        sizes = np.array(sorted(counts))
        bx.bar(sizes / n + (k - (len(ns) - 1) / 2) * width,
               [counts[s] / total for s in sizes], width=width, color=color,
               label=f"n={n} ({total} antipodal)")
    bx.set_xlabel("size of the smaller cluster / n")
    bx.set_ylabel("share of antipodal trajectories")
    bx.set_title(f"cluster sizes of antipodal formations at beta={top:g}", fontsize=9)
    bx.set_xlim(0, 0.6)
    bx.legend(fontsize=8)
    return save(fig, path)
