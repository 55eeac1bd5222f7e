"""Import edits shared by the fixes: use a name, adding ``from x import y`` only when it is
missing, and drop the imports a rewrite left unused.

Only top-level, unconditional imports are read or edited: an import under ``if``
or ``try`` or inside a function is the author's arrangement and is left alone.
Removal is limited to the names a fix stopped using, never other unused
imports (they may be imported for their side effects or re-exported).
"""

from __future__ import annotations

import bisect
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import TypeGuard
from dataclasses import dataclass

import libcst as cst

from vllm_lint.python.model import module_path
from vllm_lint.python.rewrite.layout import (
    insert_statements,
    replace_statement,
    without_small_statement,
)
from vllm_lint.python.rewrite.names import names_in, occurrences
from vllm_lint.python.names import canonical


class NameTaken(Exception):
    """The name an import would bind already means something else in the module."""

    def __init__(self, name: str) -> None:
        super().__init__(f"the name {name} is already used for something else in this module")
        self.name = name


@dataclass(frozen=True, slots=True)
class TopImport:
    """A module-level import statement and its line."""
    line: cst.SimpleStatementLine
    node: cst.Import | cst.ImportFrom


def top_level_imports(module: cst.Module) -> Iterator[TopImport]:
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, (cst.Import, cst.ImportFrom)):
                    yield TopImport(statement, small)


def _alias_name(alias: cst.ImportAlias) -> str:
    return module_path(alias.name)


def _bound_name(alias: cst.ImportAlias, is_from: bool) -> str:
    """The name an alias binds: ``as`` name, the imported name, or the head of ``import a.b``."""
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    name = _alias_name(alias)
    return name if is_from else name.split(".")[0]


def _plain_from(node: cst.CSTNode, module_name: str | None = None) -> TypeGuard[cst.ImportFrom]:
    """``from x import a, b`` (absolute, no star), optionally of one module."""
    return (
        isinstance(node, cst.ImportFrom)
        and not node.relative
        and not isinstance(node.names, cst.ImportStar)
        and (module_name is None or module_path(node.module) == module_name)
    )


def _from_imported_as(module: cst.Module, wanted: set[str]) -> str | None:
    """The name a top-level ``from x import y [as z]`` binds for one of ``wanted``."""
    for item in top_level_imports(module):
        node = item.node
        if _plain_from(node):
            for alias in _aliases(node):
                if canonical(f"{module_path(node.module)}.{_alias_name(alias)}") in wanted:
                    return _bound_name(alias, True)
    return None


def _module_imported_as(module: cst.Module, wanted: set[str]) -> str | None:
    """``m.y`` (or ``alias.y``) for one of ``wanted`` through a top-level ``import m``."""
    for item in top_level_imports(module):
        if isinstance(item.node, cst.Import):
            for alias in item.node.names:
                imported = _alias_name(alias)
                for target in sorted(wanted):
                    if target.startswith(imported + "."):
                        rest = target[len(imported):]
                        return (_bound_name(alias, False) + rest) if alias.asname is not None else target
    return None


def imported_as(module: cst.Module, qualified: Iterable[str]) -> str | None:
    """An expression naming one of ``qualified`` through the top-level imports, or None."""
    wanted = set(qualified)
    return _from_imported_as(module, wanted) or _module_imported_as(module, wanted)


