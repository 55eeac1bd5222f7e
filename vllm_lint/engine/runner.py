"""From paths to diagnostics: discovery, pre-filter, lint, suppressions.

Discovery walks directories once, honouring .gitignore files and the configured
excludes; each file is claimed by one surface, filtered on its raw bytes, and
linted only when some rule could fire. Suppressions (``# noqa``,
``# vllm-lint: skip-file``, per-file-ignores) are applied here, once for all
surfaces.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from vllm_lint.config import Settings, expand_selectors
from vllm_lint.diagnostics import Diagnostic
from vllm_lint.launch.settings import LaunchSettings
from vllm_lint.source import SourceError, read_bytes
from vllm_lint.surfaces import LintJob, Surface, parse_error, suffix_of

SKIP_FILE = re.compile(rb"#\s*vllm-lint\s*:\s*skip-file\b")
NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
MARKDOWN_NOQA = re.compile(r"<!--\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?\s*-->", re.IGNORECASE)


class NeedsParsing(Exception):
    """Raised by a ``before_parse`` hook that wants the parse done elsewhere (see workers.py)."""


class PathError(Exception):
    """A path named on the command line does not exist; exit code 2."""


@dataclass
class FileResult:
    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    suppressed: int = 0
    parsed: bool = False
    # False when the result depends on this run, not on the file (a crash or time-out in the parser).
    cacheable: bool = True
    # (size, mtime_ns, content hash) of what was linted, stat taken before reading; for the cache.
    source: tuple[int, int, str] | None = None


@dataclass
class RunOptions:
    settings: Settings
    enabled: frozenset[str]
    codes: list[str]
    force_exclude: bool = False
    hash_sources: bool = False  # record what each result was computed from (the cache needs it)


# A gitignore line that is just a name (no glob, no "/", no "!", no escape, no surrounding space): it matches
# a path whose file or any folder has exactly that name, which needs neither pathspec nor a regex.
_PLAIN_NAME = re.compile(r"[\w.\-]+")


class _Spec:
    """Gitignore-style patterns (pathspec), matched with one regular expression when none negates.

    pathspec tries each pattern in turn; with the ~20 default excludes that is ~40 searches per file
    of a walk. Without ``!`` patterns the last-match rule cannot change the answer, so one
    alternation of the same expressions gives it in one search. When every line is a plain name (the
    default excludes are), a set lookup per path component gives it without importing pathspec, whose
    import and pattern compiling cost about 20 ms of every run.
    """

    def __init__(self, lines: list[str]) -> None:
        meaningful = [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
        self._names: frozenset[str] | None = None
        self._combined = None
        self._empty = not meaningful
        # A pattern without an inner "/" matches at any depth: what it matches in a file's name alone it
        # matches in the file's path too. Only anchored ones make a second look at the name worth it.
        self.anchored = any("/" in line.strip().rstrip("/") for line in meaningful)
        if all(_PLAIN_NAME.fullmatch(line) and line not in (".", "..") for line in meaningful):
            self._names = frozenset(meaningful)
            return
        import pathspec

        self._spec = pathspec.GitIgnoreSpec.from_lines(lines)
        patterns = [p for p in self._spec.patterns if p.include is not None]
        if all(p.include for p in patterns) and all(hasattr(p, "regex") for p in patterns):
            sources = [re.sub(r"\(\?P<\w+>", "(?:", p.regex.pattern) for p in patterns]
            self._combined = re.compile("|".join(f"(?:{source})" for source in sources)) if sources else None
            self._empty = not sources

    def match_file(self, path: str) -> bool:
        if self._empty:
            return False
        if self._names is not None:
            return not self._names.isdisjoint(path.split("/"))
        if self._combined is not None:
            return self._combined.match(path) is not None
        return self._spec.match_file(path)


@dataclass(frozen=True)
class _Folder:
    """A folder met in a walk."""

    path: Path  # as reached
    real: str  # resolved
    relative: str | None  # to the settings root, posix ("" for the root); None outside it
    gitignores: tuple[tuple["_Spec", str], ...]  # each .gitignore that applies here, with this folder's path from it


def _ignored_in(gitignores: tuple[tuple[_Spec, str], ...], name: str, is_dir: bool) -> bool:
    """Whether an entry ``name`` of a folder is ignored by the .gitignore files that apply there."""
    slash = "/" if is_dir else ""
    return any(spec.match_file(f"{prefix}{name}{slash}") for spec, prefix in gitignores)


class _Ignore:
    """Exclude globs and .gitignore files, matched as git does (pathspec)."""

    def __init__(self, settings: Settings) -> None:
        self.root = settings.root
        self._root_text = str(_resolved(settings.root))
        patterns = [*settings.exclude, *settings.extend_exclude]
        self.excludes = _Spec(patterns)
        self.respect_gitignore = settings.respect_gitignore
        self._gitignores: dict[Path, object | None] = {}
        self._repository_roots: dict[Path, bool] = {}  # per folder: does it hold .git (asked once per file otherwise)

    def relative_to_root(self, real: str) -> str | None:
        """``real`` (resolved) relative to the settings root, posix; "" for the root; None outside it."""
        root = self._root_text
        if real == root:
            return ""
        prefix = root if root.endswith(os.sep) else root + os.sep
        return real[len(prefix):].replace(os.sep, "/") if real.startswith(prefix) else None

    def folder(self, path: Path, real: str) -> "_Folder":
        """Where a walk starts: the .gitignore files that apply there, looked up through its parents."""
        # Absolute: a relative path has no parents above the working directory.
        chain = self._gitignore_chain(path.absolute()) if self.respect_gitignore else ()
        return _Folder(path, real, self.relative_to_root(real), chain)

    def _gitignore_chain(self, directory: Path) -> tuple[tuple[_Spec, str], ...]:
        """The .gitignore files that apply in ``directory``, nearest first up to the repository root, each
        with ``directory``'s path from its own folder ("" there, else ending in "/")."""
        chain: list[tuple[_Spec, str]] = []
        for parent in (directory, *directory.parents):
            spec = self._gitignore(parent)
            if spec is not None:
                below = directory.relative_to(parent).as_posix()
                chain.append((spec, "" if below == "." else below + "/"))
            if self._is_repository_root(parent) or parent == parent.parent:
                break
        return tuple(chain)

    def subfolder(self, folder: "_Folder", name: str, path: Path, real: str, relative: str | None) -> "_Folder":
        chain: tuple[tuple[_Spec, str], ...] = ()
        if self.respect_gitignore:
            own = self._gitignore(path)
            inherited = () if self._is_repository_root(path) else tuple((spec, f"{prefix}{name}/") for spec, prefix in folder.gitignores)
            chain = ((own, ""),) + inherited if own is not None else inherited
        return _Folder(path, real, relative, chain)

    def _excluded_by_name(self, name: str, relative: str | None, is_dir: bool) -> bool:
        """.git, or an exclude pattern matching the path from the root (else the name) or, anchored, the name."""
        if name == ".git":
            return True
        slash = "/" if is_dir else ""
        return self.excludes.match_file((relative if relative is not None else name) + slash) or (
            self.excludes.anchored and self.excludes.match_file(name + slash)
        )

    def entry_excluded(self, folder: "_Folder", name: str, relative: str | None, is_dir: bool) -> bool:
        """What ``excluded`` answers, for an entry met in a walk of ``folder`` (no path arithmetic per file)."""
        return self._excluded_by_name(name, relative, is_dir) or _ignored_in(folder.gitignores, name, is_dir)

    def excluded(self, path: Path, is_dir: bool) -> bool:
        if self._excluded_by_name(path.name, self.relative_to_root(str(_resolved(path))), is_dir):
            return True
        return self.respect_gitignore and self._git_ignored(path, is_dir)

    def excluded_with_parents(self, path: Path) -> bool:
        """A file named explicitly, excluded by itself or by a folder above it (--force-exclude)."""
        if self.excluded(path, False):
            return True
        resolved = _resolved(path)
        for parent in resolved.parents:
            if parent == self.root:
                break
            if self.excluded(parent, True):
                return True
        return False

    def _git_ignored(self, path: Path, is_dir: bool) -> bool:
        return _ignored_in(self._gitignore_chain(path.parent), path.name, is_dir)

    def _is_repository_root(self, directory: Path) -> bool:
        found = self._repository_roots.get(directory)
        if found is None:
            found = self._repository_roots[directory] = (directory / ".git").exists()
        return found

    def _gitignore(self, directory: Path):
        if directory not in self._gitignores:
            spec = None
            ignore_file = directory / ".gitignore"
            if ignore_file.is_file():
                try:
                    lines = ignore_file.read_text(encoding="utf-8", errors="replace").splitlines()
                    spec = _Spec(lines)
                except OSError:
                    spec = None
            self._gitignores[directory] = spec
        return self._gitignores[directory]


