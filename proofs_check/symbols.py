r"""The symbols shared by the derivations, defined once with their assumptions.

SymPy tells symbols apart by name **and** assumptions: ``Symbol("d")`` and
``Symbol("d", integer=True, positive=True)`` are different symbols, and an identity
between expressions built from the two would silently fail. Every module of
:mod:`proofs_check` therefore imports its symbols from here.

========= ============================ ===================================================
name      SymPy name (assumptions)     meaning
========= ============================ ===================================================
``s``     ``s`` (positive)             :math:`h^{1/2} = L^{-1/2}`, the expansion parameter
``t``     ``t`` (nonnegative)          depth-time of the limit SDE
``d``     ``d`` (positive integer)     dimension of the sphere's ambient space
``eps``   ``epsilon`` (positive)       noise scale (:math:`\sigma` in pure noise)
``sigma`` same symbol as ``eps``       pure noise: :math:`\varepsilon = \sigma`
``mu``    ``mu`` (nonnegative)         deterministic part of the hybrid value matrix
``beta``  ``beta`` (nonnegative)       inverse temperature of the softmax attention
``rho``   ``rho`` (real)               two-token inner product :math:`\langle X_1, X_2\rangle`
``r``     ``r`` (positive)             softmax weight ratio :math:`e^{-\beta(1-\rho)}`
``z``     ``z`` (real)                 :math:`\operatorname{artanh}\rho`
``q``     ``q`` (positive)             :math:`e^{-2\beta}` (the ratio ``r`` at :math:`\rho=-1`)
``eps2``  ``epsilon2`` (positive)      :math:`\varepsilon^2` as an unknown (hybrid threshold)
========= ============================ ===================================================

Examples
--------
>>> from proofs_check.symbols import d, eps, sigma
>>> d.is_integer, eps is sigma
(True, True)
"""

from __future__ import annotations

import sympy as sp

__all__ = ["beta", "d", "eps", "eps2", "mu", "q", "r", "rho", "s", "sigma", "t", "z"]

s = sp.Symbol("s", positive=True)
t = sp.Symbol("t", nonnegative=True)
d = sp.Symbol("d", integer=True, positive=True)
eps = sp.Symbol("epsilon", positive=True)
#: Pure noise (``mu = 0``) writes the noise scale sigma: the same symbol as ``eps``.
sigma = eps
mu = sp.Symbol("mu", nonnegative=True)
beta = sp.Symbol("beta", nonnegative=True)
rho = sp.Symbol("rho", real=True)
r = sp.Symbol("r", positive=True)
z = sp.Symbol("z", real=True)
q = sp.Symbol("q", positive=True)
eps2 = sp.Symbol("epsilon2", positive=True)

#: Formations (:mod:`proofs_check.formation`): ``n`` tokens, ``k`` of them in one cluster.
n_tokens = sp.Symbol("n", positive=True)
k_cluster = sp.Symbol("k", positive=True)
__all__ += ["k_cluster", "n_tokens"]
