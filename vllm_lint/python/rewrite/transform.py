"""Apply a ServerPlan to a module: the CST edits, then the imports.

Everything the plan does not name keeps its nodes, so untouched code prints
byte for byte as before (LibCST codemod style). New code is written as source
text and parsed, which gives it the module's own newline and indentation.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from vllm_lint.launch.defaults import SAFE_GPU_MEMORY_UTILIZATION
from vllm_lint.python.edits import keyword_arg, with_keyword
from vllm_lint.python.rewrite.generation import SamplingKeywords
from vllm_lint.python.rewrite.imports import (
    ensure_imported,
    imported_as,
    remove_unused_imports,
)
from vllm_lint.python.rewrite.layout import BLANK, comment_lines, with_blank_lines
from vllm_lint.python.rewrite.names import FreshNames, names_in
from vllm_lint.python.rewrite.plan import (
    EngineInLifespan,
    HandlerCall,
    ModelKind,
    ResultShape,
    ServerPlan,
)
from vllm_lint.python.vocabulary import DEFAULT_MAX_TOKENS

_STREAM_NOTE = "# the stream is cumulative: its last output holds the whole completion"


class _Names:
    """The local names the new code uses, resolved (and imported) before it is written."""

    def __init__(self, module: cst.Module, plan: ServerPlan) -> None:
        self.module = module
        lifespan = isinstance(plan.placement, EngineInLifespan)
        creates_app = lifespan and plan.placement.app_call is None
        self.asynccontextmanager = self._use("contextlib", "asynccontextmanager") if lifespan else ""
        self.uuid4 = self._use("uuid", "uuid4")
        self.fastapi = self._use("fastapi", "FastAPI") if creates_app else (imported_as(self.module, {"fastapi.FastAPI"}) or "")
        self.async_engine_args = self._use("vllm", "AsyncEngineArgs")
        self.async_llm_engine = self._use("vllm", "AsyncLLMEngine")
        needs_sampling_params = any(not isinstance(c.sampling, cst.BaseExpression) for c in plan.calls)
        self.sampling_params = self._use("vllm", "SamplingParams") if needs_sampling_params else ""

    def _use(self, from_module: str, name: str) -> str:
        self.module, local = ensure_imported(self.module, from_module, name)
        return local


class _Rewriter(cst.CSTTransformer):
    """Replaces the nodes the plan names (matched by identity in the original tree)."""

    def __init__(self, replacements: dict[int, Callable[[cst.CSTNode], cst.CSTNode | cst.FlattenSentinel]]) -> None:
        super().__init__()
        self.replacements = replacements

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):
        replace = self.replacements.get(id(original_node))
        return replace(updated_node) if replace is not None else updated_node


def _result_code(shape: ResultShape, stream: str, completion: str) -> str:
    if shape is ResultShape.PIPELINE_FULL_TEXT:
        # transformers' text-generation returns the prompt followed by the completion (return_full_text=True).
        return f'[{{"generated_text": {stream}.prompt + {completion}.text}} for {completion} in {stream}.outputs]'
    if shape is ResultShape.PIPELINE_NEW_TEXT:
        return f'[{{"generated_text": {completion}.text}} for {completion} in {stream}.outputs]'
    if shape is ResultShape.REQUEST_OUTPUT_LIST:
        return f"[{stream}]"
    return stream


class ServerRewrite:
    def __init__(self, module: cst.Module, plan: ServerPlan, max_model_len: int) -> None:
        self.plan = plan
        self.max_model_len = max_model_len
        self.names = _Names(module, plan)
        self.module = self.names.module  # the original plus the imports the new code needs
        taken = names_in(self.module)
        self.fresh = FreshNames(taken)
        self.engine = plan.model_name if plan.kind is ModelKind.LLM else self.fresh.take("engine")
        self.lifespan = self.fresh.take("lifespan")

    def apply(self) -> cst.Module:
        replacements: dict[int, Callable] = {}
        per_handler: dict[int, FreshNames] = {}
        for call in self.plan.calls:
            fresh = per_handler.setdefault(id(call.handler), FreshNames(names_in(call.handler) | names_in(self.module)))
            stream, completion = fresh.take("request_output"), fresh.take("completion")
            stream_statement = self._stream_statement(call, stream)
            result = cst.parse_expression(_result_code(call.shape, stream, completion))
            replacements[id(call.replaced)] = lambda node, result=result: result
            replacements[id(call.statement)] = lambda node, stream_statement=stream_statement: cst.FlattenSentinel(
                [stream_statement.with_changes(leading_lines=node.leading_lines), node.with_changes(leading_lines=[])]
            )
        for handler in self.plan.handlers_made_async:
            replacements[id(handler)] = lambda node: node.with_changes(asynchronous=cst.Asynchronous())
        if self.plan.kind is ModelKind.LLM:
            replacements[id(self.plan.model_call)] = lambda node: self._engine_from_llm_call(node)
        placement = self.plan.placement
        if isinstance(placement, EngineInLifespan):
            if placement.app_call is not None:
                replacements[id(placement.app_call)] = lambda node: with_keyword(node, "lifespan", self.lifespan)
            replacements[id(self.module)] = lambda node: self._with_lifespan(self.module, node, placement)
        module = self.module.visit(_Rewriter(replacements))
        assert isinstance(module, cst.Module)
        removed = names_in(self.plan.model_call.func) | _names_of_dropped_arguments(self.plan)
        return remove_unused_imports(module, removed)

    # -- handlers -------------------------------------------------------------

    def _stream_statement(self, call: HandlerCall, stream: str) -> cst.BaseStatement:
        code = self.module.code_for_node
        if isinstance(call.sampling, SamplingKeywords):
            sampling = call.sampling.render(self.names.sampling_params)
        elif call.sampling is None:
            sampling = f"{self.names.sampling_params}(max_tokens={DEFAULT_MAX_TOKENS})"
        else:
            sampling = code(call.sampling)
        extra = "".join(f", {name}={code(value)}" for name, value in call.extra_arguments)
        source = (
            f"async for {stream} in {self.engine}.generate({code(call.prompt)}, {sampling}, "
            f"request_id={self.names.uuid4}().hex{extra}):\n"
            f"    pass  {_STREAM_NOTE}\n"
        )
        return cst.parse_statement(source)

    # -- the engine -----------------------------------------------------------

    def _engine_from_llm_call(self, call: cst.Call) -> cst.Call:
        """``LLM(model, k=v)`` -> ``AsyncLLMEngine.from_engine_args(AsyncEngineArgs(model=model, k=v, ...))``."""
        args = list(call.args)
        if args and args[0].keyword is None:
            args[0] = args[0].with_changes(
                keyword=cst.Name("model"),
                equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
            )
        engine_args = call.with_changes(func=cst.parse_expression(self.names.async_engine_args), args=args)
        if not keyword_arg(engine_args, "gpu_memory_utilization") and not keyword_arg(engine_args, "kv_cache_memory_bytes"):
            engine_args = with_keyword(engine_args, "gpu_memory_utilization", f"{SAFE_GPU_MEMORY_UTILIZATION:.2f}")
        if not keyword_arg(engine_args, "max_model_len"):
            engine_args = with_keyword(engine_args, "max_model_len", str(self.max_model_len))
        if not keyword_arg(engine_args, "enable_prefix_caching"):
            engine_args = with_keyword(engine_args, "enable_prefix_caching", "True")
        return cst.Call(func=cst.parse_expression(f"{self.names.async_llm_engine}.from_engine_args"), args=[cst.Arg(engine_args)])

    def _pipeline_engine_statement(self, model_statement: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
        arguments = "".join(f"        {name}={value},\n" for name, value in self.plan.engine_arguments)
        source = (
            f"{self.engine} = {self.names.async_llm_engine}.from_engine_args(\n"
            f"    {self.names.async_engine_args}(\n{arguments}    )\n)\n"
        )
        statement = cst.parse_statement(source)
        assert isinstance(statement, cst.SimpleStatementLine)
        return statement.with_changes(trailing_whitespace=model_statement.trailing_whitespace)

    def _with_lifespan(self, original: cst.Module, updated: cst.Module, placement: EngineInLifespan) -> cst.Module:
        """Module-level load -> ``engine = None`` + a lifespan handler that builds the engine (+ the app)."""
        pairs = list(zip(original.body, updated.body))
        model_updated = next(new for old, new in pairs if old is placement.model_statement)
        if self.plan.kind is ModelKind.PIPELINE:
            engine_statement = self._pipeline_engine_statement(model_updated)
        else:
            engine_statement = model_updated
        engine_statement = engine_statement.with_changes(leading_lines=comment_lines(model_updated.leading_lines))
        annotation = f": {self.names.fastapi}" if self.names.fastapi else ""
        template = cst.parse_module(
            f"{self.engine} = None\n\n\n"
            f"@{self.names.asynccontextmanager}\n"
            f"async def {self.lifespan}(app{annotation}):\n"
            f"    global {self.engine}\n"
            f"    {self.engine} = None\n"
            f"    yield\n"
            f"    {self.engine}.shutdown()\n"
        )
        placeholder, lifespan = template.body
        assert isinstance(lifespan, cst.FunctionDef) and isinstance(lifespan.body, cst.IndentedBlock)
        lifespan_body = list(lifespan.body.body)
        lifespan_body[1] = engine_statement
        lifespan = lifespan.with_changes(body=lifespan.body.with_changes(body=lifespan_body))
        block: list[cst.BaseStatement] = [placeholder, with_blank_lines(lifespan, 2)]
        if placement.app_call is None:
            app = cst.parse_statement(f"{placement.app_name} = {self.names.fastapi}(lifespan={self.lifespan})\n")
            block.append(with_blank_lines(app, 2))
        body: list[cst.BaseStatement] = []
        after_block = False
        for old, new in pairs:
            if old is placement.anchor:
                block[0] = with_blank_lines(block[0], 1 if body else 0)
                body.extend(block)
                after_block = True
            if old is placement.model_statement:
                continue  # moved into the lifespan handler
            if after_block:
                new = _at_least_blank_lines(new, 2)
                after_block = False
            body.append(new)
        return updated.with_changes(body=body)


def _at_least_blank_lines(statement: cst.BaseStatement, count: int) -> cst.BaseStatement:
    lines = list(statement.leading_lines)
    blanks = 0
    while blanks < len(lines) and lines[blanks].comment is None:
        blanks += 1
    if blanks >= count:
        return statement
    return statement.with_changes(leading_lines=[BLANK] * (count - blanks) + lines)


def _names_of_dropped_arguments(plan: ServerPlan) -> set[str]:
    """Names only the pipeline's own arguments used (``torch`` in torch_dtype=torch.float16, say)."""
    if plan.kind is not ModelKind.PIPELINE:
        return set()
    return names_in(plan.model_call)


def rewrite_module(module: cst.Module, plan: ServerPlan, max_model_len: int) -> cst.Module:
    return ServerRewrite(module, plan, max_model_len).apply()
