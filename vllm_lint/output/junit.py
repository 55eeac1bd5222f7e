"""``junit``: JUnit XML, shaped as ruff writes it, for CI systems that show test reports.

One ``<testsuite>`` per file and one failed ``<testcase>`` per finding; a clean run
is one passing test case, so the report is never empty.
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import TextIO

from vllm_lint.diagnostics import Diagnostic
from vllm_lint.output import RenderContext

NAME = "vllm-lint"
PACKAGE = "org.vllm-lint"
# Characters XML 1.0 cannot carry at all, even escaped.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(value: object) -> str:
    text = _NOT_XML.sub("\ufffd", str(value))
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _attribute(value: object) -> str:
    # Newlines and tabs as references, or a parser would normalise them to spaces.
    return _text(value).replace('"', "&quot;").replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#9;")


def _attributes(pairs: dict[str, object]) -> str:
    return " ".join(f'{key}="{_attribute(value)}"' for key, value in pairs.items())


def _classname(path: str) -> str:
    """The file without its extension, as ruff names the class: ``src/app.py`` -> ``src/app``."""
    pure = PurePath(path)
    return str(pure.with_name(pure.stem)) if pure.name else path


def _testcase(diagnostic: Diagnostic) -> list[str]:
    line, column = diagnostic.start.line, diagnostic.start.column
    case = _attributes({"name": f"{PACKAGE}.{diagnostic.code}", "classname": _classname(diagnostic.path), "line": line, "column": column})
    where = f"line {line}, col {column}"
    if diagnostic.cell is not None:
        where = f"cell {diagnostic.cell.cell}, line {diagnostic.cell.start.line}, col {diagnostic.cell.start.column}"
    failure = f"{where}, {diagnostic.message}"
    return [
        f"        <testcase {case}>",
        f'            <failure {_attributes({"message": diagnostic.message})}>{_text(failure)}</failure>',
        "        </testcase>",
    ]


def render_junit(diagnostics: list[Diagnostic], out: TextIO, ctx: RenderContext) -> None:
    lines = ['<?xml version="1.0" encoding="UTF-8"?>']
    if not diagnostics:
        lines += [
            f"<testsuites {_attributes({'name': NAME, 'tests': 1, 'failures': 0, 'errors': 0})}>",
            f"    <testsuite {_attributes({'name': NAME, 'tests': 1, 'disabled': 0, 'errors': 0, 'failures': 0, 'package': PACKAGE})}>",
            f"        <testcase {_attributes({'name': 'No errors found', 'classname': NAME})}/>",
            "    </testsuite>",
        ]
    else:
        count = len(diagnostics)
        lines.append(f"<testsuites {_attributes({'name': NAME, 'tests': count, 'failures': count, 'errors': 0})}>")
        by_file: dict[str, list[Diagnostic]] = {}
        for diagnostic in diagnostics:
            by_file.setdefault(diagnostic.path, []).append(diagnostic)
        for path, found in by_file.items():
            suite = {"name": path, "tests": len(found), "disabled": 0, "errors": 0, "failures": len(found), "package": PACKAGE}
            lines.append(f"    <testsuite {_attributes(suite)}>")
            for diagnostic in found:
                lines += _testcase(diagnostic)
            lines.append("    </testsuite>")
    lines.append("</testsuites>")
    out.write("\n".join(lines) + "\n")
