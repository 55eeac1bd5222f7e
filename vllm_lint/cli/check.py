"""``vllm-lint check``: its options and configuration, one run of the engine (``engine/run.py``), the report
printed, and the exit code."""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from vllm_lint import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS
from vllm_lint.config import (
    ConfigError,
    gpu_setting,
    Settings,
    enabled_codes,
    find_config,
    load_settings,
    pin_search_tops,
)
from vllm_lint.diagnostics import Diagnostic
from vllm_lint.engine.run import Report, Run, RunError
from vllm_lint.engine.runner import RunOptions

# Not typing.TYPE_CHECKING: importing typing costs ~3 ms of every run's start (mypy reads the name alike).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO


@dataclass
class CheckRequest:
    """A ``check`` command line, parsed."""
    paths: list[Path]
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    output_format: str = "full"
    statistics: bool = False
    exit_zero: bool = False
    quiet: bool = False  # the findings only, no summary lines
    silent: bool = False  # nothing on stdout; the exit code tells
    config_path: Path | None = None
    isolated: bool = False
    force_exclude: bool = False
    color: bool = False
    fix: bool = False
    unsafe_fixes: bool = False
    diff: bool = False
    show_fixes: bool = False
    fix_only: bool = False
    exit_non_zero_on_fix: bool = False
    add_noqa: bool = False
    respect_gitignore: bool | None = None
    preview: bool | None = None  # overrides the preview setting
    # Where the report goes instead of stdout; written once the run is complete.
    output_file: Path | None = None
    # Read the source from standard input (`-`); it is reported and configured as ``stdin_filename``, else "-".
    stdin: bool = False
    stdin_filename: str | None = None
    no_cache: bool = False
    cache_dir: Path | None = None
    # Overrides the target-vllm-version setting (the upgrade check: `--target-vllm-version 0.33`).
    target_vllm_version: str | None = None
    show_settings: bool = False
    explain_opaque: bool = False
    gpu: str | None = None  # overrides the gpu setting (not a file's own declaration)
    model_facts_from_hub: bool = False

    @classmethod
    def from_params(cls, params: dict[str, Any], stdin: bool) -> "CheckRequest":
        """The request for ``check``'s parsed command line (click's or check_options.parse_common's)."""
        fields = {f.name for f in dataclasses.fields(cls)}
        values = {name: value for name, value in params.items() if name in fields}
        for name in ("select", "ignore", "extend_select"):
            values[name] = tuple(item.strip() for value in params[name] for item in value.split(",") if item.strip())
        values.update(
            paths=list(params["paths"]) or [Path(".")],
            # A report written to a file is never coloured unless asked.
            color=(params["output_file"] is None and sys.stdout.isatty()) if params["color"] is None else params["color"],
            fix=params["fix"] or params["fix_only"],
            stdin=stdin,
        )
        return cls(**values)


def _error(message: str) -> int:
    print(f"vllm-lint: error: {message}", file=sys.stderr)
    return EXIT_ERROR


def resolve_settings(request: CheckRequest, codes: list[str]) -> Settings:
    settings = _load_settings(request, codes)
    if request.respect_gitignore is not None:
        settings = dataclasses.replace(settings, respect_gitignore=request.respect_gitignore)
    if request.preview is not None:
        settings = dataclasses.replace(settings, preview=request.preview)
    if request.target_vllm_version is not None:
        settings = dataclasses.replace(settings, target_vllm_version=_target_option(request.target_vllm_version))
    if request.gpu is not None:
        settings = dataclasses.replace(settings, gpu=gpu_setting(request.gpu, "--gpu"), per_file_gpu=())
    if request.model_facts_from_hub:
        settings = dataclasses.replace(settings, model_facts_from_hub=True)
    return dataclasses.replace(settings, pin_search_tops=pin_search_tops(request.paths, settings.source))


def _target_option(text: str) -> str:
    from vllm_lint.vllm_api import as_specifier
    from vllm_lint.vllm_api.specifiers import parse

    if not text.strip() or parse(as_specifier(text)) is None:
        raise ConfigError(f"--target-vllm-version: {text!r} is not a vLLM version or specifier (\"0.33\", \"0.8.5\", \">=0.6,<0.9\")")
    return text.strip()


def _load_settings(request: CheckRequest, codes: list[str]) -> Settings:
    if request.isolated:
        return Settings()
    path = request.config_path
    if path is not None and not path.is_file():
        raise ConfigError(f"{path}: configuration file not found")
    if path is None:
        existing = [p for p in request.paths if p.exists()]
        # As named, not resolved: a symlink named first must not pull in a configuration from where it points.
        start = Path.cwd() if not existing else existing[0].absolute()
        path = find_config(start)
    return load_settings(path, codes)


