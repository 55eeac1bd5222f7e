"""A model kept in a module-level dict under a constant key (``MODELS["llm"] = LLM(...)`` after ``MODELS = {}``,
or ``MODELS = {"llm": LLM(...)}``), read only as ``MODELS["llm"]``.

Such an entry is one variable under another spelling: the rewrite names the model by the entry's code
(``MODELS["llm"]``), and each of its uses is the Subscript node, as ``self.llm``'s are the Attribute node. The
engine then lives in the same entry, so every read keeps reaching it. Any other use of the dict (another key,
iterating it, passing it whole, binding it again) could see the engine where it saw the model, or miss it:
the rewrite refuses those.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from vllm_lint.python.model import subscript_key
from vllm_lint.python.rewrite.names import Occurrence, occurrences
from vllm_lint.python.rewrite.plan import Refusal
from vllm_lint.python.rewrite.shapes import snippet


@dataclass(frozen=True, slots=True)
class Entry:
    """``MODELS["llm"]``: the dict's module-level variable and the key as written."""

    variable: str
    key: str  # the key's code (``"llm"``), as the binding wrote it
    literal: bool  # bound by the dict's own literal (``MODELS = {"llm": LLM(...)}``)

    @property
    def code(self) -> str:
        return f"{self.variable}[{self.key}]"


def is_entry(name: str) -> bool:
    """The model's name (a ServerPlan's ``model_name``) is a dict entry's code, not a variable."""
    return name.endswith("]")


def held_on_object(name: str) -> bool:
    """``self.llm``: a model on an object (an entry's key may hold a dot: ``MODELS["gpt-3.5"]``)."""
    return "." in name and not is_entry(name)


def entry_variable(name: str) -> str:
    """The dict's variable of an entry's name (``MODELS`` of ``MODELS["llm"]``); a plain name as it is."""
    return name.split("[", 1)[0] if is_entry(name) else name


def literal_entry(assign: cst.Assign, value: cst.BaseExpression, what: str) -> Entry | None:
    """``MODELS = {"llm": <value>}``: a dict of that one entry bound to a plain name."""
    target = assign.targets[0].target if len(assign.targets) == 1 else None
    literal = assign.value
    if not (isinstance(target, cst.Name) and isinstance(literal, cst.Dict) and len(literal.elements) >= 1):
        return None
    element = next((e for e in literal.elements if isinstance(e, cst.DictElement) and e.value is value), None)
    if element is None or not isinstance(element.key, cst.SimpleString):
        return None
    if len(literal.elements) > 1:
        raise Refusal(
            f"`{target.value}` holds other entries beside the {what}, which the rewrite would have to tell apart from its "
            f"engine: keep the {what} in a dict of its own (`{target.value} = {{{cst.Module([]).code_for_node(element.key)}: ...}}`), or in a variable"
        )
    return Entry(target.value, cst.Module([]).code_for_node(element.key), literal=True)


def subscript_entry(target: cst.BaseAssignTargetExpression) -> Entry | None:
    """``MODELS["llm"]`` as an assignment's target."""
    if subscript_key(target) is None:
        return None
    assert isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name)
    index = target.slice[0].slice
    assert isinstance(index, cst.Index)
    return Entry(target.value.value, cst.Module([]).code_for_node(index.value), literal=False)


def entry_uses(module: cst.Module, entry: Entry, binding: cst.SimpleStatementLine, what: str) -> list[Occurrence]:
    """Every ``MODELS["llm"]`` (the Subscript as the occurrence's ``name``), once the dict is seen to be bound
    once at module level and read nowhere else; Refusal names the first other use."""
    variable = entry.variable
    key = cst.ensure_type(cst.parse_expression(entry.key), cst.SimpleString).evaluated_value
    uses: list[Occurrence] = []
    bindings: list[cst.CSTNode] = []
    for o in occurrences(module, [variable])[variable]:
        parent = o.parent
        statement = o.ancestor(3) if isinstance(parent, cst.AssignTarget) else o.ancestor(2)
        if isinstance(parent, cst.AssignTarget) or (isinstance(parent, cst.AnnAssign) and parent.target is o.name):
            assert statement is not None
            bindings.append(statement)
            if o.function is not None or not any(top is statement for top in module.body):
                raise Refusal(f"`{variable}`, the dict that holds the {what}, is bound inside a function or block; bind it once at module level")
            continue
        if isinstance(parent, cst.NameItem):
            continue  # ``global MODELS``: a rebinding under it is a binding, refused below
        if isinstance(parent, cst.Subscript) and parent.value is o.name:
            read = subscript_key(parent)
            if read is not None and read[1] == key:
                uses.append(Occurrence(parent, o.parents[:-1], o.function))  # type: ignore[arg-type]
                continue
            raise Refusal(
                f"`{snippet(module, parent)}` reads the dict that holds the {what} with a key other than {entry.key}; the "
                f"rewrite puts the engine in that one entry: read it as `{entry.code}` (or keep the {what} in a variable)"
            )
        # ``list(MODELS)``, not the argument alone
        shown = o.ancestor(2) if isinstance(parent, (cst.Arg, cst.Element, cst.StarredElement)) else parent
        raise Refusal(
            f"`{snippet(module, shown or parent)}` uses `{variable}`, the dict that holds the {what}, other than as `{entry.code}` "
            f"(iterated, passed whole or changed), where it would find the engine in the {what}'s place; read the {what} "
            f"only as `{entry.code}` (or keep it in a variable)"
        )
    if len(bindings) != 1 or (entry.literal and bindings[0] is not binding):
        raise Refusal(f"`{variable}`, the dict that holds the {what}, is bound more than once; bind it once at module level")
    if not entry.literal and not _empty_dict(bindings[0]):
        raise Refusal(f"`{snippet(module, bindings[0])}` starts the dict that holds the {what} with other entries; keep the {what} in a dict of its own")
    return uses


def _empty_dict(statement: cst.CSTNode) -> bool:
    """``MODELS = {}`` / ``MODELS: dict[str, LLM] = {}`` / ``MODELS = dict()``."""
    small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 else None
    value = small.value if isinstance(small, (cst.Assign, cst.AnnAssign)) else None
    if isinstance(value, cst.Dict):
        return not value.elements
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "dict" and not value.args
