"""``json``: a list of objects shaped like ruff's JSON output."""

from __future__ import annotations

import json
from typing import TextIO

from vllm_lint.diagnostics import Diagnostic
from vllm_lint.output import RenderContext


def _location(position) -> dict:
    return {"row": position.line, "column": position.column}


def diagnostic_to_dict(diagnostic: Diagnostic) -> dict:
    from vllm_lint.rulebook import load_rules

    rule = load_rules().get(diagnostic.code)
    fix = None
    if diagnostic.fix is not None:
        fix = {
            "applicability": diagnostic.fix.applicability.value,
            "message": diagnostic.fix.message,
            "edits": [
                {"content": edit.content, "location": _location(edit.start), "end_location": _location(edit.end)}
                for edit in diagnostic.fix.edits
            ],
        }
    return {
        "code": diagnostic.code,
        "name": rule.name if rule else None,
        "severity": diagnostic.severity.value,
        "message": diagnostic.message,
        "filename": diagnostic.path,
        "location": _location(diagnostic.start),
        "end_location": _location(diagnostic.end),
        "noqa_row": diagnostic.start.line,
        "fix": fix,
        "url": rule.url if rule else None,
    }


def render_json(diagnostics: list[Diagnostic], out: TextIO, ctx: RenderContext) -> None:
    json.dump([diagnostic_to_dict(d) for d in diagnostics], out, indent=2)
    out.write("\n")
