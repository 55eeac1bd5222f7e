"""Applying fixes: merge without overlap, validate, repeat, write atomically.

A fix is applied only when the file still parses afterwards and the fix's own
finding is gone; conflicting fixes wait for the next pass; passes repeat until
nothing changes (bounded). Untouched bytes stay as they were: edits are text
splices, and the file is written back in its own encoding, BOM and line endings.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from vllm_lint.atomic import ChangedMeanwhile, atomic_write
from vllm_lint.config import expand_selectors
from vllm_lint.diagnostics import Applicability, Diagnostic, Fix, Severity
from vllm_lint.engine.runner import RunOptions, lint_bytes
from vllm_lint.source import SourceError, decode_python, decode_text, read_bytes
from vllm_lint.surfaces import Surface
from vllm_lint.text import TextIndex

MAX_FIXES_PER_FILE = 200


@dataclass
class FixPolicy:
    unsafe: bool
    fixable: frozenset[str]

    def allows(self, diagnostic: Diagnostic) -> bool:
        fix = diagnostic.fix
        if fix is None or diagnostic.code not in self.fixable:
            return False
        return fix.applicability is Applicability.SAFE or self.unsafe


def fix_policy(options: RunOptions, unsafe: bool) -> FixPolicy:
    settings = options.settings
    fixable = expand_selectors(settings.fixable, options.codes, "fixable")
    fixable -= expand_selectors(settings.unfixable, options.codes, "unfixable")
    return FixPolicy(unsafe, frozenset(fixable))


@dataclass
class FixOutcome:
    path: Path
    original: bytes
    fixed: bytes
    applied: Counter = field(default_factory=Counter)
    remaining: list[Diagnostic] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.original != self.fixed


def _apply(text: str, fix: Fix) -> str:
    index = TextIndex(text)
    spans = sorted(((index.offset(e.start), index.offset(e.end), e.content) for e in fix.edits), reverse=True)
    for start, end, content in spans:
        text = text[:start] + content + text[end:]
    return text


def _decode(surface: Surface, data: bytes):
    return decode_python(data) if surface.name == "python" else decode_text(data)


def _parses(surface: Surface, text: str) -> bool:
    if surface.name != "python":
        return True
    from vllm_lint.python.checker import SyntaxProblem, parse

    try:
        parse(text)
    except SyntaxProblem:
        return False
    return True


def _first_lint(path: Path, data: bytes, surface: Surface, options: RunOptions):
    """A fix's start: the file's findings, and its decoded text (None, with the findings as what remains, when
    it cannot be decoded)."""
    outcome = FixOutcome(path, data, data)
    try:
        source = _decode(surface, data)
    except SourceError:
        outcome.remaining = lint_bytes(path, str(path), data, surface, options).diagnostics
        return outcome, None, outcome.remaining
    return outcome, source, lint_bytes(path, str(path), data, surface, options).diagnostics


def fix_bytes(path: Path, data: bytes, surface: Surface, options: RunOptions, policy: FixPolicy) -> FixOutcome:
    options = replace(options, fix_edits=True)  # fixing applies the edits, whatever the run prints
    outcome, source, diagnostics = _first_lint(path, data, surface, options)
    if source is None:
        return outcome
    text = source.text
    rejected: set[tuple] = set()
    for _ in range(MAX_FIXES_PER_FILE):
        if any(d.code == "VLL000" for d in diagnostics):
            break  # never fix a file that does not parse
        candidates = [d for d in diagnostics if policy.allows(d) and _key(d) not in rejected]
        progressed = False
        for diagnostic in candidates:
            assert diagnostic.fix is not None  # policy.allows() holds only for a finding with a fix
            attempt = _apply(text, diagnostic.fix)
            if attempt == text or not _parses(surface, attempt):
                rejected.add(_key(diagnostic))
                continue
            after = lint_bytes(path, str(path), source.encode(attempt), surface, options).diagnostics
            # a surface that reads a file in parts (a notebook's cells) reports a part that no longer parses
            if _count(after, "VLL000") or _count(after, diagnostic.code, diagnostic.severity) >= _count(
                diagnostics, diagnostic.code, diagnostic.severity
            ):
                rejected.add(_key(diagnostic))
                continue  # the fix did not remove its own finding: keep the code as it was
            text, diagnostics = attempt, after
            outcome.applied[diagnostic.code] += 1
            progressed = True
            break  # positions moved: re-read the findings of the new text
        if not progressed:
            break
    outcome.fixed = source.encode(text)
    outcome.remaining = diagnostics
    return outcome


def add_noqa_bytes(path: Path, data: bytes, surface: Surface, options: RunOptions) -> FixOutcome:
    """``data`` with a noqa comment for each of its findings (``check --add-noqa``: today's findings recorded,
    so that CI fails on new ones only), and how many were added by code. A comment is kept only when the
    file re-lints with that finding gone and nothing new (a comment that changed what the file means would
    show as a new finding or a VLL000)."""
    from vllm_lint.engine.noqa_comments import noqa_edit

    outcome, source, diagnostics = _first_lint(path, data, surface, options)
    if source is None:
        return outcome
    text = source.text
    rejected: set[tuple] = set()
    while True:
        for diagnostic in diagnostics:
            key = (diagnostic.code, diagnostic.message, diagnostic.start)
            edit = None if key in rejected else noqa_edit(diagnostic, text, surface.name)
            if edit is None:
                rejected.add(key)
                continue
            attempt = _apply(text, Fix(Applicability.SAFE, "noqa", (edit,)))
            after = lint_bytes(path, str(path), source.encode(attempt), surface, options).diagnostics
            if len(after) >= len(diagnostics) or _count(after, "VLL000") > _count(diagnostics, "VLL000"):
                rejected.add(key)
                continue
            text, diagnostics = attempt, after
            outcome.applied[diagnostic.code] += 1
            break  # positions moved: re-read the findings of the new text
        else:
            break
    outcome.fixed = source.encode(text)
    outcome.remaining = diagnostics
    return outcome


def _key(diagnostic: Diagnostic) -> tuple:
    return (diagnostic.code, diagnostic.message, diagnostic.fix.edits if diagnostic.fix else ())


_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}


def _count(diagnostics: list[Diagnostic], code: str, at_least: Severity = Severity.INFO) -> int:
    """The findings of ``code`` as severe as ``at_least`` or more: a fix whose finding is left as a milder note
    of its code (an error fixed into an info-level note) removed it."""
    return sum(1 for d in diagnostics if d.code == code and _RANK[d.severity] >= _RANK[at_least])


def write_atomically(path: Path, original: bytes, data: bytes) -> str | None:
    """Replace ``path`` with ``data`` unless it changed since it was read; a warning, or None.

    A path that passes through a symlink is written at the file the link points at, but only
    when that file lies inside the folder vllm-lint runs in: a link in a checked-out pull
    request must not make ``--fix`` write outside the project.
    """
    changed = f"{path}: not fixed: the file changed on disk while vllm-lint ran"
    try:
        before = _identity(path)  # before reading: an edit after this point changes it
    except OSError:
        before = None
    try:
        current = read_bytes(path)
    except SourceError as exc:
        return f"{path}: not fixed: cannot re-read it ({exc.message})"
    if current != original or before is None:
        return changed
    target = path.resolve()
    if target != Path(os.path.normpath(path.absolute())):
        project = Path.cwd().resolve()
        try:
            target.relative_to(project)
        except ValueError:
            return f"{path}: not fixed: through a symlink it is {target}, outside {project} (the folder vllm-lint runs in)"

    def still_current() -> bool:
        # Writing the new bytes takes a while for a big file: an edit made meanwhile must not be lost.
        try:
            return _identity(path) == before
        except OSError:
            return False

    try:
        atomic_write(target, data, still_current)
    except ChangedMeanwhile:
        return changed
    except OSError as exc:
        return f"{path}: not fixed: cannot write it ({exc.strerror or exc})"
    return None


def _identity(path: Path) -> tuple[int, ...]:
    info = os.stat(path)
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def fix_file(path: Path, *, unsafe: bool = True, select: tuple[str, ...] = (), settings=None) -> FixOutcome:
    """What ``vllm-lint check --fix [--unsafe-fixes]`` makes of one file, without writing anything.

    The programmatic entry point (``vllm-lint validate`` can take the fixed server from it):
    ``outcome.fixed`` is the fixed file's bytes, ``outcome.applied`` counts the fixes by code.
    ``settings`` defaults to the configuration the CLI would find for the file.
    """
    from vllm_lint.config import enabled_codes, find_config, load_settings
    from vllm_lint.rulebook import all_codes
    from vllm_lint.engine.discovery import discover
    from vllm_lint.surfaces import all_surfaces

    codes = all_codes()
    if settings is None:
        settings = load_settings(find_config(path.resolve()), codes)
    options = RunOptions(settings=settings, enabled=enabled_codes(settings, codes, select), codes=codes)
    [(_, surface)] = list(discover([path], settings, all_surfaces()))
    if surface is None:
        raise SourceError(f"{path}: cannot read the file")
    return fix_bytes(path, read_bytes(path), surface, options, fix_policy(options, unsafe))
