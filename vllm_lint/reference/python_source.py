"""What a Python server file imports, read off its syntax tree (the launcher and the harness decide how
to serve a file from it, before anything of the file runs)."""

from __future__ import annotations

import ast


def imported_packages(tree: ast.Module) -> set[str]:
    """The top-level packages the module imports (``from ray import serve`` and ``import ray.serve`` both
    give ``ray``), relative imports left out."""
    packages = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    packages |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module and not node.level}
    return packages


def imports_and_calls(source: str, package: str, callee: str) -> bool:
    """Whether the file imports ``package`` and calls something whose dotted name ends in ``callee``
    (``web.run_app(...)``, ``ls.LitServer(...)``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return package in imported_packages(tree) and any(
        isinstance(n, ast.Call) and ast.unparse(n.func).split(".")[-1] == callee for n in ast.walk(tree))


def imported_modules(tree: ast.Module) -> set[str]:
    """Every module the module imports, whole (``from ray import serve`` gives ``ray`` and ``ray.serve``)."""
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules.add(node.module)
            modules |= {f"{node.module}.{alias.name}" for alias in node.names}
    return modules
