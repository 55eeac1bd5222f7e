"""Build-time tools of vllm-lint: never imported by the linter, not shipped in its wheel."""
