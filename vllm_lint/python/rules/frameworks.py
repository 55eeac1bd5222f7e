"""VLL502 (Flask-style tuple returns in FastAPI) and VLL503 (model load in on_event)."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from vllm_lint.diagnostics import Applicability
from vllm_lint.python.context import NodeEdit, PyContext, PyFinding, PyFix
from vllm_lint.python.model import dotted_name
from vllm_lint.python.rewrite.imports import NameTaken, ensure_imported
from vllm_lint.python.vocabulary import is_model_load, loads_through_project
from vllm_lint.registry import python_rule


def _status_code(ctx: PyContext, node: cst.BaseExpression, function=None) -> int | None:
    value = ctx.semantics.fold(node, function)
    if value is not None and isinstance(value.value, int) and not isinstance(value.value, bool):
        return value.value if 100 <= value.value <= 599 else None
    name = dotted_name(node) or ""
    if name.rsplit(".", 1)[-1].startswith("HTTP_"):
        digits = name.rsplit(".", 1)[-1].split("_")[1]
        return int(digits) if digits.isdigit() else None
    return None


@python_rule("VLL502")
def tuple_return_in_fastapi(ctx: PyContext) -> Iterator[PyFinding]:
    for function, handler in ctx.semantics.handlers.items():
        if not handler.direct or handler.framework != "fastapi":
            continue
        for ret in function.returns:
            value = ret.value
            if not isinstance(value, cst.Tuple) or len(value.elements) != 2:
                continue
            status = _status_code(ctx, value.elements[1].value, function)
            if status is None:
                continue
            yield PyFinding(
                message=(
                    f"FastAPI handler {function.name} returns a (body, {status}) tuple: that is a Flask idiom; "
                    f"FastAPI sends it as a JSON array with status 200, so clients never see the {status}"
                ),
                node=value,
                statement=ret,
                fix=_json_response_fix(ctx.module, value),
            )


def _is_plain_json(expr: cst.BaseExpression) -> bool:
    """A literal that json.dumps encodes exactly as FastAPI's jsonable_encoder would."""
    if isinstance(expr, cst.SimpleString):
        return "b" not in expr.prefix.lower()
    if isinstance(expr, cst.ConcatenatedString):
        return _is_plain_json(expr.left) and _is_plain_json(expr.right)
    if isinstance(expr, (cst.FormattedString, cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.Name):
        return expr.value in ("True", "False", "None")
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return isinstance(expr.expression, (cst.Integer, cst.Float))
    if isinstance(expr, (cst.List, cst.Tuple)):
        return all(isinstance(e, cst.Element) and _is_plain_json(e.value) for e in expr.elements)
    if isinstance(expr, cst.Dict):
        return all(
            isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString) and _is_plain_json(e.key) and _is_plain_json(e.value)
            for e in expr.elements
        )
    return False


def _json_response_fix(module: cst.Module, pair: cst.Tuple) -> PyFix | None:
    """``return body, 503`` -> ``return JSONResponse(body, status_code=503)``: same body, the status kept."""
    body, status = pair.elements[0], pair.elements[1]
    if not isinstance(body, cst.Element) or not isinstance(status, cst.Element):
        return None  # a starred element: the body is not one value
    try:
        with_imports, json_response = ensure_imported(module, "fastapi.responses", "JSONResponse", equivalents=("starlette.responses.JSONResponse",))
        content = body.value
        if not _is_plain_json(content):
            # FastAPI would have run the body through jsonable_encoder (pydantic models, dates, ...): keep doing so.
            with_imports, encoder = ensure_imported(with_imports, "fastapi.encoders", "jsonable_encoder")
            content = cst.Call(func=cst.Name(encoder), args=[cst.Arg(content)])
    except NameTaken:
        return None
    response = cst.Call(
        func=cst.parse_expression(json_response),
        args=[
            cst.Arg(content, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
            cst.Arg(
                status.value,
                keyword=cst.Name("status_code"),
                equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
            ),
        ],
    )
    return PyFix(
        title=f"Return {json_response}(body, status_code=...)",
        applicability=Applicability.UNSAFE,
        build=lambda: [NodeEdit(pair, response), NodeEdit(module, with_imports)],
    )


def _startup_event(ctx: PyContext, decorator: cst.Decorator) -> bool:
    expr = decorator.decorator
    if not isinstance(expr, cst.Call) or not (dotted_name(expr.func) or "").endswith(".on_event"):
        return False
    first = expr.args[0].value if expr.args else None
    return isinstance(first, cst.SimpleString) and first.evaluated_value == "startup"


@python_rule("VLL503")
def on_event_model_load(ctx: PyContext) -> Iterator[PyFinding]:
    for function in ctx.model.functions:
        decorators = [d for d in function.node.decorators if _startup_event(ctx, d)]
        if not decorators:
            continue
        # In the hook, in functions of this module it calls, or in another module of the project it calls into.
        reached = {f for f, _ in ctx.semantics.functions.reached_from(function)}
        loads = [
            site for site in ctx.model.calls
            if (_inside(site.function, function) or site.function in reached)
            and (is_model_load(ctx.semantics.callee(site.node)) or loads_through_project(ctx, site))
        ]
        if not loads:
            continue
        yield PyFinding(
            message=(
                f"model loaded in @on_event(\"startup\") hook {function.name}: on_event is deprecated in FastAPI; "
                "load it in a lifespan handler (FastAPI(lifespan=...)), which also gives a clean shutdown"
            ),
            node=decorators[0],
            statement=decorators[0],
        )


def _inside(function, outer) -> bool:
    while function is not None:
        if function is outer:
            return True
        function = function.parent
    return False
