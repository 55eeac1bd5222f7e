"""The pre-commit hooks' file filter (``.pre-commit-hooks.yaml``: ``types: [text]``), applied by pre-commit's own
classifier: it passes every kind of file vllm-lint reads, those pre-commit's ``identify`` gives no tag of their
own included, and the other text files, which the hook's command passes over without a word."""

from __future__ import annotations

import os
import subprocess
import sys
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
# Read by `vllm-lint check .`, but `identify` gives them no tag a hook could ask for.
UNTAGGED = {
    "run.ksh": "shell",
    "run.dash": "shell",
    "job.sbatch": "shell",
    "serve.dockerfile": "dockerfile",
    "deploy.yaml.tpl": "kubernetes",
    "deploy.yaml.tmpl": "kubernetes",
    "deploy.yaml.template": "kubernetes",
    "vllm.service": "systemd",
    "Procfile": "procfile",
    "justfile": "justfile",
    "supervisord.conf": "supervisord",
}
# Text files vllm-lint does not read: passed to the hook, which says nothing of them.
NOT_READ = {
    "nginx.conf.j2": "server { listen 80; }\n",
    "notes.txt": "To serve it: vllm serve facebook/opt-125m --gpu-memory-utilization 0.99, then pipeline( it\n",
    "data.json": '{"model": "facebook/opt-125m"}\n',
    "LICENSE": "MIT License\n\nCopyright (c) 2026 Someone\n",
}
BINARY = "logo.png"
CONTENT = {
    "bin/serve": "#!/bin/bash\nvllm serve m\n",
    "vllm.service": "[Service]\nExecStart=vllm serve m\n",
    "supervisord.conf": "[program:vllm]\ncommand=vllm serve m\n",
}


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
    for name in [*READ, *UNTAGGED]:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(CONTENT.get(name, "x\n"), encoding="utf-8")
    for name, text in NOT_READ.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / BINARY).write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\xff")
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
        assert _passed(tmp_path, hook) == {*READ, *UNTAGGED, *NOT_READ}, hook["id"]


def test_the_hook_says_nothing_of_the_text_files_vllm_lint_does_not_read(tmp_path):
    for name, text in NOT_READ.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    [hook] = [
        h
        for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
        if h["id"] == "vllm-lint"
    ]
    command = [sys.executable, "-m", "vllm_lint", *hook["entry"].split()[1:], "--isolated", *NOT_READ]
    done = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)}
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "All checks passed!\n", "")
