"""Sphinx configuration for spheresde: furo, autodoc + napoleon, MathJax, sphinx-gallery.

The gallery scripts in ``examples/`` are executed on every build (CPU only), so a
broken example breaks the build, as it should.
"""

import os
import sys
import time
from pathlib import Path

# The examples must run on any machine, GPU or not, and give the same numbers.
os.environ["JAX_PLATFORMS"] = "cpu"

import spheresde

# The folder of this file, for the gallery's own scraper (docs/gallery_checks.py), which
# sphinx-gallery imports by its dotted name; the package itself is the installed one.
sys.path.insert(0, str(Path(__file__).resolve().parent))

project = "spheresde"
author = "spheresde contributors"
copyright = f"{time.gmtime().tm_year}, {author}"
release = spheresde.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    # MathJax copied into the build (_static/mathjax) instead of loaded from a CDN, so the
    # formulas render in pages opened from disk without a network.
    "sphinx-mathjax-offline",
    "sphinx.ext.viewcode",
    "sphinx_gallery.gen_gallery",
]

# Intersphinx needs the network to fetch the inventories of jax, diffrax, numpy and
# sympy; builds are often offline, and a failed fetch is a warning that -W turns into
# an error. So it is opt-in: SPHERESDE_INTERSPHINX=1 when online.
if os.environ.get("SPHERESDE_INTERSPHINX") == "1":
    extensions.append("sphinx.ext.intersphinx")
    intersphinx_mapping = {
        "python": ("https://docs.python.org/3", None),
        "numpy": ("https://numpy.org/doc/stable/", None),
        "jax": ("https://docs.jax.dev/en/latest/", None),
        "diffrax": ("https://docs.kidger.site/diffrax/", None),
        "sympy": ("https://docs.sympy.org/latest/", None),
    }

templates_path = []
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "auto_examples/*.ipynb"]
source_suffix = {".rst": "restructuredtext"}
root_doc = "index"

html_theme = "furo"
html_title = f"spheresde {release}"
html_static_path = []

# NumPy docstrings; types come from the annotations, which jaxtyping makes long,
# so they are shown in the description rather than the signature.
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_member_order = "bysource"
# The jaxtyping aliases of spheresde/_typing.py by name, not expanded into long unions.
autodoc_type_aliases = {
    name: f"spheresde._typing.{name}"
    for name in ("Token", "Tokens", "SpherePoint", "Scalar", "RealScalar", "RealGrid",
                 "FloatGrid", "FloatNumpy", "FloatArray", "Words", "Matrix")
}
autodoc_default_options = {"members": True, "show-inheritance": False}
autosummary_generate = False

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    # Execute every examples/plot_*.py: a gallery page without its figure is a bug.
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py",
    "abort_on_example_error": True,
    "plot_gallery": "True",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "matplotlib_animations": False,
    # sphinx-gallery's matplotlib scraper behind a check: a figure with an empty panel (one
    # drawn by a later cell, after the figure was captured) fails the build.
    "image_scrapers": ("gallery_checks.matplotlib_scraper",),
    # No echo of the last expression of a cell (``<matplotlib.legend.Legend object at
    # 0x...>``): an example shows what it prints, and its figures.
    "capture_repr": (),
    "min_reported_time": 1,
    # The execution-times pages load jQuery and DataTables from CDNs: no such page, so
    # that the built site needs no network (tests/test_docs.py checks every page).
    "write_computation_times": False,
}

mathjax3_config = {
    "tex": {
        "macros": {
            "R": r"\mathbb{R}",
            "E": r"\mathbb{E}",
            "S": r"\mathbb{S}",
        }
    }
}
