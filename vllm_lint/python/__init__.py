"""The Python front-end: one LibCST parse and one traversal per file, then small rules."""

from vllm_lint.python.libcst_loading import defer_metadata_init

# Before any module of this package imports LibCST (see libcst_loading.py).
defer_metadata_init()