def ensure_imported(
    module: cst.Module, from_module: str, name: str, *, equivalents: Iterable[str] = (), names: set[str] | None = None
) -> tuple[cst.Module, str]:
    """``module`` with ``from_module.name`` importable, and the expression that refers to it.

    Reuses an existing import of it (or of an equivalent path), else adds the name
    to an existing ``from from_module import ...``, else uses ``import from_module``,
    else adds a new ``from from_module import name`` after the related imports.
    Raises NameTaken when the name is already used for something else. ``names``: ``names_in(module)``,
    when the caller keeps it (a walk of the whole module otherwise).
    """
    qualified = f"{from_module}.{name}"
    wanted = {qualified, canonical(qualified) or qualified, *equivalents}
    found = _from_imported_as(module, wanted)
    if found is not None:
        return module, found
    name_is_free = name not in (names_in(module) if names is None else names)  # else bound or used for something else
    if name_is_free:
        for item in top_level_imports(module):
            if _plain_from(item.node, from_module):
                new_node = _with_alias(item.node, name)
                line = item.line.with_changes(body=[new_node if s is item.node else s for s in item.line.body])
                return replace_statement(module, item.line, line), name
    found = _module_imported_as(module, wanted)
    if found is not None:
        return module, found
    if not name_is_free:
        raise NameTaken(name)
    return _with_import(module, f"from {from_module} import {name}", from_module), name


def _with_import(module: cst.Module, code: str, of_module: str) -> cst.Module:
    """``module`` with the import statement ``code`` added where an import of ``of_module`` belongs."""
    statement = cst.parse_statement(code)
    index, before_comments = _insertion_index(module, of_module)
    if before_comments:
        # Going in front of an import: the comment lines above that import now sit above the new one.
        following = module.body[index]
        statement = statement.with_changes(leading_lines=following.leading_lines)
        module = replace_statement(module, following, following.with_changes(leading_lines=[]))
    return insert_statements(module, index, [statement])


def ensure_module_imported(module: cst.Module, name: str, *, names: set[str] | None = None) -> tuple[cst.Module, str]:
    """``module`` with ``import name`` (a top-level module such as ``asyncio``), and the name it is bound to.

    Reuses ``import name`` or ``import name as alias``; else adds ``import name`` where
    ensure_imported would put an import of it. Raises NameTaken when the name means something else.
    ``names``: as for ensure_imported.
    """
    for item in top_level_imports(module):
        if isinstance(item.node, cst.Import):
            for alias in item.node.names:
                if _alias_name(alias) == name:
                    return module, _bound_name(alias, False)
    if name in (names_in(module) if names is None else names):
        raise NameTaken(name)
    return _with_import(module, f"import {name}", name), name


def _insertion_index(module: cst.Module, from_module: str) -> tuple[int, bool]:
    """Where a new import of ``from_module`` goes, and whether it takes over the leading comments there.

    After the last top-level import of the same package; else, for the standard
    library, after the last standard-library import or before the first other
    one; else after the last import; else at the top (after a docstring).
    """
    package = from_module.split(".")[0]
    stdlib = package in sys.stdlib_module_names
    last_import = last_related = last_stdlib = first_third_party = None
    for index, statement in enumerate(module.body):
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import):
                roots = [_alias_name(a).split(".")[0] for a in small.names]
            elif isinstance(small, cst.ImportFrom):
                roots = ["."] if small.relative else [module_path(small.module).split(".")[0]]
            else:
                continue
            last_import = index
            if package in roots:
                last_related = index
            if all(root in sys.stdlib_module_names for root in roots):
                last_stdlib = index
            elif first_third_party is None and "__future__" not in roots:
                first_third_party = index
    if last_related is not None:
        return last_related + 1, False
    if stdlib and last_stdlib is not None:
        return last_stdlib + 1, False
    if stdlib and first_third_party is not None:
        return first_third_party, True
    if last_import is not None:
        return last_import + 1, False
    return _after_docstring(module), False


def _after_docstring(module: cst.Module) -> int:
    first = module.body[0] if module.body else None
    if isinstance(first, cst.SimpleStatementLine) and len(first.body) == 1:
        expr = first.body[0]
        if isinstance(expr, cst.Expr) and isinstance(expr.value, (cst.SimpleString, cst.ConcatenatedString)):
            return 1
    return 0


