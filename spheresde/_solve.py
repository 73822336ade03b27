"""``solve`` and ``solve_batch``: a SphereSDE through ``diffrax.diffeqsolve``, any steps."""

from __future__ import annotations

import math
import warnings

import diffrax
import equinox as eqx
import equinox.internal as eqxi
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
from jax.sharding import NamedSharding

from ._brownian import WeakBrownianPath
from ._checks import HALF_PRECISION as _HALF
from ._checks import MAX_STEPS
from ._checks import concrete as _concrete
from ._devices import leading_axis_sharding
from ._geometry import Euclidean, Sphere, is_manifold
from ._sde import SphereSDE
from ._typing import Array, PRNGKeyArray
from .solvers import AbstractGeodesicSolver, GeodesicEuler, GeodesicMidpoint, Retracted

try:  # the tracer of jax.grad (reverse mode) since JAX 0.4.36; JVPTracer is forward mode
    from jax._src.interpreters.ad import LinearizeTracer as _ReverseModeTracer
except ImportError:  # pragma: no cover
    _ReverseModeTracer = ()


class OffSphereWarning(UserWarning):
    """A starting point was not on the unit sphere and has been normalized."""


_BROWNIAN_KINDS = ("unsafe", "virtual", "weak")


def default_solver(convention: str) -> diffrax.AbstractSolver:
    """The solver ``solve`` uses when none is given, for an SDE in the sense ``convention``."""
    # Chosen on cost at equal accuracy (time per step x weak error constant). Ito:
    # GeodesicEuler has the smaller constant on Brownian motion on S^{d-1}
    # (tests/test_orders.py) and beats Retracted(Euler()) on speed
    # (tests/benchmarks/bench_solvers.py). Stratonovich: GeodesicMidpoint is 1.4-2x
    # slower per step than Retracted(diffrax.Heun()), but on noise of the form
    # scalar x P_X o dW (Brownian motion, Langevin diffusions) its constant is 0.3-0.5x,
    # so it costs 0.5-0.7x at equal accuracy (bench_solvers.py --accuracy); on the
    # Transformer's matrix noise Retracted(Heun) costs about 0.6x (docs/theory/schemes.rst).
    return GeodesicEuler() if convention == "ito" else GeodesicMidpoint()


def solver_convention(solver: diffrax.AbstractSolver) -> str | None:
    """``"ito"``, ``"stratonovich"`` or ``None``, from Diffrax's marker classes.

    Wrappers such as :class:`~spheresde.solvers.Retracted` report their inner solver's.
    """
    if isinstance(solver, diffrax.AbstractItoSolver):
        return "ito"
    if isinstance(solver, diffrax.AbstractStratonovichSolver):
        return "stratonovich"
    return None


_SENSES = {"ito": "Ito", "stratonovich": "Stratonovich"}
_ARTICLES = {"ito": "an", "stratonovich": "a"}

_FORWARD_ONLY = (
    "jax.grad (reverse mode) reached a spheresde solve that ran in forward mode "
    "(diffrax.ForwardMode, the default): solve sees jax.grad only when it is applied to it "
    "directly, not through jax.jit (jax.grad(jax.jit(f))). Pass "
    "adjoint=diffrax.RecursiveCheckpointAdjoint() (and brownian='virtual') to solve or "
    "solve_batch for reverse mode, or differentiate in forward mode (jax.jacfwd, jax.jvp)"
)


def solver_name(solver: diffrax.AbstractSolver) -> str:
    """``"GeodesicEuler"``, ``"Retracted(Heun)"``: the class, with a wrapper's inner solver."""
    if isinstance(solver, diffrax.AbstractWrappedSolver):
        return f"{type(solver).__name__}({solver_name(solver.solver)})"
    return type(solver).__name__


def has_error_estimate(solver: diffrax.AbstractSolver) -> bool:
    """Whether ``solver`` serves adaptive steps: Diffrax's marker
    ``diffrax.AbstractAdaptiveSolver`` on it or, for a wrapper such as
    :class:`~spheresde.solvers.Retracted`, on its inner solver."""
    if isinstance(solver, diffrax.AbstractWrappedSolver):
        return has_error_estimate(solver.solver)
    return isinstance(solver, diffrax.AbstractAdaptiveSolver)


