"""The pre-commit hooks, run by the real pre-commit against temporary git repositories.

The hooks are ``language: python``: pre-commit builds a virtualenv and pip-installs the
hook repository into it, offline (``offline_pip``: a wheelhouse repacked from this
interpreter's distributions). Everything else is what a user's ``pre-commit`` does.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from lintutil import REPO, notebook_json

pytestmark = pytest.mark.slow

# What `pip install .` needs from a checkout.
HOOK_REPO_FILES = ("pyproject.toml", "setup.py", "README.md", ".pre-commit-hooks.yaml", "vllm_lint", "rules", "templates")
BAD = textwrap.dedent(
    """\
    from vllm import LLM, SamplingParams
    llm = LLM(model="m", gpu_memory_utilization=0.98)
    p = SamplingParams(max_new_tokens=8)
    """
)
DOCKERFILE = 'FROM vllm/vllm-openai\nCMD ["m", "--gpu-memory-utilization", "0.99", "--max-model-len", "8192"]\n'
SCRIPT = "#!/bin/sh\nvllm serve m --gpu-memory-utilization 0.99 --max-model-len 8192\n"
README = "# Serving\n\n```bash\nvllm serve m --gpu-memory-utilization 0.99 --max-model-len 8192\n```\n"
NOTEBOOK = "# %%\nfrom vllm import LLM\n\n# %%\nllm = LLM(model='m', gpu_memory_utilization=0.99, max_model_len=8192)\n"
STATUS = re.compile(r"^(?P<name>.+?)\.{3,}(?P<status>Passed|Failed|\(no files to check\)Skipped)$")


def git(*args: str, cwd: Path) -> str:
    command = ["git", "-c", "user.name=test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false", *args]
    return subprocess.run(command, cwd=cwd, check=True, capture_output=True, text=True, env=clean_env()).stdout.strip()


def clean_env() -> dict[str, str]:
    # A test run from inside a git hook must not point git at the outer repository.
    return {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}


@pytest.fixture(scope="module")
def offline_env(offline_pip) -> dict[str, str]:
    env = clean_env()
    env.update(offline_pip, PRE_COMMIT_COLOR="never")
    return env


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory) -> tuple[Path, str]:
    """This checkout's hooks and package as a git repository (try-repo clones what is committed)."""
    repo = tmp_path_factory.mktemp("hook-repo")
    for name in HOOK_REPO_FILES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, repo / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, repo / name)
    git("init", "-q", ".", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "hooks", cwd=repo)
    return repo, git("rev-parse", "HEAD", cwd=repo)


