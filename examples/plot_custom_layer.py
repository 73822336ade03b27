r"""
Deriving the limit of a layer of your own
=========================================

:func:`proofs_check.engine.diffusion_limit` derives the Itô SDE limit of a residual layer
:math:`X_i' = N(X_i + \delta_i)` from the layer itself: you write the increment
:math:`\delta_i` with the tokens, random matrices of a declared law and the residual step
:math:`s = L^{-1/2}`; the engine expands the normalization in :math:`s` and takes the
Gaussian expectations (:doc:`/theory/beyond`).

As a layer of our own we take the paper's attention with part of the noise **drawn per
token** (a value matrix :math:`U_i` of its own for every token, as dropout-like noise
would be), besides the shared one:

.. math:: \delta_i = s\,(\varepsilon\, V A_i + \tau\, U_i A_i),

and ask what it does to the two-token clustering.
"""

# %%
# The layer, as the engine reads it
# ---------------------------------
# A :class:`~proofs_check.engine.GaussianMatrix` is :math:`\text{mean}\cdot I +
# \text{std}\cdot G` with iid normal :math:`G`, fresh per layer; ``shared=False`` draws one
# per token (``U[i] @ v``).
import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
import sympy as sp

import spheresde
from proofs_check.engine import GaussianMatrix, diffusion_limit, rho_sde, softmax
from proofs_check.symbols import beta, d, eps, rho, s
from spheresde.transformer import to_sphere_sde

jax.config.update("jax_enable_x64", True)

tau = sp.Symbol("tau", nonnegative=True)
V = GaussianMatrix("V", std=eps)
U = GaussianMatrix("U", std=tau, shared=False)


def my_layer(tokens):
    attention = softmax(tokens, beta)
    return [s * (V @ a) + s * (U[i] @ a) for i, a in enumerate(attention)]


# %%
# The two-token SDE, derived
# --------------------------
# :func:`~proofs_check.engine.rho_sde` applies Itô's lemma to
# :math:`\rho = \langle X_1, X_2\rangle`. The per-token part adds a drift towards
# :math:`\rho = 0` that does **not** vanish at :math:`\rho = \pm 1` (its noise does):
# neither the single cluster nor the antipodal pair is an equilibrium any more.
sde = rho_sde(my_layer)
at_one = sp.simplify(sde.drift.subs(rho, 1))
print("drift at rho = +1:", at_one)
print("variance at rho = +1:", sp.simplify(sde.variance.subs(rho, 1)))

# %%
# Drift and variance of rho
# -------------------------
values = {d: 4, beta: 1.0, eps: 1.0}
grid = np.linspace(-1, 1, 201)
fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
for t_value in (0.0, 0.3, 0.6):
    params = {**values, tau: t_value}
    m = sp.lambdify(rho, sde.drift.subs(params), "numpy")
    v = sp.lambdify(rho, sde.variance.subs(params), "numpy")
    axes[0].plot(grid, m(grid) + 0 * grid, label=rf"$\tau = {t_value}$")
    axes[1].plot(grid, v(grid) + 0 * grid)
axes[0].set(xlabel=r"$\rho$", ylabel=r"drift $m(\rho)$")
axes[1].set(xlabel=r"$\rho$", ylabel=r"variance $s(\rho)^2$")
axes[0].legend()
fig.tight_layout()

# %%
# The token SDE, generated and solved
# -----------------------------------
# :func:`~spheresde.transformer.to_sphere_sde` lambdifies the derived drift and the noise
# structure (one shared Brownian matrix for :math:`V`, one per token for :math:`U`) into
# a :class:`spheresde.SphereSDE`, which :func:`spheresde.solve_batch` integrates.
limit = diffusion_limit(my_layer, 2)
paths, horizon = 400, 4.0
key_start, key_noise = jax.random.split(jax.random.key(7))
y0 = spheresde.sample_uniform(key_start, (paths, 2), 4)
fig, ax = plt.subplots(figsize=(6, 3.4))
for t_value in (0.0, 0.3):
    token_sde = to_sphere_sde(limit, {**values, tau: t_value}, 4)
    sol = spheresde.solve_batch(token_sde, y0, 0.0, horizon, 0.02, key=key_noise)
    final = sol.ys[:, -1]
    rho_t = np.asarray(jnp.einsum("pd,pd->p", final[:, 0], final[:, 1]))
    ax.hist(rho_t, bins=40, range=(-1, 1), alpha=0.6, label=rf"$\tau = {t_value}$")
ax.set(xlabel=rf"$\rho$ at $t = {horizon:g}$", ylabel="paths")
ax.legend()
fig.tight_layout()
plt.show()

# %%
# Without per-token noise (:math:`\tau = 0`) the pairs pile up at the equilibria
# :math:`\rho = \pm 1`; with it the drift at :math:`\rho = 1` is
# :math:`-(d-1)\tau^2 < 0`, so the pairs are pushed back into the interior and keep a
# spread: the law of :math:`\rho` relaxes to a stationary density instead of being
# absorbed.
