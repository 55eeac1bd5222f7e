"""The result cache: a re-run over unchanged files costs a ``stat`` per file.

One JSON file per (tool build, effective settings) under ``.vllm_lint_cache/``
holds, for each file, its content hash and its findings (findings are cached
too, not only clean files). An entry counts only when the file's content hash
matches; the file's size and mtime are a shortcut that spares re-reading it,
trusted only when the mtime is safely older than the cache entry (a file
rewritten within the same clock tick as it was cached is read again, as git
does for "racily clean" files). A result that used other files (the summaries of
the project modules a handler calls into, python/project.py) lists them, and
counts only while each is unchanged too; the summaries themselves are kept in the
same file, under each module's content hash. JSON, never pickle: a cache directory
can come from a stranger's pull request, and loading it must not run code.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import fields
from pathlib import Path
from stat import S_ISLNK

from vllm_lint import __version__
from vllm_lint.diagnostics import Applicability, CellLocation, Diagnostic, Edit, Fix, Position, RelatedLocation, Severity
from vllm_lint.engine.runner import FileResult, RunOptions

from vllm_lint.hashing import blake2b, content_hash
from vllm_lint.surfaces import ABSENT

CACHE_DIR_NAME = ".vllm_lint_cache"
# 2: a result's fields that hold their defaults are left out; 3: each distinct result is stored once, in
# "results", and a file's entry names it by its index (most files of a tree share one: no finding, one target)
_FORMAT = 3
# An mtime this close to the moment an entry was written may hide a same-tick rewrite.
_RACY_SECONDS = 2.0


def default_cache_dir(options: RunOptions) -> Path:
    configured = os.environ.get("VLLM_LINT_CACHE_DIR")
    return Path(configured) if configured else options.settings.root / CACHE_DIR_NAME


_PACKAGE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # all of vllm_lint, not only this engine package


def _build_fingerprint(package: str = _PACKAGE) -> str:
    """The tool's version plus its own sources and rules: a changed rule invalidates old results.

    An install from a wheel is described by its RECORD, which the installer wrote with every installed file
    and its hash: one small read per run. Anything else (a source checkout, an editable install, where a
    developer edits a rule) by the names, sizes and mtimes of its files, looked at on every run."""
    digest = blake2b(__version__.encode(), digest_size=16)
    record = _installed_record(package)
    if record is not None:
        digest.update(b"RECORD:" + record)
        return digest.hexdigest()
    roots = [package]
    if package == _PACKAGE:
        from vllm_lint.resources import rules_dir, vllm_api_dir

        roots += [str(rules_dir()), str(vllm_api_dir())]
    for root in roots:
        for path, stat in sorted(_source_files(root)):
            digest.update(f"{os.path.basename(path)}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return digest.hexdigest()


def _installed_record(package: str) -> bytes | None:
    """The RECORD of the distribution installed beside ``package`` (site-packages/vllm_lint-X.dist-info),
    when it lists this package's files; None for a source checkout or an editable install."""
    record = os.path.join(os.path.dirname(package), f"vllm_lint-{__version__}.dist-info", "RECORD")
    try:
        with open(record, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    return data if b"\nvllm_lint/__init__.py," in b"\n" + data else None


def _source_files(folder: str) -> list[tuple[str, os.stat_result]]:
    """The .py, .yaml and .json files under ``folder``, outside __pycache__ (os.scandir: every warm run pays this)."""
    found: list[tuple[str, os.stat_result]] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return found  # a data folder this install lacks
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            if entry.name != "__pycache__":
                found += _source_files(entry.path)
        elif entry.name.endswith((".py", ".yaml", ".json")):
            found.append((entry.path, entry.stat()))
    return found


def _settings_fingerprint(options: RunOptions) -> str:
    settings = options.settings
    described = {f.name: repr(getattr(settings, f.name)) for f in fields(settings) if f.name != "source"}
    described["enabled"] = repr(sorted(options.enabled))
    # A result kept without edits must never serve a run that reads them: the two are kept apart.
    described["fix_edits"] = repr(options.fix_edits)
    return blake2b(json.dumps(described, sort_keys=True).encode(), digest_size=16).hexdigest()


class _Entry:
    """A result looked up or computed in this run, with the size, mtime and hash of the bytes it is for."""

    __slots__ = ("size", "mtime_ns", "digest", "written", "result")

    def __init__(self, size: int, mtime_ns: int, digest: str, written: float, result: dict) -> None:
        self.size, self.mtime_ns, self.digest, self.written, self.result = size, mtime_ns, digest, written, result


class ResultCache:
    def __init__(self, directory: Path, options: RunOptions) -> None:
        self.directory = directory
        self.file = directory / f"v{_FORMAT}-{_build_fingerprint()[:16]}-{_settings_fingerprint(options)[:16]}.json"
        self._settings = options.settings
        # Entries as read (JSON lists), turned into _Entry only when looked up: a warm run over a big tree
        # should not build thousands of objects before it needs the first.
        self._raw: dict[str, object] = {}
        self._results: list = []  # the distinct results the entries name by index
        self._entries: dict[str, _Entry] = {}
        # Module summaries by path: [size, mtime_ns, hash, summary, files it depends on] (python/project.py).
        self.summaries: dict[str, list] = {}
        self._new_summaries: dict[str, list] = {}
        self._dirty = False
        self._started = time.time()
        # By the folder part of a file's name: its absolute form (ending in a separator), and its vLLM target.
        self._prefixes: dict[str, str] = {}
        self._folder_targets: dict[str, str | None] = {}
        self._load()

    # -- reading -----------------------------------------------------------------------------------

    def _usable(self) -> bool:
        """A cache folder that is a symlink (a pull request can commit one) is neither read nor written:
        it could point anywhere, and its contents could be anyone's."""
        return not (self.directory.is_symlink() or self.file.is_symlink())

    def _load(self) -> None:
        if not self._usable():
            return
        try:
            loaded = json.loads(self.file.read_bytes())
            files = loaded["files"]
        except (OSError, ValueError, KeyError, TypeError):
            return  # missing, corrupt or foreign: start afresh
        results = loaded.get("results")
        if isinstance(files, dict) and isinstance(results, list):
            self._raw, self._results = files, results
        summaries = loaded.get("summaries") if isinstance(loaded, dict) else None
        if isinstance(summaries, dict):
            self.summaries = summaries

    @staticmethod
    def key(path: Path) -> str:
        # The absolute path as named (no resolve(): a syscall per component, per file, on every run).
        return os.path.abspath(path)

    def lookup(self, path: Path | str, shown: str) -> FileResult | None:
        """The cached result for an unchanged file, shown under ``shown``; None when it must be linted.
        On a warm run this is a ``stat`` and dict lookups per file: it answers for every file of the tree."""
        name = os.fspath(path)
        base = os.path.basename(name)
        folder = name[: len(name) - len(base)]
        try:
            prefix = self._prefixes[folder]
        except KeyError:
            absolute = os.path.abspath(folder or os.curdir)
            prefix = self._prefixes[folder] = absolute if absolute.endswith(os.sep) else absolute + os.sep
        # the key, os.path.abspath(name), from its folder's: the same string, the folder normalised once
        key = prefix + base if base not in ("", os.curdir, os.pardir) else os.path.abspath(name)
        entry = self._entries.get(key)
        if entry is not None:
            size, mtime_ns, digest, written, result = entry.size, entry.mtime_ns, entry.digest, entry.written, entry.result
        else:  # as read: checked here, not turned into an _Entry first (a warm run looks up every file once)
            raw = self._raw.get(key)
            if type(raw) is not list or len(raw) != 5:
                return None
            size, mtime_ns, digest, written, result = raw
            if type(result) is int and 0 <= result < len(self._results):
                result = self._results[result]
            if type(size) is not int or type(mtime_ns) is not int or type(digest) is not str or type(result) is not dict or type(written) not in (int, float):
                return None  # a malformed entry: lint the file again
        try:
            stat = os.lstat(name)
            linked = S_ISLNK(stat.st_mode)
            if linked:
                stat = os.stat(name)
        except OSError:
            return None
        # An mtime close to when the entry was written may hide a rewrite in the same clock tick ("racily clean").
        if not (stat.st_mtime_ns == mtime_ns and stat.st_size == size and stat.st_mtime_ns < (written - _RACY_SECONDS) * 1e9):
            try:
                with open(name, "rb") as handle:
                    data = handle.read()
            except OSError:
                return None
            if content_hash(data) != digest:
                return None
            self._entries[key] = _Entry(stat.st_size, stat.st_mtime_ns, digest, self._started, result)
            self._dirty = True
        dependencies = result.get("dependencies", [])
        if dependencies != [] and not self._unchanged(dependencies, written):
            return None
        if "target" in result and result["target"] != [self._current_target(name, folder, base, linked)]:
            return None  # the project now pins another vLLM: the file's findings may differ
        try:
            return _result_from_json(result, shown)
        except (KeyError, TypeError, ValueError):
            return None

    @staticmethod
    def _unchanged(dependencies: object, written: float) -> bool:
        """Whether every other file a result used is as it was (size and mtime, else the content hash)."""
        if not isinstance(dependencies, list):
            return False
        for item in dependencies:
            try:
                path, size, mtime_ns, digest = item
                if [size, mtime_ns, digest] == list(ABSENT):
                    if os.path.isfile(path):
                        return False  # a file that was not there when the result was computed
                    continue
                stat = os.stat(path)
                if stat.st_size == size and stat.st_mtime_ns == mtime_ns and stat.st_mtime_ns / 1e9 < written - _RACY_SECONDS:
                    continue
                with open(path, "rb") as handle:
                    if content_hash(handle.read()) != digest:
                        return False
            except (OSError, ValueError, TypeError):
                return False  # gone, unreadable, or a malformed entry
        return True

    # -- writing -----------------------------------------------------------------------------------

    def _current_target(self, name: str, folder: str, base: str, linked: bool) -> str | None:
        """The vLLM specifier the file ``name`` (``folder`` + ``base``) is judged against now
        (vllm_api.targets.file_target, vllm_lint.pins)."""
        configured = self._settings.target_vllm_version
        if configured:
            return configured  # the setting wins over any pin
        if not linked and not _may_be_dockerfile(base):
            # Any other file that is not a symlink has its folder's target, worked out once per folder: a warm
            # run answers this for every file it skips.
            try:
                return self._folder_targets[folder]
            except KeyError:
                from vllm_lint.pins import folder_file_target

                found = self._folder_targets[folder] = folder_file_target(os.path.dirname(name), self._settings.pin_search_tops).specifier
                return found
        from vllm_lint.surfaces.command_files import is_dockerfile_name
        from vllm_lint.vllm_api.targets import file_target

        path = Path(name)
        dockerfile = None
        if is_dockerfile_name(base):
            try:
                dockerfile = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                return None
        return file_target(path, dockerfile, None, self._settings.pin_search_tops, self._settings.vllm_images).specifier

    def store(self, path: Path, result: FileResult) -> None:
        """Remember a result, under the size, mtime and hash of the bytes it was linted from."""
        if not result.cacheable or result.source is None:
            return
        size, mtime_ns, digest = result.source
        self._entries[self.key(path)] = _Entry(size, mtime_ns, digest, self._started, _result_to_json(result))
        self._new_summaries.update(result.summaries)
        self._dirty = True

    def save(self) -> None:
        if not self._dirty or not self._usable():
            return
        # Entries of files this run did not look at stay as they were, unless malformed.
        results: list[dict] = []
        numbers: dict[str, int] = {}

        def number(result: object) -> int | None:
            """The index of ``result`` (one read, or an index into what was read) in the table written."""
            if type(result) is int:
                result = self._results[result] if 0 <= result < len(self._results) else None
            if type(result) is not dict:
                return None
            text = json.dumps(result, sort_keys=True)
            if text not in numbers:
                numbers[text] = len(results)
                results.append(result)
            return numbers[text]

        files = {}
        for key, raw in self._raw.items():
            if key in self._entries:
                continue  # replaced by this run's
            if isinstance(raw, list) and len(raw) == 5 and (index := number(raw[4])) is not None:
                files[key] = [*raw[:4], index]
        files.update((k, [e.size, e.mtime_ns, e.digest, e.written, number(e.result)]) for k, e in self._entries.items())
        from vllm_lint.atomic import atomic_write  # only a run that changed something writes

        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            _mark_directory(self.directory)
            summaries = {k: v for k, v in self.summaries.items() if isinstance(v, list) and len(v) == 5}
            summaries.update(self._new_summaries)
            document = {"format": _FORMAT, "results": results, "files": files, "summaries": summaries}
            atomic_write(self.file, json.dumps(document, separators=(",", ":")).encode())
        except OSError:
            pass  # a read-only checkout still lints; it just does not remember


def _may_be_dockerfile(name: str) -> bool:
    """A cheap first look for surfaces.command_files.is_dockerfile_name (whose module need not be loaded)."""
    return "ockerfile" in name or "ontainerfile" in name


def _mark_directory(directory: Path) -> None:
    """Tell git and backup tools to leave the cache alone, as ruff and pytest do."""
    ignore = directory / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# Created by vllm-lint automatically.\n*\n", encoding="utf-8")
    tag = directory / "CACHEDIR.TAG"
    if not tag.exists():
        tag.write_text("Signature: 8a477f597d28d172789f06886806bc55\n# vllm-lint result cache\n", encoding="utf-8")


# -- (de)serialising results --------------------------------------------------------------------


def _beside(path: str, shown: str) -> str:
    """``path`` relative to the folder of the finding's file, so a cached result holds wherever it is shown from."""
    return os.path.relpath(path, os.path.dirname(shown) or ".")


def _position(value: list) -> Position:
    return Position(int(value[0]), int(value[1]))


def _cell(value: list | None) -> CellLocation | None:
    if value is None:
        return None
    number, a, b, c, d = (int(v) for v in value)
    return CellLocation(number, Position(a, b), Position(c, d))


def _result_to_json(result: FileResult) -> dict:
    """The result as JSON, without the fields that hold their defaults (most files': a warm run reads them all)."""
    kept: dict = {"target": list(result.target)} if result.target is not None else {}
    if result.facts:
        kept["facts"] = result.facts.to_json()
    if result.suppressed:
        kept["suppressed"] = result.suppressed
    if result.parsed:
        kept["parsed"] = True
    if result.dependencies:
        kept["dependencies"] = [[path, *stamp] for path, stamp in sorted(result.dependencies.items())]
    if result.diagnostics:
        kept["diagnostics"] = _diagnostics_to_json(result)
    return kept


def _diagnostics_to_json(result: FileResult) -> list:
    return [
        {
            "code": d.code,
            "message": d.message,
            "start": [d.start.line, d.start.column],
            "end": [d.end.line, d.end.column],
            "severity": d.severity.value,
            "noqa_lines": list(d.noqa_lines),
            "cell": None if d.cell is None else [d.cell.cell, d.cell.start.line, d.cell.start.column, d.cell.end.line, d.cell.end.column],
            "related": [[_beside(r.path, d.path), r.start.line, r.start.column, r.end.line, r.end.column, r.message] for r in d.related],
            "fix": None
            if d.fix is None
            else {
                "applicability": d.fix.applicability.value,
                "message": d.fix.message,
                "edits": [[e.start.line, e.start.column, e.end.line, e.end.column, e.content] for e in d.fix.edits],
            },
        }
        for d in result.diagnostics
    ]


def _result_from_json(raw: dict, shown: str) -> FileResult:
    diagnostics = []
    for item in raw.get("diagnostics", ()):
        fix = None
        if item["fix"] is not None:
            edits = tuple(Edit(Position(int(a), int(b)), Position(int(c), int(d)), str(text)) for a, b, c, d, text in item["fix"]["edits"])
            fix = Fix(Applicability(item["fix"]["applicability"]), str(item["fix"]["message"]), edits)
        diagnostics.append(
            Diagnostic(
                code=str(item["code"]),
                message=str(item["message"]),
                path=shown,
                start=_position(item["start"]),
                end=_position(item["end"]),
                severity=Severity(item["severity"]),
                fix=fix,
                noqa_lines=tuple(int(n) for n in item["noqa_lines"]),
                cell=_cell(item.get("cell")),
                related=tuple(
                    RelatedLocation(os.path.normpath(os.path.join(os.path.dirname(shown), str(path))), Position(int(a), int(b)), Position(int(c), int(e)), str(text))
                    for path, a, b, c, e, text in item.get("related", ())
                ),
            )
        )
    target = (raw["target"][0],) if "target" in raw else None
    facts = None
    if raw.get("facts"):
        from vllm_lint.project.facts import FileFacts

        facts = FileFacts.from_json(raw["facts"])
    return FileResult(shown, diagnostics, int(raw.get("suppressed", 0)), bool(raw.get("parsed", False)), target=target, facts=facts)
