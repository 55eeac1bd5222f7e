"""The byte pre-filter hides no finding: on every rule's own YAML examples, the seeds and examples/, each finding
is reported with every rule enabled and with its rule alone enabled, as when every file is parsed.

A rule alone is what ``--select CODE`` runs: then only that rule's own conditions let the file through, and a
condition that misses a shape of the rule shows only there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import vllm_lint.python.prefilter
from vllm_lint.config import Settings
from vllm_lint.engine.prefilter_check import compare_files
from vllm_lint.rulebook import load_rules
from vllm_lint.surfaces import all_surfaces

from fixture_files import REPO, SEEDS

SURFACES = all_surfaces()


def _surface(path: Path):
    return next(s for s in SURFACES if s.claims(path.name, path.read_bytes()[:256]))


def _assert_nothing_hidden(path: Path, monkeypatch) -> None:
    # Named from its own folder, as a user there lints it (under tests/, a Python file is a test file).
    monkeypatch.chdir(path.parent)
    path = Path(path.name)
    settings = Settings(root=Path.cwd().resolve(), preview=True)  # the rules in preview as well
    comparison = compare_files([(path, _surface(path))], settings)
    assert comparison.parsed_forced == 1
    assert not comparison.hidden, f"hidden: {comparison.hidden}"


EXAMPLES = [
    pytest.param(rule, index, id=f"{rule.code}-{example.kind}-{index}")
    for rule in load_rules().values()
    for index, example in enumerate(rule.examples)
]


@pytest.mark.parametrize(("rule", "index"), EXAMPLES)
def test_rule_examples(tmp_path, monkeypatch, rule, index):
    example = rule.examples[index]
    for name, text in example.files:  # the other modules of the example's project
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    path = tmp_path / example.default_filename
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(example.code, encoding="utf-8")
    _assert_nothing_hidden(path, monkeypatch)


FILES = sorted([*SEEDS.iterdir(), *(SEEDS.parent / "markdown").iterdir(), *(REPO / "examples").iterdir()])


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_seeds_and_examples(monkeypatch, path):
    _assert_nothing_hidden(path, monkeypatch)


def test_the_comparison_sees_a_hidden_finding(tmp_path, monkeypatch):
    # The check itself must be able to fail: with a pre-filter that lets nothing through, a finding is hidden.
    path = tmp_path / "server.py"
    path.write_text("from vllm import LLM\nllm = LLM(model='m')\n", encoding="utf-8")
    monkeypatch.setattr(vllm_lint.python.prefilter, "_tests", lambda enabled: ())
    with pytest.raises(AssertionError, match="hidden"):
        _assert_nothing_hidden(path, monkeypatch)


def test_the_switch_turns_the_pre_filter_off(tmp_path):
    # A syntax error in a file no rule could match is not reported (the pre-filter skips it) unless the
    # pre-filter is off, as the real-corpus runner and prefilter_check.compare turn it off.
    import os

    from lintutil import run_cli

    (tmp_path / "broken.py").write_text("def f(:\n    pass\n", encoding="utf-8")
    command = ("check", "--no-cache", "--isolated", "--output-format", "concise", str(tmp_path / "broken.py"))
    assert run_cli(*command).returncode == 0
    off = run_cli(*command, env={**os.environ, "VLLM_LINT_NO_PREFILTER": "1"})
    assert off.returncode == 1 and "VLL000" in off.stdout


def test_a_block_that_does_not_parse_hands_back_no_facts_of_the_document(tmp_path, monkeypatch):
    # The Python block stops at its syntax error; the server the shell block starts is the document's one fact, not
    # taken again at the Python block's lines (once a fact only the run without the pre-filter reported).
    path = tmp_path / "README.md"
    path.write_text(
        "# Serving\n\n```bash\nvllm serve Qwen/Qwen3-8B --port 8000\n```\n\nThen:\n\n"
        "```python\ndef enrich(self, chunk, ...):\n    pass\n```\n",
        encoding="utf-8",
    )
    _assert_nothing_hidden(path, monkeypatch)
    from vllm_lint.config import enabled_codes
    from vllm_lint.engine.prefilter_check import prefilter_off
    from vllm_lint.engine.runner import RunOptions, lint_file
    from vllm_lint.rulebook import all_codes

    codes = all_codes()
    options = RunOptions(Settings(), enabled_codes(Settings(), codes, ()), codes)
    with prefilter_off():
        result = lint_file(path, _surface(path), options)
    assert [server.line for server in result.facts.servers] == [4]
