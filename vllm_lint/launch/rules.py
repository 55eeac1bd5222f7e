"""VLL201-VLL206: engine configuration rules, written once for every surface."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from vllm_lint.diagnostics import Applicability
from vllm_lint.launch.record import (
    AddSetting,
    ImageReference,
    Launch,
    LaunchFinding,
    PinImage,
    RemoveSetting,
    Rename,
    RewriteEntrypoint,
    SetValue,
)
from vllm_lint.launch.defaults import (
    DEFAULT_MAX_LORA_RANK,
    MAX_GPU_MEMORY_UTILIZATION,
    SAFE_GPU_MEMORY_UTILIZATION,
)
from vllm_lint.launch.settings import LaunchSettings
from vllm_lint.values import as_bool, as_float



def _origin(value_origin: str | None) -> str:
    return f" ({value_origin})" if value_origin else ""


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


def _parallel_sizes(launch: Launch) -> tuple[int, int] | None:
    """(tensor, pipeline) parallel size, 1 where unset; None when either is not statically known."""
    sizes = []
    for key in ("tensor_parallel_size", "pipeline_parallel_size"):
        setting = launch.get(key)
        number = as_float(setting.value) if setting is not None else 1.0
        if number is None:
            return None
        sizes.append(int(number))
    return sizes[0], sizes[1]


def _parallel_anchor(launch: Launch) -> object:
    setting = launch.get("tensor_parallel_size") or launch.get("pipeline_parallel_size")
    return setting.anchor if setting else launch.anchor


def tensor_parallel_mismatch(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    if launch.gpu_count is None:
        return
    sizes = _parallel_sizes(launch)
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
        anchor=_parallel_anchor(launch),
    )


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


def deprecated_entrypoint(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    if launch.entrypoint not in ("serve", "api_server"):
        return
    model = launch.get("model")
    flag_model = model if model is not None and model.spelled.startswith("-") else None
    if launch.entrypoint == "api_server":
        message = (
            "`python -m vllm.entrypoints.openai.api_server` is deprecated in favour of `vllm serve MODEL`: "
            "a later vLLM release removes it and this server stops starting"
        )
        anchor = launch.entrypoint_anchor or launch.anchor
    elif flag_model is not None:
        message = (
            "`--model` on `vllm serve` is deprecated: pass the model as the positional argument "
            "(`vllm serve MODEL`) before a later release drops the flag"
        )
        anchor = flag_model.anchor
    else:
        return
    yield LaunchFinding(
        code="VLL401",
        message=message,
        anchor=anchor,
        fix=RewriteEntrypoint(flag_model),
        fix_title="Rewrite to `vllm serve MODEL ...`",
        applicability=Applicability.SAFE,
    )


_COMMIT_HASH = re.compile(r"^[0-9a-fA-F]{7,64}$")


def _pinned(setting) -> bool:
    if setting is None or setting.value is None:
        return setting is not None  # written but not statically known: give the benefit of the doubt
    return bool(_COMMIT_HASH.match(str(setting.value.value).strip()))


def unpinned_remote_code(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    setting = launch.get("trust_remote_code")
    if setting is None or as_bool(setting.value) is not True:
        return
    revision, code_revision = launch.get("revision"), launch.get("code_revision")
    if _pinned(revision) and (code_revision is None or _pinned(code_revision)):
        return
    what = "revision" if not _pinned(revision) else "code_revision"
    yield LaunchFinding(
        code="VLL402",
        message=(
            f"trust_remote_code without a pinned {what} (a commit hash): the model repository's Python runs "
            "on this server at whatever its head is at the next restart"
        ),
        anchor=setting.anchor,
    )


_LOCAL_HOSTS = ("127.", "localhost", "::1", "[::1]")


def unauthenticated_public_server(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    if launch.entrypoint not in ("serve", "api_server", "image") or launch.opaque:
        return
    if launch.has("api_key") or "VLLM_API_KEY" in launch.env or launch.has("uds"):
        return
    host = launch.get("host")
    if host is not None:
        if host.value is None:
            return
        text = str(host.value.value).strip()
        if text.startswith(_LOCAL_HOSTS) or text.startswith("unix:"):
            return
        where, anchor = f"--host {text}", host.anchor
    else:
        where, anchor = "no --host (vLLM binds all interfaces)", launch.anchor
    yield LaunchFinding(
        code="VLL403",
        message=(
            f"vLLM server reachable on all interfaces ({where}) with no --api-key and no VLLM_API_KEY: "
            "anyone who can reach the port can run generations on your GPUs"
        ),
        anchor=anchor,
    )


_ONE_GIB = 1 << 30


def multi_gpu_container_without_ipc(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    if not launch.container or launch.host_ipc or (launch.shm_bytes or 0) >= _ONE_GIB:
        return
    sizes = _parallel_sizes(launch)
    if sizes is None or sizes[0] * sizes[1] <= 1:
        return
    yield LaunchFinding(
        code="VLL404",
        message=(
            f"container runs vLLM on {sizes[0] * sizes[1]} GPUs (tensor x pipeline parallel) without host IPC "
            "or a shared memory of at least 1g: NCCL hangs or crashes at start-up (add --ipc=host / ipc: host / "
            "hostIPC: true, or --shm-size / an emptyDir Memory volume at /dev/shm)"
        ),
        anchor=_parallel_anchor(launch),
    )


def _runs_on_cpu(launch: Launch) -> bool:
    """A launch on vLLM's CPU backend: a ``VLLM_CPU_*`` variable (read only there, vllm/envs.py:887-906) or a CPU image."""
    if any(name.startswith("VLLM_CPU_") for name in launch.env):
        return True
    repository = (launch.image or "").rsplit("/", 1)[-1].split(":", 1)[0].split("@", 1)[0].lower()
    return "cpu" in repository.split("-")


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


