"""Geodesic (Lie-group) schemes: every update is an exponential map, so rows stay on spheres."""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import ClassVar

import diffrax
import jax
import jax.numpy as jnp
from equinox.internal import ω

from .._geometry import Sphere, is_manifold, leafwise
from .._sde import DiffusionTerm
from .._typing import State


def manifold_of(terms):
    """The manifold (tree) of the state that ``terms`` drive: the one
    :meth:`SphereSDE.terms <spheresde.SphereSDE.terms>` put on its diffusion term, the
    unit sphere for terms built otherwise (a plain array on :math:`S^{d-1}`)."""
    for term in jax.tree.leaves(terms, is_leaf=lambda x: isinstance(x, DiffusionTerm)):
        if isinstance(term, DiffusionTerm):
            return term.manifold
    return Sphere()


def _tangent(manifold, y, u):
    r"""``P_y u = u - <y, u> y / r^2`` on each sphere leaf, at a ``y`` on its sphere.

    Every state and stage of these schemes is the output of :func:`_exp_unit` (and
    ``solve`` normalizes the start), so ``y`` is on its sphere up to rounding and the
    division by ``|y|^2`` of :func:`~spheresde.project_tangent` is left out.
    """
    return leafwise("tangent", manifold, y, u)


def _tangent_increment(terms, t, y, args, control):
    r"""``P_y(f dt + g dW)`` at ``y``: one Euler increment, tangent."""
    return _tangent(manifold_of(terms), y, terms.vf_prod(t, y, args, control))


def _stratonovich_increment(terms, t, y, args, control):
    r"""``f dt + g dW`` at ``y``, already tangent for a Stratonovich SDE: not projected.

    Projecting it again (:func:`_tangent_increment`) made GeodesicMidpoint and
    GeodesicHeun 3-4x slower than ``Retracted(diffrax.Heun())`` at the same number of
    evaluations (20,000 paths on S^2, ``tests/benchmarks/bench_solvers.py
    --stratonovich``): XLA on CPU fuses the projection's sums over the coordinates into
    every consumer and recomputes the vector fields for each. Rounding-level normal
    parts are harmless: :func:`_exp_unit` keeps the norm from drifting.
    """
    return terms.vf_prod(t, y, args, control)


def _exp_unit(manifold, y, v):
    r"""``exp_y(v)`` leaf by leaf for ``y`` on its sphere and a tangent ``v``, rounding
    kept from accumulating (``y + v`` on a Euclidean leaf).

    :math:`\cos|v|\,\tfrac{3 - |y|^2}{2}\,y + \operatorname{sinc}|v|\,v` on the unit
    sphere (:meth:`~spheresde.Sphere.exp`): the factor is one Newton step for
    :math:`1/|y|`, so a norm error :math:`e` of ``y`` (from rounding) leaves the step as
    :math:`O(e^2 + e\,\Delta t)` instead of being carried on. With it, the projection
    above may drop its division (together 25% of a Transformer-SDE step,
    ``tests/benchmarks/bench_solvers.py``) and float32 runs of 4,000 steps end within
    2e-7 of the sphere.
    """
    return leafwise("exp", manifold, y, v)


def _increment(terms, t0, t1):
    r"""``terms.contr(t0, t1)``, the increment :math:`(\Delta t, \Delta W)` of the step,
    drawn inside a ``lax.cond`` (on ``t1 > t0``, always true in a step) so that it is
    one buffer.

    Drawn in the open, its Gaussian increments are elementwise work that XLA on CPU
    fuses into every consumer and recomputes there: twice per step in GeodesicEuler,
    4-5 times in GeodesicMidpoint (3.6x slower than ``diffrax.Heun`` with normalization
    in float64, 1.3x with the increments given; ``tests/benchmarks/bench_solvers.py
    --brownian``). A branch of a conditional is compiled apart, so its output is stored
    once; the other branch is zeros (the increment of an empty step).
    """
    def draw():
        return terms.contr(t0, t1)

    def empty():
        return jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), jax.eval_shape(draw))

    return jax.lax.cond(t1 > t0, draw, empty)


def _transport(manifold, x, y, u):
    r"""Parallel transport of ``u`` in ``T_x`` along the great circle from ``x`` to ``y``,
    leaf by leaf (:meth:`~spheresde.Sphere.transport`; the identity on a Euclidean leaf);
    ``x`` and ``y`` are not antipodal (they are one step apart)."""
    return leafwise("transport", manifold, x, y, u)


