"""A small load generator for servers on this machine: httpx async, loopback only, bounded in count and time.

It sends ``requests`` requests with at most ``concurrency`` in flight, stops by itself when they are done or
when ``max_seconds`` have passed, and records per request: status, latency, time to first body byte, the
body (decoded) and whether the response was a stream. The prompts are fixed (:func:`prompt_for`), so that two
servers given the same load get the same prompts.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import statistics
import time
from dataclasses import dataclass, field
from collections.abc import Awaitable
from typing import Any, Callable
from urllib.parse import urlsplit

LOOPBACK_NAMES = {"localhost"}


def check_loopback(base_url: str) -> None:
    """Refuse any target that is not this machine (127.0.0.0/8, ::1, localhost)."""
    host = urlsplit(base_url).hostname or ""
    if host in LOOPBACK_NAMES:
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    raise ValueError(f"the load generator only targets loopback addresses, not {host!r}")


_PROMPT_WORDS = ("model", "server", "request", "token", "batch", "engine", "cache", "memory", "stream",
                 "latency", "queue", "worker", "event", "loop", "answer", "question", "value", "result")


def prompt_for(i: int) -> str:
    """The i-th fixed prompt: short, distinct, deterministic."""
    w = _PROMPT_WORDS
    return (f"Request {i}: tell me about the {w[i % len(w)]} and the {w[(i * 7 + 3) % len(w)]} "
            f"of the {w[(i * 5 + 1) % len(w)]}.")


@dataclass
class RequestSpec:
    """How to send one prompt: method/path plus query params, a JSON body or a form body."""

    path: str
    method: str = "POST"
    params: dict[str, Any] | None = None
    json: Any = None
    data: dict[str, Any] | None = None


@dataclass
class Record:
    index: int
    status: int | None
    latency: float
    ttfb: float | None
    body: Any = None
    content_type: str = ""
    streamed: bool = False
    error: str | None = None
    tokens: int = 0
    sent: float | None = None  # time.perf_counter() when it was sent (drive() sets it)

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300 and self.error is None


@dataclass
class LoadResult:
    concurrency: int
    requested: int
    wall: float
    records: list[Record] = field(default_factory=list)
    # Tokens the server says it generated during the run; when None, the per-record estimates are summed.
    server_tokens: int | None = None

    @property
    def ok(self) -> list[Record]:
        return [r for r in self.records if r.ok]

    def stats(self) -> dict[str, Any]:
        ok = self.ok
        latencies = sorted(r.latency for r in ok)
        ttfts = sorted(r.ttfb for r in ok if r.streamed and r.ttfb is not None)
        tokens = self.server_tokens if self.server_tokens is not None else sum(r.tokens for r in ok)
        return {
            "concurrency": self.concurrency,
            "requests": self.requested,
            "completed": len(self.records),
            "ok": len(ok),
            "errors": len(self.records) - len(ok),
            "wall_s": round(self.wall, 3),
            "tokens": tokens,
            "tokens_counted_by": "server" if self.server_tokens is not None else "re-tokenising responses",
            "tokens_per_s": round(tokens / self.wall, 2) if self.wall > 0 else 0.0,
            "requests_per_s": round(len(ok) / self.wall, 3) if self.wall > 0 else 0.0,
            "latency_p50_s": _pct(latencies, 50),
            "latency_p95_s": _pct(latencies, 95),
            "ttft_p50_s": _pct(ttfts, 50),
            "ttft_p95_s": _pct(ttfts, 95),
            "streamed": sum(1 for r in ok if r.streamed),
        }


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return round(values[0], 4)
    return round(statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1], 4)


def decode_body(raw: bytes, content_type: str) -> Any:
    """JSON bodies become Python values, event streams a list of their ``data:`` payloads (or, for a stream
    of JSON lines, labelled an event stream or not, of its lines), the rest text."""
    text = raw.decode("utf-8", errors="replace")
    if "json" in content_type and "ndjson" not in content_type:
        try:
            return json.loads(text)
        except ValueError:
            return text
    if "event-stream" in content_type or "ndjson" in content_type:
        lines = text.splitlines()
        sse = any(line.startswith("data:") for line in lines)
        events = []
        for line in lines:
            if sse and not line.startswith("data:"):
                continue
            payload = line[5:].strip() if sse else line.strip()
            if not payload:
                continue
            try:
                events.append(json.loads(payload))
            except ValueError:
                events.append(payload)
        return events
    return text


def json_lines(text: str) -> Any:
    """A stream with no content type of its own whose every line is a JSON object (LitServe streams each item
    encode_response() yields as one, in a plain StreamingResponse): the list of them, as an event stream's
    events; anything else stays text."""
    events = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            return text
        if not isinstance(event, dict):
            return text
        events.append(event)
    return events or text


async def run_load(
    base_url: str,
    make_request: Callable[[int], RequestSpec],
    *,
    requests: int,
    concurrency: int,
    timeout: float = 300.0,
    max_seconds: float = 600.0,
    headers: dict[str, str] | None = None,
    count_tokens: Callable[[Record], int] | None = None,
    progress: Callable[[str], None] | None = None,
    transport: Any = None,
) -> LoadResult:
    """Send ``requests`` requests (request ``i`` built by ``make_request(i)``) with ``concurrency`` workers.

    ``transport`` is for tests (an ``httpx.MockTransport``); the target must still be a loopback URL.
    """
    import httpx

    check_loopback(base_url)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)

    async with httpx.AsyncClient(base_url=base_url, timeout=timeout, limits=limits, headers=headers,
                                 trust_env=False, transport=transport) as client:

        async def one(i: int) -> Record:
            spec = make_request(i)
            t0 = time.perf_counter()
            ttfb = None
            chunks: list[bytes] = []
            try:
                async with client.stream(spec.method, spec.path, params=spec.params, json=spec.json, data=spec.data) as resp:
                    async for chunk in resp.aiter_bytes():
                        if chunk and ttfb is None:
                            ttfb = time.perf_counter() - t0
                        chunks.append(chunk)
                    content_type = resp.headers.get("content-type", "")
                    status = resp.status_code
                    chunked = resp.headers.get("transfer-encoding", "") == "chunked"
            except (httpx.HTTPError, OSError) as exc:
                return Record(i, None, time.perf_counter() - t0, ttfb, error=f"{type(exc).__name__}: {exc}")
            latency = time.perf_counter() - t0
            raw = b"".join(chunks)
            streamed = "event-stream" in content_type or "ndjson" in content_type or (chunked and "json" not in content_type)
            body = decode_body(raw, content_type)
            if streamed and isinstance(body, str):
                body = json_lines(body)
            record = Record(i, status, latency, ttfb, body, content_type, streamed)
            if status >= 300:
                record.error = f"HTTP {status}: {raw[:200].decode('utf-8', 'replace')}"
            elif count_tokens is not None:
                record.tokens = count_tokens(record)
            return record

        return await drive(one, requests=requests, concurrency=concurrency, max_seconds=max_seconds, progress=progress)


async def drive(one: Callable[[int], Awaitable[Record]], *, requests: int, concurrency: int, max_seconds: float,
                progress: Callable[[str], None] | None = None) -> LoadResult:
    """Request ``i`` for each ``i`` in ``range(requests)``, sent by ``one(i)`` from ``concurrency`` workers
    until ``max_seconds`` have passed; the records in request order."""
    if requests < 1 or concurrency < 1:
        raise ValueError("requests and concurrency must be at least 1")
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(requests):
        queue.put_nowait(i)
    records: list[Record] = []
    start = time.perf_counter()
    deadline = start + max_seconds
    step = max(1, requests // 10)

    async def worker() -> None:
        while time.perf_counter() < deadline:
            try:
                i = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            sent = time.perf_counter()
            remaining = deadline - sent
            try:
                record = await asyncio.wait_for(one(i), timeout=max(remaining, 0.001))
            except asyncio.TimeoutError:
                record = Record(i, None, time.perf_counter() - start, None, error="load time limit reached")
            record.sent = sent
            records.append(record)
            if progress and (len(records) % step == 0 or len(records) == requests):
                done_ok = sum(1 for r in records if r.ok)
                progress(f"  {len(records)}/{requests} done ({done_ok} ok, "
                         f"{time.perf_counter() - start:.1f}s)")

    await asyncio.gather(*(worker() for _ in range(min(concurrency, requests))))
    wall = time.perf_counter() - start
    records.sort(key=lambda r: r.index)
    return LoadResult(concurrency=concurrency, requested=requests, wall=wall, records=records)


def _usage_tokens(record: Record) -> int:
    """Completion tokens of an OpenAI response: its usage block (JSON, or the usage chunk of a stream)."""
    body = record.body
    if isinstance(body, dict):
        return int((body.get("usage") or {}).get("completion_tokens", 0))
    if isinstance(body, list):
        for event in reversed(body):
            if isinstance(event, dict) and event.get("usage"):
                return int(event["usage"].get("completion_tokens", 0))
    return 0


def main(argv: list[str] | None = None) -> None:
    """Load an OpenAI-compatible server on this machine: ``python -m vllm_lint.reference.loadgen --help``."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m vllm_lint.reference.loadgen",
                                     description="Send fixed prompts to /v1/completions on a loopback server.")
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--model", default=None, help="the model name to send (default: the first of /v1/models)")
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--requests", type=int, default=None, help="per run (default: max(8, 4 x concurrency))")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--max-seconds", type=float, default=300.0)
    args = parser.parse_args(argv)

    import httpx

    check_loopback(args.url)
    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else None
    model = args.model or httpx.get(args.url + "/v1/models", headers=headers, trust_env=False).json()["data"][0]["id"]
    print(f"{'concurrency':>11} {'requests':>8} {'ok':>4} {'tokens/s':>9} {'p50 s':>7} {'p95 s':>7} "
          f"{'ttft p50':>9} {'ttft p95':>9}")
    for concurrency in args.concurrency:
        n = args.requests or max(8, 4 * concurrency)

        def make(i: int) -> RequestSpec:
            body = {"model": model, "prompt": prompt_for(i), "max_tokens": args.max_tokens, "temperature": 0}
            if args.stream:
                body.update(stream=True, stream_options={"include_usage": True})
            return RequestSpec("/v1/completions", json=body)

        s = asyncio.run(run_load(args.url, make, requests=n, concurrency=concurrency, headers=headers,
                                 max_seconds=args.max_seconds, count_tokens=_usage_tokens)).stats()

        def fmt(v):
            return "-" if v is None else f"{v:.3f}"

        print(f"{concurrency:>11} {n:>8} {s['ok']:>4} {s['tokens_per_s']:>9.1f} {fmt(s['latency_p50_s']):>7} "
              f"{fmt(s['latency_p95_s']):>7} {fmt(s['ttft_p50_s']):>9} {fmt(s['ttft_p95_s']):>9}", flush=True)


if __name__ == "__main__":
    main()
