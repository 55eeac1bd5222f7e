"""The values the launch rules judge by and the fixes write: one place, so a fix never writes what a rule reports."""

SAFE_GPU_MEMORY_UTILIZATION = 0.90
MAX_GPU_MEMORY_UTILIZATION = 0.95
# vLLM's LoRAConfig.max_lora_rank (vllm/config/lora.py:33, 0.32.0); tests/test_new_rules.py checks it against the snapshot.
DEFAULT_MAX_LORA_RANK = 16
# `vllm serve --port`'s default (vllm/entrypoints/launchers/cli_args.py:285, 0.32.0); tests/test_new_rules.py checks it.
DEFAULT_PORT = 8000
