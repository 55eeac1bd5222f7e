"""A run that reads no fix edits (the text report, the agent hook) gets the same findings, fixes, titles and
safety as one that does, without the edits (the server rewrite's transform is not even run), and a result
kept without them never serves a run that reads them."""

from __future__ import annotations

import json
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from fixture_files import SEEDS
from lintutil import linted_here, run_cli, write_example
from test_server_rewrite import HF_REFUSED, LLM_REFUSED, REFUSED
from vllm_lint.config import Settings, enabled_codes
from vllm_lint.diagnostics import Diagnostic
from vllm_lint.engine.runner import RunOptions
from vllm_lint.engine.workers import Task, lint_tasks
from vllm_lint.python.rewrite import transform
from vllm_lint.rulebook import all_codes, load_rules
from vllm_lint.surfaces import all_surfaces

SERVER_CODES = ("VLL101", "VLL102", "VLL103")
REWRITE_TITLES = ("Rewrite the module into an AsyncLLMEngine server", "Rewrite the module onto AsyncLLMEngine")


def _lint(path: Path, fix_edits: bool) -> list[Diagnostic]:
    codes = all_codes()
    settings = Settings(root=path.parent.resolve(), preview=True)
    options = RunOptions(settings, enabled_codes(settings, codes), codes, fix_edits=fix_edits)
    [surface] = [s.name for s in all_surfaces() if s.claims(path.name, path.read_bytes()[:512])]
    with linted_here():  # as the rule examples' tests: in this process, not a child forked for each file
        [result] = lint_tasks([Task(0, path, surface)], options)
    return result.diagnostics


def _without_edits(diagnostic: Diagnostic) -> Diagnostic:
    return diagnostic if diagnostic.fix is None else replace(diagnostic, fix=replace(diagnostic.fix, edits=()))


def _is_rewrite(diagnostic: Diagnostic) -> bool:
    return diagnostic.fix is not None and diagnostic.fix.message.startswith(REWRITE_TITLES)


def _server_sources() -> list[tuple[str, str]]:
    """Servers the rewrite fixes or refuses: the server rules' Python examples, the seeds, the refusal cases."""
    sources = [
        (f"{rule.code}-{index}", example.clean_code)
        for rule in load_rules().values() if rule.code in SERVER_CODES
        for index, example in enumerate(rule.examples)
        if example.kind == "bad" and example.lang == "python" and not example.files
    ]
    sources += [(path.name, path.read_text(encoding="utf-8")) for path in sorted(SEEDS.glob("*.py"))]
    for table in (REFUSED, LLM_REFUSED, HF_REFUSED):
        sources += [(f"refused {case}", textwrap.dedent(source)) for case, (source, _) in sorted(table.items())]
    return sources


SOURCES = _server_sources()
# Each source's findings from a run without edits, by source, as the comparison below made them: the check that it
# covers both outcomes reads them instead of linting every source again (and lints those it does not find here).
_WITHOUT_EDITS: dict[str, list[Diagnostic]] = {}


@pytest.mark.parametrize("name, source", SOURCES, ids=[name for name, _ in SOURCES])
def test_a_run_without_edits_reports_what_a_run_with_them_does(tmp_path, name, source):
    path = tmp_path / "server.py"
    path.write_text(source, encoding="utf-8")
    with_edits, without = _lint(path, True), _lint(path, False)
    _WITHOUT_EDITS[source] = without
    assert [_without_edits(d) for d in with_edits] == without
    assert all(d.fix.edits for d in with_edits if d.fix is not None)


EMBEDDED = [
    pytest.param(example, id=f"{rule.code}-{index}")
    for rule in load_rules().values() if rule.code in SERVER_CODES
    for index, example in enumerate(rule.examples)
    if example.kind == "bad" and example.lang in ("ipynb", "markdown")
]


@pytest.mark.parametrize("example", EMBEDDED)
def test_a_notebook_or_markdown_server_gets_the_fixes_it_would_with_edits(tmp_path, example):
    """Their fixes' edits are always made: mapping them into the document (a rewrite spanning cells is not
    offered) decides whether a fix is offered."""
    path = write_example(tmp_path, example)
    assert _lint(path, False) == _lint(path, True)


def test_the_sources_include_offered_and_refused_rewrites(tmp_path):
    """The comparison above covers both outcomes: rewrites offered and refusals with their reason."""
    offered = refused = 0
    for index, (_, source) in enumerate(SOURCES):
        if source not in _WITHOUT_EDITS:
            path = tmp_path / f"s{index}" / "server.py"
            path.parent.mkdir()
            path.write_text(source, encoding="utf-8")
            _WITHOUT_EDITS[source] = _lint(path, False)
        found = [d for d in _WITHOUT_EDITS[source] if d.code in SERVER_CODES]
        offered += sum(map(_is_rewrite, found))
        refused += sum("; no automatic fix: " in d.message for d in found)
    assert offered >= 10 and refused >= 10, (offered, refused)


def test_the_transform_runs_only_when_edits_are_read(tmp_path, monkeypatch):
    [example] = [e for e in load_rules()["VLL103"].examples if e.kind == "bad" and e.lang == "python"][:1]
    path = write_example(tmp_path, example)

    def fail(self):
        raise AssertionError("the transform ran")

    monkeypatch.setattr(transform.ServerRewrite, "apply", fail)
    [finding] = [d for d in _lint(path, False) if d.code == "VLL103"]
    assert _is_rewrite(finding) and finding.fix.edits == ()
    # A run that reads edits makes them: the patched transform fails it (an internal error, VLL000).
    found = _lint(path, True)
    assert [d.code for d in found] == ["VLL000"] and "the transform ran" in found[0].message, found


SERVER = """\
from fastapi import FastAPI
from vllm import LLM, SamplingParams

app = FastAPI()
llm = LLM(model="gpt2")


@app.post("/generate")
def generate(prompt: str):
    return llm.generate([prompt], SamplingParams(max_tokens=16))[0].outputs[0].text
"""


def _rewrite_fix(result) -> dict:
    [finding] = [f for f in json.loads(result.stdout) if f["code"] == "VLL103"]
    return finding["fix"]


def test_a_result_cached_without_edits_never_serves_a_run_that_reads_them(tmp_path):
    (tmp_path / "server.py").write_text(SERVER, encoding="utf-8")
    expected = _rewrite_fix(run_cli("check", "--no-cache", "--output-format", "json", "server.py", cwd=tmp_path))
    assert expected["edits"] and "AsyncLLMEngine" in expected["edits"][0]["content"]
    text = run_cli("check", "server.py", cwd=tmp_path)  # text: no edits made, and the result cached
    assert "VLL103" in text.stdout and list((tmp_path / ".vllm_lint_cache").glob("v*.json"))
    assert _rewrite_fix(run_cli("check", "--output-format", "json", "server.py", cwd=tmp_path)) == expected
    assert "VLL103" in run_cli("check", "server.py", cwd=tmp_path).stdout  # the text run's result, from its cache
    # --fix prints text: it reads the text run's cached result (no edits), and makes the edits to fix the file.
    fixed = run_cli("check", "--fix", "--unsafe-fixes", "server.py", cwd=tmp_path)
    assert "Fixed" in fixed.stdout, fixed.stdout + fixed.stderr
    assert "AsyncLLMEngine.from_engine_args" in (tmp_path / "server.py").read_text(encoding="utf-8")
