"""A shell test that a variable is not empty (``if [ -n "$X" ]``, ``[ -n "$X" ] &&``) holds where it guards:
an empty default of X is not the value of the flags written there."""

from __future__ import annotations

import pytest

from findings import code_lines
from lintutil import lint_text

_SCRIPT = """QUANT="${{QUANT:-{default}}}"
ARGS=(--max-model-len 8192 --host 127.0.0.1 --gpu-memory-utilization 0.9)
{guard}
vllm serve m "${{ARGS[@]}}"
"""


@pytest.mark.parametrize(
    "guard",
    [
        'if [ -n "$QUANT" ]; then\n  ARGS+=(--quantization "$QUANT")\nfi',
        'if [[ ! -z ${QUANT} ]]; then ARGS+=(--quantization "$QUANT"); fi',
        'if [ "$QUANT" != "" ]; then ARGS+=(--quantization "$QUANT"); fi',
        'if test -n "$QUANT"; then ARGS+=(--quantization "$QUANT"); fi',
        '[ -n "$QUANT" ] && ARGS+=(--quantization "$QUANT")',
        'if [ -n "$QUANT" ] && [ -n "$HOST" ]; then ARGS+=(--quantization "$QUANT"); fi',
    ],
)
def test_an_empty_default_is_not_the_value_where_a_test_says_it_is_not_empty(tmp_path, guard):
    assert code_lines(lint_text(tmp_path, "run.sh", _SCRIPT.format(default="", guard=guard), select=("VLL206",))) == []


@pytest.mark.parametrize(
    ("default", "guard"),
    [
        # a non-empty default is still checked; a test of another variable, an else branch, an || guard say nothing
        ("awqq", 'if [ -n "$QUANT" ]; then ARGS+=(--quantization "$QUANT"); fi'),
        ("", 'if [ -n "$OTHER" ]; then ARGS+=(--quantization "$QUANT"); fi'),
        ("", 'if [ -n "$QUANT" ]; then :; else ARGS+=(--quantization "$QUANT"); fi'),
        ("", '[ -n "$QUANT" ] || ARGS+=(--quantization "$QUANT")'),
    ],
)
def test_other_tests_leave_the_value_as_it_is(tmp_path, default, guard):
    script = _SCRIPT.format(default=default, guard=guard)
    line = script.count("\n", 0, script.index("--quantization")) + 1
    assert code_lines(lint_text(tmp_path, "run.sh", script, select=("VLL206",))) == [("VLL206", line)]
