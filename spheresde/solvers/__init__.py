r"""Sphere-preserving SDE solvers, each a Diffrax solver usable in ``diffrax.diffeqsolve``.

========================  =============  ======  ====  ================================
solver                    sense          strong  weak  how the norm is kept
========================  =============  ======  ====  ================================
``GeodesicEuler``         Ito            0.5     1     exponential map (exact)
``GeodesicItoHeun``       Ito            0.5     1     exponential map (exact)
``Retracted(Euler())``    Ito            0.5     1     normalization after the step
``GeodesicHeun``          Stratonovich   0.5*    1     exponential map (exact)
``GeodesicMidpoint``      Stratonovich   0.5*    1     exponential map (exact)
``Retracted(Heun())``     Stratonovich   0.5*    1     normalization after the step
========================  =============  ======  ====  ================================

\* strong order 1 when the noise is commutative (e.g. one scalar Brownian motion).

``spheresde.solve`` uses ``GeodesicEuler`` for Ito and ``GeodesicMidpoint`` for
Stratonovich SDEs: the smallest weak error constants of their sense on Brownian motion
on the sphere (tests/test_orders.py). GeodesicHeun, GeodesicMidpoint and
``Retracted(Heun())`` carry an embedded error estimate (``diffrax.AbstractAdaptiveSolver``)
and serve adaptive steps. A new scheme subclasses :class:`AbstractGeodesicSolver`
(docs/contributing.rst).
"""

from ._geodesic import AbstractGeodesicSolver as AbstractGeodesicSolver
from ._geodesic import GeodesicEuler as GeodesicEuler
from ._geodesic import GeodesicHeun as GeodesicHeun
from ._geodesic import GeodesicInterpolation as GeodesicInterpolation
from ._geodesic import GeodesicItoHeun as GeodesicItoHeun
from ._geodesic import GeodesicMidpoint as GeodesicMidpoint
from ._retracted import Retracted as Retracted
