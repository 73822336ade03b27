"""spheresde: stochastic differential equations on spheres, with symbolic verification.

The public API is re-exported here explicitly; the modules behind it are private.
"""

from . import two_token as two_token
from ._attention import attention as attention
from ._attention import attention_weights as attention_weights
from ._brownian import WeakBrownianPath as WeakBrownianPath
from ._classifier import ClassifierEvaluation as ClassifierEvaluation
from ._classifier import TransformerClassifier as TransformerClassifier
from ._classifier import classifier_loss as classifier_loss
from ._classifier import classifier_optimizer as classifier_optimizer
from ._classifier import evaluate_classifier as evaluate_classifier
from ._classifier import evaluate_classifiers as evaluate_classifiers
from ._classifier import init_values as init_values
from ._classifier import stack_runs as stack_runs
from ._classifier import train_epoch as train_epoch
from ._classifier import train_epochs as train_epochs
from ._codegen import to_sphere_sde as to_sphere_sde
from ._datasets import DatasetError as DatasetError
from ._datasets import ImageData as ImageData
from ._datasets import load_cifar10 as load_cifar10
from ._datasets import load_dataset as load_dataset
from ._datasets import load_digits as load_digits
from ._datasets import load_fashion_mnist as load_fashion_mnist
from ._datasets import patchify as patchify
from ._datasets import read_idx as read_idx
from ._extrapolation import WeakExtrapolation as WeakExtrapolation
from ._extrapolation import extrapolated_expectation as extrapolated_expectation
from ._first_passage import ExitRegion as ExitRegion
from ._first_passage import FirstPassage as FirstPassage
from ._first_passage import extrapolated_exit_time as extrapolated_exit_time
from ._first_passage import first_passage as first_passage
from ._formation import formation_lyapunov_minus as formation_lyapunov_minus
from ._formation import formation_threshold as formation_threshold
from ._geometry import (
    exp_map as exp_map,
)
from ._geometry import (
    geodesic_distance as geodesic_distance,
)
from ._geometry import (
    log_map as log_map,
)
from ._geometry import (
    norm_error as norm_error,
)
from ._geometry import (
    project_tangent as project_tangent,
)
from ._geometry import (
    retract as retract,
)
from ._geometry import (
    sample_uniform as sample_uniform,
)
from ._limit import transformer_sde as transformer_sde
from ._network import NetworkResult as NetworkResult
from ._network import simulate_network as simulate_network
from ._outcomes import ANTIPODAL as ANTIPODAL
from ._outcomes import SINGLE as SINGLE
from ._outcomes import UNDECIDED as UNDECIDED
from ._outcomes import OutcomeFractions as OutcomeFractions
from ._outcomes import classify as classify
from ._outcomes import cluster_sizes as cluster_sizes
from ._outcomes import outcome_fractions as outcome_fractions
from ._samplers import sample_brownian_motion as sample_brownian_motion
from ._samplers import sample_von_mises_fisher as sample_von_mises_fisher
from ._sde import SphereSDE as SphereSDE
from ._solve import OffSphereWarning as OffSphereWarning
from ._solve import PrecisionWarning as PrecisionWarning
from ._solve import default_solver as default_solver
from ._solve import solve as solve
from ._solve import solve_batch as solve_batch
from ._solve import solver_convention as solver_convention
from ._weak_error import WeakErrors as WeakErrors
from ._weak_error import weak_error_vs_layers as weak_error_vs_layers
from ._weights import AbstractWeights as AbstractWeights
from ._weights import ConstantWeights as ConstantWeights
from ._weights import Hybrid as Hybrid
from ._weights import PureNoise as PureNoise
from .solvers import AbstractGeodesicSolver as AbstractGeodesicSolver
from .solvers import GeodesicEuler as GeodesicEuler
from .solvers import GeodesicHeun as GeodesicHeun
from .solvers import GeodesicItoHeun as GeodesicItoHeun
from .solvers import GeodesicMidpoint as GeodesicMidpoint
from .solvers import Retracted as Retracted

__version__ = "0.1.0"
