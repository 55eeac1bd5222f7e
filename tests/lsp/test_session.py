"""``vllm-lint server`` in a session with a real client: diagnostics on open and change, the code actions
(safe fix, unsafe fix, the server rewrite, fix all, noqa), hover, Helm values, a notebook document, the
cross-file rule, and configuration changes."""

from __future__ import annotations


import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_session import apply, change, codes, diagnostics, open_file, server_config, start
from vllm_lint.rulebook import load_rules

# One server for the module (it starts in seconds, not milliseconds); each test works in a folder of its own
# inside the workspace folder.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(config=server_config(), scope="module")
async def session(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    workspace = tmp_path_factory.mktemp("workspace")
    registered: list[types.Registration] = []
    lsp_client.registered = registered  # type: ignore[attr-defined]

    # VS Code's capabilities say it takes dynamic registrations (the server's file watchers): take them.
    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams) -> None:
        registered.extend(params.registrations)

    await start(lsp_client, workspace)
    lsp_client.workspace = workspace  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def client(session: LanguageClient, request: pytest.FixtureRequest) -> LanguageClient:
    session.folder = session.workspace / request.node.name  # type: ignore[attr-defined]
    session.folder.mkdir()
    # A workspace folder of its own: the cross-file rule joins the files of one folder (as `check` run there).
    folder = types.WorkspaceFolder(uri=session.folder.as_uri(), name=request.node.name)
    session.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        event=types.WorkspaceFoldersChangeEvent(added=[folder], removed=[])))
    return session


def example(code: str) -> str:
    return load_rules()[code].bad_examples[0].clean_code


async def actions(client: LanguageClient, uri: str, found: types.Diagnostic, only=None) -> list[types.CodeAction]:
    result = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=found.range,
        context=types.CodeActionContext(diagnostics=[found], only=only)))
    return list(result or [])


async def test_a_blocking_server_is_rewritten_by_its_code_action(client: LanguageClient):
    text = example("VLL101")
    uri = open_file(client, client.folder / "server.py", text)
    [found] = await diagnostics(client, uri)
    assert found.code == "VLL101"
    assert found.severity == types.DiagnosticSeverity.Error
    assert found.source == "vllm-lint"
    assert found.code_description.href == "https://github.com/vllm-lint/vllm-lint/blob/main/docs/rules/VLL101.md"
    assert found.range.start.line == text.splitlines().index(next(line for line in text.splitlines() if "pipe(prompt" in line))

    offered = await actions(client, uri, found)
    titles = [a.title for a in offered]
    [rewrite] = [a for a in offered if a.title.startswith("Unsafe fix VLL101")]
    assert "Disable VLL101 for this line" in titles
    # The rewrite is one action whose edit the client previews before applying (an unsafe fix).
    [document_edit] = rewrite.edit.document_changes
    assert document_edit.text_document.version == 1
    assert all(isinstance(e, types.AnnotatedTextEdit) for e in document_edit.edits)
    assert rewrite.edit.change_annotations["vllm-lint-unsafe"].needs_confirmation is True

    rewritten = apply(text, rewrite.edit, uri)
    assert rewritten == load_rules()["VLL101"].bad_examples[0].fixed  # what `check --fix --unsafe-fixes` makes
    change(client, uri, 2, rewritten)
    assert await diagnostics(client, uri) == []


