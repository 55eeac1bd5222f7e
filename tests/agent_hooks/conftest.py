"""The project a hook runs in: a git repository with a bad server, a clean file, an unlinted kind and an ignored folder."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hookutil import BAD_SERVER, CLEAN


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "server.py").write_text(BAD_SERVER)
    (root / "clean.py").write_text(CLEAN)
    (root / "notes.txt").write_text(BAD_SERVER)  # a kind of file vllm-lint does not lint
    (root / "ignored").mkdir()
    (root / "ignored" / "server.py").write_text(BAD_SERVER)
    (root / ".gitignore").write_text("ignored/\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "server.py").write_text(BAD_SERVER)
    return root
