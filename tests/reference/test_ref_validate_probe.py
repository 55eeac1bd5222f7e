"""The event-loop probe of `vllm-lint validate` (no server started): which route it asks, and its verdict."""

from __future__ import annotations

import asyncio

import pytest

from vllm_lint.reference.loadgen import LoadResult, Record
from vllm_lint.reference.validate.cases import frees_the_loop, offloads, rewrites_a_server
from vllm_lint.reference.validate.probe import LoopCheck, LoopReading, Probe, probe_route, probed


def _openapi(**gets):
    """A document with a POST /generate and the GET routes given (path -> its parameters)."""
    paths = {"/generate": {"post": {"parameters": [{"name": "prompt", "in": "query", "required": True}]}}}
    for path, params in gets.items():
        paths[path.replace("_", "/")] = {"get": {"parameters": params}}
    return {"paths": paths}


@pytest.mark.parametrize("openapi, source, expected", [
    # a health route the OpenAPI document shows, before the root and the document itself
    ({"paths": {"/": {"get": {}}, "/v1/health": {"get": {}}, "/generate": {"post": {}}}}, "", "/v1/health"),
    # the root when there is no health route; never a GET route that needs a parameter (it may generate)
    ({"paths": {"/": {"get": {}}, "/ask": {"get": {"parameters": [{"name": "q", "in": "query", "required": True}]}}}},
     "", "/"),
    # a path parameter is never filled in
    ({"paths": {"/items/{id}": {"get": {}}}}, "", "/openapi.json"),
    # a Flask app's document lists its POST routes only: its source shows the GET routes
    ({"paths": {"/generate": {"post": {}}}},
     '@app.route("/healthz")\ndef h():\n    return "ok"\n@app.route("/generate", methods=["POST"])\ndef g():\n    pass\n',
     "/healthz"),
    # a route that takes POST only is not probed with GET
    ({"paths": {}}, '@app.route("/ping", methods=["POST"])\ndef p():\n    pass\n', "/openapi.json"),
    # nothing but the document the harness reads
    ({"paths": {"/generate": {"post": {}}}}, "", "/openapi.json"),
])
def test_the_probed_route(openapi, source, expected):
    assert probe_route(openapi, source, "/openapi.json", "/generate") == expected


def test_the_generation_route_is_never_probed_and_nothing_is_none():
    assert probe_route({"paths": {"/health": {"get": {}}}}, "", None, "/health") is None


def _load(*spans: tuple[float, float]) -> LoadResult:
    return LoadResult(4, len(spans), 10.0, [Record(i, 200, end - start, None, sent=start)
                                             for i, (start, end) in enumerate(spans)])


# Four generations of a second each, one after the other (a loop held by each in turn).
HELD = _load((0.0, 1.0), (1.0, 2.0), (2.0, 3.0), (3.0, 4.0))
# Four at once, batched: each takes four seconds.
BATCHED = _load((0.0, 4.0), (0.0, 4.0), (0.0, 4.0), (0.0, 4.0))


def _probes(*pairs: tuple[float, float]) -> list[Probe]:
    return [Probe(sent, latency) for sent, latency in pairs]


def test_a_probe_that_waited_as_long_as_a_generation_shows_a_held_loop():
    reading = LoopReading.of("/health", _probes((0.5, 1.5), (2.05, 0.95), (-1.0, 0.01), (9.0, 0.01)), HELD)
    # only the probes sent while a generation was in flight count
    assert len(reading.probes) == 2 and reading.generation_s == 1.0
    assert [p.sent for p in reading.waited] == [0.5] and not reading.held  # one of two is not most
    reading = LoopReading.of("/health", _probes((0.5, 1.5), (2.05, 1.1)), HELD)
    assert reading.held
    assert reading.describe().startswith("GET /health blocked up to 1.5 s (median 1.3 s); 2 of 2 probes waited")


def test_a_loop_answering_in_milliseconds_is_free():
    reading = LoopReading.of("/", _probes(*((t / 10, 0.004) for t in range(1, 39))), BATCHED)
    assert not reading.waited and not reading.held and reading.worst == 0.004
    assert reading.describe().startswith("GET / answered in 4 ms at most (median 4 ms, 38 probes")


def test_a_stall_under_a_tenth_of_a_second_is_never_a_held_loop():
    """Generations of 50 ms: a probe of 80 ms waited longer than one, but a free loop on a busy machine does too."""
    quick = _load((0.0, 0.05), (0.05, 0.1))
    assert not LoopReading.of("/", _probes((0.01, 0.08)), quick).waited


