"""Python-surface rules. Importing this package registers every checker."""

from vllm_lint.python.rules import api, frameworks, sampling, serving  # noqa: F401
