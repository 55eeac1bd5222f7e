"""The registry against the rule files: every YAML code has its checkers and pre-filter conditions, and says what
its fixes really are."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from vllm_lint import registry
from vllm_lint.diagnostics import Applicability
from vllm_lint.python.prefilter import conditions_of
from vllm_lint.rulebook import PARSE_ERROR_CODE, load_rules

from lintutil import lint_example

RULES = load_rules()
CODES = sorted(set(RULES) - {PARSE_ERROR_CODE})
# What ``fix.safety`` promises, as the set of applicabilities the rule's fixes have.
_SAFETY = {
    "none": set(),
    "safe": {Applicability.SAFE},
    "unsafe": {Applicability.UNSAFE},
    "mixed": {Applicability.SAFE, Applicability.UNSAFE},
}


def test_the_rule_files_and_the_checkers_agree():
    assert registry.consistency_problems() == []


def test_the_launch_code_set_is_the_launch_checkers_codes_and_the_project_rules_that_read_launches():
    # A project rule that reads the servers files start (VLL304) needs command-line files read as a launch rule does.
    assert registry.launch_codes() == {checker.code for checker in registry.checkers("launch")} | {"VLL304"}


@pytest.mark.parametrize("code", CODES)
def test_every_code_has_a_prefilter_condition(code):
    declared = registry.prefilter_table().get(code, ())
    assert declared, f"{code}: no family's PREFILTER declares it, so every Python file is parsed for it"
    names = [condition.name for condition in conditions_of(frozenset({code}))]
    assert names and "no pre-filter declared: parse every file" not in names


def test_the_prefilter_parses_every_file_for_an_undeclared_code():
    # The safe side of a missing declaration: slow, never silent.
    assert [c.name for c in conditions_of(frozenset({"VLL999"}))] == ["no pre-filter declared: parse every file"]


def test_the_fast_path_loads_only_the_declarations():
    code = (
        "import sys\n"
        "from vllm_lint import registry\n"
        "from vllm_lint.python.prefilter import conditions_of\n"
        "conditions_of(frozenset(registry.prefilter_table())); registry.launch_codes()\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('libcst', 'vllm_lint.launch.record')))))\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(tuple(registry.RULE_PACKAGES.values())))))\n"
    )
    out = subprocess.run([sys.executable, "-c", "import json\n" + code], capture_output=True, text=True, check=True).stdout
    heavy, loaded = (json.loads(line) for line in out.splitlines())
    assert heavy == []
    declarations = [registry.declaration_module(name) for kind in registry.RULE_PACKAGES for name in registry.family_modules(kind)]
    assert loaded == sorted([*registry.RULE_PACKAGES.values(), *declarations])


@pytest.mark.parametrize("code", [code for code in CODES if RULES[code].bad_examples])
def test_fix_safety_is_what_the_checker_emits(tmp_path, code):
    rule = RULES[code]
    emitted = set()
    for index, example in enumerate(rule.bad_examples):
        diagnostics = lint_example(tmp_path / str(index), example)
        emitted |= {d.fix.applicability for d in diagnostics if d.code == code and d.fix is not None}
    assert rule.fix_safety in _SAFETY, f"{code}: fix.safety {rule.fix_safety!r}"
    assert emitted == _SAFETY[rule.fix_safety], f"{code}: the YAML says {rule.fix_safety}, its bad examples' fixes are {emitted}"


def test_implementations_of_one_code():
    assert [c.where for c in registry.implementations("VLL303")] == [
        "vllm_lint.python.rules.api:nonexistent_vllm_api",
        "vllm_lint.launch.rules.api:nonexistent_module",
    ]
    assert registry.implementations("VLL999") == []


def test_a_finding_takes_its_code_from_the_checker_s_registration():
    from vllm_lint.launch.record import LaunchFinding

    def checker(launch, settings):
        yield LaunchFinding(message="m", anchor=None)
        yield LaunchFinding(message="n", anchor=None, code="VLL201")

    stamped = registry.Checker("VLL201", "launch", "engine", checker).run(None, None)
    assert [(f.code, f.message) for f in stamped] == [("VLL201", "m"), ("VLL201", "n")]
    wrong = registry.Checker("VLL202", "launch", "engine", checker).run(None, None)
    assert next(wrong).code == "VLL202"
    with pytest.raises(registry.RegistryError, match=r"test_registry:.*checker is registered for VLL202 and reported VLL201"):
        next(wrong)


def test_a_fix_without_a_title_of_its_own_takes_the_rule_s():
    from vllm_lint.launch.record import AddSetting, LaunchFinding

    def checker(launch, settings):
        yield LaunchFinding(message="m", anchor=None, fix=AddSetting("enable_prefix_caching", True))
        yield LaunchFinding(message="n", anchor=None, fix=AddSetting("enable_prefix_caching", True), fix_title="Mine")

    titles = [f.fix_title for f in registry.Checker("VLL204", "launch", "engine", checker).run(None, None)]
    assert titles == [RULES["VLL204"].fix_title, "Mine"] and titles[0] == "Enable prefix caching"
    untitled = registry.Checker("VLL203", "launch", "engine", checker)  # (its YAML has a title: the check is real)
    assert [f.fix_title for f in untitled.run(None, None)][0] == RULES["VLL203"].fix_title
