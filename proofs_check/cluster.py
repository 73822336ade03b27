r"""Certified absorption near the single cluster of :math:`n` tokens: a supermartingale
:math:`V^p` of the gap :math:`V = \sum_{i<j}(1 - \rho_{ij})`.

For :math:`n > 2` no inner product is an autonomous diffusion, so the scale-function
certificate of two tokens (:mod:`spheresde.transformer._absorption`) does not apply. The gap
:math:`V = \sum_{i<j} u_{ij}`, :math:`u_{ij} = 1 - \rho_{ij}`, with
:math:`S = \sum_i X_i`, is :math:`V = (n^2 - |S|^2)/2`. Under the limit SDE
(:mod:`proofs_check.limit`, any attention vectors :math:`A_i`) the derivation gives,
exactly (residuals in :func:`gap_identity_residuals`),

.. math::

    \mathcal L V = \sum_{i<j}\Big[-\varepsilon^2 Q_{ij}u_{ij}(d-2-\rho_{ij})
        + \tfrac{\varepsilon^2}{2}|A_i - A_j|^2(d-2+\rho_{ij}^2)
        + \mu (X_i - X_j)\cdot(A_i - A_j) - \mu u_{ij}(X_i\cdot A_i + X_j\cdot A_j)\Big],

    \Gamma(V) = \varepsilon^2\Big\|\sum_i (P_i S) A_i^\top\Big\|_F^2, \qquad
    \sum_i P_i S = 2V m - n\sum_i e_i (e_i\cdot m),

with :math:`Q_{ij} = (|A_i|^2 + |A_j|^2)/2`, :math:`m = S/n`, :math:`e_i = X_i - m`,
:math:`e_i\cdot m = (\gamma - |e_i|^2)/2`, :math:`\gamma = 1 - |m|^2 = 2V/n^2`,
:math:`\sum_i |e_i|^2 = 2V/n` and :math:`|P_i S|^2 = 2nU_i - U_i^2 - 2V`,
:math:`U_i = \sum_k u_{ik}`.

**Bounds on** :math:`\{V \le v\}`, :math:`0 < v < 1`, softmax attention, :math:`d \ge 3`.
Each :math:`u_{ij} \le V`. Logits of rows :math:`i, j` differ by
:math:`\beta|X_k\cdot(X_i - X_j)| \le \beta(|X_k - X_i||X_i - X_j| + u_{ij}) \le 3\beta V`,
so the weights differ by the ratio :math:`e^{\pm 6\beta V}` and
:math:`\sum_k |w_{ik} - w_{jk}| \le E := e^{6\beta V} - 1`; with
:math:`A_i - A_j = \sum_k (w_{ik}-w_{jk})(X_k - X_1)` and :math:`|X_k - X_1| \le \sqrt{2V}`,
:math:`|A_i - A_j| \le E\sqrt{2V}`. :math:`X_i\cdot A_i = \sum_k w_{ik}\rho_{ik} \ge 1-V`, so
:math:`1 \ge |A_i| \ge 1 - V`. Summing over the :math:`N = n(n-1)/2` pairs (Cauchy-Schwarz
:math:`\sum\sqrt{u_{ij}} \le \sqrt{NV}`):

.. math::

    \mathcal L V \le V\,h(V), \quad h = -\varepsilon^2(d-3)(1-V)^2 - 2\mu(1-V)
        + N\varepsilon^2(d-1)E^2 + 2\mu\sqrt N E .

For :math:`\Gamma`: :math:`|e_i\cdot m| \le V/n`, :math:`\sum|e_i| \le \sqrt{2V}`,
:math:`|m| \ge \sqrt{1-V/2}`, :math:`\sum_i |P_iS| \le 2n\sqrt V`, hence
:math:`V g(V) \le \|\sum_i P_iS A_i^\top\|_F \le V G(V)` with

.. math::

    g = (2\sqrt{1 - V/2} - \sqrt{2V})(1-V) - 2\sqrt2\,n E, \qquad
    G = 2 + \sqrt{2V} + 2\sqrt 2\, n E .

**Certificate.** :math:`\mathcal L V^p = pV^{p-2}[V\mathcal LV + \tfrac{p-1}{2}\Gamma(V)]
\le pV^p\,B_p(V)` with :math:`B_p = h + \tfrac{p-1}{2}\varepsilon^2 g_+^2` for
:math:`p < 1` and :math:`h + \tfrac{p-1}{2}\varepsilon^2 G^2` for :math:`p \ge 1`.
:math:`h` and :math:`G` increase in :math:`V`, :math:`g_+ = \max(g, 0)` decreases
(:func:`monotonicity_signs`), so :math:`B_p` increases and :math:`B_p(v_1) \le 0` proves
:math:`\mathcal L V^p \le 0` on all of :math:`\{0 < V \le v_1\}`: one sign check per
certificate. At :math:`V = 0`, :math:`h = a = -(d-3)\varepsilon^2 - 2\mu` and
:math:`\varepsilon^2 g^2 = \varepsilon^2 G^2 = s^2 = 4\varepsilon^2`, the two-token
linearization at :math:`\rho = 1` (:func:`linearization_residuals`; free of
:math:`\beta`), so a certificate exists for every :math:`0 < p < p_{\max} =
1 - 2a/s^2 = (d-1)/2 + \mu/\varepsilon^2` and for none above it.

Then :math:`V^p` stopped on leaving :math:`\{V < v_1\}` is a bounded non-negative
supermartingale and :math:`P(\sup_t V_t \ge v_1) \le (V_0/v_1)^p` (optional stopping;
:math:`V = 0` is absorbing, all tokens then coincide). With :math:`v_1 \le \mathrm{tol}`,
every :math:`u_{ij} \le V < v_1` keeps the configuration classified single, so a
trajectory with :math:`V < v_{\mathrm{abs}} = v_1\,\delta^{1/p}` is single at the horizon
except with probability :math:`\delta`. The certificate is for the limit SDE; the network
at :math:`L` layers follows it up to :math:`O(1/L)`, as for two tokens.

**What is checked how.** Machine-checked (residuals and sign checks of the report row):
the exact identities (for three tokens with a generic Gram matrix and generic attention;
the closed forms are stated for every ``n`` and the proof of each is algebra valid for any
``n``), the linearization at :math:`V = 0` against the two-token SDE, :math:`p_{\max}`,
and the monotonicity of :math:`h, G, E, P`. Argued by hand, above, and witnessed
numerically (``tests/test_cluster_absorption.py``: 400 random near-cluster configurations,
40-digit arithmetic, exact :math:`\mathcal LV` and :math:`\Gamma` against the bounds):
the elementary inequalities (softmax ratio, Cauchy-Schwarz, :math:`|A_i| \ge 1 - V`) that
turn the identities into :math:`h, g, G`, and the optional-stopping step.

Not covered: the antipodal formations of :math:`n > 2` tokens (no Lyapunov function is
derived here) and unbalanced formations, where :math:`\rho = -1` is not even an equilibrium
(:mod:`proofs_check.formation`): those are not absorbed; :mod:`proofs_check.two_clusters`
certifies instead that their clusters stay tight, so that their inter-cluster chain can be
finished by the formation's law.
"""

