"""A demo under ``if __name__ == "__main__":`` that calls a helper the rewrite makes async.

Run as a script, the original module loads the model at import and the block generates with it. Rewritten, the
engine is built by the app's lifespan handler, which a script run never enters, and the helper returns a
coroutine. So the block's statements become the body of an ``async def`` that enters the lifespan handler (the
engine is built as the server builds it, and shut down after), awaits the helper there, and runs in
``asyncio.run(...)``: the block prints or writes what it did before. Only a block that serves nothing (a server
started in it would start inside that event loop) and binds no name that code outside it reads (its names
become the function's locals) is rewritten so.
"""

from __future__ import annotations

import libcst as cst

from vllm_lint.python.context import PyContext
from vllm_lint.python.rewrite.names import occurrences
from vllm_lint.python.rewrite.plan import Bridge, BuiltInPlace, Lifespan, Refusal
from vllm_lint.python.rewrite.prompts import bound_names
from vllm_lint.python.rewrite.shapes import contains, snippet
from vllm_lint.python.walk import walk

# Calls that start a server, which must not run inside the demo's event loop.
_SERVING_METHODS = frozenset({"run", "serve", "launch", "run_server"})


def script_block(module: cst.Module, statement: cst.CSTNode) -> cst.If | None:
    """The top-level ``if __name__ == "__main__":`` (with no else) that holds ``statement``."""
    for top in module.body:
        if isinstance(top, cst.If) and top.orelse is None and _is_main_guard(top.test) and isinstance(top.body, cst.IndentedBlock) \
                and contains(top, statement):
            return top
    return None


def check_script(ctx: PyContext, block: cst.If, placement: Lifespan | BuiltInPlace | Bridge, helper: str) -> None:
    """Refusal unless ``block`` can run as a coroutine in the app's lifespan handler."""
    shown = f"the demo under `if __name__ == \"__main__\":` that calls {helper}()"
    if not isinstance(placement, Lifespan) or placement.moved_model is not None and contains(block, placement.moved_model):
        raise Refusal(
            f"{shown} runs where no engine is started (the engine is built where the app starts); await {helper}() "
            "in an async function that starts the engine, or call the model there another way"
        )
    serving = _serving_call(ctx, block)
    if serving is not None:
        raise Refusal(
            f"{shown} also starts a server (`{snippet(ctx.module, serving)}`), which cannot run inside the event loop "
            f"the demo's awaits need; move the demo to a script of its own"
        )
    assert isinstance(block.body, cst.IndentedBlock)  # script_block's
    bound: set[str] = set().union(*(bound_names(statement) for statement in block.body.body))
    inside = {id(node) for node in _nodes(block)}
    for name, uses in occurrences(ctx.module, sorted(bound)).items():
        outside = next((o for o in uses if id(o.name) not in inside), None)
        if outside is not None:
            raise Refusal(
                f"{shown} binds `{name}`, which `{snippet(ctx.module, outside.parent)}` reads outside it; as the demo "
                "runs in a function, it would bind a local instead: give the demo's variables names of their own"
            )


def _serving_call(ctx: PyContext, block: cst.If) -> cst.Call | None:
    inside = {id(node) for node in _nodes(block)}
    for site in ctx.model.calls:
        if id(site.node) not in inside:
            continue
        callee = ctx.semantics.callee(site.node) or ""
        method = site.node.func.attr.value if isinstance(site.node.func, cst.Attribute) else ""
        if callee.startswith(("uvicorn.", "hypercorn.", "gunicorn.")) or method in _SERVING_METHODS:
            return site.node
    return None


def _is_main_guard(test: cst.BaseExpression) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.comparisons[0].operator, cst.Equal)):
        return False
    sides = (test.left, test.comparisons[0].comparator)
    names = [s for s in sides if isinstance(s, cst.Name) and s.value == "__name__"]
    strings = [s for s in sides if isinstance(s, cst.SimpleString) and s.evaluated_value == "__main__"]
    return len(names) == 1 and len(strings) == 1


class _All(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.nodes: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.nodes.append(node)
        return True


def _nodes(tree: cst.CSTNode) -> list[cst.CSTNode]:
    found = _All()
    walk(tree, found)
    return found.nodes


def run_in_lifespan(block: cst.If, main: str, lifespan: str, app: str, asyncio: str) -> cst.If:
    """The block's statements in ``async def main(): async with lifespan(app): ...``, run by ``asyncio.run``."""
    template = cst.parse_statement(f"async def {main}():\n    async with {lifespan}({app}):\n        pass\n")
    assert isinstance(template, cst.FunctionDef) and isinstance(template.body, cst.IndentedBlock)
    entered = template.body.body[0]
    assert isinstance(entered, cst.With) and isinstance(entered.body, cst.IndentedBlock)
    assert isinstance(block.body, cst.IndentedBlock)
    entered = entered.with_changes(body=entered.body.with_changes(body=block.body.body))
    function = template.with_changes(body=template.body.with_changes(body=[entered]))
    run = cst.parse_statement(f"{asyncio}.run({main}())\n")
    assert isinstance(run, cst.SimpleStatementLine)
    run = run.with_changes(leading_lines=[cst.EmptyLine(indent=False)])
    return block.with_changes(body=block.body.with_changes(body=[function, run]))
