"""Helm charts read as Helm renders them: each launch a template holds, with the words read (the value a
word has once its template actions are rendered from values.yaml, None where not known) and the template
line of the launch. A hand-written chart covers the functions real charts use; real charts of the restored
corpus (benchmarks/realworld) are checked against their expected launches in
tests/fixtures/helm_launches.json (the launches only: the charts are not copied here)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lintutil import REPO
from vllm_lint.launch.settings import LaunchSettings
from vllm_lint.surfaces import LintJob
from vllm_lint.surfaces.command_lint import extract
from vllm_lint.text import TextIndex

EXPECTED_REAL = REPO / "tests" / "fixtures" / "helm_launches.json"


def launches(path: Path) -> list[dict]:
    """What the reader takes each launch in the template at ``path`` to be."""
    text = path.read_text(encoding="utf-8")
    job = LintJob(path, str(path), text.encode(), frozenset(), LaunchSettings())
    extractor = extract("kubernetes", text, job.api(), job=job)
    index = TextIndex(text)
    read = []
    for found in extractor.found:
        launch = found.launch
        read.append({
            "line": index.position(launch.anchor.start).line,
            "kind": launch.kind if launch.entrypoint is None else launch.entrypoint,
            "words": [word.value for word in found.words],
            "settings": {s.spelled: None if s.value is None else s.value.value for s in launch.settings},
            # the settings written under an {{ if }} the launch itself is not under: one rendering has them
            "conditional": [s.spelled for s, c in zip(launch.settings, found.conditions or ()) if c - found.head_condition],
            "opaque": launch.opaque_reasons,
        })
    return read


FUNCTIONS_CHART = REPO / "tests" / "fixtures" / "deploy" / "chart-functions" / "templates" / "deployment.yaml"


def test_a_chart_using_helms_functions_is_read_as_helm_renders_it():
    assert launches(FUNCTIONS_CHART) == [
        # {{ if .Values.legacy }}: the api_server with --model (quote) ...
        {"line": 12, "kind": "api_server", "words": ["--model", "Qwen/Qwen2.5-7B-Instruct", "--max-model-len=4096"],
         "settings": {"--model": "Qwen/Qwen2.5-7B-Instruct", "--max-model-len": "4096"}, "conditional": [], "opaque": []},
        # ... {{ else }}: sh -c with join, include of a _helpers.tpl define (default), tpl, default, and a
        # range over a values list written inside the string
        {"line": 19, "kind": "serve", "words": [
            "Qwen/Qwen2.5-7B-Instruct", "--max-model-len", "4096", "--port", "8000", "--served-model-name",
            "qwen-chat", "--dtype", "auto", "--enable-prefix-caching", "--seed", "7"],
         "settings": {"MODEL": "Qwen/Qwen2.5-7B-Instruct", "--max-model-len": "4096", "--port": "8000",
                      "--served-model-name": "qwen-chat", "--dtype": "auto", "--enable-prefix-caching": True, "--seed": "7"},
         "conditional": [], "opaque": []},
        # toYaml | nindent of a values list as the command, and a block range over another as args
        {"line": 33, "kind": "serve", "words": [
            "Qwen/Qwen2.5-7B-Instruct", "--max-num-seqs", "64", "--host=127.0.0.1", "--gpu-memory-utilization", "0.99"],
         "settings": {"MODEL": "Qwen/Qwen2.5-7B-Instruct", "--max-num-seqs": "64", "--host": "127.0.0.1",
                      "--gpu-memory-utilization": "0.99"}, "conditional": [], "opaque": []},
    ]


def _corpus() -> Path | None:
    folder = os.environ.get("VLLM_LINT_REALWORLD")
    return Path(folder) if folder and Path(folder).is_dir() else None


def _real_cases() -> list[dict]:
    return json.loads(EXPECTED_REAL.read_text(encoding="utf-8"))["charts"]


@pytest.mark.parametrize("case", _real_cases(), ids=lambda case: f"{case['repository']}:{case['path']}")
def test_real_charts_render_to_their_expected_launches(case):
    corpus = _corpus()
    if corpus is None:
        pytest.skip("VLLM_LINT_REALWORLD is not set to a restored corpus (benchmarks/realworld/README.md)")
    path = corpus / case["repository"].replace("/", "+") / case["path"]
    if not path.is_file():
        pytest.skip(f"{path} is not in the restored corpus")
    assert launches(path) == case["launches"]
