"""Bad input to solve / solve_batch: a clear error naming the argument, never a silent answer."""

import diffrax
import jax
import jax.numpy as jnp
import jax.random as jr
import pytest
from helpers import brownian_motion_sde

import spheresde

ITO = brownian_motion_sde(3, "ito")
Y0 = jnp.array([1.0, 0.0, 0.0])


def _solve(**overrides):
    kwargs = dict(sde=ITO, y0=Y0, t0=0.0, t1=0.1, dt=0.01, key=jr.key(0))
    kwargs.update(overrides)
    return spheresde.solve(**kwargs)


@pytest.mark.parametrize("dt", [0.0, -0.01])
def test_dt_not_positive(dt):
    with pytest.raises(ValueError, match="dt must be positive"):
        _solve(dt=dt)


@pytest.mark.parametrize("t1", [0.0, -1.0])
def test_t1_not_after_t0(t1):
    with pytest.raises(ValueError, match="t1 must be greater than t0"):
        _solve(t1=t1)


@pytest.mark.parametrize("name", ["t0", "t1", "dt"])
def test_times_not_finite(name):
    with pytest.raises(ValueError, match=f"{name} must be finite"):
        _solve(**{name: float("nan")})


def test_traced_times_rejected():
    with pytest.raises(TypeError, match="t1 must be a concrete scalar"):
        jax.jit(lambda t1: _solve(t1=t1).ys)(1.0)


def test_nan_in_y0():
    with pytest.raises(ValueError, match="y0 contains NaN"):
        _solve(y0=jnp.array([jnp.nan, 0.0, 1.0]))


def test_zero_row_in_y0():
    with pytest.raises(ValueError, match="y0 has a zero row"):
        _solve(y0=jnp.zeros(3))


def test_y0_wrong_ndim():
    with pytest.raises(ValueError, match=r"y0 must have shape \(d,\) or \(n, d\)"):
        _solve(y0=jnp.ones((2, 2, 3)) / jnp.sqrt(3.0))


def test_d_below_two():
    with pytest.raises(ValueError, match="d >= 2"):
        _solve(y0=jnp.ones(1))


def test_y0_shape_does_not_match_noise():
    # Brownian motion on S^2 has noise (3,); a start on S^3 cannot be driven by it.
    with pytest.raises(ValueError, match=r"sde.diffusion .* y0 of shape \(4,\).*noise_shape"):
        _solve(y0=jnp.array([1.0, 0.0, 0.0, 0.0]))


def test_field_returning_wrong_shape():
    sde = spheresde.SphereSDE(lambda t, y, a: y[..., :2], ITO.diffusion, (3,), "ito")
    with pytest.raises(ValueError, match=r"sde.drift returns shape \(2,\) for y0 of shape \(3,\)"):
        _solve(sde=sde)


def test_off_sphere_is_normalized_with_warning():
    with pytest.warns(spheresde.OffSphereWarning, match="off the unit sphere by up to 1"):
        sol = _solve(y0=2 * Y0)
    # Documented normalization: the same answer as from the normalized start.
    assert jnp.allclose(sol.ys, _solve().ys, atol=1e-15)


def test_tiny_rounding_off_sphere_is_silent():
    _solve(y0=Y0 * (1 + 1e-15))  # filterwarnings = error: a warning would fail here


@pytest.mark.parametrize(
    ("sde", "solver", "words"),
    [
        (ITO, spheresde.GeodesicHeun(), "Stratonovich solution but the SDE is written in Ito "
                                        "form; pass an Ito solver"),
        (brownian_motion_sde(3, "stratonovich"), diffrax.Euler(),
         "Ito solution but the SDE is written in Stratonovich form; pass a Stratonovich solver"),
        (ITO, diffrax.Tsit5(), "unspecified"),
        (ITO, spheresde.Retracted(diffrax.Heun()), r"solver Retracted\(Heun\) converges to the "
                                                   "Stratonovich solution"),
    ],
)
def test_wrong_convention(sde, solver, words):
    with pytest.raises(ValueError, match=words):
        _solve(sde=sde, solver=solver)


def test_not_a_solver():
    with pytest.raises(TypeError, match="solver must be a Diffrax solver"):
        _solve(solver="euler")


def test_not_a_sphere_sde():
    with pytest.raises(TypeError, match=r"sde must be a spheresde\.SphereSDE"):
        _solve(sde=ITO.terms)


