"""The object a user writes: an SDE on a product of spheres, in Ito or Stratonovich sense."""

from __future__ import annotations

import functools as ft
import math
from collections.abc import Callable
from typing import Literal

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx

from ._geometry import project_tangent
from ._typing import Array

Convention = Literal["ito", "stratonovich"]
_CONVENTIONS = ("ito", "stratonovich")


class SphereSDE(eqx.Module):
    r"""An SDE whose state ``y`` (shape ``(d,)`` or ``(n, d)``) has rows on S^{d-1}.

    .. math:: dy = f(t, y)\,dt + g(t, y)\,[dW]

    in the sense named by ``convention``.

    Parameters
    ----------
    drift
        ``drift(t, y, args)``, an array shaped like ``y``. In Stratonovich form it is
        tangent to the sphere. In Ito form its normal part is fixed by the diffusion
        (Ito's lemma on ``|y_i|^2 = 1`` gives ``-1/2 tr(g g^T) y_i``); the solvers of
        this package use only its tangent part and produce the normal part from the
        geometry, so a drift written without it is also accepted.
    diffusion
        ``diffusion(t, y, args, dw)``, the increment ``g(t, y)[dw]`` shaped like ``y``,
        linear in ``dw`` and tangent. It acts on the increment directly, so no
        ``(n, d, *noise_shape)`` tensor is ever built.
    noise_shape
        Shape of the Brownian increment ``dw``, for example ``(d,)`` or ``(d, d)``.
    convention
        ``"ito"`` or ``"stratonovich"``.
    shared_noise
        For a state of several rows ``(n, d)``: ``True`` declares that the rows are
        driven by noise they share (in whole or in part), as the Transformer's tokens
        are by one matrix Brownian motion (:func:`transformer_sde` sets it). Left
        ``False``, :func:`solve` checks that the rows have noise of their own (the
        increments of two rows uncorrelated) and refuses a diffusion that couples them,
        saying how to get independent paths (:func:`solve_batch`) or to declare the
        shared noise. A state of one row is never checked.
    """

    drift: Callable[..., Array]
    diffusion: Callable[..., Array]
    noise_shape: tuple[int, ...] = eqx.field(static=True)
    convention: Convention = eqx.field(static=True, default="ito")
    shared_noise: bool = eqx.field(static=True, default=False, kw_only=True)

    def __check_init__(self):
        if self.convention not in _CONVENTIONS:
            raise ValueError(
                f"convention must be 'ito' or 'stratonovich', got {self.convention!r}"
            )
        if not callable(self.drift) or not callable(self.diffusion):
            raise TypeError("drift and diffusion must be callables: drift(t, y, args), "
                            "diffusion(t, y, args, dw)")
        shape = self.noise_shape
        if not (isinstance(shape, tuple) and all(isinstance(s, int) and s > 0 for s in shape)):
            raise ValueError(f"noise_shape must be a tuple of positive ints, got {shape!r}")
        if not isinstance(self.shared_noise, bool):
            raise TypeError(f"shared_noise must be True or False, got {self.shared_noise!r}")

    def to_stratonovich(self) -> SphereSDE:
        r"""The same SDE in Stratonovich form (``self`` if it is one already).

        Drift :math:`P_y\big(f - \tfrac12\sum_k (D g_k)\, g_k\big)`, diffusion
        unchanged, with :math:`g_k = g(t, y)[E_k]` for the unit increments :math:`E_k` of
        ``noise_shape``. Each :math:`(D g_k)\, g_k` is one ``jax.jvp`` of
        :math:`z \mapsto g(t, z)[E_k]` at ``y`` along :math:`g_k` (all ``k`` at once under
        ``jax.vmap``), so the derivative of the diffusion is never formed. The
        projection :math:`P_y` (row by row) makes the drift tangent, as the Stratonovich
        solvers require: :math:`f - c` is tangent when the Ito drift carries its normal
        part :math:`-\tfrac12 \sum_k |g_k|^2 y` (the normal part of :math:`c`, see
        :meth:`to_ito`), and the projection drops what is left where the drift was
        written without it (accepted too, see the class docstring).
        """
        if self.convention == "stratonovich":
            return self
        drift = _ConvertedDrift(self.drift, self.diffusion, self.noise_shape, -1.0)
        return SphereSDE(drift, self.diffusion, self.noise_shape, "stratonovich",
                         shared_noise=self.shared_noise)

    def to_ito(self) -> SphereSDE:
        r"""The same SDE in Ito form (``self`` if it is one already).

        Drift :math:`f + \tfrac12\sum_k (D g_k)\, g_k`, computed as in
        :meth:`to_stratonovich`. For a tangent diffusion the correction's normal part is
        :math:`-\tfrac12 \sum_k |g_k|^2 y` (differentiate :math:`\langle y, g_k(y)\rangle
        = 0` along :math:`g_k`), the normal drift that Ito's lemma on :math:`|y|^2 = 1`
        demands, so the Ito drift comes out whole.
        """
        if self.convention == "ito":
            return self
        drift = _ConvertedDrift(self.drift, self.diffusion, self.noise_shape, 1.0)
        return SphereSDE(drift, self.diffusion, self.noise_shape, "ito",
                         shared_noise=self.shared_noise)

    def terms(self, brownian: diffrax.AbstractPath) -> diffrax.MultiTerm:
        """Diffrax terms ``(drift dt, diffusion dW)`` driven by the path ``brownian``."""
        diffusion = _DiffusionTerm(self.diffusion, brownian, self.noise_shape)
        return diffrax.MultiTerm(diffrax.ODETerm(self.drift), diffusion)


