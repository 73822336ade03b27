"""The diffusion-limit engine: the paper's layer exactly, other layers, code generation."""

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import sympy as sp

import spheresde
from proofs_check.engine import (
    AbstractNoiseSource,
    GaussianMatrix,
    NoiseTerm,
    RandomVector,
    ReLUMLP,
    canonical,
    diffusion_limit,
    lyapunov_at,
    manifold_residuals,
    relu_kernel,
    rho_sde,
    softmax,
)
from proofs_check.layers import gamma, mlp_layer, paper_layer
from proofs_check.limit import derive_limit_span, generic_span
from proofs_check.symbols import beta, d, eps, mu, rho, s
from spheresde.transformer import Hybrid, PureNoise, to_sphere_sde, transformer_sde


@pytest.mark.parametrize("n", [1, 2])
def test_paper_layer_equals_derive_limit_span(n):
    span, att = generic_span(n)
    V = GaussianMatrix("V", std=eps, mean=mu * s)
    lim = diffusion_limit(lambda x: [s * (V @ sum((x[j] * a.coeffs[j] for j in range(n)),
                                                  x[0] * 0)) for a in att], n)
    ref = derive_limit_span(span, att)
    assert all((lim.drift[i] - ref.drift[i]).is_zero() for i in range(n))
    assert all((lim.covariance[k] - ref.covariance[k]).is_zero() for k in ref.covariance)


def test_a_wrong_normalization_term_is_visible():
    # Without normalization the drift is the mean part alone: not Theorem 1's.
    V = GaussianMatrix("V", std=eps)
    lim = diffusion_limit(lambda x: [s * (V @ x[0])], 1, "none")
    assert lim.drift[0].coeffs[0] == 0
    assert sp.factor(diffusion_limit(lambda x: [s * (V @ x[0])], 1).drift[0].coeffs[0]) != 0


def test_per_token_noise_has_no_cross_covariance():
    V = GaussianMatrix("V", std=eps, shared=False)
    lim = diffusion_limit(lambda x: [s * (V[i] @ x[i]) for i in range(2)], 2)
    assert lim.covariance[0, 1].is_zero()
    assert not lim.covariance[0, 0].is_zero()
    # independent noise: rho drifts to 0 from both sides, and +-1 are not equilibria
    sde = rho_sde(lambda x: [s * (V[i] @ x[i]) for i in range(2)])
    assert canonical(sde.drift - (-(d - 1) * eps**2 * rho)) == 0


@pytest.mark.parametrize(
    ("layer", "message"),
    [
        (lambda V: (lambda x: [V @ x[0]]), r"order s\^0"),
        (lambda V: (lambda x: [s * x[0] + s * (V @ x[0])]), r"below s\^2"),
        (lambda V: (lambda x: [x[0]]), "one RandomVector per token"),
        (lambda V: (lambda x: [s * (V @ x[0])] * 2), "one increment per token"),
    ],
)
def test_bad_layers_are_refused(layer, message):
    V = GaussianMatrix("V", std=eps)
    with pytest.raises((ValueError, TypeError), match=message):
        diffusion_limit(layer(V), 1)


def test_bad_inputs_are_refused():
    V = GaussianMatrix("V", std=eps)
    with pytest.raises(ValueError, match="normalization must be one of"):
        diffusion_limit(lambda x: [s * (V @ x[0])], 1, "batch")
    with pytest.raises(ValueError, match=r"write V\[i\] @ v"):
        GaussianMatrix("V", shared=False) @ generic_span(1)[0].tokens()[0]
    with pytest.raises(TypeError, match="span vectors"):
        V @ 1


def test_layernorm_limit_lives_on_the_hyperplane_sphere():
    lim = diffusion_limit(paper_layer(), 2, "layer")
    assert all(v == [0, 0] for v in manifold_residuals(lim).values())
    # one token with A = X: the normal drift counts d - 2 tangent directions, not d - 1
    V = GaussianMatrix("V", std=eps)
    one = diffusion_limit(lambda x: [s * (V @ x[0])], 1, "layer")
    assert sp.factor(one.drift[0].coeffs[0]) == -(eps**2) * (d - 2) / 2


