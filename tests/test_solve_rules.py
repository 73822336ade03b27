"""What ``solve`` does that a user could miss: the dtype of the result, noise shared by the
rows of a state, fields tangent at every start. Each is said out loud, never silent."""

import diffrax
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest

import spheresde
from spheresde import project_tangent

BM = spheresde.SphereSDE(lambda t, y, a: -y, lambda t, y, a, dw: project_tangent(y, dw), (3,))
E1, E3 = np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0])


def _short(sde, y0, **kwargs):
    return spheresde.solve(sde, y0, 0.0, 0.02, 0.01, key=jr.key(0), **kwargs)


def _traced(fn, *args, **kwargs):
    """What ``fn`` returns, traced but not compiled: the input checks run (the
    arguments are concrete), and the dtypes and shapes come back in a second, not the
    seconds of an XLA compile."""
    return jax.eval_shape(lambda: fn(*args, **kwargs))


# --- dtypes: y0 dtype x jax_enable_x64 -> result dtype, or an error -------------------
# (the test session runs with x64 on, conftest.py; jax.enable_x64(False) turns it off
# for a block, and JAX's caches key on it)

@pytest.mark.parametrize(("x64", "given", "result"), [
    (True, jnp.float32, "float32"),    # was float64: the float64 grid promoted the state
    (True, jnp.float64, "float64"),
    (True, np.float32, "float32"),
    (True, np.int32, "float64"),       # integers: JAX's default float
    (False, jnp.float32, "float32"),
    (False, np.int32, "float32"),
])
def test_result_has_the_dtype_of_y0(x64, given, result):
    saveat = diffrax.SaveAt(ts=np.linspace(0.0, 0.02, 3))  # float64 save times
    with jax.enable_x64(x64):  # (pytest turns any warning into an error: none here)
        one = _traced(_short, BM, E3.astype(given)).ys
        batch = _traced(spheresde.solve_batch, BM, np.stack([E3, E1]).astype(given), 0.0,
                        0.02, 0.01, key=jr.key(0), saveat=saveat).ys
    assert one.dtype == result
    assert batch.dtype == result


def test_float32_start_runs_in_float32_with_x64_on():
    # compiled and run, not only traced: the state, the increments and the times
    sol = _short(BM, E3.astype(np.float32))
    assert sol.ys.dtype == "float32"
    assert sol.ts.dtype == "float32"  # the times too: Diffrax computes in the wider of the two
    assert float(spheresde.norm_error(sol.ys)) < 1e-6


def test_float64_with_x64_off_warns_and_computes_float32():
    # jnp.asarray turns a float64 array into float32 when x64 is off: said, not silent
    with jax.enable_x64(False):
        with pytest.warns(spheresde.PrecisionWarning,
                          match=r"y0 is float64 but jax_enable_x64 is off.*float32"):
            ys = _traced(_short, BM, E3).ys
    assert ys.dtype == "float32"


@pytest.mark.parametrize("x64", [True, False])
@pytest.mark.parametrize("half", [jnp.float16, jnp.bfloat16])
def test_half_precision_is_refused(x64, half):
    # was: float64 (x64 on) or float32 (x64 off), silently
    with jax.enable_x64(x64), pytest.raises(
            ValueError, match=rf"y0 has dtype {jnp.dtype(half).name}.*cast it to float32"):
        _short(BM, jnp.asarray(E3, half))


def test_complex_start_is_refused():
    with pytest.raises(ValueError, match="y0 has complex dtype"):
        _short(BM, E3.astype(np.complex128))


# --- noise shared by the rows of a state ---------------------------------------------

def _rows(n, seed=0):
    return np.asarray(spheresde.sample_uniform(jr.key(seed), (n,), 3))


def test_rows_under_one_increment_must_be_declared():
    # The case: 2000 rows and noise (3,) drive every row with the same dW.
    with pytest.raises(ValueError, match=r"y0 has 2000 rows .* noise they share .*"
                                         r"For 2000 independent paths on S\^2, use "
                                         r"solve_batch.*shared_noise=True"):
        _short(BM, _rows(2000))


def test_product_rows_of_a_batch_under_one_increment_must_be_declared():
    with pytest.raises(ValueError, match=r"each path's state has 4 rows .* noise they share"
                                         r".*shared_noise=True"):
        spheresde.solve_batch(BM, _rows(20).reshape(5, 4, 3), 0.0, 0.02, 0.01, key=jr.key(0))


def test_one_coupled_pair_among_independent_rows_is_found():
    # Rows with noise of their own, (8, 3), except that row 6 also takes row 2's
    # increment: the two differ in one bit of their index (2 = 010, 6 = 110), the probe
    # that must see them.
    def diffusion(t, y, args, dw):
        return project_tangent(y, dw.at[6].add(dw[2]))

    sde = spheresde.SphereSDE(lambda t, y, a: jnp.zeros_like(y), diffusion, (8, 3))
    with pytest.raises(ValueError, match=r"y0 has 8 rows .* noise they share"):
        _short(sde, _rows(8))


