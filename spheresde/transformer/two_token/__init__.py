r"""Two tokens: the inner product :math:`\rho = \langle X_1, X_2\rangle` as a 1-D diffusion.

For ``n = 2`` the law of the shared noise is invariant under rotations, so
:math:`\rho_t` is itself an Ito diffusion on :math:`[-1, 1]`,

.. math:: d\rho = (1-\rho^2)\big[2\mu b + \varepsilon^2\big(2(d-2)ab - (a^2+b^2)\rho\big)\big]dt
          + \varepsilon\sqrt{2(a^2+b^2)}\,(1-\rho^2)\,dB,

:math:`a = 1/(1+r)`, :math:`b = r/(1+r)`, :math:`r = e^{-\beta(1-\rho)}` (pure noise:
:math:`\mu = 0`, :math:`\varepsilon = \sigma`). Every coefficient used here (drift,
diffusion, the scale-function integrand :math:`g`, the coefficients in
:math:`z = \operatorname{artanh}\rho`, the Lyapunov exponents, the hybrid threshold)
is lambdified from the SymPy derivation in :mod:`proofs_check.export`; none is retyped.

Both ends are equilibria; :math:`\rho = +1` (one cluster) always attracts, and
:math:`\rho = -1` (antipodal pair) attracts with positive probability iff
:math:`\beta > \beta_c(d) = \tfrac12\operatorname{arccosh}(d-2)` (pure noise).

The package has one module per concept: the coefficients (``_coefficients``), the exact
antipodal probability by quadrature of the scale function (``_exact``:
:func:`antipodal_probability`) and the Monte Carlo of the reduced SDE with its outcome
fractions (``_monte_carlo``: :func:`simulate_rho`, :func:`rho_fractions`), and the
outcome probabilities at a finite horizon from the Kolmogorov equation in
:math:`z = \operatorname{artanh}\rho` (``_finite_horizon``: :func:`outcome_probabilities`). Each
method is described below, with its functions.
"""

from ._coefficients import critical_beta as critical_beta
from ._coefficients import diffusion as diffusion
from ._coefficients import drift as drift
from ._coefficients import hybrid_threshold as hybrid_threshold
from ._coefficients import lyapunov_minus as lyapunov_minus
from ._coefficients import paper_hybrid_threshold as paper_hybrid_threshold
from ._coefficients import scale_g as scale_g
from ._exact import antipodal_probability as antipodal_probability
from ._finite_horizon import FirstOrderWarning as FirstOrderWarning
from ._finite_horizon import outcome_probabilities as outcome_probabilities
from ._monte_carlo import rho_fractions as rho_fractions
from ._monte_carlo import simulate_rho as simulate_rho

__all__ = [
    "FirstOrderWarning",
    "antipodal_probability",
    "critical_beta",
    "diffusion",
    "drift",
    "hybrid_threshold",
    "lyapunov_minus",
    "outcome_probabilities",
    "paper_hybrid_threshold",
    "rho_fractions",
    "scale_g",
    "simulate_rho",
]

# The documented home of these functions is ``spheresde.two_token`` (the API page, the
# cross-references and the documentation tests look them up there), not the private
# module that happens to define them.
for _name in __all__:
    globals()[_name].__module__ = __name__
del _name
