"""Compute a module's summary (summary.py) from its module model: one pass over its functions."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from vllm_lint.python.model import FunctionInfo, ModuleModel
from vllm_lint.python.summary import EMPTY, Effect, FunctionSummary, ModuleSummary, Outgoing
from vllm_lint.python.vocabulary import MODEL_LOAD, call_effect, caches_load

if TYPE_CHECKING:
    from vllm_lint.python.positions import ModuleLayout
    from vllm_lint.python.semantics import Semantics


def summarize_source(path: Path, data: bytes) -> ModuleSummary:
    """The summary of a module of the project read from its bytes (empty when it cannot be parsed)."""
    from vllm_lint.python.complexity import too_complex
    from vllm_lint.source import SourceError, decode_python

    try:
        text = decode_python(data).text
    except SourceError:
        return EMPTY
    if too_complex(text) is not None:
        return EMPTY
    from vllm_lint.python.parsing import SyntaxProblem, parse
    from vllm_lint.python.model import build_model
    from vllm_lint.python.semantics import Semantics

    try:
        module = parse(text)
        model = build_model(module)
        return summarize(module, model, Semantics(model, str(path)))
    except (SyntaxProblem, RecursionError):
        return EMPTY  # the file's own lint reports it; the importer's is not this file's fault


def summarize(module: cst.Module, model: ModuleModel, semantics: Semantics) -> ModuleSummary:
    lines = _Lines(module)
    functions: dict[str, FunctionSummary] = {}
    for function in model.functions:
        key = _key(function)
        if key is None:
            continue
        summary = _function_summary(function, semantics, lines)
        if summary.effects or summary.returns or summary.calls:
            functions[key] = summary
    names = {}
    for scope, name in model.bindings:
        if scope is None and "." not in name:
            producers = semantics.produced_by(cst.Name(name), None)
            if producers:
                names[name] = tuple(sorted(producers))
    imports = {}
    for info in model.imports:
        if info.function is not None or not isinstance(info.node, cst.ImportFrom):
            continue
        for name, asname, _ in info.names:
            imports[asname or name] = (info.module, info.relative, name)
    return ModuleSummary(functions, names, dict(semantics.app_objects), imports)


def _key(function: FunctionInfo) -> str | None:
    if function.in_main_guard:
        return None
    if function.parent is None and not function.is_method:
        return function.name
    if function.is_method and function.class_info is not None and function.class_info.function is None:
        klass = function.class_info.name
        return klass if function.name == "__init__" else f"{klass}.{function.name}"
    return None


def _function_summary(function: FunctionInfo, semantics: Semantics, lines: _Lines) -> FunctionSummary:
    finder = semantics.finder
    reached = [(function, ())] + list(semantics.functions.reached_from(function))
    if finder.caches_result(function):
        return FunctionSummary(returns=_returns(function, semantics))
    effects: list[Effect] = []
    calls: list[Outgoing] = []
    for scope, path in reached:
        if path and finder.path_is_cached(function, path):
            continue
        chain = tuple(f.name for f in (function, *path))
        for site in semantics.sites_in(scope):
            effect = call_effect(semantics, site)
            if effect is not None and not (effect.kind == MODEL_LOAD and caches_load(site)):
                effects.append(Effect(effect.kind, effect.what, lines.line(site.node), chain))
                continue
            target = semantics.imported_target(site.node.func, site.function)
            if target is not None:
                module, level, name = target
                calls.append(Outgoing(module, level, name, chain))
    return FunctionSummary(tuple(effects), _returns(function, semantics), tuple(calls))


def _returns(function: FunctionInfo, semantics: Semantics) -> tuple[str, ...]:
    made: set[str] = set()
    for statement in function.returns:
        if statement.value is not None:
            made |= semantics.produced_by(statement.value, function)
    return tuple(sorted(made))


class _Lines:
    """Line numbers of nodes, computed (one code-generation pass) only when a summary needs one."""

    def __init__(self, module: cst.Module) -> None:
        self._module = module
        self._layout: ModuleLayout | None = None

    def line(self, node: cst.CSTNode) -> int:
        if self._layout is None:
            from vllm_lint.python.positions import ModuleLayout

            self._layout = ModuleLayout(self._module)
        return self._layout.span(node)[0][0]