def _separator_like(comma: cst.Comma | cst.MaybeSentinel) -> cst.Comma:
    """A comma between names laid out like ``comma``, without the comment it may carry."""
    if isinstance(comma, cst.Comma) and isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace):
        layout = comma.whitespace_after
        return cst.Comma(
            whitespace_after=cst.ParenthesizedWhitespace(
                first_line=cst.TrailingWhitespace(), empty_lines=[], indent=layout.indent, last_line=layout.last_line
            )
        )
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


def _aliases(node: cst.Import | cst.ImportFrom) -> Sequence[cst.ImportAlias]:
    """The names an import statement lists (none for ``from x import *``)."""
    return () if isinstance(node.names, cst.ImportStar) else node.names


def _with_alias(node: cst.ImportFrom, name: str) -> cst.ImportFrom:
    """``from x import a, c`` -> ``from x import a, b, c``: sorted when the names were, in their layout."""
    aliases = list(_aliases(node))
    names = [_alias_name(a) for a in aliases]
    index = bisect.bisect(names, name) if names == sorted(names) else len(names)
    if index < len(aliases):
        model_comma = aliases[index - 1].comma if index > 0 else aliases[0].comma
        aliases.insert(index, cst.ImportAlias(name=cst.Name(name), comma=_separator_like(model_comma)))
    else:
        last = aliases[-1]
        # The new last name takes over the trailing comma (or its absence) and so the closing layout.
        between = _separator_like(aliases[-2].comma) if len(aliases) > 1 else _separator_like(last.comma)
        aliases[-1] = last.with_changes(comma=between)
        aliases.append(cst.ImportAlias(name=cst.Name(name), comma=last.comma))
    return node.with_changes(names=aliases)


def _without_alias(node: cst.ImportFrom | cst.Import, alias: cst.ImportAlias) -> cst.ImportFrom | cst.Import:
    aliases = list(_aliases(node))
    index = next(i for i, a in enumerate(aliases) if a is alias)
    if index == len(aliases) - 1 and index > 0:
        # The new last name takes over the trailing comma (or its absence).
        aliases[index - 1] = aliases[index - 1].with_changes(comma=alias.comma)
    del aliases[index]
    return node.with_changes(names=aliases)


def remove_unused_imports(module: cst.Module, candidates: Iterable[str]) -> cst.Module:
    """Drop top-level imports of ``candidates`` that nothing in the module refers to any more."""
    candidates = set(candidates)
    if not candidates or "__all__" in names_in(module):
        return module
    uses = occurrences(module, candidates)
    referenced = {
        name for name, found in uses.items()
        if any(not any(isinstance(p, (cst.Import, cst.ImportFrom)) for p in o.parents) for o in found)
    }
    unused = candidates - referenced
    for item in list(top_level_imports(module)):
        node = item.node
        if isinstance(node.names, cst.ImportStar):
            continue
        is_from = isinstance(node, cst.ImportFrom)
        doomed = [alias for alias in node.names if _bound_name(alias, is_from) in unused]
        if not doomed:
            continue
        # Re-find the line: earlier edits in this loop replaced statements of the module.
        line = next(s for s in module.body if isinstance(s, cst.SimpleStatementLine) and any(_same_import(x, node) for x in s.body))
        current = next(x for x in line.body if isinstance(x, (cst.Import, cst.ImportFrom)) and _same_import(x, node))
        if len(doomed) == len(node.names):
            module = without_small_statement(module, line, current)
            continue
        new_node = current
        for alias in doomed:
            alias_now = next(a for a in _aliases(new_node) if _alias_name(a) == _alias_name(alias) and _bound_name(a, is_from) == _bound_name(alias, is_from))
            new_node = _without_alias(new_node, alias_now)
        module = replace_statement(module, line, line.with_changes(body=[new_node if x is current else x for x in line.body]))
    return module


def _same_import(a: cst.CSTNode, b: cst.CSTNode) -> bool:
    return a is b or (type(a) is type(b) and a.deep_equals(b))