class GeodesicInterpolation(diffrax.AbstractLocalInterpolation):
    r"""Dense output of one step: the great circle from ``y0`` (at ``t0``) to ``y1`` (at ``t1``).

    :math:`y(t) = \exp_{y_0}\big(s \log_{y_0} y_1\big)` with
    :math:`s = (t - t_0)/(t_1 - t_0)`, row by row, so that values saved between the
    points of the step grid (``SaveAt(ts=...)`` off the grid, ``SaveAt(dense=True)``)
    are on the sphere to rounding, where Diffrax's linear interpolation cuts the chord
    (norms down to :math:`\cos(|\Delta y|/2)`). ``y0`` and ``y1`` are one step apart,
    never antipodal.
    """

    t0: jax.Array
    t1: jax.Array
    y0: State
    y1: State
    manifold: object = Sphere()

    def evaluate(self, t0, t1=None, left: bool = True):
        """The state at ``t0``, or (Diffrax's convention) its increment from ``t0`` to ``t1``."""
        del left
        if t1 is not None:
            return (self.evaluate(t1)**ω - self.evaluate(t0)**ω).ω
        s = (t0 - self.t0) / (self.t1 - self.t0)
        return jax.tree.map(lambda m, y0, y1: m.interpolate(y0, y1, s), self.manifold,
                            self.y0, self.y1, is_leaf=is_manifold)


def finite_result(y1, result=diffrax.RESULTS.successful):
    """``result``, or ``diffrax.RESULTS.nonfinite`` where the new state ``y1`` holds NaN or
    infinity, so that a run whose fields blow up stops unsuccessful (and ``throw=True``
    raises) instead of returning NaN states as a success. One pass over ``y1`` per step."""
    finite = jnp.all(jnp.stack([jnp.all(jnp.isfinite(leaf)) for leaf in jax.tree.leaves(y1)]))
    return diffrax.RESULTS.where(finite, result, diffrax.RESULTS.nonfinite)


def dense_info(terms, y0, y1) -> dict:
    """What :class:`GeodesicInterpolation` is built from for a step from ``y0`` to ``y1``."""
    return dict(y0=y0, y1=y1, manifold=manifold_of(terms))


class AbstractGeodesicSolver(diffrax.AbstractSolver):
    r"""A sphere solver: one map :meth:`update` per step, states on the sphere.

    The extension point of this package. A new scheme subclasses it together with
    Diffrax's marker of its SDE sense (``diffrax.AbstractItoSolver`` or
    ``diffrax.AbstractStratonovichSolver``), and with ``diffrax.AbstractAdaptiveSolver``
    when :meth:`update` returns an embedded error estimate (then
    :func:`~spheresde.solve` accepts it with adaptive steps), and defines ``order``
    (Diffrax's order for ODEs) and :meth:`update`. The base class supplies the rest:
    Diffrax's ``step`` (the increment of the driving path drawn once per step, the
    result ``RESULTS.nonfinite`` if the new state is not finite), no solver state,
    dense output along great circles (:class:`GeodesicInterpolation`), strong order 0.5
    and weak order 1 (override :meth:`strong_order` and :meth:`weak_order` otherwise).
    ``solve`` accepts every subclass; docs/contributing.rst shows one, added to the
    order and norm tests by one line.
    """

    term_structure: ClassVar = diffrax.AbstractTerm
    interpolation_cls: ClassVar[Callable[..., GeodesicInterpolation]] = GeodesicInterpolation

    @abc.abstractmethod
    def update(self, terms, t0, t1, y0, args, control):
        r"""``(y1, y_error)``: the state at ``t1`` from ``y0`` at ``t0``.

        ``control`` is the increment of the driving path over ``[t0, t1]``, the pair
        :math:`(\Delta t, \Delta W)` that ``terms.vf_prod(t, y, args, control)`` turns
        into :math:`f\,\Delta t + g\,\Delta W` at any ``(t, y)``; ``y1`` must be on
        the sphere (build it with the exponential map, as the schemes here do);
        ``y_error`` is an embedded error estimate shaped like ``y0``, or ``None``.
        """

    def strong_order(self, terms):
        return 0.5

    def weak_order(self, terms):
        return 1.0

    def init(self, terms, t0, t1, y0, args):
        return None

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        """One step from ``y0`` at ``t0`` to ``t1``: the scheme's :meth:`update`.

        Takes the increment of the driving path over ``[t0, t1]`` once, and returns
        Diffrax's 5-tuple ``(y1, y_error, dense_info, None, result)``: the embedded
        error estimate of the scheme (``None`` for :class:`GeodesicEuler`, which serves
        fixed steps only), no solver state, dense output along the great circle from
        ``y0`` to ``y1``, and ``RESULTS.successful`` unless ``y1`` is not finite.
        ``solver_state`` and ``made_jump`` are ignored.
        """
        del solver_state, made_jump
        y1, y_error = self.update(terms, t0, t1, y0, args, _increment(terms, t0, t1))
        return y1, y_error, dense_info(terms, y0, y1), None, finite_result(y1)

    def func(self, terms, t0, y0, args):
        return terms.vf(t0, y0, args)


