"""with_keyword: a new keyword argument follows the call's layout, and each argument keeps its own
end-of-line comment (a comment is never copied onto another argument's line)."""

from __future__ import annotations

import libcst as cst
import pytest

from vllm_lint.python.edits import with_keyword

CASES = {
    "no trailing comma, comments on the last lines": (
        "LLM(\n    model=X,\n    gpu_memory_utilization=0.98,  # all of it\n    max_model_len=4096  # fits\n)",
        "LLM(\n    model=X,\n    gpu_memory_utilization=0.98,  # all of it\n    max_model_len=4096,  # fits\n    n=1\n)",
    ),
    "trailing comma, comments on the last lines": (
        "LLM(\n    model=X,  # a\n    b=2,  # b\n)",
        "LLM(\n    model=X,  # a\n    b=2,  # b\n    n=1,\n)",
    ),
    "trailing comma, no comments": ("LLM(\n    model=X,\n    b=2,\n)", "LLM(\n    model=X,\n    b=2,\n    n=1,\n)"),
    "no trailing comma, no comments": ("LLM(\n    model=X,\n    b=2\n)", "LLM(\n    model=X,\n    b=2,\n    n=1\n)"),
    "trailing comma, comment lines before the closing parenthesis": (
        "LLM(\n    model=X,\n    b=2,  # b\n    # c=3,  # off for now\n)",
        "LLM(\n    model=X,\n    b=2,  # b\n    n=1,\n    # c=3,  # off for now\n)",
    ),
    "no trailing comma, comment lines before the closing parenthesis": (
        "LLM(\n    model=X,\n    b=2  # b\n    # c=3\n)",
        "LLM(\n    model=X,\n    b=2,  # b\n    n=1\n    # c=3\n)",
    ),
    "one line": ("LLM(model=X, b=2)", "LLM(model=X, b=2, n=1)"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_with_keyword_keeps_layout_and_comments(case):
    source, expected = CASES[case]
    call = cst.parse_expression(source)
    assert isinstance(call, cst.Call)
    assert cst.Module([]).code_for_node(with_keyword(call, "n", "1")) == expected
