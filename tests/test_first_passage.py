"""First-passage times: the Brownian-bridge correction removes the sqrt(dt) bias of discrete
monitoring; cap and band exit times of Brownian motion on S^2 and S^4 against the closed
forms derived in proofs_check.first_passage (not typed here)."""

import math

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest

import spheresde
from proofs_check.first_passage import band_exit_time, mean_exit_time


def _bm(d):
    return spheresde.SphereSDE(lambda t, y, a: jnp.zeros_like(y),
                               lambda t, y, a, dw: spheresde.project_tangent(y, dw),
                               noise_shape=(d,), convention="stratonovich")


def _pole(d, dtype):
    return jnp.zeros(d, dtype).at[-1].set(1)


def _z(fp, exact):
    return (float(fp.mean) - exact) / float(fp.standard_error)


def test_regions_and_their_levels():
    e3 = jnp.array([0.0, 0.0, 1.0])
    cap = spheresde.ExitRegion.cap(e3 * 2, math.pi / 3)  # the axis is normalized
    assert float(cap(e3)) == pytest.approx(0.5 - 1)
    assert float(cap(jnp.array([1.0, 0.0, 0.0]))) == pytest.approx(0.5)
    band = spheresde.ExitRegion.band(e3, 0.5)
    assert float(band(jnp.array([1.0, 0.0, 0.0]))) < 0 < float(band(e3))
    event = cap.event()
    assert float(event.cond_fn(0.0, e3, None)) < 0


