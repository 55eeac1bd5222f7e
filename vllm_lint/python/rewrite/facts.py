"""What every part of the server rewrite's analysis reads: the module, its model, its semantics, and the
call sites by node."""

from __future__ import annotations

from vllm_lint.python.context import PyContext


class ModuleFacts:
    def __init__(self, ctx: PyContext) -> None:
        self.ctx = ctx
        self.module = ctx.module
        self.model = ctx.model
        self.semantics = ctx.semantics
        self.sites = {id(site.node): site for site in ctx.model.calls}
