"""Engine configuration, written once for every surface over the launch record."""

from __future__ import annotations

from collections.abc import Iterator

from vllm_lint.diagnostics import Applicability
from vllm_lint.launch.defaults import DEFAULT_MAX_LORA_RANK, MAX_GPU_MEMORY_UTILIZATION, SAFE_GPU_MEMORY_UTILIZATION
from vllm_lint.launch.parallelism import parallel_anchor, parallel_sizes
from vllm_lint.launch.platform import runs_on_cpu
from vllm_lint.launch.record import AddSetting, Launch, LaunchFinding, RemoveSetting, Rename, Setting, SetValue
from vllm_lint.launch.settings import LaunchSettings
from vllm_lint.registry import launch_rule
from vllm_lint.suggestions import close_names
from vllm_lint.values import as_bool, as_float
from vllm_lint.vllm_api import VllmApi
from vllm_lint.vllm_api.history import (
    Fate,
    fate_phrase,
    flag_fate,
    keyword_fate,
    names_in_any_release,
    options_in_any_release,
)


def _origin(value_origin: str | None) -> str:
    return f" ({value_origin})" if value_origin else ""


@launch_rule("VLL201")
def missing_gpu_memory_utilization(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    if launch.opaque or launch.has("gpu_memory_utilization") or launch.has("kv_cache_memory_bytes"):
        return
    # On vLLM's CPU backend there is no GPU to share: the fraction is read as one of CPU memory, and
    # VLLM_CPU_KVCACHE_SPACE, where set, sizes the KV cache instead (vllm/v1/worker/cpu_worker.py:73-94,
    # vllm/platforms/cpu.py:323-327, 0.32.0).
    if runs_on_cpu(launch):
        return
    yield LaunchFinding(
        message=(
            f"vLLM engine launched without an explicit gpu_memory_utilization: vLLM silently takes "
            f"{_default_utilization(launch)} of the device, leaving little room for anything else on the GPU"
        ),
        anchor=launch.anchor,
        fix=AddSetting("gpu_memory_utilization", SAFE_GPU_MEMORY_UTILIZATION),
        fix_title=f"Add gpu_memory_utilization={SAFE_GPU_MEMORY_UTILIZATION:.2f}",
    )


def _default_utilization(launch: Launch) -> str:
    """The default gpu_memory_utilization of the releases the launch targets, as vLLM's API snapshot holds it."""
    defaults = [f"{value:g}" for value in launch.target_api().engine_defaults("gpu_memory_utilization")]
    if not defaults:
        return "its default share"
    return defaults[0] if len(defaults) == 1 else f"{' to '.join((defaults[0], defaults[-1]))} (by release)"


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
        message=(
            f"gpu_memory_utilization {number:g}{origin} is out of range: {reason} "
            f"(vLLM's default is {_default_utilization(launch)})"
        ),
        anchor=setting.value_anchor or setting.anchor,
        fix=SetValue(setting, SAFE_GPU_MEMORY_UTILIZATION),
        fix_title=f"Set gpu_memory_utilization to {SAFE_GPU_MEMORY_UTILIZATION:.2f}",
    )


