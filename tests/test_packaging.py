"""A non-editable install works from another folder: rules/ and templates/ ship in the wheel."""

from __future__ import annotations

import subprocess
import sys
import venv

import pytest

from lintutil import REPO, SEEDS


@pytest.mark.slow
def test_wheel_install_runs_from_another_folder(tmp_path):
    wheel_dir = tmp_path / "wheel"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheel_dir), str(REPO)],
        check=True,
        timeout=600,
    )
    [wheel] = wheel_dir.glob("vllm_lint-*.whl")
    env_dir = tmp_path / "env"
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", str(wheel)], check=True, timeout=600)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    listing = subprocess.run([str(env_dir / "bin" / "vllm-lint"), "rule", "--all"], cwd=elsewhere, capture_output=True, text=True)
    assert listing.returncode == 0 and "VLL101" in listing.stdout
    located = subprocess.run(
        [str(python), "-c", "import vllm_lint.resources as r; print(r.rules_dir()); print(r.templates_dir())"],
        cwd=elsewhere, capture_output=True, text=True,
    )
    assert str(REPO) not in located.stdout and "_rules" in located.stdout
    check = subprocess.run(
        [str(env_dir / "bin" / "vllm-lint"), "check", "--output-format", "concise", str(SEEDS / "000_bad_pipeline_server.py")],
        cwd=elsewhere, capture_output=True, text=True,
    )
    assert check.returncode == 1 and "VLL101" in check.stdout
    targets = subprocess.run([str(env_dir / "bin" / "vllm-lint"), "init", "--list-targets"], cwd=elsewhere, capture_output=True, text=True)
    assert targets.returncode == 0 and "--hooks: .claude/settings.json" in targets.stdout  # targets.yaml ships