@pytest.fixture
def project(tmp_path, hook_repo) -> Path:
    """A repository with findings in every kind of file the hooks pass, and one excluded by configuration."""
    root = tmp_path / "project"
    files = {
        "pyproject.toml": '[tool.vllm-lint]\nextend-exclude = ["generated/"]\n',
        "app.py": BAD,
        "generated/client.py": BAD,
        "deploy/Dockerfile": DOCKERFILE,
        "scripts/serve.sh": SCRIPT,
        "README.md": README,
        "demo.ipynb": notebook_json(NOTEBOOK),
        "notes.txt": SCRIPT,  # no type the hooks ask for
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    git("init", "-q", ".", cwd=root)
    # CLAUDE.md, AGENTS.md, .cursorrules, written by the hook repository's code (this checkout may move on meanwhile).
    init = [sys.executable, "-m", "vllm_lint", "init"]
    subprocess.run(init, cwd=root, check=True, capture_output=True, env={**clean_env(), "PYTHONPATH": str(hook_repo[0])})
    git("add", "-A", cwd=root)
    git("commit", "-q", "-m", "project", cwd=root)
    return root


def pre_commit(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def hook_results(output: str) -> dict[str, tuple[str, str]]:
    """Each hook's status and output, from pre-commit's verbose report."""
    results: dict[str, tuple[str, str]] = {}
    status, lines = None, []
    hook = None
    for line in output.splitlines() + ["end....Passed"]:
        match = STATUS.match(line)
        if match:
            if hook is not None:
                results[hook] = (status, "\n".join(lines))
            status, lines, hook = match.group("status"), [], None
            continue
        if line.startswith("- hook id: "):
            hook = line.removeprefix("- hook id: ").strip()
        lines.append(line)
    return results


def test_hooks_under_pre_commit_try_repo(hook_repo, project, offline_env):
    repo, _ = hook_repo
    result = pre_commit("try-repo", str(repo), "--all-files", "--verbose", cwd=project, env={**offline_env, "PRE_COMMIT_HOME": str(project.parent / "cache")})
    assert "Installing environment" in result.stdout, result.stdout + result.stderr
    hooks = hook_results(result.stdout)
    assert set(hooks) == {"vllm-lint", "vllm-lint-fix", "vllm-lint-init-check"}, result.stdout + result.stderr
    assert result.returncode == 1

    status, output = hooks["vllm-lint"]
    assert status == "Failed"
    for expected in ("app.py:3:20: VLL301", "deploy/Dockerfile:2:", "scripts/serve.sh:2:", "README.md:4:", "demo.ipynb:cell 2:1:"):
        assert expected in output, output
    assert "generated/" not in output  # --force-exclude: the configured exclude holds for named files
    assert "notes.txt" not in output  # not a type the hook asks for

    status, output = hooks["vllm-lint-fix"]
    assert status == "Failed" and "files were modified by this hook" in output
    assert "Fixed 1 finding." in output
    assert (project / "app.py").read_text(encoding="utf-8") == BAD.replace("max_new_tokens", "max_tokens")
    assert (project / "generated" / "client.py").read_text(encoding="utf-8") == BAD

    status, output = hooks["vllm-lint-init-check"]
    assert status == "Passed", output
    assert "3 agent rule file(s) up to date" in output


def test_readme_pre_commit_example(hook_repo, project, offline_env):
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- example: pre-commit-config -->\n```yaml\n(.*?)```", readme, re.DOTALL)
    assert block, "README.md has no pre-commit example"
    config = yaml.safe_load(block.group(1))
    [entry] = config["repos"]
    assert entry["repo"] == "https://github.com/vllm-lint/vllm-lint"
    manifest = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert {hook["id"] for hook in entry["hooks"]} <= {hook["id"] for hook in manifest}
    # The same configuration, pointed at this checkout instead of GitHub.
    entry["repo"], entry["rev"] = str(hook_repo[0]), hook_repo[1]
    (project / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    git("add", ".pre-commit-config.yaml", cwd=project)
    env = {**offline_env, "PRE_COMMIT_HOME": str(project.parent / "cache")}

    first = pre_commit("run", "--all-files", "--verbose", cwd=project, env=env)
    hooks = hook_results(first.stdout)
    assert set(hooks) == {hook["id"] for hook in entry["hooks"]}, first.stdout + first.stderr
    assert hooks["vllm-lint-fix"][0] == "Failed" and "files were modified by this hook" in hooks["vllm-lint-fix"][1]
    assert hooks["vllm-lint-init-check"][0] == "Passed", first.stdout

    # A hand edit inside the managed block of CLAUDE.md: the next commit is refused.
    claude = project / "CLAUDE.md"
    text = claude.read_text(encoding="utf-8")
    begin = text.index("<!-- vllm-lint:begin")
    claude.write_text(text[: begin] + text[begin:].replace("\n", "\nhand-written line\n", 2), encoding="utf-8")
    second = pre_commit("run", "vllm-lint-init-check", "--all-files", "--verbose", cwd=project, env=env)
    assert "Installing environment" not in second.stdout  # the environment is reused
    status, output = hook_results(second.stdout)["vllm-lint-init-check"]
    assert second.returncode == 1 and status == "Failed"
    assert "CLAUDE.md" in output