def solve(
    sde: SphereSDE,
    y0,
    t0,
    t1,
    dt,
    *,
    key: PRNGKeyArray | None = None,
    solver: diffrax.AbstractSolver | None = None,
    saveat: diffrax.SaveAt | None = None,
    brownian: str | diffrax.AbstractPath | None = None,
    brownian_tol=None,
    stepsize_controller: diffrax.AbstractStepSizeController | None = None,
    args=None,
    throw: bool = True,
    **diffeqsolve_kwargs,
) -> diffrax.Solution:
    r"""Solve ``sde`` from ``y0`` at ``t0`` to ``t1`` with steps ``dt``; one sample path.

    By default the steps are the grid :math:`t_0, t_0 + \Delta t, \dots, t_1` (the last
    step is shortened to land on ``t1``), given to Diffrax as ``StepTo`` so that the
    number of steps is fixed and known. With an adaptive ``stepsize_controller``
    (``diffrax.PIDController``) ``dt`` is the first step and the controller chooses the
    others. The result is Diffrax's ``Solution`` (``.ts``, ``.ys``, ``.stats``). Every
    state it holds, saved on the steps, between them (``SaveAt(ts=...)``) or evaluated
    from dense output (``SaveAt(dense=True)``, then ``sol.evaluate(t)``), is on the
    sphere to rounding: between two steps the state follows the great circle
    (:class:`~spheresde.solvers.GeodesicInterpolation`).

    Parameters
    ----------
    sde
        The :class:`SphereSDE`, Ito or Stratonovich.
    y0
        Start, shape ``(d,)`` or ``(n, d)`` with ``d >= 2``: ONE sample path, of a point
        or of ``n`` points (a point of the product of spheres). Rows are normalized; a
        row farther than ``1000 eps`` from the unit sphere raises an
        :class:`OffSphereWarning` first. NaN or a zero row is an error. The result has
        the dtype of ``y0`` and the solve computes in it (float32 or float64; integers
        take JAX's default float); float16 and bfloat16 are refused (cast to float32),
        and a float64 array while ``jax_enable_x64`` is off runs in float32 with a
        :class:`PrecisionWarning`. **Rows and noise**: when the diffusion drives the
        ``n`` rows with noise they share (``noise_shape=(d,)`` and ``project_tangent(y,
        dw)``: every row gets the same increment), ``solve`` refuses unless the SDE
        says so, ``SphereSDE(..., shared_noise=True)`` (the Transformer's tokens,
        :func:`transformer_sde`); ``n`` independent paths are :func:`solve_batch` with
        one row per path (docs: theory, schemes, "Independent paths or shared noise").
        **A state of several parts** (``SphereSDE(..., manifold=...)``): a pytree of the
        manifold's structure, each sphere leaf ``(d,)`` or ``(n, d)`` (rows normalized to
        the leaf's radius), each Euclidean leaf of any shape; the result's ``ys`` has
        that structure, and messages name the leaf (``y0[1]``, ``y0['e']``).
    t0, t1, dt
        Concrete numbers (they fix the grid) with ``t1 > t0`` and ``dt > 0``.
    key
        PRNG key of the Brownian path (not needed when ``brownian`` is a path).
    solver
        A solver of this package whose sense matches ``sde.convention``; default
        :class:`~spheresde.solvers.GeodesicEuler` for Ito and
        :class:`~spheresde.solvers.GeodesicMidpoint` for Stratonovich. A plain Diffrax
        solver steps in :math:`\mathbb{R}^d` and leaves the sphere, so it is refused:
        wrap it, as in ``spheresde.Retracted(diffrax.Heun())``.
    saveat
        ``diffrax.SaveAt``; default ``SaveAt(t1=True)``.
    brownian
        Default ``"unsafe"`` for fixed steps, ``"virtual"`` for adaptive ones and under
        ``jax.grad``.
        ``"unsafe"``: ``diffrax.UnsafeBrownianPath``, Gaussian increments drawn per step,
        fine for fixed steps; ``"weak"``: :class:`WeakBrownianPath`, increments
        :math:`\pm\sqrt{\Delta t}` (weak order 1 kept, several times faster; for laws
        and expectations only, never for pathwise errors); ``"virtual"``:
        ``diffrax.VirtualBrownianTree`` with tolerance ``brownian_tol`` (default
        ``dt / 8``, ``dt / 64`` with adaptive steps), a path that can be queried at any
        resolution, the only kind adaptive steps accept (a rejected step is retried on
        the same path); or any
        Diffrax path over ``[t0, t1]`` with values of shape ``sde.noise_shape``, such as
        a ``VirtualBrownianTree`` or a ``LinearInterpolation`` of sampled Brownian
        values (how the same path is solved with several ``dt``).
    stepsize_controller
        ``None`` (the fixed grid above) or a Diffrax controller. An adaptive one, such
        as ``diffrax.PIDController(rtol=0, atol=1e-2)``, needs a solver with an embedded
        error estimate, that is a solver marked ``diffrax.AbstractAdaptiveSolver`` (for
        ``Retracted``, its inner solver): :class:`~spheresde.solvers.GeodesicHeun`
        (against its Euler predictor), :class:`~spheresde.solvers.GeodesicMidpoint`
        (against the Euler step) or ``Retracted(diffrax.Heun())``, that is a
        Stratonovich SDE. Pass ``max_steps`` (default 4096) through
        ``diffeqsolve_kwargs`` for long runs.
    args
        Passed to ``drift`` and ``diffusion``.
    throw, **diffeqsolve_kwargs
        Passed to ``diffrax.diffeqsolve``. The default ``adjoint`` is
        ``diffrax.ForwardMode()`` (``jax.jvp``, ``jax.jacfwd``). Under ``jax.grad``
        (reverse mode) ``solve`` takes Diffrax's ``RecursiveCheckpointAdjoint()`` and,
        unless told otherwise, ``brownian="virtual"`` (an unsafe path cannot be queried
        again on the backward pass). Where ``jax.grad`` is applied to a jitted function
        that calls ``solve``, ``solve`` cannot see it: pass ``brownian="virtual"`` and
        ``adjoint=diffrax.RecursiveCheckpointAdjoint()``.

    Notes
    -----
    **Events.** ``event=diffrax.Event(cond_fn)`` (through ``diffeqsolve_kwargs``) stops
    the solve at the first step where ``cond_fn(t, y, args)`` turns ``True`` or, for a
    real-valued ``cond_fn`` with ``diffrax.Event(cond_fn, root_finder=...)``, at its
    zero on the great circle of that step; ``sol.ts`` then holds that time,
    ``sol.event_mask`` whether it happened, and ``sol.result`` is
    ``RESULTS.event_occurred`` (a success). With fixed steps an event between two grid
    points is seen at the end of the step: first-passage times carry a bias of order
    :math:`\sqrt{\Delta t}`; :func:`spheresde.first_passage` removes it with a
    Brownian-bridge correction (weak order 1; gallery: first passage). For many paths,
    :func:`solve_batch` gives every path its own stopping time.

    **Failures.** A step whose new state is not finite (NaN or infinity, for example a
    drift that blows up) stops the solve with ``RESULTS.nonfinite``. With ``throw=True``
    (the default) every unsuccessful result raises a ``RuntimeError`` that says what
    happened, at which time and what to pass (``max_steps``, for instance); inside
    ``jax.jit`` the check becomes Diffrax's runtime error. ``throw=False`` returns the
    solution up to the failure; its ``result`` says what happened.

    **Checks**: the shapes of drift and diffusion (at trace time, so also under
    ``jax.jit``, ``jax.vmap`` and ``jax.grad``: shapes are static), their tangency (a
    Stratonovich drift and any diffusion) at every start and at a few random points of
    the sphere, NaN, infinite or zero rows of ``y0``, and for a state of several rows
    whether they share noise (above). On concrete inputs these raise a ``ValueError``
    that quotes the offending values. Traced (``y0``, ``args`` or a parameter the fields
    close over is a tracer of ``jax.jit``, ``jax.vmap`` or ``jax.grad``) the value
    checks are compiled into the solve with ``equinox.error_if`` and raise a
    ``RuntimeError`` with the same words, without the values, when it runs. The one
    check that does not run traced is the :class:`OffSphereWarning` (a warning cannot be
    given from compiled code): rows off the sphere are then normalized without a word.

    Examples
    --------
    Many paths: :func:`solve_batch` (one solve of the stacked paths, as fast as drawing
    their normals), or ``jax.vmap`` over keys and starts (2 to 3 times slower on a CPU,
    reproducible path by path; the checks on values are then staged, see Checks).
    One state of 8 tokens under the Transformer's common noise, and 2,000 independent
    Brownian paths on :math:`S^2`::

        tokens = solve(transformer_sde(1.0, d=3), sample_uniform(key, (8,), 3), 0.0,
                       5.0, 0.01, key=key)
        paths = solve_batch(brownian_motion, sample_uniform(key, (2000,), 3), 0.0, 1.0,
                            0.01, key=key)
    """
    reverse = _under_grad((sde, y0, args))
    sde, converted = _convert_for_controller(sde, solver, stepsize_controller)
    solver, y0, ts, brownian, saveat = _check(
        sde, y0, t0, t1, dt, solver, brownian, key, args, stepsize_controller, reverse, saveat,
        diffeqsolve_kwargs, batch=False)
    kwargs = _solve_kwargs(ts, stepsize_controller, reverse, diffeqsolve_kwargs)
    sol = _solve(sde, solver, y0, ts, key,
                 _path_spec(brownian, brownian_tol, dt, stepsize_controller), saveat, args,
                 kwargs)
    return _record_conversion(_raise_unsuccessful(sol, throw, ts, stepsize_controller),
                              converted)


