"""Fixes inside an indented fenced block (a list item) keep the Markdown intact."""

from __future__ import annotations

from lintutil import run_cli

DOC = """\
# Serving

1. Write the handler:

   ```python
   from fastapi import FastAPI
   app = FastAPI()


   @app.get("/x")
   def x():
       return {"error": "nope"}, 503
   ```

2. Done.
"""


def test_inserted_lines_get_the_block_indentation(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text(DOC, encoding="utf-8")
    result = run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", str(doc))
    assert result.returncode == 0, result.stdout + result.stderr
    assert doc.read_text(encoding="utf-8") == DOC.replace(
        "   from fastapi import FastAPI\n", "   from fastapi import FastAPI\n   from fastapi.responses import JSONResponse\n"
    ).replace('return {"error": "nope"}, 503', 'return JSONResponse({"error": "nope"}, status_code=503)')


def test_an_edit_on_a_blank_line_of_an_indented_block_is_reported_without_a_fix(tmp_path):
    doc = tmp_path / "doc.md"
    text = DOC.replace("   from fastapi import FastAPI\n   app", "   from fastapi import FastAPI\n\n   app")
    doc.write_text(text, encoding="utf-8")
    result = run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", "--output-format", "concise", str(doc))
    assert result.returncode == 1
    assert "VLL502" in result.stdout
    assert doc.read_text(encoding="utf-8") == text  # nothing half-applied
