"""Command-line surfaces: shell scripts, Dockerfiles, docker-compose, Kubernetes, Markdown.

Each extractor turns the file into launch records (``vllm_lint.cmdline.launches``);
the launch rules run once per record; findings become diagnostics with spans and
text fixes here. Heavy parsers (yaml) are imported only once a file mentions vLLM.
"""

from __future__ import annotations

import re
from functools import lru_cache

from vllm_lint.diagnostics import Diagnostic, Edit, Fix, Severity
from vllm_lint.registry import launch_codes
from vllm_lint.rulebook import PARSE_ERROR_CODE
from vllm_lint.surfaces.file_names import is_dockerfile_name, suffix_of
from vllm_lint.surfaces.job import LintJob, Surface, parse_error
from vllm_lint.surfaces.justfile import claims as claims_justfile
from vllm_lint.surfaces.justfile import clue as justfile_clue
from vllm_lint.surfaces.justfile import justfile_view
from vllm_lint.surfaces.makefile import claims as claims_makefile
from vllm_lint.surfaces.makefile import clue as makefile_clue
from vllm_lint.surfaces.makefile import makefile_view
from vllm_lint.surfaces.procfile import claims as claims_procfile
from vllm_lint.surfaces.procfile import clue as procfile_clue
from vllm_lint.surfaces.procfile import procfile_view
from vllm_lint.surfaces.slurm import batch_container, is_batch_script_name
from vllm_lint.surfaces.supervisord import claims as claims_supervisord
from vllm_lint.surfaces.supervisord import clue as supervisord_clue
from vllm_lint.surfaces.supervisord import supervisord_view
from vllm_lint.surfaces.systemd import claims as claims_unit
from vllm_lint.surfaces.systemd import clue as unit_clue
from vllm_lint.surfaces.systemd import unit_view
from vllm_lint.lazy_re import lazy_compile

_SHELL_SHEBANG = lazy_compile(rb"^#!\s*\S*(/|\s)(env\s+)?(ba|z|da|k)?sh\b")
# What makes a YAML file one whose launches the surface reads: a Kubernetes kind that runs pods, a compose
# file's services, a SkyPilot task's run script, a file of shell steps (whatever the file is called).
_YAML_LAUNCHER = (
    rb"^\s*kind:\s*[\"']?(Deployment|StatefulSet|Pod|Job|CronJob|DaemonSet|ReplicaSet|LeaderWorkerSet|InferenceService"
    rb"|ServingRuntime|ClusterServingRuntime|RayService|RayCluster|RayJob|Workflow|WorkflowTemplate"
    rb"|ClusterWorkflowTemplate|CronWorkflow)\b|^services:|^run:"
    # files whose steps run shell: CI pipelines (GitHub Actions workflows and composite actions, GitLab CI,
    # Buildkite), cloud-init, dstack, Taskfiles
    rb"|^jobs:|^steps:|^runs:|^[ \t]*(?:before_)?script:|^[ \t]*-?[ \t]*commands?:|^#cloud-config|^(?:runcmd|bootcmd|write_files):|^tasks:"
)
_YAML_TEMPLATE_SUFFIXES = tuple(f"{base}{suffix}" for base in (".yaml", ".yml") for suffix in (".tpl", ".j2", ".jinja", ".jinja2", ".gotmpl", ".tmpl", ".template"))
_PYTHON_FENCE = rb"^ {0,3}(?:```|~~~)[ \t]*\{?\.?py"
_COMPOSE_NAME = lazy_compile(r"^(docker-)?compose([.-].*)?\.ya?ml$")


def may_launch(job: LintJob) -> bool:
    # only the rules over the launch record read command lines (and VLL000 a file that cannot be read)
    return _names_vllm(job) and bool(job.enabled & launch_codes() or PARSE_ERROR_CODE in job.enabled)


def _names_vllm(job: LintJob) -> bool:
    """The file has the word vllm, or names a mirror of vLLM's image (the ``vllm-images`` setting)."""
    data = job.data.lower()
    return b"vllm" in data or any(mirror.lower().encode() in data for mirror in job.launch_settings.vllm_images)


def _claims_shell(name: str, head: bytes) -> bool:
    suffix = suffix_of(name)
    if suffix in (".sh", ".bash", ".zsh", ".ksh", ".dash") or is_batch_script_name(name):
        return True
    return suffix == "" and bool(_SHELL_SHEBANG.match(head)) and not is_dockerfile_name(name)


def _claims_compose(name: str, head: bytes) -> bool:
    return bool(_COMPOSE_NAME.match(name))


def _claims_kubernetes(name: str, head: bytes) -> bool:
    # any other YAML file (and YAML templates): what it holds is read from its content
    return (suffix_of(name) in (".yaml", ".yml") and not _COMPOSE_NAME.match(name)) or name.endswith(_YAML_TEMPLATE_SUFFIXES)


def _claims_markdown(name: str, head: bytes) -> bool:
    return suffix_of(name).lower() in (".md", ".markdown")


