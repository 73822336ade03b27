"""A layer written once (spheresde.transformer.Layer): read by the engine, run as a network.

Every registered layer and normalization is read and simulated on its manifold; the
paper's layer, interpreted from its engine definition, is held to the hand-written fast
path in law and to its own exact law, and its derived critical beta and t -> inf law to
the closed forms of spheresde.two_token, which come from another derivation.
"""

import math
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from proofs_check.normalizations import names
from spheresde import sample_uniform
from spheresde.transformer import normalization, simulate_network, two_token
from spheresde.transformer._absorption import absorption_levels
from spheresde.transformer._layers import Layer, LayerError, layer, layers
from spheresde.transformer._outcomes import ANTIPODAL, SINGLE, classify


def _rho(tokens):
    return np.asarray(jnp.einsum("pd,pd->p", tokens[:, 0], tokens[:, 1]))


@pytest.mark.parametrize("d", [4, 5, 7, 10])
def test_the_paper_layers_critical_beta_is_the_closed_form(d):
    # root of the engine's lambda_- against 1/2 arccosh(d - 2) from proofs_check.stability
    assert layer("paper").critical_beta(d) == pytest.approx(float(two_token.critical_beta(d)),
                                                            abs=1e-10)


@pytest.mark.parametrize(("beta", "d", "mu"), [(0.5, 4, 0.0), (1.5, 5, 0.0), (3.0, 7, 0.0),
                                               (2.0, 6, 0.3), (2.5, 4, -0.2)])
def test_the_paper_layers_scale_function_law_is_two_tokens(beta, d, mu):
    # the scale function of the derived rho-SDE, by quadrature in z, against the law of
    # two_token (its own coefficients and quadrature); 1e-6 is the quadrature's error
    # (trapezoid, h = 1e-3), far below any Monte Carlo error bar
    p = layer("paper").antipodal_probability(beta, d, eps=1.0, mu=mu)
    expected = float(two_token.antipodal_probability(beta, d, mu=mu, eps=1.0))
    assert p == pytest.approx(expected, abs=1e-6)


def test_layernorm_law_comes_from_its_derived_sde_not_a_rule():
    # the derived LayerNorm rho-SDE at d, with the start on the sphere of dimension d - 2,
    # is the RMS law at d - 1 (proofs_check.layers); nothing here uses that rule
    chosen = layer("paper")
    for d, beta in [(5, 1.5), (6, 2.0), (8, 3.0)]:
        assert chosen.antipodal_probability(beta, d, norm="layer") == pytest.approx(
            float(two_token.antipodal_probability(beta, d - 1)), abs=1e-6)
        assert chosen.critical_beta(d, norm="layer") == pytest.approx(
            float(two_token.critical_beta(d - 1)), abs=1e-10)


def test_layers_whose_poles_are_not_equilibria_have_no_exact_law():
    chosen = layer("per_token")  # its drift at rho = +1 is -(d - 1) tau^2 != 0
    assert not chosen.equilibria()
    assert math.isnan(chosen.critical_beta(4))
    with pytest.raises(LayerError, match="not equilibria"):
        chosen.antipodal_probability(1.0, 4)
    assert layer("two_heads").equilibria()


@pytest.mark.parametrize(("beta", "d", "eps", "mu"), [(1.0, 4, 1.0, 0.0), (3.0, 3, 1.0, 0.0),
                                                 (0.5, 7, 1.0, 0.0), (1.5, 5, 0.7, 0.3)])
def test_the_paper_layers_certificate_is_the_closed_forms(beta, d, eps, mu):
    # two derivations of one rho-SDE: the paper's (proofs_check.two_token, lambdified by
    # proofs_check.export) and the engine's reading of the layer, through one quadrature:
    # the same levels to rounding (a coefficient off by 1e-6 would move a level by a
    # grid step of 1e-3 somewhere in these four points)
    expected = absorption_levels(beta, d, eps, mu, 0.01, 1e-6)
    got = layer("paper").absorption_levels(beta, d, eps=eps, mu=mu, tol=0.01, bound=1e-6)
    assert got == pytest.approx(expected, abs=1e-9)


