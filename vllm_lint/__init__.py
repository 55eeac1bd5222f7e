"""vllm-lint: find, fix and teach the mistakes people make when serving LLMs with vLLM."""

__version__ = "0.1.0"

# Exit codes, as ruff: nothing found, findings, usage/configuration/internal error.
EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
