r"""Code generation: a derived :class:`~proofs_check.engine.DiffusionLimit` as a SphereSDE.

It lives in the numerics, which import :mod:`proofs_check`, never the other way round.

Everything numerical is :func:`sympy.lambdify` (JAX backend) of what the engine derived:

- the drift :math:`b_i = \sum_k c_{ik}(G) B_k`, with :math:`B` the span's basis (the
  tokens, and the normalization's fixed directions,
  :meth:`spheresde.transformer.AbstractNormalization.span_basis`: :math:`u = \mathbf
  1/\sqrt d` for LayerNorm) and :math:`G` the Gram matrix of the state;
- the diffusion, from the first-order noise :math:`F_i = \sum c\,M\,\xi` of
  :class:`~proofs_check.engine.DiffusionLimit`: every :math:`\xi` becomes its Brownian
  increment. A shared :class:`~proofs_check.engine.GaussianMatrix` applied to ``v`` is
  :math:`dW\,v` with one ``d x d`` Brownian matrix; one drawn per token has one matrix per
  token; the terms :math:`\xi_a` of any other source (a
  :class:`~proofs_check.engine.ReLUMLP`, or a new
  :class:`~proofs_check.engine.AbstractNoiseSource`; kernel
  :math:`E[\xi_a\xi_b^\top] = K_{ab} I`) are :math:`\sum_b (K^{1/2})_{ab}\,dB_b` with
  independent ``d``-dimensional Brownian motions :math:`B_b`.

The Brownian increments of all sources are the slices of one flat vector (the
``noise_shape`` of the SDE is ``(total,)``). The SDE is **Ito** and its state is
``(n, d)``; the solvers of :mod:`spheresde` keep it on :math:`S^{d-1}`, and for LayerNorm
(drift and noise orthogonal to :math:`u`) on the great sphere of the hyperplane.
"""

from __future__ import annotations

import jax.numpy as jnp
import sympy as sp

from proofs_check.engine import DiffusionLimit, GaussianMatrix
from proofs_check.symbols import d as d_symbol

from .. import _checks
from .._sde import SphereSDE
from ._normalization import normalization


def _psd_sqrt(kernel):
    """Symmetric square root of a positive semidefinite kernel matrix (``eigh``, eigenvalues
    clipped at 0). Only for the kernels of the sources drawn through them, which come as
    matrices, not as vectors; the span noise of the tokens uses
    :func:`spheresde.transformer._noise.span_factor`."""
    lam, vec = jnp.linalg.eigh(kernel)
    return (vec * jnp.sqrt(jnp.maximum(lam, 0.0))[..., None, :]) @ jnp.swapaxes(vec, -1, -2)

def _layout(limit: DiffusionLimit, dim: int):
    """The terms of each source drawn through its kernel (every source but a Gaussian
    matrix), and each source's slice of the flat noise."""
    sources, kernel_terms = [], {}
    for noise_i in limit.noise:
        for _, _, term in noise_i:
            if term.source not in sources:
                sources.append(term.source)
            if not isinstance(term.source, GaussianMatrix):
                kernel_terms.setdefault(term.source, [])
                if term not in kernel_terms[term.source]:
                    kernel_terms[term.source].append(term)
    offsets, start = {}, 0
    for source in sources:
        if isinstance(source, GaussianMatrix):
            size = dim * dim * (1 if source.shared else len(limit.tokens))
        else:
            size = dim * len(kernel_terms[source])
        offsets[source] = (start, size)
        start += size
    return kernel_terms, offsets, start


