"""Run by tests/capacity/test_vs_vllm.py in a process of its own, with vLLM's CPU build: vLLM's own verdict on
each (model folder, max_model_len, tensor parallel size, disable_sliding_window) of a JSON list.

Each config is read by vLLM's own loader (``get_config``, which patches legacy RoPE fields) and converted by its
own convertor; the length is judged by ``_get_and_verify_max_len`` with the arguments ModelConfig passes it
(vllm/config/model.py:2129-2150, 0.32.0), and the tensor-parallel size against the attention heads the convertor
gives, by the check of ModelConfig.verify_with_parallel_config (vllm/config/model.py:1544-1551). The first
combinations of each text-only folder also go through ``EngineArgs.create_model_config`` whole, to show the two
paths agree (a multimodal architecture's inspection needs torchvision, which the CPU image lacks).
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")

from vllm.config import ParallelConfig  # noqa: E402
from vllm.config.model import _get_and_verify_max_len  # noqa: E402
from vllm.engine.arg_utils import EngineArgs  # noqa: E402
from vllm.transformers_utils.config import get_config, get_hf_text_config  # noqa: E402
from vllm.transformers_utils.model_arch_config_convertor import (  # noqa: E402
    MODEL_ARCH_CONFIG_CONVERTORS,
    ModelArchConfigConvertorBase,
)

_LENGTH = "greater than the derived max_model_len"
_HEADS = "must be divisible by tensor parallel size"


def _parts(folder: str):
    hf_config = get_config(folder, trust_remote_code=False)
    text = get_hf_text_config(hf_config)
    convertor = MODEL_ARCH_CONFIG_CONVERTORS.get(hf_config.model_type, ModelArchConfigConvertorBase)
    return text, convertor(hf_config, text).convert()


def verdict(combo: dict, parts) -> dict:
    text, arch = parts
    length = heads = False
    try:
        _get_and_verify_max_len(
            hf_config=text,
            model_arch_config=arch,
            tokenizer_config=None,
            max_model_len=combo["max_model_len"],
            disable_sliding_window=combo["disable_sliding_window"],
            sliding_window=getattr(text, "sliding_window", None),
        )
    except ValueError as error:
        if _LENGTH not in str(error):
            raise
        length = True
    if arch.total_num_attention_heads % combo["tensor_parallel_size"]:
        heads = True
    return {"length": length, "heads": heads}


def whole(combo: dict) -> dict:
    """The same combination through EngineArgs and ModelConfig, as ``vllm serve`` builds them."""
    length = heads = False
    try:
        config = EngineArgs(
            model=combo["folder"],
            max_model_len=combo["max_model_len"],
            disable_sliding_window=combo["disable_sliding_window"],
            skip_tokenizer_init=True,
            gpu_memory_utilization=0.90,  # not read by the model config; said so the project lints clean
        ).create_model_config()
    except Exception as error:  # pydantic wraps vLLM's ValueError
        if _LENGTH not in str(error):
            raise
        return {"length": True, "heads": None}
    try:
        config.verify_with_parallel_config(ParallelConfig(tensor_parallel_size=combo["tensor_parallel_size"]))
    except ValueError as error:
        if _HEADS not in str(error):
            raise
        heads = True
    return {"length": length, "heads": heads}


def main() -> None:
    combos = json.loads(open(sys.argv[1]).read())
    parts: dict = {}
    results = []
    for combo in combos:
        folder = combo["folder"]
        if folder not in parts:
            parts[folder] = _parts(folder)
        result = verdict(combo, parts[folder])
        if combo.get("whole"):
            result["whole"] = whole(combo)
        results.append(result)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
