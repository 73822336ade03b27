"""Sizes of the experiments: ``quick`` (minutes on a laptop CPU) and ``paper``.

``quick`` is also what each sub-command uses by default. The paper's Figure 3 uses
40,000 trajectories of the discrete network with L = 100 layers per unit depth-time and
horizon T = 500 (50,000 layers); ``quick`` replaces the network by the exact 1-D SDE of
rho = <X_1, X_2> (the same law in the limit L -> infinity), fewer trajectories, a coarser
step and a shorter horizon, and reports the undecided fraction this leaves.
"""

from __future__ import annotations

QUICK = {
    "phase": {
        "dims": [4, 5, 6, 7, 8, 9, 10],
        "betas": [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0],
        "trajectories": 4000,
        "layers": 20,
        "horizon": 100.0,
        "method": "reduced",
    },
    "phase_discrete": {
        "dims": [4, 8],
        "betas": [0.5, 1.0, 1.5, 2.0, 3.0],
        "trajectories": 400,
        "layers": 20,
        "horizon": 20.0,
        "method": "discrete",
    },
    "hybrid": {
        "betas": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        "eps": [0.25, 0.5, 1.0, 1.5, 2.0],
        "tokens": 3,
        "dim": 3,
        "trajectories": 400,
        "layers": 10,
        "horizon": 50.0,
        "method": "discrete",
    },
    "hybrid_two_tokens": {
        "betas": [0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        "eps": [0.25, 0.5, 1.0, 1.5, 2.0],
        "tokens": 2,
        "dim": 3,
        "trajectories": 1000,
        "layers": 20,
        "horizon": 50.0,
        "method": "reduced",
    },
    "tokens": {
        "tokens": [3, 4, 6],
        "betas": [0.5, 1.0, 2.0, 3.0, 4.0],
        "dim": 3,
        "trajectories": 400,
        "layers": 20,
        "horizon": 30.0,
        "method": "discrete",
    },
}

PAPER = {
    "phase": {
        "dims": [4, 5, 6, 7, 8, 9, 10],
        "betas": [0.25 * k for k in range(1, 13)],
        "trajectories": 40_000,
        "layers": 100,
        "horizon": 500.0,
        "method": "discrete",
    },
    "phase_discrete": None,
    "hybrid": {
        "betas": [0.5 * k for k in range(1, 13)],
        "eps": [0.25 * k for k in range(1, 11)],
        "tokens": 3,
        "dim": 3,
        "trajectories": 4000,
        "layers": 100,
        "horizon": 500.0,
        "method": "discrete",
    },
    "hybrid_two_tokens": {
        "betas": [0.5 * k for k in range(1, 13)],
        "eps": [0.25 * k for k in range(1, 11)],
        "tokens": 2,
        "dim": 3,
        "trajectories": 40_000,
        "layers": 100,
        "horizon": 500.0,
        "method": "reduced",
    },
    "tokens": {
        "tokens": [3, 4, 6, 8],
        "betas": [0.5 * k for k in range(1, 11)],
        "dim": 3,
        "trajectories": 4000,
        "layers": 100,
        "horizon": 500.0,
        "method": "discrete",
    },
}

# seconds: the whole pipeline at toy sizes (tests, a first look); its numbers mean little
SMOKE = {
    "phase": {"dims": [4, 6], "betas": [0.5, 1.5, 3.0], "trajectories": 200, "layers": 10,
              "horizon": 10.0, "method": "reduced"},
    "phase_discrete": {"dims": [4], "betas": [1.0, 3.0], "trajectories": 50, "layers": 5,
                       "horizon": 5.0, "method": "discrete"},
    "hybrid": {"betas": [1.0, 4.0], "eps": [0.5, 1.5], "tokens": 3, "dim": 3,
               "trajectories": 50, "layers": 5, "horizon": 5.0, "method": "discrete"},
    "hybrid_two_tokens": {"betas": [1.0, 4.0], "eps": [0.5, 1.5], "tokens": 2, "dim": 3,
                          "trajectories": 200, "layers": 10, "horizon": 10.0,
                          "method": "reduced"},
    "tokens": {"tokens": [3, 4], "betas": [1.0, 3.0], "dim": 3, "trajectories": 50,
               "layers": 5, "horizon": 5.0, "method": "discrete"},
}

for _scale in (QUICK, PAPER, SMOKE):
    # the deterministic model of earlier theory on the same grid, for contrast
    _scale["tokens_constant"] = {**_scale["tokens"], "weights": "constant"}

SCALES = {"quick": QUICK, "paper": PAPER, "smoke": SMOKE}
