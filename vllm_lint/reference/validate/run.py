"""The run: each case prepared, both of its servers started in turn and sent the same load, and compared."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from vllm_lint.reference import decoding
from vllm_lint.reference.loadgen import LoadResult, Record, prompt_for, run_load
from vllm_lint.reference.server_kinds import ServerKind
from vllm_lint.reference.validate.cases import frees_the_loop
from vllm_lint.reference.validate.chainlit_endpoint import ChainlitEndpoint
from vllm_lint.reference.validate.compare import compare, completion_of, response_text
from vllm_lint.reference.validate.endpoint import Endpoint, as_served, discover_endpoint
from vllm_lint.reference.validate.errors import NotARewrite, ValidationError
from vllm_lint.reference.validate.gradio_endpoint import GradioEndpoint, discover_gradio_endpoint
from vllm_lint.reference.validate.grpc_endpoint import GrpcEndpoint, discover_grpc_endpoint
from vllm_lint.reference.validate.prepare import PreparedCase, Progress, prepare_case
from vllm_lint.reference.validate.probe import LoopCheck, LoopReading, Probe, probe_route, probed
from vllm_lint.reference.validate.results import AnyEndpoint, Options, Report, Validation
from vllm_lint.reference.validate.servers import ServerProcess
from vllm_lint.reference.validate.summary import load_line
from vllm_lint.reference.validate.websocket_endpoint import WebSocketEndpoint, discover_websocket_endpoint
from vllm_lint.reference.websocket_load import run_websocket_load


def _token_counter(model: Path, prompt: Callable[[int], str]) -> Callable[[Record], int]:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model))

    def count(record: Record) -> int:
        text, _ = completion_of(response_text(record), prompt(record.index))
        return len(tokenizer.encode(text, add_special_tokens=False)) if text else 0

    return count


def generated_tokens(base_url: str) -> int | None:
    """The launcher's count of tokens generated so far, or None when the app could not expose it."""
    import httpx

    from vllm_lint.reference.launch import STATS_PATH

    try:
        resp = httpx.get(base_url + STATS_PATH, timeout=10, trust_env=False)
        return int(resp.json()["generated_tokens"]) if resp.status_code == 200 else None
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return None


def _load(base_url: str, endpoint: AnyEndpoint, *, requests: int, concurrency: int, options: Options,
          counter, progress: Progress, offset: int = 0, stream: bool = False,
          probing: tuple[str, list[Probe]] | None = None) -> LoadResult:
    """The load; with ``probing`` (a route of the same server, and where its probes go), that route probed
    while it runs (:mod:`.probe`)."""
    def count_tokens(r: Record) -> int:
        return counter(Record(r.index + offset, r.status, r.latency, r.ttfb, r.body, r.content_type, r.streamed))

    if isinstance(endpoint, GrpcEndpoint):
        # base_url is the server's host:port; its tokens are counted from the answers.
        return asyncio.run(endpoint.run_load(
            base_url, lambda i: prompt_for(i + offset), requests=requests, concurrency=concurrency,
            timeout=options.timeout, max_seconds=options.max_seconds, count_tokens=count_tokens,
            progress=progress))
    before = generated_tokens(base_url)
    if isinstance(endpoint, (GradioEndpoint, ChainlitEndpoint)):
        load = endpoint.run_load(base_url, lambda i: prompt_for(i + offset), requests=requests,
                                 concurrency=concurrency, timeout=options.timeout, max_seconds=options.max_seconds,
                                 count_tokens=count_tokens, progress=progress)
    elif isinstance(endpoint, WebSocketEndpoint):
        load = run_websocket_load(base_url, lambda i: endpoint.request(prompt_for(i + offset), stream), requests=requests,
                                  concurrency=concurrency, timeout=options.timeout, max_seconds=options.max_seconds,
                                  count_tokens=count_tokens, progress=progress)
    else:
        load = run_load(base_url, lambda i: endpoint.request(prompt_for(i + offset), stream), requests=requests,
                        concurrency=concurrency, timeout=options.timeout, max_seconds=options.max_seconds,
                        count_tokens=count_tokens, progress=progress)
    if probing is not None:
        load = probed(load, base_url, probing[0], probing[1], timeout=options.timeout)
    result = asyncio.run(load)
    after = generated_tokens(base_url)
    if before is not None and after is not None:
        result.server_tokens = after - before
    return result