from __future__ import annotations

import functools
import itertools

import sympy as sp

from .limit import derive_limit_span, generic_span
from .symbols import beta, d, eps, mu, r, rho

#: The gap :math:`V` and the number of tokens as symbols of the bounds.
gap = sp.Symbol("V", positive=True)
n_tokens = sp.Symbol("n", positive=True, integer=True)
p_exponent = sp.Symbol("p", positive=True)


def _pairs(n: int):
    return list(itertools.combinations(range(n), 2))


@functools.cache
def gap_generator(n: int) -> tuple[sp.Expr, sp.Expr]:
    r"""Ito drift :math:`\mathcal L V` and carre du champ :math:`\Gamma(V)` of
    :math:`V = \sum_{i<j}(1 - \rho_{ij})` for ``n`` unit tokens with generic Gram entries
    ``g_ij`` and generic attention weights ``w_ij`` (:func:`proofs_check.limit.generic_span`),
    from the derived limit SDE by Ito's lemma on every :math:`\rho_{ij}`.

    Examples
    --------
    >>> drift, carre = gap_generator(2)
    >>> sorted(map(str, carre.free_symbols))
    ['epsilon', 'g_01', 'w_00', 'w_01', 'w_10', 'w_11']
    """
    span, att = generic_span(n)
    sde = derive_limit_span(span, att)
    xs = span.tokens()
    drift = sp.Integer(0)
    noise_terms = []  # (a, partner) with d rho_ij = sum X_partner . dX_a
    for i, j in _pairs(n):
        drift -= (xs[j].dot(sde.drift[i]) + xs[i].dot(sde.drift[j])
                  + sde.covariance[i, j].trace())
        noise_terms += [(i, j), (j, i)]
    carre = sp.Integer(0)
    for (a, pa), (b, pb) in itertools.product(noise_terms, repeat=2):
        carre += sde.covariance[a, b].quadratic(xs[pa], xs[pb])
    return sp.expand(drift), sp.expand(carre)