def test_a_layers_certificate_is_its_own_scale_function():
    # two heads, d = 4, beta = 3: the single level z_+ is the first point of the 1e-3 grid
    # where P(back to the boundary) <= bound, that probability recomputed here by adaptive
    # quadrature of the layer's scale rate phi = 2 b_z / a_z (nested scipy.quad, not the
    # trapezoid rule of the code): <= bound at z_+, above it one grid step before
    from scipy.integrate import quad

    from spheresde.transformer._layers import _two_token_law
    from spheresde.transformer._rho import outcome_threshold

    chosen, bound, tol = layer("two_heads"), 1e-3, 0.01
    z_lo, z_hi = chosen.absorption_levels(3.0, 4, tol=tol, bound=bound)
    assert math.isfinite(z_lo)
    assert z_lo < -outcome_threshold(tol)
    law, edge = _two_token_law(chosen, "rms"), outcome_threshold(tol)
    values = chosen.bind(beta=3.0, d=4)

    def density(u):  # S'(u) with S'(edge) = 1
        return math.exp(-quad(lambda w: law.phi(math.tanh(w), **values), edge, u)[0])

    def back(z):
        return quad(density, z, edge + 40, limit=200)[0] / quad(density, edge, edge + 40,
                                                                limit=200)[0]

    assert back(z_hi) <= bound * (1 + 1e-6)
    assert back(z_hi - 2e-3) > bound


# the MLP block's derivation takes seconds more: with the slow tests
@pytest.mark.parametrize("name", ["per_token", pytest.param("mlp", marks=pytest.mark.slow)])
def test_layers_without_equilibria_are_never_absorbed(name):
    assert layer(name).absorption_levels(3.0, 4, tol=0.01, bound=0.5) == (-math.inf,
                                                                           math.inf)


@pytest.mark.slow
def test_absorbing_a_layers_pairs_changes_no_class_at_matched_seeds():
    # two heads, 1,000 two-token networks, d = 4, L = 20, T = 50 (1,000 layers), bound 1e-6:
    # trajectory i draws from its own key, so with and without absorption the paths are the
    # same and a class can change only where the certificate fails (expected 1e-3 of a
    # trajectory here, plus the network's O(1/L) distance from the diffusion: none seen);
    # at beta = 3 both outcomes are absorbed, most trajectories well before the horizon
    from spheresde.experiments._simulate import simulate_counts
    from spheresde.transformer._weights import PureNoise

    runs = {absorb: simulate_counts("discrete", jax.random.key(5), tokens=2, beta=3.0, d=4,
                                    weights=PureNoise(1.0), trajectories=1000, layers=20,
                                    horizon=50.0, tol=0.01, absorb=absorb, layer="two_heads",
                                    dtype=jnp.float64)
            for absorb in (1e-6, 0.0)}
    assert runs[1e-6]["outcomes"] == runs[0.0]["outcomes"]
    assert runs[0.0]["outcomes"][1] > 200  # both outcomes present
    assert runs[0.0]["steps"] == 1000 * 1000
    assert runs[1e-6]["steps"] < 0.5 * runs[0.0]["steps"]


# the paper's layer with two tokens in the fast loop; every other case compiles its own
# programs (several seconds each) and runs with the slow tests
@pytest.mark.parametrize(("name", "n"), [
    pytest.param(name, n, marks=() if (name, n) == ("paper", 2) else pytest.mark.slow)
    for name in layers() for n in (2, 3)])
