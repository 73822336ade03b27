"""The solvers' single steps against their formulas, and solve / solve_batch behaviour."""

import diffrax
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest
import scipy.linalg
import scipy.stats
from helpers import brownian_motion_sde, random_tangent_sde

import spheresde
from spheresde._solve import _forward_mode_ready, stack_sde
from spheresde.transformer import PureNoise, transformer_sde


def _one_step(sde, solver, y0, dw, dt):
    """One step of ``solver`` from ``y0`` over ``[0, dt]`` with Brownian increment ``dw``."""
    path = diffrax.LinearInterpolation(jnp.array([0.0, dt]), jnp.stack([jnp.zeros_like(dw), dw]))
    return spheresde.solve(sde, y0, 0.0, dt, dt, brownian=path, solver=solver).ys[-1]


@pytest.fixture
def problem():
    sde = random_tangent_sde(3, d=4, n=3, m=2, convention="ito")
    y0 = spheresde.sample_uniform(jr.key(1), (3,), 4)
    dw = jnp.array([0.3, -0.2])
    return sde, y0, dw, 0.05


def test_geodesic_euler_is_a_rotation(problem):
    # y1 = expm(D y^T - y D^T) y with D = P_y(f dt + g dW): the Lie-group form of the
    # update, computed with scipy's matrix exponential row by row.
    sde, y0, dw, dt = problem
    y1 = _one_step(sde, spheresde.GeodesicEuler(), y0, dw, dt)
    inc = sde.drift(0.0, y0, None) * dt + sde.diffusion(0.0, y0, None, dw)
    for y, v, out in zip(np.asarray(y0), np.asarray(inc), np.asarray(y1), strict=True):
        delta = v - (v @ y) * y
        rotation = scipy.linalg.expm(np.outer(delta, y) - np.outer(y, delta))
        np.testing.assert_allclose(out, rotation @ y, atol=1e-14)


def test_retracted_euler_normalizes_the_euler_step(problem):
    sde, y0, dw, dt = problem
    y1 = _one_step(sde, spheresde.Retracted(diffrax.Euler()), y0, dw, dt)
    euler = y0 + sde.drift(0.0, y0, None) * dt + sde.diffusion(0.0, y0, None, dw)
    np.testing.assert_allclose(y1, euler / jnp.linalg.norm(euler, axis=-1, keepdims=True),
                               atol=1e-15)


def _strat(sde):
    return spheresde.SphereSDE(
        lambda t, y, a: spheresde.project_tangent(y, sde.drift(t, y, a)),
        sde.diffusion, sde.noise_shape, "stratonovich", shared_noise=sde.shared_noise)


def _rotate_back(x, y, u):
    """Parallel transport T_x -> T_y along the great circle, as the rotation in span{x, y}."""
    e1 = x
    e2 = y - (y @ x) * x
    e2 = e2 / np.linalg.norm(e2)
    c, s = y @ x, y @ e2  # y = c e1 + s e2
    a, b = u @ e1, u @ e2
    rest = u - a * e1 - b * e2
    # tangent direction at x along the circle is e2; it is carried to -s e1 + c e2.
    return rest + b * (-s * e1 + c * e2) + a * (c * e1 + s * e2)


def test_geodesic_heun_and_midpoint_formulas(problem):
    sde, y0, dw, dt = problem
    sde = _strat(sde)

    def F(y):
        v = np.asarray(sde.drift(0.0, y, None) * dt + sde.diffusion(0.0, y, None, dw))
        return v - np.sum(v * y, -1, keepdims=True) * y

    def exp(y, v):
        th = np.linalg.norm(v, axis=-1, keepdims=True)
        return np.cos(th) * y + np.sin(th) / th * v

    y = np.asarray(y0)
    k1 = F(y)
    pred = exp(y, k1)
    k2 = np.stack([_rotate_back(p, q, u) for p, q, u in zip(pred, y, F(pred), strict=True)])
    np.testing.assert_allclose(_one_step(sde, spheresde.GeodesicHeun(), y0, dw, dt),
                               exp(y, (k1 + k2) / 2), atol=1e-14)
    mid = exp(y, k1 / 2)
    k2 = np.stack([_rotate_back(p, q, u) for p, q, u in zip(mid, y, F(mid), strict=True)])
    np.testing.assert_allclose(_one_step(sde, spheresde.GeodesicMidpoint(), y0, dw, dt),
                               exp(y, k2), atol=1e-14)