def test_relu_kernel_against_monte_carlo():
    # 2 10^5 pairs of standard normals with correlation 0.3: the mean of relu(g) relu(g')
    # has standard error sd / sqrt(2 10^5); the derived kernel must lie within 4 of them.
    rng = np.random.default_rng(7)
    g = rng.standard_normal((2, 200_000))
    corr = 0.3
    h = corr * g[0] + np.sqrt(1 - corr**2) * g[1]
    samples = np.maximum(g[0], 0) * np.maximum(h, 0)
    z = (samples.mean() - float(relu_kernel().subs(rho, corr))) / (samples.std() / np.sqrt(2e5))
    assert abs(z) < 4


@pytest.mark.slow
def test_lyapunov_refuses_a_non_equilibrium():
    with pytest.raises(ValueError, match="not an equilibrium"):
        lyapunov_at(rho_sde(mlp_layer()), -1)


def _numeric_covariance(lim, values, dim, y):
    """The derived Sigma_ij (n d x n d) at y, from the span coefficients."""
    n = len(lim.tokens)
    basis = np.asarray(y) if lim.normalization.name != "layer" else np.vstack(
        [y, np.full((1, dim), 1 / np.sqrt(dim))])
    syms = sorted({e for e in lim.span.gram if isinstance(e, sp.Symbol)}, key=sp.default_sort_key)
    g = np.asarray(y) @ np.asarray(y).T
    gvals = {sym: g[int(sym.name[2]), int(sym.name[3])] for sym in syms}
    out = np.zeros((n * dim, n * dim))
    for (i, j), m in lim.covariance.items():
        c0 = float(m.scalar.subs({d: dim, **values, **gvals}))
        cm = np.asarray(m.coeffs.subs({d: dim, **values, **gvals}), float)
        out[i * dim:(i + 1) * dim, j * dim:(j + 1) * dim] = c0 * np.eye(dim) + basis.T @ cm @ basis
    return out


@pytest.mark.slow
@pytest.mark.parametrize(("n", "dim", "hybrid"), [(2, 3, False), (3, 5, True)])
def test_generated_sde_equals_transformer_sde(getkey, n, dim, hybrid):
    values = {beta: 1.3, eps: 0.7, mu: 0.4 if hybrid else 0.0}
    sde = to_sphere_sde(diffusion_limit(paper_layer(), n), values, dim)
    weights = Hybrid(mu=0.4, eps=0.7) if hybrid else PureNoise(0.7)
    ref = transformer_sde(1.3, weights, d=dim)
    for _ in range(3):
        y = spheresde.sample_uniform(getkey(), (n,), dim)
        dw = jax.random.normal(getkey(), (dim, dim))
        assert jnp.max(jnp.abs(sde.drift(0.0, y, None) - ref.drift(0.0, y, None))) < 1e-12
        assert jnp.max(jnp.abs(sde.diffusion(0.0, y, None, dw.ravel())
                               - ref.diffusion(0.0, y, None, dw))) < 1e-12


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["mlp", "layer", "per token"])
def test_generated_diffusion_has_the_derived_covariance(getkey, kind):
    # The diffusion is linear in dw: its matrix D must satisfy D D^T = Sigma exactly.
    dim, values = 4, {beta: 0.8, eps: 0.9, gamma: 0.6}
    if kind == "mlp":
        lim = diffusion_limit(mlp_layer(), 2)
    elif kind == "layer":
        lim = diffusion_limit(paper_layer(), 2, "layer")
        values[mu] = 0.0
    else:
        V, mlp = GaussianMatrix("V", std=eps, shared=False), ReLUMLP("M", scale=gamma)
        lim = diffusion_limit(lambda x: [s * (V[i] @ a) + s * mlp(x[i])
                                         for i, a in enumerate(softmax(x, beta))], 2)
    sde = to_sphere_sde(lim, values, dim)
    y = spheresde.sample_uniform(getkey(), (2,), dim)
    if kind == "layer":  # tokens in the hyperplane orthogonal to (1, ..., 1)
        y = spheresde.retract(y - y.mean(axis=1, keepdims=True))
    jac = jax.jacfwd(lambda w: sde.diffusion(0.0, y, None, w).ravel())(
        jnp.zeros(sde.noise_shape))
    np.testing.assert_allclose(jac @ jac.T, _numeric_covariance(lim, values, dim, y),
                               atol=1e-12)
    drift = sde.drift(0.0, y, None)
    # Ito on |X_i|^2: 2 <X_i, b_i> + tr Sigma_ii = 0 with the generated coefficients
    for i in range(2):
        block = jac[i * dim:(i + 1) * dim]
        assert abs(2 * y[i] @ drift[i] + jnp.trace(block @ block.T)) < 1e-12
    if kind == "layer":
        assert jnp.max(jnp.abs(jac.reshape(2, dim, -1).sum(axis=1))) < 1e-12
        assert jnp.max(jnp.abs(drift.sum(axis=1))) < 1e-12


