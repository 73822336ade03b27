r"""The coordinate :math:`z = \operatorname{artanh}\rho` of two tokens: one rule each.

In :math:`z` the inner product :math:`\rho = \langle X_1, X_2\rangle` has no boundary
(:math:`\rho = \pm 1` are :math:`z = \pm\infty`), so the reduced SDE, its Euler chain,
its exact law and its absorption all work there. Two rules are shared by all of them:

- :func:`outcome_threshold`: an outcome is decided at :math:`|\rho| > 1 - \mathrm{tol}`,
  that is :math:`|z| > z_* = \operatorname{artanh}(1 - \mathrm{tol})`
  (:func:`spheresde.transformer.classify` in :math:`\rho`);
- :func:`euler_step`: one Euler step :math:`z + b\,\Delta t + v\,\Delta W` of
  :math:`dz = b\,dt + v\,dB`, with :math:`\Delta W` a normal of variance :math:`\Delta t`
  or :math:`\pm\sqrt{\Delta t}` (the weak scheme of the reduced chain).
"""

from __future__ import annotations

import math


def outcome_threshold(tol: float) -> float:
    r""":math:`z_* = \operatorname{artanh}(1 - \mathrm{tol})`: the outcome of two tokens is
    decided beyond :math:`\pm z_*`."""
    return math.atanh(1 - tol)


def euler_step(z, drift, diffusion, dt, noise):
    r"""One Euler step of :math:`dz = b\,dt + v\,dB` in :math:`z = \operatorname{artanh}
    \rho`: :math:`z + b\,\Delta t + v\,\Delta W`, ``noise`` the increment :math:`\Delta W`
    (NumPy or JAX arrays)."""
    return z + drift * dt + diffusion * noise


__all__ = ["euler_step", "outcome_threshold"]