def _stated_pieces(n: int):
    """The span objects of the closed forms: tokens, attention, S, m, e_i, V."""
    span, att = generic_span(n)
    xs = span.tokens()
    total = xs[0]
    for x in xs[1:]:
        total = total + x
    mean = total * sp.Rational(1, n)
    gap_value = sum((1 - span.gram[i, j] for i, j in _pairs(n)), sp.Integer(0))
    return span, att, xs, total, mean, gap_value


def stated_gap_generator(n: int) -> tuple[sp.Expr, sp.Expr]:
    r"""The closed forms of the module docstring for :math:`\mathcal L V` (pairwise) and
    :math:`\Gamma(V) = \varepsilon^2\sum_{ij}\langle A_i, A_j\rangle\langle P_iS, P_jS\rangle`."""
    span, att, xs, total, _, _ = _stated_pieces(n)
    drift = sp.Integer(0)
    for i, j in _pairs(n):
        u, g = 1 - span.gram[i, j], span.gram[i, j]
        q = (att[i].dot(att[i]) + att[j].dot(att[j])) / 2
        diff_a, diff_x = att[i] - att[j], xs[i] - xs[j]
        drift += (-eps**2 * q * u * (d - 2 - g) + eps**2 * diff_a.dot(diff_a) * (d - 2 + g**2) / 2
                  + mu * diff_x.dot(diff_a) - mu * u * (xs[i].dot(att[i]) + xs[j].dot(att[j])))
    projected = [total - x * x.dot(total) for x in xs]
    carre = eps**2 * sum((att[i].dot(att[j]) * projected[i].dot(projected[j])
                          for i in range(n) for j in range(n)), sp.Integer(0))
    return sp.expand(drift), sp.expand(carre)


