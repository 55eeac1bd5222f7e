"""A release as a user meets it: ``scripts/release.py`` on a clone of this repository tags it, builds and checks
the sdist and wheel; then, at that tag, the README's pre-commit snippet runs under the real pre-commit and the
README's Action snippet's steps run as the runner runs them, installing the release's wheel. And README's
first command installs vllm-lint as a user does (pipx, from the clone) and lints the shipped examples.
Everything installs offline (``offline_pip``)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from action_runner import load_action, run_action_steps
from lintutil import REPO, run_cli
from vllm_lint import __version__

pytestmark = pytest.mark.slow

VERSION = "9.9.9"


def clean_env() -> dict[str, str]:
    # A test run from inside a git hook must not point git at the outer repository; what is installed must not
    # import this checkout's vllm_lint (a PYTHONPATH that names it) instead of its own.
    return {key: value for key, value in os.environ.items() if not key.startswith("GIT_") and key != "PYTHONPATH"}


def git(*args: str, cwd: Path) -> str:
    command = [
        "git",
        "-c",
        "user.name=test",
        "-c",
        "user.email=test@example.com",
        "-c",
        "commit.gpgsign=false",
        "-c",
        "tag.gpgsign=false",
        *args,
    ]
    return subprocess.run(command, cwd=cwd, check=True, capture_output=True, text=True, env=clean_env()).stdout.strip()


def readme_block(readme: str, heading: str) -> str:
    section = readme.split(heading, 1)[1]
    return re.search(r"```(?:yaml|bash)\n(.*?)```", section, re.S).group(1)


@pytest.fixture(scope="module")
def offline(offline_pip) -> dict[str, str]:
    return {**clean_env(), **offline_pip, "PRE_COMMIT_COLOR": "never"}


@pytest.fixture(scope="module")
def released(tmp_path_factory, offline) -> Path:
    """A clone of this repository's committed HEAD, released as 9.9.9 by the release script."""
    clone = tmp_path_factory.mktemp("release") / "vllm-lint"
    git("clone", "-q", str(REPO), str(clone), cwd=REPO)
    git("config", "user.name", "test", cwd=clone)
    git("config", "user.email", "test@example.com", cwd=clone)
    done = subprocess.run(
        [sys.executable, "scripts/release.py", VERSION, "--no-isolation"],
        cwd=clone,
        capture_output=True,
        text=True,
        env={**offline, "COLUMNS": "300"},
        timeout=600,
    )  # twine's lines unwrapped
    assert done.returncode == 0, done.stdout + done.stderr
    head = git("rev-parse", "--short", "HEAD", cwd=clone)
    assert re.sub(r"\x1b\[[0-9;]*m", "", done.stdout).splitlines() == [
        f"Checking {clone}/dist/vllm_lint-{VERSION}-py3-none-any.whl: PASSED",
        f"Checking {clone}/dist/vllm_lint-{VERSION}.tar.gz: PASSED",
        f"Tagged v{VERSION} ({head}); built and checked vllm_lint-{VERSION}-py3-none-any.whl, vllm_lint-{VERSION}.tar.gz.",
        f"Publish: git push origin HEAD v{VERSION} && python -m twine upload dist/vllm_lint-{VERSION}-py3-none-any.whl "
        f"dist/vllm_lint-{VERSION}.tar.gz",
    ]
    return clone


def test_the_release_script_tags_the_version_it_writes(released):
    assert git("rev-parse", f"v{VERSION}^{{commit}}", cwd=released) == git("rev-parse", "HEAD", cwd=released)
    assert git("log", "-1", "--format=%s", cwd=released) == f"Release {VERSION}"
    assert f'__version__ = "{VERSION}"' in git("show", f"v{VERSION}:vllm_lint/__init__.py", cwd=released)
    assert f"\n## {VERSION} - " in git("show", f"v{VERSION}:CHANGELOG.md", cwd=released)
    assert git("status", "--porcelain", cwd=released) == ""  # dist/, build/ and the egg-info are ignored
    again = subprocess.run(
        [sys.executable, "scripts/release.py", VERSION], cwd=released, capture_output=True, text=True
    )
    assert (again.returncode, again.stderr) == (1, f"release: the tag v{VERSION} exists already\n")


