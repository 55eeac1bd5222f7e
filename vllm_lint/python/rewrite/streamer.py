"""A FastAPI handler that streams a pipeline through transformers' ``TextIteratorStreamer``::

    streamer = TextIteratorStreamer(pipe.tokenizer, skip_prompt=True)
    thread = Thread(target=pipe, args=(prompt,), kwargs={"streamer": streamer, "max_new_tokens": 64})
    thread.start()
    return StreamingResponse(streamer, media_type="text/plain")

becomes one engine request whose new text the response sends as it comes: the streamer,
the thread and its start go, and the response iterates the engine's stream instead. Only this exact shape is
taken; anything else about the streamer or the thread refuses, with the reason.
"""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from vllm_lint.python.model import FunctionInfo
from vllm_lint.python.rewrite.calls import ModelCalls
from vllm_lint.python.rewrite.generation import GENERATION_KEYWORDS, NotCarried, SamplingKeywords, sampling_keywords
from vllm_lint.python.rewrite.names import Occurrence, occurrences
from vllm_lint.python.rewrite.plan import CallMode, HandlerCall, Refusal, ResultShape
from vllm_lint.python.rewrite.shapes import directly_in, keyword_args, literal_flag, only_call, positional_args, snippet
from vllm_lint.python.vocabulary import thread_target
from vllm_lint.python.walk import walk

STREAMERS = frozenset({"transformers.TextIteratorStreamer", "transformers.generation.streamers.TextIteratorStreamer"})
_STREAMING_RESPONSES = frozenset({"fastapi.responses.StreamingResponse", "starlette.responses.StreamingResponse"})
_THREAD_OPTIONS = frozenset({"target", "args", "kwargs", "daemon"})
_STREAMER_OPTIONS = frozenset({"skip_prompt", "skip_special_tokens", "timeout"})  # timeout: how long the reader waits


