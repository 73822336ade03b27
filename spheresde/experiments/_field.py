"""Figure 1: the attention field on the circle, before and after the tangent projection."""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ._plotting import ANTIPODAL, SINGLE, save, subplots
from .engine import (
    AbstractResult,
    BadParameters,
    ExperimentSpec,
    Plan,
    RunOptions,
    Section,
    atomic_write_text,
    param,
)

FIELD_BETA_MAX = 5000.0
"""The largest beta of Figure 1: beyond about 5590 a query's attention on the other tokens
underflows (the computation is in float32) and the tangent field is exactly zero."""


@dataclass(frozen=True)
class FieldSpec(ExperimentSpec):
    """Figure 1: the attention field on the circle (d = 2, Q = K = Id, tokens (x, X^1, X^2))."""

    command: ClassVar[str] = "field"
    summary: ClassVar[str] = "Figure 1: the attention field on the circle"
    report_rank: ClassVar[int] = 10

    beta: float = param(
        1.0, "inverse temperature beta of the attention",
        check=lambda v: None if 0 <= v <= FIELD_BETA_MAX else
        f"must be in [0, {FIELD_BETA_MAX:g}] (beyond, the attention on the other tokens "
        "underflows and the tangent field is zero)")

    def run(self, out: str | os.PathLike, options: RunOptions | None = None, *,
            name: str | None = None) -> FieldResult:
        """:func:`run_field` (no store: ``options`` and ``name`` are not used)."""
        return run_field(self, out)

    def plan(self, out: str | os.PathLike, options: RunOptions | None = None, *,
             name: str | None = None) -> Plan:
        """One figure, no sampling."""
        return Plan([f"field: {self.command_line()}", "  one figure, no sampling: seconds"],
                    0.0)

    @classmethod
    def report_section(cls, results: Mapping[str, Any], notes: Mapping[str, str]) -> Section:
        """Figure 1 (:func:`field_section`)."""
        return field_section(results)


@dataclass(frozen=True)
class FieldResult(AbstractResult):
    """Figure 1 as drawn: its spec, its files and the largest normal component of the
    field before and after the tangent projection."""

    spec: FieldSpec
    png: Path
    csv: Path
    max_normal_before: float
    max_normal_after: float

    def summary(self) -> list[str]:
        """``wrote field.png and field.csv``."""
        return [f"wrote {self.png} and {self.csv}"]


def attention_field(beta: float, others: np.ndarray, queries: np.ndarray):
    r"""Unnormalized field :math:`A^U_\beta(x, \mathbf X)` and its projection :math:`P_x A^U`.

    The token set is :math:`\mathbf X = (x, X^1, \dots)`: the query ``x`` is itself a
    token, as in the paper's Figure 1, so each query sees a different configuration.

    Returns two arrays of the shape of ``queries``.
    """
    import jax
    import jax.numpy as jnp

    from .. import project_tangent
    from ..transformer._attention import attention

    others = jnp.asarray(others, dtype=float)

    def one(x):
        tokens = jnp.concatenate([x[None], others])
        return attention(tokens, beta, queries=x[None])[0]

    queries = jnp.asarray(queries, dtype=float)
    field = jax.vmap(one)(queries)
    return np.asarray(field), np.asarray(project_tangent(queries, field))


def run_field(
    spec: FieldSpec,
    out: str | os.PathLike,
    *,
    angles: tuple[float, ...] = (0.35 * np.pi, 1.15 * np.pi),
    points: int = 32,
) -> FieldResult:
    """Draw ``out/field.png`` (two panels) and write the sampled field to ``out/field.csv``.

    ``angles`` place the fixed tokens :math:`X^1, X^2` on the circle (d = 2); Q = K = Id.
    """
    beta = spec.beta
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    theta = np.linspace(0.0, 2 * np.pi, points, endpoint=False)
    queries = np.stack([np.cos(theta), np.sin(theta)], axis=-1)
    others = np.stack([np.cos(angles), np.sin(angles)], axis=-1)
    field, tangent = attention_field(beta, others, queries)
    if not (np.isfinite(field).all() and np.isfinite(tangent).all() and np.any(tangent)):
        raise BadParameters(f"`beta={beta:g}`: the attention field is not finite or its "
                            "tangent projection is zero at these tokens; use a smaller beta")

    buf = io.StringIO()
    buf.write("theta,x,y,A_x,A_y,PA_x,PA_y,A_normal\n")
    for t, q, a, p in zip(theta, queries, field, tangent, strict=True):
        vals = (t, *q, *a, *p, float(q @ a))
        buf.write(",".join(repr(float(v)) for v in vals) + "\n")
    atomic_write_text(out / "field.csv", buf.getvalue())

    fig, axes = subplots(1, 2, figsize=(9.5, 4.8))
    circle = np.linspace(0, 2 * np.pi, 400)
    titles = (
        r"unnormalized $A^{U}_\beta(x, \mathbf{X})$",
        r"tangent projection $P^{\perp}_x\,[A^{U}_\beta(x, \mathbf{X})]$",
    )
    for ax, vec, title in zip(axes, (field, tangent), titles, strict=True):
        # each panel on its own scale (longest arrow 0.45): the projection is much shorter
        scale = float(np.max(np.linalg.norm(vec, axis=-1))) / 0.45
        ax.plot(np.cos(circle), np.sin(circle), color="0.6", lw=1)
        ax.quiver(
            queries[:, 0], queries[:, 1], vec[:, 0], vec[:, 1],
            color=ANTIPODAL, angles="xy", scale_units="xy", scale=scale, width=0.006,
        )
        ax.scatter(others[:, 0], others[:, 1], s=90, color=SINGLE, zorder=3,
                   label=r"fixed tokens $X^1, X^2$")
        for k, (px, py) in enumerate(others, start=1):
            ax.annotate(f"$X^{k}$", (px, py), xytext=(1.18 * px, 1.18 * py), ha="center",
                        va="center", fontsize=12)
        ax.set_title(title + f"\n(arrows scaled by {1 / scale:.2f})", fontsize=10)
        ax.set_aspect("equal")
        ax.set_xlim(-1.6, 1.6)
        ax.set_ylim(-1.6, 1.6)
        ax.set_xticks([])
        ax.set_yticks([])
    axes[0].legend(loc="lower left", fontsize=8)
    fig.suptitle(rf"Attention field on the circle, $d=2$, $\beta={beta:g}$, $Q=K=\mathrm{{Id}}$, "
                 r"$\mathbf{X}=(x, X^1, X^2)$")
    png = save(fig, out / "field.png")
    return FieldResult(spec, png, out / "field.csv",
                       float(np.max(np.abs(np.sum(field * queries, axis=-1)))),
                       float(np.max(np.abs(np.sum(tangent * queries, axis=-1)))))


def field_section(results: Mapping[str, Any]) -> Section:
    """The section of Figure 1: the normal components before and after the projection."""
    field = results["field"]
    text = "\n".join([
        "## Figure 1: the attention field on the circle",
        "",
        "**Paper.** Unnormalized attention A^U_beta(X, **X**) against its tangent projection "
        "P_X[A^U]: the normalization keeps the flow on the sphere (d = 2, beta = 1, "
        "Q = K = Id, **X** = (X, X^1, X^2)).",
        "",
        f"**Ours.** Largest normal component |<x, A^U(x)>| = {field.max_normal_before:.3f} "
        f"before and {field.max_normal_after:.1e} after the projection "
        "(`spheresde.transformer.attention`, `spheresde.project_tangent`).",
        "",
        "![Figure 1](field.png)",
        "",
    ])
    return text, [("Figure 1 (attention field)", "reproduced (field.png)")]
