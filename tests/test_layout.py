"""The layout keeps its promises: no import circle inside a package, dependencies point
one way (planning never imports the run core or the databases; the run core never
imports a database, the server or the CLI), no module grows past 800 lines, and no
module reads another module's objects' private attributes."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("solvi", "grounded_decision")
MAX_LINES = 800
#: planning modules, which must not reach the run core or the databases
PLANNING = ("catalog", "question", "flow", "strategy", "costs", "order")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, package: str) -> set[str]:
    """The modules of `package` that `path` imports when it is loaded (imports under
    ``if TYPE_CHECKING:`` and inside functions do not run then, so they are left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for sub in [node] if not isinstance(node, ast.If | ast.Try) else ast.walk(node):
            if isinstance(sub, ast.ImportFrom) and sub.module and sub.level == 0:
                if sub.module.split(".")[0] == package:
                    found.add(sub.module)
                    # `from solvi import recovery` imports the module solvi.recovery
                    found.update(f"{sub.module}.{a.name}" for a in sub.names)
            elif isinstance(sub, ast.Import):
                found.update(a.name for a in sub.names if a.name.split(".")[0] == package)
    return found


def _graph(package: str) -> nx.DiGraph:
    graph = nx.DiGraph()
    modules = {_module_name(p): p for p in (ROOT / package).rglob("*.py")}
    for name, path in modules.items():
        graph.add_node(name)
        for target in _imports(path, package):
            # `from package.mod import name` may name a submodule or an attribute.
            if target in modules and target != name:
                graph.add_edge(name, target)
    return graph


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_circle_inside_a_package(package: str) -> None:
    """Module-level imports inside a package form no circle (a package's __init__ may
    re-export its modules, so edges into an __init__ are not counted)."""
    graph = _graph(package)
    inits = {_module_name(p) for p in (ROOT / package).rglob("__init__.py")}
    graph.remove_edges_from([(a, b) for a, b in graph.edges if b in inits])
    cycles = list(nx.simple_cycles(graph))
    assert not cycles, "import circles: " + "; ".join(" -> ".join(c) for c in cycles[:5])


def test_dependencies_point_one_way() -> None:
    """Planning never imports the run core or a database; the run core never imports a
    database, the server or the CLI."""
    graph = _graph("solvi")
    for module in PLANNING:
        reached = nx.descendants(graph, f"solvi.{module}")
        bad = sorted(m for m in reached if m.startswith(("solvi._run", "solvi._db")))
        assert not bad, f"solvi.{module} reaches {bad}"
    for module in [n for n in graph if n.startswith("solvi._run")]:
        reached = nx.descendants(graph, module)
        bad = sorted(
            m
            for m in reached
            if m.startswith(("solvi._db", "solvi.serve", "solvi.cli", "solvi.journal"))
            or m == "solvi.storage"
        )
        assert not bad, f"{module} reaches {bad}"


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_is_over_800_lines(package: str) -> None:
    """Small modules with one job each."""
    long = {
        str(p.relative_to(ROOT)): n
        for p in (ROOT / package).rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def _mirror_place(module: Path) -> tuple[Path, str]:
    """Where the tests of `module` live: solvi/a/b.py -> tests/solvi/a/, files test_b*.py
    (a leading underscore dropped: _app.py -> test_app*.py)."""
    relative = module.relative_to(ROOT)
    stem = module.stem.removeprefix("_")
    return ROOT / "tests" / relative.parent, f"test_{stem}*.py"


def test_every_solvi_module_has_a_test_file_in_its_mirror_place() -> None:
    """tests/ mirrors solvi/: each module (but __init__ and __main__) has a test file."""
    missing = []
    for module in sorted((ROOT / "solvi").rglob("*.py")):
        if module.name in ("__init__.py", "__main__.py"):
            continue
        folder, pattern = _mirror_place(module)
        if not any(folder.glob(pattern)):
            create = (folder / pattern.replace("*", "")).relative_to(ROOT)
            missing.append(f"{module.relative_to(ROOT)}: create {create}")
    assert not missing, "modules without a test file of their own:\n  " + "\n  ".join(missing)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _own_privates(tree: ast.Module) -> set[str]:
    """The private names a module's own classes define: methods, class attributes and
    attributes set on ``self`` (or on a new instance in a classmethod)."""
    own: set[str] = set()
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _private(node.name):
                own.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                if _private(node.attr):
                    own.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                if _private(node.id):
                    own.add(node.id)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                if _private(node.target.id):
                    own.add(node.target.id)
    return own


def _module_names(tree: ast.Module) -> set[str]:
    """Names bound to modules by the module's imports (``serve._app`` is a module)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
    return names


def test_no_private_attribute_of_another_modules_object_is_read() -> None:
    """``obj._name`` on anything but ``self`` or ``cls`` must name something a class of
    the same module defines: one module's code never reaches into another's objects."""
    found = []
    for path in sorted((ROOT / "solvi").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        own = _own_privates(tree)
        modules = _module_names(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or not _private(node.attr):
                continue
            value = node.value
            if isinstance(value, ast.Name) and (value.id in ("self", "cls") or value.id in modules):
                continue
            if node.attr in own:
                continue
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert found == []
