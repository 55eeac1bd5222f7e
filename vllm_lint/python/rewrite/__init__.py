"""The unsafe fix of VLL101/VLL103: rewrite a server module onto vLLM's AsyncLLMEngine.

``analysis`` decides whether the whole module is understood (else a Refusal
says why), from ``construction`` (the engine's arguments), ``calls`` (each use
of the model; ``prompts``: is an input one string?; ``hf_generate``: a transformers model's tokenizer ->
generate chain, ``vision``: a multimodal processor's text and images in it), ``helpers`` (the helpers
between a handler and the model that become async, from ``callers``: every call
of each; ``script``: a ``__main__`` demo that calls one) and ``placement`` (where the engine is built: ``lifespan`` for FastAPI,
the sync frameworks' ``bridge``, the classes of ``served``);
``entries`` a model kept in a module dict's entry (``MODELS["llm"]``);
``plan`` holds what it decided, ``shapes`` and ``facts`` what the parts share; ``transform``
applies the plan to the CST; ``imports`` and ``layout`` are the edit helpers both
share with other fixes. The result is offered as one whole-module edit; the fix
engine keeps it only if it parses and the finding is gone. A run that reads no edits
(a text report, the agent hook) gets the fix from the plan alone: the transform,
most of the cost, runs only for runs that apply or print edits. ``hoist`` is VLL104's
fix, which moves a load made per request to module level, after which this
rewrite can apply. Where the rewrite is refused, ``offload`` offers the fix that
keeps the model and runs its blocking calls one at a time: off the event loop, or under a lock in a framework's
worker threads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from vllm_lint.diagnostics import Applicability
from vllm_lint.python.context import NodeEdit, PyContext, PyFix
from vllm_lint.python.rewrite.imports import NameTaken

if TYPE_CHECKING:
    from vllm_lint.python.rewrite.plan import ServerPlan
    from vllm_lint.python.rewrite.transform import NewCodeNames

FIX_TITLE = "Rewrite the module into an AsyncLLMEngine server (engine built at start-up, handlers async)"
BRIDGE_FIX_TITLE = "Rewrite the module onto AsyncLLMEngine (one engine on an event-loop thread; each request submits to it)"


@dataclass(frozen=True, slots=True)
class ServerRewriteOutcome:
    """The server rewrite offered for a finding, or why none is."""
    fix: PyFix | None
    refusal: str | None  # why the engine rewrite is not offered
    fallback_said: str = ""  # what offload.py's fix, offered instead, does

    def message_suffix(self) -> str:
        if not self.refusal:
            return ""
        if self.fix is not None:
            return f"; the engine rewrite is refused ({self.refusal}); the fix offered instead {self.fallback_said}"
        return f"; no automatic fix: {self.refusal}"


def server_rewrite(ctx: PyContext) -> ServerRewriteOutcome:
    """The fix, or why there is none. The plan and the names the new code imports decide both; the rewritten
    module (most of the cost) is computed only when the run reads edits (``ctx.fix_edits``)."""
    from vllm_lint.codecache import compiled_dataclasses

    # Imported here, not with the package (which the rules sharing its edit helpers import), and with the
    # code of their dataclasses kept (codecache.py).
    with compiled_dataclasses("server-rewrite"):
        from vllm_lint.python.rewrite.analysis import plan_server_rewrite
        from vllm_lint.python.rewrite.plan import Refusal
        from vllm_lint.python.rewrite.transform import NewCodeNames

    try:
        plan = plan_server_rewrite(ctx)
        try:
            names = NewCodeNames(ctx.module, plan)
        except NameTaken as exc:
            raise Refusal(str(exc)) from None
        title = _title(plan)
        if not ctx.fix_edits:
            return ServerRewriteOutcome(PyFix(title=title, applicability=Applicability.UNSAFE, build=None), None)
        new = _rewritten_module(ctx, plan, names)
    except Refusal as refusal:
        from vllm_lint.python.rewrite.offload import offload_fallback

        fallback = offload_fallback(ctx)
        if fallback is None:
            return ServerRewriteOutcome(None, str(refusal))
        return ServerRewriteOutcome(fallback.fix, str(refusal), fallback.said)
    module = ctx.module
    return ServerRewriteOutcome(PyFix(title=title, applicability=Applicability.UNSAFE, build=lambda: [NodeEdit(module, new)]), None)


def _rewritten_module(ctx: PyContext, plan: ServerPlan, names: NewCodeNames) -> cst.Module:
    """The module rewritten onto AsyncLLMEngine; raises Refusal when that cannot be done safely."""
    from vllm_lint.python.rewrite.plan import Refusal
    from vllm_lint.launch.model import fix_length
    from vllm_lint.python.rewrite.transform import rewrite_module

    try:
        new = rewrite_module(names, plan, lambda model: fix_length(model, ctx.settings, ctx.api))
    except NameTaken as exc:
        raise Refusal(str(exc)) from None
    try:
        cst.parse_module(new.code)
    except cst.ParserSyntaxError as exc:  # a bug in the rewrite: never offer it
        raise Refusal(f"the rewritten module would not parse ({exc.message})") from None
    return new


def _title(plan: ServerPlan) -> str:
    from vllm_lint.python.rewrite.plan import Bridge, BuiltInPlace

    if isinstance(plan.placement, Bridge) and plan.placement.raised_limits:
        from vllm_lint.python.rewrite.transform import GRADIO_CONCURRENCY_LIMIT

        return f"{BRIDGE_FIX_TITLE}; the Gradio events that call it run up to {GRADIO_CONCURRENCY_LIMIT} calls at once (concurrency_limit), so that requests batch"
    if isinstance(plan.placement, BuiltInPlace) and (plan.placement.one_device_servers or plan.placement.worker_checks):
        said = []
        if plan.placement.one_device_servers:
            said.append("LitServer(...) gets devices=1")
        if plan.placement.worker_checks:
            said.append("the server stops at start-up unless its workers_per_device setting is 1")
        return f"{FIX_TITLE}; {' and '.join(said)}, since one engine serves every request (LitServe would start a worker per GPU, each engine on GPU 0)"
    return BRIDGE_FIX_TITLE if isinstance(plan.placement, Bridge) else FIX_TITLE


__all__ = ["BRIDGE_FIX_TITLE", "FIX_TITLE", "ServerRewriteOutcome", "server_rewrite"]
