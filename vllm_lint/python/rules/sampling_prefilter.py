"""When VLL301 and VLL302 (sampling.py) can fire, read off a file's bytes (see vllm_lint.python.prefilter)."""

from __future__ import annotations

import ast

from vllm_lint.lazy_re import lazy_compile
from vllm_lint.python.prefilter import SAMPLING_PARAMS, Condition, FileBytes, top_level_arguments

_KEYWORD = lazy_compile(rb"^\s*(\w+)\s*=(?!=)")
_MAX_TOKENS = frozenset({"max_tokens", "max_new_tokens"})
_last: list[object] = [None, None]


def _calls(code: bytes) -> list[tuple[frozenset[str], bool]] | None:
    """Each ``SamplingParams(...)`` call's keywords and whether it spreads ``*args``/``**kwargs``; None when the
    cheap reader cannot tell (an alias, or arguments it does not understand). Kept for the file's other rule."""
    if _last[0] is code:
        return _last[1]  # type: ignore[return-value]
    calls: list[tuple[frozenset[str], bool]] | None = None
    if not SAMPLING_PARAMS.aliased(code):
        found: list[tuple[frozenset[str], bool]] = []
        for match in SAMPLING_PARAMS.calls(code):
            arguments = top_level_arguments(code, match.end() - 1)
            if arguments is None:
                break
            keywords, spread = set(), False
            for argument in arguments:
                if argument.strip().startswith(b"*"):
                    spread = True
                    continue
                keyword = _KEYWORD.match(argument)
                if keyword:
                    keywords.add(keyword.group(1).decode("ascii"))
            found.append((frozenset(keywords), spread))
        else:
            calls = found
    _last[:] = [code, calls]
    return calls


def _unknown_keyword(file: FileBytes) -> bool:
    if not SAMPLING_PARAMS.may_be_called(file.code):
        return False
    calls = _calls(file.code)
    if calls is None:
        return True
    known = file.api().sampling_params
    return any(keywords - known for keywords, _ in calls)


def _max_tokens_missing(file: FileBytes) -> bool:
    if not SAMPLING_PARAMS.may_be_called(file.code):
        return False
    calls = _calls(file.code)
    return calls is None or any(not spread and not keywords & _MAX_TOKENS for keywords, spread in calls)


def _tree_calls(file: FileBytes) -> list[tuple[frozenset[str], bool]]:
    """``_calls`` read off the tree, of the calls semantics.callee may name SamplingParams (``TreeFacts.calls_of``):
    a ``class SamplingParams(...)`` statement reads like a call in the bytes, and vLLM's own module calls its class."""
    calls = []
    for call in file.facts().calls_of(("SamplingParams",)):
        keywords = frozenset(keyword.arg for keyword in call.keywords if keyword.arg is not None)
        spread = any(keyword.arg is None for keyword in call.keywords) or any(isinstance(arg, ast.Starred) for arg in call.args)
        calls.append((keywords, spread))
    return calls


def _unknown_keyword_in_tree(file: FileBytes) -> bool:
    known = file.api().sampling_params
    return any(keywords - known for keywords, _ in _tree_calls(file))


def _max_tokens_missing_in_tree(file: FileBytes) -> bool:
    return any(not spread and not keywords & _MAX_TOKENS for keywords, spread in _tree_calls(file))


PREFILTER = {
    "VLL301": (Condition("a SamplingParams keyword vLLM lacks", _unknown_keyword, cost=3, tree_holds=_unknown_keyword_in_tree),),
    "VLL302": (Condition("a SamplingParams call without max_tokens", _max_tokens_missing, cost=3, tree_holds=_max_tokens_missing_in_tree),),
}
