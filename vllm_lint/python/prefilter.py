"""Decide from the raw bytes whether a Python file could produce any finding.

Most files in a repository (and every file of vLLM's own source, which mentions
``vllm`` everywhere) cannot match: they construct no engine, no pipeline, no
SamplingParams, and import only vLLM names that exist. Proving that with a few
regular expressions costs microseconds; parsing with LibCST costs milliseconds
and importing LibCST ~170 ms. The filter must never skip a file that a rule
would report: each trigger below is a necessary condition of some rule.
"""

from __future__ import annotations

import re

from vllm_lint.vllm_api import VllmApi

# Necessary conditions of VLL101-105, VLL2xx, VLL301-302, VLL501-503.
_TRIGGERS = re.compile(
    rb"\b(?:LLM|EngineArgs|AsyncEngineArgs|SamplingParams|LLMEngine|AsyncLLMEngine|AsyncLLM)\b"
    rb"|from_engine_args|from_pretrained|\bpipeline\b|generate_async"
    rb"|vllm\.engine\.(?:async_)?llm_engine"
)
_FASTAPI_RETURN = (re.compile(rb"fastapi"), re.compile(rb"\breturn\b[^\n#]*,"))
# VLL303 on imports and dotted paths: every ``vllm.x.y`` and ``from vllm.x import a, b``.
_DOTTED = re.compile(rb"\bvllm(?:\s*\.\s*\w+)+")
_FROM_IMPORT = re.compile(rb"^[ \t]*from[ \t]+(vllm(?:\.\w+)*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.MULTILINE)
_IMPORT_NAME = re.compile(rb"^\s*(\w+)(?:\s+as\s+\w+)?\s*$")


def may_match(data: bytes, api_loader) -> bool:
    if _TRIGGERS.search(data):
        return True
    if _FASTAPI_RETURN[0].search(data) and _FASTAPI_RETURN[1].search(data):
        return True
    if b"vllm" not in data:
        return False
    return not _vllm_names_all_known(data, api_loader())


def _vllm_names_all_known(data: bytes, api: VllmApi) -> bool:
    from vllm_lint.python.rules.api import missing_in_path

    for match in _DOTTED.finditer(data):
        dotted = re.sub(rb"\s+", b"", match.group(0)).decode("ascii", "replace")
        if missing_in_path(api, dotted):
            return False
    for match in _FROM_IMPORT.finditer(data):
        module = match.group(1).decode("ascii", "replace")
        names = match.group(2)
        if names.startswith(b"("):
            names = names[1:-1]
        names = re.sub(rb"#[^\n]*", b"", names).replace(b"\\\n", b" ")
        for item in names.split(b","):
            if not item.strip():
                continue
            name = _IMPORT_NAME.match(item)
            if name is None:
                if item.strip() == b"*":
                    continue
                return False  # something the cheap reader does not understand: let the parser decide
            if missing_in_path(api, f"{module}.{name.group(1).decode('ascii')}"):
                return False
    return True
