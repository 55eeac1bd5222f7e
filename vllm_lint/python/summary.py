"""What a module's functions do that matters to a request handler in another module of the project.

A handler in ``app.py`` that calls ``generate_text()`` of the project's ``model.py``, which calls a
transformers pipeline, blocks its server as surely as if it called the pipeline itself. Linting ``app.py``
should not mean analysing ``model.py`` as a whole, so each module gets a *summary*: for each top-level
function, class (its constructor) and method, the calls in it (or in functions of the same module it calls)
that load a model or block on inference, what its return value is made by, and the calls it makes into
other modules (to follow a chain further); for each module-level name, what made it; and its app objects.

Summaries are plain data (JSON in the result cache, kept with the file's content hash; ``project.py``
finds and caches them). Computing one needs only the module itself: never another module's summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from vllm_lint.python.model import FunctionInfo, ModuleModel
from vllm_lint.python.vocabulary import MODEL_LOAD, call_effect, caches_load

if TYPE_CHECKING:
    from vllm_lint.python.semantics import Semantics

SUMMARY_FORMAT = 1


@dataclass(frozen=True, slots=True)
class Effect:
    kind: str  # vocabulary.PIPELINE_CALL, HF_GENERATE, LLM_GENERATE or MODEL_LOAD
    what: str  # "a transformers pipeline", "AutoModelForCausalLM.from_pretrained(...)"
    line: int  # where, in the summarized module
    chain: tuple[str, ...]  # the functions of that module from the summarized one down to the call


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A call into another module: ``(module, level)`` as the import names it, the dotted name called there."""

    module: str
    level: int
    name: str
    chain: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FunctionSummary:
    effects: tuple[Effect, ...] = ()
    returns: tuple[str, ...] = ()  # qualified callees that made the returned object
    calls: tuple[Outgoing, ...] = ()


@dataclass(frozen=True, slots=True)
class ModuleSummary:
    # "fn", "Class" (its constructor: __init__) and "Class.method"
    functions: dict[str, FunctionSummary] = field(default_factory=dict)
    names: dict[str, tuple[str, ...]] = field(default_factory=dict)  # module-level name -> what made it
    apps: dict[str, str] = field(default_factory=dict)  # module-level app objects -> framework
    imports: dict[str, tuple[str, int, str]] = field(default_factory=dict)  # name -> (module, level, name there)

    def to_json(self) -> dict:
        return {
            "format": SUMMARY_FORMAT,
            "functions": {
                key: [
                    [[e.kind, e.what, e.line, list(e.chain)] for e in f.effects],
                    list(f.returns),
                    [[c.module, c.level, c.name, list(c.chain)] for c in f.calls],
                ]
                for key, f in self.functions.items()
            },
            "names": {key: list(value) for key, value in self.names.items()},
            "apps": dict(self.apps),
            "imports": {key: list(value) for key, value in self.imports.items()},
        }

    @classmethod
    def from_json(cls, raw: object) -> ModuleSummary | None:
        """The summary a cache holds; None for anything malformed (the file is summarized again)."""
        try:
            if not isinstance(raw, dict) or raw.get("format") != SUMMARY_FORMAT:
                return None
            functions = {}
            for key, (effects, returns, calls) in raw["functions"].items():
                functions[str(key)] = FunctionSummary(
                    tuple(Effect(str(k), str(w), int(n), tuple(map(str, c))) for k, w, n, c in effects),
                    tuple(map(str, returns)),
                    tuple(Outgoing(str(m), int(v), str(n), tuple(map(str, c))) for m, v, n, c in calls),
                )
            names = {str(k): tuple(map(str, v)) for k, v in raw["names"].items()}
            apps = {str(k): str(v) for k, v in raw["apps"].items()}
            imports = {str(k): (str(m), int(v), str(n)) for k, (m, v, n) in raw["imports"].items()}
        except (KeyError, TypeError, ValueError):
            return None
        return cls(functions, names, apps, imports)


EMPTY = ModuleSummary()


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
    reached = [(function, ())] + list(finder.reached_from(function))
    if finder.caches_result(function):
        return FunctionSummary(returns=_returns(function, semantics))
    effects: list[Effect] = []
    calls: list[Outgoing] = []
    for scope, path in reached:
        if any(finder.caches_result(f) for f in path):
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
        self._layout = None

    def line(self, node: cst.CSTNode) -> int:
        if self._layout is None:
            from vllm_lint.python.positions import ModuleLayout

            self._layout = ModuleLayout(self._module)
        return self._layout.span(node)[0][0]

