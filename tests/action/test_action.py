"""The GitHub Action (``action.yml`` at the repository's root): its steps' scripts run here as the runner runs
them (bash, each step's ``env`` from the inputs, ``$GITHUB_OUTPUT``), on a sample repository."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from vllm_lint.rulebook import load_rules

REPO = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
_EXPRESSION = re.compile(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}")
_CONDITION = re.compile(r"inputs\.([\w-]+) (==|!=) '([^']*)'")


@dataclass
class Run:
    ran: list[str]  # the names of the steps that ran (a `uses:` step: what it uses)
    exit_code: int
    stdout: str
    outputs: dict[str, str]


def _inputs(given: dict[str, str]) -> dict[str, str]:
    unknown = set(given) - set(ACTION["inputs"])
    assert not unknown, f"not inputs of the action: {unknown}"
    return {name: given.get(name, str(spec.get("default", ""))) for name, spec in ACTION["inputs"].items()}


def _holds(condition: str | None, inputs: dict[str, str]) -> bool:
    """The ``if:`` of a step, of the form the action uses (comparisons of inputs joined by ``&&``)."""
    if condition is None:
        return True
    parts = condition.split("&&")
    results = []
    for part in parts:
        match = _CONDITION.fullmatch(part.strip())
        assert match, f"an if: this test cannot evaluate: {condition!r}"
        name, operator, value = match.groups()
        results.append((inputs[name] == value) == (operator == "=="))
    return all(results)


def run_action(workspace: Path, bin_dir: Path, **given: str) -> Run:
    inputs = _inputs(given)
    outputs_file = workspace.parent / "github_output"  # the runner's files are outside the repository
    outputs_file.write_text("")
    ran, stdout, status = [], "", 0
    for step in ACTION["runs"]["steps"]:
        if not _holds(step.get("if"), inputs):
            continue
        if "uses" in step:
            ran.append(step["uses"])  # a published action (setup-python): the runner's business, not run here
            continue
        assert step["shell"] == "bash"
        env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "GITHUB_OUTPUT": str(outputs_file)}
        env.update({key: _EXPRESSION.sub(lambda m: inputs[m.group(1)], value) for key, value in step.get("env", {}).items()})
        folder = workspace / _EXPRESSION.sub(lambda m: inputs[m.group(1)], step.get("working-directory", "."))
        script = workspace.parent / "step.sh"
        script.write_text(step["run"])
        # As the runner runs a `shell: bash` step: https://docs.github.com/actions/reference/workflow-syntax
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=folder, env=env, capture_output=True, text=True, timeout=120)
        ran.append(step["name"])
        stdout += done.stdout
        status = done.returncode
        if status != 0:
            break  # a failing step ends the job, as on the runner
    outputs = dict(line.split("=", 1) for line in outputs_file.read_text().splitlines() if line)
    return Run(ran, status, stdout, outputs)


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    """``vllm-lint`` on PATH: this checkout, run by the test's Python."""
    folder = tmp_path / "bin"
    folder.mkdir()
    shim = folder / "vllm-lint"
    shim.write_text(f'#!/bin/sh\nPYTHONPATH="{REPO}" exec "{sys.executable}" -m vllm_lint "$@"\n')
    shim.chmod(0o755)
    return folder


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """A repository with a blocking server (VLL101 on line 9) and a clean module."""
    repo = tmp_path / "repo"
    (repo / "app").mkdir(parents=True)
    (repo / "app" / "server.py").write_text(load_rules()["VLL101"].bad_examples[0].clean_code)
    (repo / "app" / "util.py").write_text("def double(x):\n    return 2 * x\n")
    return repo


EXPECTED_ANNOTATION = (
    "::error file=app/server.py,line=9,col=14,endLine=9,endColumn=46,title=VLL101::transformers pipeline called "
    "inside a request handler (chat): it serialises requests, one GPU pass each: no batching across concurrent "
    "requests; serve with vLLM's AsyncLLMEngine instead\n"
)


def test_findings_annotate_the_pull_request_fail_the_step_and_go_to_sarif(sample: Path, bin_dir: Path):
    run = run_action(sample, bin_dir, install="false", **{"sarif-file": "vllm-lint.sarif"})
    assert run.ran == ["Run vllm-lint"]
    assert run.exit_code == 1
    assert run.stdout == EXPECTED_ANNOTATION
    assert run.outputs == {"sarif-file": "vllm-lint.sarif", "exit-code": "1"}
    sarif = json.loads((sample / "vllm-lint.sarif").read_text())
    [result] = sarif["runs"][0]["results"]
    assert result["ruleId"] == "VLL101"
    location = result["locations"][0]["physicalLocation"]
    assert (location["artifactLocation"]["uri"], location["region"]["startLine"]) == ("app/server.py", 9)


def test_a_clean_repository_passes(sample: Path, bin_dir: Path):
    run = run_action(sample, bin_dir, install="false", args="--ignore VLL101 --output-format full")
    assert (run.exit_code, run.stdout, run.outputs) == (0, "", {"exit-code": "0"})


def test_paths_and_working_directory(sample: Path, bin_dir: Path):
    run = run_action(sample, bin_dir, install="false", src="util.py", **{"working-directory": "app"})
    assert (run.exit_code, run.stdout) == (0, "")
    run = run_action(sample, bin_dir, install="false", src="util.py server.py", **{"working-directory": "app"})
    assert run.exit_code == 1
    assert run.stdout == EXPECTED_ANNOTATION.replace("app/server.py", "server.py")


def test_a_broken_configuration_is_an_error_not_a_pass(sample: Path, bin_dir: Path):
    (sample / "vllm-lint.toml").write_text('select = ["VLL9"]\n')
    run = run_action(sample, bin_dir, install="false", **{"sarif-file": "out.sarif"})
    assert run.exit_code == 2
    assert run.outputs == {"exit-code": "2"}


@pytest.mark.parametrize(("version", "requirement"), [
    ("latest", "vllm-lint"),
    ("0.1.0", "vllm-lint==0.1.0"),
    (".", "."),
    ("vllm-lint>=0.1,<0.3", "vllm-lint>=0.1,<0.3"),
])
def test_the_install_step_asks_pip_for_the_version(sample: Path, bin_dir: Path, tmp_path: Path, version: str, requirement: str):
    # No package index is reachable here: a `python` first on PATH records what the step asks pip for.
    asked = tmp_path / "asked"
    python = bin_dir / "python"
    python.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{asked}"\n')
    python.chmod(0o755)
    run = run_action(sample, bin_dir, version=version, install="true", src="app/util.py")
    assert run.ran == ["actions/setup-python@v5", "Install vllm-lint", "Run vllm-lint"]
    assert asked.read_text().splitlines() == ["-m", "pip", "install", "--disable-pip-version-check", requirement]
    assert run.exit_code == 0


def test_the_readme_workflow_uses_the_actions_inputs():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## GitHub Actions\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    steps = yaml.safe_load("steps:\n" + block)["steps"]
    [ours] = [step for step in steps if step.get("uses", "").startswith("vllm-lint/vllm-lint@")]
    assert set(ours["with"]) <= set(ACTION["inputs"])
    [upload] = [step for step in steps if step.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
    assert upload["with"]["sarif_file"] == ours["with"]["sarif-file"]
    assert set(re.findall(r"`([a-z-]+)`", section.split("Inputs:", 1)[1].split(";", 1)[0])) == set(ACTION["inputs"])
    assert set(re.findall(r"`([a-z-]+)`", section.split("outputs:", 1)[1])) == set(ACTION["outputs"])
