"""Uses of the model's variable that belong to a value it held before the model.

``model = os.environ.get("MODEL_NAME")``, ``name = model.split("/")[-1]``, then ``model = LLM(model=name)``:
module code runs top to bottom once, so every use in a top-level statement above the model's own is over by
the time the model is built, and none of them ever sees the model (or the engine that replaces it). Those uses
are left as they are; a use anywhere else (in a function, which may run later, or below the model's
statement) is the model's, and the analysis judges it as such (a reassignment there still refuses).
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from vllm_lint.python.rewrite.names import Occurrence
from vllm_lint.python.rewrite.plan import Refusal
from vllm_lint.python.rewrite.shapes import snippet

# Code under these runs when something calls or iterates it, which may be after the model is built.
_DEFERRED = (cst.Lambda, cst.GeneratorExp)


def earlier_value_uses(module: cst.Module, statement: cst.CSTNode, uses: list[Occurrence], what: str) -> list[Occurrence]:
    """The uses of ``uses`` that run before ``statement`` (the model's top-level assignment) at import and
    only then; Refusal when the model's own statement reads the earlier value."""
    body = list(module.body)
    index = next((i for i, top in enumerate(body) if top is statement), None)
    if index is None:
        return []  # built in a block or a function: the model's variable has no straight-line past to read
    earlier = [o for o in uses if _runs_before(o, body, index)]
    if not earlier:
        return []
    own = [o for o in uses if o.function is None and _top_level(o) is statement and not isinstance(o.parent, cst.AssignTarget)]
    if own:
        assert isinstance(statement, cst.SimpleStatementLine)
        name = own[0].name
        shown = snippet(module, statement.body[0])
        raise Refusal(
            f"`{shown}` reads the earlier value of `{module.code_for_node(name)}`, which the engine built at start-up "
            f"could no longer see; bind that value to a variable of its own (e.g. `model_name`) and pass that to the {what}"
        )
    return earlier


def _runs_before(o: Occurrence, body: Sequence[cst.CSTNode], index: int) -> bool:
    if o.function is not None or any(isinstance(p, _DEFERRED) for p in o.parents):
        return False
    top = _top_level(o)
    position = next((i for i, s in enumerate(body) if s is top), None)
    return position is not None and position < index


def _top_level(o: Occurrence) -> cst.CSTNode | None:
    """The module's own statement that holds ``o`` (its parents start at the Module)."""
    return o.parents[1] if len(o.parents) > 1 and isinstance(o.parents[0], cst.Module) else None
