"""SamplingParams: keywords it does not have, and the 16-token default."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

import libcst as cst

from vllm_lint.diagnostics import Applicability, Severity
from vllm_lint.python.context import NodeEdit, PyContext, PyFinding, PyFix
from vllm_lint.python.edits import add_keyword, keyword_arg
from vllm_lint.python.model import CallSite, FunctionInfo
from vllm_lint.python.vocabulary import DEFAULT_MAX_TOKENS, serves_requests
from vllm_lint.registry import python_rule
from vllm_lint.suggestions import close_names
from vllm_lint.vllm_api.history import Fate, fate_phrase, keyword_fate

# Transformers' generate() keywords people carry over, and what vLLM calls them.
# Only a rename with one meaning is offered as a (safe) fix.
_CARRIED_OVER = {
    "max_new_tokens": ("max_tokens", "vLLM calls it max_tokens", True),
    "guided_decoding": ("structured_outputs", "use structured_outputs=StructuredOutputsParams(...)", False),
    "do_sample": (None, "vLLM samples unless temperature=0; drop it (temperature=0 for greedy)", False),
    "num_beams": (None, "beam search is a separate API in vLLM (LLM.beam_search)", False),
    "use_beam_search": (None, "beam search is a separate API in vLLM (LLM.beam_search)", False),
    "best_of": (None, "use n and rank the outputs yourself", False),
}
_REQUEST_FIELDS = ("max_tokens", "max_new_tokens", "max_length", "max_completion_tokens")


def sampling_calls(ctx: PyContext) -> Iterator[CallSite]:
    for site in ctx.model.calls:
        if ctx.semantics.callee(site.node) == "vllm.SamplingParams":
            yield site


def _has_spread(call: cst.Call) -> bool:
    return any(arg.star for arg in call.args)


@python_rule("VLL301")
def unknown_sampling_param(ctx: PyContext) -> Iterator[PyFinding]:
    api = ctx.api
    known = api.sampling_params
    if api.predates:
        return  # the file's vLLM is older than any the linter knows: its keywords were others
    for site in sampling_calls(ctx):
        present = {arg.keyword.value for arg in site.node.args if arg.keyword}
        for arg in site.node.args:
            if arg.keyword is None or arg.keyword.value in known:
                continue
            name = arg.keyword.value
            fate = keyword_fate(api, "sampling_params", name)
            if fate is not None and fate.known_elsewhere and name not in _CARRIED_OVER:
                yield _moved_on(arg, arg.keyword, site, fate, api, present)
                continue
            target, advice, one_meaning = _CARRIED_OVER.get(name, (None, "", False))
            if target is not None and target not in known:
                target, one_meaning = None, False
            if target is None and not advice:
                matches = close_names(name, known)
                if len(matches) == 1:
                    target, one_meaning = matches[0], True
                    advice = f"did you mean {target}?"
                elif matches:
                    advice = "did you mean one of " + ", ".join(matches) + "?"
            fix = None
            if target is not None and one_meaning and target not in present:
                fix = PyFix(
                    title=f"Rename {name} to {target}",
                    applicability=Applicability.SAFE,
                    build=partial(_renamed, arg.keyword, target),
                )
            failure = "it raises TypeError on every request"
            what = f"SamplingParams has no keyword {name}: {failure}"
            if fate is not None and fate.known_elsewhere:
                what = fate_phrase(fate, f"SamplingParams keyword {name}", api, failure)
            yield PyFinding(
                message=what + (f"; {advice}" if advice else ""),
                node=arg,
                statement=site.statement,
                fix=fix,
            )


def _renamed(keyword: cst.Name, new: str) -> list[NodeEdit]:
    return [NodeEdit(keyword, cst.Name(new))]


def _moved_on(arg: cst.Arg, keyword: cst.Name, site: CallSite, fate: Fate, api, present: set[str]) -> PyFinding:
    """A keyword another release has: when it went (or came), and vLLM's own rename when the old name
    was only another spelling of the new one."""
    fix = None
    new = fate.replaced_by
    one_to_one = fate.how == "alias" or fate.how == "said" and fate.one_to_one
    if fate.status == "removed" and one_to_one and new and new.isidentifier() and new not in present:
        fix = PyFix(
            title=f"Rename {keyword.value} to {new}",
            applicability=Applicability.SAFE if fate.how == "alias" else Applicability.UNSAFE,
            build=partial(_renamed, keyword, new),
        )
    return PyFinding(
        message=fate_phrase(fate, f"SamplingParams keyword {keyword.value}", api, "it raises TypeError on every request"),
        node=arg,
        statement=site.statement,
        fix=fix,
    )


def _request_max_tokens(ctx: PyContext, function: FunctionInfo | None) -> str | None:
    """An expression for the request's own token limit, when one is in scope."""
    scope = function
    while scope is not None:
        for name in _REQUEST_FIELDS:
            if name in scope.params:
                return name
        for param in (*scope.node.params.posonly_params, *scope.node.params.params):
            annotation = param.annotation.annotation if param.annotation else None
            if isinstance(annotation, cst.Name):
                fields = _class_fields(ctx, annotation.value)
                for name in _REQUEST_FIELDS:
                    if name in fields:
                        return f"{param.name.value}.{name}"
        scope = scope.parent
    return None


def _class_fields(ctx: PyContext, class_name: str) -> set[str]:
    for klass in ctx.model.classes:
        if klass.name != class_name:
            continue
        fields = set()
        for statement in klass.node.body.body:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                        fields.add(small.target.value)
        return fields
    return set()


def _max_tokens_added(call: cst.Call, value_code: str) -> list[NodeEdit]:
    return [add_keyword(call, "max_tokens", value_code)]


@python_rule("VLL302")
def implicit_max_tokens(ctx: PyContext) -> Iterator[PyFinding]:
    for site in sampling_calls(ctx):
        call = site.node
        if _has_spread(call) or keyword_arg(call, "max_tokens") or keyword_arg(call, "max_new_tokens"):
            continue
        online = serves_requests(ctx, site) and not site.in_main_guard
        source = _request_max_tokens(ctx, site.function) if online else None
        value = source or str(DEFAULT_MAX_TOKENS)
        yield PyFinding(
            message=(
                "SamplingParams without max_tokens: vLLM's default is 16 tokens, so answers come back truncated"
                + ("" if online else " (offline script)")
            ),
            node=call,
            statement=site.statement,
            severity=None if online else Severity.INFO,
            fix=PyFix(
                title=f"Add max_tokens={value}",
                applicability=Applicability.UNSAFE,
                build=partial(_max_tokens_added, call, value),
            ),
        )
