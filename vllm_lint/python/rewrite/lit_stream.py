"""A LitServe API whose predict() streams a generation thread through transformers' ``TextIteratorStreamer``::

    def setup(self, device):
        self.tokenizer = AutoTokenizer.from_pretrained(model_id)
        self.model = AutoModelForCausalLM.from_pretrained(model_id)
        self.streamer = TextIteratorStreamer(self.tokenizer, skip_prompt=True, skip_special_tokens=True)

    def decode_request(self, request, context):
        context["generation_args"] = {"max_new_tokens": request.max_tokens or 256}
        return self.tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True, return_tensors="pt")

    def predict(self, inputs, context):
        kwargs = dict(**inputs, streamer=self.streamer, **context["generation_args"])
        thread = Thread(target=self.model.generate, kwargs=kwargs)
        thread.start()
        for text in self.streamer:
            yield text
        thread.join()

becomes an ``async def predict`` whose loop is an ``async for`` over the text each of the engine's outputs
adds (``yield from streamer`` becomes such a loop too): the streamer, the kwargs, the thread, its start and its
join go. The token ids decode_request made reach the engine as ``{"prompt_token_ids": ...}``, so the chat
template and the tokenisation stay the original's own. A pipeline given chat messages (``target=self.pipe``,
``text_inputs=messages``) has its prompt rendered as the pipeline renders it, by the chat template of the
streamer's tokenizer, loaded from the pipeline's model. The streamer's decoding is kept: the prompt's text
first when it does not skip the prompt, special tokens when it does not skip them, and its clean-up of
tokenization spaces. The API is then built with ``enable_async=True`` (see ``placement``), under which
LitServe runs each request's predict() on the worker's event loop, so requests reach the engine together.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from vllm_lint.python.model import ClassInfo, FunctionInfo
from vllm_lint.python.rewrite.calls import ModelCalls
from vllm_lint.python.rewrite.generation import DECODING, GENERATION_KEYWORDS, OUTPUT_OPTIONS
from vllm_lint.python.rewrite.names import FreshNames, Occurrence, attribute_occurrences, names_in, occurrences
from vllm_lint.python.rewrite.plan import CallMode, HandlerCall, LitStream, ModelKind, Refusal, ResultShape
from vllm_lint.python.rewrite.served import LITSERVE_API, served_class_kind
from vllm_lint.python.rewrite.shapes import contains, directly_in, keyword_args, literal_flag, only_call, positional_args, returned_values, snippet, yields
from vllm_lint.python.rewrite.streamer import STREAMERS, body_statements, inner_comments, plain_assignment, streamed_sampling
from vllm_lint.python.vocabulary import DEFAULT_MAX_TOKENS, thread_target

_THREAD_OPTIONS = frozenset({"target", "kwargs", "daemon"})
# skip_prompt and timeout are the streamer's own; the others are what it decodes with.
_STREAMER_OPTIONS = frozenset({"skip_prompt", "skip_special_tokens", "clean_up_tokenization_spaces", "timeout"})
# model.generate keywords that change nothing for one unpadded prompt on the engine.
_GENERATE_IGNORED = frozenset({"attention_mask", "use_cache"})
_TOKENIZER_TOKENS = frozenset({"eos_token_id", "pad_token_id"})
# A length decode_request() may set to None (``request.max_tokens``), which generate() reads as not given: what
# SamplingParams then gets, as the rewrite maps a keyword not given (max_tokens as generation.py sets it). The
# decoding settings go to the decoding helper, which reads None as generate() does (generation.py).
_WHEN_NONE = {"min_new_tokens": "0", "max_new_tokens": str(DEFAULT_MAX_TOKENS)}
# The async generator the loop iterates: the streamer's text, from the engine's cumulative outputs.
LIT_NEW_TEXT_HELPER = '''async def {name}(stream, prompt_text="", clean_up=None):
    """The text each of the engine's outputs adds, as transformers' TextIteratorStreamer sent it: after
    ``prompt_text`` (the prompt's own text, when the streamer did not skip the prompt), cleaned up as the
    streamer's tokenizer cleans up tokenization spaces when ``clean_up`` is its clean_up_tokenization.
    """
    sent = 0
    async for request_output in stream:
        text = prompt_text + request_output.outputs[0].text  # the stream is cumulative: the text so far
        if clean_up is not None:
            text = clean_up(text)
        if len(text) > sent:
            yield text[sent:]
            sent = len(text)
'''


@dataclass(frozen=True, slots=True)
class _Thread:
    """A thread that runs a model's generate for a streamer."""
    lines: tuple[cst.SimpleStatementLine, ...]  # the thread's statement, its start and its join
    settings_line: cst.SimpleStatementLine | None  # ``kwargs = dict(...)``, when the kwargs are a variable
    inputs: cst.BaseExpression | None  # ``**inputs`` / ``dict(inputs, ...)``: the tokenizer's output
    spreads: tuple[cst.BaseExpression, ...]  # ``**context["generation_args"]``
    keywords: dict[str, cst.BaseExpression]


# The thread's kwargs: the tokenizer's output spread into them, other spreads, the keywords.
_Kwargs = tuple[cst.BaseExpression | None, tuple[cst.BaseExpression, ...], dict[str, cst.BaseExpression]]


class LitServeStreams(ModelCalls):
    def lit_stream(self, occurrence: Occurrence, kind: ModelKind, construction: dict[str, cst.BaseExpression]) -> HandlerCall | None:
        """The engine request when ``occurrence`` is the model a Thread runs (``target=self.model.generate`` or
        ``target=self.pipe``) in a LitServe API's predict(); None for any other use."""
        thread = _thread_of(self, occurrence, kind)
        if thread is None:
            return None
        self._unplaced: list[cst.Call] = []
        self._model_attr = occurrence.name.attr.value if isinstance(occurrence.name, cst.Attribute) else ""
        site = self.sites.get(id(thread))
        predict = site.function if site is not None else None
        if predict is None or predict.name != "predict" or served_class_kind(self.semantics, predict) != LITSERVE_API:
            return None
        shown = snippet(self.module, thread)
        klass = predict.class_info
        setup = klass.methods.get("setup") if klass is not None else None
        decode = klass.methods.get("decode_request") if klass is not None else None
        if predict.is_async or setup is None or klass is None:
            raise Refusal(f"`{shown}` is in an async predict(), or the API has no setup(); iterate `engine.generate(...)` by hand")
        found = self._thread(thread, predict, shown)
        streamer_attr = found.keywords.pop("streamer", None)
        if not (isinstance(streamer_attr, cst.Attribute) and isinstance(streamer_attr.value, cst.Name) and streamer_attr.value.value == "self"):
            raise Refusal(f"`{shown}` runs the {kind.what} without a streamer= held on the API (`self.streamer`)")
        streamer_line, streamer = self._streamer(streamer_attr.attr.value, setup)
        loop = self._loop(streamer_attr.attr.value, predict, klass.node, {id(streamer_line), id(found.settings_line), *map(id, found.lines)}, found)
        streamer_keywords = keyword_args(streamer)
        tokenizer = self.module.code_for_node(positional_args(streamer)[0].value)
        before: list[str] = []
        if kind is ModelKind.HF_MODEL:
            ids = self._token_ids(found, predict, decode, shown)
        else:
            self._check_pipeline_tokenizer(occurrence, positional_args(streamer)[0].value, setup)
            ids, before = self._chat_ids(found, predict, decode, tokenizer, shown)
        prompt = f'{{"prompt_token_ids": {ids}}}'
        settings = [(k, v) for k, v in construction.items() if k in GENERATION_KEYWORDS]
        settings += self._settings(found, predict, decode, shown)
        skip_special = streamer_keywords.get("skip_special_tokens")
        skips_special = skip_special is not None and literal_flag(skip_special.value) is True
        sampling = streamed_sampling(self.module, settings, "generate", skips_special, pipeline=kind is not ModelKind.HF_MODEL)
        if skip_special is not None and literal_flag(skip_special.value) is None:
            raise Refusal(f"`{snippet(self.module, streamer)}`'s skip_special_tokens= is not a literal True/False")
        stream_arguments = self._stream_arguments(streamer, tokenizer, ids, skips_special)
        removed = (streamer_line, *((found.settings_line,) if found.settings_line is not None else ()), *found.lines)
        if any(inner_comments(line) for line in removed):
            raise Refusal("a comment sits inside the streamer's, the kwargs' or the thread's statement, which the rewrite removes; move it first")
        order = {id(s): i for i, s in enumerate(body_statements(predict))}
        at = order[id(loop.statement)]
        before_loop = frozenset(id(line) for line in removed if order.get(id(line), at) < at)
        anchor = next(s for s in self.module.body if contains(s, klass.node))
        return HandlerCall(
            thread, CallMode.LIT_STREAMED, predict.node, prompt, sampling, loop.replaced, ResultShape.NEW_TEXT_PIECES,
            removed=removed,
            tokenizer=positional_args(streamer)[0].value if kind is ModelKind.HF_MODEL else None,
            lit=LitStream(tuple(stream_arguments), tuple(before), anchor, loop.statement, before_loop, *self._encode_response(klass), tuple(self._unplaced)),
        )

    def _thread(self, thread: cst.Call, predict: FunctionInfo, shown: str) -> _Thread:
        """``t = Thread(target=..., kwargs=...)``, ``t.start()`` right after, and perhaps ``t.join()`` later in
        predict's own block; nothing else uses the thread."""
        body = body_statements(predict)
        keywords = keyword_args(thread)
        if positional_args(thread) or any(a.star for a in thread.args) or set(keywords) - _THREAD_OPTIONS:
            raise Refusal(f"`{shown}` passes the thread arguments the rewrite cannot read")
        for index, statement in enumerate(body):
            assignment = plain_assignment(statement)
            if assignment is None or assignment[2] is not thread:
                continue
            name, line, _ = assignment
            uses = [o for o in occurrences(predict.node, [name])[name]]
            start = body[index + 1] if index + 1 < len(body) else None
            if not (isinstance(start, cst.SimpleStatementLine) and _method_call_line(start, name, "start")):
                break
            lines = [line, start]
            join = next((s for s in body[index + 2:] if _method_call_line(s, name, "join")), None)
            if isinstance(join, cst.SimpleStatementLine):
                lines.append(join)
            if len(uses) != len(lines):
                break
            settings_line, (inputs, spreads, settings) = self._kwargs(keywords.get("kwargs"), predict, shown)
            return _Thread(tuple(lines), settings_line, inputs, spreads, settings)
        raise Refusal(f"`{shown}` is not bound, then started right after, in predict(); or the thread is used other than by start() and join()")

    def _kwargs(self, value: cst.Arg | None, predict: FunctionInfo, shown: str) -> tuple[cst.SimpleStatementLine | None, _Kwargs]:
        """The thread's kwargs=: ``dict(...)`` or a dict literal, inline or in a variable made just for it."""
        if value is None:
            raise Refusal(f"`{shown}` passes the model no kwargs= (no streamer)")
        expr, line = value.value, None
        if isinstance(expr, cst.Name):
            name = expr.value
            lines = [a for s in body_statements(predict) if (a := plain_assignment(s)) is not None and a[0] == name]
            if len(lines) != 1 or len(occurrences(predict.node, [name])[name]) != 2:
                raise Refusal(f"`{name}`, the thread's kwargs, is not one dict made for it alone")
            _, line, expr = lines[0]
        inputs: cst.BaseExpression | None = None
        spreads: list[cst.BaseExpression] = []
        keywords: dict[str, cst.BaseExpression] = {}
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "dict":
            for index, arg in enumerate(expr.args):
                if arg.keyword is not None:
                    keywords[arg.keyword.value] = arg.value
                elif arg.star == "**" and not (isinstance(arg.value, cst.Name) and inputs is None):
                    spreads.append(arg.value)
                elif (arg.star == "**" or (index == 0 and not arg.star)) and inputs is None and isinstance(arg.value, cst.Name):
                    inputs = arg.value
                else:
                    raise Refusal(f"the thread's kwargs `{snippet(self.module, expr)}` pass arguments the rewrite cannot read")
        elif isinstance(expr, cst.Dict):
            for element in expr.elements:
                if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString) and isinstance(element.key.evaluated_value, str):
                    keywords[element.key.evaluated_value] = element.value
                elif isinstance(element, cst.StarredDictElement):
                    if isinstance(element.value, cst.Name) and inputs is None:
                        inputs = element.value
                    else:
                        spreads.append(element.value)
                else:
                    raise Refusal(f"the thread's kwargs `{snippet(self.module, expr)}` have keys that are not literal")
        else:
            raise Refusal(f"the thread's kwargs `{snippet(self.module, expr)}` are not a dict the rewrite can read")
        return line, (inputs, tuple(spreads), keywords)

    def _streamer(self, attribute: str, setup: FunctionInfo) -> tuple[cst.SimpleStatementLine, cst.Call]:
        """``self.streamer = TextIteratorStreamer(tokenizer, ...)`` in setup()'s own block."""
        for statement in body_statements(setup):
            if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and isinstance(statement.body[0], cst.Assign)):
                continue
            assign = statement.body[0]
            target = assign.targets[0].target
            if len(assign.targets) == 1 and isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) \
                    and target.value.value == "self" and target.attr.value == attribute:
                streamer = assign.value
                if not (isinstance(streamer, cst.Call) and self.semantics.callee(streamer) in STREAMERS):
                    break
                keywords = keyword_args(streamer)
                if len(positional_args(streamer)) != 1 or any(a.star for a in streamer.args) or set(keywords) - _STREAMER_OPTIONS:
                    raise Refusal(f"`{snippet(self.module, streamer)}` takes options the rewrite cannot carry over")
                for name in ("skip_prompt", "clean_up_tokenization_spaces"):
                    if name in keywords and literal_flag(keywords[name].value) is None:
                        raise Refusal(f"`{snippet(self.module, streamer)}`'s {name}= is not a literal True/False")
                return statement, streamer
        raise Refusal(f"`self.{attribute}` is not a TextIteratorStreamer made in setup()")

    def _loop(self, attribute: str, predict: FunctionInfo, klass: cst.ClassDef, removed: set[int], found: _Thread) -> _Loop:
        """``for text in self.streamer:`` or ``yield from self.streamer`` in predict's own block, after the
        thread starts (and before it is joined): the streamer's one use besides setup() and the kwargs."""
        uses = attribute_occurrences(klass, "self", attribute)
        loops = []
        for o in uses:
            if any(id(p) in removed for p in o.parents):
                continue
            parent = o.parent
            if isinstance(parent, cst.For) and parent.iter is o.name and o.function is predict.node and directly_in(predict.node, parent) \
                    and parent.orelse is None and parent.asynchronous is None:
                loops.append(_Loop(parent, o.name))
                continue
            line = o.ancestor(4)  # yield from: the line > Expr > Yield > From > the streamer
            if isinstance(parent, cst.From) and isinstance(o.ancestor(2), cst.Yield) and isinstance(o.ancestor(3), cst.Expr) \
                    and isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 and directly_in(predict.node, line):
                loops.append(_Loop(line, o.name))
                continue
            use = o.ancestor(2) if isinstance(parent, cst.Arg) else parent  # a call's argument: the call
            raise Refusal(
                f"the streamer is used as `{snippet(self.module, use or parent)}`; only `for text in self.{attribute}:` or "
                f"`yield from self.{attribute}` in predict() is rewritten"
            )
        if len(loops) != 1:
            raise Refusal(f"predict() does not iterate `self.{attribute}` once")
        body = body_statements(predict)
        order = {id(s): i for i, s in enumerate(body)}
        at = order[id(loops[0].statement)]
        if not order[id(found.lines[1])] < at or (len(found.lines) > 2 and not at < order[id(found.lines[2])]):
            raise Refusal("predict() iterates the streamer before the thread starts or after it is joined")
        return loops[0]

    def _token_ids(self, found: _Thread, predict: FunctionInfo, decode: FunctionInfo | None, shown: str) -> str:
        """The prompt's token ids, from what decode_request returned: a tokenizer's output with tensors."""
        params = [p.name.value for p in (*predict.node.params.posonly_params, *predict.node.params.params)]
        inputs = found.inputs
        if not (isinstance(inputs, cst.Name) and len(params) >= 2 and inputs.value == params[1]):
            raise Refusal(f"`{shown}` is not given predict()'s input (what decode_request() returns) as the model's inputs")
        if len(occurrences(predict.node, [inputs.value])[inputs.value]) != 2:
            raise Refusal(f"predict() reads `{inputs.value}` other than as the model's inputs")
        if decode is None:
            raise Refusal("the API has no decode_request(); the rewrite reads the token ids it returns")
        values = returned_values(decode.node)
        if not values:
            raise Refusal("decode_request() does not return on every path")
        for value in values:
            if value is None or not self._tokenized(value, decode):
                raise Refusal(
                    f"decode_request() returns `{snippet(self.module, value) if value is not None else 'None'}`, not a "
                    "tokenizer's output with return_tensors=\"pt\" (apply_chat_template(..., return_dict=True) or tokenizer([text]))"
                )
        return f'{inputs.value}["input_ids"][0].tolist()'

    def _tokenized(self, value: cst.BaseExpression, decode: FunctionInfo) -> bool:
        """A tokenizer's output for one prompt, as PyTorch tensors: ``tokenizer([text], return_tensors="pt")``
        or ``tokenizer.apply_chat_template(..., return_dict=True, return_tensors="pt")``, placed with ``.to()``
        or not, directly or through a local bound once."""
        if isinstance(value, cst.Name):
            lines = [a for s in body_statements(decode) if (a := plain_assignment(s)) is not None and a[0] == value.value]
            bound = [o for o in occurrences(decode.node, [value.value])[value.value] if isinstance(o.parent, cst.AssignTarget)]
            if len(lines) != 1 or len(bound) != 1:
                return False
            value = lines[0][2]
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "to" \
                and isinstance(value.func.value, cst.Call):
            if self._model_device(value):
                self._unplaced.append(value)
            value = value.func.value
        if not isinstance(value, cst.Call) or any(a.star for a in value.args):
            return False
        keywords = keyword_args(value)
        tensors = "return_tensors" in keywords and isinstance(keywords["return_tensors"].value, cst.SimpleString) \
            and keywords["return_tensors"].value.evaluated_value == "pt"
        if isinstance(value.func, cst.Attribute) and value.func.attr.value == "apply_chat_template":
            return_dict = keywords.get("return_dict")
            return tensors and return_dict is not None and literal_flag(return_dict.value) is True and self._is_tokenizer(value.func.value, decode)
        positional = positional_args(value)
        one = len(positional) == 1 and isinstance(positional[0].value, cst.List) and len(positional[0].value.elements) == 1
        return tensors and one and self._is_tokenizer(value.func, decode)

    def _model_device(self, to: cst.Call) -> bool:
        """``.to(self.model.device)`` (or ``device=``): the model's device, which the engine does not have."""
        args = to.args
        value = args[0].value if len(args) == 1 and (args[0].keyword is None or args[0].keyword.value == "device") and not args[0].star else None
        return isinstance(value, cst.Attribute) and value.attr.value == "device" and isinstance(value.value, cst.Attribute) \
            and isinstance(value.value.value, cst.Name) and value.value.value.value == "self" and value.value.attr.value == self._model_attr

    def _is_tokenizer(self, expr: cst.BaseExpression, method: FunctionInfo) -> bool:
        """``self.tokenizer``, set in setup() to ``AutoTokenizer.from_pretrained(...)``-like."""
        klass = method.class_info
        setup = klass.methods.get("setup") if klass is not None else None
        if setup is None or not (isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"):
            return False
        for statement in body_statements(setup):
            if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and isinstance(assign := statement.body[0], cst.Assign) \
                    and len(assign.targets) == 1 and isinstance(target := assign.targets[0].target, cst.Attribute) \
                    and target.attr.value == expr.attr.value and isinstance(assign.value, cst.Call):
                callee = self.semantics.callee(assign.value) or ""
                return callee.startswith("transformers.") and callee.endswith("Tokenizer.from_pretrained")
        return False

    def _chat_ids(self, found: _Thread, predict: FunctionInfo, decode: FunctionInfo | None, tokenizer: str, shown: str) -> tuple[str, list[str]]:
        """A pipeline's ``text_inputs=``: predict()'s input, chat messages from decode_request(), rendered as the
        text-generation pipeline renders a chat (transformers' TextGenerationPipeline.preprocess)."""
        params = [p.name.value for p in (*predict.node.params.posonly_params, *predict.node.params.params)]
        messages = found.keywords.pop("text_inputs", None)
        if found.inputs is not None or found.spreads or not (isinstance(messages, cst.Name) and len(params) >= 2 and messages.value == params[1]):
            raise Refusal(f"`{shown}` is not given predict()'s input as text_inputs= (and nothing else)")
        if len(occurrences(predict.node, [messages.value])[messages.value]) != 2:
            raise Refusal(f"predict() reads `{messages.value}` other than as the pipeline's input")
        if decode is None or not all(v is not None and self._chat(v, decode) for v in (returned_values(decode.node) or [None])):
            raise Refusal(
                "decode_request() does not return chat messages (a list of {\"role\": ..., \"content\": ...} dicts) on "
                "every path; the rewrite renders the pipeline's chat input with the chat template"
            )
        name = messages.value
        ids = FreshNames(names_in(predict.node)).take("prompt_token_ids")
        before = [
            f"# As the text-generation pipeline renders a chat: a final assistant message is continued.\n"
            f'{ids} = {tokenizer}.apply_chat_template({name}, add_generation_prompt={name}[-1]["role"] != "assistant", '
            f'continue_final_message={name}[-1]["role"] == "assistant", return_dict=True)["input_ids"]\n'
        ]
        return ids, before

    def _check_pipeline_tokenizer(self, pipe: Occurrence, tokenizer: cst.BaseExpression, setup: FunctionInfo) -> None:
        """The streamer's tokenizer (which renders the chat and decodes the text here) is loaded in setup() from
        the model the pipeline loads, which the engine loads: the pipeline's own tokenizer."""
        pipe_attr = pipe.name.attr.value if isinstance(pipe.name, cst.Attribute) else None
        loads = {target: value for s in body_statements(setup) if (target := _self_assignment(s)) is not None
                 and isinstance(value := s.body[0].value, cst.Call)}  # type: ignore[attr-defined]
        made = loads.get(pipe_attr or "")
        keywords = keyword_args(made) if made is not None else {}
        model = keywords["model"].value if "model" in keywords else None
        load = loads.get(tokenizer.attr.value) if isinstance(tokenizer, cst.Attribute) and isinstance(tokenizer.value, cst.Name) and tokenizer.value.value == "self" else None
        callee = self.semantics.callee(load) or "" if load is not None else ""
        source = positional_args(load)[0].value if load is not None and len(positional_args(load)) == 1 else None
        same = model is not None and source is not None and (
            self.module.code_for_node(model) == self.module.code_for_node(source)
            or ((a := self.semantics.fold(model)) is not None and (b := self.semantics.fold(source)) is not None and a.value == b.value)
        )
        if not (same and callee.startswith("transformers.") and callee.endswith("Tokenizer.from_pretrained") and load is not None and len(load.args) == 1):
            raise Refusal(
                f"the streamer's tokenizer `{snippet(self.module, tokenizer)}` is not loaded in setup() from the pipeline's "
                "model= (by AutoTokenizer.from_pretrained with the same name), so its chat template and decoding may not be the engine's"
            )

    def _chat(self, value: cst.BaseExpression, decode: FunctionInfo) -> bool:
        """A list literal of dict literals with "role" and "content" keys, returned as it is, or bound once and
        perhaps appended to."""
        if isinstance(value, cst.List):
            return bool(value.elements) and all(isinstance(e, cst.Element) and _message(e.value) for e in value.elements)
        if not isinstance(value, cst.Name):
            return False
        name = value.value
        lines = [a for s in body_statements(decode) if (a := plain_assignment(s)) is not None and a[0] == name]
        if len(lines) != 1 or not isinstance(lines[0][2], cst.List) or not all(_message(e.value) for e in lines[0][2].elements if isinstance(e, cst.Element)):
            return False
        for o in occurrences(decode.node, [name])[name]:
            if isinstance(o.parent, cst.AssignTarget) or isinstance(o.parent, cst.Return):
                continue
            attribute, call = o.ancestor(1), o.ancestor(2)
            if isinstance(attribute, cst.Attribute) and attribute.attr.value == "append" and isinstance(call, cst.Call) \
                    and len(call.args) == 1 and _message(call.args[0].value) and isinstance(o.ancestor(3), cst.Expr):
                continue
            return False
        return True

    def _settings(self, found: _Thread, predict: FunctionInfo, decode: FunctionInfo | None, shown: str) -> list[tuple[str, cst.BaseExpression]]:
        """The generation keywords: the kwargs' own, and the keys decode_request() put in the context."""
        settings: list[tuple[str, cst.BaseExpression]] = []
        for name, value in found.keywords.items():
            if name in _GENERATE_IGNORED or (name in _TOKENIZER_TOKENS and isinstance(value, cst.Attribute) and value.attr.value in _TOKENIZER_TOKENS):
                continue  # the engine stops at the tokenizer's EOS token too, and never pads
            if name in OUTPUT_OPTIONS:
                continue  # the pipeline's return value, which nothing reads: the streamer sends the text
            if name not in GENERATION_KEYWORDS:
                raise Refusal(f"`{shown}` passes the generate keyword {name}=, which has no SamplingParams equivalent here")
            settings.append((name, value))
        for spread in found.spreads:
            settings += self._context_settings(spread, predict, decode)
        return settings

    def _context_settings(self, spread: cst.BaseExpression, predict: FunctionInfo, decode: FunctionInfo | None) -> list[tuple[str, cst.BaseExpression]]:
        """``**context["generation_args"]``: the dict decode_request() set that key of LitServe's context to,
        once, with literal keys; each setting read from the context at request time."""
        shown = snippet(self.module, spread)
        key = _context_key(spread)
        if key is None or decode is None or "context" not in {p.name.value for p in decode.node.params.params}:
            raise Refusal(f"`**{shown}` spreads settings the rewrite cannot read; pass generate's keywords by name")
        values = []
        for statement in body_statements(decode):
            if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and isinstance(statement.body[0], cst.Assign):
                assign = statement.body[0]
                if len(assign.targets) == 1 and _context_key(assign.targets[0].target) == key:
                    values.append(assign.value)
        writes = [o for o in occurrences(decode.node, ["context"])["context"] if not isinstance(o.parent, cst.Param)]
        if len(values) != 1 or not isinstance(values[0], cst.Dict) or len(writes) != 1:
            raise Refusal(f"decode_request() does not set `{shown}` once to a dict literal (and use the context for nothing else)")
        settings = []
        for element in values[0].elements:
            if not (isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString) and isinstance(element.key.evaluated_value, str)):
                raise Refusal(f"the dict decode_request() sets `{shown}` to has keys that are not literal")
            name = element.key.evaluated_value
            if name not in GENERATION_KEYWORDS or name == "stop_strings":
                raise Refusal(f"`{shown}` carries {name}=, which the rewrite cannot map from a value known only at request time")
            read = f"{self.module.code_for_node(spread)}[{element.key.value}]"
            if name in _WHEN_NONE and not _never_none(element.value):
                # generate() reads None as a keyword not given; SamplingParams takes no None: its default then.
                read = f"{read} if {read} is not None else {_WHEN_NONE[name]}"
            elif name not in ("pad_token_id", "eos_token_id", *DECODING) and not _never_none(element.value):
                raise Refusal(f"{name}= in `{shown}` may be None (`{snippet(self.module, element.value)}`); give it a value that is never None")
            settings.append((name, cst.parse_expression(read)))
        return settings

    def _encode_response(self, klass: ClassInfo) -> tuple[cst.FunctionDef | None, cst.For | None]:
        """encode_response() and its loop over predict()'s output, which become async: LitServe hands it the
        async generator predict() becomes (a sync generator's ``for`` cannot iterate it)."""
        encode = klass.methods.get("encode_response")
        if encode is None:
            return None, None
        params = [p.name.value for p in (*encode.node.params.posonly_params, *encode.node.params.params)]
        if encode.is_async or len(params) < 2:
            raise Refusal("encode_response() is async already, or takes no output; make it iterate predict()'s stream with `async for` by hand")
        if not yields(encode.node):
            raise Refusal("encode_response() does not yield; under a streaming predict() it must be a generator (`for out in output: yield ...`)")
        name = params[1]
        uses = [o for o in occurrences(encode.node, [name])[name] if not isinstance(o.parent, cst.Param)]
        loop = uses[0].parent if len(uses) == 1 else None
        if not (isinstance(loop, cst.For) and loop.iter is uses[0].name and directly_in(encode.node, loop) and loop.asynchronous is None):
            raise Refusal(f"encode_response() uses `{name}` other than as `for ... in {name}:`; make it iterate predict()'s stream with `async for` by hand")
        return encode.node, loop

    def _stream_arguments(self, streamer: cst.Call, tokenizer: str, ids: str, skips_special: bool) -> list[str]:
        """The helper's prompt_text= and clean_up=, as the streamer decodes."""
        keywords = keyword_args(streamer)
        arguments = []
        skip_prompt = keywords.get("skip_prompt")
        if skip_prompt is None or literal_flag(skip_prompt.value) is not True:
            arguments.append(f"prompt_text={tokenizer}.decode({ids}, skip_special_tokens={skips_special})")
        clean = keywords.get("clean_up_tokenization_spaces")
        if clean is None:
            # The streamer decodes with the tokenizer's own setting; vLLM's detokenizer never cleans up.
            arguments.append(f"clean_up={tokenizer}.clean_up_tokenization if {tokenizer}.clean_up_tokenization_spaces else None")
        elif literal_flag(clean.value) is True:
            arguments.append(f"clean_up={tokenizer}.clean_up_tokenization")
        return arguments


