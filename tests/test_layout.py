"""The package layout: the method core runs without torch, and the import rules hold.

* ``import msapod`` and ``msapod.analyze`` of a numpy-backed field import no torch (nor
  reading a cached netCDF through ``msapod.studies.store.cache``);
* the core (``msapod/*.py``) and ``msapod/backends`` import nothing from ``models`` or
  ``studies``; no module imports a ``_``-prefixed name from another module; the imports
  form no cycle, counting those inside functions (a lazy import still ties two modules).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "msapod"

SNIPPET = """
import sys
import numpy as np
import xarray as xr
import msapod
rng = np.random.default_rng(0)
L = 12
logits = rng.standard_normal((6, L, L))
logits[:, np.triu_indices(L, 1)[0], np.triu_indices(L, 1)[1]] = -np.inf
A = np.exp(logits - logits.max(-1, keepdims=True))
A /= A.sum(-1, keepdims=True)
A = xr.DataArray(A, dims=("snapshot", "query", "key"))
out = msapod.analyze(A, max_peaks=2)
assert np.isfinite(out["T_spec"].sel(window="plain")), out
import msapod.studies.store.cache, msapod.studies.verdict.scorecard, msapod.models.data
assert "torch" not in sys.modules, sorted(m for m in sys.modules if "torch" in m)
print("ok")
"""


def test_core_runs_without_torch():
    done = subprocess.run(
        [sys.executable, "-c", SNIPPET], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, top_level_only: bool):
    """``(module imported, names, line)`` of every ``from`` import (absolute names)."""
    tree = ast.parse(path.read_text())
    mod = _module(path)
    pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    nodes = tree.body if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield target, [a.name for a in node.names], node.lineno
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, [], node.lineno


FILES = sorted(ROOT.rglob("*.py"))


def test_no_private_names_across_modules():
    bad = []
    for path in FILES:
        for target, names, line in _imports(path, top_level_only=False):
            if not target.startswith("msapod"):
                continue
            bad += [f"{_module(path)}:{line} {target}.{n}" for n in names if n.startswith("_")]
    assert not bad, bad


KIT = ROOT.parent / "msapod_book"


def test_the_library_never_imports_the_books_kit():
    bad = [
        f"{_module(path)}:{line} {target}"
        for path in FILES
        for target, _, line in _imports(path, top_level_only=False)
        if target.split(".")[0] == "msapod_book"
    ]
    assert not bad, bad


def _private_definitions(path: Path) -> set[str]:
    """The ``_``-prefixed functions, methods, classes and attributes a module defines."""
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            out.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            out.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
    return {n for n in out if n.startswith("_") and not n.startswith("__")}


def test_no_private_attribute_reach_across_modules():
    """``x._name`` where ``_name`` is defined in another module of msapod or its kit (a
    private function of a module imported whole, a private method of another module's
    class) and not in this one: the layout's import check cannot see an attribute."""
    paths = FILES + sorted(KIT.rglob("*.py"))
    defined = {p: _private_definitions(p) for p in paths}
    bad = []
    for path in paths:
        elsewhere = set().union(*(d for q, d in defined.items() if q != path))
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
                continue
            if node.attr.startswith("__") or node.attr in defined[path]:
                continue
            base = node.value
            if isinstance(base, ast.Name) and base.id in ("self", "cls"):
                continue
            if node.attr in elsewhere:
                bad.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} .{node.attr}")
    assert not bad, bad


def test_core_imports_neither_models_nor_studies_nor_torch():
    core = [p for p in FILES if p.parent == ROOT or p.parent.name == "backends"]
    core = [p for p in core if p.name not in ("__init__.py", "cli.py") or p.parent != ROOT]
    bad = []
    for path in core:
        for target, _, line in _imports(path, top_level_only=False):
            if target.startswith(("msapod.models", "msapod.studies", "torch")):
                bad.append(f"{_module(path)}:{line} {target}")
    assert not bad, bad


def _graph(top_level_only: bool) -> dict[str, set[str]]:
    """Module -> the ``msapod`` modules it imports."""
    graph = {}
    for path in FILES:
        deps = set()
        for target, names, _ in _imports(path, top_level_only=top_level_only):
            if target.startswith("msapod"):
                # "from . import x" imports the submodule x when it is one
                subs = [
                    f"{target}.{n}"
                    for n in names
                    if (ROOT.parent / f"{target}.{n}".replace(".", "/")).with_suffix(".py").exists()
                ]
                deps |= set(subs) or {target}
        graph[_module(path)] = deps - {_module(path)}
    return graph


def test_cycle_search_sees_function_level_imports():
    inner = _graph(top_level_only=False)
    assert "msapod.models.zoo" in inner["msapod.studies.reproduce"]


def test_no_import_cycles():
    graph = _graph(top_level_only=False)
    state: dict[str, int] = {}

    def visit(node, stack):
        state[node] = 1
        for dep in graph.get(node, ()):
            if state.get(dep) == 1:
                raise AssertionError(f"import cycle: {' -> '.join(stack + [node, dep])}")
            if dep not in state:
                visit(dep, stack + [node])
        state[node] = 2

    for node in graph:
        if node not in state:
            visit(node, [])


STUDY_TIERS = ("registry", "store", "measure", "verdict")


def _study_tier(module: str) -> int | None:
    """0 the claim registry (facts every tier reads), 1 store, 2 measure, 3 verdict, 4 the
    commands on top (``reproduce``, ``own_model``, ``report``)."""
    parts = module.split(".")
    if parts[:2] != ["msapod", "studies"] or len(parts) < 3:
        return None
    return STUDY_TIERS.index(parts[2]) if parts[2] in STUDY_TIERS else len(STUDY_TIERS)


def test_study_tiers_import_only_down():
    bad = []
    for module, deps in _graph(top_level_only=False).items():
        own = _study_tier(module)
        if own is None or module == "msapod.studies":
            continue
        for dep in deps:
            tier = _study_tier(dep)
            if tier is not None and dep != "msapod.studies" and tier > own:
                bad.append(f"{module} -> {dep}")
    assert not bad, bad


def test_every_study_module_is_in_a_tier():
    top = ("__init__.py", "registry.py", "reproduce.py", "own_model.py", "report.py")
    loose = [p.name for p in (ROOT / "studies").glob("*.py") if p.name not in top]
    assert not loose, loose
