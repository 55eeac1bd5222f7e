"""Python engine constructions as neutral launch records, and launch fixes as LibCST edits."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from vllm_lint.cmdline.serve_args import flag_table, invalid_value
from vllm_lint.file_roles import is_testing_path
from vllm_lint.launch.record import (
    AddSetting,
    Launch,
    LaunchFinding,
    RemoveSetting,
    Rename,
    Setting,
    SetValue,
)
from vllm_lint.python.command_fixes import render_command_fix
from vllm_lint.python.command_lines import CommandLine, command_launches
from vllm_lint.python.context import NodeEdit, PyContext
from vllm_lint.python.launch_gpus import declared_gpu
from vllm_lint.python.edits import with_keyword, without_argument
from vllm_lint.python.vocabulary import serves_requests
from vllm_lint.suggestions import close_names

ENGINE_CONSTRUCTORS = {"vllm.LLM": "LLM", "vllm.EngineArgs": "EngineArgs", "vllm.AsyncEngineArgs": "AsyncEngineArgs"}


def _known_names(ctx: PyContext, kind: str) -> frozenset[str]:
    api = ctx.api
    if kind == "LLM":
        return api.llm_init_params
    if kind == "AsyncEngineArgs":
        return api.async_engine_args
    return api.engine_args


def python_launches(ctx: PyContext) -> Iterator[tuple[Launch, cst.Call | CommandLine, cst.CSTNode]]:
    """Engine constructions (``LLM(...)``, ``EngineArgs(...)``), then command lines the module starts.

    A command line's findings are anchored at the nodes of its arguments; its ``CommandLine``
    stands where a construction has its call, for ``render_fix``.
    """
    testing = is_testing_path(ctx.path)
    for site in ctx.model.calls:
        kind = ENGINE_CONSTRUCTORS.get(ctx.semantics.callee(site.node) or "")
        if kind is None:
            continue
        call = site.node
        known = _known_names(ctx, kind)
        table = flag_table(ctx.api)
        settings: list[Setting] = []
        opaque = False
        reasons: list[str] = []
        positional = 0
        for arg in call.args:
            if arg.star:
                opaque = True
                reasons.append(arg.star + ("kwargs" if arg.star == "**" else "args"))
                if arg.star == "**":
                    settings += _spread_settings(ctx, arg.value, site.function, known, table)
                continue
            if arg.keyword is None:
                if positional == 0:
                    settings.append(Setting("model", "model", True, ctx.semantics.fold(arg.value, site.function), arg, arg.value))
                else:
                    opaque = True
                    reasons.append("positional arguments after the model")
                positional += 1
                continue
            name = arg.keyword.value
            settings.append(_setting(ctx, name, arg, arg.value, site.function, known, table))
        # Attributes set on the args object after construction count as set; one it does not have is
        # silently ignored (the dataclass takes any attribute), which VLL206 says at the assignment.
        for target in site.assigned_to:
            for attribute, nodes in ctx.model.attribute_targets.items():
                head, _, field = attribute.rpartition(".")
                if head == target and not any(s.key == field for s in settings):
                    is_known = field in known
                    suggestions = () if is_known else close_names(field, known)
                    settings.append(Setting(field, attribute, is_known, None, nodes[0], suggestions=suggestions, attribute=True))
        gpu = declared_gpu(site.function)
        launch = Launch(
            surface="python",
            kind=kind,
            settings=settings,
            anchor=call,
            opaque=opaque,
            opaque_reasons=list(dict.fromkeys(reasons)),
            serves_requests=serves_requests(ctx, site),
            api=ctx.api,
            testing=testing,
            gpu_type=gpu[0] if gpu else None,
            gpu_type_anchor=gpu[1] if gpu else None,
        )
        yield launch, call, site.statement
    # vLLM started as a command line (subprocess, os.exec*, a shell string): the same launch rules
    for launch, line, statement in command_launches(ctx):
        launch.testing = testing
        yield launch, line, statement


def _setting(ctx: PyContext, name: str, anchor: cst.CSTNode, value_node: cst.BaseExpression, function, known: frozenset[str], table) -> Setting:
    is_known = name in known
    suggestions = () if is_known else close_names(name, known)
    value = ctx.semantics.fold(value_node, function)
    flag = table.by_dest.get(name) if is_known else None
    bad_choice = invalid_value(flag, value.value, parsed=False) if flag is not None and value is not None else None
    return Setting(name, name, is_known, value, anchor, value_node, suggestions, bad_choice=bad_choice)


def _spread_settings(ctx: PyContext, mapping: cst.BaseExpression, function, known: frozenset[str], table) -> list[Setting]:
    """``LLM(**cfg)`` with ``cfg`` a dict literal nothing changes: its keys are settings (the launch stays opaque:
    the dict may not be all there is)."""
    found = ctx.semantics.mapping_items(mapping, function)
    if found is None:
        return []
    items, context, _ = found
    return [_setting(ctx, key, key_node, value, context, known, table) for key, value, key_node in items if isinstance(key, str)]


def _value_code(value: object) -> str:
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, float):
        return f"{value:.2f}" if round(value, 2) == value else repr(value)
    return repr(value)


def render_fix(ctx: PyContext, call: cst.Call | CommandLine, finding: LaunchFinding) -> list[NodeEdit]:
    """LibCST edits for a launch rule's fix intent."""
    if isinstance(call, CommandLine):
        return render_command_fix(call, finding)
    intent = finding.fix
    if isinstance(intent, AddSetting):
        return [NodeEdit(call, with_keyword(call, intent.key, _value_code(intent.value)))]
    if isinstance(intent, SetValue):
        arg = intent.setting.anchor
        if not isinstance(arg, cst.Arg) or arg.keyword is None:
            return []
        return [NodeEdit(arg.value, cst.parse_expression(_value_code(intent.value)))]
    if isinstance(intent, Rename):
        arg = intent.setting.anchor
        if not isinstance(arg, cst.Arg) or arg.keyword is None:
            return []
        return [NodeEdit(arg.keyword, cst.Name(intent.new_key))]
    if isinstance(intent, RemoveSetting):
        arg = intent.setting.anchor
        if not isinstance(arg, cst.Arg) or arg.keyword is None or not any(a is arg for a in call.args):
            return []
        return [NodeEdit(call, without_argument(call, arg))]
    return []