def run_check(request: CheckRequest) -> int:
    """Run ``check``; the report goes to --output-file, else stdout (stderr when stdout carries fixed stdin)."""
    import io

    if request.output_file is None:
        fixing_stdin = request.stdin and (request.fix or request.diff)
        return _run(request, io.StringIO() if request.silent else sys.stderr if fixing_stdin else sys.stdout)

    from vllm_lint.atomic import atomic_write

    report = io.StringIO()
    status = _run(request, report)
    if status == EXIT_ERROR:
        return status  # the error is on stderr; a half report would mislead whoever reads the file
    try:
        atomic_write(request.output_file, report.getvalue().encode("utf-8"))
    except OSError as exc:
        return _error(f"{request.output_file}: cannot write the report ({exc.strerror or exc})")
    return status


def _run(request: CheckRequest, out: TextIO) -> int:
    from vllm_lint.rulebook import all_codes

    try:
        codes = all_codes()
        settings = resolve_settings(request, codes)
        enabled = enabled_codes(settings, codes, request.select, request.ignore, request.extend_select)
    except ConfigError as exc:
        return _error(str(exc))
    options = RunOptions(settings=settings, enabled=enabled, codes=codes, force_exclude=request.force_exclude,
                         fix_edits=_reads_edits(request))
    if request.show_settings:
        _print_settings(options, out)
        try:
            return _print_targets(Run(options).targets(request.paths), out)
        except RunError as exc:
            return _error(str(exc))
    if request.add_noqa:
        from vllm_lint.cli.add_noqa import run_add_noqa

        return run_add_noqa(request.paths, options, request.quiet, out)
    fix = ("diff" if request.diff else "write") if request.fix or request.diff else None
    if request.explain_opaque:
        if request.stdin:
            return _error("--explain-opaque reads files, not standard input")
        from vllm_lint.launch.seen import LAUNCH_SEEN

        options, fix = dataclasses.replace(options, enabled=options.enabled | {LAUNCH_SEEN}), None
    run = Run(options, fix, request.unsafe_fixes, cache=not (request.no_cache or request.stdin), cache_dir=request.cache_dir,
              parse_one_here=True)
    try:
        report = run.check(request.paths, request.stdin, request.stdin_filename)
    except RunError as exc:
        return _error(str(exc))
    if request.explain_opaque:
        return _explain_opaque(report, request, out)
    if fix is not None:
        return _report_fix(report, request, out)
    _print(report.diagnostics, request, out, report.sources)
    if report.diagnostics and not request.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _reads_edits(request: CheckRequest) -> bool:
    """Whether this run's report prints fixes' edits (fixing makes them either way: engine.fixer.fix_bytes)."""
    from vllm_lint.output import EDIT_FORMATS

    return request.output_format in EDIT_FORMATS and not request.statistics


def _report_fix(report: Report, request: CheckRequest, out: TextIO) -> int:
    for warning in report.warnings:
        print(f"vllm-lint: warning: {warning}", file=sys.stderr)
    if request.diff:
        for name, original, fixed in report.diffs:
            _write_diff(name, original, fixed)
        if not report.diffs and (request.stdin or not (request.quiet or request.silent)):
            sys.stderr.write("No fixes available.\n")
        return EXIT_FINDINGS if report.diffs and not request.exit_zero else EXIT_CLEAN
    if report.fixed is not None:
        # The whole source goes back, fixed or not: an editor replaces its buffer with it.
        sys.stdout.flush()
        sys.stdout.buffer.write(report.fixed)
        sys.stdout.buffer.flush()
    return _finish_fix(report.diagnostics, report.applied, request, out, report.sources)


def _write_diff(name: str, original: bytes, fixed: bytes) -> None:
    import difflib

    old = original.decode("utf-8", errors="replace").splitlines(keepends=True)
    new = fixed.decode("utf-8", errors="replace").splitlines(keepends=True)
    sys.stdout.writelines(difflib.unified_diff(old, new, f"a/{name}", f"b/{name}"))


