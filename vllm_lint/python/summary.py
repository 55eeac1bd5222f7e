"""What a module's functions do that matters to a request handler in another module of the project.

A handler in ``app.py`` that calls ``generate_text()`` of the project's ``model.py``, which calls a
transformers pipeline, blocks its server as surely as if it called the pipeline itself. Linting ``app.py``
should not mean analysing ``model.py`` as a whole, so each module gets a *summary*: for each top-level
function, class (its constructor) and method, the calls in it (or in functions of the same module it calls)
that load a model or block on inference, what its return value is made by, and the calls it makes into
other modules (to follow a chain further); for each module-level name, what made it; and its app objects.

Summaries are plain data (JSON in the result cache, kept with the file's content hash; ``project.py``
finds and caches them), and this module holds only the data, so that deciding a file need not be parsed
never imports LibCST; ``summarizer.py`` computes them. Computing one needs only the module itself: never
another module's summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SUMMARY_FORMAT = 1


@dataclass(frozen=True, slots=True)
class Effect:
    """A costly call a function of another module makes."""
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
    """What a function of another module does, for the handlers that call it."""
    effects: tuple[Effect, ...] = ()
    returns: tuple[str, ...] = ()  # qualified callees that made the returned object
    calls: tuple[Outgoing, ...] = ()


@dataclass(frozen=True, slots=True)
class ModuleSummary:
    """What a module holds that the rules over another module's handlers need."""
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
