"""CI pipelines: GitHub Actions workflows, GitLab CI files and Buildkite pipelines, whose steps run shell.

A launch in a CI step starts vLLM to test something: the rules that predict a failed start still apply, the
ones about serving in production (``Launch.testing``, ``Launch.ci_job``) do not. Each step's script is read with
the variables its pipeline, job and step set; ``${{ ... }}`` expressions are template actions (not known here).
A job that installs vLLM's CPU build runs its later launches on the CPU backend (``Launch.cpu_build``).
"""

from __future__ import annotations

from vllm_lint.cmdline.shell import Environment
from vllm_lint.launch.platform import installs_cpu_build
from vllm_lint.surfaces.yaml_nodes import mapping_get as get
from vllm_lint.surfaces.yaml_nodes import items, pairs, scalar, scripts

# GitLab's top-level keys that are not jobs
_GITLAB_GLOBALS = frozenset(
    {
        "stages",
        "variables",
        "include",
        "default",
        "workflow",
        "image",
        "services",
        "cache",
        "before_script",
        "after_script",
        "types",
        "pages",
    }
)
_NOT_SHELL = ("python", "pwsh", "powershell", "cmd")


def kind_of(document) -> str | None:
    """Which CI pipeline ``document`` is ("github-actions", "github-action" for a composite action's
    ``action.yml``, "gitlab-ci", "buildkite"), or None."""
    import yaml

    jobs = get(document, "jobs")
    if isinstance(jobs, yaml.MappingNode) and any(
        get(job, "steps") is not None or get(job, "runs-on") is not None for _, job in pairs(jobs)
    ):
        return "github-actions"
    runs = get(document, "runs")
    if scalar(get(runs, "using")) == "composite" and isinstance(get(runs, "steps"), yaml.SequenceNode):
        return "github-action"
    steps = get(document, "steps")
    if isinstance(steps, yaml.SequenceNode) and any(
        get(step, "command") is not None or get(step, "commands") is not None for step in items(steps)
    ):
        return "buildkite"
    if get(document, "kind") is None and any(
        scalar(key) not in _GITLAB_GLOBALS and get(job, "script") is not None for key, job in pairs(document)
    ):
        return "gitlab-ci"
    return None


def read(kind: str, document, words, budget) -> None:
    extractor = words.extractor
    before = len(extractor.found)
    if kind == "github-actions":
        _github(document, words, budget)
    elif kind == "github-action":
        _github_steps(get(get(document, "runs"), "steps"), {}, "", words, budget)
    elif kind == "gitlab-ci":
        _gitlab(document, words, budget)
    else:
        _buildkite(document, words, budget)
    for found in extractor.found[before:]:
        found.launch.testing = True
        found.launch.ci_job = True


def _with(env: dict, words, budget, node) -> dict:
    return {**env, **words.env(node, budget)} if node is not None else env


class _Job:
    """One job's steps read in order: the launches after a step that installs vLLM's CPU build run on it."""

    def __init__(self, words) -> None:
        self.words = words
        self.cpu = False

    def script(self, node, env: Environment) -> None:
        found = self.words.extractor.found
        before = len(found)
        self.cpu = self.cpu or installs_cpu_build(scalar(node) or "")
        self.words.script(node, env)
        for launch in found[before:]:
            launch.launch.cpu_build = launch.launch.cpu_build or self.cpu


def _github(document, words, budget) -> None:
    workflow = words.env(get(document, "env"), budget)
    for _, job in pairs(get(document, "jobs")):
        budget.spend()
        job_env = _with(workflow, words, budget, get(job, "env"))
        default_shell = scalar(get(get(get(job, "defaults"), "run"), "shell")) or ""
        _github_steps(get(job, "steps"), job_env, default_shell, words, budget)


def _github_steps(steps, env: dict, default_shell: str, words, budget) -> None:
    """A job's steps, or a composite action's (which run in the job of the workflow that uses it)."""
    job = _Job(words)
    for step in items(steps):
        budget.spend()
        run = get(step, "run")
        shell = scalar(get(step, "shell")) or default_shell
        if run is None or shell.startswith(_NOT_SHELL):
            continue
        job.script(run, Environment(_with(env, words, budget, get(step, "env"))))


def _gitlab(document, words, budget) -> None:
    pipeline = words.env(get(document, "variables"), budget)
    default = get(document, "default")
    before = get(document, "before_script") or get(default, "before_script")
    for key, job in pairs(document):
        budget.spend()
        if scalar(key) in _GITLAB_GLOBALS or (scalar(key) or "").startswith(".") and get(job, "script") is None:
            continue
        if get(job, "script") is None:
            continue
        env = Environment(_with(pipeline, words, budget, get(job, "variables")))
        steps = _Job(words)
        for line in [*scripts(get(job, "before_script") or before), *scripts(get(job, "script"))]:
            budget.spend()
            steps.script(line, env)


def _buildkite(document, words, budget) -> None:
    pipeline = words.env(get(document, "env"), budget)
    for step in items(get(document, "steps")):
        budget.spend()
        env = Environment(_with(pipeline, words, budget, get(step, "env")))
        steps = _Job(words)
        for line in scripts(get(step, "command") or get(step, "commands")):
            budget.spend()
            steps.script(line, env)
