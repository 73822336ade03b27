"""The recipe "A new normalization" of ``docs/contributing.rst``, followed literally: one
class and one registration, and the network, :mod:`proofs_check` and the code generation
take the new normalization as they take LayerNorm."""

from dataclasses import dataclass
from typing import ClassVar

import jax
import jax.numpy as jnp
import pytest
import sympy as sp

import spheresde
from proofs_check.engine import GaussianMatrix, diffusion_limit, manifold_residuals
from proofs_check.symbols import d, eps, s
from spheresde.transformer import (
    AbstractNormalization,
    attention,
    normalization,
    register_normalization,
    simulate_network,
    to_sphere_sde,
)
from spheresde.transformer._network import layer


@dataclass(frozen=True)
class DropFirst(AbstractNormalization):
    """Zero the first coordinate, then normalize: the unit sphere orthogonal to e_1."""

    name: ClassVar[str] = "drop_first"
    directions: ClassVar[int] = 1

    def project(self, y):
        return y * (jnp.arange(y.shape[-1]) > 0)

    def fixed_directions(self, d, dtype):
        return jnp.eye(1, d, dtype=dtype)


register_normalization(DropFirst())


def test_the_name_is_registered_once():
    assert normalization("drop_first") == DropFirst()
    register_normalization(DropFirst())  # the same again: nothing happens

    @dataclass(frozen=True)
    class Other(DropFirst):
        """Another normalization under a name that is taken."""

    with pytest.raises(ValueError, match="'drop_first' is taken"):
        register_normalization(Other())


def test_a_layer_of_the_network_normalizes_by_it(getkey):
    x = DropFirst().normalize(spheresde.sample_uniform(getkey(), (3,), 5))
    z = jax.random.normal(getkey(), (5, 5))
    y = layer(x, z, 1.0, None, None, 0.1, 0.3, "full", 1.0, norm="drop_first")
    residual = x + 0.1 * attention(x, 1.0) + 0.3 * attention(x, 1.0) @ z.T
    expected = residual.at[:, 0].set(0.0)
    assert jnp.max(jnp.abs(y - expected / jnp.linalg.norm(expected, axis=-1, keepdims=True))
                   ) < 1e-12


@pytest.mark.slow
def test_the_network_runs_it_by_name(getkey):
    x0 = spheresde.sample_uniform(getkey(), (3,), 5)
    out = simulate_network(getkey(), x0, 1.0, layers=10, horizon=1.0, trajectories=4,
                           norm="drop_first").tokens
    assert jnp.max(jnp.abs(jnp.linalg.norm(out, axis=-1) - 1)) < 1e-12
    assert jnp.max(jnp.abs(out[..., 0])) < 1e-12


def _one_token_limit():
    V = GaussianMatrix("V", std=eps)
    return diffusion_limit(lambda x: [s * (V @ x[0])], 1, DropFirst())


def test_proofs_check_derives_its_limit():
    # one token with A = X: Brownian motion on the unit sphere of a (d - 1)-dimensional
    # space, whose Ito drift is -eps^2 (d - 2)/2 X (d - 2 tangent directions)
    limit = _one_token_limit()
    assert all(v == [0, 0] for v in manifold_residuals(limit).values())
    assert sp.factor(limit.drift[0].coeffs[0] + eps**2 * (d - 2) / 2) == 0


@pytest.mark.slow
def test_the_generated_sde_uses_its_fixed_direction(getkey):
    sde = to_sphere_sde(_one_token_limit(), {eps: 0.7}, 4)
    y = DropFirst().normalize(spheresde.sample_uniform(getkey(), (1,), 4))
    assert jnp.max(jnp.abs(sde.drift(0.0, y, None) + 0.49 * (4 - 2) / 2 * y)) < 1e-12
    dw = jax.random.normal(getkey(), sde.noise_shape)
    move = sde.diffusion(0.0, y, None, dw)
    assert jnp.abs(move[0, 0]) < 1e-12  # never off the hyperplane x_1 = 0
    assert jnp.abs(move[0] @ y[0]) < 1e-12  # tangent to the sphere
    assert jnp.linalg.norm(move) > 0.1


@pytest.mark.slow
def test_its_two_token_law_is_the_rms_law_one_dimension_down():
    assert DropFirst().two_token_dimension(5) == 4
