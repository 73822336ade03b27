"""spheresde: stochastic differential equations on spheres, with symbolic verification.

The public API is re-exported here explicitly; the modules behind it are private.
"""

from ._attention import attention as attention, attention_weights as attention_weights
from ._geometry import (
    exp_map as exp_map,
    geodesic_distance as geodesic_distance,
    log_map as log_map,
    norm_error as norm_error,
    project_tangent as project_tangent,
    retract as retract,
    sample_uniform as sample_uniform,
)
from ._sde import SphereSDE as SphereSDE

__version__ = "0.1.0"
