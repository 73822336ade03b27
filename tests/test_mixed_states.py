"""States of several parts: spheres of any radius and Euclidean vectors, declared leaf for
leaf (``SphereSDE(..., manifold=...)``). Every scheme keeps a sphere leaf on its sphere
and steps a Euclidean leaf as the flat Diffrax scheme does; laws against closed forms
(active Brownian particles, Brownian motion on a sphere of radius 2)."""

import math

import diffrax
import jax
import jax.numpy as jnp
import jax.random as jr
import lineax as lx
import numpy as np
import pytest
from helpers import SCHEMES

import spheresde
from proofs_check.first_passage import mean_exit_time
from spheresde import Euclidean, Sphere, project_tangent

SPEED, D_T, D_R = 1.0, 0.1, 0.5


def _abp(d, convention="stratonovich", radius=1.0, keys=(0, 1)):
    r"""Active Brownian particle: position ``y[keys[0]]`` in R^d, heading ``y[keys[1]]`` on the
    sphere of ``radius``; :math:`dx = v\,e/r\,dt + \sqrt{2D}\,dW`, :math:`de = \sqrt{2D_r}
    P_e \circ dB` (Ito: plus the normal drift :math:`-(d-1) D_r e / r^2`)."""
    x, e = keys

    def drift(t, y, args):
        normal = -(d - 1) * D_R / radius**2 * y[e] if convention == "ito" else 0 * y[e]
        return _tree(keys, SPEED * y[e] / radius, normal)

    def diffusion(t, y, args, dw):
        return _tree(keys, math.sqrt(2 * D_T) * dw[x],
                     math.sqrt(2 * D_R) * project_tangent(y[e], dw[e]))

    return spheresde.SphereSDE(drift, diffusion, _tree(keys, (d,), (d,)), convention,
                               manifold=_tree(keys, Euclidean(), Sphere(radius)))


def _tree(keys, a, b):
    return {keys[0]: a, keys[1]: b} if isinstance(keys[0], str) else (a, b)


def _start(d, radius=1.0, paths=None, dtype=jnp.float64):
    x, e = jnp.zeros(d, dtype), jnp.zeros(d, dtype).at[-1].set(radius)
    if paths is None:
        return x, e
    return jnp.broadcast_to(x, (paths, d)), jnp.broadcast_to(e, (paths, d))


# --- errors name the leaf ------------------------------------------------------------

def test_errors_name_the_leaf():
    sde = _abp(3, radius=2.0)
    x, e = _start(3, radius=2.0)
    with pytest.warns(spheresde.OffSphereWarning,
                      match=r"y0\[1\] rows are off their sphere \(radius 2\) by up to 1"):
        spheresde.solve(sde, (x, e / 2), 0.0, 0.02, 0.01, key=jr.key(0))
    with pytest.raises(ValueError, match=r"y0\[1\] contains NaN"):
        spheresde.solve(sde, (x, e.at[0].set(jnp.nan)), 0.0, 0.02, 0.01, key=jr.key(0))
    with pytest.raises(ValueError, match=r"y0\[1\] must have shape \(d,\) or \(n, d\)"):
        spheresde.solve(sde, (x, jnp.ones((2, 2, 3))), 0.0, 0.02, 0.01, key=jr.key(0))
    with pytest.raises(ValueError, match=r"y0 has the structure .* but sde.manifold declares"):
        spheresde.solve(sde, [x, e, x], 0.0, 0.02, 0.01, key=jr.key(0))
    short = sde.replace(drift=lambda t, y, a: (y[0][:2], y[1]))
    with pytest.raises(ValueError, match=r"sde.drift returns shape \(2,\) for y0\[0\] of shape "
                                         r"\(3,\)"):
        spheresde.solve(short, (x, e), 0.0, 0.02, 0.01, key=jr.key(0))
    normal = spheresde.SphereSDE(_abp(3, keys=("x", "e")).drift,
                                 lambda t, y, a, dw: {"x": dw["x"], "e": dw["e"]},
                                 {"x": (3,), "e": (3,)}, "stratonovich",
                                 manifold={"x": Euclidean(), "e": Sphere(2.0)})
    with pytest.raises(ValueError, match=r"sde.diffusion is not tangent to the sphere: .* at "
                                         r"y0\['e'\]"):
        spheresde.solve(normal, {"x": x, "e": e}, 0.0, 0.02, 0.01, key=jr.key(0))
    with pytest.raises(ValueError, match=r"at the start of path 0 of y0\['e'\]"):
        spheresde.solve_batch(normal, {"x": x[None], "e": e[None]}, 0.0, 0.02, 0.01,
                              key=jr.key(0))
    with pytest.raises(ValueError, match="same number of paths"):
        spheresde.solve_batch(sde, (jnp.zeros((4, 3)), jnp.tile(e, (5, 1))), 0.0, 0.02, 0.01,
                              key=jr.key(0))


