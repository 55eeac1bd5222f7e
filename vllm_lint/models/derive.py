"""What vLLM derives from a model's config at start-up, release by release, before it loads a weight.

Read from vLLM's released source: 0.32.0 and 0.33.0 hold the same derivation (the lines cited are 0.32.0's).
For an older release, where the derivation differs (0.6.3 scaled YaRN models by their factor; the exclusion
list of RoPE types changed), the limit taken is the largest any of the readings gives, so that a launch is
reported only where every reading rejects it.
"""

from __future__ import annotations

import re

from vllm_lint.models.facts import ModelFacts
from vllm_lint.lazy_re import lazy_compile

# The first release whose derivation is the one below (vllm/config/model.py:2527-2668, 0.32.0).
_EXACT_FROM = (0, 32, 0)
# RoPE types whose factor vLLM does not apply to the derived length: their max_position_embeddings is already
# the scaled one (vllm/config/model.py:2591-2604, 0.32.0).
_UNSCALED_ROPE_TYPES = frozenset({"su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling"})
# Model types whose attention heads vLLM reads elsewhere than ``num_attention_heads`` (their convertors,
# vllm/transformers_utils/model_arch_config_convertor.py:822-861, 0.32.0): the rules leave them alone.
SPECIAL_CONVERTORS = frozenset(
    {
        "bailing_hybrid_mtp",
        "cohere_asr",
        "dbrx",
        "deepseek_mtp",
        "deepseek_v4",
        "diffusion_gemma",
        "diffusion_gemma_text",
        "ernie_mtp",
        "falcon",
        "falcon_mamba",
        "gemma4",
        "gemma4_mtp",
        "gemma4_text",
        "gemma4_unified",
        "gemma4_unified_text",
        "glm4_moe_mtp",
        "glm_ocr_mtp",
        "longcat_flash",
        "longcat_flash_mtp",
        "mamba",
        "medusa",
        "mimo_mtp",
        "mimo_v2",
        "mimo_v2_flash",
        "mimo_v2_mtp",
        "mimo_v2_omni_mtp",
        "moss_audio",
        "nemotron-nas",
        "bailing_hybrid_v3_mtp",
        "pangu_ultra_moe_mtp",
        "qwen3_5_mtp",
        "qwen3_omni_moe",
        "qwen3_next_mtp",
        "qwen4_exp_mtp",
        "RefinedWeb",
        "RefinedWebModel",
        "step3p5_mtp",
        "timm_wrapper",
        "zamba2",
        "qwen3_5",
    }
)


class LengthLimit:
    __slots__ = ("key", "value")

    def __init__(self, value: int, key: str) -> None:
        self.value = value  # the longest max_model_len vLLM accepts for the model
        self.key = key  # where it comes from, as the message names it: "max_position_embeddings=2048"