@launch_rule("VLL203")
def missing_max_model_len(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    if launch.opaque or launch.has("max_model_len"):
        return
    from vllm_lint.launch.model import length_limit  # the model's facts: only for a launch this rule reports

    length = settings.fix_max_model_len
    limit = length_limit(launch, settings)
    if limit is not None and limit.value < length:
        length = limit.value  # more would stop the engine from starting (VLL209)
    yield LaunchFinding(
        message=(
            "vLLM engine launched without an explicit max_model_len: it reserves KV cache for the model's "
            "whole context window, which fails at start-up on smaller GPUs or leaves room for few "
            "concurrent requests"
        ),
        anchor=launch.anchor,
        fix=AddSetting("max_model_len", length),
        fix_title=f"Add max_model_len={length}",
    )


# What VLL204 says of a launch without prefix caching, switched off or off by default.
_WITHOUT_PREFIX_CACHING = (
    "every request recomputes shared prompt prefixes (system prompts, chat history), wasting GPU time and raising latency"
)


@launch_rule("VLL204")
def prefix_caching_disabled(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    if launch.has("kv_transfer_config") or launch.ci_job:
        return  # a CI job's server answers its tests: serving time is not what it is for
    setting = launch.get("enable_prefix_caching")
    if setting is not None:
        if as_bool(setting.value) is False:
            yield LaunchFinding(
                message=f"prefix caching is switched off: {_WITHOUT_PREFIX_CACHING}",
                anchor=setting.anchor,
                fix=SetValue(setting, True),
            )
        return
    api = launch.target_api()
    # Off by default where every release in range resolves it to False (the V0 engine, before 0.8).
    if not launch.opaque and not api.predates and api.effective_defaults("enable_prefix_caching") == {False}:
        yield LaunchFinding(
            message=(
                f"prefix caching is off by default in vLLM {api.label} (the release "
                f"{'its image runs' if launch.pinned_image else 'this file targets'}): {_WITHOUT_PREFIX_CACHING}; "
                "enable it explicitly"
            ),
            anchor=launch.anchor,
            fix=AddSetting("enable_prefix_caching", True),
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
            close = close_names(value, setting.bad_choice, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]}?" if close else ""
            shown = ", ".join(setting.bad_choice[:12]) + (", ..." if len(setting.bad_choice) > 12 else "")
            yield LaunchFinding(
                message=(
                    f"{setting.spelled} {value} is not a value vLLM accepts, so the engine fails to start "
                    f"(choose one of: {shown}){hint}"
                ),
                anchor=setting.value_anchor or setting.anchor,
            )
            continue
        if setting.known:
            continue
        api = launch.target_api()
        if api.predates:
            continue  # the target's releases are older than any vLLM the linter knows: so are their names
        if setting.attribute:
            hint = f"; did you mean {setting.suggestions[0]}?" if len(setting.suggestions) == 1 else ""
            yield LaunchFinding(
                message=(
                    f"{setting.spelled} is not an engine argument: {launch.kind} has no field {setting.key}, so "
                    f"the assignment has no effect (nothing reads it){hint}"
                ),
                anchor=setting.anchor,
            )
            continue
        fate = _setting_fate(api, launch, setting)
        if fate is not None and fate.known_elsewhere:
            yield _moved_on(launch, setting, fate, api)
            continue
        detail = "vLLM does not have it; the engine fails at start-up"
        hint = ""
        fix = None
        suggestions = setting.suggestions or _suggestions_across_releases(api, launch, setting)
        if len(setting.suggestions) == 1:
            hint = f"; did you mean {setting.suggestions[0]}?"
            fix = Rename(setting, setting.suggestions[0])
        elif len(suggestions) == 1:
            hint = f"; did you mean {suggestions[0]} (not in the release this launch targets)?"
        elif suggestions:
            hint = "; did you mean one of " + ", ".join(suggestions) + "?"
        yield LaunchFinding(
            message=f"unknown engine argument {setting.spelled}: {detail}{hint}",
            anchor=setting.anchor,
            fix=fix,
            fix_title=f"Rename to {setting.suggestions[0]}" if fix else None,
            applicability=Applicability.SAFE,
        )


_PYTHON_KINDS = {"LLM": "llm_init_params", "EngineArgs": "engine_args", "AsyncEngineArgs": "async_engine_args"}


def _flag_surface(launch: Launch) -> str:
    return "api_server" if launch.kind == "api_server" else "serve"


def _option(spelled: str) -> str:
    return "--" + spelled[2:].replace("_", "-") if spelled.startswith("--") else spelled


def _is_keyword(launch: Launch, setting: Setting) -> bool:
    """A keyword of an engine class (Python, or a RayService's engine_kwargs), not a command-line flag."""
    return launch.kind in _PYTHON_KINDS and not setting.spelled.startswith("-")


def _setting_fate(api: VllmApi, launch: Launch, setting: Setting) -> Fate | None:
    if _is_keyword(launch, setting):
        return keyword_fate(api, _PYTHON_KINDS[launch.kind], setting.key)
    if setting.spelled.startswith("-"):
        return flag_fate(api, _option(setting.spelled), _flag_surface(launch))
    return None


def _moved_on(launch: Launch, setting: Setting, fate: Fate, api: VllmApi) -> LaunchFinding:
    """A setting the target's releases lack but another release has: when it went (or came), and
    the rename vLLM's own code gives, safe when the old name was only another spelling of the new."""
    keyword = _is_keyword(launch, setting)
    failure = f"{launch.kind} raises TypeError" if keyword else "vLLM exits with 'unrecognized arguments'"
    message = fate_phrase(fate, setting.spelled, api, failure, launch.pinned_image)
    fix: Rename | RemoveSetting | None = None
    title = None
    applicability = Applicability.SAFE
    if fate.status == "removed" and fate.replaced_by and (fate.how == "alias" or fate.how == "said" and fate.one_to_one):
        new = fate.replaced_by
        if keyword:
            new = new.lstrip("-").replace("-", "_")
        if not keyword or new.isidentifier():
            fix, title = Rename(setting, new), f"Rename to {new}"
            applicability = Applicability.SAFE if fate.how == "alias" else Applicability.UNSAFE
    elif fate.status == "removed" and fate.how == "no_effect":
        fix, title = RemoveSetting(setting), f"Remove {setting.spelled}"
    return LaunchFinding(
        message=message,
        anchor=setting.anchor,
        fix=fix,
        fix_title=title,
        applicability=applicability,
    )


def _suggestions_across_releases(api: VllmApi, launch: Launch, setting: Setting) -> tuple[str, ...]:
    """Did-you-mean over every release's names, for a name no release had."""
    if _is_keyword(launch, setting):
        candidates = names_in_any_release(api, _PYTHON_KINDS[launch.kind]) | names_in_any_release(api, "engine_args")
        name = setting.key
    elif setting.spelled.startswith("--"):
        candidates = frozenset(o for o in options_in_any_release(api, _flag_surface(launch)) if o.startswith("--"))
        name = _option(setting.spelled)
    else:
        return ()
    return close_names(name, candidates)


@launch_rule("VLL207")
def enforce_eager_in_server(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    # vLLM's CPU platform captures no CUDA graphs whatever the setting (vllm/platforms/cpu.py:353, 0.32.0:
    # ``cudagraph_capture_sizes = []``), so there the flag costs nothing it would not lose anyway.
    if not launch.serves_requests or launch.testing or runs_on_cpu(launch):
        return
    setting = launch.get("enforce_eager")
    if setting is None or as_bool(setting.value) is not True:
        return
    yield LaunchFinding(
        message=(
            "enforce_eager on a serving launch: CUDA graphs and torch.compile are off, so every decode step "
            "pays the kernel-launch overhead and generation runs several times slower; keep it for debugging"
        ),
        anchor=setting.anchor,
        fix=RemoveSetting(setting),
    )


@launch_rule("VLL208")
def lora_without_max_rank(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    setting = launch.get("enable_lora")
    if setting is None or as_bool(setting.value) is not True or launch.opaque or launch.has("max_lora_rank"):
        return
    yield LaunchFinding(
        message=(
            f"LoRA enabled without max_lora_rank: vLLM's default of {DEFAULT_MAX_LORA_RANK} rejects every adapter "
            "of a higher rank when it is loaded; set it to the highest rank you serve"
        ),
        anchor=setting.anchor,
    )
