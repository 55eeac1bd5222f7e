"""The package layout is the architecture: no import cycles between packages, no two modules of the Python layer
that import each other, and no module imports a rule module.

Every import counts, the ones inside functions too: a lazy import still ties two packages together. A package
is a folder of ``vllm_lint`` at any depth (``vllm_lint.python`` and ``vllm_lint.python.rules`` are two), and a
top-level module is a node of its own.
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
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found.update(name for name in names if name in MODULES)
    return found


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


def _mutual_pairs(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Pairs of modules each of which imports the other."""
    return sorted({(a, b) if a < b else (b, a) for a, targets in graph.items() for b in targets if a in graph.get(b, ())})


def test_no_two_modules_of_the_python_layer_import_each_other():
    # Within vllm_lint.python (its subpackages included), TYPE_CHECKING and lazy imports counted: a module that
    # needs another's answers takes them as an argument or moves them below both (semantics.py imported
    # handlers.py, which imported it back; project.py imported checker.py and semantics.py, which import it).
    inside = [m for m in MODULES if m == "vllm_lint.python" or m.startswith("vllm_lint.python.")]
    graph = {m: {i for i in _imports(m) if i in inside and i != m} for m in inside}
    assert _mutual_pairs(graph) == []


def test_the_mutual_import_check_finds_a_pair():
    assert _mutual_pairs({"a": {"b"}, "b": {"a", "c"}, "c": set()}) == [("a", "b")]


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
    # The check itself must be able to fail.
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