class GeodesicEuler(AbstractGeodesicSolver, diffrax.AbstractItoSolver):
    r"""Geodesic Euler--Maruyama: an Ito scheme that moves along great circles.

    .. math::
        \Delta_k = P_{y_k}\big(f(t_k, y_k)\,\Delta t + g(t_k, y_k)\,\Delta W_k\big),\qquad
        y_{k+1} = \exp_{y_k}(\Delta_k)
                = \cos|\Delta_k|\, y_k + \frac{\sin|\Delta_k|}{|\Delta_k|}\,\Delta_k .

    For a unit :math:`y` and tangent :math:`\Delta` this equals
    :math:`\exp(\Delta y^\top - y \Delta^\top)\, y`, the action of the rotation generated
    by a skew-symmetric matrix, so :math:`|y_{k+1}| = 1` up to rounding (and rounding
    does not accumulate: the cosine term carries a Newton correction of :math:`|y_k|`).

    Converges to the **Ito** solution. Only the tangent part of the drift is used:
    :math:`\exp_y(\Delta) = y + \Delta - \tfrac12 |\Delta|^2 y + O(|\Delta|^3)`, and
    :math:`\mathbb{E}|g\,\Delta W|^2 = \operatorname{tr}(g g^\top)\,\Delta t` supplies the
    normal Ito drift :math:`-\tfrac12 \operatorname{tr}(g g^\top)\, y` that Ito's lemma on
    :math:`|y|^2 = 1` demands. Strong order 0.5, weak order 1.
    """

    def order(self, terms):
        return 1

    def update(self, terms, t0, t1, y0, args, control):
        return _exp_unit(manifold_of(terms), y0,
                         _tangent_increment(terms, t0, y0, args, control)), None



class GeodesicItoHeun(AbstractGeodesicSolver, diffrax.AbstractItoSolver):
    r"""Heun's rule on the drift, Euler on the noise, along great circles: **Ito**.

    .. math::
        a_k = P_{y_k} f(t_k, y_k)\,\Delta t,\quad b_k = P_{y_k} g(t_k, y_k)\,\Delta W_k,
        \quad \tilde y = \exp_{y_k}(a_k + b_k),\\
        y_{k+1} = \exp_{y_k}\Big(\tfrac12\big(a_k + \Gamma_{\tilde y \to y_k}
        P_{\tilde y} f(t_{k+1}, \tilde y)\,\Delta t\big) + b_k\Big),

    with :math:`\Gamma` the parallel transport along the great circle (see
    :class:`GeodesicHeun`). The diffusion is evaluated at the start of the step only, so
    the scheme converges to the **Ito** solution, and the normal Ito drift comes from the
    exponential map as in :class:`GeodesicEuler` (equal to it when the drift has no
    tangent part, as for Brownian motion). The drift's predictor--corrector makes it
    second order on ODEs (zero noise) at two drift evaluations per step: the choice for
    drift-dominated Ito SDEs. Strong order 0.5, weak order 1. It is the worked example
    of a new solver in docs/contributing.rst: one class and one export.
    """

    term_structure: ClassVar = diffrax.MultiTerm[tuple[diffrax.AbstractTerm,
                                                       diffrax.AbstractTerm]]

    def order(self, terms):
        return 2

    def update(self, terms, t0, t1, y0, args, control):
        m = manifold_of(terms)
        drift, diffusion = terms.terms
        dt, dw = control
        a0 = _tangent(m, y0, drift.vf_prod(t0, y0, args, dt))
        b0 = _tangent(m, y0, diffusion.vf_prod(t0, y0, args, dw))
        y_pred = _exp_unit(m, y0, (a0**ω + b0**ω).ω)
        a1 = _transport(m, y_pred, y0, _tangent(m, y_pred, drift.vf_prod(t1, y_pred, args, dt)))
        return _exp_unit(m, y0, (0.5 * (a0**ω + a1**ω) + b0**ω).ω), None