def test_bad_brownian():
    with pytest.raises(ValueError, match="brownian must be 'unsafe', 'weak', 'virtual'"):
        _solve(brownian="fast")
    with pytest.raises(TypeError, match="brownian must be"):
        _solve(brownian=3)


def test_missing_key():
    with pytest.raises(ValueError, match="key is required"):
        _solve(key=None)


def test_solve_batch_needs_leading_paths_axis():
    with pytest.raises(ValueError, match=r"y0 must have shape \(paths, d\)"):
        spheresde.solve_batch(ITO, Y0, 0.0, 0.1, 0.01, key=jr.key(0))


def test_solve_batch_checks_every_row():
    y0 = jnp.stack([Y0, jnp.array([0.0, jnp.nan, 0.0])])
    with pytest.raises(ValueError, match="y0 contains NaN"):
        spheresde.solve_batch(ITO, y0, 0.0, 0.1, 0.01, key=jr.key(0))


STRAT = brownian_motion_sde(3, "stratonovich")


@pytest.mark.parametrize("solver", [diffrax.Euler(), diffrax.Heun(), diffrax.Midpoint()])
def test_unretracted_solver_refused(solver):
    # Diffrax's own steps leave the sphere (|X| grows by ~|dW|^2 per step).
    sde = ITO if isinstance(solver, diffrax.Euler) else STRAT
    with pytest.raises(ValueError, match=r"leaves the sphere; wrap it as spheresde\.Retracted"):
        _solve(sde=sde, solver=solver)


def test_non_tangent_stratonovich_diffusion_refused():
    # g(y) dw = dw has a normal part <y, dw> != 0 for the probe increment.
    sde = spheresde.SphereSDE(lambda t, y, a: jnp.zeros_like(y), lambda t, y, a, dw: dw, (3,),
                              "stratonovich")
    with pytest.raises(ValueError, match=r"sde\.diffusion is not tangent to the sphere"):
        _solve(sde=sde)
    with pytest.raises(ValueError, match="not tangent"):
        spheresde.solve_batch(sde, jnp.broadcast_to(Y0, (4, 3)), 0.0, 0.1, 0.01, key=jr.key(0))


def test_non_tangent_ito_diffusion_refused():
    # The case: with g(y) dw = dw GeodesicEuler (which projects the increment)
    # and Retracted(Euler) (which keeps |<y, dw>|^2 in the normal drift) converged to
    # different processes (E<X_1, e_1> = -0.004 +- 0.004 against -0.435 +- 0.003).
    sde = spheresde.SphereSDE(ITO.drift, lambda t, y, a, dw: dw, (3,), "ito")
    for solver in (spheresde.GeodesicEuler(), spheresde.Retracted(diffrax.Euler())):
        with pytest.raises(ValueError, match=r"sde\.diffusion is not tangent to the sphere.*"
                                             r"a diffusion must be tangent in either sense"):
            _solve(sde=sde, solver=solver)


def test_tangent_diffusion_in_float32_passes_the_probe():
    # Rounding of a tangent diffusion (float32) must not trip the check: no error here.
    y0 = spheresde.sample_uniform(jr.key(3), (5,), 3, dtype=jnp.float32)
    spheresde._solve._check_tangent(STRAT, y0, y0[None], 0.0, None, batch=False)


@pytest.mark.parametrize(
    ("sde", "solver", "brownian", "words"),
    [
        (ITO, spheresde.GeodesicEuler(), None, "GeodesicEuler has none: pass solver=None"),
        (ITO, spheresde.Retracted(diffrax.Euler()), None, r"Retracted\(Euler\) has none"),
        (STRAT, None, "unsafe", "pass brownian='virtual'"),
        (STRAT, None, "weak", "pass brownian='virtual'"),
    ],
)
def test_adaptive_steps_refused_clearly(sde, solver, brownian, words):
    with pytest.raises(ValueError, match=words):
        _solve(sde=sde, solver=solver, brownian=brownian,
               stepsize_controller=diffrax.PIDController(rtol=0, atol=1e-2))


def test_controller_not_a_controller():
    with pytest.raises(TypeError, match="stepsize_controller must be a Diffrax step size"):
        _solve(stepsize_controller="pid")


def test_grad_with_unsafe_path_says_what_to_pass():
    with pytest.raises(ValueError, match="pass brownian='virtual'"):
        jax.grad(lambda y: _solve(sde=STRAT, y0=y, brownian="unsafe").ys.sum())(Y0)