def solve_batch(
    sde: SphereSDE,
    y0,
    t0,
    t1,
    dt,
    *,
    key: PRNGKeyArray,
    solver: diffrax.AbstractSolver | None = None,
    saveat: diffrax.SaveAt | None = None,
    brownian: str | None = None,
    brownian_tol=None,
    stepsize_controller: diffrax.AbstractStepSizeController | None = None,
    args=None,
    throw: bool = True,
    stacked: bool | None = None,
    shard: bool | None = None,
    **diffeqsolve_kwargs,
) -> diffrax.Solution:
    """Independent sample paths, one per row of ``y0``, compiled once.

    ``y0`` has shape ``(paths, d)`` or ``(paths, n, d)`` (``jnp.broadcast_to`` a single
    start to give every path the same one), or, for a state of several parts, is a pytree
    whose every leaf has the ``paths`` axis first. Every path has its own Brownian path; within
    a path of ``n`` rows, noise shared by the rows must be declared as in :func:`solve`
    (``SphereSDE(..., shared_noise=True)``). The result has the dtype of ``y0``.
    ``ys`` of the returned ``Solution`` gains a leading ``paths`` axis; ``ts``, the same
    for every path, does not (except with ``SaveAt(steps=True)`` and adaptive steps,
    where each path has its own steps).
    Dense output (``SaveAt(dense=True)``, stacked form) evaluates all paths at once:
    ``sol.evaluate(t)`` has shape ``(paths, *y0.shape[1:])``. Other arguments as in
    :func:`solve`.

    Two ways to run the paths, with the same law but different random draws:

    ``stacked=True`` (the default where it applies)
        ONE ``diffrax.diffeqsolve`` whose state is all of ``y0``: drift and diffusion
        are ``jax.vmap``-ed over the paths axis and a single Brownian path of shape
        ``(paths, *sde.noise_shape)`` is drawn from ``key``. Every step is then a few
        large array operations instead of a batched while-loop of small ones (several
        times faster; ``tests/benchmarks/bench_solvers.py``). The solvers of this package
        act row-wise, so each path is stepped exactly as by :func:`solve`, but path
        ``p`` is **not** ``solve(..., key=jax.random.split(key, paths)[p])``: the
        increments are other (equally distributed, independent) normals, and they depend
        on ``paths``. ``stats`` and ``result`` are those of the one solve (no paths axis).
        With an adaptive ``stepsize_controller`` all paths then share the steps, chosen
        on the error of the whole batch. Not available when ``saveat`` has its own ``fn``
        or saves solver or controller states (those see the whole state); ``None`` then
        falls back to ``False``, as it does with an adaptive controller (every path its
        own steps).
    ``stacked=False``
        :func:`solve` under ``jax.vmap``; path ``p`` uses ``jax.random.split(key,
        paths)[p]``, reproducible path by path, and every field of the ``Solution``
        but ``ts`` gains the paths axis. No dense output (it would be one interpolant
        per path): use the stacked form.

    **Events** (``event=diffrax.Event(cond_fn)``, see :func:`solve`) stop each path at
    its own time, so they need ``stacked=False`` (the default with an event): ``sol.ts``
    then has the paths axis, shape ``(paths, saves)``, and ``sol.event_mask`` says which
    paths stopped. The stacked form is one solve of all paths, whose event would stop
    every path at the first hit; ``stacked=True`` with an event is refused.

    **Failures**: with ``throw=True`` an unsuccessful path (a non-finite state,
    ``max_steps`` reached) raises, naming how many paths failed and the first one; with
    ``throw=False`` ``sol.result`` has the paths axis in the per-path form.

    ``shard`` (stacked form only): split the paths over the local devices of JAX's default
    backend (several GPUs, or the CPU cores made devices with
    ``jax.config.update("jax_num_cpu_devices", os.cpu_count())`` before JAX first runs).
    The default ``None`` does so when there are several devices and they divide
    ``paths``; ``True`` demands it. The random draws do not depend on the split (JAX's
    partitionable Threefry), only the rounding of the arithmetic may.
    """
    if brownian is not None and not isinstance(brownian, str):
        raise TypeError("solve_batch: brownian must be 'unsafe', 'weak' or 'virtual'; to reuse "
                        "given paths, jax.vmap solve over them")
    stackable = _stackable(saveat)
    dense = saveat is not None and saveat.dense
    event = diffeqsolve_kwargs.get("event") is not None
    if stacked is None:
        stacked = stackable and not _adaptive(stepsize_controller) and not event
    elif stacked and not stackable:
        raise ValueError("solve_batch: stacked=True needs a saveat without fn, subs of "
                         "several fns or saved solver/controller states (they would see the "
                         "whole batch); pass stacked=False")
    elif stacked and event:
        raise ValueError("solve_batch: an event stops each path at its own time, which needs "
                         "stacked=False (the stacked form is one solve of all paths: its event "
                         "would see the whole batch and stop every path at the first hit); "
                         "pass stacked=False or leave stacked unset")
    if dense and not stacked:
        raise ValueError("solve_batch: dense output (SaveAt(dense=True)) needs the stacked "
                         "form, whose one interpolant evaluates every path; pass stacked=True "
                         "and a saveat without fn or saved solver/controller states")
    reverse = _under_grad((sde, y0, args))
    sde, converted = _convert_for_controller(sde, solver, stepsize_controller)
    solver, y0, ts, brownian, saveat = _check(
        sde, y0, t0, t1, dt, solver, brownian, key, args, stepsize_controller, reverse, saveat,
        diffeqsolve_kwargs, batch=True)
    path_spec = _path_spec(brownian, brownian_tol, dt, stepsize_controller)
    kwargs = _solve_kwargs(ts, stepsize_controller, reverse, diffeqsolve_kwargs)
    if stacked:
        sharding = _paths_sharding(paths_of(y0), shard)
        sol = _solve_stacked(sde, solver, y0, ts, key, path_spec, saveat, args, kwargs,
                             sharding)
        return _record_conversion(_raise_unsuccessful(sol, throw, ts, stepsize_controller),
                                  converted)
    if shard:
        raise ValueError("solve_batch: shard=True needs the stacked form (stacked=True)")
    keys = jr.split(key, paths_of(y0))
    sol = _raise_unsuccessful(
        _solve_batch(sde, solver, y0, ts, keys, path_spec, saveat, args, kwargs), throw, ts,
        stepsize_controller)
    if not (event or (saveat is not None and getattr(saveat.subs, "steps", False)
                      and _adaptive(stepsize_controller))):
        # The save times are the same for every path: one copy of them, as stacked.
        sol = eqx.tree_at(lambda s: s.ts, sol, jax.tree.map(lambda t: t[0], sol.ts),
                          is_leaf=lambda x: x is None)
    return _record_conversion(sol, converted)


def _convert_for_controller(sde, solver, controller) -> tuple[SphereSDE, bool]:
    """An Ito ``sde`` under adaptive steps, with no solver or a Stratonovich one, in
    Stratonovich form (the schemes with an error estimate are Stratonovich), and whether
    it was converted."""
    if (isinstance(sde, SphereSDE) and sde.convention == "ito" and _adaptive(controller)
            and (solver is None or solver_convention(solver) == "stratonovich")):
        return sde.to_stratonovich(), True
    return sde, False


def _record_conversion(sol: diffrax.Solution, converted: bool) -> diffrax.Solution:
    """``sol`` with ``stats["converted"] = "ito->stratonovich"`` where the SDE was."""
    if not converted:
        return sol
    return eqx.tree_at(lambda s: s.stats, sol, {**sol.stats, "converted": "ito->stratonovich"})


def _stackable(saveat) -> bool:
    """Whether ``saveat`` only saves ``y`` (at times, or densely), so that a stacked state
    can be split into paths afterwards."""
    if saveat is None:
        return True
    subs = saveat.subs
    saves_y = subs is None or (isinstance(subs, diffrax.SubSaveAt)
                               and subs.fn is diffrax.SaveAt(t1=True).subs.fn)
    return saves_y and not (saveat.solver_state or saveat.controller_state or saveat.made_jump)


def _adaptive(controller) -> bool:
    return isinstance(controller, diffrax.AbstractAdaptiveStepSizeController)


