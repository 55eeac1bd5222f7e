"""Unit tests of the validation harness and the load generator (no server started)."""

from __future__ import annotations

import ast
import asyncio
import json

import pytest

from vllm_lint.reference import validate as harness
from vllm_lint.reference.loadgen import LoadResult, Record, check_loopback, decode_body

from .conftest import FIXTURES, SEED_BAD_SERVER, require_modules


def test_make_runnable_injects_app_and_imports():
    source = '"""Doc."""\nfrom __future__ import annotations\n@app.post("/x")\ndef x():\n    return uuid.uuid4().hex\n'
    new, notes = harness.make_runnable(source)
    ast.parse(new)
    lines = new.splitlines()
    assert lines[0] == '"""Doc."""' and lines[1] == "from __future__ import annotations"
    assert lines[2].startswith("import uuid")
    assert any(line.startswith("app = _VllmLintFastAPI()") for line in lines[3:5])
    assert len(notes) == 2 and "app = FastAPI()" in notes[1]


def test_make_runnable_leaves_complete_files_alone():
    source = (FIXTURES / "fixed_pipeline_server.py").read_text()
    assert harness.make_runnable(source) == (source, [])


@pytest.mark.skipif(not SEED_BAD_SERVER.exists(), reason="shared/ seeds not beside the repository")
def test_seed_bad_server_gets_an_app():
    new, notes = harness.make_runnable(SEED_BAD_SERVER.read_text())
    tree = ast.parse(new)
    assert "app" in harness._module_bindings(tree)
    assert notes == ["app = FastAPI() (the file uses @app routes but never creates app)"]
    # the injection comes before the first use
    first_use = new.index("@app.post")
    assert new.index("app = _VllmLintFastAPI()") < first_use


def test_prepare_sources_copies_and_reports(tmp_path):
    notes = []
    bad, fixed, diff = harness.prepare_sources(FIXTURES / "bad_pipeline_server.py",
                                               FIXTURES / "fixed_pipeline_server.py", tmp_path / "w", notes.append)
    assert diff is None and bad.injected and not fixed.injected
    assert "app = _VllmLintFastAPI()" in bad.path.read_text()
    assert fixed.path.read_text() == (FIXTURES / "fixed_pipeline_server.py").read_text()
    assert notes == ["bad: injected app = FastAPI() (the file uses @app routes but never creates app)"]
    broken = tmp_path / "broken.py"
    broken.write_text("def x(:\n")
    with pytest.raises(harness.ValidationError, match="fixed file does not parse"):
        harness.prepare_sources(FIXTURES / "bad_pipeline_server.py", broken, tmp_path / "w2", notes.append)


def _openapi_query():
    return {"paths": {"/health": {"get": {}}, "/chat": {"post": {"parameters": [
        {"name": "prompt", "in": "query", "required": True, "schema": {"type": "string"}}]}}}}


def test_discover_query_endpoint():
    ep = harness.discover_endpoint(_openapi_query())
    assert (ep.path, ep.field, ep.where) == ("/chat", "prompt", "query")
    spec = ep.request("hi")
    assert spec.params == {"prompt": "hi"} and spec.json is None


def test_discover_json_body_endpoint_through_ref():
    openapi = {"paths": {"/generate": {"post": {"requestBody": {"content": {"application/json": {
        "schema": {"$ref": "#/components/schemas/Req"}}}}}}},
        "components": {"schemas": {"Req": {"properties": {"text": {"type": "string"}, "n": {}}}}}}
    ep = harness.discover_endpoint(openapi)
    assert (ep.path, ep.field, ep.where) == ("/generate", "text", "json")
    assert ep.request("hi").json == {"text": "hi"}


def test_discover_messages_endpoint():
    openapi = {"paths": {"/v1/chat": {"post": {"requestBody": {"content": {"application/json": {
        "schema": {"properties": {"messages": {"type": "array"}}}}}}}}}}
    ep = harness.discover_endpoint(openapi)
    assert ep.messages and ep.request("hi").json == {"messages": [{"role": "user", "content": "hi"}]}


def test_discover_nothing_says_what_to_do():
    with pytest.raises(harness.ValidationError, match="--endpoint"):
        harness.discover_endpoint({"paths": {"/x": {"get": {}}}})


def test_prompts_are_fixed_and_distinct():
    prompts = [harness.prompt_for(i) for i in range(64)]
    assert len(set(prompts)) == 64 and prompts[3] == harness.prompt_for(3)


def _rec(i, body, content_type="application/json", streamed=False, status=200):
    return Record(i, status, 0.5, 0.1, body, content_type, streamed)


def test_compare_same_text_after_prompt_echo():
    p = harness.prompt_for
    bad = LoadResult(1, 2, 1.0, [_rec(0, p(0) + " abc"), _rec(1, p(1) + " def")])
    fixed = LoadResult(1, 2, 1.0, [_rec(0, p(0) + " abc"), _rec(1, " def")])
    c = harness.compare(bad, fixed, p)
    assert (c.compared, c.same_shape, c.same_text, c.echo_differs) == (2, 2, 2, 1)
    assert c.passed


