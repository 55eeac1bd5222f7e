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
    # A notebook's finding is located within its cell, with the cell's number, as ruff does; its fix's
    # edits stay in the file's coordinates (they replace the cell's source in the JSON).
    cell = diagnostic.cell
    start, end = (cell.start, cell.end) if cell is not None else (diagnostic.start, diagnostic.end)
    return {
        "cell": cell.cell if cell is not None else None,
        "code": diagnostic.code,
        "name": rule.name if rule else None,
        "severity": diagnostic.severity.value,
        "message": diagnostic.message,
        "filename": diagnostic.path,
        "location": _location(start),
        "end_location": _location(end),
        "noqa_row": start.line,
        "fix": fix,
        "url": rule.url if rule else None,
    }


def render_json(diagnostics: list[Diagnostic], out: TextIO, ctx: RenderContext) -> None:
    json.dump([diagnostic_to_dict(d) for d in diagnostics], out, indent=2)
    out.write("\n")