def test_dense_output_needs_the_stacked_form():
    with pytest.raises(ValueError, match=r"dense output .* needs the stacked form"):
        spheresde.solve_batch(STRAT, jnp.broadcast_to(Y0, (4, 3)), 0.0, 0.1, 0.01,
                              key=jr.key(0), saveat=diffrax.SaveAt(dense=True), stacked=False)


def test_non_tangent_stratonovich_drift_refused():
    # The Stratonovich schemes take drift and diffusion as tangent (no second projection,
    # the cost that made them 4x slower, bench_solvers.py --stratonovich): a normal part
    # in the drift (here -y, an Ito-style drift in a Stratonovich SDE) is refused.
    sde = spheresde.SphereSDE(lambda t, y, a: -y, STRAT.diffusion, (3,), "stratonovich")
    with pytest.raises(ValueError, match=r"sde\.drift is not tangent to the sphere"):
        _solve(sde=sde)


# Each case below raised a raw error of JAX, Diffrax or Equinox before (issue 23).


@pytest.mark.slow  # 13 s on a loaded 2-core machine: traces the solve under jax.grad
def test_grad_through_jit_says_which_adjoint_to_pass():
    # Under jax.jit solve cannot see jax.grad, runs in forward mode, and JAX's own message
    # ("Reverse-mode differentiation does not work for lax.while_loop") said nothing useful.
    def loss(y):
        return _solve(sde=STRAT, y0=y, brownian="virtual").ys.sum()

    with pytest.raises(RuntimeError, match=r"Pass adjoint=diffrax\.RecursiveCheckpointAdjoint"):
        jax.grad(jax.jit(loss))(Y0)


@pytest.mark.slow  # compiles the checkpointed reverse mode and the forward mode
def test_grad_through_jit_with_the_adjoint_it_names():
    def loss(y, adjoint):
        return _solve(sde=STRAT, y0=y, brownian="virtual", adjoint=adjoint).ys[-1, 2]

    y = jnp.array([0.6, 0.0, 0.8])
    reverse = jax.grad(jax.jit(lambda y: loss(y, diffrax.RecursiveCheckpointAdjoint())))(y)
    forward = jax.jacfwd(lambda y: loss(y, diffrax.ForwardMode()))(y)
    assert jnp.allclose(reverse, forward, atol=1e-12)


def test_brownian_path_of_the_wrong_shape():
    path = diffrax.VirtualBrownianTree(0.0, 0.1, 1e-3, (2,), jr.key(0))
    with pytest.raises(ValueError, match=r"increments of shape \(2,\), but the SDE's noise_shape "
                                         r"is \(3,\); pass a path of that shape"):
        _solve(brownian=path)


def test_brownian_tree_too_short():
    path = diffrax.VirtualBrownianTree(0.0, 0.05, 1e-3, (3,), jr.key(0))
    with pytest.raises(ValueError, match=r"path over \[0, 0.05\], which does not cover \[t0, t1\] "
                                         r"= \[0, 0.1\]; pass a path over at least"):
        _solve(brownian=path)


def test_wrong_noise_shape():
    sde = spheresde.SphereSDE(ITO.drift, ITO.diffusion, (2,), "ito")
    with pytest.raises(ValueError, match=r"(?s)noise_shape=\(2,\).*pass the noise_shape of the "
                                         r"dw that diffusion\(t, y, args, dw\) expects"):
        _solve(sde=sde)


def test_state_on_spheres_of_different_dimensions_needs_a_manifold():
    # a pytree state without manifold=...: the message says how to declare it
    with pytest.raises(ValueError, match=r"y0 must be one array .* shapes \[\(3,\), \(2,\)\]: "
                                         r"for a state of several parts .* declare where each "
                                         r"lives, SphereSDE\(\.\.\., manifold="):
        _solve(y0=(Y0, jnp.array([0.0, 1.0])))


@pytest.mark.parametrize("inner", [diffrax.ReversibleHeun(), diffrax.ItoMilstein()],
                         ids=["ReversibleHeun", "ItoMilstein"])
def test_unsupported_inner_solver_of_retracted(inner):
    name = type(inner).__name__
    with pytest.raises(ValueError, match=rf"Retracted\({name}\) is not supported: .*"
                                         r"diffrax\.Euler\(\) \(Ito\), diffrax\.EulerHeun\(\) "
                                         r"or an explicit Runge-Kutta method"):
        spheresde.Retracted(inner)