@pytest.mark.parametrize(("call", "message"), [
    (lambda: spheresde.ExitRegion.cap(jnp.zeros(3), 1.0), "non-zero"),
    (lambda: spheresde.ExitRegion.cap(jnp.ones(3), 4.0), r"angle must lie in \(0, pi\)"),
    (lambda: spheresde.ExitRegion.band(jnp.ones(3), 1.5), r"height must lie in \(0, 1\)"),
    (lambda: spheresde.ExitRegion.cap(jnp.ones((2, 3)), 1.0), r"shape \(d,\)"),
])
def test_bad_regions(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_bad_inputs_to_first_passage():
    sde, e3 = _bm(3), jnp.array([0.0, 0.0, 1.0])
    cap = spheresde.ExitRegion.cap(e3, math.pi / 4)
    with pytest.raises(TypeError, match="ExitRegion"):
        spheresde.first_passage(sde, lambda y: y[2], e3, 1.0, 0.1, paths=4, key=jr.key(0))
    with pytest.raises(ValueError, match="inside the region"):
        spheresde.first_passage(sde, cap, -e3, 1.0, 0.1, paths=4, key=jr.key(0))
    with pytest.raises(ValueError, match="batch of starts"):
        spheresde.first_passage(sde, cap, e3, 1.0, 0.1, key=jr.key(0))
    with pytest.raises(ValueError, match="paths must be a positive int"):
        spheresde.first_passage(sde, cap, e3, 1.0, 0.1, paths=0, key=jr.key(0))
    with pytest.raises(ValueError, match="dt must be positive"):
        spheresde.first_passage(sde, cap, e3, 1.0, -0.1, paths=4, key=jr.key(0))
    scalar_free = spheresde.ExitRegion(lambda y: y - 2)
    with pytest.raises(ValueError, match="must return a scalar"):
        spheresde.first_passage(sde, scalar_free, e3, 1.0, 0.1, paths=4, key=jr.key(0))


def test_censored_paths_warn_and_shapes_dtypes():
    # 500 paths, t1 = 0.05 << E tau = 1.39: most are still inside at t1.
    sde, e3 = _bm(3), jnp.array([0.0, 0.0, 1.0], jnp.float32)
    cap = spheresde.ExitRegion.cap(e3, math.pi / 2)
    with pytest.warns(UserWarning, match="had not left the region"):
        fp = spheresde.first_passage(sde, cap, e3, 0.05, 0.01, paths=500, key=jr.key(0))
    assert fp.times.shape == (500,)
    assert fp.times.dtype == jnp.float32
    assert fp.ys.shape == (500, 3)
    assert fp.ys.dtype == jnp.float32
    assert float(jnp.max(fp.times)) == pytest.approx(0.05)
    assert not bool(jnp.all(fp.exited))


# each case compiles the stepping loop (a few seconds): the plain one runs with the slow tests
@pytest.mark.parametrize("correction", [pytest.param(False, marks=pytest.mark.slow), True])
def test_exit_states_and_times(correction):
    # 2000 paths from the pole of S^2 until z < cos(pi/8), plain and corrected: a plain
    # exit is outside (g >= 0) at a grid time; a corrected one at a step's midpoint.
    sde, e3 = _bm(3), jnp.array([0.0, 0.0, 1.0])
    cap = spheresde.ExitRegion.cap(e3, math.pi / 8)
    dt = 0.01
    fp = spheresde.first_passage(sde, cap, e3, 10.0, dt, paths=2000, key=jr.key(3),
                                 correction=correction)
    assert bool(jnp.all(fp.exited))
    levels = jax.vmap(cap)(fp.ys)
    steps = np.asarray(fp.times) / dt - (0.5 if correction else 0.0)
    assert np.allclose(steps, np.round(steps), atol=1e-6)
    if correction:
        assert bool(jnp.any(levels < 0))  # some paths killed by the bridge, still inside
    else:
        assert bool(jnp.all(levels >= 0))


# Cap exit times from the pole. 10,000 paths, float32, 4 standard errors. The corrected
# estimator's bias measured at dt = 0.01 (10,000 paths) is 0.3 to 1.1 dt in these cases,
# about one standard error or less at the dt used; the plain estimator's, of order
# 0.58 |u'| sqrt(dt), is 8 to 14 standard errors here (asserted: more than 5).
CAPS = [  # (d, angle, dt)
    (3, math.pi / 2, 0.005),
    (3, math.pi / 4, 0.0025),
    (5, math.pi / 2, 0.005),
    (5, math.pi / 4, 0.0025),
]


@pytest.mark.slow
@pytest.mark.parametrize(("d", "angle", "dt"), CAPS)
def test_cap_exit_time_bridge_vs_plain(d, angle, dt):
    exact = float(mean_exit_time(d, angle))
    sde, pole = _bm(d), _pole(d, jnp.float32)
    cap = spheresde.ExitRegion.cap(pole, angle)
    key = jr.fold_in(jr.key(11), d * 10 + int(angle * 4 / math.pi))
    bridge = spheresde.first_passage(sde, cap, pole, 30.0, dt, paths=10_000, key=key)
    plain = spheresde.first_passage(sde, cap, pole, 30.0, dt, paths=10_000, key=key,
                                    correction=False)
    assert bridge.times.dtype == jnp.float32
    assert abs(_z(bridge, exact)) < 4, (float(bridge.mean), exact)
    assert _z(plain, exact) > 5, (float(plain.mean), exact)


@pytest.mark.slow
def test_cap_exit_time_float64():
    # S^2, hemisphere, 10,000 paths at dt = 0.005 in float64 (the tests run with x64 on),
    # 4 standard errors (bias about 0.3 dt = 0.0015, s.e. 0.01).
    exact = float(mean_exit_time(3, math.pi / 2))
    pole = _pole(3, jnp.float64)
    fp = spheresde.first_passage(_bm(3), spheresde.ExitRegion.cap(pole, math.pi / 2), pole,
                                 30.0, 0.005, paths=10_000, key=jr.key(5))
    assert fp.times.dtype == jnp.float64
    assert abs(_z(fp, exact)) < 4, (float(fp.mean), exact)


@pytest.mark.slow
def test_band_exit_time_from_the_equator():
    # S^2, band |z| < 0.5 from the equator: -ln(3/4) = 0.288; 10,000 paths, dt = 0.0025,
    # float32, 4 standard errors; the plain estimator more than 5 standard errors high.
    e3 = jnp.array([0.0, 0.0, 1.0], jnp.float32)
    start = jnp.array([1.0, 0.0, 0.0], jnp.float32)
    exact = float(band_exit_time(3, 0.5))
    band = spheresde.ExitRegion.band(e3, 0.5)
    fp = spheresde.first_passage(_bm(3), band, start, 20.0, 0.0025, paths=10_000, key=jr.key(6))
    plain = spheresde.first_passage(_bm(3), band, start, 20.0, 0.0025, paths=10_000,
                                    key=jr.key(6), correction=False)
    assert abs(_z(fp, exact)) < 4, (float(fp.mean), exact)
    assert _z(plain, exact) > 5, (float(plain.mean), exact)


@pytest.mark.slow
def test_extrapolated_exit_time():
    # S^4 hemisphere at dt = 0.01 (corrected bias 1.1 dt = 0.011, 2 s.e. of one run of
    # 40,000 paths): the extrapolation over 0.01 and 0.02 is within 4 of its standard errors.
    d, angle = 5, math.pi / 2
    exact = float(mean_exit_time(d, angle))
    pole = _pole(d, jnp.float32)
    ext = spheresde.extrapolated_exit_time(_bm(d), spheresde.ExitRegion.cap(pole, angle), pole,
                                           30.0, 0.01, paths=40_000, key=jr.key(8))
    z = (float(ext.value) - exact) / float(ext.standard_error)
    assert abs(z) < 4, (float(ext.value), float(ext.standard_error), exact)
    assert ext.samples.shape == (40_000,)
    assert float(ext.coarse) > float(ext.fine) > exact - 4 * float(ext.standard_error)


@pytest.mark.slow
def test_plain_estimator_is_the_monitored_event():
    # The plain estimator and solve_batch with region.event() (a sign change seen at the end
    # of the step) have the same law: S^2, cap pi/4, dt = 0.02, 4,000 paths each on
    # independent keys; their means agree within 4 standard errors of the difference, and
    # both sit well above the closed form (bias about 0.58 |u'| sqrt(dt) = 0.07).
    sde, e3 = _bm(3), jnp.array([0.0, 0.0, 1.0])
    cap = spheresde.ExitRegion.cap(e3, math.pi / 4)
    plain = spheresde.first_passage(sde, cap, e3, 10.0, 0.02, paths=4000, key=jr.key(21),
                                    correction=False)
    y0 = jnp.broadcast_to(e3, (4000, 3))
    sol = spheresde.solve_batch(sde, y0, 0.0, 10.0, 0.02, key=jr.key(22), event=cap.event())
    assert bool(jnp.all(sol.event_mask))
    event_times = np.asarray(sol.ts[:, 0])
    diff = float(plain.mean) - event_times.mean()
    se = math.hypot(float(plain.standard_error), event_times.std() / math.sqrt(4000))
    assert abs(diff) < 4 * se, (float(plain.mean), event_times.mean(), se)
    exact = float(mean_exit_time(3, math.pi / 4))
    assert (event_times.mean() - exact) / (event_times.std() / math.sqrt(4000)) > 5


# --- no silent answers: non-finite parameters, jax.grad, jax.jit ----------------------

def _towards(kappa):
    """Drift ``kappa P_y e3`` towards the pole (von Mises-Fisher Langevin), Stratonovich."""
    e3 = jnp.array([0.0, 0.0, 1.0])
    return spheresde.SphereSDE(lambda t, y, a: kappa * spheresde.project_tangent(y, e3),
                               lambda t, y, a, dw: spheresde.project_tangent(y, dw),
                               noise_shape=(3,), convention="stratonovich")


def _drift_in_args():
    e3 = jnp.array([0.0, 0.0, 1.0])
    return spheresde.SphereSDE(lambda t, y, a: a * spheresde.project_tangent(y, e3),
                               lambda t, y, a, dw: spheresde.project_tangent(y, dw),
                               noise_shape=(3,), convention="stratonovich")


@pytest.mark.slow
def test_nonfinite_parameter_raises():
    # Was: mean = t1 with standard error 0 and a warning that reads like censoring. A NaN
    # in args, an infinite field of the SDE, a NaN level.
    e3 = jnp.array([0.0, 0.0, 1.0])
    cap = spheresde.ExitRegion.cap(e3, math.pi / 2)
    with pytest.raises(RuntimeError, match=r"the state of path 0 turned NaN or infinite in "
                                           r"the step ending at t = 0.1: sde.drift"):
        spheresde.first_passage(_drift_in_args(), cap, e3, 2.0, 0.1, paths=8, key=jr.key(0),
                                args=math.nan)
    with pytest.raises(RuntimeError, match=r"the state .* turned NaN"):
        spheresde.first_passage(_towards(math.inf), cap, e3, 2.0, 0.1, paths=8, key=jr.key(0))
    # a level that is NaN away from the start (at the start it is checked: g < 0)
    level = spheresde.ExitRegion(lambda y: jnp.where(y[2] > 0.999999, -1.0, math.nan))
    with pytest.raises(RuntimeError, match=r"region\.level returned NaN or infinity"):
        spheresde.first_passage(_towards(0.0), level, e3, 2.0, 0.1, paths=8, key=jr.key(0))


@pytest.mark.parametrize("transform", [jax.grad, jax.jit, jax.vmap])
@pytest.mark.parametrize("where", ["args", "closure"])
def test_traced_first_passage_is_refused(transform, where):
    # Was: TracerArrayConversionError (args) or exactly 0.0 (a closure, under jax.grad).
    e3 = jnp.array([0.0, 0.0, 1.0])
    cap = spheresde.ExitRegion.cap(e3, math.pi / 2)

    def mean(kappa):
        sde, args = (_drift_in_args(), kappa) if where == "args" else (_towards(kappa), None)
        return spheresde.first_passage(sde, cap, e3, 2.0, 0.1, paths=8, key=jr.key(0),
                                       args=args).mean

    with pytest.raises(TypeError, match=r"piecewise constant .* common random numbers"):
        transform(mean)(jnp.array([0.5]) if transform is jax.vmap else 0.5)


def _cap_exit_time_towards_pole(kappa, angle):
    r"""E tau from the pole of S^2 for the cap of ``angle`` under the Stratonovich drift
    :math:`\kappa P_y e`, from the ODE of the mean exit time in the height :math:`z`.

    :math:`dz = \kappa(1 - z^2)dt - z\,dt + \sqrt{1 - z^2}\,dB` (Brownian motion's height,
    ``proofs_check.first_passage``, plus :math:`\langle e, \kappa P_y e\rangle`), so
    :math:`\tfrac12(1-z^2)u'' + (\kappa(1-z^2) - z)u' = -1`; times :math:`e^{2\kappa z}`,
    :math:`((1 - z^2) e^{2\kappa z} u')' = -2 e^{2\kappa z}`, bounded at the pole:
    :math:`u'(z) = (e^{2\kappa(1-z)} - 1) / (\kappa (1 - z^2))` and
    :math:`\mathbb{E}\tau = \int_{\cos\alpha}^1 u'`, here by 200-point Gauss--Legendre
    (the integrand is smooth; at :math:`\kappa = 0` it is :math:`2/(1+z)`, the
    :math:`2\ln 2` of the hemisphere).
    """
    c = math.cos(angle)
    x, w = np.polynomial.legendre.leggauss(200)
    z = (1 - c) / 2 * x + (1 + c) / 2
    return (1 - c) / 2 * float(np.sum(w * np.expm1(2 * kappa * (1 - z)) / (kappa * (1 - z * z))))


def test_closed_form_of_the_reference():
    # the reference's kappa -> 0 limit is Brownian motion's closed form (proofs_check)
    assert _cap_exit_time_towards_pole(1e-9, math.pi / 2) == pytest.approx(2 * math.log(2))
    assert _cap_exit_time_towards_pole(1e-9, math.pi / 3) == pytest.approx(
        float(mean_exit_time(3, math.pi / 3)))


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_common_random_number_difference_is_the_derivative(dtype):
    # What the refusal above says to differentiate instead. S^2, hemisphere, from the
    # pole, kappa = 0.5 +- h = 0.1: 5,000 paths per point, dt = 0.01, the same key. The
    # path-by-path difference (tau(k + h) - tau(k - h)) / 2h has a standard error of about
    # 0.06 (measured at 10,000 paths: 0.04); 4 standard errors against the ODE's same
    # difference quotient (exact, so h adds no bias), and the mean at kappa = 0.5 too.
    e3 = jnp.array([0.0, 0.0, 1.0], dtype)
    cap = spheresde.ExitRegion.cap(e3, math.pi / 2)
    kappa, h, paths = 0.5, 0.1, 5_000
    up, down = (spheresde.first_passage(_towards(kappa + s), cap, e3, 20.0, 0.01, paths=paths,
                                        key=jr.key(3)) for s in (h, -h))
    assert up.times.dtype == dtype
    diff = np.asarray(up.times - down.times, np.float64) / (2 * h)
    exact = (_cap_exit_time_towards_pole(kappa + h, math.pi / 2)
             - _cap_exit_time_towards_pole(kappa - h, math.pi / 2)) / (2 * h)
    z = (diff.mean() - exact) / (diff.std() / math.sqrt(paths))
    assert abs(z) < 4, (diff.mean(), exact)
    middle = spheresde.first_passage(_towards(kappa), cap, e3, 20.0, 0.01, paths=paths,
                                     key=jr.key(4))
    assert abs(_z(middle, _cap_exit_time_towards_pole(kappa, math.pi / 2))) < 4