@pytest.mark.parametrize(("make", "error", "message"), [
    (lambda: Sphere(radius=-1.0), ValueError, r"Sphere\(radius=...\) takes a positive"),
    (lambda: spheresde.SphereSDE(abs, abs, (3,), manifold=(Sphere(), "flat")), TypeError,
     "manifold must be spheresde.Sphere"),
    (lambda: spheresde.SphereSDE(abs, abs, ((3,), (0,))), ValueError,
     "noise_shape must be a tuple of positive ints, or a pytree"),
])
def test_bad_manifolds_and_noise_shapes(make, error, message):
    with pytest.raises(error, match=message):
        make()


# --- every scheme: sphere leaves on their sphere, Euclidean leaves as the flat scheme ----

# The flat Diffrax scheme each sphere scheme is on a Euclidean leaf. With additive noise
# (as here) GeodesicItoHeun's Heun-on-the-drift, Euler-on-the-noise is Heun's method.
FLAT = {"GeodesicEuler": diffrax.Euler(), "GeodesicItoHeun": diffrax.Heun(),
        "GeodesicHeun": diffrax.Heun(), "GeodesicMidpoint": diffrax.Midpoint(),
        "Retracted(Euler)": diffrax.Euler(), "Retracted(Heun)": diffrax.Heun()}


class _Leaf(diffrax.AbstractPath):
    """The part ``key`` of a path with pytree values."""

    path: diffrax.AbstractPath
    key: str

    @property
    def t0(self):
        return self.path.t0

    @property
    def t1(self):
        return self.path.t1

    def evaluate(self, t0, t1=None, left=True):
        return self.path.evaluate(t0, t1, left)[self.key]


# GeodesicEuler in the fast suite, the others slow (each compiles two solves, about 8 s)
@pytest.mark.parametrize("solver", [
    pytest.param(*scheme.values, id=scheme.id,
                 marks=() if scheme.id == "GeodesicEuler" else pytest.mark.slow)
    for scheme in SCHEMES])