def test_backsolve_adjoint_refused():
    with pytest.raises(ValueError, match=r"BacksolveAdjoint\(\) is not supported: .*pass "
                                         r"adjoint=diffrax\.RecursiveCheckpointAdjoint\(\)"):
        _solve(sde=STRAT, brownian="virtual", adjoint=diffrax.BacksolveAdjoint())


@pytest.mark.parametrize("ts", [[0.05, 0.2], [-0.01, 0.05]])
def test_save_times_outside_the_interval(ts):
    with pytest.raises(ValueError, match=r"saveat\.ts must lie in \[t0, t1\] = \[0, 0\.1\]"):
        _solve(saveat=diffrax.SaveAt(ts=jnp.array(ts)))


def test_save_times_out_of_order():
    with pytest.raises(ValueError, match=r"saveat\.ts must be in increasing order"):
        _solve(saveat=diffrax.SaveAt(ts=jnp.array([0.05, 0.02])))


@pytest.mark.slow  # compiles an adaptive solve
def test_max_steps_reached_message_first():
    controller = diffrax.PIDController(rtol=0, atol=1e-4)
    with pytest.raises(RuntimeError, match=r"^solve: the maximum number of steps, "
                                           r"max_steps=3, was reached before t1 = 0\.1; pass "
                                           r"a larger max_steps"):
        _solve(sde=STRAT, stepsize_controller=controller, max_steps=3)


def _nan_after(t_bad):
    """Brownian motion on S^2 whose drift is NaN from ``t > t_bad`` on."""
    def drift(t, y, args):
        return jnp.where(t > t_bad, jnp.nan, 0.0) * y

    return spheresde.SphereSDE(drift, ITO.diffusion, (3,), "ito")


def test_non_finite_state_raises_with_the_time():
    # The drift is evaluated at the start of a step: the first one from t > 0.05 is the
    # step [0.06, 0.07] of the grid dt = 0.01.
    with pytest.raises(RuntimeError, match=r"^solve: the state turned NaN or infinite in the "
                                           r"step ending at t = 0\.07"):
        _solve(sde=_nan_after(0.05))


@pytest.mark.parametrize(("solver", "steps"), [
    # GeodesicItoHeun evaluates the drift at the end of the step too: [0.05, 0.06] is bad.
    pytest.param(spheresde.GeodesicItoHeun(), 6, id="GeodesicItoHeun"),
    pytest.param(spheresde.Retracted(diffrax.Euler()), 7, id="Retracted(Euler)"),
])
def test_non_finite_state_is_unsuccessful(solver, steps):
    sol = _solve(sde=_nan_after(0.05), solver=solver, throw=False,
                 saveat=diffrax.SaveAt(steps=True))
    assert sol.result == diffrax.RESULTS.nonfinite
    assert int(sol.stats["num_steps"]) == steps  # stopped at the first bad step
    assert jnp.all(jnp.isfinite(sol.ys[:steps - 1]))


@pytest.mark.slow  # compiles the per-path (vmapped) form
def test_non_finite_paths_of_a_batch_are_counted():
    y0 = jnp.stack([Y0, jnp.array([0.0, 0.0, 1.0])])

    def drift(t, y, args):  # NaN for the second start only
        return jnp.where(y[..., 2:] > 0.5, jnp.nan, 0.0) * y

    sde = spheresde.SphereSDE(drift, ITO.diffusion, (3,), "ito")
    with pytest.raises(RuntimeError, match=r"step ending at t = 0\.01 in 1 of 2 paths "
                                           r"\(first: path 1\)"):
        spheresde.solve_batch(sde, y0, 0.0, 0.1, 0.01, key=jr.key(0), stacked=False)
    sol = spheresde.solve_batch(sde, y0, 0.0, 0.1, 0.01, key=jr.key(0), stacked=False,
                                throw=False)
    assert [bool(r) for r in sol.result == diffrax.RESULTS.nonfinite] == [False, True]


def test_events_need_the_per_path_form():
    event = diffrax.Event(lambda t, y, args, **kwargs: y[..., 2] < 0)
    with pytest.raises(ValueError, match=r"an event stops each path at its own time, which "
                                         r"needs stacked=False"):
        spheresde.solve_batch(STRAT, jnp.broadcast_to(Y0, (4, 3)), 0.0, 0.1, 0.01,
                              key=jr.key(0), event=event, stacked=True)
