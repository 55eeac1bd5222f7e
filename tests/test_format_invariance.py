"""Findings do not depend on formatting: each rule example and seed, re-formatted without changing its meaning
(tests/reformat.py: lists split one item per line or joined, quotes swapped, comments and blank lines added,
shell words continued over lines), gives the same findings, at the same places mapped through the edit.

The pre-filter is where a layout assumption would hide a finding (a pattern that wants ``"vllm", "serve"`` on
one line); the last test shows the property catches one.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vllm_lint.python.prefilter as prefilter
from vllm_lint.rulebook import PARSE_ERROR_CODE, load_rules

from fixture_files import SEEDS
from lintutil import lint_file_paths, write_example
from reformat import Reformatted, python, shell

_REFORMATTERS = {".py": python, ".sh": shell}


class Case:
    """One file to re-format: a rule example (with its other files and target) or a seed."""

    def __init__(self, name: str, text: str, suffix: str, write: Callable[[Path, str], tuple[Path, list[Path]]], target: str | None = None) -> None:
        self.name, self.text, self.suffix, self.write, self.target = name, text, suffix, write, target

    def __repr__(self) -> str:
        return self.name

    def findings(self, text: str) -> set[tuple[str, int, int]]:
        with tempfile.TemporaryDirectory() as folder:
            path, others = self.write(Path(folder), text)
            found = lint_file_paths([path, *others], target_vllm_version=self.target)
        return {(d.code, d.start.line, d.start.column) for d in found if d.path == str(path) and d.code != PARSE_ERROR_CODE}


def _example_case(code: str, index: int, example) -> Case:
    def write(folder: Path, text: str) -> tuple[Path, list[Path]]:
        return write_example(folder, example, text), [folder / name for name, _ in example.files]

    return Case(f"{code}-{index}", example.clean_code, Path(example.default_filename).suffix, write, example.target)


def _seed_case(path: Path, name: str | None = None) -> Case:
    def write(folder: Path, text: str) -> tuple[Path, list[Path]]:
        target = folder / path.name
        target.write_text(text, encoding="utf-8")
        return target, []

    return Case(name or f"seed/{path.name}", path.read_text(encoding="utf-8", errors="replace"), path.suffix, write)


# A restored real corpus (benchmarks/realworld/README.md): its Python and shell files join the cases, a fixed
# sample of them, each linted alone (as its own project) before and after the re-formatting.
REALWORLD_VARIABLE = "VLLM_LINT_REALWORLD"
REALWORLD_SAMPLE = 150


def _corpus_cases() -> list[Case]:
    folder = os.environ.get(REALWORLD_VARIABLE)
    if not folder:
        return []
    files = sorted(p for p in Path(folder).rglob("*") if p.suffix in _REFORMATTERS and p.is_file())
    sample = sorted(files, key=lambda p: hashlib.sha256(str(p.relative_to(folder)).encode()).hexdigest())
    return [_seed_case(path, name=str(path.relative_to(folder))) for path in sample[:REALWORLD_SAMPLE]]


def _reformattable(case: Case) -> bool:
    if case.suffix != ".py":
        return True
    try:
        compile(case.text, case.name, "exec")  # a syntax error (VLL000's examples) has no meaning to keep
    except SyntaxError:
        return False
    return True


CASES = [
    case
    for case in [
        *(_example_case(rule.code, index, example)
          for rule in load_rules().values()
          for index, example in enumerate(rule.examples)
          if Path(example.default_filename).suffix in _REFORMATTERS),
        *(_seed_case(path) for path in sorted(SEEDS.iterdir()) if path.suffix in _REFORMATTERS),
        *_corpus_cases(),
    ]
    if _reformattable(case)
]

_original: dict[str, set[tuple[str, int, int]]] = {}


def _assert_same_findings(case: Case, edited: Reformatted) -> None:
    if case.name not in _original:
        _original[case.name] = case.findings(case.text)
    expected = {(code, *edited.position(line, column)) for code, line, column in _original[case.name]}
    assert case.findings(edited.text) == expected, f"{case.name} re-formatted:\n{edited.text}"


@settings(max_examples=60 if not os.environ.get(REALWORLD_VARIABLE) else 400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_reformatting_keeps_the_findings(data):
    case = data.draw(st.sampled_from(CASES))
    if data.draw(st.booleans(), label="every list one item per line"):
        # every comma in brackets followed by a line break: the layout of Modal's own vLLM example
        chosen: Callable[[str], bool] = lambda kind: kind == "split"  # noqa: E731
    else:
        chosen = lambda kind: data.draw(st.booleans(), label=kind)  # noqa: E731
    _assert_same_findings(case, _REFORMATTERS[case.suffix](case.text, chosen))


def test_the_property_catches_a_layout_assumption(monkeypatch):
    # The command-line test as it once was, wanting the items of ["vllm", "serve", ...] on one line.
    one_line = re.compile(rb"[\"']vllm(?:[\"'][ \t]*,[ \t]*[\"']|[ \t]+)serve\b")
    monkeypatch.setattr(prefilter, "_serve_command", lambda raw: one_line.search(raw) is not None)
    case = Case("launch", 'import subprocess\nsubprocess.Popen(["vllm", "serve", "m"])\n', ".py",
                lambda folder, text: (_write(folder / "launch.py", text), []))
    assert case.findings(case.text)
    with pytest.raises(AssertionError, match="re-formatted"):
        _assert_same_findings(case, python(case.text, lambda kind: kind == "split"))


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_a_command_list_one_item_per_line_is_linted():
    # How Modal's own vLLM example writes its command: once hidden by the pre-filter.
    case = Case("one-per-line", 'import subprocess\n\nsubprocess.Popen([\n    "vllm",\n    "serve",\n    "Qwen/Qwen3-8B",\n])\n', ".py",
                lambda folder, text: (_write(folder / "serve.py", text), []))
    assert {code for code, _, _ in case.findings(case.text)} >= {"VLL201", "VLL203"}
