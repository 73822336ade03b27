"""The layers of the code, read from the source: the core never imports the experiments,
the library never imports the CLI, and no import circle exists.

The import graph is built by parsing every module with :mod:`ast`, imports inside
functions included (the circles this test guards against were hidden there), so it needs
no import of the package and sees every edge whether or not it runs.
"""

import ast
import functools
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("spheresde", "proofs_check")
EXPERIMENTS = "spheresde.experiments"
ENGINE = "spheresde.experiments.engine"
CLI = "spheresde.cli"


def module_paths() -> dict[str, Path]:
    """Every module of the packages by dotted name (a package by its own name)."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


@functools.cache  # parsed once for every test (read-only)
def import_graph() -> dict[str, dict[str, int]]:
    """``{module: {imported module: first line}}`` over the modules of :data:`PACKAGES`.

    ``from a import b`` is an edge to ``a.b`` when that is a module, else to ``a``;
    importing ``a.b.c`` also runs the packages ``a.b`` and ``a`` that are not already
    above the importer, so those are edges too (``import spheresde`` loading all of
    ``spheresde.experiments`` through one submodule was such an edge).
    """
    modules = module_paths()
    graph = {}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        edges = graph.setdefault(name, {})
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join([*package[: len(package) - node.level + 1], base]).strip(".")
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:  # an attribute, or outside
                    target = target.rpartition(".")[0]
                if not target or target == name:
                    continue
                edges.setdefault(target, node.lineno)
                parts = target.split(".")
                for k in range(1, len(parts)):
                    run = ".".join(parts[:k])
                    if run in modules and not (name == run or name.startswith(run + ".")):
                        edges.setdefault(run, node.lineno)
    return graph


def circles(graph: dict[str, dict[str, int]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, found = {}, {}, [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while not component or v not in component:
                component.add(stack.pop())
            if len(component) > 1:
                found.append(component)

    for v in graph:
        if v not in index:
            visit(v)
    return found


def describe(graph, component) -> list[str]:
    return sorted(f"{a} -> {b} (line {graph[a][b]})" for a in component for b in graph[a]
                  if b in component)


def is_core(module: str) -> bool:
    return module.startswith("spheresde") and not (
        module == CLI or module == EXPERIMENTS or module.startswith(EXPERIMENTS + "."))


def test_the_graph_sees_imports_inside_functions_and_packages_run_on_the_way():
    graph = import_graph()
    # imported inside a function only
    assert "proofs_check.export" in graph["spheresde.transformer.two_token._coefficients"]
    # `from .. import two_token` is the subpackage, `from .. import sample_uniform` the package
    assert "spheresde.transformer.two_token" in graph[f"{EXPERIMENTS}._phase"]
    assert "spheresde" in graph[f"{EXPERIMENTS}._simulate"]
    # `from .two_token._monte_carlo import f` runs the package two_token first
    assert "spheresde.transformer.two_token" in graph["spheresde.transformer._absorption"]
    assert circles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {}}) == [{"a", "b", "c"}]


def test_the_core_never_imports_the_experiments_or_the_cli():
    graph = import_graph()
    offenders = [f"{m} -> {t} (line {line})" for m, edges in graph.items() if is_core(m)
                 for t, line in edges.items() if not is_core(t) and t.startswith("spheresde")]
    assert not offenders, offenders


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


MODEL = ("spheresde.transformer", "spheresde.data", "spheresde.two_token")


def test_the_general_tool_never_imports_the_model():
    """The folders show the general sphere-SDE tool (the modules at the root of
    ``spheresde`` and ``spheresde.solvers``) apart from the Transformer model
    (``spheresde.transformer``, ``spheresde.data``): the tool imports nothing of the model,
    so a user of the solver never loads the model, and the model is one client of it."""
    graph = import_graph()
    tool = [m for m in graph if is_core(m) and m != "spheresde"
            and not any(within(m, p) for p in MODEL)]
    assert "spheresde._solve" in tool
    assert "spheresde.solvers._geodesic" in tool
    offenders = [f"{m} -> {t} (line {line})" for m in tool for t, line in graph[m].items()
                 if any(within(t, p) for p in MODEL)]
    assert not offenders, offenders


def test_the_engine_knows_nothing_of_the_experiments_nor_of_the_model():
    """The sweep engine (specs, store, driver, executors, planning) imports no module of
    the paper's experiments and nothing of the core: not even the package ``spheresde``,
    whose ``__init__`` loads the Transformer model (the version comes from the installed
    metadata). The experiments import the engine, never the other way."""
    graph = import_graph()
    assert f"{ENGINE}._store" in graph[f"{EXPERIMENTS}._monte_carlo"] or any(
        within(t, ENGINE) for t in graph[f"{EXPERIMENTS}._monte_carlo"])
    offenders = [f"{m} -> {t} (line {line})" for m, edges in graph.items() if within(m, ENGINE)
                 for t, line in edges.items()
                 if t.startswith("spheresde") and not within(t, ENGINE)]
    assert not offenders, offenders


def test_the_library_never_imports_the_cli():
    graph = import_graph()
    offenders = [f"{m} (line {edges[CLI]})" for m, edges in graph.items() if CLI in edges]
    assert not offenders, offenders


def test_proofs_check_never_imports_the_numerics():
    graph = import_graph()
    offenders = [f"{m} -> {t}" for m, edges in graph.items() if m.startswith("proofs_check")
                 for t in edges if t.startswith("spheresde")]
    assert not offenders, offenders


def test_no_import_circle():
    graph = import_graph()
    found = circles(graph)
    assert not found, [describe(graph, c) for c in found]


def test_import_spheresde_does_not_import_sympy():
    # the general SDE tool loads without the symbolic side (a fresh interpreter)
    code = ("import sys, spheresde; "
            "assert 'sympy' not in sys.modules, 'sympy'; "
            "assert 'proofs_check' not in sys.modules, 'proofs_check'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_the_package_never_imports_a_moved_name_from_the_top_level():
    # the old top-level names warn; the package itself imports from their new places
    moved = set(_moved_names())
    offenders = []
    for name, path in module_paths().items():
        if not name.startswith("spheresde"):
            continue
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = node.module or ""
            if node.level:
                base = ".".join([*package[: len(package) - node.level + 1], base]).strip(".")
            if base == "spheresde":
                offenders += [f"{name} (line {node.lineno}): {a.name}" for a in node.names
                              if a.name in moved]
    assert not offenders, offenders


def _moved_names() -> list[str]:
    """The names of ``spheresde._MOVED``, read from the source (no import)."""
    tree = ast.parse((ROOT / "spheresde" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "_MOVED"
                                                for t in node.targets):
            return [n for names in ast.literal_eval(node.value).values() for n in names]
    raise AssertionError("spheresde/__init__.py has no _MOVED")