def discover(paths: list[Path], settings: Settings, surfaces: list[Surface], force_exclude: bool = False) -> Iterator[tuple[Path, Surface | None]]:
    """Files to lint, each with the surface that claims it (None: unreadable, report it)."""
    ignore: _Ignore | None = None  # built on first need: a run over named files often needs none
    seen: set[str] = set()  # real paths
    for path in paths:
        if not path.exists() and not path.is_symlink():
            raise PathError(f"{path}: no such file or directory")
        if path.is_dir():
            ignore = ignore or _Ignore(settings)
            yield from _walk(path, ignore, surfaces, seen)
            continue
        if force_exclude and (ignore := ignore or _Ignore(settings)).excluded_with_parents(path):
            continue
        resolved = str(_resolved(path))
        if resolved in seen:
            continue
        seen.add(resolved)
        # An explicitly named file is linted: by the surface that claims it, else as Python.
        surface = _claim(path, surfaces)
        yield path, surface or next(s for s in surfaces if s.name == "python")


HEAD_BYTES = 256  # as much of a file's start as surfaces look at to claim it by its first line


def is_excluded(path: Path, settings: Settings) -> bool:
    """Whether excludes or a .gitignore cover ``path`` or a folder above it (what --force-exclude skips).
    The path need not exist (a name given with --stdin-filename)."""
    return _Ignore(settings).excluded_with_parents(path)


