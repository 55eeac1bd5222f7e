"""VLL303 on command lines: ``python -m vllm.X`` for a module vLLM does not have."""

from __future__ import annotations

from collections.abc import Iterator

from vllm_lint.launch.record import Launch, LaunchFinding
from vllm_lint.launch.settings import LaunchSettings
from vllm_lint.registry import launch_rule


@launch_rule("VLL303", launches="module")
def nonexistent_module(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    module = launch.module or "vllm"
    hint = " (benchmarks are the `vllm bench serve` command now)" if ".benchmarks" in module else ""
    yield LaunchFinding(
        code="VLL303",
        message=f"`python -m {module}`: vLLM has no module {module}{hint}; the command fails with ModuleNotFoundError",
        anchor=launch.anchor,
    )