def to_sphere_sde(limit: DiffusionLimit, values: dict, dim: int):
    r"""The Ito :class:`spheresde.SphereSDE` of a derived limit, for one dimension.

    Parameters
    ----------
    limit : DiffusionLimit
        From :func:`proofs_check.engine.diffusion_limit` (generic Gram matrix).
    values : dict
        ``symbol -> number`` for every parameter of the layer (``beta``, ``epsilon``, ...).
    dim : int
        The dimension ``d``.

    Returns
    -------
    spheresde.SphereSDE
        State ``(n, dim)``, noise shape ``(total,)``: the sources' increments, flattened.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from proofs_check.engine import GaussianMatrix, diffusion_limit, softmax
    >>> from proofs_check.symbols import beta, eps, s
    >>> V = GaussianMatrix("V", std=eps)
    >>> lim = diffusion_limit(lambda x: [s * (V @ a) for a in softmax(x, beta)], 2)
    >>> sde = to_sphere_sde(lim, {beta: 1.0, eps: 1.0}, 3)
    >>> sde.noise_shape
    (9,)
    """
    if not limit.normalization.manifold:
        raise ValueError("a layer without normalization has no sphere to live on: derive it "
                         "with normalization='rms' or 'layer' for a SphereSDE")
    _checks.dimension("dim", dim)
    for symbol, value in values.items():
        _checks.real(f"the value of {symbol}", value)
    numeric = normalization(limit.normalization.name)
    span = limit.span
    gram_symbols = sorted({e for e in span.gram if isinstance(e, sp.Symbol)},
                          key=sp.default_sort_key)
    subs = {d_symbol: dim, **values}
    kernel_terms, offsets, total = _layout(limit, dim)

    exprs = [sp.Matrix([b.coeffs.T for b in limit.drift])]
    for noise_i in limit.noise:
        for c, m, term in noise_i:
            exprs += [c, m.scalar, m.coeffs, term.vector.coeffs]
    for source, terms in kernel_terms.items():
        exprs.append(sp.Matrix([[source.kernel(a, b) for b in terms] for a in terms]))
    exprs = [sp.sympify(e).subs(subs) for e in exprs]
    free = set().union(*(e.free_symbols for e in exprs)) - set(gram_symbols)
    if free:
        raise ValueError(f"give a value for every parameter of the layer: missing "
                         f"{sorted(map(str, free))}")
    lambdified = sp.lambdify([gram_symbols], exprs, modules="jax")
    index = [(i, j) for i in range(span.n) for j in range(span.n)
             if isinstance(span.gram[i, j], sp.Symbol) and i < j]

    def evaluate(y):
        g = y @ y.T
        values_g = [jnp.clip(g[i, j], -1.0, 1.0) for i, j in index]
        return lambdified(values_g), numeric.span_basis(y)

    def drift(t, y, args):
        parts, basis = evaluate(y)
        return jnp.asarray(parts[0], y.dtype) @ basis

    def diffusion(t, y, args, dw):
        parts, basis = evaluate(y)
        k = 1 + 4 * sum(len(noise_i) for noise_i in limit.noise)
        kernel_noise = {}
        for source, kernel in zip(kernel_terms, parts[k:], strict=True):
            start, size = offsets[source]
            z = dw[start:start + size].reshape(len(kernel_terms[source]), dim)
            kernel_noise[source] = _psd_sqrt(jnp.asarray(kernel, y.dtype)) @ z
        rows, pos = [], 1
        for noise_i in limit.noise:
            row = jnp.zeros(dim, y.dtype)
            for _, _, term in noise_i:
                c, c0, cm, w = parts[pos:pos + 4]
                pos += 4
                source = term.source
                start, size = offsets[source]
                if isinstance(source, GaussianMatrix):
                    owner = 0 if source.shared else term.owner
                    mat = dw[start + owner * dim * dim:start + (owner + 1) * dim * dim]
                    xi = mat.reshape(dim, dim) @ (jnp.asarray(w, y.dtype)[:, 0] @ basis)
                else:
                    xi = kernel_noise[source][kernel_terms[source].index(term)]
                cm = jnp.asarray(cm, y.dtype)
                row = row + c * (c0 * xi + basis.T @ (cm @ (basis @ xi)))
            rows.append(row)
        return jnp.stack(rows)

    return SphereSDE(drift, diffusion, (total,), "ito", shared_noise=True)


__all__ = ["to_sphere_sde"]