def nonexistent_module(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    module = launch.module or "vllm"
    hint = " (benchmarks are the `vllm bench serve` command now)" if ".benchmarks" in module else ""
    yield LaunchFinding(
        code="VLL303",
        message=f"`python -m {module}`: vLLM has no module {module}{hint}; the command fails with ModuleNotFoundError",
        anchor=launch.anchor,
    )


# ``[registry/]vllm/vllm-<variant>[:tag][@digest]``: vLLM's own images on Docker Hub and its mirrors.
_VLLM_IMAGE = re.compile(r"^(?:[^@]*/)?vllm/vllm-[a-z0-9][a-z0-9._-]*$")
_PINNABLE = "vllm/vllm-openai"  # the image whose release tags are known to be ``v<version>``


def _floating_tag(tag: str | None) -> bool:
    return tag is None or tag == "latest" or tag.startswith("latest-") or tag == "nightly"


def unpinned_vllm_image(image: ImageReference, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    if "@" in image.reference:
        return  # a digest pins it, whatever the tag says
    repository, tag = image.reference, None
    last = repository.rsplit("/", 1)[-1]
    if ":" in last:
        repository, tag = repository.rsplit(":", 1)
    if not _VLLM_IMAGE.match(repository) or not _floating_tag(tag):
        return
    from vllm_lint.vllm_api import DEFAULT_VERSION  # the newest release this linter knows

    fix = None
    if repository.rsplit("/", 2)[-2:] == _PINNABLE.split("/") and tag in (None, "latest") and image.exact:
        fix = PinImage(image, f"{repository}:v{DEFAULT_VERSION}")
    shown = f"{repository}:{tag}" if tag else f"{repository} (no tag)"
    yield LaunchFinding(
        code="VLL405",
        message=(
            f"{shown} is not pinned to a release: the next pull or a restart on another node brings a different "
            "vLLM under the running deployment, and flags it renamed or removed stop the server from starting; "
            "pin a version tag or a digest"
        ),
        anchor=image.anchor,
        fix=fix,
        fix_title=f"Pin the image to {fix.reference}" if fix else None,
    )


LaunchRule = Callable[[Launch, LaunchSettings], Iterator[LaunchFinding]]
ImageRule = Callable[[ImageReference, LaunchSettings], Iterator[LaunchFinding]]

# Rules over engine launches; a "module" launch (a vLLM module that does not
# exist) configures no engine, so only MODULE_RULES look at it.
ENGINE_RULES: dict[str, LaunchRule] = {
    "VLL201": missing_gpu_memory_utilization,
    "VLL202": gpu_memory_utilization_out_of_range,
    "VLL203": missing_max_model_len,
    "VLL204": prefix_caching_disabled,
    "VLL205": tensor_parallel_mismatch,
    "VLL206": unknown_engine_arg,
    "VLL207": enforce_eager_in_server,
    "VLL208": lora_without_max_rank,
    "VLL401": deprecated_entrypoint,
    "VLL402": unpinned_remote_code,
    "VLL403": unauthenticated_public_server,
    "VLL404": multi_gpu_container_without_ipc,
}
MODULE_RULES: dict[str, LaunchRule] = {"VLL303": nonexistent_module}
LAUNCH_RULES: dict[str, LaunchRule] = {**ENGINE_RULES, **MODULE_RULES}
# Rules over the container images a deployment file names, launch or not.
IMAGE_RULES: dict[str, ImageRule] = {"VLL405": unpinned_vllm_image}


def check_launch(launch: Launch, settings: LaunchSettings, enabled: frozenset[str]) -> Iterator[LaunchFinding]:
    rules = MODULE_RULES if launch.kind == "module" else ENGINE_RULES
    for code, rule in rules.items():
        if code in enabled:
            yield from rule(launch, settings)


def check_image(image: ImageReference, settings: LaunchSettings, enabled: frozenset[str]) -> Iterator[LaunchFinding]:
    for code, rule in IMAGE_RULES.items():
        if code in enabled:
            yield from rule(image, settings)