def run_validation(options: Options, progress: Progress = print) -> Validation:
    if options.fixed is not None and len(options.cases) != 1:
        raise ValidationError("a fixed file of your own goes with exactly one bad file")
    if not options.cases:
        raise ValidationError("nothing to validate")
    own_tmp = options.workdir is None
    workdir = options.workdir if options.workdir is not None else Path(tempfile.mkdtemp(prefix="vllm-lint-validate-"))
    validation = Validation(options)
    try:
        counter = _token_counter(options.model, prompt_for)
        for number, case in enumerate(options.cases, start=1):
            progress(f"[{number}/{len(options.cases)}] {case.name} ({case.origin})")
            try:
                prepared = prepare_case(case, options.model, workdir, progress, options.fixed,
                                        endpoint_given=options.endpoint is not None)
            except NotARewrite as exc:
                if case.explicit:
                    validation.failed.append((case, str(exc)))
                else:
                    validation.skipped.append((case, str(exc)))
                progress(f"{case.name}: {'skipped' if not case.explicit else 'FAILED'}: {exc}")
                continue
            try:
                validation.reports.append(_run_case(prepared, options, workdir, counter, progress))
            except ValidationError as exc:
                validation.failed.append((case, str(exc)))
                progress(f"{case.name}: FAILED: {exc}")
    finally:
        if own_tmp:
            shutil.rmtree(workdir, ignore_errors=True)
    return validation


def _endpoint_of(server: ServerProcess, known: AnyEndpoint | None) -> AnyEndpoint:
    """What the running server is driven through: ``known`` when it fits the server, else found on it."""
    if server.grpc and not isinstance(known, GrpcEndpoint):
        return discover_grpc_endpoint(server.source.path.read_text(), server.source.path.parent)
    if server.gradio and not isinstance(known, GradioEndpoint):
        return discover_gradio_endpoint(server.base_url)
    if server.kind is ServerKind.CHAINLIT:
        return ChainlitEndpoint()
    if isinstance(known, Endpoint):
        try:
            return as_served(known, _openapi(server))
        except ValidationError:  # no schema to read the route's method from: sent as given
            return known
    if known is not None:
        return known
    try:
        return discover_endpoint(_openapi(server))
    except ValidationError as no_post_route:
        return discover_websocket_endpoint(server.base_url, no_post_route)


def _probe_path(server: ServerProcess, endpoint: AnyEndpoint) -> str | None:
    """The GET route of the running server its event loop is probed on during the load (:func:`.probe_route`)."""
    from vllm_lint.reference import chainlit_apps, gradio_apps

    source = server.source.path.read_text()
    if server.gradio:
        return probe_route(None, source, gradio_apps.API_INFO_PATH, None)
    if server.kind is ServerKind.CHAINLIT:
        return probe_route(None, source, chainlit_apps.READY_PATH, None)
    try:
        document: dict | None = _openapi(server)
    except (ValidationError, OSError, ValueError):
        document = None
    generation_path = endpoint.path if isinstance(endpoint, Endpoint) else None
    return probe_route(document, source, server.openapi_path if document is not None else None, generation_path)


