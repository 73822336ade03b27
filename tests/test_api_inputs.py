"""Bad input to the public API (the Transformer, two tokens, the classifier and its data,
the samplers, solve's step count): one ValueError that says what is wrong and what to
pass, raised before any work, never a NaN, a ZeroDivisionError or an error of XLA."""

import inspect
import re

import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest
from helpers import brownian_motion_sde

import spheresde
from spheresde import data, transformer, two_token
from spheresde.transformer import Hybrid, PureNoise

NAN, INF = float("nan"), float("inf")
TOKENS = jnp.eye(2, 3)  # two orthogonal tokens of S^2


def own(fn):
    """``fn`` without the run-time type checker that this test run wraps the numerical
    modules in (pyproject's --jaxtyping-packages): it would answer a count of 2.5 first,
    in its own words; the checks under test are the function's own, which users meet."""
    return inspect.unwrap(fn)


def network(**bad):
    kwargs = dict(tokens0=TOKENS, beta=1.0, layers=4, horizon=1.0, trajectories=2) | bad
    return own(transformer.simulate_network)(jr.key(0), **kwargs)


def rho(**bad):
    kwargs = dict(beta=1.0, d=3, trajectories=8, dt=0.1, horizon=1.0) | bad
    return own(two_token.simulate_rho)(jr.key(0), **kwargs)


def classifier(**bad):
    kwargs = dict(patches=4, patch_size=2, classes=3, d=4, layers=2, weights="random") | bad
    return data.TransformerClassifier.create(jr.key(0), **kwargs)


def _paper_limit():
    from proofs_check.engine import diffusion_limit
    from proofs_check.layers import paper_layer

    return diffusion_limit(paper_layer(), 2)


def solve(dt):
    return spheresde.solve(brownian_motion_sde(3, "ito"), jnp.array([1.0, 0.0, 0.0]), 0.0,
                           0.1, dt, key=jr.key(0))