class GeodesicHeun(AbstractGeodesicSolver, diffrax.AbstractStratonovichSolver,
                   diffrax.AbstractAdaptiveSolver):
    r"""Heun's predictor--corrector in the exponential chart at :math:`y_k`: **Stratonovich**.

    .. math::
        k_1 = F(y_k)\,\Delta,\quad
        \tilde y = \exp_{y_k}(k_1),\quad
        k_2 = \Gamma_{\tilde y \to y_k} F(\tilde y)\,\Delta,\quad
        y_{k+1} = \exp_{y_k}\big(\tfrac12 (k_1 + k_2)\big),

    with :math:`F\Delta = f\,\Delta t + g\,\Delta W` and :math:`\Gamma` the parallel
    transport along the great circle. In the chart :math:`v \mapsto \exp_{y_k}(v)` this
    is Heun's method for the pulled-back SDE, up to replacing the inverse differential
    of the chart at :math:`k_1` by :math:`\Gamma` (they agree to first order in
    :math:`k_1`), so it converges to the Stratonovich solution, and the ordinary chain
    rule of Stratonovich calculus carries the chart back to the sphere. The transport
    (rather than the projection :math:`P_{y_k}`, equally consistent) halves the weak
    error constant on Brownian motion on :math:`S^2`. Drift and diffusion must be
    tangent, as those of a Stratonovich SDE on the sphere are (``solve`` checks both at
    the start); they are not projected again, see :func:`_stratonovich_increment`.

    Strong order 0.5 for non-commuting noise (the Transformer SDE), 1 for commuting
    noise (for example a single Brownian motion); weak order 1. Two evaluations of the
    vector fields per step.
    """

    def order(self, terms):
        return 2

    def update(self, terms, t0, t1, y0, args, control):
        m = manifold_of(terms)
        k1 = _stratonovich_increment(terms, t0, y0, args, control)
        y_pred = _exp_unit(m, y0, k1)
        k2 = _transport(m, y_pred, y0,
                        _stratonovich_increment(terms, t1, y_pred, args, control))
        # Embedded Euler step exp(k1): the two differ by exp of 0.5 (k2 - k1) to first order.
        return (_exp_unit(m, y0, (0.5 * (k1**ω + k2**ω)).ω),
                (0.5 * (k2**ω - k1**ω)).ω)



class GeodesicMidpoint(AbstractGeodesicSolver, diffrax.AbstractStratonovichSolver,
                       diffrax.AbstractAdaptiveSolver):
    r"""Explicit midpoint rule in the exponential chart at :math:`y_k`: **Stratonovich**.

    .. math::
        \bar y = \exp_{y_k}\big(\tfrac12 F(y_k)\,\Delta\big),\qquad
        y_{k+1} = \exp_{y_k}\big(\Gamma_{\bar y \to y_k} F(\bar y)\,\Delta\big),

    with :math:`F\Delta = f\,\Delta t + g\,\Delta W`, the vector fields evaluated at
    the middle time and :math:`\Gamma` the parallel transport along the great circle
    (see :class:`GeodesicHeun`). Same orders as :class:`GeodesicHeun` (strong 0.5, 1 for commuting
    noise; weak 1) and the same cost.
    """

    def order(self, terms):
        return 2

    def update(self, terms, t0, t1, y0, args, control):
        m = manifold_of(terms)
        k1 = _stratonovich_increment(terms, t0, y0, args, control)
        y_mid = _exp_unit(m, y0, (0.5 * k1**ω).ω)
        k2 = _transport(m, y_mid, y0,
                        _stratonovich_increment(terms, 0.5 * (t0 + t1), y_mid, args, control))
        # Embedded Euler step exp(k1): the two differ by exp of (k2 - k1) to first order.
        return _exp_unit(m, y0, k2), (k2**ω - k1**ω).ω

