"""Unit tests of the validation harness and the load generator (no server started)."""

from __future__ import annotations

import ast
import asyncio
import json
import re

import click
import pytest

from vllm_lint.reference.loadgen import LoadResult, Record, check_loopback, decode_body, json_lines, prompt_for
from vllm_lint.reference.validate.cases import Case, file_cases, rule_cases
from vllm_lint.reference.validate.compare import compare, response_shape, response_text, response_texts
from vllm_lint.reference.validate.endpoint import Endpoint, discover_endpoint
from vllm_lint.reference.validate.errors import NotARewrite, ValidationError
from vllm_lint.reference.validate.plot import write_plot
from vllm_lint.reference.validate.prepare import (
    PreparedCase,
    PreparedSource,
    _module_bindings,
    make_runnable,
    model_environment,
    point_at_model,
    prepare_case,
)
from vllm_lint.reference.validate.results import Options, Report, Validation
from vllm_lint.reference.validate.summary import format_summary

from fixture_files import SEEDS

from .conftest import require_modules

SEED_BAD_SERVER = SEEDS / "000_bad_pipeline_server.py"


def _model_dir(tmp_path, context=1024):
    """A model directory as far as the harness's preparation reads it: its config's context length."""
    model = tmp_path / "tiny model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"max_position_embeddings": context}))
    return model


def test_make_runnable_injects_app_and_imports():
    source = '"""Doc."""\nfrom __future__ import annotations\n@app.post("/x")\ndef x():\n    return uuid.uuid4().hex\n'
    new, notes = make_runnable(source)
    ast.parse(new)
    lines = new.splitlines()
    assert lines[0] == '"""Doc."""' and lines[1] == "from __future__ import annotations"
    assert lines[2].startswith("import uuid")
    assert any(line.startswith("app = _VllmLintFastAPI()") for line in lines[3:5])
    assert len(notes) == 2 and "app = FastAPI()" in notes[1]


def test_make_runnable_leaves_complete_files_alone():
    from vllm_lint.rulebook import load_rules

    source = load_rules()["VLL101"].bad_examples[0].fixed
    assert make_runnable(source) == (source, [])


def test_seed_bad_server_gets_an_app():
    new, notes = make_runnable(SEED_BAD_SERVER.read_text())
    tree = ast.parse(new)
    assert "app" in _module_bindings(tree)
    assert notes == ["app = FastAPI() (the file uses @app routes but never creates app)"]
    # the injection comes before the first use
    first_use = new.index("@app.post")
    assert new.index("app = _VllmLintFastAPI()") < first_use


def test_prepare_case_fixes_with_our_own_fixer(tmp_path):
    model = _model_dir(tmp_path)
    notes = []
    case = file_cases([SEED_BAD_SERVER])[0]
    prepared = prepare_case(case, model, tmp_path / "w", notes.append)
    bad, fixed = prepared.bad.path.read_text(), prepared.fixed.path.read_text()
    # the hub model is replaced by the local one in both files, before the fix
    assert prepared.model_names == ["meta-llama/Llama-3.1-8B-Instruct"]
    assert "meta-llama" not in bad + fixed and bad.count(f'"{model}"') == fixed.count(f'"{model}"') == 1
    # the fixed file is what `check --fix --unsafe-fixes` makes of it, with the model's context as the setting
    assert prepared.applied == {"VLL101": 1}
    assert "AsyncLLMEngine.from_engine_args(" in fixed and "max_model_len=1024" in fixed
    assert "async def chat(prompt: str):" in fixed and "import transformers" not in fixed and "from transformers" not in fixed
    assert prepared.diff.startswith("--- bad\n+++ fixed\n")
    # the snippet forgot `app = FastAPI()`: the bad copy gets one injected, the fix creates its own
    assert prepared.bad.injected == ["app = FastAPI() (the file uses @app routes but never creates app)"]
    assert prepared.fixed.injected == [] and "app = FastAPI(lifespan=lifespan)" in fixed
    assert any("fixed 1 x VLL101" in n for n in notes) and any("model meta-llama" in n for n in notes)
    compile(bad, "bad", "exec")
    compile(fixed, "fixed", "exec")


def test_prepare_case_with_a_given_fixed_file(tmp_path):
    model = _model_dir(tmp_path)
    case = file_cases([SEED_BAD_SERVER])[0]
    own = tmp_path / "own_fix.py"
    own.write_text(prepare_case(case, model, tmp_path / "a", lambda _: None).fixed.path.read_text())
    prepared = prepare_case(case, model, tmp_path / "b", lambda _: None, fixed=own)
    assert prepared.diff is None and prepared.applied == {}
    assert prepared.fixed.path.read_text() == own.read_text()
    broken = tmp_path / "broken.py"
    broken.write_text("def x(:\n")
    with pytest.raises(ValidationError, match="fixed file does not parse"):
        prepare_case(case, model, tmp_path / "c", lambda _: None, fixed=broken)


def _any_length(source: str) -> str:
    return re.sub(r"max_model_len=\d+", "max_model_len=N", source)


def test_rule_cases_are_the_server_rewrites_and_fix_to_the_yaml(tmp_path):
    """Every rule example whose `fixed` is an AsyncLLMEngine server or the fallback's (its model calls under a
    lock, in a worker thread); our fixer makes exactly that `fixed`
    (model aside) from the bad example, so the servers validate runs are the rule files' own."""
    from vllm_lint.rulebook import load_rules

    cases = rule_cases()
    assert [case.name for case in cases] == [*(f"VLL101 example {n}" for n in (*range(1, 19), 20, 21, 22, 55, 56, 57, 58, 59, 60, 62, 64, 66, 67)),
                                             *(f"VLL102 example {n}" for n in (1, 2, 3, 9, 10, 12, 13, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25)),
                                             *(f"VLL103 example {n}" for n in (1, 3, 4, 5, 6, 7, 8, 9, 14, 15, 16, 17, 23, 25, 26, 27, 28, 29, 30, 31, 32))]
    assert all(not case.explicit and case.origin.startswith("rules/VLL") for case in cases)
    model = tmp_path / "no-config"  # no config.json: the fix keeps its default max_model_len
    for case in cases:  # every one servable: none raises NotServable
        code, _, number = case.name.split()
        example = load_rules()[code].examples[int(number) - 1]
        prepared = prepare_case(case, model, tmp_path / "w", lambda _: None)
        expected, _ = make_runnable(point_at_model(example.fixed, model)[0])
        # max_model_len aside: the example's model may cap the fix's below its default (gpt2: 1024), the folder
        # here says nothing of its model
        assert _any_length(prepared.fixed.path.read_text()) == _any_length(expected), case.name
        assert code in prepared.applied
    assert [c.name for c in rule_cases(("vll103",))] == [c.name for c in cases if c.name.startswith("VLL103")]
    with pytest.raises(ValidationError, match="unknown rule"):
        rule_cases(("VLL999",))
    with pytest.raises(ValidationError, match="no example of VLL201"):
        rule_cases(("VLL201",))
    assert [c.name for c in rule_cases(("VLL103:4", "vll101:5", "VLL103:7"))] == [
        "VLL101 example 5", "VLL103 example 4", "VLL103 example 7"]
    # a vision-language server (its engine is given images) only when named: the tiny model is a text model
    assert [c.name for c in rule_cases(("VLL102:14",))] == ["VLL102 example 14"]
    with pytest.raises(ValidationError, match="unknown rule code or example: VLL101:x"):
        rule_cases(("VLL101:x",))
    with pytest.raises(ValidationError, match="no example of VLL101:2000"):
        rule_cases(("VLL101:2000",))


