"""A vision-language model's processor call that feeds ``model.generate(...)``, and what the engine gets for it.

``inputs = processor(text=[text], images=images, padding=True, return_tensors="pt")`` (or the same keywords
gathered in a dict first: ``kwargs = {"text": [text], ...}``, ``if images: kwargs["images"] = images``,
``processor(**kwargs)``) tokenises the chat template's text, expanding its image placeholders, and preprocesses
the images. The engine does the same with the model's own processor from ``{"prompt": text, "multi_modal_data":
{"image": images}}`` (vLLM's TextPrompt, vllm/inputs/llm.py; an image item is a PIL image, an array or a
tensor, or a list of them: vllm/multimodal/inputs.py), so the call's text and images become that prompt, and
the keyword dict, now unread, goes.

Videos are carried only where they are always empty (a list a helper of the module builds empty and returns
unchanged): the processor and vLLM sample and time a video's frames by different rules (vLLM from the metadata
given with each video), and a call cannot say that both would give the model the same input.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from vllm_lint.python.model import FunctionInfo, ModuleModel
from vllm_lint.python.rewrite.plan import MultiModalData, Refusal
from vllm_lint.python.rewrite.prompts import local_bindings, module_bindings, never_changed
from vllm_lint.python.rewrite.shapes import is_none, positional_args, returned_values, snippet
from vllm_lint.python.walk import walk

# The processor keywords that carry the request's inputs; the others are checked as a tokenizer's.
_INPUT_KEYWORDS = frozenset({"text", "images", "videos"})
_WHY_NOT = {
    "videos": "a video's frames and their timing reach the model by other rules through the processor than "
    "through vLLM, which takes each video with its metadata (vllm/multimodal/inputs.py: VideoItem), so the same "
    "input cannot be promised; pass the engine {\"prompt\": text, \"multi_modal_data\": {\"video\": ...}} by hand "
    "and compare the answers",
    "audio": "pass the engine {\"prompt\": text, \"multi_modal_data\": {\"audio\": ...}} by hand",
    "audios": "pass the engine {\"prompt\": text, \"multi_modal_data\": {\"audio\": ...}} by hand",
}


def is_processor_call(call: cst.Call) -> bool:
    """A call that names its text (``text=``), gives images or videos, or spreads a dict of keywords: a
    multimodal processor's call (a tokenizer's is ``tokenizer(text, ...)``)."""
    return any(arg.star == "**" or (arg.keyword is not None and arg.keyword.value in _INPUT_KEYWORDS) for arg in call.args)


@dataclass(frozen=True, slots=True)
class ProcessorCall:
    """What one processor call was given."""

    text: cst.BaseExpression  # its text= (one string, or a list of one)
    keywords: dict[str, cst.BaseExpression]  # its other keywords (return_tensors, padding, ...)
    media: MultiModalData | None  # its images, when it may be given some
    removed: tuple[cst.BaseStatement, ...]  # the keyword dict's statements, read by nothing else


@dataclass(frozen=True, slots=True)
class _Given:
    """One keyword the processor is given: its value, and the test it is given under (None: always)."""

    value: cst.BaseExpression
    condition: cst.BaseExpression | None = None


class ProcessorInputs:
    """Reads a processor call in one function of a module."""

    def __init__(self, module: cst.Module, model: ModuleModel, function: FunctionInfo) -> None:
        self.module = module
        self.model = model
        self.function = function

    def read(self, call: cst.Call, statement: cst.SimpleStatementLine) -> ProcessorCall:
        shown = snippet(self.module, call)
        if positional_args(call):
            raise Refusal(
                f"`{shown}` passes its inputs by position, whose order differs between processors; pass them as "
                "text= and images="
            )
        given: dict[str, _Given] = {}
        removed: list[cst.BaseStatement] = []
        for arg in call.args:
            if arg.star == "**":
                spread, lines = self._spread(arg.value, statement, shown)
                removed += lines
                for key, value in spread.items():
                    if key in given:
                        raise Refusal(f"`{shown}` gets the keyword {key}= twice")
                    given[key] = value
            elif arg.star:
                raise Refusal(f"`{shown}` passes *args whose values are unknown")
            elif arg.keyword is not None:
                if arg.keyword.value in given:
                    raise Refusal(f"`{shown}` gets the keyword {arg.keyword.value}= twice")
                given[arg.keyword.value] = _Given(arg.value)
        text = given.pop("text", None)
        if text is None or text.condition is not None:
            raise Refusal(f"`{shown}` is not always given its text=; give it the prompt text as text=")
        media = self._media(given, shown)
        keywords = {name: g.value for name, g in given.items() if g.condition is None}
        conditional = next((name for name, g in given.items() if g.condition is not None), None)
        if conditional is not None:
            raise Refusal(f"`{shown}` is given {conditional}= under a test; only its images may be given under one")
        return ProcessorCall(text.value, keywords, media, tuple(removed))

    def _media(self, given: dict[str, _Given], shown: str) -> MultiModalData | None:
        """The images (taken out of ``given``) as the engine's multi_modal_data; videos only when always empty."""
        videos = given.pop("videos", None)
        if videos is not None and not is_none(videos.value) and not self._always_empty(videos.value):
            raise Refusal(f"`{shown}` is given videos=: {_WHY_NOT['videos']}")
        for name, why in _WHY_NOT.items():
            if name in given:
                raise Refusal(f"`{shown}` is given {name}=: {why}")
        images = given.pop("images", None)
        if images is None or is_none(images.value):
            return None
        code = self.module.code_for_node
        condition = images.condition
        rebound = self._rebound_local(images.value) or (self._rebound_local(condition) if condition is not None else None)
        if rebound is not None:
            raise Refusal(
                f"`{rebound}`, which the images `{shown}` is given are read from, is bound more than once in "
                f"{self.function.name}(); the engine reads them where it is called: bind them once"
            )
        if condition is not None:
            test = code(condition)
            return MultiModalData((("image", code(images.value)),), f"({test})" if isinstance(condition, (cst.IfExp, cst.Lambda, cst.NamedExpr)) else test)
        if self._always_list(images.value):
            return MultiModalData((("image", code(images.value)),))
        # The processor takes images=None as no images, as the engine takes the text alone.
        value = code(images.value)
        return MultiModalData((("image", value),), f"{value} is not None")

    def _rebound_local(self, expr: cst.BaseExpression) -> str | None:
        """A local of the function that ``expr`` reads and that is bound more than once: read at the engine's
        call instead of at the processor's, it might hold another value."""
        bindings = local_bindings(self.function.node)
        reads = _References("")
        walk(expr, reads)
        return next((n.value for n in reads.found if len(bindings.get(n.value, [])) > 1), None)

    def _spread(self, value: cst.BaseExpression, statement: cst.SimpleStatementLine, shown: str) -> tuple[dict[str, _Given], list[cst.BaseStatement]]:
        """``**kwargs``: a local bound once to a dict of string keys, then perhaps given keys one by one
        (``kwargs["images"] = images``, alone or as the one statement under an ``if``), all in the block of
        the processor call, before it, and read nowhere else."""
        if not isinstance(value, cst.Name):
            raise Refusal(f"`{shown}` spreads `{snippet(self.module, value)}`, whose keys are unknown; pass the keywords by name")
        name = value.value
        block = block_of(self.function.node, statement)
        bindings = local_bindings(self.function.node).get(name, [])
        if block is None or len(bindings) != 1 or not isinstance(bindings[0], cst.Dict):
            raise Refusal(
                f"`{shown}` spreads `{name}`, which is not one dict literal bound once in the processor call's block; "
                "pass the keywords by name"
            )
        literal = bindings[0]
        given: dict[str, _Given] = {}
        for element in literal.elements:
            if not (isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString)):
                raise Refusal(f"`{name}`, which `{shown}` spreads, has keys that are not string literals")
            given[str(element.key.evaluated_value)] = _Given(element.value)
        lines: list[cst.BaseStatement] = []
        found_binding = False
        for line in block:
            if line is statement:
                break
            if _binds_dict(line, name, literal):
                found_binding = True
                lines.append(line)
                continue
            item = _key_assignment(line, name)
            if item is not None and found_binding:
                key, item_value, condition = item
                if key in given:
                    raise Refusal(f"`{name}` is given the key {key!r} twice before `{shown}`")
                given[key] = _Given(item_value, condition)
                lines.append(line)
        if not found_binding:
            raise Refusal(f"`{name}`, which `{shown}` spreads, is not bound in the processor call's block before it")
        if not self._only_spread(name, value, lines):
            raise Refusal(f"`{name}`, which `{shown}` spreads, is read or changed elsewhere; pass the keywords by name")
        return given, lines

    def _only_spread(self, name: str, spread: cst.Name, lines: list[cst.BaseStatement]) -> bool:
        """Every reference to ``name`` in the function is in ``lines`` or is the spread itself."""
        references = _References(name)
        walk(self.function.node, references)
        kept = _References(name)
        for line in lines:
            walk(line, kept)
        return {id(n) for n in references.found} == {id(n) for n in kept.found} | {id(spread)}

    def _always_list(self, value: cst.BaseExpression) -> bool:
        """A list literal or comprehension, or a local bound once to one: never None."""
        if isinstance(value, (cst.List, cst.ListComp)):
            return True
        if isinstance(value, cst.Name):
            bound = local_bindings(self.function.node).get(value.value, [])
            return len(bound) == 1 and isinstance(bound[0], (cst.List, cst.ListComp))
        return False

    def _always_empty(self, value: cst.BaseExpression) -> bool:
        """``videos`` unpacked from a call of a module-level helper (``images, videos = helper(...)``) whose one
        return gives, in that place, a local it binds once to ``[]`` and never changes; and never changed here."""
        if not isinstance(value, cst.Name) or not never_changed(self.function.node, value.value):
            return False
        unpack = _Unpacking(value.value)
        walk(self.function.node, unpack)
        if len(unpack.found) != 1 or len(local_bindings(self.function.node).get(value.value, [])) != 1:
            return False
        index, source = unpack.found[0]
        helper = self.model.module_functions.get(source.func.value) if isinstance(source.func, cst.Name) else None
        if helper is None or helper.is_async or len(module_bindings(self.module).get(helper.name, [])) != 1:
            return False  # no module-level def of that name, or one the module binds again
        values = returned_values(helper.node)
        if values is None or len(values) != 1:
            return False
        returned = values[0]
        if not (isinstance(returned, cst.Tuple) and index < len(returned.elements) and not any(isinstance(e, cst.StarredElement) for e in returned.elements)):
            return False
        local = returned.elements[index].value
        if not isinstance(local, cst.Name) or not never_changed(helper.node, local.value):
            return False
        bound = local_bindings(helper.node).get(local.value, [])
        return len(bound) == 1 and isinstance(bound[0], cst.List) and not bound[0].elements


