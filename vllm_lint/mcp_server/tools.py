"""What the MCP tools do, without the SDK: each returns (data for structured content, text for people).

Source text is linted as ``vllm-lint check --stdin-filename NAME -`` lints it; a path must lie inside
the project (the folder the server runs in) and is linted with the same crash isolation as
``check``. ``fix`` returns the fixed text and a unified diff and writes the file only when asked.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from vllm_lint.diagnostics import Applicability, Diagnostic


class ToolError(ValueError):
    """A request the tool cannot serve (a path outside the project, an unknown rule); shown to the caller."""


@dataclass(frozen=True)
class Source:
    path: Path  # where the text is (or would be): it picks the surface and the configuration
    shown: str
    data: bytes
    on_disk: bool


def finding(diagnostic: Diagnostic) -> dict:
    fix = diagnostic.fix
    return {
        "code": diagnostic.code,
        "severity": diagnostic.severity.value,
        "message": diagnostic.message,
        "line": diagnostic.start.line,
        "column": diagnostic.start.column,
        "end_line": diagnostic.end.line,
        "end_column": diagnostic.end.column,
        "fix": None if fix is None else {"applicability": fix.applicability.value, "message": fix.message},
    }


def _source(root: Path, source: str | None, filename: str | None, path: str | None) -> Source:
    if (source is None) == (path is None):
        raise ToolError("give either `source` (with `filename`) or `path`")
    if path is not None:
        candidate = Path(path)
        candidate = candidate if candidate.is_absolute() else root / candidate
        try:
            relative = candidate.resolve().relative_to(root.resolve())
        except ValueError:
            raise ToolError(f"{path} is outside the project ({root}); pass its text as `source` instead") from None
        if not candidate.is_file():
            raise ToolError(f"{path}: no such file")
        return Source(candidate, relative.as_posix(), candidate.read_bytes(), True)
    name = filename or "snippet.py"
    return Source(root / name, name, source.encode("utf-8"), False)  # type: ignore[union-attr]


def _context(root: Path, where: Path):
    from vllm_lint.config import enabled_codes, find_config, load_settings
    from vllm_lint.engine.runner import RunOptions
    from vllm_lint.rulebook import all_codes

    from vllm_lint.engine.run import forget_disk_state

    forget_disk_state()  # the server outlives a run: a pin edited or a module added since the last request counts
    codes = all_codes()
    start = where.parent if where.parent.exists() else root
    settings = load_settings(find_config(start), codes)
    return RunOptions(settings=settings, enabled=enabled_codes(settings, codes), codes=codes)


def _surface(source: Source):
    from vllm_lint.engine.discovery import HEAD_BYTES, claim_named
    from vllm_lint.surfaces import all_surfaces

    return claim_named(source.path, source.data[:HEAD_BYTES], all_surfaces())


def _lint(source: Source, options) -> list[Diagnostic]:
    from vllm_lint.engine.run import Run

    run, surface = Run(options), _surface(source)
    result = run.lint_file(source.path, surface) if source.on_disk else run.lint_source(_given(source, surface))
    return sorted(result.diagnostics, key=Diagnostic.sort_key)


def _given(source: Source, surface):
    from vllm_lint.engine.run import Source as GivenText

    return GivenText(source.path, source.shown, source.data, surface)


def _lines(shown: str, diagnostics: list[Diagnostic]) -> list[str]:
    lines = []
    for d in diagnostics:
        fix = "" if d.fix is None else f" [fix: {d.fix.applicability.value}]"
        lines.append(f"{shown}:{d.start.line}:{d.start.column}: {d.code} [{d.severity.value}] {d.message}{fix}")
    return lines


def lint(root: Path, source: str | None = None, filename: str | None = None, path: str | None = None) -> tuple[dict, str]:
    src = _source(root, source, filename, path)
    diagnostics = _lint(src, _context(root, src.path))
    data = {"file": src.shown, "findings": [finding(d) for d in diagnostics]}
    if not diagnostics:
        return data, f"{src.shown}: no findings.\n"
    fixable = sum(d.fix is not None for d in diagnostics)
    tail = f"{len(diagnostics)} finding(s), {fixable} with a fix (the `fix` tool applies them); `explain_rule` explains a code."
    return data, "\n".join([*_lines(src.shown, diagnostics), tail]) + "\n"


def fix(
    root: Path,
    source: str | None = None,
    filename: str | None = None,
    path: str | None = None,
    unsafe: bool = False,
    write: bool = False,
) -> tuple[dict, str]:
    from vllm_lint.engine.fixer import fix_policy, write_atomically
    from vllm_lint.engine.run import Run

    src = _source(root, source, filename, path)
    if write and not src.on_disk:
        raise ToolError("`write` needs a `path`: source text has no file to write")
    options = _context(root, src.path)
    outcome = Run(options).fix_source(_given(src, _surface(src)), fix_policy(options, unsafe))
    fixed = outcome.fixed.decode("utf-8", errors="replace")
    original = src.data.decode("utf-8", errors="replace")
    diff = "".join(difflib.unified_diff(original.splitlines(keepends=True), fixed.splitlines(keepends=True), f"a/{src.shown}", f"b/{src.shown}"))
    written = False
    if write and outcome.changed:
        warning = write_atomically(src.path, outcome.original, outcome.fixed)
        if warning:
            raise ToolError(warning)
        written = True
    remaining = sorted(outcome.remaining, key=Diagnostic.sort_key)
    data = {
        "file": src.shown,
        "fixed_source": fixed,
        "diff": diff,
        "applied": dict(sorted(outcome.applied.items())),
        "remaining": [finding(d) for d in remaining],
        "written": written,
    }
    unsafe_left = [d for d in remaining if d.fix is not None and d.fix.applicability is Applicability.UNSAFE and not unsafe]
    head = f"{src.shown}: applied {sum(outcome.applied.values())} fix(es)" + (" and wrote the file." if written else " (nothing written; pass write=true with a path to write).")
    parts = [head, diff or "(no change)\n"]
    if remaining:
        parts.append("Still found:\n" + "\n".join(_lines(src.shown, remaining)) + "\n")
    if unsafe_left:
        parts.append("Some of these have unsafe fixes (they change behaviour): call `fix` with unsafe=true to apply them.\n")
    return data, "\n".join(parts)


def explain_rule(code: str) -> tuple[dict, str]:
    from vllm_lint.rule_docs import rule_dict, show_rule
    from vllm_lint.rulebook import rule_for

    rule = rule_for(code.strip().upper())
    if rule is None:
        raise ToolError(f"unknown rule code {code!r}; `list_rules` lists them")
    return rule_dict(rule), show_rule(rule.code) or ""


def list_rules() -> tuple[dict, str]:
    from vllm_lint.rule_docs import list_rules as table
    from vllm_lint.rule_docs import rule_dict
    from vllm_lint.rulebook import load_rules

    return {"rules": [rule_dict(rule) for rule in load_rules().values()]}, table()
