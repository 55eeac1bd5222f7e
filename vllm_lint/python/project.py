"""The project's own modules, one import away: which file an import names, and what that file's functions do.

Imports are resolved to files as Python would find them when the project runs, never matched by name:
``from .model import load`` next to the importer; ``import model`` in the importer's folder (a script's
``sys.path[0]``); ``from pkg.model import load`` from the folder that holds the importer's top package, the
project root, or its ``src/``. A module outside the project root (installed packages) is never read.

Each file's summary (summary.py) comes from the result cache when the file is unchanged, else from this
process's memory, else it is computed: parsed with LibCST, but only when the file could matter. A file
matters when its code calls what makes a summary hold something (``pipeline(``, ``from_pretrained(``,
vLLM's engine classes) or when a project module it imports does; any other file gets an empty summary
without being parsed. Every file read for a lint is one of its dependencies: the cached result of the
importer holds only while they are unchanged (engine/cache.py).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from vllm_lint.hashing import content_hash
from vllm_lint.python.summary import EMPTY, Effect, FunctionSummary, ModuleSummary
from vllm_lint.lazy_re import lazy_compile

# Larger files are not summarized (a generated module), and chains stop this many modules away.
_MAX_BYTES = 1 << 20
_MAX_MODULES_AWAY = 3
_BYTES_DEEP = 1
# What makes a summary worth a parse, called in the file's code: a model load, a pipeline, a vLLM engine
# (each is a call of one of these names, vocabulary.call_effect; an alias first names it in an import).
# App objects are recorded in the summaries that are made, not a reason to make one. Each expression starts
# with its literal, so that ``re`` scans for it fast; the word boundary before it is checked by hand.
_MATTERS = tuple(
    re.compile(word + rb"[ \t]*(?:\(|as\b)")
    for word in (rb"pipeline", rb"from_pretrained", rb"LLM", rb"LLMEngine", rb"AsyncLLM", rb"from_engine_args")
)
_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


_MATTERS_WORDS = (b"pipeline", b"from_pretrained", b"LLM", b"from_engine_args")  # in every match


def _calls_what_matters(data: bytes) -> bool:
    if not any(word in data for word in _MATTERS_WORDS) or not _calls_in(data):
        return False
    from vllm_lint.python.prefilter import code_only

    # On the bytes first: blanking strings and dropping comments only takes calls away (a call in the code is in
    # the bytes, after the same character), and most modules that name these words call none of them.
    return _calls_in(code_only(data))


def _calls_in(code: bytes) -> bool:
    for pattern in _MATTERS:
        for match in pattern.finditer(code):
            start = match.start()
            if start and code[start - 1] in _WORD:
                continue
            if code.endswith(b"class ", 0, start) or code.endswith(b"def ", 0, start):
                continue  # defining it, not calling it
            return True
    return False


_IMPORT_LINE = lazy_compile(rb"^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import\b|import[ \t]+([\w., \t]+))", re.MULTILINE)
# ``from .service import answer`` / ``from .service import (a, b as c)``: what a package's __init__ re-exports.
_FROM_IMPORT = lazy_compile(rb"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]*(\([^)]*\)|[^\n#;]*)", re.MULTILINE)

Stamp = tuple[int, int, str]  # size, mtime_ns, content hash
# A module's summary from its path and bytes: summarizer.summarize_source, handed in by whoever makes the store
# (it parses, so it sits above the semantics this module's Project serves).
Summarize = Callable[[Path, bytes], ModuleSummary]


@dataclass(frozen=True, slots=True)
class Reached:
    """An effect in another module that a call leads to."""

    effect: Effect
    path: Path  # the module it is in
    chain: tuple[str, ...]  # ``model.generate_text``, ``model._run``, ... from the called function to it


class SummaryStore:
    """The summaries of one process's files: from the cache, from memory, or computed on first need."""

    def __init__(self, summarize: Summarize, known: Mapping[str, object] | None = None) -> None:
        self._summarize = summarize
        self._known = known or {}
        self._memo: dict[str, tuple[Stamp, ModuleSummary]] = {}
        # file -> (whether it matters, the (file, content hash) pairs that decided it): a process that outlives
        # one run (the language server) decides again when one of them changed.
        self._matters: dict[str, tuple[bool, tuple[tuple[str, str | None], ...]]] = {}
        self._reads: dict[str, tuple[Stamp, bytes] | None] = {}
        self._checked: set[str] = set()
        self.used: dict[str, Stamp] = {}  # files read for the current lint, for the importer's cache entry
        self.module_files: dict[tuple[str, str, str, int], Path | None] = {}  # (folder, root, module, level) -> file
        self.package_tops: dict[str, str] = {}  # folder -> the outermost package folder it lies in (or itself)
        self.is_file: dict[str, bool] = {}  # candidate module paths: absolute imports from many folders share them
        self.computed: dict[str, list] = {}  # summaries made since taken, for the result cache

    def begin_file(self) -> None:
        self.used = {}
        self._checked = set()  # files stat'ed for this lint: one that changed since is read again

    def forget_files(self) -> None:
        """Which files exist is learnt again: where imports lead, and every decision and summary that rested on a
        file being absent (a module that did not matter because what it imports was not there: its summary was
        left empty). A summary that was computed depends on its file's content alone, and stays."""
        self.module_files.clear()
        self.package_tops.clear()
        self.is_file.clear()
        self._matters.clear()
        self._memo = {key: kept for key, kept in self._memo.items() if kept[1] is not EMPTY}

    def take_computed(self) -> dict[str, list]:
        computed, self.computed = self.computed, {}
        return computed

    def _read(self, path: Path) -> tuple[Stamp, bytes] | None:
        """The file's stamp and bytes; read (and hashed) again only when its size or mtime changed."""
        key = str(path)
        if key not in self._checked:
            self._checked.add(key)
            try:
                stat = os.stat(path)
            except OSError:
                self._reads[key] = None
            else:
                kept = self._reads.get(key)
                if kept is None or kept[0][:2] != (stat.st_size, stat.st_mtime_ns):
                    try:
                        if stat.st_size > _MAX_BYTES:
                            self._reads[key] = None
                        else:
                            data = path.read_bytes()
                            self._reads[key] = ((stat.st_size, stat.st_mtime_ns, content_hash(data)), data)
                    except OSError:
                        self._reads[key] = None
        found = self._reads.get(key)
        if found is not None:
            self.used[key] = found[0]
        return found

    def summary(self, path: Path, project: Project) -> ModuleSummary:
        read = self._read(path)
        if read is None:
            return EMPTY
        stamp, data = read
        key = str(path)
        remembered = self._memo.get(key)
        if remembered is not None and remembered[0][2] == stamp[2]:
            return remembered[1]
        summary = self._from_cache(key, stamp)
        if summary is None:
            before = set(self.used)
            matters = self.matters(path, project)
            # An empty summary of a file that does not matter holds only while the files that decided so stay
            # as they are.
            others = [[other, self.used[other][2]] for other in self.used if other not in before and other != key]
            summary = self._summarize(path, data) if matters else EMPTY
            self.computed[key] = [*stamp, summary.to_json(), others]
        self._memo[key] = (stamp, summary)
        return summary

    def _from_cache(self, key: str, stamp: Stamp) -> ModuleSummary | None:
        entry = self._known.get(key)
        if not isinstance(entry, list) or len(entry) != 5 or entry[2] != stamp[2] or not isinstance(entry[4], list):
            return None
        for item in entry[4]:
            if not isinstance(item, list) or len(item) != 2:
                return None
            read = self._read(Path(str(item[0])))
            if read is None or read[0][2] != item[1]:
                return None
        return ModuleSummary.from_json(entry[3])

    def matters(self, path: Path, project: Project, depth: int = 0) -> bool:
        """Whether the file's summary can hold anything (else it is empty, without a parse). The files read to
        decide are dependencies of the lint that asks, each time it is asked."""
        key = str(path)
        remembered = self._matters.get(key)
        if remembered is not None and all(self._digest(other) == digest for other, digest in remembered[1]):
            return remembered[0]
        before = set(self.used)
        read = self._read(path)
        if read is None:
            return False
        answer = _calls_what_matters(read[1])
        if not answer and depth < _BYTES_DEEP:
            self._matters[key] = (False, ((key, read[0][2]),))  # an import cycle ends here
            # A package's __init__ mostly re-exports: it is no step of its own.
            step = 0 if path.name == "__init__.py" else 1
            answer = any(self.matters(target, project, depth + step) for target in project.imported_files(path, read[1]))
        decided_from = tuple((other, self.used[other][2]) for other in self.used if other not in before)
        self._matters[key] = (answer, decided_from or ((key, read[0][2]),))
        return answer

    def _digest(self, path: str) -> str | None:
        read = self._read(Path(path))
        return None if read is None else read[0][2]


