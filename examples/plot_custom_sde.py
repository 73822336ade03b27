r"""
Writing your own sphere SDE
===========================

A :class:`spheresde.SphereSDE` is two functions and a convention. As a worked case we
build a **Langevin diffusion on the sphere** whose stationary law is the von
Mises--Fisher distribution :math:`p(x)\propto e^{\kappa\langle\mu, x\rangle}` on
:math:`S^2`, and check the long-time statistics against the exact law.

For a target density :math:`p`, the diffusion :math:`dX = \tfrac12\nabla_S\log p\,dt +
dB^S` (with :math:`B^S` Brownian motion on the sphere, generator
:math:`\tfrac12\Delta_S`) has :math:`p` as its stationary law. Here
:math:`\nabla_S\log p = \kappa P_X\mu`, so in **Stratonovich** form

.. math:: dX = \frac{\kappa}{2} P_X\,\mu\, dt + P_X\circ dW,
          \qquad W \text{ a Brownian motion in } \mathbb{R}^3 .
"""

# %%
# Drift, diffusion, parameters
# ----------------------------
# ``drift(t, y, args)`` returns an array shaped like ``y``; ``diffusion(t, y, args, dw)``
# returns the increment :math:`g(t, y)\,dw` (so the matrix :math:`g` is never built).
# Parameters travel in ``args``. In Stratonovich form both must be tangent to the
# sphere; :func:`spheresde.project_tangent` makes them so.
import diffrax
import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt

import spheresde

jax.config.update("jax_enable_x64", True)


def drift(t, y, args):
    kappa, mu = args
    return 0.5 * kappa * spheresde.project_tangent(y, jnp.broadcast_to(mu, y.shape))


def diffusion(t, y, args, dw):
    return spheresde.project_tangent(y, dw)


sde = spheresde.SphereSDE(drift, diffusion, noise_shape=(3,), convention="stratonovich")

# %%
# Solve from uniform starts
# -------------------------
# The default solver for a Stratonovich SDE is :class:`spheresde.GeodesicMidpoint`
# (:func:`spheresde.default_solver`).
# Starting from uniform points, by time :math:`t = 4` the law has relaxed (the spectral
# gap of the sphere's Laplacian on :math:`S^2` is 1, i.e. correlation time of order 1).
kappa, mu = 3.0, jnp.array([0.0, 0.0, 1.0])
paths = 4000
key_start, key_noise = jax.random.split(jax.random.key(42))
y0 = spheresde.sample_uniform(key_start, (paths,), 3)
sol = spheresde.solve_batch(
    sde, y0, 0.0, 4.0, 0.01, key=key_noise, args=(kappa, mu),
    saveat=diffrax.SaveAt(t1=True),
)
u = sol.ys[:, -1] @ mu  # <X_T, mu>
print(f"max | |X| - 1 | = {float(spheresde.norm_error(sol.ys)):.1e}")

# %%
# Compare with the exact law
# --------------------------
# Under the von Mises--Fisher law on :math:`S^2`, :math:`u = \langle X,\mu\rangle` has
# density :math:`\kappa e^{\kappa u} / (2\sinh\kappa)` on :math:`[-1, 1]` and mean
# :math:`\coth\kappa - 1/\kappa`.
exact_mean = 1 / jnp.tanh(kappa) - 1 / kappa
se = jnp.std(u) / jnp.sqrt(paths)
print(f"mean <X_T, mu>: Monte Carlo {float(u.mean()):.4f} +- {float(se):.4f} (1 s.e.), "
      f"exact {float(exact_mean):.4f}")

grid = jnp.linspace(-1, 1, 200)
fig, ax = plt.subplots(figsize=(6, 4))
ax.hist(u, bins=40, range=(-1, 1), density=True, alpha=0.5, label=f"{paths} paths at t = 4")
ax.plot(grid, kappa * jnp.exp(kappa * grid) / (2 * jnp.sinh(kappa)), "k-", lw=2,
        label=r"von Mises–Fisher, $\kappa e^{\kappa u}/(2\sinh\kappa)$")
ax.set_xlabel(r"$u = \langle X_T, \mu\rangle$")
ax.set_ylabel("density")
ax.set_title(rf"Langevin diffusion on $S^2$, $\kappa = {kappa:g}$")
ax.legend(loc="upper left")
fig.tight_layout()

# %%
# The same SDE in Itô form
# ------------------------
# To solve with an Itô scheme, write the Itô drift: the Stratonovich correction of
# :math:`P_X\circ dW` is the normal term :math:`-\tfrac{d-1}{2}X` (here :math:`-X`).
# (The geodesic solvers use only the tangent part of an Itô drift and produce the
# normal part from the geometry, so leaving it out gives the same result.) Handing the
# Stratonovich SDE to an Itô solver is refused, since it would converge to a different
# process.
def ito_drift(t, y, args):
    return drift(t, y, args) - y


ito_sde = spheresde.SphereSDE(ito_drift, diffusion, noise_shape=(3,), convention="ito")
try:
    spheresde.solve(sde, y0[0], 0.0, 1.0, 0.01, key=key_noise, args=(kappa, mu),
                    solver=spheresde.GeodesicEuler())
except ValueError as err:
    print("refused:", str(err)[:90], "...")

sol_ito = spheresde.solve_batch(ito_sde, y0, 0.0, 4.0, 0.01, key=key_noise, args=(kappa, mu))
u_ito = sol_ito.ys[:, -1] @ mu
print(f"Itô form, GeodesicEuler: mean <X_T, mu> = {float(u_ito.mean()):.4f} "
      f"+- {float(jnp.std(u_ito) / jnp.sqrt(paths)):.4f}")