class _DiffusionTerm(diffrax.AbstractTerm):
    """``g(t, y)[dW]`` applied to the increment; the matrix ``g`` is never formed.

    ``vf`` is the linear map ``dw -> g(t, y)[dw]`` as a lineax operator (Diffrax's term
    checks and ``prod`` use it); ``vf_prod`` applies it directly, and
    ``is_vf_expensive`` is True so that Diffrax's Runge--Kutta solvers take that route.
    """

    diffusion: Callable[..., Array]
    control: diffrax.AbstractPath
    noise_shape: tuple[int, ...] = eqx.field(static=True)

    def vf(self, t, y, args):
        noise = jax.ShapeDtypeStruct(self.noise_shape, jnp.result_type(y))
        return lx.FunctionLinearOperator(ft.partial(self.diffusion, t, y, args), noise)

    def contr(self, t0, t1, **kwargs):
        return self.control.evaluate(t0, t1, **kwargs)

    def prod(self, vf, control):
        return vf.mv(control)

    def vf_prod(self, t, y, args, control):
        return self.diffusion(t, y, args, control)

    def is_vf_expensive(self, t0, t1, y, args) -> bool:
        return True


class _ConvertedDrift(eqx.Module):
    r"""``drift + sign/2 sum_k (D g_k) g_k``, projected on the tangent space for ``sign < 0``
    (the Stratonovich drift); see :meth:`SphereSDE.to_stratonovich`."""

    drift: Callable[..., Array]
    diffusion: Callable[..., Array]
    noise_shape: tuple[int, ...] = eqx.field(static=True)
    sign: float = eqx.field(static=True)

    def __call__(self, t, y, args):
        size = math.prod(self.noise_shape)
        basis = jnp.eye(size, dtype=y.dtype).reshape(size, *self.noise_shape)

        def along(e):
            def g_e(z):
                return self.diffusion(t, z, args, e)

            return jax.jvp(g_e, (y,), (g_e(y),))[1]

        correction = 0.5 * jnp.sum(jax.vmap(along)(basis), axis=0)
        drift = self.drift(t, y, args) + self.sign * correction
        return project_tangent(y, drift) if self.sign < 0 else drift
