"""Figure 4: dominant outcome of the hybrid dynamics V = (mu/sqrt L) Id + eps G."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ._sweep import Sweep, point_seed

COLUMNS = (
    "beta", "eps", "tokens", "p_single", "p_antipodal", "p_undecided", "dominant", "stderr",
    "p_exact", "d", "mu", "method", "trajectories", "layers", "horizon", "tol",
)


def check(params: dict) -> None:
    from . import BadParameters

    if params["method"] in ("exact", "reduced") and params["tokens"] != 2:
        raise BadParameters(
            f"--method {params['method']} describes two tokens only (got --tokens "
            f"{params['tokens']}); use --method particles or discrete"
        )


def _point(params: dict, point: dict) -> dict:
    import jax

    from ._simulate import exact_two_tokens, simulate

    beta, eps, n, d, mu = point["beta"], point["eps"], params["tokens"], params["dim"], params["mu"]
    exact = exact_two_tokens(beta, d, mu=mu, eps=eps) if n == 2 else None
    if params["method"] == "exact":
        result = exact
    else:
        key = jax.random.PRNGKey(point_seed(params["seed"], point))
        result = simulate(
            params["method"], key, tokens=n, beta=beta, d=d, mu=mu, eps=eps,
            trajectories=params["trajectories"], layers=params["layers"],
            horizon=params["horizon"], tol=params["tol"],
        )
    return {
        **result.fractions(),
        "dominant": result.dominant(),
        "stderr": result.stderr(),
        "p_exact": exact.antipodal if exact is not None else float("nan"),
        "tokens": n, "d": d, "mu": mu, "method": params["method"],
        "trajectories": result.trajectories,
        **{k: params[k] for k in ("layers", "horizon", "tol")},
    }


def run_hybrid(out: str | os.PathLike, params: dict, *, quiet: bool = False,
               overwrite: bool = False, name: str = "hybrid") -> dict:
    """Sweep ``betas x eps`` into ``out/NAME.csv`` and draw ``NAME.png``."""
    check(params)
    sweep = Sweep(out, name, params, COLUMNS, ("beta", "eps"), overwrite=overwrite)
    points = [{"beta": b, "eps": e} for b in params["betas"] for e in params["eps"]]
    rows = sweep.run(points, lambda p: _point(params, p), quiet=quiet,
                     desc=f"{name} ({params['method']}, n={params['tokens']})")
    png = plot_hybrid(rows, Path(out) / f"{name}.png", d=params["dim"], mu=params["mu"])
    return {"csv": sweep.csv_path, "json": sweep.meta_path, "png": png, "rows": rows}


def thresholds(betas, d: int, mu: float) -> dict[str, np.ndarray]:
    """The paper's eps = sqrt(2 e^-beta) and the exact linearized threshold.

    ``linear`` is where the antipodal pair of two tokens starts to attract (linearization at
    rho = -1, derived in proofs_check); ``inf`` below beta_c(d).
    """
    import warnings

    from .. import two_token

    betas = np.asarray(betas, dtype=float)
    with warnings.catch_warnings(), np.errstate(all="ignore"):  # inf marks "no threshold"
        warnings.simplefilter("ignore", RuntimeWarning)
        return {
            "paper": np.asarray(two_token.paper_hybrid_threshold(betas), dtype=float),
            "linear": np.asarray(two_token.hybrid_threshold(betas, d, mu=mu), dtype=float),
        }


def exact_map(betas, eps, d: int, mu: float) -> np.ndarray:
    """Exact P(antipodal) of two uniform tokens on the grid ``eps x betas`` (one call)."""
    from .. import two_token

    b, e = np.meshgrid(np.asarray(betas, float), np.asarray(eps, float))
    return np.asarray(two_token.antipodal_probability(b, d, mu=mu, eps=e), dtype=float)


def plot_hybrid(rows: list[dict], path: Path, *, d: int, mu: float) -> Path:
    """Cells coloured by the dominant outcome (shade = its fraction) with three boundaries."""
    from matplotlib.colors import to_rgb
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from ._plotting import ANTIPODAL, SINGLE, UNDECIDED, plt, save

    betas = sorted({float(r["beta"]) for r in rows})
    eps = sorted({float(r["eps"]) for r in rows})
    cell = {(float(r["beta"]), float(r["eps"])): r for r in rows}
    colour = {"single": SINGLE, "antipodal": ANTIPODAL, "undecided": UNDECIDED}
    image = np.ones((len(eps), len(betas), 3))
    for i, e in enumerate(eps):
        for j, b in enumerate(betas):
            r = cell[(b, e)]
            share = float(r[f"p_{r['dominant']}"])
            # white at share 1/3 (no majority), full colour at share 1
            w = np.clip((share - 1 / 3) / (2 / 3), 0, 1)
            image[i, j] = (1 - w) * np.ones(3) + w * np.array(to_rgb(colour[r["dominant"]]))

    def edges(v):
        v = np.asarray(v)
        if len(v) == 1:
            return np.array([v[0] - 0.5, v[0] + 0.5])
        mid = (v[1:] + v[:-1]) / 2
        return np.concatenate([[2 * v[0] - mid[0]], mid, [2 * v[-1] - mid[-1]]])

    fig, ax = plt.subplots(figsize=(10, 5.2))
    ax.pcolormesh(edges(betas), edges(eps), image, shading="flat")
    fine = np.linspace(max(min(betas), 1e-3), max(betas), 200)
    th = thresholds(fine, d, mu)
    handles = [Patch(color=SINGLE, label="single cluster dominant"),
               Patch(color=ANTIPODAL, label="antipodal dominant")]
    ax.plot(fine, th["paper"], "k--", lw=1.8)
    handles.append(Line2D([], [], color="k", ls="--",
                          label=r"paper: $\varepsilon=\sqrt{2e^{-\beta}}$"))
    ax.plot(fine, th["linear"], color="k", lw=1.8)
    handles.append(Line2D([], [], color="k",
                          label=r"antipodal pair attracts above (linearization, proofs_check)"))
    n = int(rows[0]["tokens"])
    gb = np.linspace(min(betas), max(betas), 48)
    ge = np.linspace(min(eps), max(eps), 48)
    exact = exact_map(gb, ge, d, mu)
    if exact.max() > 0.5:
        ax.contour(gb, ge, exact, levels=[0.5], colors="orange", linewidths=1.8)
        handles.append(Line2D([], [], color="orange",
                              label=r"exact $P(\mathrm{antipodal})=1/2$, two uniform tokens"))
    elif n == 2:
        handles.append(Line2D([], [], color="none", label="exact: "
                              rf"$P(\mathrm{{antipodal}})\leq{exact.max():.2f}$ on this plane"))
    ax.set_xlim(edges(betas)[0], edges(betas)[-1])
    ax.set_ylim(edges(eps)[0], edges(eps)[-1])
    ax.set_xlabel(r"temperature $\beta$")
    ax.set_ylabel(r"noise $\varepsilon$")
    r0 = rows[0]
    ax.set_title(
        f"Hybrid dynamics, n={n}, d={d}, mu={mu:g}: {r0['method']}"
        + ("" if r0["method"] == "exact" else
           f", {r0['trajectories']} trajectories, L={r0['layers']}, T={float(r0['horizon']):g}")
        + "\nshade: fraction of the dominant outcome (white = no majority)", fontsize=9)
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return save(fig, path)