def test_a_free_loop_that_stalled_once_is_not_held():
    """The seed's engine rewrite on a busy machine: one probe of seven waited 454 ms, longer than its shortest
    generation (230 ms); the others a few milliseconds."""
    load = _load((0.0, 0.23), (0.0, 2.6), (0.0, 0.5), (0.0, 0.6))
    reading = LoopReading.of("/openapi.json", _probes((0.1, 0.454), *((t / 10, 0.006) for t in range(6, 12))), load)
    assert len(reading.waited) == 1 and not reading.held
    assert reading.describe() == ("GET /openapi.json answered in 454 ms at most (median 6 ms, 7 probes; 1 waited as "
                                  "long as a whole generation; shortest generation 230 ms)")


def _check(bad: LoadResult, bad_probes, fixed: LoadResult, fixed_probes) -> LoopCheck:
    return LoopCheck(LoopReading.of("/health", bad_probes, bad), LoopReading.of("/health", fixed_probes, fixed))


def test_a_fix_must_free_a_loop_the_bad_server_held():
    held = _probes((0.5, 1.5), (2.05, 1.1))
    free = _probes((0.5, 0.01), (1.0, 0.02))
    check = _check(HELD, held, BATCHED, free)
    assert check.judged and check.passed and check.verdict() == "PASS"
    assert check.line().startswith("event loop during generation: bad: GET /health blocked up to 1.5 s")
    assert check.line().endswith("-> PASS")
    still_held = _check(HELD, held, HELD, _probes((0.5, 1.2)))
    assert still_held.judged and not still_held.passed and still_held.line().endswith("-> FAIL")


def test_where_the_bad_server_answered_while_generating_the_line_only_reports():
    """``def`` handlers in a thread pool: the loop was never held, so the fix has nothing to free."""
    check = _check(BATCHED, _probes((0.5, 0.01)), HELD, _probes((0.5, 1.5), (2.05, 1.1)))
    assert not check.judged and check.passed
    assert check.verdict() == "reported only: the bad server already answered while generating"


def test_a_fix_that_keeps_its_handlers_in_worker_threads_is_not_judged():
    """The lock fallback of ``def`` handlers frees no loop: threads contending for the interpreter may slow a bad
    server's probes as long as a generation, and the fix's; that is reported, not failed."""
    check = LoopCheck(LoopReading.of("/", _probes((0.5, 1.5), (2.05, 1.1)), HELD),
                      LoopReading.of("/", _probes((0.5, 1.5), (2.05, 1.1)), HELD), claimed=False)
    assert not check.judged and check.passed
    assert check.verdict() == "reported only: the fix keeps the handlers in the framework's worker threads"


def test_no_probe_during_the_fixed_servers_generations_is_no_verdict():
    check = _check(HELD, _probes((0.5, 1.5)), BATCHED, [])
    assert not check.judged and check.passed and "no probe of GET /health was sent" in check.line()


def test_a_kind_without_an_http_route_says_why():
    check = LoopCheck(skipped="a gRPC server has no HTTP route to probe")
    assert check.passed and check.line() == ("event loop during generation: not measured: a gRPC server has no "
                                             "HTTP route to probe")
    assert check.as_dict()["verdict"] == "not measured"


def test_probes_run_beside_the_load_and_one_still_waiting_is_kept():
    import httpx

    async def answer(request):
        if len(seen) == 2:  # the third probe is never answered before the load ends
            await asyncio.sleep(5)
        seen.append(request.url.path)
        return httpx.Response(200, json={"ok": True})

    async def load() -> LoadResult:
        await asyncio.sleep(0.8)
        return _load((0.0, 0.8))

    seen: list[str] = []
    probes: list[Probe] = []
    result = asyncio.run(probed(load(), "http://127.0.0.1:1", "/health", probes,
                                transport=httpx.MockTransport(answer)))
    assert result.records[0].latency == 0.8 and seen == ["/health"] * 2
    assert [p.answered for p in probes] == [True, True, False]
    assert probes[-1].latency > 0.1 and probes[-1].status is None


@pytest.mark.parametrize("bad, fixed, validated", [
    ("x = pipe(p)\n", "x = await asyncio.to_thread(pipe, p)\n", True),
    ("x = pipe(p)\n", "model_lock = threading.RLock()\nwith model_lock:\n    x = pipe(p)\n", True),
    ("x = pipe(p)\n", "engine = AsyncLLMEngine.from_engine_args(a)\n", True),
    ("x = pipe(p)\n", "x = pipe(p)  # fixed\n", False),
])
def test_validate_runs_the_engine_rewrite_and_the_fallback(bad, fixed, validated):
    assert rewrites_a_server(bad, fixed) is validated
    assert frees_the_loop(bad, fixed) is (validated and "RLock" not in fixed)
    assert offloads("not python (") == 0


def test_where_no_probe_of_the_bad_server_landed_during_a_generation_the_line_says_so():
    """Fast answers (a classification pipeline) can end before a probe is sent: nothing was measured of the bad
    server, so the line does not claim it answered."""
    check = _check(BATCHED, [], BATCHED, [])
    assert not check.judged and check.passed
    assert check.verdict() == "reported only: no probe of the bad server was sent while a generation was in flight"
