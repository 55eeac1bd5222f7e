"""The project lints and type-checks itself: ruff with the rules chosen in pyproject.toml's [tool.ruff], mypy with
[tool.mypy] over the whole package."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lintutil import REPO


def test_ruff_finds_nothing():
    from ruff.__main__ import find_ruff_bin  # ruff is in the test extra

    result = subprocess.run([find_ruff_bin(), "check", "--no-cache", "--output-format", "concise", str(REPO)],
                            cwd=REPO, capture_output=True, text=True, timeout=300)
    assert (result.returncode, result.stdout) == (0, "All checks passed!\n"), result.stdout + result.stderr


@pytest.mark.slow
def test_mypy_finds_nothing(tmp_path):
    result = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy-cache")],
                            cwd=REPO, capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr
    assert result.stdout.startswith("Success: no issues found in ")