def test_a_folder_keeps_only_the_servers_the_fix_rewrites(tmp_path):
    model = _model_dir(tmp_path)
    cases = file_cases([SEEDS])
    assert [c.name for c in cases] == sorted(p.name for p in SEEDS.glob("*.py")) and not any(c.explicit for c in cases)
    rewritten, skipped = [], []
    for case in cases:
        try:
            prepare_case(case, model, tmp_path / "w", lambda _: None)
            rewritten.append(case.name)
        except NotARewrite as exc:
            skipped.append((case.name, str(exc)))
    assert rewritten == [SEED_BAD_SERVER.name, "004_server.py"]
    # servers that get other fixes, but no rewrite onto AsyncLLMEngine (one is on it already), and clients
    assert skipped == [
        ("000_good_async_engine_server.py", "the autofixer's fixes (VLL203, VLL302, VLL501) do not rewrite it into a "
                                            "server on AsyncLLMEngine nor move its model calls off the event loop"),
        ("001_vllm_client.py", "the autofixer changed nothing: there is no fix to validate"),
        ("004_client.py", "the autofixer changed nothing: there is no fix to validate"),
    ]


def test_an_explicit_file_with_nothing_to_fix_is_an_error(tmp_path):
    clean = tmp_path / "clean.py"
    clean.write_text("print('hello')\n")
    [case] = file_cases([clean])
    with pytest.raises(NotARewrite, match="changed nothing"):
        prepare_case(case, tmp_path / "m", tmp_path / "w", lambda _: None)


@pytest.mark.parametrize("source, names", [
    ('pipe = pipeline("text-generation", model="gpt2", device="cuda:0")\n', ["gpt2"]),
    ('pipe = transformers.pipeline("text-generation", "gpt2")\n', ["gpt2"]),
    ('llm = LLM("Qwen/Qwen2.5-0.5B-Instruct", max_model_len=4096)\n', ["Qwen/Qwen2.5-0.5B-Instruct"]),
    ('MODEL = "org/m"\nargs = AsyncEngineArgs(model=MODEL, tokenizer="org/tok")\n', ["org/m", "org/tok"]),
    ('tok = AutoTokenizer.from_pretrained("gpt2")  # é\nm = "é"; x = LLM(model="m")\n', ["gpt2", "m"]),
    ('llm = LLM(model=os.environ["MODEL"])\n', []),
    # a class's constructor names the model: its one construction, or the parameter's default
    ('M = "org/m"\nclass G:\n    def __init__(self, name):\n        self.p = pipeline("t", model=name)\ng = G(name=M)\n', ["org/m"]),
    ('class G:\n    def __init__(self, name="gpt2"):\n        self.llm = LLM(name)\ng = G()\n', ["gpt2"]),
    ('class A:\n    def setup(self, device):\n        model_id = "org/m"\n        self.m = AutoModelForCausalLM.from_pretrained(model_id)\n', ["org/m"]),
    # a dict literal spread into the call: its "model" (and "tokenizer") entries, not its other strings
    ('class S:\n    def load(self):\n        p = {"model": "org/m", "tokenizer": "org/t", "dtype": "half"}\n        self.llm = LLM(**p)\n',
     ["org/m", "org/t"]),
    ('P = {"model": "org/m"}\nllm = LLM(**P)\nQ = {"model": "org/other"}\n', ["org/m"]),
    # an attribute of the object set to a literal, read by a model call in its class
    ('class S:\n    def __init__(self):\n        self.model_id = "org/m"\n        self.note = "x"\n'
     '        self.t = AutoTokenizer.from_pretrained(self.model_id)\n', ["org/m"]),
])
def test_point_at_model(tmp_path, source, names):
    model = tmp_path / "local"
    new, replaced = point_at_model(source, model)
    assert replaced == sorted(names)
    ast.parse(new)
    # Each literal naming a model, and nothing else, now names the local copy (byte offsets hold on non-ASCII lines).
    expected = source
    for name in names:
        expected = expected.replace(f'"{name}"', f'"{model}"', 1)
    assert new == expected


@pytest.mark.parametrize("source, variables", [
    ('import os\nclass D:\n    def __init__(self):\n        self.p = pipeline("t", model=os.environ["MODEL_PATH"])\n', ["MODEL_PATH"]),
    ('import os\nname = os.getenv("M", "gpt2")\nllm = LLM(model=name, tokenizer=os.environ.get("T"))\n', ["M", "T"]),
    ('import os\nkey = os.environ["HF_TOKEN"]\nm = AutoModel.from_pretrained("org/m", token=key)\n', []),
])
def test_model_environment(tmp_path, source, variables):
    """The variables a model call takes its model (or tokenizer) from are set to the local model, no others."""
    assert model_environment(source, tmp_path) == {v: str(tmp_path) for v in variables}


def _openapi_query():
    return {"paths": {"/health": {"get": {}}, "/chat": {"post": {"parameters": [
        {"name": "prompt", "in": "query", "required": True, "schema": {"type": "string"}}]}}}}


def test_discover_query_endpoint():
    ep = discover_endpoint(_openapi_query())
    assert (ep.path, ep.field, ep.where) == ("/chat", "prompt", "query")
    spec = ep.request("hi")
    assert spec.params == {"prompt": "hi"} and spec.json is None


