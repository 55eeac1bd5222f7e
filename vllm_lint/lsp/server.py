"""The Language Server: documents in, diagnostics, code actions and hovers out (pygls over stdio).

Every lint runs on one worker thread, in order, so the protocol's loop stays free to take the next change;
a change is linted after the editor has been quiet for ``debounceMs`` (150 ms by default), an open or a
save at once. Rules, configuration and module summaries stay loaded between changes, and no process is
started per change: the only child process reads the workspace's cross-file facts when a folder opens.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from vllm_lint import __version__
from vllm_lint.config import ConfigError
from vllm_lint.lsp import actions
from vllm_lint.lsp.convert import Lines, lsp_diagnostic
from vllm_lint.lsp.linter import Linted, Linter
from vllm_lint.lsp.notebooks import Cell, as_ipynb, by_cell
from vllm_lint.lsp.settings import EditorSettings

log = logging.getLogger(__name__)
CONFIG_FILES = frozenset({"pyproject.toml", "vllm-lint.toml"})
# Files whose change can change another file's findings: the configuration, a pin of the vLLM release,
# and any file that reports cross-file facts or is imported by a linted module.
WATCHED = "**/{*.py,*.ipynb,*.sh,*.yaml,*.yml,*.md,*.toml,*.txt,*.lock,*.cfg,Dockerfile*,.env}"


def uri_path(uri: str) -> Path | None:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


class VllmLintServer(LanguageServer):
    def __init__(self) -> None:
        notebooks = types.NotebookDocumentSyncOptions(
            notebook_selector=[types.NotebookDocumentFilterWithCells(
                notebook="jupyter-notebook", cells=[types.NotebookCellLanguage(language="python")])],
            save=True,
        )
        super().__init__("vllm-lint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         notebook_document_sync=notebooks)
        self.linter = Linter()
        self.linted: dict[str, Linted] = {}  # text document uri -> its last lint
        self.notebook_cells: dict[str, list[str]] = {}  # notebook uri -> cell uris last published
        self.notebook_lints: dict[str, tuple[Linted, list[Cell]]] = {}  # notebook uri -> its last lint
        self._pending: dict[str, asyncio.Task] = {}
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vllm-lint")
        # The workspace scan waits on a child process for as long as a big tree takes: not on the lint worker.
        self._scanner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vllm-lint-scan")
        self._shown_error: str | None = None

    # -- running lints --------------------------------------------------------------------------------
    async def on_worker(self, function, *args):
        return await asyncio.get_running_loop().run_in_executor(self._worker, function, *args)

    def open_document(self, uri: str):
        """The open text document (None: not open); pygls keys them by the unquoted uri."""
        return self.workspace.text_documents.get(unquote(uri))

    def lines_for(self, uri: str, text: str) -> Lines:
        codec = self.workspace.position_codec
        return Lines(text, codec.position_to_client_units)

    async def lint_document(self, uri: str) -> Linted | None:
        document = self.workspace.get_text_document(uri)
        path = uri_path(uri)
        if path is None or self.workspace.get_notebook_document(cell_uri=uri) is not None:
            return None  # a notebook's cell is linted with its notebook (lint_notebook)
        text = document.source
        try:
            linted = await self.on_worker(self.linter.lint, path, text)
        except ConfigError as exc:
            self.report_config_error(str(exc))
            return None
        self._shown_error = None
        if self.open_document(uri) is None or document.source != text:
            return linted  # closed or changed meanwhile: the next lint publishes
        self.linted[uri] = linted
        self.publish(uri, linted, document.version)
        return linted

    def publish(self, uri: str, linted: Linted, version: int | None) -> None:
        lines = self.lines_for(uri, linted.text)
        diagnostics = [lsp_diagnostic(d, lines, linted.path, rule_url) for d in linted.diagnostics]
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version))

    def report_config_error(self, message: str) -> None:
        if message != self._shown_error:
            self._shown_error = message
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=f"vllm-lint: {message}"))

    def schedule(self, uri: str, lint) -> None:
        """Lint ``uri`` (with ``lint``, a coroutine function of the uri) once the editor has been quiet for the
        debounce time; a change meanwhile starts the wait again."""
        self.cancel(uri)

        async def later() -> None:
            await asyncio.sleep(self.linter.editor.debounce_ms / 1000)
            self._pending.pop(uri, None)
            await lint(uri)

        self._pending[uri] = asyncio.ensure_future(later())

    def cancel(self, uri: str) -> None:
        pending = self._pending.pop(uri, None)
        if pending is not None:
            pending.cancel()

    async def document(self, uri: str, edits: bool = False) -> actions.Document | None:
        """The lint of the text document, or of the notebook whose cell ``uri`` is, as it is now; ``edits``: with
        every fix's edits (Linter.with_edits: computed once a code action asks, not on every change)."""
        notebook = self.workspace.get_notebook_document(cell_uri=uri)
        if notebook is not None:
            kept = self.notebook_lints.get(notebook.uri)
            if kept is None or kept[1] != self.cells_of(notebook):
                await self.lint_notebook(notebook.uri)
                kept = self.notebook_lints.get(notebook.uri)
            if kept is None:
                return None
            versions = {cell.uri: self.workspace.get_text_document(cell.uri).version for cell in kept[1]}
            linted = await self.on_worker(self.linter.with_edits, kept[0]) if edits else kept[0]
            return actions.Document(linted, notebook.uri, versions, self.lines_for, kept[1])
        linted = await self.current(uri)
        if linted is None:
            return None
        if edits:
            linted = await self.on_worker(self.linter.with_edits, linted)
        return actions.Document(linted, uri, {uri: self.workspace.get_text_document(uri).version}, self.lines_for)

    async def current(self, uri: str) -> Linted | None:
        """The lint of the document's text as it is now (linted now when the last lint is older)."""
        linted = self.linted.get(uri)
        document = self.open_document(uri)
        if document is None:
            return None
        if linted is not None and linted.text == document.source:
            return linted
        return await self.lint_document(uri)

    async def relint_all(self) -> None:
        """Every open document (and notebook) again: the configuration or another file changed."""
        for uri in list(self.linted):
            await self.lint_document(uri)
        for uri in list(self.notebook_cells):
            await self.lint_notebook(uri)

    async def refresh_project(self) -> None:
        for uri, linted in list(self.linted.items()):
            if self.linter.refresh_project(linted):
                document = self.open_document(uri)
                self.publish(uri, linted, document.version if document else None)

    # -- notebooks ----------------------------------------------------------------------------------
    def cells_of(self, notebook: types.NotebookDocument) -> list[Cell]:
        return [Cell(cell.document, cell.kind == types.NotebookCellKind.Code,
                     self.workspace.get_text_document(cell.document).source) for cell in notebook.cells]

    async def lint_notebook(self, uri: str) -> None:
        notebook = self.workspace.get_notebook_document(notebook_uri=uri)
        path = uri_path(uri)
        if notebook is None or path is None:
            return
        cells = self.cells_of(notebook)
        text = as_ipynb(cells, dict(notebook.metadata) if isinstance(notebook.metadata, dict) else None)
        try:
            linted = await self.on_worker(self.linter.lint, path, text)
        except ConfigError as exc:
            self.report_config_error(str(exc))
            return
        now = self.workspace.get_notebook_document(notebook_uri=uri)
        if now is None or self.cells_of(now) != cells:
            return  # closed or changed meanwhile: the next lint publishes
        self.notebook_lints[uri] = (linted, cells)
        published = by_cell(linted.diagnostics, cells)
        gone = [cell for cell in self.notebook_cells.get(uri, []) if cell not in published]
        self.notebook_cells[uri] = list(published)
        for cell in cells:
            lines = self.lines_for(cell.uri, cell.text)
            found = [lsp_diagnostic(d, lines, path, rule_url) for d in published[cell.uri]]
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell.uri, diagnostics=found))
        for cell_uri in gone:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell_uri, diagnostics=[]))

    # -- workspace ----------------------------------------------------------------------------------
    def folders(self) -> list[Path]:
        found = [uri_path(folder.uri) for folder in self.workspace.folders.values()]
        if not found and self.workspace.root_uri:
            found = [uri_path(self.workspace.root_uri)]
        return [folder for folder in found if folder is not None and folder.is_dir()]

    async def scan_folders(self, folders: list[Path] | None = None) -> None:
        self.linter.folders = self.folders()
        for folder in self.linter.folders if folders is None else folders:
            error = await asyncio.get_running_loop().run_in_executor(self._scanner, self.linter.scan_folder, folder)
            if error:
                self.window_log_message(types.LogMessageParams(type=types.MessageType.Warning, message=f"vllm-lint: {error}"))
        await self.refresh_project()


