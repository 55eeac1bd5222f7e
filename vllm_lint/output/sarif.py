"""``sarif``: a SARIF 2.1.0 log, for code scanning (GitHub, Azure DevOps) and SARIF viewers.

Every rule of the catalogue is described from its YAML, with the same document
``vllm-lint rule CODE`` prints as its help, so a viewer can explain a finding
without the tool. Fixes travel as ``fixes[].artifactChanges``, with their
applicability, so a viewer can offer them. Paths under the working directory are
relative to ``%SRCROOT%`` (what code scanning maps to the repository); others are
absolute ``file:`` URIs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TextIO
from urllib.parse import quote

from vllm_lint import __version__
from vllm_lint.diagnostics import Diagnostic, Edit, Fix, Position, Severity
from vllm_lint.output import RenderContext
from vllm_lint.rulebook import Rule

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = "https://github.com/vllm-lint/vllm-lint"
SRCROOT = "%SRCROOT%"
LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def rule_descriptor(rule: Rule) -> dict:
    from vllm_lint.rule_docs import show_rule

    document = show_rule(rule.code) or rule.summary
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.why},
        # The document is Markdown that reads as plain text too.
        "help": {"text": document, "markdown": document},
        "helpUri": rule.url,
        "defaultConfiguration": {"level": LEVEL[rule.severity]},
        "properties": {"tags": ["vllm", *rule.surfaces], "fixSafety": rule.fix_safety},
    }


def artifact_location(path: str, root: Path) -> dict:
    absolute = Path(os.path.abspath(path))
    try:
        relative = absolute.relative_to(root)
    except ValueError:
        return {"uri": absolute.as_uri()}
    return {"uri": quote(relative.as_posix()), "uriBaseId": SRCROOT}


def region(start: Position, end: Position) -> dict:
    # SARIF columns count from 1 and endColumn is exclusive, as ours (columnKind says we count code points).
    if (end.line, end.column) < (start.line, start.column):
        end = start
    return {"startLine": start.line, "startColumn": start.column, "endLine": end.line, "endColumn": end.column}


def _fix(fix: Fix, artifact: dict) -> dict:
    return {
        "description": {"text": fix.message},
        "artifactChanges": [{"artifactLocation": artifact, "replacements": [_replacement(edit) for edit in fix.edits]}],
        "properties": {"applicability": fix.applicability.value},
    }


def _replacement(edit: Edit) -> dict:
    return {"deletedRegion": region(edit.start, edit.end), "insertedContent": {"text": edit.content}}


def result(diagnostic: Diagnostic, rule_index: dict[str, int], root: Path) -> dict:
    artifact = artifact_location(diagnostic.path, root)
    entry: dict = {"ruleId": diagnostic.code}
    if diagnostic.code in rule_index:
        entry["ruleIndex"] = rule_index[diagnostic.code]
    entry["level"] = LEVEL[diagnostic.severity]
    entry["message"] = {"text": diagnostic.message}
    entry["locations"] = [{"physicalLocation": {"artifactLocation": artifact, "region": region(diagnostic.start, diagnostic.end)}}]
    if diagnostic.cell is not None:
        # SARIF has no notebook cells: the region is where the cell's text sits in the .ipynb file (what a
        # viewer of the raw file shows); the cell and the span within it travel as properties.
        cell = diagnostic.cell
        entry["properties"] = {"cell": cell.cell, "cellRegion": region(cell.start, cell.end)}
    if diagnostic.related:
        entry["relatedLocations"] = [
            {
                "id": number,
                "physicalLocation": {"artifactLocation": artifact_location(place.path, root), "region": region(place.start, place.end)},
                "message": {"text": place.message},
            }
            for number, place in enumerate(diagnostic.related)
        ]
    if diagnostic.fix is not None:
        entry["fixes"] = [_fix(diagnostic.fix, artifact)]
    return entry


def sarif_log(diagnostics: list[Diagnostic], root: Path) -> dict:
    from vllm_lint.rulebook import load_rules

    rules = list(load_rules().values())
    rule_index = {rule.code: index for index, rule in enumerate(rules)}
    run = {
        "tool": {
            "driver": {
                "name": "vllm-lint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": [rule_descriptor(rule) for rule in rules],
            }
        },
        "originalUriBaseIds": {SRCROOT: {"uri": root.as_uri().rstrip("/") + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": [result(diagnostic, rule_index, root) for diagnostic in diagnostics],
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def render_sarif(diagnostics: list[Diagnostic], out: TextIO, ctx: RenderContext) -> None:
    json.dump(sarif_log(diagnostics, Path.cwd()), out, indent=2)
    out.write("\n")
