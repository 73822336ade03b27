r"""The report: one row per claim, the formula as stated, the formula derived, and a verdict.

Each check derives the **residuals** of its claim, SymPy style: the expressions
``derived - stated`` (simplified; SymPy expressions, matrices, or lists of them) that must
vanish when the claim holds. The verdict is computed from them by :func:`verdict`, never
typed in: ``PASS`` (every residual is exactly zero), ``FAIL`` (a residual that should
vanish does not: the report prints it and the command exits non-zero), ``MISMATCH`` (the
paper prints a formula that the derivation under the project's conventions does not give:
the ``paper`` residual is non-zero, the row's other residuals, including those that explain
the difference, vanish; a reported finding, not an error).

A residual is zero when it is structurally ``0`` (or a matrix / list of such) as returned:
the checks simplify, the verdict does not, so what is printed is what was judged.

Examples
--------
>>> x = sp.Symbol("x")
>>> row = Check.from_residuals("demo", "x", "x", {"x - x": x - x})
>>> row.status
'PASS'
>>> print(format_report([row], fmt="markdown").splitlines()[2])
| demo | x | x | PASS |
>>> Check.from_residuals("wrong", "x + 1", "x", {"derived - stated": -1}).status
'FAIL'
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import sympy as sp

from . import layers
from .engine import is_zero

PASS, FAIL, MISMATCH = "PASS", "FAIL", "MISMATCH"

#: Characters of a residual printed on a FAIL row before it is truncated.
MAX_RESIDUAL_CHARS = 600


def verdict(residuals: dict, nonzero: dict | None = None, paper: dict | None = None,
            reconcile: dict | None = None) -> str:
    """The status of a row, from its residuals.

    Parameters
    ----------
    residuals : dict
        ``label -> residual`` that must vanish.
    nonzero : dict, optional
        ``label -> expression`` that must **not** vanish (non-degeneracy: e.g. a term whose
        omission the claim says would be wrong).
    paper : dict, optional
        ``label -> derived - paper``: a non-zero value is a documented MISMATCH with the
        paper, not a FAIL.
    reconcile : dict, optional
        ``label -> residual`` that must vanish when ``paper`` does not (what explains the
        mismatch); a mismatch they do not explain is a FAIL.

    Returns
    -------
    {"PASS", "FAIL", "MISMATCH"}

    Examples
    --------
    >>> verdict({"a": 0}), verdict({"a": 1}), verdict({"a": 0}, paper={"p": -1})
    ('PASS', 'FAIL', 'MISMATCH')
    >>> verdict({"a": 0}, nonzero={"n": 0})
    'FAIL'
    """
    if not is_zero(residuals) or any(is_zero(v) for v in (nonzero or {}).values()):
        return FAIL
    if paper and not is_zero(paper):
        return MISMATCH if is_zero(reconcile or {}) else FAIL
    return PASS


@dataclass(frozen=True)
class Check:
    """One row of the report.

    Build rows with :meth:`from_residuals`, which computes the status; the constructor
    takes a status as given (rows for a derivation that raised).

    Attributes
    ----------
    claim : str
        Which claim (paper's numbering where it has one).
    stated : str
        The formula as stated (by the paper, or by the project's closed form).
    derived : str
        What the SymPy derivation produced.
    status : {"PASS", "FAIL", "MISMATCH"}
    note : str
        How it was checked, or what reconciles a mismatch.
    seconds : float
        Time taken by the derivation.
    residuals : dict
        ``label -> derived - stated``: every one must be zero.
    nonzero : dict
        ``label -> expression`` that must not vanish.
    paper : dict
        ``label -> derived - paper``, non-zero for a MISMATCH.
    reconcile : dict
        ``label -> residual`` explaining a mismatch, must be zero.
    """

    claim: str
    stated: str
    derived: str
    status: str
    note: str = ""
    seconds: float = 0.0
    residuals: dict = field(default_factory=dict)
    nonzero: dict = field(default_factory=dict)
    paper: dict = field(default_factory=dict)
    reconcile: dict = field(default_factory=dict)

    @classmethod
    def from_residuals(cls, claim: str, stated: str, derived: str, residuals: dict,
                       note: str = "", *, nonzero: dict | None = None,
                       paper: dict | None = None, reconcile: dict | None = None) -> Check:
        """A row whose status is the :func:`verdict` of its residuals.

        Parameters
        ----------
        claim, stated, derived, note : str
            As the attributes.
        residuals, nonzero, paper, reconcile : dict
            See :func:`verdict`.

        Returns
        -------
        Check
        """
        nonzero, paper, reconcile = nonzero or {}, paper or {}, reconcile or {}
        return cls(claim, stated, derived, verdict(residuals, nonzero, paper, reconcile), note,
                   residuals=residuals, nonzero=nonzero, paper=paper, reconcile=reconcile)

    def failures(self) -> list[tuple[str, str]]:
        """What makes the row fail or mismatch: ``(label, residual as text)`` pairs.

        Returns
        -------
        list of (str, str)
            Non-zero residuals (``residual[...]``), vanishing non-zero claims
            (``vanishes[...]``), non-zero paper residuals (``paper[...]``) and unexplained
            mismatches (``reconcile[...]``); each text truncated to ``MAX_RESIDUAL_CHARS``.
        """
        out = [(f"residual[{k}]", v) for k, v in self.residuals.items() if not is_zero(v)]
        out += [(f"vanishes[{k}] (must not)", v) for k, v in self.nonzero.items() if is_zero(v)]
        out += [(f"paper[{k}]", v) for k, v in self.paper.items() if not is_zero(v)]
        if self.paper and not is_zero(self.paper):
            out += [(f"reconcile[{k}]", v) for k, v in self.reconcile.items() if not is_zero(v)]
        return [(label, _truncate(str(value))) for label, value in out]


def _truncate(text: str, limit: int = MAX_RESIDUAL_CHARS) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]} ... ({len(text) - limit} more characters)"


def _simplified(expr) -> sp.Expr:
    return sp.simplify(expr)


@functools.cache
def _limit_span(n: int):
    from .limit import derive_limit_span, generic_span, stated_limit_span

    span, att = generic_span(n)
    return span, derive_limit_span(span, att), stated_limit_span(span, att)


@functools.cache
def _limit_components() -> dict:
    from .limit import limit_components_residuals

    return {dim: limit_components_residuals(dim) for dim in range(2, 7)}


def check_theorem1_drift() -> Check:
    """Theorem 1: the Ito drift of the limit, derived from one discrete layer.

    Returns
    -------
    Check
        Residuals: derived - stated drift in the token span (``n = 1, 2, 3``, ``d``
        symbolic), and with explicit components of ``G`` (``d = 2..6``), plus the mean of
        the :math:`O(s)` term.
    """
    residuals = {}
    for n in (1, 2, 3):
        _, der, st = _limit_span(n)
        residuals[f"span n={n}"] = [(der.drift[i] - st.drift[i]).residual() for i in range(n)]
    for dim, res in _limit_components().items():
        residuals[f"components d={dim}"] = res["drift"]
        residuals[f"E[O(s) term] d={dim}"] = res["mean_first_order"]
    return Check.from_residuals(
        "Theorem 1: Ito drift of the limit (hybrid: + mu P_i A_i)",
        "b_i = -sigma^2 (d-1)/2 |A_i|^2 X_i  (+ mu P_i A_i)",
        "E[coeff of h in X_i' - X_i] = -eps^2 (d-1)/2 |A_i|^2 X_i + mu P_i A_i",
        residuals,
        "Taylor in s = L^{-1/2} of Y/|Y|, Isserlis expectation; span algebra with d "
        "symbolic (n = 1, 2, 3, generic attention) and explicit G components for d = 2..6; "
        "the O(s) term has mean 0",
    )


def check_theorem1_diffusion() -> Check:
    """Theorem 1: the shared-noise diffusion covariance of the limit.

    Returns
    -------
    Check
        Residuals: derived - stated covariance, span (``n = 1, 2, 3``) and components
        (``d = 2..6``, same token and cross-token).
    """
    residuals = {}
    for n in (1, 2, 3):
        _, der, st = _limit_span(n)
        residuals[f"span n={n}"] = [
            (der.covariance[k] - st.covariance[k]).residual() for k in der.covariance
        ]
    for dim, res in _limit_components().items():
        residuals[f"components d={dim} same token"] = res["covariance_same_token"]
        residuals[f"components d={dim} cross"] = res["covariance_cross"]
    return Check.from_residuals(
        "Theorem 1: diffusion (shared noise sigma P_i dW A_i)",
        "E[dX_i dX_j^T]/dt = sigma^2 <A_i, A_j> P_i P_j",
        "E[(s-coeff)_i (s-coeff)_j^T] = eps^2 <A_i, A_j> P_i P_j",
        residuals,
        "same two derivations; cross-token terms come from the shared G",
    )


STRATONOVICH_CASES = ((2, 1), (2, 2), (2, 3), (3, 1), (3, 2), (3, 3))


def check_stratonovich() -> Check:
    """Theorem 1 in Stratonovich form, attention derivatives included; tangent.

    Returns
    -------
    Check
        Residuals: derived - closed form and :math:`\\langle X_i, b^S_i\\rangle` for generic
        affine attention in every case of ``STRATONOVICH_CASES``; for one token with its own
        attention (:math:`A_1 = X_1`), the drift with - without the attention-derivative
        terms (must vanish), symbolically and at a rational point. Non-zero: the
        attention-derivative terms for generic attention (symbolically and at a point).
    """
    from .stratonovich import stratonovich_residuals

    residuals, nonzero = {}, {}
    for dim, n in STRATONOVICH_CASES:
        res = stratonovich_residuals(dim, n)
        residuals[f"closed form (d={dim}, n={n})"] = res["closed_form"]
        residuals[f"tangent (d={dim}, n={n})"] = res["tangent"]
        nonzero[f"dA/dX terms (d={dim}, n={n})"] = res["attention_terms"]
        nonzero[f"dA/dX terms at a point (d={dim}, n={n})"] = res["attention_terms_at_point"]
    for dim in (2, 3):
        res = stratonovich_residuals(dim, 1, attention="softmax")
        residuals[f"closed form, one token A = X (d={dim})"] = res["closed_form"]
        residuals[f"with - without dA/dX, one token A = X (d={dim})"] = res["attention_terms"]
        residuals[f"same at a point (d={dim})"] = res["attention_terms_at_point"]
    return Check.from_residuals(
        "Theorem 1: Stratonovich form",
        "b^S_i = mu P_i A_i - sigma^2/2 P_i sum_j P_j (dA_i/dX_j)^T A_j, tangent",
        "Ito drift - 1/2 sum_{lm} (D sigma^(lm)) sigma^(lm) over all n*d coordinates",
        residuals,
        "general ito_to_stratonovich on explicit coordinates, generic affine attention "
        f"(any smooth attention has such 1-jets), (d, n) in {list(STRATONOVICH_CASES)}; "
        "<X_i, b^S_i> = 0 on the spheres; the dA/dX terms (derived: full conversion minus "
        "the conversion with the attention held constant) are non-zero for generic "
        "attention, and vanish for one token whose attention is itself (A = X: b^S = 0)",
        nonzero=nonzero,
    )


def check_sphere_supported() -> Check:
    """The sphere-supported lemma: Ito's lemma gives d|X_i|^2 = 0.

    Returns
    -------
    Check
        Residuals: drift and variance of :math:`|X_i|^2`, ``n = 1, 2, 3``.
    """
    from .limit import sphere_supported_drift

    residuals = {}
    for n in (1, 2, 3):
        span, der, _ = _limit_span(n)
        residuals[f"n={n}"] = sphere_supported_drift(der, span)
    return Check.from_residuals(
        "Sphere-supported lemma",
        "d|X_i|^2 = 0",
        "2<X_i, b_i> + tr Sigma_ii = 0 and 4 X_i^T Sigma_ii X_i = 0",
        residuals,
        "Ito's lemma on |X_i|^2 with the derived coefficients, d symbolic, n = 1, 2, 3",
    )


def check_two_token_sde() -> Check:
    """Two tokens: rho = <X_1, X_2> is a 1-D Ito diffusion with the stated coefficients.

    Returns
    -------
    Check
        Residuals: derived - stated drift and variance (span), the symbols other than
        ``(rho, r, d, eps, mu)`` they contain (none: a 1-D diffusion), and coordinates -
        span for ``d = 2, 3``.
    """
    from .stratonovich import rho_in_coordinates_residuals
    from .symbols import d, eps, mu, r, rho
    from .two_token import derive_rho_sde, stated_rho_sde

    sde = derive_rho_sde()
    drift, variance = stated_rho_sde()
    extra = (sde.drift.free_symbols | sde.variance.free_symbols) - {rho, r, d, eps, mu}
    residuals = {
        "drift": _simplified(sde.drift - drift),
        "variance": _simplified(sde.variance - variance),
        # A function of (rho, beta, d, eps, mu) only (r = exp(-beta (1 - rho))).
        "other symbols": sorted(extra, key=sp.default_sort_key),
    }
    for dim in (2, 3):
        for key, value in rho_in_coordinates_residuals(dim).items():
            residuals[f"coordinates d={dim} {key}"] = value
    return Check.from_residuals(
        "Two-token SDE (rho = <X_1, X_2> is a 1-D diffusion)",
        "d rho = (1-rho^2)[2 mu b + eps^2(2(d-2)ab - (a^2+b^2) rho)] dt "
        "+ eps sqrt(2(a^2+b^2)) (1-rho^2) dB",
        f"drift = {sp.factor(sde.drift)}, variance = {sp.factor(sde.variance)}; "
        "a = 1/(1+r), b = r/(1+r), r = exp(-beta(1-rho))",
        residuals,
        "Ito's lemma in the token span (only the Gram matrix enters: rotation invariance), "
        "and again in explicit coordinates for d = 2, 3 with the general ito_lemma",
    )


def check_z_sde() -> Check:
    """The SDE of z = artanh(rho), in z alone (the coordinate of the finite-horizon solver).

    Returns
    -------
    Check
        Residuals of :func:`proofs_check.two_token.z_sde_residuals`: Ito's lemma for
        rho = tanh z maps the z-SDE back onto the rho-SDE, and 2 b_z / v_z^2 = g + 2 tanh z.
    """
    from .two_token import derive_z_sde, z_sde_residuals

    drift, diffusion = derive_z_sde()
    return Check.from_residuals(
        "z = artanh(rho) is a diffusion with bounded coefficients",
        "dz = (m~ + rho v^2) dt + v dB at rho = tanh z",
        f"z-drift = {_truncate(str(drift))}, z-diffusion = {_truncate(str(diffusion))}",
        z_sde_residuals(),
        "Ito's lemma for z = artanh(rho), checked by the inverse map rho = tanh z",
    )


def check_equilibria() -> Check:
    """rho = +1 and rho = -1 are equilibria (drift and diffusion vanish).

    Returns
    -------
    Check
        Residuals: drift and variance at :math:`\\rho = \\pm 1`.
    """
    from .symbols import r, rho
    from .two_token import derive_rho_sde

    sde = derive_rho_sde()
    residuals = {
        f"{name}(rho={point})": _simplified(expr.subs(rho, point))
        for point in (1, -1)
        for name, expr in (("m", sde.drift), ("s^2", sde.variance))
    }
    return Check.from_residuals(
        "Equilibria rho = +1 and rho = -1",
        "m(+-1) = 0, s(+-1) = 0",
        f"m(+-1), s^2(+-1) = {list(residuals.values())} (for every r, i.e. every beta, d, "
        "eps, mu)",
        residuals,
        f"both contain the factor 1 - rho^2; r is free ({r} > 0)",
    )


def check_plus_attracting() -> Check:
    """rho = +1 (single cluster) has a negative Lyapunov exponent for all beta, d.

    Returns
    -------
    Check
        Residual: derived - stated :math:`\\lambda_+`.
    """
    from .stability import lyapunov_exponent
    from .symbols import d, eps, mu

    lam = lyapunov_exponent(1)
    stated = -2 * mu - eps**2 * (d - 1)
    return Check.from_residuals(
        "rho = +1 (single cluster) attracting for all beta, d",
        "lambda_+ = -2 mu - eps^2 (d-1) < 0",
        f"lambda_+ = m'(1) - s'(1)^2/2 = {lam}",
        {"lambda_+": _simplified(lam - stated)},
        "geometric-BM linearization; independent of beta; < 0 for d >= 2, eps > 0, mu >= 0",
    )


def check_theorem2() -> Check:
    """Theorem 2: the antipodal pair attracts iff beta > beta_c(d) = arccosh(d-2)/2.

    Returns
    -------
    Check
        Residuals: derived - stated :math:`\\lambda_-`, its pure-noise cosh form, and
        :math:`\\cosh(2\\beta_c)` of the derived root minus :math:`d - 2`.
    """
    from .stability import (
        critical_beta,
        critical_beta_residual,
        difference,
        in_beta,
        lyapunov_exponent,
        pure_noise_lyapunov_minus_cosh_form,
        stated_lyapunov_minus,
    )
    from .symbols import mu

    lam = in_beta(lyapunov_exponent(-1))
    residuals = {
        "lambda_-": difference(lam, stated_lyapunov_minus()),
        "lambda_-(mu=0), cosh form": difference(lam.subs(mu, 0),
                                                pure_noise_lyapunov_minus_cosh_form()),
        "cosh(2 beta_c) - (d - 2)": critical_beta_residual(),
    }
    beta_c = critical_beta() if residuals["cosh(2 beta_c) - (d - 2)"] == 0 else "(no root)"
    return Check.from_residuals(
        "Theorem 2: antipodal attracting iff beta > beta_c(d)",
        "beta_c(d) = 1/2 arccosh(d - 2)",
        f"lambda_- = sigma^2 (d - 2 - cosh 2beta)/cosh^2 beta; root beta_c = {beta_c}",
        residuals,
        "lambda_- = m'(-1) - s'(-1)^2/2 = 4 mu b_- + 2 eps^2 (2(d-1) a_- b_- - 1); root "
        "solved in q = e^{-2 beta}, kept in (0, 1], checked cosh(2 beta_c) = d - 2",
    )


def check_low_dimensions() -> list[Check]:
    """The cases d = 2 and d = 3 (no threshold: antipodal attracts for all beta > 0).

    Returns
    -------
    list of Check
        One row per dimension; residual: derived - stated pure-noise :math:`\\lambda_-`.
    """
    from .stability import in_beta, lyapunov_exponent
    from .symbols import beta, d, eps, mu

    lam = sp.simplify(in_beta(lyapunov_exponent(-1)).subs(mu, 0).rewrite(sp.cosh))
    rows = []
    cases = (
        (
            2,
            "lambda_- < 0 for every beta (no threshold)",
            -(eps**2) * sp.cosh(2 * beta),
            "cosh(2 beta) > 0: the antipodal pair attracts for every beta (d = 2 is outside "
            "arccosh's domain; the project's critical_beta(2) returns 0)",
        ),
        (
            3,
            "lambda_- < 0 iff beta > 0 (beta_c(3) = 0)",
            eps**2 * (1 - sp.cosh(2 * beta)),
            "cosh(2 beta) > 1 iff beta != 0; arccosh(1)/2 = 0",
        ),
    )
    for dim, stated, expected, note in cases:
        t0 = time.perf_counter()
        lam_d = lam.subs(d, dim)
        residual = _simplified((lam_d - expected / sp.cosh(beta) ** 2).rewrite(sp.exp))
        row = Check.from_residuals(
            f"d = {dim} (pure noise)",
            stated,
            f"lambda_- = {sp.simplify(expected / sp.cosh(beta) ** 2)}",
            {"lambda_-": residual},
            note,
        )
        rows.append(Check(**{**row.__dict__, "seconds": time.perf_counter() - t0}))
    return rows


def check_feller() -> Check:
    """Feller classification of rho = -1 from the scale function agrees with the linearization.

    Returns
    -------
    Check
        Residuals: :math:`\\lambda_\\mp` against :math:`v^2 (g \\mp 2)`, the scale exponent
        against :math:`g(-1)/2`, and the pure-noise :math:`g(-1)`.
    """
    from .stability import in_beta, lyapunov_exponent, scale_exponent_at
    from .symbols import beta, d, mu, q, r, rho
    from .two_token import derive_rho_sde, scale_g

    sde = derive_rho_sde()
    g = scale_g()
    g_minus = g.subs({rho: -1, r: q})
    g_plus = g.subs({rho: 1, r: 1})
    v2_minus = sde.reduced_variance.subs({rho: -1, r: q})
    v2_plus = sde.reduced_variance.subs({rho: 1, r: 1})
    pure = sp.simplify(in_beta(g_minus).subs(mu, 0).rewrite(sp.cosh))
    residuals = {
        "lambda_- - v(-1)^2 (g(-1) - 2)": _simplified(lyapunov_exponent(-1)
                                                     - v2_minus * (g_minus - 2)),
        "lambda_+ + v(1)^2 (g(1) + 2)": _simplified(lyapunov_exponent(1)
                                                   + v2_plus * (g_plus + 2)),
        "k(-1) - g(-1)/2": _simplified(scale_exponent_at(-1) - in_beta(g_minus) / 2),
        "g(-1), pure noise": _simplified((pure - (1 + (d - 2) / sp.cosh(2 * beta)))
                                         .rewrite(sp.exp)),
    }
    return Check.from_residuals(
        "Feller boundary classification vs linearization",
        "-1 attracting (S(-1) finite) iff lambda_- < 0",
        "S'(rho) ~ (1+rho)^{-g(-1)/2}, S(-1) finite iff g(-1) < 2; "
        "lambda_- = v(-1)^2 (g(-1) - 2), lambda_+ = -v(1)^2 (g(1) + 2); "
        "pure noise g(-1) = 1 + (d-2) sech(2 beta), "
        f"g(1) = {sp.simplify(g_plus.subs(mu, 0))}",
        residuals,
        "2m/s^2 = g/(1-rho^2) with g = 2 m~/v^2; the exponent of S' at -1 is the limit of "
        "(1+rho) 2m/s^2; v > 0, so the two criteria agree exactly (also at +1: g(1) > -2)",
    )


def check_proposition1() -> Check:
    """Proposition 1: the exact hybrid threshold set beside the paper's eps = sqrt(2 e^-beta).

    Returns
    -------
    Check
        Residual: :math:`\\lambda_-(\\mu=0) + 2\\varepsilon^2\\cdot` denominator (must vanish).
        Paper: :math:`\\lim_{\\beta\\to\\infty}` derived/paper - 1 (non-zero: the documented
        MISMATCH). Reconcile: the halved-logit convention gives the paper's asymptotic for
        :math:`\\mu = 1`, and the ratio to the paper tends to 0 (no rescaling fixes it).
    """
    from .stability import critical_beta, hybrid_threshold, in_beta, lyapunov_exponent
    from .symbols import beta, eps, mu, q

    eps2, denominator = hybrid_threshold()
    # lambda_-(mu = 0) = -2 eps^2 * denominator: the denominator changes sign exactly at
    # beta_c(d), so the threshold exists iff beta > beta_c(d).
    den_residual = _simplified(lyapunov_exponent(-1).subs(mu, 0) + 2 * eps**2 * denominator)
    derived = in_beta(eps2)
    asym = sp.limit(eps2 / q, q, 0)  # eps^2 e^{2 beta} as beta -> oo
    paper = 2 * sp.exp(-beta)
    ratio = sp.limit(derived / paper, beta, sp.oo)
    # Convention change beta -> beta/2 (logits softmax(beta <x, y> / 2)).
    halved = derived.subs(beta, beta / 2)
    asym_halved = sp.limit(halved * sp.exp(beta), beta, sp.oo)
    # The same change applied to Theorem 2: cosh(2 (beta/2)) = d - 2.
    beta_c_halved = 2 * critical_beta()
    return Check.from_residuals(
        "Proposition 1: hybrid threshold (two tokens)",
        "eps = sqrt(2 e^{-beta})  (paper, Figure 4), i.e. eps^2 = 2 e^{-beta}",
        f"antipodal attracting iff eps^2 > {sp.factor(eps2)}, q = e^{{-2 beta}} "
        f"(denominator > 0 iff beta > beta_c(d)); large beta: eps^2 ~ {asym} e^{{-2 beta}}",
        {"lambda_-(mu=0) + 2 eps^2 denominator": den_residual},
        "exact eps^2 = 2 mu b_-/(1 - 2(d-1) a_- b_-), b_- = 1/(1+e^{2 beta}); derived/paper "
        f"-> {ratio} (exponent e^{{-2 beta}} vs e^{{-beta}}: no rescaling of eps or mu fixes "
        "it). Logits softmax(beta<x,y>/2) (beta -> beta/2) give eps^2 ~ "
        f"{asym_halved} e^{{-beta}}, the paper's curve for mu = 1, but the same change turns "
        f"Theorem 2 into beta_c(d) = {beta_c_halved}, contradicting beta_c = 1/2 arccosh(d-2).",
        paper={"lim derived/paper - 1": _simplified(ratio - 1)},
        # No rescaling eps -> c eps or mu -> c mu can: the ratio to the paper tends to 0
        # (not a constant), for every constant c.
        reconcile={
            "halved logits, mu = 1: lim eps^2 e^beta - 2": _simplified(asym_halved.subs(mu, 1)
                                                                       - 2),
            "lim derived/paper (0: no rescaling fixes it)": ratio,
        },
    )


def check_formations() -> Check:
    """Formations (k tokens at x, n - k at y): the reduction to two tokens and the boundary.

    Returns
    -------
    Check
        Residuals: formation minus two-token drift and variance for ``n = 2, k = 1`` and for
        balanced formations ``n = 2k``; the Lyapunov exponent at -1 for ``n = 2, k = 1``
        minus the two-token one; :math:`4a_0/b_1 - (d-1)` (squared Bessel dimension).
    """
    from .formation import (
        bessel_dimension_residual,
        derive_formation_sde,
        formation_lyapunov_minus,
        formation_threshold,
    )
    from .stability import lyapunov_exponent
    from .symbols import k_cluster, n_tokens, q
    from .two_token import derive_rho_sde

    sde, two = derive_formation_sde(), derive_rho_sde()
    residuals = {}
    for label, sizes in (("n=2, k=1", {n_tokens: 2, k_cluster: 1}),
                         ("n=2k", {n_tokens: 2 * k_cluster})):
        residuals[f"{label} drift"] = sp.cancel(sp.together(sde.drift.subs(sizes) - two.drift))
        residuals[f"{label} variance"] = sp.cancel(sp.together(sde.variance.subs(sizes)
                                                               - two.variance))
    residuals["n=2, k=1 lambda_-"] = sp.cancel(sp.together(
        formation_lyapunov_minus().subs({n_tokens: 2, k_cluster: 1}) - lyapunov_exponent(-1)))
    residuals["4 a0/b1 - (d-1)"] = bessel_dimension_residual()
    eps2, _ = formation_threshold()
    asym = sp.factor(sp.limit(eps2 / q, q, 0))
    return Check.from_residuals(
        "Formations of n tokens (k at x, n-k at y)",
        "a formation stays a formation; n = 2 (and n = 2k) is the two-token SDE",
        "rho = <x, y> is a 1-D diffusion with multiplicity-weighted attention; for n != 2k, "
        "rho = -1 is not an equilibrium: near it a squared Bessel process of dimension d-1; "
        f"inter-cluster threshold eps^2 ~ {asym} e^{{-2 beta}}",
        residuals,
        "the two-token derivation with attention weights k/(k+(n-k)r), ... "
        "(proofs_check.formation), expanded at rho = -1 with dr/drho = beta r",
    )


def check_cluster_absorption() -> Check:
    """Certified absorption near the single cluster of n tokens (proofs_check.cluster).

    Returns
    -------
    Check
        Residuals: the exact identities for the gap V (n = 3, generic Gram matrix and
        attention), the bounds at V = 0 against the two-token linearization, the sign checks
        of their monotonicity; non-zero: B_p(0) just above p_max (no certificate there).
    """
    from .cluster import (
        above_p_max,
        gap_identity_residuals,
        linearization_residuals,
        monotonicity_signs,
    )
    from .symbols import eps

    residuals = {**gap_identity_residuals(3), **linearization_residuals()}
    residuals.update({label: sp.Integer(0 if ok else 1)
                      for label, ok in monotonicity_signs().items()})
    residuals["B_p(0) at p_max + 1/100 - eps^2/50 (> 0: none above)"] = sp.simplify(
        above_p_max() - eps**2 / 50)
    return Check.from_residuals(
        "Cluster absorption, n tokens: V^p a supermartingale on {V <= v_1}",
        "L V <= V h(V), eps^2 V^2 g_+(V)^2 <= Gamma(V) <= eps^2 V^2 G(V)^2; B_p increasing",
        "V = sum_{i<j} (1 - rho_ij): L V and Gamma(V) exact (pairwise form, sum_i P_i S), "
        "h(0) = -(d-3) eps^2 - 2 mu, eps^2 g(0)^2 = 4 eps^2 (two tokens at rho = 1, free of "
        "beta); p_max = (d-1)/2 + mu/eps^2",
        residuals,
        "Ito's lemma on every rho_ij of the derived limit SDE; softmax differences "
        "<= e^(6 beta V) - 1; sign checks with V = 1/(1+t), d = 3 + delta, n = 2 + nu",
        nonzero={"B_p(0) at p_max + 1/100": above_p_max()},
    )


def check_two_cluster_tightness() -> Check:
    """Tight clusters of a two-cluster configuration stay tight (proofs_check.two_clusters).

    Returns
    -------
    Check
        Residuals: the exact drift and carre du champ of one pair among four generic
        tokens, the bounds at K = 0, a = 1, v = 0 against the two-token linearization, the
        exponents at B_p = 0, the attention bounds without another cluster; sign checks of
        the bounds' direction.
    """
    from .two_clusters import bound_signs, linearization_residuals, pair_identity_residuals

    residuals = {**pair_identity_residuals(4), **linearization_residuals()}
    residuals.update({label: sp.Integer(0 if ok else 1) for label, ok in bound_signs().items()})
    return Check.from_residuals(
        "Two clusters: every within-cluster u^p a supermartingale on {all within u < v}",
        "L u <= u h, eps^2 u^2 g^2 <= Gamma(u) <= eps^2 u^2 G^2 uniformly in the clusters' "
        "angle; P(spread ever reaches v) <= sum over pairs (u/v)^p",
        "one pair u = 1 - rho_01 of four tokens, generic Gram matrix and attention: L u and "
        "Gamma(u) exact (pair form); h(K=0, a=1) = -(d-3) eps^2 - 2 mu, eps^2 g^2 = "
        "eps^2 G^2 = 4 eps^2 (two tokens at rho = 1)",
        residuals,
        "Ito's lemma on rho_01 of the derived limit SDE; softmax derivative = beta Cov_w(X); "
        "K, a bounded on cells of x = beta (1 - rho_ib), each factor at its worst end",
    )


def check_cone_absorption() -> Check:
    """Constant weights: the tokens' cone only shrinks (proofs_check.cone).

    Returns
    -------
    Check
        Residuals: the lemma's two identities for 3 and 4 explicit vectors in R^3; the sign
        checks of their right-hand sides and of the noiseless layer's coefficients.
    """
    from .cone import cone_identity_residuals, cone_signs

    residuals = {**cone_identity_residuals(3, 3), **cone_identity_residuals(4, 3)}
    for n in (3, 4):
        residuals.update({label: sp.Integer(0 if ok else 1)
                          for label, ok in cone_signs(n).items()})
    return Check.from_residuals(
        "Constant weights V = Id: min rho_ij never decreases (tight clusters stay single)",
        "rho_ij >= c >= 0 for all i, j  =>  cos(u, v) >= c on the tokens' cone",
        "Y_i = sum_j (delta_ij + h w_ij) X_j, coefficients > 0; <u,v> - c sum a sum b = "
        "sum a_i b_j (rho_ij - c), (sum a)^2 - |u|^2 = sum_{i!=j} a_i a_j (1 - rho_ij)",
        residuals,
        "exact in any beta, h = 1/sqrt(L) and depth; absorbed once max (1 - rho_ij) < tol/2 "
        "(margin tol/2 against rounding); with noise the cone is not invariant",
    )


# Beyond the paper: the diffusion-limit engine (proofs_check.layers)


def check_engine() -> list:
    """Report rows: the paper's layer re-derived by :func:`proofs_check.engine.diffusion_limit`."""
    rows = []
    for claim, stated, derived, residuals, note in (
        ("Engine: Theorem 1 re-derived (paper's layer through diffusion_limit)",
         "engine(paper's layer) = derive_limit_span = stated closed form",
         "drift -(d-1)/2 eps^2 |A_i|^2 X_i + mu P_i A_i, covariance eps^2 <A_i,A_j> P_i P_j",
         layers.engine_theorem1_residuals,
         "diffusion_limit(lambda x: [s * (V @ a) for a in A], n), V = GaussianMatrix(std=eps, "
         "mean=mu*s), generic attention weights, n = 1, 2, 3, d symbolic; |X_i|^2 constant"),
        ("Engine: two-token SDE and Lyapunov exponents of the paper's layer",
         "rho_sde(paper_layer) = derive_rho_sde; lyapunov_at = lyapunov_exponent",
         "same drift, variance, lambda_+, lambda_- (in rho, exp(beta rho) kept)",
         layers.engine_rho_residuals,
         "Ito's lemma on the engine's limit; lambda by direct differentiation in rho"),
    ):
        t0 = time.perf_counter()
        row = Check.from_residuals(claim, stated, derived, residuals(), note)
        rows.append(type(row)(**{**row.__dict__, "seconds": time.perf_counter() - t0}))
    return rows


def check_layernorm():
    """Report row: LayerNorm's limit and threshold."""
    sde = layers.two_token("layer")
    lam = layers.lyapunov_at(sde, -1)
    beta_c, _ = layers.critical_beta_of(lam)
    return Check.from_residuals("LayerNorm: two-token SDE and beta_c^LN(d)",
                "beta_c^LN(d) = beta_c(d-1) = 1/2 arccosh(d-3) (issue's guess)",
                f"rho-SDE(d) = RMS rho-SDE(d-1) exactly; lambda_-^LN root beta_c = {beta_c}",
                layers.layernorm_residuals(),
                "normalization='layer': N(y) = Py/|Py|, P = I - 11^T/d; tokens on the sphere "
                "of 1^perp; the derived root satisfies cosh(2 beta_c) = d - 3")


def check_heads():
    """Report row: two heads."""
    return Check.from_residuals("Two heads: rho-SDE, time rescaling, phase boundary",
                "boundary sech^2 beta_1 + sech^2 beta_2 = 4/(d-1)",
                "drift and variance add over heads; beta_1 = beta_2: one head at 2 eps^2 "
                "(time x 2, same outcomes, same beta_c); lambda_- = eps^2((d-1)(sech^2 "
                "beta_1 + sech^2 beta_2) - 4)",
                layers.heads_residuals(),
                "heads_layer([beta_1, beta_2]): independent V_1, V_2 shared by the tokens")


def check_mlp():
    """Report row: the residual MLP block."""
    return Check.from_residuals("MLP block: rho-SDE; rho = -1 is no longer an equilibrium",
                "arc-cosine covariance gamma^2 kappa(rho) I; does the transition survive?",
                "m += gamma^2(-(d-1) rho/2 + kappa (d-2+rho^2)), s^2 += 2 gamma^2 (1-rho^2)"
                "(1/2 - rho kappa); m(-1) = (d-1) gamma^2/2 > 0: near -1 a squared Bessel "
                "process of dimension d-1 (entrance, never reached for d >= 3): "
                "P(antipodal) = 0 for every beta when gamma > 0; lambda_+ = -(d-1) eps^2 - "
                "gamma^2",
                layers.mlp_residuals(),
                "kappa derived by Gaussian integration (relu_kernel); limits at rho = +-1 in "
                "rho = +-cos(theta)")


def check_finite_depth() -> Check:
    """Finite depth: one layer to O(h^2), the operator L_1 of the network and of the reduced chain.

    Returns
    -------
    Check
        Residuals of :func:`proofs_check.finite_depth.finite_depth_residuals`.
    """
    from .finite_depth import finite_depth_residuals, network_rho_operator, reduced_z_operator

    coefficients = network_rho_operator()
    reduced = reduced_z_operator()
    # the coefficients are large rational functions: printed as derived, truncated
    derived = ", ".join(f"c_{k} = {_truncate(str(c), 160)}"
                        for k, c in enumerate(coefficients, start=1))
    return Check.from_residuals(
        "Finite depth: E[phi(rho')] = phi + h L phi + h^2 (L^2/2 + L_1) phi + O(h^3)",
        "h-moments of one layer = the limit rho-SDE; L_1 of order <= 4, zero at rho = +-1; "
        "reduced chain: Euler's L_1 (c_4 = -v^4/12 for +-1 increments)",
        f"network, in rho: {derived}; reduced, in z: c_4 = {sp.factor(reduced[3])}",
        finite_depth_residuals(),
        "one layer expanded to s^4 (s = h^(1/2)): Isserlis in the plane of the tokens, Wishart "
        "moments (d symbolic) outside it; witness: the 16 explicit entries of G at d = 4, "
        "rho = 3/5, r = 1/2; z-form by the moments of dz and again by the chain rule",
    )


def check_first_passage() -> Check:
    """Mean exit times of Brownian motion on the sphere from caps and bands, from the generator.

    Returns
    -------
    Check
        Residuals of :func:`proofs_check.first_passage.exit_time_residuals`.
    """
    from .first_passage import DIMENSIONS, exit_time_residuals

    return Check.from_residuals(
        "First passage: mean exit times of Brownian motion on S^(d-1) (generator Delta/2)",
        "cap from the pole: S^2 -4 ln cos(alpha/2), S^4 -(4/3) ln cos(alpha/2) + "
        "tan^2(alpha/2)/3, S^1 alpha^2; band |z| < h on S^2 from the equator -ln(1 - h^2)",
        f"u solves (1/2)((1-z^2) u'' - (d-1) z u') = -1, u = 0 on the boundary, bounded at the "
        f"pole (d in {DIMENSIONS})",
        exit_time_residuals(),
        "generator of z = <Y, e> from the Laplacian of phi(y_d/|y|) (d = 3, 4, 5) and by Ito's "
        "lemma (d symbolic); integrating factor (1-z^2)^((d-1)/2) (proofs_check.first_passage)",
    )


CHECKS: tuple[Callable[[], Check | list[Check]], ...] = (
    check_theorem1_drift,
    check_theorem1_diffusion,
    check_stratonovich,
    check_sphere_supported,
    check_two_token_sde,
    check_z_sde,
    check_equilibria,
    check_plus_attracting,
    check_theorem2,
    check_low_dimensions,
    check_feller,
    check_proposition1,
    check_formations,
    check_cluster_absorption,
    check_two_cluster_tightness,
    check_cone_absorption,
    check_engine,
    check_layernorm,
    check_heads,
    check_mlp,
    check_finite_depth,
    check_first_passage,
)


def run_checks() -> list[Check]:
    """Run every derivation of the report.

    Returns
    -------
    list of Check
        One row per claim, in the paper's order. A derivation that raises becomes a FAIL
        row carrying the exception.
    """
    rows: list[Check] = []
    for check in CHECKS:
        t0 = time.perf_counter()
        try:
            out = check()
        except Exception as exc:  # a broken derivation is a FAIL row, not a crash
            out = Check(check.__name__, "", f"{type(exc).__name__}: {exc}", FAIL,
                        residuals={"exception": sp.Symbol(type(exc).__name__)})
        elapsed = time.perf_counter() - t0
        if isinstance(out, Check):
            out = [Check(**{**out.__dict__, "seconds": elapsed})]
        rows.extend(out)
    return rows


def format_report(rows: list[Check], fmt: str = "text") -> str:
    """Format report rows as plain text or as a Markdown table.

    A FAIL row shows what is left: each non-zero residual (truncated if huge); a MISMATCH
    row shows its paper residual. The text form ends with the tally line
    ``PASS: <n>, FAIL: <n>, MISMATCH: <n>``.

    Parameters
    ----------
    rows : list of Check
        The rows of :func:`run_checks`.
    fmt : {"text", "markdown"}
        Plain text (one block per row) or a Markdown table.

    Returns
    -------
    str
    """
    if fmt == "markdown":
        lines = ["| Claim | Stated | Derived | Status |", "| --- | --- | --- | --- |"]
        for row in rows:
            derived = row.derived
            if row.status == FAIL and row.failures():
                derived += "; " + "; ".join(f"{k} = {v}" for k, v in row.failures())
            cells = [row.claim, row.stated, derived, row.status]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        return "\n".join(lines)
    if fmt != "text":
        raise ValueError(f"fmt must be 'text' or 'markdown', got {fmt!r}")
    width = max(len(row.claim) for row in rows)
    lines = [f"{'claim':<{width}}  {'status':<8}  time", "-" * (width + 20)]
    for row in rows:
        lines.append(f"{row.claim:<{width}}  {row.status:<8}  {row.seconds:5.1f}s")
        lines.append(f"    stated : {row.stated}")
        lines.append(f"    derived: {row.derived}")
        if row.note:
            lines.append(f"    how    : {row.note}")
        if row.status != PASS:
            for label, text in row.failures():
                lines.append(f"    {label} = {text}")
    counts = {s: sum(row.status == s for row in rows) for s in (PASS, FAIL, MISMATCH)}
    lines.append("-" * (width + 20))
    lines.append(", ".join(f"{k}: {v}" for k, v in counts.items()))
    return "\n".join(lines)


def exit_code(rows: list[Check]) -> int:
    """The exit status of ``python -m proofs_check``.

    Parameters
    ----------
    rows : list of Check

    Returns
    -------
    int
        1 when any row FAILs (a MISMATCH with the paper is a finding, not a failure), else 0.
    """
    return int(any(row.status == FAIL for row in rows))