_STORE: SummaryStore | None = None


def forget_files() -> None:
    """Find the project's modules afresh from now on: a process that outlives a run (the language and MCP servers)
    then sees a module created, moved or removed since it last looked."""
    if _STORE is not None:
        _STORE.forget_files()


def process_store(known: Mapping[str, object] | None, summarize: Summarize) -> SummaryStore:
    """This process's store; the summaries a run's cache holds are handed to it once."""
    global _STORE
    if _STORE is None:
        _STORE = SummaryStore(summarize, known)
    elif known and not _STORE._known:
        _STORE._known = known
    return _STORE


class Project:
    """The project as seen from one file being linted."""

    def __init__(self, importer: Path, root: Path | None, store: SummaryStore) -> None:
        # Real paths: the root comes resolved from the settings, and a file is named however the user named it.
        self.importer = Path(os.path.realpath(importer))
        self.root = Path(os.path.realpath(root)) if root is not None else None
        self._root_prefix = str(self.root).rstrip(os.sep) + os.sep if self.root is not None else ""
        self.store = store
        self._effects: dict[tuple[str, int, str, str], list[Reached]] = {}
        self._files = store.module_files  # shared by every file the process lints: resolution is by folder
        self._package_tops = store.package_tops
        self._is_file = store.is_file

    # -- files -------------------------------------------------------------------------------------------

    def _inside(self, path: str) -> bool:
        if self.root is None:
            return os.path.dirname(path) == str(self.importer.parent)
        return path.startswith(self._root_prefix)

    def _bases(self, folder: str, level: int) -> list[str]:
        """Where ``import x`` (``level`` dots) is looked for from a module in ``folder``."""
        if level:
            for _ in range(level - 1):
                folder = os.path.dirname(folder)
            return [folder]
        package = self._package_tops.get(folder)
        if package is None:
            package = folder
            while os.path.isfile(os.path.join(package, "__init__.py")) and os.path.dirname(package) != package:
                package = os.path.dirname(package)
            self._package_tops[folder] = package
        bases = [folder, package]
        if self.root is not None:
            bases += [str(self.root), os.path.join(str(self.root), "src")]
        return list(dict.fromkeys(bases))

    def module_file(self, importer: Path, module: str, level: int) -> Path | None:
        """The project file ``import module`` (``level`` leading dots) names from ``importer``."""
        folder = os.path.dirname(str(importer))
        key = (folder, str(self.root), module, level)
        if key not in self._files:
            self._files[key] = self._find_module(folder, module, level)
        found = self._files[key]
        return None if found == importer else found

    def _find_module(self, folder: str, module: str, level: int) -> Path | None:
        parts = [p for p in module.split(".") if p]
        for base in self._bases(folder, level):
            target = os.path.join(base, *parts)
            for candidate in ((target + ".py") if parts else None, os.path.join(target, "__init__.py")):
                if candidate is None or not self._inside(candidate):
                    continue
                found = self._is_file.get(candidate)
                if found is None:
                    found = self._is_file[candidate] = os.path.isfile(candidate)
                if found:
                    return Path(candidate)
        return None

    def resolve(self, importer: Path, module: str, level: int, name: str) -> tuple[Path, str] | None:
        """The file and the dotted name in it that ``name`` of ``module`` refers to (a submodule first)."""
        parts = name.split(".")
        for split in range(len(parts) - 1, -1, -1):
            sub = ".".join(p for p in (module, *parts[:split]) if p)
            if not sub and not level:
                continue
            path = self.module_file(importer, sub, level)
            if path is not None and split < len(parts):
                return path, ".".join(parts[split:])
        return None

    def imported_files(self, path: Path, data: bytes) -> list[Path]:
        """The project files a file's import lines name (read from its bytes, for ``matters``)."""
        found = []
        for dots, module, plain in _IMPORT_LINE.findall(data):
            names = [(len(dots), module.decode("ascii", "replace"))] if plain == b"" else [
                (0, item.strip().split()[0].decode("ascii", "replace")) for item in plain.split(b",") if item.strip()
            ]
            for level, name in names:
                target = self.module_file(path, name, level) if name or level else None
                if target is not None:
                    found.append(target)
        return found

    def proto_source(self, grpc_module: str) -> bytes | None:
        """The ``.proto`` file a generated ``<stem>_pb2_grpc`` module was made from: ``<stem>.proto`` next to
        that module, the importer or the project root, or in a ``protos/``/``proto/`` folder of one of them.
        None when there is none, or several that differ. Each one read is a dependency of the lint."""
        stem = grpc_module.rpartition(".")[2].removesuffix("_pb2_grpc")
        if not stem or stem == grpc_module.rpartition(".")[2]:
            return None
        folders = []
        generated = self.module_file(self.importer, grpc_module, 0)
        if generated is not None:
            folders.append(str(generated.parent))
        folders.append(str(self.importer.parent))
        if self.root is not None:
            folders.append(str(self.root))
        found: set[bytes] = set()
        for folder in dict.fromkeys(folders):
            for sub in ("", "protos", "proto"):
                candidate = os.path.join(folder, sub, f"{stem}.proto")
                read = self.store._read(Path(candidate)) if self._inside(candidate) else None
                if read is not None:
                    found.add(read[1])
        return found.pop() if len(found) == 1 else None

    # -- what functions do ---------------------------------------------------------------------------------

    def function(self, importer: Path, module: str, level: int, name: str, depth: int = 0
                 ) -> tuple[Path, str, ModuleSummary, FunctionSummary | None] | None:
        """The summary of the function (``fn``, ``Class``, ``Class.method``) an import names, through re-exports."""
        resolved = self.resolve(importer, module, level, name)
        if resolved is None or depth > _MAX_MODULES_AWAY:
            return None
        path, key = resolved
        summary = self.store.summary(path, self)
        found = summary.functions.get(key)
        head, _, rest = key.partition(".")
        if found is None and head not in summary.names:
            source = summary.imports.get(head) or self._reexported(path, head)
            if source is not None:
                module2, level2, name2 = source
                return self.function(path, module2, level2, f"{name2}.{rest}" if rest else name2, depth + 1)
        return path, key, summary, found

    def _reexported(self, path: Path, name: str) -> tuple[str, int, str] | None:
        """Where a module that was not parsed (its summary is empty) imports ``name`` from, read off its bytes."""
        read = self.store._read(path)
        if read is None or name.encode() not in read[1]:
            return None
        for dots, module, names in _FROM_IMPORT.findall(read[1]):
            for item in names.strip(b"()").replace(b"\\\n", b" ").split(b","):
                words = item.split()
                if not words:
                    continue
                local = words[2] if len(words) == 3 and words[1] == b"as" else words[0]
                if local.decode("ascii", "replace") == name:
                    return module.decode("ascii", "replace"), len(dots), words[0].decode("ascii", "replace")
        return None

    def name_producers(self, importer: Path, module: str, level: int, name: str, depth: int = 0) -> set[str]:
        """What made the object a module-level name of another module holds, or a function of it returns."""
        found = self.function(importer, module, level, name, depth)
        if found is None:
            return set()
        path, key, summary, function = found
        if function is not None:
            return set(function.returns)
        return set(summary.names.get(key, ()))

    def app_framework(self, importer: Path, module: str, level: int, name: str) -> str | None:
        resolved = self.resolve(importer, module, level, name)
        if resolved is None:
            return None
        path, key = resolved
        return self.store.summary(path, self).apps.get(key)

    def effects(self, importer: Path, module: str, level: int, name: str) -> list[Reached]:
        """The effects a call of ``name`` (from ``module``) leads to, in its module and the modules it calls."""
        key = (str(importer), level, module, name)
        if key not in self._effects:
            self._effects[key] = self._collect(importer, module, level, name, 0, set())
        return self._effects[key]

    def _collect(self, importer: Path, module: str, level: int, name: str, depth: int, seen: set[tuple[str, str]]) -> list[Reached]:
        found = self.function(importer, module, level, name)
        if found is None or depth >= _MAX_MODULES_AWAY:
            return []
        path, key, _, function = found
        if function is None or (str(path), key) in seen:
            return []
        seen.add((str(path), key))
        stem = path.parent.name if path.name == "__init__.py" else path.stem
        reached = [Reached(e, path, tuple(f"{stem}.{f}" for f in e.chain)) for e in function.effects]
        for call in function.calls:
            for deeper in self._collect(path, call.module, call.level, call.name, depth + 1, seen):
                reached.append(Reached(deeper.effect, deeper.path, tuple(f"{stem}.{f}" for f in call.chain) + deeper.chain))
        return reached