class ThreadedStreams(ModelCalls):
    def threaded_stream(self, occurrence: Occurrence, construction: dict[str, cst.BaseExpression]) -> HandlerCall | None:
        """The engine request when ``occurrence`` is ``target=pipe`` of a Thread; None for any other use. The
        call's ``removed`` statements hold other uses of the model (``pipe.tokenizer``), which go with them."""
        arg, thread = occurrence.ancestor(1), occurrence.ancestor(2)
        if not (isinstance(arg, cst.Arg) and isinstance(thread, cst.Call) and thread_target(self.semantics, thread) is occurrence.name):
            return None
        shown = snippet(self.module, thread)
        function, mode = self.handler_of(thread, "pipeline")
        handler = self.semantics.handlers.get(function)
        if mode is not CallMode.AWAITED or handler is None or handler.framework != "fastapi" or function.is_method:
            raise Refusal(
                f"`{shown}` streams through a thread in a handler that is not a module-level FastAPI route or a LitServe predict(); "
                "iterate `engine.generate(...)` in the handler by hand and send each output's new text"
            )
        body = body_statements(function)
        thread_line, start_line = self._thread_statements(thread, function, body, shown)
        keywords = keyword_args(thread)
        if positional_args(thread) or any(a.star for a in thread.args) or set(keywords) - _THREAD_OPTIONS:
            raise Refusal(f"`{shown}` passes the thread arguments the rewrite cannot read")
        settings_line, settings = self._generation_kwargs(keywords.get("kwargs"), function, body, shown)
        streamer_name = settings.pop("streamer", None)
        if not isinstance(streamer_name, cst.Name):
            raise Refusal(f"`{shown}` runs the pipeline without a streamer= the handler streams")
        prompt = self._prompt(keywords.get("args"), settings, shown)
        streamer_line, streamer = self._streamer(streamer_name.value, body)
        response, response_line = self._response(streamer_name.value, function, {id(streamer_line), id(settings_line)}, streamer, thread)
        typing = self.string_typing(function, mode)
        prompt_code, batch_of_one = self.one_prompt(typing, prompt, thread, "pipeline")
        if batch_of_one:
            raise Refusal(f"`{shown}` streams a batch; a TextIteratorStreamer takes one prompt")
        generation = [(k, v) for k, v in construction.items() if k in GENERATION_KEYWORDS]
        generation += [(k, v) for k, v in settings.items() if k != "return_full_text"]  # the streamer sends new text only
        skip_special = keyword_args(streamer).get("skip_special_tokens")
        skips_special = skip_special is not None and literal_flag(skip_special.value) is True
        sampling = streamed_sampling(self.module, generation, "the pipeline", skips_special, pipeline=True)
        removed = tuple(s for s in (streamer_line, settings_line, thread_line, start_line) if s is not None)
        if any(inner_comments(line) for line in removed):
            raise Refusal("a comment sits inside the streamer's or the thread's statement, which the rewrite removes; move it first")
        return HandlerCall(
            thread, CallMode.THREAD_STREAMED, function.node, prompt_code, sampling, response, ResultShape.NEW_TEXT_PIECES,
            statement=response_line, removed=removed,
        )

    def _thread_statements(
        self, thread: cst.Call, function: FunctionInfo, body: list[cst.BaseStatement], shown: str
    ) -> tuple[cst.SimpleStatementLine, cst.SimpleStatementLine | None]:
        """``thread = Thread(...)`` and its ``thread.start()`` right after, or ``Thread(...).start()``; nothing
        else uses the thread."""
        for index, statement in enumerate(body):
            if isinstance(statement, cst.SimpleStatementLine) and _is_start_of(only_call(statement), thread):
                return statement, None
            assignment = plain_assignment(statement)
            if assignment is None or assignment[2] is not thread:
                continue
            name, line, _ = assignment
            uses = [o for o in occurrences(self.module, [name])[name] if o.function is function.node]
            start = body[index + 1] if index + 1 < len(body) else None
            start_call = only_call(start) if start is not None else None
            receiver = start_call.func.value if start_call is not None and isinstance(start_call.func, cst.Attribute) else None
            if (isinstance(start, cst.SimpleStatementLine) and isinstance(receiver, cst.Name) and receiver.value == name
                    and _is_start_of(start_call, receiver) and len(uses) == 2):
                return line, start  # the assignment and the start are the thread's only uses
            break
        raise Refusal(f"`{shown}` is not started right after it is made, or the thread is used again (joined, say)")

    def _generation_kwargs(
        self, value: cst.Arg | None, function: FunctionInfo, body: list[cst.BaseStatement], shown: str
    ) -> tuple[cst.SimpleStatementLine | None, dict[str, cst.BaseExpression]]:
        """The thread's kwargs= as keyword -> value: a dict literal or ``dict(...)``, or a variable set to one
        just for it (its line, removed with the thread)."""
        if value is None:
            raise Refusal(f"`{shown}` passes the pipeline no kwargs= (no streamer)")
        expr, line = value.value, None
        if isinstance(expr, cst.Name):
            name = expr.value
            lines = [assignment for candidate in body if (assignment := plain_assignment(candidate)) is not None and assignment[0] == name]
            uses = [o for o in occurrences(self.module, [name])[name] if o.function is function.node]
            if len(lines) != 1 or len(uses) != 2:
                raise Refusal(f"`{name}`, the thread's kwargs, is not one dict made for it alone")
            _, line, expr = lines[0]
        settings: dict[str, cst.BaseExpression] = {}
        keys = [_literal_key(e) for e in expr.elements] if isinstance(expr, cst.Dict) else []
        if isinstance(expr, cst.Dict) and all(key is not None for key in keys):
            for key, element in zip(keys, expr.elements):
                if key is not None:
                    settings[key] = element.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "dict" and not positional_args(expr) and not any(a.star for a in expr.args):
            settings = {k: a.value for k, a in keyword_args(expr).items()}
        else:
            raise Refusal(f"the thread's kwargs `{snippet(self.module, expr)}` are not a dict of literal keys (tokenized inputs, say)")
        return line, settings

    def _prompt(self, args: cst.Arg | None, settings: dict[str, cst.BaseExpression], shown: str) -> cst.BaseExpression:
        if args is None:
            if "text_inputs" not in settings:
                raise Refusal(f"`{shown}` passes the pipeline no prompt")
            return settings.pop("text_inputs")
        value = args.value
        if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == 1 and isinstance(value.elements[0], cst.Element):
            return value.elements[0].value
        raise Refusal(f"`{shown}` does not pass the pipeline exactly one prompt")

    def _streamer(self, name: str, body: list[cst.BaseStatement]) -> tuple[cst.SimpleStatementLine, cst.Call]:
        """``streamer = TextIteratorStreamer(tokenizer, skip_prompt=True, ...)`` in the handler's own block."""
        for statement in body:
            assignment = plain_assignment(statement)
            if assignment is not None and assignment[0] == name:
                _, line, streamer = assignment
                if not (isinstance(streamer, cst.Call) and self.semantics.callee(streamer) in STREAMERS):
                    break
                keywords = keyword_args(streamer)
                if len(positional_args(streamer)) != 1 or any(a.star for a in streamer.args) or set(keywords) - _STREAMER_OPTIONS:
                    raise Refusal(f"`{snippet(self.module, streamer)}` takes options the rewrite cannot carry over")
                if "skip_prompt" not in keywords or literal_flag(keywords["skip_prompt"].value) is not True:
                    raise Refusal(
                        f"`{snippet(self.module, streamer)}` also sends the prompt's text (no skip_prompt=True); "
                        "the engine's stream carries the new text only"
                    )
                return line, streamer
        raise Refusal(f"`{name}` is not a TextIteratorStreamer made in the handler")

    def _response(self, name: str, function: FunctionInfo, removed: set[int], streamer: cst.Call, thread: cst.Call) -> tuple[cst.Name, cst.SimpleStatementLine]:
        """The streamer in ``return StreamingResponse(streamer, ...)``, its only use besides the thread's kwargs,
        and the return's line."""
        uses = [o for o in occurrences(self.module, [name])[name] if o.function is function.node]
        response_uses: list[tuple[cst.Name, cst.SimpleStatementLine]] = []
        for o in uses:
            if isinstance(o.parent, cst.AssignTarget) or any(id(p) in removed or p is thread for p in o.parents):
                continue
            arg, call, statement = o.ancestor(1), o.ancestor(2), o.ancestor(3)
            if (isinstance(arg, cst.Arg) and arg.keyword is None and isinstance(call, cst.Call) and call.args[0] is arg
                    and self.semantics.callee(call) in _STREAMING_RESPONSES and isinstance(statement, cst.Return)
                    and isinstance(line := o.ancestor(4), cst.SimpleStatementLine) and directly_in(function.node, line)):
                response_uses.append((o.name, line))
            else:
                raise Refusal(f"the streamer is used as `{snippet(self.module, o.parent)}`; only `return StreamingResponse(streamer, ...)` is rewritten")
        if len(response_uses) != 1:
            raise Refusal("the streamer is not returned in one StreamingResponse(...)")
        return response_uses[0]