def decoded(job: LintJob):
    from vllm_lint.source import SourceError, decode_text

    try:
        return decode_text(job.data).text, None
    except SourceError as exc:
        return None, parse_error(job.display, exc.message, exc.line, exc.column)


def _lint_shell(job: LintJob) -> list[Diagnostic]:
    text, error = decoded(job)
    if error is not None:
        return [error]
    from vllm_lint.surfaces.command_lint import lint_text

    # a Slurm batch script declares its GPUs in #SBATCH lines
    container = batch_container(text) if "#SBATCH" in text else None
    return lint_text("shell", job.display, text, job, container=container, reader="slurm" if container is not None else None)


def _lint_with(kind: str):
    def lint(job: LintJob) -> list[Diagnostic]:
        text, error = decoded(job)
        if error is not None:
            return [error]
        if kind == "markdown":
            from vllm_lint.surfaces.markdown import lint_markdown

            return lint_markdown(job.display, text, job)
        from vllm_lint.surfaces.command_lint import lint_text

        return lint_text(kind, job.display, text, job)

    return lint


_EXEC_ENTRYPOINT = rb"(?i)^[ \t]*ENTRYPOINT[ \t]*\["


@lru_cache(maxsize=None)
def _compiled(pattern: bytes) -> re.Pattern[bytes]:
    """One of the line-anchored patterns above, compiled on first use: the byte pre-filters of YAML, Markdown
    and Dockerfiles use them, and every run imports this module (compiling them costs ~0.5 ms)."""
    return re.compile(pattern, re.MULTILINE)


def _dockerfile_may_match(job: LintJob) -> bool:
    # the script an exec-form ENTRYPOINT runs may launch vLLM with CMD's words, neither naming it
    return may_launch(job) or (bool(job.enabled & launch_codes()) and bool(_compiled(_EXEC_ENTRYPOINT).search(job.data)))


def _kubernetes_may_match(job: LintJob) -> bool:
    # Ray Serve LLM configures vLLM by its engine arguments without naming it
    mentions = may_launch(job) or (b"engine_kwargs" in job.data and bool(job.enabled & launch_codes()))
    # a Knative Service runs pods; any other Service runs nothing
    return mentions and (bool(_compiled(_YAML_LAUNCHER).search(job.data)) or b"serving.knative.dev" in job.data)


def _markdown_may_match(job: LintJob) -> bool:
    if may_launch(job):
        return True
    # a Python block can break a Python rule without naming vLLM (a transformers pipeline in a handler)
    if not _compiled(_PYTHON_FENCE).search(job.data):
        return False
    from vllm_lint.surfaces.python import may_match as python_may_match

    return python_may_match(job)


SHELL = Surface(name="shell", claims=_claims_shell, may_match=may_launch, lint=_lint_shell)
DOCKERFILE = Surface(name="dockerfile", claims=lambda name, head: is_dockerfile_name(name), may_match=_dockerfile_may_match, lint=_lint_with("dockerfile"))
COMPOSE = Surface(name="compose", claims=_claims_compose, may_match=may_launch, lint=_lint_with("compose"))
KUBERNETES = Surface(name="kubernetes", claims=_claims_kubernetes, may_match=_kubernetes_may_match, lint=_lint_with("kubernetes"))
MARKDOWN = Surface(name="markdown", claims=_claims_markdown, may_match=_markdown_may_match, lint=_lint_with("markdown"))



def _view_surface(name: str, claims, clue, shell_view) -> Surface:
    """A surface whose files hold shell text inside a language of their own (a unit's ``ExecStart=``, a
    Makefile's recipes): ``claims`` its files by name, ``clue`` on their bytes says whether they may run
    anything, ``shell_view`` builds the view of their shell text and the variables it starts with."""

    def may_match(job: LintJob) -> bool:
        return clue(job.data) and may_launch(job)

    def lint(job: LintJob) -> list[Diagnostic]:
        text, error = decoded(job)
        if error is not None:
            return [error]
        from vllm_lint.surfaces.command_lint import lint_view

        view, env = shell_view(text)
        return lint_view("shell", view, job, job.display, env=env, reader=name)

    return Surface(name=name, claims=claims, may_match=may_match, lint=lint)


SYSTEMD = _view_surface("systemd", claims_unit, unit_clue, unit_view)
MAKEFILE = _view_surface("makefile", claims_makefile, makefile_clue, makefile_view)
JUSTFILE = _view_surface("justfile", claims_justfile, justfile_clue, justfile_view)
PROCFILE = _view_surface("procfile", claims_procfile, procfile_clue, procfile_view)
SUPERVISORD = _view_surface("supervisord", claims_supervisord, supervisord_clue, supervisord_view)

COMMAND_SURFACES: list[Surface] = [DOCKERFILE, COMPOSE, KUBERNETES, MARKDOWN, SHELL, SYSTEMD, MAKEFILE, JUSTFILE, PROCFILE, SUPERVISORD]

__all__ = ["COMMAND_SURFACES", "is_dockerfile_name", "Diagnostic", "Edit", "Fix", "Severity"]
