"""Apply a ServerPlan to a module: the CST edits, then the imports.

Everything the plan does not name keeps its nodes, so untouched code prints
byte for byte as before (LibCST codemod style). New code is written as source
text and parsed, which gives it the module's own newline and indentation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import libcst as cst

from vllm_lint.launch.defaults import SAFE_GPU_MEMORY_UTILIZATION
from vllm_lint.python.edits import keyword_arg, with_keyword
from vllm_lint.python.model import decorator_parts
from vllm_lint.python.rewrite.bridge import BridgeNames, bridge_source
from vllm_lint.python.rewrite.entries import held_on_object, is_entry
from vllm_lint.python.rewrite.generation import (
    CHAT_OUTPUTS_HELPER, DECODE_AS_TRANSFORMERS_HELPER, PIPELINE_DEFAULT_HELPER, SAMPLING_DEFAULTS_HELPER, SamplingKeywords,
)
from vllm_lint.python.rewrite.hf_generate import row_first
from vllm_lint.python.rewrite.imports import (
    ensure_imported,
    ensure_module_imported,
    imported_as,
    remove_unused_imports,
)
from vllm_lint.python.rewrite.layout import (
    BLANK, Statement, comment_lines, insert_before_first_block, with_blank_lines, without_blocking_remarks,
)
from vllm_lint.python.rewrite.lit_stream import LIT_NEW_TEXT_HELPER
from vllm_lint.python.rewrite.lifespan import lifespan_registration
from vllm_lint.python.rewrite.names import FreshNames, names_in
from vllm_lint.python.rewrite.plan import (
    Bridge,
    BuiltInPlace,
    CallMode,
    HandlerCall,
    Lifespan,
    ModelKind,
    ResultShape,
    ServerPlan,
)
from vllm_lint.python.rewrite.script import run_in_lifespan
from vllm_lint.python.vocabulary import DEFAULT_MAX_TOKENS
from vllm_lint.python.walk import walk

# Concurrent calls of a Gradio event the engine's requests may batch: Gradio's default is one at a time.
GRADIO_CONCURRENCY_LIMIT = 64
# Inputs a Modal container takes at once (modal.concurrent): Modal's default is one at a time.
MODAL_MAX_INPUTS = 64
_STREAM_NOTE = "# the stream is cumulative: its last output holds the whole completion"
_NEW_TEXT_HELPER = '''async def {name}(stream):
    """The text each of the engine's outputs adds, as transformers' TextIteratorStreamer(skip_prompt=True) sent it.

    When the client goes away, Starlette cancels the response, which closes the engine's stream: vLLM then
    aborts the request.
    """
    sent = 0
    async for request_output in stream:
        text = request_output.outputs[0].text  # the stream is cumulative: the text so far
        if len(text) > sent:
            yield text[sent:]
            sent = len(text)
'''


_FINAL_OUTPUT_HELPER = '''async def {name}(prompt, sampling_params{params}):
    """The engine's final output for one prompt, as LLM.generate() returns one per prompt."""
    async for request_output in {engine}.generate(prompt, sampling_params, request_id={uuid4}().hex{extra}):
        pass  # the stream is cumulative: its last output holds the whole completion
    return request_output
'''

# The handler reads the outputs' request ids: numbered in the order of the prompts, as LLM.generate numbers
# its requests (each id taken as the helper starts, which asyncio.gather does in the list's order).
_NUMBERED_FINAL_OUTPUT_HELPER = '''{numbers} = {itertools}.count()  # request ids "0", "1", ..., as LLM.generate() gives them


async def {name}(prompt, sampling_params{params}):
    """The engine's final output for one prompt, as LLM.generate() returns one per prompt."""
    async for request_output in {engine}.generate(prompt, sampling_params, request_id=str(next({numbers})){extra}):
        pass  # the stream is cumulative: its last output holds the whole completion
    return request_output