def block_of(function: cst.FunctionDef, statement: cst.BaseStatement) -> list[cst.BaseStatement] | None:
    """The statements of the block that holds ``statement`` in ``function``."""
    finder = _BlockFinder(statement)
    walk(function, finder)
    return finder.block


class _BlockFinder(cst.CSTVisitor):
    def __init__(self, statement: cst.BaseStatement) -> None:
        super().__init__()
        self.statement = statement
        self.block: list[cst.BaseStatement] | None = None

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> bool:
        if any(s is self.statement for s in node.body):
            self.block = list(node.body)
        return self.block is None


def _binds_dict(line: cst.BaseStatement, name: str, literal: cst.Dict) -> bool:
    """``name = {...}`` (annotated or not) with ``literal`` as its value."""
    if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1):
        return False
    small = line.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target = small.targets[0].target
    elif isinstance(small, cst.AnnAssign):
        target = small.target
    else:
        return False
    return isinstance(target, cst.Name) and target.value == name and small.value is literal


def _key_assignment(line: cst.BaseStatement, name: str) -> tuple[str, cst.BaseExpression, cst.BaseExpression | None] | None:
    """``name["key"] = value`` alone, or as the one statement of an ``if test:`` with no else: (key, value, test)."""
    condition = None
    if isinstance(line, cst.If) and line.orelse is None and isinstance(line.body, cst.IndentedBlock) and len(line.body.body) == 1:
        condition, line = line.test, line.body.body[0]
    if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 and isinstance(line.body[0], cst.Assign)):
        return None
    assign = line.body[0]
    target = assign.targets[0].target if len(assign.targets) == 1 else None
    if not (isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) and target.value.value == name
            and len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index)):
        return None
    key = target.slice[0].slice.value
    if not isinstance(key, cst.SimpleString):
        return None
    return str(key.evaluated_value), assign.value, condition


class _References(cst.CSTVisitor):
    """Every Name node spelled ``name`` (any name, for ``""``) that refers to a variable."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.found: list[cst.Name] = []
        self._skip: set[int] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._skip.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._skip.add(id(node.keyword))

    def visit_Name(self, node: cst.Name) -> None:
        if (node.value == self.name or not self.name) and id(node) not in self._skip:
            self.found.append(node)


class _Unpacking(cst.CSTVisitor):
    """``a, name = f(...)``: (the place of ``name`` in the targets, the call) for each such statement."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.found: list[tuple[int, cst.Call]] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Tuple) or not isinstance(node.value, cst.Call):
            return
        for index, element in enumerate(node.targets[0].target.elements):
            if isinstance(element.value, cst.Name) and element.value.value == self.name and not isinstance(element, cst.StarredElement):
                self.found.append((index, node.value))
