"""The GitHub Action (``action.yml`` at the repository's root): its steps' scripts run here as the runner runs
them (bash, each step's ``env`` from the inputs and the earlier steps' outputs, ``$GITHUB_OUTPUT``,
``$GITHUB_PATH``, ``$GITHUB_ENV``, ``$RUNNER_TEMP``), on a sample repository; then a later step of the job runs
``python --version`` with the PATH and environment the runner would give it."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from action_runner import Run, load_action, run_action_steps
from vllm_lint import __version__
from vllm_lint.rulebook import load_rules

REPO = Path(__file__).resolve().parents[2]
ACTION = load_action((REPO / "action.yml").read_text(encoding="utf-8"))


def run_action(workspace: Path, bin_dir: Path, env: dict[str, str] | None = None, **given: str) -> Run:
    return run_action_steps(ACTION, workspace, bin_dir, env, **given)


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
    assert run.ran == ["Run vllm-lint", "Fail on findings"]
    assert run.exit_code == 1
    assert run.stdout == EXPECTED_ANNOTATION
    assert run.outputs == {"sarif-file": "vllm-lint.sarif", "exit-code": "1"}
    sarif = json.loads((sample / "vllm-lint.sarif").read_text())
    [result] = sarif["runs"][0]["results"]
    assert result["ruleId"] == "VLL101"
    location = result["locations"][0]["physicalLocation"]
    assert (location["artifactLocation"]["uri"], location["region"]["startLine"]) == ("app/server.py", 9)


def test_upload_sarif_runs_codeql_upload_before_the_step_fails(sample: Path, bin_dir: Path):
    run = run_action(sample, bin_dir, install="false", **{"sarif-file": "vllm-lint.sarif", "upload-sarif": "true"})
    assert run.ran == ["Run vllm-lint", "github/codeql-action/upload-sarif@v3", "Fail on findings"]
    assert run.exit_code == 1
    [upload] = [step for step in ACTION["runs"]["steps"] if step.get("uses") == "github/codeql-action/upload-sarif@v3"]
    assert upload["with"]["sarif_file"] == "${{ inputs.working-directory }}/${{ inputs.sarif-file }}"
    assert run_action(sample, bin_dir, install="false", **{"upload-sarif": "true"}).ran == ["Run vllm-lint", "Fail on findings"]


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
    assert (run.ran, run.exit_code) == (["Run vllm-lint"], 2)
    assert run.outputs == {"exit-code": "2"}


@pytest.mark.parametrize(("version", "requirement"), [
    ("latest", "vllm-lint"),
    ("0.1.0", "vllm-lint==0.1.0"),
    (".", "."),
    ("vllm-lint>=0.1,<0.3", "vllm-lint>=0.1,<0.3"),
])
def test_the_install_step_asks_pip_for_the_version(sample: Path, bin_dir: Path, tmp_path: Path, version: str, requirement: str):
    # No package index is reachable here: the `python` input makes a "virtual environment" whose python
    # records what the step asks pip for, and whose vllm-lint is this checkout's.
    asked = tmp_path / "asked"
    maker = tmp_path / "make-venv"
    shim = bin_dir / "vllm-lint"
    maker.write_text(
        '#!/bin/sh\nset -e\n[ "$1 $2" = "-m venv" ]\nmkdir -p "$3/bin"\n'
        f'printf \'#!/bin/sh\\nprintf "%%s\\\\n" "$@" > "{asked}"\\n\' > "$3/bin/python"\n'
        f'cp "{shim}" "$3/bin/vllm-lint"\nchmod +x "$3/bin/python"\n'
    )
    maker.chmod(0o755)
    run = run_action(sample, bin_dir, version=version, install="true", src="app/util.py", python=str(maker))
    assert run.ran == ["Install vllm-lint", "Run vllm-lint", "Fail on findings"]
    assert asked.read_text().splitlines() == ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", requirement]
    assert run.exit_code == 0


@pytest.mark.slow
def test_the_action_installs_into_its_own_environment_and_leaves_the_jobs_python(sample: Path, tmp_path: Path,
                                                                                offline_pip: dict[str, str]):
    """The install step as on a runner, offline: pip builds this checkout into the action's own virtual
    environment; a later step of the job still runs the job's own Python."""
    source = tmp_path / "vllm-lint-source"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "vllm_lint", "rules", "templates"):
        copy = shutil.copytree if (REPO / name).is_dir() else shutil.copy2
        copy(REPO / name, source / name, **({"ignore": shutil.ignore_patterns("__pycache__")} if (REPO / name).is_dir() else {}))
    jobs_python = tmp_path / "jobs-python"  # the job's `python`, as actions/setup-python or the image left it
    jobs_python.mkdir()
    (jobs_python / "python").write_text("#!/bin/sh\necho 'Python 3.9.99'\n")
    (jobs_python / "python").chmod(0o755)
    env = {**os.environ, **offline_pip, "PATH": f"{jobs_python}{os.pathsep}{os.environ['PATH']}"}
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    run = run_action(sample, empty, env=env, version=str(source), python=sys.executable)
    assert run.ran == ["Install vllm-lint", "Run vllm-lint", "Fail on findings"], run.stdout
    assert (run.exit_code, run.stdout) == (1, f"vllm-lint, version {__version__}\n{EXPECTED_ANNOTATION}")
    assert run.python_after == "Python 3.9.99"


def test_the_readme_workflow_uses_the_actions_inputs():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## GitHub Actions\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    steps = yaml.safe_load("steps:\n" + block)["steps"]
    [ours] = [step for step in steps if step.get("uses", "").startswith("vllm-lint/vllm-lint@")]
    assert set(ours["with"]) <= set(ACTION["inputs"])
    assert ours["uses"] == f"vllm-lint/vllm-lint@v{__version__}"
    assert ours["with"]["version"] == __version__
    assert set(re.findall(r"`([a-z-]+)`", section.split("Inputs:", 1)[1].split(";", 1)[0])) == set(ACTION["inputs"])
    assert set(re.findall(r"`([a-z-]+)`", section.split("outputs:", 1)[1])) == set(ACTION["outputs"])
