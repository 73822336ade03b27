r"""
Exact samplers as references for a solver
=========================================

Two laws on :math:`S^{d-1}` can be drawn exactly, without a time step:

- Brownian motion at time :math:`t` (generator half the Laplace--Beltrami operator),
  :func:`spheresde.sample_brownian_motion`, through the Wright--Fisher representation of
  its cosine with the start (Mijatović, Mramor and Uribe, 2020);
- the von Mises--Fisher law :math:`\propto e^{\kappa\langle x, \mu\rangle}`,
  :func:`spheresde.sample_von_mises_fisher` (on :math:`S^2` by inverting the CDF of the
  cosine, in other dimensions by Wood's 1994 rejection in batched rounds), the stationary law of the
  Langevin diffusion :math:`dX = \tfrac{\kappa}{2} P_X\mu\,dt + P_X \circ dW`.

Both serve as references: here the law of a solver at time :math:`t` against the exact
one, on :math:`S^2`.
"""

# %%
# Brownian motion: a solver against the exact law
# -----------------------------------------------
# Brownian motion on :math:`S^2` in Stratonovich form, :math:`dX = P_X \circ dW`, solved
# with the geodesic midpoint rule from the north pole to :math:`t = 0.3`, against
# exact draws at the same time and the heat kernel of the cosine
# :math:`c = \langle X_t, X_0\rangle`,
# :math:`p_t(c) = \sum_l \tfrac{2l+1}{2}\, e^{-l(l+1)t/2} P_l(c)`.
import jax
import jax.numpy as jnp
import jax.random as jr
import matplotlib.pyplot as plt
import numpy as np
from scipy import special, stats

import spheresde

jax.config.update("jax_enable_x64", True)

t, paths = 0.3, 20_000
north = jnp.array([0.0, 0.0, 1.0])
bm = spheresde.SphereSDE(lambda t, y, args: jnp.zeros_like(y),
                         lambda t, y, args, dw: spheresde.project_tangent(y, dw), (3,),
                         "stratonovich")
solved = spheresde.solve_batch(bm, jnp.broadcast_to(north, (paths, 3)), 0.0, t, 0.03,
                               key=jr.key(0)).ys[:, -1] @ north
exact = spheresde.sample_brownian_motion(jr.key(1), north, t, (paths,)) @ north

c = np.linspace(-1, 1, 400)
density = sum((2 * k + 1) / 2 * np.exp(-k * (k + 1) * t / 2) * special.eval_legendre(k, c)
              for k in range(80))
ks = stats.ks_2samp(np.asarray(solved), np.asarray(exact))
for name, cosine in (("solver", solved), ("exact sampler", exact)):
    print(f"E<X_t, X_0>, {name:13s}: {float(cosine.mean()):.4f} +- "
          f"{float(cosine.std()) / np.sqrt(paths):.4f} (1 s.e., {paths} paths)")
print(f"closed form e^(-t): {np.exp(-t):.4f}; two-sample Kolmogorov-Smirnov test of "
      f"solver against sampler: p = {ks.pvalue:.2f}")

fig, ax = plt.subplots(figsize=(5.5, 3.6))
bins = np.linspace(-0.2, 1, 40)
ax.hist(np.asarray(solved), bins, density=True, alpha=0.5, label="GeodesicMidpoint, dt = 0.03")
ax.hist(np.asarray(exact), bins, density=True, histtype="step", lw=1.5,
          label="sample_brownian_motion")
ax.plot(c, density, "k", lw=1, label="heat kernel")
ax.set(xlim=(-0.2, 1), xlabel=r"$\langle X_t, X_0\rangle$", ylabel="density",
         title=f"Brownian motion on $S^2$, t = {t}")
ax.legend(fontsize=7)
fig.tight_layout()

# %%
# von Mises--Fisher: the stationary law of the Langevin diffusion
# ---------------------------------------------------------------
# On :math:`S^2` the cosine :math:`w = \langle x, \mu\rangle` of the von Mises--Fisher law
# has density :math:`\kappa e^{\kappa w} / (2\sinh\kappa)` on :math:`[-1, 1]`; its mean is
# :math:`\coth\kappa - 1/\kappa`.
kappa = 4.0
w = spheresde.sample_von_mises_fisher(jr.key(2), north, kappa, (paths,)) @ north
print(f"von Mises-Fisher mean cosine: {float(w.mean()):.4f} +- "
      f"{float(w.std()) / np.sqrt(paths):.4f} (1 s.e.), closed form "
      f"{1 / np.tanh(kappa) - 1 / kappa:.4f}")
fig, ax = plt.subplots(figsize=(5.5, 3.6))
ax.hist(np.asarray(w), np.linspace(-1, 1, 40), density=True, alpha=0.5,
           label="sample_von_mises_fisher")
ax.plot(c, kappa * np.exp(kappa * c) / (2 * np.sinh(kappa)), "k", lw=1,
           label=r"$\kappa e^{\kappa w}/2\sinh\kappa$")
ax.set(xlabel=r"$\langle x, \mu\rangle$", title=rf"von Mises--Fisher, $\kappa$ = {kappa}")
ax.legend(fontsize=7)
fig.tight_layout()

# %%
# Every mean printed above lies within two standard errors of its closed form, and the
# two-sample Kolmogorov--Smirnov test does not tell the solver's law of the cosine from
# the exact one at 20,000 paths: at this time step the geodesic midpoint rule's bias is
# below the Monte Carlo noise. The exact samplers cost no time steps at all, which is
# what makes them references: a solver's error is read against them, not against another
# solver.