def _version(text: str) -> tuple[int, ...]:
    parts = []
    for part in text.split(".")[:3]:
        digits = "".join(ch for ch in part if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def _derived(facts: ModelFacts) -> tuple[int, str] | None:
    """The smallest max-length key, or ``model_max_length`` where the config has it
    (vllm/transformers_utils/model_arch_config_convertor.py:394-425, 0.32.0)."""
    keys = facts.max_length_keys()
    if not keys:
        return None
    if "model_max_length" in keys and keys["model_max_length"] > 0:
        return keys["model_max_length"], "model_max_length"
    key = min(keys, key=lambda name: keys[name])  # the first of the smallest, as vLLM's strict comparison keeps
    return keys[key], key


def max_model_len_limit(
    facts: ModelFacts, versions: tuple[str, ...], disable_sliding_window: bool, *, shortest: bool = False
) -> LengthLimit | None:
    """The longest max_model_len every release of ``versions`` accepts for the model; None when the config
    does not say (vLLM then takes what it is given). With ``shortest``, the shortest length any reading of
    those releases takes: a rule that reports a length too long to serve must hold for every reading."""
    derived = _derived(facts)
    if derived is None:
        return None
    scalings = facts.rope_scalings()
    if scalings is None:
        return None
    limits = [
        _limit(facts, derived, scalings, disable_sliding_window, _version(v) >= _EXACT_FROM, shortest) for v in versions
    ]
    if not limits:
        return None
    return (min if shortest else max)(limits, key=lambda limit: limit.value)


def _limit(facts, derived, scalings, disable_sliding_window: bool, exact: bool, shortest: bool) -> LengthLimit:
    value, key = derived
    sliding = facts.sliding_window
    if not exact and shortest:
        return _allowed(facts, value, f"{key}={value}")
    if not exact:
        # Every reading of the older releases: the unscaled length, the factor applied to it, and YaRN's
        # factor applied to its original length (vllm/config.py:1766-1769, 0.6.3).
        best, best_key = value, f"{key}={value}"
        for scaling in scalings:
            if scaling.factor is None or scaling.factor <= 1:
                continue
            for base, base_key in (
                (value, key),
                (scaling.original_max_position_embeddings, "original_max_position_embeddings"),
            ):
                if base is not None and int(base * scaling.factor) > best:
                    best = int(base * scaling.factor)
                    best_key = f"{base_key}={base} x rope_scaling factor {scaling.factor:g} ({scaling.rope_type})"
        return _allowed(facts, best, best_key)
    shown = f"{key}={value}"
    if disable_sliding_window and sliding is not None and sliding < value:
        value, shown = sliding, f"sliding_window={sliding} (disable_sliding_window)"
    # vllm/config/model.py:2580-2612: the last scaled RoPE type's factor, not for Gemma 3 (already scaled).
    if scalings and "gemma3" not in facts.text_model_type:
        factor = 1.0
        for scaling in scalings:
            if scaling.rope_type not in _UNSCALED_ROPE_TYPES and scaling.factor is not None:
                factor = scaling.factor
        if factor != 1.0:
            shown = f"{shown} x rope_scaling factor {factor:g}"
            value = int(value * factor)
    return _allowed(facts, value, shown)


def _allowed(facts: ModelFacts, value: int, shown: str) -> LengthLimit:
    # A longer max_model_len is accepted up to the config's own model_max_length (vllm/config/model.py:2638-2642).
    model_max_length = facts.text.get("model_max_length")
    if isinstance(model_max_length, int) and model_max_length > value:
        return LengthLimit(model_max_length, f"model_max_length={model_max_length}")
    return LengthLimit(value, shown)


def attention_heads(facts: ModelFacts) -> int | None:
    """The attention heads vLLM divides among tensor-parallel ranks (vllm/config/model.py:1544-1551)."""
    if facts.text_model_type in SPECIAL_CONVERTORS or facts.model_type in SPECIAL_CONVERTORS:
        return None
    return facts.num_attention_heads


# The lowest compute capability each quantization method runs on, by the ``quant_method`` a checkpoint's
# config.json names: QuantizationConfig.get_min_capability of the class vLLM maps it to
# (vllm/model_executor/layers/quantization/__init__.py:157-168; auto_awq.py:233, auto_gptq.py:182, fp8.py:146,
# mxfp4.py:71, fbgemm_fp8.py:66, experts_int8.py:42, moe_wna16.py:110; 0.32.0 and 0.33.0 alike), checked at
# start-up by VllmConfig._get_quantization_config (vllm/config/vllm.py:896-906, 0.32.0).
QUANTIZATION_MIN_CAPABILITY = {
    "awq": (7, 5),
    "gptq": (6, 0),
    "fp8": (7, 5),
    "mxfp4": (8, 0),
    "fbgemm_fp8": (8, 0),
    "experts_int8": (8, 0),
    "moe_wna16": (7, 0),
}
QUANTIZATION_TABLE_FROM = (0, 32, 0)  # the releases whose minimums the table holds
# Until 0.8.5 ``dtype="auto"`` kept a bfloat16 checkpoint in bfloat16 (vllm/config.py:2903-2908, 0.8.5), which
# the worker then refused below compute capability 8.0 (vllm/worker/worker.py:461-478, 0.6.3); so did every release
# from 0.0.1, refusing it in ModelConfig itself (vllm/config.py:192-235, 0.1.0). From 0.9.0 on it falls back to the
# GPU's first supported dtype, float16 below 8.0 (vllm/config.py:3069-3101 and vllm/platforms/cuda.py:58-68, 0.9.0;
# _resolve_auto_dtype, vllm/config.py:3185-3228, 0.9.1; vllm/config.py:3285-3330, 0.9.2).
AUTO_BF16_FALLS_BACK_FROM = (0, 9, 0)


def release(text: str) -> tuple[int, ...]:
    return _version(text)


# Bytes per element of the dtypes vLLM serves in (vllm/utils/torch_utils.py STR_DTYPE_TO_TORCH_DTYPE, 0.32.0).
DTYPE_BYTES = {"half": 2, "float16": 2, "bfloat16": 2, "bf16": 2, "fp16": 2, "float": 4, "float32": 4}
# Config keys of layers whose KV cache is not one full-attention page per token per layer (sliding windows,
# MLA, Mamba and linear-attention hybrids): the KV-cache check leaves such models alone.
_NOT_PLAIN_ATTENTION = (
    "sliding_window",
    "layer_types",
    "kv_lora_rank",
    "hybrid_override_pattern",
    "layers_block_type",
    "attn_type_list",
    "full_attn_idxs",
)


# Model types whose MLP is gated (gate, up and down projections: three matrices, not two).
GATED_MLP = frozenset(
    {"llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "phi3", "granite", "olmo2", "internlm2", "cohere"}
)
_EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_intermediate_size")


def parameter_count(facts: ModelFacts) -> int | None:
    """A lower bound of a dense decoder's parameters from its config: embeddings (and an untied output
    layer), each layer's attention projections and MLP, nothing for biases and norms; None for a mixture of
    experts or a config without the sizes."""
    if facts.multimodal or any(facts.text.get(key) for key in _EXPERT_KEYS):
        return None
    hidden, layers, heads = facts.hidden_size, facts.num_layers, facts.num_attention_heads
    vocab, inter = facts.vocab_size, facts.intermediate_size
    if not (hidden and layers and heads and vocab and inter):
        return None
    head_dim = facts.head_dim or hidden // heads
    kv_heads = facts.num_kv_heads or heads
    attention = hidden * head_dim * (2 * heads + 2 * kv_heads)
    mlp = (3 if facts.text_model_type in GATED_MLP else 2) * hidden * inter
    embeddings = vocab * hidden * (1 if facts.text.get("tie_word_embeddings") is not False else 2)
    return embeddings + layers * (attention + mlp)


# The fewest bytes an unquantized weight or KV-cache element takes: vLLM serves in float16, bfloat16 or float32
# (an explicit dtype, vllm/config/model.py:2477-2481; under auto the config's, a float32 one cast down to 16
# bits, 2422-2424; 0.32.0), and a KV cache of dtype auto takes the model's (vllm/utils/torch_utils.py:533-539).
SERVED_MIN_BYTES = 2


def served_element_bytes(dtype: str | None) -> int | None:
    """Bytes of one weight or KV-cache element of an unquantized model served with ``--dtype dtype``, at the
    least: 4 for an explicit float32, else 2 (whatever the checkpoint's own dtype); None for a dtype vLLM does
    not take."""
    if dtype in (None, "auto"):
        return SERVED_MIN_BYTES
    return DTYPE_BYTES.get(dtype)


# A model id or folder that names a quantization. ModelOpt 0.29 and older keep a checkpoint's quantization in
# hf_quant_config.json beside a config.json without one, and vLLM reads it there
# (vllm/transformers_utils/config.py:888-899, 0.32.0): such a config alone cannot show the model is unquantized.
_QUANTIZED_NAME = lazy_compile(r"fp8|fp4|int4|int8|w4a|w8a|awq|gptq|bnb|4bit|8bit|quant", re.IGNORECASE)


def maybe_quantized(facts: ModelFacts) -> bool:
    """Whether the checkpoint is, or may be, quantized: its config says so (``quantization_config``, or
    ``compression_config``, which vLLM also reads, vllm/model_executor/model_loader/weight_utils.py:240-242), or
    its name says so."""
    if facts.quantization is not None or facts.config.get("compression_config") is not None:
        return True
    return _QUANTIZED_NAME.search(facts.name) is not None


# Quantization methods (a config.json's ``quant_method``) that keep every weight in at least one byte on the GPU:
# FBGEMMFp8LinearMethod.create_weights makes each quantized linear layer's weight torch.float8_e4m3fn (Marlin,
# where the GPU lacks FP8, repacks the same bytes), and get_quant_method leaves every other layer (embeddings,
# the output layer, modules_to_not_convert) to its unquantized 16-bit method
# (vllm/model_executor/layers/quantization/fbgemm_fp8.py at vllm-project/vllm@04843c7c).
_ONE_BYTE_QUANTIZATIONS = frozenset({"fbgemm_fp8"})


def weight_bytes_served(facts: ModelFacts, dtype: str | None) -> int | None:
    """A lower bound of the weights' bytes on the GPUs: the checkpoint's size, halved where vLLM casts a float32
    checkpoint (or one of unknown dtype, which may be float32) to 16 bits; or the parameters of a dense model
    times the bytes vLLM serves each in (``served_element_bytes``, known without the checkpoint's dtype), one
    byte each for a checkpoint whose config names a quantization that stores none in less. None for another
    quantized model without its size, or where neither is known."""
    if maybe_quantized(facts):
        if facts.weight_bytes is not None:
            return facts.weight_bytes
        one_byte = facts.quantization_method in _ONE_BYTE_QUANTIZATIONS
        if not one_byte or facts.config.get("compression_config") is not None:
            return None
        return parameter_count(facts)  # counted at one byte: the 16-bit layers' second byte is not counted
    served = served_element_bytes(dtype)
    if served is None:
        return None
    bounds = []
    if facts.weight_bytes is not None:
        stored = DTYPE_BYTES.get((facts.dtype or "").lower(), 4)
        bounds.append(facts.weight_bytes * min(served, stored) // stored)
    count = parameter_count(facts)
    if count is not None:
        bounds.append(count * served)
    return max(bounds) if bounds else None


# vLLM 0.32.0 and 0.33.0 size the KV cache after a profiling forward pass of max_num_batched_tokens tokens
# (vllm/v1/worker/gpu_worker.py:676-743, vllm/v1/worker/gpu_model_runner.py:516 and 6193-6195, 0.32.0), whose
# transient peak is taken from the memory the cache may use (vllm/utils/mem_utils.py:312-321). Older releases
# profiled otherwise and are not read: a launch that may run one is sized without it.
PROFILE_READ_FROM = (0, 32, 0)
# The fewest tokens that pass holds when the launch does not say: the smallest default max_num_batched_tokens on a
# GPU (EngineArgs.get_batch_defaults, vllm/engine/arg_utils.py:2894-2985, 0.32.0; 0.33.0 alike, plus GB10).
PROFILE_TOKENS_MIN = 2048
# Model types whose MLP vLLM runs as one merged gate/up projection whose output stays alive while SiluAndMul writes
# its own (LlamaMLP.forward, vllm/model_executor/models/llama.py:118-122; Qwen2MLP.forward, qwen2.py:111-115;
# MistralMLP.forward, mistral.py:70-74; SiluAndMul.forward_cuda allocates its output, and forward_native computes
# a new tensor, vllm/model_executor/layers/activation.py:141-151; 0.32.0).
_MERGED_GATE_UP = frozenset({"llama", "mistral", "qwen2"})


def activation_peak_bytes(facts: ModelFacts, tokens: int, element_bytes: int, tensor: int) -> int | None:
    """A lower bound of the profiling pass's transient peak on each GPU, for ``tokens`` tokens: the gate/up
    projection's output (2 x intermediate / tensor-parallel size per token) and the activation's (intermediate /
    tensor-parallel size), alive together in every layer's MLP; None for a model whose MLP is not one read, or a
    quantized one (whose activation vLLM may quantize as it computes it)."""
    if facts.text_model_type not in _MERGED_GATE_UP or facts.multimodal or maybe_quantized(facts):
        return None
    if any(facts.text.get(key) for key in _EXPERT_KEYS):
        return None
    inter = facts.intermediate_size
    if not inter or inter % tensor:
        return None
    return tokens * 3 * (inter // tensor) * element_bytes


def kv_bytes_per_token(facts: ModelFacts, kv_dtype_bytes: int, tensor: int, pipeline: int) -> float | None:
    """KV-cache bytes one token takes on each GPU: per layer, 2 x KV heads x head size x the cache dtype's
    bytes (AttentionSpec.page_size_bytes, vllm/v1/kv_cache_interface.py:541-560, 0.32.0), the heads split among
    tensor-parallel ranks (at least one each) and the layers among pipeline stages; None for models whose
    layers are not all plain full attention."""
    if any(facts.text.get(key) not in (None, [], {}) for key in _NOT_PLAIN_ATTENTION):
        return None
    if any("mamba" in key or "ssm" in key or "linear_attn" in key for key in facts.text):
        return None
    layers, heads = facts.num_layers, facts.num_attention_heads
    if not layers or not heads:
        return None
    kv_heads = facts.num_kv_heads or heads
    head_dim = facts.head_dim or (facts.hidden_size // heads if facts.hidden_size else None)
    if not head_dim:
        return None
    return (layers / pipeline) * max(1.0, kv_heads / tensor) * 2 * head_dim * kv_dtype_bytes
