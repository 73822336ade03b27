"""Symbolic verification of the paper's formulas (SymPy), and the numerics' source of truth.

Modules, one per derivation:

- :mod:`proofs_check.symbols`: the shared symbols (``d``, ``eps``, ``beta``, ``rho``, ...),
  defined once with their assumptions.
- :mod:`proofs_check.ito`: Ito <-> Stratonovich conversion and Ito's lemma for any SDE on R^N.
- :mod:`proofs_check.span`: exact linear algebra in the span of the tokens, ``d`` symbolic.
- :mod:`proofs_check.limit`: Theorem 1 (Ito limit of the normalized update), sphere-supported lemma.
- :mod:`proofs_check.stratonovich`: Stratonovich form; Ito's lemma on rho in coordinates.
- :mod:`proofs_check.two_token`: the rho = <X_1, X_2> SDE and its z = artanh(rho) form.
- :mod:`proofs_check.stability`: Lyapunov exponents, beta_c(d), Feller, hybrid threshold.
- :mod:`proofs_check.report`: the report of ``python -m proofs_check``; each check returns
  residuals (derived - stated) and the verdict is computed from them.
- :mod:`proofs_check.export`: NumPy / JAX callables lambdified from the derivations.
- :mod:`proofs_check.engine`: the diffusion limit of any residual layer (random matrices
  of a declared law, normalization RMS / LayerNorm / none);
  :func:`spheresde.transformer.to_sphere_sde` turns it into a ``spheresde.SphereSDE``;
  :mod:`proofs_check.layers`: LayerNorm, several heads and a ReLU MLP block derived with
  it.

Importing the package does not import SymPy; derivations run on demand and are cached.
"""
