"""Figure 3: probability that two uniform tokens converge to an antipodal pair."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ._sweep import Sweep, point_seed

COLUMNS = (
    "d", "beta", "method", "trajectories", "p_antipodal", "p_single", "p_undecided", "stderr",
    "p_exact", "beta_c", "layers", "horizon", "sigma", "tol",
)


def _point(params: dict, point: dict) -> dict:
    import jax

    from .. import two_token
    from ._simulate import exact_two_tokens, simulate

    d, beta = point["d"], point["beta"]
    exact = exact_two_tokens(beta, d, sigma=params["sigma"])
    if params["method"] == "exact":
        result = exact
    else:
        key = jax.random.PRNGKey(point_seed(params["seed"], point))
        result = simulate(
            params["method"], key, tokens=2, beta=beta, d=d, sigma=params["sigma"],
            trajectories=params["trajectories"], layers=params["layers"],
            horizon=params["horizon"], tol=params["tol"],
        )
    return {
        **result.fractions(),
        "method": params["method"],
        "trajectories": result.trajectories,
        "stderr": result.stderr(),
        "p_exact": exact.antipodal,
        "beta_c": float(two_token.critical_beta(d)) if d >= 3 else 0.0,
        **{k: params[k] for k in ("layers", "horizon", "sigma", "tol")},
    }


def run_phase(out: str | os.PathLike, params: dict, *, quiet: bool = False,
              overwrite: bool = False, name: str = "phase") -> dict:
    """Sweep ``params["dims"] x params["betas"]`` into ``out/NAME.csv`` and draw ``NAME.png``."""
    params = dict(params)
    if params["method"] == "exact":
        # the limit law has no sampling parameters: keep them out of the resume identity
        for k in ("trajectories", "layers", "horizon", "tol"):
            params.pop(k, None)
        params.update(trajectories=0, layers=0, horizon=0.0, tol=0.0)
    sweep = Sweep(out, name, params, COLUMNS, ("d", "beta"), overwrite=overwrite)
    points = [{"d": d, "beta": b} for d in params["dims"] for b in params["betas"]]
    rows = sweep.run(points, lambda p: _point(params, p), quiet=quiet,
                     desc=f"{name} ({params['method']})")
    png = plot_phase(rows, Path(out) / f"{name}.png", sigma=params["sigma"])
    return {"csv": sweep.csv_path, "json": sweep.meta_path, "png": png, "rows": rows}


def plot_phase(rows: list[dict], path: Path, *, sigma: float = 1.0) -> Path:
    """Monte Carlo points with error bars (+-2 stderr), exact curves, dashed beta_c(d)."""
    from .. import two_token
    from ._plotting import plt, save

    dims = sorted({int(r["d"]) for r in rows})
    betas = sorted({float(r["beta"]) for r in rows})
    method = rows[0]["method"]
    fine = np.linspace(min([*betas, 0.0]), max(betas), 120)
    colors = plt.cm.viridis(np.linspace(0.0, 0.9, len(dims)))
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    top = 0.0
    for d, color in zip(dims, colors, strict=True):
        curve = two_token.antipodal_probability(fine, d, sigma=sigma)
        ax.plot(fine, curve, color=color, lw=1.6, label=f"d={d}")
        top = max(top, float(np.max(curve)))
        if d >= 3:
            ax.axvline(float(two_token.critical_beta(d)), color=color, ls="--", lw=1)
        if method != "exact":
            mine = [r for r in rows if int(r["d"]) == d]
            x = np.array([float(r["beta"]) for r in mine])
            y = np.array([float(r["p_antipodal"]) for r in mine])
            err = 2 * np.array([float(r["stderr"]) for r in mine])
            und = np.array([float(r["p_undecided"]) for r in mine])
            ax.errorbar(x, y, yerr=err, fmt="o", ms=4, color=color, capsize=2)
            # the undecided mass could still go either way: show it as an upward band
            ax.vlines(x, y, y + und, color=color, lw=4, alpha=0.25)
            top = max(top, float(np.max(y + np.maximum(und, err))))
    ax.set_xlabel(r"temperature $\beta$")
    ax.set_ylabel("P(antipodal)")
    ax.set_ylim(-0.02, min(1.02, 1.15 * top + 0.02))
    what = "exact limit (scale function)" if method == "exact" else (
        f"{method} Monte Carlo, {rows[0]['trajectories']} trajectories, L={rows[0]['layers']}, "
        f"T={float(rows[0]['horizon']):g}\n(points +-2 s.e., shaded: undecided; lines: exact "
        "limit t -> inf)")
    ax.set_title(f"Two tokens, sigma={sigma:g}: {what}\ndashed: "
                 r"$\beta_c(d)=\frac{1}{2}\cosh^{-1}(d-2)$", fontsize=9)
    ax.legend(fontsize=8, ncol=2)
    return save(fig, path)