def _under_grad(tree) -> bool:
    """Whether a leaf of ``tree`` is being differentiated in reverse mode (``jax.grad``)."""
    leaves = jax.tree.leaves(eqx.filter(tree, eqx.is_array))
    return any(isinstance(leaf, _ReverseModeTracer) for leaf in leaves)


def _solve_kwargs(ts, controller, reverse, kwargs) -> dict:
    """``diffeqsolve``'s step size controller, ``dt0``, ``max_steps`` and adjoint.

    The adjoint is ``ForwardMode`` (fast to compile; ``jax.jvp``) unless the call is
    under ``jax.grad`` (``reverse``); then Diffrax's checkpointed reverse mode.
    """
    if controller is None:
        steps = {"stepsize_controller": diffrax.StepTo(ts), "dt0": None,
                 "max_steps": ts.shape[0] - 1}
    else:
        steps = {"stepsize_controller": controller, "dt0": ts[1] - ts[0]}
    adjoint = diffrax.RecursiveCheckpointAdjoint() if reverse else diffrax.ForwardMode()
    return {"adjoint": adjoint, **steps, **kwargs, "throw": False}


def stack_sde(sde: SphereSDE, paths: int) -> SphereSDE:
    """``sde`` for a state of ``paths`` independent copies, stacked on a leading axis.

    Drift and diffusion are ``jax.vmap``-ed over that axis (the diffusion over the state
    and the increment, of shape ``(paths, *sde.noise_shape)``, on every leaf of a pytree
    state and noise); time and ``args`` are shared. Same convention and manifold as
    ``sde`` (its operations act on the last axis and broadcast over the paths).
    """
    return sde.replace(
        drift=jax.vmap(sde.drift, in_axes=(None, 0, None)),
        diffusion=jax.vmap(sde.diffusion, in_axes=(None, 0, None, 0)),
        noise_shape=jax.tree.unflatten(sde.noise_def[0],
                                       [(paths, *shape) for shape in sde.noise_def[1]]),
    )


def _path_spec(brownian, brownian_tol, dt, controller):
    if isinstance(brownian, str):
        if brownian_tol is None:
            brownian_tol = float(dt) / (64 if _adaptive(controller) else 8)
        return (brownian, float(brownian_tol))
    return brownian


def brownian_path(kind: str, shape: jax.ShapeDtypeStruct, key, ts, tol) -> diffrax.AbstractPath:
    """The Brownian path of ``brownian=kind`` ("unsafe", "weak" or "virtual", tolerance
    ``tol``) with increments of ``shape`` over the grid ``ts``."""
    if kind == "unsafe":
        return diffrax.UnsafeBrownianPath(shape=shape, key=key)
    if kind == "weak":
        return WeakBrownianPath(shape, key)
    return diffrax.VirtualBrownianTree(ts[0], ts[-1], tol=tol, shape=shape, key=key)


def _diffeqsolve(sde, solver, y0, ts, key, path_spec, saveat, args, kwargs):
    if isinstance(path_spec, tuple):
        kind, tol = path_spec
        path = brownian_path(kind, sde.noise(state_dtype(y0)), key, ts, tol)
    else:
        path = path_spec
    # Forward mode by default (_solve_kwargs): simulation rarely needs reverse-mode
    # gradients, it compiles faster, and Diffrax's default (checkpointed reverse mode)
    # refuses an unsafe path.
    if isinstance(kwargs["adjoint"], diffrax.ForwardMode):
        solver = _forward_mode_ready(solver)
    kwargs = dict(kwargs)
    dt0 = kwargs.pop("dt0")
    sol = diffrax.diffeqsolve(
        sde.terms(path), solver, ts[0], ts[-1], dt0, y0, args=args,
        saveat=diffrax.SaveAt(t1=True) if saveat is None else saveat, **kwargs,
    )
    if isinstance(kwargs["adjoint"], diffrax.ForwardMode):
        # jax.grad(jax.jit(f)) cannot be seen from here; it would fail on the transpose of
        # the while loop with JAX's message. This identity says what to pass instead.
        sol = eqxi.nondifferentiable_backward(sol, msg=_FORWARD_ONLY)
    return sol


def _raise_unsuccessful(sol, throw, ts, controller):
    """``sol``, after raising a message if ``throw`` and a path did not succeed.

    ``diffeqsolve`` runs with ``throw=False``: its own runtime error puts the message under
    a stack of Equinox's. Outside of JAX transformations the result is concrete and
    the message here says what happened, when and what to pass; under ``jax.jit`` or
    ``jax.grad`` it stays Diffrax's runtime error.
    """
    result = sol.result
    if not throw:
        return sol
    okay = diffrax.is_okay(result)
    if result.is_traced():
        return result.error_if(sol, jnp.invert(okay))
    okay = np.asarray(okay).ravel()
    if okay.all():
        return sol
    bad = np.flatnonzero(~okay)
    first = int(bad[0])
    where = "" if okay.size == 1 else f" in {bad.size} of {okay.size} paths (first: path {first})"
    steps = int(np.asarray(sol.stats["num_steps"]).ravel()[first])
    item = jax.tree.map(lambda v: jnp.ravel(v)[first], result)
    if item == diffrax.RESULTS.nonfinite:
        when = (f"in the step ending at t = {float(ts[steps]):.6g}" if controller is None
                else f"in step {steps}")
        raise RuntimeError(
            f"solve: the state turned NaN or infinite {when}{where}: sde.drift or "
            f"sde.diffusion returned a non-finite value there, or the step is too large for "
            f"them; pass throw=False to get the solution up to that step (its result is "
            f"diffrax.RESULTS.nonfinite)")
    if item == diffrax.RESULTS.max_steps_reached:
        raise RuntimeError(
            f"solve: the maximum number of steps, max_steps={sol.stats['max_steps']}, was "
            f"reached before t1 = {float(ts[-1]):.6g}{where}; pass a larger max_steps "
            f"(default 4096 with an adaptive stepsize_controller) or a looser rtol/atol")
    raise RuntimeError(f"solve: {diffrax.RESULTS[item]}{where}; pass throw=False to inspect "
                       f"the solution")


def _forward_mode_ready(solver):
    """Give a wrapped Runge--Kutta solver the ``scan_kind`` that ForwardMode would set.

    ForwardMode replaces ``scan_kind=None`` by ``"lax"`` with ``eqx.tree_at``, which
    cannot reach the inner solver of :class:`Retracted`; doing it here is equivalent.
    """
    if isinstance(solver, Retracted) and getattr(solver.solver, "scan_kind", "") is None:
        inner = eqx.tree_at(lambda s: s.scan_kind, solver.solver, "lax",
                            is_leaf=lambda x: x is None)
        return Retracted(inner)
    return solver


_solve = eqx.filter_jit(_diffeqsolve)


@eqx.filter_jit
def _solve_batch(sde, solver, y0, ts, keys, path_spec, saveat, args, kwargs):
    def one(y, k):
        return _diffeqsolve(sde, solver, y, ts, k, path_spec, saveat, args, kwargs)

    return jax.vmap(one)(y0, keys)


def _paths_sharding(paths: int, shard: bool | None) -> NamedSharding | None:
    """How to split ``paths`` over the local devices, or ``None`` for one device."""
    if shard is False:
        return None
    sharding = leading_axis_sharding(paths, "paths")
    if sharding is None and shard:
        devices = jax.local_devices()
        raise ValueError(f"solve_batch: shard=True needs several devices that divide the "
                         f"{paths} paths; JAX has {len(devices)} ({devices[0].platform})")
    return sharding