def test_schemes_keep_spheres_and_step_vectors_flat(solver, request):
    # State {"x": R^2 (an Ornstein-Uhlenbeck vector), "e": S^2 of radius 2 (pulled towards
    # the x-direction of x)}; x does not depend on e, so the mixed solve's x must be the
    # flat scheme's on the same Brownian path, to rounding, and e on its sphere.
    name = request.node.callspec.id
    ito = diffrax.AbstractItoSolver in type(solver).__mro__ or (
        isinstance(solver, spheresde.Retracted) and isinstance(solver.solver, diffrax.Euler))
    convention = "ito" if ito else "stratonovich"
    r = 2.0

    def drift(t, y, args):
        pull = project_tangent(y["e"], jnp.array([y["x"][0], y["x"][1], 1.0]))
        normal = -D_R * y["e"] / r**2 if ito else 0 * y["e"]  # (d - 1) D_R / r^2, d = 3
        return {"x": -y["x"], "e": pull + normal}

    def diffusion(t, y, args, dw):
        return {"x": 0.5 * dw["x"], "e": math.sqrt(D_R) * project_tangent(y["e"], dw["e"])}

    sde = spheresde.SphereSDE(drift, diffusion, {"x": (2,), "e": (3,)}, convention,
                              manifold={"x": Euclidean(), "e": Sphere(r)})
    path = diffrax.VirtualBrownianTree(0.0, 1.0, 1e-3, {"x": jax.ShapeDtypeStruct((2,), float),
                                                        "e": jax.ShapeDtypeStruct((3,), float)},
                                       key=jr.key(7))
    y0 = {"x": jnp.array([1.0, -0.5]), "e": jnp.array([0.0, 1.2, 1.6])}
    mixed = spheresde.solve(sde, y0, 0.0, 1.0, 0.05, solver=solver, brownian=path,
                            saveat=diffrax.SaveAt(steps=True))
    terms = diffrax.MultiTerm(
        diffrax.ODETerm(lambda t, x, a: -x),
        diffrax.ControlTerm(lambda t, x, a: lx.DiagonalLinearOperator(jnp.full(2, 0.5)),
                            _Leaf(path, "x")))
    flat = diffrax.diffeqsolve(terms, FLAT[name], 0.0, 1.0, None, y0["x"],
                               stepsize_controller=diffrax.StepTo(jnp.linspace(0.0, 1.0, 21)),
                               saveat=diffrax.SaveAt(steps=True), adjoint=diffrax.ForwardMode())
    steps = int(mixed.stats["num_steps"])
    assert steps == 20
    np.testing.assert_allclose(mixed.ys["x"][:steps], flat.ys[:steps], rtol=0, atol=1e-12)
    norms = jnp.linalg.norm(mixed.ys["e"][:steps], axis=-1)
    np.testing.assert_allclose(norms, r, rtol=0, atol=1e-12)
    assert float(jnp.max(jnp.abs(mixed.ys["e"][steps - 1] - y0["e"]))) > 0.1  # it moved


@pytest.mark.slow
def test_dense_output_and_adaptive_steps_on_a_mixed_state():
    # Adaptive steps (Ito converted to Stratonovich, GeodesicMidpoint) against fixed fine
    # steps on ONE Brownian tree: the same path to a strong error below 0.05 (about 0.01
    # here); dense output between the steps stays on the radius-2 sphere.
    sde = _abp(3, "ito", radius=2.0)
    path = diffrax.VirtualBrownianTree(0.0, 1.0, 1e-4, (jax.ShapeDtypeStruct((3,), float),) * 2,
                                       key=jr.key(3))
    y0 = _start(3, radius=2.0)
    adaptive = spheresde.solve(sde, y0, 0.0, 1.0, 0.05, brownian=path,
                               stepsize_controller=diffrax.PIDController(rtol=0, atol=1e-3),
                               saveat=diffrax.SaveAt(dense=True))
    assert adaptive.stats["converted"] == "ito->stratonovich"
    fine = spheresde.solve(sde, y0, 0.0, 1.0, 0.001, brownian=path)
    for leaf in (0, 1):
        assert float(jnp.max(jnp.abs(adaptive.evaluate(1.0)[leaf] - fine.ys[leaf][-1]))) < 0.05
    between = adaptive.evaluate(0.3337)
    assert abs(float(jnp.linalg.norm(between[1])) - 2.0) < 1e-12


# --- Ito <-> Stratonovich on a pytree state (exact) ----------------------------------

