"""``scripts/new_rule.py`` in a copy of the repository: the rule it starts is one the registry, its tests and
``vllm-lint rule`` see, with nothing else written by hand."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lintutil import REPO

_COPIED = ("vllm_lint", "rules", "examples", "scripts", "tests", "README.md", "pyproject.toml")


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    repo = tmp_path_factory.mktemp("new-rule") / "repo"
    for name in _COPIED:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, repo / name)
    (repo.parent / "shared").symlink_to(REPO.parent / "shared")  # what the tests read beside the repository
    return repo


def _run(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    # The copy's own package, not the installed one.
    env = {**os.environ, "PYTHONPATH": str(repo)}
    return subprocess.run([sys.executable, *args], cwd=repo, env=env, capture_output=True, text=True, check=check)


def _new_rule(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return _run(repo, str(repo / "scripts" / "new_rule.py"), *args, check=False)


@pytest.fixture(scope="module")
def added(copy) -> Path:
    for args in (
        ("VLL110", "repeated-request-id", "--family", "serving", "--needs", "request_id", "--needs", "generate"),
        ("VLL209", "max-num-seqs-too-high", "--launch", "--family", "engine"),
        ("VLL601", "streamlit-model-load", "--family", "dashboards", "--needs", "streamlit"),
    ):
        result = _new_rule(copy, *args)
        assert result.returncode == 0 and result.stderr == "", result.stdout + result.stderr
    return copy


def test_the_files_it_writes(added):
    changed = subprocess.run(
        ["diff", "-rq", "-x", "__pycache__", str(REPO), str(added)],
        capture_output=True, text=True,
    ).stdout
    lines = sorted(line.replace(str(added), "COPY").replace(str(REPO), "REPO") for line in changed.splitlines())
    relevant = [line for line in lines if not line.startswith("Only in REPO")]
    assert relevant == [
        "Files REPO/README.md and COPY/README.md differ",
        "Files REPO/vllm_lint/launch/rules/engine.py and COPY/vllm_lint/launch/rules/engine.py differ",
        "Files REPO/vllm_lint/launch/rules/engine_prefilter.py and COPY/vllm_lint/launch/rules/engine_prefilter.py differ",
        "Files REPO/vllm_lint/python/rules/serving.py and COPY/vllm_lint/python/rules/serving.py differ",
        "Files REPO/vllm_lint/python/rules/serving_prefilter.py and COPY/vllm_lint/python/rules/serving_prefilter.py differ",
        "Only in COPY/examples: vll110_repeated_request_id.py",
        "Only in COPY/examples: vll209_max_num_seqs_too_high.sh",
        "Only in COPY/examples: vll601_streamlit_model_load.py",
        "Only in COPY/rules: VLL110.yaml",
        "Only in COPY/rules: VLL209.yaml",
        "Only in COPY/rules: VLL601.yaml",
        "Only in COPY/vllm_lint/python/rules: dashboards.py",
        "Only in COPY/vllm_lint/python/rules: dashboards_prefilter.py",
    ]
    declarations = (added / "vllm_lint/python/rules/serving_prefilter.py").read_text(encoding="utf-8")
    assert declarations.endswith('    "VLL110": (contains(b"request_id", b"generate"),),\n}\n')


def test_the_registry_sees_the_new_rules(added):
    code = (
        "import json\n"
        "from vllm_lint import registry\n"
        "print(json.dumps([registry.consistency_problems(),"
        " {c: [k.where for k in registry.implementations(c)] for c in ('VLL110', 'VLL209', 'VLL601')},"
        " sorted(registry.launch_codes())]))\n"
    )
    problems, implementations, launch_codes = json.loads(_run(added, "-c", code).stdout)
    assert problems == []
    assert implementations == {
        "VLL110": ["vllm_lint.python.rules.serving:repeated_request_id"],
        "VLL209": ["vllm_lint.launch.rules.engine:max_num_seqs_too_high"],
        "VLL601": ["vllm_lint.python.rules.dashboards:streamlit_model_load"],
    }
    assert "VLL209" in launch_codes and "VLL110" not in launch_codes


def test_the_copy_s_own_tests_see_them(added):
    # The registry, generated-files and pre-filter tests pass with the new rules in; the example test fails on
    # each new bad example, because the skeleton checker reports nothing yet: that is where the work starts.
    result = _run(added, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_registry.py",
                  "tests/test_generated_docs.py::test_the_generated_files_are_current", "tests/test_prefilter_recall.py",
                  "-k", "VLL110 or VLL209 or VLL601 or agree or current or launch_code", check=False)
    assert result.returncode == 0, result.stdout[-3000:]
    examples = _run(added, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_rule_examples.py", "-k",
                    "VLL110 or VLL209 or VLL601", check=False)
    failed = sorted(line.split("::")[1].split(" ")[0] for line in examples.stdout.splitlines() if line.startswith("FAILED"))
    assert failed == ["test_example[VLL110-bad-0]", "test_example[VLL209-bad-0]", "test_example[VLL601-bad-0]"]


def test_vllm_lint_rule_names_the_new_checker(added):
    page = _run(added, "-m", "vllm_lint", "rule", "VLL601").stdout
    assert "Implemented in: `vllm_lint.python.rules.dashboards:streamlit_model_load`" in page.splitlines()


def test_what_it_refuses(copy):
    cases = {
        ("VLL101", "again", "--family", "serving", "--needs", "x"): f"{copy / 'rules' / 'VLL101.yaml'} exists",
        ("VLL700", "no-words", "--family", "serving"):
            "a Python rule needs --needs WORD: a word every file it can report contains",
        ("VLL701", "Bad_Name", "--family", "serving", "--needs", "x"): "Bad_Name: a name is lower-case words joined by hyphens",
        ("VLL702", "fine", "--family", "serving_prefilter", "--needs", "x"): "serving_prefilter: a family is a module name",
        ("VLL703", "sync-pipeline-in-handler", "--family", "serving", "--needs", "x"):
            f"{copy / 'vllm_lint/python/rules/serving.py'} already defines sync_pipeline_in_handler",
    }
    for args, message in cases.items():
        result = _new_rule(copy, *args)
        assert (result.returncode, result.stderr) == (2, f"new_rule: {message}\n"), args
    assert not (copy / "rules" / "VLL700.yaml").exists()
