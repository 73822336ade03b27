r"""
Active Brownian particles: a position and an orientation in one state
=====================================================================

An active Brownian particle swims at speed :math:`v` along its heading :math:`e`, a
point of the sphere :math:`S^{d-1}` that diffuses with rotational diffusion
:math:`D_r`, while its position :math:`x \in \mathbb{R}^d` also diffuses with
translational diffusion :math:`D`:

.. math::
    dx = v\,e\,dt + \sqrt{2D}\,dW, \qquad de = \sqrt{2D_r}\,P_e \circ dB

(Stratonovich; :math:`P_e` the projection on the tangent space at :math:`e`). The state
is a pair, a vector and a point of a sphere: :class:`spheresde.SphereSDE` takes it as a
pytree whose leaves it is told about, ``manifold=(Euclidean(), Sphere())``. The solvers
then step the heading along great circles and the position as the flat scheme would.

With :math:`\tau = 1/((d-1)D_r)` the heading forgets itself like
:math:`\mathbb{E}\langle e_t, e_0\rangle = e^{-t/\tau}` (the first eigenvalue
:math:`-(d-1)` of the Laplacian on :math:`S^{d-1}`), and integrating it gives the two
closed forms checked here, the mean squared displacement and the position-orientation
correlation:

.. math::
    \mathbb{E}|x_t - x_0|^2 = 2dDt + 2v^2\tau^2\big(t/\tau - 1 + e^{-t/\tau}\big),
    \qquad
    \mathbb{E}\langle x_t - x_0, e_0\rangle = v\tau\big(1 - e^{-t/\tau}\big).

The MSD is ballistic (:math:`v^2 t^2`) for :math:`t \ll \tau` and diffusive, with the
effective diffusion :math:`D + v^2\tau/d`, for :math:`t \gg \tau`.
"""

# %%
# The SDE in 2-D and 3-D
# ----------------------
# The noise is a pair too, ``noise_shape=((d,), (d,))``: ``dw[0]`` drives the position,
# ``dw[1]`` the heading. The diffusion receives and returns pairs.
import math

import diffrax
import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

import spheresde
from spheresde import Euclidean, Sphere, project_tangent

jax.config.update("jax_enable_x64", True)

speed, D, D_r = 1.0, 0.05, 0.5


def active_brownian(d):
    def drift(t, y, args):
        heading = y[1]
        return speed * heading, jnp.zeros_like(heading)

    def diffusion(t, y, args, dw):
        heading = y[1]
        return math.sqrt(2 * D) * dw[0], math.sqrt(2 * D_r) * project_tangent(heading, dw[1])

    return spheresde.SphereSDE(drift, diffusion, noise_shape=((d,), (d,)),
                               convention="stratonovich", manifold=(Euclidean(), Sphere()))


def closed_forms(d, t):
    tau = 1 / ((d - 1) * D_r)
    msd = 2 * d * D * t + 2 * speed**2 * tau**2 * (t / tau - 1 + np.exp(-t / tau))
    return msd, speed * tau * (1 - np.exp(-t / tau))


# %%
# Many particles at once
# ----------------------
# :func:`spheresde.solve_batch` takes a batch of pairs, the paths on the leading axis of
# both leaves. Every particle starts at the origin heading along the last axis; the
# two-point increments (``brownian="weak"``) keep weak order 1, which is all an
# expectation needs.
paths, t1, dt = 4000, 4.0, 0.01
ts = np.linspace(0.0, t1, 41)
results = {}
for d in (2, 3):
    e0 = jnp.zeros(d).at[-1].set(1.0)
    y0 = (jnp.zeros((paths, d)), jnp.broadcast_to(e0, (paths, d)))
    sol = spheresde.solve_batch(active_brownian(d), y0, 0.0, t1, dt, key=jax.random.key(d),
                                saveat=diffrax.SaveAt(ts=jnp.asarray(ts)), brownian="weak")
    x, e = sol.ys  # (paths, times, d) each
    squared = np.asarray(jnp.sum(x * x, axis=-1))
    along = np.asarray(x @ e0)
    off = float(jnp.max(jnp.abs(jnp.linalg.norm(e, axis=-1) - 1)))
    results[d] = {name: (s.mean(axis=0), s.std(axis=0) / math.sqrt(paths))
                  for name, s in (("msd", squared), ("along", along))}
    print(f"d = {d}: headings on the sphere to {off:.1e}")

# %%
# Against the closed forms
# ------------------------
# Monte Carlo means with two standard errors, and the z-scores (difference over the
# standard error) at a few times: within about 2 they are what sampling alone gives.
fig, (ax_msd, ax_corr) = plt.subplots(1, 2, figsize=(10, 4))
for d, colour in ((2, "C0"), (3, "C1")):
    msd, along = closed_forms(d, ts)
    for ax, name, exact in ((ax_msd, "msd", msd), (ax_corr, "along", along)):
        mean, error = results[d][name]
        ax.errorbar(ts[1:], mean[1:], yerr=2 * error[1:], fmt="o", ms=3, color=colour,
                    label=f"d = {d}, {paths} paths")
        ax.plot(ts, exact, "-", color=colour, lw=1, label=f"d = {d}, closed form")
    for i in (5, 20, 40):
        z_msd = (results[d]["msd"][0][i] - msd[i]) / results[d]["msd"][1][i]
        z_along = (results[d]["along"][0][i] - along[i]) / results[d]["along"][1][i]
        print(f"d = {d}, t = {ts[i]:.1f}: MSD z = {z_msd:+.2f}, <x_t - x_0, e_0> "
              f"z = {z_along:+.2f}")
ax_msd.set(xscale="log", yscale="log", xlabel="t", ylabel=r"$\mathbb{E}|x_t - x_0|^2$",
           title="mean squared displacement")
ax_corr.set(xlabel="t", ylabel=r"$\mathbb{E}\langle x_t - x_0, e_0\rangle$",
            title="position-orientation correlation")
ax_msd.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
# The correlation saturates at the persistence length :math:`v\tau` (2 in 2-D, 1 in
# 3-D): a particle goes on along its first heading for about one persistence time. The
# same state in a dict, ``{"x": ..., "e": ...}`` with ``manifold={"x": Euclidean(), "e":
# Sphere()}``, works the same way; :func:`spheresde.first_passage` takes
# ``ExitRegion.cap(axis, angle, leaf="e")`` for the first time the heading leaves a cap.
