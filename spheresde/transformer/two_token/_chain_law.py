r"""The exact law of a two-token chain at a finite depth: its one-step kernel, iterated.

Two chains: the network (below) and the reduced Euler chain of the z-SDE. Each is given
as the atoms of one step from :math:`z` (:func:`network_atoms`, :func:`reduced_atoms`),
and one grid, transport and iteration (**Discretisation** below) serves both. The reduced
chain of :func:`spheresde.transformer._absorption.absorbing_rho` (``dt = 1/L``) steps
:math:`z \to z + b(z)/L \pm v(z)/\sqrt L` with probability 1/2 each, :math:`b, v` the
lambdified ``z_drift``, ``z_diffusion``: two atoms, so its operator is cheap (a point at
:math:`TL = 200` takes about 0.1 s) and its grids are finer (``SPACING``; the
differences of the grids 0.16, 0.08, 0.04, 0.02 shrink by about 4; the extrapolated
value of 0.08 and 0.04 is within :math:`10^{-6}` of that of 0.04 and 0.02 at
:math:`d = 4, 7`, :math:`\beta = 1, 1.2, 3`, :math:`L = 5, 20`, :math:`T = 10`, but at
:math:`d = 7`, :math:`\beta = 3`, :math:`L = 5`, where it is :math:`7\cdot10^{-6}`).

For two tokens the network's :math:`z = \operatorname{artanh}\rho` is a Markov chain:
one layer (:mod:`spheresde.transformer._pair`) maps :math:`s = X_1 + X_2`, :math:`m = X_1 - X_2`
(orthogonal, :math:`|s|^2 = 2(1+\rho)`, :math:`|m|^2 = 2(1-\rho)`) to

.. math:: S = |s|\,u, \quad u = \alpha e_1 + \eta g_1, \qquad
          M = |m|\,w, \quad w = \gamma e_2 + \eta\kappa g_2,

:math:`e_1, e_2` the unit vectors of :math:`s, m`, :math:`g_1, g_2` independent standard
normal vectors of :math:`\mathbb R^d` (:math:`\Xi s` and :math:`\Xi m`), :math:`\alpha = 1 +
\delta`, :math:`\gamma = 1 + \delta\kappa`, :math:`\kappa = \tanh(\beta(1-\rho)/2)`,
:math:`(\delta, \eta)` the layer's drift and noise steps. The new inner product depends only
on the Gram matrix of :math:`(u, w)`. With :math:`A = e^{z}|u|^2`, :math:`B = e^{-z}|w|^2`,
:math:`D = \sqrt{(A+B)^2 - 4\langle u, w\rangle^2}` and :math:`\Delta = |u|^2|w|^2 -
\langle u, w\rangle^2`,

.. math:: z' = \tfrac12 \log\frac{D + A - B}{D - A + B}, \qquad
          (D + A - B)(D - A + B) = 4\Delta,

so :math:`z'` is computed from whichever factor has no cancellation: exact to rounding
however large :math:`|z|` is. By rotation invariance the Gram matrix needs five scalars.
In a frame :math:`(e_1, e_2, \dots)`, :math:`u_2 = \eta a_2` and :math:`|u|^2 = \eta^2(Q +
a_2^2)` with :math:`Q = (\alpha/\eta + a_1)^2 + \chi^2_{d-2}`, a noncentral
:math:`\chi^2_{d-1}(\alpha^2/\eta^2)`; with :math:`c = u_2/|u|` and :math:`g_2` split along
:math:`u/|u|` (:math:`\xi_1`), along the part of :math:`e_2` orthogonal to it
(:math:`\xi_2`) and the rest (:math:`R_2 \sim \chi^2_{d-2}`), :math:`w` has the part
:math:`w_\parallel = \gamma c + \eta\kappa\xi_1` along :math:`u` and :math:`|w_\perp|^2 =
(\gamma\sqrt{1-c^2} + \eta\kappa\xi_2)^2 + \eta^2\kappa^2 R_2` across it, so
:math:`\langle u, w\rangle = |u| w_\parallel` and :math:`\Delta = |u|^2|w_\perp|^2`, both
without cancellation; :math:`a_2, \xi_1, \xi_2` standard normal, all five independent.

**Discretisation.** The expectation over the five is a product Gauss rule (Gauss--Hermite
for the normals, generalized Gauss--Laguerre for :math:`R_2`, Gauss--Legendre in
:math:`\log Q` against the density of :math:`Q`: :math:`z'` has a logarithmic singularity
where :math:`|u| \to 0`, which a Hermite rule in :math:`a_1` misses at small :math:`L`;
``NODES``, product weights below ``PRUNE`` dropped). The law of :math:`z` lives on a
uniform grid of spacing :math:`h = z_*/N` whose faces include the thresholds
:math:`\pm z_*`; the mass at a node moves to the atoms :math:`z'_q`, each spread over
its four nearest nodes with the cubic Lagrange weights (the forward form of cubic
interpolation of the value function: the first four moments of every atom are kept, so
the grid adds no diffusion of order :math:`h^2` per step, as binning would). Beyond
:math:`|z| =` ``FAR`` the kernel is taken at :math:`\pm` ``FAR`` (it converges like
:math:`e^{-2|z|}`; :func:`operator` takes it at every node of a side where a chain's does
not, an unbalanced formation's near :math:`\rho = -1`); beyond the far extent of
:mod:`._extent` (a return there has probability below :math:`10^{-9}`) the end nodes
keep what reaches them. The one-layer operator is a sparse matrix, applied
:math:`\operatorname{round}(TL)` times (:func:`spheresde.transformer._network.network_depth`)
to the exact cell masses of the uniform start; an outcome's probability is the mass
beyond its threshold. The grid error is
:math:`O(h^2)` (measured: the differences of three nested grids shrink by 4); the result is
the Richardson extrapolation :math:`(4p_{h/2} - p_h)/3` and :math:`|p_{h/2} - p_h|/3` its
error estimate. The quadrature error is not in that estimate; it is largest at small
:math:`L` and :math:`d` (:math:`|u|` or :math:`|w_\perp|` near 0 with probability about
:math:`e^{-L/2}`): at :math:`d = 4`, :math:`\beta = 2.5`, :math:`L = 5`, :math:`T = 10`
the rules (10, 40, 6, 6, 6), (12, 48, 8, 8, 8), (16, 64, 10, 10, 10) give 0.2815, 0.2819,
0.2822 (converging slowly, from below, by about :math:`3 \cdot 10^{-4}` per step).
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import sparse, special, stats

from .._network import network_depth
from .._rho import euler_step, outcome_threshold
from .._weights import Hybrid
from ._coefficients import rc
from ._extent import far_extent

#: Quadrature nodes of (a2, Q, xi1, xi2, R2).
NODES = (12, 48, 8, 8, 8)
#: Product weights below this are dropped (their total is reported by the tests).
PRUNE = 1e-12
#: Beyond this |z| the one-layer kernel is taken at +-FAR.
FAR = 10.0
#: Grid spacing (in z) of the coarse level of each chain (the fine one halves it).
SPACING = {"network": 0.16, "reduced": 0.08}


@functools.cache
def _rule(d: int, drift_step: float, noise_step: float, nodes=NODES, prune: float = PRUNE):
    """Product nodes (a2, Q, xi1, xi2, R2) and weights (module docstring): Gauss--Hermite for
    the normals, generalized Gauss--Laguerre for R2, Gauss--Legendre in log Q against the
    density of Q (noncentral chi-square: smooth in log Q, so the law of a small |u| is
    resolved). ``nodes``: the five counts."""
    k = d - 2
    axes = []
    for i, n in enumerate(nodes):
        if i == 1:
            axes.append(_log_noncentral(d - 1, ((1 + drift_step) / noise_step) ** 2, n))
        elif i < 4:
            x, w = np.polynomial.hermite_e.hermegauss(n)
            axes.append((x, w / np.sqrt(2 * np.pi)))
        elif k > 0:
            r, wr = special.roots_genlaguerre(n, k / 2 - 1)
            axes.append((2 * r, wr / special.gamma(k / 2)))
        else:
            axes.append((np.zeros(1), np.ones(1)))
    grids = np.meshgrid(*(a[0] for a in axes), indexing="ij")
    weights = np.einsum("a,b,c,d,e->abcde", *(a[1] for a in axes)).ravel()
    keep = weights > prune
    return tuple(g.ravel()[keep] for g in grids), weights[keep] / weights[keep].sum()


def _log_noncentral(df, nc, n):
    """Nodes and weights for Q ~ noncentral chi-square(df, nc): Gauss--Legendre in log Q
    between its 1e-15 and 1 - 1e-15 quantiles."""
    # unfrozen calls and a cached rule: the formation kernel asks for one rule per z
    law = stats.ncx2
    lo, hi = np.log(law.ppf(1e-15, df, nc)), np.log(law.isf(1e-15, df, nc))
    x, w = _legendre(n)
    s = lo + (hi - lo) * (x + 1) / 2
    q = np.exp(s)
    weights = w * (hi - lo) / 2 * np.exp(law.logpdf(q, df, nc) + s)
    return q, weights / weights.sum()


@functools.cache
def _legendre(n):
    return np.polynomial.legendre.leggauss(n)


def _frame(variables, noise_step):
    r"""The parts of one layer that do not depend on :math:`z`: :math:`|u|^2`, the cosine
    :math:`c` of :math:`u` with :math:`e_2`, :math:`\sqrt{1 - c^2}`, and :math:`\xi_1,
    \xi_2, R_2`."""
    a2, q, xi1, xi2, r2 = variables
    eta = noise_step
    uu = eta * eta * (q + a2 * a2)
    c = eta * a2 / np.sqrt(uu)
    return uu, c, np.sqrt(1 - c * c), xi1, xi2, r2


def one_layer_z(z, frame, beta, drift_step, noise_step):
    r""":math:`z'` after one layer from :math:`z` (broadcast against the atoms), given the
    :func:`_frame` of the variables ``(a2, Q, xi1, xi2, R2)`` of the module docstring."""
    uu, c, s, xi1, xi2, r2 = frame
    kappa = np.tanh(beta * (1 - np.tanh(z)) / 2)  # 1 - rho = 1 - tanh z
    gamma = 1 + drift_step * kappa
    ek = noise_step * kappa
    # w in the frame (u/|u|, the rest of e2, the others): only its part along u and the
    # squared length of the rest enter, each without cancellation
    w_par = gamma * c + ek * xi1
    w_perp2 = (gamma * s + ek * xi2) ** 2 + ek * ek * r2
    ww = w_par * w_par + w_perp2
    delta = uu * w_perp2  # |u|^2 |w|^2 - <u, w>^2
    a, b = np.exp(z) * uu, np.exp(-z) * ww
    gap = a - b
    size = np.abs(gap)
    dd = np.sqrt(gap * gap + 4 * delta)  # (A + B)^2 - 4 <u,w>^2 = (A - B)^2 + 4 Delta
    # the larger factor is D + |A - B|, the other 4 Delta over it
    return np.sign(gap) * (np.log(dd + size) - np.log(4 * delta) / 2)


def cubic(t):
    """Lagrange weights of nodes -1, 0, 1, 2 at fractional position t in [0, 1): an
    array ``(4,) + t.shape``."""
    t = np.asarray(t, dtype=float)
    after, before, far = t + 1, t - 1, t - 2
    lower, upper = after * t, before * far  # (t + 1) t and (t - 1)(t - 2)
    out = np.empty((4, *t.shape))
    np.multiply(t * upper, -1 / 6, out=out[0, ...])
    np.multiply(after * upper, 1 / 2, out=out[1, ...])
    np.multiply(lower * far, -1 / 2, out=out[2, ...])
    np.multiply(lower * before, 1 / 6, out=out[3, ...])
    return out


def network_atoms(beta, d, drift_step, noise_step, nodes=NODES):
    """The network's one layer as atoms: ``atoms(z) -> (z' of every quadrature node, its
    weight)`` (module docstring), ``z`` a number or a column of them (``atoms.batched``)."""
    variables, weights = _rule(int(d), float(drift_step), float(noise_step), tuple(nodes))
    frame = _frame(variables, noise_step)

    def atoms(z):
        return one_layer_z(z, frame, beta, drift_step, noise_step), weights

    atoms.batched = weights.size
    return atoms


def reduced_atoms(beta, d, e, mu, layers):
    r"""The reduced chain's one step as atoms: :math:`z + b(z)/L \pm v(z)/\sqrt L`, each
    with weight 1/2 (``z_drift``, ``z_diffusion`` of :mod:`proofs_check.export`, lambdified;
    the chain of :func:`spheresde.transformer._absorption.absorbing_rho` with ``dt = 1/L``),
    ``z`` a number or a column of them."""
    coefficients = rc()
    dt = 1.0 / layers
    noise, halves = np.sqrt(dt) * np.array([-1.0, 1.0]), np.array([0.5, 0.5])

    def atoms(z):
        z = np.asarray(z, dtype=float)
        b = np.broadcast_to(coefficients.z_drift(z, beta, d, e, mu), z.shape)
        v = np.broadcast_to(coefficients.z_diffusion(z, beta, d, e, mu), z.shape)
        return euler_step(z, b, v, dt, noise), halves

    atoms.batched = halves.size
    return atoms


#: Atom positions (classes x atoms) that :func:`operator` treats at once: the Python cost
#: of a class is paid once a block, the block's arrays stay in the cache.
BLOCK = 2**16


def _atoms_at(atoms, classes):
    """``(positions, weights)`` of ``atoms`` at each of ``classes``, as ``(C, Q)`` arrays.
    Atoms marked ``batched`` (with their count a z) are called once with the column of
    classes; the others once a class, their lists padded to one length by copies of a
    class's first atom with weight 0 (which add exact zeros to its stencil)."""
    if getattr(atoms, "batched", False):
        positions, weights = atoms(classes[:, None])
        return positions, np.broadcast_to(weights, positions.shape)
    found = [atoms(z) for z in classes]
    size = max(p.size for p, _ in found)
    positions = np.array([np.concatenate([p, np.full(size - p.size, p[0])]) for p, _ in found])
    weights = np.array([np.concatenate([w, np.zeros(size - w.size)]) for _, w in found])
    return positions, weights