def test_declared_shared_noise_and_own_noise_run_without_a_word():
    shared = spheresde.SphereSDE(BM.drift, BM.diffusion, (3,), shared_noise=True)
    own = spheresde.SphereSDE(BM.drift, BM.diffusion, (6, 3))
    y0 = np.broadcast_to(E3, (6, 3))  # six copies of one point
    # (pytest turns any warning into an error: none here)
    one = _short(shared, y0).ys[-1]
    each = _short(own, y0).ys[-1]
    # under one increment the copies move together; with their own they part
    assert float(jnp.max(jnp.abs(one - one[0]))) == 0.0
    assert float(jnp.min(jnp.linalg.norm(each[1:] - each[0], axis=-1))) > 1e-3
    # the flag survives the conversions
    assert shared.to_stratonovich().shared_noise
    assert shared.to_stratonovich().to_ito().shared_noise
    # the Transformer's tokens under one matrix Brownian motion: declared by transformer_sde
    # (tests/test_transformer.py solves it, where any warning would be an error)
    assert spheresde.transformer.transformer_sde(1.0, d=3).shared_noise


def test_shared_noise_flag_must_be_a_bool():
    with pytest.raises(TypeError, match="shared_noise must be True or False"):
        spheresde.SphereSDE(BM.drift, BM.diffusion, (3,), shared_noise="yes")


# --- tangency at every start ----------------------------------------------------------

CONSTANT = spheresde.SphereSDE(lambda t, y, a: 2.0 * jnp.asarray(E1, y.dtype),
                               lambda t, y, a, dw: project_tangent(y, dw), (3,), "stratonovich")


def test_drift_tangent_at_the_first_start_only_is_refused_in_a_batch():
    # 2 e1 is tangent at e3 (the first start) but not at e1 (the second): was accepted
    with pytest.raises(ValueError, match=r"sde\.drift is not tangent.*= 2 at the start of "
                                         r"path 1"):
        spheresde.solve_batch(CONSTANT, np.stack([E3, E1]), 0.0, 0.02, 0.01, key=jr.key(0))


def test_drift_tangent_at_the_start_only_is_refused():
    # the case: from y0 = e3 alone, the random points of the sphere see it
    with pytest.raises(ValueError, match=r"sde\.drift is not tangent.*not a start"):
        _short(CONSTANT, E3)


def test_diffusion_not_tangent_at_one_start_of_many():
    # the 18th start is e1; tangent except on the cap x_1 > 0.99 about e1 (angle 0.14,
    # 0.5% of the sphere, which the random probes miss)
    def diffusion(t, y, args, dw):
        return project_tangent(y, dw) + jnp.where(y[0] > 0.99, 1.0, 0.0) * y * dw[0]

    sde = spheresde.SphereSDE(lambda t, y, a: -y, diffusion, (3,))
    y0 = np.asarray(spheresde.sample_uniform(jr.key(4), (64,), 3))
    y0 = y0[np.abs(y0[:, 0]) < 0.5]  # none of them near e1
    _traced(spheresde.solve_batch, sde, y0, 0.0, 0.02, 0.01, key=jr.key(0))  # accepted
    y0 = np.insert(y0, 17, E1, axis=0)
    with pytest.raises(ValueError, match=r"sde\.diffusion is not tangent.*start of path 17"):
        spheresde.solve_batch(sde, y0, 0.0, 0.02, 0.01, key=jr.key(0))


# --- the value checks under jax.jit and jax.vmap: staged, raised when the code runs ----
# (equinox.error_if: a RuntimeError whose message is the check's, without the values)

def test_rows_under_one_increment_refused_under_jit():
    # The case: under jit a (500, 3) start ran as one state under shared noise.
    run = jax.jit(lambda y: _short(BM, y).ys)
    with pytest.raises(RuntimeError, match=r"y0 has 500 rows .* shared_noise=True"):
        run(jnp.asarray(_rows(500)))


@pytest.mark.slow
def test_value_checks_run_under_jit_and_vmap():
    normal = spheresde.SphereSDE(lambda t, y, a: jnp.zeros_like(y), lambda t, y, a, dw: dw,
                                 (3,), "stratonovich")
    batch = jax.jit(lambda y: spheresde.solve_batch(normal, y, 0.0, 0.02, 0.01,
                                                    key=jr.key(0)).ys)
    with pytest.raises(RuntimeError, match=r"sde\.diffusion is not tangent to the sphere"):
        batch(jnp.asarray(_rows(6)))
    one = jax.vmap(lambda y: _short(BM, y).ys)
    with pytest.raises(RuntimeError, match="y0 contains NaN or infinite entries"):
        one(jnp.asarray(_rows(4)).at[2, 1].set(jnp.nan))
    with pytest.raises(RuntimeError, match="y0 has a zero row"):
        one(jnp.asarray(_rows(4)).at[1].set(0.0))
    # the same inputs, good, run: the staged checks do not fire on them
    assert one(jnp.asarray(_rows(4))).shape == (4, 1, 3)


def test_a_diffusion_closing_over_a_traced_parameter_is_checked():
    # jax.grad in a parameter the diffusion closes over (no leaf of the SDE): the probe's
    # value is traced, so the tangency check is staged rather than skipped.
    def loss(scale):
        sde = spheresde.SphereSDE(lambda t, y, a: jnp.zeros_like(y),
                                  lambda t, y, a, dw: scale * dw, (3,), "stratonovich")
        return jnp.sum(_short(sde, E3).ys)

    with pytest.raises(RuntimeError, match=r"sde\.diffusion is not tangent"):
        jax.grad(loss)(1.0)