def _finish_fix(remaining: list[Diagnostic], applied: dict[str, dict[str, int]], request: CheckRequest, out: TextIO, sources: dict[str, str] | None = None) -> int:
    """Report what fixing left, and exit with a code that says whether anything was left or changed."""
    fixed_count = sum(sum(counts.values()) for counts in applied.values())
    remaining.sort(key=Diagnostic.sort_key)
    # The fix summary is for people: machine formats (json, sarif, github, junit) must stay parseable, as in ruff.
    human = request.output_format in ("full", "concise")
    if not request.fix_only:
        _print(remaining, request, out, sources)
    if request.show_fixes and applied and human:
        out.write("\nFixed:\n")
        for path, counts in sorted(applied.items()):
            for code, count in sorted(counts.items()):
                out.write(f"  {path}: {count} x {code}\n")
    if human and fixed_count and not request.quiet:
        out.write(f"Fixed {fixed_count} finding{'s' if fixed_count != 1 else ''}.\n")
    if request.exit_zero:
        return EXIT_CLEAN
    if request.exit_non_zero_on_fix and fixed_count:
        return EXIT_FINDINGS
    if remaining and not request.fix_only:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _print(diagnostics: list[Diagnostic], request: CheckRequest, out: TextIO, sources: dict[str, str] | None = None) -> None:
    from vllm_lint.output import RenderContext, renderer

    if request.statistics:
        _print_statistics(diagnostics, request.output_format, out)
        return
    ctx = RenderContext(color=request.color, sources=sources)
    renderer(request.output_format)(diagnostics, out, ctx)
    if request.output_format in ("full", "concise") and not request.quiet:
        if diagnostics:
            fixable = sum(1 for d in diagnostics if d.fix is not None and d.fix.applicability.value == "safe")
            noun = "finding" if len(diagnostics) == 1 else "findings"
            out.write(f"Found {len(diagnostics)} {noun}.\n")
            if fixable:
                out.write(f"[*] {fixable} fixable with the `--fix` option.\n")
        else:
            out.write("All checks passed!\n")


def _print_statistics(diagnostics: list[Diagnostic], output_format: str, out: TextIO) -> None:
    from vllm_lint.rulebook import load_rules

    rules = load_rules()
    counts = Counter(d.code for d in diagnostics)
    if output_format == "json":
        import json

        rows = [{"code": code, "name": rules[code].name if code in rules else None, "count": n} for code, n in sorted(counts.items())]
        out.write(json.dumps(rows, indent=2) + "\n")
        return
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        name = rules[code].name if code in rules else ""
        out.write(f"{count:5d}\t{code}\t{name}\n")


def _print_settings(options: RunOptions, out: TextIO) -> None:
    """The settings in effect (ruff's ``--show-settings`` prints its resolved settings the same way)."""
    settings = options.settings
    print(f"Settings path: {settings.source or '(none)'}", file=out)
    for field in dataclasses.fields(settings):
        if field.name != "source":
            print(f"{field.name} = {getattr(settings, field.name)!r}", file=out)
    print(f"enabled = {', '.join(sorted(options.enabled))}", file=out)


def _print_targets(targets: list[tuple[Path, Any, str]], out: TextIO) -> int:
    """Each file that would be linted, with the vLLM releases it is judged against and why."""
    print("\nvLLM releases each file is judged against:", file=out)
    for path, api, reason in targets:
        print(f"{path}: vLLM {api.label} [{_entries(api)}] ({reason})", file=out)
    return EXIT_CLEAN


def _explain_opaque(report: Report, request: CheckRequest, out: TextIO) -> int:
    """The launches each file's reading saw, and why those not read in full were left opaque (the readers'
    blind spots, to count over a corpus). A file that could not be read is said on stderr."""
    from vllm_lint.launch.seen import LAUNCH_SEEN, read_message
    from vllm_lint.rulebook import PARSE_ERROR_CODE

    rows = []
    for surface, result in report.files:
        for diagnostic in sorted(result.diagnostics, key=Diagnostic.sort_key):
            if diagnostic.code == PARSE_ERROR_CODE:
                print(f"{diagnostic.path}:{diagnostic.start.line}:{diagnostic.start.column}: not read: {diagnostic.message}", file=sys.stderr)
            if diagnostic.code != LAUNCH_SEEN:
                continue
            seen = read_message(diagnostic.message)
            # a launch in a Markdown block or a notebook cell is that file's, whatever reader read the block
            kind = surface.name if surface is not None and surface.name in ("markdown", "notebook") else seen["reader"]
            rows.append({"filename": diagnostic.path, "line": diagnostic.start.line, "column": diagnostic.start.column,
                         "surface": kind, "launch": seen["launch"], "opaque": seen["opaque"], "reasons": seen["reasons"],
                         "model_facts": seen.get("model_facts")})
    if request.output_format == "json":
        import json

        out.write(json.dumps(rows, indent=2) + "\n")
        return EXIT_CLEAN
    for row in rows:
        if row["opaque"]:
            out.write(f"{row['filename']}:{row['line']}:{row['column']}: {row['surface']} launch left opaque: {'; '.join(row['reasons'])}\n")
    opaque = sum(1 for row in rows if row["opaque"])
    out.write(f"{len(rows)} launches seen, {len(rows) - opaque} read in full, {opaque} opaque\n")
    unknown = sum(1 for row in rows if row["model_facts"] not in (None, "known"))
    if unknown:
        out.write(f"{unknown} with model facts unknown (the rules over the model and its GPU skip them)\n")
    return EXIT_CLEAN


def _entries(api) -> str:
    versions = [version for index, version in enumerate(api.database.versions) if api.mask >> index & 1]
    return versions[0] if len(versions) == 1 else f"{versions[0]} .. {versions[-1]}, {len(versions)} releases"
