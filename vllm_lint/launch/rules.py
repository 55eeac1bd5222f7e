"""VLL201-VLL206: engine configuration rules, written once for every surface."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from vllm_lint.diagnostics import Applicability
from vllm_lint.launch.record import (
    AddSetting,
    Launch,
    LaunchFinding,
    RemoveSetting,
    Rename,
    RewriteEntrypoint,
    Setting,
    SetValue,
)
from vllm_lint.launch.defaults import MAX_GPU_MEMORY_UTILIZATION, SAFE_GPU_MEMORY_UTILIZATION
from vllm_lint.launch.settings import LaunchSettings
from vllm_lint.values import as_bool, as_float
from vllm_lint.vllm_api import VllmApi, load_api
from vllm_lint.vllm_api.history import (
    Fate,
    fate_phrase,
    flag_fate,
    keyword_fate,
    module_fate,
    names_in_any_release,
    options_in_any_release,
)



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
    api = _api_of(launch)
    # Off by default where every release in range resolves it to False (the V0 engine, before 0.8).
    if not launch.opaque and not api.predates and api.effective_defaults("enable_prefix_caching") == {False}:
        yield LaunchFinding(
            code="VLL204",
            message=(
                f"prefix caching is off by default in vLLM {api.label} (the release "
                f"{'its image runs' if launch.image else 'this file targets'}): every request "
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
        api = _api_of(launch)
        if api.predates:
            continue  # the target's releases are older than any vLLM the linter knows: so are their names
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
            code="VLL206",
            message=f"unknown engine argument {setting.spelled}: {detail}{hint}",
            anchor=setting.anchor,
            fix=fix,
            fix_title=f"Rename to {setting.suggestions[0]}" if fix else None,
            applicability=Applicability.SAFE,
        )


_PYTHON_KINDS = {"LLM": "llm_init_params", "EngineArgs": "engine_args", "AsyncEngineArgs": "async_engine_args"}


def _api_of(launch: Launch) -> VllmApi:
    return launch.api if isinstance(launch.api, VllmApi) else load_api()


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
    message = fate_phrase(fate, setting.spelled, api, failure, launch.image)
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
        code="VLL206",
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
    return tuple(difflib.get_close_matches(name, sorted(candidates), n=3, cutoff=0.8))


def deprecated_entrypoint(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    if launch.entrypoint not in ("serve", "api_server"):
        return  # "image": an old image's own api_server entrypoint, whose arguments must use --model
    model = launch.get("model")
    flag_model = model if model is not None and model.spelled.startswith("-") else None
    if launch.entrypoint == "api_server":
        api = _api_of(launch)
        if not api.database.api_server_deprecated & api.mask:
            return  # not deprecated yet in the releases this file targets
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


def nonexistent_module(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    module = launch.module or "vllm"
    api = _api_of(launch)
    prefix, _, name = module.rpartition(".")
    fate = module_fate(api, prefix, name) if prefix else None
    if api.predates:
        return
    hint = " (benchmarks are the `vllm bench serve` command now)" if ".benchmarks" in module else ""
    if fate is not None and fate.known_elsewhere:
        message = f"`python -m {module}`: {fate_phrase(fate, module, api, 'the command fails with ModuleNotFoundError', launch.image)}"
    else:
        message = f"`python -m {module}`: vLLM has no module {module}{hint}; the command fails with ModuleNotFoundError"
    yield LaunchFinding(code="VLL303", message=message, anchor=launch.anchor)


LaunchRule = Callable[[Launch, LaunchSettings], Iterator[LaunchFinding]]

# Rules over engine launches; a "module" launch (a vLLM module that does not
# exist) configures no engine, so only MODULE_RULES look at it.
ENGINE_RULES: dict[str, LaunchRule] = {
    "VLL201": missing_gpu_memory_utilization,
    "VLL202": gpu_memory_utilization_out_of_range,
    "VLL203": missing_max_model_len,
    "VLL204": prefix_caching_disabled,
    "VLL205": tensor_parallel_mismatch,
    "VLL206": unknown_engine_arg,
    "VLL401": deprecated_entrypoint,
    "VLL402": unpinned_remote_code,
    "VLL403": unauthenticated_public_server,
    "VLL404": multi_gpu_container_without_ipc,
}
MODULE_RULES: dict[str, LaunchRule] = {"VLL303": nonexistent_module}
LAUNCH_RULES: dict[str, LaunchRule] = {**ENGINE_RULES, **MODULE_RULES}


def check_launch(launch: Launch, settings: LaunchSettings, enabled: frozenset[str]) -> Iterator[LaunchFinding]:
    rules = MODULE_RULES if launch.kind == "module" else ENGINE_RULES
    for code, rule in rules.items():
        if code in enabled:
            yield from rule(launch, settings)
