"""A GitHub Action's steps run here as the runner runs them: bash, each step's ``env`` from the inputs and the
earlier steps' outputs, ``$GITHUB_OUTPUT``, ``$GITHUB_PATH``, ``$GITHUB_ENV``, ``$RUNNER_TEMP``; then a later
step of the job runs ``python --version`` with the PATH and environment the runner would give it."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml


def load_action(text: str) -> dict:
    return yaml.safe_load(text)


_EXPRESSION = re.compile(r"\$\{\{\s*(inputs|steps\.[\w-]+\.outputs)\.([\w-]+)\s*\}\}")
# The published actions the action may use, and what they do to the job: nothing a later step sees.
KNOWN_ACTIONS = {"github/codeql-action/upload-sarif@v3"}
_CONDITION = re.compile(r"inputs\.([\w-]+) (==|!=) '([^']*)'")


@dataclass
class Run:
    ran: list[str]  # the names of the steps that ran (a `uses:` step: what it uses)
    exit_code: int
    stdout: str
    outputs: dict[str, str]
    python_after: str  # `python --version` in a later step of the job


def _inputs(action: dict, given: dict[str, str]) -> dict[str, str]:
    unknown = set(given) - set(action["inputs"])
    assert not unknown, f"not inputs of the action: {unknown}"
    return {name: given.get(name, str(spec.get("default", ""))) for name, spec in action["inputs"].items()}


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


def run_action_steps(
    action: dict, workspace: Path, bin_dir: Path, env: dict[str, str] | None = None, **given: str
) -> Run:
    """Run ``action``'s steps (action.yml, loaded) with the inputs ``given`` on the repository ``workspace``,
    with ``bin_dir`` first on PATH, as the runner runs them."""
    inputs = _inputs(action, given)
    runner = workspace.parent / "runner"  # the runner's files are outside the repository
    runner.mkdir(exist_ok=True)
    files = {name: runner / name.lower() for name in ("GITHUB_OUTPUT", "GITHUB_PATH", "GITHUB_ENV")}
    for file in files.values():
        file.write_text("")
    (runner / "temp").mkdir(exist_ok=True)
    base = dict(os.environ) if env is None else env  # the job's environment
    job_env = {**base, "PATH": f"{bin_dir}{os.pathsep}{base['PATH']}"}
    step_outputs: dict[str, dict[str, str]] = {}

    def value(match: re.Match) -> str:
        scope, name = match.groups()
        return inputs[name] if scope == "inputs" else step_outputs.get(scope.split(".")[1], {}).get(name, "")

    ran, stdout, status = [], "", 0
    for step in action["runs"]["steps"]:
        if not _holds(step.get("if"), inputs):
            continue
        if "uses" in step:
            assert step["uses"] in KNOWN_ACTIONS, (
                f"an action whose effect on the job this test does not know: {step['uses']}"
            )
            ran.append(step["uses"])
            continue
        assert step["shell"] == "bash"
        files["GITHUB_OUTPUT"].write_text("")
        step_env = {**job_env, "RUNNER_TEMP": str(runner / "temp"), **{name: str(path) for name, path in files.items()}}
        step_env.update({key: _EXPRESSION.sub(value, text) for key, text in step.get("env", {}).items()})
        folder = workspace / _EXPRESSION.sub(value, step.get("working-directory", "."))
        script = runner / "step.sh"
        script.write_text(step["run"])
        # As the runner runs a `shell: bash` step: https://docs.github.com/actions/reference/workflow-syntax
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=folder,
            env=step_env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        ran.append(step["name"])
        stdout += done.stdout
        status = done.returncode
        if "id" in step:
            step_outputs[step["id"]] = dict(
                line.split("=", 1) for line in files["GITHUB_OUTPUT"].read_text().splitlines() if line
            )
        if status != 0:
            break  # a failing step ends the job, as on the runner
    outputs = {name: _EXPRESSION.sub(value, spec["value"]) for name, spec in action["outputs"].items()}
    return Run(
        ran, status, stdout, {name: text for name, text in outputs.items() if text}, _later_python(job_env, files)
    )


def _later_python(job_env: dict[str, str], files: dict[str, Path]) -> str:
    """``python --version`` in a later step: the runner puts $GITHUB_PATH's folders first on its PATH and sets
    $GITHUB_ENV's variables (its simple NAME=value lines)."""
    env = dict(job_env)
    env.update(line.split("=", 1) for line in files["GITHUB_ENV"].read_text().splitlines() if "=" in line)
    added = [line for line in reversed(files["GITHUB_PATH"].read_text().splitlines()) if line]
    env["PATH"] = os.pathsep.join([*added, env["PATH"]])
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", "python --version"], env=env, capture_output=True, text=True
    )
    return (done.stdout + done.stderr).strip()
