r"""Beyond the paper's layer: LayerNorm, several heads, a residual MLP block, by the engine.

Each layer is written once, as the map of :mod:`proofs_check.engine`, and every result
below is derived from it (nothing is assumed):

- :func:`paper_layer`: :math:`Y_i = X_i + s V A_i`, :math:`V = \mu s I + \varepsilon G`
  (Theorem 1 again, through the engine).
- LayerNorm (``normalization="layer"``): the two-token SDE in dimension ``d`` is the RMS
  one in dimension ``d - 1`` (:func:`layernorm_residuals`), so
  :math:`\beta_c^{LN}(d) = \tfrac12\operatorname{arccosh}(d-3)`.
- :func:`heads_layer`: :math:`A = \sum_h V_h A_{\beta_h}` with independent :math:`V_h`.
  Drift and variance of :math:`\rho` are sums over heads, so are the Lyapunov exponents:
  :math:`\lambda_- = \varepsilon^2\sum_h((d-1)\operatorname{sech}^2\beta_h - 2)`.
- :func:`mlp_layer`: :math:`+\,W_2\,\mathrm{relu}(W_1X)` with scale :math:`\gamma`;
  its noise does not vanish at :math:`\rho = -1`, which stops being an equilibrium.
"""

from __future__ import annotations

import functools

import sympy as sp

from .engine import (
    AbstractNormalization,
    GaussianMatrix,
    ReLUMLP,
    TwoTokenSDE,
    canonical,
    is_zero,
    lyapunov_at,
    normalization,
    rho_sde,
    softmax,
    value_at,
)
from .symbols import beta, d, eps, mu, q, rho, s

#: Inverse temperatures of two heads, and the MLP's weight scale gamma = sigma_1 sigma_2.
beta1, beta2 = sp.symbols("beta_1 beta_2", nonnegative=True)
gamma = sp.Symbol("gamma", positive=True)


def paper_layer(inverse_temperature: sp.Expr = beta):
    r"""The paper's layer :math:`\delta_i = s V A_i`, :math:`V = \mu s I + \varepsilon G`."""
    V = GaussianMatrix("V", std=eps, mean=mu * s)
    return lambda x: [s * (V @ a) for a in softmax(x, inverse_temperature)]


def heads_layer(betas):
    r""":math:`\delta_i = s\sum_h V_h A_{\beta_h, i}`, independent :math:`V_h` with
    :math:`N(0, \varepsilon^2)` entries (pure noise), shared by the tokens."""
    heads = [GaussianMatrix(f"V_{h}", std=eps) for h in range(len(betas))]

    def layer(x):
        out = None
        for V, b in zip(heads, betas, strict=True):
            term = [s * (V @ a) for a in softmax(x, b)]
            out = term if out is None else [u + v for u, v in zip(out, term, strict=True)]
        return out

    return layer


def mlp_layer():
    r""":math:`\delta_i = s(V A_i + W_2\,\mathrm{relu}(W_1 X_i))` (pure noise, MLP scale
    :math:`\gamma`)."""
    V = GaussianMatrix("V", std=eps)
    mlp = ReLUMLP("MLP", scale=gamma)
    return lambda x: [s * (V @ a) + s * mlp(xi) for a, xi in zip(softmax(x, beta), x,
                                                                 strict=True)]


@functools.cache
def two_token(kind: str) -> TwoTokenSDE:
    r"""The derived :math:`\rho`-SDE of ``kind`` in {"rms", "layer", "heads", "mlp",
    "head 1", "head 2"} (heads: pure noise, inverse temperatures ``beta_1``, ``beta_2``)."""
    if kind in ("rms", "layer"):
        return paper_rho_sde(normalization(kind))
    layers = {"heads": (heads_layer([beta1, beta2]), "rms"),
              "head 1": (paper_layer(beta1), "rms"), "head 2": (paper_layer(beta2), "rms"),
              "mlp": (mlp_layer(), "rms")}
    return rho_sde(*layers[kind])


@functools.cache
def paper_rho_sde(norm: AbstractNormalization) -> TwoTokenSDE:
    r"""The derived :math:`\rho`-SDE of the paper's layer under the normalization ``norm``."""
    return rho_sde(paper_layer(), norm)


def _zero(expr: sp.Expr) -> sp.Expr:
    return canonical(expr)


