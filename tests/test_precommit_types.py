"""The pre-commit hooks' file filter (``.pre-commit-hooks.yaml``: ``types_or`` and ``exclude``), applied by
pre-commit's own classifier: it passes every kind of file vllm-lint reads, except the names pre-commit's
``identify`` gives no tag (listed here and in the manifest's comment), and no file vllm-lint does not read."""

from __future__ import annotations

import os
from pathlib import Path

import yaml
from pre_commit.commands.run import Classifier, filter_by_include_exclude

from lintutil import REPO
from vllm_lint.engine.discovery import claim_named
from vllm_lint.surfaces import all_surfaces

READ = {
    "app.py": "python",
    "stubs.pyi": "python",
    "demo.ipynb": "notebook",
    "serve.sh": "shell",
    "run.bash": "shell",
    "run.zsh": "shell",
    "bin/serve": "shell",  # no suffix: its shebang says shell
    "Dockerfile": "dockerfile",
    "Dockerfile.gpu": "dockerfile",
    "Containerfile": "dockerfile",
    "compose.yaml": "compose",
    "docker-compose.yml": "compose",
    "k8s/deploy.yaml": "kubernetes",
    "chart/templates/deployment.yaml": "kubernetes",
    "sky/task.yaml": "kubernetes",
    "deploy.yaml.j2": "kubernetes",
    "deploy.yml.jinja2": "kubernetes",
    "values.yaml.gotmpl": "kubernetes",
    "README.md": "markdown",
    "notes.markdown": "markdown",
    "Makefile": "makefile",
    "build.mk": "makefile",
}
# Read by `vllm-lint check .`, but `identify` gives them no tag a hook can ask for.
UNTAGGED = {
    "run.ksh": "shell",
    "run.dash": "shell",
    "serve.dockerfile": "dockerfile",
    "deploy.yaml.tpl": "kubernetes",
    "deploy.yaml.tmpl": "kubernetes",
    "deploy.yaml.template": "kubernetes",
}
NOT_READ = ["nginx.conf.j2", "notes.txt", "data.json", "logo.png"]


def _passed(root: Path, hook: dict) -> set[str]:
    names = sorted(str(path.relative_to(root)) for path in root.rglob("*") if path.is_file())
    cwd = os.getcwd()
    os.chdir(root)  # pre-commit classifies the names git gives, relative to the repository's top
    try:
        included = filter_by_include_exclude(names, hook.get("files", ""), hook.get("exclude", "^$"))
        return set(
            Classifier(names).by_types(
                included, hook.get("types", ["file"]), hook.get("types_or", []), hook.get("exclude_types", [])
            )
        )
    finally:
        os.chdir(cwd)


def test_the_hooks_pass_every_kind_of_file_vllm_lint_reads(tmp_path):
    for name in [*READ, *UNTAGGED, *NOT_READ]:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/bash\nvllm serve m\n" if name == "bin/serve" else "x\n", encoding="utf-8")
    (tmp_path / "bin" / "serve").chmod(0o755)
    surfaces = all_surfaces()
    claimed = {
        name: claim_named(tmp_path / name, (tmp_path / name).read_bytes(), surfaces).name for name in [*READ, *UNTAGGED]
    }
    assert claimed == {**READ, **UNTAGGED}
    manifest = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    linting = [hook for hook in manifest if hook["entry"].startswith("vllm-lint check")]
    assert [hook["id"] for hook in linting] == ["vllm-lint", "vllm-lint-fix"]
    for hook in linting:
        assert _passed(tmp_path, hook) == set(READ), hook["id"]