async def test_a_safe_fix_fix_all_and_noqa(client: LanguageClient):
    # A character outside the BMP before a finding: two UTF-16 units (VS Code's positions), one code point.
    text = example("VLL301") + 'other = SamplingParams(stop=["🙂"], max_new_tokens=64)\n'
    uri = open_file(client, client.folder / "params.py", text)
    found = await diagnostics(client, uri, lambda f: codes(f) == ["VLL301", "VLL301"])
    first = min(found, key=lambda d: d.range.start.line)

    offered = await actions(client, uri, first)
    [fix] = [a for a in offered if a.kind == types.CodeActionKind.QuickFix and a.title.startswith("Fix VLL301")]
    assert fix.is_preferred
    assert apply(text, fix.edit, uri).splitlines()[1] == "params = SamplingParams(temperature=0.7, max_tokens=256)"

    [fix_all] = await actions(client, uri, first, only=[types.CodeActionKind.SourceFixAll])
    assert fix_all.kind == "source.fixAll.vllm-lint"
    assert apply(text, fix_all.edit, uri) == (
        "from vllm import SamplingParams\n"
        "params = SamplingParams(temperature=0.7, max_tokens=256)\n"
        'other = SamplingParams(stop=["🙂"], max_tokens=64)\n'
    )

    [noqa] = [a for a in offered if a.title == "Disable VLL301 for this line"]
    silenced = apply(text, noqa.edit, uri)
    assert silenced.splitlines()[1].endswith("max_new_tokens=256)  # noqa: VLL301")
    change(client, uri, 2, silenced)
    left = await diagnostics(client, uri)
    assert [d.range.start.line for d in left] == [2]


async def test_every_finding_of_a_dockerfile_can_be_disabled_for_its_line(client: LanguageClient):
    text = 'FROM vllm/vllm-openai:latest\nCMD ["m", "--gpu-memory-utilization", "0.99"]\n'
    uri = open_file(client, client.folder / "Dockerfile", text, language="dockerfile")
    found = await diagnostics(client, uri, lambda f: len(f) == 4)
    assert sorted((d.range.start.line, d.code) for d in found) == [(0, "VLL405"), (1, "VLL202"), (1, "VLL203"), (1, "VLL403")]
    silenced, version = text, 1
    for code in ("VLL405", "VLL202", "VLL203", "VLL403"):
        left = await diagnostics(client, uri)
        [finding] = [d for d in left if d.code == code]
        [noqa] = [a for a in await actions(client, uri, finding) if a.title == f"Disable {code} for this line"]
        silenced, version = apply(silenced, noqa.edit, uri), version + 1
        change(client, uri, version, silenced)
        await diagnostics(client, uri, lambda f, code=code: code not in codes(f))
    assert silenced == (
        "# noqa: VLL405\nFROM vllm/vllm-openai:latest\n"
        '# noqa: VLL202, VLL203, VLL403\nCMD ["m", "--gpu-memory-utilization", "0.99"]\n'
    )
    assert await diagnostics(client, uri) == []


async def test_hover_explains_the_rule(client: LanguageClient):
    text = example("VLL101")
    uri = open_file(client, client.folder / "server.py", text)
    [found] = await diagnostics(client, uri)
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=found.range.start))
    rule = load_rules()["VLL101"]
    assert hover.contents.kind == types.MarkupKind.Markdown
    page = hover.contents.value
    assert page.startswith("**VLL101** sync-pipeline-in-handler")
    for part in ("**What it does**", rule.summary, "**Why is this bad?**", "**Use instead**", rule.url):
        assert part in page
    nowhere = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=0, character=0)))
    assert nowhere is None


async def test_a_helm_value_out_of_range_points_at_values_yaml(client: LanguageClient):
    chart = client.folder / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: llm\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("model: meta-llama/Llama-3.1-8B-Instruct\nengine:\n  gpu: 1.5\n")
    template = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  template:\n"
        "    spec:\n      containers:\n        - name: vllm\n          image: vllm/vllm-openai:v0.32.0\n"
        "          args:\n            - {{ .Values.model | quote }}\n            - --max-model-len=8192\n"
        "            - --gpu-memory-utilization={{ .Values.engine.gpu }}\n            - --host=127.0.0.1\n"
    )
    uri = open_file(client, chart / "templates" / "deployment.yaml", template, "yaml")
    [found] = await diagnostics(client, uri)
    assert found.code == "VLL202"
    assert "(values.yaml engine.gpu)" in found.message
    assert found.range.start.line == 13
    [related] = found.related_information
    assert related.location.uri == (chart / "values.yaml").as_uri()
    assert related.location.range.start == types.Position(line=2, character=2)


