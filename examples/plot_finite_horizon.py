r"""
The phase transition at a finite horizon
========================================

The probability that two tokens end antipodal is a limit :math:`t\to\infty`
(:func:`spheresde.two_token.antipodal_probability`): 0 for
:math:`\beta\le\beta_c(d)`, positive above. A simulation stops at a depth-time
:math:`T` and classifies :math:`\rho_T = \langle X_1, X_2\rangle` with a tolerance:
antipodal if :math:`\rho_T < -0.99`. Near :math:`\beta_c(d)` the antipodal end attracts
or repels at a rate close to zero, so at any finite :math:`T` some pairs still sit near
:math:`\rho = -1` and count as antipodal, and the transition is smeared.

:func:`spheresde.two_token.outcome_probabilities` gives the law at :math:`T` exactly (to
:math:`10^{-5}`), from the Kolmogorov equation of the diffusion of
:math:`z = \operatorname{artanh}\rho` (:doc:`/theory/two_tokens`). Here: how the curve
sharpens toward the limit as :math:`T` grows, at a few dimensions.
"""

# %%
# The law at several horizons
# ---------------------------
# One call per horizon and dimension; all values of :math:`\beta` are one call (the
# arguments broadcast). Each point solves the Kolmogorov equation once, exactly in
# time, so a larger :math:`T` costs no more.
import matplotlib.pyplot as plt
import numpy as np

from spheresde import two_token

dims = (4, 6, 8)
horizons = (10.0, 50.0, 500.0)
betas = np.linspace(0.0, 2.5, 26)
fine = np.linspace(0.0, 2.5, 200)
laws = {(d, T): two_token.outcome_probabilities(betas, d, horizon=T)
        for d in dims for T in horizons}
limits = {d: two_token.antipodal_probability(fine, d) for d in dims}

# %%
# Near :math:`\beta_c` the horizon matters most. At :math:`d = 6`, :math:`\beta = 1`
# (just below :math:`\beta_c(6) = 1.032`), the limit is 0 but a fraction of pairs is
# still antipodal at :math:`T = 500`; a 40,000-trajectory Monte Carlo at that horizon
# measures :math:`0.00075 \pm 0.00014`.
for d, beta in ((6, 1.0), (8, 1.25)):
    at_500 = two_token.outcome_probabilities(beta, d, horizon=500.0)
    limit = two_token.antipodal_probability(beta, d)
    print(f"d = {d}, beta = {beta}: beta_c = {float(two_token.critical_beta(d)):.4f}, "
          f"P(antipodal at T = 500) = {float(at_500.antipodal):.5f} "
          f"(undecided {float(at_500.undecided):.1e}), limit t -> inf = {float(limit):.5f}")

# %%
# The curves
# ----------
# Solid: the antipodal probability at each horizon; shaded above it, the undecided mass,
# which may still end either way; black: the limit; dashed: :math:`\beta_c(d)`. The
# lower row is the same on a logarithmic scale, where the smearing below
# :math:`\beta_c(d)` shows.
fig, axes = plt.subplots(2, len(dims), figsize=(11, 6.4), sharex=True, sharey="row")
shades = plt.get_cmap("viridis")(np.linspace(0.15, 0.85, len(horizons)))
for column, d in enumerate(dims):
    for ax in axes[:, column]:
        for T, color in zip(horizons, shades, strict=True):
            law = laws[d, T]
            ax.plot(betas, law.antipodal, color=color, lw=1.6, label=f"T = {T:g}")
            ax.fill_between(betas, law.antipodal, law.antipodal + law.undecided, color=color,
                            alpha=0.2, lw=0)
        ax.plot(fine, limits[d], color="black", lw=1, label=r"$t\to\infty$")
        ax.axvline(float(two_token.critical_beta(d)), color="gray", ls="--", lw=1)
    axes[0, column].set_title(f"d = {d}")
    axes[1, column].set_yscale("log")
    axes[1, column].set_ylim(1e-6, 1)
    axes[1, column].set_xlabel(r"inverse temperature $\beta$")
axes[0, 0].set_ylabel(r"P(antipodal at $T$)")
axes[1, 0].set_ylabel("same, log scale")
axes[0, 0].legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
# Far above :math:`\beta_c(d)` even :math:`T = 10` is close to the limit (the
# antipodal end attracts fast there, and little mass is undecided). Near and below
# :math:`\beta_c(d)` the rate of attraction of :math:`\rho = -1`, the Lyapunov
# exponent :math:`\lambda_-`, vanishes or is small, and the finite-horizon probability
# stays well above the limit's 0 even at :math:`T = 500`: orders of magnitude above on
# the log scale, the tail that a Monte Carlo at the paper's horizon measures.
