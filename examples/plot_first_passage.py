r"""
First-passage times: Brownian motion on the sphere leaving a hemisphere
=======================================================================

How long does Brownian motion on :math:`S^2`, started at the north pole, take to reach
the equator? Each path stops at its own time: a ``diffrax.Event`` passed to
:func:`spheresde.solve_batch` ends every path where its condition is met, and
``sol.ts`` holds one stopping time per path.

The answer is known in closed form. With generator :math:`\tfrac12\Delta` and
colatitude :math:`\theta`, the mean exit time :math:`u(\theta)` of the cap
:math:`\theta < \alpha` solves :math:`\tfrac12(u'' + \cot\theta\, u') = -1`,
:math:`u(\alpha) = 0`, so :math:`u(\theta) = 4 \ln\big(\cos\tfrac\theta2 / \cos\tfrac\alpha2\big)`
and from the pole, for the hemisphere (:math:`\alpha = \pi/2`),

.. math:: \mathbb{E}\,\tau = -4 \ln \cos\tfrac{\pi}{4} = 2 \ln 2 \approx 1.386.

The whole law is known too: the survival function solves the heat equation on the
hemisphere with zero boundary values, whose eigenfunctions are the odd Legendre
polynomials :math:`P_l(\cos\theta)` with eigenvalues :math:`l(l+1)/2`, so

.. math:: \mathbb{P}(\tau > t) = \sum_{l\ \text{odd}} a_l\, e^{-l(l+1)t/2},\qquad
          a_l = (2l + 1) \int_0^1 P_l(x)\,dx .
"""

# %%
# Paths that stop on the equator
# ------------------------------
# The event's condition is the height :math:`z = \langle X, e_3\rangle`, a real number:
# Diffrax finds its zero with a root finder on the great circle of the step where it
# changes sign (:class:`spheresde.solvers.GeodesicInterpolation`), so the stopped
# states lie on the equator to rounding. ``t1`` is long enough for every path to stop
# (:math:`\mathbb{P}(\tau > 15) \approx \tfrac32 e^{-15} = 5 \cdot 10^{-7}`).
import diffrax
import jax
import jax.numpy as jnp
import jax.random as jr
import matplotlib.pyplot as plt
import numpy as np
import optimistix as optx

import spheresde

jax.config.update("jax_enable_x64", True)

sde = spheresde.SphereSDE(lambda t, y, args: jnp.zeros_like(y),
                          lambda t, y, args, dw: spheresde.project_tangent(y, dw),
                          noise_shape=(3,), convention="stratonovich")
equator = diffrax.Event(lambda t, y, args, **kwargs: y[2],
                        root_finder=optx.Newton(rtol=1e-10, atol=1e-10))
paths, t1 = 4000, 15.0
y0 = jnp.broadcast_to(jnp.array([0.0, 0.0, 1.0]), (paths, 3))

taus = {}
for i, dt in enumerate((0.04, 0.01, 0.0025)):
    sol = spheresde.solve_batch(sde, y0, 0.0, t1, dt, key=jr.fold_in(jr.key(7), i),
                                event=equator)
    assert bool(jnp.all(sol.event_mask))  # every path stopped before t1
    taus[dt] = np.asarray(sol.ts[:, 0])
    print(f"dt = {dt:<6}  E tau = {taus[dt].mean():.4f} +- "
          f"{taus[dt].std() / np.sqrt(paths):.4f}   max |z| at the stop "
          f"{float(jnp.max(jnp.abs(sol.ys[:, 0, 2]))):.1e}")

# %%
# The bias of discrete monitoring
# -------------------------------
# A path seen only at the steps can cross the equator and come back between two of
# them; the crossing is then missed, so the measured times are too long by an amount
# of order :math:`\sqrt{\Delta t}` (for a Brownian motion hitting a level the classical
# constant is :math:`0.5826\,\sigma\sqrt{\Delta t}` in the level, here
# :math:`|u'(\pi/2)| = 2` times that in time). A fit of
# :math:`\mathbb{E}\tau_{\Delta t} = a + b\sqrt{\Delta t}` over the three steps
# removes it; the three runs use independent keys, so
# the standard error of :math:`a` comes from those of the three means.
exact = 2 * np.log(2)
dts = np.array(list(taus))
means = np.array([t.mean() for t in taus.values()])
ses = np.array([t.std() / np.sqrt(paths) for t in taus.values()])
design = np.stack([np.ones_like(dts), np.sqrt(dts)], axis=1)
weights = 1 / ses**2
cov = np.linalg.inv(design.T @ (weights[:, None] * design))
a, b = cov @ design.T @ (weights * means)
a_se, b_se = np.sqrt(np.diag(cov))
print(f"extrapolated E tau = {a:.4f} +- {a_se:.4f} (exact 2 ln 2 = {exact:.4f}, "
      f"z = {(a - exact) / a_se:+.1f}); bias b sqrt(dt), b = {b:.2f} +- {b_se:.2f} "
      f"(one-dimensional constant: 2 x 0.5826 = 1.17)")

# %%
# The law of the stopping time
# ----------------------------
# The survival function at the finest step against the Legendre series (40 terms); its
# tail decays like :math:`\tfrac32 e^{-t}`, the first eigenvalue of :math:`\tfrac12\Delta`
# on the hemisphere.
ls = np.arange(1, 80, 2)
coef = [(2 * deg + 1) * np.polynomial.legendre.Legendre.basis(deg).integ(lbnd=0)(1.0)
        for deg in ls]
t = np.linspace(0.0, 8.0, 400)
survival = np.array([np.sum(coef * np.exp(-ls * (ls + 1) * s / 2)) for s in t])
survival[0] = 1.0  # the series converges slowly at t = 0, where the value is 1
print(f"series mean = {np.sum(np.array(coef) * 2 / (ls * (ls + 1))):.4f}")

fine = np.sort(taus[0.0025])
fig, ax = plt.subplots(1, 2, figsize=(10, 3.8))
ax[0].semilogy(fine, 1 - np.arange(paths) / paths, label="solve_batch, dt = 0.0025")
ax[0].semilogy(t, survival, "k--", label="Legendre series")
ax[0].semilogy(t, 1.5 * np.exp(-t), ":", color="gray", label=r"$\frac{3}{2}e^{-t}$")
ax[0].set(xlabel="t", ylabel=r"$P(\tau > t)$", ylim=(1 / paths, 1.1), xlim=(0, 8))
ax[0].legend()
ax[1].errorbar(np.sqrt(dts), means, yerr=2 * ses, fmt="o", label=r"mean $\pm$ 2 s.e.")
grid = np.linspace(0, np.sqrt(dts.max()), 20)
ax[1].plot(grid, a + b * grid, "-", label=r"fit $a + b\sqrt{\Delta t}$")
ax[1].axhline(exact, color="k", ls="--", label=r"$2\ln 2$")
ax[1].set(xlabel=r"$\sqrt{\Delta t}$", ylabel=r"$E\,\tau$")
ax[1].legend()
fig.tight_layout()
plt.show()
