"""A run, from what it is given to its report: discovery, the result cache, the lint in worker processes, the
project rules and fixing, in this one place.

``check`` hands a run its paths (or standard input) and prints the report; the coding assistants' hook, the
language server and the MCP server hand it one file or one text and answer with what it found or fixed. The
run writes nothing but fixed files: what is printed, and how, is the caller's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vllm_lint.config import ConfigError
from vllm_lint.diagnostics import Diagnostic
from vllm_lint.engine.discovery import PathError, discover, discover_names
from vllm_lint.engine.runner import FileResult, RunOptions, guarded, lint_bytes, lint_file
from vllm_lint.surfaces import Surface, all_surfaces

# Not typing.TYPE_CHECKING: importing typing costs ~3 ms of every run's start (mypy reads the name alike).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from vllm_lint.engine.fixer import FixOutcome


class RunError(Exception):
    """A path, standard input or setting the run cannot use; the message says which (exit code 2)."""


@dataclass(frozen=True)
class Source:
    """One text handed to the run rather than found on disk: standard input, an editor's buffer, an MCP call's
    text. ``path`` is where it counts as being (its configuration, its project), ``display`` how it is named."""

    path: Path
    display: str
    data: bytes
    surface: Surface

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


@dataclass
class Report:
    """What a run found and did."""

    diagnostics: list[Diagnostic] = field(default_factory=list)  # what is left, in report order
    applied: dict[str, dict[str, int]] = field(default_factory=dict)  # file -> code -> fixes applied
    diffs: list[tuple[str, bytes, bytes]] = field(default_factory=list)  # fixing to a diff: name, before, after
    warnings: list[str] = field(default_factory=list)  # fixed files that could not be written back
    fixed: bytes | None = None  # fixing standard input: its whole text afterwards, changed or not
    # The texts the report shows that are not on disk (standard input), by the name the report gives them.
    sources: dict[str, str] | None = None
    # Each discovered file's surface and result, in discovery order (``check --explain-opaque`` reads them).
    files: list[tuple[Surface | None, FileResult]] = field(default_factory=list)


@dataclass(frozen=True)
class Run:
    """A run: what it lints with, whether it fixes, and whether it keeps a result cache."""
    options: RunOptions
    fix: str | None = None  # None: report; "write": fix files in place; "diff": report the fixes as diffs
    unsafe_fixes: bool = False
    cache: bool = False  # answer unchanged files from the result cache, and keep the new results there
    cache_dir: Path | None = None  # where (None: engine/cache.py's default for the settings)
    # A run that ends when its report is out (``check``) may parse one small file in its own process
    # (engine/workers.py: lint_tasks); a server's (the language server, MCP) keeps every parse in a child.
    parse_one_here: bool = False

    # -- check: a whole run ----------------------------------------------------------------------------------

    def check(self, paths: list[Path], stdin: bool = False, stdin_filename: str | None = None) -> Report:
        """The run ``vllm-lint check`` asks for: the files under ``paths``, or the source on standard input."""
        if stdin:
            return self._check_stdin(stdin_filename)
        if self.fix is not None:
            return self._fix_paths(paths)
        try:
            files = list(discover_names(paths, self.options.settings, all_surfaces(), self.options.force_exclude))
        except PathError as exc:
            raise RunError(str(exc)) from None
        results = self.lint_files(files)
        diagnostics = sorted((d for r in results for d in r.diagnostics), key=Diagnostic.sort_key)
        return Report(diagnostics, files=[(surface, result) for (_path, surface), result in zip(files, results)])

    def _fix_paths(self, paths: list[Path]) -> Report:
        import gc

        from vllm_lint.engine.fixer import fix_bytes, write_atomically
        from vllm_lint.engine.project import project_findings
        from vllm_lint.source import SourceError, read_bytes

        try:
            policy = self._policy()
            files = list(discover(paths, self.options.settings, all_surfaces(), self.options.force_exclude))
        except PathError as exc:
            raise RunError(str(exc)) from None
        report = Report()
        remaining = report.diagnostics
        gc.enable()  # this process parses and rewrites every file it fixes, however many (cli/entry.py turned it off)
        # Lint first, isolated and in parallel; only files with a fix the policy allows are fixed here.
        # That spares the rest, and keeps a file that crashes the parser out of this process.
        for (path, surface), result in zip(files, self.lint_files(files)):
            if surface is None or not any(policy.allows(d) for d in result.diagnostics):
                remaining.extend(result.diagnostics)
                continue
            try:
                data = read_bytes(path)
                outcome = fix_bytes(path, data, surface, self.options, policy)
            except SourceError:
                outcome = None
            except Exception:  # noqa: BLE001 - a crash while fixing one file leaves that file alone
                outcome = None
            if outcome is None:
                remaining.extend(result.diagnostics)
                continue
            # Decided across files, they are not in what re-linting the fixed file alone gives (reported at
            # their lines before the fix).
            project = project_findings(result)
            remaining.extend(project)
            if not outcome.changed:
                remaining.extend(outcome.remaining)
                continue
            if self.fix == "diff":
                remaining.extend(outcome.remaining)
                report.diffs.append((str(path), outcome.original, outcome.fixed))
                continue
            warning = write_atomically(path, outcome.original, outcome.fixed)
            if warning:
                report.warnings.append(warning)
                remaining.extend(d for d in result.diagnostics if d not in project)  # not written: it still has all it had
                continue
            remaining.extend(outcome.remaining)
            report.applied[str(path)] = dict(outcome.applied)
        remaining.sort(key=Diagnostic.sort_key)
        return report

    def _check_stdin(self, filename: str | None) -> Report:
        """The source on standard input; fixing it, its whole text comes back (``Report.fixed``), as in ruff."""
        from vllm_lint.engine.stdin import StdinError, read_stdin

        try:
            piped = read_stdin(filename, all_surfaces())
        except StdinError as exc:
            raise RunError(str(exc)) from None
        source = Source(piped.path, piped.display, piped.data, piped.surface)
        # --force-exclude covers the name given with --stdin-filename too (editors and pre-commit pass it).
        skipped = self.options.force_exclude and piped.excluded(self.options.settings)
        if self.fix is None:
            diagnostics = [] if skipped else self.lint_source(source).diagnostics
            return Report(sorted(diagnostics, key=Diagnostic.sort_key), sources={source.display: source.text})
        policy = self._policy()
        fixed, remaining, applied = source.data, [], {}
        if not skipped:
            try:
                outcome = self.fix_source(source, policy)
                fixed, remaining, applied = outcome.fixed, outcome.remaining, dict(outcome.applied)
            except Exception:  # noqa: BLE001 - a crash while fixing leaves the source as it was
                remaining = self.lint_source(source).diagnostics
        report = Report(sorted(remaining, key=Diagnostic.sort_key), fixed=fixed)
        report.applied = {source.display: applied} if applied else {}
        report.sources = {source.display: fixed.decode("utf-8", errors="replace")}
        if fixed != source.data:
            report.diffs.append((source.display, source.data, fixed))
        return report

    def _policy(self):
        from vllm_lint.engine.fixer import fix_policy

        try:
            return fix_policy(self.options, self.unsafe_fixes)
        except ConfigError as exc:
            raise RunError(str(exc)) from None

    def targets(self, paths: list[Path]) -> list[tuple[Path, Any, str]]:
        """Each file the run would lint, with the view of vLLM's API it is judged against and why
        (``check --show-settings``)."""
        from vllm_lint.surfaces.file_names import PYTHON_SUFFIXES, is_dockerfile_name
        from vllm_lint.vllm_api import load_api
        from vllm_lint.vllm_api.targets import file_target

        settings = self.options.settings
        try:
            files = list(discover(paths, settings, all_surfaces(), self.options.force_exclude))
        except PathError as exc:
            raise RunError(str(exc)) from None
        targets = []
        for path, _surface in files:
            text = None
            if is_dockerfile_name(path.name) or path.suffix in PYTHON_SUFFIXES:
                try:
                    text = path.read_text(encoding="utf-8", errors="replace")
                except OSError:
                    text = None
            dockerfile = text if is_dockerfile_name(path.name) else None
            python = text if path.suffix in PYTHON_SUFFIXES else None
            target = file_target(
                path, dockerfile, settings.target_vllm_version, settings.pin_search_tops, settings.vllm_images, python
            )
            targets.append((path, load_api(target.specifier), target.reason))
        return targets

    # -- the steps, for the callers that take one file or one text ------------------------------------------------

    def lint_paths(self, paths: list[Path]) -> list[FileResult]:
        """Every file under ``paths``, in parallel and crash-isolated; the programmatic entry point."""
        return self.lint_files(list(discover_names(paths, self.options.settings, all_surfaces(), self.options.force_exclude)))

    def lint_files(self, files: Sequence[tuple[Path | str, Surface | None]], project_rules: bool = True) -> list[FileResult]:
        """One result per discovered file, in order: from the cache where the file is unchanged; then the
        project rules over them all (unless ``project_rules`` is False: a caller after the facts alone)."""
        options, cache = self.options, None
        if self.cache:
            from vllm_lint.engine.cache import ResultCache, default_cache_dir

            cache = ResultCache(self.cache_dir or default_cache_dir(options), options)
            options = dataclasses.replace(options, hash_sources=True, summaries=cache.summaries)
        results: list[FileResult | None] = [None] * len(files)
        missing = []
        for index, (path, surface) in enumerate(files):
            cached = cache.lookup(path, str(path)) if cache is not None and surface is not None else None
            if cached is not None:
                results[index] = cached
            else:
                missing.append(index)
        if missing:  # (a warm run over unchanged files has nothing to lint, nor the workers to load)
            from vllm_lint.engine.workers import Task, lint_tasks

            tasks = []
            for index in missing:
                path, surface = files[index]
                tasks.append(Task(index, Path(path), surface.name if surface is not None else None))
            for task, result in zip(tasks, lint_tasks(tasks, options, self.parse_one_here)):
                results[task.index] = result
                if cache is not None:
                    cache.store(task.path, result)
        if cache is not None:
            cache.save()
        done = [r for r in results if r is not None]
        if project_rules:
            from vllm_lint.engine.project import add_project_findings

            add_project_findings(done, options)
        return done

    def lint_file(self, path: Path, surface: Surface) -> FileResult:
        """One file on disk, in a worker process (a file that crashes the parser takes only that process down;
        with ``parse_one_here``, a small one CPython's parser reads is parsed here); no project rules, which need
        the other files."""
        from vllm_lint.engine.workers import Task, lint_tasks

        [result] = lint_tasks([Task(0, path, surface.name)], self.options, self.parse_one_here)
        return result

    def lint_file_here(self, path: Path, surface: Surface) -> FileResult:
        """One file on disk, in this process; an internal error becomes a VLL000 for the file."""
        return guarded(str(path), lambda: lint_file(path, surface, self.options))

    def lint_source(self, source: Source) -> FileResult:
        """One text, in this process; an internal error becomes a VLL000 for it, never a traceback."""
        return guarded(source.display, lambda: lint_bytes(source.path, source.display, source.data, source.surface, self.options))

    def fix_source(self, source: Source, policy=None) -> FixOutcome:
        """One text with every fix the policy allows applied (``unsafe_fixes``, and the fixable settings)."""
        from vllm_lint.engine.fixer import fix_bytes

        return fix_bytes(source.path, source.data, source.surface, self.options, self._policy() if policy is None else policy)


def forget_disk_state() -> None:
    """What this process read of the disk and keeps between runs, read again from now on: for a process that
    outlives a run (the language and MCP servers), in which a pin may be edited and modules created or removed
    between two requests."""
    from vllm_lint import folder_names
    from vllm_lint.python.project import forget_files
    from vllm_lint.vllm_api.targets import forget_project_files

    forget_project_files()
    folder_names.forget()
    forget_files()


__all__ = ["Report", "Run", "RunError", "Source", "forget_disk_state"]