def gap_identity_residuals(n: int = 3) -> dict[str, sp.Expr]:
    r"""Residuals (each 0) of the exact identities behind the bounds, for ``n`` tokens with
    a generic Gram matrix and generic attention (see the module docstring).

    Examples
    --------
    >>> from proofs_check.engine import is_zero
    >>> is_zero(gap_identity_residuals(2))
    True
    """
    span, _, xs, total, mean, gap_value = _stated_pieces(n)
    drift, carre = gap_generator(n)
    stated_drift, stated_carre = stated_gap_generator(n)
    es = [x - mean for x in xs]
    gamma = 1 - mean.dot(mean)
    out = {
        "L V - pairwise form": sp.expand(drift - stated_drift),
        "Gamma(V) - eps^2 |sum P_i S A_i^T|_F^2": sp.expand(carre - stated_carre),
        "V - (n^2 - |S|^2)/2": sp.expand(gap_value - (n**2 - total.dot(total)) / 2),
        "sum |e_i|^2 - 2V/n": sp.expand(sum(e.dot(e) for e in es) - 2 * gap_value / n),
        "gamma - 2V/n^2": sp.expand(gamma - 2 * gap_value / n**2),
    }
    projected = total * 0
    for i, (x, e) in enumerate(zip(xs, es, strict=True)):
        out[f"e_{i}.m - (gamma - |e_{i}|^2)/2"] = sp.expand(e.dot(mean) - (gamma - e.dot(e)) / 2)
        u_i = sum((1 - span.gram[i, k] for k in range(n)), sp.Integer(0))
        p_s = total - x * x.dot(total)
        out[f"|P_{i} S|^2 - (2n U_{i} - U_{i}^2 - 2V)"] = sp.expand(
            p_s.dot(p_s) - (2 * n * u_i - u_i**2 - 2 * gap_value))
        projected = projected + p_s
    stated = mean * (2 * gap_value)
    for e in es:
        stated = stated - e * (n * e.dot(mean))
    out["sum P_i S - (2V m - n sum e_i (e_i.m))"] = (projected - stated).residual()
    return out


def certificate_bounds() -> dict[str, sp.Expr]:
    r"""The bounding functions ``h``, ``g``, ``G`` of the module docstring, in
    :math:`V`, ``n``, ``beta``, ``d``, ``eps``, ``mu``, and the linear exponent bound
    ``p_max``; ``B_low`` / ``B_high`` are :math:`B_p` for :math:`p < 1` / :math:`p \ge 1`
    (``B_low`` with :math:`g`, valid where :math:`g > 0`).

    Examples
    --------
    >>> b = certificate_bounds()
    >>> sp.expand(b["h"].subs(gap, 0))
    -d*epsilon**2 + 3*epsilon**2 - 2*mu
    """
    pairs = n_tokens * (n_tokens - 1) / 2
    e = sp.exp(6 * beta * gap) - 1
    h = (-eps**2 * (d - 3) * (1 - gap)**2 - 2 * mu * (1 - gap)
         + pairs * eps**2 * (d - 1) * e**2 + 2 * mu * sp.sqrt(pairs) * e)
    g = (2 * sp.sqrt(1 - gap / 2) - sp.sqrt(2 * gap)) * (1 - gap) - 2 * sp.sqrt(2) * n_tokens * e
    big = 2 + sp.sqrt(2 * gap) + 2 * sp.sqrt(2) * n_tokens * e
    a0, s2 = h.subs(gap, 0), eps**2 * g.subs(gap, 0)**2
    return {
        "h": h, "g": g, "G": big,
        "B_low": h + (p_exponent - 1) / 2 * eps**2 * g**2,
        "B_high": h + (p_exponent - 1) / 2 * eps**2 * big**2,
        "p_max": sp.expand(1 - 2 * a0 / s2),
    }


def two_token_linearization() -> tuple[sp.Expr, sp.Expr]:
    r""":math:`(a, s^2)` of the two-token gap :math:`u = 1 - \rho` at :math:`\rho = 1`:
    :math:`du \approx a u\,dt + s u\,dB`, from :func:`proofs_check.two_token.derive_rho_sde`
    (limits of :math:`-m/(1-\rho)` and :math:`s^2/(1-\rho)^2`, :math:`r = e^{-\beta(1-\rho)}`)."""
    from .two_token import derive_rho_sde

    sde = derive_rho_sde()
    in_rho = {r: sp.exp(-beta * (1 - rho))}
    a = sp.limit(sp.cancel(-sde.drift / (1 - rho)).subs(in_rho), rho, 1)
    s2 = sp.limit(sp.cancel(sde.variance / (1 - rho) ** 2).subs(in_rho), rho, 1)
    return sp.expand(a), sp.expand(s2)