def test_every_registered_layer_runs_on_every_normalizations_manifold(name, n):
    # the registries are read when the test runs, after every test module was imported:
    # a layer or normalization registered by a recipe test is run here too
    norms = names(numeric=True)
    assert {"rms", "layer"} <= set(norms)
    x0 = sample_uniform(jax.random.key(3), (64, n), 5, jnp.float64)
    for norm in norms:
        final = layer(name).simulate(jax.random.key(4), x0, beta=1.5, layers=10, steps=30,
                                     norm=norm)
        assert final.shape == (64, n, 5)
        assert bool(jnp.all(jnp.isfinite(final))), norm
        np.testing.assert_allclose(np.linalg.norm(final, axis=-1), 1.0, atol=1e-12)
        for u in np.asarray(normalization(norm).fixed_directions(5, jnp.float64)):
            np.testing.assert_allclose(np.asarray(final) @ u, 0.0, atol=1e-12)
        # the tokens moved (a layer that returned no noise would keep them)
        assert float(jnp.max(jnp.abs(final - normalization(norm).start(x0)))) > 0.1, norm


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
@pytest.mark.parametrize("norm", ["rms", "layer"])
def test_the_generic_paper_layer_is_the_fast_path_in_law(dtype, norm):
    # rho after 20 layers (L = 10, beta = 1, d = 5), 1,500 trajectories each, two-sample KS
    # at level 1e-3; the same test rejects eps = 1.3 against eps = 1 (so it has power)
    n_paths, key0, key1 = 1500, jax.random.key(11), jax.random.key(12)
    x0 = sample_uniform(jax.random.key(10), (n_paths, 2), 5, dtype)
    fast = simulate_network(key0, x0, 1.0, layers=10, horizon=2.0, trajectories=n_paths,
                            norm=norm).tokens
    generic = layer("paper").simulate(key1, x0, beta=1.0, layers=10, steps=20, norm=norm)
    assert generic.dtype == dtype
    assert stats.ks_2samp(_rho(fast), _rho(generic)).pvalue > 1e-3
    louder = layer("paper").simulate(key1, x0, beta=1.0, eps=1.3, layers=10, steps=20,
                                     norm=norm)
    assert stats.ks_2samp(_rho(fast), _rho(louder)).pvalue < 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_the_generic_paper_network_agrees_with_its_own_exact_law(dtype):
    # 6,000 two-token networks, d = 4, beta = 2, L = 5, T = 20 (100 layers), tol 1e-2:
    # the antipodal fraction within 4 binomial standard errors (about 0.0054 here) of the
    # exact law of the network chain at that L (two_token.outcome_probabilities,
    # chain="network", law="exact"), which a bias of 0.03 would miss by 5 of them
    n_paths, d, beta, layers_, horizon, tol = 6000, 4, 2.0, 5, 20.0, 1e-2
    x0 = sample_uniform(jax.random.key(20), (n_paths, 2), d, dtype)
    final = layer("paper").simulate(jax.random.key(21), x0, beta=beta, layers=layers_,
                                    steps=round(horizon * layers_))
    codes = np.asarray(classify(final, tol))
    p_hat = float(np.mean(codes == ANTIPODAL))
    law = two_token.outcome_probabilities(beta, d, horizon=horizon, tol=tol, layers=layers_,
                                          chain="network", law="exact")
    p = float(law.antipodal)
    se = math.sqrt(p * (1 - p) / n_paths)
    assert abs(p_hat - p) < 4 * se, (p_hat, p, se)
    assert float(np.mean(codes == SINGLE)) > 0.5


def test_a_layer_the_engine_cannot_read_is_refused_in_one_line():
    def numpy_inside(tokens):
        return [np.ones(3) for _ in tokens]

    with pytest.raises(LayerError, match="one RandomVector per token"):
        Layer("numpy_inside", numpy_inside).step(2)

    def unknown_symbol(tokens):
        import sympy as sp

        from proofs_check.engine import GaussianMatrix

        V = GaussianMatrix("V", std=sp.Symbol("tau"))
        return [V @ x * sp.Symbol("s", positive=True) for x in tokens]

    with pytest.raises(LayerError, match="symbols with no value: tau"):
        Layer("unknown_symbol", unknown_symbol).step(2)
    with pytest.raises(LayerError, match="cannot import layer"):
        layer("no_such_module_here:f")
    with pytest.raises(LayerError, match="no layer 'nope'"):
        layer("nope")


