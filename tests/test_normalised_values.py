"""Values checked as vLLM checks them: lowercased by its config where it lowercases them (quantization, dtype,
tokenizer_mode), as written where argparse's choices see them first (a command line's --dtype)."""

from __future__ import annotations

import pytest

from findings import code_lines
from lintutil import lint_text


@pytest.mark.parametrize(
    ("source", "reported"),
    [
        ('LLM(model="m", quantization="AWQ")', False),
        ('LLM(model="m", dtype="BFloat16", tokenizer_mode="Auto")', False),
        ('LLM(model="m", quantization="AWQQ")', True),
        ('LLM(model="m", dtype="bfloat")', True),
    ],
)
def test_engine_keywords_are_lowercased_first(tmp_path, source, reported):
    found = lint_text(tmp_path, "run.py", f"from vllm import LLM\nllm = {source}\n", select=("VLL206",))
    assert code_lines(found) == ([("VLL206", 2)] if reported else [])


@pytest.mark.parametrize(
    ("line", "target", "reported"),
    [
        ("vllm serve m --quantization AWQ", None, False),  # no argparse choices: vLLM lowercases it
        ("vllm serve m --quantization awq", "0.6.3", False),
        ("vllm serve m --quantization AWQ", "0.6.3", True),  # argparse choices then, compared as written
        ("vllm serve m --dtype BFloat16", None, True),
        ("vllm serve m --tokenizer-mode Auto", "0.8.5", True),
    ],
)
def test_command_line_values_meet_argparse_first(tmp_path, line, target, reported):
    found = lint_text(tmp_path, "run.sh", line + "\n", select=("VLL206",), target_vllm_version=target)
    assert code_lines(found) == ([("VLL206", 1)] if reported else [])