def test_conversion_of_a_pytree_state():
    # Heading on the sphere of radius 2 under sqrt(2 D_r) P_e o dB: the Ito drift has the
    # normal part -(d - 1) D_r e / r^2, which to_stratonovich removes (projected) and to_ito
    # restores; the position's additive noise adds nothing to its drift.
    d, r = 3, 2.0
    strat, ito = _abp(d, radius=r), _abp(d, "ito", radius=r)
    y = (jnp.array([0.3, -1.0, 2.0]), r * jnp.array([0.6, 0.0, 0.8]))
    to_ito = strat.to_ito().drift(0.0, y, None)
    want = ito.drift(0.0, y, None)
    for got, expected in zip(to_ito, want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-14)
    back = ito.to_stratonovich().drift(0.0, y, None)
    np.testing.assert_allclose(back[0], SPEED * y[1] / r, rtol=0, atol=1e-14)
    np.testing.assert_allclose(back[1], 0.0, rtol=0, atol=1e-14)
    assert ito.to_stratonovich().manifold == ito.manifold


# --- laws against closed forms ---------------------------------------------------------

def _abp_moments(d, t):
    r"""Closed forms for :func:`_abp` (unit heading): :math:`\tau = 1/((d-1)D_r)`,
    :math:`\mathbb{E}|x_t - x_0|^2 = 2dDt + 2v^2\tau^2(t/\tau - 1 + e^{-t/\tau})` and
    :math:`\mathbb{E}\langle x_t - x_0, e_0\rangle = v\tau(1 - e^{-t/\tau})` (the heading's
    correlation :math:`\mathbb{E}\langle e_t, e_0\rangle = e^{-t/\tau}`, the first
    eigenvalue :math:`-(d-1)` of the Laplacian on :math:`S^{d-1}`)."""
    tau = 1 / ((d - 1) * D_R)
    msd = 2 * d * D_T * t + 2 * SPEED**2 * tau**2 * (t / tau - 1 + math.exp(-t / tau))
    return msd, SPEED * tau * (1 - math.exp(-t / tau))


def _z(samples, exact):
    samples = np.asarray(samples, np.float64)
    return (samples.mean() - exact) / (samples.std() / math.sqrt(samples.size))


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
@pytest.mark.parametrize("d", [2, 3])
def test_active_brownian_particles(d, dtype):
    # 4,000 paths, dt = 0.01 to t = 2 (weak order 1: bias about 0.01 against standard
    # errors of 0.02-0.04), two-point increments; |z| < 4 for the MSD and the
    # position-orientation correlation at t = 2.
    paths, t = 4_000, 2.0
    x0, e0 = _start(d, paths=paths, dtype=dtype)
    sol = spheresde.solve_batch(_abp(d), (x0, e0), 0.0, t, 0.01, key=jr.key(d), brownian="weak")
    x, e = (leaf[:, -1] for leaf in sol.ys)
    assert x.dtype == dtype
    assert e.dtype == dtype
    assert float(jnp.max(jnp.abs(jnp.linalg.norm(e, axis=-1) - 1))) < 10 * jnp.finfo(dtype).eps
    msd, along = _abp_moments(d, t)
    assert abs(_z(jnp.sum(x * x, axis=-1), msd)) < 4
    assert abs(_z(x[:, -1], along)) < 4
    assert abs(_z(e[:, -1], _abp_moments(d, 0.0)[1] + math.exp(-(d - 1) * D_R * t))) < 4


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_brownian_motion_on_a_sphere_of_radius_two(dtype):
    # dY = P_Y o dW on the sphere of radius r: E<Y_t, y0> / r^2 = exp(-(d-1) t / (2 r^2)),
    # d = 3, r = 2, t = 1: exp(-1/4). 4,000 paths each from the solver (GeodesicMidpoint,
    # dt = 0.01) and the exact sampler at radius r; |z| < 4.
    d, r, t, paths = 3, 2.0, 1.0, 4_000
    sde = spheresde.SphereSDE(lambda t, y, a: 0 * y, lambda t, y, a, dw: project_tangent(y, dw),
                              (d,), "stratonovich", manifold=Sphere(r))
    y0 = jnp.array([0.0, 0.0, r], dtype)
    ys = spheresde.solve_batch(sde, jnp.broadcast_to(y0, (paths, d)), 0.0, t, 0.01,
                               key=jr.key(1)).ys[:, -1]
    exact = spheresde.sample_brownian_motion(jr.key(2), y0, t, (paths,), radius=r)
    for sample in (ys, exact):
        assert sample.dtype == dtype
        assert float(jnp.max(jnp.abs(jnp.linalg.norm(sample, axis=-1) - r))) < 1e-5
        assert abs(_z(sample[:, -1] / r, math.exp(-(d - 1) * t / (2 * r**2)))) < 4


