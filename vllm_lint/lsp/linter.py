"""The server's engine side, without the protocol: lint a document's unsaved text, its fixes, and the project
rules over the workspace's facts.

A document is linted as ``vllm-lint check --stdin-filename PATH -`` lints it: the path picks the surface and the
configuration, the text is what the editor holds (``engine.run.Run.lint_source``, in this process: rules, parsed
configuration and module summaries stay in memory between changes). The project rules (VLL304) join the facts
of every file of the workspace folder, read once from disk when the folder opens (with the result cache) and
replaced by a document's own facts each time it is linted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from vllm_lint.config import ConfigError
from vllm_lint.diagnostics import Diagnostic
from vllm_lint.engine.runner import FileResult, RunOptions
from vllm_lint.lsp.settings import EditorSettings, SettingsResolver
from vllm_lint.surfaces import Surface

if TYPE_CHECKING:
    from vllm_lint.project.facts import FileFacts


@dataclass
class Linted:
    """One lint of one text: what the code actions and hovers of that version are answered from."""

    path: Path
    text: str
    surface: Surface
    options: RunOptions
    own: list[Diagnostic]  # the file's findings, without the project rules'
    project: list[Diagnostic] = field(default_factory=list)
    seconds: float = 0.0  # server time of the lint
    # The same text linted with every fix's edits (Linter.with_edits), once a code action asks for them.
    edited: Linted | None = None

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return sorted([*self.own, *self.project], key=Diagnostic.sort_key)


class Linter:
    def __init__(self, editor: EditorSettings | None = None) -> None:
        self.resolver = SettingsResolver(editor)
        self._facts: dict[str, FileFacts | None] = {}  # path -> its facts, for the project rules
        self._lock = threading.Lock()
        self._surfaces: list[Surface] | None = None
        self._linted: set[str] = set()  # open documents: their facts come from their text, not the disk
        # The workspace folders: the project rules join the facts of one folder, as `check` run in it would.
        self.folders: list[Path] = []

    @property
    def editor(self) -> EditorSettings:
        return self.resolver.editor

    def configure(self, editor: EditorSettings) -> None:
        self.resolver.editor = editor

    def surfaces(self) -> list[Surface]:
        if self._surfaces is None:
            from vllm_lint.surfaces import all_surfaces

            self._surfaces = all_surfaces()
        return self._surfaces

    def surface_for(self, path: Path, data: bytes) -> Surface:
        from vllm_lint.engine.discovery import HEAD_BYTES, claim_named

        return claim_named(path, data[:HEAD_BYTES], self.surfaces())

    def lint(self, path: Path, text: str, surface: Surface | None = None) -> Linted:
        """Raises ConfigError when the configuration cannot be read (the server says so and lints nothing)."""
        from vllm_lint.engine.run import Run, Source

        started = time.perf_counter()
        # A change is linted for its findings: a fix's edits that cost a computation of their own (the server
        # rewrite's) are left out until a code action asks for them (with_edits).
        options = replace(self.resolver.options(path, self.folder_of(path)), fix_edits=False)
        data = text.encode("utf-8")
        surface = surface or self.surface_for(path, data)
        shown = str(path)
        result = Run(options).lint_source(Source(path, shown, data, surface))
        own = [d for d in result.diagnostics if d.code not in _project_codes()]
        linted = Linted(path, text, surface, options, own)
        with self._lock:
            if result.facts:
                self._facts[shown] = result.facts
            else:
                self._facts.pop(shown, None)
            linted.project = self._project_findings(shown, options)
        linted.seconds = time.perf_counter() - started
        return linted

    def with_edits(self, linted: Linted) -> Linted:
        """``linted`` with the edits of every fix, for code actions: the same text linted once more with them,
        the first time they are asked for (a document's next change is a new ``Linted``)."""
        from vllm_lint.engine.runner import guarded, lint_bytes

        if linted.options.fix_edits:
            return linted
        if linted.edited is None:
            options = replace(linted.options, fix_edits=True)
            shown = str(linted.path)
            data = linted.text.encode("utf-8")
            result = guarded(shown, lambda: lint_bytes(linted.path, shown, data, linted.surface, options))
            own = [d for d in result.diagnostics if d.code not in _project_codes()]
            linted.edited = Linted(linted.path, linted.text, linted.surface, options, own, linted.project)
        return linted.edited

    def refresh_project(self, linted: Linted) -> bool:
        """Recompute a linted document's project findings from the facts as they are now; whether they changed."""
        with self._lock:
            project = self._project_findings(str(linted.path), linted.options)
        if project == linted.project:
            return False
        linted.project = project
        return True

    def scan_folder(self, folder: Path, timeout: float = 600.0) -> str | None:
        """Read the facts of every file under ``folder`` (a workspace folder) in a process of its own
        (``lsp/scan.py``); an error message, or None. Facts of documents linted meanwhile are kept."""
        import json
        import subprocess
        import sys

        try:
            done = subprocess.run([sys.executable, "-m", "vllm_lint.lsp.scan", str(folder)], capture_output=True,
                                  text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"cannot read the facts of {folder}: {exc}"
        if done.returncode != 0:
            return done.stderr.strip() or f"cannot read the facts of {folder} (exit code {done.returncode})"
        from vllm_lint.project.facts import FileFacts

        scanned = {path: FileFacts.from_json(raw) for path, raw in json.loads(done.stdout).items()}
        inside = str(folder.absolute()).rstrip("/") + "/"
        with self._lock:
            for path in [p for p in self._facts if p.startswith(inside) and p not in self._linted]:
                del self._facts[path]  # gone from disk, or no longer reporting anything
            for path, facts in scanned.items():
                if path not in self._linted:
                    self._facts[path] = facts
        return None

    def file_changed(self, path: Path) -> None:
        """A file changed on disk (saved, or written by another tool): its facts are read again from disk,
        unless it is open, whose text is what counts."""
        shown = str(path)
        if shown in self._linted:
            return
        from vllm_lint.engine.run import Run

        try:
            options = self.resolver.options(path, self.folder_of(path))
        except ConfigError:
            return
        if not path.is_file():
            self.forget_file(path)
            return
        surface = self.surface_for(path, path.read_bytes()[:4096])
        result = Run(options).lint_file_here(path, surface)
        with self._lock:
            if result.facts:
                self._facts[shown] = result.facts
            else:
                self._facts.pop(shown, None)

    def opened(self, path: Path) -> None:
        self._linted.add(str(path))

    def closed(self, path: Path) -> None:
        """A closed document's facts are the file's on disk again."""
        self._linted.discard(str(path))
        self.file_changed(path)

    def forget_file(self, path: Path) -> None:
        with self._lock:
            self._facts.pop(str(path), None)

    def _project_findings(self, shown: str, options: RunOptions) -> list[Diagnostic]:
        if not any(code in options.enabled for code in _project_codes()):
            return []
        from vllm_lint.engine.project import add_project_findings

        folder = self.folder_of(Path(shown))
        results = [FileResult(path, facts=facts) for path, facts in self._facts.items() if self.folder_of(Path(path)) == folder]
        if not any(result.path == shown for result in results):
            return []  # a file that reports nothing to join has no project finding
        add_project_findings(results, options)
        return next(result.diagnostics for result in results if result.path == shown)

    def folder_of(self, path: Path) -> Path | None:
        """The innermost workspace folder holding the file (None: in none)."""
        holding = [folder for folder in self.folders if path.is_relative_to(folder)]
        return max(holding, key=lambda folder: len(folder.parts), default=None)

    def fix_all(self, linted: Linted, unsafe: bool = False) -> str | None:
        """The text with every fix the policy allows applied (as ``check --fix``), or None when none applies."""
        from vllm_lint.engine.fixer import fix_policy
        from vllm_lint.engine.run import Run, Source

        policy = fix_policy(linted.options, unsafe)
        if not any(policy.allows(d) for d in linted.own):
            return None
        data = linted.text.encode("utf-8")
        outcome = Run(linted.options).fix_source(Source(linted.path, str(linted.path), data, linted.surface), policy)
        if not outcome.changed:
            return None
        return outcome.fixed.decode("utf-8")

    def fixable(self, linted: Linted) -> Iterable[Diagnostic]:
        """The findings whose fix the configuration lets be applied (``fixable``/``unfixable``), safe or not."""
        from vllm_lint.engine.fixer import fix_policy

        policy = fix_policy(linted.options, unsafe=True)
        return [d for d in linted.own if policy.allows(d)]


def _project_codes() -> frozenset[str]:
    from vllm_lint.registry import project_codes

    return frozenset(project_codes())

