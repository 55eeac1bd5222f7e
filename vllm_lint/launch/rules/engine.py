"""VLL201-VLL208: engine configuration, written once for every surface over the launch record."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from vllm_lint.diagnostics import Applicability
from vllm_lint.launch.defaults import DEFAULT_MAX_LORA_RANK, MAX_GPU_MEMORY_UTILIZATION, SAFE_GPU_MEMORY_UTILIZATION
from vllm_lint.launch.parallelism import parallel_anchor, parallel_sizes
from vllm_lint.launch.record import AddSetting, Launch, LaunchFinding, RemoveSetting, Rename, SetValue
from vllm_lint.launch.settings import LaunchSettings
from vllm_lint.registry import launch_rule
from vllm_lint.values import as_bool, as_float


def _origin(value_origin: str | None) -> str:
    return f" ({value_origin})" if value_origin else ""


@launch_rule("VLL201")
def missing_gpu_memory_utilization(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    if launch.opaque or launch.has("gpu_memory_utilization") or launch.has("kv_cache_memory_bytes"):
        return
    yield LaunchFinding(
        code="VLL201",
        message=(
            "vLLM engine launched without an explicit gpu_memory_utilization: vLLM silently takes 0.92 of "
            "the device, leaving little room for anything else on the GPU"
        ),
        anchor=launch.anchor,
        fix=AddSetting("gpu_memory_utilization", SAFE_GPU_MEMORY_UTILIZATION),
        fix_title=f"Add gpu_memory_utilization={SAFE_GPU_MEMORY_UTILIZATION:.2f}",
    )


@launch_rule("VLL202")
def gpu_memory_utilization_out_of_range(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    setting = launch.get("gpu_memory_utilization")
    if setting is None:
        return
    number = as_float(setting.value)
    if number is None:
        return
    if number > 1 or number <= 0:
        reason = "vLLM rejects it at start-up (it must be in (0, 1])"
    elif number > MAX_GPU_MEMORY_UTILIZATION:
        reason = "leaves no headroom for activations, CUDA graphs and other processes: expect OOM under load"
    else:
        return
    origin = _origin(setting.value.origin if setting.value else None)
    yield LaunchFinding(
        code="VLL202",
        message=f"gpu_memory_utilization {number:g}{origin} is out of range: {reason}",
        anchor=setting.value_anchor or setting.anchor,
        fix=SetValue(setting, SAFE_GPU_MEMORY_UTILIZATION),
        fix_title=f"Set gpu_memory_utilization to {SAFE_GPU_MEMORY_UTILIZATION:.2f}",
    )


@launch_rule("VLL203")
def missing_max_model_len(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    if launch.opaque or launch.has("max_model_len"):
        return
    yield LaunchFinding(
        code="VLL203",
        message=(
            "vLLM engine launched without an explicit max_model_len: it reserves KV cache for the model's "
            "whole context window, which fails at start-up on smaller GPUs or leaves room for few "
            "concurrent requests"
        ),
        anchor=launch.anchor,
        fix=AddSetting("max_model_len", settings.fix_max_model_len),
        fix_title=f"Add max_model_len={settings.fix_max_model_len}",
    )


def _older_than(version: str, reference: tuple[int, int]) -> bool:
    parts = [int(p) if p.isdigit() else 0 for p in version.split(".")[:2]]
    parts += [0] * (2 - len(parts))
    return tuple(parts) < reference


@launch_rule("VLL204")
def prefix_caching_disabled(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    if launch.has("kv_transfer_config"):
        return
    setting = launch.get("enable_prefix_caching")
    if setting is not None:
        if as_bool(setting.value) is False:
            yield LaunchFinding(
                code="VLL204",
                message=(
                    "prefix caching is switched off: every request recomputes shared prompt prefixes "
                    "(system prompts, chat history), wasting GPU time and raising latency"
                ),
                anchor=setting.anchor,
                fix=SetValue(setting, True),
                fix_title="Enable prefix caching",
            )
        return
    target = settings.target_vllm_version
    if target and _older_than(target, (0, 8)) and not launch.opaque:
        yield LaunchFinding(
            code="VLL204",
            message=(
                f"prefix caching is off by default in vLLM {target} (target-vllm-version): every request "
                "recomputes shared prompt prefixes; enable it explicitly"
            ),
            anchor=launch.anchor,
            fix=AddSetting("enable_prefix_caching", True),
            fix_title="Enable prefix caching",
        )


@launch_rule("VLL205")
def tensor_parallel_mismatch(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    if launch.gpu_count is None:
        return
    sizes = parallel_sizes(launch)
    if sizes is None:
        return
    product = sizes[0] * sizes[1]
    if product == launch.gpu_count:
        return
    yield LaunchFinding(
        code="VLL205",
        message=(
            f"tensor x pipeline parallel size is {sizes[0]} x {sizes[1]} = {product}, but {launch.gpu_count} "
            f"GPU(s) are declared for this {'container' if launch.container else 'launch'}: vLLM "
            + ("fails at start-up waiting for GPUs it cannot see" if product > launch.gpu_count
               else "leaves the other GPUs idle")
        ),
        anchor=parallel_anchor(launch),
    )


@launch_rule("VLL206")
def unknown_engine_arg(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    for setting in launch.settings:
        if setting.bad_choice is not None:
            value = str(setting.value.value) if setting.value else "?"
            close = difflib.get_close_matches(value, setting.bad_choice, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]}?" if close else ""
            shown = ", ".join(setting.bad_choice[:12]) + (", ..." if len(setting.bad_choice) > 12 else "")
            yield LaunchFinding(
                code="VLL206",
                message=(
                    f"{setting.spelled} {value} is not a value vLLM accepts, so the engine fails to start "
                    f"(choose one of: {shown}){hint}"
                ),
                anchor=setting.value_anchor or setting.anchor,
            )
            continue
        if setting.known:
            continue
        if setting.attribute:
            hint = f"; did you mean {setting.suggestions[0]}?" if len(setting.suggestions) == 1 else ""
            yield LaunchFinding(
                code="VLL206",
                message=(
                    f"{setting.spelled} is not an engine argument: {launch.kind} has no field {setting.key}, so "
                    f"the assignment has no effect (nothing reads it){hint}"
                ),
                anchor=setting.anchor,
            )
            continue
        if setting.removed:
            detail = "it was removed from vLLM and now fails with a TypeError / unrecognized argument"
        else:
            detail = "vLLM does not have it; the engine fails at start-up"
        hint = ""
        fix = None
        if len(setting.suggestions) == 1:
            hint = f"; did you mean {setting.suggestions[0]}?"
            fix = Rename(setting, setting.suggestions[0])
        elif setting.suggestions:
            hint = "; did you mean one of " + ", ".join(setting.suggestions) + "?"
        yield LaunchFinding(
            code="VLL206",
            message=f"unknown engine argument {setting.spelled}: {detail}{hint}",
            anchor=setting.anchor,
            fix=fix,
            fix_title=f"Rename to {setting.suggestions[0]}" if fix else None,
            applicability=Applicability.SAFE,
        )


def _runs_on_cpu(launch: Launch) -> bool:
    """A launch on vLLM's CPU backend: a ``VLLM_CPU_*`` variable (read only there, vllm/envs.py:887-906) or a CPU image."""
    if any(name.startswith("VLLM_CPU_") for name in launch.env):
        return True
    repository = (launch.image or "").rsplit("/", 1)[-1].split(":", 1)[0].split("@", 1)[0].lower()
    return "cpu" in repository.split("-")


