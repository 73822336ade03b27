r"""The deep stochastic Transformer: the model of the paper and its theory.

A layer is written once (:class:`Layer`, with the primitives of
:mod:`proofs_check.engine`) and everything below is asked of it: its derived SDEs and
exact laws, its discrete network, every sweep of :mod:`spheresde.experiments`.

Attention, the random weights, the discrete network and its normalizations, the limit
SDE, the outcomes (clusters) of its tokens, cluster formation, the weak error against
depth, two tokens (:mod:`spheresde.two_token`) and the code generation of a layer
derived by :mod:`proofs_check.engine`. The general sphere-SDE tool (geometry, solvers,
:func:`spheresde.solve`, samplers, first passage, extrapolation) is :mod:`spheresde`
itself; the classifier and its data are :mod:`spheresde.data`.

Importing this module imports SymPy (the two-token coefficients and the code generation
are lambdified from :mod:`proofs_check`); ``import spheresde`` does not.
"""

from . import two_token as two_token
from ._attention import attention as attention
from ._attention import attention_weights as attention_weights
from ._formation import formation_lyapunov_minus as formation_lyapunov_minus
from ._formation import formation_threshold as formation_threshold
from ._layers import Layer as Layer
from ._layers import LayerError as LayerError
from ._layers import layer as layer
from ._layers import layers as layers
from ._layers import register_layer as register_layer
from ._limit import transformer_sde as transformer_sde
from ._network import NetworkResult as NetworkResult
from ._network import simulate_network as simulate_network
from ._normalization import AbstractNormalization as AbstractNormalization
from ._normalization import LayerNorm as LayerNorm
from ._normalization import RMSNorm as RMSNorm
from ._normalization import normalization as normalization
from ._normalization import register_normalization as register_normalization
from ._outcomes import ANTIPODAL as ANTIPODAL
from ._outcomes import SINGLE as SINGLE
from ._outcomes import UNDECIDED as UNDECIDED
from ._outcomes import OutcomeFractions as OutcomeFractions
from ._outcomes import classify as classify
from ._outcomes import cluster_sizes as cluster_sizes
from ._outcomes import outcome_fractions as outcome_fractions
from ._weak_error import WeakErrors as WeakErrors
from ._weak_error import weak_error_vs_layers as weak_error_vs_layers
from ._weights import AbstractWeights as AbstractWeights
from ._weights import ConstantWeights as ConstantWeights
from ._weights import Hybrid as Hybrid
from ._weights import PureNoise as PureNoise


def __getattr__(name: str):
    # The code generation imports SymPy: loaded on first use, so that the sweeps (which
    # import this package) start without it.
    if name == "to_sphere_sde":
        from ._codegen import to_sphere_sde

        return to_sphere_sde
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
