"""A notebook document (LSP 3.17: a notebook and a text document per cell) as the ``.ipynb`` the notebook
surface reads, and its findings back on the cells they are in."""

from __future__ import annotations

import json
from dataclasses import dataclass

from vllm_lint.diagnostics import Diagnostic


@dataclass(frozen=True)
class Cell:
    uri: str  # the cell's text document
    code: bool  # a code cell (else Markdown)
    text: str


def as_ipynb(cells: list[Cell], metadata: dict | None = None) -> str:
    """The notebook's JSON (nbformat 4), with each cell's text as its ``source``."""
    document = {
        "cells": [
            {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": cell.text}
            if cell.code
            else {"cell_type": "markdown", "metadata": {}, "source": cell.text}
            for cell in cells
        ],
        "metadata": metadata if isinstance(metadata, dict) else {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


def by_cell(diagnostics: list[Diagnostic], cells: list[Cell]) -> dict[str, list[Diagnostic]]:
    """Each cell's findings, placed within the cell's own text (every cell gets a list, empty ones too, so
    that a cell whose finding went away is cleared). A finding not in a cell (the notebook cannot be read)
    goes on the first cell."""
    placed: dict[str, list[Diagnostic]] = {cell.uri: [] for cell in cells}
    for diagnostic in diagnostics:
        where = diagnostic.cell
        if where is not None and 1 <= where.cell <= len(cells):
            cell = cells[where.cell - 1]
            placed[cell.uri].append(_within_cell(diagnostic))
        elif cells:
            placed[cells[0].uri].append(diagnostic)
    return placed


def _within_cell(diagnostic: Diagnostic) -> Diagnostic:
    from dataclasses import replace

    where = diagnostic.cell
    assert where is not None  # called for the diagnostics of a cell only
    # The fix's edits are in the JSON's coordinates: a cell's text cannot take them.
    return replace(diagnostic, start=where.start, end=where.end, fix=None, noqa_lines=(), cell=None)


def cell_texts(ipynb: str) -> list[str]:
    """Each cell's source in a notebook's JSON (``source`` as a string or a list of lines)."""
    cells = json.loads(ipynb)["cells"]
    return ["".join(cell["source"]) if isinstance(cell.get("source"), list) else cell.get("source", "") for cell in cells]


def changed_cells(cells: list[Cell], fixed_ipynb: str) -> dict[str, str]:
    """The new text of each cell that a fix of the notebook's JSON changed, by cell uri (a fix may reach a
    cell other than its finding's: an import added in the first code cell)."""
    fixed = cell_texts(fixed_ipynb)
    if len(fixed) != len(cells):
        return {}  # a fix never adds or removes cells; refuse rather than guess
    return {cell.uri: new for cell, new in zip(cells, fixed) if new != cell.text}


def apply_fix(text: str, edits) -> str:
    """``text`` with a fix's edits (engine positions) applied."""
    from vllm_lint.text import TextIndex

    index = TextIndex(text)
    for start, end, content in sorted(((index.offset(e.start), index.offset(e.end), e.content) for e in edits), reverse=True):
        text = text[:start] + content + text[end:]
    return text
