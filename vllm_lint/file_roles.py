"""What a file's path says about its role: tests, CI jobs and debugging scripts are not production code.

The serving rules judge code by what it will do in production; a test fixture that starts vLLM with
``--enforce-eager`` to start fast, or a CI job that does, is doing the right thing.
"""

from __future__ import annotations

import re
from pathlib import PurePath

from vllm_lint.lazy_re import lazy_compile

_TEST_FOLDERS = frozenset({"tests", "test"})
_CI_FOLDERS = frozenset({".github", ".buildkite", ".circleci", ".gitlab"})
_DEBUG_WORD = lazy_compile(r"(?:^|[_.\-])debug(?:ging)?(?:[_.\-]|$)", re.IGNORECASE)


def is_test_path(path: str | PurePath) -> bool:
    """``test_x.py``, ``x_test.py``, ``conftest.py``, or anything in a ``tests``/``test`` folder."""
    pure = PurePath(path)
    name = pure.name
    return (
        name.startswith("test_")
        or pure.stem.endswith("_test")
        or name == "conftest.py"
        or any(part in _TEST_FOLDERS for part in pure.parts[:-1])
    )


def is_testing_path(path: str | PurePath) -> bool:
    """A test, a CI job (``.github/``, ``.buildkite/``, ``.gitlab-ci.yml``, ...) or a debugging script
    (``debug`` as a word of its name or a folder's: ``debug_server.sh``, ``run-debug.sh``, ``debug/``)."""
    pure = PurePath(path)
    if is_test_path(pure) or pure.name.startswith(".gitlab-ci."):
        return True
    return any(part in _CI_FOLDERS or _DEBUG_WORD.search(part) for part in pure.parts)