async def test_a_notebook_documents_findings_are_on_its_cells(client: LanguageClient):
    path = client.folder / "demo.ipynb"
    cells = [
        ("# A demo", types.NotebookCellKind.Markup, "markdown"),
        ("from vllm import SamplingParams", types.NotebookCellKind.Code, "python"),
        ("params = SamplingParams(max_new_tokens=8)", types.NotebookCellKind.Code, "python"),
    ]
    uris = [f"{path.as_uri()}#cell{n}" for n in range(len(cells))]
    client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(
            uri=path.as_uri(), notebook_type="jupyter-notebook", version=1,
            cells=[types.NotebookCell(kind=kind, document=uri) for (_, kind, _), uri in zip(cells, uris)]),
        cell_text_documents=[types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)
                             for (text, _, language), uri in zip(cells, uris)],
    ))
    # Every cell's list is published with each lint of the notebook: wait for the one that has the finding.
    [found] = await diagnostics(client, uris[2], until=lambda f: len(f) == 1)
    assert found.code == "VLL301"
    assert found.range.start.line == 0
    assert await diagnostics(client, uris[1]) == []

    # Code actions and hover on a cell: the fix of the notebook's JSON comes back as an edit of the cell.
    offered = await actions(client, uris[2], found)
    [fix] = [a for a in offered if a.title.startswith("Fix VLL301")]
    [cell_edit] = fix.edit.document_changes
    assert cell_edit.text_document.uri == uris[2]
    assert apply(cells[2][0], fix.edit, uris[2]) == "params = SamplingParams(max_tokens=8)"
    [noqa] = [a for a in offered if a.title == "Disable VLL301 for this line"]
    assert apply(cells[2][0], noqa.edit, uris[2]) == "params = SamplingParams(max_new_tokens=8)  # noqa: VLL301"
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uris[2]), position=found.range.start))
    assert hover.contents.value.startswith("**VLL301**")

    # A change to a cell is linted with the notebook.
    client.diagnostics.pop(uris[2], None)
    client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
        notebook_document=types.VersionedNotebookDocumentIdentifier(uri=path.as_uri(), version=2),
        change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
            types.NotebookDocumentCellContentChanges(
                document=types.VersionedTextDocumentIdentifier(uri=uris[2], version=2),
                changes=[types.TextDocumentContentChangeWholeDocument(text="params = SamplingParams(max_tokens=8)")])]))))
    assert await diagnostics(client, uris[2], until=lambda f: not f) == []  # the changed cell's list, emptied


async def test_the_cross_file_rule_follows_the_server_file_on_disk(client: LanguageClient):
    folder = client.folder
    serve = folder / "serve.sh"
    serve.write_text("vllm serve meta-llama/Llama-3.1-8B-Instruct --port 8000\n")
    # The workspace's facts are read when the folder opens: send a change of the server script, as an
    # editor's file watcher does, so that the test does not race the first scan.
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=serve.as_uri(), type=types.FileChangeType.Created)]))
    text = (
        "from openai import OpenAI\n\n"
        'client = OpenAI(base_url="http://localhost:8000/v1", api_key="x")\n'
        'client.chat.completions.create(model="meta-llama/Llama-3.1-70B-Instruct", messages=[])\n'
    )
    uri = open_file(client, folder / "client.py", text)
    [found] = await diagnostics(client, uri, lambda f: f != [])
    assert found.code == "VLL304"
    assert found.range.start.line == 3
    assert [r.location.uri for r in found.related_information] == [serve.as_uri()]
    assert [a.title for a in await actions(client, uri, found)] == ["Disable VLL304 for this line"]

    serve.write_text("vllm serve meta-llama/Llama-3.1-70B-Instruct --port 8000\n")
    client.diagnostics.pop(uri, None)
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=serve.as_uri(), type=types.FileChangeType.Changed)]))
    assert await diagnostics(client, uri, lambda f: "VLL304" not in codes(f)) == []


