"""What a vLLM API snapshot records, whichever reader (import-based or static) writes it."""

from __future__ import annotations

SCHEMA_VERSION = 1

# Public classes whose attribute names rules check (e.g. ``llm.generate_async``
# does not exist).  Key: the dotted name users write; value: where it lives.
CLASSES: dict[str, str] = {
    "vllm.LLM": "vllm:LLM",
    "vllm.AsyncLLMEngine": "vllm:AsyncLLMEngine",
    "vllm.SamplingParams": "vllm:SamplingParams",
    "vllm.EngineArgs": "vllm:EngineArgs",
    "vllm.AsyncEngineArgs": "vllm:AsyncEngineArgs",
    "vllm.LLMEngine": "vllm:LLMEngine",
    "vllm.v1.engine.async_llm.AsyncLLM": "vllm.v1.engine.async_llm:AsyncLLM",
}

# Flags whose accepted values vLLM lists somewhere other than argparse
# ``choices``: argparse takes any string for them (a bad one fails later, at
# model load), but a linter can still warn about an unknown value.
KNOWN_VALUES: dict[str, str] = {
    "quantization": "vllm.model_executor.layers.quantization:QUANTIZATION_METHODS",
    # 0.33 turned --kv-cache-dtype's choices into a `Literal | str` (any string parses) and rejects
    # what is not in this list when CacheConfig validates it.
    "kv_cache_dtype": "vllm.config.cache:KV_CACHE_DTYPES",
}
