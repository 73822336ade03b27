"""The recipe "add a solver" of ``docs/contributing.rst``, followed literally: the class
it shows is the worked example's source, its registration is the export line it shows,
the tests' list of schemes follows the exports, and a scheme written from the recipe
alone runs in :func:`spheresde.solve` with no other change."""

from __future__ import annotations

import inspect
import re
import textwrap
from pathlib import Path
from typing import ClassVar

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
from equinox.internal import ω
from helpers import GEODESIC, SCHEMES, brownian_motion_sde

import spheresde
from spheresde.solvers import AbstractGeodesicSolver
from spheresde.solvers._geodesic import _exp_unit, _tangent, manifold_of

ROOT = Path(__file__).parents[1]
RECIPE = (ROOT / "docs" / "contributing.rst").read_text()


def _without_docstring(source: str) -> str:
    return re.sub(r'\n    r?""".*?"""\n\n', "\n", source, count=1, flags=re.S)


def test_the_recipe_shows_the_worked_example_to_the_letter():
    source = _without_docstring(inspect.getsource(spheresde.GeodesicItoHeun))
    assert textwrap.indent(source, "    ", lambda line: line.strip() != "") in RECIPE


def test_the_registration_is_the_export_the_recipe_shows():
    line = "from ._geodesic import GeodesicItoHeun as GeodesicItoHeun"
    assert f"       {line}\n" in RECIPE
    assert line in (ROOT / "spheresde" / "solvers" / "__init__.py").read_text().splitlines()


def test_the_tests_run_every_exported_scheme():
    exported = {name for name, value in vars(spheresde.solvers).items()
                if isinstance(value, type) and issubclass(value, AbstractGeodesicSolver)
                and not inspect.isabstract(value) and not name.startswith("Abstract")}
    assert exported == {cls.__name__ for cls in GEODESIC} >= {
        "GeodesicEuler", "GeodesicItoHeun", "GeodesicHeun", "GeodesicMidpoint"}
    assert {p.id for p in SCHEMES} >= exported


class RecipeEuler(AbstractGeodesicSolver, diffrax.AbstractItoSolver):
    """Euler along great circles, written from the recipe alone (order, update)."""

    term_structure: ClassVar = diffrax.MultiTerm[tuple[diffrax.AbstractTerm,
                                                       diffrax.AbstractTerm]]

    def order(self, terms):
        return 1

    def update(self, terms, t0, t1, y0, args, control):
        m = manifold_of(terms)
        drift, diffusion = terms.terms
        dt, dw = control
        step = (_tangent(m, y0, drift.vf_prod(t0, y0, args, dt))**ω
                + _tangent(m, y0, diffusion.vf_prod(t0, y0, args, dw))**ω).ω
        return _exp_unit(m, y0, step), None


def test_solve_runs_a_scheme_written_from_the_recipe():
    # Brownian motion on S^2 (generator Laplacian / 2): the recipe's scheme is the
    # package's GeodesicEuler step for step (the same Brownian path, the same update
    # written independently), keeps the norm, and solve reads its Ito sense from its marker
    sde = brownian_motion_sde(3, "ito")
    y0 = jnp.array([0.0, 0.0, 1.0])
    key = jax.random.key(3)
    ours = spheresde.solve(sde, y0, 0.0, 1.0, 0.01, key=key, solver=RecipeEuler())
    euler = spheresde.solve(sde, y0, 0.0, 1.0, 0.01, key=key, solver=spheresde.GeodesicEuler())
    assert spheresde.solver_convention(RecipeEuler()) == "ito"
    np.testing.assert_allclose(np.linalg.norm(ours.ys, axis=-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(ours.ys, euler.ys, atol=1e-5)
    assert np.max(np.abs(ours.ys[-1] - y0)) > 0.1  # it moved
