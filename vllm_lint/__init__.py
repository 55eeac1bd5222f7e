"""vllm-lint: find, fix and teach the mistakes people make when serving LLMs with vLLM."""

__version__ = "0.1.0"