@eqx.filter_jit
def _solve_stacked(sde, solver, y0, ts, key, path_spec, saveat, args, kwargs, sharding):
    paths = paths_of(y0)
    if sharding is not None:
        y0 = jax.lax.with_sharding_constraint(y0, sharding)
    sol = _diffeqsolve(stack_sde(sde, paths), solver, y0, ts, key, path_spec, saveat, args,
                       kwargs)
    if sol.ys is None:  # dense output only
        return sol
    # Diffrax saves (times, paths, ...); give the paths axis first as the vmapped form does.
    return eqx.tree_at(lambda s: s.ys, sol,
                       jax.tree.map(lambda ys: jnp.moveaxis(ys, 1, 0), sol.ys))


def state_dtype(y):
    """The dtype of a state (one for all its leaves, ``_check_y0`` sees to it)."""
    return jax.tree.leaves(y)[0].dtype


def paths_of(y) -> int:
    """The number of paths of a batch of states: the leading axis of every leaf."""
    return jax.tree.leaves(y)[0].shape[0]


def _check(sde, y0, t0, t1, dt, solver, brownian, key, args, controller, reverse, saveat,
           kwargs, *, batch):
    """Eager checks on the inputs; returns the solver, the normalized start, the grid
    (fixed steps; its first step is ``dt``) and the kind of Brownian path."""
    if not isinstance(sde, SphereSDE):
        raise TypeError(f"sde must be a spheresde.SphereSDE, got {type(sde).__name__}")
    if solver is None:
        solver = default_solver(sde.convention)
    elif not isinstance(solver, diffrax.AbstractSolver):
        raise TypeError(f"solver must be a Diffrax solver, got {type(solver).__name__}")
    sense = solver_convention(solver)
    if sense != sde.convention:
        raise ValueError(
            f"solver {solver_name(solver)} converges to the "
            f"{_SENSES.get(sense, 'unspecified (neither Ito nor Stratonovich)')} solution but "
            f"the SDE is written in {_SENSES[sde.convention]} form; pass "
            f"{_ARTICLES[sde.convention]} {_SENSES[sde.convention]} solver (default: "
            f"{type(default_solver(sde.convention)).__name__}) or rewrite the SDE"
        )
    if not isinstance(solver, (AbstractGeodesicSolver, Retracted)):
        name = solver_name(solver)
        raise ValueError(
            f"solver {name} steps in R^d and leaves the sphere; wrap it as "
            f"spheresde.Retracted({name}(...)) (normalizes every step) or use "
            f"{type(default_solver(sde.convention)).__name__}()"
        )
    adjoint = kwargs.get("adjoint")
    if isinstance(adjoint, diffrax.BacksolveAdjoint):
        raise ValueError(
            "adjoint=diffrax.BacksolveAdjoint() is not supported: it solves an adjoint SDE "
            "for the state and its cotangents, which are not on the sphere, with the sphere "
            "solver; pass adjoint=diffrax.RecursiveCheckpointAdjoint() (reverse mode; "
            "jax.grad through solve chooses it) or keep the default diffrax.ForwardMode()")
    reverse = reverse or isinstance(adjoint, (diffrax.RecursiveCheckpointAdjoint,
                                              diffrax.DirectAdjoint))
    brownian = _check_controller(controller, solver, brownian, reverse)
    if isinstance(brownian, str):
        if brownian not in _BROWNIAN_KINDS:
            raise ValueError(f"brownian must be 'unsafe', 'weak', 'virtual' or a Diffrax "
                             f"path, got {brownian!r}")
        if key is None:
            raise ValueError("key is required (the Brownian path is drawn from it)")
    elif not isinstance(brownian, diffrax.AbstractPath):
        raise TypeError(f"brownian must be 'unsafe', 'weak', 'virtual' or a Diffrax path, "
                        f"got {type(brownian).__name__}")

    ts = _grid(t0, t1, dt)
    _check_saveat(saveat, float(t0), float(t1))
    if controller is not None:
        # The controller places the steps: keep t0, the end of the first step and t1, so
        # that runs with other dt (a traced first step) share one compilation.
        ts = ts[jnp.array([0, 1, -1])]
    y0 = _check_y0(sde, y0, ts, args, batch=batch)
    ts, saveat = _in_dtype(ts, saveat, state_dtype(y0))
    if not isinstance(brownian, str):
        _check_path(brownian, sde, float(t0), float(t1))
    return solver, y0, ts, brownian, saveat


def _check_saveat(saveat, t0, t1):
    """Refuse save times outside ``[t0, t1]`` or out of order (Diffrax's check of them
    raises inside its jit, under Equinox's stack)."""
    if saveat is None:
        return
    if not isinstance(saveat, diffrax.SaveAt):
        raise TypeError(f"saveat must be a diffrax.SaveAt, got {type(saveat).__name__}")
    subs = jax.tree.leaves(saveat.subs, is_leaf=lambda x: isinstance(x, diffrax.SubSaveAt))
    for sub in subs:
        if sub.ts is None or not _concrete(sub.ts):
            continue
        values = np.asarray(sub.ts, dtype=np.float64).ravel()
        if values.size and (values.min() < t0 or values.max() > t1):
            raise ValueError(f"saveat.ts must lie in [t0, t1] = [{t0:g}, {t1:g}], got values "
                             f"from {values.min():g} to {values.max():g}; pass save times "
                             f"within the interval solved")
        if np.any(np.diff(values) < 0):
            raise ValueError("saveat.ts must be in increasing order; pass np.sort(ts)")


def _check_path(path, sde, t0, t1):
    """A given Brownian path must span ``[t0, t1]`` and have values of ``sde.noise_shape``."""
    start, end = getattr(path, "t0", None), getattr(path, "t1", None)
    if start is not None and end is not None and _concrete(start) and _concrete(end):
        if float(start) > t0 or float(end) < t1:
            raise ValueError(
                f"brownian is a path over [{float(start):g}, {float(end):g}], which does not "
                f"cover [t0, t1] = [{t0:g}, {t1:g}]; pass a path over at least [t0, t1], e.g. "
                f"diffrax.VirtualBrownianTree({t0:g}, {t1:g}, tol, shape, key)")
    try:
        out = jax.eval_shape(lambda: path.evaluate(t0, t1))
    except Exception as err:
        raise ValueError(f"brownian.evaluate(t0, t1) failed: {err}") from err
    shape = jax.tree.map(lambda x: getattr(x, "shape", type(x).__name__), out)
    if shape != sde.noise_shape:
        raise ValueError(
            f"brownian has increments of shape {shape}, but the SDE's "
            f"noise_shape is {sde.noise_shape}; pass a path of that shape, e.g. "
            f"diffrax.VirtualBrownianTree(t0, t1, tol, shape={sde.noise_shape}, key=key)")


