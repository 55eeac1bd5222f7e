"""A non-editable install works from another folder: rules/ and templates/ ship in the wheel."""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv

import pytest

from fixture_files import REPO, SEEDS
from lintutil import run_cli


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
    assert listing.returncode == 0 and listing.stdout == run_cli("rule", "--all").stdout
    located = subprocess.run(
        [str(python), "-c", "import vllm_lint.resources as r; print(r.rules_dir()); print(r.templates_dir())"],
        cwd=elsewhere, capture_output=True, text=True,
    )
    assert str(REPO) not in located.stdout and "_rules" in located.stdout
    shutil.copy(SEEDS / "000_bad_pipeline_server.py", elsewhere)  # a seed named through tests/ is a test file
    check = subprocess.run(
        [str(env_dir / "bin" / "vllm-lint"), "check", "--output-format", "concise", "000_bad_pipeline_server.py"],
        cwd=elsewhere, capture_output=True, text=True,
    )
    assert check.returncode == 1
    # the installed wheel reports what this checkout reports
    assert check.stdout == run_cli("check", "--output-format", "concise", "000_bad_pipeline_server.py", cwd=elsewhere).stdout
    assert check.stdout.startswith("000_bad_pipeline_server.py:7:14: VLL101 ")
    targets = subprocess.run([str(env_dir / "bin" / "vllm-lint"), "init", "--list-targets"], cwd=elsewhere, capture_output=True, text=True)
    assert targets.returncode == 0 and "--hooks: .claude/settings.json" in targets.stdout  # targets.yaml ships
    assert targets.stdout == run_cli("init", "--list-targets", cwd=elsewhere).stdout
    # validate hands its patches down to the processes a framework starts through a sitecustomize that ships
    handed_down = subprocess.run(
        [str(python), "-c", "from vllm_lint.reference.spawned import SITE_DIRECTORY as d; "
                            "print((d / 'sitecustomize.py').is_file(), d)"],
        cwd=elsewhere, capture_output=True, text=True,
    )
    assert handed_down.stdout.startswith("True ") and str(REPO) not in handed_down.stdout, handed_down.stderr
