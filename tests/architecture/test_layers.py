"""The package layout is the architecture: no import cycles between packages, no import loop of any length
between modules, and no module imports a rule module.

Every import counts, the ones inside functions (lazy) and under ``TYPE_CHECKING`` (type-only) too: each still
ties two modules together. A package is a folder of ``vllm_lint`` at any depth (``vllm_lint.python`` and
``vllm_lint.python.rules`` are two), and a top-level module is a node of its own; a package's ``__init__`` is
the module named as the package.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import vllm_lint
from vllm_lint.registry import RULE_PACKAGES as _RULE_PACKAGES

ROOT = Path(vllm_lint.__file__).parent
# Rule modules: the checkers and their pre-filter declarations. Only the registry may load them, and it does so
# by name (importlib), so that a new rule module needs no import anywhere.
RULE_PACKAGES = tuple(_RULE_PACKAGES.values())


def _modules() -> dict[str, Path]:
    modules = {}
    for path in ROOT.rglob("*.py"):
        parts = ("vllm_lint", *path.relative_to(ROOT).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


MODULES = _modules()


def _package(module: str) -> str:
    """The deepest folder holding ``module`` (a package's ``__init__`` belongs to the package itself)."""
    path = MODULES[module]
    parts = ("vllm_lint", *path.parent.relative_to(ROOT).parts) if path.parent != ROOT else ("vllm_lint",)
    if path.parent == ROOT and path.name != "__init__.py":
        return module
    return ".".join(part for part in parts if part != ".")


def _imports(module: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = _absolute(module, node.level, node.module)
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found.update(name for name in names if name in MODULES)
    return found


def _absolute(module: str, level: int, name: str | None) -> str:
    """The module a ``from`` import names, its dots (``from . import x``, ``from ..a import b``) resolved."""
    if level == 0:
        return name or ""
    package = module.split(".") if MODULES[module].name == "__init__.py" else module.split(".")[:-1]
    base = package[: len(package) - (level - 1)]
    return ".".join([*base, name] if name else base)


def _package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for module in MODULES:
        for imported in _imports(module):
            source, target = _package(module), _package(imported)
            if source != target and target != "vllm_lint":  # vllm_lint/__init__: the version and exit codes
                graph[source].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def test_the_package_graph_has_no_cycle():
    assert _cycles(_package_graph()) == []


def _module_graph() -> dict[str, set[str]]:
    # A submodule's import runs its package's __init__ first, but that edge is Python's, not the code's: a
    # package's __init__ may sit above its modules (surfaces/__init__.py, the registry of every surface).
    return {module: {imported for imported in _imports(module) if imported != module} for module in MODULES}


def test_no_modules_import_each_other_in_a_loop():
    # Of any length, type-only and lazy imports included. A module that needs another's answers takes them as an
    # argument, or what both need moves below both: the value types a package's modules pass each other sit at
    # its bottom (surfaces/job.py, python/context.py, engine/runner.py), and each module imports only downward.
    assert _cycles(_module_graph()) == []


def _is_rule_module(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in RULE_PACKAGES)


def test_no_module_imports_a_rule_module():
    importers = sorted(
        f"{module} imports {imported}"
        for module in MODULES
        if not _is_rule_module(module)
        for imported in _imports(module)
        if _is_rule_module(imported)
    )
    assert importers == []


def test_the_cycle_check_finds_a_cycle():
    # The check itself must be able to fail: on a loop of three, and on two loops apart.
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c"}}) == [["a", "b"], ["c", "d", "e"]]


def test_the_import_reader_counts_lazy_type_only_and_relative_imports():
    graph = _module_graph()
    assert "vllm_lint.surfaces.notebook_cells" in graph["vllm_lint.surfaces.notebook"]  # lazy, inside a function
    assert "vllm_lint.project.facts" in graph["vllm_lint.surfaces.job"]  # under TYPE_CHECKING
    assert _absolute("vllm_lint.python.rules.sampling", 2, "context") == "vllm_lint.python.context"
    assert _absolute("vllm_lint.python", 1, "context") == "vllm_lint.python.context"
