"""vLLM as the judge of VLL209 and VLL210: for generated model folders (a config.json, no weights) and
combinations of max_model_len, tensor-parallel size and --disable-sliding-window, vLLM's own config checks
(tests/capacity/vllm_judge.py, run with the installed CPU build) reject a combination exactly when the linter
reports it. RoPE scaling (linear, dynamic, llama3, YaRN, LongRoPE, M-RoPE), sliding windows, a MoE model,
``model_max_length`` and multimodal ``text_config`` are among the folders."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lintutil import run_cli

if importlib.util.find_spec("vllm") is None:
    pytest.skip("vLLM's CPU build judges these combinations", allow_module_level=True)


def _llama(**extra):
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "num_hidden_layers": 32,
        "vocab_size": 32000,
        "max_position_embeddings": 4096,
        **extra,
    }


_PHI3_FACTORS = [1.0] * 48
CONFIGS = {
    "llama-2": _llama(),
    "llama-2-13b": _llama(hidden_size=5120, num_attention_heads=40, num_key_value_heads=40),
    "tinyllama": _llama(hidden_size=2048, num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=2048),
    "linear-x4": _llama(rope_scaling={"type": "linear", "factor": 4.0}),
    "dynamic-x2": _llama(rope_scaling={"type": "dynamic", "factor": 2.0}),
    "llama-3.1": _llama(
        num_key_value_heads=8,
        max_position_embeddings=131072,
        vocab_size=128256,
        rope_scaling={
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
        },
    ),
    "gpt2": {
        "architectures": ["GPT2LMHeadModel"],
        "model_type": "gpt2",
        "n_positions": 1024,
        "n_ctx": 1024,
        "n_embd": 768,
        "n_head": 12,
        "n_layer": 12,
        "vocab_size": 50257,
    },
    "phi-2": {
        "architectures": ["PhiForCausalLM"],
        "model_type": "phi",
        "hidden_size": 2560,
        "intermediate_size": 10240,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "max_position_embeddings": 2048,
        "vocab_size": 51200,
    },
    "qwen2.5-yarn": {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "num_hidden_layers": 28,
        "vocab_size": 152064,
        "max_position_embeddings": 32768,
        "sliding_window": 131072,
        "use_sliding_window": False,
        "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
    },
    "qwen2-0.5b": {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "hidden_size": 896,
        "intermediate_size": 4864,
        "num_attention_heads": 14,
        "num_key_value_heads": 2,
        "num_hidden_layers": 24,
        "vocab_size": 151936,
        "max_position_embeddings": 32768,
    },
    "mistral-sliding": {
        "architectures": ["MistralForCausalLM"],
        "model_type": "mistral",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "num_hidden_layers": 32,
        "vocab_size": 32000,
        "max_position_embeddings": 32768,
        "sliding_window": 4096,
    },
    "mixtral-moe": {
        "architectures": ["MixtralForCausalLM"],
        "model_type": "mixtral",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "num_hidden_layers": 32,
        "vocab_size": 32000,
        "max_position_embeddings": 32768,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
        "sliding_window": None,
    },
    "command-r": {
        "architectures": ["CohereForCausalLM"],
        "model_type": "cohere",
        "hidden_size": 8192,
        "intermediate_size": 22528,
        "num_attention_heads": 64,
        "num_key_value_heads": 64,
        "num_hidden_layers": 40,
        "vocab_size": 256000,
        "max_position_embeddings": 8192,
        "model_max_length": 131072,
    },
    "phi-3-longrope": {
        "architectures": ["Phi3ForCausalLM"],
        "model_type": "phi3",
        "hidden_size": 3072,
        "intermediate_size": 8192,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "num_hidden_layers": 32,
        "vocab_size": 32064,
        "max_position_embeddings": 131072,
        "original_max_position_embeddings": 4096,
        "rope_scaling": {"type": "longrope", "short_factor": _PHI3_FACTORS, "long_factor": _PHI3_FACTORS},
    },
    "llava": {
        "architectures": ["LlavaForConditionalGeneration"],
        "model_type": "llava",
        "text_config": _llama(),
        "vision_config": {"model_type": "clip_vision_model"},
    },
    "gemma-3-vlm": {
        "architectures": ["Gemma3ForConditionalGeneration"],
        "model_type": "gemma3",
        "text_config": {
            "model_type": "gemma3_text",
            "hidden_size": 2560,
            "intermediate_size": 10240,
            "num_attention_heads": 8,
            "num_key_value_heads": 4,
            "head_dim": 256,
            "num_hidden_layers": 34,
            "vocab_size": 262208,
            "max_position_embeddings": 131072,
            "sliding_window": 1024,
            "rope_scaling": {"rope_type": "linear", "factor": 8.0},
        },
        "vision_config": {"model_type": "siglip_vision_model"},
    },
    "qwen2-vl-mrope": {
        "architectures": ["Qwen2VLForConditionalGeneration"],
        "model_type": "qwen2_vl",
        "hidden_size": 1536,
        "intermediate_size": 8960,
        "num_attention_heads": 12,
        "num_key_value_heads": 2,
        "num_hidden_layers": 28,
        "vocab_size": 151936,
        "max_position_embeddings": 32768,
        "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
    },
}
LENGTHS = (1024, 1025, 2048, 2049, 4096, 4097, 8192, 16384, 16385, 32768, 32769, 131072, 131073, 262144)
TENSOR_PARALLEL = (1, 2, 3, 4, 8, 6, 5)
WITH_SLIDING_WINDOW = ("mistral-sliding", "gemma-3-vlm", "qwen2.5-yarn")
# Checked through EngineArgs.create_model_config too (text-only architectures vLLM inspects without torchvision).
WHOLE = ("llama-2", "mistral-sliding")


def _combos(root: Path) -> list[dict]:
    combos = []
    for name, config in CONFIGS.items():
        folder = root / name
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(config))
        for disable in (False, True) if name in WITH_SLIDING_WINDOW else (False,):
            for index, length in enumerate(LENGTHS):
                combos.append(
                    {
                        "name": name,
                        "folder": str(folder),
                        "max_model_len": length,
                        "disable_sliding_window": disable,
                        "tensor_parallel_size": TENSOR_PARALLEL[(index + len(combos)) % len(TENSOR_PARALLEL)],
                        "whole": name in WHOLE and index in (4, 5),
                    }
                )
    return combos


def _command(combo: dict) -> str:
    words = [
        "vllm",
        "serve",
        combo["folder"],
        "--max-model-len",
        str(combo["max_model_len"]),
        "--tensor-parallel-size",
        str(combo["tensor_parallel_size"]),
    ]
    if combo["disable_sliding_window"]:
        words.append("--disable-sliding-window")
    return " ".join(words)


def test_the_linter_reports_what_vllm_rejects(tmp_path):
    combos = _combos(tmp_path)
    assert len(combos) >= 200
    listing = tmp_path / "combos.json"
    listing.write_text(json.dumps(combos))
    judge = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("vllm_judge.py")), str(listing)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert judge.returncode == 0, judge.stderr[-3000:]
    verdicts = json.loads(judge.stdout.strip().splitlines()[-1])

    script = tmp_path / "launches.sh"
    script.write_text("".join(_command(combo) + "\n" for combo in combos))
    result = run_cli(
        "check",
        "--isolated",
        "--no-cache",
        "--preview",
        "--select",
        "VLL209,VLL210",
        "--target-vllm-version",
        "0.32",
        "--output-format",
        "json",
        "--exit-zero",
        str(script),
    )
    assert result.returncode == 0, result.stderr
    reported = {(finding["location"]["row"], finding["code"]) for finding in json.loads(result.stdout)}

    disagreements = []
    for line, (combo, verdict) in enumerate(zip(combos, verdicts), start=1):
        linter = {"length": (line, "VLL209") in reported, "heads": (line, "VLL210") in reported}
        vllm = {"length": verdict["length"], "heads": verdict["heads"]}
        if linter != vllm:
            disagreements.append(
                (
                    combo["name"],
                    combo["max_model_len"],
                    combo["tensor_parallel_size"],
                    combo["disable_sliding_window"],
                    linter,
                    vllm,
                )
            )
        whole = verdict.get("whole")
        if whole is not None:  # the lower path agrees with EngineArgs and ModelConfig
            assert whole["length"] == verdict["length"], combo
            assert whole["heads"] in (None, verdict["heads"]), combo
    assert disagreements == []
    # Both verdicts occur, each many times: the test can fail either way.
    assert sum(v["length"] for v in verdicts) > 50 and sum(not v["length"] for v in verdicts) > 50
    assert sum(v["heads"] for v in verdicts) > 20


# (config, tensor parallel size, kv cache bytes) -> vLLM's page of one token, summed over the layers.
KV_CASES = [
    ("llama-2", 1, 2),
    ("llama-2", 4, 2),
    ("llama-3.1", 1, 2),
    ("llama-3.1", 8, 1),
    ("tinyllama", 2, 2),
    ("tinyllama", 8, 2),  # fewer KV heads than ranks: each rank keeps one
    ("qwen2-0.5b", 1, 2),
    ("gpt2", 1, 2),
]
_PAGES = """
import json, sys, tempfile, torch
from transformers import LlamaConfig
from vllm.config.model import _get_and_verify_dtype
from vllm.v1.kv_cache_interface import FullAttentionSpec
out = []
for heads, head_size, dtype in json.loads(sys.argv[1]):
    spec = FullAttentionSpec(block_size=16, num_kv_heads=heads, head_size=head_size,
                             dtype={1: torch.float8_e4m3fn, 2: torch.bfloat16}[dtype])
    out.append(spec.page_size_bytes // 16)
served = []
# A local model folder with no weights: a config without torch_dtype sends vLLM to the checkpoint's safetensors
# header, which for a Hub name it asks the Hub for (two seconds of retries each where it cannot reach it).
folder = tempfile.mkdtemp()
for stored, dtype in json.loads(sys.argv[2]):
    extra = {"torch_dtype": stored} if stored else {}
    config = LlamaConfig(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_hidden_layers=1, **extra)
    served.append(_get_and_verify_dtype(folder, config, dtype, is_pooling_model=False).itemsize)
print(json.dumps([out, served]))
"""
# (checkpoint dtype, --dtype): VLL211 sizes an unquantized model's weights and KV cache without knowing the first.
SERVED_CASES = [
    (stored, dtype)
    for stored in ("float32", "bfloat16", "float16", None)
    for dtype in ("auto", "half", "float16", "bfloat16", "float", "float32")
]


def test_kv_bytes_per_token_and_the_served_dtypes_bytes_are_vllms():
    from vllm_lint.models.derive import kv_bytes_per_token, served_element_bytes
    from vllm_lint.models.facts import read_facts

    specs, ours = [], []
    for name, tensor, dtype_bytes in KV_CASES:
        facts = read_facts(name, "test", CONFIGS[name])
        kv_heads = facts.num_kv_heads or facts.num_attention_heads
        head_size = facts.head_dim or facts.hidden_size // facts.num_attention_heads
        specs.append((max(1, kv_heads // tensor), head_size, dtype_bytes))
        ours.append(kv_bytes_per_token(facts, dtype_bytes, tensor, 1) / facts.num_layers)
    pages = subprocess.run(
        [sys.executable, "-c", _PAGES, json.dumps(specs), json.dumps(SERVED_CASES)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},  # nothing here is the Hub's
    )
    assert pages.returncode == 0, pages.stderr[-3000:]
    vllm_pages, vllm_served = json.loads(pages.stdout.strip().splitlines()[-1])
    assert ours == vllm_pages
    assert vllm_served == [served_element_bytes(dtype) for _, dtype in SERVED_CASES]


_PARAMETERS = """
import json, sys, torch
from transformers import AutoConfig, AutoModelForCausalLM
out = []
for config in json.loads(sys.argv[1]):
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(AutoConfig.for_model(**config))
    out.append(sum(parameter.numel() for parameter in model.parameters()))
print(json.dumps(out))
"""


def test_the_parameter_count_is_a_lower_bound_of_the_checkpoints():
    # Each dense config's model as Transformers builds it (the checkpoint vLLM loads holds these tensors), with
    # the output layer's tying stated (Transformers' default differs by model type; the derivation counts one
    # matrix when a config does not say): the derived count is below it, by only norms and biases (under 0.1%)
    # where the model type's MLP is one the derivation knows.
    from vllm_lint.models.derive import GATED_MLP, parameter_count
    from vllm_lint.models.facts import read_facts

    configs = {
        name: {**config, "tie_word_embeddings": name == "qwen2-0.5b"}
        for name, config in CONFIGS.items()
        if parameter_count(read_facts(name, "test", config)) and "_vl" not in config["model_type"]
    }
    built = subprocess.run(
        [
            sys.executable,
            "-c",
            _PARAMETERS,
            json.dumps([{k: v for k, v in config.items() if k != "architectures"} for config in configs.values()]),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    real = dict(zip(configs, json.loads(built.stdout.strip().splitlines()[-1])))
    derived = {name: parameter_count(read_facts(name, "test", config)) for name, config in configs.items()}
    assert len(configs) >= 10
    assert all(derived[name] <= real[name] for name in configs), (derived, real)
    known = [name for name, config in configs.items() if config["model_type"] in GATED_MLP | {"phi"}]
    assert len(known) >= 9
    assert all(real[name] - derived[name] < real[name] / 1000 for name in known), (derived, real)