def test_compare_reports_shape_and_text_mismatches():
    p = harness.prompt_for
    bad = LoadResult(1, 2, 1.0, [_rec(0, "abc"), _rec(1, "xyz")])
    fixed = LoadResult(1, 2, 1.0, [_rec(0, {"text": "abc"}), _rec(1, "xyQ")])
    c = harness.compare(bad, fixed, p)
    assert (c.same_shape, c.same_text) == (1, 1) and not c.passed
    assert c.mismatches[0]["bad_shape"] == "str" and c.mismatches[0]["fixed_shape"] == {"text": "str"}
    assert c.mismatches[1]["first_difference_at_char"] == 2


def test_compare_counts_failed_requests():
    p = harness.prompt_for
    bad = LoadResult(1, 1, 1.0, [_rec(0, "abc")])
    fixed = LoadResult(1, 1, 1.0, [_rec(0, {"error": "x"}, status=500)])
    assert not harness.compare(bad, fixed, p).passed


def test_response_text_of_streams_and_openai_bodies():
    sse = decode_body(b'data: {"choices":[{"text":"a"}]}\n\ndata: {"choices":[{"delta":{"content":"b"}}]}\n\n'
                      b"data: [DONE]\n\n", "text/event-stream")
    assert harness.response_text(_rec(0, sse, "text/event-stream", streamed=True)) == "ab"
    assert harness.response_text(_rec(0, {"choices": [{"message": {"content": "hi"}}]})) == "hi"
    assert harness.response_text(_rec(0, [{"generated_text": "long text", "x": "s"}])) == "long text"
    plain = _rec(0, "chunk1chunk2", "text/plain", streamed=True)
    assert harness.response_shape(plain) == {"stream": "text-stream", "event": None}


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


@pytest.mark.parametrize("url", ["http://10.0.0.1:8000", "http://example.com", "http://192.168.1.2"])
def test_loadgen_refuses_non_loopback(url):
    with pytest.raises(ValueError, match="loopback"):
        check_loopback(url)


@pytest.mark.parametrize("url", ["http://127.0.0.1:1", "http://localhost:2", "http://[::1]:3", "http://127.9.9.9"])
def test_loadgen_accepts_loopback(url):
    check_loopback(url)


def _report(bad_tps_tokens=100, fixed_tokens=400):
    p = harness.prompt_for
    bad = LoadResult(4, 1, 1.0, [_rec(0, p(0) + "x")])
    bad.records[0].tokens = bad_tps_tokens
    fixed = LoadResult(4, 1, 1.0, [_rec(0, p(0) + "x")])
    fixed.records[0].tokens = fixed_tokens
    opts = harness.Options(bad=FIXTURES / "bad_pipeline_server.py", fixed=None, model=FIXTURES,
                           concurrency=4, requests=1, sweep=(1, 4))
    return harness.Report(opts, harness.Endpoint("/chat", "prompt", "query"), {"bad": bad, "fixed": fixed},
                          {"bad": {1: bad, 4: bad}, "fixed": {1: fixed, 4: fixed}},
                          harness.compare(bad, fixed, p), {"bad": ["app = FastAPI()"], "fixed": []},
                          {"bad": 1.0, "fixed": 2.0}, None)


def test_summary_ends_with_ratio_and_json_is_serialisable(tmp_path):
    report = _report()
    summary = harness.format_summary(report)
    assert summary.splitlines()[-1] == "fixed/bad throughput ratio: 4.00"
    assert "PASS" in summary and "injected into the bad file" in summary
    data = json.loads(json.dumps(report.as_dict()))
    assert data["fixed_over_bad_throughput"] == 4.0 and set(data["sweep"]) == {"1", "4"}


def test_plot_is_a_png(tmp_path):
    require_modules("matplotlib", what="the plot")
    out = tmp_path / "plot.png"
    harness.write_plot(_report(), out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_imports_cheaply():
    import subprocess
    import sys

    code = ("import sys, vllm_lint.reference.cli as c; heavy = [m for m in ('vllm', 'torch', 'fastapi', "
            "'transformers', 'httpx') if m in sys.modules]; print(heavy); "
            "assert c.serve_reference.name == 'serve-reference' and 'make-tiny-model' in c.reference.commands "
            "and 'validate' in c.reference.commands")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_parse_bytes():
    from vllm_lint.reference.cli import parse_bytes

    assert parse_bytes("256MiB") == 256 * 2**20 and parse_bytes("1G") == 2**30 and parse_bytes("1024") == 1024
    with pytest.raises(Exception):
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
    assert wrapped.task == "text-generation"  # everything else passes through


def test_loadgen_usage_tokens():
    from vllm_lint.reference.loadgen import _usage_tokens

    assert _usage_tokens(_rec(0, {"usage": {"completion_tokens": 7}})) == 7
    events = [{"choices": [{"text": "a"}]}, {"choices": [], "usage": {"completion_tokens": 3}}, "[DONE]"]
    assert _usage_tokens(_rec(0, events, "text/event-stream", streamed=True)) == 3
    assert _usage_tokens(_rec(0, "plain")) == 0
