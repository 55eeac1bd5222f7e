"""What every part of the server rewrite's analysis reads: the module, its model, its semantics, and the
call sites by node."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vllm_lint.python.context import PyContext
from vllm_lint.python.model import ClassInfo, FunctionInfo

if TYPE_CHECKING:
    from vllm_lint.python.handlers import Handler
    from vllm_lint.python.rewrite.plan import HandlerCall


def method_and_class(function: FunctionInfo | None) -> tuple[FunctionInfo, ClassInfo]:
    """The method that binds a held model (``self.<name> = ...``), and its class."""
    assert function is not None and function.class_info is not None
    return function, function.class_info


class ModuleFacts:
    def __init__(self, ctx: PyContext) -> None:
        self.ctx = ctx
        self.module = ctx.module
        self.model = ctx.model
        self.semantics = ctx.semantics
        self.sites = {id(site.node): site for site in ctx.model.calls}

    def function_holding(self, call: HandlerCall) -> FunctionInfo:
        """The function a call the rewrite changes is in (a request handler, or a function nested in one)."""
        function = self.sites[id(call.call)].function
        assert function is not None
        return function

    def handler_holding(self, call: HandlerCall) -> Handler:
        """The request handler a call the rewrite changes is in."""
        handler = self.semantics.enclosing_handler(self.function_holding(call))
        assert handler is not None
        return handler