def _run_case(prepared: PreparedCase, options: Options, workdir: Path, counter, progress: Progress) -> Report:
    name = prepared.case.name
    if prepared.diff:
        progress(f"{name}: autofix diff:\n" + prepared.diff.rstrip())
    endpoint: AnyEndpoint | None = options.endpoint
    main: dict[str, LoadResult] = {}
    streamed: dict[str, LoadResult] = {}
    sweep: dict[str, dict[int, LoadResult]] = {"bad": {}, "fixed": {}}
    startup: dict[str, float] = {}
    reference: LoadResult | None = None
    bad_fails: str | None = None  # why the bad server answers nothing, when it is up but fails every request
    decoded: dict[str, list] = {}  # each side's requests' decoding, as the launcher recorded it
    readings: dict[str, LoopReading] = {}  # each side's event loop, probed during its load
    no_probe: str | None = None  # why a side's loop could not be probed
    warm_wave = range(0)  # the records of the fixed server's warm-up wave, left out of the comparison
    for source in (prepared.bad, prepared.fixed):
        role = source.role
        progress(f"{name}: {role}: starting {source.path.name} on 127.0.0.1 (model {options.model})")
        with ServerProcess(source, options.model, options.max_tokens, log_dir=source.path.parent,
                           kv_cache_bytes=options.kv_cache_bytes, max_num_seqs=options.max_num_seqs,
                           start_timeout=options.start_timeout) as server:
            startup[role] = round(server.startup_s or 0.0, 1)
            base_url = server.address if server.grpc else server.base_url
            progress(f"{name}: {role}: up in {startup[role]:.1f}s at {base_url}")
            found = _endpoint_of(server, endpoint)
            if found is not endpoint:
                progress(f"{name}: endpoint: {found.describe()}")
            endpoint = found
            warm = _load(base_url, endpoint, requests=1, concurrency=1, options=options,
                         counter=counter, progress=lambda _: None, offset=10_000)
            first = warm.records[0] if warm.records else None
            if not warm.ok and role == "bad" and first is not None and (first.status or 0) >= 500:
                # Up, but failing: it calls what does not exist (seed 004's LLM.generate_async). Its author
                # meant the model's answers; transformers gives them (greedy), and the fixed server must match.
                bad_fails = first.error
                progress(f"{name}: bad: the server fails every request ({bad_fails}); the fixed server's "
                         "answers are compared with transformers' greedy decoding of each prompt")
                from vllm_lint.reference.validate.greedy import greedy_reference

                reference = greedy_reference(options.model, options.requests, options.max_tokens, prompt_for)
            elif not warm.ok:
                raise ValidationError(f"the {role} server failed its warm-up request: "
                                      f"{first.error if first else 'no answer'}\n"
                                      + server.log_tail())
            if role == "fixed":
                # One wave at the measured concurrency first: vLLM on CPU is slow on the first batches of each
                # new shape, and that is start-up, not throughput. (The bad server is warmed by the reference
                # pass below.) Neither its answers nor its decoding are used: its prompts are not sent to the bad
                # server, and a setting that follows the prompt (top_k=len(tokens) + 3) would differ.
                before = len(decoding.read(server.decoding_log))
                _load(base_url, endpoint, requests=options.concurrency, concurrency=options.concurrency,
                      options=options, counter=counter, progress=lambda _: None, offset=20_000)
                warm_wave = range(before, len(decoding.read(server.decoding_log)))
            if role == "bad" and bad_fails is None:
                # The answers to compare with: every prompt once, one at a time, before any load. A server
                # that is wrong under concurrency (vLLM's LLM called from several threads) still gives its
                # intended answers here; what it does under load is compared with them separately.
                progress(f"{name}: bad: reference answers, {options.requests} requests one at a time")
                reference = _load(base_url, endpoint, requests=options.requests, concurrency=1,
                                  options=options, counter=counter, progress=progress)
                progress(f"{name}: bad: one at a time: {load_line(reference)}")
                if len(reference.ok) != options.requests:
                    failed = next(r for r in reference.records if not r.ok)
                    raise ValidationError(f"the bad server failed a request even one at a time "
                                          f"({failed.error}): there is nothing to compare with\n"
                                          + server.log_tail())
            progress(f"{name}: {role}: {options.requests} requests, concurrency {options.concurrency}, "
                     f"max_tokens {options.max_tokens}")
            probe_path = None if server.grpc else _probe_path(server, endpoint)
            if probe_path is None:
                no_probe = no_probe or ("a gRPC server has no HTTP route to probe" if server.grpc else
                                        f"the {role} server has no GET route to probe and no OpenAPI document")
            probes: list[Probe] = []
            main[role] = _load(base_url, endpoint, requests=options.requests,
                               concurrency=options.concurrency, options=options, counter=counter,
                               progress=progress, probing=(probe_path, probes) if probe_path else None)
            progress(f"{name}: {role}: {load_line(main[role])}")
            if probe_path is not None:
                readings[role] = LoopReading.of(probe_path, probes, main[role])
                progress(f"{name}: {role}: event loop during generation: {readings[role].describe()}")
            if endpoint.stream_field is not None:
                # The same route asked for a stream. The bad server's streams, one at a time, give the
                # shape a stream has; the fixed server's are loaded like the rest.
                stream_requests, stream_concurrency = ((min(options.requests, options.concurrency), 1)
                                                      if role == "bad" else (options.requests, options.concurrency))
                progress(f"{name}: {role}: {stream_requests} streamed requests, concurrency {stream_concurrency}")
                streamed[role] = _load(base_url, endpoint, requests=stream_requests,
                                       concurrency=stream_concurrency, options=options, counter=counter,
                                       progress=progress, stream=True)
                progress(f"{name}: {role}: streamed: {load_line(streamed[role])}")
            for level in options.sweep:
                if level == options.concurrency:
                    sweep[role][level] = main[role]
                    continue
                n = max(level, min(options.requests, 4 * level))
                progress(f"{name}: {role}: sweep concurrency {level} ({n} requests)")
                sweep[role][level] = _load(base_url, endpoint, requests=n, concurrency=level,
                                           options=options, counter=counter, progress=lambda _: None)
                progress(f"{name}: {role}: sweep {level}: {load_line(sweep[role][level])}")
        decoded[role] = decoding.read(server.decoding_log, leave_out=warm_wave if role == "fixed" else range(0))
    assert reference is not None
    comparison = compare(reference, main["fixed"], prompt_for, shapes_of=None if bad_fails else reference)
    bad_under_load = None if bad_fails else compare(reference, main["bad"], prompt_for)
    stream_comparison = None
    if "fixed" in streamed:
        bad_streams = streamed.get("bad")
        stream_comparison = compare(reference, streamed["fixed"], prompt_for,
                                    shapes_of=bad_streams if bad_streams is not None and bad_streams.ok else None)
    assert endpoint is not None  # found once the first server was up
    # A bad server that fails every request asked for no decoding: there is nothing to hold the fix to
    same_decoding = None if bad_fails else decoding.compared(decoded["bad"], decoded["fixed"])
    if same_decoding is not None:
        progress(f"{name}: decoding asked for: {same_decoding[1]} -> {'PASS' if same_decoding[0] else 'FAIL'}")
    loop = LoopCheck(readings.get("bad"), readings.get("fixed"), skipped=no_probe,
                     claimed=frees_the_loop(prepared.bad.path.read_text(), prepared.fixed.path.read_text()))
    progress(f"{name}: {loop.line()}")
    return Report(options, prepared, endpoint, main, sweep, comparison, startup, reference, bad_under_load,
                  streamed, stream_comparison, bad_fails, same_decoding, loop)


def _openapi(server: ServerProcess) -> dict:
    """The server's OpenAPI document, or a ValidationError that shows what it answered instead."""
    import httpx

    response = httpx.get(server.base_url + server.openapi_path, timeout=10, trust_env=False)
    try:
        document = response.json()
    except ValueError:
        document = None
    if response.status_code != 200 or not isinstance(document, dict):
        raise ValidationError(f"the {server.source.role} server answered GET {server.openapi_path} with HTTP "
                              f"{response.status_code}, not an OpenAPI document:\n{server.log_tail()}")
    return document