def _check_controller(controller, solver, brownian, reverse):
    """The Brownian kind for ``controller`` and for reverse-mode differentiation
    (``reverse``), after checking that they go together."""
    if reverse and brownian == "unsafe":
        raise ValueError("jax.grad through solve needs a Brownian path that can be queried "
                         "again on the backward pass: pass brownian='virtual' (the default "
                         "under jax.grad), not 'unsafe'")
    if brownian is None and reverse:
        brownian = "virtual"
    if controller is None:
        return "unsafe" if brownian is None else brownian
    if not isinstance(controller, diffrax.AbstractStepSizeController):
        raise TypeError(f"stepsize_controller must be a Diffrax step size controller such as "
                        f"diffrax.PIDController(rtol=0, atol=1e-2), got "
                        f"{type(controller).__name__}")
    if not _adaptive(controller):
        return "unsafe" if brownian is None else brownian
    if not has_error_estimate(solver):
        raise ValueError(f"adaptive steps need a solver with an error estimate; "
                         f"{solver_name(solver)} has none: pass solver=None (an Ito SDE is "
                         f"then converted, sde.to_stratonovich(), and solved by "
                         f"GeodesicMidpoint) or a Stratonovich solver such as GeodesicHeun")
    if brownian in ("unsafe", "weak"):
        raise ValueError(f"adaptive steps need a Brownian path that can be queried at any "
                         f"time (a rejected step is retried on it): pass brownian='virtual' "
                         f"or a diffrax.VirtualBrownianTree, not {brownian!r}")
    return "virtual" if brownian is None else brownian


def _grid(t0, t1, dt) -> Array:
    for name, value in (("t0", t0), ("t1", t1), ("dt", dt)):
        if not _concrete(value) or np.ndim(value) != 0:
            raise TypeError(f"{name} must be a concrete scalar (the step grid is fixed before "
                            f"tracing); vmap over keys and y0 instead, got {value!r}")
        if not math.isfinite(float(value)):
            raise ValueError(f"{name} must be finite, got {value!r}")
    t0, t1, dt = float(t0), float(t1), float(dt)
    if dt <= 0:
        raise ValueError(f"dt must be positive, got dt={dt}")
    if t1 <= t0:
        raise ValueError(f"t1 must be greater than t0, got t0={t0}, t1={t1}")
    ratio = (t1 - t0) / dt
    # A ratio within rounding of an integer m means m steps, not m + 1 with a sliver.
    steps = max(round(ratio), 1) if abs(ratio - round(ratio)) <= 1e-9 * ratio else math.ceil(ratio)
    if steps > MAX_STEPS:
        raise ValueError(f"dt={dt:g} gives {steps:,} steps from t0={t0:g} to t1={t1:g}, more "
                         f"than the {MAX_STEPS:,} one solve computes; pass "
                         f"dt >= {(t1 - t0) / MAX_STEPS:.3g}")
    ts = t0 + dt * np.arange(steps + 1, dtype=np.float64)
    ts[-1] = t1
    return jnp.asarray(ts)


class PrecisionWarning(UserWarning):
    """``y0`` asked for a precision that JAX does not compute in here (float64 with
    ``jax_enable_x64`` off), so the solve runs in float32."""


def _state_dtype(y0, given, name="y0"):
    """``y0`` (one leaf of the state, called ``name``) in the dtype the solve computes in,
    which is the dtype of its result.

    Real floats keep theirs (float32, float64); integers and booleans take JAX's
    default float. Half precision is refused (a step of size ``dt`` and the
    normalization would be rounded at 1e-3), complex numbers too. A float64 array
    given while ``jax_enable_x64`` is off (``jnp.asarray`` made it float32) warns."""
    if jnp.issubdtype(y0.dtype, jnp.complexfloating):
        raise ValueError(f"{name} has complex dtype {y0.dtype}; the sphere is real: pass a "
                         f"real array (float32 or float64)")
    if y0.dtype.name in _HALF:
        raise ValueError(
            f"{name} has dtype {y0.dtype}, which solve does not compute in (half precision "
            f"rounds a step of dt = 0.01 and the normalization at about 1e-3): cast it to "
            f"float32, {name}.astype(jnp.float32), or float64 with jax_enable_x64 on; the "
            f"result then has that dtype")
    if not jnp.issubdtype(y0.dtype, jnp.floating):
        return y0.astype(jnp.result_type(float))
    if given is not None and np.dtype(given) == np.float64 and y0.dtype != np.float64:
        warnings.warn(
            f"{name} is float64 but jax_enable_x64 is off, so JAX holds it as {y0.dtype} and "
            f"solve computes and returns {y0.dtype}; turn on "
            f"jax.config.update('jax_enable_x64', True) for float64, or pass "
            f"{name}.astype(np.float32) to say float32",
            PrecisionWarning, stacklevel=6)
    return y0


def _in_dtype(ts, saveat, dtype):
    """The grid and the save times in the state's dtype: Diffrax computes in the widest
    of the two (it promotes ``y0`` to the time dtype), so float64 times would turn a
    float32 state into float64."""
    ts = ts.astype(dtype)
    if saveat is not None:
        def sub_ts(saveat):
            subs = jax.tree.leaves(saveat.subs,
                                   is_leaf=lambda x: isinstance(x, diffrax.SubSaveAt))
            return [sub.ts for sub in subs if sub.ts is not None]

        saveat = eqx.tree_at(sub_ts, saveat, replace_fn=lambda t: jnp.asarray(t, dtype))
    return ts, saveat


def _state_leaves(sde, y0):
    """The leaves of ``y0`` as arrays of one dtype, their names (``y0``, or ``y0[1]``,
    ``y0['x']`` in a pytree state) and manifolds, after checking that ``y0`` has the
    structure ``sde.manifold`` declares."""
    manifold_def = jax.tree.structure(sde.manifold, is_leaf=is_manifold)
    manifolds = jax.tree.leaves(sde.manifold, is_leaf=is_manifold)
    if not sde.tree_state:
        try:
            leaves, names = [jnp.asarray(y0)], ["y0"]
        except (TypeError, ValueError) as err:
            shapes = [getattr(leaf, "shape", ()) for leaf in jax.tree.leaves(y0)]
            raise ValueError(
                f"y0 must be one array (shape (d,), or (n, d) for n points on one sphere "
                f"S^(d-1)); got a {type(y0).__name__} of arrays of shapes {shapes}: for a "
                f"state of several parts (spheres of different dimensions or radii, vectors), "
                f"declare where each lives, SphereSDE(..., manifold=(spheresde.Sphere(), "
                f"spheresde.Euclidean(), ...)) in the structure of y0") from err
        given = [getattr(y0, "dtype", None)]
    else:
        paths_leaves, treedef = jax.tree_util.tree_flatten_with_path(y0)
        if treedef != manifold_def:
            raise ValueError(
                f"y0 has the structure {treedef} but sde.manifold declares {manifold_def}; "
                f"pass y0 with one array per Sphere or Euclidean of the manifold, in the same "
                f"containers")
        names = [f"y0{jax.tree_util.keystr(path)}" for path, _ in paths_leaves]
        given = [getattr(leaf, "dtype", None) for _, leaf in paths_leaves]
        leaves = [jnp.asarray(leaf) for _, leaf in paths_leaves]
    leaves = [_state_dtype(leaf, g, name)
              for leaf, g, name in zip(leaves, given, names, strict=True)]
    dtype = jnp.result_type(*leaves)
    return [leaf.astype(dtype) for leaf in leaves], names, manifolds, manifold_def