@dataclass(frozen=True, slots=True)
class _Loop:
    """A loop over a streamer's tokens."""
    statement: cst.For | cst.SimpleStatementLine  # the ``for`` loop, or the ``yield from`` line
    replaced: cst.BaseExpression  # the streamer it iterates


def _thread_of(facts: ModelCalls, occurrence: Occurrence, kind: ModelKind) -> cst.Call | None:
    """The ``Thread(...)`` whose target= is the model's generate (or the pipeline itself)."""
    target: cst.CSTNode | None = occurrence.name
    level = 1
    if kind is ModelKind.HF_MODEL:
        attribute = occurrence.ancestor(1)
        if not (isinstance(attribute, cst.Attribute) and attribute.attr.value == "generate"):
            return None
        target, level = attribute, 2
    arg, thread = occurrence.ancestor(level), occurrence.ancestor(level + 1)
    if isinstance(arg, cst.Arg) and isinstance(thread, cst.Call) and thread_target(facts.semantics, thread) is target:
        return thread
    return None


def _self_assignment(line: cst.BaseStatement) -> str | None:
    """``x`` for a line that is just ``self.x = <value>``."""
    if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 and isinstance(assign := line.body[0], cst.Assign) \
            and len(assign.targets) == 1 and isinstance(target := assign.targets[0].target, cst.Attribute) \
            and isinstance(target.value, cst.Name) and target.value.value == "self":
        return target.attr.value
    return None


def _method_call_line(statement: cst.BaseStatement, name: str, method: str) -> bool:
    """``name.method()`` as a statement of its own."""
    call = only_call(statement)
    return call is not None and not call.args and isinstance(call.func, cst.Attribute) and call.func.attr.value == method \
        and isinstance(call.func.value, cst.Name) and call.func.value.value == name


def _context_key(expr: cst.BaseExpression) -> str | None:
    """``context["key"]``: the key."""
    if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name) and expr.value.value == "context" and len(expr.slice) == 1:
        index = expr.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString) and isinstance(key := index.value.evaluated_value, str):
            return key
    return None


def _message(expr: cst.BaseExpression) -> bool:
    """``{"role": ..., "content": ...}``."""
    if not isinstance(expr, cst.Dict):
        return False
    keys = {e.key.evaluated_value for e in expr.elements if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)}
    return len(keys) == len(expr.elements) and {"role", "content"} <= keys


def _never_none(expr: cst.BaseExpression) -> bool:
    """A number, ``x or <number>``, or ``x if x else <number>``: never None."""
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.Or):
        return _never_none(expr.right)
    if isinstance(expr, cst.IfExp):
        return expr.test.deep_equals(expr.body) and _never_none(expr.orelse)
    return False
