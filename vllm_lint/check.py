"""``vllm-lint check``: configuration, the run over all files, output and exit code."""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import click

from vllm_lint.config import ConfigError, Settings, enabled_codes, find_config, load_settings
from vllm_lint.diagnostics import Diagnostic
from vllm_lint.runner import FileResult, PathError, RunOptions, discover, lint_file
from vllm_lint.surfaces import all_surfaces

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


@dataclass
class CheckRequest:
    paths: list[Path]
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    output_format: str = "full"
    statistics: bool = False
    exit_zero: bool = False
    config_path: Path | None = None
    isolated: bool = False
    force_exclude: bool = False
    color: bool = False


def _error(message: str) -> int:
    click.echo(f"vllm-lint: error: {message}", err=True)
    return EXIT_ERROR


def resolve_settings(request: CheckRequest, codes: list[str]) -> Settings:
    if request.isolated:
        return Settings()
    path = request.config_path
    if path is not None and not path.is_file():
        raise ConfigError(f"{path}: configuration file not found")
    if path is None:
        existing = [p for p in request.paths if p.exists()]
        start = Path.cwd() if not existing else existing[0].resolve()
        path = find_config(start)
    return load_settings(path, codes)


def run_check(request: CheckRequest) -> int:
    from vllm_lint.rulebook import all_codes

    try:
        codes = all_codes()
        settings = resolve_settings(request, codes)
        enabled = enabled_codes(settings, codes, request.select, request.ignore, request.extend_select)
    except ConfigError as exc:
        return _error(str(exc))
    options = RunOptions(settings=settings, enabled=enabled, codes=codes, force_exclude=request.force_exclude)
    results: list[FileResult] = []
    try:
        for path, surface in discover(request.paths, settings, all_surfaces(), request.force_exclude):
            results.append(_lint_isolated(path, surface, options))
    except PathError as exc:
        return _error(str(exc))
    diagnostics = sorted((d for r in results for d in r.diagnostics), key=Diagnostic.sort_key)
    _print(diagnostics, request)
    if diagnostics and not request.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _lint_isolated(path: Path, surface, options: RunOptions) -> FileResult:
    """Lint one file; an internal error becomes a VLL000 for that file, never a traceback."""
    from vllm_lint.surfaces import parse_error

    try:
        return lint_file(path, surface, options)
    except RecursionError:
        return FileResult(str(path), [parse_error(str(path), "the file is nested too deeply to analyse")])
    except Exception as exc:  # noqa: BLE001 - one bad file must not take the run down
        return FileResult(str(path), [parse_error(str(path), f"internal error while linting: {type(exc).__name__}: {exc}")])


def _print(diagnostics: list[Diagnostic], request: CheckRequest) -> None:
    from vllm_lint.output import RenderContext, renderer

    out = sys.stdout
    if request.statistics:
        _print_statistics(diagnostics, request.output_format)
        return
    ctx = RenderContext(color=request.color)
    renderer(request.output_format)(diagnostics, out, ctx)
    if request.output_format in ("full", "concise"):
        if diagnostics:
            fixable = sum(1 for d in diagnostics if d.fix is not None and d.fix.applicability.value == "safe")
            noun = "finding" if len(diagnostics) == 1 else "findings"
            out.write(f"Found {len(diagnostics)} {noun}.\n")
            if fixable:
                out.write(f"[*] {fixable} fixable with the `--fix` option.\n")
        else:
            out.write("All checks passed!\n")


def _print_statistics(diagnostics: list[Diagnostic], output_format: str) -> None:
    from vllm_lint.rulebook import load_rules

    rules = load_rules()
    counts = Counter(d.code for d in diagnostics)
    if output_format == "json":
        import json

        rows = [{"code": code, "name": rules[code].name if code in rules else None, "count": n} for code, n in sorted(counts.items())]
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        name = rules[code].name if code in rules else ""
        sys.stdout.write(f"{count:5d}\t{code}\t{name}\n")
