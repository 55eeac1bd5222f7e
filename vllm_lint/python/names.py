"""What names in one module refer to: qualified names through the module's imports and aliases, the calls
whose results a name may hold, and the import a name comes from.

Instead of LibCST's QualifiedNameProvider (most of Fixit's run time), names are resolved through the
module's own import map and module-level aliases: enough to tell vLLM's ``LLM`` from TensorRT-LLM's, and cheap.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, overload

import libcst as cst

from vllm_lint.python import handler_table
from vllm_lint.python.model import Binding, FunctionInfo, ModuleModel, dotted_name, subscript_key

if TYPE_CHECKING:
    from vllm_lint.python.project import Project

# The public homes of the vLLM classes the rules talk about, and the internal
# paths they are defined at (``from vllm.entrypoints.llm import LLM`` is the same class).
VLLM_CANONICAL = {
    "vllm.entrypoints.llm.LLM": "vllm.LLM",
    "vllm.engine.arg_utils.EngineArgs": "vllm.EngineArgs",
    "vllm.engine.arg_utils.AsyncEngineArgs": "vllm.AsyncEngineArgs",
    "vllm.engine.async_llm_engine.AsyncLLMEngine": "vllm.AsyncLLMEngine",
    "vllm.v1.engine.async_llm.AsyncLLM": "vllm.AsyncLLMEngine",
    "vllm.engine.llm_engine.LLMEngine": "vllm.LLMEngine",
    "vllm.v1.engine.llm_engine.LLMEngine": "vllm.LLMEngine",
    "vllm.sampling_params.SamplingParams": "vllm.SamplingParams",
}


@overload
def canonical(qualified: str) -> str: ...
@overload
def canonical(qualified: None) -> None: ...
def canonical(qualified: str | None) -> str | None:
    if qualified is None:
        return None
    for internal, public in VLLM_CANONICAL.items():
        if qualified == internal or qualified.startswith(internal + "."):
            return public + qualified[len(internal):]
    return qualified


class Names:
    """Questions about the names of one module, answered from its model."""

    def __init__(self, model: ModuleModel, path: str, project: Project | None = None) -> None:
        self.model = model
        self.path = path
        # The project's other modules (cross-module summaries); None: this module alone.
        self.project = project

    # -- names ---------------------------------------------------------------

    def qualify(self, expr: cst.BaseExpression) -> str | None:
        """The qualified name an expression refers to, through imports and aliases."""
        name = dotted_name(expr)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        target = self.model.aliases.get(head)
        if target is None:
            return None
        return canonical(f"{target}.{rest}" if rest else target)

    def callee(self, call: cst.Call) -> str | None:
        return self.qualify(call.func)

    @cached_property
    def imported_modules(self) -> frozenset[str]:
        found = set()
        for info in self.model.imports:
            if info.relative:
                continue
            found.add(info.module)
        return frozenset(found)

    def imports_any(self, prefixes: tuple[str, ...]) -> bool:
        return any(m == p or m.startswith(p + ".") for m in self.imported_modules for p in prefixes)

    @cached_property
    def route_framework(self) -> str | None:
        """The imported framework whose apps take ``@app.<verb>(...)`` route decorators (table order first)."""
        for framework in handler_table.FRAMEWORKS:
            if framework.route_decorators and self.imports_any(framework.modules):
                return framework.name
        return None

    def app_framework(self, expr: cst.BaseExpression, function: FunctionInfo | None) -> str | None:
        """The framework of the app or router object ``expr`` (``app``, ``app.router``) holds, when known."""
        name = dotted_name(expr)
        if name is None:
            return None
        head = name.split(".")[0]
        for call in self.bindings_of(cst.Name(head), function):
            framework = handler_table.APP_FACTORIES.get(self.callee(call) or "")
            if framework is not None:
                return framework
        imported = self._imported.get(head)
        if self.project is not None and imported is not None and imported[2]:
            return self.project.app_framework(self.project.importer, *imported)
        return None


    # -- what names hold -------------------------------------------------------

    def bindings_of(self, expr: cst.BaseExpression, function: FunctionInfo | None) -> list[cst.Call]:
        """The calls whose results a name (or ``self.x``, or a dict's item ``MODELS["llm"]``) may hold where it is used."""
        name = dotted_name(expr)
        if name is None:
            item = subscript_key(expr)
            return self._item_bindings(item, function) if item is not None else []
        found: list[Binding] = []
        if name.startswith("self.") and function is not None and function.class_info is not None:
            found += self.model.bindings.get((function.class_info, name), [])
        else:
            scope = function
            while scope is not None:
                if name in scope.global_names:
                    break
                found += self.model.bindings.get((scope, name), [])
                if found:
                    return [b.call for b in found]
                scope = scope.parent
            found += self.model.bindings.get((None, name), [])
        return [b.call for b in found]

    def _item_bindings(self, item: tuple[str, str], function: FunctionInfo | None) -> list[cst.Call]:
        """The calls stored in a dict's item, when the dict read is the one they were stored in: not a local of
        the reading function (nor of the storing one) that hides the module's variable of that name."""
        variable = item[0]

        def local(scope: FunctionInfo | None) -> bool:
            while scope is not None and variable not in scope.global_names:
                if self.model.values.get((scope, variable)):
                    return True
                scope = scope.parent
            return False

        if local(function):
            return []
        return [b.call for b in self.model.item_bindings.get(item, []) if not local(b.function)]

    @cached_property
    def _imported(self) -> dict[str, tuple[str, int, str]]:
        """Local name -> (module, level, dotted name in it) for every import (``import a.b`` binds ``a``)."""
        found: dict[str, tuple[str, int, str]] = {}
        for info in self.model.imports:
            if isinstance(info.node, cst.ImportFrom):
                for name, asname, _ in info.names:
                    found[asname or name] = (info.module, info.relative, name)
            else:
                for name, asname, _ in info.names:
                    if asname:
                        found[asname] = (name, 0, "")
                    else:
                        head = name.split(".")[0]
                        found[head] = (head, 0, "")
        return found

    def imported_target(self, expr: cst.BaseExpression, function: FunctionInfo | None, depth: int = 0) -> tuple[str, int, str] | None:
        """(module, level, dotted name) that a name or call target from an import refers to: ``load`` from
        ``from .model import load``, ``model.load`` from ``import model``, ``gen.run`` where ``gen = Generator()``."""
        name = dotted_name(expr)
        if name is None or depth > 2:
            return None
        head, _, rest = name.partition(".")
        imported = self._imported.get(head)
        if imported is not None:
            module, level, inner = imported
            dotted = ".".join(p for p in (inner, rest) if p)
            return (module, level, dotted) if dotted else None
        if rest and "." not in rest:
            bindings = self.bindings_of(cst.Name(head), function)
            if len(bindings) == 1:
                made = self.imported_target(bindings[0].func, function, depth + 1)
                if made is not None:
                    return made[0], made[1], f"{made[2]}.{rest}"
        return None
