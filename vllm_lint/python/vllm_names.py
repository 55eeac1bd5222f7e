"""Does vLLM have this dotted name? Module paths, module attributes and class attributes, looked up in the API snapshot.

Shared by VLL303's checker and the pre-filter, which must agree on what counts as missing.
"""

from __future__ import annotations

from vllm_lint.vllm_api import VllmApi

# The snapshot is read off the CPU build: compiled extensions (vllm._C, vllm._moe_C, ...) and the packages
# that GPU builds vendor in are absent there but real elsewhere, so their absence proves nothing.
_BUILD_DEPENDENT = ("vllm.third_party", "vllm.vllm_flash_attn")


def missing_in_path(api: VllmApi, dotted: str) -> tuple[str, str] | None:
    """For ``vllm.a.b.c``: the first component vLLM lacks, as (existing prefix, missing name)."""
    parts = dotted.split(".")
    if parts[0] != "vllm" or len(parts) == 1:
        return None
    modules = api.modules
    if "vllm" not in modules:
        return None
    prefix = "vllm"  # the longest leading run of parts that is a module
    for index in range(1, len(parts)):
        name = parts[index]
        longer = f"{prefix}.{name}"
        if longer in modules:
            prefix = longer
            continue
        if name.startswith("_") or prefix.startswith(_BUILD_DEPENDENT):
            return None
        if name.startswith("__") and name.endswith("__"):
            return None  # module dunders (__file__, __version__) exist on every module
        names = api.module_names(prefix)
        if names is None:
            return None
        defined, is_open = names
        if name in defined or is_open:
            if longer in class_names(api):
                return missing_class_attribute(api, longer, parts[index + 1 :])
            return None
        return prefix, name
    return None


_CLASS_NAMES = frozenset(("vllm.LLM", "vllm.AsyncLLMEngine", "vllm.SamplingParams", "vllm.EngineArgs", "vllm.AsyncEngineArgs", "vllm.LLMEngine"))


def class_names(api: VllmApi) -> frozenset[str]:
    return _CLASS_NAMES


def missing_class_attribute(api: VllmApi, klass: str, rest: list[str]) -> tuple[str, str] | None:
    if not rest:
        return None
    attributes = api.class_attributes(klass)
    if attributes is None or rest[0] in attributes:
        return None
    return klass, rest[0]
