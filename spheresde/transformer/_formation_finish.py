r"""Finish a trajectory whose tokens sit in two tight clusters by the exact law of the
two-cluster formation.

A *formation* puts :math:`k` tokens at :math:`x` and :math:`n-k` at :math:`y`; coincident
tokens get the same update, so in the network a formation stays one, and
:math:`z = \operatorname{artanh}\langle x, y\rangle` is a Markov chain: the two-token
layer with the attention of each cluster counting the other with its multiplicity
(:mod:`proofs_check.formation`). Its law at any depth is computed exactly, as the two-token
chain's (:mod:`spheresde.transformer.two_token._chain_law`), from its one-layer kernel
(:func:`formation_atoms`, below) iterated on a grid in :math:`z`.

**When a trajectory is finished.** At a segment boundary of
:func:`~spheresde.transformer._absorption.absorbing_tokens` the tokens are split into the
cluster of the first token (its :math:`1 - \rho < \mathrm{tol}`) and the rest. If both are
non-empty and, for some level :math:`v` of the grid with :math:`2\sqrt{2v} \le`
``BAND`` :math:`\cdot\,\mathrm{tol}`,
:math:`\sum_{\text{within pairs}} (u_{ij}/v)^{p_c(v)} \le \delta` (the *bound*), with
:math:`p_c` the exponent certified for that cluster's size by
:mod:`proofs_check.two_clusters` (:func:`tightness_exponents`), then every cluster stays
within spread :math:`v` to the horizon except with probability :math:`\delta` (the
smallest such :math:`v` is recorded, :attr:`FormationFinish.spread`), and the
trajectory is replaced by the formation chain started at the mean cross inner product,
run for the remaining layers: it contributes its three outcome probabilities (a
conditional expectation) instead of a 0/1 outcome.

**Error.** On the event of the certificate the class at the horizon is that of one cross
inner product (all are within :math:`2\sqrt{2v}` of each other, and the within pairs stay
within tol), so the finish errs by at most :math:`\delta`, plus the formation's mass within
:math:`2\sqrt{2v} \le \mathrm{tol}/10` of a threshold, plus the effect of attention vectors within
:math:`\Delta A_{\max}(v)` (:func:`proofs_check.two_clusters.attention_perturbation`) of the
formation's over the remaining depth, which is first order in the spread and not bounded
here (see :mod:`proofs_check.two_clusters`); the spread at a finish is below the level
:math:`v\,\delta^{1/p}`, far below tol (in float32 the tokens of a cluster mostly
coincide bitwise by then). The certificate is for the limit SDE; the network
follows it up to :math:`O(1/L)`, as for the other certificates. The tests compare runs
with and without the finish at matched seeds.

**The kernel.** In the plane of :math:`x, y` (:math:`x = (c, s)`, :math:`y = (c, -s)`,
:math:`c^2 = (1+\rho)/2`, :math:`s^2 = (1-\rho)/2`, both from :math:`z` without
cancellation) the attention vectors are :math:`A_x = (c, \kappa_x s)`,
:math:`A_y = (c, \kappa_y s)`, :math:`\kappa_x = (k - m r)/(k + m r)`,
:math:`\kappa_y = (k r - m)/(k r + m)`, :math:`m = n - k`, :math:`r = e^{-\beta(1-\rho)}`.
With :math:`P = x + \delta A` (drift step :math:`\delta`, noise step :math:`\eta`),
:math:`Y_x = \eta|A_x|\,u`, :math:`u = \mu_u + h_1`, and :math:`Y_y = c_1 Y_x + \eta a_2 w`,
:math:`w = \mu_w + h_2`, where :math:`c_1 = \langle A_x, A_y\rangle/|A_x|^2`, :math:`a_2` is
the part of :math:`A_y` across :math:`A_x`, :math:`\mu_u = P_x/(\eta|A_x|)`,
:math:`\mu_w = (P_y - c_1P_x)/(\eta a_2)` and :math:`h_1, h_2` independent standard normal
vectors (:math:`G` applied to :math:`A_x/|A_x|` and to the unit vector across it). In the
frame of :math:`\mu_w` the law of :math:`|u|` and of :math:`u`'s part along :math:`\mu_w`
is that of :math:`Q + u_2^2`, :math:`Q` a noncentral :math:`\chi^2_{d-1}` (noncentrality
the part of :math:`\mu_u` across :math:`\mu_w`, squared) and :math:`u_2` a shifted normal;
:math:`w` splits along :math:`u` and across it as in the two-token kernel. So the same five
variables :math:`(a_2, Q, \xi_1, \xi_2, R_2)` and the same product rule
(:func:`~spheresde.transformer.two_token._chain_law._rule`, with the rule in :math:`Q` made
for each :math:`z`) give :math:`z'` exactly, from
:math:`(p, q)`, the coordinates of :math:`Y_y` along and across :math:`Y_x`. For
:math:`n = 2, k = 1` it is the two-token kernel (a test compares the laws).

**Near** :math:`\rho = -1`. A balanced formation (:math:`2k = n`) has the antipodal point
as an equilibrium, and its kernel converges there as the two-token one does, so it is
taken at :math:`z = -` ``FAR`` below that. An unbalanced one does not: the attention's
imbalance pushes it back from :math:`\rho = -1` at a rate growing like :math:`e^{-2z}`
(the limit is a squared Bessel process there, :mod:`proofs_check.formation`), so the
chain hovers near :math:`1 + \rho \approx 10^{-8}` at :math:`\beta = 5` and keeps crossing
to the single cluster, about one trajectory in ten over the paper's 50,000 layers at
:math:`\beta = 5, \varepsilon = 2.5`. Its kernel is therefore taken at every grid node
down to :func:`repelled_edge`, where the grid ends; frozen at ``-FAR`` it let the
formation slide to :math:`-\infty` and finished those trajectories as antipodal (a test at
the paper's depth compares with full simulation).

The law is cached per formation, parameters and depth (:func:`formation_values`: the value
functions of the outcomes on the grid, one backward iteration serving every remaining
depth of a run), Richardson-extrapolated over two grids as the two-token law, and read at
a start by cubic interpolation.

**Only where it pays.** A formation law costs seconds (about 4 s on 2 CPU cores at
:math:`T = 200`, :math:`L = 20`), which a short run cannot win back. So a run buys the law
of a formation (one cluster size) only once it pays, as in the ski-rental problem: when the
certified trajectories of that formation at a segment boundary have at least
:data:`LAW_WORK` trajectory-layers left (about what the law costs: 0.4 microseconds a
trajectory-layer for three or four tokens in :math:`d = 3` on those cores), or when the
layers simulated so far for trajectories that were certified but not finished (the rent)
reach it. Until then certified trajectories go on being simulated, as without the finish:
the same estimate, the saving given up; from then on every certified trajectory of that
formation is finished, its law already computed. A run so spends at most about twice
what the better of the two choices would have cost it. The rule counts work, not seconds,
so that which trajectories are finished (and so every number of a run) depends on the
seed and the sizes only, never on the machine, its load or which process ran the chunk.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from ._absorption import LIVE
from ._rho import outcome_threshold
from .two_token._chain_law import FAR, NODES

#: Outcome code of a trajectory finished by the formation law (never a class).
FINISHED = 3
#: Levels v / tol tried by the certificate: 1, 1/2, ..., 2^-47.
_LEVELS = np.ldexp(1.0, -np.arange(48))
#: The finish needs a certified spread v with 2 sqrt(2 v) <= BAND * tol: every cross inner
#: product then within a tenth of the tolerance of every other (the classification band of
#: the error statement).
BAND = 0.1
#: Cells in x = beta (1 - rho) on which the attention bounds are taken.
_CELLS = 4096
#: Grid spacing (in z) of the coarse level (the fine one halves it).
SPACING = 0.16
#: Trajectory-layers a group of certified trajectories must have left for its formation law
#: to be computed (module docstring: about a law's cost in simulation).
LAW_WORK = 10**7


@functools.cache
def tightness_exponents(own: int, other: int, beta: float, d: int, eps: float, mu: float,
                        tol: float) -> tuple[np.ndarray, np.ndarray]:
    r"""The levels :math:`v = \mathrm{tol}\,2^{-j}` and the exponent :math:`p_c(v)` certified
    for the within pairs of a cluster of ``own`` tokens beside one of ``other`` tokens
    (:mod:`proofs_check.two_clusters`, lambdified: the attention bounds :math:`K, a` on
    cells of :math:`x`, then :math:`h, g^2, G^2` and the largest :math:`p` with
    :math:`B_p \le 0`, times :math:`1 - 10^{-6}`); 0 where none (also for ``eps = 0`` or
    ``d < 3``)."""
    v = tol * _LEVELS
    if eps <= 0 or d < 3 or own < 2 or other < 1:
        return v, np.zeros_like(v)
    from proofs_check.export import tightness_certificate

    cert = tightness_certificate("numpy")
    lipschitz, align = attention_bounds(own, other, beta, v)
    args = (lipschitz, align, v, d, eps, mu)
    h, g2, big2 = (np.asarray(cert[name](*args), float) for name in ("h", "g2", "G2"))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(h > 0, 1 - 2 * h / (eps**2 * g2), 1 - 2 * h / (eps**2 * big2))
    usable = (align > np.sqrt(2 * v) / 2) & ((h <= 0) | (g2 > 0)) & (p > 0)
    return v, np.where(usable, p * (1 - 1e-6), 0.0)


def attention_bounds(own: int, other: int, beta: float, v) -> tuple[np.ndarray, np.ndarray]:
    r"""The bounds :math:`(K, a)` of :mod:`proofs_check.two_clusters` at the spread levels
    ``v``: :math:`|A_i - A_j| \le K|X_i - X_j|` and :math:`X_i\cdot A_i \ge a` for tokens
    :math:`i, j` of a cluster of ``own`` tokens beside one of ``other``, every within spread
    below ``v``, wherever the clusters are (the lambdified cell bounds, worst cell of
    ``_CELLS`` in :math:`x = \beta(1 - \rho) \in [0, 2\beta]`)."""
    from proofs_check.export import tightness_certificate

    cert = tightness_certificate("numpy")
    edges = np.linspace(0.0, 2 * beta, _CELLS + 1)
    lo, hi = edges[:-1], edges[1:]
    vv = np.asarray(v, float)[..., None]
    lipschitz = np.max(cert["K"](lo, hi, np.clip(beta, lo, hi), vv, beta, own, other), axis=-1)
    return lipschitz, np.min(cert["a"](lo, hi, vv, beta, own, other), axis=-1)


@functools.cache
def _fixed_axes(d, drift_step, noise_step, nodes):
    """The two-token rule's axes (a2, xi1, xi2, R2) and their weights, each repeated for
    the ``nodes[1]`` nodes in Q that every z brings (its Q axis is made per z)."""
    from .two_token._chain_law import _rule as two_token_rule

    (a2, _, xi1, xi2, r2), rest = two_token_rule(d, drift_step, noise_step,
                                                 (nodes[0], 1, *nodes[2:]))
    return tuple(np.repeat(a, nodes[1]) for a in (a2, xi1, xi2, r2)), rest


def _rule(d, drift_step, noise_step, noncentrality, nodes):
    """Product nodes and weights of (a2, Q, xi1, xi2, R2) with Q noncentral chi-square of
    ``noncentrality``: the two-token rule's other four axes (pruned as there), its Q axis
    made here."""
    from .two_token._chain_law import PRUNE, _log_noncentral

    fixed, rest = _fixed_axes(d, drift_step, noise_step, nodes)
    q, wq = _log_noncentral(d - 1, noncentrality, nodes[1])
    weights = (rest[:, None] * wq[None, :]).ravel()
    keep = np.flatnonzero(weights > PRUNE)
    a2, xi1, xi2, r2 = (a[keep] for a in fixed)
    return (a2, q[keep % q.size], xi1, xi2, r2), weights[keep] / weights[keep].sum()


def formation_atoms(beta, d, tokens, cluster, drift_step, noise_step, nodes=NODES):
    """One layer of the formation of ``tokens`` tokens, ``cluster`` at ``x``, as atoms:
    ``atoms(z) -> (z' of every quadrature node, its weight)`` (module docstring)."""
    k, m = float(cluster), float(tokens - cluster)
    delta, eta = float(drift_step), float(noise_step)

    def atoms(z):
        c = math.sqrt(1 / (1 + math.exp(-2 * z)))  # sqrt((1 + rho)/2)
        s = math.sqrt(1 / (1 + math.exp(2 * z)))  # sqrt((1 - rho)/2)
        r = math.exp(-2 * beta * s * s)
        kx, ky = (k - m * r) / (k + m * r), (k * r - m) / (k * r + m)
        ax2 = c * c + kx * kx * s * s  # |A_x|^2
        ax = math.sqrt(ax2)
        cross = c * s * (ky - kx)  # A_x x A_y (negative: A_y turns clockwise)
        a2 = abs(cross) / ax
        c1 = (c * c + kx * ky * s * s) / ax2
        one_minus_c1 = kx * (kx - ky) * s * s / ax2
        one_plus_c1 = (2 * c * c + kx * (kx + ky) * s * s) / ax2
        px = np.array([(1 + delta) * c, (1 + delta * kx) * s])
        # P_y - c1 P_x, each coordinate without cancellation near rho = +-1
        gap = np.array([(1 + delta) * c * one_minus_c1,
                        s * (-one_plus_c1 + delta * (ky - kx + one_minus_c1 * kx))])
        mu_u = px / (eta * ax)
        mu_w = gap / (eta * a2)
        size_w = math.hypot(*mu_w)
        along = float(mu_u @ mu_w) / size_w if size_w > 0 else 0.0
        across2 = max(float(mu_u @ mu_u) - along * along, 0.0)
        (g, q, xi1, xi2, r2), weights = _rule(int(d), delta, eta, across2, tuple(nodes))
        u2 = along + g
        nu = np.sqrt(q + u2 * u2)
        w_par = size_w * u2 / nu + xi1
        w_perp = np.sqrt((size_w * np.sqrt(q) / nu + xi2) ** 2 + r2)
        p = c1 * ax * nu + a2 * w_par
        qq = a2 * w_perp
        return np.sign(p) * (np.log(np.hypot(p, qq) + np.abs(p)) - np.log(qq)), weights

    return atoms


def _step_moments(atoms, z: float) -> tuple[float, float]:
    """Mean and variance of one layer's step of the chain ``atoms`` from ``z``."""
    positions, weights = atoms(z)
    mean = float(weights @ (positions - z))
    return mean, float(weights @ (positions - z - mean) ** 2)


def repelled_edge(atoms, start: float = -FAR, step: float = 0.5,
                  limit: float = -60.0) -> float:
    r"""A z below which the unbalanced formation's chain (``atoms``, :func:`formation_atoms`)
    is pushed straight back: one below the first z (from ``start`` down by ``step``) whose
    mean step up is at least three standard deviations of the step. Near :math:`\rho = -1`
    the attention's imbalance pushes such a formation away from the antipodal point at a
    rate that grows like :math:`e^{-2z}`, so the chain never drifts below it for long, and
    its law is computed with the kernel at every node down to there (not with the kernel
    frozen at ``-FAR``, which would let the formation slide to :math:`-\infty`)."""
    z = start
    while z > limit:
        mean, variance = _step_moments(atoms, z)
        if mean >= 3 * math.sqrt(variance):
            return z - 1.0
        z -= step
    raise ValueError(f"the formation's chain is not pushed back from rho = -1 above z = {limit}")


@functools.cache
def formation_values(tokens: int, cluster: int, beta: float, d: int, eps: float, mu: float,
                     layers: int, tol: float, depths: tuple[int, ...], nodes=NODES):
    r"""The formation's outcome law as value functions on two grids: for each level, its
    centres, spacing and ``{depth: (single, antipodal) on the centres}`` for every depth
    in ``depths`` (one backward iteration of the one-layer operator). ``cluster`` and
    ``tokens - cluster`` give the same law (the formation's two sides swapped)."""
    from ._weights import Hybrid
    from .two_token._chain_law import grid, iterate, operator

    drift_step, noise_step = Hybrid(mu=mu, eps=eps).layer_steps(layers)
    atoms = formation_atoms(beta, d, tokens, cluster, drift_step, noise_step, nodes)
    z_star = outcome_threshold(tol)
    balanced = 2 * cluster == tokens
    # the chain's own drift and variance per unit depth far out, for the grid's extent;
    # unbalanced: rho = -1 repels (repelled_edge), the kernel is taken at every node down
    # to the edge, and nothing drifts off to the left
    far = [tuple(m * layers for m in _step_moments(atoms, side)) if balanced or side > 0
           else None for side in (-FAR, FAR)]
    beyond = [FAR + 2 - z_star, FAR + 2 - z_star]
    clamp = (FAR, FAR) if balanced else (math.inf, FAR)
    if not balanced:
        beyond[0] = max(beyond[0], -repelled_edge(atoms) - z_star)
    levels = []
    horizon = max(depths) / layers
    order = sorted(depths)
    for spacing in (SPACING, SPACING / 2):
        _, centres, h = grid(beta, d, eps, mu, tol, horizon, spacing, tuple(beyond), far)
        step = operator(centres, h, atoms, clamp)
        value = np.stack([centres > z_star, centres < -z_star], axis=1).astype(float)
        value = iterate(step, order[0], value)
        out = {order[0]: value}
        powers = {}  # the depths of a run are a segment apart: one dense power serves all
        for before, depth in itertools.pairwise(order):
            gap = depth - before
            if gap not in powers:
                powers[gap] = np.linalg.matrix_power(step.toarray(), gap)
            out[depth] = value = powers[gap] @ value
        levels.append((centres, h, out))
    return tuple(levels)


def _read(centres, h, value, z):
    """Cubic interpolation of ``value`` (rows: centres) at the points ``z``."""
    from .two_token._chain_law import cubic

    z = np.clip(z, centres[1], centres[-3])
    k = np.searchsorted(centres, z) - 1
    lag = cubic((z - centres[k]) / h)  # (4, points)
    rows = k[None, :] + np.arange(-1, 3)[:, None]
    return np.einsum("ip,ipo->po", lag, value[rows])


def formation_probabilities(z, *, tokens: int, cluster: int, beta: float, d: int, eps: float,
                            mu: float, layers: int, tol: float, depth: int,
                            depths: tuple[int, ...]) -> np.ndarray:
    """(single, antipodal, undecided) of the formation chain started at each ``z`` and run
    ``depth`` layers (one of ``depths``, the depths its cache serves), Richardson-extrapolated
    over the two grids and clipped to probabilities."""
    key = (tokens, min(cluster, tokens - cluster), float(beta), int(d), float(eps), float(mu),
           int(layers), float(tol), depths)
    coarse, fine = formation_values(*key)
    z = np.atleast_1d(np.asarray(z, float))
    two = (4 * _read(fine[0], fine[1], fine[2][depth], z)
           - _read(coarse[0], coarse[1], coarse[2][depth], z)) / 3
    two = np.clip(two, 0.0, 1.0)
    single, antipodal = two[:, 0], np.minimum(two[:, 1], 1 - two[:, 0])
    return np.stack([single, antipodal, 1 - single - antipodal], axis=1)


class FormationFinish:
    """Finishes the live trajectories of one run of
    :func:`~spheresde.transformer._absorption.absorbing_tokens` whose clusters are certified
    tight (module docstring), and keeps what they contribute.

    After the run, :attr:`values` holds, per trajectory (original order), its
    (single, antipodal, undecided) probabilities where it was finished (NaN elsewhere),
    :attr:`minority` the smaller cluster's size of each finished one and :attr:`spread`
    the smallest level :math:`v` certified for it (its clusters stay within :math:`v` to the
    horizon except with probability ``bound``; NaN where not finished).
    """

    def __init__(self, *, tokens: int, beta: float, d: int, eps: float, mu: float,
                 layers: int, tol: float, bound: float, thrift: bool = True):
        self.tokens, self.beta, self.d, self.eps, self.mu = tokens, beta, d, eps, mu
        self.layers, self.tol, self.bound = layers, tol, bound
        self.thrift = thrift  # False: finish wherever certified, paid for or not (tests)
        self.steps, self.depths, self.segment = 0, (), 0
        self.bought, self.rent = set(), {}  # formations (smaller side) whose law is bought
        self.values = np.zeros((0, 3))
        self.minority = np.zeros(0, np.int64)
        self.spread = np.zeros(0)

    def begin(self, trajectories: int, steps: int, segment: int) -> None:
        """Start a run of ``trajectories`` over ``steps`` layers in segments of ``segment``."""
        self.steps, self.segment = steps, segment
        self.bought, self.rent = set(), {}
        # every depth left at a segment boundary: one backward iteration serves them all
        self.depths = tuple(int(v) for v in steps - np.arange(segment, steps, segment))
        self.values = np.full((trajectories, 3), np.nan)
        self.minority = np.zeros(trajectories, np.int64)
        self.spread = np.full(trajectories, np.nan)

    def exponents(self, own: int) -> tuple[np.ndarray, np.ndarray]:
        """Levels and exponents of a cluster of ``own`` tokens (:func:`tightness_exponents`)."""
        return tightness_exponents(own, self.tokens - own, float(self.beta), int(self.d),
                                   float(self.eps), float(self.mu), float(self.tol))

    def pays(self, own: int, count: int, left: int) -> bool:
        """Whether the ``count`` certified trajectories with clusters of ``own`` and
        ``tokens - own`` tokens, ``left`` layers to go, are finished now (module docstring):
        the formation's law is bought already, or this group's work left or the rent paid
        so far for that formation reaches :data:`LAW_WORK` (it is then bought); otherwise
        the group's next segment is added to the rent. Always without :attr:`thrift`."""
        formation = min(own, self.tokens - own)
        if not self.thrift or formation in self.bought:
            return True
        rent = self.rent.get(formation, 0)
        if count * left >= LAW_WORK or rent >= LAW_WORK:
            self.bought.add(formation)
            return True
        self.rent[formation] = rent + count * min(self.segment, left)
        return False

    def status(self, x, lanes, codes: np.ndarray, done: int) -> np.ndarray:
        """``codes`` with :data:`FINISHED` where a live trajectory of tokens ``x`` (trajectory
        ids ``lanes``) is finished after ``done`` layers; records its probabilities."""
        if self.bound <= 0 or done >= self.steps:
            return codes
        x = np.asarray(x, float)
        lanes = np.asarray(lanes)
        diff = x[:, :, None, :] - x[:, None, :, :]
        u = np.sum(diff * diff, axis=-1) / 2  # 1 - rho_ij, to relative precision
        first = u[:, 0, :] < self.tol  # the first token's cluster
        size = first.sum(axis=1)
        same = first[:, :, None] == first[:, None, :]
        pairs = np.triu(np.ones((self.tokens, self.tokens), bool), 1)
        out = codes.copy()
        for own in np.unique(size[(size < self.tokens) & (codes == LIVE)]):
            rows = np.nonzero((size == own) & (codes == LIVE))[0]
            levels, p_own = self.exponents(int(own))
            _, p_other = self.exponents(self.tokens - int(own))
            # sum over the within pairs of (u/v)^p at every level v, each cluster its own p
            ratio = u[rows][:, None] / levels[None, :, None, None]  # (rows, levels, n, n)
            own_side = first[rows][:, None, :, None] & first[rows][:, None, None, :]
            power = np.where(own_side, p_own[None, :, None, None], p_other[None, :, None, None])
            within = (same[rows] & pairs)[:, None]
            inside = np.all(np.where(within, ratio < 1, True), axis=(-2, -1))
            with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
                terms = np.where(within, np.where(ratio > 0, ratio ** power, 0.0), 0.0)
            certified = (p_own > 0 if own > 1 else True) & (
                p_other > 0 if self.tokens - own > 1 else True) & (
                2 * np.sqrt(2 * levels) <= BAND * self.tol)
            chance = np.where(inside & certified[None, :], terms.sum(axis=(-2, -1)), np.inf)
            good = chance <= self.bound
            found = good.any(axis=1)
            hit = rows[found]
            if not hit.size or not self.pays(int(own), hit.size, self.steps - done):
                continue
            cross = ~same[hit] & pairs
            rho = np.sum(np.where(cross, 1 - u[hit], 0.0), axis=(-2, -1)) / cross.sum(
                axis=(-2, -1))
            z = np.arctanh(np.clip(rho, -1 + 1e-15, 1 - 1e-15))
            self.values[lanes[hit]] = formation_probabilities(
                z, tokens=self.tokens, cluster=int(own), beta=self.beta, d=self.d,
                eps=self.eps, mu=self.mu, layers=self.layers, tol=self.tol,
                depth=self.steps - done, depths=self.depths)
            self.minority[lanes[hit]] = min(int(own), self.tokens - int(own))
            # the smallest certified level (levels decrease): the tightest spread guaranteed
            last = levels.size - 1 - np.argmax(good[found][:, ::-1], axis=1)
            self.spread[lanes[hit]] = levels[last]
            out[hit] = FINISHED
        return out

    def counts(self, codes: np.ndarray) -> dict:
        """The finished trajectories' share of the counts of
        :func:`~spheresde.experiments._simulate.simulate_counts` (:func:`finish_counts`)."""
        done = codes == FINISHED
        return finish_counts(self.values[done], self.minority[done], self.tokens)


def finish_counts(values: np.ndarray, minority: np.ndarray, tokens: int) -> dict:
    """Counts of finished trajectories: their number, the sums and the sums of squares of
    their (single, antipodal, undecided) probabilities ``values`` and their antipodal
    probability by the smaller cluster's size ``minority`` (0..n//2); all 0 for none."""
    values = np.asarray(values, float).reshape(-1, 3)
    by_size = np.bincount(np.asarray(minority, np.int64), weights=values[:, 1],
                          minlength=tokens // 2 + 1)
    return {"finished": int(values.shape[0]),
            "finish_sums": [float(v) for v in values.sum(axis=0)],
            "finish_squares": [float(v) for v in (values**2).sum(axis=0)],
            "finish_minority": [float(v) for v in by_size]}


__all__ = ["FINISHED", "FormationFinish", "attention_bounds", "finish_counts", "formation_atoms",
           "formation_probabilities", "formation_values", "tightness_exponents"]