'''


# The frameworks whose lifespan handler is an async context manager given to the app (``lifespan=``); aiohttp and
# Quart take the async generator itself.
_CONTEXT_MANAGER_LIFESPANS = frozenset({"fastapi", "starlette"})
# Falcon's start-up and shutdown are a middleware class's methods: the generator's two halves
_LIFESPAN_NAMES = {"falcon": "EngineLifespan", "chainlit": "start_engine"}
_FALCON_MIDDLEWARE = """\
class {name}:
    async def process_startup(self, scope, event):
        pass

    async def process_shutdown(self, scope, event):
        pass
"""


class NewCodeNames:
    """The local names the new code uses, resolved (and imported) before it is written.

    Built before the rest of the rewrite: it is what can refuse (NameTaken), so a run that reports the fix
    without its edits builds only this (rewrite/__init__.py)."""

    def __init__(self, module: cst.Module, plan: ServerPlan) -> None:
        self.module = module
        # Every identifier in self.module (names_in), kept up to date as imports are added: one walk, not one
        # per import.
        self.taken = names_in(module)
        lifespan = isinstance(plan.placement, Lifespan) and plan.placement.framework in _CONTEXT_MANAGER_LIFESPANS
        creates_app = lifespan and isinstance(plan.placement, Lifespan) and plan.placement.app_call is None
        bridge = isinstance(plan.placement, Bridge)
        self.asyncio = self._use_module("asyncio") if bridge or any(c.gathered for c in plan.calls) or plan.scripts or plan.offloaded_calls else ""
        self.itertools = self._use_module("itertools") if any(c.numbered for c in plan.calls) else ""
        self.threading = self._use_module("threading") if bridge else ""
        self.asynccontextmanager = self._use("contextlib", "asynccontextmanager") if lifespan else ""
        # Random request ids, except where every request is in a gather with numbered ids (or there is none).
        numbered = any(c.numbered for c in plan.calls)
        requests = [c for c in plan.calls if not c.chat]  # the chat helper imports its own
        random_ids = bool(requests) and (not numbered or any(not c.gathered for c in requests))
        self.uuid4 = self._use("uuid", "uuid4") if bridge or random_ids else ""
        self.fastapi = self._use("fastapi", "FastAPI") if creates_app else (imported_as(self.module, {"fastapi.FastAPI"}) or "")
        self.async_engine_args = self._use("vllm", "AsyncEngineArgs")
        self.async_llm_engine = self._use("vllm", "AsyncLLMEngine")
        answers = {c.check.answer for c in plan.calls if c.check is not None}
        self.http_exception = self._use("fastapi", "HTTPException") if "fastapi" in answers else ""
        self.abort = self._use("flask", "abort") if "flask" in answers else ""
        self.http_bad_request = self._use("aiohttp.web", "HTTPBadRequest") if "aiohttp" in answers else ""
        self.falcon_bad_request = self._use("falcon", "HTTPBadRequest") if "falcon" in answers else ""
        chainlit = isinstance(plan.placement, Lifespan) and plan.placement.framework == "chainlit"
        self.chainlit = self._use_module("chainlit") if chainlit else ""
        self.quart_abort = self._use("quart", "abort") if "quart" in answers else ""
        self.starlette_exception = self._use("starlette.exceptions", "HTTPException") if "starlette" in answers else ""
        self.grpc = self._use_module("grpc") if "grpc" in answers else ""
        needs_sampling_params = any(not isinstance(c.sampling, cst.BaseExpression) for c in plan.calls) or bool(plan.default_params_calls)
        self.sampling_params = self._use("vllm", "SamplingParams") if needs_sampling_params else ""
        # The model's generation config, read once per engine by a helper (generation.py)
        self.decodes_as_transformers = any(isinstance(c.sampling, SamplingKeywords) for c in plan.calls)
        self.uses_sampling_defaults = any(c.sampling is None for c in plan.calls) or bool(plan.default_params_calls)

    def _use(self, from_module: str, name: str) -> str:
        before = self.module
        self.module, local = ensure_imported(self.module, from_module, name, names=self.taken)
        self._added(before, from_module, name)
        return local

    def _use_module(self, name: str) -> str:
        before = self.module
        self.module, local = ensure_module_imported(self.module, name, names=self.taken)
        self._added(before, name)
        return local

    def _added(self, before: cst.Module, *imported: str) -> None:
        """An import that changed the module wrote ``from a.b import name`` / ``import a.b``, or added ``name``
        to a ``from a.b import ...`` whose module names were there already: those identifiers are now in it."""
        if self.module is not before:
            self.taken |= {part for dotted in imported for part in dotted.split(".")}


def _halves(lifespan: cst.FunctionDef) -> tuple[list[cst.BaseStatement], list[cst.BaseStatement]]:
    """The statements of a lifespan generator before its ``yield`` and after it."""
    body = list(cst.ensure_type(lifespan.body, cst.IndentedBlock).body)
    split = next(i for i, s in enumerate(body) if isinstance(s, cst.SimpleStatementLine) and isinstance(s.body[0], cst.Expr)
                 and isinstance(s.body[0].value, cst.Yield))
    return body[:split], body[split + 1:]


class _Rewriter(cst.CSTTransformer):
    """Replaces the nodes the plan names (matched by identity in the original tree) and remembers what
    became of the module's top-level statements.

    LibCST copies every node a transformer visits; this one visits only the nodes on the way down to a
    replaced one (``on_path``), so the rest of the module is kept as it is (it would print the same)."""

    def __init__(self, replacements: dict[int, Callable[[cst.CSTNode], cst.CSTNode | cst.FlattenSentinel | cst.RemovalSentinel]],
                 top_level: Sequence[cst.BaseStatement], on_path: set[int] | None) -> None:
        super().__init__()
        self.replacements = replacements
        self.top_level = {id(statement) for statement in top_level}
        self.on_path = on_path  # None: visit every node
        self.updated: dict[int, cst.CSTNode | cst.FlattenSentinel | cst.RemovalSentinel] = {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        return self.on_path is None or id(node) in self.on_path or isinstance(node, cst.Module)

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):
        replace = self.replacements.get(id(original_node))
        result = replace(updated_node) if replace is not None else updated_node
        if id(original_node) in self.top_level:
            self.updated[id(original_node)] = result
        return result


class _Ancestors(cst.CSTVisitor):
    """The nodes above any of ``targets`` (ids), and the targets met."""

    def __init__(self, targets: set[int]) -> None:
        super().__init__()
        self.targets = targets
        self.above: set[int] = set()
        self.met: set[int] = set()
        self._stack: list[int] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if id(node) in self.targets:
            self.met.add(id(node))
            self.above.update(self._stack)
        self._stack.append(id(node))
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()


def _path_to_replaced(module: cst.Module, replacements: dict[int, Callable]) -> set[int] | None:
    """The ids of the nodes above a node to replace; None when the read-only walk (which skips whitespace
    and comments) does not meet every one of them: the rewrite then visits the whole module."""
    ancestors = _Ancestors(set(replacements))
    walk(module, ancestors)
    return ancestors.above if ancestors.met == ancestors.targets else None


def _result_code(call: HandlerCall, stream: str, completion: str) -> str:
    shape = call.shape
    if shape is ResultShape.PIPELINE_FULL_TEXT:
        # transformers' text-generation returns the prompt followed by the completion (return_full_text=True).
        code = f'[{{"generated_text": {stream}.prompt + {completion}.text}} for {completion} in {stream}.outputs]'
    elif shape is ResultShape.PIPELINE_NEW_TEXT:
        code = f'[{{"generated_text": {completion}.text}} for {completion} in {stream}.outputs]'
    elif shape is ResultShape.TOKEN_SEQUENCES:
        # model.generate returns each sequence as the prompt's tokens followed by the new ones.
        return f"[[*{stream}.prompt_token_ids, *{completion}.token_ids] for {completion} in {stream}.outputs]"
    elif shape is ResultShape.REQUEST_OUTPUT_LIST:
        return f"[{stream}]"
    else:
        return stream
    # A pipeline given a list of prompts returns one list of results per prompt.
    return f"[{code}]" if call.batch_of_one else code


class ServerRewrite:
    def __init__(self, names: NewCodeNames, plan: ServerPlan, max_model_len: Callable[[str | None], int]) -> None:
        self.plan = plan
        self.max_model_len = max_model_len
        self.names = names
        self.module = names.module  # the original plus the imports the new code needs
        self.fresh = FreshNames(names.taken)
        self.engine = self.fresh.take("engine") if plan.renames_model else plan.model_name
        self.lifespan = self.fresh.take(_LIFESPAN_NAMES.get(plan.placement.framework, "lifespan")) if isinstance(plan.placement, Lifespan) else ""
        self.helper = self.fresh.take("EngineThread") if isinstance(plan.placement, Bridge) else ""
        # Chainlit's shutdown callback, the second half of the lifespan
        self.lifespan_end = self.fresh.take("stop_engine") if isinstance(plan.placement, Lifespan) and plan.placement.framework == "chainlit" else ""
        streams = any(c.mode is CallMode.THREAD_STREAMED for c in plan.calls)
        self.new_text = self.fresh.take("new_text") if streams else ""
        self.lit_new_text = self.fresh.take("new_text") if any(c.mode is CallMode.LIT_STREAMED for c in plan.calls) else ""
        self.final_output = self.fresh.take("final_output") if any(c.gathered for c in plan.calls) else ""
        self.request_numbers = self.fresh.take("request_numbers") if any(c.numbered for c in plan.calls) else ""
        self.decode_as = self.fresh.take("decode_as_transformers") if names.decodes_as_transformers else ""
        self.generation_config = self.fresh.take("generation_config") if names.decodes_as_transformers else ""
        self.generation_configs = self.fresh.take("generation_config_by_engine") if names.decodes_as_transformers else ""
        self.sampling_defaults = self.fresh.take("sampling_defaults") if names.uses_sampling_defaults else ""
        self.sampling_defaults_read = self.fresh.take("sampling_defaults_by_engine") if names.uses_sampling_defaults else ""
        self.default_model = self.fresh.take("pipeline_default_model") if plan.default_model else ""
        self.chat_outputs = self.fresh.take("chat_outputs") if any(c.chat for c in plan.calls) else ""

    def apply(self) -> cst.Module:
        replacements: dict[int, Callable] = {}
        per_function: dict[int, FreshNames] = {}
        for call in self.plan.calls:
            if call.mode is CallMode.THREAD_STREAMED:
                pieces = cst.parse_expression(f"{self.new_text}({self._generate_call(call)})")
                replacements[id(call.replaced)] = lambda node, pieces=pieces: pieces
                for line in call.removed:
                    replacements[id(line)] = lambda node: cst.RemovalSentinel.REMOVE
                carried = _comments_of(call.removed)
                if carried:
                    replacements[id(call.statement)] = lambda node, carried=carried: node.with_changes(leading_lines=[*carried, *node.leading_lines])
                continue
            if call.mode is CallMode.LIT_STREAMED:
                self._lit_stream_edits(call, replacements)
                continue
            if call.mode is CallMode.STREAMED:
                stream_call = cst.parse_expression(self._generate_call(call))
                replacements[id(call.replaced)] = lambda node, stream_call=stream_call: stream_call
                continue
            fresh = per_function.setdefault(id(call.function), FreshNames(names_in(call.function) | self.names.taken))
            checks: list[cst.BaseStatement] = []
            if call.check is not None:
                call, checks = self._checked(call, fresh)
            elif call.bind_prompt:
                call, checks = self._bound(call, fresh)
            as_list = call.gathered or call.chat  # the final outputs as a list, as LLM.generate/chat return them
            stream, completion = fresh.take("request_outputs" if as_list else "request_output"), fresh.take("completion")
            if call.chat:
                stream_statement = self._chat_statement(call, stream)
            elif call.gathered:
                stream_statement = self._gathered_statement(call, stream, fresh.take("prompt"))
            else:
                stream_statement = self._stream_statement(call, stream)
            result = cst.parse_expression(stream if as_list else _result_code(call, stream, completion))
            replacements[id(call.replaced)] = lambda node, result=result: result
            length = cst.parse_expression(f"len({stream}.prompt_token_ids)")
            for read in call.prompt_lengths:
                replacements[id(read)] = lambda node, length=length: length
            ids = cst.parse_expression(f"[{stream}.prompt_token_ids]")
            for read in call.prompt_ids:
                replacements[id(read)] = lambda node, ids=ids: ids
            for listed in call.listed_rows:  # a row of the engine's output is a list of ids already
                replacements[id(listed)] = lambda node: cst.ensure_type(node.func, cst.Attribute).value.with_changes(lpar=node.lpar, rpar=node.rpar)
            for read in call.rows_first:
                replacements[id(read)] = lambda node: row_first(cst.ensure_type(node, cst.Subscript))
            for line in call.removed:
                replacements[id(line)] = lambda node: cst.RemovalSentinel.REMOVE
            replacements[id(call.statement)] = lambda node, new=[*checks, stream_statement]: _before(new, without_blocking_remarks(node))
        for function in (*self.plan.handlers_made_async, *self.plan.helpers_made_async):
            replacements[id(function)] = lambda node: node.with_changes(asynchronous=cst.Asynchronous())
        for awaited in self.plan.awaited_calls:
            if awaited.executor is not None:  # the await is there: the helper's call takes the executor call's place
                replacements[id(awaited.executor)] = lambda node: cst.ensure_type(node.args[1].value, cst.Lambda).body.with_changes(lpar=node.lpar, rpar=node.rpar)
                continue
            replacements[id(awaited.call)] = lambda node, parenthesized=awaited.parenthesized: _awaited(node, parenthesized)
        to_thread = cst.parse_expression(f"{self.names.asyncio}.to_thread") if self.plan.offloaded_calls else None
        for offloaded in self.plan.offloaded_calls:
            replacements[id(offloaded.call)] = lambda node, parenthesized=offloaded.parenthesized: _awaited(
                node.with_changes(func=to_thread, args=[cst.Arg(node.func), *node.args]), parenthesized)
        if self.new_text:
            self._insert_new_text_helper(replacements)
        if self.final_output:
            gathered = next(c for c in self.plan.calls if c.gathered)
            # The keywords carried into each request (lora_request=), None where a batch gives none.
            keywords = sorted({name for c in self.plan.calls if c.gathered for name, _ in c.extra_arguments})
            params, extra = "".join(f", {k}=None" for k in keywords), "".join(f", {k}={k}" for k in keywords)
            helper = _FINAL_OUTPUT_HELPER.format(
                name=self.final_output, engine=self._engine_at(gathered), uuid4=self.names.uuid4, params=params, extra=extra)
            if self.request_numbers:
                helper = _NUMBERED_FINAL_OUTPUT_HELPER.format(numbers=self.request_numbers, itertools=self.names.itertools,
                                                              name=self.final_output, engine=self._engine_at(gathered), params=params, extra=extra)
            self._insert_helper(replacements, gathered.function, helper)
        for line in self.plan.removed_lines:
            replacements[id(line)] = lambda node: cst.RemovalSentinel.REMOVE
        if self.plan.scripts:
            assert isinstance(self.plan.placement, Lifespan)  # check_script's
            main, app = self.fresh.take("main"), self.plan.placement.app_name
            for script in self.plan.scripts:
                replacements[id(script)] = lambda node, main=main, app=app: run_in_lifespan(node, main, self.lifespan, app, self.names.asyncio)
        if self.plan.default_params_calls:
            # LLM.get_default_sampling_params(): the model's generation config's settings (vllm/entrypoints/llm.py).
            engine = f"{self.engine}.engine" if isinstance(self.plan.placement, Bridge) else self.engine
            defaults = cst.parse_expression(f"{self.names.sampling_params}.from_optional(**{self.sampling_defaults}({engine}))")
            for params_call in self.plan.default_params_calls:
                replacements[id(params_call)] = lambda node, defaults=defaults: defaults
        engine_statement = self._engine_statement(self.plan.model_statement)
        for other in self.plan.alternatives:
            # Another branch's construction (an except's fallback, an else): built in its place, as the first is.
            assign = other.statement.body[0]
            assert isinstance(assign, cst.Assign)
            new_value = self._engine_from_llm_call(other.call, other.spread_engine_keywords)
            replacements[id(other.statement)] = lambda node, assign=assign, new_value=new_value: node.with_changes(
                body=[assign.with_changes(value=new_value)])
        for release in self.plan.releases:
            shutdown = cst.parse_statement(f"{self.engine}.shutdown()\n")
            replacements[id(release)] = lambda node, shutdown=shutdown: cst.FlattenSentinel(
                [shutdown.with_changes(leading_lines=node.leading_lines), node.with_changes(leading_lines=[])])
        for probe in self.plan.config_probes:
            replacements[id(probe)] = self._config_probe_edit
        placement = self.plan.placement
        if isinstance(placement, Bridge):
            for registration in placement.raised_limits:
                replacements[id(registration)] = lambda node: with_keyword(node, "concurrency_limit", str(GRADIO_CONCURRENCY_LIMIT))
        if isinstance(placement, BuiltInPlace) and placement.modal_class is not None:
            replacements[id(placement.modal_class)] = self._modal_class_edit(placement)
        if isinstance(placement, BuiltInPlace):
            for instantiation in placement.enable_async_calls:
                replacements[id(instantiation)] = lambda node: with_keyword(node, "enable_async", "True")
            for server in placement.one_device_servers:
                replacements[id(server)] = lambda node: with_keyword(node, "devices", "1")
            for statement, setting in placement.worker_checks:
                check = cst.parse_statement(
                    f"if {setting} != 1:\n"
                    f"    raise SystemExit(f\"workers_per_device={{{setting}}}: one vLLM engine serves every request; run one "
                    "worker (a second one would build a second engine on GPU 0)\")\n"
                )
                replacements[id(statement)] = lambda node, check=check: cst.FlattenSentinel(
                    [check.with_changes(leading_lines=node.leading_lines), node.with_changes(leading_lines=[])])
        top_level = list(self.module.body)
        moved_model = placement.moved_model if isinstance(placement, Lifespan) else None
        moved = moved_model is not None
        if moved_model is not None and not any(s is moved_model for s in top_level):
            replacements[id(moved_model)] = lambda node: cst.RemovalSentinel.REMOVE
        if (not moved or self.plan.instance is not None) and self.plan.model_dict is not None:
            # ``MODELS = {"llm": LLM(...)}`` -> ``MODELS = {}`` and ``MODELS["llm"] = <engine>``, where it was
            empty = cst.parse_statement(f"{self.plan.model_dict} = {{}}\n")
            replacements[id(self.plan.model_statement)] = lambda node: cst.FlattenSentinel(
                [empty.with_changes(leading_lines=node.leading_lines), engine_statement])
        elif not moved or self.plan.instance is not None:
            replacements[id(self.plan.model_statement)] = lambda node: engine_statement.with_changes(leading_lines=node.leading_lines)
        if isinstance(placement, Lifespan):
            for hook in placement.hooks:
                replacements[id(hook.function)] = lambda node, index=hook.decorator: node.with_changes(
                    decorators=[d for i, d in enumerate(node.decorators) if i != index]
                )
            if placement.app_statement is not None:  # aiohttp, Quart: registered after the app's statement
                registering = cst.parse_statement(lifespan_registration(placement.framework, placement.app_name, self.lifespan))
                replacements[id(placement.app_statement)] = lambda node, registering=registering: cst.FlattenSentinel([node, registering])
            elif placement.app_call is not None:
                replacements[id(placement.app_call)] = lambda node: with_keyword(node, "lifespan", self.lifespan)
        rewriter = _Rewriter(replacements, top_level, _path_to_replaced(self.module, replacements))
        module = self.module.visit(rewriter)
        assert isinstance(module, cst.Module)
        if isinstance(placement, Lifespan):
            module = self._with_lifespan(module, rewriter, top_level, placement, engine_statement)
        elif isinstance(placement, Bridge):
            module = self._with_bridge(module, rewriter, top_level, placement)
        module = self._with_decoding_helpers(module)
        removed = names_in(self.plan.model_call.func) | _names_of_dropped_arguments(self.plan)
        removed |= {name for call in self.plan.calls for line in call.removed for name in names_in(line)}
        removed |= {name for line in (self.plan.model_statement, *self.plan.removed_lines) for name in names_in(line)}
        removed |= {name for other in self.plan.alternatives for name in names_in(other.statement)}
        return remove_unused_imports(module, removed)

    def _config_probe_edit(self, node: cst.CSTNode) -> cst.CSTNode:
        """``llm.llm_engine`` -> ``llm.vllm_config`` (its ``.lora_config`` then read there); ``hasattr(llm,
        "llm_engine")`` -> ``hasattr(llm, "vllm_config")``; on the bridge, the engine is its thread's ``.engine``."""
        bridged = isinstance(self.plan.placement, Bridge)
        if isinstance(node, cst.Attribute):
            owner = cst.Attribute(value=node.value, attr=cst.Name("engine")) if bridged else node.value
            return node.with_changes(value=owner, attr=cst.Name("vllm_config"))
        assert isinstance(node, cst.Call)
        first, second = node.args[0], node.args[1]
        assert isinstance(second.value, cst.SimpleString)
        quote = second.value.quote
        args = [
            first.with_changes(value=cst.Attribute(value=first.value, attr=cst.Name("engine"))) if bridged else first,
            second.with_changes(value=cst.SimpleString(f"{second.value.prefix}{quote}vllm_config{quote}")),
            *node.args[2:],
        ]
        return node.with_changes(args=args)

    def _modal_class_edit(self, placement: BuiltInPlace) -> Callable[[cst.CSTNode], cst.CSTNode]:
        """A Modal class: ``@modal.concurrent(max_inputs=...)`` under its ``@app.cls(...)`` (unless it takes
        concurrent inputs already) and a ``@modal.exit()`` method that shuts the engine down."""
        modal = (imported_as(self.module, {"modal.concurrent"}) or "modal.concurrent").rsplit(".", 1)[0]
        klass = placement.modal_class
        assert klass is not None
        exit_name = FreshNames(names_in(klass)).take("shutdown_engine")
        method = cst.parse_statement(
            f"@{modal}.exit()\ndef {exit_name}(self):\n    {self.plan.model_name}.shutdown()\n",
            config=self.module.config_for_parsing,
        )
        concurrent = cst.Decorator(cst.parse_expression(f"{modal}.concurrent(max_inputs={MODAL_MAX_INPUTS})"))

        def edit(node: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(node, cst.ClassDef) and isinstance(node.body, cst.IndentedBlock)
            decorators = list(node.decorators)
            if placement.modal_concurrent:
                index = next(i for i, d in enumerate(decorators) if _is_cls_decorator(d))
                decorators.insert(index + 1, concurrent)
            body = [*node.body.body, method.with_changes(leading_lines=[cst.EmptyLine(indent=False)])]
            return node.with_changes(decorators=decorators, body=node.body.with_changes(body=body))

        return edit

    # -- handlers -------------------------------------------------------------

    def _insert_new_text_helper(self, replacements: dict[int, Callable]) -> None:
        """The async generator a streamed response sends, right before the first handler that uses it."""
        first = next(c.function for c in self.plan.calls if c.mode is CallMode.THREAD_STREAMED)
        self._insert_helper(replacements, first, _NEW_TEXT_HELPER.format(name=self.new_text))

    def _lit_stream_edits(self, call: HandlerCall, replacements: dict[int, Callable]) -> None:
        """A LitServe predict(): its loop over the streamer iterates the engine's new text (``async for``), the
        streamer, the thread and their lines go, predict() becomes an async generator, and the helper goes
        before the API's class."""
        lit = call.lit
        assert lit is not None
        pieces = f"{self.lit_new_text}({', '.join((self._generate_call(call), *lit.stream_arguments))})"
        before: list[Statement] = [_statement(source) for source in lit.before]
        # The comments of the lines removed before the loop move above it (the streamer's line is in setup(),
        # and a join after the loop goes with what its comments say).
        carried = _comments_of(tuple(line for line in call.removed if id(line) in lit.before_loop))

        def loop(node: cst.CSTNode) -> cst.CSTNode | cst.FlattenSentinel:
            new: Statement
            if isinstance(node, cst.For):
                new = node.with_changes(iter=cst.parse_expression(pieces), asynchronous=cst.Asynchronous())
            else:  # ``yield from streamer``, which an async generator cannot write
                assert isinstance(node, cst.SimpleStatementLine)
                piece = FreshNames(names_in(call.function)).take("text")
                new = _statement(f"async for {piece} in {pieces}:\n    yield {piece}\n")
            statements = [*before, new.with_changes(leading_lines=[])]
            first = statements[0]
            statements[0] = first.with_changes(leading_lines=[*carried, *node.leading_lines, *(first.leading_lines if before else [])])
            return cst.FlattenSentinel(statements) if len(statements) > 1 else statements[0]

        replacements[id(lit.loop)] = loop
        for line in call.removed:
            replacements[id(line)] = lambda node: cst.RemovalSentinel.REMOVE
        replacements[id(call.function)] = lambda node: node.with_changes(asynchronous=cst.Asynchronous())
        for to in lit.unplaced:
            replacements[id(to)] = lambda node: node.func.value.with_changes(lpar=node.lpar, rpar=node.rpar)
        if lit.encode_loop is not None and lit.encode_function is not None:
            replacements[id(lit.encode_loop)] = lambda node: node.with_changes(asynchronous=cst.Asynchronous())
            replacements[id(lit.encode_function)] = lambda node: node.with_changes(asynchronous=cst.Asynchronous())
        if id(lit.anchor) not in replacements:
            helper = [with_blank_lines(s, 2) for s in cst.parse_module(LIT_NEW_TEXT_HELPER.format(name=self.lit_new_text)).body]
            replacements[id(lit.anchor)] = lambda node: cst.FlattenSentinel([*helper, node])

    def _insert_helper(self, replacements: dict[int, Callable], before: cst.FunctionDef, source: str) -> None:
        """A module-level helper, right before the handler ``before``."""
        helpers = [with_blank_lines(statement, 2) for statement in cst.parse_module(source).body]
        made_async = replacements.get(id(before))
        replacements[id(before)] = lambda node: cst.FlattenSentinel([*helpers, made_async(node) if made_async else node])

    def _gathered_statement(self, call: HandlerCall, outputs: str, item: str) -> cst.BaseStatement:
        """``outputs = await asyncio.gather(...)``: one engine request per prompt of the list, in its order."""
        carried = "".join(f", {name}={self.module.code_for_node(value)}" for name, value in call.extra_arguments)
        return cst.parse_statement(
            f"{outputs} = await {self.names.asyncio}.gather(*({self.final_output}({item}, {self._sampling(call)}{carried}) for {item} in {call.prompt}))\n"
        )

    def _chat_statement(self, call: HandlerCall, outputs: str) -> cst.BaseStatement:
        """``outputs = await chat_outputs(engine, messages, params, <LLM.chat()'s keywords>)``; in a sync framework's
        view, the same coroutine run on the bridge's event loop, where the engine runs."""
        options = "".join(f", {name}={self.module.code_for_node(value)}" for name, value in call.extra_arguments)
        engine = self._engine_at(call)
        if call.mode is CallMode.BRIDGED:
            chat = f"{self.chat_outputs}({engine}.engine, {call.prompt}, {self._sampling(call)}{options})"
            return cst.parse_statement(f"{outputs} = {engine}._run({chat})\n")
        return cst.parse_statement(f"{outputs} = await {self.chat_outputs}({engine}, {call.prompt}, {self._sampling(call)}{options})\n")

    def _checked(self, call: HandlerCall, fresh: FreshNames) -> tuple[HandlerCall, list[cst.BaseStatement]]:
        """The statements that check the prompt is one string (evaluated once, into a local, when computed),
        and the call reading the prompt from where they leave it."""
        check = call.check
        assert check is not None
        statements: list[cst.BaseStatement] = []
        if check.bind or call.bind_prompt:
            call, statements = self._bound(call, fresh)
        prompt = call.prompt
        message = '"the prompt must be one string"'
        answer = {
            "fastapi": f"raise {self.names.http_exception}(status_code=422, detail={message})",
            "flask": f"{self.names.abort}(400, description={message})",
            "aiohttp": f"raise {self.names.http_bad_request}(text={message})",
            "quart": f"{self.names.quart_abort}(400, description={message})",
            "falcon": f"raise {self.names.falcon_bad_request}(description={message})",
            "starlette": f"raise {self.names.starlette_exception}(status_code=400, detail={message})",
            "grpc": f"{check.context}.abort({self.names.grpc}.StatusCode.INVALID_ARGUMENT, {message})",
            "raise": f"raise TypeError({message})",
        }[check.answer]
        statements.append(cst.parse_statement(f"if not isinstance({prompt}, str):\n    {answer}\n"))
        return call, statements

    def _bound(self, call: HandlerCall, fresh: FreshNames) -> tuple[HandlerCall, list[cst.BaseStatement]]:
        """The statement that evaluates a computed prompt once, into a local, and the call reading that local."""
        prompt = fresh.take("prompt")
        return replace(call, prompt=prompt), [cst.parse_statement(f"{prompt} = {call.prompt}\n")]

    def _engine_prompt(self, call: HandlerCall) -> str:
        """What the engine is given as the prompt: the prompt string, with a processor's images when it had some,
        or the ids of the original tokenizer call where that call changed them (truncation=...)."""
        if call.token_options and call.tokenizer is not None:
            tokenizer = self.module.code_for_node(call.tokenizer)
            return f'{{"prompt_token_ids": {tokenizer}({call.prompt}{call.token_options})["input_ids"]}}'
        return call.prompt if call.media is None else call.media.engine_input(call.prompt)

    def _sampling(self, call: HandlerCall) -> str:
        engine = f"{self._engine_at(call)}.engine" if call.mode is CallMode.BRIDGED else self._engine_at(call)
        if isinstance(call.sampling, SamplingKeywords):
            prompt_tokens = f"len({engine}.get_tokenizer().encode({call.prompt}))"
            if call.tokenizer is not None:  # the tokenizer the original counted the prompt with
                prompt_tokens = f"len({self.module.code_for_node(call.tokenizer)}({call.prompt}{call.token_options}).input_ids)"
            return call.sampling.render(self.names.sampling_params, f"{self.decode_as}({engine}", prompt_tokens)
        if call.sampling is None:
            # LLM.generate()'s own defaults (the model's generation config), with the longer answer VLL302 asks for
            return f'{self.names.sampling_params}.from_optional(**{{"max_tokens": {DEFAULT_MAX_TOKENS}, **{self.sampling_defaults}({engine})}})'
        return self.module.code_for_node(call.sampling)

    def _with_decoding_helpers(self, module: cst.Module) -> cst.Module:
        """The helpers that read the model's generation config, after the module's leading imports (before its
        first definition or block, which may call them)."""
        sources = []
        if self.decode_as:
            sources.append(DECODE_AS_TRANSFORMERS_HELPER.format(
                configs=self.generation_configs, config=self.generation_config, name=self.decode_as))
        if self.sampling_defaults:
            sources.append(SAMPLING_DEFAULTS_HELPER.format(read=self.sampling_defaults_read, name=self.sampling_defaults))
        if self.default_model:
            sources.append(PIPELINE_DEFAULT_HELPER.format(name=self.default_model))
        if self.chat_outputs:
            sources.append(CHAT_OUTPUTS_HELPER.format(name=self.chat_outputs))
        if not sources:
            return module
        source = "\n\n".join(sources).replace("\n", module.default_newline)  # the docstrings' line breaks too
        helpers = [s for s in cst.parse_module(source, config=module.config_for_parsing).body if isinstance(s, Statement)]
        return insert_before_first_block(module, helpers)

    def _generate_call(self, call: HandlerCall) -> str:
        """``engine.generate(prompt, params, request_id=...)``: one request, streamed."""
        code = self.module.code_for_node
        extra = "".join(f", {name}={code(value)}" for name, value in call.extra_arguments)
        return f"{self._engine_at(call)}.generate({self._engine_prompt(call)}, {self._sampling(call)}, request_id={self.names.uuid4}().hex{extra})"

    def _engine_at(self, call: HandlerCall) -> str:
        """The engine as the call reaches it: an LLM held on an object is read as the call read it (``self.llm``
        in its class, ``server.llm`` through the module's one object of it)."""
        receiver = call.call.func.value if isinstance(call.call.func, cst.Attribute) else None
        if self.plan.kind is ModelKind.LLM and held_on_object(self.plan.model_name) and receiver is not None:
            return self.module.code_for_node(receiver)
        return self.engine

    def _stream_statement(self, call: HandlerCall, stream: str) -> cst.BaseStatement:
        if call.mode is CallMode.BRIDGED:
            return cst.parse_statement(f"{stream} = {self._engine_at(call)}.generate({self._engine_prompt(call)}, {self._sampling(call)})\n")
        source = f"async for {stream} in {self._generate_call(call)}:\n    pass  {_STREAM_NOTE}\n"
        return cst.parse_statement(source)

    # -- the engine -----------------------------------------------------------

    def _engine_statement(self, model_statement: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
        """``name = pipeline(...)`` / ``name = LLM(...)`` -> ``engine = AsyncLLMEngine.from_engine_args(...)``."""
        if self.plan.kind.loaded_by_name:
            return self._pipeline_engine_statement(model_statement)
        assign = model_statement.body[0]
        assert isinstance(assign, cst.Assign)
        new_value = self._engine_from_llm_call(self.plan.model_call, self.plan.spread_engine_keywords)
        if self.plan.model_dict is not None:  # the dict's literal: the entry gets an assignment of its own
            entry = cst.ensure_type(cst.parse_statement(f"{self.engine} = None\n"), cst.SimpleStatementLine)
            return entry.with_changes(body=[cst.ensure_type(entry.body[0], cst.Assign).with_changes(value=new_value)],
                                      trailing_whitespace=model_statement.trailing_whitespace)
        return model_statement.with_changes(body=[assign.with_changes(value=new_value)])

    @property
    def _engine_factory(self) -> str:
        """What turns AsyncEngineArgs into the engine the handlers use: the bridge's thread, or the engine."""
        return self.helper or f"{self.names.async_llm_engine}.from_engine_args"

    def _engine_from_llm_call(self, call: cst.Call, spread: frozenset[str]) -> cst.Call:
        """``LLM(model, k=v)`` -> ``AsyncLLMEngine.from_engine_args(AsyncEngineArgs(model=model, k=v, ...))``;
        ``spread``: the keys its ``**dict`` arguments give."""
        args = list(call.args)
        if args and args[0].keyword is None and not args[0].star:
            args[0] = args[0].with_changes(
                keyword=cst.Name("model"),
                equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
            )
        engine_args = call.with_changes(func=cst.parse_expression(self.names.async_engine_args), args=args)

        def given(name: str) -> bool:
            return name in spread or bool(keyword_arg(engine_args, name))

        if not given("gpu_memory_utilization") and not given("kv_cache_memory_bytes"):
            engine_args = with_keyword(engine_args, "gpu_memory_utilization", f"{SAFE_GPU_MEMORY_UTILIZATION:.2f}")
        if not given("max_model_len"):
            model = keyword_arg(engine_args, "model")
            name = model.value.evaluated_value if model is not None and isinstance(model.value, cst.SimpleString) else None
            length = self.max_model_len(name if isinstance(name, str) else None)  # the model's limit where lower
            engine_args = with_keyword(engine_args, "max_model_len", str(length))
        if not given("enable_prefix_caching"):
            engine_args = with_keyword(engine_args, "enable_prefix_caching", "True")
        return cst.Call(func=cst.parse_expression(self._engine_factory), args=[cst.Arg(engine_args)])

    def _pipeline_engine_statement(self, model_statement: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
        arguments = "".join(f"        {name}={value},\n" for name, value in self.plan.engine_arguments)
        if self.plan.default_model:
            task, longest = self.plan.default_model
            arguments = f"        **{self.default_model}(\"{task}\", {longest}),\n" + arguments
        source = (
            f"{self.engine} = {self._engine_factory}(\n"
            f"    {self.names.async_engine_args}(\n{arguments}    )\n)\n"
        )
        statement = cst.parse_statement(source)
        assert isinstance(statement, cst.SimpleStatementLine)
        return statement.with_changes(trailing_whitespace=model_statement.trailing_whitespace)

    def _lifespan_block(self, placement: Lifespan, engine_statement: cst.SimpleStatementLine) -> list[Statement]:
        """[``engine = None``,] the lifespan handler [, ``app = FastAPI(lifespan=...)``]."""
        moved = placement.moved_model is not None
        # What the lifespan handler starts: the engine, or the one object whose __init__ builds it.
        started = self.plan.instance or self.engine
        engine = f"{self.plan.instance}.{self.engine.split('.', 1)[1]}" if self.plan.instance else self.engine
        annotation = f": {self.names.fastapi}" if self.names.fastapi else ""
        startup = [h for h in placement.hooks if h.event == "startup"]
        shutdown = [h for h in placement.hooks if h.event == "shutdown"]

        def hook_call(function: cst.FunctionDef) -> str:
            return f"    {'await ' if function.asynchronous else ''}{function.name.value}()\n"

        # A dict's entry is filled in, not bound: no ``global``, and no placeholder before start-up (but the dict
        # itself, where its literal held the model).
        entry = is_entry(started)
        decorator = f"@{self.names.asynccontextmanager}\n" if placement.framework in _CONTEXT_MANAGER_LIFESPANS else ""
        parameters = "" if placement.framework == "quart" else f"app{annotation}"  # Quart calls a while_serving function with none
        source = (
            decorator
            + f"async def {self.lifespan}({parameters}):\n"
            + ((f"    {started} = None\n" if entry else f"    global {started}\n    {started} = None\n") if moved else "")
            + "".join(hook_call(h.function) for h in startup)
            + "    yield\n"
            + "".join(hook_call(h.function) for h in shutdown)
            + f"    {engine}.shutdown()\n"
        )
        lifespan = cst.parse_statement(source)
        assert isinstance(lifespan, cst.FunctionDef) and isinstance(lifespan.body, cst.IndentedBlock)
        block: list[Statement] = []
        if moved:
            assert placement.moved_model is not None
            lifespan_body = list(lifespan.body.body)
            started_statement = placement.moved_model if self.plan.instance else engine_statement
            lifespan_body[0 if entry else 1] = started_statement.with_changes(leading_lines=comment_lines(placement.moved_model.leading_lines))
            lifespan = lifespan.with_changes(body=lifespan.body.with_changes(body=lifespan_body))
            if entry and self.plan.model_dict is not None:
                block.append(cst.parse_statement(f"{self.plan.model_dict} = {{}}\n"))
            elif not entry and not self._module_sets_none(started):
                block.append(cst.parse_statement(f"{started} = None\n"))
        if placement.framework == "chainlit":
            start, stop = self._chainlit_callbacks(lifespan)
            block.extend([with_blank_lines(start, 2) if block else start, with_blank_lines(stop, 2)])
        else:
            made = self._falcon_middleware(lifespan) if placement.framework == "falcon" else lifespan
            block.append(with_blank_lines(made, 2) if block else made)
        if placement.app_call is None and placement.framework == "fastapi":
            app = cst.parse_statement(f"{placement.app_name} = {self.names.fastapi}(lifespan={self.lifespan})\n")
            block.append(with_blank_lines(app, 2))
        return block

    def _chainlit_callbacks(self, lifespan: cst.FunctionDef) -> tuple[cst.FunctionDef, cst.FunctionDef]:
        """The lifespan generator as Chainlit's two callbacks: what runs before its ``yield`` in an
        ``@cl.on_app_startup`` function, the rest in an ``@cl.on_app_shutdown`` one."""
        before, after = _halves(lifespan)
        functions = []
        for hook, name, body in (("on_app_startup", self.lifespan, before), ("on_app_shutdown", self.lifespan_end, after)):
            function = cst.ensure_type(cst.parse_statement(f"@{self.names.chainlit}.{hook}\nasync def {name}():\n    pass\n"), cst.FunctionDef)
            functions.append(function.with_changes(body=cst.ensure_type(function.body, cst.IndentedBlock).with_changes(body=body)))
        return functions[0], functions[1]

    def _falcon_middleware(self, lifespan: cst.FunctionDef) -> cst.ClassDef:
        """The lifespan generator as Falcon middleware: what runs before its ``yield`` in ``process_startup``, the
        rest in ``process_shutdown``."""
        before, after = _halves(lifespan)
        middleware = cst.ensure_type(cst.parse_statement(_FALCON_MIDDLEWARE.format(name=self.lifespan)), cst.ClassDef)
        startup, shutdown = (cst.ensure_type(s, cst.FunctionDef) for s in cst.ensure_type(middleware.body, cst.IndentedBlock).body)
        halves = {id(startup): before, id(shutdown): after}
        methods = [m.with_changes(body=cst.ensure_type(m.body, cst.IndentedBlock).with_changes(body=halves[id(m)])) for m in (startup, shutdown)]
        return middleware.with_changes(body=cst.ensure_type(middleware.body, cst.IndentedBlock).with_changes(body=methods))

    def _module_sets_none(self, name: str) -> bool:
        """``name = None`` is already a top-level statement (before start-up, handlers see None)."""
        for statement in self.module.body:
            if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
                small = statement.body[0]
                if (
                    isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name)
                    and small.targets[0].target.value == name and isinstance(small.value, cst.Name) and small.value.value == "None"
                ):
                    return True
        return False

    def _with_lifespan(
        self, updated: cst.Module, rewriter: _Rewriter, top_level: Sequence[cst.BaseStatement], placement: Lifespan, engine_statement: cst.SimpleStatementLine
    ) -> cst.Module:
        """The lifespan block inserted before the anchor; a module-level load taken out (it moved into the block)."""
        block = self._lifespan_block(placement, engine_statement)
        body: list[cst.BaseStatement] = []
        after_block = False
        for old in top_level:
            new = rewriter.updated.get(id(old), old)
            if old is placement.anchor:
                # PEP 8: two blank lines before a top-level def, one before the placeholder assignment.
                block[0] = with_blank_lines(block[0], (2 if isinstance(block[0], cst.FunctionDef | cst.ClassDef) else 1) if body else 0)
                body.extend(block)
                after_block = True
            if old is placement.moved_model:
                continue  # moved into the lifespan handler
            if isinstance(new, cst.RemovalSentinel):
                continue
            if isinstance(new, cst.FlattenSentinel):
                body.extend(new.nodes)
                continue
            assert isinstance(new, Statement)  # what a top-level statement became, when not removed or several
            if after_block:
                new = _at_least_blank_lines(new, 2)
                after_block = False
            body.append(new)
        return updated.with_changes(body=body)


    def _with_bridge(self, updated: cst.Module, rewriter: _Rewriter, top_level: Sequence[cst.BaseStatement], placement: Bridge) -> cst.Module:
        """The bridge's helper class inserted before the anchor, two blank lines around it."""
        names = self.names
        source = bridge_source(BridgeNames(self.helper, names.asyncio, names.threading, names.uuid4, names.async_llm_engine), placement.framework)
        helper = cst.parse_statement(source)
        body: list[cst.BaseStatement] = []
        for old in top_level:
            new = rewriter.updated.get(id(old), old)
            if old is placement.anchor:
                body.append(with_blank_lines(helper, 2) if body else helper)
                new = _at_least_blank_lines(new, 2) if isinstance(new, Statement) else new
            if isinstance(new, cst.FlattenSentinel):
                body.extend(new.nodes)
            elif isinstance(new, Statement):
                body.append(new)
        return updated.with_changes(body=body)


def _is_cls_decorator(decorator: cst.Decorator) -> bool:
    target, _ = decorator_parts(decorator)
    return isinstance(target, cst.Attribute) and target.attr.value == "cls"


def _awaited(call: cst.Call, parenthesized: bool) -> cst.Await:
    await_ = cst.Await(expression=call.with_changes(lpar=[], rpar=[]), lpar=call.lpar, rpar=call.rpar)
    if parenthesized and not call.lpar:
        await_ = await_.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return await_


def _statement(source: str) -> Statement:
    statement = cst.parse_statement(source)
    assert isinstance(statement, Statement)
    return statement


def _comments_of(lines: tuple[cst.BaseStatement, ...]) -> list[cst.EmptyLine]:
    """The comments above and at the end of statements the rewrite removes, as lines of their own."""
    carried = []
    for line in lines:
        assert isinstance(line, (cst.SimpleStatementLine, cst.BaseCompoundStatement))  # every statement is one
        carried += [empty for empty in line.leading_lines if empty.comment is not None]
        if isinstance(line, cst.SimpleStatementLine) and line.trailing_whitespace.comment is not None:
            carried.append(cst.EmptyLine(comment=line.trailing_whitespace.comment))
    return carried


def _at_least_blank_lines(statement: Statement, count: int) -> Statement:
    lines = list(statement.leading_lines)
    blanks = 0
    while blanks < len(lines) and lines[blanks].comment is None:
        blanks += 1
    if blanks >= count:
        return statement
    return statement.with_changes(leading_lines=[BLANK] * (count - blanks) + lines)


def _before(new: list[cst.BaseStatement], node: cst.SimpleStatementLine) -> cst.FlattenSentinel:
    """The statements ``new`` in place of ``node``'s leading lines, then ``node``."""
    return cst.FlattenSentinel([new[0].with_changes(leading_lines=node.leading_lines), *new[1:], node.with_changes(leading_lines=[])])


def _names_of_dropped_arguments(plan: ServerPlan) -> set[str]:
    """Names only the pipeline's own arguments used (``torch`` in torch_dtype=torch.float16, say)."""
    if not plan.kind.loaded_by_name:
        return set()
    return names_in(plan.model_call)


def rewrite_module(names: NewCodeNames, plan: ServerPlan, max_model_len: Callable[[str | None], int]) -> cst.Module:
    """The module rewritten by ``plan``; ``names``: NewCodeNames(module, plan)."""
    return ServerRewrite(names, plan, max_model_len).apply()
