"""What the model a launch serves allows: its context length, how its heads and layers divide among GPUs.

Each checker reads the model's facts (``launch/model.py``: a local folder, the Hugging Face cache, the
shipped table) and vLLM's own derivation for the releases the launch targets (``models/derive.py``); a model
no source knows, or a launch that changes what vLLM reads (``--hf-overrides``, a revision), is left alone.
"""

from __future__ import annotations

from collections.abc import Iterator

from vllm_lint.gpus.table import GPU_TYPES, GpuType, family_sizes
from vllm_lint.launch.model import env_flag, launch_model, length_limit, model_name, target_versions
from vllm_lint.launch.parallelism import parallel_sizes
from vllm_lint.launch.platform import runs_on_cpu
from vllm_lint.launch.record import Launch, LaunchFinding, Setting
from vllm_lint.launch.settings import LaunchSettings
from vllm_lint.models.derive import (
    AUTO_BF16_FALLS_BACK_FROM,
    QUANTIZATION_MIN_CAPABILITY,
    PROFILE_READ_FROM,
    PROFILE_TOKENS_MIN,
    QUANTIZATION_TABLE_FROM,
    activation_peak_bytes,
    attention_heads,
    kv_bytes_per_token,
    release,
    served_element_bytes,
    weight_bytes_served,
)
from vllm_lint.models.facts import ModelFacts
from vllm_lint.registry import launch_rule
from vllm_lint.values import as_float
from vllm_lint.lazy_re import lazy_compile

# ``--max-model-len 32k``: vLLM's human_readable_int (vllm/utils/argparse_utils.py:29-73, 0.32.0).
_HUMAN = lazy_compile(r"^(\d+(?:\.\d+)?)([kKmMgGtT])$")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def _length(setting: Setting) -> int | None:
    if setting.value is None:
        return None
    raw = setting.value.value
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    text = str(raw).strip()
    if text.isdigit():
        return int(text)
    match = _HUMAN.match(text)
    if match is None:
        return None
    number, suffix = match.groups()
    if suffix in _DECIMAL:
        return int(float(number) * _DECIMAL[suffix])
    return int(number) * _BINARY[suffix] if number.isdigit() else None