def linearization_residuals() -> dict[str, sp.Expr]:
    r"""Residuals (0): the bounds at :math:`V = 0` are the two-token linearization, which is
    free of :math:`\beta`, and :math:`B_p(0) = 0` at :math:`p_{\max}`.

    Examples
    --------
    >>> all(v == 0 for v in linearization_residuals().values())
    True
    """
    b = certificate_bounds()
    a, s2 = two_token_linearization()
    return {
        "h(0) - a (two tokens)": sp.simplify(b["h"].subs(gap, 0) - a),
        "eps^2 g(0)^2 - s^2 (two tokens)": sp.simplify(eps**2 * b["g"].subs(gap, 0)**2 - s2),
        "eps^2 G(0)^2 - s^2 (two tokens)": sp.simplify(eps**2 * b["G"].subs(gap, 0)**2 - s2),
        "d a / d beta": sp.diff(a, beta),
        "B_p(0) at p_max": sp.simplify(b["B_high"].subs({gap: 0, p_exponent: b["p_max"]})),
        "p_max - ((d-1)/2 + mu/eps^2)": sp.simplify(b["p_max"] - ((d - 1) / 2 + mu / eps**2)),
    }


def above_p_max() -> sp.Expr:
    r""":math:`B_p(0)` at :math:`p = p_{\max} + 1/100`: positive (:math:`\varepsilon^2/50`),
    so no neighbourhood certifies an exponent above the linear bound."""
    b = certificate_bounds()
    return sp.simplify(b["B_high"].subs({gap: 0, p_exponent: b["p_max"] + sp.Rational(1, 100)}))


def monotonicity_signs() -> dict[str, bool]:
    r"""Sign checks (each True) that :math:`h' \ge 0`, :math:`G' \ge 0`,
    :math:`E' \ge 0` and :math:`P' \le 0`, :math:`P = 2\sqrt{1-V/2} - \sqrt{2V}`, on
    :math:`0 < V < 1` for :math:`d \ge 3`, :math:`\beta, \mu \ge 0`, :math:`n \ge 2`.

    So :math:`g = P(1-V) - 2\sqrt2\,nE` decreases where it is positive (there
    :math:`P > 0`, a product of two positive decreasing factors, minus an increasing one).
    Each derivative is written with :math:`V = 1/(1+t)`, :math:`e^{6\beta V} = 1 + \kappa`,
    :math:`d = 3 + \delta`, :math:`n = 2 + \nu` (:math:`t > 0`;
    :math:`\kappa, \delta, \nu \ge 0`), multiplied by :math:`1 + t > 0` and expanded: SymPy's
    assumptions then decide the sign term by term.

    Examples
    --------
    >>> all(monotonicity_signs().values())
    True
    """
    t = sp.Symbol("t", positive=True)
    kappa, delta, nu = sp.symbols("kappa delta nu", nonnegative=True)
    b = certificate_bounds()
    shift = {gap: 1 / (1 + t), d: 3 + delta, n_tokens: 2 + nu}

    def slope(expr):
        derivative = sp.diff(expr, gap).subs(sp.exp(6 * beta * gap), 1 + kappa)
        return sp.expand(sp.cancel(sp.expand(derivative.subs(shift) * (1 + t))))

    wedge = 2 * sp.sqrt(1 - gap / 2) - sp.sqrt(2 * gap)
    return {
        "h' >= 0": bool(slope(b["h"]).is_nonnegative),
        "G' >= 0": bool(slope(b["G"]).is_nonnegative),
        "E' >= 0": bool(slope(sp.exp(6 * beta * gap) - 1).is_nonnegative),
        "P' <= 0": bool((-slope(wedge)).is_nonnegative),
    }


__all__ = ["above_p_max", "certificate_bounds", "gap", "gap_generator",
           "gap_identity_residuals", "linearization_residuals", "monotonicity_signs",
           "n_tokens", "p_exponent", "stated_gap_generator", "two_token_linearization"]