@pytest.mark.slow
def test_generated_sde_is_solved_on_the_sphere(getkey):
    sde = to_sphere_sde(diffusion_limit(mlp_layer(), 2), {beta: 1.0, eps: 1.0, gamma: 0.5}, 3)
    y0 = spheresde.sample_uniform(getkey(), (2,), 3)
    sol = spheresde.solve(sde, y0, 0.0, 0.5, 0.01, key=getkey())
    assert jnp.max(jnp.abs(jnp.linalg.norm(sol.ys[-1], axis=-1) - 1)) < 1e-12


def test_missing_parameters_are_named():
    with pytest.raises(ValueError, match=r"missing.*epsilon"):
        to_sphere_sde(diffusion_limit(paper_layer(), 2), {beta: 1.0, mu: 0.0}, 3)


def test_codegen_needs_a_normalization():
    V = GaussianMatrix("V", std=eps)
    with pytest.raises(ValueError, match="no sphere"):
        to_sphere_sde(diffusion_limit(lambda x: [s * (V @ x[0])], 1, "none"), {eps: 1.0}, 3)


@dataclass(frozen=True, eq=False)
class WhiteNoise(AbstractNoiseSource):
    """A new source, one class: an independent N(0, |v|^2 I) vector for every token's
    ``v``, the law of a Gaussian matrix drawn per token."""

    def __call__(self, vector):
        return RandomVector((), ((sp.Integer(1), NoiseTerm(self, None, vector)),))

    def kernel(self, a, b):
        return a.vector.dot(b.vector) if a is b else sp.Integer(0)


def _white_and_per_token_limits(n):
    white, V = WhiteNoise(), GaussianMatrix("V", shared=False)
    return (diffusion_limit(lambda x: [s * eps * white(a) for a in softmax(x, beta)], n),
            diffusion_limit(lambda x: [s * eps * (V[i] @ a)
                                       for i, a in enumerate(softmax(x, beta))], n))


def test_a_new_noise_source_is_one_class():
    white, per_token = _white_and_per_token_limits(2)
    assert all((white.drift[i] - per_token.drift[i]).is_zero() for i in range(2))
    assert all((white.covariance[k] - per_token.covariance[k]).is_zero()
               for k in per_token.covariance)


@pytest.mark.slow
def test_the_generated_sde_draws_a_new_source_through_its_kernel(getkey):
    white, per_token = (to_sphere_sde(lim, {beta: 0.8, eps: 0.9}, 3)
                        for lim in _white_and_per_token_limits(1))
    y = spheresde.sample_uniform(getkey(), (1,), 3)

    def covariance(sde):
        jac = jax.jacfwd(lambda w: sde.diffusion(0.0, y, None, w).ravel())(
            jnp.zeros(sde.noise_shape))
        return jac @ jac.T

    np.testing.assert_allclose(covariance(white), covariance(per_token), atol=1e-12)
    np.testing.assert_allclose(white.drift(0.0, y, None), per_token.drift(0.0, y, None),
                               atol=1e-12)