@pytest.mark.parametrize(
    ("solver", "sense", "strong", "weak"),
    [
        (spheresde.GeodesicEuler(), "ito", 0.5, 1.0),
        (spheresde.GeodesicItoHeun(), "ito", 0.5, 1.0),
        (spheresde.Retracted(diffrax.Euler()), "ito", 0.5, 1.0),
        (spheresde.GeodesicHeun(), "stratonovich", 0.5, 1.0),
        (spheresde.GeodesicMidpoint(), "stratonovich", 0.5, 1.0),
        (spheresde.Retracted(diffrax.Heun()), "stratonovich", 0.5, 1.0),
    ],
)
def test_declared_sense_and_orders(solver, sense, strong, weak):
    assert spheresde.solver_convention(solver) == sense
    assert solver.strong_order(None) == strong
    assert solver.weak_order(None) == weak


def test_default_solver_by_convention():
    assert isinstance(spheresde.default_solver("ito"), spheresde.GeodesicEuler)
    assert isinstance(spheresde.default_solver("stratonovich"), spheresde.GeodesicMidpoint)


def test_grid_lands_on_t1():
    sde = brownian_motion_sde(3, "ito")
    y0 = jnp.array([0.0, 0.0, 1.0])
    sol = spheresde.solve(sde, y0, 0.0, 1.0, 0.3, key=jr.key(0),
                          saveat=diffrax.SaveAt(steps=True))
    np.testing.assert_allclose(sol.ts, [0.3, 0.6, 0.9, 1.0], rtol=1e-15)
    assert int(sol.stats["num_steps"]) == 4
    sol = spheresde.solve(sde, y0, 0.0, 40.0, 0.01, key=jr.key(0))
    assert int(sol.stats["num_steps"]) == 4000  # no extra sliver step from rounding
    assert float(sol.ts[-1]) == 40.0


@pytest.mark.slow  # ~12 s: compiles the vmapped and the stacked forms
def test_unstacked_solve_batch_matches_solve_and_vmap():
    sde = transformer_sde(2.0, PureNoise(1.0), d=3)
    y0 = spheresde.sample_uniform(jr.key(2), (5, 2), 3)
    key = jr.key(3)
    batch = spheresde.solve_batch(sde, y0, 0.0, 0.5, 0.05, key=key, stacked=False).ys[:, -1]
    keys = jr.split(key, 5)
    single = spheresde.solve(sde, y0[1], 0.0, 0.5, 0.05, key=keys[1]).ys[-1]
    np.testing.assert_allclose(batch[1], single, atol=1e-14)
    vmapped = jax.vmap(lambda y, k: spheresde.solve(sde, y, 0.0, 0.5, 0.05, key=k).ys[-1])
    np.testing.assert_allclose(vmapped(y0, keys), batch, atol=1e-14)
    assert float(spheresde.norm_error(batch)) < 1e-14
    assert not np.allclose(batch[0], batch[1])  # different paths differ


@pytest.mark.slow
@pytest.mark.parametrize(
    ("convention", "solver"),
    [("ito", spheresde.GeodesicEuler()), ("ito", spheresde.Retracted(diffrax.Euler())),
     ("stratonovich", spheresde.GeodesicHeun()), ("stratonovich", spheresde.GeodesicMidpoint()),
     ("stratonovich", spheresde.Retracted(diffrax.Heun()))],
)
def test_stacked_state_steps_every_path_as_solve(convention, solver):
    # The stacked solve of solve_batch is exact path by path: given the same Brownian
    # values, row p of one solve of the stacked SDE is solve on path p alone. This is
    # what lets every solver run unchanged on a (paths, n, d) state.
    paths, dt = 3, 0.05
    sde = random_tangent_sde(7, d=4, n=2, m=3, convention=convention)
    y0 = spheresde.sample_uniform(jr.key(9), (paths, 2), 4)
    ts = jnp.linspace(0.0, 0.5, 11)
    w = jnp.cumsum(jnp.sqrt(dt) * jr.normal(jr.key(10), (11, paths, 3)).at[0].set(0.0), axis=0)
    stacked_sde = stack_sde(sde, paths)
    stacked = diffrax.diffeqsolve(
        stacked_sde.terms(diffrax.LinearInterpolation(ts, w)), _forward_mode_ready(solver),
        0.0, 0.5, None, y0, stepsize_controller=diffrax.StepTo(ts), adjoint=diffrax.ForwardMode(),
    ).ys[-1]
    for p in range(paths):
        path = diffrax.LinearInterpolation(ts, w[:, p])
        one = spheresde.solve(sde, y0[p], 0.0, 0.5, dt, brownian=path, solver=solver).ys[-1]
        np.testing.assert_allclose(stacked[p], one, atol=1e-13)