@launch_rule("VLL207")
def enforce_eager_in_server(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    # vLLM's CPU platform captures no CUDA graphs whatever the setting (vllm/platforms/cpu.py:353, 0.32.0:
    # ``cudagraph_capture_sizes = []``), so there the flag costs nothing it would not lose anyway.
    if not launch.serves_requests or launch.testing or _runs_on_cpu(launch):
        return
    setting = launch.get("enforce_eager")
    if setting is None or as_bool(setting.value) is not True:
        return
    yield LaunchFinding(
        code="VLL207",
        message=(
            "enforce_eager on a serving launch: CUDA graphs and torch.compile are off, so every decode step "
            "pays the kernel-launch overhead and generation runs several times slower; keep it for debugging"
        ),
        anchor=setting.anchor,
        fix=RemoveSetting(setting),
        fix_title="Remove enforce_eager",
    )


@launch_rule("VLL208")
def lora_without_max_rank(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    setting = launch.get("enable_lora")
    if setting is None or as_bool(setting.value) is not True or launch.opaque or launch.has("max_lora_rank"):
        return
    yield LaunchFinding(
        code="VLL208",
        message=(
            f"LoRA enabled without max_lora_rank: vLLM's default of {DEFAULT_MAX_LORA_RANK} rejects every adapter "
            "of a higher rank when it is loaded; set it to the highest rank you serve"
        ),
        anchor=setting.anchor,
    )