def _check_y0(sde, y0, ts, args, *, batch):
    leaves, names, manifolds, treedef = _state_leaves(sde, y0)
    lead = 1 if batch else 0
    for leaf, name, manifold in zip(leaves, names, manifolds, strict=True):
        if isinstance(manifold, Euclidean):
            if leaf.ndim < lead:
                raise ValueError(f"{name} must have a leading paths axis, got shape "
                                 f"{leaf.shape}")
            continue
        if leaf.ndim - lead not in (1, 2):
            want = "(paths, d) or (paths, n, d)" if batch else "(d,) or (n, d)"
            raise ValueError(f"{name} must have shape {want}, got shape {leaf.shape}")
        d = leaf.shape[-1]
        if d < 2:
            raise ValueError(f"{name} rows must lie on S^(d-1) with d >= 2, got d={d} "
                             f"({name} shape {leaf.shape})")
    if batch and len({leaf.shape[0] for leaf in leaves}) > 1:
        raise ValueError(f"every leaf of y0 must have the same number of paths on its leading "
                         f"axis, got shapes {[leaf.shape for leaf in leaves]} for "
                         f"{', '.join(names)}")
    dtype = leaves[0].dtype
    state = jax.tree.unflatten(treedef, [jax.ShapeDtypeStruct(leaf.shape[lead:], dtype)
                                         for leaf in leaves])
    shapes = [s.shape for s in jax.tree.leaves(state)]
    described = shapes[0] if len(shapes) == 1 else state
    for name, fn, extra in (("drift", sde.drift, ()),
                            ("diffusion", sde.diffusion, (sde.noise(dtype),))):
        try:
            out = jax.eval_shape(fn, ts[0], state, args, *extra)
        except Exception as err:
            raise ValueError(
                f"sde.{name} failed on y0 of shape {described} with increments dw of shape "
                f"noise_shape={sde.noise_shape}: {str(err).rstrip('.')}. Check y0 and "
                f"noise_shape: pass the noise_shape of the dw that diffusion(t, y, args, dw) "
                f"expects"
            ) from err
        _check_field_shapes(name, out, state, names, sde.noise_shape)
    leaves = _check_start(leaves, names, manifolds)
    y0 = jax.tree.unflatten(treedef, leaves)
    starts = y0 if batch else jax.tree.map(lambda leaf: leaf[None], y0)
    y0 = _check_tangent(sde, y0, starts, ts[0], args, batch=batch, names=names)
    one = leaves[0]
    if (isinstance(sde.manifold, Sphere) and one.ndim - lead == 2 and one.shape[-2] > 1
            and not sde.shared_noise):
        y0 = _check_own_noise(sde, y0, starts[0], ts[0], args, batch=batch)
    return y0


def _check_field_shapes(name, out, state, names, noise_shape):
    """Refuse a drift or diffusion output ``out`` that is not shaped like the state,
    naming the leaf in a pytree state."""
    if jax.tree.structure(out) != jax.tree.structure(state):
        got = getattr(out, "shape", None) or jax.tree.structure(out)
        want = getattr(state, "shape", None) or jax.tree.structure(state)
        raise ValueError(f"sde.{name} returns {got} for y0 of {want} and noise_shape "
                         f"{noise_shape}; it must return the structure and shapes of y0")
    for leaf, want, where in zip(jax.tree.leaves(out), jax.tree.leaves(state), names,
                                 strict=True):
        if leaf.shape != want.shape:
            raise ValueError(
                f"sde.{name} returns shape {leaf.shape} for {where} of shape {want.shape} and "
                f"noise_shape {noise_shape}; it must match {where}")


def _traced(tree) -> bool:
    """Whether a leaf of ``tree`` is a tracer: then a check on values is staged with
    ``equinox.error_if`` (it raises when the compiled function runs) instead of raising
    here with the offending values in the message."""
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(tree))


def _check_start(leaves, names, manifolds):
    """The leaves of ``y0``, sphere rows put on their sphere (radius ``r``), after
    refusing NaN or infinity (any leaf) and a zero row (sphere leaves), and warning
    (:class:`OffSphereWarning`) about sphere rows off their sphere. Traced, the two
    refusals are staged (``equinox.error_if``) and the warning is not given: it would
    need the values."""
    out = []
    for y0, name, manifold in zip(leaves, names, manifolds, strict=True):
        nonfinite = f"{name} contains NaN or infinite entries"
        zero = f"{name} has a zero row, which has no direction on the sphere"
        sphere = isinstance(manifold, Sphere)
        if _traced(y0):
            y0 = eqx.error_if(y0, jnp.any(~jnp.isfinite(y0)), nonfinite)
            if sphere:
                y0 = manifold.retract(
                    eqx.error_if(y0, jnp.any(jnp.sum(y0 * y0, axis=-1) == 0), zero))
            out.append(y0)
            continue
        # NumPy, not jnp: inside someone else's jit, jnp would stage these checks.
        values = np.asarray(y0)
        if not np.all(np.isfinite(values)):
            raise ValueError(nonfinite)
        if not sphere:
            out.append(y0)
            continue
        norms = np.linalg.norm(values, axis=-1)
        if np.any(norms == 0):
            raise ValueError(zero)
        r = manifold.radius
        off = float(np.max(np.abs(norms - r)))
        if off > 1000 * np.finfo(values.dtype).eps * r:
            sphere_name = "the unit sphere" if r == 1 else f"their sphere (radius {r:g})"
            warnings.warn(f"{name} rows are off {sphere_name} by up to {off:.3g}; "
                          f"normalizing them", OffSphereWarning, stacklevel=5)
        out.append(manifold.retract(y0))
    return out


_MUST_BE_TANGENT = {
    "drift": "a Stratonovich drift must be tangent",
    "diffusion": "a diffusion must be tangent in either sense (of an Ito one, each scheme "
                 "drops the normal part its own way: they would converge to different "
                 "processes)",
}