@pytest.mark.slow  # ~12 s: compiles the vmapped and the stacked forms
def test_stacked_and_unstacked_solve_batch_agree_in_law():
    # Same law, different draws. rho_T = <X_1, X_2> at T = 1 for the two-token model,
    # 3,000 paths each way, one common start. Mean: standard error of the difference
    # ~ 0.02 at these spreads (checked below), asserted within 4 of them; the full
    # distribution by a two-sample KS test at level 1e-3 (fixed keys).
    sde = transformer_sde(2.0, PureNoise(1.0), d=4)
    start = spheresde.sample_uniform(jr.key(11), (2,), 4)
    y0 = jnp.broadcast_to(start, (3000, 2, 4))
    out = {}
    for stacked in (True, False):
        sol = spheresde.solve_batch(sde, y0, 0.0, 1.0, 0.02, key=jr.key(12), stacked=stacked,
                                    saveat=diffrax.SaveAt(ts=jnp.array([0.5, 1.0])))
        assert sol.ys.shape == (3000, 2, 2, 4)
        # One copy of the save times, the same for every path (no paths axis).
        assert sol.ts.shape == (2,)
        np.testing.assert_allclose(sol.ts, [0.5, 1.0])
        assert float(spheresde.norm_error(sol.ys)) < 1e-13
        out[stacked] = np.asarray(jnp.sum(sol.ys[:, -1, 0] * sol.ys[:, -1, 1], axis=-1))
    a, b = out[True], out[False]
    se = np.sqrt(a.var() / a.size + b.var() / b.size)
    assert se < 0.03
    assert abs(a.mean() - b.mean()) < 4 * se
    assert scipy.stats.ks_2samp(a, b).pvalue > 1e-3
    assert not np.allclose(a[:100], b[:100])  # the draws do differ


@pytest.mark.slow  # ~15 s, compiling the tree over the stacked shape
def test_stacked_virtual_brownian_tree_is_one_tree_over_all_paths():
    # brownian="virtual" with stacking: one VirtualBrownianTree of shape (paths, d) from
    # key; path p is solve driven by row p of that tree's values on the grid.
    sde = brownian_motion_sde(3, "ito")
    y0 = spheresde.sample_uniform(jr.key(14), (3,), 3)
    ys = spheresde.solve_batch(sde, y0, 0.0, 0.2, 0.02, key=jr.key(15), brownian="virtual").ys
    assert ys.shape == (3, 1, 3)
    tree = diffrax.VirtualBrownianTree(0.0, 0.2, 0.02 / 8, (3, 3), jr.key(15))
    ts = jnp.linspace(0.0, 0.2, 11)
    w = jax.vmap(lambda t: tree.evaluate(0.0, t))(ts)
    for p in range(3):
        path = diffrax.LinearInterpolation(ts, w[:, p])
        one = spheresde.solve(sde, y0[p], 0.0, 0.2, 0.02, brownian=path).ys[-1]
        np.testing.assert_allclose(ys[p, -1], one, atol=1e-13)


