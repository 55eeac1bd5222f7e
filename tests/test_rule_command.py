"""``vllm-lint rule`` says where each rule is implemented, in every form it has."""

from __future__ import annotations

import json

from vllm_lint import registry
from vllm_lint.rulebook import load_rules

from lintutil import run_cli


def test_a_rule_page_names_its_checker():
    result = run_cli("rule", "VLL203")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:7] == [
        "# missing-max-model-len (VLL203)",
        "",
        "Severity: warning",
        "",
        "Implemented in: `vllm_lint.launch.rules.engine:missing_max_model_len`",
        "",
        "## What it does",
    ]


def test_json_names_every_checker_of_a_code():
    page = json.loads(run_cli("rule", "VLL303", "--output-format", "json").stdout)
    assert page["implementation"] == [
        "vllm_lint.python.rules.api:nonexistent_vllm_api",
        "vllm_lint.launch.rules.api:nonexistent_module",
    ]
    assert json.loads(run_cli("rule", "VLL000", "--output-format", "json").stdout)["implementation"] == [
        "vllm_lint.surfaces.job:parse_error"
    ]


def test_the_listings_name_the_registered_checkers():
    expected = {code: [c.where for c in registry.implementations(code)] for code in load_rules()}
    expected["VLL000"] = ["vllm_lint.surfaces.job:parse_error"]
    listed = json.loads(run_cli("rule", "--all", "--output-format", "json").stdout)
    assert {page["code"]: page["implementation"] for page in listed} == expected
    lines = run_cli("rule", "--all").stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(load_rules())
    for line in lines:
        assert line.endswith(f"[{', '.join(expected[line.split()[0]])}]"), line