class _Comments(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def visit_Comment(self, node: cst.Comment) -> None:
        self.count += 1


def inner_comments(line: cst.SimpleStatementLine) -> bool:
    """Comments inside the statement, besides the ones above it and at its end (those move with the rewrite)."""
    visitor = _Comments()
    walk(line, visitor)
    around = sum(empty.comment is not None for empty in line.leading_lines) + (line.trailing_whitespace.comment is not None)
    return visitor.count > around


def streamed_sampling(module: cst.Module, settings: list[tuple[str, cst.BaseExpression]], caller: str, skips_special: bool, *, pipeline: bool) -> SamplingKeywords:
    """SamplingParams keywords for a reply a TextIteratorStreamer streamed from ``caller``'s generation settings;
    Refusal where the stream's reply could not be the same."""
    try:
        sampling = sampling_keywords(module, settings, pipeline=pipeline)
    except NotCarried as exc:
        raise Refusal(str(exc)) from None
    if sampling.counts_prompt:
        raise Refusal(f"max_length= counts the prompt's tokens; give {caller} max_new_tokens= for a streamed reply")
    if dict(sampling.keywords).get("n", "1") != "1":
        raise Refusal("num_return_sequences= asks for several completions; a TextIteratorStreamer streams one")
    if not skips_special:
        # The streamer decodes special tokens into the text, the end-of-text token that stops generation
        # too; vLLM skips special tokens by default and leaves the stopping token out of the text.
        given = dict(sampling.keywords)
        extra = [(k, v) for k, v in (("skip_special_tokens", "False"), ("include_stop_str_in_output", "True")) if k not in given]
        sampling = replace(sampling, keywords=(*sampling.keywords, *extra))
    return sampling


def body_statements(function: FunctionInfo) -> list[cst.BaseStatement]:
    """The statements of ``function``'s indented body (none for a one-line ``def f(): ...``)."""
    body = function.node.body
    return list(body.body) if isinstance(body, cst.IndentedBlock) else []


def plain_assignment(line: cst.BaseStatement | None) -> tuple[str, cst.SimpleStatementLine, cst.BaseExpression] | None:
    """(``x``, the line, the value) for a line that is just ``x = <value>``."""
    if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 and isinstance(line.body[0], cst.Assign):
        assign = line.body[0]
        if len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name):
            return assign.targets[0].target.value, line, assign.value
    return None


def _literal_key(element: cst.BaseDictElement) -> str | None:
    """The key of a dict element written as a string literal (``"streamer": ...``)."""
    if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString):
        key = element.key.evaluated_value
        return key if isinstance(key, str) else None
    return None


def _is_start_of(call: cst.Call | None, thread: cst.BaseExpression) -> bool:
    """``thread.start()``."""
    return (
        call is not None and isinstance(call.func, cst.Attribute) and call.func.value is thread
        and call.func.attr.value == "start" and not call.args
    )