def test_stacked_needs_a_plain_saveat():
    sde = brownian_motion_sde(3, "ito")
    y0 = spheresde.sample_uniform(jr.key(13), (4,), 3)
    norms = diffrax.SaveAt(t1=True, fn=lambda t, y, args: jnp.linalg.norm(y, axis=-1))
    with pytest.raises(ValueError, match="stacked=True needs a saveat"):
        spheresde.solve_batch(sde, y0, 0.0, 0.1, 0.01, key=jr.key(0), saveat=norms, stacked=True)
    # The default falls back to one solve per path, where fn sees a single state.
    sol = spheresde.solve_batch(sde, y0, 0.0, 0.1, 0.01, key=jr.key(0), saveat=norms)
    np.testing.assert_allclose(sol.ys, 1.0, atol=1e-14)
    assert sol.ys.shape == (4, 1)


@pytest.mark.slow
def test_virtual_brownian_is_a_reusable_path():
    sde = brownian_motion_sde(3, "stratonovich")
    y0 = jnp.array([1.0, 0.0, 0.0])
    key = jr.key(4)
    a = spheresde.solve(sde, y0, 0.0, 1.0, 0.01, key=key, brownian="virtual").ys
    tree = diffrax.VirtualBrownianTree(0.0, 1.0, 0.01 / 8, (3,), key)
    b = spheresde.solve(sde, y0, 0.0, 1.0, 0.01, brownian=tree).ys
    np.testing.assert_allclose(a, b, atol=1e-15)


def test_retracted_runge_kutta_inner_solver_runs():
    # Heun is a Runge--Kutta solver: Diffrax's ForwardMode needs its scan_kind, which
    # solve sets through the Retracted wrapper. Three points under one dW.
    sde = brownian_motion_sde(4, "stratonovich", shared_noise=True)
    y0 = spheresde.sample_uniform(jr.key(5), (3,), 4)
    sol = spheresde.solve(sde, y0, 0.0, 1.0, 0.01, key=jr.key(6),
                          solver=spheresde.Retracted(diffrax.Heun()))
    assert float(spheresde.norm_error(sol.ys)) < 1e-15


@pytest.mark.slow
def test_plain_euler_drifts_off_the_sphere():
    # The reason for this package: Diffrax's Euler on the same SDE leaves the sphere
    # (which is why solve refuses it, tests/test_solve_inputs.py).
    sde = transformer_sde(2.0, PureNoise(1.0), d=4)
    y0 = spheresde.sample_uniform(jr.key(7), (2,), 4)
    path = diffrax.UnsafeBrownianPath(shape=(4, 4), key=jr.key(8))
    plain = diffrax.diffeqsolve(sde.terms(path), diffrax.Euler(), 0.0, 5.0, 0.01, y0,
                                adjoint=diffrax.ForwardMode())
    ours = spheresde.solve(sde, y0, 0.0, 5.0, 0.01, key=jr.key(8))
    assert float(spheresde.norm_error(plain.ys)) > 1e-3
    assert float(spheresde.norm_error(ours.ys)) < 1e-14


def _varying_sde():
    r"""Stratonovich :math:`dX = s(X) P_X \circ dW` on :math:`S^2`, :math:`s(x) = 0.2 + 2 x_3^2`:
    the noise is ten times stronger at the poles than at the equator."""
    def diffusion(t, y, args, dw):
        return (0.2 + 2 * y[..., 2:] ** 2) * spheresde.project_tangent(y, dw)

    return spheresde.SphereSDE(lambda t, y, a: jnp.zeros_like(y), diffusion, (3,), "stratonovich")


@pytest.mark.slow  # ~6 s: three compiled solves
@pytest.mark.parametrize("solver", [None, spheresde.Retracted(diffrax.Heun())])
def test_saves_between_grid_points_follow_great_circles(solver):
    # Saving at 0.105, between the grid points 0.10 and 0.11: Diffrax's linear
    # interpolation cut the chord (norm down to 0.98 in issue 14); on the great circle the
    # midpoint in time is the geodesic midpoint, at half the distance from either end.
    sde = brownian_motion_sde(3, "stratonovich")
    y0 = spheresde.sample_uniform(jr.key(1), (40,), 3)
    sol = spheresde.solve_batch(sde, y0, 0.0, 0.5, 0.01, key=jr.key(2), solver=solver,
                                saveat=diffrax.SaveAt(ts=[0.1, 0.105, 0.11, 0.255, 0.5]))
    assert sol.ts.shape == (5,)  # no redundant paths axis
    assert float(spheresde.norm_error(sol.ys)) < 1e-14
    a, mid, b = sol.ys[:, 0], sol.ys[:, 1], sol.ys[:, 2]
    step = spheresde.geodesic_distance(a, b)
    assert float(jnp.min(step)) > 1e-3  # a real step, not a degenerate check
    np.testing.assert_allclose(spheresde.geodesic_distance(a, mid), step / 2, rtol=1e-9)
    np.testing.assert_allclose(spheresde.geodesic_distance(mid, b), step / 2, rtol=1e-9)


