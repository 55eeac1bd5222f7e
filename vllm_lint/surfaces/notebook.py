"""Jupyter notebooks, the surface: the files it claims (``.ipynb``), and its reading and linting, which live in
``notebook_cells.py`` and are imported only when a run meets a notebook (every run's start pays for this
module, since every walk asks each surface what it claims)."""

from __future__ import annotations

from vllm_lint.diagnostics import Diagnostic
from vllm_lint.surfaces.file_names import suffix_of
from vllm_lint.surfaces.job import LintJob, Surface


def claims(name: str, head: bytes) -> bool:
    return suffix_of(name) == ".ipynb"


def may_match(job: LintJob) -> bool:
    from vllm_lint.surfaces.notebook_cells import may_match as cells_may_match

    return cells_may_match(job)


def lint(job: LintJob) -> list[Diagnostic]:
    from vllm_lint.surfaces.notebook_cells import lint as lint_cells

    return lint_cells(job)


NOTEBOOK = Surface(name="notebook", claims=claims, may_match=may_match, lint=lint, heavy_modules=("vllm_lint.surfaces.notebook_cells", "vllm_lint.python.checker"))
