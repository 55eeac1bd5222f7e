"""A model's facts as vLLM's start-up checks read them, from its ``config.json``."""

from __future__ import annotations

# Not typing.TYPE_CHECKING: importing typing costs ~3 ms of every run's start (mypy reads the name alike).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

# The keys vLLM's max-length derivation reads from the text config, in its order
# (vllm/transformers_utils/model_arch_config_convertor.py:396-410, 0.32.0; vllm/config.py:1688-1702, 0.6.3).
MAX_LENGTH_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
# Where Transformers' ``PretrainedConfig.get_text_config`` finds a multimodal model's language model
# (vLLM reads it through vllm/transformers_utils/config.py:1195, ``get_hf_text_config``).
_TEXT_CONFIG_KEYS = ("text_config", "language_config", "llm_config", "decoder", "generator")


class RopeScaling:
    """One RoPE scaling of a config, its type named as vLLM names it ("su" is "longrope")."""

    # Plain classes, not dataclasses: a run with launches imports these modules, and a dataclass costs
    # about a millisecond to build (benchmarks/model_facts_cost.py).
    __slots__ = ("factor", "original_max_position_embeddings", "rope_type")

    def __init__(self, rope_type: str, factor: float | None, original_max_position_embeddings: int | None) -> None:
        self.rope_type = rope_type
        self.factor = factor
        self.original_max_position_embeddings = original_max_position_embeddings


class ModelFacts:
    """One model's ``config.json`` as vLLM reads it: the top-level config and its language model's."""

    __slots__ = ("config", "name", "source", "text", "weight_bytes")

    def __init__(
        self,
        name: str,  # the model as the launch named it, or the table's id
        source: str,  # where the config was read (a path, the cache entry, the table row's source, a Hub URL)
        config: Mapping[str, Any],
        text: Mapping[str, Any],  # the language model's config: ``text_config`` of a multimodal model, else ``config``
        weight_bytes: int | None = None,
    ) -> None:
        self.name = name
        self.source = source
        self.config = config
        self.text = text
        self.weight_bytes = weight_bytes

    @property
    def model_type(self) -> str:
        return str(self.config.get("model_type") or "")

    @property
    def text_model_type(self) -> str:
        return str(self.text.get("model_type") or self.model_type)

    @property
    def architectures(self) -> tuple[str, ...]:
        value = self.config.get("architectures")
        return tuple(str(item) for item in value) if isinstance(value, list) else ()

    @property
    def multimodal(self) -> bool:
        return self.text is not self.config

    def integer(self, *keys: str) -> int | None:
        """The first of ``keys`` the text config holds as a whole number."""
        for key in keys:
            value = self.text.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return None

    @property
    def num_layers(self) -> int | None:
        return self.integer("num_hidden_layers", "n_layer", "num_layers", "n_layers")

    @property
    def hidden_size(self) -> int | None:
        return self.integer("hidden_size", "n_embd", "d_model")

    @property
    def num_attention_heads(self) -> int | None:
        return self.integer("num_attention_heads", "n_head", "n_heads")

    @property
    def num_kv_heads(self) -> int | None:
        return self.integer("num_key_value_heads", "n_head_kv", "num_kv_heads")

    @property
    def head_dim(self) -> int | None:
        return self.integer("head_dim")

    @property
    def intermediate_size(self) -> int | None:
        return self.integer("intermediate_size", "n_inner", "ffn_dim")

    @property
    def vocab_size(self) -> int | None:
        return self.integer("vocab_size")

    @property
    def sliding_window(self) -> int | None:
        # Qwen2's config class drops its window when ``use_sliding_window`` is false (Transformers'
        # Qwen2Config.__init__), and vLLM reads the class's attribute.
        if self.text.get("use_sliding_window") is False:
            return None
        return self.integer("sliding_window")

    @property
    def dtype(self) -> str | None:
        """``torch_dtype`` (Transformers 4) or ``dtype`` (Transformers 5), of the config or its language model."""
        for config in (self.config, self.text):
            for key in ("dtype", "torch_dtype"):
                value = config.get(key)
                if isinstance(value, str):
                    return value
        return None

    @property
    def quantization(self) -> Mapping[str, Any] | None:
        for config in (self.config, self.text):
            value = config.get("quantization_config")
            if isinstance(value, dict):
                return value
        return None

    @property
    def quantization_method(self) -> str | None:
        quantization = self.quantization
        method = quantization.get("quant_method") if quantization else None
        return str(method).lower() if method else None

    def max_length_keys(self) -> dict[str, int]:
        """The max-length keys the text config holds, with their values."""
        found = {}
        for key in MAX_LENGTH_KEYS:
            value = self.text.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                found[key] = int(value)
        return found

    def rope_scalings(self) -> tuple[RopeScaling, ...] | None:
        """The RoPE scalings of the text config: ``rope_scaling`` (Transformers 4) or ``rope_parameters``
        (Transformers 5, maybe one per layer type), with the legacy names patched as vLLM patches them
        (vllm/transformers_utils/config.py:563-610, 0.32.0); None when one has a factor but no type."""
        found = []
        for key in ("rope_scaling", "rope_parameters"):
            value = self.text.get(key)
            if not isinstance(value, dict):
                continue
            nested = all(isinstance(item, dict) or item is None for item in value.values()) and value
            for parameters in value.values() if nested else (value,):
                if not isinstance(parameters, dict) or not parameters:
                    continue
                rope_type = parameters.get("rope_type", parameters.get("type"))
                if rope_type is None:
                    if "factor" in parameters:
                        return None
                    continue
                rope_type = {"su": "longrope", "mrope": "default"}.get(str(rope_type), str(rope_type))
                factor = parameters.get("factor")
                original = parameters.get(
                    "original_max_position_embeddings", self.text.get("original_max_position_embeddings")
                )
                found.append(
                    RopeScaling(
                        rope_type,
                        float(factor) if isinstance(factor, (int, float)) and not isinstance(factor, bool) else None,
                        int(original) if isinstance(original, int) and not isinstance(original, bool) else None,
                    )
                )
        return tuple(found)


def text_config_of(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The language model's config within ``config`` (itself for a text-only model)."""
    for key in _TEXT_CONFIG_KEYS:
        value = config.get(key)
        if isinstance(value, dict) and value:
            return value
    thinker = config.get("thinker_config")
    if isinstance(thinker, dict) and isinstance(thinker.get("text_config"), dict):
        return thinker["text_config"]
    return config


def read_facts(name: str, source: str, config: Mapping[str, Any], weight_bytes: int | None = None) -> ModelFacts:
    return ModelFacts(name, source, config, text_config_of(config), weight_bytes)
