"""What a user switches off: ``# vllm-lint: skip-file``, ``# noqa`` (``<!-- noqa -->`` in Markdown) and
``per-file-ignores``; applied here once for all surfaces, after a file is linted.

VLL000 (a file that cannot be read or parsed) is never suppressed: it says the file was not checked at all.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from vllm_lint.config import Settings, expand_selectors
from vllm_lint.diagnostics import Diagnostic
from vllm_lint.engine.discovery import resolved_path

# Not typing.TYPE_CHECKING: importing typing costs ~3 ms of every run's start (mypy reads the name alike).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

SKIP_FILE = re.compile(rb"#\s*vllm-lint\s*:\s*skip-file\b")
_NOQA_SOURCES = {
    "NOQA": r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?",
    "MARKDOWN_NOQA": r"<!--\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?\s*-->",
}


@lru_cache(maxsize=None)
def _noqa_pattern(name: str) -> re.Pattern[str]:
    # Compiled when a file has a finding to weigh: compiling them costs ~1 ms of every run's start otherwise.
    return re.compile(_NOQA_SOURCES[name], re.IGNORECASE)


def __getattr__(name: str) -> re.Pattern[str]:
    """``NOQA`` and ``MARKDOWN_NOQA``, the comments that switch a finding off (compiled on first use)."""
    if name in _NOQA_SOURCES:
        return _noqa_pattern(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def skips_file(data: bytes) -> bool:
    """Whether the file asks not to be linted at all (``# vllm-lint: skip-file`` anywhere in it)."""
    return SKIP_FILE.search(data) is not None


def unsuppressed(diagnostics: list[Diagnostic], data: bytes, path: Path, settings: Settings,
                 codes: list[str]) -> tuple[list[Diagnostic], int]:
    """The diagnostics of a file (``data``, at ``path``) that no ``# noqa`` or ``per-file-ignores`` entry
    switches off, in order, and how many were switched off."""
    lines = data.decode("utf-8", errors="replace").split("\n")
    ignored = _ignored_for_file(path, settings, codes)
    kept = []
    suppressed = 0
    for diagnostic in diagnostics:
        if diagnostic.code != "VLL000" and (diagnostic.code in ignored or _suppressed(diagnostic, lines)):
            suppressed += 1
            continue
        kept.append(diagnostic)
    return kept, suppressed


@lru_cache(maxsize=8)
def _compiled_per_file_ignores(per_file_ignores: tuple, codes: tuple[str, ...]) -> list[tuple[GitIgnoreSpec, frozenset[str]]]:
    import pathspec

    return [
        (pathspec.GitIgnoreSpec.from_lines([pattern]), frozenset(expand_selectors(selectors, list(codes), "per-file-ignores")))
        for pattern, selectors in per_file_ignores
    ]


def _relative(path: Path, root: Path) -> str:
    try:
        return resolved_path(path).relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


@lru_cache(maxsize=32)
def _spec(pattern: str) -> GitIgnoreSpec:
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines([pattern])


def matches_glob(pattern: str, path: Path, root: Path) -> bool:
    """Whether a per-file glob of the configuration (relative to ``root``) takes ``path``."""
    return _spec(pattern).match_file(_relative(path, root))


def _ignored_for_file(path: Path, settings: Settings, codes: list[str]) -> frozenset[str]:
    """The codes ``per-file-ignores`` switches off for ``path``."""
    if not settings.per_file_ignores:
        return frozenset()
    relative = _relative(path, settings.root)
    ignored: set[str] = set()
    for spec, selected in _compiled_per_file_ignores(settings.per_file_ignores, tuple(codes)):
        if spec.match_file(relative):
            ignored |= selected
    return frozenset(ignored)


def noqa_codes(line: str) -> set[str] | None:
    """Codes a line's ``# noqa`` suppresses; an empty set means all; None: no noqa."""
    match = _noqa_pattern("NOQA").search(line) or _noqa_pattern("MARKDOWN_NOQA").search(line)
    if match is None:
        return None
    codes = match.group("codes")
    return {c.upper() for c in re.split(r"[\s,]+", codes) if c} if codes else set()


def _suppressed(diagnostic: Diagnostic, lines: list[str]) -> bool:
    for number in {diagnostic.start.line, *diagnostic.noqa_lines}:
        if 1 <= number <= len(lines):
            codes = noqa_codes(lines[number - 1])
            if codes is not None and (not codes or diagnostic.code in codes):
                return True
    return False

