"""The guard that refuses, before LibCST, files its parser would take seconds or a crash on."""

from __future__ import annotations

import time

import pytest

from vllm_lint.python.complexity import too_complex

from lintutil import run_cli


def _sum(terms: int) -> str:
    return "x = " + " + ".join(str(i) for i in range(terms)) + "\n"


@pytest.mark.parametrize(
    ("source", "line"),
    [
        pytest.param("import vllm\n" + _sum(4000), 2, id="4000-term sum"),
        pytest.param("import vllm\n" + _sum(20000), 2, id="20000-term sum"),
        pytest.param("x = (\n" + "\n".join("    + a" for _ in range(4000)) + "\n)\n", 2, id="a sum over 4000 lines"),
        pytest.param("x = a" + "[1]" * 2000 + "\n", 1, id="2000 chained subscripts"),
        pytest.param("x = f" + "(1)" * 3000 + "\n", 1, id="3000 chained calls"),
        pytest.param("x = a" + ".b" * 4000 + "\n", 1, id="4000 attribute reads"),
        pytest.param("y = 1\nx = " + "f(" * 300 + "1" + ")" * 300 + "\n", 2, id="300 nested calls"),
        pytest.param("import vllm\n" + _sum(1000), 2, id="1000-term sum: deeper than the module model follows"),
        pytest.param("x = " + "lambda: " * 10_000 + "1\n", 1, id="10000 nested lambdas"),
        pytest.param("x = " + "not " * 10_000 + "1\n", 1, id="10000 nots"),
        pytest.param("y = 1\nx = " + "1 if a else " * 3000 + "1\n", 2, id="3000 conditional expressions"),
    ],
)
def test_refused(source, line):
    refused = too_complex(source)
    assert refused is not None
    assert refused.line == line
    assert refused.message.startswith(("too complex to analyse", "syntax error: too many nested parentheses"))


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(_sum(800), id="800-term sum: LibCST takes well under a second"),
        pytest.param("x = " + "lambda: " * 300 + "1\n", id="300 nested lambdas"),
        pytest.param("x = [" + ", ".join("1" for _ in range(20000)) + "]\n", id="a 20000-item list is flat"),
        pytest.param("x = {" + ", ".join(f"'{i}': [{i}, ({i},)]" for i in range(5000)) + "}\n", id="a big table"),
        pytest.param("x = " + "(" * 150 + "1" + ")" * 150 + "\n", id="parentheses alone make no nodes"),
        pytest.param("".join(f"v{i} = a.b.c + d * e - f(g)[h]\n" for i in range(5000)), id="many ordinary lines"),
        pytest.param("x = (" + "1 +" * 5000 + "\n", id="a syntax error is LibCST's to report"),
    ],
)
def test_not_refused(source):
    assert too_complex(source) is None


def test_a_tree_with_a_20000_term_expression_is_linted_quickly(tmp_path):
    (tmp_path / "coefficients.py").write_text("from vllm import LLM\nllm = LLM(model='m')\n" + _sum(20000), encoding="utf-8")
    (tmp_path / "server.py").write_text("from vllm import SamplingParams\nparams = SamplingParams(max_new_tokens=8)\n", encoding="utf-8")
    started = time.monotonic()
    result = run_cli("check", "--isolated", "--no-cache", "--output-format", "concise", str(tmp_path))
    elapsed = time.monotonic() - started
    # The VLL000 below says the guard refused the expression before LibCST's parse; the limit only fails a run
    # that blows up.
    assert elapsed < 60, elapsed
    found = [line.split(" ")[:2] for line in result.stdout.splitlines() if ": VLL" in line]
    assert found == [
        [f"{tmp_path / 'coefficients.py'}:3:1:", "VLL000"],
        [f"{tmp_path / 'server.py'}:2:25:", "VLL301"],
    ], result.stdout
