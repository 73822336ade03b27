"""spheresde: stochastic differential equations on spheres, with symbolic verification.

``spheresde`` itself is the general sphere-SDE tool: geometry of the sphere, writing and
solving an SDE, weak extrapolation, first-passage times, exact samplers and the geodesic
solvers. The deep stochastic Transformer is :mod:`spheresde.transformer`, two tokens
:mod:`spheresde.two_token`, and the classifier of Figure 2 with its data
:mod:`spheresde.data`. The public API is re-exported explicitly; the modules behind it
are private. Importing ``spheresde`` does not import SymPy.
"""

import importlib as _importlib
import os as _os
import signal as _signal
import sys as _sys
import warnings as _warnings


def _interrupted_while_loading(signum, frame):  # pragma: no cover - run by a signal
    _sys.stderr.write("\nspheresde: interrupted while starting; nothing was computed\n")
    _sys.stderr.flush()
    _os._exit(130)


# The `spheresde` command imports this package (JAX, Diffrax, ...) for a second or two
# before any of its code runs. A Ctrl-C then would be a KeyboardInterrupt traceback, or
# land in JAX's garbage-collection callback and be ignored while the run goes on; nothing
# is computed yet, so it ends the process in one line. spheresde.cli.main puts back the
# default handler once it runs; an `import spheresde` from anything else is untouched.
if _os.path.basename(getattr(_sys.modules.get("__main__"), "__file__", "") or "") in (
        "spheresde", "spheresde-script.py"):
    _signal.signal(_signal.SIGINT, _interrupted_while_loading)

from ._brownian import WeakBrownianPath as WeakBrownianPath
from ._extrapolation import WeakExtrapolation as WeakExtrapolation
from ._extrapolation import extrapolated_expectation as extrapolated_expectation
from ._first_passage import ExitRegion as ExitRegion
from ._first_passage import FirstPassage as FirstPassage
from ._first_passage import extrapolated_exit_time as extrapolated_exit_time
from ._first_passage import first_passage as first_passage
from ._geometry import Euclidean as Euclidean
from ._geometry import Sphere as Sphere
from ._geometry import exp_map as exp_map
from ._geometry import geodesic_distance as geodesic_distance
from ._geometry import log_map as log_map
from ._geometry import norm_error as norm_error
from ._geometry import project_tangent as project_tangent
from ._geometry import retract as retract
from ._geometry import sample_uniform as sample_uniform
from ._samplers import sample_brownian_motion as sample_brownian_motion
from ._samplers import sample_von_mises_fisher as sample_von_mises_fisher
from ._sde import SphereSDE as SphereSDE
from ._solve import OffSphereWarning as OffSphereWarning
from ._solve import PrecisionWarning as PrecisionWarning
from ._solve import default_solver as default_solver
from ._solve import solve as solve
from ._solve import solve_batch as solve_batch
from ._solve import solver_convention as solver_convention
from .solvers import AbstractGeodesicSolver as AbstractGeodesicSolver
from .solvers import GeodesicEuler as GeodesicEuler
from .solvers import GeodesicHeun as GeodesicHeun
from .solvers import GeodesicItoHeun as GeodesicItoHeun
from .solvers import GeodesicMidpoint as GeodesicMidpoint
from .solvers import Retracted as Retracted

__version__ = "0.1.0"

# Imported on first use: each imports SymPy (through proofs_check).
_SUBMODULES = ("data", "transformer", "two_token")

# The names that moved to a namespace of their own, importable here for one release.
_MOVED = {
    "transformer": (
        "ANTIPODAL", "SINGLE", "UNDECIDED", "AbstractWeights", "ConstantWeights", "Hybrid",
        "NetworkResult", "OutcomeFractions", "PureNoise", "WeakErrors", "attention",
        "attention_weights", "classify", "cluster_sizes", "formation_lyapunov_minus",
        "formation_threshold", "outcome_fractions", "simulate_network", "to_sphere_sde",
        "transformer_sde", "weak_error_vs_layers"),
    "data": (
        "ClassifierEvaluation", "DatasetError", "ImageData", "TransformerClassifier",
        "classifier_loss", "classifier_optimizer", "evaluate_classifier",
        "evaluate_classifiers", "init_values", "load_cifar10", "load_dataset", "load_digits",
        "load_fashion_mnist", "patchify", "read_idx", "stack_runs", "train_epoch",
        "train_epochs"),
}
_NEW_HOME = {name: module for module, names in _MOVED.items() for name in names}


def __getattr__(name: str):
    if name in _SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    if name in _NEW_HOME:
        home = f"{__name__}.{_NEW_HOME[name]}"
        _warnings.warn(f"spheresde.{name} has moved to {home}.{name}; import it from "
                      f"{home} (the old name goes in the next release)",
                      DeprecationWarning, stacklevel=2)
        return getattr(_importlib.import_module(home), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_SUBMODULES])