def test_von_mises_fisher_at_radius_two():
    # E<x, mu> / r = coth(kappa) - 1/kappa on S^2; 20,000 draws, |z| < 4.
    kappa, r = 2.0, 2.0
    mu = jnp.array([0.0, 1.0, 0.0])
    x = spheresde.sample_von_mises_fisher(jr.key(0), mu, kappa, (20_000,), radius=r)
    np.testing.assert_allclose(jnp.linalg.norm(x, axis=-1), r, rtol=1e-12)
    assert abs(_z(x[:, 1] / r, 1 / math.tanh(kappa) - 1 / kappa)) < 4
    with pytest.raises(ValueError, match="must lie on the sphere of radius 2"):
        spheresde.sample_brownian_motion(jr.key(0), mu, 1.0, radius=r)


@pytest.mark.slow
def test_first_passage_of_one_leaf():
    # The heading of _abp on the sphere of radius 2 (generator D_r Laplacian = 1/2 Laplacian
    # for D_r = 1/2) leaves the hemisphere about the pole after r^2 2 ln 2 on average (the
    # unit sphere's time, scaled by r^2); 4,000 paths at dt = 0.02, a dict state, |z| < 4.
    r = 2.0
    sde = _abp(3, radius=r, keys=("x", "e"))
    x0, e0 = _start(3, radius=r)
    cap = spheresde.ExitRegion.cap(jnp.array([0.0, 0.0, 1.0]), math.pi / 2, leaf="e")
    fp = spheresde.first_passage(sde, cap, {"x": x0, "e": e0}, 60.0, 0.02, paths=4_000,
                                 key=jr.key(4))
    exact = r**2 * float(mean_exit_time(3, math.pi / 2))
    assert abs((float(fp.mean) - exact) / float(fp.standard_error)) < 4
    assert fp.ys["e"].shape == (4_000, 3)
    assert float(jnp.max(jnp.abs(jnp.linalg.norm(fp.ys["e"], axis=-1) - r))) < 1e-12


@pytest.mark.slow
def test_events_and_extrapolation_on_a_mixed_state():
    # Per-path events on one leaf (the heading leaves the cap of 60 degrees), and weak
    # extrapolation of E|x_t|^2 against the ABP closed form: 2,000 paths, t = 1, dt = 0.05,
    # |z| < 4.
    sde = _abp(3)
    x0, e0 = _start(3, paths=16)
    cap = spheresde.ExitRegion.cap(jnp.array([0.0, 0.0, 1.0]), math.pi / 3, leaf=1)
    sol = spheresde.solve_batch(sde, (x0, e0), 0.0, 5.0, 0.01, key=jr.key(5),
                                event=cap.event())
    stopped = np.asarray(sol.event_mask)
    assert stopped.any()
    heights = np.asarray(sol.ys[1][:, -1, 2])
    assert np.all(heights[stopped] <= 0.5 + 1e-12)
    paths, t = 2_000, 1.0
    x0, e0 = _start(3, paths=paths)
    ext = spheresde.extrapolated_expectation(sde, lambda y: jnp.sum(y[0] ** 2), (x0, e0), 0.0,
                                             t, 0.05, key=jr.key(6))
    z = (float(ext.value) - _abp_moments(3, t)[0]) / float(ext.standard_error)
    assert abs(z) < 4
