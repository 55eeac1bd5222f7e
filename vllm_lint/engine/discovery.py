"""Which files a run lints, and which surface claims each: the walk, the excludes and the .gitignore files.

Discovery walks directories once, honouring .gitignore files and the configured excludes; each file is
claimed by one surface, by its name or, for a name without a suffix, by its first line (a shebang).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path

from vllm_lint import folder_names
from vllm_lint.config import Settings
from vllm_lint.surfaces import Surface, suffix_of
from vllm_lint.lazy_re import lazy_compile


class PathError(Exception):
    """A path named on the command line does not exist; exit code 2."""


# A gitignore line that is just a name (no glob, no "/", no "!", no escape, no surrounding space): it matches
# a path whose file or any folder has exactly that name, which needs neither pathspec nor a regex.
_PLAIN_NAME = lazy_compile(r"[\w.\-]+")


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
        if all(p.include for p in patterns) and all(getattr(p, "regex", None) is not None for p in patterns):
            sources = [re.sub(r"\(\?P<\w+>", "(?:", p.regex.pattern) for p in patterns]  # type: ignore[union-attr]
            self._combined = re.compile("|".join(f"(?:{source})" for source in sources)) if sources else None
            self._empty = not sources

    @property
    def plain_names(self) -> frozenset[str] | None:
        """The names, when every pattern is a plain name (a path matches when any of its parts is one)."""
        return frozenset() if self._empty else self._names

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
        self.root_text = str(resolved_path(settings.root))
        patterns = [*settings.exclude, *settings.extend_exclude]
        self.excludes = _Spec(patterns)
        self.respect_gitignore = settings.respect_gitignore
        self._gitignores: dict[Path, object | None] = {}
        self._repository_roots: dict[Path, bool] = {}  # per folder: does it hold .git (asked once per file otherwise)

    def relative_to_root(self, real: str) -> str | None:
        """``real`` (resolved) relative to the settings root, posix; "" for the root; None outside it."""
        root = self.root_text
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
        if self._excluded_by_name(path.name, self.relative_to_root(str(resolved_path(path))), is_dir):
            return True
        return self.respect_gitignore and self._git_ignored(path, is_dir)

    def excluded_with_parents(self, path: Path) -> bool:
        """A file named explicitly, excluded by itself or by a folder above it (--force-exclude)."""
        if self.excluded(path, False):
            return True
        resolved = resolved_path(path)
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
    for path, surface in _discover(paths, settings, surfaces, force_exclude, as_paths=True):
        yield (path if isinstance(path, Path) else Path(path)), surface


def discover_names(paths: list[Path], settings: Settings, surfaces: list[Surface], force_exclude: bool = False) -> Iterator[tuple[str, Surface | None]]:
    """What ``discover`` finds, each file named by the string its Path would show: a run answered from the
    result cache needs no Path per file (building one parses its text again, ~3 µs a file)."""
    for path, surface in _discover(paths, settings, surfaces, force_exclude, as_paths=False):
        yield str(path), surface


def _discover(paths: list[Path], settings: Settings, surfaces: list[Surface], force_exclude: bool, as_paths: bool) -> Iterator[tuple[Path | str, Surface | None]]:
    ignore: _Ignore | None = None  # built on first need: a run over named files often needs none
    folder_names.forget()  # folders are listed afresh by each run
    seen: set[str] = set()  # real paths
    for path in paths:
        if not path.exists() and not path.is_symlink():
            raise PathError(f"{path}: no such file or directory")
        if path.is_dir():
            ignore = ignore or _Ignore(settings)
            yield from _walk(path, ignore, surfaces, seen, as_paths)
            continue
        if force_exclude and (ignore := ignore or _Ignore(settings)).excluded_with_parents(path):
            continue
        resolved = str(resolved_path(path))
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


def resolved_path(path: Path) -> Path:
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


def _walk(top: Path, ignore: _Ignore, surfaces: list[Surface], seen: set[str], as_paths: bool = True) -> Iterator[tuple[Path | str, Surface | None]]:
    # Strings, not pathlib, per entry: a tree has thousands of files, and each Path operation parses
    # its argument again. Each folder carries its real path, its path relative to the root and the
    # .gitignore files that apply in it, so that an entry's are one join away.
    stack = [ignore.folder(top, str(resolved_path(top)))]
    plain_names = ignore.excludes.plain_names
    claimed: dict[str, Surface | None] = {}  # by name: the surfaces claim by name alone here
    visited_dirs: set[tuple[int, int]] = set()
    while stack:
        folder = stack.pop()
        try:
            stat = os.stat(folder.path)
            key = (stat.st_dev, stat.st_ino)
            if key in visited_dirs:
                continue  # a symlink loop
            visited_dirs.add(key)
            entries = sorted(os.scandir(folder.path), key=attrgetter("name"))
            folder_names.remember(folder.real, frozenset(entry.name for entry in entries))  # for the pin search
        except OSError as exc:
            # The walk goes on; the user hears which folder was not read, as from ruff.
            sys.stderr.write(f"vllm-lint: warning: {folder.path}: cannot read the folder ({exc.strerror or exc}); skipped\n")
            continue
        subfolders = []
        if not as_paths:  # what str(folder.path / name) gives, by a concatenation
            shown = str(folder.path)
            shown = "" if shown == os.curdir else shown if shown.endswith(os.sep) else shown + os.sep
        # With plain-name excludes (the defaults), an entry whose path from the root runs through this folder
        # is excluded by its own name alone once no part of the folder's path is one: a set lookup per entry.
        clear = plain_names is not None and (folder.relative is None or plain_names.isdisjoint(folder.relative.split("/")))
        real_prefix = folder.real if folder.real.endswith(os.sep) else folder.real + os.sep  # what os.path.join adds
        # A folder outside the root that does not hold it has no entry inside it, but through a symlink.
        outside = folder.relative is None and not ignore.root_text.startswith(real_prefix)
        for entry in entries:
            name = entry.name
            try:
                is_dir = entry.is_dir()
                linked = entry.is_symlink()
                real = str(resolved_path(Path(entry.path))) if linked else real_prefix + name
            except OSError:
                is_dir, linked = False, True  # a symlink loop: claimed by its name below, reading it says what is wrong
                real = os.path.abspath(entry.path)
            if linked or folder.relative is None:
                relative = None if outside and not linked else ignore.relative_to_root(real)
                by_name = clear and relative is None
            else:
                relative = f"{folder.relative}/{name}" if folder.relative else name
                by_name = clear
            if by_name:
                if name == ".git" or name in plain_names or (folder.gitignores and _ignored_in(folder.gitignores, name, is_dir)):  # type: ignore[operator]
                    continue
            elif ignore.entry_excluded(folder, name, relative, is_dir):
                continue
            if is_dir:
                subfolders.append(ignore.subfolder(folder, name, folder.path / name, real, relative))
                continue
            try:
                surface = claimed[name]  # a name met before in this walk (__init__.py, README.md...)
            except KeyError:
                surface = claimed[name] = _claim_by_name(name, surfaces)
            if surface is None and _may_have_shebang(name):
                surface = _claim_by_head(folder.path / name, surfaces)
            if surface is None or real in seen:
                continue
            seen.add(real)
            yield (folder.path / name if as_paths else shown + name), surface  # a Path's child: its folders are not parsed again
        stack.extend(reversed(subfolders))


def _claim_by_name(name: str, surfaces: list[Surface]) -> Surface | None:
    for surface in surfaces:
        if surface.claims(name, b""):
            return surface
    return None


def _may_have_shebang(name: str) -> bool:
    return suffix_of(name) == "" and not name.startswith(".")
