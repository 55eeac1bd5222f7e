"""Fixtures shared by the top-level tests; helpers live in lintutil.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from lintutil import SEEDS


@pytest.fixture
def seeds() -> Path:
    if not SEEDS.is_dir():
        pytest.fail(f"the seed documents are missing: expected {SEEDS} beside the repository")
    return SEEDS
