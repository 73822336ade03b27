"""A wrapper that puts any Diffrax solver's step back on the sphere."""

from __future__ import annotations

import diffrax
from jaxtyping import PyTree

from .._geometry import leafwise
from ._geodesic import GeodesicInterpolation, finite_result, manifold_of
from ._geodesic import dense_info as geodesic_dense_info

# Inner solvers whose step is a function of the state and the increments of the path
# alone: a retraction after it is a consistent scheme. Refused: solvers with a state of
# their own that the retraction would break (ReversibleHeun, whose second state stays
# off the sphere), those that need the diffusion's derivative or Levy areas (Milstein,
# the stochastic Runge--Kutta methods), implicit ones.
_SUPPORTED = (diffrax.Euler, diffrax.EulerHeun, diffrax.AbstractERK)

# Weak orders of the Diffrax solvers a user is likely to wrap (Diffrax itself only
# records ODE and strong orders). All are Euler-Maruyama-like in the noise: weak order 1.
_WEAK_ORDERS = {diffrax.Euler: 1.0, diffrax.Heun: 1.0, diffrax.Midpoint: 1.0,
                diffrax.EulerHeun: 1.0, diffrax.ReversibleHeun: 1.0}


class Retracted(diffrax.AbstractWrappedSolver):
    r"""Make one step of ``solver`` in :math:`\mathbb{R}^d`, then normalize every row.

    .. math:: y_{k+1} = \tilde y / |\tilde y|,\qquad \tilde y = \text{inner solver's step}

    (:math:`r\,\tilde y / |\tilde y|` on a sphere of radius :math:`r`; Euclidean leaves of a
    pytree state keep the inner solver's step).

    The SDE sense is the inner solver's: ``Retracted(diffrax.Euler())`` converges to
    the Ito solution, ``Retracted(diffrax.Heun())`` to the Stratonovich one (Diffrax's
    ``isinstance`` checks look through the wrapper). Normalization is a retraction:
    for a tangent increment :math:`a`,
    :math:`(y + a)/|y + a| = y + a - \tfrac12 |a|^2 y + O(|a|^3)`, so with Euler the
    Ito normal drift :math:`-\tfrac12 \operatorname{tr}(g g^\top)\, y` comes out of
    :math:`|g\,\Delta W|^2`; a normal part already present in the drift only rescales
    :math:`\tilde y` to first order and is removed with it. Orders (strong, weak) are
    the inner solver's: 0.5 and 1 for Euler and Heun with non-commuting noise.

    Inner stages leave the sphere by :math:`O(\Delta t)`; the drift and diffusion must
    accept such points (``spheresde.project_tangent`` does). Dense output follows the
    great circle between the retracted states
    (:class:`~spheresde.solvers.GeodesicInterpolation`), not the inner solver's
    polynomial, so saved values stay on the sphere; the inner solver's error estimate
    (Heun's embedded Euler step) serves adaptive steps.

    Parameters
    ----------
    solver
        ``diffrax.Euler()`` (Ito), ``diffrax.EulerHeun()`` or an explicit Runge--Kutta
        method (``diffrax.Heun()``, ``diffrax.Midpoint()``, ``diffrax.Ralston()``:
        Stratonovich); others are refused with a message.
    """

    solver: diffrax.AbstractSolver

    def __check_init__(self):
        if not isinstance(self.solver, _SUPPORTED):
            name = type(self.solver).__name__
            raise ValueError(
                f"Retracted({name}) is not supported: Retracted wraps a solver whose step "
                f"is a function of the state and the increments of the path alone, "
                f"diffrax.Euler() (Ito), diffrax.EulerHeun() or an explicit Runge-Kutta "
                f"method such as diffrax.Heun(), diffrax.Midpoint() or diffrax.Ralston() "
                f"(Stratonovich); {name} keeps a state of its own or needs derivatives or "
                f"Levy areas of the noise. For a scheme that stays on the sphere by "
                f"construction use spheresde.GeodesicEuler() or spheresde.GeodesicMidpoint()"
            )

    @property
    def term_structure(self):
        return self.solver.term_structure

    interpolation_cls = GeodesicInterpolation

    @property
    def term_compatible_contr_kwargs(self):
        return self.solver.term_compatible_contr_kwargs

    @property
    def scan_kind(self):
        # Diffrax's ForwardMode reads this on Runge--Kutta solvers (isinstance sees
        # through the wrapper); ``spheresde.solve`` sets it on the inner solver.
        return self.solver.scan_kind

    def order(self, terms):
        return self.solver.order(terms)

    def strong_order(self, terms):
        return self.solver.strong_order(terms)

    def weak_order(self, terms) -> float | None:
        """Weak order of the inner solver, ``None`` when it is not known."""
        inner = getattr(self.solver, "weak_order", None)
        return inner(terms) if inner is not None else _WEAK_ORDERS.get(type(self.solver))

    def init(self, terms: PyTree[diffrax.AbstractTerm], t0, t1, y0, args):
        return self.solver.init(terms, t0, t1, y0, args)

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        y1, y_error, dense_info, solver_state, result = self.solver.step(
            terms, t0, t1, y0, args, solver_state, made_jump
        )
        del dense_info
        y1 = leafwise("retract", manifold_of(terms), y1)
        return y1, y_error, geodesic_dense_info(terms, y0, y1), solver_state, finite_result(
            y1, result)

    def func(self, terms, t0, y0, args):
        return self.solver.func(terms, t0, y0, args)