def _stencils(classes, h, atoms):
    """The one-step stencils of ``classes``: each row the mass that a class's atoms put
    on consecutive nodes (cubic Lagrange weights of each atom over its four nearest
    nodes), from the node ``lo`` below the class; ``(table (C, width), lo (C,))``. The
    classes go in blocks of about :data:`BLOCK` atoms."""
    rows, lows = [], []
    block = max(1, BLOCK // getattr(atoms, "batched", BLOCK))
    for start in range(0, classes.size, block):
        z = classes[start:start + block]
        positions, weights = _atoms_at(atoms, z)
        offset = (positions - z[:, None]) / h
        j = np.floor(offset)
        lag = cubic(offset - j)  # (4, C, Q)
        low, high = j.min(axis=1), j.max(axis=1)
        first = low.astype(int) - 1
        width = int(np.max(high - low)) + 4
        # each class's bins start at row * width; its atoms go in the order (node k,
        # atom), so that a bin sums its masses in the order of the class's own stencil
        origin = (width * np.arange(z.size) - low.astype(int))[:, None, None]
        flat = (j.astype(int)[:, None, :] + origin) + np.arange(4)[None, :, None]
        mass = np.swapaxes(lag, 0, 1) * weights[:, None, :]
        rows.append(np.bincount(flat.ravel(), mass.ravel(), minlength=z.size * width)
                    .reshape(z.size, width))
        lows.append(first)
    width = max(r.shape[1] for r in rows)
    table = np.concatenate([np.pad(r, ((0, 0), (0, width - r.shape[1]))) for r in rows])
    return table, np.concatenate(lows)


def operator(centres, h, atoms, far=(FAR, FAR)):
    """The one-step transition matrix on the grid (sparse, rows: from) of the chain whose
    step from ``z`` is ``atoms(z) = (positions, weights)``, taken at ``-far[0]`` below it
    and at ``far[1]`` above it (``inf``: at every node on that side)."""
    n = centres.size
    inner = np.flatnonzero((centres >= -far[0]) & (centres <= far[1]))
    classes = np.concatenate([[max(-far[0], centres[0])], centres[inner],
                              [min(far[1], centres[-1])]])
    table, lo = _stencils(classes, h, atoms)
    width = table.shape[1]
    row_class = np.where(centres < -far[0], 0, np.where(centres > far[1], classes.size - 1,
                                                     np.searchsorted(inner, np.arange(n)) + 1))
    rows = np.repeat(np.arange(n), width)
    cols = np.clip((np.arange(n) + lo[row_class])[:, None] + np.arange(width),
                   0, n - 1).ravel()
    data = table[row_class].ravel()
    return sparse.csr_matrix((data, (rows, cols)), shape=(n, n))


def grid(beta, d, e, mu, tol, horizon, spacing, beyond=(0.0, 0.0), far=None):
    r"""The uniform z grid of one level: its faces, cell centres and spacing ``h`` (faces
    on the thresholds :math:`\pm z_*`), reaching beyond each threshold by the far extent
    over ``horizon`` of a z-SDE with the drift and squared diffusion ``far`` (left, right:
    two pairs; default the two-token z-SDE's at :math:`z = \pm 20`; ``None`` for a side
    whose chain cannot drift away there), by 5, and by ``beyond`` (left, right), whichever
    is most."""
    if far is None:
        coefficients = rc()
        args = (beta, d, e, mu)
        far = [(float(coefficients.z_drift(side * 20.0, *args)),
                float(coefficients.z_diffusion(side * 20.0, *args)) ** 2)
               for side in (-1.0, 1.0)]
    z_star = outcome_threshold(tol)
    cells = max(2, int(np.ceil(z_star / spacing)))
    h = z_star / cells
    extents = []
    for side, moments in zip((-1.0, 1.0), far, strict=True):
        drifting = 0.0 if moments is None else far_extent(*moments, horizon)
        extents.append(max(drifting, 5.0, beyond[side > 0]))
    left = int(np.ceil(extents[0] / h)) + cells
    right = int(np.ceil(extents[1] / h)) + cells
    faces = h * np.arange(-left, right + 1)
    return faces, (faces[:-1] + faces[1:]) / 2, h


def _law(beta, d, e, mu, tol, horizon, layers, z0, spacing, atoms):
    """(antipodal, single, undecided) on one grid level of the chain whose one step is
    ``atoms`` (:func:`network_atoms`, :func:`reduced_atoms`)."""
    z_star = outcome_threshold(tol)
    beyond = (0.0, 0.0) if z0 is None else (-z0 - z_star + 5.0, z0 - z_star + 5.0)
    faces, centres, h = grid(beta, d, e, mu, tol, horizon, spacing, beyond)
    step = operator(centres, h, atoms).T.tocsr()
    if z0 is None:
        half = (d - 1) / 2
        cdf = special.betainc(half, half, (1 + np.tanh(faces)) / 2)
        cdf[0], cdf[-1] = 0.0, 1.0
        p = np.diff(cdf)
    else:
        k = np.searchsorted(centres, z0) - 1
        t = (z0 - centres[k]) / h
        p = np.zeros(centres.size)
        p[k - 1:k + 3] = cubic(np.asarray(t))
    p = iterate(step, network_depth(horizon, layers), p)
    antipodal = p[centres < -z_star].sum()
    single = p[centres > z_star].sum()
    return np.array([antipodal, single, 1.0 - antipodal - single])


def iterate(step, count: int, value):
    """``step`` (a sparse grid operator) applied ``count`` times to ``value`` (a vector or
    the columns of a matrix).

    One layer at a time costs ``count`` sparse products, each a few microseconds of
    dispatch beside its arithmetic; the binary powers of the dense matrix cost
    ``2 n^3`` flops each, ``log2(count)`` of them, at the speed of BLAS. Whichever the
    flop counts below predict cheaper is taken (sizes only, never timings, so a law is
    the same number on every run). At the paper's Figure 3 (50,000 layers; grids of 250 to
    840 cells) the powers took 0.006 to 0.37 s where one layer at a time took 0.26 to
    0.65 s, idle; the two agreed to 2e-12 (a test holds them to 1e-11).
    """
    n = step.shape[0]
    columns = 1 if np.ndim(value) == 1 else np.shape(value)[1]
    one_by_one = count * (step.nnz * columns / 1e9 + 1e-5)  # seconds, about
    powers = count.bit_length() * (2 * n**3 + 2 * n * n * columns) / 2e10
    if count < 2 or one_by_one <= powers:
        for _ in range(count):
            value = step @ value
        return value
    power = step.toarray()
    while True:
        if count & 1:
            value = power @ value
        count >>= 1
        if not count:
            return value
        power = power @ power


def chain_law(beta, d, e, mu, tol, horizon, layers, z0=None, chain="network",
              spacing=None, nodes=NODES):
    """The extrapolated law of one point of ``chain`` (``"network"`` or ``"reduced"``) and
    its error estimate (module docstring)."""
    if chain == "network":
        atoms = network_atoms(beta, d, *Hybrid(mu=mu, eps=e).layer_steps(layers), nodes)
    elif chain == "reduced":
        atoms = reduced_atoms(beta, d, e, mu, layers)
    else:
        raise ValueError(f"chain must be 'network' or 'reduced', got {chain!r}")
    spacing = SPACING[chain] if spacing is None else spacing
    coarse = _law(beta, d, e, mu, tol, horizon, layers, z0, spacing, atoms)
    fine = _law(beta, d, e, mu, tol, horizon, layers, z0, spacing / 2, atoms)
    return (4 * fine - coarse) / 3, float(np.max(np.abs(fine - coarse)) / 3)


def network_law(beta, d, e, mu, tol, horizon, layers, z0=None, spacing=None, nodes=NODES):
    """:func:`chain_law` of the network."""
    return chain_law(beta, d, e, mu, tol, horizon, layers, z0, "network", spacing, nodes)
