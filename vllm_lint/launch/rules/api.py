"""VLL303 on command lines: ``python -m vllm.X`` for a module vLLM does not have."""

from __future__ import annotations

from collections.abc import Iterator

from vllm_lint.launch.record import Launch, LaunchFinding
from vllm_lint.launch.settings import LaunchSettings
from vllm_lint.registry import launch_rule
from vllm_lint.vllm_api.history import fate_phrase, module_fate


@launch_rule("VLL303", launches="module")
def nonexistent_module(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    module = launch.module or "vllm"
    api = launch.target_api()
    if api.predates:
        return  # the file's vLLM is older than any the linter knows, and had modules these do not
    prefix, _, name = module.rpartition(".")
    fate = module_fate(api, prefix, name) if prefix else None
    failure = "the command fails with ModuleNotFoundError"
    if fate is not None and fate.known_elsewhere:
        message = f"`python -m {module}`: {fate_phrase(fate, module, api, failure, launch.pinned_image)}"
    else:
        hint = " (benchmarks are the `vllm bench serve` command now)" if ".benchmarks" in module else ""
        message = f"`python -m {module}`: vLLM has no module {module}{hint}; {failure}"
    yield LaunchFinding(message=message, anchor=launch.anchor)
