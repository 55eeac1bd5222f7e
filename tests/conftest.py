"""Fixtures shared by the top-level tests; helpers live in lintutil.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lintutil import SEEDS


@pytest.fixture(autouse=True, scope="session")
def _own_user_cache(tmp_path_factory):
    """vllm-lint keeps compiled dataclass code and parsed rules in the user's cache folder (usercache.py):
    the suite, and every vllm-lint it starts, uses a folder of its own, so it neither reads a developer's
    stores nor leaves files in them."""
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("user-cache"))
    yield
    if before is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = before


@pytest.fixture
def seeds() -> Path:
    if not SEEDS.is_dir():
        pytest.fail(f"the seed documents are missing: expected {SEEDS} beside the repository")
    return SEEDS