def test_the_readme_pre_commit_snippet_resolves_at_the_tag(released, offline, tmp_path):
    readme = git("show", f"v{VERSION}:README.md", cwd=released)
    config = yaml.safe_load(readme_block(readme, "<!-- example: pre-commit-config -->"))
    [entry] = config["repos"]
    assert (entry["repo"], entry["rev"]) == ("https://github.com/vllm-lint/vllm-lint", f"v{VERSION}")
    entry["repo"] = str(released)  # the clone stands for GitHub; the rev is the snippet's
    project = tmp_path / "project"
    (project / "deploy").mkdir(parents=True)
    (project / "deploy" / "Dockerfile").write_text(
        'FROM vllm/vllm-openai:v0.8.5\nCMD ["m", "--gpu-memory-utilization", "0.99"]\n'
    )
    (project / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    git("init", "-q", ".", cwd=project)
    subprocess.run(
        [sys.executable, "-m", "vllm_lint", "init"],
        cwd=project,
        check=True,
        capture_output=True,
        env={**offline, "PYTHONPATH": str(released)},
    )
    git("add", "-A", cwd=project)
    done = subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--all-files"],
        cwd=project,
        capture_output=True,
        text=True,
        env={**offline, "PRE_COMMIT_HOME": str(tmp_path / "cache")},
        timeout=600,
    )
    assert "vllm-lint (fix)" in done.stdout and "deploy/Dockerfile:2:" in done.stdout, done.stdout + done.stderr
    assert done.returncode == 1


def test_the_readme_action_snippet_resolves_at_the_tag(released, offline, tmp_path):
    readme = git("show", f"v{VERSION}:README.md", cwd=released)
    steps = yaml.safe_load("steps:\n" + readme_block(readme, "### GitHub Actions\n"))["steps"]
    [ours] = [step for step in steps if step.get("uses", "").startswith("vllm-lint/vllm-lint@")]
    assert ours["uses"] == f"vllm-lint/vllm-lint@v{VERSION}" and ours["with"]["version"] == VERSION
    action = load_action(git("show", f"{ours['uses'].split('@')[1]}:action.yml", cwd=released))
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "serve.sh").write_text(
        "vllm serve m --gpu-memory-utilization 0.99 --max-model-len 8192 --host 127.0.0.1\n"
    )
    empty = tmp_path / "bin"
    empty.mkdir()
    # The package index is the wheelhouse and the release's dist/ (its wheel is what `version` names).
    env = {**offline, "PIP_FIND_LINKS": f"{offline['PIP_FIND_LINKS']} {released / 'dist'}"}
    run = run_action_steps(action, workspace, empty, env, python=sys.executable, **ours["with"])
    assert run.ran == ["Install vllm-lint", "Run vllm-lint", "github/codeql-action/upload-sarif@v3", "Fail on findings"]
    assert run.stdout.splitlines()[0] == f"vllm-lint, version {VERSION}"
    assert run.stdout.splitlines()[1].startswith("::error file=serve.sh,line=1,col=39,")
    assert run.exit_code == 1 and (workspace / ours["with"]["sarif-file"]).is_file()


def test_readme_first_command_installs_as_a_user_does(tmp_path, offline):
    """pipx from the clone, nothing of the test extra; the installed vllm-lint lints the shipped examples as
    this checkout does."""
    first = (REPO / "README.md").read_text(encoding="utf-8").split("```bash\n# 1.", 1)[1].split("```", 1)[0]
    command = next(line for line in first.splitlines()[1:] if line and not line.startswith("#"))
    assert command == "pipx install . && vllm-lint check examples"
    clone = tmp_path / "clone"
    git("clone", "-q", str(REPO), str(clone), cwd=REPO)
    bin_dir = tmp_path / "pipx-bin"
    pipx = tmp_path / "shims" / "pipx"
    pipx.parent.mkdir()
    pipx.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m pipx "$@"\n')
    pipx.chmod(0o755)
    env = {
        **offline,
        "PIPX_HOME": str(tmp_path / "pipx-home"),
        "PIPX_BIN_DIR": str(bin_dir),
        "PATH": os.pathsep.join([str(bin_dir), str(pipx.parent), os.environ["PATH"]]),
    }
    done = subprocess.run(["bash", "-c", command], cwd=clone, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr  # findings: every rule fires on examples/
    installed, checked = done.stdout.split("    - vllm-lint\n", 1)  # pipx's report, then vllm-lint's
    assert installed.startswith(f"  installed package vllm-lint {__version__}, installed using Python ")
    assert checked == run_cli("check", "examples", cwd=clone).stdout
    installed = subprocess.run(
        [
            str(tmp_path / "pipx-home" / "venvs" / "vllm-lint" / "bin" / "python"),
            "-m",
            "pip",
            "list",
            "--format=freeze",
        ],
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    assert not {"pytest", "hypothesis", "pre-commit", "mypy", "ruff"} & {
        line.split("==")[0].lower() for line in installed.splitlines()
    }
    shutil.rmtree(tmp_path / "pipx-home")
