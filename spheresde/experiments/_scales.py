"""Sizes of the experiments: ``quick`` (minutes on a laptop CPU), ``paper``, ``full`` and
``smoke``.

Each scale maps a sweep name (the stem of its files) to a spec. ``quick`` is what each
sub-command uses by default (the specs' defaults). The paper's Figure 3 uses 40,000
trajectories of the discrete network with L = 100 layers per unit depth-time and horizon
T = 500 (50,000 layers); ``quick`` replaces the network by the exact 1-D SDE of
rho = <X_1, X_2> (the same law in the limit L -> infinity), fewer trajectories, a coarser
step and a shorter horizon, and reports the undecided fraction this leaves. ``smoke``
runs the whole pipeline at toy sizes in seconds (tests, a first look); its numbers mean
little. Figure 2 (``train``) trains on scikit-learn's digits at quick and smoke scale; at
paper scale on CIFAR-10 when ``--data-dir`` holds it, else on Fashion-MNIST when it is
installed, else on the digits. ``paper`` is what the paper shows (Figures 2, 3 and 4,
the two-token Figure 4 beside its exact law, and formations of more than two tokens);
``full`` adds, at the same sizes, the project's studies beyond it: Figure 4 over n and d
(``dominance``), the constant-weight contrast of ``tokens`` and Figure 2 at the depths
4 to 64. ``full`` run into the directory of a finished ``paper`` run computes only what
``paper`` did not. :class:`~._reproduce.ReproduceSpec`, the spec of ``spheresde
reproduce``, names one of these scales.
"""

from __future__ import annotations

from dataclasses import replace

from ._dominance import DominanceSpec
from ._hybrid import HybridSpec
from ._phase import PhaseSpec
from ._tokens import TokensSpec
from ._train import TrainSpec
from .engine import ExperimentSpec


def _with_constant_weights(scale: dict[str, ExperimentSpec | None]) -> dict:
    # the deterministic model of earlier theory on the same grid, for contrast
    return {**scale, "tokens_constant": replace(scale["tokens"], weights="constant")}


QUICK = _with_constant_weights({
    "phase": PhaseSpec(),
    "phase_discrete": PhaseSpec(dims=(4, 8), betas=(0.5, 1.0, 1.5, 2.0, 3.0),
                                trajectories=400, layers=20, horizon=20.0, method="discrete"),
    "hybrid": HybridSpec(),
    "hybrid_two_tokens": HybridSpec(betas=(0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0), tokens=2,
                                    trajectories=1000, layers=20, method="reduced"),
    "dominance": DominanceSpec(),
    "tokens": TokensSpec(),
    "train": TrainSpec(),
})

PAPER = {
    "phase": PhaseSpec(betas=tuple(round(0.2 * k, 1) for k in range(1, 16)), trajectories=40_000,
                       layers=100, horizon=500.0, method="discrete"),
    "phase_discrete": None,  # the main Figure 3 is already the network at the paper's sizes
    "hybrid": HybridSpec(betas=tuple(0.5 * k for k in range(1, 13)),
                         eps=tuple(0.25 * k for k in range(1, 11)), trajectories=4000,
                         layers=100, horizon=500.0),
    "hybrid_two_tokens": HybridSpec(betas=tuple(0.5 * k for k in range(1, 13)),
                                    eps=tuple(0.25 * k for k in range(1, 11)), tokens=2,
                                    trajectories=40_000, layers=100, horizon=500.0,
                                    method="reduced"),
    "tokens": TokensSpec(tokens=(3, 4, 6, 8), betas=tuple(0.5 * k for k in range(1, 11)),
                         trajectories=4000, layers=100, horizon=500.0),
    # Figure 2 at the paper's depth, L = 16: on CIFAR-10 (--data-dir) or Fashion-MNIST
    # when at hand, else the digits (_reproduce.training_data)
    "train": TrainSpec(epochs=30),
}

FULL = _with_constant_weights({
    **PAPER,
    # the sweep of docs/theory/hybrid.rst: 45 min on one CPU core
    "dominance": DominanceSpec(
        tokens=(2, 3, 4, 8, 16), dims=(2, 3, 4),
        betas=(0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0),
        eps=(0.05, 0.0699, 0.0978, 0.137, 0.191, 0.267, 0.374, 0.523, 0.731, 1.02, 1.43, 2.0),
        trajectories=240, layers=10, horizon=20.0, horizon_scale=8.0, max_horizon=1000.0),
    # Figure 2 and the depth study (L = 16 first: the paper's, shared with ``paper``)
    "train": replace(PAPER["train"], layers=(16, 4, 8, 32, 64)),
})

SMOKE = _with_constant_weights({
    "phase": PhaseSpec(dims=(4, 6), betas=(0.5, 1.5, 3.0), trajectories=200, layers=10,
                       horizon=10.0),
    "phase_discrete": PhaseSpec(dims=(4,), betas=(1.0, 3.0), trajectories=50, layers=5,
                                horizon=5.0, method="discrete"),
    "hybrid": HybridSpec(betas=(1.0, 4.0), eps=(0.5, 1.5), trajectories=50, layers=5,
                         horizon=5.0),
    "hybrid_two_tokens": HybridSpec(betas=(1.0, 4.0), eps=(0.5, 1.5), tokens=2,
                                    trajectories=200, layers=10, horizon=10.0,
                                    method="reduced"),
    "dominance": DominanceSpec(tokens=(2, 3), betas=(1.0, 4.0), eps=(0.5, 1.0, 2.0),
                               trajectories=20, layers=5, horizon=4.0, horizon_scale=1.0,
                               max_horizon=8.0),
    "tokens": TokensSpec(tokens=(3, 4), betas=(1.0, 3.0), trajectories=50, layers=5,
                         horizon=5.0),
    "train": TrainSpec(weights=("constant", "random"), seeds=2, epochs=2, layers=(4,), dim=8),
})

SCALES = {"quick": QUICK, "paper": PAPER, "full": FULL, "smoke": SMOKE}