def test_a_query_prompt_is_sent_with_the_smallest_body_its_route_requires():
    """FastAPI's ``def chat(message: str, history: list[dict])`` takes the message in the query string and the
    history as its (required) body: [] for a first turn; a route with no required body gets none."""
    openapi = {"paths": {"/chat": {"post": {
        "parameters": [{"name": "message", "in": "query", "required": True, "schema": {"type": "string"}}],
        "requestBody": {"required": True, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/H"}}}}}}},
        "components": {"schemas": {"H": {"type": "array", "items": {"type": "object"}}}}}
    spec = discover_endpoint(openapi).request("hi")
    assert spec.params == {"message": "hi"} and spec.json == []
    openapi["paths"]["/chat"]["post"]["requestBody"]["content"]["application/json"]["schema"] = {
        "type": "object", "required": ["user", "tags"], "properties": {"user": {"type": "string"}, "tags": {"type": "array"}, "n": {}}}
    assert discover_endpoint(openapi).request("hi").json == {"user": "", "tags": []}
    openapi["paths"]["/chat"]["post"]["requestBody"]["required"] = False
    assert discover_endpoint(openapi).request("hi").json is None


def test_input_text_is_a_prompt_field():
    openapi = {"paths": {"/chat": {"post": {"parameters": [
        {"name": "input_text", "in": "query", "required": True, "schema": {"type": "string"}}]}}}}
    assert discover_endpoint(openapi).describe() == "POST /chat with 'input_text' in the query string"


def test_discover_json_body_endpoint_through_ref():
    openapi = {"paths": {"/generate": {"post": {"requestBody": {"content": {"application/json": {
        "schema": {"$ref": "#/components/schemas/Req"}}}}}}},
        "components": {"schemas": {"Req": {"properties": {"text": {"type": "string"}, "n": {}}}}}}
    ep = discover_endpoint(openapi)
    assert (ep.path, ep.field, ep.where) == ("/generate", "text", "json")
    assert ep.request("hi").json == {"text": "hi"}


def test_discover_a_prompt_one_object_deep():
    """A BentoML API's typed parameter, ``def generate(self, body: GenerateRequest)``: {"body": {"prompt": ...}}."""
    openapi = {"paths": {"/generate": {"post": {"requestBody": {"content": {"application/json": {"schema": {
        "properties": {"body": {"$ref": "#/components/schemas/GenerateRequest"}}}}}}}}},
        "components": {"schemas": {"GenerateRequest": {"properties": {"prompt": {"type": "string"},
                                                                     "max_tokens": {"type": "integer"}}}}}}
    ep = discover_endpoint(openapi)
    assert ep.describe() == "POST /generate with 'body.prompt' in the JSON body"
    assert ep.request("hi").json == {"body": {"prompt": "hi"}}


def test_discover_messages_endpoint():
    openapi = {"paths": {"/v1/chat": {"post": {"requestBody": {"content": {"application/json": {
        "schema": {"properties": {"messages": {"type": "array"}}}}}}}}}}
    ep = discover_endpoint(openapi)
    assert ep.messages and ep.request("hi").json == {"messages": [{"role": "user", "content": "hi"}]}


def test_discover_a_get_route_only_when_no_post_route_takes_a_prompt():
    get = {"name": "text", "in": "query", "required": True, "schema": {"type": "string"}}
    openapi = {"paths": {"/health": {"get": {}}, "/generate": {"get": {"parameters": [get]}}}}
    ep = discover_endpoint(openapi)
    assert (ep.method, ep.path, ep.field, ep.where) == ("GET", "/generate", "text", "query")
    spec = ep.request("hi")
    assert (spec.method, spec.params, spec.json) == ("GET", {"text": "hi"}, None)
    assert ep.describe() == "GET /generate with 'text' in the query string"
    openapi["paths"]["/chat"] = _openapi_query()["paths"]["/chat"]
    assert discover_endpoint(openapi).method == "POST"


def test_discover_nothing_says_what_to_do():
    with pytest.raises(ValidationError, match="--endpoint"):
        discover_endpoint({"paths": {"/x": {"get": {}}}})


def test_discover_a_batch_route_and_send_it_lists_of_one_prompt():
    openapi = {"paths": {"/generate": {"post": {"requestBody": {"content": {"application/json": {"schema": {
        "$ref": "#/components/schemas/Batch"}}}}}}},
        "components": {"schemas": {"Batch": {"properties": {
            "inputs": {"type": "array", "items": {"type": "string"}}, "max_tokens": {"type": "integer"}}}}}}
    ep = discover_endpoint(openapi)
    assert ep.describe() == "POST /generate with 'inputs' (a list of one prompt) in the JSON body"
    assert ep.request("hi").json == {"inputs": ["hi"]}
    numbers = {"paths": {"/x": {"post": {"requestBody": {"content": {"application/json": {"schema": {
        "properties": {"prompts": {"type": "array", "items": {"type": "integer"}}}}}}}}}}}
    with pytest.raises(ValidationError, match="no POST route"):
        discover_endpoint(numbers)


def test_discover_form_endpoint_and_a_stream_switch():
    form = {"paths": {"/g": {"post": {"requestBody": {"content": {"application/x-www-form-urlencoded": {
        "schema": {"type": "object", "properties": {"prompt": {"type": "string"}}}}}}}}}}
    ep = discover_endpoint(form)
    assert (ep.where, ep.stream_field) == ("form", None) and ep.request("hi").data == {"prompt": "hi"}
    streams = {"paths": {"/g": {"post": {"requestBody": {"content": {"application/json": {
        "schema": {"properties": {"prompt": {"type": "string"}, "stream": {"type": "boolean"}}}}}}}}}}
    ep = discover_endpoint(streams)
    assert ep.stream_field == "stream"
    assert ep.request("hi").json == {"prompt": "hi"} and ep.request("hi", stream=True).json == {"prompt": "hi", "stream": True}
    assert ep.describe() == "POST /g with 'prompt' in the JSON body; streamed with 'stream': true"


def test_prompts_are_fixed_and_distinct():
    prompts = [prompt_for(i) for i in range(64)]
    assert len(set(prompts)) == 64 and prompts[3] == prompt_for(3)


def _rec(i, body, content_type="application/json", streamed=False, status=200):
    return Record(i, status, 0.5, 0.1, body, content_type, streamed)


def test_compare_same_text_after_prompt_echo():
    p = prompt_for
    bad = LoadResult(1, 2, 1.0, [_rec(0, p(0) + " abc"), _rec(1, p(1) + " def")])
    fixed = LoadResult(1, 2, 1.0, [_rec(0, p(0) + " abc"), _rec(1, " def")])
    c = compare(bad, fixed, p)
    assert (c.compared, c.same_shape, c.same_text, c.echo_differs) == (2, 2, 2, 1)
    assert c.passed


def test_compare_reports_shape_and_text_mismatches():
    p = prompt_for
    bad = LoadResult(1, 2, 1.0, [_rec(0, "abc"), _rec(1, "xyz")])
    fixed = LoadResult(1, 2, 1.0, [_rec(0, {"text": "abc"}), _rec(1, "xyQ")])
    c = compare(bad, fixed, p)
    assert (c.same_shape, c.same_text) == (1, 1) and not c.passed
    assert c.mismatches[0]["bad_shape"] == "str" and c.mismatches[0]["fixed_shape"] == {"text": "str"}
    assert c.mismatches[1]["first_difference_at_char"] == 2


def test_a_litserve_stream_of_json_lines_is_read_as_its_items():
    """LitServe streams each item encode_response() yields as a JSON line, naming no content type: chunked up
    differently by two servers, the same text once read as items."""
    bad = json_lines('{"output": "Hello wor"}\n{"output": ""}\n{"output": "ld!"}\n')
    fixed = json_lines('{"output": "Hello"}\n{"output": " world"}\n{"output": "!"}\n')
    assert bad == [{"output": "Hello wor"}, {"output": ""}, {"output": "ld!"}]
    assert response_texts(_rec(0, bad, "", True)) == response_texts(_rec(0, fixed, "", True)) == ("Hello world!",)
    assert json_lines("plain text\n") == "plain text\n" and json_lines("[1]\n") == "[1]\n"


def test_compare_counts_failed_requests():
    p = prompt_for
    bad = LoadResult(1, 1, 1.0, [_rec(0, "abc")])
    fixed = LoadResult(1, 1, 1.0, [_rec(0, {"error": "x"}, status=500)])
    assert not compare(bad, fixed, p).passed


def test_response_text_of_streams_and_openai_bodies():
    sse = decode_body(b'data: {"choices":[{"text":"a"}]}\n\ndata: {"choices":[{"delta":{"content":"b"}}]}\n\n'
                      b"data: [DONE]\n\n", "text/event-stream")
    assert response_text(_rec(0, sse, "text/event-stream", streamed=True)) == "ab"
    assert response_text(_rec(0, {"choices": [{"message": {"content": "hi"}}]})) == "hi"
    assert response_text(_rec(0, {"choices": ["one choice", "another"]})) == "one choice"  # not OpenAI's shape
    assert response_text(_rec(0, [{"generated_text": "long text", "x": "s"}])) == "long text"
    plain = _rec(0, "chunk1chunk2", "text/plain", streamed=True)
    assert response_shape(plain) == {"stream": "text-stream", "event": None}


def test_streams_of_json_lines_and_cumulative_text():
    """Seed 004 streams JSON lines (labelled an event stream) whose text is the whole completion so far."""
    lines = b'{"text": "He", "finish_reason": null}\n{"text": "Hello", "finish_reason": null}\n' \
            b'{"text": "Hello", "finish_reason": null}\n{"text": "Hello!", "finish_reason": "length"}\n'
    events = decode_body(lines, "text/event-stream")  # the third output's token ends mid-character: no new text
    assert events == [{"text": "He", "finish_reason": None}, {"text": "Hello", "finish_reason": None},
                      {"text": "Hello", "finish_reason": None}, {"text": "Hello!", "finish_reason": "length"}]
    assert response_text(_rec(0, events, "text/event-stream", streamed=True)) == "Hello!"
    deltas = decode_body(b'{"text": "He"}\n{"text": "llo"}\n', "application/x-ndjson")
    assert response_text(_rec(0, deltas, "application/x-ndjson", streamed=True)) == "Hello"


def test_a_one_token_cumulative_stream_with_a_repeated_final_event():
    """Seed 004's fixed server streams the text so far and ends with an event that repeats it: a one-token
    completion is then two equal events, which read as deltas too; the reference's answer decides."""
    p = prompt_for
    events = [{"text": "last", "finish_reason": None}, {"text": "last", "finish_reason": "length"}]
    streamed = _rec(0, events, "text/event-stream", streamed=True)
    assert response_texts(streamed) == ("lastlast", "last")
    assert compare(LoadResult(1, 1, 1.0, [_rec(0, {"text": "last"})]),
                   LoadResult(1, 1, 1.0, [streamed]), p, shapes_of=None).passed
    repeated = LoadResult(1, 1, 1.0, [_rec(0, {"text": "lastlast"})])
    assert compare(repeated, LoadResult(1, 1, 1.0, [streamed]), p, shapes_of=None).passed  # one token twice, as deltas
    other = LoadResult(1, 1, 1.0, [_rec(0, {"text": "lost"})])
    c = compare(other, LoadResult(1, 1, 1.0, [streamed]), p, shapes_of=None)
    assert not c.passed and c.mismatches[0]["fixed_text"] == "lastlast"


def test_compare_texts_only_against_a_reference_without_shapes():
    p = prompt_for
    reference = LoadResult(1, 2, 1.0, [_rec(0, " abc", "text/plain"), _rec(1, " def", "text/plain")])
    fixed = LoadResult(1, 2, 1.0, [_rec(0, {"text": " abc"}), _rec(1, {"text": " dXf"})])
    c = compare(reference, fixed, p, shapes_of=None)
    assert (c.compared, c.same_text, c.shapes) == (2, 1, False) and not c.passed
    assert c.as_dict()["same_shape"] is None and "bad_shape" not in c.mismatches[0]
    assert compare(reference, LoadResult(1, 1, 1.0, [_rec(0, {"text": " abc"})]), p, shapes_of=None).compared == 2


def test_unservable_servers_are_named():
    from vllm_lint.reference.validate.prepare import unservable

    assert unservable("import grpc\nclass S(pb2_grpc.GenServicer):\n    pass\n").startswith("a gRPC module that starts no server")
    assert unservable("import grpc\nserver = grpc.aio.server()\nserver.add_insecure_port('[::]:50051')\n") is None
    assert unservable("from django.http import JsonResponse\ndef generate(request):\n    pass\n") is None  # a views module
    assert unservable("import modal\napp = modal.App()\n@app.cls()\nclass M:\n    pass\n").startswith("a Modal app: validate does not run")
    assert unservable("from django.apps import AppConfig\nclass C(AppConfig):\n    pass\n").startswith("Django code with no view")
    assert unservable("from fastapi import FastAPI\napp = FastAPI()\n@app.websocket('/ws')\nasync def ws(w):\n    pass\n") is None
    assert unservable("from fastapi import FastAPI\napp = FastAPI()\n@app.get('/health')\ndef h():\n    pass\n") \
        .startswith("no POST route")
    assert unservable("from fastapi import FastAPI\napp = FastAPI()\n@app.get('/g')\ndef g(text: str):\n    pass\n") is None
    # A GET route whose parameter no prompt name matches: served where --endpoint names it.
    line_route = "from fastapi import FastAPI\napp = FastAPI()\n@app.get('/ai')\ndef prompt(line: str):\n    pass\n"
    assert unservable(line_route).startswith("no POST route")
    assert unservable(line_route, endpoint_given=True) is None
    assert unservable("from ray import serve\n@serve.deployment\n@serve.ingress(app)\nclass D:\n    @app.post('/g')\n    def g(self):\n        pass\n") is None
    assert unservable("import ray\n@ray.remote\nclass A:\n    pass\n").startswith("Ray code with no Serve deployment")
    assert unservable("from sanic import Sanic\napp = Sanic('a')\n@app.post('/g')\nasync def g(request):\n    pass\n") \
        in (None, "a Sanic app, and sanic is not installed here: pip install 'vllm-lint[frameworks]' (or the framework "
            "the file uses) to validate it")
    assert unservable("from sanic.response import json\n").startswith("Sanic code that builds no app")
    starlette = "from starlette.applications import Starlette\nfrom starlette.routing import Route\n"
    assert unservable(starlette + "app = Starlette(routes=[Route('/age', age, methods=['POST'])])\n") is None
    assert unservable(starlette + "app = Starlette(routes=[Route('/h', h)])\n").startswith("no POST route")
    assert unservable("import gradio as gr\ngr.Interface(fn=f, inputs='text', outputs='text').launch()\n") is None
    assert unservable("import bentoml\n@bentoml.service\nclass S:\n    pass\n") is None
    assert unservable("import bentoml\nclient = bentoml.SyncHTTPClient('http://localhost:3000')\n") \
        .startswith("BentoML code with no @bentoml.service class")
    assert unservable("import litserve as ls\nclass A(ls.LitAPI):\n    pass\n").startswith("a LitServe API the file never serves")
    assert unservable("import litserve as ls\nclass A(ls.LitAPI):\n    pass\nls.LitServer(A()).run()\n") is None
    assert unservable("import openai\nprint(openai.OpenAI())\n") is None
    assert unservable("from flask import Flask\napp = Flask(__name__)\n@app.route('/g', methods=['POST'])\ndef g():\n    pass\n") is None


def test_launcher_runs_a_file_as_main_when_its_main_block_serves_it():
    from vllm_lint.reference.server_kinds import serves_under_main

    served = "import uvicorn\napp = 1\nif __name__ == '__main__':\n    llm = 2\n    uvicorn.run(app, port=1)\n"
    through_main = "import uvicorn\ndef main():\n    uvicorn.run(app)\nif __name__ == '__main__':\n    main()\n"
    printed = "import uvicorn\nif __name__ == '__main__':\n    print('run: uvicorn server:app')\n"
    assert serves_under_main(served) and serves_under_main(through_main) and not serves_under_main(printed)


def test_launcher_describes_a_flask_apps_post_routes():
    require_modules("flask", what="the Flask OpenAPI test")
    from flask import Flask, request

    from vllm_lint.reference.launch import flask_openapi

    app = Flask("demo")

    @app.route("/form", methods=["POST"])
    def form():
        return request.form["prompt"]

    @app.post("/json")
    def json_view():
        data = request.get_json()
        return str(data.get("text", ""))

    @app.post("/query")
    def query():
        return request.args.get("q", "")

    @app.post("/item/<int:n>")
    def item(n):
        return request.form["prompt"]

    document = flask_openapi(app)
    assert sorted(document["paths"]) == ["/form", "/json", "/query"]
    assert document["paths"]["/form"]["post"]["requestBody"]["content"] == {
        "application/x-www-form-urlencoded": {"schema": {"type": "object", "properties": {"prompt": {"type": "string"}}}}}
    assert discover_endpoint(document).describe() == "POST /form with 'prompt' in the form body"
    assert document["paths"]["/json"]["post"]["requestBody"]["content"]["application/json"]["schema"]["properties"] == {
        "text": {"type": "string"}}
    assert document["paths"]["/query"]["post"]["parameters"] == [{"name": "q", "in": "query"}]


def test_launcher_describes_a_starlette_apps_post_routes(tmp_path):
    require_modules("starlette", what="the Starlette OpenAPI test")
    from vllm_lint.reference.launch import load_app, starlette_openapi

    server = tmp_path / "server.py"
    server.write_text(
        "from starlette.applications import Starlette\n"
        "from starlette.responses import JSONResponse\n"
        "from starlette.routing import Route\n\n"
        "async def age(request):\n"
        "    body = await request.json()\n"
        "    return JSONResponse(body['inputs'])\n\n"
        "async def health(request):\n"
        "    return JSONResponse('ok')\n\n"
        "app = Starlette(routes=[Route('/age', age, methods=['POST']), Route('/health', health)])\n")
    app = load_app(server)
    document = starlette_openapi(app)
    assert list(document["paths"]) == ["/age"]
    assert discover_endpoint(document).describe() == "POST /age with 'inputs' in the JSON body"


def test_launcher_describes_the_bodies_fastapi_handlers_read_by_hand(tmp_path):
    require_modules("fastapi", "httpx", what="the FastAPI OpenAPI test")
    from fastapi.testclient import TestClient

    from vllm_lint.reference.launch import describe_hand_read_bodies, load_app

    server = tmp_path / "server.py"
    server.write_text(
        "from fastapi import FastAPI, Request\n"
        "app = FastAPI()\n\n"
        "@app.post('/typed')\n"
        "def typed(question: str):\n"
        "    return question\n\n"
        "@app.post('/generate')\n"
        "async def generate(request: Request):\n"
        "    data = await request.json()\n"
        "    return data.get('prompt', '')\n\n"
        "@app.post('/form')\n"
        "async def form(req: Request):\n"
        "    return (await req.form())['text']\n")
    app = load_app(server)
    describe_hand_read_bodies(app)
    document = TestClient(app).get("/openapi.json").json()
    generate_body = document["paths"]["/generate"]["post"]["requestBody"]["content"]
    assert generate_body == {"application/json": {"schema": {"type": "object", "properties": {"prompt": {"type": "string"}}}}}
    assert list(document["paths"]["/form"]["post"]["requestBody"]["content"]) == ["application/x-www-form-urlencoded"]
    typed = document["paths"]["/typed"]["post"]  # FastAPI's own description is kept
    assert [p["name"] for p in typed["parameters"]] == ["question"] and "requestBody" not in typed
    generate = {"paths": {"/generate": document["paths"]["/generate"]}}
    assert discover_endpoint(generate).describe() == "POST /generate with 'prompt' in the JSON body"


def test_loadgen_counts_and_percentiles():
    require_modules("httpx", what="the load generator")
    import httpx

    from vllm_lint.reference.loadgen import RequestSpec, run_load

    seen = []

    def handler(request):
        seen.append(request.url.params["prompt"])
        return httpx.Response(200, json="out " + request.url.params["prompt"])

    result = asyncio.run(run_load("http://127.0.0.1:9", lambda i: RequestSpec("/chat", params={"prompt": str(i)}),
                                  requests=10, concurrency=3, transport=httpx.MockTransport(handler),
                                  count_tokens=lambda r: 2))
    stats = result.stats()
    assert sorted(seen, key=int) == [str(i) for i in range(10)]
    assert [r.body for r in result.records] == [f"out {i}" for i in range(10)]
    assert stats["ok"] == 10 and stats["tokens"] == 20 and stats["latency_p95_s"] is not None
    assert stats["ttft_p50_s"] is None  # no streams


def test_loadgen_records_http_errors():
    require_modules("httpx", what="the load generator")
    import httpx

    from vllm_lint.reference.loadgen import RequestSpec, run_load

    result = asyncio.run(run_load("http://localhost:9", lambda i: RequestSpec("/x"), requests=2, concurrency=2,
                                  transport=httpx.MockTransport(lambda r: httpx.Response(503, text="busy"))))
    assert result.stats()["errors"] == 2 and "HTTP 503" in result.records[0].error


@pytest.mark.parametrize("requests, concurrency", [(0, 1), (1, 0)])
def test_every_load_driver_refuses_an_empty_load(requests, concurrency):
    """drive() checks it for the HTTP, websocket, gRPC and Gradio drivers alike."""
    import httpx

    from vllm_lint.reference.loadgen import RequestSpec, drive, run_load

    async def one(i):
        raise AssertionError("no request may be sent")

    with pytest.raises(ValueError, match="requests and concurrency must be at least 1"):
        asyncio.run(drive(one, requests=requests, concurrency=concurrency, max_seconds=1))
    with pytest.raises(ValueError, match="requests and concurrency must be at least 1"):
        asyncio.run(run_load("http://127.0.0.1:9", lambda i: RequestSpec("/x"), requests=requests,
                             concurrency=concurrency, transport=httpx.MockTransport(lambda r: httpx.Response(200))))


@pytest.mark.parametrize("url", ["http://10.0.0.1:8000", "http://example.com", "http://192.168.1.2"])
def test_loadgen_refuses_non_loopback(url):
    with pytest.raises(ValueError, match="loopback"):
        check_loopback(url)


@pytest.mark.parametrize("url", ["http://127.0.0.1:1", "http://localhost:2", "http://[::1]:3", "http://127.9.9.9"])
def test_loadgen_accepts_loopback(url):
    check_loopback(url)


def _report(tmp_path, name="VLL101 example 1", bad_tokens=100, fixed_tokens=400):
    p = prompt_for
    bad = LoadResult(4, 1, 1.0, [_rec(0, p(0) + "x")])
    bad.records[0].tokens = bad_tokens
    fixed = LoadResult(4, 1, 1.0, [_rec(0, p(0) + "x")])
    fixed.records[0].tokens = fixed_tokens
    case = Case(name, "source", f"rules/{name.split()[0]}.yaml, example 1", explicit=False)
    prepared = PreparedCase(case, PreparedSource("bad", tmp_path / "b.py", ["app = FastAPI()"]),
                                    PreparedSource("fixed", tmp_path / "f.py"), "diff", {"VLL101": 1},
                                    ["gpt2"])
    opts = Options(cases=[case], model=tmp_path / "tiny-model-M", concurrency=4, requests=1, sweep=(1, 4))
    return Report(opts, prepared, Endpoint("/chat", "prompt", "query"), {"bad": bad, "fixed": fixed},
                          {"bad": {1: bad, 4: bad}, "fixed": {1: fixed, 4: fixed}},
                          compare(bad, fixed, p), {"bad": 1.0, "fixed": 2.0}, bad,
                          compare(bad, bad, p))


def test_summary_ends_with_ratio_and_json_is_serialisable(tmp_path):
    report = _report(tmp_path)
    validation = Validation(report.options, [report])
    summary = format_summary(validation)
    assert summary.splitlines()[-1] == "fixed/bad throughput ratio: 4.00"
    assert "PASS" in summary and "injected into the bad file" in summary and "(1 x VLL101)" in summary
    data = json.loads(json.dumps(validation.as_dict()))
    assert data["passed"] and data["fixed_over_bad_throughput"] == 4.0
    [run] = data["runs"]
    assert run["fixed_over_bad_throughput"] == 4.0 and set(run["sweep"]) == {"1", "4"}
    assert run["fixes_applied"] == {"VLL101": 1} and run["fixed_by"] == "vllm-lint check --fix --unsafe-fixes"


def test_summary_of_several_ends_with_the_lowest_ratio(tmp_path):
    first, second = _report(tmp_path), _report(tmp_path, "VLL103 example 1", fixed_tokens=1200)
    case = Case("x.py", "", "x.py")
    validation = Validation(first.options, [first, second], skipped=[(case, "no rewrite")])
    summary = format_summary(validation).splitlines()
    assert summary[-1] == "fixed/bad throughput ratio: 4.00"
    assert "VLL103 example 1: fixed/bad throughput ratio 12.00" in summary
    assert "skipped: x.py: no rewrite" in summary and validation.passed
    # a bad server that generated nothing under load (it hung) has no finite ratio: not the lowest
    hung = _report(tmp_path, "VLL103 example 3", bad_tokens=0)
    validation.reports.append(hung)
    summary = format_summary(validation).splitlines()
    assert hung.ratio is None and validation.ratio == 4.0 and summary[-1] == "fixed/bad throughput ratio: 4.00"
    assert "VLL103 example 3: fixed/bad throughput ratio n/a (the bad server generated nothing under load)" in summary
    validation.failed.append((Case("y.py", "", "y.py"), "the bad server exited with 1:\nlog"))
    summary = format_summary(validation)
    assert not validation.passed and "FAILED: y.py: the bad server exited with 1:" in summary
    assert "FAIL (did not run)" in summary


def test_plot_is_a_png(tmp_path):
    require_modules("matplotlib", what="the plot")
    out = tmp_path / "plot.png"
    first = _report(tmp_path)
    write_plot(Validation(first.options, [first, _report(tmp_path, "VLL103 example 1")]), out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_imports_cheaply():
    import subprocess
    import sys

    code = ("import sys, vllm_lint.cli.reference as c; heavy = [m for m in ('vllm', 'torch', 'fastapi', "
            "'transformers', 'httpx') if m in sys.modules]; print(heavy); "
            "assert c.serve_reference.name == 'serve-reference' and 'make-tiny-model' in c.reference.commands "
            "and 'validate' in c.reference.commands")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_parse_bytes():
    from vllm_lint.cli.reference import parse_bytes

    assert parse_bytes("256MiB") == 256 * 2**20 and parse_bytes("1G") == 2**30 and parse_bytes("1024") == 1024
    with pytest.raises(click.BadParameter, match="'lots' is not a size"):
        parse_bytes("lots")


def test_launcher_pipeline_wrapper_forces_greedy_and_counts_tokens():
    from types import SimpleNamespace

    from vllm_lint.reference import launch

    class Seqs:
        shape = (1, 12)

    class Model:
        def generate(self, input_ids=None, **kwargs):
            return Seqs()

    calls = []

    class Pipe:
        model = Model()
        task = "text-generation"

        def __call__(self, *args, **kwargs):
            calls.append((args, kwargs))
            self.model.generate(input_ids=SimpleNamespace(shape=(1, 5)))
            return [{"generated_text": "x"}]

    wrapped = launch._GreedyPipeline(Pipe(), max_tokens=7)
    before = launch.COUNTER.total
    assert wrapped("hi", max_new_tokens=256, temperature=0.7, return_full_text=True) == [{"generated_text": "x"}]
    assert calls == [(("hi",), {"return_full_text": True, "max_new_tokens": 7, "do_sample": False})]
    assert launch.COUNTER.total - before == 7  # 12 tokens out, 5 of them the prompt
    # Several sequences, which greedy search refuses: each one sampled from the top token alone.
    wrapped("hi", num_return_sequences=3, do_sample=True)
    assert calls[-1] == (("hi",), {"num_return_sequences": 3, "max_new_tokens": 7, "do_sample": True, "top_k": 1})
    assert wrapped.task == "text-generation"  # everything else passes through


def test_launcher_pipeline_without_a_task_asks_for_text_generation(tmp_path):
    """Offline, transformers cannot ask the hub for the task of a model named without one; the launcher's model
    is a causal LM, which the hub tags "text-generation"."""
    require_modules("transformers", what="the launcher's pipeline patch")
    import subprocess
    import sys
    import textwrap

    probe = textwrap.dedent("""
        import transformers
        from vllm_lint.reference import launch

        import torch

        seen = []
        # Each load seeded, so that weights the local checkpoint lacks are drawn alike in both servers.
        transformers.pipeline = lambda *args, **kwargs: seen.append((args, kwargs, torch.initial_seed())) or object()
        launch.patch_transformers(MODEL_DIR, 7)
        transformers.pipeline(model=object(), tokenizer=object())
        torch.seed()
        transformers.pipeline("summarization", model="t5-small")
        transformers.pipeline(task="fill-mask", model="bert-base-uncased")
        for args, kwargs, seed in seen:
            print(args, kwargs.get("task"), kwargs.get("model"), seed)
        # The config of a model named by no call (a task's default model, read by a fix): the directory's.
        print(transformers.AutoConfig.from_pretrained("openai-community/gpt2", revision="607a30d").n_positions)
        # With no GPU, a model or a tokenizer's output moved to one stays on the CPU.
        cuda = torch.cuda.is_available()
        moved = [torch.nn.Linear(1, 1).to("cuda:0").weight, transformers.BatchEncoding({"a": torch.ones(1)}).to("cuda")["a"]]
        print("cuda" if cuda else " ".join(str(t.device) for t in moved))
    """).replace("MODEL_DIR", repr(str(tmp_path)))
    (tmp_path / "config.json").write_text('{"model_type": "gpt2", "n_positions": 96}')
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"() text-generation {tmp_path} 0", f"('summarization',) None {tmp_path} 0", f"() fill-mask {tmp_path} 0", "96",
        "cuda" if "cuda" in result.stdout.splitlines()[-1] else "cpu cpu"]


def test_loadgen_usage_tokens():
    from vllm_lint.reference.loadgen import _usage_tokens

    assert _usage_tokens(_rec(0, {"usage": {"completion_tokens": 7}})) == 7
    events = [{"choices": [{"text": "a"}]}, {"choices": [], "usage": {"completion_tokens": 3}}, "[DONE]"]
    assert _usage_tokens(_rec(0, events, "text/event-stream", streamed=True)) == 3
    assert _usage_tokens(_rec(0, "plain")) == 0


DJANGO_VIEWS = '''\
import json

from django.http import JsonResponse
from django.views.decorators.http import require_POST


@require_POST
def generate(request):
    data = json.loads(request.body)
    return JsonResponse({"text": data["prompt"].upper()})


def search(request):
    return JsonResponse({"hits": [request.GET.get("q", "")]})


def _helper(request):
    return None
'''


def test_the_launcher_serves_a_django_views_module_with_its_views_routed(tmp_path):
    """A views.py with no project: each public view at /<name>, its OpenAPI document read off the views."""
    require_modules("django", "werkzeug", "httpx", what="the Django launcher test")
    import httpx

    from .conftest import launched

    (tmp_path / "views.py").write_text(DJANGO_VIEWS)
    with launched(tmp_path, "views.py", "/openapi.json") as base:
        document = httpx.get(base + "/openapi.json", trust_env=False).json()
        assert document == {"openapi": "3.0.0", "info": {"title": "vllm_lint_validated_server", "version": "0"},
                            "paths": {
                                "/generate": {"post": {"parameters": [], "requestBody": {"content": {
                                    "application/json": {"schema": {"type": "object", "properties": {
                                        "prompt": {"type": "string"}}}}}}}},
                                "/search": {"post": {"parameters": [{"name": "q", "in": "query"}]}}}}
        assert discover_endpoint(document).describe() == "POST /generate with 'prompt' in the JSON body"
        answer = httpx.post(base + "/generate", json={"prompt": "hi"}, trust_env=False)
        assert (answer.status_code, answer.json()) == (200, {"text": "HI"})
        assert httpx.get(base + "/generate", trust_env=False).status_code == 405  # its own @require_POST
        assert httpx.get(base + "/__vllm_lint__/generated_tokens", trust_env=False).json() == {"generated_tokens": 0}
        assert httpx.get(base + "/_helper", trust_env=False).status_code == 404


def _grpc_project(tmp_path, code="VLL101", index=20):
    from vllm_lint.rulebook import load_rules

    example = load_rules()[code].examples[index]
    for name, text in example.files:
        (tmp_path / name).write_text(text)
    (tmp_path / "server.py").write_text(example.clean_code)
    return example


def test_grpc_endpoint_is_found_from_the_servicer_and_the_generated_descriptors(tmp_path):
    require_modules("grpc", "google.protobuf", what="the generated gRPC modules")
    from vllm_lint.reference.server_kinds import is_grpc_server
    from vllm_lint.reference.validate.grpc_endpoint import discover_grpc_endpoint

    example = _grpc_project(tmp_path)
    assert is_grpc_server(example.clean_code) and not is_grpc_server("import grpc\n")
    endpoint = discover_grpc_endpoint(example.clean_code, tmp_path)
    assert endpoint.describe() == "gRPC generate.Generator/Generate with 'prompt' in generate.GenerateRequest, the text from 'text'"
    assert (endpoint.grpc_module, endpoint.stream_field) == ("generate_pb2_grpc", None)
    assert endpoint._request(prompt="hi").prompt == "hi"
    # a servicer that reads no string field: the request's prompt-like one; a method that is no rpc: nothing to call
    assert discover_grpc_endpoint(example.clean_code.replace("request.prompt", "str(request)"), tmp_path).field == "prompt"
    with pytest.raises(ValidationError, match="no unary method of the servicer reads one string field"):
        discover_grpc_endpoint(example.clean_code.replace("def Generate(", "def Produce("), tmp_path)
    with pytest.raises(ValidationError, match="no servicer subclassing a generated"):
        discover_grpc_endpoint("import grpc\nclass S:\n    def Generate(self, request, context):\n        pass\n", tmp_path)


def test_file_cases_carry_the_generated_modules_beside_them(tmp_path):
    _grpc_project(tmp_path, "VLL103", 16)
    [case] = file_cases([tmp_path / "server.py"])
    assert [name for name, _ in case.files] == ["generate_pb2.py", "generate_pb2_grpc.py", "generate.proto"]
    [from_folder] = file_cases([tmp_path])
    assert from_folder.name == "server.py" and from_folder.files == case.files


def test_websocket_handlers_protocol_is_read_off_their_source():
    from vllm_lint.reference.websocket_routes import handler_protocol

    one = {"receives": "text", "fields": [], "greeting": 0, "replies": 1, "ends_with": None, "closes": False}
    loop = ("async def chat(websocket):\n    await websocket.accept()\n    while True:\n"
            "        prompt = await websocket.receive_text()\n        await websocket.send_text(pipe(prompt))\n")
    assert handler_protocol(loop) == one
    # One prompt per connection, then the handler returns and the connection closes.
    assert handler_protocol("async def f(ws):\n    p = await ws.receive_text()\n    await ws.send_text(p)\n") == \
        {**one, "closes": True}
    # A JSON message: its keys, read directly, by .get, or as a pydantic model's attributes.
    parsed = ("async def f(ws):\n    try:\n        while True:\n            raw = await ws.receive_text()\n"
              "            data = json.loads(raw)\n            if not data.get('prompt'):\n"
              "                await ws.send_json({'error': 'empty'})\n                continue\n"
              "            await ws.send_json({'text': gen(data['prompt'], data.get('max_tokens'))})\n"
              "    except WebSocketDisconnect:\n        await ws.send_text('bye')\n")
    assert handler_protocol(parsed) == {**one, "receives": "json", "fields": ["prompt", "max_tokens"]}
    model = ("async def f(ws):\n    async for data in ws.iter_json():\n        req = Req(**data)\n"
             "        await ws.send_text(gen(req.question))\n")
    assert handler_protocol(model) == {**one, "receives": "json", "fields": ["question"]}
    validated = ("async def f(ws):\n    while True:\n        req = Req.model_validate_json(await ws.receive_text())\n"
                 "        await ws.send_text(gen(req.prompt, req.n))\n")
    assert handler_protocol(validated) == {**one, "receives": "json", "fields": ["prompt", "n"]}
    # A greeting on connecting; a token stream ended by a constant message, or by the connection's end.
    streamed = ("async def f(ws):\n    await ws.accept()\n    await ws.send_text('ready')\n    while True:\n"
                "        prompt = await ws.receive_text()\n        for token in stream(prompt):\n"
                "            await ws.send_text(token)\n        await ws.send_json({'done': True})\n")
    assert handler_protocol(streamed) == {**one, "greeting": 1, "replies": None, "ends_with": {"done": True}}
    closes = "async def f(ws):\n    p = await ws.receive_bytes()\n    async for t in gen(p):\n        await ws.send_text(t)\n"
    assert handler_protocol(closes) == {**one, "receives": "bytes", "replies": None, "closes": True}
    endless = streamed.replace("        await ws.send_json({'done': True})\n", "")
    assert handler_protocol(endless) == {**one, "greeting": 1, "replies": None}
    # An echo of the prompt, then the answer: two messages.
    echo = loop.replace("        await websocket.send_text(pipe(prompt))\n",
                        "        await websocket.send_text('You: ' + prompt)\n        await websocket.send_text(pipe(prompt))\n")
    assert handler_protocol(echo) == {**one, "replies": 2}
    assert handler_protocol("async def f(ws):\n    await ws.send_text('hi')\n")["receives"] is None


def test_websocket_endpoint_is_chosen_from_the_listed_routes():
    from vllm_lint.reference.validate.websocket_endpoint import endpoint_of, serves_websockets
    from vllm_lint.reference.websocket_load import WebSocketExchange

    route = {"path": "/ws", "receives": "text", "fields": [], "greeting": 0, "replies": 1, "ends_with": None,
             "closes": False}
    text = endpoint_of(route)
    assert text.describe() == "websocket /ws: the prompt as a text message, the answer its first message"
    assert text.request("Hi") == WebSocketExchange("/ws", "Hi", 0, 1, None)
    chat = endpoint_of({**route, "receives": "json", "fields": ["model", "messages"], "greeting": 1, "replies": None,
                        "ends_with": "[DONE]"})
    assert chat.describe() == ("websocket /ws: a JSON message with 'messages', the answer its messages until "
                               "'[DONE]', after 1 on connecting")
    assert chat.request("Hi").message == '{"messages": [{"role": "user", "content": "Hi"}]}'
    assert endpoint_of({**route, "receives": "json", "fields": ["input", "prompt"]}).request("Hi").message == '{"prompt": "Hi"}'
    assert endpoint_of({**route, "receives": "bytes"}).request("Hi").message == b"Hi"
    for bad, why in (({"receives": None}, "/ws: its handler reads no message"),
                     ({"receives": "json", "fields": ["id"]}, "/ws: its handler reads no prompt-like key"),
                     ({"replies": None}, "/ws: its handler sends a message per step of a loop")):
        with pytest.raises(ValidationError, match="^" + why):
            endpoint_of({**route, **bad})
    assert serves_websockets("@app.websocket('/ws')\nasync def f(ws):\n    pass\n")
    assert serves_websockets("app = Starlette(routes=[WebSocketRoute('/ws', f)])\n")
    assert serves_websockets("app.add_api_websocket_route('/ws', f)\n")
    assert serves_websockets("@app.websocket_route('/ws')\nasync def f(ws):\n    pass\n")
    assert not serves_websockets("@app.post('/ws')\nasync def f(websocket):\n    websocket.receive_text()\n")


def test_launcher_lists_an_apps_websocket_routes():
    require_modules("fastapi", "httpx", what="the websocket listing test")
    from fastapi import APIRouter, FastAPI, WebSocket
    from fastapi.testclient import TestClient
    from starlette.applications import Starlette
    from starlette.routing import Mount, WebSocketRoute

    from vllm_lint.reference.websocket_routes import WEBSOCKETS_PATH, add_websockets_route

    router = APIRouter(prefix="/v1")

    @router.websocket("/chat/{client_id}")
    async def chat(websocket: WebSocket, client_id: int):
        data = await websocket.receive_json()
        await websocket.send_json({"text": data["prompt"]})

    app = FastAPI()
    app.include_router(router)
    add_websockets_route(app)
    client = TestClient(app)
    assert client.get(WEBSOCKETS_PATH).json() == [{"path": "/v1/chat/0", "receives": "json", "fields": ["prompt"],
                                                   "greeting": 0, "replies": 1, "ends_with": None, "closes": True}]
    assert WEBSOCKETS_PATH not in json.dumps(client.get("/openapi.json").json())

    async def echo(websocket):
        await websocket.accept()
        await websocket.send_text(await websocket.receive_text())

    starlette = Starlette(routes=[Mount("/api", routes=[WebSocketRoute("/ws", echo)])])
    add_websockets_route(starlette)
    assert [r["path"] for r in TestClient(starlette).get(WEBSOCKETS_PATH).json()] == ["/api/ws"]


def test_websocket_load_sends_one_prompt_per_connection(tmp_path):
    """The driver against a real uvicorn websocket server: a greeting skipped, a streamed answer to its end
    message, a refused upgrade and a handler that closes mid-answer recorded as failures."""
    require_modules("uvicorn", "websockets", "starlette", what="the websocket driver test")
    import threading

    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import WebSocketRoute

    from vllm_lint.reference.processes import free_port
    from vllm_lint.reference.websocket_load import WebSocketExchange, run_websocket_load

    async def ws(websocket):
        await websocket.accept()
        await websocket.send_text("ready")
        prompt = await websocket.receive_text()
        if prompt == "close":
            await websocket.close(code=1011)
            return
        for word in prompt.split():
            await websocket.send_text(word)
        await websocket.send_json({"done": True})

    app = Starlette(routes=[WebSocketRoute("/ws", ws)])
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            thread.join(0.05)
        prompts = ["a b c", "d e", "close"]

        def exchange(i: int) -> WebSocketExchange:
            return WebSocketExchange("/nowhere" if i == 3 else "/ws", prompts[i % 3], 1, None, {"done": True})

        result = asyncio.run(run_websocket_load(f"http://127.0.0.1:{port}", exchange, requests=4, concurrency=2,
                                                timeout=30, count_tokens=lambda r: len(r.body)))
    finally:
        server.should_exit = True
        thread.join(10)
    first, second, closed, refused = result.records
    assert (first.body, first.streamed, first.tokens, second.body) == (["a", "b", "c"], True, 3, ["d", "e"])
    assert first.ok and first.ttfb is not None and 0 < first.ttfb <= first.latency
    assert closed.error == "the server closed the websocket with 1011 after 0 of the answer's messages"
    assert (refused.status, refused.error) == (403, "HTTP 403: the websocket upgrade was refused")
    assert result.stats()["ok"] == 2


def test_processes_the_served_file_spawns_do_not_run_it_again(tmp_path):
    """vLLM's offline LLM starts its engine core with multiprocessing's spawn, which re-runs the main file in
    the child; the launcher runs the server file as __main__, so a module-level LLM(...) would be built again
    there, outside the launcher's patches. The child must not run the file."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    runs = tmp_path / "runs.txt"
    app = tmp_path / "app.py"
    app.write_text(
        "import multiprocessing\n"
        f"with open({str(runs)!r}, 'a') as f:\n    f.write('run\\n')\n"
        "if __name__ == '__main__':\n"
        "    child = multiprocessing.get_context('spawn').Process(target=print)\n"
        "    child.start()\n    child.join()\n    assert child.exitcode == 0\n"
    )
    code = ("import pathlib, runpy\nfrom vllm_lint.reference.spawned import keep_children_off_the_file\n"
            f"path = pathlib.Path({str(app)!r})\nkeep_children_off_the_file(path)\nrunpy.run_path(str(path), run_name='__main__')\n")
    root = str(Path(__file__).resolve().parents[2])
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path, timeout=120, env={**os.environ, "PYTHONPATH": root})
    assert runs.read_text() == "run\n"


def test_a_causal_lm_class_of_another_architecture_loads_the_local_model_in_its_own():
    """``GPTNeoXForCausalLM.from_pretrained`` over the local Llama would draw every weight at random."""
    from types import SimpleNamespace

    from vllm_lint.reference.launch import _other_causal_lm

    def model_class(name, model_type):
        return type(name, (), {"config_class": SimpleNamespace(model_type=model_type)})

    assert _other_causal_lm(model_class("GPTNeoXForCausalLM", "gpt_neox"), "llama")
    assert _other_causal_lm(model_class("GPT2LMHeadModel", "gpt2"), "llama")
    assert not _other_causal_lm(model_class("LlamaForCausalLM", "llama"), "llama")
    assert not _other_causal_lm(model_class("BertForSequenceClassification", "bert"), "llama")  # no causal LM
    assert not _other_causal_lm(type("AutoModelForCausalLM", (), {}), "llama")


def test_a_route_given_on_the_command_line_is_sent_with_the_method_the_server_takes():
    """``--endpoint /ai --prompt-field line --prompt-in query`` over FastAPI's ``@app.get("/ai") def prompt(line)``."""
    from vllm_lint.reference.validate.endpoint import as_served

    given = Endpoint("/ai", "line", "query")
    get_only = {"paths": {"/ai": {"get": {"parameters": [{"name": "line", "in": "query"}]}}}}
    assert as_served(given, get_only).request("hi").method == "GET"
    assert as_served(given, {"paths": {"/ai": {"get": {}, "post": {}}}}).method == "POST"
    assert as_served(Endpoint("/ai", "line", "json"), get_only).method == "POST"  # a body is posted
