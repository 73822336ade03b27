r"""
Your own layer, end to end
==========================

Write a Transformer layer once, with the primitives of :mod:`proofs_check.engine`, and
ask everything the package knows of it: its derived two-token SDE, its critical inverse
temperature, its exact outcome law at :math:`t = \infty` and at a finite depth-time, and
its discrete network, run at a finite depth and compared with that law
(:class:`spheresde.transformer.Layer`).

As a layer of our own we take attention at two temperatures, a soft head at
:math:`\beta` and a sharp one at :math:`3\beta` with half the noise:

.. math:: \delta_i = s\,\big(\varepsilon\, V A_{\beta, i} + \tfrac{\varepsilon}{2}\,
          W A_{3\beta, i}\big), \qquad X_i' = \frac{X_i + \delta_i}{|X_i + \delta_i|},

:math:`V`, :math:`W` independent Gaussian matrices, fresh per layer and shared by the
tokens, :math:`s = L^{-1/2}`.
"""

# %%
# One definition
# --------------
# The function of the tokens is what the engine reads symbolically and what the network
# runs numerically: the engine reads it on two (or ``n``) tokens with a generic Gram
# matrix, and its coefficients, lambdified, are the discrete layer (nothing is typed a
# second time). Saved in a module of the working directory, the same function runs every
# sweep: ``spheresde phase --layer mymodule:two_temperatures --method discrete``.
import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
import sympy as sp

import spheresde
from proofs_check.engine import GaussianMatrix, softmax
from proofs_check.symbols import beta, eps, rho, s
from spheresde.transformer import ANTIPODAL, Layer, classify

jax.config.update("jax_enable_x64", True)

V = GaussianMatrix("V", std=eps)
W = GaussianMatrix("W", std=eps / 2)


def two_temperatures(tokens):
    soft, sharp = softmax(tokens, beta), softmax(tokens, 3 * beta)
    return [s * (V @ a) + s * (W @ b) for a, b in zip(soft, sharp, strict=True)]


layer = Layer("two_temperatures", two_temperatures)

# %%
# The derived SDE and the critical beta
# -------------------------------------
# The engine's two-token SDE of :math:`\rho = \langle X_1, X_2\rangle`. Its drift and
# noise vanish at :math:`\rho = \pm 1`, so both are equilibria and the outcome law is
# that of a one-dimensional diffusion; the antipodal pair attracts above the root of its
# Lyapunov exponent at :math:`\rho = -1`.
sde = layer.rho_sde()
print("drift of rho at rho = -1:", sp.simplify(sde.drift.subs(rho, -1)))
print("equilibria at +-1:", layer.equilibria())
dims = (4, 6)
for d in dims:
    print(f"d = {d}: critical beta {layer.critical_beta(d):.4f} "
          f"(the paper's layer: {float(spheresde.two_token.critical_beta(d)):.4f})")

# %%
# The exact law and the network
# -----------------------------
# :meth:`~spheresde.transformer.Layer.antipodal_probability` is the :math:`t \to \infty`
# law of two uniform tokens, from the scale function of the derived SDE;
# :meth:`~spheresde.transformer.Layer.outcome_probabilities` its law at the depth-time
# :math:`T`, from its generator (the Kolmogorov equation). The network of the same layer
# runs :math:`TL` layers of step :math:`s = L^{-1/2}` from uniform tokens (1,000
# networks a point, error bars of 2 binomial standard errors). At :math:`L = 20` the
# network is not yet its limit: near the critical beta its antipodal fraction sits a few
# hundredths below the law at :math:`T`, the chain's own :math:`O(1/L)` offset, as the
# paper's network does at the same depth (the ``p_network`` column of ``spheresde
# phase``); it closes as :math:`L` grows.
horizon, layers, tol, paths = 10.0, 20, 1e-2, 1000
fine = np.linspace(0.0, 3.0, 31)
points = np.array([1.0, 2.0, 3.0])
fig, ax = plt.subplots(figsize=(7, 4.2))
for d, color in zip(dims, ("tab:blue", "tab:orange"), strict=True):
    ax.plot(fine, [layer.antipodal_probability(b, d) for b in fine], color=color, ls=":")
    at_horizon = [float(layer.outcome_probabilities(b, d, horizon=horizon, tol=tol).antipodal)
                  for b in fine]
    ax.plot(fine, at_horizon, color=color, label=f"d = {d}")
    ax.axvline(layer.critical_beta(d), color=color, ls="--", lw=1)
    start = spheresde.sample_uniform(jax.random.key(d), (paths, 2), d)
    fractions = []
    for b in points:
        final = layer.simulate(jax.random.key(100 + d), start, beta=float(b), layers=layers,
                               steps=round(horizon * layers))
        fractions.append(float(jnp.mean(classify(final, tol) == ANTIPODAL)))
    fractions = np.array(fractions)
    stderr = np.sqrt(fractions * (1 - fractions) / paths)
    ax.errorbar(points, fractions, yerr=2 * stderr, fmt="o", color=color, capsize=2)
ax.set(xlabel=r"inverse temperature $\beta$", ylabel="P(antipodal)",
       title=f"Two temperatures: law at T = {horizon:g} (solid), t = inf (dotted), critical "
             f"beta (dashed);\nnetwork, L = {layers}, {paths} paths (points)")
ax.legend()
fig.tight_layout()
plt.show()

# %%
# The same layer through a sweep
# ------------------------------
# Saved as ``mymodule.py`` in the working directory, the function is a layer of every
# sweep: ``phase``, ``hybrid``, ``tokens`` and ``dominance`` take ``--layer
# mymodule:two_temperatures`` (``beta``, ``eps`` and ``mu`` take the sweep's values), or
# register it for a name of its own (:func:`spheresde.transformer.register_layer`).
# ``--method exact`` uses the derived law above; ``--method discrete`` the network. A
# layer whose :math:`\rho = \pm 1` are not equilibria (noise drawn per token, an MLP
# block) has no exact law: the sweep says so in one line and reports the fractions its
# network reaches.
