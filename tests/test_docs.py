"""The documentation: it builds with warnings as errors, every gallery example runs and
draws its figure, every public name is documented and appears in the API pages."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import proofs_check
import spheresde

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("plot_*.py"))

# Functions and classes whose meaning depends on the SDE sense: their docstrings must
# say which one (Ito or Stratonovich). Names not (yet) in the package are skipped by
# ``_public_objects``, so this list names what should say it, not what must exist.
SDE_SENSE_NAMES = {
    "spheresde.SphereSDE",
    "spheresde.solve",
    "spheresde.weak_error_vs_layers",
    "spheresde.transformer_sde",
    "spheresde.GeodesicEuler",
    "spheresde.GeodesicHeun",
    "spheresde.GeodesicMidpoint",
    "spheresde.Retracted",
    "spheresde.two_token.drift",
    "spheresde.two_token.diffusion",
    "spheresde.two_token.simulate_rho",
}
SENSE = re.compile(r"\b(It[oô]|Stratonovich)\b", re.IGNORECASE)


def _defined_in(obj, module_prefix: str) -> bool:
    return getattr(obj, "__module__", "").startswith(module_prefix)


def _public_objects():
    """(qualified name, object) for every public function and class of the packages."""
    out = []
    for name in dir(spheresde):
        obj = getattr(spheresde, name)
        if name.startswith("_") or inspect.ismodule(obj):
            continue
        if callable(obj) and _defined_in(obj, "spheresde"):
            out.append((f"spheresde.{name}", obj))
    modules = [importlib.import_module(m) for m in ("spheresde.two_token",) if _has(m)]
    for info in pkgutil.iter_modules(proofs_check.__path__):
        if not info.name.startswith("_"):
            modules.append(importlib.import_module(f"proofs_check.{info.name}"))
    for module in modules:
        for name, obj in vars(module).items():
            if name.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if obj.__module__ == module.__name__:
                out.append((f"{module.__name__}.{name}", obj))
    return out


def _has(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ModuleNotFoundError:
        return False
    return True


def test_every_public_name_has_a_docstring():
    missing = [name for name, obj in _public_objects() if not (obj.__doc__ or "").strip()]
    assert not missing, f"public names without a docstring: {missing}"


def test_sde_functions_say_ito_or_stratonovich():
    objects = dict(_public_objects())
    silent = [
        name for name in sorted(SDE_SENSE_NAMES & objects.keys())
        if not SENSE.search(inspect.getdoc(objects[name]) or "")
    ]
    assert not silent, f"docstrings that do not say Ito or Stratonovich: {silent}"


def test_api_pages_list_every_public_name_of_spheresde():
    pages = "\n".join(p.read_text() for p in (ROOT / "docs" / "api").glob("*.rst"))
    names = [
        name for name in dir(spheresde)
        if not name.startswith("_") and not inspect.ismodule(getattr(spheresde, name))
        and callable(getattr(spheresde, name))
    ]
    absent = [name for name in names if not re.search(rf"\b{re.escape(name)}\b", pages)]
    assert not absent, f"public names missing from docs/api/*.rst: {absent}"


@pytest.mark.slow
def test_sphinx_build_with_examples(tmp_path):
    """Build the html docs from a fresh copy (so every example really executes)."""
    assert EXAMPLES, "the gallery has no examples"
    src = tmp_path / "src"
    shutil.copytree(ROOT / "docs", src / "docs",
                    ignore=shutil.ignore_patterns("_build", "auto_examples", "gen_modules",
                                                  "sg_execution_times.rst"))
    shutil.copytree(ROOT / "examples", src / "examples")
    out = tmp_path / "html"
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html",
         str(src / "docs"), str(out)],
        capture_output=True, text=True, timeout=900, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert (out / "index.html").is_file()
    images = src / "docs" / "auto_examples" / "images"
    for example in EXAMPLES:
        page = out / "auto_examples" / f"{example.stem}.html"
        assert page.is_file(), f"no gallery page for {example.name}"
        figures = sorted(images.glob(f"sphx_glr_{example.stem}_*.png"))
        assert figures, f"{example.name} drew no figure"
        assert f"sphx_glr_{example.stem}_" in page.read_text(), f"{page.name} shows no figure"