def _check_tangent(sde, y0, starts, t, args, *, batch, names=("y0",), probes=4):
    """``y0``, after refusing a diffusion (either sense) or a Stratonovich drift with a
    normal part on a sphere leaf, probed in one ``jax.vmap`` at every start in ``starts``
    (leaves of shape ``(paths, *state)``) and at ``probes`` points drawn at random (the
    sphere leaves uniformly on their spheres: the fields must be tangent everywhere, not
    only where the paths start), the diffusion with a fixed increment. The Stratonovich
    solvers take both as tangent and would move the state off the sphere, or, with
    ``Retracted``, turn the normal part into a wrong Ito drift; the Ito schemes drop a
    normal part of the diffusion each in its own way (GeodesicEuler projects it away,
    Retracted(Euler) keeps its square in the normal drift), so they converge to different
    processes and neither is the SDE written. (An Ito drift may have a normal part: it is
    fixed by the diffusion, and the Ito schemes use only the tangent part.) Traced (under
    ``jax.jit`` or ``jax.vmap``), the check is staged with ``equinox.error_if`` and its
    message cannot quote the values."""
    manifolds = jax.tree.leaves(sde.manifold, is_leaf=is_manifold)
    leaves = jax.tree.leaves(starts)
    dtype = leaves[0].dtype
    # fixed draws from NumPy: no random-number kernel to compile into the probe
    rng = np.random.default_rng(0)
    dw = jax.tree.map(lambda x: jnp.asarray(rng.normal(size=x.shape).astype(dtype)),
                      sde.noise(dtype))
    points = []
    for start, manifold in zip(leaves, manifolds, strict=True):
        elsewhere = rng.normal(size=(probes, *start.shape[1:]))
        if isinstance(manifold, Sphere):
            elsewhere = manifold.radius * elsewhere / np.linalg.norm(elsewhere, axis=-1,
                                                                     keepdims=True)
        points.append(jnp.concatenate([start, jnp.asarray(elsewhere.astype(dtype))]))
    points = jax.tree.unflatten(jax.tree.structure(starts), points)
    probed = _tangent_probe(sde, points, t, args, dw)
    if _traced((y0, probed)):  # probed: also drift and diffusion closing over tracers
        for name, defects in probed.items():
            spheres = [jnp.any(d[2]) for d in defects if d is not None]
            if not spheres:  # a state of Euclidean leaves only
                continue
            y0 = eqx.error_if(y0, jnp.any(jnp.stack(spheres)),
                              f"sde.{name} is not tangent to the sphere at a start or at a "
                              f"probe point; {_MUST_BE_TANGENT[name]}, e.g. return "
                              f"spheresde.project_tangent(y, ...)")
        return y0
    paths = leaves[0].shape[0]
    for name, formula in (("drift", "f(y)"), ("diffusion", "g(y) dw")):
        for leaf, defect, points_leaf in zip(names, probed.get(name, ()),
                                             jax.tree.leaves(points), strict=False):
            if defect is None:
                continue
            normal, size, bad = (np.asarray(x) for x in defect)
            if not bad.any():
                continue
            where = np.argwhere(bad)[0]
            point, row = int(where[0]), tuple(int(i) for i in where[1:])
            rows = f" row {row[0]}" if row else ""
            of = "" if leaf == "y0" else f" of {leaf}"
            y = "y" if leaf == "y0" else leaf.replace("y0", "y", 1)
            if point >= paths:
                at = (f"at {y} = {np.round(np.asarray(points_leaf[point]), 3).tolist()} on the "
                      f"sphere (not a start: the field must be tangent at every point of the "
                      f"sphere)")
            elif batch:
                at = f"at the start of path {point}{rows}{of}"
            else:
                at = f"at {leaf}{rows}"
            raise ValueError(
                f"sde.{name} is not tangent to the sphere: |<y, {formula}>| = "
                f"{float(normal[(point, *row)]):.3g} {at} (for |{formula}| = "
                f"{float(size[(point, *row)]):.3g} there); {_MUST_BE_TANGENT[name]}, e.g. "
                f"return spheresde.project_tangent(y, ...)"
            )
    return y0


@eqx.filter_jit  # one compilation, not one per operation of an eager vmap
def _tangent_probe(sde, points, t, args, dw):
    """For the diffusion (and a Stratonovich drift): per leaf of the state, ``(normal,
    size, bad)`` per point and row, ``|<y_i, v_i>| / r``, ``|v_i|`` and whether the normal
    part exceeds rounding; ``None`` for a Euclidean leaf."""
    def fields(y):
        out = {"diffusion": sde.diffusion(t, y, args, dw)}
        if sde.convention == "stratonovich":
            out["drift"] = sde.drift(t, y, args)
        return out

    def defect(manifold, y, value):
        if isinstance(manifold, Euclidean):
            return None
        normal = jnp.abs(jnp.sum(y * value, axis=-1)) / manifold.radius
        size = jnp.linalg.norm(value, axis=-1)
        # rounding scale: the largest row of the same point (as a field computed from
        # all rows may carry their rounding)
        scale = jnp.max(size.reshape(size.shape[0], -1), axis=1)
        scale = scale.reshape(-1, *(1,) * (size.ndim - 1))
        tol = 1000 * jnp.finfo(y.dtype).eps * jnp.maximum(scale, 1.0)
        # a field that is not finite somewhere is not judged there
        return normal, size, jnp.isfinite(normal) & (normal > tol)

    manifolds = jax.tree.leaves(sde.manifold, is_leaf=is_manifold)
    return {name: [defect(m, y, v) for m, y, v in zip(manifolds, jax.tree.leaves(points),
                                                      jax.tree.leaves(value), strict=True)]
            for name, value in jax.vmap(fields)(points).items()}


@eqx.filter_jit
def _noise_probe(sde, y, t, args, u, signs):
    """Whether ``G G^T (s u) = s G G^T u`` fails for a row ``s`` of ``signs`` beyond
    rounding (see :func:`_check_own_noise`)."""
    def g(dw):
        return sde.diffusion(t, y, args, dw)

    _, pullback = jax.vjp(g, jnp.zeros(sde.noise_shape, y.dtype))
    cov = jax.vmap(lambda s: g(pullback(s[:, None] * u)[0]))(signs)
    gap = jnp.abs(cov[1:] - signs[1:, :, None] * cov[0])
    scale = jnp.max(jnp.abs(cov))
    return jnp.all(jnp.isfinite(gap)) & (jnp.max(gap) > 1000 * jnp.finfo(y.dtype).eps * scale)


def _check_own_noise(sde, y0, y, t, args, *, batch):
    r"""``y0``, after refusing a state of several rows whose diffusion drives the rows
    with shared noise, unless the SDE says so (``shared_noise=True``).

    With :math:`G` the linear map ``dw -> diffusion(t, y, args, dw)``, the increments of
    rows :math:`i` and :math:`j` have covariance :math:`G_i G_j^\top dt`: the rows have
    noise of their own when :math:`\Sigma = G G^\top` is block diagonal. For a random
    ``u`` and the signs :math:`s^{(b)}_i = (-1)^{\text{bit } b \text{ of } i}`,
    :math:`\Sigma (s^{(b)} u) = s^{(b)} \Sigma u` for every ``b`` exactly when it is (any
    two rows differ in some bit), so ``1 + log2(n)`` products with :math:`G^\top` (one
    ``jax.vjp``) and :math:`G` (the diffusion itself), in one ``jax.vmap``, decide. The
    check looks at the first state ``y``; traced, it is staged (``equinox.error_if``)."""
    n = y.shape[0]
    u = np.random.default_rng(2).normal(size=y.shape).astype(y.dtype)
    bits = max(1, math.ceil(math.log2(n)))
    flips = (np.arange(n)[None] >> np.arange(bits)[:, None]) & 1
    signs = np.concatenate([np.ones((1, n)), 1 - 2 * flips]).astype(y.dtype)
    try:
        shared = _noise_probe(sde, y, t, args, jnp.asarray(u), jnp.asarray(signs))
    except Exception:  # a diffusion JAX cannot differentiate (a callback, say):
        return y0  # the probe cannot tell; the solve itself only needs the forward map
    d = y.shape[-1]
    if batch:
        each, independent = "each path's state", (
            f"For rows that move independently, give each row its own noise (noise_shape "
            f"({n}, ...)) or make every row a path, solve_batch with y0 of shape "
            f"(paths * {n}, {d})")
    else:
        each, independent = "y0", (
            f"For {n} independent paths on S^{d - 1}, use solve_batch(sde, y0, ...) (one "
            f"path per row of y0; or jax.vmap solve over keys), or give each row its own "
            f"noise (noise_shape ({n}, ...))")
    message = (
        f"{each} has {n} rows (points on S^{d - 1}) and sde.diffusion drives them with noise "
        f"they share (noise_shape {sde.noise_shape}; the increments of different rows are "
        f"correlated), but the SDE does not say so. {independent}; for one state of {n} "
        f"points under common noise, as the "
        f"Transformer's tokens (transformer_sde), declare it: "
        f"SphereSDE(..., shared_noise=True)"
    )
    if _traced((y0, shared)):
        return eqx.error_if(y0, shared, message)
    if bool(shared):
        raise ValueError(message)
    return y0
