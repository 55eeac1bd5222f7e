"""When a Python file can tell VLL304 (served_models.py) something, read off its bytes: it starts a vLLM server,
or builds an OpenAI client with a base URL (python/project_facts.py)."""

from __future__ import annotations

from vllm_lint.python.prefilter import Condition, FileBytes, imports_client_library, present
from vllm_lint.registry import LAUNCH


def _client_with_base_url(file: FileBytes) -> bool:
    code = file.code
    return present(code, b"base_url") and present(code, b"OpenAI") and imports_client_library(code)


PREFILTER = {
    # A launch hidden from VLL304 could leave one candidate server where there are two: it reads them all.
    "VLL304": (LAUNCH, Condition("an OpenAI client built with a base_url", _client_with_base_url)),
}
