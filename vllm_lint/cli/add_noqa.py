"""``vllm-lint check --add-noqa``: a noqa comment for every finding, as ruff's ``--add-noqa``, so that a
project adopting vllm-lint fails CI on new findings only (the comments record today's)."""

from __future__ import annotations

import sys
from pathlib import Path

from vllm_lint import EXIT_CLEAN, EXIT_ERROR
from vllm_lint.config import ConfigError
from vllm_lint.engine.discovery import PathError, discover
from vllm_lint.engine.fixer import add_noqa_bytes, write_atomically
from vllm_lint.engine.runner import RunOptions, lint_file
from vllm_lint.source import SourceError, read_bytes
from vllm_lint.surfaces import all_surfaces

# Not typing.TYPE_CHECKING: importing typing costs ~3 ms of every run's start (mypy reads the name alike).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO


def run_add_noqa(paths: list[Path], options: RunOptions, quiet: bool, out: TextIO) -> int:
    """Add the comments; say how many, and which findings no comment could disable (exit 0 either way)."""
    try:
        files = list(discover(paths, options.settings, all_surfaces(), options.force_exclude))
    except (PathError, ConfigError) as exc:
        print(f"vllm-lint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    added = 0
    for path, surface in files:
        if surface is None or not lint_file(path, surface, options).diagnostics:
            continue
        try:
            outcome = add_noqa_bytes(path, read_bytes(path), surface, options)
        except SourceError:
            continue
        for diagnostic in outcome.remaining:
            print(
                f"{diagnostic.path}:{diagnostic.start.line}:{diagnostic.start.column}: {diagnostic.code} left as it is: "
                "no noqa comment disables it there",
                file=sys.stderr,
            )
        if not outcome.changed:
            continue
        warning = write_atomically(path, outcome.original, outcome.fixed)
        if warning:
            print(f"vllm-lint: warning: {warning}", file=sys.stderr)
            continue
        added += sum(outcome.applied.values())
    if not quiet:
        out.write(f"Added {added} noqa directive{'s' if added != 1 else ''}.\n")
    return EXIT_CLEAN