async def test_configuration_changes_apply_to_open_documents(client: LanguageClient):
    folder = client.folder
    uri = open_file(client, folder / "server.py", example("VLL101"))
    assert codes(await diagnostics(client, uri)) == ["VLL101"]

    # The editor's settings (as `workspace/didChangeConfiguration` sends them).
    # Each change publishes again; one published before it (the workspace folder's own relint, still on its
    # way) may come after it, so each step waits for what the change must bring (or fails after TIMEOUT).
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"vllm-lint": {"ignore": ["VLL101"]}}))
    assert await diagnostics(client, uri, lambda f: f == []) == []
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"vllm-lint": {}}))
    assert codes(await diagnostics(client, uri, lambda f: f != [])) == ["VLL101"]

    # The project's configuration file, changed on disk: the server asked the client to watch such files.
    [watching] = [r for r in client.registered if r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES]
    assert "*.toml" in watching.register_options["watchers"][0]["globPattern"]
    config = folder / "pyproject.toml"
    config.write_text('[tool.vllm-lint]\nselect = ["VLL2"]\n')
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=config.as_uri(), type=types.FileChangeType.Created)]))
    assert await diagnostics(client, uri, lambda f: f == []) == []

    # A broken one is said once, and nothing is linted against half a configuration.
    config.write_text('[tool.vllm-lint]\nselect = ["VLL9"]\n')
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=config.as_uri(), type=types.FileChangeType.Changed)]))
    await client.wait_for_notification(types.WINDOW_SHOW_MESSAGE)
    assert "unknown rule code or prefix 'VLL9'" in client.messages[-1].message
    assert client.messages[-1].type == types.MessageType.Error


MODEL_CLEAN = "def generate_text(prompt):\n    return prompt.upper()\n"
MODEL_BLOCKING = (
    'from transformers import pipeline\n\n_pipe = pipeline("text-generation", model="gpt2")\n\n\n'
    "def generate_text(prompt):\n    return _pipe(prompt)[0][\"generated_text\"]\n"
)
APP = (
    "from fastapi import FastAPI\n\nfrom model import generate_text\n\napp = FastAPI()\n\n\n"
    '@app.post("/generate")\nasync def generate(prompt: str):\n    return {"text": generate_text(prompt)}\n'
)


async def test_a_saved_module_changes_the_findings_of_the_handler_one_module_away(client: LanguageClient):
    model = client.folder / "model.py"
    model.write_text(MODEL_CLEAN)
    app = open_file(client, client.folder / "app.py", APP)
    assert await diagnostics(client, app) == []

    model_uri = open_file(client, model, MODEL_CLEAN)
    await diagnostics(client, model_uri)
    change(client, model_uri, 2, MODEL_BLOCKING)
    model.write_text(MODEL_BLOCKING)  # as the editor saves it
    client.diagnostics.pop(app, None)
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=model_uri)))
    [found] = await diagnostics(client, app, lambda f: f != [])
    assert (found.code, found.range.start.line) == ("VLL101", 9)


@pytest.mark.parametrize(("code", "lang", "language_id"), [
    ("VLL203", "bash", "shellscript"),
    ("VLL203", "markdown", "markdown"),
    ("VLL201", "dockerfile", "dockerfile"),
    ("VLL201", "compose", "yaml"),
    ("VLL202", "kubernetes", "yaml"),
])
async def test_command_line_files(client: LanguageClient, code: str, lang: str, language_id: str):
    """Each kind of file a launch is written in, as `check` reads it: the example's marked line is reported."""
    example = next(e for e in load_rules()[code].bad_examples if e.lang == lang and not e.files)
    uri = open_file(client, client.folder / example.default_filename, example.clean_code, language_id)
    found = await diagnostics(client, uri)
    assert [d.range.start.line + 1 for d in found if d.code == code] == example.expected_lines(code)


async def test_a_module_created_on_disk_is_seen_by_the_handler_that_imports_it(client: LanguageClient):
    """The handler's import leads nowhere when it is first linted; the editor's file watcher then tells of the new
    module, and the server finds it (its store of where imports lead outlives each lint)."""
    app = open_file(client, client.folder / "app.py", APP)
    assert await diagnostics(client, app) == []
    model = client.folder / "model.py"
    model.write_text(MODEL_BLOCKING)
    client.diagnostics.pop(app, None)
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=model.as_uri(), type=types.FileChangeType.Created)]))
    [found] = await diagnostics(client, app, lambda f: f != [])
    assert (found.code, found.range.start.line) == ("VLL101", 9)
