"""A transformers causal LM's ``model.generate(...)`` chain in a handler, and the engine request it becomes.

The shape: ``inputs = tokenizer(prompt, return_tensors="pt")`` (perhaps ``.to(model.device)``, or only its
``.input_ids``), then ``out = model.generate(**inputs, max_new_tokens=...)``, then ``tokenizer.decode(out[0],
...)`` (or ``out[0][inputs["input_ids"].shape[1]:]`` for the new text only). The engine tokenises the prompt
string as the tokenizer call did (the same tokenizer, with its special tokens), so the call becomes one
``engine.generate(prompt, ...)`` whose final output stands in for ``out``: one token sequence per returned
sequence, the prompt's tokens then the new ones, as ``model.generate`` returns them. The decode lines are left
as they are (the tokenizer stays; it decodes a list of ids as it decoded a tensor row), and the prompt's length
is read from the output (``len(request_output.prompt_token_ids)``); the tokenizer call, now unused, goes. A
tokenizer call that truncates (``truncation=``, ``max_length=``) or adds no special tokens is kept instead: the
engine is given ``{"prompt_token_ids": tokenizer(prompt, <those keywords>)["input_ids"]}``, the same ids.

What cannot be kept is refused with the reason: a logits processor, beam search, scores or hidden states, an
output used as a tensor, a tokenizer option that is neither of those (or on a multimodal processor).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from vllm_lint.python.model import FunctionInfo, dotted_name
from vllm_lint.python.rewrite.facts import ModuleFacts
from vllm_lint.python.rewrite.generation import GENERATION_KEYWORDS, NotCarried, sampling_keywords
from vllm_lint.python.rewrite.names import Occurrence, occurrences
from vllm_lint.python.rewrite.plan import MultiModalData, Refusal
from vllm_lint.python.rewrite.prompts import module_bindings, rebound_names
from vllm_lint.python.rewrite.shapes import Assignments, keyword_args, literal_flag, positional_args, snippet
from vllm_lint.python.rewrite.vision import ProcessorInputs, block_of, is_processor_call
from vllm_lint.python.walk import walk
from vllm_lint.lazy_re import lazy_compile

# model.generate keywords that change nothing here: the attention mask of one unpadded prompt, the KV cache.
_GENERATE_IGNORED = frozenset({"attention_mask", "use_cache"})
_WHY_NOT = {
    "logits_processor": "a custom logits processor runs Python on the model's logits; vLLM takes its own "
    "logits processors (vllm.v1.sample.logits_processor), which must be written by hand",
    "stopping_criteria": "custom stopping criteria run Python per step; use SamplingParams(stop=..., stop_token_ids=...) by hand",
    "output_scores": "the scores are tensors vLLM does not return (SamplingParams(logprobs=...) gives log-probabilities)",
    "output_logits": "the logits are tensors vLLM does not return",
    "output_hidden_states": "vLLM's generate does not return hidden states",
    "output_attentions": "vLLM's generate does not return attentions",
    "return_dict_in_generate": "the output is a ModelOutput, not token sequences",
    "num_beams": "beam search is a separate API in vLLM (LLM.beam_search), not a sampling setting",
    "streamer": "a streamer is fed from a thread; stream with `async for output in engine.generate(...)` instead",
    "generation_config": "a GenerationConfig object cannot be read statically",
    "prefix_allowed_tokens_fn": "a per-step Python callback has no engine equivalent",
    "bad_words_ids": "token-id lists are not carried over (SamplingParams(bad_words=...) takes words)",
}
# The tokenizer call: keywords that change nothing for one prompt string.
_TOKENIZER_IGNORED = frozenset({"return_tensors", "padding", "return_attention_mask"})
# The tokenizer call: keywords that change the prompt's ids, kept on the call whose ids the engine is given.
_TOKENIZER_KEPT = frozenset({"truncation", "max_length", "add_special_tokens"})
# What a prompt length is read as: ``inputs["input_ids"].shape[1]``, ``inputs.input_ids.shape[-1]``.
_LENGTH_INDEXES = frozenset({"1", "-1"})
# Statements on the model that mean nothing to the engine (it places and runs the model itself).
MODEL_HOUSEKEEPING = frozenset({"eval", "to", "cuda"})
# A multimodal processor's load: its call takes text= and images= (positionally, images come first in most).
_PROCESSOR_LOAD = lazy_compile(r"^transformers\.\w*Processor\.from_pretrained$")


@dataclass(frozen=True, slots=True)
class GenerateChain:
    """What one ``model.generate(...)`` reads and what reads it."""

    prompt: cst.BaseExpression  # what the tokenizer was given: one string
    tokenizer: cst.BaseExpression  # the tokenizer object it was given to
    settings: tuple[tuple[str, cst.BaseExpression], ...]  # generation keywords
    removed: tuple[cst.BaseStatement, ...]  # the tokenizer call's statements, when nothing else reads it
    prompt_lengths: tuple[cst.BaseExpression, ...]  # expressions that read the prompt's token count
    prompt_ids: tuple[cst.BaseExpression, ...] = ()  # ``inputs.input_ids`` zipped with the output, row by row
    media: MultiModalData | None = None  # a processor's images
    # the tokenizer call's keywords that change the ids (truncation=...): the engine is given those ids
    token_options: tuple[tuple[str, cst.BaseExpression], ...] = ()


@dataclass(frozen=True, slots=True)
class _Tokenized:
    """What the tokenizer (or processor) call that feeds generate was given, and the lines that hold it."""

    prompt: cst.BaseExpression
    tokenizer: cst.BaseExpression
    holder: str | None  # the local holding its output, or None when generate is given the call itself
    lines: tuple[cst.SimpleStatementLine, ...]  # that local's binding (and its ``x = x.to(device)`` rebindings)
    media: MultiModalData | None = None
    spread: tuple[cst.BaseStatement, ...] = ()  # the processor's keyword dict statements
    processed: bool = False  # a multimodal processor's call, not a tokenizer's
    options: tuple[tuple[str, cst.BaseExpression], ...] = ()  # keywords that change the ids


class GenerateChains(ModuleFacts):
    """Reads a ``model.generate(...)`` call and the tokenizer call that feeds it."""

    def chain(self, call: cst.Call, function: FunctionInfo) -> GenerateChain:
        shown = snippet(self.module, call)
        if len(positional_args(call)) > 1:
            raise Refusal(f"`{shown}` passes more positional arguments than the input ids")
        source: cst.BaseExpression | None = None  # what holds the tokenizer's output (inputs or input_ids)
        settings: list[tuple[str, cst.BaseExpression]] = []
        for arg in call.args:
            if arg.star == "**" or (arg.keyword is None and not arg.star) or (arg.keyword is not None and arg.keyword.value == "input_ids"):
                if source is not None:
                    raise Refusal(f"`{shown}` passes the input ids twice")
                source = arg.value
                continue
            if arg.star or arg.keyword is None:
                raise Refusal(f"`{shown}` passes *args whose values are unknown")
            name = arg.keyword.value
            if name in _GENERATE_IGNORED or (name in ("pad_token_id", "eos_token_id") and self._tokenizer_own(arg.value, name)):
                continue  # the engine stops at the tokenizer's EOS token too, and never pads
            if name == "num_beams" and isinstance(arg.value, cst.Integer) and arg.value.evaluated_value == 1:
                continue
            if name in _WHY_NOT:
                raise Refusal(f"`{shown}` passes {name}=: {_WHY_NOT[name]}")
            if name not in GENERATION_KEYWORDS:
                raise Refusal(f"the generate keyword {name}= has no SamplingParams equivalent here; drop it, or set the engine's own setting for it by hand after the fix")
            settings.append((name, arg.value))
        if source is None:
            raise Refusal(f"`{shown}` passes no input ids")
        try:
            counts_prompt = sampling_keywords(self.module, settings).counts_prompt
        except NotCarried as exc:
            raise Refusal(str(exc)) from None
        tokenized = self._tokenized(source, function, shown)
        if counts_prompt and tokenized.processed:
            raise Refusal(f"`{shown}` passes max_length=, which counts the processed prompt's tokens (images included); pass max_new_tokens=")
        holder = tokenized.holder
        # the attention mask of the one unpadded prompt is read from the tokenizer's output, and goes with generate
        masks = tuple(arg.value for arg in call.args if arg.keyword is not None and arg.keyword.value == "attention_mask")
        lengths, ids, other_reads = self._holder_reads(holder, function, (source, *masks), tokenized.lines) if holder is not None else ((), (), 0)
        order = _visit_order(function.node)
        early = next((read for read in (*lengths, *ids) if order.get(id(read), 0) < order.get(id(call), 0)), None)
        if early is not None:
            raise Refusal(
                f"`{snippet(self.module, early)}` reads the prompt's token count before `{shown}`; the engine counts "
                "the prompt's tokens as it generates: read it from the output (len(output.prompt_token_ids)) after the call"
            )
        if tokenized.lines and other_reads:
            raise Refusal(
                f"`{holder}` (the tokenizer's output) is read other than by generate() and its prompt length; "
                "the engine takes the prompt string, so those reads would have nothing to read"
            )
        removed = (*tokenized.lines, *tokenized.spread)
        return GenerateChain(tokenized.prompt, tokenized.tokenizer, tuple(settings), removed, lengths, ids, tokenized.media, tokenized.options)

    def _tokenizer_own(self, value: cst.BaseExpression, keyword: str) -> bool:
        """``tokenizer.eos_token_id`` (for pad_token_id too: vLLM never pads one sequence)."""
        return isinstance(value, cst.Attribute) and value.attr.value in ("eos_token_id", "pad_token_id") or (
            keyword == "pad_token_id" and isinstance(value, (cst.Integer, cst.Name))
        )

    def _tokenized(self, source: cst.BaseExpression, function: FunctionInfo, shown: str) -> _Tokenized:
        """What the tokenizer call that ``source`` reads was given, and where its output is held."""
        holder = None
        lines: tuple[cst.SimpleStatementLine, ...] = ()
        expr = source
        if isinstance(expr, cst.Name):
            holder = expr.value
            lines, expr = self._only_binding(function, holder, shown)
        elif isinstance(expr, (cst.Attribute, cst.Subscript)) and isinstance(ids_holder := _input_ids_of(expr), cst.Name):
            holder = ids_holder.value
            lines, expr = self._only_binding(function, holder, shown)
        inner = _input_ids_of(expr) if isinstance(expr, (cst.Attribute, cst.Subscript)) else None
        if inner is not None:
            expr = inner
        expr = _without_to(expr)
        if holder is not None and isinstance(expr, (cst.Attribute, cst.Subscript)) \
                and isinstance(outer := _input_ids_of(expr), cst.Name) and outer.value != holder:
            # the ids taken out of a second local (`input_ids = inputs["input_ids"].to(device)`): its binding goes
            # too, when nothing else reads it
            outer_lines, expr = self._only_binding(function, outer.value, shown)
            lines = (*outer_lines, *lines)
            self._read_only_in(outer.value, function, lines)
            expr = _without_to(expr)
        if not isinstance(expr, cst.Call):
            raise Refusal(f"cannot tell what `{shown}` is given as input ids (a tokenizer call's output is what the rewrite follows)")
        tokenizer_call = expr
        if isinstance(tokenizer_call.func, cst.Attribute) and tokenizer_call.func.attr.value == "encode":
            tokenizer = tokenizer_call.func.value
        elif isinstance(tokenizer_call.func, cst.Attribute) and tokenizer_call.func.attr.value == "apply_chat_template":
            raise Refusal(
                "the input ids come from apply_chat_template(..., tokenize=True); render it as text "
                "(tokenize=False) and tokenize that, or pass the ids to the engine as {\"prompt_token_ids\": ...} by hand"
            )
        else:
            tokenizer = tokenizer_call.func
        if is_processor_call(tokenizer_call):
            return self._processed(tokenizer_call, tokenizer, function, holder, lines)
        if self._is_processor(tokenizer):
            raise Refusal(
                f"`{snippet(self.module, tokenizer_call)}` passes the text by position to a processor, whose first "
                "parameter is the images in most; pass it as text="
            )
        if any(arg.star for arg in tokenizer_call.args):
            raise Refusal(f"`{snippet(self.module, tokenizer_call)}` passes *args/**kwargs whose keys are unknown")
        positional = positional_args(tokenizer_call)
        keywords = keyword_args(tokenizer_call)
        if len(positional) != 1:
            raise Refusal(
                f"`{snippet(self.module, tokenizer_call)}` does not tokenize exactly one text; tokenize the prompt string "
                "in the handler (`tokenizer(prompt, return_tensors=\"pt\")`) so that the engine can take that string"
            )
        options = _token_options({name: arg.value for name, arg in keywords.items()})
        return _Tokenized(positional[0].value, tokenizer, holder, lines, options=options)

    def _processed(self, call: cst.Call, processor: cst.BaseExpression, function: FunctionInfo,
                   holder: str | None, lines: tuple[cst.SimpleStatementLine, ...]) -> _Tokenized:
        """A multimodal processor's call (vision): its text, and its images for the engine's multi_modal_data."""
        statement = self.sites[id(call)].statement
        assert isinstance(statement, cst.SimpleStatementLine)  # a call's statement is a line of small statements
        read = ProcessorInputs(self.module, self.model, function).read(call, statement)
        if options := _token_options(read.keywords):
            raise Refusal(
                f"the processor call passes {options[0][0]}=, which the engine's own processing of the prompt would "
                "not do; drop it, or give the engine the processed ids by hand"
            )
        return _Tokenized(read.text, processor, holder, lines, read.media, read.removed, processed=True)

    def _is_processor(self, expr: cst.BaseExpression) -> bool:
        """A multimodal processor (``AutoProcessor.from_pretrained(...)``), as the object's bindings say."""
        name = dotted_name(expr)
        loads = [b.call for (_, target), bs in self.model.bindings.items() if target == name for b in bs]
        return any(_PROCESSOR_LOAD.match(self.semantics.callee(load) or "") for load in loads)

    def _only_binding(self, function: FunctionInfo, name: str, shown: str) -> tuple[tuple[cst.SimpleStatementLine, ...], cst.BaseExpression]:
        """The one ``name = value`` line in the function body that binds ``name`` (and the ``name =
        name.to(device)`` lines after it in its block, which the engine needs no more than ``.to(...)``)."""
        found = Assignments(lambda target: _is_name(target, name))
        walk(function.node, found)
        first = found.lines[0] if found.lines else None
        placed = [line for line, value in found.lines[1:] if _without_to(value) is not value and _is_name(_without_to(value), name)]
        block = block_of(function.node, first[0]) if first is not None else None
        if first is None or found.other or len(placed) != len(found.lines) - 1 or block is None \
                or not all(any(line is s for s in block) for line in placed):
            raise Refusal(
                f"`{name}`, which `{shown}` reads, is not bound once by a plain assignment in {function.name}(); "
                f"bind it once, `{name} = tokenizer(prompt, return_tensors=\"pt\")`, where the prompt string is"
            )
        return (first[0], *placed), first[1]

    def _read_only_in(self, name: str, function: FunctionInfo, lines: tuple[cst.SimpleStatementLine, ...]) -> None:
        """Refuses where the tokenizer's output ``name`` is read outside ``lines`` (the lines the rewrite removes)."""
        removed = {id(line) for line in lines}
        for o in occurrences(function.node, [name])[name]:
            if not isinstance(o.parent, cst.AssignTarget) and not any(id(p) in removed for p in o.parents):
                raise Refusal(
                    f"`{name}` (the tokenizer's output) is read other than for the input ids given to generate(); "
                    f"the engine takes the prompt string, so those reads would have nothing to read: pass the output "
                    f"whole (`model.generate(**{name}, ...)`) and drop the other reads, then the rewrite applies"
                )

    def _holder_reads(self, holder: str, function: FunctionInfo, sources: tuple[cst.BaseExpression, ...], lines: tuple[cst.SimpleStatementLine, ...]
                      ) -> tuple[tuple[cst.BaseExpression, ...], tuple[cst.BaseExpression, ...], int]:
        """(the prompt-length reads of the tokenizer's output, its ids zipped with the output, how many other
        reads it has); the reads in its own binding lines (``x = x.to(device)``) and in ``sources`` (the
        arguments of generate that the engine call replaces) go with them."""
        lengths = []
        ids = []
        others = 0
        removed = {id(line) for line in lines}
        for o in occurrences(function.node, [holder])[holder]:
            if isinstance(o.parent, cst.AssignTarget) or any(id(p) in removed for p in o.parents):
                continue
            if any(o.name is source or any(p is source for p in o.parents) for source in sources):
                continue
            length = _prompt_length(o)
            row = _zipped_ids(o) if length is None else None
            if length is not None:
                lengths.append(length)
            elif row is not None:
                ids.append(row)
            else:
                others += 1
        return tuple(lengths), tuple(ids), others


