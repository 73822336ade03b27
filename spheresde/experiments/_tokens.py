"""Antipodal formations of n > 2 tokens: outcome fractions and the sizes of the two clusters."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from .._outcomes import DEFAULT_TOL
from .._weights import ConstantWeights, PureNoise
from ._spec import (
    ABSORB,
    BETAS,
    HORIZON,
    LAYERS,
    SAMPLES,
    SEED,
    SIGMA,
    TOL,
    ExperimentSpec,
    at_least,
    at_least_one_layer,
    param,
)
from ._store import chunk_seed
from ._sweep import RunOptions, SweepResult, run_options, run_sweep


@dataclass(frozen=True)
class TokensSpec(ExperimentSpec):
    """Antipodal formations of n > 2 tokens over numbers of tokens x betas.

    The defaults are the ``quick`` sizes (the discrete network in d = 3).
    """

    command: ClassVar[str] = "tokens"
    summary: ClassVar[str] = "antipodal formations of n > 2 tokens"
    rules: ClassVar[tuple] = (at_least_one_layer,)

    tokens: tuple[int, ...] = param((3, 4, 6), "numbers of tokens n, e.g. 3,4,8",
                                    check=at_least(2))
    betas: tuple[float, ...] = param((0.5, 1.0, 2.0, 3.0, 4.0), **BETAS)
    dim: int = param(3, "token dimension d", check=at_least(2))
    sigma: float = param(1.0, **SIGMA)
    trajectories: int = param(400, **SAMPLES)
    layers: int = param(20, **LAYERS)
    horizon: float = param(30.0, **HORIZON)
    tol: float = param(DEFAULT_TOL, **TOL)
    absorb: float = param(1e-6, **ABSORB)
    method: Literal["particles", "discrete"] = param(
        "discrete", "particles: the SDE on the sphere; discrete: the network")
    weights: Literal["noise", "constant"] = param(
        "noise", "noise: iid N(0, sigma^2) value matrices; constant: V = Id in every layer, "
        "the deterministic model (horizon in its own time T sqrt(L), see "
        "spheresde.ConstantWeights)")
    seed: int = param(0, **SEED)

    def points(self) -> list[dict[str, Any]]:
        """The grid, token-count-major: ``{"tokens": n, "beta": beta}``."""
        return [{"tokens": n, "beta": b} for n in self.tokens for b in self.betas]


@dataclass(frozen=True)
class TokensRow:
    """One grid point: outcome fractions and the sizes of the two clusters."""

    tokens: int
    beta: float
    p_single: float
    p_antipodal: float
    p_undecided: float
    stderr: float  # binomial standard error of p_antipodal
    minority_mean: float  # mean size of the smaller cluster over antipodal samples (nan: none)
    # number of antipodal samples whose smaller cluster has k tokens, for k = 1..n//2
    minority_counts: tuple[int, ...]
    trajectories: int


def _chunk(spec: TokensSpec, point: dict, k: int, size: int) -> dict:
    """Counts of chunk ``k`` (``size`` trajectories) of ``point``."""
    import jax

    from ._simulate import simulate_counts

    return simulate_counts(
        spec.method, jax.random.PRNGKey(chunk_seed(spec.seed, point, k)),
        tokens=point["tokens"], beta=point["beta"], d=spec.dim,
        weights=ConstantWeights() if spec.weights == "constant" else PureNoise(spec.sigma),
        trajectories=size, layers=spec.layers, horizon=spec.horizon, tol=spec.tol,
        absorb=spec.absorb)


def _finish(spec: TokensSpec, point: dict, counts: list[dict]) -> TokensRow:
    from .._outcomes import fractions_from_counts
    from ._simulate import add_counts

    total = add_counts(counts)
    fractions = fractions_from_counts(*total["outcomes"])
    by_size = np.asarray(total["minority"])
    antipodal = int(by_size.sum())
    return TokensRow(
        tokens=point["tokens"], beta=point["beta"], p_single=float(fractions.single),
        p_antipodal=float(fractions.antipodal), p_undecided=float(fractions.undecided),
        stderr=float(fractions.antipodal_se),
        minority_mean=float(by_size @ np.arange(by_size.size) / antipodal) if antipodal
        else float("nan"),
        minority_counts=tuple(int(c) for c in by_size[1:]), trajectories=fractions.count,
    )


def run_tokens(spec: TokensSpec, out: str | os.PathLike, *, quiet: bool = False,
               overwrite: bool = False, name: str = "tokens",
               options: RunOptions | None = None) -> SweepResult[TokensRow] | list[str]:
    """Sweep ``tokens x betas`` into ``out/NAME.csv`` and draw ``NAME.png``
    (``options``: chunks, executor, dry run; :class:`RunOptions`)."""
    return run_sweep(spec, out, TokensRow, _chunk, _finish, plot_tokens, name=name,
                     desc=f"{name} ({spec.method})",
                     options=run_options(options, quiet=quiet, overwrite=overwrite))


def plot_tokens(rows: list[TokensRow], spec: TokensSpec, path: Path) -> Path:
    """Left: outcome fractions against beta per n; right: smaller-cluster sizes at top beta."""
    from ._plotting import colors, save, subplots

    ns = sorted({r.tokens for r in rows})
    palette = colors("plasma", 0.0, 0.8, len(ns))
    fig, (ax, bx) = subplots(1, 2, figsize=(11, 4.4))
    for n, color in zip(ns, palette, strict=True):
        mine = sorted((r for r in rows if r.tokens == n), key=lambda r: r.beta)
        b = np.array([r.beta for r in mine])
        pa = np.array([r.p_antipodal for r in mine])
        ax.errorbar(b, pa, yerr=2 * np.array([r.stderr for r in mine]), color=color,
                    marker="o", ms=4, capsize=2, label=f"n={n} antipodal")
        ax.plot(b, [r.p_single for r in mine], color=color, ls="--", marker="s", ms=3,
                label=f"n={n} single")
        ax.plot(b, [r.p_undecided for r in mine], color=color, ls=":", lw=1)
    ax.set_xlabel(r"inverse temperature $\beta$")
    ax.set_ylabel("fraction of trajectories")
    ax.set_ylim(-0.02, 1.02)
    model = "V = Id (constant)" if spec.weights == "constant" else f"sigma={spec.sigma:g}"
    ax.set_title(f"{spec.method}, {model}, d={spec.dim}, {spec.trajectories} trajectories, "
                 f"L={spec.layers}, T={spec.horizon:g}\n"
                 "solid: antipodal (+-2 s.e.), dashed: single, dotted: undecided", fontsize=9)
    ax.legend(fontsize=7, ncol=2)

    top = max(r.beta for r in rows)
    width = 0.1 / len(ns)  # narrow bars side by side: k/n of different n can be close
    for k, (n, color) in enumerate(zip(ns, palette, strict=True)):
        r = next(r for r in rows if r.tokens == n and r.beta == top)
        counts = np.array(r.minority_counts)
        total = int(counts.sum())
        if total == 0:
            continue
        sizes = np.arange(1, counts.size + 1)
        bx.bar(sizes / n + (k - (len(ns) - 1) / 2) * width, counts / total, width=width,
               color=color,
               label=f"n={n} ({total} antipodal)")
    bx.set_xlabel("size of the smaller cluster / n")
    bx.set_ylabel("share of antipodal trajectories")
    bx.set_title(f"cluster sizes of antipodal formations at beta={top:g}", fontsize=9)
    bx.set_xlim(0, 0.6)
    bx.legend(fontsize=8)
    return save(fig, path)
