"""One file from its bytes to its diagnostics: pre-filter, lint, suppressions.

Each file (found by :mod:`vllm_lint.engine.discovery`, claimed by one surface) is filtered on its raw
bytes and linted only when some rule could fire; what the user switched off is then taken out
(:mod:`vllm_lint.engine.suppressions`), once for all surfaces. An internal error in one file becomes a
VLL000 for that file, never a traceback.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from vllm_lint.config import Settings
from vllm_lint.diagnostics import Diagnostic, Severity
from vllm_lint.hashing import content_hash
from vllm_lint.launch.settings import LaunchSettings
from vllm_lint.surfaces import LintJob, Surface, parse_error, prefilter_disabled

# Not typing.TYPE_CHECKING: importing typing costs ~3 ms of every run's start (mypy reads the name alike).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from vllm_lint.project.facts import FileFacts


class NeedsParsing(Exception):
    """Raised by a ``before_parse`` hook that wants the parse done elsewhere (see workers.py)."""


@dataclass
class FileResult:
    """What linting one file gave: its findings and what the cache and the project rules keep of it."""
    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    suppressed: int = 0
    parsed: bool = False
    # False when the result depends on this run, not on the file (a crash or time-out in the parser).
    cacheable: bool = True
    # (size, mtime_ns, content hash) of what was linted, stat taken before reading; for the cache.
    source: tuple[int, int, str] | None = None
    # Other files the result depends on (a module whose summary was used), with their (size, mtime_ns, hash);
    # and the module summaries computed on the way, which the cache keeps.
    dependencies: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    summaries: dict[str, list] = field(default_factory=dict)
    # (the vLLM target specifier,) the file was judged against, for a file that mentions vLLM or whose
    # reading asked for it: its findings change when the project's pin does, though the file does not.
    target: tuple[str | None] | None = None
    facts: FileFacts | None = None  # for the project rules (vllm_lint.project)


@dataclass
class RunOptions:
    """What every file of a run is linted with."""
    settings: Settings
    enabled: frozenset[str]
    codes: list[str]
    force_exclude: bool = False
    hash_sources: bool = False  # record what each result was computed from (the cache needs it)
    summaries: dict | None = None  # module summaries from the result cache (python/project.py)
    # False when nothing in this run reads a fix's edits (a report that only says a fix exists, its title and
    # its safety): a fix whose edits are costly to compute (the server rewrite) then leaves them out.
    fix_edits: bool = True


def guarded(shown: str, lint: Callable[[], FileResult]) -> FileResult:
    """Run ``lint`` for one file; an internal error becomes a VLL000 for that file, never a traceback.
    ``NeedsParsing`` passes through: it is a request, not an error."""
    try:
        return lint()
    except NeedsParsing:
        raise
    except RecursionError:
        return FileResult(shown, [parse_error(shown, "the file is nested too deeply to analyse")])
    except Exception as exc:  # noqa: BLE001 - one bad file must not take the run down
        return FileResult(shown, [parse_error(shown, f"internal error while linting: {type(exc).__name__}: {exc}")])


def lint_file(
    path: Path,
    surface: Surface | None,
    options: RunOptions,
    display: str | None = None,
    before_parse: Callable[[], None] | None = None,
    prefiltered: bool = False,
) -> FileResult:
    """``prefiltered``: the pre-filter has let this file through already (workers.py: the parent asked it)."""
    from vllm_lint.source import SourceError, read_bytes  # (here: a warm run answered from the cache needs neither)

    shown = display or str(path)
    result = FileResult(shown)
    if surface is None:
        result.diagnostics.append(parse_error(shown, "cannot read the file"))
        return result
    try:
        stat = path.stat() if options.hash_sources else None
        data = read_bytes(path)
    except SourceError as exc:
        result.diagnostics.append(parse_error(shown, exc.message, exc.line, exc.column))
        return result
    except OSError as exc:
        result.diagnostics.append(parse_error(shown, f"cannot read the file: {exc.strerror or exc}"))
        return result
    result = lint_bytes(path, shown, data, surface, options, before_parse, prefiltered)
    if stat is not None:
        result.source = (stat.st_size, stat.st_mtime_ns, content_hash(data))
    return result


def lint_bytes(
    path: Path,
    shown: str,
    data: bytes,
    surface: Surface,
    options: RunOptions,
    before_parse: Callable[[], None] | None = None,
    prefiltered: bool = False,
) -> FileResult:
    from vllm_lint.engine.suppressions import skips_file

    result = FileResult(shown)
    if skips_file(data):
        return result
    lowered = data.lower()  # the words asked in any case below: one copy of the file for them all
    settings = options.settings
    job = LintJob(
        path=path,
        display=shown,
        data=data,
        enabled=options.enabled,
        launch_settings=LaunchSettings(
            settings.fix_max_model_len,
            settings.target_vllm_version,
            settings.vllm_images,
            gpu=gpu_for(path, settings),
            model_folders=_model_folders(path, settings.root),
            model_facts_from_hub=settings.model_facts_from_hub,
        ),
        target_vllm_version=settings.target_vllm_version,
        project_root=settings.root,
        pin_search_tops=settings.pin_search_tops,
        known_summaries=options.summaries,
        fix_edits=options.fix_edits,
    )
    if not prefiltered and not prefilter_disabled() and not surface.may_match(job):
        result.dependencies = job.dependencies  # the files that decided it (python/project.py)
        result.target = _target_of(job, lowered)
        return _suppressed(result, [], data, lowered, path, surface, options)  # no rule would report: its noqa are dead
    if before_parse is not None:
        before_parse()
    result.parsed = True
    try:
        diagnostics = [d for d in surface.lint(job) if d.code in options.enabled]
    finally:
        result.dependencies, result.summaries = job.dependencies, job.summaries
        result.target = _target_of(job, lowered)
    if job.facts:
        result.facts = _unsuppressed_facts(job.facts, data, path, options)
    return _suppressed(result, diagnostics, data, lowered, path, surface, options)


def _suppressed(result: FileResult, diagnostics: list[Diagnostic], data: bytes, lowered: bytes, path: Path,
                surface: Surface, options: RunOptions) -> FileResult:
    """``result`` with the file's findings that no noqa comment or per-file-ignores entry switches off, the
    findings of the rules on those comments (read before they take any out) among them."""
    from vllm_lint.engine.suppressions import noqa_findings, unsuppressed

    settings = options.settings
    diagnostics = diagnostics + noqa_findings(diagnostics, data, lowered, path, result.path, surface.name, settings,
                                              options.codes, options.enabled)
    if not diagnostics:
        return result
    kept, result.suppressed = unsuppressed(diagnostics, data, path, settings, options.codes)
    result.diagnostics = sorted(kept, key=Diagnostic.sort_key)
    return result


def _model_folders(path: Path, root: Path) -> tuple[str, ...]:
    """Where a launch's relative model path is looked for: the file's folder and the two above it (a Helm
    chart's templates/ sit below the chart), then the project's root."""
    folder = path.parent
    return _folders_above(folder, root, None if folder.is_absolute() else os.getcwd())


@lru_cache(maxsize=1024)  # a tree's files share folders: pathlib's work once per folder (and working folder)
def _folders_above(folder: Path, root: Path, working_folder: str | None) -> tuple[str, ...]:
    folders = [Path(working_folder, folder) if working_folder is not None else folder]
    while len(folders) < 3 and folders[-1].parent != folders[-1]:
        folders.append(folders[-1].parent)
    return tuple(dict.fromkeys(str(folder) for folder in (*folders, root)))


def gpu_for(path: Path, settings: Settings) -> str | None:
    """The GPU type the settings give ``path``'s launches: the last ``per-file-gpu`` glob it matches, else ``gpu``."""
    if settings.per_file_gpu:
        from vllm_lint.engine.suppressions import matches_glob

        for pattern, name in reversed(settings.per_file_gpu):
            if matches_glob(pattern, path, settings.root):
                return name
    return settings.gpu


def _target_of(job: LintJob, lowered: bytes) -> tuple[str | None] | None:
    # A file that mentions vLLM, or one whose reading asked for its target without naming vLLM (a Dockerfile
    # whose ENTRYPOINT script launches it): its findings may change when the project's pin does.
    if b"vllm" in lowered or job.looked_up_target:
        # (a pin in the file's own text goes with its bytes: the project's pin cannot change it)
        return None if job.target.own else (job.api_version,)
    return None


def _unsuppressed_facts(facts: FileFacts, data: bytes, path: Path, options: RunOptions) -> FileFacts:
    """The facts without the requests whose project findings a ``# noqa`` or per-file-ignores switches off:
    the project rules run after the file's text is gone (its result may come from the cache)."""
    from vllm_lint.engine.suppressions import unsuppressed
    from vllm_lint.registry import project_codes

    if not facts.requests:
        return facts
    probes = [
        Diagnostic(code, "", "", request.start, request.end, Severity.ERROR, None, request.noqa_lines)
        for request in facts.requests
        for code in project_codes()
    ]
    kept, _ = unsuppressed(probes, data, path, options.settings, options.codes)
    wanted = {(d.start, d.end) for d in kept}
    facts.requests = [request for request in facts.requests if (request.start, request.end) in wanted]
    return facts
