r"""Weight models of the deep stochastic Transformer: how the value matrices are drawn.

Every model is :math:`V_k = \mu L^{-1/2} I + \varepsilon G_k` in law, with ``G_k``
iid standard normal entries and ONE matrix per layer shared by all tokens (the
conventions of :doc:`/theory/discrete_model`). A model gives its per-layer steps
(:meth:`~AbstractWeights.layer_steps`, for :func:`~spheresde.transformer.simulate_network`) and
the :math:`(\mu, \varepsilon)` of its SDE limit (:meth:`~AbstractWeights.limit`, for
:func:`~spheresde.transformer.transformer_sde`).

Following Equinox's abstract-or-final rule, :class:`AbstractWeights` only declares
the two methods and each final class implements both: no concrete method is
overridden, so what a model does is read in one place.
"""

from __future__ import annotations

import abc

import equinox as eqx
import numpy as np


class AbstractWeights(eqx.Module):
    r"""How the value matrices :math:`V_k` are drawn, layer after layer.

    Every model is :math:`V_k = \mu L^{-1/2} I + \varepsilon G_k` in law (``G_k`` iid
    standard normal entries); :meth:`layer_steps` gives the resulting per-layer drift
    and noise steps, :meth:`limit` the :math:`(\mu, \varepsilon)` of the SDE limit.
    """

    @abc.abstractmethod
    def layer_steps(self, layers: int) -> tuple[float, float]:
        r"""``(drift_step, noise_step)`` with :math:`Y = X + \text{drift\_step}\,A
        + \text{noise\_step}\,G A`."""

    @abc.abstractmethod
    def limit(self) -> tuple[float, float]:
        r""":math:`(\mu, \varepsilon)` of the limit: drift :math:`\mu P_i A_i`, noise scale
        :math:`\varepsilon`."""


def residual_step(layers: int) -> float:
    r"""The residual step :math:`s = L^{-1/2}` of a network of ``layers`` layers per unit
    depth-time (the engine's ``s``): :math:`Y = X + s\,VA`."""
    return 1.0 / np.sqrt(layers)


def _diffusive_steps(mu: float, eps: float, layers: int) -> tuple[float, float]:
    r"""Steps of :math:`V = \mu L^{-1/2} I + \varepsilon G` under the residual's
    :math:`L^{-1/2}`: drift :math:`\mu/L`, noise :math:`\varepsilon/\sqrt L`."""
    return mu / layers, eps / np.sqrt(layers)


class PureNoise(AbstractWeights):
    r"""The paper's model: :math:`V_k` iid with :math:`N(0, \sigma^2)` entries."""

    sigma: float = 1.0

    def layer_steps(self, layers: int) -> tuple[float, float]:
        return _diffusive_steps(*self.limit(), layers)

    def limit(self) -> tuple[float, float]:
        return 0.0, self.sigma


class Hybrid(AbstractWeights):
    r"""The paper's Figure 4: :math:`V_k = (\mu/\sqrt{L})\, I + \varepsilon G_k`.

    A layer is :math:`Y_i = X_i + (\mu/L) A_i + (\varepsilon/\sqrt L) G_k A_i`; the limit
    has the extra Ito drift :math:`\mu P_i A_i` and noise scale :math:`\varepsilon`.
    """

    mu: float = 1.0
    eps: float = 1.0

    def layer_steps(self, layers: int) -> tuple[float, float]:
        return _diffusive_steps(*self.limit(), layers)

    def limit(self) -> tuple[float, float]:
        return self.mu, self.eps


class ConstantWeights(AbstractWeights):
    r"""Deterministic :math:`V_k = I` for every layer (the model of the earlier theory).

    Taken literally (:doc:`/theory/discrete_model`), a layer is
    :math:`Y_i = X_i + L^{-1/2} A_i`: a step :math:`1/\sqrt L` of the ODE
    :math:`\dot X_i = P_i A_i`. So its limit lives on the time :math:`s = k/\sqrt L`
    (not :math:`t = k/L`): :func:`~spheresde.transformer.transformer_sde` returns that ODE
    (:math:`\mu = 1`, :math:`\varepsilon = 0`), and ``horizon`` ``T`` in
    :func:`~spheresde.transformer.simulate_network` means ODE time :math:`T\sqrt L`.
    """

    def layer_steps(self, layers: int) -> tuple[float, float]:
        # Not the diffusive steps of limit() = (1, 0): the identity is not scaled by
        # 1/sqrt(L) here, so the drift step is 1/sqrt(L) (the ODE in its own time).
        return residual_step(layers), 0.0

    def limit(self) -> tuple[float, float]:
        return 1.0, 0.0


__all__ = ["AbstractWeights", "ConstantWeights", "Hybrid", "PureNoise", "residual_step"]
