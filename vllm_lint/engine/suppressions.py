"""What a user switches off: ``# vllm-lint: skip-file``, ``# noqa`` (``<!-- noqa -->`` in Markdown) and
``per-file-ignores``; applied here once for all surfaces, after a file is linted.

VLL000 (a file that cannot be read or parsed) is never suppressed: it says the file was not checked at all.
The rules on the noqa comments themselves (``noqa_rule``: VLL001, a code no rule of this run could have used)
read ``FileNoqa``, the file's findings before the comments take theirs out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from vllm_lint.config import Settings, expand_selectors
from vllm_lint.diagnostics import Applicability, CellLocation, Diagnostic, Edit, Fix, Position, Severity
from vllm_lint.engine.discovery import resolved_path
from vllm_lint.lazy_re import lazy_compile

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
    # The literal first: the expression starts at every "#" of the file.
    return b"skip-file" in data and SKIP_FILE.search(data) is not None


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


def noqa_directive(line: str) -> re.Match[str] | None:
    """The comment of a line that suppresses its findings (the first ``# noqa``, else ``<!-- noqa -->``), with
    its ``codes`` group (None for a bare noqa, which silences every code)."""
    return _noqa_pattern("NOQA").search(line) or _noqa_pattern("MARKDOWN_NOQA").search(line)


def noqa_codes(line: str) -> set[str] | None:
    """Codes a line's ``# noqa`` suppresses; an empty set means all; None: no noqa."""
    match = noqa_directive(line)
    if match is None:
        return None
    codes = match.group("codes")
    return {c.upper() for c in re.split(r"[\s,]+", codes) if c} if codes else set()


def _suppressed(diagnostic: Diagnostic, lines: list[str]) -> bool:
    return next(suppressing_lines(diagnostic, lines), None) is not None



@dataclass(frozen=True, slots=True)
class FileNoqa:
    """What a noqa rule reads of one file: its text, its kind of file, and the findings of the rules that ran
    on it before any noqa comment took its own out (per-file-ignores applied)."""

    text: str
    surface: str
    findings: tuple[Diagnostic, ...]
    # The codes whose rules ran on the file: a comment naming any other code cannot be judged here.
    judged: frozenset[str]
    known: frozenset[str]  # every code of the rule files


@dataclass(frozen=True, slots=True)
class NoqaFinding:
    """A noqa rule's finding: where, and the edits of its fix (None: no fix)."""

    message: str
    start: Position
    end: Position
    fix: tuple[Edit, ...] | None = None
    fix_title: str | None = None
    code: str = ""


def suppressing_lines(diagnostic: Diagnostic, lines: list[str]) -> Iterator[int]:
    """The lines whose noqa comment switches ``diagnostic`` off (any one of them does), in order."""
    for number in sorted({diagnostic.start.line, *diagnostic.noqa_lines}):
        if 1 <= number <= len(lines):
            codes = noqa_codes(lines[number - 1])
            if codes is not None and (not codes or diagnostic.code in codes):
                yield number


# "vll" after a "noqa" on the same line, in the lowered bytes: the codes a noqa comment names follow it on its line.
_VLL_CODE_AFTER_NOQA = lazy_compile(rb"noqa[^\n]*vll")


def noqa_findings(diagnostics: list[Diagnostic], data: bytes, lowered: bytes, path: Path, shown: str, surface: str,
                  settings: Settings, codes: list[str], enabled: frozenset[str]) -> list[Diagnostic]:
    """The findings of the enabled noqa rules on a file whose rules reported ``diagnostics`` (none where the file
    was not read whole: a VLL000 says the other rules did not see it, or its text is not UTF-8); ``lowered``:
    ``data.lower()``."""
    from vllm_lint.registry import check_noqa, noqa_rule_codes, project_codes
    from vllm_lint.rulebook import PARSE_ERROR_CODE, all_codes, severity_of

    # The word in any case, as the directive's own pattern reads it: the lowered bytes and one find cost a fifth
    # of a case-blind regular expression's scan, which every file of a tree pays (0.06 s against 0.32 s of CPU
    # over vLLM's 2,642 modules).
    if b"noqa" not in lowered or not enabled & noqa_rule_codes():
        return []
    # The noqa rules judge only this linter's codes (VLL001, as ruff's RUF100): a file whose noqa comments name
    # none (vLLM's own ``# noqa: E501``) gives them nothing to judge, and is not decoded for them.
    if _VLL_CODE_AFTER_NOQA.search(lowered) is None:
        return []
    if any(diagnostic.code == PARSE_ERROR_CODE for diagnostic in diagnostics):
        return []
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        return []
    ignored = _ignored_for_file(path, settings, codes)
    judged = frozenset(enabled - ignored - project_codes() - noqa_rule_codes())
    file = FileNoqa(text, surface, tuple(d for d in diagnostics if d.code not in ignored), judged, frozenset(all_codes()))
    return [
        Diagnostic(finding.code, finding.message, shown, finding.start, finding.end, severity_of(finding.code, Severity.WARNING),
                   None if finding.fix is None else Fix(Applicability.SAFE, finding.fix_title or "", finding.fix), (finding.start.line,),
                   _cell_of(text, finding.start, finding.end) if surface == "notebook" else None)
        for finding in check_noqa(file, enabled - ignored)
    ]


def _cell_of(text: str, start: Position, end: Position) -> CellLocation | None:
    """Where a span of a notebook's JSON text is in the cell whose source holds it (None: in no cell's source)."""
    import json

    from vllm_lint.surfaces.notebook_json import char_offsets, source_spans
    from vllm_lint.text import TextIndex

    index = TextIndex(text)
    first, last = index.offset(start), index.offset(end)
    for number, span in enumerate(source_spans(text), start=1):
        if span is None or not span.start <= first < span.end:
            continue
        offsets = {offset: at for at, offset in enumerate(o for a, b in span.strings for o in char_offsets(text, a, b))}
        if first not in offsets or last - 1 not in offsets:
            return None
        cell = TextIndex("".join(json.loads(text[a:b]) for a, b in span.strings))
        return CellLocation(number, cell.position(offsets[first]), cell.position(offsets[last - 1] + 1))
    return None