@pytest.mark.slow  # ~4 s
def test_dense_output_of_solve_batch_is_on_the_sphere():
    sde = brownian_motion_sde(3, "stratonovich")
    y0 = spheresde.sample_uniform(jr.key(1), (40,), 3)
    dense = spheresde.solve_batch(sde, y0, 0.0, 0.5, 0.01, key=jr.key(2),
                                  saveat=diffrax.SaveAt(dense=True))
    saved = spheresde.solve_batch(sde, y0, 0.0, 0.5, 0.01, key=jr.key(2),
                                  saveat=diffrax.SaveAt(ts=[0.3, 0.305]))
    for i, t in enumerate((0.3, 0.305)):
        value = dense.evaluate(t)
        assert value.shape == (40, 3)
        assert float(spheresde.norm_error(value)) < 1e-14
        # The same paths (stacked form, same key and grid): dense equals saved.
        np.testing.assert_allclose(value, saved.ys[:, i], atol=1e-14)


@pytest.mark.slow  # ~15 s: adaptive and fixed solves of 24 paths, a fine reference
def test_adaptive_steps_converge_on_one_virtual_path():
    # Pathwise (strong) error at T = 1 against a fine fixed-step solve (dt = 2^-12) of the
    # SAME VirtualBrownianTree paths, 24 paths. Tightening atol 10x must shrink the mean
    # error (strong order 1/2 in the error estimate's step: ~sqrt(10)x; asserted > 2x)
    # and every state must be on the sphere.
    sde = _varying_sde()
    y0 = spheresde.sample_uniform(jr.key(3), (24,), 3)
    keys = jr.split(jr.key(4), 24)
    tol = 2.0**-14

    def run(y, k, **kw):
        path = diffrax.VirtualBrownianTree(0.0, 1.0, tol=tol, shape=(3,), key=k)
        return spheresde.solve(sde, y, 0.0, 1.0, kw.pop("dt", 0.05), brownian=path,
                               max_steps=2**14, **kw).ys[-1]

    reference = jax.vmap(lambda y, k: run(y, k, dt=2.0**-12))(y0, keys)
    errors = []
    for atol in (1e-2, 1e-3):
        pid = diffrax.PIDController(rtol=0.0, atol=atol)
        ends = jax.vmap(lambda y, k, pid=pid: run(y, k, stepsize_controller=pid))(y0, keys)
        assert float(spheresde.norm_error(ends)) < 1e-14
        errors.append(float(jnp.mean(spheresde.geodesic_distance(ends, reference))))
    assert errors[1] < errors[0] / 2, errors


@pytest.mark.slow  # ~18 s: compiles the checkpointed reverse mode and the forward mode
def test_grad_through_solve_matches_forward_mode():
    # jax.grad (reverse mode: solve takes a virtual path and checkpointed adjoint) against
    # jax.jacfwd on the same virtual path: the same derivative of one coordinate at T.
    sde = _varying_sde()
    y0 = spheresde.sample_uniform(jr.key(5), (), 3)

    def end(y, **kw):
        return spheresde.solve(sde, y, 0.0, 0.2, 0.02, key=jr.key(6), **kw).ys[-1, 2]

    reverse = jax.grad(end)(y0)
    forward = jax.jacfwd(lambda y: end(y, brownian="virtual"))(y0)
    assert float(jnp.linalg.norm(forward)) > 1e-2
    np.testing.assert_allclose(reverse, forward, rtol=1e-10, atol=1e-12)
