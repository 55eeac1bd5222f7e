"""VLL109: a Streamlit script that loads its model on every rerun."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from vllm_lint.diagnostics import Applicability
from vllm_lint.python.context import NodeEdit, PyContext, PyFinding, PyFix
from vllm_lint.python.model import CallSite, FunctionInfo, decorator_parts, dotted_name
from vllm_lint.python.rewrite.layout import with_blank_lines
from vllm_lint.python.rewrite.names import names_in
from vllm_lint.python.vocabulary import is_model_load
from vllm_lint.registry import python_rule

# Streamlit's caches that keep an object across reruns (``cache`` and the ``experimental_*``/``singleton``
# names are the older spellings); ``functools.lru_cache`` does not: the script, and its functions, run anew.
_CACHES = frozenset({"cache_resource", "cache_data", "cache", "experimental_singleton", "experimental_memo", "singleton", "memo"})


def _cached(ctx: PyContext, function: FunctionInfo | None) -> bool:
    while function is not None:
        for decorator in function.node.decorators:
            qualified = ctx.semantics.qualify(decorator_parts(decorator)[0]) or ""
            if qualified.startswith("streamlit.") and qualified.rsplit(".", 1)[-1] in _CACHES:
                return True
        function = function.parent
    return False


def _into_session_state(ctx: PyContext, site: CallSite) -> bool:
    """``st.session_state.model = load(...)`` / ``st.session_state["model"] = ...``: kept across reruns
    (such stores are written under an ``if "model" not in st.session_state`` guard)."""
    statement = site.statement
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if not isinstance(small, cst.Assign) or small.value is not site.node:
            continue
        for target in small.targets:
            expr = target.target
            holder = expr.value if isinstance(expr, (cst.Subscript, cst.Attribute)) else None
            if holder is not None and (ctx.semantics.qualify(holder) or "").startswith("streamlit.session_state"):
                return True
    return False


def _rerun_functions(ctx: PyContext) -> dict[FunctionInfo, bool]:
    """Module functions that run on every rerun: called from the script's top level (not into session
    state), or from another such function, without a Streamlit cache on the way."""
    functions = ctx.model.module_functions
    reached: dict[FunctionInfo, bool] = {}
    frontier = []
    for site in ctx.model.calls:
        name = dotted_name(site.node.func)
        if site.function is None and name in functions and not _into_session_state(ctx, site):
            frontier.append(functions[name])
    while frontier:
        function = frontier.pop()
        if function in reached or _cached(ctx, function):
            continue
        reached[function] = True
        frontier.extend(functions[name] for name in function.called_names if name in functions)
    return reached


def _is_streamlit_script(ctx: PyContext) -> bool:
    """A script Streamlit runs (its top level draws the page), not a helper module it imports: a module's
    top level runs once per process, a script's on every rerun."""
    if not ctx.semantics.imports_any(("streamlit",)):
        return False
    return any(site.function is None and (ctx.semantics.callee(site.node) or "").startswith("streamlit.") for site in ctx.model.calls)


@python_rule("VLL109")
def model_load_per_rerun(ctx: PyContext) -> Iterator[PyFinding]:
    if not _is_streamlit_script(ctx):
        return
    reruns: dict[FunctionInfo, bool] | None = None
    for site in ctx.model.calls:
        callee = ctx.semantics.callee(site.node)
        if not is_model_load(callee) or site.in_lambda:
            continue
        function = site.function
        if function is None:
            if _into_session_state(ctx, site):
                continue
            where, fix = "at the top level of a Streamlit script", _loader_fix(ctx, site)
        else:
            reruns = _rerun_functions(ctx) if reruns is None else reruns
            outer = function
            while outer.parent is not None:
                outer = outer.parent
            if outer not in reruns or _cached(ctx, function):
                continue
            where, fix = f"in {function.name}(), which a Streamlit script calls on every run without @st.cache_resource", _decorator_fix(ctx, function)
        shown = dotted_name(site.node.func) or callee
        yield PyFinding(
            message=(
                f"{shown}(...) loads a model {where}: Streamlit re-runs the whole script on every widget "
                "interaction, so the model is loaded again each time (the full load time, and memory until the old "
                "copy is freed); load it in a function decorated with @st.cache_resource"
            ),
            node=site.node,
            statement=site.statement,
            fix=fix,
        )


