"""Python-surface rules. Importing this package registers every checker."""

from vllm_lint.python.rules import api, clients, frameworks, sampling, serving, streamlit  # noqa: F401
