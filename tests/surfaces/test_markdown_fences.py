"""Markdown fences as READMEs write them: inside list items and block quotes, terminal sessions with
prompts, blocks without a language, zsh and terminal fences, and a Dockerfile shown as an illustration.

tests/fixtures/markdown/README.md stands for the README of a serving repository; SGLang and llama.cpp
commands and a commented-out command in it must stay silent.
"""

from __future__ import annotations

import pytest

from lintutil import REPO, lint_file_paths, lint_text

README = REPO / "tests" / "fixtures" / "markdown" / "README.md"


def test_readme_fences():
    got = sorted((d.start.line, d.start.column, d.code) for d in lint_file_paths([README]))
    assert got == [
        (10, 66, "VLL202"),  # ```bash four spaces in, inside a numbered list item
        (16, 78, "VLL206"),  # ```shell-session in a nested list, user@host prompt, "> " continuation
        (23, 95, "VLL206"),  # ```console inside a block quote
        (29, 95, "VLL206"),  # unlabelled fence, "$ " prompt (the "# vllm serve" line is a comment)
        (34, 60, "VLL202"),  # unlabelled fence without prompts: the line that starts a launch
        (39, 62, "VLL202"),  # ```zsh with a "% " prompt
        (43, 84, "VLL206"),  # ```terminal of bare commands
        (51, 34, "VLL202"),  # the illustrative Dockerfile: only what it writes (no VLL203/VLL403)
    ]


@pytest.mark.parametrize(
    "fence, body",
    [
        ("```", "INFO 05-01 vllm serve started with --gpu-memory-utilization 0.99\n"),  # log output
        ("```", "command: vllm serve m --gpu-memory-utilization 0.99\n"),  # YAML, unlabelled
        ("```bash", "# vllm serve m --gpu-memory-utilization 0.99\n"),  # a comment
        ("```text", "vllm serve m --gpu-memory-utilization 0.99\n"),  # prose
    ],
)
def test_what_is_not_a_command_stays_silent(tmp_path, fence, body):
    assert lint_text(tmp_path, "doc.md", f"{fence}\n{body}```\n") == []


def test_bash_fence_with_prompts_reads_the_prompted_lines(tmp_path):
    text = "```bash\n$ vllm serve m --max-model-len 4096 --gpu-memory-utilization 0.99 --api-key k\nINFO: ready\n```\n"
    assert [(d.start.line, d.start.column, d.code) for d in lint_text(tmp_path, "doc.md", text)] == [(2, 62, "VLL202")]


def test_fix_in_a_block_quote_keeps_the_quote(tmp_path):
    from lintutil import run_cli

    path = tmp_path / "doc.md"
    path.write_text("> ```console\n> $ vllm serve m --max-model-len 4096 --api-key k --gpu-memory-utilization 0.99\n> ```\n")
    run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", "--select", "VLL202", str(path))
    assert path.read_text() == "> ```console\n> $ vllm serve m --max-model-len 4096 --api-key k --gpu-memory-utilization 0.90\n> ```\n"


def test_a_block_that_cannot_be_read_is_no_error_of_the_document(tmp_path):
    """Documentation elides: a YAML block that starts with "..." (llama-stack's configuration guide), a Python one
    cut mid-statement. Neither is a VLL000 of the document; a readable block beside them is still linted."""
    text = (
        "# Serving\n\n"
        "```yaml\n...\nproviders:\n  inference:\n  - provider_type: remote::vllm\n    config:\n"
        "      url: http://localhost:8000/v1\n```\n\n"
        "```python\nfrom vllm import LLM\nllm = LLM(model='m',\n```\n\n"
        "```bash\nvllm serve facebook/opt-125m --gpu-memory-utilization 0.99\n```\n"
    )
    found = sorted((d.start.line, d.code) for d in lint_text(tmp_path, "README.md", text))
    assert "VLL202" in {code for _, code in found}
    assert {line for line, _ in found} == {18} and "VLL000" not in {code for _, code in found}, found