BAD = [
    # the discrete network: the silent NaNs and foreign errors
    (lambda: network(tokens0=TOKENS.at[0, 0].set(NAN)),
     "tokens0 must be finite, not NaN or infinite: got nan at index (0, 0) (1 of 6 entries not "
     "finite); pass finite values"),
    (lambda: network(tokens0=jnp.zeros((2, 3))),
     "tokens0 has a zero token, which has no direction on the sphere; pass tokens of length 1"),
    (lambda: network(tokens0=jnp.ones((2, 1))),
     "tokens0 holds tokens of d=1 coordinates (shape (2, 1)); the sphere S^(d-1) needs d >= 2: "
     "pass tokens of 2 or more coordinates"),
    (lambda: network(tokens0=jnp.ones(3)),
     "tokens0 has shape (3,); pass n tokens of dimension d, an array of shape (n, d) or "
     "(trajectories, n, d)"),
    (lambda: network(tokens0=jnp.ones((0, 3))),
     "tokens0 holds no token (shape (0, 3)); pass at least one"),
    (lambda: network(tokens0=TOKENS.astype(jnp.float16)),
     "tokens0 has dtype float16, which is not computed in (half precision rounds at about "
     "1e-3): pass float32 or float64"),
    (lambda: network(layers=2.5),
     "layers must be a whole number >= 1, got 2.5; pass e.g. layers=2"),
    (lambda: network(layers=0), "layers must be a whole number >= 1, got 0; pass e.g. layers=1"),
    (lambda: network(trajectories=-3),
     "trajectories must be a whole number >= 1, got -3; pass e.g. trajectories=1"),
    (lambda: network(beta=NAN), "beta must be finite, not NaN or infinite: got nan"),
    (lambda: network(beta=INF), "beta must be finite, not NaN or infinite: got inf"),
    (lambda: network(weights=PureNoise(sigma=NAN)),
     "the noise scale of PureNoise(sigma=nan) must be finite, not NaN or infinite: got nan"),
    (lambda: network(weights=PureNoise(sigma=-1.0)),
     "the noise scale of PureNoise(sigma=-1.0) must be >= 0, got -1"),
    (lambda: network(weights=Hybrid(mu=INF)), "the mu of Hybrid(mu=inf) must be finite"),
    (lambda: network(horizon=NAN), "horizon must be finite, not NaN or infinite: got nan"),
    (lambda: network(horizon=1e9),
     "horizon=1000000000.0 with layers=4 gives 4,000,000,000 steps, more than the 10,000,000 "
     "one call computes; pass a shorter horizon or fewer layers"),
    # the rest of spheresde.transformer
    (lambda: own(transformer.transformer_sde)(NAN, d=3), "beta must be finite"),
    (lambda: own(transformer.transformer_sde)(1.0, d=1),
     "the sphere S^(d-1) needs a whole d >= 2, got d=1; pass e.g. d=3"),
    (lambda: own(transformer.attention)(TOKENS, INF), "beta must be finite"),
    (lambda: own(transformer.attention)(jnp.ones((2, 1)), 1.0), "tokens of d=1 coordinates"),
    (lambda: own(transformer.classify)(jnp.zeros((2, 3))), "tokens has a zero token"),
    (lambda: own(transformer.classify)(TOKENS, NAN), "tol must be finite"),
    (lambda: own(transformer.cluster_sizes)(TOKENS.at[1, 1].set(INF)),
     "tokens must be finite, not NaN or infinite: got inf at index (1, 1) (1 of 6 entries not "
     "finite)"),
    (lambda: own(transformer.outcome_fractions)(jnp.ones((2, 1))), "tokens of d=1"),
    (lambda: own(transformer.weak_error_vs_layers)(jr.key(0), paths=0),
     "paths must be a whole number >= 1, got 0; pass e.g. paths=1"),
    (lambda: own(transformer.weak_error_vs_layers)(jr.key(0), layers=(10, 20.5)),
     "every entry of layers must be a whole number >= 1, got 20.5"),
    (lambda: own(transformer.weak_error_vs_layers)(jr.key(0), rho0=2.0),
     "rho0 must lie in [-1, 1] (it is <X1, X2>), got 2"),
    (lambda: own(transformer.formation_threshold)(NAN, 3, tokens=4, cluster=2),
     "beta must be finite"),
    # two tokens
    (lambda: rho(trajectories=0), "trajectories must be a whole number >= 1, got 0"),
    (lambda: rho(trajectories=2.5), "trajectories must be a whole number >= 1, got 2.5"),
    (lambda: rho(dt=0.0), "dt must be positive, got dt=0.0"),
    (lambda: rho(dt=1e-12),
     "horizon=1.0 with dt=1e-12 gives 1,000,000,000,000 steps, more than the 10,000,000 one "
     "call computes; pass dt >= 1e-07"),
    (lambda: rho(beta=NAN), "beta must be finite"),
    (lambda: rho(d=1), "d must be >= 2, got 1"),
    (lambda: rho(sigma=INF), "sigma must be finite"),
    (lambda: rho(rho0=1.5), "rho0 must lie in [-1, 1] (it is <X1, X2>), got 1.5"),
    (lambda: own(two_token.antipodal_probability)(NAN, 3), "beta must be finite"),
    (lambda: own(two_token.antipodal_probability)(1.0, 3, sigma=NAN), "sigma must be finite"),
    (lambda: own(two_token.outcome_probabilities)(INF, 3, horizon=1.0), "beta must be finite"),
    (lambda: own(two_token.critical_beta)(NAN), "d must be finite"),
    (lambda: own(two_token.critical_beta)(1), "d must be >= 2, got 1"),
    (lambda: own(two_token.lyapunov_minus)(1.0, 3, sigma=-1.0), "sigma must be >= 0, got -1"),
    (lambda: own(two_token.hybrid_threshold)(1.0, 3, mu=NAN), "mu must be finite"),
    (lambda: own(two_token.drift)(1.5, 1.0, 3),
     "rho must lie in [-1, 1] (it is <X1, X2>), got 1.5"),
    (lambda: own(two_token.diffusion)(0.0, 1.0, 3, sigma=NAN), "sigma must be finite"),
    (lambda: own(two_token.scale_g)(0.0, 1.0, 1), "d must be >= 2, got 1"),
    (lambda: own(two_token.rho_fractions)(np.array([0.5, NAN])),
     "rho must be finite, not NaN or infinite: got nan at index (1,)"),
    (lambda: own(two_token.paper_hybrid_threshold)(INF), "beta must be finite"),
    # the samplers
    (lambda: own(spheresde.sample_uniform)(jr.key(0), (-2,), 3),
     "shape must be a tuple of whole sizes >= 1, got (-2,); pass e.g. shape=(10,)"),
    (lambda: own(spheresde.sample_uniform)(jr.key(0), (2.5,), 3), "got (2.5,)"),
    (lambda: own(spheresde.sample_uniform)(jr.key(0), (2,), 1),
     "the sphere S^(d-1) needs a whole d >= 2, got d=1; pass e.g. d=3"),
    (lambda: own(spheresde.sample_uniform)(jr.key(0), (2,), 3, jnp.float16),
     "dtype has dtype float16"),
    (lambda: own(spheresde.sample_von_mises_fisher)(jr.key(0), jnp.array([1.0, 0.0]), 1.0, (0,)),
     "shape must be a tuple of whole sizes >= 1, got (0,)"),
    (lambda: own(spheresde.sample_von_mises_fisher)(jr.key(0), jnp.array([1.0, 0.0], jnp.float16),
                                                     1.0), "mu has dtype float16"),
    (lambda: own(spheresde.sample_brownian_motion)(jr.key(0), jnp.array([1.0, 0.0]), 1.0, (-1,)),
     "shape must be a tuple of whole sizes >= 1, got (-1,)"),
    # the classifier and its data
    (lambda: own(data.init_values)(jr.key(0), "random", 0, 4), "layers must be a whole number"),
    (lambda: own(data.init_values)(jr.key(0), "random", 2, 1), "needs a whole d >= 2, got d=1"),
    (lambda: own(data.init_values)(jr.key(0), "random", 2, 4, NAN), "sigma must be finite"),
    (lambda: own(data.init_values)(jr.key(0), "random", 2, 4, 1.0, jnp.float16),
     "dtype has dtype float16"),
    (lambda: classifier(classes=0), "classes must be a whole number >= 1, got 0"),
    (lambda: classifier(layers=0), "layers must be a whole number >= 1, got 0"),
    (lambda: classifier(beta=NAN), "beta must be finite"),
    (lambda: own(data.classifier_optimizer)(NAN, 0.0, 10), "lr must be finite"),
    (lambda: own(data.classifier_optimizer)(1e-3, 0.0, 0), "total_steps must be a whole number"),
    (lambda: own(data.patchify)(np.ones((1, 4, 4, 1)), 0), "patch must be a whole number >= 1"),
    (lambda: own(data.patchify)(np.full((1, 4, 4, 1), NAN), 2), "images must be finite"),
    (lambda: own(data.load_digits)(0, val_fraction=1.0),
     "val_fraction must lie strictly between 0 and 1, got 1.0; pass e.g. val_fraction=0.2"),
    (lambda: own(data.load_fashion_mnist)(subset=-1),
     "subset must be a whole number >= 0, got -1; pass e.g. subset=0"),
    # solve: a step count past the cap, refused before any work
    (lambda: solve(1e-9),
     "dt=1e-09 gives 100,000,000 steps from t0=0 to t1=0.1, more than the 10,000,000 one solve "
     "computes; pass dt >= 1e-08"),
    # the code generation of a derived limit, and a layer written once
    (lambda: own(transformer.to_sphere_sde)(_paper_limit(), {"beta": 1.0}, 1),
     "the sphere S^(d-1) needs a whole dim >= 2, got dim=1; pass e.g. dim=3"),
    (lambda: own(transformer.to_sphere_sde)(_paper_limit(), {"beta": NAN}, 3),
     "the value of beta must be finite, not NaN or infinite: got nan; pass finite values"),
    (lambda: transformer.layer("paper").simulate(jr.key(0), jnp.ones((2, 2, 3)), beta=INF,
                                                 layers=4, steps=2),
     "beta must be finite, not NaN or infinite: got inf; pass finite values"),
]


@pytest.mark.parametrize(("call", "says"), BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_input_is_refused_saying_what_to_pass(call, says):
    with pytest.raises(ValueError, match=re.escape(says)) as refusal:
        call()
    assert "\n" not in str(refusal.value)  # one line