class _Order(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.order: dict[int, int] = {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.order[id(node)] = len(self.order)
        return True


def _visit_order(function: cst.FunctionDef) -> dict[int, int]:
    """Each node's place in the function's source order."""
    visitor = _Order()
    walk(function, visitor)
    return visitor.order


def _token_options(keywords: dict[str, cst.BaseExpression]) -> tuple[tuple[str, cst.BaseExpression], ...]:
    """The tokenizer keywords that change the prompt's ids, which the engine's own tokenisation of the prompt
    string would not follow; refusal for one the rewrite does not keep."""
    kept = []
    for name, value in keywords.items():
        if name in _TOKENIZER_IGNORED or (name == "add_special_tokens" and literal_flag(value) is True):
            continue
        if name not in _TOKENIZER_KEPT:
            raise Refusal(
                f"the tokenizer call passes {name}=, which the engine's own tokenisation of the prompt string would "
                "not do; pass the engine {\"prompt_token_ids\": ...} by hand"
            )
        kept.append((name, value))
    return tuple(kept)


def _is_name(expr: cst.BaseExpression, name: str) -> bool:
    return isinstance(expr, cst.Name) and expr.value == name


def _zipped_ids(o: Occurrence) -> cst.BaseExpression | None:
    """``x.input_ids`` in ``[out[len(ids):] for ids, out in zip(x.input_ids, generated)]``, its rows read only as
    ``len(row)``: the ids as a batch of one row, which the prompt's ids from the output stand in for."""
    ids, arg, call, comp_for = o.ancestor(1), o.ancestor(2), o.ancestor(3), o.ancestor(4)
    comprehension = o.ancestor(5)
    if not (isinstance(ids, (cst.Attribute, cst.Subscript)) and _input_ids_of(ids) is o.name and isinstance(arg, cst.Arg)
            and isinstance(call, cst.Call) and _is_name(call.func, "zip") and isinstance(comp_for, cst.CompFor)
            and comp_for.iter is call and isinstance(comprehension, (cst.ListComp, cst.GeneratorExp)) and comprehension.for_in is comp_for):
        return None
    if len(call.args) != 2 or any(a.star or a.keyword is not None for a in call.args) or comp_for.inner_for_in is not None:
        return None
    target = comp_for.target
    index = next(i for i, a in enumerate(call.args) if a is arg)
    if not (isinstance(target, cst.Tuple) and len(target.elements) == 2 and isinstance(row := target.elements[index].value, cst.Name)):
        return None
    for read in occurrences(comprehension, [row.value])[row.value]:
        if read.name is row:
            continue
        holder, length = read.ancestor(1), read.ancestor(2)
        if not (isinstance(holder, cst.Arg) and isinstance(length, cst.Call) and _is_name(length.func, "len") and len(length.args) == 1):
            return None
    return ids


def _input_ids_of(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """``x.input_ids`` / ``x["input_ids"]``: x; else None."""
    if isinstance(expr, cst.Attribute) and expr.attr.value == "input_ids":
        return expr.value
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
        key = expr.slice[0].slice.value
        if isinstance(key, cst.SimpleString) and key.evaluated_value == "input_ids":
            return expr.value
    return None


def _without_to(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``x.to(device)`` -> x (the engine places its own tensors)."""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in ("to", "cuda"):
        expr = expr.func.value
    return expr


def _prompt_length(o: Occurrence) -> cst.BaseExpression | None:
    """The expression around a read of the tokenizer's output that is the prompt's token count:
    ``x["input_ids"].shape[1]``, ``x.input_ids.shape[-1]``, ``len(x["input_ids"][0])``, ``x.shape[1]`` (x the ids)."""
    parents = list(o.parents)
    node: cst.CSTNode = o.name
    index = len(parents) - 1

    def up() -> cst.CSTNode | None:
        nonlocal node, index
        if index < 0:
            return None
        node, index = parents[index], index - 1
        return node

    parent = parents[index] if index >= 0 else None
    if (isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value == "input_ids") or (
        isinstance(parent, cst.Subscript) and parent.value is node and _input_ids_of(parent) is node
    ):
        up()
    parent = parents[index] if index >= 0 else None
    if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value == "shape":
        up()
        parent = parents[index] if index >= 0 else None
        if isinstance(parent, cst.Subscript) and parent.value is node and len(parent.slice) == 1 and isinstance(parent.slice[0].slice, cst.Index):
            key = parent.slice[0].slice.value
            code = cst.Module([]).code_for_node(key)
            if code in _LENGTH_INDEXES:
                return parent
        return None
    if isinstance(parent, cst.Subscript) and parent.value is node and len(parent.slice) == 1 and isinstance(parent.slice[0].slice, cst.Index):
        key = parent.slice[0].slice.value
        if isinstance(key, cst.Integer) and key.evaluated_value == 0:
            up()
            arg = parents[index] if index >= 0 else None
            call = parents[index - 1] if index >= 1 else None
            if isinstance(arg, cst.Arg) and isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "len" and len(call.args) == 1:
                return call
    return None


@dataclass(frozen=True, slots=True)
class OutputReads:
    """Reads of the generate output that the engine's list of token-id lists answers once rewritten."""

    listed: tuple[cst.Call, ...] = ()  # ``out[0].tolist()``: a row is a list of ints already
    rows_first: tuple[cst.Subscript, ...] = ()  # ``out[:, n:][0]``: the same ids as ``out[0][n:]``


def output_reads(module: cst.Module, function: cst.FunctionDef, name: str) -> OutputReads:
    """The ``out[0].tolist()`` / ``out[0][n:].tolist()`` calls on a row of the generate output held in ``name``,
    which a list of token-id lists gives without the call (a row is already a list of ints), and the
    ``out[:, n:][0]`` reads (every row's slice, then a row), which give the ids of ``out[0][n:]``; refusal for
    any other read that needs a tensor (``.shape``, ``.cpu()``, ``out.tolist()``, ``out[:, n:]``)."""
    listed = []
    rows_first = []
    for o in occurrences(function, [name])[name]:
        parent = o.parent
        node: cst.CSTNode = o.name
        # out[0], out[0][n:], ... then what reads it
        i = len(o.parents) - 1
        while isinstance(parent, cst.Subscript) and parent.value is node and i > 0:
            if len(parent.slice) != 1:
                row = o.parents[i - 1] if i > 1 else None
                if not (node is o.name and _every_row_then_row(parent, row)):
                    raise Refusal(
                        f"`{snippet(module, parent)}` indexes the generate output as a 2-D tensor, which the engine's "
                        "list of token-id lists cannot be; index the row first (`out[0][n:]`)"
                    )
                assert isinstance(row, cst.Subscript)
                rows_first.append(row)
                parent, i = row, i - 1
            node, i = parent, i - 1
            parent = o.parents[i]
        if isinstance(parent, cst.Attribute) and parent.value is node:
            call = o.parents[i - 1] if i > 0 else None
            if parent.attr.value == "tolist" and node is not o.name and isinstance(call, cst.Call) and call.func is parent and not call.args:
                listed.append(call)
                continue
            raise Refusal(f"`{snippet(module, parent)}` reads the generate output as a tensor; the engine's tokens are a list of ids")
    return OutputReads(tuple(listed), tuple(rows_first))


def _every_row_then_row(columns: cst.Subscript, row: cst.CSTNode | None) -> bool:
    """``out[:, n:]`` read at one row (``[0]``): the row's ids sliced, as ``out[0][n:]`` reads them."""
    every = columns.slice[0].slice
    return (
        len(columns.slice) == 2 and isinstance(every, cst.Slice) and every.lower is None and every.upper is None
        and every.step is None and isinstance(row, cst.Subscript) and row.value is columns and len(row.slice) == 1
        and isinstance(row.slice[0].slice, cst.Index)
    )


def row_first(read: cst.Subscript) -> cst.Subscript:
    """``out[:, n:][0]`` as ``out[0][n:]`` (on the rewritten node, whose parts may be rewritten too)."""
    columns = cst.ensure_type(read.value, cst.Subscript)
    within = columns.slice[1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return read.with_changes(value=columns.with_changes(slice=[read.slice[0]]), slice=[within])


def model_name_of(call: cst.Call) -> cst.BaseExpression | None:
    """What ``X.from_pretrained(...)`` is given as its model."""
    positional = positional_args(call)
    if positional:
        return positional[0].value
    keywords = keyword_args(call)
    arg = keywords.get("pretrained_model_name_or_path")
    return arg.value if arg is not None else None


def housekeeping_line(o: Occurrence) -> cst.SimpleStatementLine | None:
    """``model.eval()`` / ``model.to(device)`` as a statement of its own, or ``model = model.to(device)``
    (either name of that line): the engine places and runs its model itself, so the line goes."""
    if isinstance(o.parent, cst.AssignTarget):
        assign, line = o.ancestor(2), o.ancestor(3)
        if isinstance(assign, cst.Assign) and _placed(assign.value, o.name) and isinstance(line, cst.SimpleStatementLine) \
                and len(line.body) == 1 and len(assign.targets) == 1:
            return line
        return None
    attribute, call, small, line = o.ancestor(1), o.ancestor(2), o.ancestor(3), o.ancestor(4)
    if not (isinstance(attribute, cst.Attribute) and attribute.value is o.name and isinstance(call, cst.Call) and call.func is attribute):
        return None
    if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 and _placed(call, o.name)):
        return None
    if isinstance(small, cst.Expr):
        return line
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and small.value is call:
        target = small.targets[0].target
        return line if isinstance(target, type(o.name)) and cst.Module([]).code_for_node(target) == cst.Module([]).code_for_node(o.name) else None
    return None


def device_print_line(o: Occurrence, module: cst.Module) -> cst.SimpleStatementLine | None:
    """``print(f"Model device {model.device}")`` as a statement of its own (the built-in print, its arguments
    calling nothing): a debug line about where transformers put the model. The engine, which places its model
    itself, has no such attribute, so the line goes with the model, as ``model.eval()`` does; the answers stay."""
    attribute = o.ancestor(1)
    if not (isinstance(attribute, cst.Attribute) and attribute.value is o.name and attribute.attr.value == "device"):
        return None
    line = next((p for p in reversed(o.parents) if isinstance(p, cst.SimpleStatementLine)), None)
    if line is None or len(line.body) != 1 or not isinstance(line.body[0], cst.Expr):
        return None
    call = line.body[0].value
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "print"):
        return None
    if "print" in module_bindings(module) or (o.function is not None and "print" in rebound_names(o.function)):
        return None  # not the built-in
    calls: list[cst.Call] = []

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            calls.append(node)

    for arg in call.args:
        walk(arg, _Calls())
    return None if calls else line


def _placed(value: cst.BaseExpression, name: cst.BaseExpression) -> bool:
    """``name.to(...)``, ``name.eval()``, ``name.to(...).eval()``, ...: the model itself, placed."""
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in MODEL_HOUSEKEEPING):
        return False
    inner = value.func.value
    code = cst.Module([]).code_for_node
    return code(inner) == code(name) or _placed(inner, name)
