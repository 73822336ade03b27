"""The parameters several experiments share: keyword arguments of
:func:`~spheresde.experiments.param`, so that their help text and check are written once
(``trajectories: int = param(400, **SAMPLES)``)."""

from __future__ import annotations

from .engine import at_least, greater_than

BETAS = {"help": "inverse temperatures beta: a list 0.5,1,2 or start:stop:num",
         "check": at_least(0.0)}
SAMPLES = {"help": "Monte Carlo samples per grid point", "check": greater_than(0)}
LAYERS = {"help": "layers per unit of depth-time; step dt = 1/L", "check": greater_than(0),
          "metavar": "L"}
HORIZON = {"help": "depth-time horizon; round(T*L) layers in all", "check": greater_than(0.0),
           "metavar": "T"}
TOL_MIN = 2.0**-53  # below it 1 - tol rounds to 1 in float64: artanh(1 - tol) is infinite
TOL = {"help": "outcome tolerance on inner products",
       "check": lambda v: None if TOL_MIN <= v < 1 else
       f"must be in [{TOL_MIN:.2g}, 1) (below, 1 - tol is 1 in float64 and the outcome "
       "threshold artanh(1 - tol) is infinite)"}
SIGMA = {"help": "noise level sigma of the value matrices", "check": greater_than(0.0)}
SEED = {"help": "PRNG seed; every grid point derives its key from it", "check": at_least(0)}
def _registered_normalization(name: str) -> str | None:
    from proofs_check.normalizations import names

    known = names(numeric=True)
    return None if name in known else (
        f"must be a registered normalization: one of {', '.join(known)} (a new one is "
        "registered with spheresde.transformer.register_normalization)")


NORM = {"help": "normalization of every layer: rms (the paper's Y/|Y|), layer (LayerNorm: "
                "centre, then normalize) or any registered one",
        "check": _registered_normalization, "added": True}
LAYER = {"help": "the layer: paper, two_heads, mlp, per_token (registered) or "
                 "MODULE:FUNCTION, a function of the tokens written with proofs_check.engine "
                 "and importable from the working directory; beta, eps (sigma) and mu bind to "
                 "the sweep's values. Another layer than the paper's runs method exact (its "
                 "derived law) or discrete (its network, no absorption)",
         "added": True}
ABSORB = {"help": "early absorption bound: a trajectory (two tokens; n tokens near the single "
                  "cluster) stops once its chance of returning to the classification "
                  "boundary is below this; constant weights: once it is certain "
                  "(0: off; see the scaling docs)",
          "check": lambda v: None if 0 <= v < 1 else "must be in [0, 1)"}


