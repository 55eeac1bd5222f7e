"""Lint the files an agent just edited, and phrase what was found for the model that wrote them.

Only files inside the project that a vllm-lint surface claims (Python, shell, Dockerfile, compose,
Kubernetes, Markdown) are linted, with the configuration ``vllm-lint check`` would use for them;
excluded ones (``exclude``, ``.gitignore``) are skipped as ``check --force-exclude`` skips them. The
text names each finding's line, rule code and what to do, and the ``vllm-lint check --fix`` line
when a fix exists: short, because it lands in the model's context after every edit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from vllm_lint.diagnostics import Applicability, Diagnostic

SHOWN_PER_FILE = 8
_HEAD_BYTES = 256


def _inside(path: Path, root: Path) -> Path | None:
    """``path`` relative to ``root`` when it lies inside it (symlinks resolved), else None."""
    try:
        return path.resolve().relative_to(root.resolve())
    except (OSError, RuntimeError, ValueError):
        return None


def _claiming_surface(path: Path, surfaces):
    """The surface that claims ``path`` by name or first line; None: a kind of file vllm-lint does not lint."""
    for surface in surfaces:
        if surface.claims(path.name, b""):
            return surface
    try:
        with path.open("rb") as handle:
            head = handle.read(_HEAD_BYTES)
    except OSError:
        return None
    return next((s for s in surfaces if s.claims(path.name, head)), None)


@dataclass(frozen=True)
class EditedFile:
    shown: str  # relative to the project root, as the model knows the file
    diagnostics: list[Diagnostic]
    safe_fixes: bool  # a fix `check --fix` would apply (the configuration allows it)
    unsafe_fixes: bool  # one only `--unsafe-fixes` would apply


def lint_edited(paths: Iterable[Path], root: Path) -> list[EditedFile]:
    """The edited files that have findings."""
    from vllm_lint.config import enabled_codes, find_config, load_settings
    from vllm_lint.engine.fixer import fix_policy
    from vllm_lint.engine.discovery import is_excluded
    from vllm_lint.engine.run import Run
    from vllm_lint.engine.runner import RunOptions
    from vllm_lint.rulebook import all_codes
    from vllm_lint.surfaces import all_surfaces

    surfaces = all_surfaces()
    codes = all_codes()
    found = []
    for path in paths:
        relative = _inside(path, root)
        if relative is None or not path.is_file():
            continue
        surface = _claiming_surface(path, surfaces)
        if surface is None:
            continue
        settings = load_settings(find_config(path.parent), codes)
        if is_excluded(path, settings):
            continue
        # The report names each fix and its safety, never its edits.
        options = RunOptions(settings=settings, enabled=enabled_codes(settings, codes), codes=codes, fix_edits=False)
        # (the hook's process ends with its answer: one small file may be parsed in it, as by ``check``)
        result = Run(options, parse_one_here=True).lint_file(path, surface)
        if not result.diagnostics:
            continue
        safe, unsafe = fix_policy(options, False), fix_policy(options, True)
        found.append(EditedFile(
            relative.as_posix(),
            sorted(result.diagnostics, key=Diagnostic.sort_key),
            any(safe.allows(d) for d in result.diagnostics),
            any(unsafe.allows(d) and not safe.allows(d) for d in result.diagnostics),
        ))
    return found


def _directive(code: str) -> str | None:
    from vllm_lint.rulebook import rule_head

    head = rule_head(code)
    return " ".join(head.directive.split()) if head is not None and head.directive else None


def _finding(shown: str, diagnostic: Diagnostic) -> list[str]:
    lines = [f"- {shown}:{diagnostic.start.line}: {diagnostic.code} {diagnostic.message}"]
    directive = _directive(diagnostic.code) if diagnostic.code != "VLL000" else None
    if directive:
        lines.append(f"  Do: {directive}")
    if diagnostic.fix is not None:
        kind = "safe" if diagnostic.fix.applicability is Applicability.SAFE else "unsafe"
        lines.append(f"  Fix ({kind}): {diagnostic.fix.message}")
    return lines


def phrase(found: list[EditedFile]) -> str | None:
    """The text for the model, or None when nothing was found."""
    if not found:
        return None
    total = sum(len(edited.diagnostics) for edited in found)
    noun = "problem" if total == 1 else "problems"
    names = ", ".join(edited.shown for edited in found)
    files = "the file you just edited" if len(found) == 1 else "files you just edited"
    lines = [f"vllm-lint found {total} vLLM serving {noun} in {names} ({files}). Fix {'it' if total == 1 else 'them'} before you go on:"]
    for edited in found:
        for diagnostic in edited.diagnostics[:SHOWN_PER_FILE]:
            lines.extend(_finding(edited.shown, diagnostic))
        if len(edited.diagnostics) > SHOWN_PER_FILE:
            lines.append(f"- ... and {len(edited.diagnostics) - SHOWN_PER_FILE} more: run `vllm-lint check {edited.shown}`")
        if edited.safe_fixes:
            lines.append(f"Run `vllm-lint check --fix {edited.shown}` to apply the safe fixes.")
        if edited.unsafe_fixes:
            lines.append(f"Run `vllm-lint check --fix --unsafe-fixes {edited.shown}` for the fixes marked unsafe (they change behaviour; `--diff` shows them first).")
    first = min(d.code for edited in found for d in edited.diagnostics)
    lines.append(f"`vllm-lint rule {first}` explains a rule. Do not add `# noqa` unless the user asks for it.")
    return "\n".join(lines) + "\n"
