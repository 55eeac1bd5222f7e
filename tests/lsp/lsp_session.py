"""Driving ``vllm-lint server`` with a real LSP client (pytest-lsp, on pygls) over stdio: starting a session
in a workspace folder, opening and changing documents, waiting for diagnostics, applying edits."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")
from lsprotocol import types  # noqa: E402
from pygls.workspace import TextDocument  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, default_converter, register_lsp_features  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 30.0


def server_config() -> ClientServerConfig:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return ClientServerConfig(server_command=[sys.executable, "-m", "vllm_lint", "server"], server_env=env,
                              client_factory=editor_client)


def editor_client() -> LanguageClient:
    """pytest-lsp's client, keeping diagnostics as an editor does: a publication for an older version of the
    document than the one last sent is dropped (the server may have linted the old text just before the
    change reached it; its publication can arrive after the change was sent)."""
    client = LanguageClient(converter_factory=default_converter)
    client.sent_versions = {}  # type: ignore[attr-defined]

    def publish_diagnostics(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        sent = client.sent_versions.get(params.uri)  # type: ignore[attr-defined]
        if params.version is not None and sent is not None and params.version < sent:
            return
        client.diagnostics[params.uri] = params.diagnostics

    register_lsp_features(client, {**DEFAULT_CLIENT_FEATURES, types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: publish_diagnostics})
    return client


async def start(client: LanguageClient, folder: Path, options: dict | None = None) -> None:
    params = types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        root_uri=folder.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=folder.as_uri(), name=folder.name)],
        initialization_options={"debounceMs": 20, **(options or {})},
    )
    await client.initialize_session(params)


async def diagnostics(client: LanguageClient, uri: str, until=lambda found: True) -> list[types.Diagnostic]:
    """The diagnostics published for ``uri`` once ``until`` holds of them: the last ones published, looked at
    again after each publication as it comes (TIMEOUT only fails a server that never publishes them)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while True:
        found = client.diagnostics.get(uri)
        if found is not None and until(list(found)):
            return list(found)
        # Registered with no wait since the look: a publication after it wakes this loop. Several that come
        # together wake it once, after their handler has stored each (client.diagnostics).
        published = asyncio.wrap_future(client.protocol.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS))
        try:
            await asyncio.wait_for(published, max(deadline - loop.time(), 0))
        except asyncio.TimeoutError:
            raise AssertionError(f"no diagnostics as expected for {uri} within {TIMEOUT}s; last: {found}") from None


def sent_versions(client: LanguageClient) -> dict[str, int]:
    """The version last sent per document (a client from another factory keeps none: an empty dict)."""
    return getattr(client, "sent_versions", {})


def codes(found: list[types.Diagnostic]) -> list[str]:
    return sorted(str(d.code) for d in found)


def open_file(client: LanguageClient, path: Path, text: str, language: str = "python") -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    client.diagnostics.pop(uri, None)
    sent_versions(client)[uri] = 1
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)))
    return uri


def change(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.diagnostics.pop(uri, None)
    sent_versions(client)[uri] = version
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


def apply(text: str, edit: types.WorkspaceEdit, uri: str) -> str:
    """``text`` with a workspace edit's changes to ``uri`` applied, as an editor applies them."""
    if edit.document_changes:
        edits = [e for change in edit.document_changes if change.text_document.uri == uri for e in change.edits]
    else:
        edits = list(edit.changes[uri])
    document = TextDocument(uri, text)
    # From the end backwards: each edit's range is in the text before any of them.
    for item in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        document.apply_change(types.TextDocumentContentChangePartial(range=item.range, text=item.new_text))
    return document.source