def claim_named(path: Path, head: bytes, surfaces: list[Surface]) -> Surface:
    """The surface for a file named explicitly: by its name, then by ``head`` (a shebang), else Python."""
    for probe in (b"", head):
        for surface in surfaces:
            if surface.claims(path.name, probe):
                return surface
    return next(surface for surface in surfaces if surface.name == "python")


def _resolved(path: Path) -> Path:
    """The real path, or the path as given when it cannot be resolved (a symlink loop): reading it
    later reports why."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path.absolute()


def _claim(path: Path, surfaces: list[Surface]) -> Surface | None:
    """The surface that claims a file on disk; None when none does or it cannot be read."""
    surface = _claim_by_name(path.name, surfaces)
    if surface is not None:
        return surface
    return _claim_by_head(path, surfaces)


def _claim_by_head(path: Path, surfaces: list[Surface]) -> Surface | None:
    """The surface that claims a file its name left open, by its first bytes (a shebang)."""
    if not path.is_file():
        return None  # a FIFO or a device: opening it to look for a shebang could block forever
    try:
        with path.open("rb") as handle:
            head = handle.read(HEAD_BYTES)
    except OSError:
        return None
    return next((s for s in surfaces if s.claims(path.name, head)), None)


def _walk(top: Path, ignore: _Ignore, surfaces: list[Surface], seen: set[str]) -> Iterator[tuple[Path, Surface | None]]:
    # Strings, not pathlib, per entry: a tree has thousands of files, and each Path operation parses
    # its argument again. Each folder carries its real path, its path relative to the root and the
    # .gitignore files that apply in it, so that an entry's are one join away.
    stack = [ignore.folder(top, str(_resolved(top)))]
    visited_dirs: set[tuple[int, int]] = set()
    while stack:
        folder = stack.pop()
        try:
            stat = os.stat(folder.path)
            key = (stat.st_dev, stat.st_ino)
            if key in visited_dirs:
                continue  # a symlink loop
            visited_dirs.add(key)
            entries = sorted(os.scandir(folder.path), key=lambda e: e.name)
        except OSError as exc:
            # The walk goes on; the user hears which folder was not read, as from ruff.
            sys.stderr.write(f"vllm-lint: warning: {folder.path}: cannot read the folder ({exc.strerror or exc}); skipped\n")
            continue
        subfolders = []
        for entry in entries:
            name = entry.name
            try:
                is_dir = entry.is_dir()
                linked = entry.is_symlink()
                real = str(_resolved(Path(entry.path))) if linked else os.path.join(folder.real, name)
            except OSError:
                is_dir, linked = False, True  # a symlink loop: claimed by its name below, reading it says what is wrong
                real = os.path.abspath(entry.path)
            if linked or folder.relative is None:
                relative = ignore.relative_to_root(real)
            else:
                relative = f"{folder.relative}/{name}" if folder.relative else name
            if ignore.entry_excluded(folder, name, relative, is_dir):
                continue
            if is_dir:
                subfolders.append(ignore.subfolder(folder, name, folder.path / name, real, relative))
                continue
            surface = _claim_by_name(name, surfaces)
            if surface is None and _may_have_shebang(name):
                surface = _claim_by_head(folder.path / name, surfaces)
            if surface is None or real in seen:
                continue
            seen.add(real)
            yield folder.path / name, surface  # a child of a Path: its folders are not parsed again
        stack.extend(reversed(subfolders))


def _claim_by_name(name: str, surfaces: list[Surface]) -> Surface | None:
    for surface in surfaces:
        if surface.claims(name, b""):
            return surface
    return None


def _may_have_shebang(name: str) -> bool:
    return suffix_of(name) == "" and not name.startswith(".")


@lru_cache(maxsize=8)
def _compiled_per_file_ignores(per_file_ignores: tuple, codes: tuple[str, ...]) -> list[tuple[object, frozenset[str]]]:
    import pathspec

    return [
        (pathspec.GitIgnoreSpec.from_lines([pattern]), frozenset(expand_selectors(selectors, list(codes), "per-file-ignores")))
        for pattern, selectors in per_file_ignores
    ]


def _ignored_for_file(path: Path, settings: Settings, codes: list[str]) -> frozenset[str]:
    """The codes ``per-file-ignores`` switches off for ``path``."""
    if not settings.per_file_ignores:
        return frozenset()
    try:
        relative = _resolved(path).relative_to(settings.root).as_posix()
    except ValueError:
        relative = path.as_posix()
    ignored: set[str] = set()
    for spec, selected in _compiled_per_file_ignores(settings.per_file_ignores, tuple(codes)):
        if spec.match_file(relative):
            ignored |= selected
    return frozenset(ignored)


def noqa_codes(line: str) -> set[str] | None:
    """Codes a line's ``# noqa`` suppresses; an empty set means all; None: no noqa."""
    match = NOQA.search(line) or MARKDOWN_NOQA.search(line)
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
) -> FileResult:
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
    result = lint_bytes(path, shown, data, surface, options, before_parse)
    if stat is not None:
        from vllm_lint.engine.cache import content_hash

        result.source = (stat.st_size, stat.st_mtime_ns, content_hash(data))
    return result


def lint_bytes(
    path: Path,
    shown: str,
    data: bytes,
    surface: Surface,
    options: RunOptions,
    before_parse: Callable[[], None] | None = None,
) -> FileResult:
    result = FileResult(shown)
    if SKIP_FILE.search(data):
        return result
    settings = options.settings
    job = LintJob(
        path=path,
        display=shown,
        data=data,
        enabled=options.enabled,
        launch_settings=LaunchSettings(settings.fix_max_model_len, settings.target_vllm_version),
        api_version=settings.target_vllm_version,
    )
    if not surface.may_match(job):
        return result
    if before_parse is not None:
        before_parse()
    result.parsed = True
    diagnostics = [d for d in surface.lint(job) if d.code in options.enabled]
    if not diagnostics:
        return result
    lines = data.decode("utf-8", errors="replace").split("\n")
    ignored = _ignored_for_file(path, settings, options.codes)
    kept = []
    for diagnostic in diagnostics:
        if diagnostic.code != "VLL000" and (diagnostic.code in ignored or _suppressed(diagnostic, lines)):
            result.suppressed += 1
            continue
        kept.append(diagnostic)
    result.diagnostics = sorted(kept, key=Diagnostic.sort_key)
    return result