def critical_beta_of(lam: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
    r"""Solve :math:`\lambda_-(\beta) = 0` for :math:`q = e^{-2\beta}` (pure noise).

    Returns
    -------
    beta_c, cosh_2beta_c : sympy.Expr
        The root :math:`-\tfrac12\log q` of the one root in :math:`(0, 1)` (checked at
        ``d = 7``) and :math:`\cosh 2\beta_c`, simplified.
    """
    lam_q = sp.simplify(lam.subs(mu, 0).rewrite(sp.exp).subs(beta, -sp.log(q) / 2))
    roots = sp.solve(sp.numer(sp.together(lam_q)), q)
    small = [x for x in roots if 0 < x.subs(d, 7).evalf() < 1]
    if len(small) != 1:
        raise AssertionError(f"expected one root in (0, 1), got {roots}")
    beta_c = -sp.log(small[0]) / 2
    cosh2 = sp.radsimp(sp.expand(sp.cosh(2 * beta_c).rewrite(sp.exp)))
    return beta_c, sp.simplify(cosh2)


def engine_theorem1_residuals() -> dict:
    r"""The paper's layer through the engine minus :func:`proofs_check.limit.derive_limit_span`
    and minus the stated closed form, ``n = 1, 2, 3`` tokens with generic attention
    weights, drift and covariance; the manifold residuals. All zero."""
    from .engine import diffusion_limit, manifold_residuals
    from .limit import derive_limit_span, generic_span, stated_limit_span

    V = GaussianMatrix("V", std=eps, mean=mu * s)
    out = {}
    for n in (1, 2, 3):
        span, att = generic_span(n)

        def layer(x, n=n, att=att):
            return [s * (V @ sum((x[j] * a.coeffs[j] for j in range(n)), x[0] * 0))
                    for a in att]

        lim = diffusion_limit(layer, n)
        for name, ref in (("derive_limit_span", derive_limit_span(span, att)),
                          ("stated", stated_limit_span(span, att))):
            out[f"n={n} drift - {name}"] = [(lim.drift[i] - ref.drift[i]).residual()
                                            for i in range(n)]
            out[f"n={n} covariance - {name}"] = [(lim.covariance[k] - ref.covariance[k])
                                                 .residual() for k in ref.covariance]
        out[f"n={n} manifold"] = manifold_residuals(lim)
    return out


def engine_rho_residuals() -> dict:
    r"""Engine's two-token SDE and Lyapunov exponents (paper's layer) minus
    :mod:`proofs_check.two_token` / :mod:`proofs_check.stability`. All zero."""
    from .stability import lyapunov_exponent
    from .two_token import derive_rho_sde, r_of_rho

    ref, sde = derive_rho_sde(), two_token("rms")
    return {
        "drift": _zero(sde.drift - ref.in_rho(ref.drift)),
        "variance": _zero(sde.variance - ref.in_rho(ref.variance)),
        "lambda_+": _zero(lyapunov_at(sde, 1) - lyapunov_exponent(1)),
        "lambda_-": _zero(lyapunov_at(sde, -1)
                          - lyapunov_exponent(-1).subs(q, r_of_rho(-1))),
    }


def layernorm_residuals() -> dict:
    r"""LayerNorm: the limit lives on the sphere of :math:`u^\perp`, its two-token SDE at
    ``d`` is the RMS one at ``d - 1``, and :math:`\cosh 2\beta_c^{LN} = d - 3`."""
    from .engine import diffusion_limit, manifold_residuals

    rms, ln = two_token("rms"), two_token("layer")
    _, cosh2 = critical_beta_of(lyapunov_at(ln, -1))
    return {
        "manifold (n=2, generic Gram)": manifold_residuals(diffusion_limit(paper_layer(), 2,
                                                                           "layer")),
        "drift(d) - drift_RMS(d-1)": _zero(ln.drift - rms.drift.subs(d, d - 1)),
        "variance(d) - variance_RMS(d-1)": _zero(ln.variance - rms.variance.subs(d, d - 1)),
        "cosh(2 beta_c^LN) - (d - 3)": sp.simplify(cosh2 - (d - 3)),
    }


@functools.cache
def layernorm_rms_dimension() -> sp.Expr:
    r"""The dimension :math:`d'` of the RMS network whose two-token SDE is LayerNorm's at
    ``d``: :func:`rms_dimension` of LayerNorm, :math:`d' = d - 1`, returned only when
    :func:`layernorm_residuals` vanish too.

    Examples
    --------
    >>> layernorm_rms_dimension()
    d - 1
    """
    residuals = layernorm_residuals()
    if not is_zero(residuals):
        raise AssertionError(f"LayerNorm's rho-SDE is not the RMS one at d - 1: {residuals}")
    return rms_dimension(normalization("layer"))


@functools.cache
def rms_dimension(norm: AbstractNormalization) -> sp.Expr:
    r"""The dimension :math:`d'` of the RMS network whose two-token SDE (the paper's
    layer) is the one under ``norm`` at ``d``: a normalization that removes
    :math:`k` fixed directions leaves the tokens a sphere of :math:`k` fewer dimensions,
    :math:`d' = d - k`, returned only when drift and variance are the RMS ones at
    :math:`d'` (LayerNorm: :math:`d - 1`, the one place the numerics read it from).

    Raises
    ------
    AssertionError
        If the derived SDE is not the RMS one at :math:`d - k`.

    Examples
    --------
    >>> rms_dimension(normalization("rms"))
    d
    """
    d_prime = d - norm.directions
    rms, other = two_token("rms"), paper_rho_sde(norm)
    residuals = {"drift": _zero(other.drift - rms.drift.subs(d, d_prime)),
                 "variance": _zero(other.variance - rms.variance.subs(d, d_prime))}
    if not is_zero(residuals):
        raise AssertionError(f"the rho-SDE under {norm.name!r} is not the RMS one at "
                             f"{d_prime}: {residuals}")
    return d_prime


def heads_residuals() -> dict:
    r"""Two heads: drift and variance are the sums of the one-head ones; with
    :math:`\beta_1 = \beta_2` the SDE is the one-head SDE at :math:`2\varepsilon^2` (time
    :math:`\times 2`); :math:`\lambda_-` is the stated sum of sech terms."""
    both, one, two = two_token("heads"), two_token("head 1"), two_token("head 2")
    lam = lyapunov_at(both, -1)
    stated = eps**2 * ((d - 1) * (sp.sech(beta1) ** 2 + sp.sech(beta2) ** 2) - 4)
    equal = {beta1: beta, beta2: beta}
    rms = two_token("rms")
    return {
        "drift - sum of heads": _zero(both.drift - (one.drift + two.drift).subs(mu, 0)),
        "variance - sum of heads": _zero(both.variance - one.variance - two.variance),
        "equal betas: drift - 1 head at 2 eps^2": _zero(
            both.drift.subs(equal) - rms.drift.subs({mu: 0, eps: sp.sqrt(2) * eps})),
        "equal betas: variance - 1 head at 2 eps^2": _zero(
            both.variance.subs(equal) - rms.variance.subs({mu: 0, eps: sp.sqrt(2) * eps})),
        "lambda_- - eps^2((d-1)(sech^2 b1 + sech^2 b2) - 4)": _zero(lam - stated),
    }


def mlp_residuals() -> dict:
    r"""The MLP block: drift and variance minus the stated closed form; +1 is still an
    equilibrium with :math:`\lambda_+ = -(d-1)\varepsilon^2 - \gamma^2`; at :math:`-1` the
    drift is :math:`(d-1)\gamma^2/2` and :math:`s^2 \sim 2\gamma^2(1+\rho)`: a squared
    Bessel process of dimension :math:`\delta = d - 1`."""
    from .engine import relu_kernel

    sde, rms = two_token("mlp"), two_token("rms")
    kappa = relu_kernel()
    stated_drift = rms.drift.subs(mu, 0) + gamma**2 * (-(d - 1) * rho / 2
                                                       + kappa * (d - 2 + rho**2))
    stated_var = rms.variance + 2 * gamma**2 * (1 - rho**2) * (sp.Rational(1, 2) - rho * kappa)
    drift_minus = sp.simplify(sde.drift.subs(rho, -1))
    slope = value_at(sde.variance / (1 + rho), -1)
    return {
        "drift - stated": _zero(sde.drift - stated_drift),
        "variance - stated": _zero(sde.variance - stated_var),
        "kappa - arc-cosine kernel": sp.simplify(
            kappa - (sp.sqrt(1 - rho**2) + (sp.pi - sp.acos(rho)) * rho) / (2 * sp.pi)),
        "m(+1), s^2(+1)": [sp.simplify(sde.drift.subs(rho, 1)),
                           sp.simplify(sde.variance.subs(rho, 1))],
        "lambda_+ + (d-1) eps^2 + gamma^2": sp.simplify(lyapunov_at(sde, 1)
                                                         + (d - 1) * eps**2 + gamma**2),
        "m(-1) - (d-1) gamma^2/2": sp.simplify(drift_minus - (d - 1) * gamma**2 / 2),
        "lim s^2/(1+rho) at -1 - 2 gamma^2": sp.simplify(slope - 2 * gamma**2),
        "BESQ dimension 4 m(-1)/slope - (d-1)": sp.simplify(4 * drift_minus / slope - (d - 1)),
    }


__all__ = ["beta1", "beta2", "critical_beta_of", "engine_rho_residuals",
           "engine_theorem1_residuals", "gamma", "heads_layer", "heads_residuals",
           "layernorm_residuals", "layernorm_rms_dimension", "mlp_layer", "mlp_residuals",
           "paper_layer", "two_token"]
