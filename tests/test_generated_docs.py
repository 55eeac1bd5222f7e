"""``examples/``, the rule pages (``docs/rules/``) and the README's rules table are made from the rule files:
they fail here when they drift."""

from __future__ import annotations

import shutil
import subprocess
import sys

from lintutil import REPO

SCRIPT = REPO / "scripts" / "generate_docs.py"


def _check(repo=REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(repo / "scripts" / "generate_docs.py"), "--check"],
                          capture_output=True, text=True, cwd=repo)


def test_the_generated_files_are_current():
    result = _check()
    assert (result.returncode, result.stdout) == (0, ""), result.stdout + result.stderr


def test_a_drift_is_named_and_written_back(tmp_path):
    repo = tmp_path / "repo"
    for name in ("vllm_lint", "rules", "examples", "scripts", "docs/rules"):
        shutil.copytree(REPO / name, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "README.md", repo / "README.md")
    (repo / "examples" / "vll203_missing_max_model_len.py").write_text("edited by hand\n", encoding="utf-8")
    (repo / "examples" / "stray.py").write_text("no rule makes this\n", encoding="utf-8")
    (repo / "docs" / "rules" / "VLL101.md").write_text("edited by hand\n", encoding="utf-8")
    readme = repo / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8").replace("| VLL203 |", "| VLL2O3 |"), encoding="utf-8")

    result = _check(repo)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "stale: examples/vll203_missing_max_model_len.py (run python scripts/generate_docs.py)",
        "stale: docs/rules/VLL101.md (run python scripts/generate_docs.py)",
        "stale: README.md (run python scripts/generate_docs.py)",
        "stale: examples/stray.py (run python scripts/generate_docs.py)",
    ]
    subprocess.run([sys.executable, str(repo / "scripts" / "generate_docs.py")], check=True, capture_output=True)
    assert _check(repo).returncode == 0
    assert not (repo / "examples" / "stray.py").exists()
    assert readme.read_text(encoding="utf-8") == (REPO / "README.md").read_text(encoding="utf-8")
    assert (repo / "docs" / "rules" / "VLL101.md").read_text(encoding="utf-8") == (REPO / "docs" / "rules" / "VLL101.md").read_text(encoding="utf-8")