@launch_rule("VLL209")
def max_model_len_above_model(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    setting = launch.get("max_model_len")
    if setting is None or launch.opaque:
        return
    length = _length(setting)
    if length is None or length <= 0:
        return
    if env_flag(launch, "VLLM_ALLOW_LONG_MAX_MODEL_LEN") is not False:
        return  # vLLM then warns and starts (vllm/config/model.py:2659-2660, 0.32.0)
    limit = length_limit(launch, settings)
    if limit is None or length <= limit.value:
        return
    yield LaunchFinding(
        message=(
            f"max_model_len {length} is above what vLLM derives for {model_name(launch)}: {limit.value} "
            f'({limit.key} in its config.json); the engine refuses to start ("User-specified max_model_len is '
            f'greater than the derived max_model_len"); set it to {limit.value} or less'
        ),
        anchor=setting.value_anchor or setting.anchor,
    )


@launch_rule("VLL210")
def parallelism_does_not_divide_model(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    sizes = parallel_sizes(launch)
    if sizes is None or sizes == (1, 1) or launch.opaque:  # an opaque launch may set them again later
        return
    tensor, pipeline = sizes
    facts = launch_model(launch, settings)
    if facts is None:
        return
    heads = attention_heads(facts)
    if tensor > 1 and heads and heads % tensor:
        setting = launch.get("tensor_parallel_size")
        yield LaunchFinding(
            message=(
                f"tensor_parallel_size {tensor} does not divide the {heads} attention heads of {facts.name}: the "
                f'engine refuses to start ("Total number of attention heads ({heads}) must be divisible by tensor '
                f'parallel size ({tensor})"); use a size that divides {heads}'
            ),
            anchor=setting.anchor if setting else launch.anchor,
        )
    layers = facts.num_layers
    if pipeline > 1 and layers and pipeline > layers:
        setting = launch.get("pipeline_parallel_size")
        yield LaunchFinding(
            message=(
                f"pipeline_parallel_size {pipeline} is above the {layers} layers of {facts.name}: some pipeline "
                "stages would hold no layer; use at most one stage per layer"
            ),
            anchor=setting.anchor if setting else launch.anchor,
        )


def _gpu(launch: Launch, settings: LaunchSettings) -> GpuType | None:
    """The GPU type the launch runs on: its deployment's, else the settings' (not for a launch on vLLM's CPU
    backend)."""
    if runs_on_cpu(launch):
        return None
    name = launch.gpu_type or settings.gpu
    return GPU_TYPES.get(name) if name else None


_BF16 = ("bfloat16", "bf16")


@launch_rule("VLL212")
def dtype_unsupported_by_gpu(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    gpu = _gpu(launch, settings)
    if gpu is None or gpu.capability is None or gpu.capability >= (8, 0) or launch.opaque:
        return
    has = gpu.capability
    capability = f"{has[0]}.{has[1]}"
    versions = [release(version) for version in target_versions(launch)]
    setting = launch.get("dtype")
    dtype = str(setting.value.value).strip().lower() if setting is not None and setting.value is not None else None
    if setting is not None and dtype is None:
        return
    facts = launch_model(launch, settings) if dtype in (None, "auto") or not launch.has("quantization") else None
    if setting is not None and dtype in _BF16:
        yield LaunchFinding(
            message=(
                f'dtype {dtype} on {gpu.name} (compute capability {capability}): vLLM refuses to start ("Bfloat16 is '
                'only supported on GPUs with compute capability of at least 8.0"); use --dtype half'
            ),
            anchor=setting.value_anchor or setting.anchor,
        )
    elif dtype in (None, "auto") and facts is not None and facts.dtype in _BF16 and facts.quantization is None:
        if all(version < AUTO_BF16_FALLS_BACK_FROM for version in versions):
            yield LaunchFinding(
                message=(
                    f"{facts.name} is stored in bfloat16, which dtype auto keeps in the vLLM releases this launch "
                    f"targets, and {gpu.name} (compute capability {capability}) has no bfloat16: vLLM refuses to "
                    "start; set --dtype half"
                ),
                anchor=setting.anchor if setting is not None else launch.anchor,
            )
    quantization = launch.get("quantization")
    if quantization is not None:
        method = str(quantization.value.value).strip().lower() if quantization.value is not None else None
        anchor = quantization.value_anchor or quantization.anchor
    else:
        method = facts.quantization_method if facts is not None else None
        anchor = launch.anchor
    minimum = QUANTIZATION_MIN_CAPABILITY.get(method or "")
    if minimum is None or has >= minimum or not all(v >= QUANTIZATION_TABLE_FROM for v in versions):
        return
    yield LaunchFinding(
        message=(
            f"quantization {method} needs compute capability {minimum[0]}.{minimum[1]} and {gpu.name} has "
            f'{capability}: vLLM refuses to start ("The quantization method {method} is not supported for the '
            'current GPU"); serve an unquantized or differently quantized model there, or another GPU'
        ),
        anchor=anchor,
    )


_GIB = 1 << 30
# Bytes per element of the KV-cache dtypes whose page is plain (vllm/config/cache.py:39-59, 0.32.0); the packed
# 4-bit and per-head-scaled ones are left out, so a launch naming one is not judged.
_KV_DTYPES = {"float16": 2, "bfloat16": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8_inc": 1, "fp8_ds_mla": 1}


def _text(launch: Launch, key: str) -> str | None:
    setting = launch.get(key)
    if setting is None:
        return None
    return str(setting.value.value).strip().lower() if setting.value is not None else ""


def _utilization(launch: Launch) -> float | None:
    setting = launch.get("gpu_memory_utilization")
    if setting is not None:
        return as_float(setting.value)
    defaults = [
        value for value in launch.target_api().engine_defaults("gpu_memory_utilization") if isinstance(value, float)
    ]
    return max(defaults) if defaults else None


# Flags that split the profiling pass's tokens among micro-batches or ranks, or change what it compiles.
_SPLIT_PROFILE = ("enable_dbo", "ubatch_size", "prefill_context_parallel_size", "decode_context_parallel_size")


def _profile_peak(launch: Launch, facts: ModelFacts, dtype: str | None, tensor: int) -> int:
    """A lower bound of the activations vLLM's profiling pass takes on each GPU before it sizes the KV cache (0
    where the launch may run a release not read, or splits or recompiles that pass)."""
    versions = [release(version) for version in target_versions(launch)]
    if not versions or any(version < PROFILE_READ_FROM for version in versions):
        return 0
    if any(launch.has(key) for key in _SPLIT_PROFILE) or launch.has("compilation_config"):
        return 0
    written = launch.get("max_num_batched_tokens")
    tokens = _length(written) if written is not None else PROFILE_TOKENS_MIN
    element = served_element_bytes(dtype)
    if not tokens or tokens < 0 or element is None:
        return 0
    return activation_peak_bytes(facts, tokens, element, tensor) or 0


@launch_rule("VLL211")
def model_does_not_fit(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    gpu = _gpu(launch, settings)
    sizes = parallel_sizes(launch)
    if gpu is None or sizes is None or launch.opaque:
        return
    # A name that leaves the size open (Slurm's gpu:a100:1, dstack's A100:1) is judged on its largest size:
    # what does not fit there fits none of them.
    memory_gib, gpu_label = gpu.memory_gib, gpu.name
    if memory_gib is None:
        family = family_sizes(gpu)
        if not family:
            return
        memory_gib = family[-1]
        gpu_label = f"{gpu.name} ({' or '.join(f'{size:g}' for size in family)} GB; {memory_gib:g} GB assumed)"
    if launch.has("cpu_offload_gb") or launch.has("quantization") or launch.has("kv_cache_memory_bytes"):
        return
    dtype = _text(launch, "dtype")
    if dtype == "":
        return
    utilization = _utilization(launch)
    facts = launch_model(launch, settings)
    if facts is None or utilization is None or not 0 < utilization <= 1:
        return
    weights = weight_bytes_served(facts, dtype)
    if weights is None:
        return
    tensor, pipeline = sizes
    gpus = tensor * pipeline
    per_gpu = weights / gpus
    usable = memory_gib * _GIB * utilization
    where = f"{gpus} x {gpu_label} at {utilization:g} = {usable / _GIB:.1f} GiB each"
    anchor = launch.gpu_type_anchor if launch.gpu_type else launch.anchor
    if per_gpu > usable:
        yield LaunchFinding(
            message=(
                f"{facts.name} does not fit: its weights take {per_gpu / _GIB:.1f} GiB per GPU ({weights / _GIB:.1f} "
                f"GiB over {gpus}) on {where}; vLLM runs out of memory loading them; use more GPUs "
                f"(tensor parallel), {'' if facts.quantization else 'a quantized checkpoint, '}or a larger GPU"
            ),
            anchor=anchor,
        )
        return
    written = launch.get("max_model_len")
    if written is not None:
        length = _length(written)
    else:
        limit = length_limit(launch, settings, shortest=True)  # what vLLM takes when none is given, at the least
        length = limit.value if limit is not None else None
    kv_dtype = _text(launch, "kv_cache_dtype") or "auto"
    kv_bytes = served_element_bytes(dtype) if kv_dtype == "auto" else _KV_DTYPES.get(kv_dtype)
    per_token = kv_bytes_per_token(facts, kv_bytes, tensor, pipeline) if kv_bytes and length else None
    if per_token is None or length is None:
        return
    sequence = per_token * length
    activations = _profile_peak(launch, facts, dtype, tensor)
    if per_gpu + activations + sequence <= usable:
        return
    profiled = (
        f" + the start-up profiling pass's activations at least {activations / _GIB:.1f} GiB" if activations else ""
    )
    yield LaunchFinding(
        message=(
            f"{facts.name} leaves too little KV cache: weights {per_gpu / _GIB:.1f} GiB{profiled} + one {length}-token "
            f"sequence's KV cache {sequence / _GIB:.1f} GiB per GPU on {where}; vLLM refuses to start (\"To serve at "
            "least one request with the models's max seq len ... KV cache is needed\"); lower max_model_len, or use "
            "more or larger GPUs"
        ),
        anchor=anchor,
    )