@pytest.mark.slow
def test_a_layer_written_in_the_working_directory_runs_through_phase(tmp_path):
    # the recipe of docs/contributing.rst: a function of the tokens in a module of the
    # working directory, named MODULE:FUNCTION, with no other edit
    (tmp_path / "mine.py").write_text(
        "from proofs_check.engine import GaussianMatrix, softmax\n"
        "from proofs_check.symbols import beta, eps, s\n"
        "V = GaussianMatrix('V', std=eps)\n"
        "def layer(tokens):\n"
        "    return [s * (V @ a) for a in softmax(tokens, beta)]\n")
    out = tmp_path / "out"
    run = subprocess.run(
        [sys.executable, "-m", "spheresde.cli", "phase", "--layer", "mine:layer", "--method",
         "exact", "--dims", "5", "--betas", "0.5,2", "--out", str(out), "--quiet"],
        cwd=tmp_path, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    rows = (out / "phase.csv").read_text().splitlines()
    header = rows[0].split(",")
    p = [float(r.split(",")[header.index("p_antipodal")]) for r in rows[1:]]
    # the paper's layer written by hand: its law, from two_token
    assert p == pytest.approx([float(two_token.antipodal_probability(b, 5)) for b in (0.5, 2)],
                              abs=1e-6)
    bad = subprocess.run(
        [sys.executable, "-m", "spheresde.cli", "phase", "--layer", "mine:nothing",
         "--method", "exact", "--out", str(out / "bad")],
        cwd=tmp_path, capture_output=True, text=True, check=False)
    assert bad.returncode == 2, bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert "mine:nothing" in bad.stderr


@pytest.mark.parametrize(("beta", "d", "horizon", "norm", "mu"),
                         [(1.0, 6, 500.0, "rms", 0.0), (2.0, 4, 20.0, "rms", 0.0),
                          (3.0, 7, 5.0, "rms", 0.0), (2.0, 6, 20.0, "layer", 0.0),
                          (2.0, 6, 20.0, "rms", 0.5)])
def test_the_finite_horizon_law_of_a_layer_is_its_generators(beta, d, horizon, norm, mu):
    # the Kolmogorov equation of the derived rho-SDE, by the solver of two_token with this
    # layer's generator in place of the paper's coefficients: for the paper's layer the two
    # generators are one, so the laws agree to rounding (LayerNorm: the RMS law at d - 1)
    got = layer("paper").outcome_probabilities(beta, d, horizon=horizon, tol=1e-2, mu=mu,
                                               norm=norm)
    law_d = d - 1 if norm == "layer" else d
    expected = two_token.outcome_probabilities(beta, law_d, horizon=horizon, tol=1e-2, mu=mu,
                                               eps=1.0)
    for outcome in ("antipodal", "single", "undecided"):
        assert float(getattr(got, outcome)) == pytest.approx(
            float(getattr(expected, outcome)), abs=1e-10)


@pytest.mark.slow
def test_two_heads_network_agrees_with_its_own_finite_horizon_law():
    # a registered layer other than the paper's, end to end: 3,000 two-token networks of
    # two heads (beta and beta/2), d = 4, beta = 3, L = 50, T = 8 (400 layers), tol 1e-2,
    # against the Kolmogorov law of its derived rho-SDE at T: within 4 binomial standard
    # errors (about 0.033 here; the chain's own O(1/L) offset is about 0.005 at L = 50)
    n_paths, d, beta, layers_, horizon, tol = 3000, 4, 3.0, 50, 8.0, 1e-2
    chosen = layer("two_heads")
    x0 = sample_uniform(jax.random.key(30), (n_paths, 2), d, jnp.float64)
    final = chosen.simulate(jax.random.key(31), x0, beta=beta, layers=layers_,
                            steps=round(horizon * layers_))
    p_hat = float(np.mean(np.asarray(classify(final, tol)) == ANTIPODAL))
    p = float(chosen.outcome_probabilities(beta, d, horizon=horizon, tol=tol).antipodal)
    se = math.sqrt(p * (1 - p) / n_paths)
    assert p > 0.05
    assert abs(p_hat - p) < 4 * se, (p_hat, p, se)


@pytest.mark.slow
@pytest.mark.parametrize("norm", ["rms", "layer"])
def test_the_pair_chains_fast_path_is_the_generic_paper_layer_in_law(norm):
    # the fast path of the paper's two-token network (the Gram chain for RMS, the pair
    # coordinates for LayerNorm; absorption off) against the engine's reading of the same
    # layer: antipodal fractions of 4,000 networks each (d = 5, beta = 2, L = 5, T = 20,
    # tol 1e-2), two-proportion z within 4
    from spheresde.transformer._absorption import absorbing_network
    from spheresde.transformer._weights import PureNoise

    n_paths, d, beta, layers_, steps, tol = 4000, 5, 2.0, 5, 100, 1e-2
    fast, _ = absorbing_network(jax.random.key(40), beta=beta, d=d, weights=PureNoise(),
                                trajectories=n_paths, layers=layers_, steps=steps, tol=tol,
                                bound=0.0, dtype=jnp.float64, norm=norm)
    x0 = sample_uniform(jax.random.key(41), (n_paths, 2), d, jnp.float64)
    generic = layer("paper").simulate(jax.random.key(42), x0, beta=beta, layers=layers_,
                                      steps=steps, norm=norm)
    p_fast = float(np.mean(np.asarray(fast) == ANTIPODAL))
    p_generic = float(np.mean(np.asarray(classify(generic, tol)) == ANTIPODAL))
    pooled = (p_fast + p_generic) / 2
    se = math.sqrt(2 * pooled * (1 - pooled) / n_paths)
    assert pooled > 0.05
    assert abs(p_fast - p_generic) < 4 * se, (p_fast, p_generic, se)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: layer("paper").simulate(jax.random.key(0), jnp.full((4, 2, 3), jnp.nan), beta=1.0,
                                     layers=10, steps=5), "finite"),
    (lambda: layer("paper").simulate(jax.random.key(0), jnp.zeros((4, 2, 3)), beta=1.0,
                                     layers=10, steps=5), "zero token"),
    (lambda: layer("paper").simulate(jax.random.key(0), jnp.eye(2, 3), beta=1.0, layers=10,
                                     steps=5), r"\(trajectories, n, d\)"),
    (lambda: layer("paper").simulate(jax.random.key(0), jnp.ones((4, 2, 3)), beta=math.nan,
                                     layers=10, steps=5), "beta must be finite"),
    (lambda: layer("paper").simulate(jax.random.key(0), jnp.ones((4, 2, 3)), beta=1.0,
                                     layers=2.5, steps=5), "layers must be a whole number"),
    (lambda: layer("paper").simulate(jax.random.key(0), jnp.ones((4, 2, 3)), beta=1.0,
                                     layers=10, steps=10**12), "more than the"),
    (lambda: layer("paper").antipodal_probability(1.0, 1), "d >= 2"),
    (lambda: layer("paper").critical_beta(4, eps=-1.0), "eps must be >= 0"),
    (lambda: layer("paper").outcome_probabilities(1.0, 4, horizon=-1.0, tol=0.01),
     "horizon must be >= 0"),
    (lambda: layer("paper").outcome_probabilities(1.0, 4, horizon=1.0, tol=2.0), "tol must"),
])
def test_bad_input_is_refused_in_one_line_before_any_work(call, message):
    with pytest.raises(ValueError, match=message) as caught:
        call()
    assert "\n" not in str(caught.value)