def rule_url(code: str) -> str | None:
    from vllm_lint.rulebook import load_rules

    rule = load_rules().get(code)
    return rule.url if rule is not None else None


def _warm_up(linter: Linter) -> None:
    """Load the surfaces' heavy modules (LibCST) and the rule files before the first change needs them."""
    from vllm_lint.rulebook import load_rules

    load_rules()
    for surface in linter.surfaces():
        surface.warm_up()


def build_server() -> VllmLintServer:
    server = VllmLintServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: VllmLintServer, params: types.InitializeParams) -> None:
        try:
            ls.linter.configure(EditorSettings.from_json(params.initialization_options))
        except ConfigError as exc:
            ls.report_config_error(str(exc))
        ls._worker.submit(_warm_up, ls.linter)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: VllmLintServer, params: types.InitializedParams) -> None:
        watch = ls.client_capabilities.workspace
        if watch and watch.did_change_watched_files and watch.did_change_watched_files.dynamic_registration:
            registration = types.Registration(
                id="vllm-lint-watched-files",
                method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(
                    watchers=[types.FileSystemWatcher(glob_pattern=WATCHED)]),
            )
            try:
                await ls.client_register_capability_async(types.RegistrationParams(registrations=[registration]))
            except Exception as exc:  # noqa: BLE001 - a client that refuses still gets saves and changes
                log.warning("file watching not registered: %s", exc)
        await ls.scan_folders()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: VllmLintServer, params: types.DidOpenTextDocumentParams) -> None:
        path = uri_path(params.text_document.uri)
        if path is not None:
            ls.linter.opened(path)
        await ls.lint_document(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: VllmLintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, ls.lint_document)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: VllmLintServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        path = uri_path(uri)
        if path is not None and path.name in CONFIG_FILES:
            await on_disk_change(ls, [path])
            return
        await ls.lint_document(uri)
        # Another open module may read this one's summary (a handler one module away): lint them again.
        for other in [u for u in ls.linted if u != uri]:
            await ls.lint_document(other)
        await ls.refresh_project()

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: VllmLintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.cancel(uri)
        ls.linted.pop(uri, None)
        path = uri_path(uri)
        if path is not None:
            ls._worker.submit(ls.linter.closed, path)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def did_change_watched_files(ls: VllmLintServer, params: types.DidChangeWatchedFilesParams) -> None:
        paths = [path for change in params.changes if (path := uri_path(change.uri)) is not None]
        await on_disk_change(ls, paths)

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_workspace_folders(ls: VllmLintServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
        added = [path for folder in params.event.added if (path := uri_path(folder.uri)) is not None]
        await ls.scan_folders(added)  # pygls has updated the workspace's folders already
        await ls.relint_all()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: VllmLintServer, params: types.DidChangeConfigurationParams) -> None:
        try:
            ls.linter.configure(EditorSettings.from_json(params.settings))
        except ConfigError as exc:
            ls.report_config_error(str(exc))
            return
        await ls.relint_all()

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, actions.FIX_ALL_KIND]))
    async def code_action(ls: VllmLintServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        uri = params.text_document.uri
        document = await ls.document(uri, edits=True)
        if document is None:
            return None
        client = actions.Client.of(ls.client_capabilities)
        return await ls.on_worker(actions.code_actions, ls.linter, document, uri, params.range, params.context.only, client)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: VllmLintServer, params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        document = await ls.document(uri)
        if document is None:
            return None
        return actions.hover(document, uri, params.position)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    async def notebook_open(ls: VllmLintServer, params: types.DidOpenNotebookDocumentParams) -> None:
        await ls.lint_notebook(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_change(ls: VllmLintServer, params: types.DidChangeNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, ls.lint_notebook)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    async def notebook_save(ls: VllmLintServer, params: types.DidSaveNotebookDocumentParams) -> None:
        await ls.lint_notebook(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_close(ls: VllmLintServer, params: types.DidCloseNotebookDocumentParams) -> None:
        ls.cancel(params.notebook_document.uri)
        ls.notebook_lints.pop(params.notebook_document.uri, None)
        for cell in ls.notebook_cells.pop(params.notebook_document.uri, []):
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell, diagnostics=[]))

    return server


async def on_disk_change(ls: VllmLintServer, paths: list[Path]) -> None:
    """Files changed on disk: a configuration file or a pin changes every document's lint; any other file
    changes its own facts and what the modules that import it see."""
    from vllm_lint.engine.run import forget_disk_state

    forget_disk_state()  # a pin (requirements, pyproject, a lock file) may have changed, a module come or gone
    rescan = any(path.name in CONFIG_FILES for path in paths)
    for path in paths:
        await ls.on_worker(ls.linter.file_changed, path)
    await ls.relint_all()
    if rescan:
        await ls.scan_folders()  # which files report facts follows the selected rules
    else:
        await ls.refresh_project()


def serve() -> None:
    """Serve over stdin/stdout until the client says exit."""
    import os
    import sys

    build_server().start_io()
    if sys.stdout.closed:  # pygls closes it on exit; what flushes stdout at exit must find something open
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the rest of the process's life
