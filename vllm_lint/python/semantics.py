"""What the rules ask about one module: its names (names.py), the values its expressions hold (folding.py),
which of its functions handle requests or run at start-up (handlers.py), and what its calls into the
project's other modules lead to (project.py's summaries)."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

import libcst as cst

from vllm_lint.file_roles import is_test_path
from vllm_lint.python import handler_table
from vllm_lint.python.folding import Folding
from vllm_lint.python.handlers import Handler, HandlerFinder
from vllm_lint.python.model import CallSite, FunctionInfo

if TYPE_CHECKING:
    from vllm_lint.python.project import Reached

# App objects that do not serve requests by themselves (a Modal app runs functions; its web endpoints are
# handlers of their own).
_NOT_SERVERS = frozenset({"modal"})


class Semantics(Folding):
    """Questions rules ask about one module, answered from its model."""

    # -- what made an object, through the project's other modules ----------------------------------------

    def produced_by(self, expr: cst.BaseExpression, function: FunctionInfo | None) -> set[str]:
        """Qualified callees of the calls that produced the object ``expr`` names; through the project's
        other modules, what made a name imported from one, or the value a function of one returns."""
        if isinstance(expr, cst.Call):
            callee = self.callee(expr)
            return ({callee} if callee else set()) | self._project_producers(expr.func, function)
        made = set()
        bindings = self.bindings_of(expr, function)
        for call in bindings:
            callee = self.callee(call)
            made |= ({callee} if callee else set()) | self._project_producers(call.func, function)
        if not bindings:
            made = self._project_producers(expr, function)
        return made

    def _project_producers(self, expr: cst.BaseExpression, function: FunctionInfo | None) -> set[str]:
        # Only where the serving rules look (request handlers): elsewhere an imported name is most often a
        # class or a function, and its module's summary would be read for nothing.
        if self.project is None or self.enclosing_handler(function) is None:
            return set()
        target = self.imported_target(expr, function)
        if target is None:
            return set()
        return self.project.name_producers(self.project.importer, *target)

    def project_effects(self, site: CallSite) -> list[Reached]:
        """What a call into another module of the project leads to there: model loads, blocking inference."""
        if self.project is None:
            return []
        target = self.imported_target(site.node.func, site.function)
        if target is None:
            return []
        return self.project.effects(self.project.importer, *target)

    # -- handlers ------------------------------------------------------------

    @cached_property
    def is_test_file(self) -> bool:
        return is_test_path(self.path)

    @cached_property
    def app_objects(self) -> dict[str, str]:
        """Module-level names bound to a web app or router, with their framework."""
        apps: dict[str, str] = {}
        sites = {id(site.node): site for site in self.model.calls if site.function is None}
        for (scope, name), bindings in self.model.bindings.items():
            if scope is not None:
                continue
            for binding in bindings:
                framework = handler_table.APP_FACTORIES.get(self.callee(binding.call) or "")
                site = sites.get(id(binding.call))
                if framework and site is not None and not site.in_main_guard:
                    apps[name] = framework
        return apps

    @cached_property
    def defines_web_app(self) -> bool:
        """Whether the module runs a server: it makes an app (not under ``__main__``) or has a handler."""
        return any(f not in _NOT_SERVERS for f in self.app_objects.values()) or bool(self.handlers)

    @cached_property
    def finder(self) -> HandlerFinder:
        return HandlerFinder(self)

    @cached_property
    def handlers(self) -> dict[FunctionInfo, Handler]:
        """Every function that runs per request, registered or reached (see handlers.py)."""
        return self.finder.handlers()

    @cached_property
    def startup_hooks(self) -> frozenset[FunctionInfo]:
        return frozenset(self.finder.startup_hooks())

    def enclosing_handler(self, function: FunctionInfo | None) -> Handler | None:
        """The handler a piece of code runs in (nested closures count as their parent)."""
        while function is not None:
            handler = self.handlers.get(function)
            if handler is not None:
                return handler
            function = function.parent
        return None

    def is_startup_hook(self, function: FunctionInfo | None) -> bool:
        """Whether code in ``function`` runs once at start-up: in a lifespan handler, an ``on_event("startup")``
        hook, a serving class's ``__init__``/``setup``, a function only they call; also any ``__init__`` no
        handler reaches (its object is built when the module is)."""
        while function is not None:
            if function not in self.handlers and (function in self.startup_hooks or function.name == "__init__"):
                return True
            function = function.parent
        return False

    def caches_result(self, handler: Handler) -> bool:
        """Whether the way from the handler to its code runs once (an ``@lru_cache``'d function on it, or a
        call whose result is kept in a global)."""
        return self.finder.path_is_cached(handler.entry, handler.via)