# -- fixes ---------------------------------------------------------------------------------------


def _streamlit_name(ctx: PyContext) -> str | None:
    """The name the module gives ``streamlit`` (``import streamlit as st``), when imported at the top."""
    for info in ctx.model.imports:
        if info.function is None and isinstance(info.node, cst.Import):
            for name, asname, _ in info.names:
                if name == "streamlit":
                    return asname or "streamlit"
    return None


def _decorator_fix(ctx: PyContext, function: FunctionInfo) -> PyFix | None:
    """``@st.cache_resource`` on a plain module function that only builds things (it writes nothing to the
    page: a cached function would stop doing that on later reruns)."""
    streamlit = _streamlit_name(ctx)
    if streamlit is None or function.parent is not None or function.is_method or function.node.decorators:
        return None
    for site in ctx.model.calls:
        if site.function is function and (ctx.semantics.callee(site.node) or "").startswith("streamlit."):
            return None
    node = function.node
    decorated = node.with_changes(decorators=[cst.Decorator(cst.parse_expression(f"{streamlit}.cache_resource"))])
    return PyFix(
        title=f"Cache {function.name}() with @{streamlit}.cache_resource",
        applicability=Applicability.UNSAFE,
        build=lambda: [NodeEdit(node, decorated)],
    )


def _static_arguments(ctx: PyContext, call: cst.Call) -> bool:
    """Arguments that are the same on every rerun: literals, module constants, imported names (not a
    widget's value, which a loader without parameters would freeze)."""
    for arg in call.args:
        if arg.star:
            return False
        value = arg.value
        if ctx.semantics.fold(value) is None and not (isinstance(value, (cst.Name, cst.Attribute)) and ctx.semantics.qualify(value)):
            return False
    return True


def _loader_fix(ctx: PyContext, site: CallSite) -> PyFix | None:
    """``model = pipeline(...)`` at the top level -> a cached loader function, called in its place."""
    statement = site.statement
    streamlit = _streamlit_name(ctx)
    module = ctx.module
    index = next((i for i, s in enumerate(module.body) if s is statement), None)
    if streamlit is None or index is None or not isinstance(statement, cst.SimpleStatementLine):
        return None
    if len(statement.body) != 1 or not isinstance(statement.body[0], cst.Assign):
        return None
    assign = statement.body[0]
    if assign.value is not site.node or len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return None
    if not _static_arguments(ctx, site.node):
        return None
    target = assign.targets[0].target.value
    loader = f"load_{target.lstrip('_')}"
    if loader in names_in(ctx.module):
        return None
    call_code = ctx.module.code_for_node(site.node.with_changes(lpar=[], rpar=[]))
    if '"""' in call_code or "'''" in call_code:
        return None  # re-indenting the call's lines would change a multi-line string
    indent = ctx.module.default_indent
    body = call_code.replace("\n", "\n" + indent)
    function = cst.parse_statement(f"@{streamlit}.cache_resource\ndef {loader}():\n{indent}return {body}\n")
    function = function.with_changes(leading_lines=[*statement.leading_lines])
    call = statement.with_changes(body=[assign.with_changes(value=cst.parse_expression(f"{loader}()"))], leading_lines=[])
    new_body = [*module.body[:index], with_blank_lines(function, 2 if index else 0), with_blank_lines(call, 2), *module.body[index + 1 :]]
    replaced = module.with_changes(body=new_body)
    return PyFix(
        title=f"Load it once, in an @{streamlit}.cache_resource function",
        applicability=Applicability.UNSAFE,
        build=lambda: [NodeEdit(module, replaced)],
    )
